/*
 * objects.c - object layer benchmark: PUT and GET MB/s and ops/s through
 * strata_obj_put_* / strata_obj_get_* for 4 KiB, 128 KiB, 1 MiB and 64 MiB
 * objects, single-threaded and with 16 concurrent clients, and listing
 * keys/s through strata_obj_list (pages of 1,000) over a large bucket.
 * Multipart: a 1 GiB upload as 8 parallel parts of 64 MiB (strata_mpu_*),
 * its complete, and its full read back, in MB/s; then the time to
 * complete 1,000 small parts and HEAD / ranged GET latency of that object.
 *
 *   bench_objects [-k list_keys] [-t threads] [-s scale] [-m mp_MiB] [-p part_MiB]
 *                 [-o sizes] [-S] [-L n] [-x] [drive dir ...]
 *
 * -o picks the object sizes to run, e.g. "-o 1m,64m" (of 4k,128k,1m,64m,
 * and 300k and 8m, which run only when named; 300k is the smallest shape
 * that is not inline and not a whole stripe).
 * -S makes every PUT a signed-payload PUT as the daemon does it: the
 * expected MD5 and SHA-256 of the body are passed (computed before the
 * clock starts), so the engine hashes both and verifies them.
 * -x (a drill for the failure path) makes the GET rows read keys that were
 * never written: every read fails, and so must the run.
 * -L n adds the latency anatomy of single-client small PUTs (n of each):
 * the erasure writer's phases, the whole PUT, an inline PUT.
 *
 * Every GET row comes twice: "GET warm" reads back what was just written
 * (page cache and metadata block cache hot: no drive is read), "GET cold"
 * the same objects after sync, drop_caches and reopening the metadata (as
 * root; without root no cold row is printed).  Any failed operation
 * (PUT, GET, HEAD, read, list) is reported on stderr and makes the program
 * exit 1.
 *
 * Drive directories default to four new ones under a temporary folder
 * (removed afterwards); given ones are used as they are (empty or a
 * formatted set) and are left in place.  -s scales the object counts
 * (default 1.0).  Durable: every put is fsynced as in the daemon.
 */
#include <ftw.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "strata/meta.h"

static struct strata_meta *M;
static const char *BUCKET = "bench";
static bool SIGNED; /* -S: pass the expected MD5 and SHA-256 like a signed PUT */
/* Every failed operation (PUT, GET, HEAD, read, list) is counted here and
 * makes the program exit 1: a row measured over failures is no result. */
static unsigned FAILURES;

static void failed(const char *what, const char *key, int rc)
{
    FAILURES++;
    fprintf(stderr, "bench_objects: %s %s: %s\n", what, key, strata_errname(rc));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

struct job {
    const char *prefix;
    size_t size;
    unsigned from, count, step; /* objects from, from+step, ... (count of them) */
    uint8_t *buf;
    bool get;
    int rc;
    uint8_t md5[16], sha256[32]; /* of buf, when SIGNED */
};

static void digests(const uint8_t *buf, size_t size, uint8_t md5[16], uint8_t sha256[32])
{
    unsigned l = 0;
    EVP_Digest(buf, size, md5, &l, EVP_md5(), NULL);
    EVP_Digest(buf, size, sha256, &l, EVP_sha256(), NULL);
}

static int put_one(const char *key, const uint8_t *buf, size_t size, const struct job *j)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = BUCKET;
    o.key = key;
    o.size = size;
    if (SIGNED && j) {
        o.md5 = j->md5;
        o.sha256 = j->sha256;
    }
    struct strata_put *p;
    int rc = strata_obj_put_begin(M, &o, &p);
    if (rc)
        return rc;
    size_t chunk = 1u << 20;
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        rc = strata_obj_put_write(p, buf + off, n);
        if (rc) {
            strata_obj_put_abort(p);
            return rc;
        }
    }
    return strata_obj_put_commit(p, NULL);
}

