/*
 * test_metrics_token.c - the /metrics bearer token (server/http/
 * metrics_token.c): which token files load, what they refuse with a
 * message, and which Authorization values match.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "request.h"
#include "strata/err.h"

#define TOK "0123456789abcdef0123456789abcdef" /* 32: the shortest allowed */

static char g_dir[256];
static char g_file[300];

static void put(const char *text)
{
    FILE *f = fopen(g_file, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_load(void **state)
{
    (void)state;
    char *t = NULL, err[512] = "";
    put(TOK "\nsecond line ignored\n");
    assert_int_equal(strata_metrics_token_load(g_file, &t, err, sizeof(err)), 0);
    assert_string_equal(t, TOK);
    strata_metrics_token_free(t);

    put(TOK "\r\n"); /* written on Windows */
    assert_int_equal(strata_metrics_token_load(g_file, &t, err, sizeof(err)), 0);
    assert_string_equal(t, TOK);
    strata_metrics_token_free(t);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "short\n",
        "0123456789abcdef 0123456789abcdef0\n", /* a space */
        "",
        /* 256 characters: one over the longest */
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = (char *)1, err[512] = "";
        put(bad[i]);
        assert_int_equal(strata_metrics_token_load(g_file, &t, err, sizeof(err)), STRATA_EINVAL);
        assert_null(t);
        assert_non_null(strstr(err, "printable characters"));
        assert_non_null(strstr(err, g_file));
    }
    char *t = NULL, err[512] = "";
    assert_int_equal(strata_metrics_token_load("/nonexistent/strata-token", &t, err, sizeof(err)),
                     STRATA_EIO);
    assert_null(t);
    assert_non_null(strstr(err, "/nonexistent/strata-token"));
}

static void test_bearer(void **state)
{
    (void)state;
    assert_true(strata_metrics_bearer_ok(TOK, "Bearer " TOK));
    assert_false(strata_metrics_bearer_ok(TOK, "Bearer " TOK "x"));
    assert_false(strata_metrics_bearer_ok(TOK, "Bearer 1123456789abcdef0123456789abcdef"));
    assert_false(strata_metrics_bearer_ok(TOK, "bearer " TOK));
    assert_false(strata_metrics_bearer_ok(TOK, "Basic " TOK));
    assert_false(strata_metrics_bearer_ok(TOK, "Bearer "));
    assert_false(strata_metrics_bearer_ok(TOK, NULL));
    assert_false(strata_metrics_bearer_ok(NULL, "Bearer " TOK)); /* no token configured */
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("STRATA_TEST_TMPDIR");
    snprintf(g_dir, sizeof(g_dir), "%s/strata-token-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_file, sizeof(g_file), "%s/token", g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(g_file);
    rmdir(g_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bearer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
