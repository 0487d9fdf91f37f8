/* rados_probe.c - checks and times, on a real cluster, the librados
 * primitives the RADOS backend's design (meta/RADOS.md) relies on.
 *
 *   bench_rados_probe -c CEPH_CONF [-i ID] -p POOL [-e EC_POOL] [-m MIB] [-n N]
 *                     [-k KEYS] [-t TESTS]
 *
 * TESTS: comma-separated subset of base,guards,get,commit,race,complete,contend,list,
 * merge,lease,watch,small,striped,ec (default all).
 *
 * POOL is a replicated pool (omap), EC_POOL an optional erasure-coded pool
 * (only asked whether omap works there).  Every loop is bounded by a count
 * (-n, default 200) and by PROBE_LOOP_S seconds; the striped write moves -m
 * MiB (default 128); the listing test fills one object with -k omap keys
 * (default 20000).  Objects it makes are named "probe.*" and removed at the
 * end.  Prints one table row per measurement: what, count, result, p50, p99,
 * mean (microseconds) or throughput.
 *
 * A bench tool (built only when librados is found, never a CTest test):
 * tests/integration/ceph_cluster.py start DIR --osds 3 --pool p1 --ec-pool e1
 * gives a cluster for `-p p1 -e e1` (one OSD and --pool p1 without -e).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define PROBE_LOOP_S 20.0

static const char *conf_path, *client_id = "admin", *pool, *ec_pool;
static int iters = 200;
static int total_mib = 128;
static int nkeys = 20000;
static int failures;
static const char *tests =
    "base,guards,get,commit,race,complete,contend,list,merge,lease,watch,small,striped,ec";

static int want(const char *t)
{
    size_t n = strlen(t);
    for (const char *p = tests; (p = strstr(p, t)) != NULL; p += n)
        if ((p == tests || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return 1;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int r)
{
    fprintf(stderr, "rados_probe: %s: %s (%d)\n", what, strerror(-r), r);
    exit(1);
}

/* ---- samples and the table --------------------------------------------------- */
struct samples {
    double *v;
    int n, cap;
};

static void sample_add(struct samples *s, double us)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = realloc(s->v, sizeof(*s->v) * (size_t)s->cap);
        if (!s->v)
            die("realloc", -ENOMEM);
    }
    s->v[s->n++] = us;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void header(void)
{
    printf("%-58s %6s %-26s %9s %9s %9s\n", "probe", "n", "result", "p50 us", "p99 us", "mean us");
    printf("%-58s %6s %-26s %9s %9s %9s\n", "-----", "-", "------", "------", "------", "-------");
}

