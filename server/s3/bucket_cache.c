/*
 * bucket_cache.c - a small cache of bucket records in front of
 * strata_meta_bucket_get, which reads the record from every drive for a
 * quorum: on small GETs that was about half the metadata work.  Entries
 * live one second; this daemon invalidates a bucket whenever it changes
 * one (create, delete, versioning), so it never serves its own stale
 * writes.  Misses are not cached.  Any connection thread; the table and
 * the per-thread copies in front of it are epoch_cache.c's.
 */
#include "srv.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "epoch_cache.h"

/* A cached record (a thread's copy is a whole record too). */
struct bc_rec {
    struct strata_eref e; /* first */
    struct strata_bucket_info info;
};

static void rec_free(struct strata_eref *e)
{
    free(e);
}

static struct strata_ecache cache = STRATA_ECACHE_INIT(&strata_eref_ops);

struct load_arg {
    struct strata_meta *m;
    const char *name;
};

static int rec_load(void *arg, void **out)
{
    struct load_arg *a = arg;
    struct strata_bucket_info info;
    int rc = strata_meta_bucket_get(a->m, a->name, &info);
    if (rc)
        return rc;
    struct bc_rec *rec = malloc(sizeof(*rec));
    if (!rec)
        return STRATA_ENOMEM;
    strata_eref_init(&rec->e, sizeof(*rec), rec_free);
    rec->info = info;
    *out = rec;
    return 0;
}

int strata_bcache_get(struct strata_meta *m, const char *name, struct strata_bucket_info *out)
{
    struct load_arg a = {m, name};
    void *v;
    int rc = strata_ecache_get(&cache, name, 0, rec_load, &a, &v);
    if (rc)
        return rc;
    *out = ((struct bc_rec *)v)->info;
    strata_eref_put(v);
    return 0;
}

void strata_bcache_invalidate(const char *name)
{
    strata_ecache_invalidate(&cache, name);
}
