/*
 * test_auth_error_map.c - strata_s3_err_from_auth: every reason auth gives
 * for refusing a request becomes the S3 code and HTTP status AWS answers
 * for it (Amazon S3 API Reference, "Error responses", list of error codes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"
#include "s3_error.h"

static const struct {
    enum strata_auth_err in;
    const char *code;
    int status;
} want[] = {
    {STRATA_AUTH_BAD_SIGNATURE, "SignatureDoesNotMatch", 403},
    {STRATA_AUTH_UNKNOWN_KEY, "InvalidAccessKeyId", 403},
    {STRATA_AUTH_DISABLED_KEY, "InvalidAccessKeyId", 403},
    {STRATA_AUTH_CLOCK_SKEW, "RequestTimeTooSkewed", 403},
    {STRATA_AUTH_EXPIRED, "AccessDenied", 403},
    {STRATA_AUTH_NO_DATE, "AccessDenied", 403},
    {STRATA_AUTH_UNSIGNED_HEADER, "AccessDenied", 403},
    {STRATA_AUTH_DENIED, "AccessDenied", 403},
    {STRATA_AUTH_MALFORMED_HEADER, "AuthorizationHeaderMalformed", 400},
    {STRATA_AUTH_MALFORMED_QUERY, "AuthorizationQueryParametersError", 400},
    {STRATA_AUTH_BAD_ARGUMENT, "InvalidArgument", 400},
    {STRATA_AUTH_MISSING_CONTENT_SHA, "InvalidRequest", 400},
    {STRATA_AUTH_HEADERS_TOO_LARGE, "RequestHeaderSectionTooLarge", 400},
    {STRATA_AUTH_BAD_CHUNK, "InvalidRequest", 400},
    {STRATA_AUTH_INCOMPLETE_BODY, "IncompleteBody", 400},
    {STRATA_AUTH_OVER_BUDGET, "SlowDown", 503},
    {STRATA_AUTH_BAD_POLICY, "InvalidPolicyDocument", 400},
    {STRATA_AUTH_POLICY_VIOLATION, "AccessDenied", 403},
    {STRATA_AUTH_OWNER_ONLY, "MethodNotAllowed", 405},
    {STRATA_AUTH_STORE, "InternalError", 500}, /* callers holding the STRATA_E* code map it */
    {STRATA_AUTH_UNKNOWN_EMAIL, "UnresolvableGrantByEmailAddress", 400},
    {STRATA_AUTH_UNSUPPORTED, "NotImplemented", 501},
    {STRATA_AUTH_INTERNAL, "InternalError", 500},
};

static void test_ok_is_no_error(void **state)
{
    (void)state;
    assert_int_equal(strata_s3_err_from_auth(STRATA_AUTH_OK), S3E_NONE);
}

static void test_each_reason(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        enum s3_err e = strata_s3_err_from_auth(want[i].in);
        print_message("auth error %d\n", (int)want[i].in);
        assert_string_equal(strata_s3_err_code(e), want[i].code);
        assert_int_equal(strata_s3_err_status(e), want[i].status);
    }
}

/* The table above names every reason once: a reason added to auth.h
 * without a row here (and a decision in the mapping) fails. */
static void test_every_reason_listed(void **state)
{
    (void)state;
    assert_int_equal(sizeof(want) / sizeof(want[0]), STRATA_AUTH__COUNT - 1);
    for (int a = STRATA_AUTH_OK + 1; a < STRATA_AUTH__COUNT; a++) {
        int seen = 0;
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
            seen += want[i].in == (enum strata_auth_err)a;
        assert_int_equal(seen, 1);
    }
}

/* Out of range (a corrupted value) is never "no error". */
static void test_out_of_range(void **state)
{
    (void)state;
    assert_int_equal(strata_s3_err_from_auth(STRATA_AUTH__COUNT), S3E_InternalError);
    assert_int_equal(strata_s3_err_from_auth((enum strata_auth_err)999), S3E_InternalError);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_is_no_error),
        cmocka_unit_test(test_each_reason),
        cmocka_unit_test(test_every_reason_listed),
        cmocka_unit_test(test_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
