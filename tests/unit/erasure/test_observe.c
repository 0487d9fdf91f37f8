/*
 * test_observe.c - the writer's observer (strata_ec_writer_observe) and the
 * deeper pipeline: the callback sees every byte exactly once and in order,
 * for sizes around the stripe boundaries and for many stripes (more than
 * the pipeline depth), on a helper thread; misuse is refused; destroy and
 * a failed write wait for running callbacks; the data written through the
 * pipeline reads back byte for byte, sequentially (read-ahead), backwards
 * and in jumps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>

#include "ec_test_util.h"
#include "ec_test_shards.h"
#include "strata/erasure.h"

#define BLOCK (64u * 1024) /* small stripes: many of them, quickly */

static struct strata_set *open_set(const char *name, struct ect_drives *d, bool direct)
{
    ect_drives_init(d, ect_dir(name), 4);
    struct strata_set_opts o = {.direct_io = direct, .no_fsync = true, .block_size = BLOCK};
    return ect_set_open(d, &o);
}

struct seen {
    pthread_t caller;
    uint64_t bytes;
    uint32_t crc;
    unsigned calls, off_thread;
    unsigned delay_us;
    int in_cb; /* a callback is running (atomic) */
};

static void observe_cb(void *ud, const void *data, size_t len)
{
    struct seen *s = ud;
    __atomic_store_n(&s->in_cb, 1, __ATOMIC_SEQ_CST);
    if (s->delay_us)
        usleep(s->delay_us);
    s->crc = strata_crc32c(s->crc, data, len);
    s->bytes += len;
    s->calls++;
    if (!pthread_equal(pthread_self(), s->caller))
        s->off_thread++;
    __atomic_store_n(&s->in_cb, 0, __ATOMIC_SEQ_CST);
}

static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)ect_rand();
}

static void read_back(struct strata_set *set, const uint8_t *id, const uint8_t *data, size_t size)
{
    if (size == 0)
        return;
    uint8_t *out = malloc(size);
    assert_non_null(out);
    struct strata_ec_reader *r;
    assert_int_equal(strata_ec_reader_open(set, id, size, &r), 0);
    /* Sequential in odd pieces: the read-ahead path. */
    memset(out, 0, size);
    for (size_t off = 0; off < size;) {
        size_t n = 1 + (size_t)(ect_rand() % (BLOCK + 7000));
        if (n > size - off)
            n = size - off;
        assert_int_equal(strata_ec_reader_read(r, off, out + off, n), 0);
        off += n;
    }
    assert_memory_equal(out, data, size);
    /* Backwards, one stripe-sized piece at a time, each off by 100 bytes. */
    memset(out, 0, size);
    for (size_t end = size; end > 0;) {
        size_t n = end > BLOCK ? BLOCK : end;
        if (end > 100 && n > 100)
            n -= 100;
        assert_int_equal(strata_ec_reader_read(r, end - n, out + end - n, n), 0);
        end -= n;
    }
    assert_memory_equal(out, data, size);
    /* Jumps: a sequential run, a jump back, another run. */
    for (unsigned j = 0; j < 20; j++) {
        size_t off = (size_t)(ect_rand() % size);
        size_t n = 1 + (size_t)(ect_rand() % (3 * BLOCK));
        for (unsigned k = 0; k < 3 && off < size; k++) {
            if (n > size - off)
                n = size - off;
            uint8_t *tmp = malloc(n);
            assert_non_null(tmp);
            assert_int_equal(strata_ec_reader_read(r, off, tmp, n), 0);
            assert_memory_equal(tmp, data + off, n);
            free(tmp);
            off += n;
        }
    }
    strata_ec_reader_close(r);
    free(out);
}

static void test_observe_sizes(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *set = open_set("observe-sizes", &d, true);
    size_t stripe = strata_set_stripe_size(set);
    const size_t sizes[] = {0,          1,          stripe - 1,          stripe,
                            stripe + 1, 2 * stripe, 5 * stripe + 123,    9 * stripe,
                            9 * stripe - 1};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t size = sizes[i];
        uint8_t *data = malloc(size ? size : 1);
        assert_non_null(data);
        fill(data, size);
        uint8_t id[STRATA_DATA_ID_LEN];
        strata_data_id_new(id);
        struct strata_ec_writer *w;
        assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
        struct seen s = {.caller = pthread_self()};
        assert_int_equal(strata_ec_writer_observe(w, observe_cb, &s), 0);
        /* Twice, or after bytes: refused. */
        assert_int_equal(strata_ec_writer_observe(w, observe_cb, &s), STRATA_EINVAL);
        for (size_t off = 0; off < size;) {
            size_t n = 1 + (size_t)(ect_rand() % (2 * stripe));
            if (n > size - off)
                n = size - off;
            assert_int_equal(strata_ec_writer_write(w, data + off, n), 0);
            off += n;
        }
        uint32_t mask = 0;
        assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
        assert_int_equal(mask, 0xf);
        /* Everything was seen, once, in order, by the time finish returned. */
        assert_int_equal(s.bytes, size);
        assert_int_equal(s.crc, strata_crc32c(0, data, size));
        assert_int_equal(s.calls, (size + stripe - 1) / stripe);
        assert_int_equal(s.off_thread, s.calls); /* the helper thread, not the caller */
        strata_ec_writer_destroy(w);
        read_back(set, id, data, size);
        free(data);
    }
    strata_set_close(set);
}

