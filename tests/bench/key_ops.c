/*
 * key_ops.c - a fixed, single-threaded workload over the object layer's
 * per-key commits and reads, for comparing the CPU cost of the metadata
 * paths between builds (instruction counts under callgrind are stable on a
 * loaded machine, wall times are not):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=OUT bench_key_ops [-n N]
 *
 * On four new drive directories (removed afterwards): N PUTs of 4 KiB
 * (inline) to an unversioned bucket, N GETs, N overwrites (each replaces
 * the null version), N tag rewrites, N DELETEs; N PUTs of 4 KiB to a
 * versioned bucket and N delete markers; N/4 PUTs of 300 KiB (erasure
 * coded) and their GETs.  Under callgrind the statistics are zeroed after
 * open and dumped after the workload (part "workload"), so open and close
 * are left out.  Without valgrind it prints the workload's wall time.
 * Any failed operation makes it exit 1.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "strata/meta.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s)
#endif

static struct strata_meta *M;
static unsigned FAILURES;

static void check(int rc, const char *what, const char *key)
{
    if (rc) {
        FAILURES++;
        fprintf(stderr, "bench_key_ops: %s %s: %s\n", what, key, strata_errname(rc));
    }
}

static void put(const char *bucket, const char *key, const uint8_t *data, size_t len)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = bucket;
    o.key = key;
    o.size = len;
    struct strata_put *p;
    int rc = strata_obj_put_begin(M, &o, &p);
    if (rc == 0 && (rc = strata_obj_put_write(p, data, len)) != 0)
        strata_obj_put_abort(p);
    else if (rc == 0)
        rc = strata_obj_put_commit(p, NULL);
    check(rc, "PUT", key);
}

static void get(const char *bucket, const char *key, uint8_t *buf, size_t len)
{
    struct strata_get *g;
    struct strata_obj_info info;
    int rc = strata_obj_get_open(M, bucket, key, NULL, &info, &g);
    if (rc == 0) {
        if (info.size != len)
            rc = STRATA_ECORRUPT;
        else
            rc = strata_obj_get_read(g, 0, buf, len);
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
    }
    check(rc, "GET", key);
}

static void workload(unsigned n, uint8_t *small, uint8_t *big, uint8_t *buf)
{
    char key[64];
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%05u", i);
        put("u", key, small, 4096);
    }
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%05u", i);
        get("u", key, buf, 4096);
    }
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%05u", i);
        put("u", key, small, 4096);
    }
    static const char tags[] = "tagset";
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%05u", i);
        check(strata_obj_tags_put(M, "u", key, NULL, tags, sizeof(tags) - 1, NULL), "TAGS", key);
    }
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%05u", i);
        check(strata_obj_delete(M, "u", key, NULL, NULL), "DELETE", key);
    }
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%05u", i);
        put("v", key, small, 4096);
    }
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%05u", i);
        check(strata_obj_delete(M, "v", key, NULL, NULL), "DELETE", key);
    }
    for (unsigned i = 0; i < n / 4; i++) {
        snprintf(key, sizeof(key), "big%05u", i);
        put("u", key, big, 300 * 1024);
        get("u", key, buf, 300 * 1024);
    }
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static int bucket(const char *name, int versioning)
{
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "%s", name);
    snprintf(b.owner, sizeof(b.owner), "bench");
    b.versioning = versioning;
    return strata_meta_bucket_create(M, &b);
}

int main(int argc, char **argv)
{
    unsigned n = 200;
    int opt;
    while ((opt = getopt(argc, argv, "n:")) != -1) {
        if (opt != 'n' || (n = (unsigned)strtoul(optarg, NULL, 10)) == 0) {
            fprintf(stderr, "usage: %s [-n N]\n", argv[0]);
            return 2;
        }
    }
    char tmpl[] = "/tmp/strata-keyops-XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    char dirs[4][600];
    const char *paths[4];
    for (unsigned d = 0; d < 4; d++) {
        snprintf(dirs[d], sizeof(dirs[d]), "%s/d%u", tmpl, d + 1);
        mkdir(dirs[d], 0755);
        paths[d] = dirs[d];
    }
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    struct strata_set *set;
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    int rc = strata_set_open(paths, 4, &so, &set, &ei);
    if (rc == 0 && (rc = strata_meta_open(&set, 1, NULL, &M, &ei)) != 0)
        strata_set_close(set);
    if (rc) {
        fprintf(stderr, "open: %s %s\n", strata_errname(rc), ei.msg);
        nftw(tmpl, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        return 1;
    }
    uint8_t *small = malloc(4096), *big = malloc(300 * 1024), *buf = malloc(300 * 1024);
    if (!small || !big || !buf || bucket("u", STRATA_VERSIONING_OFF) ||
        bucket("v", STRATA_VERSIONING_ENABLED)) {
        fprintf(stderr, "bench_key_ops: setup failed\n");
        FAILURES++;
    } else {
        for (size_t i = 0; i < 300 * 1024; i++)
            big[i] = (uint8_t)(i * 2654435761u >> 13);
        memcpy(small, big, 4096);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CALLGRIND_ZERO_STATS;
        workload(n, small, big, buf);
        CALLGRIND_DUMP_STATS_AT("workload");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("bench_key_ops: n=%u, workload %.3f s\n", n,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    }
    free(small);
    free(big);
    free(buf);
    strata_meta_close(M);
    strata_set_close(set);
    nftw(tmpl, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return FAILURES ? 1 : 0;
}
