/*
 * notify_amqp.c - the AMQP 0-9-1 target (RabbitMQ): ADDRESS is
 * amqp://[USER@]HOST:PORT/EXCHANGE/ROUTING_KEY (vhost "/"; EXCHANGE empty,
 * as in amqp://h:5672//q, is the default exchange, which routes to the
 * queue named ROUTING_KEY).  Each event's JSON is published persistent
 * (delivery mode 2) and mandatory on a channel in confirm mode: it counts
 * as delivered only when the broker's basic.ack arrives, and a message
 * the broker returns (no queue bound) or nacks is sent again later.
 * Batches of queued events are published back to back and then their
 * confirms awaited.  The
 * user is USER (default guest), the password the target's token file
 * (default guest).  rabbitmq-c; the connection is made again after any
 * error.  Delivery thread only.
 */
#include "notify_addr.h"
#include "notify_session.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>

struct atarget {
    struct strata_notify_session s; /* password: the user's (default guest) */
    amqp_connection_state_t c;      /* NULL: not connected */
    uint64_t tag;                   /* delivery tag of the last publish */
    struct strata_notify_addr a;
    char *exchange, *rkey; /* into a.path */
};

static void at_disconnect(void *h)
{
    struct atarget *t = h;
    /* No close handshake: the broker may be gone, and a half-dead
     * connection must not stall the delivery thread. */
    amqp_destroy_connection(t->c);
    t->c = NULL;
}

static int at_setup(void *h, const char *address)
{
    struct atarget *t = h;
    if (strata_notify_addr_parse(address, "amqp", &t->a) != 0 ||
        !(t->rkey = strata_notify_addr_split(&t->a)) || !t->rkey[0] || strchr(t->rkey, '/') ||
        strlen(t->a.path) > 127 || strlen(t->rkey) > 255)
        return STRATA_NOTIFY_BAD_ADDRESS;
    t->exchange = t->a.path;
    if (!t->a.user[0])
        strcpy(t->a.user, "guest");
    return 0;
}

static bool rpc_ok(amqp_connection_state_t c)
{
    return amqp_get_rpc_reply(c).reply_type == AMQP_RESPONSE_NORMAL;
}

static bool at_connect(void *h)
{
    struct atarget *t = h;
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
                                    t->s.password);
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
        goto fail;
    if (!amqp_channel_open(t->c, 1) || !rpc_ok(t->c) || !amqp_confirm_select(t->c, 1) ||
        !rpc_ok(t->c))
        goto fail;
    t->tag = 0;
    return true;
fail:
    if (t->c)
        at_disconnect(t);
    return false;
}

/* A batch's messages by delivery tag: waiting, acked, or not delivered
 * (nacked, or returned unroutable). */
enum { W_WAIT, W_OK, W_BAD };

/* Marks the batch's messages a confirm covers (tags first..first+n-1). */
static void confirm_mark(char *st, uint64_t first, size_t n, uint64_t tag, bool multiple,
                         char v)
{
    for (size_t i = 0; i < n; i++)
        if (st[i] == W_WAIT && (first + i == tag || (multiple && first + i < tag)))
            st[i] = v;
}

/* Reads frames until every message of the batch (tags first..) is
 * confirmed: 0, or -1 (timeout, connection or channel closed). */
static int confirm_wait(struct atarget *t, uint64_t first, size_t n, char *st)
{
    bool returned = false; /* the next ack is of a returned message */
    for (;;) {
        size_t waiting = 0;
        for (size_t i = 0; i < n; i++)
            waiting += st[i] == W_WAIT;
        if (!waiting)
            return 0;
        amqp_frame_t f;
        struct timeval tv = {.tv_sec = 5};
        if (amqp_simple_wait_frame_noblock(t->c, &f, &tv) != AMQP_STATUS_OK)
            return -1;
        if (f.frame_type != AMQP_FRAME_METHOD)
            continue; /* the header and body of a returned message */
        switch (f.payload.method.id) {
        case AMQP_BASIC_ACK_METHOD: {
            const amqp_basic_ack_t *a = f.payload.method.decoded;
            confirm_mark(st, first, n, a->delivery_tag, a->multiple, returned ? W_BAD : W_OK);
            returned = false;
            break;
        }
        case AMQP_BASIC_NACK_METHOD: {
            const amqp_basic_nack_t *a = f.payload.method.decoded;
            confirm_mark(st, first, n, a->delivery_tag, a->multiple, W_BAD);
            break;
        }
        case AMQP_BASIC_RETURN_METHOD:
            /* Unroutable: the broker sends its ack right after. */
            returned = true;
            break;
        default: /* channel or connection closed by the broker, ... */
            return -1;
        }
    }
}

/* Publishes the batch, then waits for its confirms: the broker works on
 * all of them at once (one disk sync for many persistent messages). */
static size_t at_send_batch(void *h, const struct iovec *msgs, size_t n)
{
    struct atarget *t = h;
    if (!strata_notify_session_ready(h))
        return 0;
    amqp_basic_properties_t props = {
        ._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG,
        .content_type = amqp_cstring_bytes("application/json"),
        .delivery_mode = AMQP_DELIVERY_PERSISTENT,
    };
    char st[STRATA_NOTIFY_BATCH_MAX];
    uint64_t first = t->tag + 1;
    for (size_t i = 0; i < n; i++) {
        st[i] = W_WAIT;
        amqp_bytes_t body = {.len = msgs[i].iov_len, .bytes = msgs[i].iov_base};
        t->tag++;
        if (amqp_basic_publish(t->c, 1, amqp_cstring_bytes(t->exchange),
                               amqp_cstring_bytes(t->rkey), 1, 0, &props, body) != AMQP_STATUS_OK) {
            strata_notify_session_drop(h); /* the next attempt starts clean */
            return 0;
        }
    }
    if (confirm_wait(t, first, n, st) != 0)
        strata_notify_session_drop(h);
    else
        amqp_maybe_release_buffers(t->c); /* the decoded frames' memory, else it grows */
    size_t k = 0;
    while (k < n && st[k] == W_OK)
        k++;
    return k;
}

static const struct strata_notify_session_kind amqp_session = {
    sizeof(struct atarget),
    "amqp://[USER@]HOST:PORT/EXCHANGE/ROUTING_KEY (EXCHANGE may be empty)",
    "guest", NULL, at_setup, at_connect, NULL, at_disconnect, NULL};

const struct strata_notify_kind strata_notify_amqp = {
    "amqp", strata_notify_session_open, NULL, strata_notify_session_close, at_send_batch,
    &amqp_session};