static void row_lat(const char *what, struct samples *s, const char *result)
{
    double sum = 0;
    if (s->n == 0) {
        printf("%-58s %6d %-26s %9s %9s %9s\n", what, 0, result, "-", "-", "-");
        return;
    }
    qsort(s->v, (size_t)s->n, sizeof(*s->v), cmp_double);
    for (int i = 0; i < s->n; i++)
        sum += s->v[i];
    int i99 = (int)((double)s->n * 0.99);
    if (i99 >= s->n)
        i99 = s->n - 1;
    printf("%-58s %6d %-26s %9.0f %9.0f %9.0f\n", what, s->n, result, s->v[s->n / 2], s->v[i99],
           sum / s->n);
    fflush(stdout);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static void row_text(const char *what, const char *result)
{
    printf("%-58s %6s %-26s\n", what, "-", result);
    fflush(stdout);
}

static void check(int ok, const char *what)
{
    if (!ok) {
        failures++;
        printf("!! unexpected: %s\n", what);
    }
}

static const char *errname(int r)
{
    static char buf[64];
    switch (r) {
    case 0:
        return "0";
    case -ECANCELED:
        return "-ECANCELED (-125)";
    case -ERANGE:
        return "-ERANGE (-34)";
    case -EOVERFLOW:
        return "-EOVERFLOW (-75)";
    case -ENOENT:
        return "-ENOENT (-2)";
    case -EEXIST:
        return "-EEXIST (-17)";
    case -EBUSY:
        return "-EBUSY (-16)";
    case -EINVAL:
        return "-EINVAL (-22)";
    case -EOPNOTSUPP:
        return "-EOPNOTSUPP (-95)";
    case -ETIMEDOUT:
        return "-ETIMEDOUT (-110)";
    default:
        snprintf(buf, sizeof buf, "%d", r);
        return buf;
    }
}

/* ---- connections ------------------------------------------------------------------ */
struct conn {
    rados_t c;
    rados_ioctx_t io;
};

static void conn_open(struct conn *k, const char *p)
{
    int r = rados_create(&k->c, client_id);
    if (r < 0)
        die("rados_create", r);
    if ((r = rados_conf_read_file(k->c, conf_path)) < 0)
        die("rados_conf_read_file", r);
    rados_conf_set(k->c, "rados_osd_op_timeout", "30");
    rados_conf_set(k->c, "rados_mon_op_timeout", "30");
    if ((r = rados_connect(k->c)) < 0)
        die("rados_connect", r);
    if ((r = rados_ioctx_create(k->c, p, &k->io)) < 0)
        die("rados_ioctx_create", r);
}

static void conn_close(struct conn *k)
{
    rados_ioctx_destroy(k->io);
    rados_shutdown(k->c);
}

static int omap_set1(rados_ioctx_t io, const char *oid, const char *key, const char *val,
                     size_t len)
{
    rados_write_op_t op = rados_create_write_op();
    const char *keys[1] = {key};
    const char *vals[1] = {val};
    size_t lens[1] = {len};
    rados_write_op_omap_set(op, keys, vals, lens, 1);
    int r = rados_write_op_operate(op, io, oid, NULL, 0);
    rados_release_write_op(op);
    return r;
}

/* The value of one omap key into buf (len in *len); -ENOENT when absent. */
static int omap_get1(rados_ioctx_t io, const char *oid, const char *key, char *buf, size_t *len)
{
    rados_read_op_t op = rados_create_read_op();
    rados_omap_iter_t it;
    int prval = 0;
    const char *keys[1] = {key};
    rados_read_op_omap_get_vals_by_keys(op, keys, 1, &it, &prval);
    int r = rados_read_op_operate(op, io, oid, 0);
    if (r == 0)
        r = prval;
    if (r == 0) {
        char *k, *v;
        size_t vl;
        r = -ENOENT;
        if (rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
            if (vl > *len)
                vl = *len;
            memcpy(buf, v, vl);
            *len = vl;
            r = 0;
        }
        rados_omap_get_end(it);
    }
    rados_release_read_op(op);
    return r;
}

/* ---- (a) guarded compound commits ------------------------------------------------- */
/* One op: [omap_cmp key op val] + omap_set of the record, its head and an
 * index entry.  Returns the op's result; *prval the compare's own. */
static int guarded_commit(rados_ioctx_t io, const char *oid, const char *cmpkey, uint8_t cmpop,
                          const char *cmpval, size_t cmplen, const char *newhead, int *prval,
                          uint64_t assert_ver, const char *extra_key)
{
    rados_write_op_t op = rados_create_write_op();
    if (assert_ver)
        rados_write_op_assert_version(op, assert_ver);
    if (cmpkey)
        rados_write_op_omap_cmp(op, cmpkey, cmpop, cmpval, cmplen, prval);
    char rec[200];
    memset(rec, 'r', sizeof rec);
    const char *keys[3] = {"head/k", "ver/k/0001", extra_key ? extra_key : "due/0001/k"};
    const char *vals[3] = {newhead, rec, ""};
    size_t lens[3] = {strlen(newhead), sizeof rec, 0};
    rados_write_op_omap_set(op, keys, vals, lens, 3);
    int r = rados_write_op_operate(op, io, oid, NULL, 0);
    rados_release_write_op(op);
    return r;
}

static void probe_guards(struct conn *a)
{
    const char *oid = "probe.idx";
    char buf[256];
    size_t len;
    int r, prval;
    char res[128];

    rados_remove(a->io, oid);
    /* A compare on an object that does not exist. */
    prval = 1;
    r = guarded_commit(a->io, oid, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "", 0, "v1", &prval, 0, NULL);
    snprintf(res, sizeof res, "op %s prval %d", errname(r), prval);
    row_text("omap_cmp EQ \"\" on a missing object", res);
    rados_remove(a->io, oid);
    r = rados_write_full(a->io, oid, "", 0);
    if (r < 0)
        die("create index object", r);

    /* If-None-Match: a missing key compares as the empty value. */
    prval = 1;
    r = guarded_commit(a->io, oid, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "", 0, "v1", &prval, 0, NULL);
    snprintf(res, sizeof res, "op %s", errname(r));
    row_text("If-None-Match: cmp(head, EQ, \"\") key absent -> commit", res);
    check(r == 0, "cmp EQ empty on an absent key should pass");
    prval = 1;
    r = guarded_commit(a->io, oid, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "", 0, "v2", &prval, 0,
                       "due/0002/k");
    len = sizeof buf;
    int rr = omap_get1(a->io, oid, "head/k", buf, &len);
    char dbuf[8];
    size_t dlen = sizeof dbuf;
    int rd = omap_get1(a->io, oid, "due/0002/k", dbuf, &dlen);
    snprintf(res, sizeof res, "op %s prval %s", errname(r), errname(prval));
    row_text("If-None-Match: same op, key present -> rejected", res);
    check(r == -ECANCELED, "cmp EQ empty on a present key should fail with -ECANCELED");
    snprintf(res, sizeof res, "head=%.*s other key %s", (int)(rr == 0 ? len : 0), buf,
             rd == -ENOENT ? "absent" : "PRESENT");
    row_text("  rejected op changed nothing (head, its other omap_set)", res);
    check(rr == 0 && len == 2 && memcmp(buf, "v1", 2) == 0 && rd == -ENOENT,
          "a rejected op must not apply its other parts");

    /* If-Match: compare the head value read before. */
    r = guarded_commit(a->io, oid, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "v1", 2, "v2", &prval, 0,
                       NULL);
    snprintf(res, sizeof res, "op %s", errname(r));
    row_text("If-Match: cmp(head, EQ, v1) head=v1 -> commit", res);
    check(r == 0, "If-Match on the current value should pass");
    r = guarded_commit(a->io, oid, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "v1", 2, "v3", &prval, 0,
                       NULL);
    snprintf(res, sizeof res, "op %s", errname(r));
    row_text("If-Match: cmp(head, EQ, v1) head=v2 -> rejected", res);
    check(r == -ECANCELED, "If-Match on a stale value should fail");

    /* Object Lock: retain-until as 8 bytes big-endian; the commit that
     * replaces/removes needs retain-until < now: cmp(key, LT, now). */
    unsigned char until[8], nowv[8];
    uint64_t u = 2000, nv = 1000;
    for (int i = 0; i < 8; i++) {
        until[i] = (unsigned char)(u >> (56 - 8 * i));
        nowv[i] = (unsigned char)(nv >> (56 - 8 * i));
    }
    omap_set1(a->io, oid, "lock/k", (const char *)until, 8);
    r = guarded_commit(a->io, oid, "lock/k", LIBRADOS_CMPXATTR_OP_LT, (const char *)nowv, 8, "v4",
                       &prval, 0, NULL);
    snprintf(res, sizeof res, "op %s", errname(r));
    row_text("Object Lock: cmp(until, LT, now) until>now -> rejected", res);
    check(r == -ECANCELED, "LT with a later retain-until should fail");
    nv = 3000;
    for (int i = 0; i < 8; i++)
        nowv[i] = (unsigned char)(nv >> (56 - 8 * i));
    r = guarded_commit(a->io, oid, "lock/k", LIBRADOS_CMPXATTR_OP_LT, (const char *)nowv, 8, "v4",
                       &prval, 0, NULL);
    snprintf(res, sizeof res, "op %s", errname(r));
    row_text("Object Lock: cmp(until, LT, now) until<now -> commit", res);
    check(r == 0, "LT with an earlier retain-until should pass");
    r = guarded_commit(a->io, oid, "lock/k", LIBRADOS_CMPXATTR_OP_GTE, (const char *)nowv, 8, "v5",
                       &prval, 0, NULL);
    snprintf(res, sizeof res, "op %s prval %s", errname(r), errname(prval));
    row_text("omap_cmp with GTE (only EQ/LT/GT documented)", res);

    /* Two compares in one op, the second failing. */
    {
        rados_write_op_t op = rados_create_write_op();
        int p1 = 1, p2 = 1;
        rados_write_op_omap_cmp(op, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "v4", 2, &p1);
        rados_write_op_omap_cmp(op, "lock/k", LIBRADOS_CMPXATTR_OP_GT, (const char *)nowv, 8, &p2);
        const char *keys[1] = {"head/k"};
        const char *vals[1] = {"v6"};
        size_t lens[1] = {2};
        rados_write_op_omap_set(op, keys, vals, lens, 1);
        r = rados_write_op_operate(op, a->io, oid, NULL, 0);
        rados_release_write_op(op);
        len = sizeof buf;
        omap_get1(a->io, oid, "head/k", buf, &len);
        snprintf(res, sizeof res, "op %s head=%.*s", errname(r), (int)len, buf);
        row_text("two omap_cmp in one op, the second false", res);
        check(r == -ECANCELED && len == 2 && memcmp(buf, "v4", 2) == 0,
              "second compare must cancel");
    }

    /* assert_version: the object's version after our last op on it. */
    {
        char tmp[8];
        size_t tl = sizeof tmp;
        omap_get1(a->io, oid, "head/k", tmp, &tl);
        uint64_t ver = rados_get_last_version(a->io);
        r = guarded_commit(a->io, oid, NULL, 0, NULL, 0, "v7", NULL, ver, NULL);
        snprintf(res, sizeof res, "op %s (ver %" PRIu64 ")", errname(r), ver);
        row_text("assert_version(current) -> commit", res);
        check(r == 0, "assert_version on the current version should pass");
        r = guarded_commit(a->io, oid, NULL, 0, NULL, 0, "v8", NULL, ver, NULL);
        snprintf(res, sizeof res, "op %s", errname(r));
        row_text("assert_version(older) -> rejected", res);
        check(r == -ERANGE, "an older version should give -ERANGE");
        r = guarded_commit(a->io, oid, NULL, 0, NULL, 0, "v8", NULL, ver + 100, NULL);
        snprintf(res, sizeof res, "op %s", errname(r));
        row_text("assert_version(newer) -> rejected", res);
    }

    /* Latency: plain omap_set vs the guarded compound op (3 keys each). */
    struct samples s = {0};
    double t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        double t = now_s();
        r = guarded_commit(a->io, oid, NULL, 0, NULL, 0, "v9", NULL, 0, NULL);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0)
            die("plain commit", r);
    }
    row_lat("commit: omap_set 3 keys (200 B record), no guard", &s, "ok");
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        double t = now_s();
        r = guarded_commit(a->io, oid, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "v9", 2, "v9", &prval, 0,
                           NULL);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0)
            die("guarded commit", r);
    }
    row_lat("commit: omap_cmp + omap_set 3 keys", &s, "ok");
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        double t = now_s();
        r = guarded_commit(a->io, oid, "head/k", LIBRADOS_CMPXATTR_OP_EQ, "zz", 2, "v9", &prval, 0,
                           NULL);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r != -ECANCELED)
            die("rejected commit", r);
    }
    row_lat("commit: omap_cmp rejected (412 path)", &s, "-ECANCELED");
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        double t = now_s();
        len = sizeof buf;
        r = omap_get1(a->io, oid, "head/k", buf, &len);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0)
            die("omap get", r);
    }
    row_lat("read: omap_get_vals_by_keys 1 key", &s, "ok");
    rados_remove(a->io, oid);
}

/* GET as RADOS.md has it: one read op holding a compare of the shard's
 * layout key, the key's head and its newest version record (with inline
 * bytes).  Also: does a failed compare in a read op cancel it? */
