/*
 * sse_rewrap.c - the key rotation pass: walks every version of every
 * bucket and re-wraps SSE-S3 object keys held under a non-active master
 * key with the active one (strata_obj_sse_rewrap: the record only, never
 * the data).  One background thread, started after the daemon serves;
 * each rewrite is a compare-and-set under the key lock, so it races
 * safely with PUTs, deletes and tag changes.  Idempotent: a restart in
 * the middle just runs the pass again.
 */
#include "srv.h"
#include "sse.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 500

struct cand {
    char *key;
    char vid[STRATA_VERSION_ID_MAX + 1];
    uint8_t *desc;
    size_t len;
};

struct page {
    struct cand c[PAGE];
    size_t n;
    uint64_t scanned;
};

struct strata_rewrap {
    struct strata_srv *s;
    pthread_t th;
    atomic_bool stop;
    uint64_t scanned, rewrapped, failed;
};

static int page_cb(const struct strata_list_entry *e, void *ud)
{
    struct page *p = ud;
    if (e->is_prefix || !e->info)
        return 0;
    p->scanned++;
    if (!e->info->sse_len || p->n == PAGE)
        return 0;
    struct cand *c = &p->c[p->n];
    c->key = strdup(e->info->key);
    c->desc = malloc(e->info->sse_len);
    if (!c->key || !c->desc) {
        free(c->key);
        free(c->desc);
        return 0;
    }
    memcpy(c->desc, e->info->sse, e->info->sse_len);
    c->len = e->info->sse_len;
    snprintf(c->vid, sizeof(c->vid), "%s", e->info->version_id);
    p->n++;
    return 0;
}

static void rewrap_one(struct strata_rewrap *w, const char *bucket, const struct cand *c)
{
    uint8_t nd[STRATA_SSE_DESC_MAX];
    size_t nl = 0;
    int rc = strata_kms_rewrap_desc(w->s->kms, c->desc, c->len, nd, &nl);
    if (rc == 1)
        rc = strata_obj_sse_rewrap(w->s->meta, bucket, c->key, c->vid, c->desc, c->len, nd, nl);
    else if (rc == 0)
        return;
    if (rc == 0) {
        w->rewrapped++;
    } else if (rc != STRATA_EPRECOND && rc != STRATA_ENOTFOUND) {
        /* (changed or deleted meanwhile: nothing left to re-wrap) */
        w->failed++;
        strata_srv_log(STRATA_LOG_WARN, "kms rewrap: %s/%s version %s: %s", bucket, c->key,
                       c->vid, strata_strerror(rc));
    }
}

static void rewrap_bucket(struct strata_rewrap *w, const char *bucket)
{
    struct page *p = calloc(1, sizeof(*p));
    char key[STRATA_KEY_MAX + 1] = "", vid[STRATA_VERSION_ID_MAX + 1] = "";
    bool more = p != NULL;
    while (more && !atomic_load(&w->stop)) {
        struct strata_list_opts o = {.bucket = bucket, .max_keys = PAGE, .versions = true,
                                     .maintenance = true,
                                     .start_after = key[0] ? key : NULL,
                                     .version_id_marker = vid[0] ? vid : NULL};
        struct strata_list_result res;
        memset(&res, 0, sizeof(res));
        p->n = 0;
        p->scanned = 0;
        int rc = strata_obj_list(w->s->meta, &o, page_cb, p, &res);
        for (size_t i = 0; i < p->n; i++) {
            if (rc == 0 && !atomic_load(&w->stop))
                rewrap_one(w, bucket, &p->c[i]);
            free(p->c[i].key);
            free(p->c[i].desc);
        }
        w->scanned += p->scanned;
        if (rc) {
            w->failed++;
            strata_srv_log(STRATA_LOG_WARN, "kms rewrap: listing %s: %s", bucket,
                           strata_strerror(rc));
            break;
        }
        more = res.truncated;
        snprintf(key, sizeof(key), "%s", res.next_key);
        snprintf(vid, sizeof(vid), "%s", res.next_version_id);
    }
    free(p);
}

static int bucket_cb(const struct strata_bucket_info *b, void *ud)
{
    char ***names = ud;
    size_t n = 0;
    while ((*names)[n])
        n++;
    char **nn = realloc(*names, (n + 2) * sizeof(char *));
    if (!nn)
        return 0;
    *names = nn;
    nn[n] = strdup(b->name);
    nn[n + 1] = NULL;
    return 0;
}

static void *rewrap_main(void *arg)
{
    struct strata_rewrap *w = arg;
    char **names = calloc(1, sizeof(char *));
    if (names)
        strata_meta_bucket_list(w->s->meta, bucket_cb, &names);
    strata_srv_log(STRATA_LOG_NOTICE, "kms rewrap: started");
    for (size_t i = 0; names && names[i]; i++) {
        if (!atomic_load(&w->stop))
            rewrap_bucket(w, names[i]);
        strata_srv_log(STRATA_LOG_NOTICE,
                       "kms rewrap: bucket %s done: %llu versions scanned, %llu re-wrapped, "
                       "%llu failed so far",
                       names[i], (unsigned long long)w->scanned,
                       (unsigned long long)w->rewrapped, (unsigned long long)w->failed);
        free(names[i]);
    }
    free(names);
    strata_srv_log(STRATA_LOG_NOTICE,
                   "kms rewrap: %s: %llu versions scanned, %llu re-wrapped, %llu failed",
                   atomic_load(&w->stop) ? "stopped" : "finished",
                   (unsigned long long)w->scanned, (unsigned long long)w->rewrapped,
                   (unsigned long long)w->failed);
    return NULL;
}

int strata_rewrap_start(struct strata_srv *s, struct strata_rewrap **out)
{
    *out = NULL;
    if (!s->kms)
        return STRATA_EINVAL;
    struct strata_rewrap *w = calloc(1, sizeof(*w));
    if (!w)
        return STRATA_ENOMEM;
    w->s = s;
    atomic_init(&w->stop, false);
    if (pthread_create(&w->th, NULL, rewrap_main, w) != 0) {
        free(w);
        return STRATA_EINTERNAL;
    }
    *out = w;
    return 0;
}

void strata_rewrap_stop(struct strata_rewrap *w)
{
    if (!w)
        return;
    atomic_store(&w->stop, true);
    pthread_join(w->th, NULL);
    free(w);
}
