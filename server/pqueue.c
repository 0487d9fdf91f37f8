/*
 * pqueue.c - persistent message queues with delivery threads (contract
 * in pqueue.h).
 *
 * Queue file NAME.q: records of a 12-byte header (magic, payload length,
 * CRC32C of the payload) and the payload, appended at the tail under the
 * queue's mutex by whoever pushes.  NAME.ack holds the offset of the first
 * record not yet done with.  A delivery thread takes the next record not
 * taken, sends it, and when send_cb is done with it marks it done; the
 * offset moves past the records at the head that are done (with several
 * threads a later record may finish first: it is then delivered again
 * after a crash, as at-least-once allows).  When the offset reaches the
 * tail both files go back to empty.  On open the
 * records after the offset are counted and a torn last record (a crash
 * mid-append) is cut off.  Syncs are batched: the thread fdatasyncs the
 * queue at most every SYNC_MS while there is unsynced data, and the ack
 * file lazily (a lost ack means a redelivery, which at-least-once allows).
 */
#include "pqueue.h"

#include "strata/erasure.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define REC_MAGIC 0x51544e53u /* "SNTQ" */
#define REC_HDR 12u
#define REC_MAX STRATA_PQUEUE_MSG_MAX
#define SYNC_MS 50
/* A caught-up queue file is emptied once it is this big, or idle: not
 * after every message, which would make each one an ext4 truncate. */
#define TRUNC_BYTES (4u << 20)
#define IDLE_MS 1000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

/* A record a thread is sending; kept in offset order. */
struct inflight {
    uint64_t off, end;
    bool done;
};