static void probe_get(struct conn *a)
{
    const char *oid = "probe.get";
    char rec[200 + 4096];
    memset(rec, 'r', sizeof rec);
    rados_remove(a->io, oid);
    rados_write_full(a->io, oid, "", 0);
    omap_set1(a->io, oid, "\x01layout", "live 0", 6);
    omap_set1(a->io, oid, "h/k", "head", 4);
    omap_set1(a->io, oid,
              "o/k\x01"
              "00000000000000000000000000000002",
              "older", 5);
    omap_set1(a->io, oid,
              "o/k\x01"
              "00000000000000000000000000000001",
              rec, sizeof rec);
    char res[160];
    for (int stale = 1; stale >= 0; stale--) {
        rados_read_op_t op = rados_create_read_op();
        int pc = 1, ph = 1, pv = 1;
        rados_omap_iter_t ih, iv;
        unsigned char more = 0;
        const char *hk[1] = {"h/k"};
        rados_read_op_omap_cmp(op, "\x01layout", LIBRADOS_CMPXATTR_OP_EQ,
                               stale ? "live 1" : "live 0", 6, &pc);
        rados_read_op_omap_get_vals_by_keys(op, hk, 1, &ih, &ph);
        rados_read_op_omap_get_vals2(op, "o/k\x01", "o/k\x01", 1, &iv, &more, &pv);
        int r = rados_read_op_operate(op, a->io, oid, 0);
        char *k = NULL, *v;
        size_t kl = 0, vl = 0;
        int nh = 0;
        if (r == 0) {
            while (rados_omap_get_next2(ih, &k, &v, &kl, &vl) == 0 && k)
                nh++;
            k = NULL;
            rados_omap_get_next2(iv, &k, &v, &kl, &vl);
        }
        snprintf(
            res, sizeof res, "op %s, head %d, newest %s %zu B", errname(r), nh,
            k ? (memcmp(k + 4, "00000000000000000000000000000001", 32) == 0 ? "sk..01" : "WRONG")
              : "-",
            k ? vl : 0);
        row_text(stale ? "read op: cmp(layout, EQ, stale gen) + head + newest"
                       : "read op: cmp(layout, EQ, gen) + head + newest",
                 res);
        if (stale)
            check(r == -ECANCELED, "a failed compare cancels a read op");
        else
            check(r == 0 && nh == 1 && k && vl == sizeof rec,
                  "head and newest record in one read op");
        if (r == 0) {
            rados_omap_get_end(ih);
            rados_omap_get_end(iv);
        }
        rados_release_read_op(op);
    }
    struct samples s = {0};
    double t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        rados_read_op_t op = rados_create_read_op();
        int pc, ph, pv;
        rados_omap_iter_t ih, iv;
        unsigned char more;
        const char *hk[1] = {"h/k"};
        rados_read_op_omap_cmp(op, "\x01layout", LIBRADOS_CMPXATTR_OP_EQ, "live 0", 6, &pc);
        rados_read_op_omap_get_vals_by_keys(op, hk, 1, &ih, &ph);
        rados_read_op_omap_get_vals2(op, "o/k\x01", "o/k\x01", 1, &iv, &more, &pv);
        double t = now_s();
        int r = rados_read_op_operate(op, a->io, oid, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0)
            die("get op", r);
        rados_omap_get_end(ih);
        rados_omap_get_end(iv);
        rados_release_read_op(op);
    }
    row_lat("GET 4 KiB inline: layout cmp + head + newest, 1 read op", &s, "ok");
    rados_remove(a->io, oid);
}

/* Multipart complete as RADOS.md has it: one op removing 10,000 part
 * records and setting 79 part-table chunks of ~8 KiB and the version
 * record, guarded by the upload record. */
static void probe_complete(struct conn *a)
{
    const char *oid = "probe.complete";
    enum { NPARTS = 10000, NCHUNKS = 79 };
    char key[96], val[160];
    memset(val, 'p', sizeof val);
    rados_remove(a->io, oid);
    rados_write_full(a->io, oid, "", 0);
    omap_set1(a->io, oid,
              "u/key\x01"
              "0123456789abcdef0123456789abcdef",
              "upload", 6);
    char **keys = calloc(NPARTS, sizeof(char *));
    const char **vals = calloc(NPARTS, sizeof(char *));
    size_t *lens = calloc(NPARTS, sizeof(size_t));
    for (int i = 0; i < NPARTS; i++) {
        snprintf(key, sizeof key,
                 "p/key\x01"
                 "0123456789abcdef0123456789abcdef/%04x",
                 i + 1);
        keys[i] = strdup(key);
        vals[i] = val;
        lens[i] = sizeof val;
    }
    for (int b = 0; b < NPARTS; b += 1000) {
        rados_write_op_t op = rados_create_write_op();
        rados_write_op_omap_set(op, (const char *const *)keys + b, vals + b, lens + b, 1000);
        int r = rados_write_op_operate(op, a->io, oid, NULL, 0);
        rados_release_write_op(op);
        if (r < 0)
            die("part records", r);
    }
    char *chunk = malloc(8192);
    memset(chunk, 't', 8192);
    char *ckeys[NCHUNKS + 2];
    const char *cvals[NCHUNKS + 2];
    size_t clens[NCHUNKS + 2];
    for (int c = 0; c < NCHUNKS; c++) {
        snprintf(key, sizeof key,
                 "t/key\x01"
                 "00000000000000000000000000000001/%04x",
                 c);
        ckeys[c] = strdup(key);
        cvals[c] = chunk;
        clens[c] = 8192;
    }
    ckeys[NCHUNKS] = strdup("o/key\x01"
                            "00000000000000000000000000000001");
    cvals[NCHUNKS] = val;
    clens[NCHUNKS] = sizeof val;
    ckeys[NCHUNKS + 1] = strdup("h/key");
    cvals[NCHUNKS + 1] = "head";
    clens[NCHUNKS + 1] = 4;
    rados_write_op_t op = rados_create_write_op();
    int p1 = 0, p2 = 0;
    rados_write_op_omap_cmp(op,
                            "u/key\x01"
                            "0123456789abcdef0123456789abcdef",
                            LIBRADOS_CMPXATTR_OP_EQ, "upload", 6, &p1);
    rados_write_op_omap_cmp(op, "h/key", LIBRADOS_CMPXATTR_OP_EQ, "", 0, &p2);
    rados_write_op_omap_set(op, (const char *const *)ckeys, cvals, clens, NCHUNKS + 2);
    rados_write_op_omap_rm_keys(op, (const char *const *)keys, NPARTS);
    const char *uk[1] = {"u/key\x01"
                         "0123456789abcdef0123456789abcdef"};
    rados_write_op_omap_rm_keys(op, uk, 1);
    double t = now_s();
    int r = rados_write_op_operate(op, a->io, oid, NULL, 0);
    double el = now_s() - t;
    rados_release_write_op(op);
    /* what is left: no p/ or u/ keys, 79 t/ keys */
    int left_p = 0, left_t = 0;
    rados_read_op_t rop = rados_create_read_op();
    rados_omap_iter_t it;
    unsigned char more = 0;
    int prval = 0;
    rados_read_op_omap_get_keys2(rop, "", 1000, &it, &more, &prval);
    if (rados_read_op_operate(rop, a->io, oid, 0) == 0) {
        char *k, *v;
        size_t kl, vl;
        while (rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
            left_p += k[0] == 'p' || k[0] == 'u';
            left_t += k[0] == 't';
        }
        rados_omap_get_end(it);
    }
    rados_release_read_op(rop);
    char res[160];
    snprintf(res, sizeof res, "op %s in %.1f ms; left: %d part/upload keys, %d chunks", errname(r),
             el * 1e3, left_p, left_t);
    check(r == 0 && left_p == 0 && left_t == NCHUNKS, "complete op applies whole");
    row_text("complete: rm 10,000 parts + set 79 x 8 KiB chunks, 1 op", res);
    for (int i = 0; i < NPARTS; i++)
        free(keys[i]);
    for (int c = 0; c < NCHUNKS + 2; c++)
        free(ckeys[c]);
    free(keys);
    free(vals);
    free(lens);
    free(chunk);
    rados_remove(a->io, oid);
}

/* Two writers on one shard, distinct keys: per-key omap_cmp vs whole-object
 * assert_version (optimistic; a rejected op re-reads and retries). */
struct contend {
    struct conn *k;
    int use_version;
    int id;
    int n;
    atomic_int *retries;
    double secs;
};

