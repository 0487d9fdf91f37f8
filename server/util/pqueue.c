/*
 * pqueue.c - persistent message queues with delivery threads (contract
 * in pqueue.h).
 *
 * Queue file NAME.q: records of a 12-byte header (magic, payload length,
 * CRC32C of the payload) and the payload, appended at the tail under the
 * queue's mutex by whoever pushes.  NAME.ack holds the offset of the first
 * record not yet done with, and a generation.  A delivery thread takes
 * the next records not taken (one, or up to STRATA_PQUEUE_BATCH_MAX for a
 * send_batch queue), sends them, and marks what the callback is done
 * with; the offset moves past the records at the head that are done (with
 * several threads a later batch may finish first: it is then delivered
 * again after a crash, as at-least-once allows).  A record whose ordering
 * key an earlier record not done with has is parked (copied into its
 * in-flight slot) instead of sent; the thread done with that earlier one
 * sends it next, so one key's records go in order while other keys go
 * on.  When the offset reaches the tail the files go back to empty.  Syncs are batched: a thread
 * fdatasyncs the queue at most every SYNC_MS while there is unsynced data,
 * and the ack file lazily (a lost ack means a redelivery).
 *
 * Copies: every record is written to every live copy (NAME.q and NAME.ack
 * in each directory) at the same offset before it counts as queued.  A
 * copy that fails a write or read is given up until the next start.
 * Every start and every copy given up moves the live copies to a new
 * generation, synced at once.  At start every copy is recovered (torn
 * tail cut); the one of the latest generation with the most records (then
 * the furthest offset) wins and is copied over the others.
 */
#include "pqueue.h"
#include "pqueue_cluster.h"

#include "strata/erasure.h"
#include "strata/meta.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REC_MAGIC 0x51544e53u /* "SNTQ" */
#define REC_HDR 12u
#define REC_MAX STRATA_PQUEUE_MSG_MAX
/* A batch's payload bytes: after the first record (up to REC_MAX), more
 * are added while the total stays within this. */
#define BATCH_BYTES REC_MAX
#define COPIES STRATA_PQUEUE_COPIES
#define SYNC_MS 50
/* A caught-up queue file is emptied once it is this big, or idle: not
 * after every message, which would make each one an ext4 truncate. */
#define TRUNC_BYTES (4u << 20)
#define IDLE_MS 1000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

/* Records taken, [.., end), kept in offset order: a thread is sending
 * them, or (parked) the record waits, copied here, until the thread
 * sending the earlier record of its ordering key takes it next. */
struct inflight {
    uint64_t end;
    bool done;
    uint64_t okey; /* opts.order_key of the record; 0: none */
    char *parked;  /* the record's copy while parked, else NULL */
    size_t len;
};
/* Records taken at most: the sending threads' and the parked ones. */
#define INFLIGHT_MAX (STRATA_PQUEUE_THREADS_MAX * 16)

struct strata_pqueue {
    struct strata_pqueue_opts o;
    int fd[COPIES], ack_fd[COPIES]; /* -1: none */
    bool live[COPIES];              /* open, and no I/O error yet */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t head, tail;    /* first record not done with; end of the file */
    uint64_t next;          /* first record no thread has taken */
    uint64_t pending;       /* records not done with */
    uint64_t gen;           /* of the live copies */
    struct inflight fl[INFLIGHT_MAX];
    unsigned nfl;
    bool dirty;             /* appended since the last sync */
    uint64_t last_push_ms;  /* of the last append (now_ms) */
    uint64_t last_sync_ms;
    bool ack_dirty;
    bool stop;
    unsigned nthreads, started;
    pthread_t th[STRATA_PQUEUE_THREADS_MAX];
    struct strata_pqueue__counts counts;
    struct pqueue_cluster *cl; /* the queue is in a shared store: all the above unused */
};

uint64_t strata_pqueue__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void strata_pqueue__wait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

uint64_t strata_pqueue__backoff(uint64_t prev)
{
    uint64_t next = prev ? prev * 2 : BACKOFF_MIN_MS;
    return next > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : next;
}

unsigned strata_pqueue__threads(unsigned asked)
{
    return asked < 1 ? 1 : asked > STRATA_PQUEUE_THREADS_MAX ? STRATA_PQUEUE_THREADS_MAX : asked;
}