static void test_observe_misuse(void **state)
{
    (void)state;
    struct ect_drives d;
    struct strata_set *set = open_set("observe-misuse", &d, false);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    assert_int_equal(strata_ec_writer_observe(w, NULL, NULL), STRATA_EINVAL);
    uint8_t b[10] = {1, 2, 3};
    assert_int_equal(strata_ec_writer_write(w, b, sizeof(b)), 0);
    struct seen s = {.caller = pthread_self()};
    assert_int_equal(strata_ec_writer_observe(w, observe_cb, &s), STRATA_EINVAL);
    strata_ec_writer_destroy(w);
    assert_int_equal(s.calls, 0);
    strata_set_close(set);
}

/* destroy() without finish while slow callbacks are queued: when it
 * returns, no callback runs and none starts later. */
static void test_observe_destroy_waits(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *set = open_set("observe-destroy", &d, true);
    size_t stripe = strata_set_stripe_size(set), size = 6 * stripe + 10;
    uint8_t *data = malloc(size);
    assert_non_null(data);
    fill(data, size);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    struct seen s = {.caller = pthread_self(), .delay_us = 20000};
    assert_int_equal(strata_ec_writer_observe(w, observe_cb, &s), 0);
    assert_int_equal(strata_ec_writer_write(w, data, size), 0);
    strata_ec_writer_destroy(w);
    assert_int_equal(__atomic_load_n(&s.in_cb, __ATOMIC_SEQ_CST), 0);
    unsigned calls = s.calls;
    assert_true(calls >= 3 && calls <= 6); /* the 6 full stripes, the last not yet flushed */
    usleep(60000);
    assert_int_equal(s.calls, calls);
    /* The pooled io context (and its helper) serves the next writer. */
    strata_data_id_new(id);
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    struct seen s2 = {.caller = pthread_self()};
    assert_int_equal(strata_ec_writer_observe(w, observe_cb, &s2), 0);
    assert_int_equal(strata_ec_writer_write(w, data, size), 0);
    assert_int_equal(strata_ec_writer_finish(w, NULL), 0);
    strata_ec_writer_destroy(w);
    assert_int_equal(s2.bytes, size);
    assert_int_equal(s2.crc, strata_crc32c(0, data, size));
    read_back(set, id, data, size);
    free(data);
    strata_set_close(set);
}

/* Many writers at once, each observed, each its own bytes. */
struct job {
    struct strata_set *set;
    unsigned seed;
    int ok;
};

static void *writer_main(void *arg)
{
    struct job *j = arg;
    size_t stripe = strata_set_stripe_size(j->set), size = 7 * stripe + j->seed * 1000;
    uint8_t *data = malloc(size);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)(i * 7 + j->seed);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    struct seen s = {.caller = pthread_self()};
    j->ok = strata_ec_writer_create(j->set, id, &w) == 0 &&
            strata_ec_writer_observe(w, observe_cb, &s) == 0 &&
            strata_ec_writer_write(w, data, size) == 0 && strata_ec_writer_finish(w, NULL) == 0 &&
            s.bytes == size && s.crc == strata_crc32c(0, data, size);
    strata_ec_writer_destroy(w);
    if (j->ok) {
        struct strata_ec_reader *r;
        uint8_t *out = malloc(size);
        j->ok = strata_ec_reader_open(j->set, id, size, &r) == 0 &&
                strata_ec_reader_read(r, 0, out, size) == 0 && memcmp(out, data, size) == 0;
        strata_ec_reader_close(r);
        free(out);
    }
    free(data);
    return NULL;
}

static void test_observe_threads(void **state)
{
    (void)state;
    struct ect_drives d;
    struct strata_set *set = open_set("observe-threads", &d, true);
    pthread_t th[6];
    struct job jobs[6];
    for (unsigned i = 0; i < 6; i++) {
        jobs[i] = (struct job){set, i, 0};
        pthread_create(&th[i], NULL, writer_main, &jobs[i]);
    }
    for (unsigned i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_true(jobs[i].ok);
    }
    strata_set_close(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_observe_sizes),
        cmocka_unit_test(test_observe_misuse),
        cmocka_unit_test(test_observe_destroy_waits),
        cmocka_unit_test(test_observe_threads),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        ect_cleanup();
    return rc;
}
