/*
 * test_audit.c - the object-lock audit log: entries appended on every drive
 * with the event's fields and one shared seq; the chain verifies; a flipped
 * byte anywhere, a truncated last entry and a removed entry are each found
 * at the entry they hit; a torn tail is cut at the next open and the cut
 * recorded; below the write quorum an append fails; many threads appending
 * at once leave a chain that verifies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>

#include <openssl/sha.h>

#include "meta_internal.h"
#include "meta_test_util.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const char *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
}

static void log_path(const struct mt_env *e, int d, char *out, size_t cap)
{
    snprintf(out, cap, "%s/audit.log", e->drive[d]);
}

/* Offsets of the starts of the lines of b, plus len at [n]. */
static size_t line_starts(const char *b, size_t len, size_t *starts, size_t cap)
{
    size_t n = 0;
    starts[n++] = 0;
    for (size_t i = 0; i < len; i++)
        if (b[i] == '\n' && i + 1 < len && n < cap)
            starts[n++] = i + 1;
    starts[n] = len;
    return n;
}

static int append_n(struct mt_env *e, int n)
{
    for (int i = 0; i < n; i++) {
        char key[32], detail[64];
        snprintf(key, sizeof(key), "dir/obj-%d", i);
        snprintf(detail, sizeof(detail), "mode=COMPLIANCE until=2027-01-0%dT00:00:00Z", i % 9 + 1);
        struct strata_audit_event ev = {.user = "AKIAUSER", .bucket = "locked", .key = key,
                                        .version_id = "0123456789abcdef0123456789abcdef",
                                        .action = "DeleteObject", .outcome = "denied",
                                        .detail = detail};
        int rc = strata_meta_audit_append(e->m, &ev);
        if (rc)
            return rc;
    }
    return 0;
}

/* A closed drive set whose audit logs hold n entries, and drive d's log
 * read into b with its line starts. */
struct tlog {
    struct mt_env *e;
    char path[700];
    char *b;
    size_t len;
    size_t starts[8];
    size_t n;
};

static void tlog_make(struct tlog *t, const char *name, int n, int d)
{
    t->e = mt_setup(name);
    assert_non_null(t->e);
    assert_int_equal(append_n(t->e, n), 0);
    mt_close(t->e);
    log_path(t->e, d, t->path, sizeof(t->path));
    t->b = slurp(t->path, &t->len);
    assert_non_null(t->b);
    t->n = line_starts(t->b, t->len, t->starts, 7);
    assert_int_equal(t->n, (size_t)n);
}

static void verify_ok(const struct mt_env *e, int d, uint64_t entries)
{
    struct strata_audit_verify v;
    assert_int_equal(strata_audit_verify_drive(e->drive[d], &v), 0);
    if (v.broken)
        fprintf(stderr, "drive %d broken at %llu: %s\n", d, (unsigned long long)v.broken_at,
                v.reason);
    assert_false(v.broken);
    assert_int_equal(v.entries, entries);
}