/* ---- latency anatomy (-L) -------------------------------------------------- */

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void lat_row(const char *what, double *ms, unsigned n)
{
    qsort(ms, n, sizeof(double), dcmp);
    printf("| %-44s | %8.2f | %8.2f | %8.2f |\n", what, ms[n / 2], ms[n * 9 / 10], ms[n - 1]);
}

/*
 * Where the milliseconds of one small PUT go, single client: the erasure
 * writer's phases (open tmp files; write = copy only, the stripe goes out
 * at finish; finish = encode + data write + table/header + fsync + rename +
 * directory fsync, all drives side by side), a whole object PUT of the same
 * size, and an inline 4 KiB PUT (the synced record commit on every drive,
 * plus the quorum read before it).  The PUT minus the writer is the record
 * side of a PUT.
 */
static void latency(struct strata_set *set, unsigned n)
{
    const size_t sizes[] = {128 * 1024 + 1, 1u << 20};
    double *a = calloc(n, sizeof(double)), *b = calloc(n, sizeof(double)),
           *c = calloc(n, sizeof(double)), *t = calloc(n, sizeof(double));
    uint8_t *buf = malloc(1u << 20);
    if (!a || !b || !c || !t || !buf)
        return;
    for (size_t i = 0; i < (1u << 20); i++)
        buf[i] = (uint8_t)(i * 13 + 1);
    printf("\n| latency, 1 client, ms (n = %u)                  |   median |      p90 |      max |\n", n);
    printf("|----------------------------------------------|----------|----------|----------|\n");
    uint8_t(*ids)[STRATA_DATA_ID_LEN] = calloc(n, STRATA_DATA_ID_LEN);
    if (!ids)
        return;
    for (size_t z = 0; z < 2; z++) {
        size_t size = sizes[z];
        char what[96];
        for (unsigned i = 0; i < n; i++) {
            uint8_t *id = ids[i];
            strata_data_id_new(id);
            struct strata_ec_writer *w;
            double t0 = now_s();
            int crc = strata_ec_writer_create(set, id, &w);
            if (crc) {
                failed("ec writer create", "-", crc);
                return;
            }
            double t1 = now_s();
            strata_ec_writer_write(w, buf, size);
            double t2 = now_s();
            int rc = strata_ec_writer_finish(w, NULL);
            double t3 = now_s();
            strata_ec_writer_destroy(w);
            if (rc) {
                failed("ec writer finish", "-", rc);
                return;
            }
            a[i] = (t1 - t0) * 1e3;
            b[i] = (t2 - t1) * 1e3;
            c[i] = (t3 - t2) * 1e3;
            t[i] = (t3 - t0) * 1e3;
        }
        snprintf(what, sizeof(what), "ec writer %zu B: create (open tmp files)", size);
        lat_row(what, a, n);
        snprintf(what, sizeof(what), "ec writer %zu B: write (copy)", size);
        lat_row(what, b, n);
        snprintf(what, sizeof(what), "ec writer %zu B: finish (I/O, fsyncs, publish)", size);
        lat_row(what, c, n);
        snprintf(what, sizeof(what), "ec writer %zu B: total", size);
        lat_row(what, t, n);
        /* Deleted only now: freeing blocks (ext4 with discard) slows the
         * next creates, which a stream of new PUTs does not see. */
        for (unsigned i = 0; i < n; i++)
            strata_ec_delete(set, ids[i]);
        for (unsigned i = 0; i < n; i++) {
            char key[64];
            snprintf(key, sizeof(key), "lat/%zu/%u", size, i);
            double t0 = now_s();
            int prc = put_one(key, buf, size, NULL);
            if (prc) {
                failed("put", key, prc);
                return;
            }
            t[i] = (now_s() - t0) * 1e3;
        }
        snprintf(what, sizeof(what), "object PUT %zu B (unsigned)", size);
        lat_row(what, t, n);
    }
    for (unsigned i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof(key), "lat/4k/%u", i);
        double t0 = now_s();
        int prc = put_one(key, buf, 4096, NULL);
        if (prc) {
            failed("put", key, prc);
            return;
        }
        t[i] = (now_s() - t0) * 1e3;
    }
    lat_row("object PUT 4096 B inline (record commit only)", t, n);
    /* First bytes of an object: record read, shard headers and tables,
     * the first stripe. */
    for (unsigned i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof(key), "lat/%zu/%u", sizes[1], i);
        struct strata_get *g;
        struct strata_obj_info info;
        double t0 = now_s();
        int rc = strata_obj_get_open(M, BUCKET, key, NULL, &info, &g);
        if (rc) {
            failed("get open", key, rc);
            return;
        }
        rc = strata_obj_get_read(g, 0, buf, 4096);
        t[i] = (now_s() - t0) * 1e3;
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
        if (rc) {
            failed("get read", key, rc);
            return;
        }
    }
    lat_row("object GET 1 MiB: open + first 4 KiB", t, n);
    size_t big = 8u << 20;
    uint8_t *bb = malloc(big);
    unsigned nb = n / 4 ? n / 4 : 1;
    for (size_t i = 0; bb && i < big; i++)
        bb[i] = (uint8_t)(i * 7);
    for (unsigned i = 0; bb && i < nb; i++) {
        char key[64];
        snprintf(key, sizeof(key), "lat/8m/%u", i);
        int prc = put_one(key, bb, big, NULL);
        if (prc) {
            failed("put", key, prc);
            return;
        }
    }
    for (unsigned i = 0; bb && i < nb; i++) {
        char key[64];
        snprintf(key, sizeof(key), "lat/8m/%u", i);
        struct strata_get *g;
        struct strata_obj_info info;
        double t0 = now_s();
        int rc = strata_obj_get_open(M, BUCKET, key, NULL, &info, &g);
        if (rc) {
            failed("get open", key, rc);
            return;
        }
        rc = strata_obj_get_read(g, 0, buf, 4096);
        t[i] = (now_s() - t0) * 1e3;
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
        if (rc) {
            failed("get read", key, rc);
            return;
        }
    }
    if (bb)
        lat_row("object GET 8 MiB: open + first 4 KiB", t, nb);
    free(bb);
    free(ids);
    free(a);
    free(b);
    free(c);
    free(t);
    free(buf);
}