static void *contend_run(void *arg)
{
    struct contend *c = arg;
    char key[32], val[32], cur[32];
    double t0 = now_s(), t_end = t0 + PROBE_LOOP_S;
    snprintf(key, sizeof key, "head/w%d", c->id);
    for (int i = 0; i < c->n && now_s() < t_end; i++) {
        for (int attempt = 0; attempt < 100; attempt++) {
            size_t cl = sizeof cur;
            int g = omap_get1(c->k->io, "probe.contend", key, cur, &cl);
            uint64_t ver = rados_get_last_version(c->k->io);
            if (g == -ENOENT)
                cl = 0;
            else if (g < 0)
                die("contend read", g);
            snprintf(val, sizeof val, "%d", i + 1);
            rados_write_op_t op = rados_create_write_op();
            int prval = 0;
            if (c->use_version)
                rados_write_op_assert_version(op, ver);
            else
                rados_write_op_omap_cmp(op, key, LIBRADOS_CMPXATTR_OP_EQ, cur, cl, &prval);
            const char *keys[1] = {key};
            const char *vals[1] = {val};
            size_t lens[1] = {strlen(val)};
            rados_write_op_omap_set(op, keys, vals, lens, 1);
            int r = rados_write_op_operate(op, c->k->io, "probe.contend", NULL, 0);
            rados_release_write_op(op);
            if (r == 0)
                break;
            if (r != -ECANCELED && r != -ERANGE && r != -EOVERFLOW)
                die("contend write", r);
            atomic_fetch_add(c->retries, 1);
        }
    }
    c->secs = now_s() - t0;
    return NULL;
}

static void probe_contention(struct conn *a, struct conn *b)
{
    for (int mode = 0; mode < 2; mode++) {
        rados_remove(a->io, "probe.contend");
        rados_write_full(a->io, "probe.contend", "", 0);
        atomic_int retries = 0;
        struct contend c[2] = {{a, mode, 0, iters, &retries, 0}, {b, mode, 1, iters, &retries, 0}};
        pthread_t t[2];
        double t0 = now_s();
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, contend_run, &c[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        double el = now_s() - t0;
        char res[128];
        snprintf(res, sizeof res, "%d commits, %d retries, %.0f/s", 2 * iters, (int)retries,
                 2 * iters / el);
        row_text(mode ? "2 writers, 1 shard, read+assert_version (per object)"
                      : "2 writers, 1 shard, read+omap_cmp (per key)",
                 res);
    }
    rados_remove(a->io, "probe.contend");
}

/* ---- (b) ordered omap listing ----------------------------------------------------- */
static void probe_listing(struct conn *a)
{
    const char *oid = "probe.list";
    rados_remove(a->io, oid);
    rados_write_full(a->io, oid, "", 0);
    /* nkeys keys: 1/2 under "a/dir%03d/obj%06d", 1/2 under "b/obj%07d";
     * values 200 bytes (a version record). */
    char val[200];
    memset(val, 'v', sizeof val);
    double t0 = now_s();
    const int batch = 1000;
    char **keys = calloc((size_t)batch, sizeof(char *));
    const char **vals = calloc((size_t)batch, sizeof(char *));
    size_t *lens = calloc((size_t)batch, sizeof(size_t));
    for (int i = 0; i < batch; i++) {
        keys[i] = malloc(40);
        vals[i] = val;
        lens[i] = sizeof val;
    }
    struct samples s = {0};
    for (int base = 0; base < nkeys; base += batch) {
        int n = nkeys - base < batch ? nkeys - base : batch;
        for (int i = 0; i < n; i++) {
            int j = base + i;
            if (j % 2 == 0)
                snprintf(keys[i], 40, "a/dir%03d/obj%06d", (j / 2) % 100, j / 2);
            else
                snprintf(keys[i], 40, "b/obj%07d", j / 2);
        }
        rados_write_op_t op = rados_create_write_op();
        rados_write_op_omap_set(op, (const char *const *)keys, vals, lens, (size_t)n);
        double t = now_s();
        int r = rados_write_op_operate(op, a->io, oid, NULL, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        rados_release_write_op(op);
        if (r < 0)
            die("omap fill", r);
    }
    char res[128];
    snprintf(res, sizeof res, "%d keys, %.0f keys/s", nkeys, nkeys / (now_s() - t0));
    row_lat("fill: omap_set 1000 keys x 200 B per op", &s, res);

    /* Pages of P under prefix "b/", start_after = last key of the previous page. */
    int pages[] = {100, 1000};
    for (unsigned pi = 0; pi < sizeof pages / sizeof pages[0]; pi++) {
        int P = pages[pi];
        char after[64] = "";
        int total = 0, ordered = 1;
        char prev[64] = "";
        unsigned char more = 1;
        double t_end = now_s() + PROBE_LOOP_S;
        while (more && now_s() < t_end) {
            rados_read_op_t op = rados_create_read_op();
            rados_omap_iter_t it;
            int prval = 0;
            rados_read_op_omap_get_vals2(op, after, "b/", (uint64_t)P, &it, &more, &prval);
            double t = now_s();
            int r = rados_read_op_operate(op, a->io, oid, 0);
            if (r < 0 || prval < 0)
                die("omap list", r < 0 ? r : prval);
            char *k, *v;
            size_t kl, vl;
            int got = 0;
            while (rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
                if (strncmp(k, "b/", 2) != 0 || (prev[0] && strcmp(prev, k) >= 0))
                    ordered = 0;
                snprintf(prev, sizeof prev, "%.*s", (int)kl, k);
                got++;
            }
            sample_add(&s, (now_s() - t) * 1e6);
            rados_omap_get_end(it);
            rados_release_read_op(op);
            total += got;
            snprintf(after, sizeof after, "%s", prev);
            if (got == 0)
                break;
        }
        char what[96];
        snprintf(what, sizeof what, "list: omap_get_vals2 prefix b/, page %d (per page)", P);
        snprintf(res, sizeof res, "%d keys%s", total, ordered ? ", ordered" : ", ORDER BROKEN");
        check(ordered && total == nkeys / 2,
              "listing under b/ should return every b/ key in order");
        row_lat(what, &s, res);
    }

    /* Delimiter seek: "a/" has 100 common prefixes a/dirNNN/; each is
     * emitted after one page of 1 key, then skipped by start_after =
     * prefix + 0xff (next key past the prefix). */
    {
        char after[64] = "a/";
        int prefixes = 0;
        double t_end = now_s() + PROBE_LOOP_S;
        for (;;) {
            if (now_s() > t_end)
                break;
            rados_read_op_t op = rados_create_read_op();
            rados_omap_iter_t it;
            int prval = 0;
            unsigned char more = 0;
            rados_read_op_omap_get_vals2(op, after, "a/", 1, &it, &more, &prval);
            double t = now_s();
            int r = rados_read_op_operate(op, a->io, oid, 0);
            if (r < 0 || prval < 0)
                die("omap seek", r < 0 ? r : prval);
            char *k, *v;
            size_t kl, vl;
            int got = 0;
            if (rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
                got = 1;
                /* common prefix = up to and including the next '/' after "a/" */
                const char *sl = memchr(k + 2, '/', kl - 2);
                size_t plen = sl ? (size_t)(sl - k) + 1 : kl;
                snprintf(after, sizeof after, "%.*s\xff", (int)plen, k);
                prefixes++;
            }
            sample_add(&s, (now_s() - t) * 1e6);
            rados_omap_get_end(it);
            rados_release_read_op(op);
            if (!got)
                break;
        }
        snprintf(res, sizeof res, "%d prefixes of %d keys", prefixes, nkeys / 2);
        check(prefixes == 100, "100 common prefixes under a/");
        row_lat("list: delimiter, seek past each prefix (1 key/op)", &s, res);
    }
    /* Keys-only vs values: a page of 1000 keys without values. */
    {
        double t_end = now_s() + PROBE_LOOP_S;
        for (int i = 0; i < 20 && now_s() < t_end; i++) {
            rados_read_op_t op = rados_create_read_op();
            rados_omap_iter_t it;
            int prval = 0;
            unsigned char more = 0;
            rados_read_op_omap_get_keys2(op, "b/", 1000, &it, &more, &prval);
            double t = now_s();
            int r = rados_read_op_operate(op, a->io, oid, 0);
            if (r < 0)
                die("omap keys", r);
            char *k;
            size_t kl;
            char *v;
            size_t vl;
            while (rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k)
                ;
            sample_add(&s, (now_s() - t) * 1e6);
            rados_omap_get_end(it);
            rados_release_read_op(op);
        }
        row_lat("list: omap_get_keys2 page 1000 (no values)", &s, "ok");
    }
    for (int i = 0; i < batch; i++)
        free(keys[i]);
    free(keys);
    free(vals);
    free(lens);
    rados_remove(a->io, oid);
}

/* ---- (c) cls_lock lease ----------------------------------------------------------------- */
static void probe_lease(struct conn *a, struct conn *b)
{
    const char *oid = "probe.lease", *name = "ilm";
    struct timeval dur = {3, 0};
    char res[160];
    rados_remove(a->io, oid);
    int r1 = rados_lock_exclusive(a->io, oid, name, "gw-a", "ilm lease", &dur, 0);
    int r2 = rados_lock_exclusive(b->io, oid, name, "gw-b", "ilm lease", &dur, 0);
    snprintf(res, sizeof res, "A %s, B %s", errname(r1), errname(r2));
    row_text("lock_exclusive 3 s: A takes, B refused", res);
    check(r1 == 0 && r2 == -EBUSY, "B must be refused while A holds");
    int r3 = rados_lock_exclusive(a->io, oid, name, "gw-a", "ilm lease", &dur, 0);
    int r4 = rados_lock_exclusive(a->io, oid, name, "gw-a", "ilm lease", &dur,
                                  LIBRADOS_LOCK_FLAG_MAY_RENEW);
    snprintf(res, sizeof res, "no flag %s, MAY_RENEW %s", errname(r3), errname(r4));
    row_text("A re-locks its own lease", res);
    /* B polls every 100 ms; A stops renewing now. */
    double t0 = now_s(), took = -1;
    int polls = 0;
    while (now_s() - t0 < 10) {
        polls++;
        if (rados_lock_exclusive(b->io, oid, name, "gw-b", "ilm lease", &dur, 0) == 0) {
            took = now_s() - t0;
            break;
        }
        usleep(100000);
    }
    snprintf(res, sizeof res, "after %.2f s (%d polls)", took, polls);
    row_text("B takes over after A's 3 s lease expires", res);
    check(took > 2.5 && took < 4.5, "takeover near the duration");
    int r5 = rados_lock_exclusive(a->io, oid, name, "gw-a", "ilm lease", &dur,
                                  LIBRADOS_LOCK_FLAG_MUST_RENEW);
    int r6 = rados_lock_exclusive(a->io, oid, name, "gw-a", "ilm lease", &dur,
                                  LIBRADOS_LOCK_FLAG_MAY_RENEW);
    snprintf(res, sizeof res, "MUST_RENEW %s, MAY_RENEW %s", errname(r5), errname(r6));
    row_text("old holder A renews after takeover", res);
    check(r5 != 0 && r6 == -EBUSY, "A must not get the lease back while B holds it");
    /* Renew latency (the holder's heartbeat). */
    struct samples s = {0};
    double t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        double t = now_s();
        int r = rados_lock_exclusive(b->io, oid, name, "gw-b", "ilm lease", &dur,
                                     LIBRADOS_LOCK_FLAG_MAY_RENEW);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0)
            die("renew", r);
    }
    row_lat("lease renew (lock_exclusive MAY_RENEW)", &s, "ok");
    /* A guarded write under the lease: assert the lock inside the commit
     * (cls_lock assert_locked via exec) is not in the C API; the fence is
     * the lease's owner check on renew plus the expiry. */
    int r7 = rados_unlock(b->io, oid, name, "gw-b");
    snprintf(res, sizeof res, "%s", errname(r7));
    row_text("unlock by holder", res);
    rados_remove(a->io, oid);
}