static void test_append_and_verify(void **state)
{
    struct mt_env *e = mt_setup("audit-append");
    assert_non_null(e);
    assert_int_equal(append_n(e, 5), 0);
    for (int d = 0; d < MT_DRIVES; d++)
        verify_ok(e, d, 5);

    /* Every drive holds the same events, with the same seq, each line a
     * JSON object with the fields in order and the chain links. */
    char p[700];
    log_path(e, 0, p, sizeof(p));
    size_t len;
    char *b = slurp(p, &len);
    assert_non_null(b);
    assert_non_null(strstr(b, "{\"seq\":1,\"time\":\"20"));
    assert_non_null(strstr(b, "\"user\":\"AKIAUSER\",\"bucket\":\"locked\",\"key\":\"dir/obj-0\","
                              "\"version_id\":\"0123456789abcdef0123456789abcdef\","
                              "\"action\":\"DeleteObject\",\"outcome\":\"denied\","
                              "\"detail\":\"mode=COMPLIANCE until=2027-01-01T00:00:00Z\","
                              "\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\""));
    assert_non_null(strstr(b, "{\"seq\":5,"));
    struct strata_audit_verify v0, v3;
    assert_int_equal(strata_audit_verify_drive(e->drive[0], &v0), 0);
    assert_int_equal(strata_audit_verify_drive(e->drive[3], &v3), 0);
    assert_int_equal(v0.last_seq, 5);
    assert_int_equal(v3.last_seq, 5);
    free(b);

    /* The chain continues across close/open. */
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(append_n(e, 2), 0);
    for (int d = 0; d < MT_DRIVES; d++)
        verify_ok(e, d, 7);
    assert_int_equal(strata_audit_verify_drive(e->drive[1], &v0), 0);
    assert_int_equal(v0.last_seq, 7);

    /* Bucket-level events have no key; a key that is not UTF-8 is kept as hex. */
    struct strata_audit_event ev = {.user = "-", .bucket = "locked",
                                    .action = "PutObjectLockConfiguration", .outcome = "allowed"};
    assert_int_equal(strata_meta_audit_append(e->m, &ev), 0);
    ev.key = "bad\xff";
    ev.action = "DeleteObject";
    assert_int_equal(strata_meta_audit_append(e->m, &ev), 0);
    b = slurp(p, &len);
    assert_non_null(strstr(b, "\"bucket\":\"locked\",\"action\":\"PutObjectLockConfiguration\""));
    assert_non_null(strstr(b, "\"key_hex\":\"626164ff\""));
    free(b);
    verify_ok(e, 0, 9);

    /* Oversized strings are cut (never inside a UTF-8 sequence), and even
     * the worst escaping keeps the entry verifiable. */
    char *big = malloc(6001), *ctl = malloc(STRATA_KEY_MAX + 1);
    for (int i = 0; i < 3000; i++)
        memcpy(big + 2 * i, "\xc3\xa9", 2); /* U+00E9 */
    big[6000] = 0;
    memset(ctl, 0x01, STRATA_KEY_MAX);
    ctl[STRATA_KEY_MAX] = 0;
    struct strata_audit_event huge = {.user = big, .bucket = big, .key = ctl, .version_id = big,
                                      .action = big, .outcome = big, .detail = big};
    assert_int_equal(strata_meta_audit_append(e->m, &huge), 0);
    verify_ok(e, 0, 10);
    b = slurp(p, &len);
    size_t ls = len - 1; /* start of the last line */
    while (ls > 0 && b[ls - 1] != '\n')
        ls--;
    const char *last = b + ls;
    assert_non_null(strstr(last, "\\u0001\\u0001"));
    assert_true(strlen(last) < 32 * 1024);
    const char *d = strstr(last, "\"detail\":\"");
    assert_non_null(d);
    const char *dend = strchr(d + 10, '"');
    assert_int_equal(dend - (d + 10), 1024); /* 512 whole characters */
    free(b);
    free(big);
    free(ctl);
    mt_teardown(e);
}

/* Any single flipped byte is caught at the entry that holds it. */
static void test_flip_every_byte(void **state)
{
    struct tlog t;
    tlog_make(&t, "audit-flip", 3, 2);
    struct mt_env *e = t.e;
    const char *p = t.path;
    char *orig = t.b;
    size_t len = t.len, *starts = t.starts;
    char *b = malloc(len);
    for (size_t off = 0; off < len; off++) {
        memcpy(b, orig, len);
        b[off] ^= 0x01;
        spit(p, b, len);
        size_t want = 0;
        while (off >= starts[want + 1])
            want++;
        struct strata_audit_verify v;
        assert_int_equal(strata_audit_verify_drive(e->drive[2], &v), 0);
        if (!v.broken || v.broken_at != want)
            fail_msg("flip at %zu (entry %zu): broken=%d at %llu (%s)", off, want, v.broken,
                     (unsigned long long)v.broken_at, v.reason);
    }
    spit(p, orig, len);
    free(b);
    free(orig);
    verify_ok(e, 2, 3);
    mt_rm_rf(e->root);
    free(e);
}

static void test_truncated_last_entry(void **state)
{
    struct tlog t;
    tlog_make(&t, "audit-trunc", 4, 1);
    struct mt_env *e = t.e;
    const char *p = t.path;
    char *b = t.b;
    size_t len = t.len;
    spit(p, b, len - 30); /* a torn append */
    free(b);
    struct strata_audit_verify v;
    assert_int_equal(strata_audit_verify_drive(e->drive[1], &v), 0);
    assert_true(v.broken);
    assert_int_equal(v.broken_at, 3);
    assert_int_equal(v.entries, 3);
    assert_non_null(strstr(v.reason, "truncated"));

    /* The next open cuts the torn entry and records that it did; the entry
     * had been durable (lock-clock names it), so its loss is recorded too. */
    assert_int_equal(mt_open(e), 0);
    for (int d = 0; d < MT_DRIVES; d++) {
        struct strata_audit_verify w;
        assert_int_equal(strata_audit_verify_drive(e->drive[d], &w), 0);
        assert_false(w.broken);
        assert_int_equal(w.entries, d == 1 ? 5 : 6);
        assert_int_equal(w.last_seq, 6);
    }
    b = slurp(p, &len);
    assert_non_null(strstr(b, "\"action\":\"AuditEntriesMissing\",\"outcome\":\"detected\","
                              "\"detail\":\""));
    assert_non_null(strstr(b, "log ends at seq 3, anchor seq 4"));
    assert_non_null(strstr(b, "\"action\":\"AuditTornEntry\",\"outcome\":\"repaired\""));
    free(b);
    mt_teardown(e);
}