/* ---- multipart ---------------------------------------------------------- */

struct mpjob {
    const char *key, *uid;
    const uint8_t *buf; /* one part's bytes, shared read-only */
    size_t psize;
    unsigned first, step, nparts;
    char (*etags)[STRATA_ETAG_MAX + 1];
    int rc;
};

static void *mp_worker(void *arg)
{
    struct mpjob *j = arg;
    for (unsigned no = j->first; no <= j->nparts && j->rc == 0; no += j->step) {
        struct strata_part_opts o;
        memset(&o, 0, sizeof(o));
        o.bucket = BUCKET;
        o.key = j->key;
        o.upload_id = j->uid;
        o.part_number = no;
        o.size = j->psize;
        struct strata_put *p;
        j->rc = strata_mpu_part_begin(M, &o, &p);
        if (j->rc)
            break;
        for (size_t off = 0; off < j->psize && j->rc == 0; off += 1u << 20) {
            size_t n = j->psize - off < (1u << 20) ? j->psize - off : (1u << 20);
            j->rc = strata_obj_put_write(p, j->buf + off, n);
        }
        if (j->rc) {
            strata_obj_put_abort(p);
            break;
        }
        struct strata_obj_info info;
        j->rc = strata_obj_put_commit(p, &info);
        if (j->rc == 0) {
            memcpy(j->etags[no - 1], info.etag, sizeof(info.etag));
            strata_obj_info_fini(&info);
        }
    }
    return NULL;
}

/* Upload nparts parts of psize from nthreads threads, then complete;
 * returns the upload seconds and the complete seconds in *complete_s. */