size_t strata_pqueue__send(const struct strata_pqueue_opts *o, struct iovec *msgs, size_t n,
                           enum strata_pqueue_sent *rc)
{
    *rc = STRATA_PQUEUE_DONE;
    if (o->send_batch) {
        size_t k = o->send_batch(o->ud, msgs, n);
        return k > n ? n : k;
    }
    *rc = o->send(o->ud, msgs[0].iov_base, msgs[0].iov_len);
    return *rc != STRATA_PQUEUE_RETRY;
}

void strata_pqueue__count_sent(struct strata_pqueue__counts *c, enum strata_pqueue_sent rc,
                               size_t k)
{
    atomic_fetch_add(rc == STRATA_PQUEUE_GIVE_UP ? &c->rejected : &c->delivered, k);
}

void strata_pqueue__counts_get(struct strata_pqueue__counts *c, struct strata_pqueue_stats *out)
{
    out->queued = atomic_load(&c->queued);
    out->delivered = atomic_load(&c->delivered);
    out->failed = atomic_load(&c->failed);
    out->rejected = atomic_load(&c->rejected);
    out->dropped = atomic_load(&c->dropped);
}

int strata_pqueue__start(pthread_t *th, unsigned n, void *(*fn)(void *), void *arg,
                         unsigned *started, const char *queue, char *err, size_t err_len)
{
    for (unsigned i = 0; i < n; i++) {
        if (pthread_create(&th[i], NULL, fn, arg) != 0) {
            snprintf(err, err_len, "queue %s: cannot start its threads", queue);
            return -1;
        }
        (*started)++;
    }
    return 0;
}