/* ---- (d) watch/notify ------------------------------------------------------------------- */
struct watcher {
    rados_ioctx_t io;
    uint64_t cookie;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double t_recv;
    int got;
};

static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier_id,
                     void *data, size_t data_len)
{
    struct watcher *w = arg;
    double t = now_s();
    /* The ack carries this client's state (a gateway: its lock clock). */
    rados_notify_ack(w->io, "probe.ctl", notify_id, handle, "lock_ms=1234567", 15);
    pthread_mutex_lock(&w->mu);
    w->t_recv = t;
    w->got++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void watch_err(void *pre, uint64_t cookie, int err)
{
    (void)pre;
    (void)cookie;
    (void)err;
}

static void probe_watch(struct conn *a, struct conn *b)
{
    struct watcher w = {.io = b->io};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    rados_write_full(a->io, "probe.ctl", "", 0);
    int r = rados_watch3(b->io, "probe.ctl", &w.cookie, watch_cb, watch_err, 30, &w);
    if (r < 0)
        die("watch3", r);
    /* Who is there, and what do they say: the decoded acks of one notify. */
    {
        char *reply = NULL;
        size_t rlen = 0;
        r = rados_notify2(a->io, "probe.ctl", "clock?", 6, 5000, &reply, &rlen);
        struct notify_ack_t *acks = NULL;
        struct notify_timeout_t *tos = NULL;
        size_t nacks = 0, ntos = 0;
        int dr =
            reply ? rados_decode_notify_response(reply, rlen, &acks, &nacks, &tos, &ntos) : -EINVAL;
        char res[128];
        snprintf(res, sizeof res, "notify %s, decode %s, %zu ack(s) \"%.*s\", %zu timeout(s)",
                 errname(r), errname(dr), nacks, nacks ? (int)acks[0].payload_len : 0,
                 nacks ? acks[0].payload : "", ntos);
        check(r == 0 && dr == 0 && nacks == 1 && acks[0].payload_len == 15,
              "one ack with its payload");
        row_text("notify2 reply: watchers' acks with payload", res);
        if (dr == 0)
            rados_free_notify_response(acks, nacks, tos);
        rados_buffer_free(reply);
        pthread_mutex_lock(&w.mu);
        while (w.got == 0)
            pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
    }
    struct samples deliver = {0}, round = {0};
    double t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        char *reply = NULL;
        size_t rlen = 0;
        int before = w.got;
        double t = now_s();
        r = rados_notify2(a->io, "probe.ctl", "bucket-config:b1", 16, 5000, &reply, &rlen);
        double t_done = now_s();
        if (r < 0)
            die("notify2", r);
        rados_buffer_free(reply);
        pthread_mutex_lock(&w.mu);
        while (w.got == before)
            pthread_cond_wait(&w.cv, &w.mu);
        double tr = w.t_recv;
        pthread_mutex_unlock(&w.mu);
        sample_add(&deliver, (tr - t) * 1e6);
        sample_add(&round, (t_done - t) * 1e6);
    }
    row_lat("notify2 -> other client's watch callback", &deliver, "delivered");
    row_lat("notify2 round trip (all watchers acked)", &round, "ok");
    /* Notify with nobody watching: cost of an invalidation on an idle cluster. */
    rados_unwatch2(b->io, w.cookie);
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        char *reply = NULL;
        size_t rlen = 0;
        double t = now_s();
        r = rados_notify2(a->io, "probe.ctl", "x", 1, 5000, &reply, &rlen);
        sample_add(&deliver, (now_s() - t) * 1e6);
        rados_buffer_free(reply);
    }
    row_lat("notify2 with no watcher", &deliver, "ok");
    rados_remove(a->io, "probe.ctl");
}

