/*
 * test_options.c - the option table of "strata server" (server/options.c)
 * and what is derived from it: every row is complete and consistent
 * (help text, one flag, one config key, defaults within range), a bad
 * value of each type is refused with a message naming the flag and the
 * configuration is left as it was, --help lists every flag with its
 * defaults filled in, and a printed configuration read back as a config
 * file is the same configuration.
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
#include <getopt.h>

#include "options.h"
#include "srv_config.h"
#include "srv_tiers.h"

static struct strata_srv_config cfg;
static struct strata_srv_tiers tiers;
static struct strata_srv_opts opts;

static void fresh(void)
{
    memset(&cfg, 0, sizeof(cfg));
    strata_srv_tiers_fini(&tiers);
    strata_srv_tiers_init(&tiers);
    opts = (struct strata_srv_opts){.cfg = &cfg, .tiers = &tiers};
    char err[512];
    assert_int_equal(strata_srv_opts_defaults(&opts, err, sizeof(err)), 0);
}

static bool has_default(const struct strata_srv_opt *r)
{
    return r->type == STRATA_OPT_NUM || r->sdef;
}

static void rows_are_complete_and_consistent(void **state)
{
    (void)state;
    fresh();
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        const char *name = r->flag ? r->flag : r->key;
        assert_non_null(name);
        /* Every row says what it is for. */
        if (!r->help || !*r->help)
            fail_msg("row %s has no help text", name);
        if (strstr(r->help, "{default}") && !has_default(r))
            fail_msg("row %s shows a default it does not have", name);
        /* One row per flag (another usage form follows its row) and per key. */
        for (size_t j = 0; j < i; j++) {
            const struct strata_srv_opt *q = &strata_srv_opt_table[j];
            if (r->flag && q->flag && strcmp(r->flag, q->flag) == 0 &&
                r->type != STRATA_OPT_FORM)
                fail_msg("flag --%s in two rows", r->flag);
            if (r->key && q->key && strcmp(r->key, q->key) == 0)
                fail_msg("config key %s in two rows", r->key);
        }
        if (r->type == STRATA_OPT_FORM) {
            assert_true(i > 0);
            assert_string_equal(strata_srv_opt_table[i - 1].flag, r->flag);
            assert_null(r->key);
            continue;
        }
        /* Settings have a key; only actions are flag only. */
        if (!r->key && r->type != STRATA_OPT_ACTION)
            fail_msg("--%s has no config key", name);
        if (r->type == STRATA_OPT_ACTION && r->key)
            fail_msg("action %s has a config key", name);
        if ((r->type == STRATA_OPT_CUSTOM || r->type == STRATA_OPT_ACTION) && !r->parse)
            fail_msg("row %s has no parser", name);
        if (r->type == STRATA_OPT_LIST && !r->late && (!r->parse || !r->cap || !r->flag))
            fail_msg("list %s without a check, a capacity or a flag", name);
        if (r->type == STRATA_OPT_NUM) {
            assert_true(r->scale >= 1);
            assert_true(r->min <= r->max);
            if (!(r->null0 && r->def == 0) && (r->def < r->min || r->def > r->max))
                fail_msg("--%s default %lld outside [%lld, %lld]", name, r->def, r->min, r->max);
            /* What is stored is what is printed. */
            json_t *v = strata_srv_opt_json(r, &cfg);
            if (r->null0 && r->def == 0)
                assert_true(json_is_null(v));
            else
                assert_int_equal(json_integer_value(v), r->def);
            json_decref(v);
        }
        if (r->type == STRATA_OPT_STR && r->sdef) {
            json_t *v = strata_srv_opt_json(r, &cfg);
            assert_string_equal(json_string_value(v), r->sdef);
            json_decref(v);
        }
    }
}

