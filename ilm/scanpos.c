/*
 * scanpos.c - where the full pass is, persisted in meta's state document
 * "ilm-pass" so that a pass interrupted by a stop or a crash continues at
 * the bucket and key it had reached instead of starting over (with a
 * bounded rate, a large namespace takes long enough for restarts to
 * matter).  Format: bucket NUL key NUL version-id NUL (keys never hold
 * NUL); absent means no pass in progress.  Saved at most once a second
 * while walking (one synced quorum write), and at the end of every bucket
 * and pass.
 */
#include "ilm_internal.h"

#include <stdlib.h>
#include <string.h>

#define POS_DOC "ilm-pass"

static void field(const char **p, const char *end, char *out, size_t cap)
{
    const char *z = memchr(*p, 0, (size_t)(end - *p));
    size_t n = z ? (size_t)(z - *p) : (size_t)(end - *p);
    if (n >= cap)
        n = 0; /* not ours: ignore */
    memcpy(out, *p, n);
    out[n] = '\0';
    *p = z ? z + 1 : end;
}

int strata_ilm__pos_load(struct strata_ilm *e, struct ilm_pos *p)
{
    memset(p, 0, sizeof(*p));
    void *doc = NULL;
    size_t len = 0;
    int rc = strata_meta_state_get(e->o.meta, POS_DOC, &doc, &len);
    if (rc == STRATA_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    const char *c = doc, *end = c + len;
    field(&c, end, p->bucket, sizeof(p->bucket));
    field(&c, end, p->key, sizeof(p->key));
    field(&c, end, p->vid, sizeof(p->vid));
    free(doc);
    return 0;
}

int strata_ilm__pos_save(struct strata_ilm *e, const struct ilm_pos *p, bool force)
{
    int64_t now = strata_ilm__now_ms();
    if (!force && now - e->last_pos_save_ms < 1000)
        return 0;
    e->last_pos_save_ms = now;
    if (!p->bucket[0])
        return strata_meta_state_put(e->o.meta, POS_DOC, NULL, 0);
    size_t bl = strlen(p->bucket), kl = strlen(p->key), vl = strlen(p->vid);
    char *doc = malloc(bl + kl + vl + 3);
    if (!doc)
        return STRATA_ENOMEM;
    memcpy(doc, p->bucket, bl + 1);
    memcpy(doc + bl + 1, p->key, kl + 1);
    memcpy(doc + bl + kl + 2, p->vid, vl + 1);
    int rc = strata_meta_state_put(e->o.meta, POS_DOC, doc, bl + kl + vl + 3);
    free(doc);
    if (rc)
        strata_log(&e->o.log, STRATA_LOG_DEBUG, "ilm", "pass position not saved: %s",
                   strata_errname(rc));
    return rc;
}