/* ---- (e) striped aio write ---------------------------------------------------------- */
static void probe_striped(struct conn *a, size_t stripe, int depth)
{
    size_t total = (size_t)total_mib << 20;
    int nobj = (int)((total + stripe - 1) / stripe);
    char *buf = malloc(stripe);
    if (!buf)
        die("malloc", -ENOMEM);
    for (size_t i = 0; i < stripe; i++)
        buf[i] = (char)(i * 131 + 7);
    rados_completion_t *comp = calloc((size_t)depth, sizeof(*comp));
    char oid[64];
    int next = 0, done = 0;
    double t0 = now_s();
    /* A window of `depth` writes in flight; wait for the oldest. */
    while (done < nobj) {
        while (next < nobj && next - done < depth) {
            snprintf(oid, sizeof oid, "probe.data.%06d", next);
            rados_aio_create_completion2(NULL, NULL, &comp[next % depth]);
            int r = rados_aio_write_full(a->io, oid, comp[next % depth], buf, stripe);
            if (r < 0)
                die("aio_write_full", r);
            next++;
        }
        rados_completion_t c = comp[done % depth];
        rados_aio_wait_for_complete(c);
        int r = rados_aio_get_return_value(c);
        rados_aio_release(c);
        if (r < 0)
            die("aio write", r);
        done++;
    }
    double wt = now_s() - t0;
    /* Read back the same way. */
    char **rb = calloc((size_t)depth, sizeof(char *));
    for (int i = 0; i < depth; i++)
        rb[i] = malloc(stripe);
    next = done = 0;
    int bad = 0;
    t0 = now_s();
    while (done < nobj) {
        while (next < nobj && next - done < depth) {
            snprintf(oid, sizeof oid, "probe.data.%06d", next);
            rados_aio_create_completion2(NULL, NULL, &comp[next % depth]);
            int r = rados_aio_read(a->io, oid, comp[next % depth], rb[next % depth], stripe, 0);
            if (r < 0)
                die("aio_read", r);
            next++;
        }
        rados_completion_t c = comp[done % depth];
        rados_aio_wait_for_complete(c);
        int r = rados_aio_get_return_value(c);
        rados_aio_release(c);
        if (r != (int)stripe || memcmp(rb[done % depth], buf, stripe) != 0)
            bad++;
        done++;
    }
    double rt = now_s() - t0;
    for (int i = 0; i < nobj; i++) {
        snprintf(oid, sizeof oid, "probe.data.%06d", i);
        rados_remove(a->io, oid);
    }
    char what[96], res[128];
    snprintf(what, sizeof what, "aio %d MiB as %zu MiB objects, %d in flight", total_mib,
             stripe >> 20, depth);
    snprintf(res, sizeof res, "W %.0f MB/s R %.0f MB/s%s", total / wt / 1e6, total / rt / 1e6,
             bad ? " BAD READS" : "");
    check(bad == 0, "striped read-back must match");
    row_text(what, res);
    for (int i = 0; i < depth; i++)
        free(rb[i]);
    free(rb);
    free(comp);
    free(buf);
}

/* ---- (f) small objects: with the record vs separate ------------------------------------- */
static void probe_small(struct conn *a, size_t size)
{
    char *data = malloc(size);
    char rec[200];
    memset(rec, 'r', sizeof rec);
    for (size_t i = 0; i < size; i++)
        data[i] = (char)(i * 17);
    char what[96], oid[64], key[64];
    struct samples s = {0};
    const char *idx = "probe.small.idx";
    rados_write_full(a->io, idx, "", 0);
    char *recv = malloc(size + sizeof rec);
    memcpy(recv, rec, sizeof rec);
    memcpy(recv + sizeof rec, data, size);

    /* 1: data inline in the index shard's omap value, one op. */
    double t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        snprintf(key, sizeof key, "obj/%06d", i);
        rados_write_op_t op = rados_create_write_op();
        int prval;
        rados_write_op_omap_cmp(op, key, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &prval);
        const char *keys[1] = {key};
        const char *vals[1] = {recv};
        size_t lens[1] = {size + sizeof rec};
        rados_write_op_omap_set(op, keys, vals, lens, 1);
        double t = now_s();
        int r = rados_write_op_operate(op, a->io, idx, NULL, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        rados_release_write_op(op);
        if (r < 0)
            die("inline put", r);
    }
    snprintf(what, sizeof what, "PUT %zu KiB: inline in the index omap value, 1 op", size >> 10);
    row_lat(what, &s, "ok");
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        snprintf(key, sizeof key, "obj/%06d", i);
        size_t len = size + sizeof rec;
        double t = now_s();
        int r = omap_get1(a->io, idx, key, recv, &len);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0 || len != size + sizeof rec)
            die("inline get", r);
    }
    snprintf(what, sizeof what, "GET %zu KiB: inline, omap_get_vals_by_keys", size >> 10);
    row_lat(what, &s, "ok");

    /* 2: data object written, then the record committed: 2 round trips. */
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        snprintf(oid, sizeof oid, "probe.small.d.%06d", i);
        snprintf(key, sizeof key, "sep/%06d", i);
        double t = now_s();
        int r = rados_write_full(a->io, oid, data, size);
        if (r < 0)
            die("data put", r);
        rados_write_op_t op = rados_create_write_op();
        int prval;
        rados_write_op_omap_cmp(op, key, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &prval);
        const char *keys[1] = {key};
        const char *vals[1] = {rec};
        size_t lens[1] = {sizeof rec};
        rados_write_op_omap_set(op, keys, vals, lens, 1);
        r = rados_write_op_operate(op, a->io, idx, NULL, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        rados_release_write_op(op);
        if (r < 0)
            die("sep commit", r);
    }
    snprintf(what, sizeof what, "PUT %zu KiB: data object, then guarded record (2 ops)",
             size >> 10);
    row_lat(what, &s, "ok");
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        snprintf(oid, sizeof oid, "probe.small.d.%06d", i);
        snprintf(key, sizeof key, "sep/%06d", i);
        size_t len = sizeof rec;
        double t = now_s();
        int r = omap_get1(a->io, idx, key, rec, &len);
        if (r < 0)
            die("sep get rec", r);
        r = rados_read(a->io, oid, data, size, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r != (int)size)
            die("sep get data", r < 0 ? r : -EIO);
    }
    snprintf(what, sizeof what, "GET %zu KiB: record, then data object (2 ops)", size >> 10);
    row_lat(what, &s, "ok");

    /* 3: head object: data + its record as an xattr in one op on the
     * data object (the index shard entry would still be a second op). */
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        snprintf(oid, sizeof oid, "probe.small.h.%06d", i);
        rados_write_op_t op = rados_create_write_op();
        rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
        rados_write_op_write_full(op, data, size);
        rados_write_op_setxattr(op, "rec", rec, sizeof rec);
        double t = now_s();
        int r = rados_write_op_operate(op, a->io, oid, NULL, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        rados_release_write_op(op);
        if (r < 0)
            die("head put", r);
    }
    snprintf(what, sizeof what, "PUT %zu KiB: head object data + xattr, 1 op", size >> 10);
    row_lat(what, &s, "ok");
    t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        snprintf(oid, sizeof oid, "probe.small.h.%06d", i);
        rados_read_op_t op = rados_create_read_op();
        size_t got = 0;
        int prval = 0;
        rados_read_op_read(op, 0, size, data, &got, &prval);
        rados_xattrs_iter_t xit;
        int xprval;
        rados_read_op_getxattrs(op, &xit, &xprval);
        double t = now_s();
        int r = rados_read_op_operate(op, a->io, oid, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0 || got != size)
            die("head get", r < 0 ? r : -EIO);
        rados_getxattrs_end(xit);
        rados_release_read_op(op);
    }
    snprintf(what, sizeof what, "GET %zu KiB: head object data + xattrs, 1 op", size >> 10);
    row_lat(what, &s, "ok");

    for (int i = 0; i < iters; i++) {
        snprintf(oid, sizeof oid, "probe.small.d.%06d", i);
        rados_remove(a->io, oid);
        snprintf(oid, sizeof oid, "probe.small.h.%06d", i);
        rados_remove(a->io, oid);
    }
    rados_remove(a->io, idx);
    free(recv);
    free(data);
}

/* ---- commit path, If-None-Match race, merged listing ------------------------------- */
/* The whole commit of a PUT as RADOS.md has it: read the key's head (and
 * the shard's layout key) in one op, then one write op guarded by both. */
static int commit_once(rados_ioctx_t io, const char *oid, const char *key, const char *newhead,
                       const char *rec, size_t reclen, int if_none_match)
{
    char head[64];
    size_t hl = sizeof head;
    int r = omap_get1(io, oid, key, head, &hl);
    if (r == -ENOENT)
        hl = 0;
    else if (r < 0)
        return r;
    if (if_none_match && hl > 0)
        return -EEXIST;
    rados_write_op_t op = rados_create_write_op();
    int p1 = 0, p2 = 0;
    rados_write_op_omap_cmp(op, "\x01layout", LIBRADOS_CMPXATTR_OP_EQ, "live 0", 6, &p1);
    rados_write_op_omap_cmp(op, key, LIBRADOS_CMPXATTR_OP_EQ, head, hl, &p2);
    char okey[96];
    snprintf(okey, sizeof okey, "o/%s", key + 2);
    const char *keys[2] = {key, okey};
    const char *vals[2] = {newhead, rec};
    size_t lens[2] = {strlen(newhead), reclen};
    rados_write_op_omap_set(op, keys, vals, lens, 2);
    r = rados_write_op_operate(op, io, oid, NULL, 0);
    rados_release_write_op(op);
    return r;
}