static int mp_upload(const char *key, size_t psize, unsigned nparts, unsigned nthreads,
                     double *upload_s, double *complete_s)
{
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = BUCKET;
    mo.key = key;
    mo.cksum_algo = STRATA_CKSUM_CRC32C;
    mo.cksum_type = STRATA_CKSUM_TYPE_FULL_OBJECT;
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    int rc = strata_mpu_create(M, &mo, uid);
    if (rc)
        return rc;
    uint8_t *buf = malloc(psize);
    char (*etags)[STRATA_ETAG_MAX + 1] = calloc(nparts, sizeof(*etags));
    struct strata_mpu_part *parts = calloc(nparts, sizeof(*parts));
    if (!buf || !etags || !parts)
        return STRATA_ENOMEM;
    for (size_t i = 0; i < psize; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    pthread_t th[64];
    struct mpjob jobs[64];
    double t0 = now_s();
    for (unsigned t = 0; t < nthreads; t++) {
        jobs[t] = (struct mpjob){key, uid, buf, psize, t + 1, nthreads, nparts, etags, 0};
        pthread_create(&th[t], NULL, mp_worker, &jobs[t]);
    }
    for (unsigned t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].rc && !rc)
            rc = jobs[t].rc;
    }
    *upload_s = now_s() - t0;
    if (rc == 0) {
        for (unsigned i = 0; i < nparts; i++)
            parts[i] = (struct strata_mpu_part){i + 1, etags[i], NULL, 0};
        struct strata_mpu_complete_opts co = {BUCKET, key,   uid, parts, nparts, NULL,
                                              false,  false, 0,   NULL,  NULL};
        t0 = now_s();
        rc = strata_mpu_complete(M, &co, NULL);
        *complete_s = now_s() - t0;
    }
    if (rc)
        strata_mpu_abort(M, BUCKET, key, uid);
    free(buf);
    free(etags);
    free(parts);
    return rc;
}

static void mp_bench(size_t total_mib, size_t part_mib)
{
    size_t psize = part_mib << 20;
    unsigned nparts = (unsigned)(total_mib / part_mib);
    if (nparts < 1)
        nparts = 1;
    double up = 0, comp = 0;
    printf("\n| multipart | parts x size | threads |    MB/s | complete ms |\n");
    printf("|-----------|--------------|---------|---------|-------------|\n");
    int rc = mp_upload("mp-big", psize, nparts, 8, &up, &comp);
    double mb = (double)nparts * (double)psize / 1e6;
    if (rc) {
        printf("| upload    | %4u x %3zu MiB | %7u | FAILED %s |\n", nparts, part_mib, 8,
               strata_errname(rc));
        failed("multipart upload", "mp-big", rc);
        return;
    }
    printf("| upload    | %4u x %3zu MiB | %7u | %7.1f | %11.2f |\n", nparts, part_mib, 8,
           mb / up, comp * 1e3);
    /* Full read back, 1 MiB reads, one reader: part readers open lazily. */
    struct strata_get *g;
    struct strata_obj_info info;
    uint8_t *rb = malloc(1u << 20);
    double t0 = now_s();
    rc = strata_obj_get_open(M, BUCKET, "mp-big", NULL, &info, &g);
    bool same = rc == 0;
    for (uint64_t off = 0; rc == 0 && off < info.size; off += 1u << 20) {
        size_t n = info.size - off < (1u << 20) ? info.size - off : (1u << 20);
        rc = strata_obj_get_read(g, off, rb, n);
        size_t in = (size_t)(off % psize);
        for (size_t i = 0; rc == 0 && i < n; i += 4093)
            same &= rb[i] == (uint8_t)((in + i) * 131 + 7);
    }
    double dt = now_s() - t0;
    if (g)
        strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(rb);
    printf("| read back | %4u x %3zu MiB | %7u | %7.1f | %11s |\n", nparts, part_mib, 1,
           rc || !same ? 0.0 : mb / dt, rc ? strata_errname(rc) : same ? "-" : "WRONG BYTES");
    if (rc || !same)
        failed("multipart read back", "mp-big", rc ? rc : STRATA_ECORRUPT);
    /* 1,000 parts of 4 KiB: the complete is metadata only. */
    rc = mp_upload("mp-1000", 4096, 1000, 16, &up, &comp);
    if (rc) {
        printf("\n1000-part upload: FAILED %s\n", strata_errname(rc));
        failed("multipart upload", "mp-1000", rc);
        return;
    }
    printf("\n1000 parts of 4 KiB: upload %.2f s (16 clients), complete %.1f ms\n", up,
           comp * 1e3);
    t0 = now_s();
    for (int i = 0; i < 1000; i++) {
        rc = strata_obj_head(M, BUCKET, "mp-1000", NULL, &info);
        strata_obj_info_fini(&info);
        if (rc) {
            failed("head", "mp-1000", rc);
            return;
        }
    }
    double head_us = (now_s() - t0) * 1e3;
    uint8_t small[4096];
    t0 = now_s();
    for (int i = 0; i < 1000; i++) {
        rc = strata_obj_get_open(M, BUCKET, "mp-1000", NULL, &info, &g);
        if (rc == 0) {
            rc = strata_obj_get_read(g, (uint64_t)(i * 7919 % 999) * 4096 + 100, small, 4096);
            strata_obj_get_close(g);
        }
        strata_obj_info_fini(&info);
        if (rc) {
            failed("ranged get", "mp-1000", rc);
            return;
        }
    }
    double get_us = (now_s() - t0) * 1e3;
    printf("1000-part object: HEAD %.1f us, GET (open + 4 KiB across a part boundary) %.1f us\n",
           head_us, get_us);
}

