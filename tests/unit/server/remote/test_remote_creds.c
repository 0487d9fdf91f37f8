/*
 * test_remote_creds.c - --tier-credentials FILE (server/remote/remote_creds.c):
 * a good file with and without region, the mode and owner refusals (with
 * messages that say why), bad JSON, missing, empty and unknown fields,
 * duplicate names, and that lookups find only what the file names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "remote_creds.h"

static char dir[512];

static const char *write_file(const char *name, const char *text, mode_t mode)
{
    static char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("STRATA_TEST_TMPDIR");
    snprintf(dir, sizeof(dir), "%s/creds-XXXXXX", base ? base : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_good(void **state)
{
    (void)state;
    const char *p = write_file("good.json",
                               "{\"cold\": {\"access_key\": \"AK1\", \"secret_key\": \"SK/1+x\","
                               " \"region\": \"eu-west-3\"},"
                               " \"site2\": {\"access_key\": \"AK2\", \"secret_key\": \"SK2\"}}",
                               0600);
    struct strata_remote_creds cs;
    char err[256] = "";
    assert_int_equal(strata_remote_creds_load(p, &cs, err, sizeof(err)), 0);
    assert_int_equal(cs.n, 2);
    const struct strata_remote_cred *c = strata_remote_creds_find(&cs, "cold");
    assert_non_null(c);
    assert_string_equal(c->access_key, "AK1");
    assert_string_equal(c->secret_key, "SK/1+x");
    assert_string_equal(c->region, "eu-west-3");
    c = strata_remote_creds_find(&cs, "site2");
    assert_non_null(c);
    assert_string_equal(c->region, "us-east-1"); /* the default */
    assert_null(strata_remote_creds_find(&cs, "nope"));
    assert_null(strata_remote_creds_find(&cs, NULL));
    strata_remote_creds_fini(&cs);
    assert_int_equal(cs.n, 0);
    assert_null(cs.v);
    strata_remote_creds_fini(&cs); /* idempotent */
    p = write_file("ro.json", "{\"a\": {\"access_key\": \"k\", \"secret_key\": \"s\"}}", 0400);
    assert_int_equal(strata_remote_creds_load(p, &cs, err, sizeof(err)), 0);
    assert_int_equal(cs.n, 1);
    strata_remote_creds_fini(&cs);
}

static void refused(const char *name, const char *text, mode_t mode, const char *want)
{
    const char *p = write_file(name, text, mode);
    struct strata_remote_creds cs;
    char err[256] = "";
    assert_int_equal(strata_remote_creds_load(p, &cs, err, sizeof(err)), -1);
    assert_int_equal(cs.n, 0);
    assert_null(cs.v);
    if (!strstr(err, want))
        fail_msg("%s: message \"%s\" lacks \"%s\"", name, err, want);
}

static void test_refused(void **state)
{
    (void)state;
    const char *ok = "{\"a\": {\"access_key\": \"k\", \"secret_key\": \"s\"}}";
    refused("m644.json", ok, 0644, "mode 0644 lets others read the secret keys: refused");
    refused("m640.json", ok, 0640, "mode 0640");
    refused("m604.json", ok, 0604, "mode 0604");
    refused("json.json", "{\"a\": {", 0600, "line 1");
    refused("array.json", "[1]", 0600, "want a JSON object");
    refused("noak.json", "{\"a\": {\"secret_key\": \"s\"}}", 0600, "\"access_key\" must be");
    refused("nosk.json", "{\"a\": {\"access_key\": \"k\"}}", 0600, "\"secret_key\" must be");
    refused("empty.json", "{\"a\": {\"access_key\": \"\", \"secret_key\": \"s\"}}", 0600,
            "\"access_key\" must be");
    refused("num.json", "{\"a\": {\"access_key\": 5, \"secret_key\": \"s\"}}", 0600,
            "\"access_key\" must be");
    refused("unknown.json", "{\"a\": {\"access_key\": \"k\", \"secret_key\": \"s\", \"x\": 1}}",
            0600, "unknown field \"x\"");
    refused("dup.json", "{\"a\": {\"access_key\": \"k\", \"secret_key\": \"s\"}, \"a\": {}}", 0600,
            "duplicate");
    refused("notobj.json", "{\"a\": \"k\"}", 0600, "want a name");
    refused("nl.json", "{\"a\": {\"access_key\": \"k\\r\\nX: y\", \"secret_key\": \"s\"}}", 0600,
            "\"access_key\" must be");
    struct strata_remote_creds cs;
    char err[256] = "", path[600];
    snprintf(path, sizeof(path), "%s/absent.json", dir);
    assert_int_equal(strata_remote_creds_load(path, &cs, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(strata_remote_creds_load(dir, &cs, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a regular file"));
}

static void test_owner(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* only root can make a file another user owns */
    const char *p = write_file("owner.json", "{}", 0600);
    assert_int_equal(chown(p, 12345, (gid_t)-1), 0);
    struct strata_remote_creds cs;
    char err[256] = "";
    assert_int_equal(strata_remote_creds_load(p, &cs, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "owned by uid 12345, not by this daemon's user"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_owner),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