/* Whole entries cut from the end leave a valid chain; the anchor in
 * lock-clock (the last durable entry) still finds the cut. */
static void test_removed_tail(void **state)
{
    struct tlog t;
    tlog_make(&t, "audit-tail", 4, 2);
    struct mt_env *e = t.e;
    const char *p = t.path;
    char *b = t.b;
    size_t len, *starts = t.starts;
    spit(p, b, starts[2]); /* keep entries 0 and 1 */
    struct strata_audit_verify v;
    assert_int_equal(strata_audit_verify_drive(e->drive[2], &v), 0);
    assert_true(v.broken);
    assert_int_equal(v.broken_at, 2);
    assert_int_equal(v.entries, 2);
    assert_non_null(strstr(v.reason, "removed from the end"));
    /* The last entry replaced by a forged one that chains correctly (right
     * prev, right own hash) is caught by the anchor too. */
    char forged[512], hex[65];
    memcpy(hex, b + starts[3] - 67, 64); /* entry 2's hash: ...<hex>"}\n */
    hex[64] = 0;
    int fl = snprintf(forged, sizeof(forged),
                      "{\"seq\":4,\"time\":\"-\",\"lock_ms\":0,\"wall_ms\":0,\"user\":\"-\","
                      "\"bucket\":\"-\",\"action\":\"Nothing\",\"outcome\":\"allowed\","
                      "\"prev\":\"%s\"",
                      hex);
    uint8_t h[32];
    SHA256((const unsigned char *)forged, (size_t)fl, h);
    fl += snprintf(forged + fl, sizeof(forged) - (size_t)fl, ",\"hash\":\"");
    for (int i = 0; i < 32; i++)
        fl += snprintf(forged + fl, sizeof(forged) - (size_t)fl, "%02x", h[i]);
    fl += snprintf(forged + fl, sizeof(forged) - (size_t)fl, "\"}\n");
    char *c = malloc(starts[3] + (size_t)fl);
    memcpy(c, b, starts[3]);
    memcpy(c + starts[3], forged, (size_t)fl);
    spit(p, c, starts[3] + (size_t)fl);
    free(c);
    assert_int_equal(strata_audit_verify_drive(e->drive[2], &v), 0);
    assert_true(v.broken);
    assert_int_equal(v.broken_at, 3);
    assert_non_null(strstr(v.reason, "recorded in lock-clock"));
    /* Without the anchor the forgery would pass: the chain itself is valid. */
    char lc[700];
    snprintf(lc, sizeof(lc), "%s/lock-clock", e->drive[2]);
    size_t lclen;
    char *lcb = slurp(lc, &lclen);
    unlink(lc);
    verify_ok(e, 2, 4);
    spit(lc, lcb, lclen);
    free(lcb);
    /* The whole log removed. */
    unlink(p);
    assert_int_equal(strata_audit_verify_drive(e->drive[2], &v), 0);
    assert_true(v.broken);
    assert_non_null(strstr(v.reason, "missing"));
    spit(p, b, starts[2]);
    free(b);
    /* Open records the loss in every drive's chain. */
    assert_int_equal(mt_open(e), 0);
    b = slurp(p, &len);
    assert_non_null(strstr(b, "\"action\":\"AuditEntriesMissing\""));
    assert_non_null(strstr(b, "log ends at seq 2, anchor seq 4"));
    free(b);
    verify_ok(e, 2, 3);
    verify_ok(e, 0, 5);
    mt_teardown(e);
}

