/*
 * test_chunked.c - the aws-chunked decoder on AWS's published streaming
 * examples ("Transferring Payload in Multiple Chunks" and "Including
 * Trailing Headers": 64 KiB + 1 KiB of 'a', chunk signatures chained from
 * the seed signature), fed whole and one byte at a time, plus tampering,
 * truncation, bad framing and the unsigned-trailer mode aws-cli v2 uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T20130524 ((time_t)1369353600)
#define CRED_SCOPE "Credential=" AKID "/20130524/us-east-1/s3/aws4_request"

static struct strata_creds *g_creds;

/* ---- output collector ----------------------------------------------------- */

struct sink {
    uint8_t *buf;
    size_t len, cap;
    int calls;
    size_t stop_after; /* return non-zero once len reaches this (0: never) */
};

static int sink_cb(void *ud, const void *p, size_t n)
{
    struct sink *s = ud;
    if (s->len + n > s->cap) {
        s->cap = (s->len + n) * 2;
        s->buf = realloc(s->buf, s->cap);
        assert_non_null(s->buf);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->calls++;
    return s->stop_after && s->len >= s->stop_after ? 1 : 0;
}

/* ---- the AWS examples ----------------------------------------------------- */

static void auth_for(bool trailer, struct strata_auth_result *res)
{
    struct strata_auth_hdr plain[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"Content-Length", "66824"},
        {"Authorization",
         "AWS4-HMAC-SHA256 " CRED_SCOPE
         ",SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
         "x-amz-decoded-content-length;x-amz-storage-class"
         ",Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"},
    };
    struct strata_auth_hdr tr[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"x-amz-trailer", "x-amz-checksum-crc32c"},
        {"Authorization",
         "AWS4-HMAC-SHA256 " CRED_SCOPE
         ",SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
         "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer"
         ",Signature=106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"},
    };
    struct strata_auth_req r = {"PUT", "/examplebucket/chunkObject.txt", NULL,
                                trailer ? tr : plain, 8, T20130524, NULL, 0, "us-east-1"};
    assert_int_equal(strata_auth_verify(g_creds, &r, res), STRATA_AUTH_OK);
}

#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
#define TSIG1 "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2"
#define TSIG2 "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7"
#define TSIG3 "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"
#define TRSIG "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435"

struct body {
    char *p;
    size_t len;
};

