/*
 * list_delim.c - listing cost through strata_obj_list over a fixed bucket:
 * 10,000 keys as 100 directories of 100 keys ("dNNN/kNNN"), each with one
 * version.  For instruction counts under callgrind (the listing rows only:
 * the fill runs separately, natively).
 *
 *   bench_list_delim fill DRIVE... ; bench_list_delim list [-r reps] [-o row] DRIVE...
 *
 * fill formats the drives (empty directories) and writes the keys.  list
 * runs, reps times (default 1), the listing rows and prints each row's
 * entries and wall time: every page of ListObjects with delimiter "/"
 * (100 common prefixes), of ListObjects without one (10 pages of 1,000),
 * of ListObjectVersions, and ListObjects under one directory (-o row: only
 * that row, 0..3).  Every row's
 * entry count is checked; a wrong count or a failed call exits 1.  The
 * listing runs in list_rows, the function to give callgrind's
 * --toggle-collect (list_rows*: a compiler may suffix a clone).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/erasure.h"
#include "strata/meta.h"

#define DIRS 100
#define PER_DIR 100

static const char *BUCKET = "bench";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_cb(const struct strata_list_entry *e, void *ud)
{
    (void)e;
    (*(unsigned *)ud)++;
    return 0;
}

/* Every page of one listing; the entries seen, or -1 on an error. */
static long list_all(struct strata_meta *m, const char *prefix, const char *delim, bool versions)
{
    struct strata_list_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = BUCKET;
    o.prefix = prefix;
    o.delimiter = delim;
    o.max_keys = 1000;
    o.versions = versions;
    char after[STRATA_KEY_MAX + 1] = "", vmark[STRATA_VERSION_ID_MAX + 1] = "";
    long n = 0;
    for (;;) {
        o.start_after = after;
        o.version_id_marker = vmark;
        struct strata_list_result res;
        unsigned got = 0;
        int rc = strata_obj_list(m, &o, count_cb, &got, &res);
        if (rc) {
            fprintf(stderr, "bench_list_delim: list: %s\n", strata_errname(rc));
            return -1;
        }
        n += got;
        if (!res.truncated)
            return n;
        snprintf(after, sizeof(after), "%s", res.next_key);
        snprintf(vmark, sizeof(vmark), "%s", res.next_version_id);
    }
}

struct row {
    const char *name, *prefix, *delim;
    bool versions;
    long want;
};

static const struct row ROWS[] = {
    {"ListObjects delimiter /", NULL, "/", false, DIRS},
    {"ListObjects", NULL, NULL, false, DIRS * PER_DIR},
    {"ListObjectVersions", NULL, NULL, true, DIRS * PER_DIR},
    {"ListObjects prefix d050/", "d050/", "/", false, PER_DIR},
};

__attribute__((noinline)) static int list_rows(struct strata_meta *m, int reps, int only)
{
    int bad = 0;
    for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
        if (only >= 0 && (size_t)only != i)
            continue;
        double t0 = now_s();
        long n = 0;
        for (int r = 0; r < reps && n >= 0; r++)
            n = list_all(m, ROWS[i].prefix, ROWS[i].delim, ROWS[i].versions);
        double dt = (now_s() - t0) / reps;
        printf("%-28s %6ld entries  %8.3f ms\n", ROWS[i].name, n, dt * 1e3);
        bad |= n != ROWS[i].want;
    }
    return bad;
}

static int fill(struct strata_meta *m)
{
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "%s", BUCKET);
    snprintf(b.owner, sizeof(b.owner), "bench");
    snprintf(b.region, sizeof(b.region), "us-east-1");
    int rc = strata_meta_bucket_create(m, &b);
    for (int d = 0; d < DIRS && rc == 0; d++) {
        for (int k = 0; k < PER_DIR && rc == 0; k++) {
            char key[32];
            snprintf(key, sizeof(key), "d%03d/k%03d", d, k);
            struct strata_put_opts o;
            memset(&o, 0, sizeof(o));
            o.bucket = BUCKET;
            o.key = key;
            o.size = 5;
            struct strata_put *p;
            rc = strata_obj_put_begin(m, &o, &p);
            if (rc == 0) {
                rc = strata_obj_put_write(p, "value", 5);
                if (rc)
                    strata_obj_put_abort(p);
                else
                    rc = strata_obj_put_commit(p, NULL);
            }
        }
    }
    if (rc)
        fprintf(stderr, "bench_list_delim: fill: %s\n", strata_errname(rc));
    return rc;
}

int main(int argc, char **argv)
{
    int reps = 1, only = -1, a = 2;
    while (argc >= a + 2 && (strcmp(argv[a], "-r") == 0 || strcmp(argv[a], "-o") == 0)) {
        if (argv[a][1] == 'r')
            reps = atoi(argv[a + 1]);
        else
            only = atoi(argv[a + 1]);
        a += 2;
    }
    if (argc < a + 1 || reps < 1 || (strcmp(argv[1], "fill") && strcmp(argv[1], "list"))) {
        fprintf(stderr, "usage: bench_list_delim fill|list [-r reps] [-o row] DRIVE...\n");
        return 2;
    }
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    struct strata_set *set;
    int rc = strata_set_open((const char *const *)argv + a, (unsigned)(argc - a), &so, &set, &ei);
    if (rc) {
        fprintf(stderr, "bench_list_delim: set open: %s %s\n", strata_errname(rc), ei.msg);
        return 1;
    }
    struct strata_meta *m;
    rc = strata_meta_open(&set, 1, NULL, &m, &ei);
    if (rc) {
        fprintf(stderr, "bench_list_delim: meta open: %s %s\n", strata_errname(rc), ei.msg);
        strata_set_close(set);
        return 1;
    }
    rc = strcmp(argv[1], "fill") == 0 ? fill(m) : list_rows(m, reps, only);
    strata_meta_close(m);
    strata_set_close(set);
    return rc ? 1 : 0;
}
