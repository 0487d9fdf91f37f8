/*
 * pqueue.h - a persistent, bounded message queue with its delivery
 * threads: what event notification targets (server/notify) and bucket
 * replication targets (server/repl) are fed through.
 *
 * A queue is an append-only file NAME.q with the delivered offset (and a
 * generation) in NAME.ack, kept in each of up to STRATA_PQUEUE_COPIES
 * directories (the callers give one on each of the first two drives), so
 * that one drive lost loses no queued message.  strata_pqueue_push writes
 * the message to every live copy before it returns (so kill -9 loses
 * nothing once the caller has answered; the files are fdatasync'ed in
 * batches by a delivery thread, so a power loss can lose the last ~50 ms),
 * and the delivery threads hand messages to the send callback, a message
 * leaving the queue only when the callback says it is done with it:
 * delivery is at least once.  With one thread messages go in order; with
 * N, up to N sends at once, taken in order (a later one may finish
 * first), except that messages of one ordering key (opts.order_key) go
 * one after the other.  A failed send is retried with exponential backoff
 * (100 ms .. 5 s) by the thread holding it.  A queue over its bound drops
 * new messages (counted).
 *
 * In a store several gateways share (opts.cluster on RADOS) the queue
 * lives in the cluster instead, with the same contract for the callers
 * (pqueue_cluster.h).
 *
 * Threads: push and stats from any thread; open and close from one owner.
 */
#ifndef STRATA_SERVER_PQUEUE_H
#define STRATA_SERVER_PQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define STRATA_PQUEUE_MSG_MAX (1u << 20)
#define STRATA_PQUEUE_THREADS_MAX 16
#define STRATA_PQUEUE_COPIES 2    /* directories (drives) a queue is written to */
#define STRATA_PQUEUE_BATCH_MAX 64 /* messages handed to one send_batch call */

/* What send says of one message. */
enum strata_pqueue_sent {
    STRATA_PQUEUE_DONE = 0,   /* delivered: move on */
    STRATA_PQUEUE_RETRY = -1, /* not now: the same message again after a backoff */
    STRATA_PQUEUE_GIVE_UP = 1 /* can never be delivered: move on, counted as rejected */
};

/* Runs on the queue's threads, on several at once when it has several.
 * msg is valid during the call (msg[len] is '\0'). */
typedef enum strata_pqueue_sent (*strata_pqueue_send_cb)(void *ud, const char *msg, size_t len);
/* Or, for receivers whose acknowledgement costs a round trip or a sync
 * each: msgs[0..n) in queue order (n <= STRATA_PQUEUE_BATCH_MAX, each
 * iov_base '\0'-terminated); how many from the first on were delivered
 * (0..n).  The rest are sent again, by the same thread, after a backoff.
 * With several threads each holds its own batch (batches are taken in
 * order; a later one may finish first). */
typedef size_t (*strata_pqueue_batch_cb)(void *ud, const struct iovec *msgs, size_t n);

struct strata_pqueue_opts {
    const char *name;  /* the files' name: strata_pqueue_name_ok */
    size_t max;        /* messages pending before push drops (>= 1) */
    unsigned threads;  /* delivery threads, 1..STRATA_PQUEUE_THREADS_MAX */
    strata_pqueue_send_cb send;
    strata_pqueue_batch_cb send_batch; /* used instead of send when set */
    void *ud;
    /* With send (not send_batch), optional: the ordering key of a message
     * (0: none).  Messages of one key go one at a time in queue order: a
     * later one is not handed to send before send is done (delivered or
     * given up) with every earlier one of that key, also after a restart;
     * messages of other keys go on in parallel meanwhile.  Keys that
     * collide are only ordered together.  Pure; called under the queue's
     * lock. */
    uint64_t (*order_key)(void *ud, const char *msg, size_t len);
    /* A store several gateways share (strata_meta_queues_shared): the
     * queue SPACE.NAME lives there instead of in dirs, pushed to by every
     * gateway and delivered by the one holding its lease
     * (pqueue_cluster.h).  NULL, or a store that keeps no queues: files. */
    struct strata_meta *cluster;
    const char *space; /* "notify", "replication", ...: the queue's kind */
};

struct strata_pqueue_stats {
    uint64_t queued;    /* messages accepted by push (plus those found at open) */
    uint64_t delivered; /* DONE */
    uint64_t failed;    /* RETRY answers (attempts, not messages) */
    uint64_t rejected;  /* GIVE_UP */
    uint64_t dropped;   /* refused by push: full, too big or not written */
    uint64_t pending;   /* in the queue now */
    uint64_t copies;    /* copies being written now (a copy with an I/O error is left out) */
};

struct strata_pqueue;
struct strata_meta;

/* Whether s[0..n) may name a queue (its files): 1..max letters, digits,
 * '-' and '_'.  Pure. */
bool strata_pqueue_name_ok(const char *s, size_t n, size_t max);

/*
 * Opens (creates) the queue's copy in each of dirs[0..ndirs) (each
 * directory created; at most STRATA_PQUEUE_COPIES used; one that cannot be
 * used, a dead drive, is left out as long as one can), recovers them and
 * starts the delivery threads, which deliver what a previous run left
 * first.  Recovery cuts a torn last record off each copy; the copy of the
 * latest generation with the most records wins and is copied over the
 * others (a drive replaced by an empty one gets the queue back; a stale
 * copy never wins: every start and every copy given up moves the live
 * copies to a new generation).  An 8-byte .ack of older versions is read
 * as generation 0.  0 with *out, or -1 with err set.
 */
int strata_pqueue_create(const char *const *dirs, size_t ndirs, const struct strata_pqueue_opts *o,
                         struct strata_pqueue **out, char *err, size_t err_len);
/* Stops the threads after the sends in progress (pending messages stay in
 * the files for the next run), syncs and frees.  NULL is a no-op. */
void strata_pqueue_destroy(struct strata_pqueue *q);

/* Queues one message (<= STRATA_PQUEUE_MSG_MAX bytes): 0, or -1 (dropped,
 * counted). */
int strata_pqueue_push(struct strata_pqueue *q, const void *msg, size_t len);

void strata_pqueue_stats_get(struct strata_pqueue *q, struct strata_pqueue_stats *out);

#endif /* STRATA_SERVER_PQUEUE_H */