struct strata_pqueue {
    strata_pqueue_send_cb send_cb;
    void *ud;
    size_t max;
    int fd, ack_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t head, tail;    /* first record not done with; end of the file */
    uint64_t next;          /* first record no thread has taken */
    uint64_t pending;       /* records in [head, tail) */
    struct inflight fl[STRATA_PQUEUE_THREADS_MAX];
    unsigned nfl;
    bool dirty;             /* appended since the last sync */
    uint64_t last_push_ms;  /* of the last append (now_ms) */
    uint64_t last_sync_ms;
    uint64_t stall_until;   /* an unreadable record: wait before trying again */
    bool ack_dirty;
    bool stop;
    unsigned nthreads, started;
    pthread_t th[STRATA_PQUEUE_THREADS_MAX];
    _Atomic uint64_t queued, delivered, failed, rejected, dropped;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

static int ack_write(struct strata_pqueue *t)
{
    uint64_t v = t->head;
    return pwrite(t->ack_fd, &v, sizeof(v), 0) == (ssize_t)sizeof(v) ? 0 : -1;
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

/* Reads the ack offset and counts the records after it; cuts a torn tail. */
static int queue_recover(struct strata_pqueue *t)
{
    uint64_t ack = 0;
    if (pread(t->ack_fd, &ack, sizeof(ack), 0) != (ssize_t)sizeof(ack))
        ack = 0;
    struct stat st;
    if (fstat(t->fd, &st) != 0)
        return -1;
    uint64_t size = (uint64_t)st.st_size, off = ack <= size ? ack : 0;
    t->head = off;
    t->pending = 0;
    char *buf = malloc(REC_MAX);
    if (!buf)
        return -1;
    /* An offset that is not at a record (a lost write of it): the whole
     * file is delivered again rather than lost. */
    if (off > 0 && off < size && !rec_valid(t->fd, off, size, buf))
        off = t->head = 0;
    while (rec_valid(t->fd, off, size, buf)) {
        uint32_t len;
        if (pread(t->fd, &len, sizeof(len), (off_t)off + 4) != (ssize_t)sizeof(len))
            break;
        off += REC_HDR + len;
        t->pending++;
    }
    free(buf);
    t->tail = off;
    t->next = t->head;
    if (off != size && ftruncate(t->fd, (off_t)off) != 0)
        return -1;
    atomic_store(&t->queued, t->pending);
    return 0;
}

int strata_pqueue_push(struct strata_pqueue *t, const void *msg, size_t len)
{
    if (len > REC_MAX) {
        atomic_fetch_add(&t->dropped, 1);
        return -1;
    }
    uint32_t h[3] = {REC_MAGIC, (uint32_t)len, strata_crc32c(0, msg, len)};
    struct iovec iov[2] = {{h, REC_HDR}, {(void *)(uintptr_t)msg, len}};
    int rc = -1;
    pthread_mutex_lock(&t->mu);
    if (t->pending < t->max) {
        ssize_t w = pwritev(t->fd, iov, 2, (off_t)t->tail);
        if (w == (ssize_t)(REC_HDR + len)) {
            t->tail += (uint64_t)w;
            t->pending++;
            t->dirty = true;
            t->last_push_ms = now_ms();
            rc = 0;
            /* Every thread: one may be in a backoff wait on the same cv. */
            pthread_cond_broadcast(&t->cv);
        } else if (w > 0 && ftruncate(t->fd, (off_t)t->tail) != 0) {
            /* A short write left a torn record: recovery cuts it off. */
        }
    }
    pthread_mutex_unlock(&t->mu);
    atomic_fetch_add(rc == 0 ? &t->queued : &t->dropped, 1);
    return rc;
}

/* Waits up to ms or until stop; mutex held. */
static void wait_ms(struct strata_pqueue *t, uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&t->cv, &t->mu, &ts);
}

/* Syncs what is dirty, at most every SYNC_MS; mutex held (released
 * around the syncs).  Whether it synced. */
static bool sync_due(struct strata_pqueue *t)
{
    if (!(t->dirty || t->ack_dirty) || now_ms() - t->last_sync_ms < SYNC_MS)
        return false;
    bool d = t->dirty, a = t->ack_dirty;
    t->dirty = t->ack_dirty = false;
    t->last_sync_ms = now_ms();
    pthread_mutex_unlock(&t->mu);
    if (d)
        fdatasync(t->fd);
    if (a)
        fdatasync(t->ack_fd);
    pthread_mutex_lock(&t->mu);
    return true;
}

/* A record is done with: the offset moves past every done record at the
 * head (records taken later may finish first); mutex held. */
static void finish(struct strata_pqueue *t, uint64_t off)
{
    for (unsigned i = 0; i < t->nfl; i++)
        if (t->fl[i].off == off)
            t->fl[i].done = true;
    unsigned k = 0;
    while (k < t->nfl && t->fl[k].done) {
        t->head = t->fl[k].end;
        t->pending--;
        k++;
    }
    if (k) {
        memmove(t->fl, t->fl + k, (t->nfl - k) * sizeof(t->fl[0]));
        t->nfl -= k;
        ack_write(t);
        t->ack_dirty = true;
    }
}

/* One delivery thread: takes the next record, sends it until send_cb is
 * done with it (backing off between tries), and marks it done. */
static void *deliver_main(void *arg)
{
    struct strata_pqueue *t = arg;
    char *buf = malloc(REC_MAX + 1);
    pthread_mutex_lock(&t->mu);
    while (!t->stop && buf) {
        if (sync_due(t))
            continue;
        uint64_t now = now_ms();
        if (t->next == t->tail || t->nfl == STRATA_PQUEUE_THREADS_MAX || now < t->stall_until) {
            if (t->nfl == 0 && t->tail > 0 && t->head == t->tail &&
                (t->tail >= TRUNC_BYTES || now - t->last_push_ms >= IDLE_MS)) {
                /* Caught up: both files back to empty.  The queue first: a
                 * crash in between leaves an offset past the end, which
                 * recovery reads as 0.  The offset is synced at once, so a
                 * stale one can never point into records appended later. */
                if (ftruncate(t->fd, 0) == 0) {
                    t->head = t->tail = t->next = 0;
                    ack_write(t);
                    fdatasync(t->ack_fd);
                }
            }
            wait_ms(t, t->dirty || t->ack_dirty || now < t->stall_until ? SYNC_MS : IDLE_MS);
            continue;
        }
        /* Take the next record.  Records before the tail never change. */
        uint64_t off = t->next;
        uint32_t h[3];
        if (pread(t->fd, h, REC_HDR, (off_t)off) != (ssize_t)REC_HDR || h[0] != REC_MAGIC ||
            h[1] > REC_MAX || pread(t->fd, buf, h[1], (off_t)(off + REC_HDR)) != (ssize_t)h[1]) {
            /* Unreadable queue (disk error): keep trying, slowly. */
            atomic_fetch_add(&t->failed, 1);
            t->stall_until = now + BACKOFF_MAX_MS;
            continue;
        }
        buf[h[1]] = '\0';
        t->next = off + REC_HDR + h[1];
        t->fl[t->nfl++] = (struct inflight){off, t->next, false};
        if (t->next < t->tail)
            pthread_cond_signal(&t->cv); /* another thread may take the next one */
        uint64_t backoff = 0;
        enum strata_pqueue_sent rc = STRATA_PQUEUE_RETRY;
        while (!t->stop) {
            pthread_mutex_unlock(&t->mu);
            rc = t->send_cb(t->ud, buf, h[1]);
            pthread_mutex_lock(&t->mu);
            if (rc != STRATA_PQUEUE_RETRY)
                break;
            atomic_fetch_add(&t->failed, 1);
            backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
            if (backoff > BACKOFF_MAX_MS)
                backoff = BACKOFF_MAX_MS;
            /* New records do not cut the wait short, or a dead target
             * would be tried once per record. */
            for (uint64_t until = now_ms() + backoff; !t->stop && now_ms() < until;) {
                if (!sync_due(t))
                    wait_ms(t, until - now_ms() < SYNC_MS ? until - now_ms() : SYNC_MS);
            }
        }
        if (rc == STRATA_PQUEUE_RETRY)
            break; /* stopping: the record stays for the next run */
        atomic_fetch_add(rc == STRATA_PQUEUE_DONE ? &t->delivered : &t->rejected, 1);
        finish(t, off);
    }
    pthread_mutex_unlock(&t->mu);
    free(buf);
    return NULL;
}

void strata_pqueue_destroy(struct strata_pqueue *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    for (unsigned i = 0; i < t->started; i++)
        pthread_join(t->th[i], NULL);
    if (t->fd >= 0)
        fdatasync(t->fd);
    if (t->ack_fd >= 0)
        fdatasync(t->ack_fd);
    if (t->fd >= 0)
        close(t->fd);
    if (t->ack_fd >= 0)
        close(t->ack_fd);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

int strata_pqueue_create(const char *dir, const char *name, size_t max, unsigned threads,
                         strata_pqueue_send_cb send_cb, void *ud, struct strata_pqueue **out,
                         char *err, size_t err_len)
{
    *out = NULL;
    struct strata_pqueue *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    t->fd = t->ack_fd = -1;
    t->send_cb = send_cb;
    t->ud = ud;
    t->max = max ? max : 1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s.q", dir, name);
    t->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    snprintf(path, sizeof(path), "%s/%s.ack", dir, name);
    t->ack_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (t->fd < 0 || t->ack_fd < 0 || queue_recover(t) != 0) {
        snprintf(err, err_len, "cannot open the queue %s in %s: %s", name, dir, strerror(errno));
        strata_pqueue_destroy(t);
        return -1;
    }
    t->nthreads = threads < 1 ? 1 : threads > STRATA_PQUEUE_THREADS_MAX ? STRATA_PQUEUE_THREADS_MAX
                                                                        : threads;
    for (unsigned i = 0; i < t->nthreads; i++) {
        if (pthread_create(&t->th[i], NULL, deliver_main, t) != 0) {
            snprintf(err, err_len, "queue %s: cannot start its threads", name);
            strata_pqueue_destroy(t);
            return -1;
        }
        t->started++;
    }
    *out = t;
    return 0;
}

void strata_pqueue_stats_get(struct strata_pqueue *t, struct strata_pqueue_stats *out)
{
    out->queued = atomic_load(&t->queued);
    out->delivered = atomic_load(&t->delivered);
    out->failed = atomic_load(&t->failed);
    out->rejected = atomic_load(&t->rejected);
    out->dropped = atomic_load(&t->dropped);
    pthread_mutex_lock(&t->mu);
    out->pending = t->pending;
    pthread_mutex_unlock(&t->mu);
}
