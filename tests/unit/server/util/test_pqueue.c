/*
 * test_pqueue.c - the persistent queue (server/pqueue.c) on real files:
 * batches partly acknowledged and sent again from the first one not
 * acknowledged, batches taken by several threads (each message delivered
 * once), an 8-byte ack file of older versions read as generation 0, a
 * queue directory that cannot be used left out (one copy), and a copy
 * replaced by an empty directory rebuilt from the other; an ordering key:
 * one key's messages one at a time and in order (a retried one holding
 * the later ones back, also across a stop and a new start) while other
 * keys go on in parallel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pqueue.h"

#define NMSG 300

struct sink {
    pthread_mutex_t mu;
    size_t calls, sizes[16];   /* batch sizes of the first calls */
    char got[NMSG * 2][16];    /* messages in delivery order */
    size_t ngot;
    size_t partial;            /* calls that acknowledge only half */
};

static size_t sink_batch(void *ud, const struct iovec *msgs, size_t n)
{
    struct sink *s = ud;
    pthread_mutex_lock(&s->mu);
    if (s->calls < 16)
        s->sizes[s->calls] = n;
    s->calls++;
    size_t k = n;
    if (s->partial) {
        s->partial--;
        k = n / 2;
    }
    for (size_t i = 0; i < k && s->ngot < NMSG * 2; i++) {
        assert_true(msgs[i].iov_len < 16);
        assert_int_equal(((char *)msgs[i].iov_base)[msgs[i].iov_len], '\0');
        memcpy(s->got[s->ngot++], msgs[i].iov_base, msgs[i].iov_len + 1);
    }
    pthread_mutex_unlock(&s->mu);
    return k;
}

static enum strata_pqueue_sent never(void *ud, const char *msg, size_t len)
{
    (void)ud, (void)msg, (void)len;
    return STRATA_PQUEUE_RETRY;
}

static void dirs_make(char d[2][512])
{
    const char *base = getenv("STRATA_TEST_TMPDIR");
    for (int i = 0; i < 2; i++) {
        snprintf(d[i], 512, "%s/pqueue.XXXXXX", base && *base ? base : "/tmp");
        assert_non_null(mkdtemp(d[i]));
    }
}

static void dirs_rm(char d[2][512])
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", d[0], d[1]);
    assert_int_equal(system(cmd), 0);
}

/* n messages "m000".. queued in dirs by a queue that never delivers. */
static void seed(char d[2][512], int n)
{
    const char *dp[2] = {d[0], d[1]};
    struct strata_pqueue *q;
    char err[256], m[16];
    struct strata_pqueue_opts o = {.name = "t", .max = 100000, .threads = 1, .send = never};
    assert_int_equal(strata_pqueue_create(dp, 2, &o, &q, err, sizeof(err)), 0);
    for (int i = 0; i < n; i++) {
        snprintf(m, sizeof(m), "m%03d", i);
        assert_int_equal(strata_pqueue_push(q, m, strlen(m)), 0);
    }
    strata_pqueue_destroy(q);
}

static struct strata_pqueue *open_sink(char d[2][512], size_t nd, unsigned threads,
                                       struct sink *s)
{
    const char *dp[2] = {d[0], d[1]};
    struct strata_pqueue *q;
    char err[256];
    struct strata_pqueue_opts o = {.name = "t", .max = 100000, .threads = threads,
                                   .send = never, .send_batch = sink_batch, .ud = s};
    assert_int_equal(strata_pqueue_create(dp, nd, &o, &q, err, sizeof(err)), 0);
    return q;
}

static void wait_empty(struct strata_pqueue *q)
{
    struct strata_pqueue_stats st;
    for (int i = 0; i < 1000; i++) {
        strata_pqueue_stats_get(q, &st);
        if (st.pending == 0)
            return;
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
    fail_msg("still %llu pending", (unsigned long long)st.pending);
}

static off_t fsize(const char *dir, const char *file)
{
    char p[600];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, file);
    return stat(p, &st) == 0 ? st.st_size : -1;
}

static void test_batch_partial_ack(void **state)
{
    (void)state;
    char d[2][512];
    dirs_make(d);
    seed(d, 5);
    struct sink s = {.mu = PTHREAD_MUTEX_INITIALIZER, .partial = 1};
    struct strata_pqueue *q = open_sink(d, 2, 1, &s);
    wait_empty(q);
    struct strata_pqueue_stats st;
    strata_pqueue_stats_get(q, &st);
    strata_pqueue_destroy(q);
    /* All five in one batch, two acknowledged; the other three again. */
    assert_int_equal(s.calls, 2);
    assert_int_equal(s.sizes[0], 5);
    assert_int_equal(s.sizes[1], 3);
    assert_int_equal(s.ngot, 5);
    for (int i = 0; i < 5; i++) {
        char m[16];
        snprintf(m, sizeof(m), "m%03d", i);
        assert_string_equal(s.got[i], m);
    }
    assert_int_equal(st.delivered, 5);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.copies, 2);
    /* The offset (and generation) reached both ack files: nothing again. */
    assert_int_equal(fsize(d[0], "t.ack"), 16);
    assert_int_equal(fsize(d[1], "t.ack"), 16);
    struct sink s2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
    q = open_sink(d, 2, 1, &s2);
    strata_pqueue_stats_get(q, &st);
    strata_pqueue_destroy(q);
    assert_int_equal(st.pending, 0);
    assert_int_equal(s2.calls, 0);
    dirs_rm(d);
}

