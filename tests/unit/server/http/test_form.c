/*
 * test_form.c - multipart/form-data bodies (server/http/form.c) as POST
 * Object reads them: the request arrives over loopback (loopback.h), its
 * body is fed to the parser in small pieces, and the answer lists what the
 * callback saw (name, file name, value reassembled from its pieces) and
 * whether the form ended where the body did.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "form.h"
#include "request.h"
#include "server/loopback.h"

#define PIECE 7 /* bytes per feed: fields straddle feeds */

static struct strata_http g_http;

struct seen {
    struct strata_sbuf out;
    char last[64]; /* the field the previous piece belonged to */
};

/* "name[filename]=" once per field, then its bytes; a field named "stop"
 * stops the parse. */
static int on_piece(void *cls, const char *name, const char *filename, const char *data,
                    uint64_t off, size_t size)
{
    struct seen *s = cls;
    if (strcmp(name, "stop") == 0)
        return 1;
    if (off == 0 && strcmp(s->last, name) != 0) {
        strata_sbuf_printf(&s->out, "%s%s[%s]=", s->out.len ? ";" : "", name,
                           filename ? filename : "");
        snprintf(s->last, sizeof(s->last), "%s", name);
    }
    strata_sbuf_append(&s->out, data, size);
    return 0;
}

static void answer(struct strata_req *r)
{
    struct seen s = {.last = ""};
    strata_sbuf_init(&s.out, 1u << 16);
    struct strata_form *f = strata_form_create(r, 1024, on_piece, &s);
    if (!f) {
        strata_sbuf_fini(&s.out);
        strata_req_send_body(r, 400, "text/plain", strdup("no form"), 7);
        return;
    }
    int rc = 0;
    for (size_t off = 0; rc == 0 && off < r->body.len; off += PIECE) {
        size_t n = r->body.len - off < PIECE ? r->body.len - off : PIECE;
        rc = strata_form_feed(f, r->body.data + off, n);
    }
    bool complete = strata_form_destroy(f);
    strata_sbuf_printf(&s.out, "|feed=%d|complete=%d", rc, complete);
    size_t len;
    char *body = strata_sbuf_steal(&s.out, &len);
    strata_sbuf_fini(&s.out);
    strata_req_send_body(r, 200, "text/plain", body, len);
}

static const char *const multipart[] = {"Content-Type: multipart/form-data; boundary=XyZ", NULL};

#define FIELD(name, value)                                                                         \
    "--XyZ\r\nContent-Disposition: form-data; name=\"" name "\"\r\n\r\n" value "\r\n"

static void post(const char *const *hdrs, const char *body, struct lb_reply *rp)
{
    lb_fetch_with("POST", "/form", hdrs, body, rp);
}

static void test_fields_and_file(void **state)
{
    (void)state;
    struct lb_reply rp;
    post(multipart,
         FIELD("key", "photos/a b.jpg") FIELD(
             "x-amz-meta-long",
             "a value longer than one piece of seven bytes") "--XyZ\r\nContent-Disposition: "
                                                             "form-data; name=\"file\"; "
                                                             "filename=\"a.txt\"\r\n"
                                                             "Content-Type: text/plain\r\n\r\nline "
                                                             "one\r\nline two --X\r\n--XyZ--\r\n",
         &rp);
    assert_int_equal(rp.status, 200);
    assert_string_equal((const char *)rp.body,
                        "key[]=photos/a b.jpg;"
                        "x-amz-meta-long[]=a value longer than one piece of seven bytes;"
                        "file[a.txt]=line one\r\nline two --X|feed=0|complete=1");
    lb_reply_free(&rp);
}

/* A body cut before the closing boundary is not a complete form. */
static void test_truncated(void **state)
{
    (void)state;
    struct lb_reply rp;
    post(multipart, FIELD("key", "k") "--XyZ\r\nContent-Disposition: form-data; name=\"file\"",
         &rp);
    assert_int_equal(rp.status, 200);
    assert_non_null(strstr((const char *)rp.body, "key[]=k"));
    assert_non_null(strstr((const char *)rp.body, "|complete=0"));
    lb_reply_free(&rp);
}

/* The callback's non-zero stops the parse: the feed fails. */
static void test_callback_stops(void **state)
{
    (void)state;
    struct lb_reply rp;
    post(multipart, FIELD("key", "k") FIELD("stop", "now") FIELD("after", "never") "--XyZ--\r\n",
         &rp);
    assert_int_equal(rp.status, 200);
    assert_non_null(strstr((const char *)rp.body, "key[]=k|feed=-1|"));
    assert_null(strstr((const char *)rp.body, "after"));
    lb_reply_free(&rp);
}

/* No multipart Content-Type, or no boundary: no parser. */
static void test_no_boundary(void **state)
{
    (void)state;
    static const char *const plain[] = {"Content-Type: text/plain", NULL};
    static const char *const noboundary[] = {"Content-Type: multipart/form-data", NULL};
    struct lb_reply rp;
    post(plain, "key=k", &rp);
    assert_int_equal(rp.status, 400);
    assert_string_equal((const char *)rp.body, "no form");
    lb_reply_free(&rp);
    post(noboundary, FIELD("key", "k") "--XyZ--\r\n", &rp);
    assert_int_equal(rp.status, 400);
    lb_reply_free(&rp);
}

static int setup(void **state)
{
    (void)state;
    return lb_start(&g_http, answer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_and_file),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_no_boundary),
    };
    return cmocka_run_group_tests(tests, setup, lb_teardown);
}
