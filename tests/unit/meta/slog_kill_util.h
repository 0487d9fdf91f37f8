/*
 * slog_kill_util.h - what the small-object log's SIGKILL tests share
 * (test_store_slog_kill.c, test_store_slog_compact.c): the child, whose
 * threads each put generations of their own keys and send an ack per put
 * acknowledged, and the parent's newest generation acknowledged per key.
 * Include after cmocka.h and meta_test_util.h.
 */
#ifndef STRATA_TESTS_META_SLOG_KILL_UTIL_H
#define STRATA_TESTS_META_SLOG_KILL_UTIL_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SK_KEYS_MAX    64
#define SK_THREADS_MAX 8

struct sk_ack {
    uint32_t key, gen;
};

/* The child's work: thread t puts keys t * per to t * per + per - 1, in
 * turn, generation gen0 on (put: 0 when acknowledged). */
struct sk_plan {
    int (*open)(void);
    int (*put)(unsigned key, uint32_t gen, uint8_t *buf);
    size_t buf_size;
    unsigned nthreads, per;
    uint32_t gen0;
};

struct sk_thread {
    const struct sk_plan *p;
    unsigned t;
    int fd;
};

static inline void *sk_writer(void *arg)
{
    const struct sk_thread *c = arg;
    uint8_t *buf = malloc(c->p->buf_size);
    if (!buf)
        _exit(4);
    for (uint32_t gen = c->p->gen0;; gen++)
        for (unsigned j = 0; j < c->p->per; j++) {
            unsigned k = c->t * c->p->per + j;
            if (c->p->put(k, gen, buf))
                _exit(5);
            struct sk_ack a = {.key = k, .gen = gen};
            /* 8 bytes: one atomic pipe write whichever thread. */
            if (write(c->fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
                _exit(7);
        }
    return NULL;
}

/* mt_run_and_kill_acks's child; ud: the struct sk_plan. */
static inline void sk_child(void *ud, int fd)
{
    const struct sk_plan *p = ud;
    if (p->nthreads > SK_THREADS_MAX || p->open())
        _exit(3);
    if (write(fd, "r", 1) != 1)
        _exit(6);
    struct sk_thread c[SK_THREADS_MAX];
    pthread_t thr[SK_THREADS_MAX];
    for (unsigned t = 0; t < p->nthreads; t++) {
        c[t] = (struct sk_thread){.p = p, .t = t, .fd = fd};
        if (pthread_create(&thr[t], NULL, sk_writer, &c[t]) != 0)
            _exit(8);
    }
    pause();
    _exit(9);
}

struct sk_acks {
    uint32_t acked[SK_KEYS_MAX];
    unsigned nkeys;
    unsigned long n;
};

/* mt_run_and_kill_acks's ack_cb; ud: the struct sk_acks. */
static inline void sk_ack_cb(void *ud, const void *ack)
{
    struct sk_acks *as = ud;
    struct sk_ack a;
    memcpy(&a, ack, sizeof(a));
    assert_true(a.key < as->nkeys);
    if (a.gen > as->acked[a.key])
        as->acked[a.key] = a.gen;
    as->n++;
}

#endif