static void test_removed_entry(void **state)
{
    struct tlog t;
    tlog_make(&t, "audit-removed", 4, 0);
    struct mt_env *e = t.e;
    const char *p = t.path;
    char *b = t.b;
    size_t len = t.len, *starts = t.starts;
    for (size_t rm = 0; rm < 3; rm++) { /* the last one leaves a valid, shorter chain */
        char *c = malloc(len);
        memcpy(c, b, starts[rm]);
        memcpy(c + starts[rm], b + starts[rm + 1], len - starts[rm + 1]);
        spit(p, c, len - (starts[rm + 1] - starts[rm]));
        free(c);
        struct strata_audit_verify v;
        assert_int_equal(strata_audit_verify_drive(e->drive[0], &v), 0);
        assert_true(v.broken);
        assert_int_equal(v.broken_at, rm);
        assert_non_null(strstr(v.reason, "prev does not match"));
    }
    /* Two entries swapped are caught too. */
    char *c = malloc(len);
    memcpy(c, b + starts[1], starts[2] - starts[1]);
    memcpy(c + (starts[2] - starts[1]), b, starts[1]);
    memcpy(c + starts[2], b + starts[2], len - starts[2]);
    spit(p, c, len);
    free(c);
    struct strata_audit_verify v;
    assert_int_equal(strata_audit_verify_drive(e->drive[0], &v), 0);
    assert_true(v.broken);
    assert_int_equal(v.broken_at, 0);
    free(b);
    mt_rm_rf(e->root);
    free(e);
}

/* Rewrite the log at path with a valid chain of its own: each entry's
 * event fields (before ,"prev") pass through edit, which may drop it. */
static void rechain(const char *path, bool (*edit)(char *fields, uint64_t idx))
{
    size_t len;
    char *b = slurp(path, &len);
    assert_non_null(b);
    char *out = malloc(2 * len + 1024);
    size_t ol = 0;
    char prev[65];
    memset(prev, '0', 64);
    prev[64] = 0;
    uint64_t idx = 0;
    for (char *line = b; line < b + len; idx++) {
        char *nl = strchr(line, '\n');
        char *cut = strstr(line, ",\"prev\":\"");
        assert_true(nl && cut && cut < nl);
        *cut = 0;
        if (edit(line, idx)) {
            size_t start = ol;
            ol += (size_t)sprintf(out + ol, "%s,\"prev\":\"%s\"", line, prev);
            uint8_t h[32];
            SHA256((const unsigned char *)out + start, ol - start, h);
            for (int i = 0; i < 32; i++)
                sprintf(prev + 2 * i, "%02x", h[i]);
            ol += (size_t)sprintf(out + ol, ",\"hash\":\"%s\"}\n", prev);
        }
        line = nl + 1;
    }
    spit(path, out, ol);
    free(out);
    free(b);
}

static bool soften(char *fields, uint64_t idx)
{
    char *o = strstr(fields, "\"outcome\":\"denied\"");
    if (o && idx == 1)
        memcpy(o, "\"outcome\":\"allowd\"", 18); /* same length */
    return true;
}

static bool drop_second(char *fields, uint64_t idx)
{
    return idx != 1;
}

/* A drive whose log was rewritten with a consistent chain verifies on its
 * own; comparing the drives finds the edited event. */
static void test_compare_drives(void **state)
{
    struct tlog t;
    tlog_make(&t, "audit-cmp", 3, 2);
    struct mt_env *e = t.e;
    struct strata_audit_compare c;
    assert_int_equal(strata_audit_compare_drives(e->paths, MT_DRIVES, &c), 0);
    assert_false(c.differ);
    assert_int_equal(c.events, 3);

    /* A drive that missed an event (offline) is not a difference. */
    char p3[700], lc[700];
    log_path(e, 3, p3, sizeof(p3));
    rechain(p3, drop_second);
    snprintf(lc, sizeof(lc), "%s/lock-clock", e->drive[3]);
    unlink(lc);
    verify_ok(e, 3, 2);
    assert_int_equal(strata_audit_compare_drives(e->paths, MT_DRIVES, &c), 0);
    assert_false(c.differ);
    assert_int_equal(c.events, 3);

    rechain(t.path, soften);
    snprintf(lc, sizeof(lc), "%s/lock-clock", e->drive[2]);
    unlink(lc);
    verify_ok(e, 2, 3); /* the forged chain holds on its own */
    assert_int_equal(strata_audit_compare_drives(e->paths, MT_DRIVES, &c), 0);
    assert_true(c.differ);
    assert_int_equal(c.seq, 2);
    assert_int_equal(c.drive_a, 0);
    assert_int_equal(c.drive_b, 2);
    free(t.b);
    mt_rm_rf(e->root);
    free(e);
}

