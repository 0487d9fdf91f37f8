/*
 * notify_session.h - the handle the broker targets (amqp, mqtt, nats,
 * postgres, redis) share: the address is parsed at open, the connection is
 * made on first use, checked before each send and dropped after any error
 * so that the next attempt connects again.  A kind gives only its client
 * library's calls (notify_session.c runs them).  Delivery thread only.
 */
#ifndef STRATA_SERVER_NOTIFY_NOTIFY_SESSION_H
#define STRATA_SERVER_NOTIFY_NOTIFY_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "notify_internal.h"

/* What setup answers besides 0. */
enum { STRATA_NOTIFY_BAD_ADDRESS = -1, STRATA_NOTIFY_NO_CLIENT = -2 };

struct strata_notify_session_kind {
    size_t size;               /* of the kind's handle; its first member is the session */
    const char *form;          /* "want FORM" when the address is bad */
    const char *default_token; /* the password when no token file is given, or NULL */
    const char *setup_failed;  /* said when setup cannot build the client (NULL: out of memory) */
    /* Fills the zeroed handle from address (the password is in session.password
     * already): 0, STRATA_NOTIFY_BAD_ADDRESS or STRATA_NOTIFY_NO_CLIENT. */
    int (*setup)(void *h, const char *address);
    /* Connects: true, or false with nothing left open. */
    bool (*connect)(void *h);
    /* Optional: the connection made earlier still serves (NULL: it does). */
    bool (*alive)(void *h);
    void (*disconnect)(void *h); /* only while connected */
    void (*fini)(void *h);       /* optional: frees what setup made, even in part */
};

struct strata_notify_session {
    const struct strata_notify_session_kind *kind;
    char *password; /* the token file's contents, or default_token; NULL: none */
    bool connected;
};

/* strata_notify_kind's open and close for a kind whose session is set. */
int strata_notify_session_open(const struct strata_notify_kind *k, const char *address,
                               const char *token, void **h, char *err, size_t err_len);
void strata_notify_session_close(void *h);

/* Connected now, reconnecting when the connection is gone: whether it is. */
bool strata_notify_session_ready(void *h);
/* After an error: the next send connects again. */
void strata_notify_session_drop(void *h);

#endif /* STRATA_SERVER_NOTIFY_NOTIFY_SESSION_H */