static void test_batches_on_several_threads(void **state)
{
    (void)state;
    char d[2][512];
    dirs_make(d);
    seed(d, NMSG);
    struct sink s = {.mu = PTHREAD_MUTEX_INITIALIZER, .partial = 6};
    struct strata_pqueue *q = open_sink(d, 2, 4, &s);
    wait_empty(q);
    struct strata_pqueue_stats st;
    strata_pqueue_stats_get(q, &st);
    strata_pqueue_destroy(q);
    /* Each message once, none lost, none twice; batches of <= 64. */
    assert_int_equal(s.ngot, NMSG);
    assert_int_equal(st.delivered, NMSG);
    static char seen[NMSG];
    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < s.ngot; i++) {
        int v = atoi(s.got[i] + 1);
        assert_true(v >= 0 && v < NMSG);
        assert_int_equal(seen[v], 0);
        seen[v] = 1;
    }
    for (size_t i = 0; i < 16 && i < s.calls; i++)
        assert_true(s.sizes[i] >= 1 && s.sizes[i] <= STRATA_PQUEUE_BATCH_MAX);
    assert_true(s.calls >= NMSG / STRATA_PQUEUE_BATCH_MAX);
    dirs_rm(d);
}

static void test_old_ack_file(void **state)
{
    (void)state;
    char d[2][512], p[1200];
    dirs_make(d);
    seed(d, 3);
    /* An older version's ack file: 8 bytes, the offset of the second record. */
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof(p), "%s/t.ack", d[i]);
        int fd = open(p, O_WRONLY | O_TRUNC);
        assert_true(fd >= 0);
        uint64_t off = 12 + 4;
        assert_int_equal(write(fd, &off, 8), 8);
        close(fd);
    }
    struct sink s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct strata_pqueue *q = open_sink(d, 2, 1, &s);
    wait_empty(q);
    strata_pqueue_destroy(q);
    assert_int_equal(s.ngot, 2);
    assert_string_equal(s.got[0], "m001");
    assert_string_equal(s.got[1], "m002");
    assert_int_equal(fsize(d[0], "t.ack"), 16);
    dirs_rm(d);
}

static void test_copy_left_out_and_rebuilt(void **state)
{
    (void)state;
    char d[2][512], p[1200];
    dirs_make(d);
    seed(d, 4);
    /* The first directory replaced by an empty one: rebuilt at open. */
    snprintf(p, sizeof(p), "rm -rf '%s' && mkdir '%s'", d[0], d[0]);
    assert_int_equal(system(p), 0);
    const char *dp[2] = {d[0], d[1]};
    struct strata_pqueue *q;
    char err[256];
    struct strata_pqueue_opts o = {.name = "t", .max = 10, .threads = 1, .send = never};
    assert_int_equal(strata_pqueue_create(dp, 2, &o, &q, err, sizeof(err)), 0);
    struct strata_pqueue_stats st;
    strata_pqueue_stats_get(q, &st);
    strata_pqueue_destroy(q);
    assert_int_equal(st.pending, 4);
    assert_int_equal(st.copies, 2);
    assert_int_equal(fsize(d[0], "t.q"), fsize(d[1], "t.q"));
    assert_int_equal(fsize(d[0], "t.q"), 4 * (12 + 4));
    /* The second directory unusable (a file in its place): one copy. */
    snprintf(p, sizeof(p), "rm -rf '%s' && touch '%s'", d[1], d[1]);
    assert_int_equal(system(p), 0);
    assert_int_equal(strata_pqueue_create(dp, 2, &o, &q, err, sizeof(err)), 0);
    strata_pqueue_stats_get(q, &st);
    assert_int_equal(strata_pqueue_push(q, "x", 1), 0);
    strata_pqueue_destroy(q);
    assert_int_equal(st.pending, 4);
    assert_int_equal(st.copies, 1);
    snprintf(p, sizeof(p), "rm -f '%s'", d[1]);
    assert_int_equal(system(p), 0);
    assert_int_equal(mkdir(d[1], 0700), 0);
    dirs_rm(d);
}

