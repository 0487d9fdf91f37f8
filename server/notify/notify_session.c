/*
 * notify_session.c - open, close and reconnect for the broker targets
 * (notify_session.h).
 */
#include "notify_session.h"

#include <stdio.h>
#include <stdlib.h>

#include "notify_addr.h"
#include "secret.h"

int strata_notify_session_open(const struct strata_notify_kind *k, const char *address,
                               const char *token, void **h, char *err, size_t err_len)
{
    const struct strata_notify_session_kind *sk = k->session;
    struct strata_notify_session *s = calloc(1, sk->size);
    int rc = STRATA_NOTIFY_NO_CLIENT;
    if (s) {
        s->kind = sk;
        if (strata_notify_secret_dup(token ? token : sk->default_token, &s->password) == 0)
            rc = sk->setup(s, address);
    }
    if (rc == 0) {
        *h = s;
        return 0; /* connected on first use: a server down at start is retried */
    }
    if (rc == STRATA_NOTIFY_BAD_ADDRESS)
        snprintf(err, err_len, "%s address %s: want %s", k->name, address, sk->form);
    else if (sk->setup_failed)
        snprintf(err, err_len, "%s address %s: %s", k->name, address, sk->setup_failed);
    else
        snprintf(err, err_len, "out of memory");
    strata_notify_session_close(s);
    return -1;
}

void strata_notify_session_drop(void *h)
{
    struct strata_notify_session *s = h;
    if (s->connected)
        s->kind->disconnect(h);
    s->connected = false;
}

void strata_notify_session_close(void *h)
{
    struct strata_notify_session *s = h;
    if (!s)
        return;
    strata_notify_session_drop(h);
    if (s->kind->fini)
        s->kind->fini(h);
    strata_secret_str_free(s->password);
    free(s);
}

bool strata_notify_session_ready(void *h)
{
    struct strata_notify_session *s = h;
    if (s->connected && (!s->kind->alive || s->kind->alive(h)))
        return true;
    strata_notify_session_drop(h);
    s->connected = s->kind->connect(h);
    return s->connected;
}