void strata_pqueue__stop(pthread_mutex_t *mu, pthread_cond_t *cv, bool *stop, pthread_t *th,
                         unsigned started)
{
    pthread_mutex_lock(mu);
    *stop = true;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

bool strata_pqueue_name_ok(const char *s, size_t n, size_t max)
{
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
            return false;
    return true;
}

static void copy_give_up(struct strata_pqueue *t, int i);

/* The delivered offset and the generation to every live copy's ack file;
 * a copy that cannot be written is given up.  Mutex held (or no thread
 * yet). */
static void ack_write(struct strata_pqueue *t)
{
    uint64_t v[2] = {t->head, t->gen};
    for (int i = 0; i < COPIES; i++)
        if (t->live[i] && pwrite(t->ack_fd[i], v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
            copy_give_up(t, i); /* it writes the survivors */
            return;
        }
}

/* Copy i had an I/O error and is no longer written.  The survivors move
 * to a new generation, synced at once: at the next start the stale copy
 * (say, its drive back) loses to them whatever its length, so it can never
 * be copied over messages only the survivors hold.  Mutex held. */
static void copy_give_up(struct strata_pqueue *t, int i)
{
    t->live[i] = false;
    t->gen++;
    ack_write(t);
    for (int j = 0; j < COPIES; j++)
        if (t->live[j])
            fdatasync(t->ack_fd[j]);
}

/* fdatasync of the copies' queue (q) and/or ack files; without the mutex
 * (the fds stay open until destroy). */
static void copies_sync(struct strata_pqueue *t, bool q, bool a)
{
    for (int i = 0; i < COPIES; i++) {
        if (q && t->fd[i] >= 0)
            fdatasync(t->fd[i]);
        if (a && t->ack_fd[i] >= 0)
            fdatasync(t->ack_fd[i]);
    }
}

/* Whether a whole record with a good CRC starts at off (buf: REC_MAX). */
static bool rec_valid(int fd, uint64_t off, uint64_t size, char *buf)
{
    uint32_t h[3];
    return off + REC_HDR <= size && pread(fd, h, REC_HDR, (off_t)off) == (ssize_t)REC_HDR &&
           h[0] == REC_MAGIC && h[1] <= REC_MAX && off + REC_HDR + h[1] <= size &&
           pread(fd, buf, h[1], (off_t)(off + REC_HDR)) == (ssize_t)h[1] &&
           strata_crc32c(0, buf, h[1]) == h[2];
}

/* One copy's state after recovery. */
struct copy_state {
    uint64_t head, tail, pending, gen;
};

/* Reads copy i's ack offset and counts the records after it; cuts a torn
 * tail.  0, or -1 (the copy is unusable). */
static int copy_recover(struct strata_pqueue *t, int i, char *buf, struct copy_state *cs)
{
    uint64_t v[2] = {0, 0}; /* offset, generation (8 bytes: generation 0) */
    if (pread(t->ack_fd[i], v, sizeof(v), 0) < (ssize_t)sizeof(v[0]))
        v[0] = v[1] = 0;
    struct stat st;
    if (fstat(t->fd[i], &st) != 0)
        return -1;
    uint64_t size = (uint64_t)st.st_size, off = v[0] <= size ? v[0] : 0;
    cs->gen = v[1];
    cs->head = off;
    cs->pending = 0;
    /* An offset that is not at a record (a lost write of it): the whole
     * file is delivered again rather than lost. */
    if (off > 0 && off < size && !rec_valid(t->fd[i], off, size, buf))
        off = cs->head = 0;
    while (rec_valid(t->fd[i], off, size, buf)) {
        uint32_t len;
        if (pread(t->fd[i], &len, sizeof(len), (off_t)off + 4) != (ssize_t)sizeof(len))
            break;
        off += REC_HDR + len;
        cs->pending++;
    }
    cs->tail = off;
    if (off != size && ftruncate(t->fd[i], (off_t)off) != 0)
        return -1;
    return 0;
}

/* Copy dst := copy src's bytes [0, tail): 0 or -1. */
static int copy_clone(struct strata_pqueue *t, int src, int dst, uint64_t tail, char *buf)
{
    if (ftruncate(t->fd[dst], 0) != 0)
        return -1;
    for (uint64_t off = 0; off < tail;) {
        size_t n = tail - off < REC_MAX ? (size_t)(tail - off) : REC_MAX;
        if (pread(t->fd[src], buf, n, (off_t)off) != (ssize_t)n ||
            pwrite(t->fd[dst], buf, n, (off_t)off) != (ssize_t)n)
            return -1;
        off += n;
    }
    return fdatasync(t->fd[dst]);
}

/* Recovers every open copy, takes the one of the latest generation with
 * the most records (then the furthest delivered offset) and makes the
 * others equal to it.  Every start is a new generation: a copy missing
 * now (its drive dead) loses to these ones if it comes back later.  0, or
 * -1 when no copy is usable. */
static int queue_recover(struct strata_pqueue *t)
{
    char *buf = malloc(REC_MAX);
    if (!buf)
        return -1;
    struct copy_state cs[COPIES];
    int best = -1;
    for (int i = 0; i < COPIES; i++) {
        t->live[i] = t->fd[i] >= 0 && t->ack_fd[i] >= 0 && copy_recover(t, i, buf, &cs[i]) == 0;
        if (t->live[i] &&
            (best < 0 || cs[i].gen > cs[best].gen ||
             (cs[i].gen == cs[best].gen &&
              (cs[i].tail > cs[best].tail ||
               (cs[i].tail == cs[best].tail && cs[i].head > cs[best].head)))))
            best = i;
    }
    for (int i = 0; best >= 0 && i < COPIES; i++)
        if (t->live[i] && i != best && (cs[i].tail != cs[best].tail || cs[i].gen != cs[best].gen) &&
            copy_clone(t, best, i, cs[best].tail, buf) != 0)
            t->live[i] = false;
    free(buf);
    if (best < 0)
        return -1;
    t->head = t->next = cs[best].head;
    t->tail = cs[best].tail;
    t->pending = cs[best].pending;
    t->gen = cs[best].gen + 1;
    ack_write(t);
    copies_sync(t, false, true);
    atomic_store(&t->counts.queued, t->pending);
    return 0;
}

int strata_pqueue_push(struct strata_pqueue *t, const void *msg, size_t len)
{
    if (t->cl)
        return strata_pqueue__cluster_push(t->cl, msg, len);
    if (len > REC_MAX) {
        atomic_fetch_add(&t->counts.dropped, 1);
        return -1;
    }
    uint32_t h[3] = {REC_MAGIC, (uint32_t)len, strata_crc32c(0, msg, len)};
    struct iovec iov[2] = {{h, REC_HDR}, {(void *)(uintptr_t)msg, len}};
    int rc = -1;
    pthread_mutex_lock(&t->mu);
    if (t->pending < t->o.max) {
        bool any = false;
        for (int i = 0; i < COPIES; i++) {
            if (!t->live[i])
                continue;
            if (pwritev(t->fd[i], iov, 2, (off_t)t->tail) == (ssize_t)(REC_HDR + len)) {
                any = true;
                continue;
            }
            /* This copy no longer matches the others: given up (a torn
             * record left in it is cut off, or the copy replaced, at the
             * next start). */
            copy_give_up(t, i);
        }
        if (any) {
            t->tail += REC_HDR + len;
            t->pending++;
            t->dirty = true;
            t->last_push_ms = strata_pqueue__now_ms();
            rc = 0;
            /* Every thread: one may be in a backoff wait on the same cv. */
            pthread_cond_broadcast(&t->cv);
        }
    }
    pthread_mutex_unlock(&t->mu);
    atomic_fetch_add(rc == 0 ? &t->counts.queued : &t->counts.dropped, 1);
    return rc;
}

/* Waits up to ms or until stop; mutex held. */
static void wait_ms(struct strata_pqueue *t, uint64_t ms)
{
    strata_pqueue__wait(&t->cv, &t->mu, ms);
}

/* Syncs what is dirty, at most every SYNC_MS; mutex held (released
 * around the syncs).  Whether it synced. */
static bool sync_due(struct strata_pqueue *t)
{
    if (!(t->dirty || t->ack_dirty) || strata_pqueue__now_ms() - t->last_sync_ms < SYNC_MS)
        return false;
    bool d = t->dirty, a = t->ack_dirty;
    t->dirty = t->ack_dirty = false;
    t->last_sync_ms = strata_pqueue__now_ms();
    pthread_mutex_unlock(&t->mu);
    copies_sync(t, d, a);
    pthread_mutex_lock(&t->mu);
    return true;
}

/* k more records of the batch ending at end are done, the last of them
 * ending at upto (upto == end: the whole batch).  The offset moves past
 * every done batch at the head (batches taken later may finish first), or
 * to upto when this batch is the head's; mutex held. */
static void finish(struct strata_pqueue *t, uint64_t end, uint64_t upto, size_t k)
{
    unsigned i = 0;
    while (i < t->nfl && t->fl[i].end != end)
        i++;
    t->pending -= k;
    uint64_t head = t->head;
    if (upto == end)
        t->fl[i].done = true;
    else if (i == 0)
        t->head = upto;
    unsigned n = 0;
    while (n < t->nfl && t->fl[n].done)
        t->head = t->fl[n++].end;
    if (n) {
        memmove(t->fl, t->fl + n, (t->nfl - n) * sizeof(t->fl[0]));
        t->nfl -= n;
    }
    if (t->head != head) {
        ack_write(t);
        t->ack_dirty = true;
    }
}

/* Reads the records from off on (all before end) of copy fd into buf
 * (BATCH_BYTES + 1): the first (if whole and good), then more while they
 * fit, up to max.  msgs[i] '\0'-terminated, after[i] the offset past
 * record i.  The count: 0 when the first cannot be read. */
static size_t batch_read(int fd, uint64_t off, uint64_t end, size_t max, char *buf,
                         struct iovec *msgs, uint64_t *after)
{
    size_t n = 0, used = 0;
    while (n < max && off < end) {
        uint32_t h[3];
        if (pread(fd, h, REC_HDR, (off_t)off) != (ssize_t)REC_HDR || h[0] != REC_MAGIC ||
            h[1] > REC_MAX || (n > 0 && used + h[1] + 1 > BATCH_BYTES))
            break;
        char *p = buf + used;
        if (pread(fd, p, h[1], (off_t)(off + REC_HDR)) != (ssize_t)h[1] ||
            strata_crc32c(0, p, h[1]) != h[2])
            break;
        p[h[1]] = '\0';
        msgs[n] = (struct iovec){.iov_base = p, .iov_len = h[1]};
        off += REC_HDR + h[1];
        after[n++] = off;
        used += h[1] + 1;
    }
    return n;
}

/* Caught up (nothing pending, nothing in flight): the files back to empty
 * once big or idle.  The queue first: a crash in between leaves an offset
 * past the end, which recovery reads as 0.  The offset is synced at once,
 * so a stale one can never point into records appended later.  Mutex
 * held. */
static void trunc_if_idle(struct strata_pqueue *t, uint64_t now)
{
    if (t->nfl || t->tail == 0 || t->head != t->tail ||
        (t->tail < TRUNC_BYTES && now - t->last_push_ms < IDLE_MS))
        return;
    for (int i = 0; i < COPIES; i++)
        if (t->live[i] && ftruncate(t->fd[i], 0) != 0)
            copy_give_up(t, i);
    t->head = t->tail = t->next = 0;
    ack_write(t);
    copies_sync(t, false, true);
}

/* Sends msgs[0..n) (the batch ending at end) until the callback is done
 * with all, backing off between tries; marks what it is done with.
 * Mutex held (released around the sends).  Whether all were. */
static bool batch_send(struct strata_pqueue *t, struct iovec *msgs, const uint64_t *after,
                       size_t n, uint64_t end)
{
    uint64_t backoff = 0;
    size_t i = 0;
    while (!t->stop) {
        pthread_mutex_unlock(&t->mu);
        enum strata_pqueue_sent rc;
        size_t k = strata_pqueue__send(&t->o, msgs + i, n - i, &rc);
        pthread_mutex_lock(&t->mu);
        if (k) {
            strata_pqueue__count_sent(&t->counts, rc, k);
            i += k;
            finish(t, end, after[i - 1], k);
            if (i == n)
                return true;
        }
        atomic_fetch_add(&t->counts.failed, 1);
        backoff = strata_pqueue__backoff(backoff);
        /* New records do not cut the wait short, or a dead target would
         * be tried once per record. */
        for (uint64_t until = strata_pqueue__now_ms() + backoff; !t->stop && strata_pqueue__now_ms() < until;) {
            if (!sync_due(t))
                wait_ms(t, until - strata_pqueue__now_ms() < SYNC_MS ? until - strata_pqueue__now_ms() : SYNC_MS);
        }
    }
    return false; /* stopping: the rest stays for the next run */
}

/* Whether a record taken and not done with has ordering key ok (an
 * earlier one: the record asking is not taken yet).  Mutex held. */
static int key_busy(const struct strata_pqueue *t, uint64_t ok)
{
    for (unsigned i = 0; i < t->nfl; i++)
        if (!t->fl[i].done && t->fl[i].okey == ok)
            return 1;
    return 0;
}

/* After the record of key ok a thread held is done: the records of that
 * key parked behind it, one after the other, by this thread (buf, msgs
 * and after its own).  Mutex held.  false: stopping. */
static bool send_parked(struct strata_pqueue *t, uint64_t ok, char *buf, struct iovec *msgs,
                        uint64_t *after)
{
    while (ok) {
        unsigned i = 0;
        while (i < t->nfl && !(t->fl[i].parked && t->fl[i].okey == ok))
            i++;
        if (i == t->nfl)
            return true;
        memcpy(buf, t->fl[i].parked, t->fl[i].len + 1);
        free(t->fl[i].parked);
        t->fl[i].parked = NULL;
        msgs[0] = (struct iovec){.iov_base = buf, .iov_len = t->fl[i].len};
        after[0] = t->fl[i].end;
        if (!batch_send(t, msgs, after, 1, after[0]))
            return false;
    }
    return true;
}

/* One delivery thread: takes the next records, sends them and marks them
 * done. */
static void *deliver_main(void *arg)
{
    struct strata_pqueue *t = arg;
    char *buf = malloc(BATCH_BYTES + 1);
    struct iovec msgs[STRATA_PQUEUE_BATCH_MAX];
    uint64_t after[STRATA_PQUEUE_BATCH_MAX];
    pthread_mutex_lock(&t->mu);
    while (!t->stop && buf) {
        if (sync_due(t))
            continue;
        int c = 0;
        while (c < COPIES && !t->live[c])
            c++;
        if (c == COPIES) {
            /* Every copy failed: what is queued waits for a restart. */
            atomic_fetch_add(&t->counts.failed, 1);
            wait_ms(t, BACKOFF_MAX_MS);
            continue;
        }
        if (t->next == t->tail || t->nfl == INFLIGHT_MAX) {
            trunc_if_idle(t, strata_pqueue__now_ms());
            wait_ms(t, t->dirty || t->ack_dirty ? SYNC_MS : IDLE_MS);
            continue;
        }
        /* Take the next records.  Records before the tail never change. */
        size_t n = batch_read(t->fd[c], t->next, t->tail,
                              t->o.send_batch ? STRATA_PQUEUE_BATCH_MAX : 1, buf, msgs, after);
        if (n == 0) {
            /* This copy cannot be read: the next one (if any) is. */
            copy_give_up(t, c);
            continue;
        }
        uint64_t end = after[n - 1];
        uint64_t ok = t->o.order_key && !t->o.send_batch
                          ? t->o.order_key(t->o.ud, msgs[0].iov_base, msgs[0].iov_len)
                          : 0;
        int park = ok ? key_busy(t, ok) : 0;
        char *copy = park ? malloc(msgs[0].iov_len + 1) : NULL;
        if (park && !copy) {
            wait_ms(t, BACKOFF_MIN_MS); /* taken again later: records never change */
            continue;
        }
        t->next = end;
        t->fl[t->nfl++] = (struct inflight){end, false, ok, copy, msgs[0].iov_len};
        if (t->next < t->tail || park)
            pthread_cond_signal(&t->cv); /* another thread may take the next ones */
        if (park) {
            memcpy(copy, msgs[0].iov_base, msgs[0].iov_len + 1);
            continue;
        }
        if (!batch_send(t, msgs, after, n, end) || !send_parked(t, ok, buf, msgs, after))
            break;
    }
    pthread_mutex_unlock(&t->mu);
    free(buf);
    return NULL;
}

void strata_pqueue_destroy(struct strata_pqueue *t)
{
    if (!t)
        return;
    strata_pqueue__cluster_destroy(t->cl);
    strata_pqueue__stop(&t->mu, &t->cv, &t->stop, t->th, t->started);
    copies_sync(t, true, true);
    for (unsigned i = 0; i < t->nfl; i++)
        free(t->fl[i].parked); /* still in the files: sent by the next run */
    for (int i = 0; i < COPIES; i++) {
        if (t->fd[i] >= 0)
            close(t->fd[i]);
        if (t->ack_fd[i] >= 0)
            close(t->ack_fd[i]);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

/* The local queue of t: its copies' files opened and recovered, its
 * senders started; -1 with err (t is left to strata_pqueue_destroy). */
static int local_open(struct strata_pqueue *t, const char *const *dirs, size_t ndirs,
                      const struct strata_pqueue_opts *o, char *err, size_t err_len)
{
    t->o = *o;
    if (!t->o.max)
        t->o.max = 1;
    /* A copy whose directory cannot be used (a dead drive) is left out;
     * one usable copy is enough to start. */
    char path[4200];
    for (size_t i = 0; i < COPIES && i < ndirs; i++) {
        (void)mkdir(dirs[i], 0700);
        snprintf(path, sizeof(path), "%s/%s.q", dirs[i], o->name);
        t->fd[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        snprintf(path, sizeof(path), "%s/%s.ack", dirs[i], o->name);
        t->ack_fd[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    }
    if (queue_recover(t) != 0) {
        snprintf(err, err_len, "cannot open the queue %s in %s: %s", o->name, dirs[0],
                 strerror(errno));
        return -1;
    }
    t->nthreads = strata_pqueue__threads(o->threads);
    return strata_pqueue__start(t->th, t->nthreads, deliver_main, t, &t->started, o->name, err,
                                err_len);
}

int strata_pqueue_create(const char *const *dirs, size_t ndirs, const struct strata_pqueue_opts *o,
                         struct strata_pqueue **out, char *err, size_t err_len)
{
    *out = NULL;
    bool shared = strata_meta_queues_shared(o->cluster);
    if (!shared && ndirs == 0) {
        snprintf(err, err_len, "queue %s: no directory", o->name);
        return -1;
    }
    struct strata_pqueue *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    for (int i = 0; i < COPIES; i++)
        t->fd[i] = t->ack_fd[i] = -1;
    int rc = shared ? strata_pqueue__cluster_create(o, &t->cl, err, err_len)
                    : local_open(t, dirs, ndirs, o, err, err_len);
    if (rc != 0) {
        strata_pqueue_destroy(t);
        return -1;
    }
    *out = t;
    return 0;
}

void strata_pqueue_stats_get(struct strata_pqueue *t, struct strata_pqueue_stats *out)
{
    if (t->cl) {
        strata_pqueue__cluster_stats(t->cl, out);
        return;
    }
    strata_pqueue__counts_get(&t->counts, out);
    pthread_mutex_lock(&t->mu);
    out->pending = t->pending;
    out->copies = 0;
    for (int i = 0; i < COPIES; i++)
        out->copies += t->live[i];
    pthread_mutex_unlock(&t->mu);
}