static void body_put(struct body *b, const void *p, size_t n)
{
    b->p = realloc(b->p, b->len + n + 1);
    assert_non_null(b->p);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void body_puts(struct body *b, const char *s)
{
    body_put(b, s, strlen(s));
}

static void body_as(struct body *b, size_t n)
{
    char *a = malloc(n);
    memset(a, 'a', n);
    body_put(b, a, n);
    free(a);
}

/* The example body; tail is what follows the last chunk's header line. */
static struct body example_body(const char *s1, const char *s2, const char *s3, const char *tail)
{
    struct body b = {0};
    body_puts(&b, "10000;chunk-signature=");
    body_puts(&b, s1);
    body_puts(&b, "\r\n");
    body_as(&b, 65536);
    body_puts(&b, "\r\n400;chunk-signature=");
    body_puts(&b, s2);
    body_puts(&b, "\r\n");
    body_as(&b, 1024);
    body_puts(&b, "\r\n0;chunk-signature=");
    body_puts(&b, s3);
    body_puts(&b, "\r\n");
    body_puts(&b, tail);
    return b;
}

static bool all_a(const struct sink *s)
{
    for (size_t i = 0; i < s->len; i++)
        if (s->buf[i] != 'a')
            return false;
    return true;
}

/* Feeds body in pieces of step bytes (0: all at once); returns the feed
 * status and leaves the error in *err. */
static int run(const struct strata_auth_result *auth, const struct body *b, size_t step,
               struct sink *out, enum strata_auth_err *err, struct strata_chunked **keep)
{
    struct strata_chunked *c;
    assert_int_equal(strata_chunked_create(auth, &c), 0);
    int rc = 0;
    if (step == 0)
        step = b->len;
    for (size_t off = 0; off < b->len && rc == 0; off += step) {
        size_t n = b->len - off < step ? b->len - off : step;
        rc = strata_chunked_feed(c, b->p + off, n, sink_cb, out, err);
    }
    if (rc == 0)
        rc = strata_chunked_finish(c, err);
    if (keep)
        *keep = c;
    else
        strata_chunked_destroy(c);
    return rc;
}

static void test_aws_example_whole(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    assert_int_equal(b.len, 66824); /* the example's Content-Length */
    struct sink out = {0};
    enum strata_auth_err err;
    struct strata_chunked *c;
    assert_int_equal(run(&auth, &b, 0, &out, &err, &c), 0);
    assert_int_equal(err, STRATA_AUTH_OK);
    assert_int_equal(out.len, 66560);
    assert_true(all_a(&out));
    assert_int_equal(out.calls, 2); /* one delivery per verified chunk */
    assert_int_equal(strata_chunked_decoded_bytes(c), 66560);
    strata_chunked_destroy(c);
    free(out.buf);
    free(b.p);
}

static void test_aws_example_byte_at_a_time(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    struct strata_chunked *c;
    assert_int_equal(strata_chunked_create(&auth, &c), 0);
    struct sink out = {0};
    enum strata_auth_err err;
    size_t chunk1_end = 22 + 64 + 2 + 65536; /* last data byte of chunk 1 */
    for (size_t i = 0; i < b.len; i++) {
        assert_int_equal(strata_chunked_feed(c, b.p + i, 1, sink_cb, &out, &err), 0);
        /* nothing is passed on before the whole chunk has been verified */
        if (i + 1 < chunk1_end)
            assert_int_equal(out.len, 0);
        if (i + 1 == chunk1_end)
            assert_int_equal(out.len, 65536);
    }
    assert_int_equal(strata_chunked_finish(c, &err), 0);
    assert_int_equal(out.len, 66560);
    assert_true(all_a(&out));
    strata_chunked_destroy(c);
    free(out.buf);
    free(b.p);
}

static void test_tampered_chunk_signature(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    char bad[65];
    memcpy(bad, SIG2, 65);
    bad[10] = bad[10] == '0' ? '1' : '0';
    struct body b = example_body(SIG1, bad, SIG3, "\r\n");
    struct sink out = {0};
    enum strata_auth_err err;
    assert_int_equal(run(&auth, &b, 4096, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_BAD_SIGNATURE);
    assert_int_equal(out.len, 65536); /* chunk 1 verified; chunk 2 withheld */
    free(out.buf);
    free(b.p);

    /* chunks are chained: a valid signature in the wrong place fails too */
    b = example_body(SIG2, SIG1, SIG3, "\r\n");
    out = (struct sink){0};
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_BAD_SIGNATURE);
    assert_int_equal(out.len, 0);
    free(out.buf);
    free(b.p);

    /* the final 0-size chunk is signed as well */
    memcpy(bad, SIG3, 65);
    bad[63] = bad[63] == 'f' ? 'e' : 'f';
    b = example_body(SIG1, SIG2, bad, "\r\n");
    out = (struct sink){0};
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_BAD_SIGNATURE);
    free(out.buf);
    free(b.p);
}

static void test_tampered_chunk_data(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    b.p[22 + 64 + 2 + 65536 + 2 + 20 + 64 + 2 + 100] = 'b'; /* inside chunk 2 */
    struct sink out = {0};
    enum strata_auth_err err;
    assert_int_equal(run(&auth, &b, 1000, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_BAD_SIGNATURE);
    assert_int_equal(out.len, 65536);
    assert_true(all_a(&out));
    free(out.buf);
    free(b.p);
}

static void test_truncated(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    size_t cuts[] = {0, 5, 22 + 64 + 1, 22 + 64 + 2 + 100, 22 + 64 + 2 + 65536 + 1, b.len - 1,
                     b.len - 2, b.len - 40};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        struct body t = {b.p, cuts[i]};
        struct sink out = {0};
        enum strata_auth_err err;
        int rc = run(&auth, &t, 7, &out, &err, NULL);
        if (rc != -1 || err != STRATA_AUTH_INCOMPLETE_BODY)
            fail_msg("cut at %zu: rc %d err %d", cuts[i], rc, (int)err);
        free(out.buf);
    }
    free(b.p);
}

static void test_bad_framing(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    static const char *const bad[] = {
        "zz;chunk-signature=" SIG1 "\r\n",                 /* not hex */
        "10000;chunk-signature=" SIG1 "\n",                /* bare LF */
        "10000;chunk-sig=" SIG1 "\r\n",                    /* wrong extension */
        "10000\r\n",                                       /* signed mode without signature */
        "10000;chunk-signature=abc\r\n",                   /* short signature */
        "1000001;chunk-signature=" SIG1 "\r\n",            /* over the 16 MiB chunk bound */
        "fffffffffffffffff;chunk-signature=" SIG1 "\r\n",  /* overflow */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct body b = {0};
        body_puts(&b, bad[i]);
        struct sink out = {0};
        enum strata_auth_err err = STRATA_AUTH_OK;
        int rc = run(&auth, &b, 0, &out, &err, NULL);
        if (rc != -1 || (err != STRATA_AUTH_INCOMPLETE_BODY && err != STRATA_AUTH_BAD_CHUNK))
            fail_msg("case %zu: rc %d err %d", i, rc, (int)err);
        assert_int_equal(out.len, 0);
        free(b.p);
    }
    /* data not followed by CRLF */
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    b.p[22 + 64 + 2 + 65536] = 'x';
    struct sink out = {0};
    enum strata_auth_err err;
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_INCOMPLETE_BODY);
    free(out.buf);
    free(b.p);
    /* bytes after the end */
    b = example_body(SIG1, SIG2, SIG3, "\r\nextra");
    out = (struct sink){0};
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_BAD_CHUNK);
    free(out.buf);
    free(b.p);
}

