/*
 * test_response.c - the response API handlers answer with
 * (server/http/response.h), on the wire: a libmicrohttpd daemon on
 * loopback answers each request through one of the API's calls and
 * libcurl reads status, header lines (in order) and body bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <microhttpd.h>

#include "request.h"
#include "server/loopback.h"

#define STREAM_LEN 100000u

static struct strata_http g_http;
static atomic_int g_borrow_done;  /* the borrowed body's release ran */
static atomic_int g_stream_reads; /* stream_read calls */

static const char borrowed[] = "bytes held by the caller";

static void borrow_done(void *cls)
{
    atomic_fetch_add((atomic_int *)cls, 1);
}

static uint8_t pattern(uint64_t off)
{
    return (uint8_t)(off * 7 + off / 251);
}

static int stream_read(struct strata_req *r, uint64_t off, void *buf, size_t len)
{
    (void)r;
    atomic_fetch_add(&g_stream_reads, 1);
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)buf)[i] = pattern(off + i);
    return 0;
}

static void sbuf_of(struct strata_sbuf *b, const char *s)
{
    strata_sbuf_init(b, 4096);
    strata_sbuf_puts(b, s);
}

/* The layer above as the transport calls it for an error: an r->admin
 * request's error goes to the pipeline's admin_error, which answers
 * {"Code": ...} in JSON as the admin API does; S3 errors keep their code. */
static void test_admin_error(struct strata_req *r, enum s3_err e, int err)
{
    (void)err;
    char body[128];
    int n = snprintf(body, sizeof(body), "{\"Code\": \"%s\"}\n", strata_s3_err_code(e));
    strata_req_send_body(r, strata_s3_err_status(e), "application/json", strndup(body, (size_t)n),
                         (size_t)n);
}

static enum s3_err test_missing_key(struct strata_req *r, enum s3_err e)
{
    (void)r;
    return e;
}

static const struct strata_pipeline test_pipeline = {
    .admin_error = test_admin_error,
    .authz_missing_key = test_missing_key,
};

/* One request answered through the API, chosen by its path. */
static void answer(struct strata_req *r)
{
    const char *url = r->raw_path;
    struct strata_sbuf b;
    if (strcmp(url, "/empty-hdr") == 0) {
        strata_req_send_empty_hdr(r, 204, "x-amz-version-id", "v1");
    } else if (strcmp(url, "/empty-nohdr") == 0) {
        strata_req_send_empty_hdr(r, 200, "x-amz-version-id", "");
    } else if (strcmp(url, "/xml") == 0) {
        sbuf_of(&b, "<A>1</A>");
        strata_req_send_xml_hdr(r, 200, &b, "x-amz-version-id", "v2");
    } else if (strcmp(url, "/xml-failed") == 0) {
        strata_sbuf_init(&b, 4);
        strata_sbuf_puts(&b, "longer than four bytes");
        r->admin = true; /* the error is the admin API's JSON: no S3 context needed */
        strata_req_send_xml(r, 200, &b);
    } else if (strcmp(url, "/json") == 0) {
        strata_req_send_body(r, 201, "application/json", strdup("{\"k\": 1}\n"), 9);
    } else if (strcmp(url, "/order") == 0) {
        sbuf_of(&b, "<B/>");
        struct strata_resp *resp = strata_req_xml_response(r, &b);
        strata_resp_hdr(resp, "x-test-c", "3");
        strata_resp_hdr(resp, "x-test-a", "1");
        strata_resp_hdr(resp, "x-test-b", "2");
        strata_req_send(r, 206, resp);
    } else if (strcmp(url, "/borrow") == 0) {
        struct strata_resp *resp =
            strata_resp_borrow(borrowed, strlen(borrowed), borrow_done, &g_borrow_done);
        strata_resp_hdr(resp, "Content-Type", "text/plain");
        strata_req_send(r, 200, resp);
    } else if (strcmp(url, "/take") == 0) {
        char *body = malloc(5);
        memcpy(body, "taken", 5);
        strata_req_send(r, 200, strata_resp_take(body, 5));
    } else if (strcmp(url, "/stream") == 0) {
        r->stream_read = stream_read;
        strata_req_send(r, 200, strata_req_stream_response(r, STREAM_LEN, 4096));
    } else {
        strata_req_send_empty(r, 404);
    }
}

/* The headers every answer carries, after the handler's own. */
static void assert_common(const struct lb_reply *rp)
{
    char v[256];
    assert_non_null(lb_hdr(rp, "x-amz-request-id", v, sizeof(v)));
    assert_string_equal(v, "0123456789ABCDEF");
    assert_non_null(lb_hdr(rp, "x-amz-id-2", v, sizeof(v)));
    assert_string_equal(v, "test-host-id");
    assert_non_null(lb_hdr(rp, "Server", v, sizeof(v)));
    assert_string_equal(v, "Strata");
    if (lb_hdr(rp, "Connection", v, sizeof(v)))
        assert_string_not_equal(v, "close");
}

static void test_empty_with_header(void **state)
{
    (void)state;
    struct lb_reply rp;
    char v[64];
    lb_fetch("GET", "/empty-hdr", &rp);
    assert_int_equal(rp.status, 204);
    assert_int_equal(rp.len, 0);
    assert_non_null(lb_hdr(&rp, "x-amz-version-id", v, sizeof(v)));
    assert_string_equal(v, "v1");
    assert_common(&rp);
    lb_reply_free(&rp);

    lb_fetch("GET", "/empty-nohdr", &rp);
    assert_int_equal(rp.status, 200);
    assert_int_equal(rp.len, 0);
    assert_null(lb_hdr(&rp, "x-amz-version-id", v, sizeof(v)));
    assert_non_null(lb_hdr(&rp, "Content-Length", v, sizeof(v)));
    assert_string_equal(v, "0");
    assert_common(&rp);
    lb_reply_free(&rp);
}