static void probe_commit(struct conn *a)
{
    const char *oid = "probe.commit";
    char rec[200], key[64], head[32];
    memset(rec, 'r', sizeof rec);
    rados_remove(a->io, oid);
    rados_write_full(a->io, oid, "", 0);
    omap_set1(a->io, oid, "\x01layout", "live 0", 6);
    struct samples s = {0};
    double t_end = now_s() + PROBE_LOOP_S;
    for (int i = 0; i < iters && now_s() < t_end; i++) {
        snprintf(key, sizeof key, "h/key%06d", i % 50);
        snprintf(head, sizeof head, "v%d", i);
        double t = now_s();
        int r = commit_once(a->io, oid, key, head, rec, sizeof rec, 0);
        sample_add(&s, (now_s() - t) * 1e6);
        if (r < 0)
            die("commit", r);
    }
    row_lat("PUT commit: read head + op guarded by layout and head", &s, "ok");
    rados_remove(a->io, oid);
}

struct racer {
    struct conn *k;
    int id;
    int won, lost, other;
};

static pthread_barrier_t race_bar;

static void *race_run(void *arg)
{
    struct racer *rc = arg;
    char head[16];
    snprintf(head, sizeof head, "w%d", rc->id);
    pthread_barrier_wait(&race_bar);
    for (int attempt = 0; attempt < 20; attempt++) {
        int r = commit_once(rc->k->io, "probe.race", "h/hot", head, "rec", 3, 1);
        if (r == 0) {
            rc->won++;
            return NULL;
        }
        if (r == -EEXIST) { /* saw the winner's head: 412 */
            rc->lost++;
            return NULL;
        }
        if (r != -ECANCELED) {
            rc->other++;
            return NULL;
        }
        /* lost the compare: read again and decide again */
    }
    rc->other++;
    return NULL;
}

