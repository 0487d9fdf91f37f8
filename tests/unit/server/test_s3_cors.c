/*
 * test_s3_cors.c - CORS configuration parsing and rule matching
 * (s3_xml.c, s3_cors.c): AWS's validation errors, the canonical form
 * parsing back to the same rules, one-wildcard origins and headers, the
 * first matching rule winning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "s3_cors.h"

#define CFG(rules) "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" rules \
                   "</CORSConfiguration>"

static const char doc[] = CFG(
    "<CORSRule><ID>web</ID><AllowedOrigin>https://*.example.com</AllowedOrigin>"
    "<AllowedOrigin>http://app.test</AllowedOrigin><AllowedMethod>PUT</AllowedMethod>"
    "<AllowedMethod>GET</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader>"
    "<AllowedHeader>Content-Type</AllowedHeader><ExposeHeader>ETag</ExposeHeader>"
    "<MaxAgeSeconds>300</MaxAgeSeconds></CORSRule>"
    "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
    "<AllowedMethod>HEAD</AllowedMethod></CORSRule>");

static enum s3_err parse(const char *s, struct strata_cors **c)
{
    const char *msg;
    return strata_xml_cors_parse(s, strlen(s), c, &msg);
}

static void test_wildcard(void **state)
{
    (void)state;
    assert_true(strata_cors_wildcard_match("*", "", false));
    assert_true(strata_cors_wildcard_match("https://*.example.com", "https://a.b.example.com",
                                           false));
    assert_false(strata_cors_wildcard_match("https://*.example.com", "https://example.com", false));
    assert_false(strata_cors_wildcard_match("http://app.test", "http://APP.test", false));
    assert_true(strata_cors_wildcard_match("x-amz-*", "X-Amz-Date", true));
    assert_true(strata_cors_wildcard_match("ab*ba", "aba", false) == false);
    assert_true(strata_cors_wildcard_match("ab*ba", "abba", false));
}

static void test_match(void **state)
{
    (void)state;
    struct strata_cors *c = NULL;
    assert_int_equal(parse(doc, &c), S3E_NONE);
    assert_int_equal(c->nrules, 2);
    const struct strata_cors_rule *r;
    r = strata_cors_match(c, "https://www.example.com", STRATA_CORS_PUT, "x-amz-date,Content-Type");
    assert_true(r == &c->rules[0]);
    assert_string_equal(r->id, "web");
    assert_int_equal(r->max_age_s, 300);
    /* a header no pattern covers: no rule (the second has no headers) */
    assert_null(strata_cors_match(c, "https://www.example.com", STRATA_CORS_PUT, "authorization"));
    /* first rule does not allow the origin: the second answers GET */
    r = strata_cors_match(c, "http://other.test", STRATA_CORS_GET, NULL);
    assert_true(r == &c->rules[1]);
    assert_int_equal(r->max_age_s, -1);
    assert_null(strata_cors_match(c, "http://other.test", STRATA_CORS_PUT, NULL));
    assert_null(strata_cors_match(c, "http://app.test", STRATA_CORS_DELETE, NULL));
    assert_null(strata_cors_match(NULL, "http://app.test", STRATA_CORS_GET, NULL));
    /* the canonical form parses back to the same rules */
    struct strata_sbuf b;
    strata_sbuf_init(&b, 1 << 16);
    strata_cors_format(&b, c);
    struct strata_cors *c2 = NULL;
    assert_int_equal(strata_xml_cors_parse(b.data, b.len, &c2, &(const char *){NULL}), S3E_NONE);
    assert_int_equal(c2->nrules, 2);
    assert_int_equal(c2->rules[0].methods, STRATA_CORS_GET | STRATA_CORS_PUT);
    assert_int_equal(c2->rules[0].nheaders, 2);
    assert_string_equal(c2->rules[0].origins[1], "http://app.test");
    assert_string_equal(c2->rules[0].expose[0], "ETag");
    strata_sbuf_fini(&b);
    strata_cors_free(c2);
    strata_cors_free(c);
}

static void test_errors(void **state)
{
    (void)state;
    struct strata_cors *c = NULL;
    assert_int_equal(parse(CFG(""), &c), S3E_MalformedXML);
    assert_int_equal(parse("<Other/>", &c), S3E_MalformedXML);
    assert_int_equal(parse(CFG("<CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"), &c),
                     S3E_MalformedXML);
    assert_int_equal(parse(CFG("<CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>"), &c),
                     S3E_MalformedXML);
    assert_int_equal(parse(CFG("<CORSRule><AllowedOrigin>*</AllowedOrigin>"
                               "<AllowedMethod>get</AllowedMethod></CORSRule>"), &c),
                     S3E_InvalidRequest);
    assert_int_equal(parse(CFG("<CORSRule><AllowedOrigin>**</AllowedOrigin>"
                               "<AllowedMethod>GET</AllowedMethod></CORSRule>"), &c),
                     S3E_InvalidRequest);
    assert_int_equal(parse(CFG("<CORSRule><AllowedOrigin>*</AllowedOrigin>"
                               "<AllowedMethod>GET</AllowedMethod>"
                               "<MaxAgeSeconds>-1</MaxAgeSeconds></CORSRule>"), &c),
                     S3E_MalformedXML);
    char big[16384] = CFG("");
    size_t used = strlen("<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    big[used] = '\0';
    for (int i = 0; i < 101; i++)
        strcat(big, "<CORSRule><AllowedOrigin>*</AllowedOrigin>"
                    "<AllowedMethod>GET</AllowedMethod></CORSRule>");
    strcat(big, "</CORSConfiguration>");
    assert_int_equal(parse(big, &c), S3E_MalformedXML);
    assert_null(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wildcard),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
