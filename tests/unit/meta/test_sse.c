/*
 * test_sse.c - the chunked AES-256-GCM format (meta/sse.c): round trips of
 * streams of every awkward size, ranges that start and end anywhere, and
 * detection of tampered, reordered, truncated and foreign chunks and of a
 * wrong key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sse.h"
#include "strata/err.h"

struct mem {
    uint8_t *b;
    size_t len, cap;
};

static int emit_cb(void *ud, const uint8_t *buf, size_t len)
{
    struct mem *m = ud;
    if (m->len + len > m->cap) {
        m->cap = (m->len + len) * 2;
        m->b = realloc(m->b, m->cap);
        assert_non_null(m->b);
    }
    memcpy(m->b + m->len, buf, len);
    m->len += len;
    return 0;
}

static int read_cb(void *ud, uint64_t off, void *buf, size_t len)
{
    struct mem *m = ud;
    if (off > m->len || len > m->len - off)
        return STRATA_EIO;
    memcpy(buf, m->b + off, len);
    return 0;
}

static const uint8_t KEY[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

static uint8_t *pattern(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
    return p;
}

/* Seal pt through the writer in pieces of step bytes. */
static void seal(const uint8_t *key, uint32_t stream, const uint8_t *pt, size_t n, size_t step,
                 struct mem *out)
{
    struct sse_writer *w;
    memset(out, 0, sizeof(*out));
    assert_int_equal(strata_sse__writer_create(key, stream, &w), 0);
    for (size_t o = 0; o < n; o += step)
        assert_int_equal(strata_sse__writer_write(w, pt + o, n - o < step ? n - o : step, emit_cb,
                                                  out),
                         0);
    assert_int_equal(strata_sse__writer_finish(w, emit_cb, out), 0);
    strata_sse__writer_destroy(w);
}

static int read_range(const uint8_t *key, uint32_t stream, uint64_t size, struct mem *st,
                      uint64_t off, size_t len, uint8_t *out)
{
    struct sse_reader *r;
    assert_int_equal(strata_sse__reader_create(key, stream, size, &r), 0);
    int rc = strata_sse__reader_read(r, off, out, len, read_cb, st);
    strata_sse__reader_destroy(r);
    return rc;
}

static void test_roundtrip_ranges(void **state)
{
    (void)state;
    const size_t sizes[] = {0, 1, 100, SSE_CHUNK - 1, SSE_CHUNK, SSE_CHUNK + 1,
                            3 * SSE_CHUNK + 5, 20 * SSE_CHUNK, 37 * SSE_CHUNK + 4097};
    const size_t steps[] = {1000, 7, 65536, 300000};
    srand(42);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        uint8_t *pt = pattern(n, (unsigned)s);
        struct mem st;
        seal(KEY, 0, pt, n, steps[s % 4], &st);
        assert_int_equal(st.len, strata_sse__stream_size(n));
        assert_int_equal(st.len, n + strata_sse__nchunks(n) * SSE_TAG);
        if (n >= 64)
            assert_null(memmem(st.b, st.len, pt, 64)); /* no plaintext stored */
        uint8_t *got = malloc(n + 1);
        if (n) {
            assert_int_equal(read_range(KEY, 0, n, &st, 0, n, got), 0);
            assert_memory_equal(got, pt, n);
        }
        /* Ranges that start and end anywhere, through one reader so the
         * cached chunk is exercised too. */
        struct sse_reader *r;
        assert_int_equal(strata_sse__reader_create(KEY, 0, n, &r), 0);
        for (int t = 0; n && t < 200; t++) {
            uint64_t off = (uint64_t)rand() % n;
            size_t len = 1 + (size_t)rand() % (n - off);
            if (t % 4 == 0)
                len = len < 70000 ? len : 70000;
            if (t % 7 == 0) /* a chunk boundary on either side */
                off = (off / SSE_CHUNK) * SSE_CHUNK, len = n - off < SSE_CHUNK ? n - off : SSE_CHUNK;
            memset(got, 0, n);
            assert_int_equal(strata_sse__reader_read(r, off, got, len, read_cb, &st), 0);
            assert_memory_equal(got, pt + off, len);
        }
        assert_int_equal(strata_sse__reader_read(r, n, got, 1, read_cb, &st), STRATA_ERANGE);
        strata_sse__reader_destroy(r);
        free(got);
        free(st.b);
        free(pt);
    }
}

static void test_range_map(void **state)
{
    (void)state;
    uint64_t c0, c1, so, sl;
    strata_sse__range(10 * SSE_CHUNK + 10, SSE_CHUNK - 1, 2, &c0, &c1, &so, &sl);
    assert_int_equal(c0, 0);
    assert_int_equal(c1, 1);
    assert_int_equal(so, 0);
    assert_int_equal(sl, 2 * SSE_CCHUNK);
    strata_sse__range(10 * SSE_CHUNK + 10, 10 * SSE_CHUNK + 3, 7, &c0, &c1, &so, &sl);
    assert_int_equal(c0, 10);
    assert_int_equal(c1, 10);
    assert_int_equal(so, 10 * SSE_CCHUNK);
    assert_int_equal(sl, 10 + SSE_TAG); /* only the short last chunk */
}

