/*
 * repl_order.c - what one key still owes a target before a change of it
 * is sent (repl_internal.h), read from the key's versions in the index:
 * their order is the order they committed in, whichever gateway
 * committed them, where the queue's order is only the order they were
 * pushed in (README.md, "Two gateways on one RADOS cluster").
 */
#include "repl_internal.h"

#include "repl_hooks.h"
#include "srv.h"

#include <stdlib.h>
#include <string.h>

/* Entries of the key read per change: newer than it, it, and older. */
#define TURN_PAGE 1000

struct page {
    const char *key;
    struct strata_repl__owed *e;
    size_t n;
};

static int page_cb(const struct strata_list_entry *le, void *ud)
{
    struct page *p = ud;
    if (le->is_prefix || strcmp(le->key, p->key) != 0)
        return 1; /* past the key: the rest of the prefix */
    if (p->n < TURN_PAGE) {
        snprintf(p->e[p->n].vid, sizeof(p->e[p->n].vid), "%s", le->info->version_id);
        p->e[p->n].marker = le->info->delete_marker;
        p->n++;
    }
    return 0;
}

/* Whose entries a turn looks at: those a rule sends to target ti. */
struct whose {
    struct strata_repl *rp;
    int ti;
    struct strata_meta *m;
};

/* The replication status of entry vid of key (a delete marker's too):
 * 1 owed (PENDING, or none: a change queued before markers had one), 0
 * done (COMPLETED, FAILED), 2 neither (a REPLICA, or another target's),
 * -1 gone, or -2 when the index cannot be read now.  w: only entries of
 * its target count (NULL: any). */
static int status_of(const struct whose *w, struct strata_meta *m, const char *bucket,
                     const char *key, const char *vid, bool none_owed)
{
    struct strata_obj_info in;
    int rc = strata_obj_head(m, bucket, key, vid, &in);
    int out;
    if (rc && rc != STRATA_EMETHOD) {
        out = rc == STRATA_ENOTFOUND ? -1 : -2;
    } else if (w && strata_repl__rule_target(w->rp, w->m, bucket, key, in.tags, in.tags_len,
                                             in.delete_marker) != w->ti) {
        out = 2;
    } else {
        const char *st = strata_obj_info_hdr(&in, STRATA_REPL_STATUS_HDR);
        out = !st                          ? (none_owed ? 1 : 2)
              : strcmp(st, "PENDING") == 0 ? 1
              : strcmp(st, "REPLICA") == 0 ? 2
                                           : 0;
    }
    strata_obj_info_fini(&in);
    return out;
}

int strata_repl__turn_read(struct strata_repl *rp, int ti, struct strata_meta *m,
                           const char *bucket, const char *key, const char *vid,
                           struct strata_repl__turn *t)
{
    memset(t, 0, sizeof(*t));
    const struct whose w = {rp, ti, m};
    struct page p = {key, calloc(TURN_PAGE, sizeof(*p.e)), 0};
    if (!p.e)
        return STRATA_ENOMEM;
    struct strata_list_opts o = {.bucket = bucket, .prefix = key, .max_keys = TURN_PAGE,
                                 .versions = true};
    struct strata_list_result res;
    int rc = strata_obj_list(m, &o, page_cb, &p, &res);
    if (rc == 1)
        rc = 0;
    size_t i = 0;
    while (rc == 0 && i < p.n && strcmp(p.e[i].vid, vid) != 0)
        i++;
    /* Newer entries (newest first): one the target has means vid can no
     * longer arrive in its place. */
    for (size_t j = 0; rc == 0 && j < i && !t->superseded; j++) {
        int s = status_of(&w, m, bucket, key, p.e[j].vid, false);
        rc = s == -2 ? STRATA_EIO : 0;
        t->superseded = s == 0;
    }
    if (rc == 0) {
        t->self = status_of(NULL, m, bucket, key, vid, true);
        rc = t->self == -2 ? STRATA_EIO : 0;
    }
    /* Older entries down to the first the target has: those still owed go
     * first, oldest first (kept in p.e[0..n) reversed). */
    size_t n = 0;
    for (size_t j = i + 1; rc == 0 && j < p.n; j++) {
        int s = status_of(&w, m, bucket, key, p.e[j].vid, false);
        if (s == -2)
            rc = STRATA_EIO;
        if (s == 0)
            break;
        if (s == 1)
            p.e[n++] = p.e[j];
    }
    if (rc) {
        free(p.e);
        return rc;
    }
    for (size_t a = 0; a < n / 2; a++) {
        struct strata_repl__owed x = p.e[a];
        p.e[a] = p.e[n - 1 - a];
        p.e[n - 1 - a] = x;
    }
    t->e = p.e;
    t->n = n;
    return 0;
}

void strata_repl__turn_fini(struct strata_repl__turn *t)
{
    free(t->e);
    t->e = NULL;
    t->n = 0;
}
