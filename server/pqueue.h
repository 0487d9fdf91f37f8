/*
 * pqueue.h - a persistent, bounded message queue with its delivery
 * threads: what event notification targets (server/notify) and bucket
 * replication targets (server/repl) are fed through.
 *
 * A queue is an append-only file DIR/NAME.q with the delivered offset in
 * DIR/NAME.ack.  strata_pqueue_push writes the message to the file before
 * it returns (so kill -9 loses nothing once the caller has answered; the
 * file is fdatasync'ed in batches by the delivery thread, so a power loss
 * can lose the last ~50 ms), and the delivery threads hand messages to
 * send_cb, a message leaving the queue only when send_cb says it is done
 * with it: delivery is at least once.  With one thread messages go in
 * order, one at a time; with N, up to N at once, taken in order (a later
 * one may finish first).  A failed send is retried with exponential
 * backoff (100 ms .. 5 s) by the thread holding it.  A queue over its
 * bound drops new messages (counted).
 *
 * Threads: push and stats from any thread; open and close from one owner.
 */
#ifndef STRATA_SERVER_PQUEUE_H
#define STRATA_SERVER_PQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STRATA_PQUEUE_MSG_MAX (1u << 20)
#define STRATA_PQUEUE_THREADS_MAX 16

/* What send_cb says of one message. */
enum strata_pqueue_sent {
    STRATA_PQUEUE_DONE = 0,   /* delivered: move on */
    STRATA_PQUEUE_RETRY = -1, /* not now: the same message again after a backoff */
    STRATA_PQUEUE_GIVE_UP = 1 /* can never be delivered: move on, counted as rejected */
};

/* Runs on the queue's threads, on several at once when it has several.
 * msg is valid during the call. */
typedef enum strata_pqueue_sent (*strata_pqueue_send_cb)(void *ud, const char *msg, size_t len);

struct strata_pqueue_stats {
    uint64_t queued;    /* messages accepted by push (plus those found at open) */
    uint64_t delivered; /* DONE */
    uint64_t failed;    /* RETRY answers (attempts, not messages) */
    uint64_t rejected;  /* GIVE_UP */
    uint64_t dropped;   /* refused by push: full, too big or not written */
    uint64_t pending;   /* in the queue now */
};

struct strata_pqueue;

/* Whether s[0..n) may name a queue (its files): 1..max letters, digits,
 * '-' and '_'.  Pure. */
bool strata_pqueue_name_ok(const char *s, size_t n, size_t max);

/*
 * Opens (creates) DIR/NAME.q and .ack, counts what a previous run left
 * (cutting off a torn last record) and starts threads (1..16) delivery
 * threads, which deliver those first.  max: messages pending before push
 * drops (>= 1).  dir must exist.  0 with *out, or -1 with err set.
 */
int strata_pqueue_create(const char *dir, const char *name, size_t max, unsigned threads,
                         strata_pqueue_send_cb send_cb, void *ud, struct strata_pqueue **out,
                         char *err, size_t err_len);
/* Stops the threads after the sends in progress (pending messages stay in
 * the file for the next run), syncs and frees.  NULL is a no-op. */
void strata_pqueue_destroy(struct strata_pqueue *q);

/* Queues one message (<= STRATA_PQUEUE_MSG_MAX bytes): 0, or -1 (dropped,
 * counted). */
int strata_pqueue_push(struct strata_pqueue *q, const void *msg, size_t len);

void strata_pqueue_stats_get(struct strata_pqueue *q, struct strata_pqueue_stats *out);

#endif /* STRATA_SERVER_PQUEUE_H */