static int get_one(const char *key, uint8_t *buf, size_t size)
{
    struct strata_get *g;
    struct strata_obj_info info;
    int rc = strata_obj_get_open(M, BUCKET, key, NULL, &info, &g);
    if (rc)
        return rc;
    size_t chunk = 1u << 20;
    for (size_t off = 0; off < size && rc == 0; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        rc = strata_obj_get_read(g, off, buf + off, n);
    }
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    return rc;
}

static void *run_job(void *arg)
{
    struct job *j = arg;
    char key[128];
    for (unsigned i = 0; i < j->count; i++) {
        snprintf(key, sizeof(key), "%s/%08u", j->prefix, j->from + i * j->step);
        j->rc = j->get ? get_one(key, j->buf, j->size) : put_one(key, j->buf, j->size, j);
        if (j->rc) {
            fprintf(stderr, "bench_objects: %s %s: %s\n", j->get ? "get" : "put", key,
                    strata_errname(j->rc));
            return NULL;
        }
    }
    return NULL;
}

/* count objects of size over threads; returns seconds or -1. */
static double run(const char *prefix, size_t size, unsigned count, unsigned threads, bool get,
                  uint8_t **bufs)
{
    pthread_t t[64];
    static struct job jobs[64];
    for (unsigned i = 0; i < threads; i++) {
        unsigned n = count / threads + (i < count % threads);
        jobs[i] = (struct job){prefix, size, i, n, threads, bufs[i], get, 0, {0}, {0}};
        if (SIGNED && !get) {
            /* Clients often share one buffer, or hold copies of it. */
            if (i > 0 && (bufs[i] == bufs[i - 1] || memcmp(bufs[i], bufs[i - 1], size) == 0)) {
                memcpy(jobs[i].md5, jobs[i - 1].md5, 16);
                memcpy(jobs[i].sha256, jobs[i - 1].sha256, 32);
            } else {
                digests(bufs[i], size, jobs[i].md5, jobs[i].sha256);
            }
        }
    }
    double t0 = now_s();
    for (unsigned i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, run_job, &jobs[i]);
    int rc = 0;
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        rc |= jobs[i].rc;
    }
    double dt = now_s() - t0;
    if (rc)
        FAILURES++;
    return rc ? -1 : dt;
}

