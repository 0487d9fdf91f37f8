/*
 * test_creds.c - the credential table: root plus a users file (comments,
 * blank lines, display names with spaces), lookup, and the load errors
 * (duplicate key, short line, oversize field, missing file).
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

#include "auth.h"
#include "strata/err.h"

static char g_path[512];

static const char *write_file(const char *text)
{
    const char *dir = getenv("STRATA_TEST_TMPDIR");
    snprintf(g_path, sizeof(g_path), "%s/creds-%d.txt", dir && *dir ? dir : "/tmp", (int)getpid());
    FILE *f = fopen(g_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return g_path;
}

static void test_load_and_find(void **state)
{
    (void)state;
    const char *p = write_file("# users\n"
                               "\n"
                               "ALICEKEY alicesecret Alice Liddell  \n"
                               "  BOBKEY\tbobsecret\r\n"
                               "CAROLKEY carol/secret+x # not a comment: part of the name\n");
    struct strata_creds *c = NULL;
    char err[256] = "";
    assert_int_equal(strata_creds_load("ROOTKEY", "rootsecret", p, &c, err, sizeof(err)), 0);
    const struct strata_cred *u = strata_creds_find(c, "ROOTKEY");
    assert_non_null(u);
    assert_string_equal(u->secret, "rootsecret");
    u = strata_creds_find(c, "ALICEKEY");
    assert_non_null(u);
    assert_string_equal(u->secret, "alicesecret");
    assert_string_equal(u->display_name, "Alice Liddell");
    u = strata_creds_find(c, "BOBKEY");
    assert_non_null(u);
    assert_string_equal(u->secret, "bobsecret");
    assert_string_equal(u->display_name, "BOBKEY"); /* no name: the key */
    u = strata_creds_find(c, "CAROLKEY");
    assert_non_null(u);
    assert_string_equal(u->secret, "carol/secret+x");
    assert_null(strata_creds_find(c, "ALICEKE"));
    assert_null(strata_creds_find(c, "alicekey")); /* keys are case-sensitive */
    assert_null(strata_creds_find(c, ""));
    strata_creds_destroy(c);
    unlink(p);
}

/* An optional "<address>" after the name is the user's e-mail address
 * (ACL grants by emailAddress=); without '@' it stays part of the name. */
static void test_email(void **state)
{
    (void)state;
    const char *p = write_file("ALICEKEY s1 Alice Liddell <alice@example.com>\n"
                               "BOBKEY s2 <Bob@Example.com>\n"
                               "CAROLKEY s3 Carol <not an address>\n");
    struct strata_creds *c = NULL;
    char err[256] = "";
    assert_int_equal(strata_creds_load("ROOTKEY", "rootsecret", p, &c, err, sizeof(err)), 0);
    const struct strata_cred *u = strata_creds_find(c, "ALICEKEY");
    assert_string_equal(u->display_name, "Alice Liddell");
    assert_string_equal(u->email, "alice@example.com");
    u = strata_creds_find(c, "BOBKEY");
    assert_string_equal(u->display_name, "BOBKEY");
    assert_string_equal(u->email, "Bob@Example.com");
    u = strata_creds_find(c, "CAROLKEY");
    assert_string_equal(u->display_name, "Carol <not an address>");
    assert_string_equal(u->email, "");
    assert_string_equal(strata_creds_find_email(c, "bob@example.COM")->access_key, "BOBKEY");
    assert_string_equal(strata_creds_find_email(c, "alice@example.com")->access_key, "ALICEKEY");
    assert_null(strata_creds_find_email(c, "carol@example.com"));
    assert_null(strata_creds_find_email(c, ""));
    strata_creds_destroy(c);
    unlink(p);
}

static void test_root_only(void **state)
{
    (void)state;
    struct strata_creds *c = NULL;
    assert_int_equal(strata_creds_load("ROOTKEY", "rootsecret", NULL, &c, NULL, 0), 0);
    assert_non_null(strata_creds_find(c, "ROOTKEY"));
    assert_null(strata_creds_find(c, "OTHER"));
    strata_creds_destroy(c);
    strata_creds_destroy(NULL);
}

static void test_load_errors(void **state)
{
    (void)state;
    struct strata_creds *c = (struct strata_creds *)0x1;
    char err[256];
    const char *p = write_file("A a\nB b\nA c\n");
    assert_int_equal(strata_creds_load("ROOT", "r", p, &c, err, sizeof(err)), STRATA_EEXISTS);
    assert_null(c);
    assert_non_null(strstr(err, "duplicate"));

    p = write_file("ROOT x\n"); /* the root key again */
    assert_int_equal(strata_creds_load("ROOT", "r", p, &c, err, sizeof(err)), STRATA_EEXISTS);

    p = write_file("# ok\nLONELYKEY\n");
    assert_int_equal(strata_creds_load("ROOT", "r", p, &c, err, sizeof(err)), STRATA_EINVAL);
    assert_non_null(strstr(err, ":2:"));

    char big[300];
    memset(big, 'k', 200);
    strcpy(big + 200, " secret\n");
    p = write_file(big);
    assert_int_equal(strata_creds_load("ROOT", "r", p, &c, err, sizeof(err)), STRATA_EINVAL);
    unlink(p);

    assert_int_equal(strata_creds_load("ROOT", "r", "/nonexistent/creds", &c, err, sizeof(err)),
                     STRATA_ENOTFOUND);
    assert_non_null(strstr(err, "/nonexistent/creds"));
    assert_int_equal(strata_creds_load("", "r", NULL, &c, err, sizeof(err)), STRATA_EINVAL);
    assert_int_equal(strata_creds_load(NULL, "r", NULL, &c, err, sizeof(err)), STRATA_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_and_find),
        cmocka_unit_test(test_email),
        cmocka_unit_test(test_root_only),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
