/*
 * notify_queue.c - the targets, their persistent queues and delivery
 * threads (contract in notify.h).
 *
 * Queue file ID.q: records of a 12-byte header (magic, payload length,
 * CRC32C of the payload) and the payload, appended at the tail under the
 * target's mutex by whoever emits.  ID.ack holds the offset of the first
 * record not yet acknowledged by the target, and a generation.  The
 * delivery thread reads the record at that offset (or, for a kind with
 * send_batch, up to STRATA_NOTIFY_BATCH_MAX records from it), sends it,
 * and moves the offset past what was acknowledged; when it reaches the
 * tail both files go back to empty.  On open the records after the offset
 * are counted and a torn last record (a crash mid-append) is cut off.
 * Syncs are batched: the thread fdatasyncs the queue at most every
 * SYNC_MS while there is unsynced data, and the ack file lazily (a lost
 * ack means a redelivery, which at-least-once allows).
 *
 * The queue has a copy (ID.q and ID.ack) in each queue directory (the
 * first two drives): every record is written to every live copy at the
 * same offset before it counts as queued, so losing one drive loses no
 * queued event.  A copy that fails a write or read is given up until the
 * next start.  Every start and every copy given up moves the live copies
 * to a new generation.  At start the copy of the latest generation with
 * the most records wins and is copied over the others (a replaced, empty
 * drive gets the queue back; a stale copy never wins).
 */
#include "notify.h"
#include "notify_internal.h"

#include "sbuf.h"
#include "strata/erasure.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define REC_MAGIC 0x51544e53u /* "SNTQ" */
#define REC_HDR 12u
#define REC_MAX (1u << 20) /* one event's JSON is far smaller */
#define SYNC_MS 50
/* A caught-up queue file is emptied once it is this big, or idle: not
 * after every event, which would make each one an ext4 truncate. */
#define TRUNC_BYTES (4u << 20)
#define IDLE_MS 1000
/* A batch's payload bytes: after the first record (up to REC_MAX), more
 * are added while the total stays below this. */
#define BATCH_BYTES (1u << 20)
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

static const struct strata_notify_kind *const kinds[] = {
    &strata_notify_webhook, &strata_notify_redis, &strata_notify_nats,
    &strata_notify_amqp,    &strata_notify_mqtt,  &strata_notify_postgres};

struct target {
    char id[65];
    const struct strata_notify_kind *kind;
    void *h;
    int fd[STRATA_NOTIFY_QUEUE_COPIES], ack_fd[STRATA_NOTIFY_QUEUE_COPIES]; /* -1: none */
    bool live[STRATA_NOTIFY_QUEUE_COPIES]; /* open, and no I/O error yet */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t head, tail; /* first unacknowledged record; end of the file */
    uint64_t gen;        /* of the live copies (copy_give_up) */
    uint64_t pending;    /* records in [head, tail) */
    bool dirty;          /* appended since the last sync */
    uint64_t last_event_ms; /* of the last append (now_ms) */
    bool ack_dirty;
    bool stop;
    bool started;
    pthread_t th;
    _Atomic uint64_t queued, delivered, failed, dropped;
};

struct strata_notify {
    size_t n;
    size_t queue_max;
    struct target t[STRATA_NOTIFY_TARGETS_MAX];
};

_Atomic unsigned long long strata_notify__seq;

/* What /metrics shows; set while the daemon runs. */
static struct strata_notify *_Atomic active;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool id_ok(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
            return false;
    return true;
}

/* ID:KIND:ADDRESS split: the kind, or NULL with err set. */
static const struct strata_notify_kind *spec_split(const char *spec, char *id, size_t id_len,
                                                   const char **addr, char *err, size_t err_len)
{
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || !id_ok(spec, (size_t)(c1 - spec)) || (size_t)(c1 - spec) >= id_len || !c2[1]) {
        snprintf(err, err_len, "--notify-target %s: want ID:KIND:ADDRESS, ID of letters, "
                               "digits, - and _", spec);
        return NULL;
    }
    memcpy(id, spec, (size_t)(c1 - spec));
    id[c1 - spec] = '\0';
    *addr = c2 + 1;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strlen(kinds[i]->name) == (size_t)(c2 - c1 - 1) &&
            strncmp(kinds[i]->name, c1 + 1, (size_t)(c2 - c1 - 1)) == 0)
            return kinds[i];
    snprintf(err, err_len, "--notify-target %s: unknown or unsupported KIND (this build: "
                           "webhook, redis, nats, amqp, mqtt, postgres)", spec);
    return NULL;
}

