/*
 * notify_internal.h - what the queue (notify_queue.c) needs of a target
 * kind.  A target handle is used by its delivery thread only.
 */
#ifndef STRATA_SERVER_NOTIFY_NOTIFY_INTERNAL_H
#define STRATA_SERVER_NOTIFY_NOTIFY_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/uio.h>

#include "pqueue.h"

/* Messages handed to one send_batch call, at most (the queue's batch). */
#define STRATA_NOTIFY_BATCH_MAX STRATA_PQUEUE_BATCH_MAX

struct strata_notify_session_kind;

struct strata_notify_kind {
    const char *name; /* KIND of --notify-target */
    /* 0 with *h, or -1 with err set (a bad ADDRESS).  k is this kind. */
    int (*open)(const struct strata_notify_kind *k, const char *address, const char *token,
                void **h, char *err, size_t err_len);
    /* One message (msg[len] is '\0') delivered and acknowledged: 0; not (yet): -1.
     * NULL when send_batch is given. */
    int (*send)(void *h, const char *msg, size_t len);
    void (*close)(void *h);
    /* Or (NULL: send, one at a time): msgs[0..n) in order, n <=
     * STRATA_NOTIFY_BATCH_MAX, each iov_base '\0'-terminated; how many
     * from the first on were acknowledged (0..n).  For targets whose
     * acknowledgement costs a round trip or a sync each. */
    size_t (*send_batch)(void *h, const struct iovec *msgs, size_t n);
    /* A broker target's connection handling (notify_session.h), or NULL. */
    const struct strata_notify_session_kind *session;
};

extern const struct strata_notify_kind strata_notify_webhook;
extern const struct strata_notify_kind strata_notify_redis;
extern const struct strata_notify_kind strata_notify_nats;
extern const struct strata_notify_kind strata_notify_amqp;
extern const struct strata_notify_kind strata_notify_mqtt;
extern const struct strata_notify_kind strata_notify_postgres;

/* An event's sequencer: the 16 hex digits of its change's stamp, then 2 of
 * this daemon's event count (strata_notify__seq), the tie-breaker. */
#define STRATA_NOTIFY_SEQUENCER_LEN 18
extern _Atomic unsigned long long strata_notify__seq;

#endif /* STRATA_SERVER_NOTIFY_NOTIFY_INTERNAL_H */
