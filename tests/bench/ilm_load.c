/*
 * ilm_load.c - bulk loader of tests/bench/ilm_lag.py (a program, never a
 * test): fills a four-drive set through the object layer, as the daemon's
 * PUT path would, faster than S3 requests can on this machine.
 *
 *   bench_ilm_load N DUE_FRACTION THREADS N100K OWNER d1 d2 d3 d4
 *
 * OWNER is the access key that owns the buckets (the daemon's root user).
 *
 * Bucket "lag": N * (1 - DUE_FRACTION) objects "a-keep/NNNNNNNN" first, then
 * the rest as "z-due/NNNNNNNN" (100 bytes each, inline; last in key order, so
 * the full pass reaches them last), and the lifecycle rule
 * "z-due/ expires after 1 day".  Bucket "dl": N100K objects of 100 KiB for
 * the dataloader GETs.  Prints one JSON line: counts, load seconds and the
 * mtime (ms) of the first and the last due object.  Exits 1 on any failure.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/erasure.h"
#include "strata/meta.h"

struct job {
    struct strata_meta *m;
    const char *bucket, *prefix; /* keys: prefix + zero-padded number */
    unsigned from, to;
    size_t size;
    atomic_uint next;
    atomic_int failed;
    _Atomic int64_t first_ms, last_ms;
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *worker(void *arg)
{
    struct job *j = arg;
    uint8_t *data = malloc(j->size ? j->size : 1);
    for (size_t i = 0; i < j->size; i++)
        data[i] = (uint8_t)(i * 31 + 7);
    for (;;) {
        unsigned i = atomic_fetch_add(&j->next, 1);
        if (i >= j->to)
            break;
        char key[64];
        snprintf(key, sizeof(key), "%s%08u", j->prefix, i);
        struct strata_put_opts o;
        memset(&o, 0, sizeof(o));
        o.bucket = j->bucket;
        o.key = key;
        o.size = j->size;
        struct strata_put *p;
        struct strata_obj_info info;
        memset(&info, 0, sizeof(info));
        int rc = strata_obj_put_begin(j->m, &o, &p);
        if (rc == 0 && (rc = strata_obj_put_write(p, data, j->size)) != 0)
            strata_obj_put_abort(p);
        else if (rc == 0)
            rc = strata_obj_put_commit(p, &info);
        if (rc) {
            fprintf(stderr, "put %s/%s: %s\n", j->bucket, key, strata_errname(rc));
            atomic_store(&j->failed, 1);
            break;
        }
        int64_t first = atomic_load(&j->first_ms);
        while ((first == 0 || info.mtime_ms < first) &&
               !atomic_compare_exchange_weak(&j->first_ms, &first, info.mtime_ms))
            ;
        int64_t last = atomic_load(&j->last_ms);
        while (info.mtime_ms > last && !atomic_compare_exchange_weak(&j->last_ms, &last,
                                                                      info.mtime_ms))
            ;
        strata_obj_info_fini(&info);
    }
    free(data);
    return NULL;
}

static int load(struct strata_meta *m, const char *bucket, const char *prefix, unsigned from,
                unsigned to, size_t size, unsigned threads, int64_t *first, int64_t *last)
{
    struct job j = {.m = m, .bucket = bucket, .prefix = prefix, .from = from, .to = to, .size = size};
    atomic_init(&j.next, from);
    atomic_init(&j.failed, 0);
    atomic_init(&j.first_ms, 0);
    atomic_init(&j.last_ms, 0);
    pthread_t t[256];
    for (unsigned i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, &j);
    for (unsigned i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    if (first)
        *first = atomic_load(&j.first_ms);
    if (last)
        *last = atomic_load(&j.last_ms);
    return atomic_load(&j.failed);
}

static int bucket(struct strata_meta *m, const char *name, const char *owner)
{
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "%s", name);
    snprintf(b.owner, sizeof(b.owner), "%s", owner);
    snprintf(b.region, sizeof(b.region), "us-east-1");
    b.created_ms = wall_ms();
    int rc = strata_meta_bucket_create(m, &b);
    return rc == STRATA_EEXISTS ? 0 : rc;
}

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: bench_ilm_load N DUE_FRACTION THREADS N100K OWNER d1 d2 d3 d4\n");
        return 2;
    }
    unsigned n = (unsigned)strtoul(argv[1], NULL, 10);
    double frac = strtod(argv[2], NULL);
    unsigned threads = (unsigned)strtoul(argv[3], NULL, 10);
    unsigned n100k = (unsigned)strtoul(argv[4], NULL, 10);
    if (threads == 0 || threads > 256 || frac < 0 || frac > 1)
        return 2;
    const char *owner = argv[5];
    const char *paths[4] = {argv[6], argv[7], argv[8], argv[9]};
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    struct strata_set *set = NULL;
    struct strata_meta *m = NULL;
    int rc = strata_set_open(paths, 4, &so, &set, &ei);
    if (rc == 0)
        rc = strata_meta_open(&set, 1, NULL, &m, &ei);
    if (rc) {
        fprintf(stderr, "open: %s %s\n", strata_errname(rc), ei.msg);
        return 1;
    }
    const char *rules = "<LifecycleConfiguration><Rule><ID>lag</ID><Filter><Prefix>z-due/</Prefix>"
                        "</Filter><Status>Enabled</Status><Expiration><Days>1</Days>"
                        "</Expiration></Rule></LifecycleConfiguration>";
    rc = bucket(m, "lag", owner);
    if (rc == 0)
        rc = bucket(m, "dl", owner);
    if (rc == 0)
        rc = strata_meta_bucket_config_put(m, "lag", "lifecycle", rules, strlen(rules));
    if (rc) {
        fprintf(stderr, "buckets: %s\n", strata_errname(rc));
        return 1;
    }
    unsigned ndue = (unsigned)(n * frac + 0.5), nkeep = n - ndue;
    int64_t t0 = wall_ms(), first = 0, last = 0;
    int failed = load(m, "dl", "", 0, n100k, 100 * 1024, threads, NULL, NULL);
    failed |= load(m, "lag", "a-keep/", 0, nkeep, 100, threads, NULL, NULL);
    failed |= load(m, "lag", "z-due/", 0, ndue, 100, threads, &first, &last);
    int64_t t1 = wall_ms();
    strata_meta_close(m);
    strata_set_close(set);
    printf("{\"objects\":%u,\"due\":%u,\"dl\":%u,\"load_s\":%.1f,\"puts_per_s\":%.0f,"
           "\"due_first_ms\":%lld,\"due_last_ms\":%lld}\n",
           n, ndue, n100k, (t1 - t0) / 1000.0, (n + n100k) * 1000.0 / (double)(t1 - t0 + 1),
           (long long)first, (long long)last);
    return failed ? 1 : 0;
}