int strata_notify_spec_check(const char *spec, char *err, size_t err_len)
{
    char id[65];
    const char *addr;
    const struct strata_notify_kind *k = spec_split(spec, id, sizeof(id), &addr, err, err_len);
    void *h = NULL;
    /* Opening a target checks its ADDRESS and connects to nothing. */
    if (!k || k->open(addr, NULL, &h, err, err_len) != 0)
        return -1;
    k->close(h);
    return 0;
}

/* The first line of path (a bearer token), malloc'ed, or NULL with err. */
static char *token_read(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "re");
    char line[512];
    if (!f || !fgets(line, sizeof(line), f)) {
        snprintf(err, err_len, "--notify-token-file %s: %s", path,
                 f ? "empty" : strerror(errno));
        if (f)
            fclose(f);
        return NULL;
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0] || strpbrk(line, " \t")) {
        snprintf(err, err_len, "--notify-token-file %s: want one token on the first line", path);
        return NULL;
    }
    return strdup(line);
}

static void copy_give_up(struct target *t, int i);

/* The delivered offset and the generation to every live copy's ack file;
 * a copy that cannot be written is given up.  Mutex held (or no thread
 * yet). */
static void ack_write(struct target *t)
{
    uint64_t v[2] = {t->head, t->gen};
    for (int i = 0; i < STRATA_NOTIFY_QUEUE_COPIES; i++)
        if (t->live[i] && pwrite(t->ack_fd[i], v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
            copy_give_up(t, i); /* it writes the survivors */
            return;
        }
}

/* Copy i had an I/O error and is no longer written.  The survivors move
 * to a new generation, synced at once: at the next start the stale copy
 * (say, its drive back) loses to them whatever its length, so it can never
 * be copied over events only the survivors hold.  Mutex held. */
static void copy_give_up(struct target *t, int i)
{
    t->live[i] = false;
    t->gen++;
    ack_write(t);
    for (int j = 0; j < STRATA_NOTIFY_QUEUE_COPIES; j++)
        if (t->live[j])
            fdatasync(t->ack_fd[j]);
}

/* fdatasync of the live copies' queue (q) and/or ack files; without the
 * mutex (the fds stay open until target_fini). */
static void copies_sync(struct target *t, bool q, bool a)
{
    for (int i = 0; i < STRATA_NOTIFY_QUEUE_COPIES; i++) {
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
static int copy_recover(struct target *t, int i, char *buf, struct copy_state *cs)
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
static int copy_clone(struct target *t, int src, int dst, uint64_t tail, char *buf)
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
static int queue_recover(struct target *t)
{
    char *buf = malloc(REC_MAX);
    if (!buf)
        return -1;
    struct copy_state cs[STRATA_NOTIFY_QUEUE_COPIES];
    int best = -1;
    for (int i = 0; i < STRATA_NOTIFY_QUEUE_COPIES; i++) {
        t->live[i] = t->fd[i] >= 0 && t->ack_fd[i] >= 0 && copy_recover(t, i, buf, &cs[i]) == 0;
        if (t->live[i] &&
            (best < 0 || cs[i].gen > cs[best].gen ||
             (cs[i].gen == cs[best].gen &&
              (cs[i].tail > cs[best].tail ||
               (cs[i].tail == cs[best].tail && cs[i].head > cs[best].head)))))
            best = i;
    }
    for (int i = 0; best >= 0 && i < STRATA_NOTIFY_QUEUE_COPIES; i++)
        if (t->live[i] && i != best && (cs[i].tail != cs[best].tail || cs[i].gen != cs[best].gen) &&
            copy_clone(t, best, i, cs[best].tail, buf) != 0)
            t->live[i] = false;
    free(buf);
    if (best < 0)
        return -1;
    t->head = cs[best].head;
    t->tail = cs[best].tail;
    t->pending = cs[best].pending;
    t->gen = cs[best].gen + 1;
    ack_write(t);
    copies_sync(t, false, true);
    atomic_store(&t->queued, t->pending);
    return 0;
}

int strata_notify__enqueue(struct strata_notify *n, int ti, const char *msg, size_t len)
{
    struct target *t = &n->t[ti];
    if (len > REC_MAX) {
        atomic_fetch_add(&t->dropped, 1);
        return -1;
    }
    uint32_t h[3] = {REC_MAGIC, (uint32_t)len, strata_crc32c(0, msg, len)};
    struct iovec iov[2] = {{h, REC_HDR}, {(void *)msg, len}};
    int rc = -1;
    pthread_mutex_lock(&t->mu);
    if (t->pending < n->queue_max) {
        bool any = false;
        for (int i = 0; i < STRATA_NOTIFY_QUEUE_COPIES; i++) {
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
            t->last_event_ms = now_ms();
            rc = 0;
            pthread_cond_signal(&t->cv);
        }
    }
    pthread_mutex_unlock(&t->mu);
    atomic_fetch_add(rc == 0 ? &t->queued : &t->dropped, 1);
    return rc;
}

/* Waits up to ms or until stop; mutex held. */
static void wait_ms(struct target *t, uint64_t ms)
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

/* Reads the records from off on (all before end) into buf (BATCH_BYTES +
 * 1): the first (if whole and good), then more while they fit, up to max.
 * msgs[i] '\0'-terminated, after[i] the offset past record i.  The count:
 * 0 when the first cannot be read. */
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

static void *deliver_main(void *arg)
{
    struct target *t = arg;
    char *buf = malloc(BATCH_BYTES + 1);
    struct iovec msgs[STRATA_NOTIFY_BATCH_MAX];
    uint64_t after[STRATA_NOTIFY_BATCH_MAX];
    uint64_t backoff = 0, last_sync = 0, retry_at = 0;
    pthread_mutex_lock(&t->mu);
    while (!t->stop && buf) {
        if ((t->dirty || t->ack_dirty) && now_ms() - last_sync >= SYNC_MS) {
            bool d = t->dirty, a = t->ack_dirty;
            t->dirty = t->ack_dirty = false;
            pthread_mutex_unlock(&t->mu);
            copies_sync(t, d, a);
            last_sync = now_ms();
            pthread_mutex_lock(&t->mu);
            continue;
        }
        if (t->pending == 0) {
            if (t->tail > 0 && t->head == t->tail &&
                (t->tail >= TRUNC_BYTES || now_ms() - t->last_event_ms >= IDLE_MS)) {
                /* Caught up: both files back to empty.  The queue first: a
                 * crash in between leaves an offset past the end, which
                 * recovery reads as 0.  The offset is synced at once, so a
                 * stale one can never point into records appended later. */
                for (int i = 0; i < STRATA_NOTIFY_QUEUE_COPIES; i++)
                    if (t->live[i] && ftruncate(t->fd[i], 0) != 0)
                        copy_give_up(t, i);
                t->head = t->tail = 0;
                ack_write(t);
                copies_sync(t, false, true);
            }
            wait_ms(t, t->dirty || t->ack_dirty ? SYNC_MS : IDLE_MS);
            continue;
        }
        uint64_t now = now_ms();
        if (now < retry_at) {
            /* Backing off: new events do not cut the wait short, or a dead
             * target would be tried once per event. */
            wait_ms(t, retry_at - now < SYNC_MS ? retry_at - now : SYNC_MS);
            continue;
        }
        uint64_t off = t->head, end = t->tail;
        int c = 0;
        while (c < STRATA_NOTIFY_QUEUE_COPIES && !t->live[c])
            c++;
        if (c == STRATA_NOTIFY_QUEUE_COPIES) {
            /* Every copy failed: what is queued waits for a restart. */
            atomic_fetch_add(&t->failed, 1);
            wait_ms(t, BACKOFF_MAX_MS);
            continue;
        }
        int fd = t->fd[c];
        pthread_mutex_unlock(&t->mu);
        /* Records before the tail never change: read without the lock. */
        size_t n = batch_read(fd, off, end, t->kind->send_batch ? STRATA_NOTIFY_BATCH_MAX : 1,
                              buf, msgs, after);
        size_t k = n == 0                ? 0
                   : t->kind->send_batch ? t->kind->send_batch(t->h, msgs, n)
                                         : t->kind->send(t->h, msgs[0].iov_base,
                                                         msgs[0].iov_len) == 0;
        pthread_mutex_lock(&t->mu);
        if (n == 0) {
            /* This copy cannot be read: the next one (if any) is. */
            if (t->live[c])
                copy_give_up(t, c);
            continue;
        }
        if (k > 0) {
            t->head = after[k - 1];
            t->pending -= k;
            ack_write(t);
            t->ack_dirty = true;
            atomic_fetch_add(&t->delivered, k);
            if (k == n) {
                backoff = 0;
                continue;
            }
        }
        atomic_fetch_add(&t->failed, 1);
        backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
        if (backoff > BACKOFF_MAX_MS)
            backoff = BACKOFF_MAX_MS;
        retry_at = now_ms() + backoff;
    }
    pthread_mutex_unlock(&t->mu);
    free(buf);
    copies_sync(t, true, true);
    return NULL;
}

static void target_fini(struct target *t)
{
    if (t->started) {
        pthread_mutex_lock(&t->mu);
        t->stop = true;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->th, NULL);
    }
    if (t->kind && t->h)
        t->kind->close(t->h);
    for (int i = 0; i < STRATA_NOTIFY_QUEUE_COPIES; i++) {
        if (t->fd[i] >= 0)
            close(t->fd[i]);
        if (t->ack_fd[i] >= 0)
            close(t->ack_fd[i]);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

void strata_notify_destroy(struct strata_notify *n)
{
    if (!n)
        return;
    if (atomic_load(&active) == n)
        atomic_store(&active, NULL);
    for (size_t i = 0; i < n->n; i++)
        target_fini(&n->t[i]);
    free(n);
}

static int target_open(struct strata_notify *n, const char *spec, const char *const *tokens,
                       size_t ntokens, const char *const *dirs, size_t ndirs, char *err,
                       size_t err_len)
{
    struct target *t = &n->t[n->n];
    for (int i = 0; i < STRATA_NOTIFY_QUEUE_COPIES; i++)
        t->fd[i] = t->ack_fd[i] = -1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    n->n++; /* from here target_fini undoes it */
    const char *addr;
    t->kind = spec_split(spec, t->id, sizeof(t->id), &addr, err, err_len);
    if (!t->kind)
        return -1;
    for (size_t i = 0; i + 1 < n->n; i++)
        if (strcmp(n->t[i].id, t->id) == 0) {
            snprintf(err, err_len, "--notify-target %s: ID given twice", spec);
            return -1;
        }
    char *token = NULL;
    for (size_t i = 0; i < ntokens; i++) {
        size_t l = strlen(t->id);
        if (strncmp(tokens[i], t->id, l) == 0 && tokens[i][l] == ':' &&
            !(token = token_read(tokens[i] + l + 1, err, err_len)))
            return -1;
    }
    int rc = t->kind->open(addr, token, &t->h, err, err_len);
    if (token)
        memset(token, 0, strlen(token));
    free(token);
    if (rc)
        return -1;
    /* A copy whose directory cannot be used (a dead drive) is left out;
     * one usable copy is enough to start. */
    char path[4200];
    for (size_t i = 0; i < ndirs && i < STRATA_NOTIFY_QUEUE_COPIES; i++) {
        snprintf(path, sizeof(path), "%s/%s.q", dirs[i], t->id);
        t->fd[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        snprintf(path, sizeof(path), "%s/%s.ack", dirs[i], t->id);
        t->ack_fd[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    }
    if (queue_recover(t) != 0) {
        snprintf(err, err_len, "notify target %s: cannot open its queue in %s: %s", t->id,
                 dirs[0], strerror(errno));
        return -1;
    }
    if (pthread_create(&t->th, NULL, deliver_main, t) != 0) {
        snprintf(err, err_len, "notify target %s: cannot start its thread", t->id);
        return -1;
    }
    t->started = true;
    return 0;
}

int strata_notify_create(const char *const *specs, size_t nspecs, const char *const *token_specs,
                         size_t ntokens, const char *const *dirs, size_t ndirs, size_t queue_max,
                         struct strata_notify **out, char *err, size_t err_len)
{
    *out = NULL;
    if (nspecs == 0)
        return 0;
    if (nspecs > STRATA_NOTIFY_TARGETS_MAX) {
        snprintf(err, err_len, "at most %d --notify-target", STRATA_NOTIFY_TARGETS_MAX);
        return -1;
    }
    for (size_t i = 0; i < ntokens; i++) {
        const char *c = strchr(token_specs[i], ':');
        bool named = false;
        for (size_t j = 0; c && j < nspecs; j++)
            named |= strncmp(specs[j], token_specs[i], (size_t)(c - token_specs[i]) + 1) == 0;
        if (!named) {
            snprintf(err, err_len, "--notify-token-file %s: want ID:FILE of a --notify-target",
                     token_specs[i]);
            return -1;
        }
    }
    if (ndirs == 0) {
        snprintf(err, err_len, "no directory for the event queues");
        return -1;
    }
    for (size_t i = 0; i < ndirs; i++)
        (void)mkdir(dirs[i], 0700); /* failing (a dead drive): its copy is left out */
    struct strata_notify *n = calloc(1, sizeof(*n));
    if (!n) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    n->queue_max = queue_max ? queue_max : STRATA_NOTIFY_QUEUE_MAX_DEFAULT;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    atomic_store(&strata_notify__seq,
                 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
    for (size_t i = 0; i < nspecs; i++)
        if (target_open(n, specs[i], token_specs, ntokens, dirs, ndirs, err, err_len) != 0) {
            strata_notify_destroy(n);
            return -1;
        }
    atomic_store(&active, n);
    *out = n;
    return 0;
}

int strata_notify_target_find(const struct strata_notify *n, const char *arn)
{
    static const char pre[] = "arn:strata:sqs:";
    if (!n || strncmp(arn, pre, sizeof(pre) - 1) != 0)
        return -1;
    const char *region_end = strchr(arn + sizeof(pre) - 1, ':');
    if (!region_end)
        return -1;
    const char *id = region_end + 1, *c = strchr(id, ':');
    if (!c)
        return -1;
    for (size_t i = 0; i < n->n; i++)
        if (strlen(n->t[i].id) == (size_t)(c - id) && strncmp(n->t[i].id, id, (size_t)(c - id)) == 0 &&
            strcmp(n->t[i].kind->name, c + 1) == 0)
            return (int)i;
    return -1;
}

void strata_notify_metrics_render(struct strata_sbuf *b)
{
    struct strata_notify *n = atomic_load(&active);
    if (!n)
        return;
    static const struct {
        const char *name, *help;
        size_t off;
    } ctrs[] = {
        {"queued", "Events written to the target's queue.", offsetof(struct target, queued)},
        {"delivered", "Events the target acknowledged.", offsetof(struct target, delivered)},
        {"failed", "Delivery attempts that failed (retried).", offsetof(struct target, failed)},
        {"dropped", "Events not queued: the queue was full or could not be written.",
         offsetof(struct target, dropped)},
    };
    for (size_t c = 0; c < sizeof(ctrs) / sizeof(ctrs[0]); c++) {
        strata_sbuf_printf(b, "# HELP strata_notify_%s_total %s\n# TYPE strata_notify_%s_total "
                              "counter\n", ctrs[c].name, ctrs[c].help, ctrs[c].name);
        for (size_t i = 0; i < n->n; i++)
            strata_sbuf_printf(b, "strata_notify_%s_total{target=\"%s\",kind=\"%s\"} %llu\n",
                               ctrs[c].name, n->t[i].id, n->t[i].kind->name,
                               (unsigned long long)atomic_load(
                                   (_Atomic uint64_t *)((char *)&n->t[i] + ctrs[c].off)));
    }
    static const char *const gauges[][2] = {
        {"pending", "Events queued and not yet delivered."},
        {"queue_copies", "Copies of the target's queue being written (one per queue drive)."},
    };
    for (size_t g = 0; g < 2; g++) {
        strata_sbuf_printf(b, "# HELP strata_notify_%s %s\n# TYPE strata_notify_%s gauge\n",
                           gauges[g][0], gauges[g][1], gauges[g][0]);
        for (size_t i = 0; i < n->n; i++) {
            struct target *t = &n->t[i];
            pthread_mutex_lock(&t->mu);
            uint64_t v = t->pending;
            if (g == 1)
                for (int c = v = 0; c < STRATA_NOTIFY_QUEUE_COPIES; c++)
                    v += t->live[c];
            pthread_mutex_unlock(&t->mu);
            strata_sbuf_printf(b, "strata_notify_%s{target=\"%s\",kind=\"%s\"} %llu\n",
                               gauges[g][0], t->id, t->kind->name, (unsigned long long)v);
        }
    }
}
