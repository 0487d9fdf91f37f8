/*
 * test_notify_addr.c - the broker targets' ADDRESS parser
 * (server/notify/notify_addr.c) and the --notify-target check built on it
 * (strata_notify_spec_check): accepted forms field by field, and every
 * malformed part refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "notify.h"
#include "notify_addr.h"

static void test_accepted(void **state)
{
    (void)state;
    struct strata_notify_addr a;
    assert_int_equal(strata_notify_addr_parse("amqp://127.0.0.1:5672/ex/key", "amqp", &a), 0);
    assert_string_equal(a.user, "");
    assert_string_equal(a.host, "127.0.0.1");
    assert_int_equal(a.port, 5672);
    assert_string_equal(a.path, "ex/key");
    assert_int_equal(strata_notify_addr_parse("mqtt://strata.user-1@broker.lan:1/a/b/c", "mqtt",
                                              &a), 0);
    assert_string_equal(a.user, "strata.user-1");
    assert_string_equal(a.host, "broker.lan");
    assert_int_equal(a.port, 1);
    assert_string_equal(a.path, "a/b/c");
    assert_int_equal(strata_notify_addr_parse("postgres://u@[::1]:65535/db/t", "postgres", &a), 0);
    assert_string_equal(a.host, "::1");
    assert_int_equal(a.port, 65535);
    assert_string_equal(a.path, "db/t");
}

static void test_refused(void **state)
{
    (void)state;
    struct strata_notify_addr a;
    static const char *const bad[] = {
        "amqps://h:1/p",          /* another scheme */
        "amqp:/h:1/p",            /* no :// */
        "amqp://h:1",             /* no path */
        "amqp://h:1/",            /* empty path */
        "amqp://h/p",             /* no port */
        "amqp://h:/p",            /* empty port */
        "amqp://h:0/p",           /* port 0 */
        "amqp://h:65536/p",       /* port too big */
        "amqp://h:123456/p",      /* too many digits */
        "amqp://h:12a/p",         /* not a number */
        "amqp://:1/p",            /* no host */
        "amqp://@h:1/p",          /* empty user */
        "amqp://u:pw@h:1/p",      /* a password in the address */
        "amqp://u@v@h:1/p",       /* '@' in the host */
        "amqp://h h:1/p",         /* space in the host */
        "amqp://h:1/p q",         /* space in the path */
        "amqp://h:1/p\tq",        /* control character */
        "amqp://[::1/p",          /* unclosed bracket */
        "amqp://[::1]/p",         /* bracket without port */
        "amqp://[]:1/p",          /* empty bracketed host */
        "amqp://a:b:1/p",         /* ':' in an unbracketed host */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = strata_notify_addr_parse(bad[i], "amqp", &a);
        if (rc != -1)
            fail_msg("accepted %s", bad[i]);
    }
    char user[80];
    memset(user, 'u', 65);
    snprintf(user + 65, sizeof(user) - 65, "@h:1/p");
    char spec[128];
    snprintf(spec, sizeof(spec), "amqp://%s", user);
    assert_int_equal(strata_notify_addr_parse(spec, "amqp", &a), -1); /* user of 65 */
}

static void test_spec_check(void **state)
{
    (void)state;
    char err[256];
    static const char *const good[] = {
        "a:amqp:amqp://127.0.0.1:5672/ex/k",  "a:amqp:amqp://guest@h:5672//queue",
        "m:mqtt:mqtt://h:1883/strata/events", "p:postgres:postgres://u@h:5432/db/s3_events",
        "h:webhook:http://127.0.0.1:1/x",     "r:redis:127.0.0.1:6379/k",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (strata_notify_spec_check(good[i], err, sizeof(err)) != 0)
            fail_msg("refused %s: %s", good[i], err);
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"a:amqp:amqp://h:5672/ex", "EXCHANGE/ROUTING_KEY"},
        {"a:amqp:amqp://h:5672/ex/", "EXCHANGE/ROUTING_KEY"},
        {"m:mqtt:mqtt://h:1883/a/#", "no wildcards"},
        {"m:mqtt:mqtt://h:1883/a/+/b", "no wildcards"},
        {"p:postgres:postgres://h:5432/db", "DBNAME/TABLE"},
        {"p:postgres:postgres://h:5432/db/t-1", "DBNAME/TABLE"},
        {"p:postgres:postgres://h:5432/1db/t", "DBNAME/TABLE"},
        {"p:postgres:postgres://h:5432/db/t/x", "DBNAME/TABLE"},
        {"x:kafka:kafka://h:1/t", "unknown or unsupported KIND"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (strata_notify_spec_check(bad[i].spec, err, sizeof(err)) != -1)
            fail_msg("accepted %s", bad[i].spec);
        if (!strstr(err, bad[i].msg))
            fail_msg("%s: message %s", bad[i].spec, err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_spec_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
