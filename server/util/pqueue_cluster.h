/*
 * pqueue_cluster.h - the queues of pqueue.h kept in a store that several
 * gateways share (strata_meta_queue_*: a RADOS cluster), for pqueue.c.
 * Same contract as the file queues (at least once, a push durable before
 * it returns, send / send_batch callbacks, bound, stats), with these
 * differences: every gateway pushes into one queue, and only the gateway
 * holding the queue's lease delivers it (another takes over within
 * STRATA_LEASE_MS + STRATA_LEASE_RENEW_MS of its death); messages of one
 * gateway go in order, those of several in stamp order (a late one is
 * delivered when seen); the bound counts the whole queue, refreshed every
 * second or so, so gateways pushing at once may overshoot it a little.
 * Stats: what this gateway queued, delivered, failed and dropped; pending
 * for the whole queue (as last counted plus this gateway's pushes since,
 * less its removals since: exact for this gateway's own as soon as a push
 * or removal returns); copies 1 (the pool's replicas are the cluster's
 * business).
 */
#ifndef STRATA_SERVER_PQUEUE_CLUSTER_H
#define STRATA_SERVER_PQUEUE_CLUSTER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pqueue.h"

struct pqueue_cluster;

/* The queue SPACE.NAME (o->space, o->name) in o->cluster, its threads
 * started.  0 with *out, or -1 with err set. */
int strata_pqueue__cluster_create(const struct strata_pqueue_opts *o, struct pqueue_cluster **out,
                                  char *err, size_t err_len);
void strata_pqueue__cluster_destroy(struct pqueue_cluster *q);
int strata_pqueue__cluster_push(struct pqueue_cluster *q, const void *msg, size_t len);
void strata_pqueue__cluster_stats(struct pqueue_cluster *q, struct strata_pqueue_stats *out);
/* Fault tests: hook(ud) runs on a queue's lease thread after each count
 * of the cluster returned, before the count is taken (NULL: none).  Set
 * while no queue is open. */
void strata_pqueue__cluster_test_count_hook(void (*hook)(void *ud), void *ud);

/* What both kinds of queue use (pqueue.c): CLOCK_MONOTONIC ms; a wait on
 * cv of up to ms (mu held); the retry backoff after prev (0: the first,
 * 100 ms .. 5 s); the delivery threads for opts.threads. */
uint64_t strata_pqueue__now_ms(void);
void strata_pqueue__wait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms);
uint64_t strata_pqueue__backoff(uint64_t prev);
unsigned strata_pqueue__threads(unsigned asked);
/* The counters behind stats, and their copy into out. */
struct strata_pqueue__counts {
    _Atomic uint64_t queued, delivered, failed, rejected, dropped;
};
void strata_pqueue__counts_get(struct strata_pqueue__counts *c, struct strata_pqueue_stats *out);
/* One try at msgs[0..n): send_batch when set, else send with the first.
 * How many the callback is done with (0: try again later), *rc what send
 * said of them (DONE for send_batch). */
size_t strata_pqueue__send(const struct strata_pqueue_opts *o, struct iovec *msgs, size_t n,
                           enum strata_pqueue_sent *rc);
/* k sends the callback is done with counted as delivered, or rejected. */
void strata_pqueue__count_sent(struct strata_pqueue__counts *c, enum strata_pqueue_sent rc,
                               size_t k);
/* n delivery threads fn(arg) into th, *started counting them: 0, or -1
 * with err naming queue (the caller destroys what started). */
int strata_pqueue__start(pthread_t *th, unsigned n, void *(*fn)(void *), void *arg,
                         unsigned *started, const char *queue, char *err, size_t err_len);
/* *stop set under mu, every waiter on cv woken, the started threads joined. */
void strata_pqueue__stop(pthread_mutex_t *mu, pthread_cond_t *cv, bool *stop, pthread_t *th,
                         unsigned started);

#endif /* STRATA_SERVER_PQUEUE_CLUSTER_H */
