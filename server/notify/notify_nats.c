/*
 * notify_nats.c - the NATS target: ADDRESS is nats://HOST:PORT/SUBJECT, and
 * each event's JSON (the same body the webhook gets) is published on
 * SUBJECT.  Core NATS has no per-message acknowledgement: a publish counts
 * as delivered once a flush (PING/PONG) proves the server has read it.  The
 * target's token file, when given, is the server's auth token.  libnats;
 * its own reconnects are off, the connection is made again after any
 * error.  Delivery thread only.
 */
#include "notify_session.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nats/nats.h>

struct ntarget {
    struct strata_notify_session s; /* password: the auth token */
    natsConnection *nc;
    natsOptions *opts;
    char *subject;
};

static int nt_setup(void *h, const char *address)
{
    struct ntarget *t = h;
    const char *host = strncmp(address, "nats://", 7) == 0 ? address + 7 : NULL;
    const char *slash = host ? strchr(host, '/') : NULL;
    if (!slash || slash == host || !slash[1] || strpbrk(slash + 1, " \t\r\n"))
        return STRATA_NOTIFY_BAD_ADDRESS;
    char url[512];
    snprintf(url, sizeof(url), "nats://%.*s", (int)(slash - host), host);
    if (!(t->subject = strdup(slash + 1)) || natsOptions_Create(&t->opts) != NATS_OK ||
        natsOptions_SetURL(t->opts, url) != NATS_OK ||
        natsOptions_SetTimeout(t->opts, 2000) != NATS_OK ||
        natsOptions_SetAllowReconnect(t->opts, false) != NATS_OK ||
        (t->s.password && natsOptions_SetToken(t->opts, t->s.password) != NATS_OK))
        return STRATA_NOTIFY_NO_CLIENT;
    return 0;
}

static bool nt_connect(void *h)
{
    struct ntarget *t = h;
    if (natsConnection_Connect(&t->nc, t->opts) == NATS_OK)
        return true;
    t->nc = NULL;
    return false;
}

static bool nt_alive(void *h)
{
    return !natsConnection_IsClosed(((struct ntarget *)h)->nc);
}

static void nt_disconnect(void *h)
{
    struct ntarget *t = h;
    natsConnection_Destroy(t->nc);
    t->nc = NULL;
}

static void nt_fini(void *h)
{
    struct ntarget *t = h;
    natsOptions_Destroy(t->opts);
    free(t->subject);
}

static int nt_send(void *h, const char *msg, size_t len)
{
    struct ntarget *t = h;
    if (!strata_notify_session_ready(h))
        return -1;
    if (natsConnection_Publish(t->nc, t->subject, msg, (int)len) == NATS_OK &&
        natsConnection_FlushTimeout(t->nc, 5000) == NATS_OK)
        return 0;
    strata_notify_session_drop(h); /* the next attempt connects again */
    return -1;
}

static const struct strata_notify_session_kind nats_session = {
    sizeof(struct ntarget), "nats://HOST:PORT/SUBJECT", NULL, "cannot set up the client",
    nt_setup, nt_connect, nt_alive, nt_disconnect, nt_fini};

const struct strata_notify_kind strata_notify_nats = {
    "nats", strata_notify_session_open, nt_send, strata_notify_session_close, NULL, &nats_session};