static void test_quorum(void **state)
{
    struct mt_env *e = mt_setup("audit-quorum");
    assert_non_null(e);
    mt_close(e);
    /* Two of four drives cannot open their log: 2 < write quorum 3. */
    char p[700];
    for (int d = 0; d < 2; d++) {
        log_path(e, d, p, sizeof(p));
        unlink(p);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    assert_int_equal(mt_open(e), 0);
    struct strata_audit_event ev = {.user = "u", .bucket = "b", .action = "DeleteObject",
                                    .outcome = "denied"};
    assert_int_equal(strata_meta_audit_append(e->m, &ev), STRATA_EQUORUM);
    verify_ok(e, 2, 1); /* the drives that took it keep it */
    mt_close(e);
    log_path(e, 1, p, sizeof(p));
    rmdir(p);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(strata_meta_audit_append(e->m, &ev), 0);
    verify_ok(e, 1, 1);
    verify_ok(e, 3, 2);
    mt_teardown(e);
}

#define THREADS 8
#define PER_THREAD 40

static void *appender(void *arg)
{
    struct mt_env *e = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        struct strata_audit_event ev = {.user = "u", .bucket = "b", .key = "k",
                                        .action = "PutObjectRetention", .outcome = "allowed"};
        if (strata_meta_audit_append(e->m, &ev) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    struct mt_env *e = mt_setup("audit-threads");
    assert_non_null(e);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, appender, e), 0);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    for (int d = 0; d < MT_DRIVES; d++) {
        verify_ok(e, d, THREADS * PER_THREAD);
        struct strata_audit_verify v;
        assert_int_equal(strata_audit_verify_drive(e->drive[d], &v), 0);
        assert_int_equal(v.last_seq, THREADS * PER_THREAD);
    }
    mt_teardown(e);
}

/* Child of test_kill_during_appends: append forever, acking each seq. */
static void append_child(void *ud, int fd)
{
    struct mt_env *e = ud;
    if (mt_open(e))
        _exit(3);
    if (write(fd, "r", 1) != 1)
        _exit(6);
    for (;;) {
        struct strata_audit_event ev = {.user = "u", .bucket = "b", .key = "k",
                                        .action = "DeleteObject", .outcome = "denied",
                                        .detail = "kill test"};
        if (strata_meta_audit_append(e->m, &ev))
            _exit(5);
        struct strata_audit_verify v;
        if (strata_audit_verify_drive(e->drive[0], &v) || v.broken)
            _exit(4);
        if (write(fd, &v.last_seq, sizeof(v.last_seq)) != sizeof(v.last_seq))
            _exit(6);
    }
}

/* SIGKILL in the middle of appends: after reopening, every drive's chain
 * verifies (a torn line is cut and the cut recorded), the drives agree, and
 * every acknowledged event is on at least the write quorum of drives. */
static void test_kill_during_appends(void **state)
{
    struct mt_env *e = mt_setup("audit-kill");
    assert_non_null(e);
    mt_close(e);
    srand((unsigned)getpid());
    for (int run = 0; run < 6; run++) {
        uint64_t acked = 0;
        assert_int_equal(mt_run_and_kill(append_child, e, 40000, &acked, sizeof(acked)), 0);
        assert_int_equal(mt_open(e), 0);
        mt_close(e);
        unsigned holding = 0;
        for (int d = 0; d < MT_DRIVES; d++) {
            struct strata_audit_verify w;
            assert_int_equal(strata_audit_verify_drive(e->drive[d], &w), 0);
            if (w.broken)
                fail_msg("run %d drive %d broken at %llu: %s", run, d,
                         (unsigned long long)w.broken_at, w.reason);
            holding += w.last_seq >= acked;
        }
        assert_true(holding >= 3);
        struct strata_audit_compare cmp;
        assert_int_equal(strata_audit_compare_drives(e->paths, MT_DRIVES, &cmp), 0);
        assert_false(cmp.differ);
        assert_true(cmp.events >= acked);
    }
    mt_rm_rf(e->root);
    free(e);
}

static void test_absent_log(void **state)
{
    struct strata_audit_verify v;
    assert_int_equal(strata_audit_verify_drive("/nonexistent-strata-drive", &v), 0);
    assert_false(v.broken);
    assert_int_equal(v.entries, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_verify), cmocka_unit_test(test_flip_every_byte),
        cmocka_unit_test(test_truncated_last_entry), cmocka_unit_test(test_removed_tail),
        cmocka_unit_test(test_removed_entry), cmocka_unit_test(test_compare_drives),
        cmocka_unit_test(test_quorum), cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_kill_during_appends),
        cmocka_unit_test(test_absent_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
