/*
 * pqueue.c - persistent message queues with a delivery thread (contract
 * in pqueue.h).
 *
 * Queue file NAME.q: records of a 12-byte header (magic, payload length,
 * CRC32C of the payload) and the payload, appended at the tail under the
 * queue's mutex by whoever pushes.  NAME.ack holds the offset of the first
 * record not yet done with.  The delivery thread reads the record at that
 * offset, sends it, and when send_cb is done with it moves the offset past
 * it; when it reaches the tail both files go back to empty.  On open the
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

struct strata_pqueue {
    strata_pqueue_send_cb send_cb;
    void *ud;
    size_t max;
    int fd, ack_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t head, tail;    /* first record not done with; end of the file */
    uint64_t pending;       /* records in [head, tail) */
    bool dirty;             /* appended since the last sync */
    uint64_t last_push_ms;  /* of the last append (now_ms) */
    bool ack_dirty;
    bool stop;
    bool started;
    pthread_t th;
    _Atomic uint64_t queued, delivered, failed, rejected, dropped;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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
            pthread_cond_signal(&t->cv);
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

static void *deliver_main(void *arg)
{
    struct strata_pqueue *t = arg;
    char *buf = malloc(REC_MAX + 1);
    uint64_t backoff = 0, last_sync = 0, retry_at = 0;
    pthread_mutex_lock(&t->mu);
    while (!t->stop && buf) {
        if ((t->dirty || t->ack_dirty) && now_ms() - last_sync >= SYNC_MS) {
            bool d = t->dirty, a = t->ack_dirty;
            t->dirty = t->ack_dirty = false;
            pthread_mutex_unlock(&t->mu);
            if (d)
                fdatasync(t->fd);
            if (a)
                fdatasync(t->ack_fd);
            last_sync = now_ms();
            pthread_mutex_lock(&t->mu);
            continue;
        }
        if (t->pending == 0) {
            if (t->tail > 0 && t->head == t->tail &&
                (t->tail >= TRUNC_BYTES || now_ms() - t->last_push_ms >= IDLE_MS)) {
                /* Caught up: both files back to empty.  The queue first: a
                 * crash in between leaves an offset past the end, which
                 * recovery reads as 0.  The offset is synced at once, so a
                 * stale one can never point into records appended later. */
                if (ftruncate(t->fd, 0) == 0) {
                    t->head = t->tail = 0;
                    ack_write(t);
                    fdatasync(t->ack_fd);
                }
            }
            wait_ms(t, t->dirty || t->ack_dirty ? SYNC_MS : IDLE_MS);
            continue;
        }
        uint64_t now = now_ms();
        if (now < retry_at) {
            /* Backing off: new messages do not cut the wait short, or a
             * dead target would be tried once per message. */
            wait_ms(t, retry_at - now < SYNC_MS ? retry_at - now : SYNC_MS);
            continue;
        }
        uint64_t off = t->head;
        pthread_mutex_unlock(&t->mu);
        /* Records before the tail never change: read without the lock. */
        uint32_t h[3];
        bool ok = pread(t->fd, h, REC_HDR, (off_t)off) == (ssize_t)REC_HDR &&
                  h[0] == REC_MAGIC && h[1] <= REC_MAX &&
                  pread(t->fd, buf, h[1], (off_t)(off + REC_HDR)) == (ssize_t)h[1];
        enum strata_pqueue_sent rc = STRATA_PQUEUE_RETRY;
        if (ok) {
            buf[h[1]] = '\0';
            rc = t->send_cb(t->ud, buf, h[1]);
        }
        pthread_mutex_lock(&t->mu);
        if (!ok) {
            /* Unreadable queue (disk error): keep trying, slowly. */
            atomic_fetch_add(&t->failed, 1);
            retry_at = now_ms() + BACKOFF_MAX_MS;
            continue;
        }
        if (rc != STRATA_PQUEUE_RETRY) {
            t->head = off + REC_HDR + h[1];
            t->pending--;
            ack_write(t);
            t->ack_dirty = true;
            atomic_fetch_add(rc == STRATA_PQUEUE_DONE ? &t->delivered : &t->rejected, 1);
            backoff = 0;
            continue;
        }
        atomic_fetch_add(&t->failed, 1);
        backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
        if (backoff > BACKOFF_MAX_MS)
            backoff = BACKOFF_MAX_MS;
        retry_at = now_ms() + backoff;
    }
    pthread_mutex_unlock(&t->mu);
    free(buf);
    fdatasync(t->fd);
    fdatasync(t->ack_fd);
    return NULL;
}

void strata_pqueue_destroy(struct strata_pqueue *t)
{
    if (!t)
        return;
    if (t->started) {
        pthread_mutex_lock(&t->mu);
        t->stop = true;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->th, NULL);
    }
    if (t->fd >= 0)
        close(t->fd);
    if (t->ack_fd >= 0)
        close(t->ack_fd);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

int strata_pqueue_create(const char *dir, const char *name, size_t max,
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
    if (pthread_create(&t->th, NULL, deliver_main, t) != 0) {
        snprintf(err, err_len, "queue %s: cannot start its thread", name);
        strata_pqueue_destroy(t);
        return -1;
    }
    t->started = true;
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