static void row(const char *op, size_t size, unsigned threads, unsigned count, double dt)
{
    char sz[32];
    if (size >= (1u << 20))
        snprintf(sz, sizeof(sz), "%zu MiB", size >> 20);
    else
        snprintf(sz, sizeof(sz), "%zu KiB", size >> 10);
    if (dt < 0) {
        printf("| %-8s | %-8s | %7u | %7u | %10s | %10s |\n", op, sz, threads, count, "FAILED", "");
        return;
    }
    printf("| %-8s | %-8s | %7u | %7u | %10.1f | %10.0f |\n", op, sz, threads, count,
           (double)size * count / dt / 1e6, count / dt);
    fflush(stdout);
}

/* Cold reads: the page cache dropped and the metadata reopened, so its
 * block cache is empty too.  Without root the cache cannot be dropped and
 * no cold row is printed (never a warm figure labelled cold). */
static bool COLD;
static struct strata_set *SET;
static struct strata_meta_opts MOPTS;

static bool drop_page_cache(void)
{
    sync();
    FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
    if (!f)
        return false;
    bool ok = fputs("3\n", f) >= 0;
    return fclose(f) == 0 && ok;
}

static bool cold_possible(void)
{
    return drop_page_cache();
}

static int make_cold(void)
{
    strata_meta_close(M);
    M = NULL;
    if (!drop_page_cache())
        return STRATA_EIO;
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    return strata_meta_open(&SET, 1, &MOPTS, &M, &ei);
}

/* GET rows of objects prefix/0..count-1: warm, then cold. */
static bool MISSING; /* -x: GET rows read keys that were never written */

static void get_rows(const char *prefix, size_t size, unsigned count, unsigned threads,
                     uint8_t **bufs)
{
    char missing[64];
    if (MISSING) {
        snprintf(missing, sizeof(missing), "never-written-%s", prefix);
        prefix = missing;
    }
    row("GET warm", size, threads, count, run(prefix, size, count, threads, true, bufs));
    if (!COLD)
        return;
    int rc = make_cold();
    if (rc) {
        failed("drop caches / reopen metadata", prefix, rc);
        exit(1); /* no metadata open: nothing more can run */
    }
    row("GET cold", size, threads, count, run(prefix, size, count, threads, true, bufs));
}