/* Messages "<key><seq>": the key is the first letter. */
struct keyed {
    pthread_mutex_t mu;
    int busy[4], last[4]; /* sends of each key now; seq of its last one done */
    int par, par_max;     /* sends now, at most */
    bool overlap, disorder;
    int retries;          /* RETRY answers still to give to key 'a' */
    size_t done;
};

static uint64_t keyed_order(void *ud, const char *msg, size_t len)
{
    (void)ud, (void)len;
    return (uint64_t)(unsigned char)msg[0];
}

static enum strata_pqueue_sent keyed_send(void *ud, const char *msg, size_t len)
{
    struct keyed *s = ud;
    (void)len;
    int k = msg[0] - 'a', seq = atoi(msg + 1);
    pthread_mutex_lock(&s->mu);
    s->overlap |= s->busy[k]++ > 0;
    s->par_max = ++s->par > s->par_max ? s->par : s->par_max;
    bool retry = k == 0 && s->retries > 0 && s->retries--;
    pthread_mutex_unlock(&s->mu);
    nanosleep(&(struct timespec){0, (k == 0 ? 3 : 1) * 1000000L}, NULL);
    pthread_mutex_lock(&s->mu);
    s->busy[k]--;
    s->par--;
    if (!retry) {
        s->disorder |= seq <= s->last[k];
        s->last[k] = seq;
        s->done++;
    }
    pthread_mutex_unlock(&s->mu);
    return retry ? STRATA_PQUEUE_RETRY : STRATA_PQUEUE_DONE;
}

static struct strata_pqueue *open_keyed(char d[2][512], struct keyed *s)
{
    const char *dp[2] = {d[0], d[1]};
    struct strata_pqueue *q;
    char err[256];
    struct strata_pqueue_opts o = {.name = "t", .max = 100000, .threads = 8,
                                   .send = keyed_send, .order_key = keyed_order, .ud = s};
    assert_int_equal(strata_pqueue_create(dp, 2, &o, &q, err, sizeof(err)), 0);
    return q;
}

static void keyed_reset(struct keyed *s)
{
    memset(s->busy, 0, sizeof(s->busy));
    memset(s->last, 0, sizeof(s->last));
    s->overlap = s->disorder = false;
    s->par = s->par_max = 0;
    s->done = 0;
}

static void test_order_key(void **state)
{
    (void)state;
    char d[2][512];
    dirs_make(d);
    struct keyed s = {.retries = 3};
    pthread_mutex_init(&s.mu, NULL);
    keyed_reset(&s);
    /* Key a's messages close together, b..d's between them; a's first
     * one is refused three times first. */
    {
        const char *dp[2] = {d[0], d[1]};
        struct strata_pqueue *q;
        char err[256], m[16];
        struct strata_pqueue_opts o = {.name = "t", .max = 100000, .threads = 1, .send = never};
        assert_int_equal(strata_pqueue_create(dp, 2, &o, &q, err, sizeof(err)), 0);
        for (int i = 1; i <= 40; i++) {
            snprintf(m, sizeof(m), "%c%03d", "aabacada"[i % 8], i);
            assert_int_equal(strata_pqueue_push(q, m, strlen(m)), 0);
        }
        strata_pqueue_destroy(q);
    }
    struct strata_pqueue *q = open_keyed(d, &s);
    wait_empty(q);
    strata_pqueue_destroy(q);
    assert_false(s.overlap);
    assert_false(s.disorder);
    assert_int_equal(s.done, 40);
    assert_int_equal(s.retries, 0);
    assert_true(s.par_max > 1); /* other keys went on meanwhile */

    /* Stopped with a's messages parked: the next start sends what is
     * left (from the first not done with) in order again. */
    q = open_keyed(d, &s);
    char m[16];
    keyed_reset(&s);
    s.retries = 1000000; /* a's first one never goes: the rest of a parks */
    for (int i = 1; i <= 40; i++) {
        snprintf(m, sizeof(m), "%c%03d", "aabacada"[i % 8], i);
        assert_int_equal(strata_pqueue_push(q, m, strlen(m)), 0);
    }
    nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
    strata_pqueue_destroy(q);
    assert_int_equal(s.last[0], 0);
    assert_false(s.overlap);
    keyed_reset(&s);
    s.retries = 0;
    q = open_keyed(d, &s);
    wait_empty(q);
    strata_pqueue_destroy(q);
    assert_false(s.overlap);
    assert_false(s.disorder);
    assert_int_equal(s.last[0], 40);
    assert_true(s.done >= 20); /* a's 20 at least, b..d's again at most */
    pthread_mutex_destroy(&s.mu);
    dirs_rm(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_partial_ack),
        cmocka_unit_test(test_batches_on_several_threads),
        cmocka_unit_test(test_old_ack_file),
        cmocka_unit_test(test_copy_left_out_and_rebuilt),
        cmocka_unit_test(test_order_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