static void test_decoded_length_mismatch(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    struct sink out = {0};
    enum strata_auth_err err;
    auth.decoded_length = 66561; /* announced more than sent */
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_INCOMPLETE_BODY);
    free(out.buf);
    out = (struct sink){0};
    auth.decoded_length = 1000; /* less: refused before chunk 1 is buffered */
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_INCOMPLETE_BODY);
    assert_int_equal(out.len, 0);
    free(out.buf);
    free(b.p);
}

static void test_callback_stops(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    struct sink out = {.stop_after = 1};
    enum strata_auth_err err = STRATA_AUTH_INTERNAL;
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_OK);
    assert_int_equal(out.calls, 1);
    free(out.buf);
    free(b.p);
}

static void test_aws_example_signed_trailer(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(true, &auth);
    /* AWS's page shows the trailer right after the 0-size chunk; some SDKs
     * put an empty line first, and some omit the closing CRLF. */
    static const char *const tails[] = {
        "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:" TRSIG "\r\n\r\n",
        "\r\nx-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:" TRSIG "\r\n\r\n",
        "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:" TRSIG "\r\n",
    };
    for (size_t i = 0; i < 3; i++) {
        for (size_t step = 0; step <= 1; step++) {
            struct body b = example_body(TSIG1, TSIG2, TSIG3, tails[i]);
            struct sink out = {0};
            enum strata_auth_err err;
            struct strata_chunked *c;
            int rc = run(&auth, &b, step, &out, &err, &c);
            if (rc != 0)
                fail_msg("tail %zu step %zu: err %d", i, step, (int)err);
            assert_int_equal(out.len, 66560);
            assert_true(all_a(&out));
            assert_string_equal(strata_chunked_trailer(c, "x-amz-checksum-crc32c"), "sOO8/Q==");
            assert_string_equal(strata_chunked_trailer(c, "X-Amz-Checksum-CRC32C"), "sOO8/Q==");
            assert_null(strata_chunked_trailer(c, "x-amz-checksum-crc32"));
            strata_chunked_destroy(c);
            free(out.buf);
            free(b.p);
        }
    }
    /* a changed checksum no longer matches the trailer signature */
    struct body b = example_body(TSIG1, TSIG2, TSIG3,
                                 "x-amz-checksum-crc32c:sOO8/R==\r\nx-amz-trailer-signature:" TRSIG
                                 "\r\n\r\n");
    struct sink out = {0};
    enum strata_auth_err err;
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_BAD_SIGNATURE);
    free(out.buf);
    free(b.p);
    /* the trailer signature is required in this mode */
    b = example_body(TSIG1, TSIG2, TSIG3, "x-amz-checksum-crc32c:sOO8/Q==\r\n\r\n");
    out = (struct sink){0};
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_not_equal(err, STRATA_AUTH_OK);
    free(out.buf);
    free(b.p);
    /* so is the announced trailer */
    b = example_body(TSIG1, TSIG2, TSIG3, "\r\n");
    out = (struct sink){0};
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_not_equal(err, STRATA_AUTH_OK);
    free(out.buf);
    free(b.p);
}

/* STREAMING-UNSIGNED-PAYLOAD-TRAILER, as aws-cli v2 sends it: plain sizes,
 * no signatures, a CRC32 trailer ("hello" -> 0x3610a686 -> "NhCmhg=="). */
