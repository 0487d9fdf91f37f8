/*
 * notify_redis.c - the Redis target: ADDRESS is HOST:PORT/KEY, and each
 * event's JSON (the same body the webhook gets) is appended to the list
 * KEY with RPUSH; the integer reply acknowledges it.  The target's token
 * file, when given, holds the password sent with AUTH.  hiredis; the
 * connection is made again after any error.  Delivery thread only.
 */
#include "notify_session.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

struct rtarget {
    struct strata_notify_session s; /* password: sent with AUTH */
    redisContext *c;
    char host[256];
    int port;
    char *key;
};

static int rt_setup(void *h, const char *address)
{
    struct rtarget *t = h;
    const char *colon = strrchr(address, ':');
    const char *slash = colon ? strchr(colon, '/') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == address || (size_t)(colon - address) >= sizeof(t->host) || !slash ||
        end != slash || port < 1 || port > 65535 || !slash[1])
        return STRATA_NOTIFY_BAD_ADDRESS;
    if (!(t->key = strdup(slash + 1)))
        return STRATA_NOTIFY_NO_CLIENT;
    memcpy(t->host, address, (size_t)(colon - address));
    t->port = (int)port;
    return 0;
}

static void rt_disconnect(void *h)
{
    struct rtarget *t = h;
    redisFree(t->c);
    t->c = NULL;
}

/* A command's reply, of type want: whether it came. */
static bool reply_ok(redisReply *r, int want)
{
    bool ok = r && r->type == want;
    if (r)
        freeReplyObject(r);
    return ok;
}

static bool rt_connect(void *h)
{
    struct rtarget *t = h;
    const struct timeval tv = {.tv_sec = 2};
    const struct timeval io = {.tv_sec = 5};
    t->c = redisConnectWithTimeout(t->host, t->port, tv);
    if (t->c && !t->c->err) {
        redisSetTimeout(t->c, io);
        if (!t->s.password ||
            reply_ok(redisCommand(t->c, "AUTH %s", t->s.password), REDIS_REPLY_STATUS))
            return true;
    }
    if (t->c)
        rt_disconnect(t);
    return false;
}

static bool rt_alive(void *h)
{
    return !((struct rtarget *)h)->c->err;
}

static void rt_fini(void *h)
{
    free(((struct rtarget *)h)->key);
}

static int rt_send(void *h, const char *msg, size_t len)
{
    struct rtarget *t = h;
    if (!strata_notify_session_ready(h))
        return -1;
    /* A failed command leaves c->err set: the next send connects again. */
    redisReply *r = redisCommand(t->c, "RPUSH %s %b", t->key, msg, len);
    return reply_ok(r, REDIS_REPLY_INTEGER) ? 0 : -1;
}

static const struct strata_notify_session_kind redis_session = {
    sizeof(struct rtarget), "HOST:PORT/KEY", NULL, NULL, rt_setup, rt_connect, rt_alive,
    rt_disconnect, rt_fini};

const struct strata_notify_kind strata_notify_redis = {
    "redis", strata_notify_session_open, rt_send, strata_notify_session_close, NULL, &redis_session};