static void probe_race(struct conn *a, struct conn *b)
{
    int rounds = iters < 50 ? iters : 50, bad = 0;
    for (int round = 0; round < rounds; round++) {
        rados_remove(a->io, "probe.race");
        rados_write_full(a->io, "probe.race", "", 0);
        omap_set1(a->io, "probe.race", "\x01layout", "live 0", 6);
        struct racer rc[8];
        pthread_t t[8];
        pthread_barrier_init(&race_bar, NULL, 8);
        for (int i = 0; i < 8; i++) {
            rc[i] = (struct racer){i % 2 ? b : a, i, 0, 0, 0};
            pthread_create(&t[i], NULL, race_run, &rc[i]);
        }
        int won = 0, lost = 0, other = 0;
        for (int i = 0; i < 8; i++) {
            pthread_join(t[i], NULL);
            won += rc[i].won;
            lost += rc[i].lost;
            other += rc[i].other;
        }
        pthread_barrier_destroy(&race_bar);
        if (won != 1 || lost != 7 || other)
            bad++;
    }
    char res[128];
    snprintf(res, sizeof res, "%d rounds, %d not exactly 1 winner", rounds, bad);
    check(bad == 0, "exactly one If-None-Match writer wins");
    row_text("8 writers (2 clients) If-None-Match on one key", res);
    rados_remove(a->io, "probe.race");
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

#define MSHARDS_MAX 64
struct mstream {
    char **keys;
    int n, pos, cap;
    unsigned char more;
    char after[64];
    rados_read_op_t op;
    rados_omap_iter_t it;
    rados_completion_t c;
    int prval;
    int pending; /* a read is in flight */
    int want;    /* keys to ask for next: small after a common prefix */
};

static void ms_issue(struct conn *a, struct mstream *m, int shard, const char *prefix, int max)
{
    if (m->want && m->want < max)
        max = m->want;
    char oid[64];
    snprintf(oid, sizeof oid, "probe.shard.%d", shard);
    m->op = rados_create_read_op();
    rados_read_op_omap_get_vals2(m->op, m->after, prefix, (uint64_t)max, &m->it, &m->more,
                                 &m->prval);
    rados_aio_create_completion2(NULL, NULL, &m->c);
    int r = rados_aio_read_op_operate(m->op, a->io, m->c, oid, 0);
    if (r < 0)
        die("aio read op", r);
    m->pending = 1;
}

static void ms_collect(struct mstream *m)
{
    rados_aio_wait_for_complete(m->c);
    m->pending = 0;
    int r = rados_aio_get_return_value(m->c);
    rados_aio_release(m->c);
    if (r < 0 || m->prval < 0)
        die("merge read", r < 0 ? r : m->prval);
    m->n = m->pos = 0;
    char *k, *v;
    size_t kl, vl;
    while (rados_omap_get_next2(m->it, &k, &v, &kl, &vl) == 0 && k) {
        if (m->n == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 64;
            m->keys = realloc(m->keys, sizeof(char *) * (size_t)m->cap);
            for (int i = m->n; i < m->cap; i++)
                m->keys[i] = malloc(64);
        }
        snprintf(m->keys[m->n++], 64, "%.*s", (int)kl, k);
    }
    rados_omap_get_end(m->it);
    rados_release_read_op(m->op);
    if (m->n)
        snprintf(m->after, sizeof m->after, "%s", m->keys[m->n - 1]);
}

/* List every key under prefix across S shards in pages of `page`, with or
 * without the delimiter '/'; returns keys+prefixes emitted, counts ops. */
static int merge_list(struct conn *a, int S, const char *prefix, int page, int delim, int adaptive,
                      int *ops, int *pages, struct samples *per_page)
{
    struct mstream ms[MSHARDS_MAX];
    memset(ms, 0, sizeof ms);
    int per = (2 * page + S - 1) / S + 8;
    if (per > 1000) /* the OSD returns at most osd_max_omap_entries_per_request (1024) */
        per = 1000;
    for (int i = 0; i < S; i++) {
        snprintf(ms[i].after, sizeof ms[i].after, "%s", prefix);
        ms[i].more = 1;
        ms_issue(a, &ms[i], i, prefix, per);
        (*ops)++;
    }
    for (int i = 0; i < S; i++)
        ms_collect(&ms[i]);
    int emitted = 0, in_page = 0;
    char last[64] = "", cp[64] = "";
    double t_page = now_s();
    size_t plen = strlen(prefix);
    for (;;) {
        /* refill dry streams that have more, in parallel */
        int issued = 0;
        for (int i = 0; i < S; i++)
            if (ms[i].pos == ms[i].n && ms[i].more) {
                ms_issue(a, &ms[i], i, prefix, per);
                (*ops)++;
                issued = 1;
            }
        if (issued)
            for (int i = 0; i < S; i++)
                if (ms[i].pending)
                    ms_collect(&ms[i]);
        int best = -1;
        for (int i = 0; i < S; i++)
            if (ms[i].pos < ms[i].n &&
                (best < 0 || strcmp(ms[i].keys[ms[i].pos], ms[best].keys[ms[best].pos]) < 0))
                best = i;
        if (best < 0)
            break;
        const char *k = ms[best].keys[ms[best].pos++];
        if (last[0] && strcmp(k, last) <= 0)
            die("merge order", -EIO);
        snprintf(last, sizeof last, "%s", k);
        int is_cp = 0;
        if (delim) {
            const char *sl = strchr(k + plen, '/');
            if (sl) {
                is_cp = 1;
                size_t cl = (size_t)(sl - k) + 1;
                if (cp[0] && strncmp(k, cp, strlen(cp)) == 0)
                    continue; /* buffered key under the emitted prefix */
                snprintf(cp, sizeof cp, "%.*s", (int)cl, k);
                /* drop buffered keys under cp; a stream that runs dry inside
                 * cp seeks past it */
                for (int i = 0; i < S; i++) {
                    int dropped = 0;
                    while (ms[i].pos < ms[i].n && strncmp(ms[i].keys[ms[i].pos], cp, cl) == 0) {
                        ms[i].pos++;
                        dropped++;
                    }
                    /* keys here come in groups under common prefixes: read
                     * a few at a time and seek past each group */
                    if (adaptive && (dropped || i == best))
                        ms[i].want = 16;
                    if (ms[i].pos == ms[i].n && ms[i].more && strncmp(ms[i].after, cp, cl) == 0 &&
                        cl + 2 <= sizeof ms[i].after) {
                        memcpy(ms[i].after, cp, cl);
                        ms[i].after[cl] = '\xff';
                        ms[i].after[cl + 1] = 0;
                    }
                }
            }
        }
        if (!is_cp && ms[best].want && ms[best].want < per)
            ms[best].want *= 2; /* plain keys again: back to full reads */
        emitted++;
        if (++in_page == page) {
            sample_add(per_page, (now_s() - t_page) * 1e6);
            (*pages)++;
            in_page = 0;
            t_page = now_s();
        }
    }
    if (in_page) {
        sample_add(per_page, (now_s() - t_page) * 1e6);
        (*pages)++;
    }
    for (int i = 0; i < S; i++) {
        for (int j = 0; j < ms[i].cap; j++)
            free(ms[i].keys[j]);
        free(ms[i].keys);
    }
    return emitted;
}

static void probe_merge(struct conn *a)
{
    int shard_counts[] = {1, 8, 32};
    for (unsigned si = 0; si < sizeof shard_counts / sizeof shard_counts[0]; si++) {
        int S = shard_counts[si];
        char oid[64], key[64];
        char val[80];
        memset(val, 'h', sizeof val); /* a head entry's size */
        for (int i = 0; i < S; i++) {
            snprintf(oid, sizeof oid, "probe.shard.%d", i);
            rados_remove(a->io, oid);
            rados_write_full(a->io, oid, "", 0);
        }
        /* nkeys keys: half "b/obj%07d", half "a/dirNNN/obj%06d"; batched per shard */
        rados_write_op_t ops[MSHARDS_MAX];
        int cnt[MSHARDS_MAX] = {0};
        for (int i = 0; i < S; i++)
            ops[i] = rados_create_write_op();
        for (int j = 0; j < nkeys; j++) {
            if (j % 2 == 0)
                snprintf(key, sizeof key, "h/a/dir%03d/obj%06d", (j / 2) % 100, j / 2);
            else
                snprintf(key, sizeof key, "h/b/obj%07d", j / 2);
            int sh = (int)(fnv1a(key) % (uint32_t)S);
            const char *k1[1] = {key};
            const char *v1[1] = {val};
            size_t l1[1] = {sizeof val};
            rados_write_op_omap_set(ops[sh], k1, v1, l1, 1);
            if (++cnt[sh] == 1000) {
                snprintf(oid, sizeof oid, "probe.shard.%d", sh);
                int r = rados_write_op_operate(ops[sh], a->io, oid, NULL, 0);
                if (r < 0)
                    die("shard fill", r);
                rados_release_write_op(ops[sh]);
                ops[sh] = rados_create_write_op();
                cnt[sh] = 0;
            }
        }
        for (int i = 0; i < S; i++) {
            snprintf(oid, sizeof oid, "probe.shard.%d", i);
            if (cnt[i] && rados_write_op_operate(ops[i], a->io, oid, NULL, 0) < 0)
                die("shard fill", -EIO);
            rados_release_write_op(ops[i]);
        }
        struct samples s = {0};
        int nops = 0, npages = 0;
        double t0 = now_s();
        int got = merge_list(a, S, "h/b/", 1000, 0, 0, &nops, &npages, &s);
        double el = now_s() - t0;
        char what[96], res[128];
        snprintf(what, sizeof what, "merged list %d shards, prefix b/, page 1000 (per page)", S);
        snprintf(res, sizeof res, "%d keys, %d ops, %.0f keys/s", got, nops, got / el);
        check(got == nkeys / 2, "merged listing returns every key");
        row_lat(what, &s, res);
        for (int adaptive = 1; adaptive >= 0; adaptive--) {
            nops = npages = 0;
            t0 = now_s();
            got = merge_list(a, S, "h/a/", 1000, 1, adaptive, &nops, &npages, &s);
            el = now_s() - t0;
            snprintf(what, sizeof what, "merged list %d shards, prefix a/ delimiter /, %s reads", S,
                     adaptive ? "small" : "full");
            snprintf(res, sizeof res, "%d prefixes, %d ops, %.1f ms", got, nops, el * 1e3);
            check(got == 100, "100 common prefixes");
            row_lat(what, &s, res);
        }
        for (int i = 0; i < S; i++) {
            snprintf(oid, sizeof oid, "probe.shard.%d", i);
            rados_remove(a->io, oid);
        }
    }
}

/* ---- EC pool and version facts ------------------------------------------------------- */
static void probe_ec(void)
{
    char res[128];
    if (!ec_pool) {
        row_text("omap on an EC pool", "not asked (-e)");
        return;
    }
    struct conn e;
    conn_open(&e, ec_pool);
    int r = rados_write_full(e.io, "probe.ec", "x", 1);
    int r2 = omap_set1(e.io, "probe.ec", "k", "v", 1);
    int r3 = rados_append(e.io, "probe.ec", "y", 1);
    int r4 = rados_write(e.io, "probe.ec", "z", 1, 0);
    snprintf(res, sizeof res, "write_full %s omap_set %s", errname(r), errname(r2));
    row_text("EC pool: write_full, then omap_set", res);
    snprintf(res, sizeof res, "append %s overwrite %s", errname(r3), errname(r4));
    row_text("EC pool: append, partial overwrite", res);
    rados_remove(e.io, "probe.ec");
    conn_close(&e);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_rados_probe -c CEPH_CONF [-i ID] -p POOL [-e EC_POOL] [-m MIB] "
                    "[-n N] [-k KEYS] [-t TESTS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "c:i:p:e:m:n:k:t:")) != -1) {
        switch (opt) {
        case 'c':
            conf_path = optarg;
            break;
        case 'i':
            client_id = optarg;
            break;
        case 'p':
            pool = optarg;
            break;
        case 'e':
            ec_pool = optarg;
            break;
        case 'm':
            total_mib = atoi(optarg);
            break;
        case 'n':
            iters = atoi(optarg);
            break;
        case 'k':
            nkeys = atoi(optarg);
            break;
        case 't':
            tests = optarg;
            break;
        default:
            usage();
        }
    }
    if (!conf_path || !pool || iters < 1 || iters > 100000 || total_mib < 4 || total_mib > 4096 ||
        nkeys < 1000 || nkeys > 1000000)
        usage();
    int maj, min, ext;
    rados_version(&maj, &min, &ext);
    char res[128];
    struct conn a, b;
    conn_open(&a, pool);
    conn_open(&b, pool);
    header();
    snprintf(res, sizeof res, "librados %d.%d.%d, omap_cmp: yes", maj, min, ext);
    row_text("library (rados_write_op_omap_cmp links)", res);
    /* Baseline: one small read round trip. */
    if (want("base")) {
        rados_write_full(a.io, "probe.base", "x", 1);
        struct samples s = {0};
        double t_end = now_s() + PROBE_LOOP_S;
        for (int i = 0; i < iters && now_s() < t_end; i++) {
            uint64_t sz;
            time_t mt;
            double t = now_s();
            rados_stat(a.io, "probe.base", &sz, &mt);
            sample_add(&s, (now_s() - t) * 1e6);
        }
        row_lat("baseline: rados_stat (one round trip)", &s, "ok");
        rados_remove(a.io, "probe.base");
    }
    if (want("guards"))
        probe_guards(&a);
    if (want("get"))
        probe_get(&a);
    if (want("commit"))
        probe_commit(&a);
    if (want("race"))
        probe_race(&a, &b);
    if (want("complete"))
        probe_complete(&a);
    if (want("contend"))
        probe_contention(&a, &b);
    if (want("list"))
        probe_listing(&a);
    if (want("merge"))
        probe_merge(&a);
    if (want("lease"))
        probe_lease(&a, &b);
    if (want("watch"))
        probe_watch(&a, &b);
    if (want("small")) {
        probe_small(&a, 4096);
        probe_small(&a, 100 * 1024);
    }
    if (want("striped")) {
        probe_striped(&a, 4 << 20, 8);
        probe_striped(&a, 4 << 20, 1);
        probe_striped(&a, 1 << 20, 8);
    }
    if (want("ec"))
        probe_ec();
    conn_close(&b);
    conn_close(&a);
    printf("%s\n", failures ? "SOME EXPECTATIONS FAILED" : "all expectations held");
    return failures ? 1 : 0;
}
