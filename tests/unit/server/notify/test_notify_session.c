/*
 * test_notify_session.c - the broker targets' open/close/reconnect
 * skeleton (server/notify/notify_session.c) with a kind whose client is a
 * set of counters: the connection is made on first use and kept while it
 * serves, made again after a drop or when it is found dead, a failed
 * connect leaves nothing open, close frees what setup made, and open's
 * error messages and default password.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "notify_session.h"

struct fake {
    struct strata_notify_session s;
    char *addr; /* made by setup, freed by fini */
    bool up;    /* a connection is open */
};

/* What the fake client did, and what it is told to answer. */
static struct {
    unsigned connects, disconnects, finis;
    bool refuse, dead;
    int setup_rc;
} w;

static int f_setup(void *h, const char *address)
{
    struct fake *f = h;
    if (strncmp(address, "fake://", 7) != 0)
        return STRATA_NOTIFY_BAD_ADDRESS;
    f->addr = strdup(address);
    return w.setup_rc;
}

static bool f_connect(void *h)
{
    struct fake *f = h;
    w.connects++;
    assert_false(f->up); /* the old connection was closed first */
    f->up = !w.refuse;
    return f->up;
}

static bool f_alive(void *h)
{
    (void)h;
    return !w.dead;
}

static void f_disconnect(void *h)
{
    struct fake *f = h;
    assert_true(f->up); /* only while connected */
    f->up = false;
    w.disconnects++;
}

static void f_fini(void *h)
{
    free(((struct fake *)h)->addr);
    w.finis++;
}

static const struct strata_notify_session_kind fake_session = {
    sizeof(struct fake), "fake://X", "guest", NULL, f_setup, f_connect, f_alive, f_disconnect,
    f_fini};

static const struct strata_notify_kind fake_kind = {
    "fake", strata_notify_session_open, NULL, strata_notify_session_close, NULL, &fake_session};

static int reset(void **state)
{
    (void)state;
    memset(&w, 0, sizeof(w));
    return 0;
}

static void test_connect_on_use(void **state)
{
    (void)state;
    void *h = NULL;
    char err[256] = "";
    assert_int_equal(fake_kind.open(&fake_kind, "fake://a", "pw", &h, err, sizeof(err)), 0);
    struct fake *f = h;
    assert_string_equal(f->addr, "fake://a");
    assert_string_equal(f->s.password, "pw");
    assert_int_equal(w.connects, 0); /* nothing before the first send */
    assert_true(strata_notify_session_ready(h));
    assert_true(strata_notify_session_ready(h));
    assert_int_equal(w.connects, 1); /* kept while it serves */
    strata_notify_session_drop(h);   /* an error: the next send connects again */
    assert_int_equal(w.disconnects, 1);
    strata_notify_session_drop(h); /* twice is once */
    assert_int_equal(w.disconnects, 1);
    assert_true(strata_notify_session_ready(h));
    assert_int_equal(w.connects, 2);
    w.dead = true; /* found dead before a send: closed and made again */
    assert_true(strata_notify_session_ready(h));
    assert_int_equal(w.connects, 3);
    assert_int_equal(w.disconnects, 2);
    fake_kind.close(h);
    assert_int_equal(w.disconnects, 3);
    assert_int_equal(w.finis, 1);
    fake_kind.close(NULL);
}

static void test_refused(void **state)
{
    (void)state;
    void *h = NULL;
    char err[256] = "";
    assert_int_equal(fake_kind.open(&fake_kind, "fake://a", NULL, &h, err, sizeof(err)), 0);
    assert_string_equal(((struct fake *)h)->s.password, "guest"); /* no token file */
    w.refuse = true;
    assert_false(strata_notify_session_ready(h));
    assert_false(strata_notify_session_ready(h));
    assert_int_equal(w.connects, 2); /* each send tries again */
    assert_int_equal(w.disconnects, 0);
    w.refuse = false;
    assert_true(strata_notify_session_ready(h));
    fake_kind.close(h);
    assert_int_equal(w.disconnects, 1);
}

static void test_open_errors(void **state)
{
    (void)state;
    void *h = NULL;
    char err[256] = "";
    assert_int_equal(fake_kind.open(&fake_kind, "http://a", NULL, &h, err, sizeof(err)), -1);
    assert_string_equal(err, "fake address http://a: want fake://X");
    assert_null(h);
    w.setup_rc = STRATA_NOTIFY_NO_CLIENT;
    assert_int_equal(fake_kind.open(&fake_kind, "fake://a", NULL, &h, err, sizeof(err)), -1);
    assert_string_equal(err, "out of memory");
    assert_null(h);
    assert_int_equal(w.finis, 2); /* what setup made in part is freed */
    assert_int_equal(w.connects, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_connect_on_use, reset),
        cmocka_unit_test_setup(test_refused, reset),
        cmocka_unit_test_setup(test_open_errors, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