static void test_unsigned_trailer(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "127.0.0.1"},
        {"x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
        {"x-amz-decoded-content-length", "11"},
        {"x-amz-trailer", "x-amz-checksum-crc32"},
    };
    struct strata_auth_req r = {"PUT", "/b/k", NULL, h, 4, T20130524, NULL, 0, "us-east-1"};
    struct strata_auth_result auth;
    assert_int_equal(strata_auth_verify(g_creds, &r, &auth), STRATA_AUTH_OK);
    assert_true(auth.anonymous);
    assert_int_equal(auth.payload_mode, STRATA_PAYLOAD_STREAMING_UNSIGNED_TRAILER);
    struct body b = {0};
    body_puts(&b, "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n");
    for (size_t step = 0; step <= 1; step++) {
        struct sink out = {0};
        enum strata_auth_err err;
        struct strata_chunked *c;
        assert_int_equal(run(&auth, &b, step, &out, &err, &c), 0);
        assert_int_equal(out.len, 11);
        assert_memory_equal(out.buf, "hello world", 11);
        assert_string_equal(strata_chunked_trailer(c, "x-amz-checksum-crc32"), "NhCmhg==");
        assert_int_equal(strata_chunked_decoded_bytes(c), 11);
        strata_chunked_destroy(c);
        free(out.buf);
    }
    /* a trailer signature line has no place here */
    free(b.p);
    b = (struct body){0};
    body_puts(&b, "5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n"
                  "x-amz-trailer-signature:" TRSIG "\r\n\r\n");
    struct sink out = {0};
    enum strata_auth_err err;
    assert_int_equal(run(&auth, &b, 0, &out, &err, NULL), -1);
    assert_int_equal(err, STRATA_AUTH_BAD_CHUNK);
    free(out.buf);
    free(b.p);
    /* non-streaming modes have no decoder */
    struct strata_chunked *c;
    auth.payload_mode = STRATA_PAYLOAD_SIGNED;
    assert_int_not_equal(strata_chunked_create(&auth, &c), 0);
}

/* The daemon-wide body budget: a signed chunk is charged while buffered
 * (65536 bytes for the example's first chunk), the sum over decoders is
 * bounded, a chunk over what is left fails with SlowDown, and destroy gives
 * everything back. */
static void test_budget(void **state)
{
    (void)state;
    struct strata_auth_result auth;
    auth_for(false, &auth);
    struct body b = example_body(SIG1, SIG2, SIG3, "\r\n");
    struct strata_body_budget budget = {.max = 100000};
    struct strata_chunked *c1, *c2;
    assert_int_equal(strata_chunked_create(&auth, &c1), 0);
    assert_int_equal(strata_chunked_create(&auth, &c2), 0);
    strata_chunked_set_budget(c1, &budget);
    strata_chunked_set_budget(c2, &budget);
    struct sink out1 = {0}, out2 = {0};
    enum strata_auth_err err;
    /* c1 holds its 64 KiB chunk (header and some data fed, not verified) */
    assert_int_equal(strata_chunked_feed(c1, b.p, 200, sink_cb, &out1, &err), 0);
    assert_int_equal(atomic_load(&budget.used), 65536);
    /* c2 cannot buffer another 64 KiB within 100000 bytes */
    assert_int_equal(strata_chunked_feed(c2, b.p, 200, sink_cb, &out2, &err), -1);
    assert_int_equal(err, STRATA_AUTH_OVER_BUDGET);
    assert_int_equal(atomic_load(&budget.used), 65536);
    strata_chunked_destroy(c2);
    /* c1 finishes within what it holds (the 1 KiB chunk reuses the buffer) */
    assert_int_equal(strata_chunked_feed(c1, b.p + 200, b.len - 200, sink_cb, &out1, &err), 0);
    assert_int_equal(strata_chunked_finish(c1, &err), 0);
    assert_int_equal(out1.len, 66560);
    assert_int_equal(atomic_load(&budget.used), 65536);
    strata_chunked_destroy(c1);
    assert_int_equal(atomic_load(&budget.used), 0);
    /* with the first decoder gone, the same body fits */
    struct sink out3 = {0};
    assert_int_equal(strata_chunked_create(&auth, &c2), 0);
    strata_chunked_set_budget(c2, &budget);
    assert_int_equal(strata_chunked_feed(c2, b.p, b.len, sink_cb, &out3, &err), 0);
    assert_int_equal(strata_chunked_finish(c2, &err), 0);
    strata_chunked_destroy(c2);
    assert_int_equal(atomic_load(&budget.used), 0);
    /* the counter itself: up to max exactly, then full */
    assert_true(strata_body_budget_take(&budget, 100000));
    assert_false(strata_body_budget_take(&budget, 1));
    assert_true(strata_body_budget_full(&budget));
    strata_body_budget_give(&budget, 100000);
    free(out1.buf);
    free(out2.buf);
    free(out3.buf);
    free(b.p);
}

static int setup(void **state)
{
    (void)state;
    return strata_creds_load(AKID, SECRET, NULL, &g_creds, NULL, 0);
}

static int teardown(void **state)
{
    (void)state;
    strata_creds_destroy(g_creds);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_example_whole),
        cmocka_unit_test(test_aws_example_byte_at_a_time),
        cmocka_unit_test(test_tampered_chunk_signature),
        cmocka_unit_test(test_tampered_chunk_data),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_framing),
        cmocka_unit_test(test_decoded_length_mismatch),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_aws_example_signed_trailer),
        cmocka_unit_test(test_unsigned_trailer),
        cmocka_unit_test(test_budget),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