static void test_xml(void **state)
{
    (void)state;
    struct lb_reply rp;
    char v[64];
    lb_fetch("GET", "/xml", &rp);
    assert_int_equal(rp.status, 200);
    assert_int_equal(rp.len, 8);
    assert_memory_equal(rp.body, "<A>1</A>", 8);
    assert_non_null(lb_hdr(&rp, "Content-Type", v, sizeof(v)));
    assert_string_equal(v, "application/xml");
    assert_non_null(lb_hdr(&rp, "x-amz-version-id", v, sizeof(v)));
    assert_string_equal(v, "v2");
    assert_int_equal(atomic_load(&lb.bytes_out), 8);
    assert_common(&rp);
    lb_reply_free(&rp);
}

/* An XML document that did not fit its buffer is never sent truncated. */
static void test_xml_failed_is_500(void **state)
{
    (void)state;
    struct lb_reply rp;
    char v[64];
    lb_fetch("GET", "/xml-failed", &rp);
    assert_int_equal(rp.status, 500);
    assert_non_null(lb_hdr(&rp, "Content-Type", v, sizeof(v)));
    assert_string_equal(v, "application/json");
    assert_non_null(strstr((const char *)rp.body, "\"Code\": \"InternalError\""));
    assert_null(strstr((const char *)rp.body, "longer"));
    lb_reply_free(&rp);
}

static void test_json_body(void **state)
{
    (void)state;
    struct lb_reply rp;
    char v[64];
    lb_fetch("GET", "/json", &rp);
    assert_int_equal(rp.status, 201);
    assert_int_equal(rp.len, 9);
    assert_memory_equal(rp.body, "{\"k\": 1}\n", 9);
    assert_non_null(lb_hdr(&rp, "Content-Type", v, sizeof(v)));
    assert_string_equal(v, "application/json");
    assert_int_equal(atomic_load(&lb.bytes_out), 9);
    lb_reply_free(&rp);
}

/* Handler headers go out in the order added, before the transport's. */
static void test_header_order(void **state)
{
    (void)state;
    struct lb_reply rp;
    lb_fetch("GET", "/order", &rp);
    assert_int_equal(rp.status, 206);
    const char *c = strstr(rp.hdrs, "x-test-c: 3\r\n");
    const char *a = strstr(rp.hdrs, "x-test-a: 1\r\n");
    const char *b = strstr(rp.hdrs, "x-test-b: 2\r\n");
    const char *id = strstr(rp.hdrs, "x-amz-request-id:");
    assert_non_null(c);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(id);
    assert_true(c < a && a < b && b < id);
    lb_reply_free(&rp);
}

static void test_borrow_and_take(void **state)
{
    (void)state;
    struct lb_reply rp;
    atomic_store(&g_borrow_done, 0);
    lb_fetch("GET", "/borrow", &rp);
    assert_int_equal(rp.status, 200);
    assert_int_equal(rp.len, strlen(borrowed));
    assert_memory_equal(rp.body, borrowed, strlen(borrowed));
    lb_reply_free(&rp);
    /* Released once libmicrohttpd is done with the response. */
    lb_wait_for(&g_borrow_done, 1);
    assert_int_equal(atomic_load(&g_borrow_done), 1);

    lb_fetch("GET", "/take", &rp);
    assert_int_equal(rp.status, 200);
    assert_int_equal(rp.len, 5);
    assert_memory_equal(rp.body, "taken", 5);
    lb_reply_free(&rp);
}

/* A streamed body: every byte in order; HEAD gets the length, no body and
 * no read. */
static void test_stream_and_head(void **state)
{
    (void)state;
    struct lb_reply rp;
    char v[64];
    atomic_store(&g_stream_reads, 0);
    lb_fetch("GET", "/stream", &rp);
    assert_int_equal(rp.status, 200);
    assert_int_equal(rp.len, STREAM_LEN);
    for (size_t i = 0; i < STREAM_LEN; i++)
        if (rp.body[i] != pattern(i))
            fail_msg("byte %zu: %u, not %u", i, rp.body[i], pattern(i));
    assert_true(atomic_load(&g_stream_reads) >= (int)(STREAM_LEN / 4096));
    assert_int_equal(atomic_load(&lb.bytes_out), STREAM_LEN);
    lb_reply_free(&rp);

    atomic_store(&g_stream_reads, 0);
    lb_fetch("HEAD", "/stream", &rp);
    assert_int_equal(rp.status, 200);
    assert_int_equal(rp.len, 0);
    assert_non_null(lb_hdr(&rp, "Content-Length", v, sizeof(v)));
    assert_string_equal(v, "100000");
    assert_int_equal(atomic_load(&g_stream_reads), 0);
    assert_common(&rp);
    lb_reply_free(&rp);
}

static int setup(void **state)
{
    (void)state;
    g_http.pipe = &test_pipeline; /* the JSON errors of r->admin requests */
    return lb_start(&g_http, answer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_with_header), cmocka_unit_test(test_xml),
        cmocka_unit_test(test_xml_failed_is_500), cmocka_unit_test(test_json_body),
        cmocka_unit_test(test_header_order),      cmocka_unit_test(test_borrow_and_take),
        cmocka_unit_test(test_stream_and_head),
    };
    return cmocka_run_group_tests(tests, setup, lb_teardown);
}