static void test_tamper(void **state)
{
    (void)state;
    size_t n = 3 * SSE_CHUNK + 100;
    uint8_t *pt = pattern(n, 3), *got = malloc(n);
    struct mem st;
    seal(KEY, 0, pt, n, 4096, &st);
    st.b[SSE_CCHUNK + 5] ^= 0x01; /* one bit of chunk 1's ciphertext */
    assert_int_equal(read_range(KEY, 0, n, &st, SSE_CHUNK + 10, 10, got), STRATA_ECORRUPT);
    assert_int_equal(read_range(KEY, 0, n, &st, 0, n, got), STRATA_ECORRUPT);
    /* The other chunks still read. */
    assert_int_equal(read_range(KEY, 0, n, &st, 0, SSE_CHUNK, got), 0);
    assert_memory_equal(got, pt, SSE_CHUNK);
    assert_int_equal(read_range(KEY, 0, n, &st, 2 * SSE_CHUNK, n - 2 * SSE_CHUNK, got), 0);
    st.b[SSE_CCHUNK + 5] ^= 0x01;
    st.b[2 * SSE_CCHUNK - 1] ^= 0x80; /* chunk 1's tag */
    assert_int_equal(read_range(KEY, 0, n, &st, SSE_CHUNK, 1, got), STRATA_ECORRUPT);
    free(st.b);
    free(pt);
    free(got);
}

static void test_reorder_and_stream(void **state)
{
    (void)state;
    size_t n = 3 * SSE_CHUNK;
    uint8_t *pt = pattern(n, 4), *got = malloc(n), tmp[SSE_CCHUNK];
    struct mem st;
    seal(KEY, 5, pt, n, 65536, &st);
    assert_int_equal(read_range(KEY, 5, n, &st, 0, n, got), 0);
    assert_memory_equal(got, pt, n);
    /* The same bytes read as another stream (another part) fail. */
    assert_int_equal(read_range(KEY, 6, n, &st, 0, 1, got), STRATA_ECORRUPT);
    /* Swap chunks 0 and 1. */
    memcpy(tmp, st.b, SSE_CCHUNK);
    memcpy(st.b, st.b + SSE_CCHUNK, SSE_CCHUNK);
    memcpy(st.b + SSE_CCHUNK, tmp, SSE_CCHUNK);
    assert_int_equal(read_range(KEY, 5, n, &st, 0, 1, got), STRATA_ECORRUPT);
    assert_int_equal(read_range(KEY, 5, n, &st, SSE_CHUNK, 1, got), STRATA_ECORRUPT);
    free(st.b);
    free(pt);
    free(got);
}

static void test_truncation(void **state)
{
    (void)state;
    size_t n = 3 * SSE_CHUNK + 77;
    uint8_t *pt = pattern(n, 5), *got = malloc(n);
    struct mem st;
    seal(KEY, 0, pt, n, 9999, &st);
    /* Drop the last chunk and present a shorter stream: the new "last"
     * chunk was sealed as not-last, so it is refused. */
    st.len = 3 * SSE_CCHUNK;
    assert_int_equal(read_range(KEY, 0, 3 * SSE_CHUNK, &st, 2 * SSE_CHUNK, 1, got),
                     STRATA_ECORRUPT);
    /* The chunks before it are intact and still read. */
    assert_int_equal(read_range(KEY, 0, 3 * SSE_CHUNK, &st, 0, SSE_CHUNK, got), 0);
    assert_memory_equal(got, pt, SSE_CHUNK);
    /* A short last chunk cut further fails its tag. */
    st.len = strata_sse__stream_size(n);
    assert_int_equal(read_range(KEY, 0, n - 10, &st, 3 * SSE_CHUNK, 10, got), STRATA_ECORRUPT);
    free(st.b);
    free(pt);
    free(got);
}

static void test_wrong_key(void **state)
{
    (void)state;
    size_t n = SSE_CHUNK + 3;
    uint8_t *pt = pattern(n, 6), *got = malloc(n), k2[32];
    memcpy(k2, KEY, 32);
    k2[31] ^= 1;
    struct mem st;
    seal(KEY, 0, pt, n, 1 << 20, &st);
    assert_int_equal(read_range(k2, 0, n, &st, 0, 1, got), STRATA_ECORRUPT);
    assert_int_equal(read_range(k2, 0, n, &st, SSE_CHUNK, 3, got), STRATA_ECORRUPT);
    assert_int_equal(read_range(KEY, 0, n, &st, SSE_CHUNK, 3, got), 0);
    assert_memory_equal(got, pt + SSE_CHUNK, 3);
    /* Same key, same plaintext, other stream: different ciphertext. */
    struct mem st2;
    seal(KEY, 1, pt, n, 1 << 20, &st2);
    assert_memory_not_equal(st.b, st2.b, 64);
    free(st2.b);
    free(st.b);
    free(pt);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_ranges), cmocka_unit_test(test_range_map),
        cmocka_unit_test(test_tamper),           cmocka_unit_test(test_reorder_and_stream),
        cmocka_unit_test(test_truncation),       cmocka_unit_test(test_wrong_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