/* The first line of err, and whether the value left cfg as it was. */
static void refused(const struct strata_srv_opt *r, const char *v, const char *want)
{
    fresh();
    struct strata_srv_config before = cfg;
    char err[512] = "";
    if (strata_srv_opt_set(&opts, r, v, err, sizeof(err)) != -1)
        fail_msg("--%s accepted \"%s\"", r->flag ? r->flag : r->key, v);
    if (!strstr(err, want))
        fail_msg("--%s \"%s\": \"%s\" does not say \"%s\"", r->flag ? r->flag : r->key, v, err,
                 want);
    assert_memory_equal(&before, &cfg, sizeof(cfg));
}

static void bad_value_of_each_type_is_refused(void **state)
{
    (void)state;
    int seen[STRATA_OPT_FORM + 1] = {0};
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        char want[128], big[64];
        snprintf(want, sizeof(want), "--%s ", r->flag ? r->flag : r->key);
        switch (r->type) {
        case STRATA_OPT_NUM:
            snprintf(want, sizeof(want), "--%s must", r->flag);
            for (const char *const *b = (const char *const[]){"abc", "12x", "", " 5", "+5",
                                                              "0x10", "1e3", NULL};
                 *b; b++)
                refused(r, *b, want);
            snprintf(big, sizeof(big), "%lld", r->max + 1);
            refused(r, big, want);
            refused(r, "99999999999999999999999", want);
            if (r->min > -1000) {
                snprintf(big, sizeof(big), "%lld", r->min - 1);
                refused(r, big, want);
            }
            break;
        case STRATA_OPT_STR:
            if (!r->valid)
                continue;
            refused(r, r->flag ? "" : STRATA_CONFIG_MASK, r->must);
            break;
        case STRATA_OPT_CUSTOM:
            refused(r, "no-such-value", strcmp(r->flag, "log-level") == 0 ? "unknown log level"
                                                                          : want);
            break;
        case STRATA_OPT_LIST:
            if (r->late)
                continue;
            /* No list value is a bare word: each wants NAME:... */
            refused(r, "bad word", strcmp(r->flag, "storage-class") == 0 ? "storage class"
                                   : strcmp(r->flag, "tier") == 0        ? "tier"
                                                                         : r->flag);
            break;
        default:
            continue;
        }
        seen[r->type]++;
    }
    assert_true(seen[STRATA_OPT_NUM] > 0 && seen[STRATA_OPT_STR] > 0 &&
                seen[STRATA_OPT_CUSTOM] > 0 && seen[STRATA_OPT_LIST] > 0);
}

static void list_is_bounded(void **state)
{
    (void)state;
    const struct strata_srv_opt *r = strata_srv_opt_by_key("replication-targets");
    assert_non_null(r);
    fresh();
    char err[256], names[64][64];
    for (size_t i = 0; i < r->cap; i++) {
        snprintf(names[i], sizeof(names[i]), "t%zu:http://h:%zu", i, i + 1);
        assert_int_equal(strata_srv_opt_set(&opts, r, names[i], err, sizeof(err)), 0);
    }
    assert_int_equal(strata_srv_opt_set(&opts, r, "x:http://h:1", err, sizeof(err)), -1);
    assert_string_equal(err, "too many --replication-target");
    assert_int_equal(cfg.nrepl_specs, r->cap);
}

/* A valid value other than the default for each row that takes one. */
static const char *sample(const struct strata_srv_opt *r, char *buf, size_t n)
{
    static const char *const custom[][2] = {
        {"log-level", "debug"},
        {"default-object-ownership", "ObjectWriter"},
        {"tier", "warm:4+2:/srv/w{1...6}"},
        {"storage-class", "COLD:warm"},
        {"notify-target", "h1:webhook:http://127.0.0.1:1/x"},
        {"notify-token-file", "h1:/etc/t"},
        {"replication-target", "r1:http://127.0.0.1:2"},
    };
    if (r->type == STRATA_OPT_NUM) {
        snprintf(buf, n, "%lld", r->def == r->min + 7 ? r->min + 8 : r->min + 7);
        return buf;
    }
    if (r->type == STRATA_OPT_STR) {
        snprintf(buf, n, "v-%s", r->flag);
        return buf;
    }
    for (size_t i = 0; i < sizeof(custom) / sizeof(custom[0]); i++)
        if (strcmp(custom[i][0], r->flag) == 0)
            return custom[i][1];
    fail_msg("no sample value for --%s: add one to this test", r->flag);
    return NULL;
}

