/*
 * objects.c - object layer benchmark: PUT and GET MB/s and ops/s through
 * strata_obj_put_* / strata_obj_get_* for 4 KiB, 128 KiB, 1 MiB and 64 MiB
 * objects, single-threaded and with 16 concurrent clients, and listing
 * keys/s through strata_obj_list (pages of 1,000) over a large bucket.
 *
 *   bench_objects [-k list_keys] [-t threads] [-s scale] [drive dir ...]
 *
 * Drive directories default to four new ones under a temporary folder
 * (removed afterwards); given ones are used as they are (empty or a
 * formatted set) and are left in place.  -s scales the object counts
 * (default 1.0).  Durable: every put is fsynced as in the daemon.
 */
#include <ftw.h>
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
};

static int put_one(const char *key, const uint8_t *buf, size_t size)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = BUCKET;
    o.key = key;
    o.size = size;
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
        j->rc = j->get ? get_one(key, j->buf, j->size) : put_one(key, j->buf, j->size);
        if (j->rc) {
            fprintf(stderr, "%s %s: %s\n", j->get ? "get" : "put", key, strata_errname(j->rc));
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
    struct job jobs[64];
    double t0 = now_s();
    for (unsigned i = 0; i < threads; i++) {
        unsigned n = count / threads + (i < count % threads);
        jobs[i] = (struct job){prefix, size, i, n, threads, bufs[i], get, 0};
        pthread_create(&t[i], NULL, run_job, &jobs[i]);
    }
    int rc = 0;
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        rc |= jobs[i].rc;
    }
    double dt = now_s() - t0;
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
        printf("| %-4s | %-8s | %7u | %7u | %10s | %10s |\n", op, sz, threads, count, "FAILED", "");
        return;
    }
    printf("| %-4s | %-8s | %7u | %7u | %10.1f | %10.0f |\n", op, sz, threads, count,
           (double)size * count / dt / 1e6, count / dt);
    fflush(stdout);
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
    int opt;
    while ((opt = getopt(argc, argv, "k:t:s:h")) != -1) {
        switch (opt) {
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
            fprintf(stderr, "usage: %s [-k list_keys] [-t threads] [-s scale] [drive ...]\n",
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
    memset(&ei, 0, sizeof(ei));
    int rc = strata_set_open(paths, n, &so, &set, &ei);
    if (rc) {
        fprintf(stderr, "set open: %s %s\n", strata_errname(rc), ei.msg);
        return 1;
    }
    rc = strata_meta_open(&set, 1, NULL, &M, &ei);
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
    printf("strata bench_objects: %u drives (%u+%u), %u concurrent clients, drives %s%s\n\n", n,
           strata_set_k(set), strata_set_m(set), threads, paths[0], n > 1 ? " ..." : "");
    printf("| op   | size     | threads | objects |       MB/s |      ops/s |\n");
    printf("|------|----------|---------|---------|------------|------------|\n");

    struct {
        size_t size;
        unsigned count;
    } shapes[] = {{4096, 3000}, {128 * 1024, 800}, {1u << 20, 200}, {64u << 20, 6}};
    for (size_t s = 0; s < 4; s++) {
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
        unsigned c1 = size >= (64u << 20) ? (count < 3 ? count : 3) : count / 2 + 1;
        row("PUT", size, 1, c1, run(p1, size, c1, 1, false, bufs));
        /* GET buffers must be private per thread: reuse only for GET x1. */
        row("GET", size, 1, c1, run(p1, size, c1, 1, true, bufs));
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
            row("GET", size, tn, cn, run(pn, size, cn, tn, true, bufs));
            for (unsigned i = 0; i < tn; i++)
                free(bufs[i]);
        } else {
            row("PUT", size, threads, cn, run(pn, size, cn, threads, false, bufs));
            row("GET", size, threads, cn, run(pn, size, cn, threads, true, bufs));
            for (unsigned i = 0; i < nb; i++)
                free(bufs[i]);
        }
    }

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
    }
    strata_meta_close(M);
    strata_set_close(set);
    if (own)
        nftw(tmpl, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
