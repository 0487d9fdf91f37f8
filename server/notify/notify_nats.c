/*
 * notify_nats.c - the NATS target: ADDRESS is nats://HOST:PORT/SUBJECT, and
 * each event's JSON (the same body the webhook gets) is published on
 * SUBJECT.  Core NATS has no per-message acknowledgement: a publish counts
 * as delivered once a flush (PING/PONG) proves the server has read it.  The
 * target's token file, when given, is the server's auth token.  libnats;
 * its own reconnects are off, the connection is made again after any
 * error.  Delivery thread only.
 */
#include "notify_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nats/nats.h>

struct ntarget {
    natsConnection *nc;
    natsOptions *opts;
    char *subject;
};

static void nt_close(void *h)
{
    struct ntarget *t = h;
    if (!t)
        return;
    if (t->nc)
        natsConnection_Destroy(t->nc);
    natsOptions_Destroy(t->opts);
    free(t->subject);
    free(t);
}

static int nt_open(const char *address, const char *token, void **h, char *err, size_t err_len)
{
    const char *host = strncmp(address, "nats://", 7) == 0 ? address + 7 : NULL;
    const char *slash = host ? strchr(host, '/') : NULL;
    if (!slash || slash == host || !slash[1] || strpbrk(slash + 1, " \t\r\n")) {
        snprintf(err, err_len, "nats address %s: want nats://HOST:PORT/SUBJECT", address);
        return -1;
    }
    struct ntarget *t = calloc(1, sizeof(*t));
    char url[512];
    snprintf(url, sizeof(url), "nats://%.*s", (int)(slash - host), host);
    if (!t || !(t->subject = strdup(slash + 1)) || natsOptions_Create(&t->opts) != NATS_OK ||
        natsOptions_SetURL(t->opts, url) != NATS_OK ||
        natsOptions_SetTimeout(t->opts, 2000) != NATS_OK ||
        natsOptions_SetAllowReconnect(t->opts, false) != NATS_OK ||
        (token && natsOptions_SetToken(t->opts, token) != NATS_OK)) {
        nt_close(t);
        snprintf(err, err_len, "nats address %s: cannot set up the client", address);
        return -1;
    }
    *h = t;
    return 0; /* connected on first use: a server down at start is retried */
}

static int nt_send(void *h, const char *msg, size_t len)
{
    struct ntarget *t = h;
    if (t->nc && natsConnection_IsClosed(t->nc)) {
        natsConnection_Destroy(t->nc);
        t->nc = NULL;
    }
    if (!t->nc && natsConnection_Connect(&t->nc, t->opts) != NATS_OK) {
        t->nc = NULL;
        return -1;
    }
    if (natsConnection_Publish(t->nc, t->subject, msg, (int)len) == NATS_OK &&
        natsConnection_FlushTimeout(t->nc, 5000) == NATS_OK)
        return 0;
    natsConnection_Destroy(t->nc); /* the next attempt connects again */
    t->nc = NULL;
    return -1;
}

const struct strata_notify_kind strata_notify_nats = {"nats", nt_open, nt_send, nt_close, NULL};