static char *dump(void)
{
    json_t *doc = strata_srv_config_json(&cfg);
    assert_non_null(doc);
    char *s = json_dumps(doc, JSON_INDENT(2));
    json_decref(doc);
    return s;
}

static void printed_config_reads_back_the_same(void **state)
{
    (void)state;
    fresh();
    char *defaults = dump();
    /* Every settable flag with a value other than its default. */
    char *argv[256], bufs[128][96];
    int argc = 0, nb = 0;
    argv[argc++] = "strata";
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        if (!r->flag || r->type == STRATA_OPT_FORM || r->type == STRATA_OPT_ACTION ||
            r->file_ignores)
            continue;
        snprintf(bufs[nb], sizeof(bufs[nb]), "--%s", r->flag);
        argv[argc++] = bufs[nb++];
        if (r->type != STRATA_OPT_BOOL) {
            argv[argc++] = (char *)sample(r, bufs[nb], sizeof(bufs[nb]));
            nb++;
        }
    }
    argv[argc] = NULL;
    char err[1024] = "";
    optind = 0;
    int rc = strata_srv_opts_parse_argv(&opts, argc, argv, err, sizeof(err));
    if (rc != 0)
        fail_msg("flags refused: %s", err);
    assert_int_equal(optind, argc);
    char *first = dump();
    /* Each setting reached the configuration and its printed form. */
    json_t *d = json_loads(defaults, 0, NULL), *f = json_loads(first, 0, NULL);
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        if (!r->key || !r->flag || r->file_ignores)
            continue;
        if (json_equal(json_object_get(d, r->key), json_object_get(f, r->key)))
            fail_msg("--%s did not change \"%s\"", r->flag, r->key);
    }
    /* Read back as a config file (without the masked password, which is
     * refused) into a fresh configuration. */
    json_object_del(f, "root-password");
    char path[512];
    const char *base = getenv("STRATA_TEST_TMPDIR");
    snprintf(path, sizeof(path), "%s/options-%d.json", base ? base : "/tmp", (int)getpid());
    assert_int_equal(json_dump_file(f, path, 0), 0);
    fresh();
    json_t *conf = strata_srv_config_load(path, err, sizeof(err));
    if (!conf)
        fail_msg("printed config refused: %s", err);
    char *noflags[] = {"strata", NULL};
    rc = strata_srv_opts_apply_file(&opts, conf, path, 1, noflags, err, sizeof(err));
    if (rc != 0)
        fail_msg("printed config not applied: %s", err);
    char *second = dump();
    assert_string_equal(second, first);
    /* The mask itself is refused as a password. */
    json_t *masked = json_loads(first, 0, NULL);
    assert_int_equal(json_dump_file(masked, path, 0), 0);
    fresh();
    json_t *conf2 = strata_srv_config_load(path, err, sizeof(err));
    assert_non_null(conf2);
    assert_int_equal(strata_srv_opts_apply_file(&opts, conf2, path, 1, noflags, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "\"root-password\": is the mask"));
    unlink(path);
    json_decref(masked);
    json_decref(conf2);
    json_decref(conf);
    json_decref(d);
    json_decref(f);
    free(defaults);
    free(first);
    free(second);
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static void flags_replace_the_files_lists(void **state)
{
    (void)state;
    char path[512], err[512];
    const char *base = getenv("STRATA_TEST_TMPDIR");
    snprintf(path, sizeof(path), "%s/options-lists-%d.json", base ? base : "/tmp",
             (int)getpid());
    write_text(path, "{\"replication-targets\": [\"a:http://h:1\"],"
                     " \"storage-classes\": [\"X:hot\"], \"max-inflight\": \"9\"}");
    fresh();
    json_t *conf = strata_srv_config_load(path, err, sizeof(err));
    assert_non_null(conf);
    char *argv[] = {"strata", "--replication-target=b:http://h:2", "--storage-class", "Y:hot",
                    NULL};
    assert_int_equal(strata_srv_opts_apply_file(&opts, conf, path, 4, argv, err, sizeof(err)), 0);
    /* The flag replaces the file's targets; classes add up. */
    assert_int_equal(cfg.nrepl_specs, 0);
    assert_int_equal(cfg.nclass_specs, 1);
    assert_int_equal(cfg.http.max_inflight, 9);
    optind = 0;
    assert_int_equal(strata_srv_opts_parse_argv(&opts, 4, argv, err, sizeof(err)), 0);
    assert_int_equal(cfg.nrepl_specs, 1);
    assert_string_equal(cfg.repl_specs[0], "b:http://h:2");
    assert_int_equal(cfg.nclass_specs, 2);
    /* A refused file value names the key. */
    write_text(path, "{\"memtable-mb\": 7}");
    fresh();
    json_t *bad = strata_srv_config_load(path, err, sizeof(err));
    assert_non_null(bad);
    assert_int_equal(strata_srv_opts_apply_file(&opts, bad, path, 1, argv, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "--memtable-mb must be a number of MiB, at least 8\n"));
    assert_non_null(strstr(err, "bad --config"));
    assert_non_null(strstr(err, "\"memtable-mb\""));
    write_text(path, "{\"object-cache-mb\": 0}");
    fresh();
    json_decref(bad);
    bad = strata_srv_config_load(path, err, sizeof(err));
    assert_non_null(bad);
    assert_int_equal(strata_srv_opts_apply_file(&opts, bad, path, 1, argv, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "--object-cache-mb must be a number of MiB, at least 1\n"));
    /* An unknown key and a wrong type are refused when the file is read. */
    write_text(path, "{\"tiers\": \"warm:/x\"}");
    assert_null(strata_srv_config_load(path, err, sizeof(err)));
    assert_non_null(strstr(err, "\"tiers\": want an array of strings"));
    write_text(path, "{\"tier\": [\"warm:/x\"]}");
    assert_null(strata_srv_config_load(path, err, sizeof(err)));
    assert_non_null(strstr(err, "\"tier\": unknown key"));
    unlink(path);
    json_decref(conf);
    json_decref(bad);
}

static void help_lists_every_flag(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    strata_srv_opts_usage(f);
    fclose(f);
    assert_null(strstr(text, "{default}"));
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        char head[160];
        if (!r->flag)
            continue;
        snprintf(head, sizeof(head), "\n  --%s%s%s ", r->flag, r->arg ? " " : "",
                 r->arg ? r->arg : "");
        if (!strstr(text, head))
            fail_msg("--help does not list %s", head + 1);
    }
    /* The defaults come from the rows. */
    assert_non_null(strstr(text, "--cache-mb N          metadata block cache shared by all "
                                 "drives, MiB (default 1024)\n"));
    assert_non_null(strstr(text, "(default 127.0.0.1:9000)"));
    assert_non_null(strstr(text, "drives (default 64)\n"));
    free(text);
}

int main(void)
{
    strata_srv_tiers_init(&tiers);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_are_complete_and_consistent),
        cmocka_unit_test(bad_value_of_each_type_is_refused),
        cmocka_unit_test(list_is_bounded),
        cmocka_unit_test(printed_config_reads_back_the_same),
        cmocka_unit_test(flags_replace_the_files_lists),
        cmocka_unit_test(help_lists_every_flag),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    strata_srv_tiers_fini(&tiers);
    return rc;
}