static int count_cb(const struct strata_list_entry *e, void *ud)
{
    (void)e;
    (*(unsigned long *)ud)++;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long list_keys = 1000000;
    unsigned threads = 16;
    double scale = 1.0;
    size_t mp_mib = 1024, part_mib = 64;
    const char *only = NULL;
    unsigned lat_n = 0;
    int opt;
    while ((opt = getopt(argc, argv, "k:t:s:m:p:o:SL:xh")) != -1) {
        switch (opt) {
        case 'x':
            MISSING = true;
            break;
        case 'o':
            only = optarg;
            break;
        case 'S':
            SIGNED = true;
            break;
        case 'L':
            lat_n = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'm':
            mp_mib = strtoul(optarg, NULL, 10);
            break;
        case 'p':
            part_mib = strtoul(optarg, NULL, 10);
            if (part_mib < 1)
                part_mib = 1;
            break;
        case 'k':
            list_keys = strtoul(optarg, NULL, 10);
            break;
        case 't':
            threads = (unsigned)atoi(optarg);
            break;
        case 's':
            scale = atof(optarg);
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-k list_keys] [-t threads] [-s scale] [-m mp_MiB] "
                    "[-p part_MiB] [-o 4k,128k,1m,64m] [-S] [-L n] [-x] [drive ...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (threads < 1 || threads > 64)
        threads = 16;
    char tmpl[] = "/tmp/strata-bench-XXXXXX";
    char dirs[16][600];
    const char *paths[16];
    unsigned n = 0;
    bool own = optind >= argc;
    if (own) {
        if (!mkdtemp(tmpl)) {
            perror("mkdtemp");
            return 1;
        }
        for (n = 0; n < 4; n++) {
            snprintf(dirs[n], sizeof(dirs[n]), "%s/d%u", tmpl, n + 1);
            mkdir(dirs[n], 0755);
            paths[n] = dirs[n];
        }
    } else {
        for (int i = optind; i < argc && n < 16; i++)
            paths[n++] = argv[i];
    }
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    so.direct_io = true;
    struct strata_set *set;
    struct strata_errinfo ei;
    struct strata_meta_opts mopts;
    memset(&ei, 0, sizeof(ei));
    int rc = strata_set_open(paths, n, &so, &set, &ei);
    if (rc) {
        fprintf(stderr, "set open: %s %s\n", strata_errname(rc), ei.msg);
        return 1;
    }
    memset(&mopts, 0, sizeof(mopts));
    mopts.part_size_min = 4096; /* the 1,000-part row uses 4 KiB parts */
    SET = set;
    MOPTS = mopts;
    rc = strata_meta_open(&set, 1, &mopts, &M, &ei);
    if (rc) {
        fprintf(stderr, "meta open: %s %s\n", strata_errname(rc), ei.msg);
        return 1;
    }
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "%s", BUCKET);
    rc = strata_meta_bucket_create(M, &b);
    if (rc && rc != STRATA_EEXISTS) {
        fprintf(stderr, "bucket: %s\n", strata_errname(rc));
        return 1;
    }
    printf("strata bench_objects: %u drives (%u+%u), %u concurrent clients, %s PUTs, drives %s%s\n\n",
           n, strata_set_k(set), strata_set_m(set), threads,
           SIGNED ? "signed (MD5 + SHA-256 verified)" : "unsigned", paths[0], n > 1 ? " ..." : "");
    COLD = cold_possible();
    printf("GET warm: read right after the PUT (page cache and metadata cache hot).\n"
           "GET cold: %s\n\n",
           COLD ? "after sync, echo 3 > /proc/sys/vm/drop_caches and reopening the metadata "
                  "(empty block cache): what a drive can serve"
                : "not measured (dropping the page cache needs root)");
    printf("| op       | size     | threads | objects |       MB/s |      ops/s |\n");
    printf("|----------|----------|---------|---------|------------|------------|\n");

    struct {
        size_t size;
        unsigned count;
        const char *name;
        bool opt_in; /* only with -o naming it */
    } shapes[] = {{4096, 3000, "4k", false},     {128 * 1024, 800, "128k", false},
                  {300 * 1024, 600, "300k", true}, {1u << 20, 200, "1m", false},
                  {8u << 20, 40, "8m", true},
                  {64u << 20, 6, "64m", false}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        if (shapes[s].opt_in && !only)
            continue;
        if (only) {
            /* Match whole comma-separated names only ("1m" must not match "1m4"). */
            size_t nl = strlen(shapes[s].name);
            const char *q = only;
            bool hit = false;
            while (!hit && (q = strstr(q, shapes[s].name))) {
                hit = (q == only || q[-1] == ',') && (q[nl] == ',' || q[nl] == '\0');
                q += nl;
            }
            if (!hit)
                continue;
        }
        size_t size = shapes[s].size;
        unsigned count = (unsigned)(shapes[s].count * scale);
        if (count < 1)
            count = 1;
        uint8_t *bufs[64];
        unsigned nb = size >= (64u << 20) ? 1 : threads; /* 64 MiB clients share a buffer */
        for (unsigned i = 0; i < threads; i++) {
            if (i < nb) {
                bufs[i] = malloc(size);
                for (size_t j = 0; j < size; j++)
                    bufs[i][j] = (uint8_t)(j * 31 + i);
            } else {
                bufs[i] = bufs[0];
            }
        }
        char p1[32], pn[32];
        snprintf(p1, sizeof(p1), "s%zu-1", size);
        snprintf(pn, sizeof(pn), "s%zu-n", size);
        unsigned c1 = size >= (64u << 20) ? (count + 1) / 2 : count / 2 + 1;
        row("PUT", size, 1, c1, run(p1, size, c1, 1, false, bufs));
        /* GET buffers must be private per thread: reuse only for GET x1. */
        get_rows(p1, size, c1, 1, bufs);
        unsigned cn = size >= (64u << 20) ? count : count;
        if (size >= (64u << 20)) {
            /* 16 writers of 64 MiB each need private read buffers too. */
            for (unsigned i = 1; i < threads; i++)
                bufs[i] = NULL;
            unsigned tn = count < threads ? count : threads;
            for (unsigned i = 1; i < tn; i++)
                bufs[i] = malloc(size);
            for (unsigned i = 1; i < tn; i++)
                memcpy(bufs[i], bufs[0], size);
            row("PUT", size, tn, cn, run(pn, size, cn, tn, false, bufs));
            get_rows(pn, size, cn, tn, bufs);
            for (unsigned i = 0; i < tn; i++)
                free(bufs[i]);
        } else {
            row("PUT", size, threads, cn, run(pn, size, cn, threads, false, bufs));
            get_rows(pn, size, cn, threads, bufs);
            for (unsigned i = 0; i < nb; i++)
                free(bufs[i]);
        }
    }

    if (lat_n)
        latency(set, lat_n);

    if (mp_mib)
        mp_bench(mp_mib, part_mib);

    /* Listing: fill a bucket of list_keys empty objects with all clients,
     * then walk it in pages of 1,000. */
    if (list_keys) {
        BUCKET = "benchlist";
        memset(&b, 0, sizeof(b));
        snprintf(b.name, sizeof(b.name), "%s", BUCKET);
        rc = strata_meta_bucket_create(M, &b);
        unsigned long have = 0;
        if (rc == STRATA_EEXISTS) {
            struct strata_list_opts lo = {.bucket = BUCKET, .max_keys = 1000};
            struct strata_list_result res;
            do {
                strata_obj_list(M, &lo, count_cb, &have, &res);
                lo.start_after = res.next_key;
            } while (res.truncated && have < list_keys);
        }
        uint8_t *bufs[64];
        static uint8_t empty[1];
        for (unsigned i = 0; i < threads; i++)
            bufs[i] = empty;
        if (have < list_keys) {
            double dt = run("k", 0, (unsigned)list_keys, threads, false, bufs);
            if (dt < 0)
                fprintf(stderr, "bench_objects: list fill FAILED\n");
            printf("\nfill: %lu empty objects in %.1f s (%.0f puts/s, %u clients)\n", list_keys,
                   dt, dt > 0 ? list_keys / dt : 0, threads);
        }
        struct strata_list_opts lo = {.bucket = BUCKET, .max_keys = 1000};
        struct strata_list_result res;
        char next[STRATA_KEY_MAX + 1] = "";
        unsigned long seen = 0;
        double t0 = now_s();
        do {
            lo.start_after = next[0] ? next : NULL;
            rc = strata_obj_list(M, &lo, count_cb, &seen, &res);
            snprintf(next, sizeof(next), "%s", res.next_key);
        } while (rc == 0 && res.truncated);
        double dt = now_s() - t0;
        printf("list: %lu keys in %.2f s = %.0f keys/s (pages of 1000)%s\n", seen, dt, seen / dt,
               rc ? " FAILED" : "");
        if (rc)
            failed("list", BUCKET, rc);
    }
    strata_meta_close(M);
    strata_set_close(set);
    if (own)
        nftw(tmpl, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    if (FAILURES) {
        printf("\nbench_objects FAILED: %u failed operation%s (see stderr); the figures "
               "above are not results\n", FAILURES, FAILURES == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
