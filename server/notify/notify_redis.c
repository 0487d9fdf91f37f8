/*
 * notify_redis.c - the Redis target: ADDRESS is HOST:PORT/KEY, and each
 * event's JSON (the same body the webhook gets) is appended to the list
 * KEY with RPUSH; the integer reply acknowledges it.  The target's token
 * file, when given, holds the password sent with AUTH.  hiredis; the
 * connection is made again after any error.  Delivery thread only.
 */
#include "notify_addr.h"
#include "secret.h"
#include "notify_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

struct rtarget {
    redisContext *c;
    char host[256];
    int port;
    char *key;
    char *password;
};

static void rt_close(void *h)
{
    struct rtarget *t = h;
    if (!t)
        return;
    if (t->c)
        redisFree(t->c);
    strata_secret_str_free(t->password);
    free(t->key);
    free(t);
}

static int rt_open(const char *address, const char *token, void **h, char *err, size_t err_len)
{
    const char *colon = strrchr(address, ':');
    const char *slash = colon ? strchr(colon, '/') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == address || (size_t)(colon - address) >= 256 || !slash ||
        end != slash || port < 1 || port > 65535 || !slash[1]) {
        snprintf(err, err_len, "redis address %s: want HOST:PORT/KEY", address);
        return -1;
    }
    struct rtarget *t = calloc(1, sizeof(*t));
    if (!t || !(t->key = strdup(slash + 1)) || (token && !(t->password = strdup(token)))) {
        rt_close(t);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    memcpy(t->host, address, (size_t)(colon - address));
    t->port = (int)port;
    *h = t;
    return 0; /* connected on first use: a server down at start is retried */
}

static bool rt_connect(struct rtarget *t)
{
    if (t->c && !t->c->err)
        return true;
    if (t->c)
        redisFree(t->c);
    const struct timeval tv = {.tv_sec = 2};
    t->c = redisConnectWithTimeout(t->host, t->port, tv);
    if (!t->c || t->c->err)
        return false;
    const struct timeval io = {.tv_sec = 5};
    redisSetTimeout(t->c, io);
    if (t->password) {
        redisReply *r = redisCommand(t->c, "AUTH %s", t->password);
        bool ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (!ok) {
            redisFree(t->c);
            t->c = NULL;
            return false;
        }
    }
    return true;
}

static int rt_send(void *h, const char *msg, size_t len)
{
    struct rtarget *t = h;
    if (!rt_connect(t))
        return -1;
    redisReply *r = redisCommand(t->c, "RPUSH %s %b", t->key, msg, len);
    bool ok = r && r->type == REDIS_REPLY_INTEGER;
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

const struct strata_notify_kind strata_notify_redis = {"redis", rt_open, rt_send, rt_close, NULL};
