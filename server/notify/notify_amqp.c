/*
 * notify_amqp.c - the AMQP 0-9-1 target (RabbitMQ): ADDRESS is
 * amqp://[USER@]HOST:PORT/EXCHANGE/ROUTING_KEY (vhost "/"; EXCHANGE empty,
 * as in amqp://h:5672//q, is the default exchange, which routes to the
 * queue named ROUTING_KEY).  Each event's JSON is published persistent
 * (delivery mode 2) and mandatory on a channel in confirm mode: it counts
 * as delivered only when the broker's basic.ack arrives, and a message
 * the broker returns (no queue bound) or nacks is sent again later.  The
 * user is USER (default guest), the password the target's token file
 * (default guest).  rabbitmq-c; the connection is made again after any
 * error.  Delivery thread only.
 */
#include "notify_addr.h"
#include "notify_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>

struct atarget {
    amqp_connection_state_t c; /* NULL: not connected */
    uint64_t tag;              /* delivery tag of the last publish */
    struct strata_notify_addr a;
    char *exchange, *rkey; /* into a.path */
    char *password;
};

static void at_disconnect(struct atarget *t)
{
    if (!t->c)
        return;
    /* No close handshake: the broker may be gone, and a half-dead
     * connection must not stall the delivery thread. */
    amqp_destroy_connection(t->c);
    t->c = NULL;
}

static void at_close(void *h)
{
    struct atarget *t = h;
    if (!t)
        return;
    at_disconnect(t);
    strata_notify_secret_free(t->password);
    free(t);
}

static int at_open(const char *address, const char *token, void **h, char *err, size_t err_len)
{
    struct atarget *t = calloc(1, sizeof(*t));
    if (!t || strata_notify_addr_parse(address, "amqp", &t->a) != 0 ||
        !(t->rkey = strata_notify_addr_split(&t->a)) || !t->rkey[0] || strchr(t->rkey, '/') ||
        strlen(t->a.path) > 127 || strlen(t->rkey) > 255) {
        free(t);
        snprintf(err, err_len, "amqp address %s: want amqp://[USER@]HOST:PORT/EXCHANGE/"
                               "ROUTING_KEY (EXCHANGE may be empty)", address);
        return -1;
    }
    t->exchange = t->a.path;
    if (!t->a.user[0])
        strcpy(t->a.user, "guest");
    if (strata_notify_secret_dup(token ? token : "guest", &t->password) != 0) {
        at_close(t);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    *h = t;
    return 0; /* connected on first use: a broker down at start is retried */
}

static bool rpc_ok(amqp_connection_state_t c)
{
    return amqp_get_rpc_reply(c).reply_type == AMQP_RESPONSE_NORMAL;
}

static bool at_connect(struct atarget *t)
{
    if (t->c)
        return true;
    amqp_socket_t *s;
    struct timeval tv = {.tv_sec = 2};
    if (!(t->c = amqp_new_connection()) || !(s = amqp_tcp_socket_new(t->c)) ||
        amqp_socket_open_noblock(s, t->a.host, t->a.port, &tv) != AMQP_STATUS_OK)
        goto fail;
    /* The RPCs below and every later read wait at most this long. */
    struct timeval rpc = {.tv_sec = 5};
    if (amqp_set_rpc_timeout(t->c, &rpc) != AMQP_STATUS_OK)
        goto fail;
    amqp_rpc_reply_t r = amqp_login(t->c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, t->a.user,
                                    t->password);
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
        goto fail;
    if (!amqp_channel_open(t->c, 1) || !rpc_ok(t->c) || !amqp_confirm_select(t->c, 1) ||
        !rpc_ok(t->c))
        goto fail;
    t->tag = 0;
    return true;
fail:
    if (t->c)
        amqp_destroy_connection(t->c);
    t->c = NULL;
    return false;
}

/* Reads frames until the broker confirms delivery tag t->tag: 0 on
 * basic.ack of a message that was routed, -1 otherwise. */
static int confirm_wait(struct atarget *t)
{
    bool returned = false;
    for (;;) {
        amqp_frame_t f;
        struct timeval tv = {.tv_sec = 5};
        if (amqp_simple_wait_frame_noblock(t->c, &f, &tv) != AMQP_STATUS_OK)
            return -1;
        if (f.frame_type != AMQP_FRAME_METHOD)
            continue; /* the header and body of a returned message */
        switch (f.payload.method.id) {
        case AMQP_BASIC_ACK_METHOD: {
            const amqp_basic_ack_t *a = f.payload.method.decoded;
            if (a->delivery_tag == t->tag || (a->multiple && a->delivery_tag >= t->tag))
                return returned ? -1 : 0;
            break;
        }
        case AMQP_BASIC_RETURN_METHOD:
            returned = true; /* unroutable: its ack follows */
            break;
        case AMQP_BASIC_NACK_METHOD:
        default: /* channel or connection closed by the broker, ... */
            return -1;
        }
    }
}

static int at_send(void *h, const char *msg, size_t len)
{
    struct atarget *t = h;
    if (!at_connect(t))
        return -1;
    amqp_basic_properties_t props = {
        ._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG,
        .content_type = amqp_cstring_bytes("application/json"),
        .delivery_mode = AMQP_DELIVERY_PERSISTENT,
    };
    amqp_bytes_t body = {.len = len, .bytes = (void *)msg};
    t->tag++;
    if (amqp_basic_publish(t->c, 1, amqp_cstring_bytes(t->exchange), amqp_cstring_bytes(t->rkey),
                           1, 0, &props, body) != AMQP_STATUS_OK ||
        confirm_wait(t) != 0) {
        at_disconnect(t); /* the next attempt starts clean */
        return -1;
    }
    return 0;
}

const struct strata_notify_kind strata_notify_amqp = {"amqp", at_open, at_send, at_close};
