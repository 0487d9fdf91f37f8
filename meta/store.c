/*
 * store.c - the per-drive RocksDB stores, their writer threads, quorum
 * commits and the k-way merge of iterators.
 *
 * Each online drive has one RocksDB (drive/meta) and one writer thread.
 * Callers build a write batch per drive and hand them to the drives' writer
 * threads at once (set_apply), so the drives sync in parallel.  A writer
 * thread takes every batch queued while its previous sync ran and commits
 * them as one synced RocksDB write: concurrent puts share fsyncs (group
 * commit) instead of queueing one fsync each.
 *
 * A commit that reached every drive of the set then drops the tombstones
 * it wrote: the deletes ride with each drive's next group (queued after
 * the commit, so written after it; losing them in a crash only leaves a
 * tombstone behind).
 *
 * A store that failed a write is failed for writes until a probe write
 * succeeds (see "write failures" below): commits skip it like an offline
 * drive, and its WAL is never synced meanwhile.
 *
 * Threads: any caller thread builds batches and waits; the writer threads
 * only write.  Lock order: bucket_mu -> bucket_rw stripe (local/bucket.c) -> key
 * stripe lock (object.c, mpu.c) -> drive io_rw -> drive mu -> wait mu;
 * pin_mu (pin.c) is a leaf.  No lock is held while waiting on another.
 */
#include "meta_internal.h"
#include "store.h"
#include "local/rcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "strata/assert.h"
#include "strata/thread.h"

/* ---- write failures ----------------------------------------------------- */

/*
 * A store whose write failed (its disk full, an I/O error) is in RocksDB's
 * background-error state: it refuses every later write without touching its
 * WAL, and RocksDB recovers it by itself once the disk has room again (its
 * SstFileManager polls the free space; it wants the memtable budget free).
 * Debian's RocksDB 7.8 keeps its assertions, and a failed WAL file must not
 * be used again: rocksdb_flush_wal on that store aborts the process
 * (WritableFileWriter "sync_without_flush_called_"; later RocksDB releases
 * stop writing to a failed WAL).  So a failed store is failed for writes:
 * commits skip it (a missed write: below the set's size it is queued for
 * heal), its WAL is not synced, and one write every META_WRETRY_MS probes
 * it; the first one that succeeds ends the state.  A restart reopens the
 * store in any case.  Writes hold io_rw shared and a WAL sync holds it
 * exclusive, so a sync never runs beside a write that is failing.
 *
 * One failure is never probed: a WAL write that failed while the memtable
 * was empty.  RocksDB 7.8 resumes such a store, once the disk has room,
 * without switching to a new WAL (it switches only a non-empty memtable),
 * so the failed WAL file writer stays in use and the next write or WAL
 * sync trips its assertion: a probe, or a write at shutdown, aborted the
 * daemon.  That store takes no writes until a restart reopens it (a new
 * WAL); its missed writes are healed like any others.
 */
#define META_WRETRY_MS 1000

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 0 when a write may go to the store now (a due probe is let through
 * once), else what the skipped write fails with. */
static int drive_writable(struct meta_drive *d)
{
    if (!d->db)
        return STRATA_EIO;
    int rc = 0;
    pthread_mutex_lock(&d->mu);
    if (d->wfail) {
        uint64_t now = mono_ns();
        if (now >= d->wretry_ns && !d->wdead)
            d->wretry_ns = now + META_WRETRY_MS * 1000000ull;
        else
            rc = d->wfail_nospc ? STRATA_ENOSPC : STRATA_EIO;
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* Record the outcome of a write (err from RocksDB, NULL on success); logs
 * the changes of state only, so a full drive does not log every write. */
static int write_result(struct meta_drive *d, const char *err)
{
    struct strata_set *set = d->m->sets[d->set].set;
    const char *path = strata_set_drive_path(set, d->idx);
    /* erasure/ keeps the drive's state (admin info, metrics, writers):
     * RocksDB's status text is all meta/ has of the errno. */
    strata_set_drive_store_result(set, d->idx,
                                  !err                                     ? STRATA_DRIVE_ONLINE
                                  : strstr(err, "No space left on device") ? STRATA_DRIVE_FULL
                                  : strstr(err, "Read-only file system")   ? STRATA_DRIVE_READONLY
                                                                           : STRATA_DRIVE_FAULTY);
    /* A WAL file is "<number>.log" (the info LOG has no dot).  Nothing
     * enters the memtable once a write failed, so it is as the failure
     * left it.  Read before taking mu: RocksDB takes its own mutex. */
    uint64_t mem_entries = 1;
    bool dead =
        err && strstr(err, ".log") &&
        !rocksdb_property_int(d->db, "rocksdb.num-entries-active-mem-table", &mem_entries) &&
        mem_entries == 0;
    pthread_mutex_lock(&d->mu);
    bool was = d->wfail;
    if (!err) {
        d->wfail = false;
        pthread_mutex_unlock(&d->mu);
        if (was)
            strata_log(&d->m->log, STRATA_LOG_NOTICE, "meta",
                       "drive %s: metadata writes resumed", path);
        return 0;
    }
    d->wfail = true;
    d->wfail_nospc = strstr(err, "No space left on device") != NULL;
    d->wretry_ns = mono_ns() + META_WRETRY_MS * 1000000ull;
    bool was_dead = d->wdead;
    d->wdead = d->wdead || dead;
    int rc = d->wfail_nospc ? STRATA_ENOSPC : STRATA_EIO;
    pthread_mutex_unlock(&d->mu);
    if (!was)
        strata_log(&d->m->log, STRATA_LOG_ERR, "meta",
                   "drive %s: write failed: %s; its writes are skipped (healed later) "
                   "and retried every %d ms", path, err, META_WRETRY_MS);
    if (dead && !was_dead)
        strata_log(&d->m->log, STRATA_LOG_ERR, "meta",
                   "drive %s: its write-ahead log failed while the memtable was empty; "
                   "RocksDB would resume the store with that failed log, so it takes no "
                   "writes until a restart (heal refills it then)",
                   path);
    return rc;
}

/* Every write to a drive's store: through its small-object log when it
 * has one (its appends synced first, live bytes counted in the batch). */
static void db_write(struct meta_drive *d, rocksdb_writeoptions_t *wo, rocksdb_writebatch_t *wb,
                     const struct meta_slog_hint *hints, size_t nhints, char **err)
{
    if (d->slog)
        (void)strata_meta__slog_write(d->slog, d->db, wo, wb, hints, nhints, err);
    else
        rocksdb_write(d->db, wo, wb, err);
}

int strata_meta__drive_write(struct strata_meta *m, unsigned set, unsigned d,
                             rocksdb_writeoptions_t *wo, rocksdb_writebatch_t *wb)
{
    struct meta_drive *dr = &m->sets[set].drives[d];
    int rc = drive_writable(dr);
    if (rc)
        return rc;
    char *err = NULL;
    pthread_rwlock_rdlock(&dr->io_rw);
    db_write(dr, wo, wb, NULL, 0, &err);
    rc = write_result(dr, err);
    pthread_rwlock_unlock(&dr->io_rw);
    free(err);
    strata_meta__rcache_wrote(m, wb); /* after the write: no read before it stays cached */
    return rc;
}

int strata_meta__drive_put(struct strata_meta *m, unsigned set, unsigned d,
                           rocksdb_writeoptions_t *wo, const char *k, size_t kl, const char *v,
                           size_t vl)
{
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_writebatch_put(wb, k, kl, v, vl);
    int rc = strata_meta__drive_write(m, set, d, wo, wb);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int strata_meta__drive_delete(struct strata_meta *m, unsigned set, unsigned d,
                              rocksdb_writeoptions_t *wo, const char *k, size_t kl)
{
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_writebatch_delete(wb, k, kl);
    int rc = strata_meta__drive_write(m, set, d, wo, wb);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int strata_meta__drive_sync_wal(struct strata_meta *m, unsigned set, unsigned d)
{
    struct meta_drive *dr = &m->sets[set].drives[d];
    if (!dr->db)
        return STRATA_EIO;
    pthread_rwlock_wrlock(&dr->io_rw);
    pthread_mutex_lock(&dr->mu);
    int rc = !dr->wfail ? 0 : dr->wfail_nospc ? STRATA_ENOSPC : STRATA_EIO;
    pthread_mutex_unlock(&dr->mu);
    if (rc == 0) {
        char *err = NULL;
        rocksdb_flush_wal(dr->db, 1, &err);
        if (err)
            rc = write_result(dr, err);
        free(err);
    }
    pthread_rwlock_unlock(&dr->io_rw);
    return rc;
}

/* ---- writer threads ----------------------------------------------------- */

/*
 * One batch holding every queued batch's operations, in queue order.  A
 * batch's representation is a 12-byte header (sequence, count; RocksDB's
 * WAL record format) and its records, so the merge is one sized copy of
 * the records; re-adding them one by one through the API grew the batch
 * by reallocation and copied each inline shard two or three times.
 */
static rocksdb_writebatch_t *batches_merge(const struct meta_wjob *jobs)
{
    enum { HDR = 12 };
    size_t total = HDR;
    uint32_t count = 0;
    for (const struct meta_wjob *j = jobs; j; j = j->next) {
        size_t n = 0;
        (void)rocksdb_writebatch_data(j->wb, &n);
        STRATA_ASSERT(n >= HDR);
        total += n - HDR;
        count += (uint32_t)rocksdb_writebatch_count(j->wb);
    }
    char *rep = malloc(total);
    if (!rep)
        return NULL;
    memset(rep, 0, HDR);
    for (unsigned i = 0; i < 4; i++) /* fixed32, little-endian */
        rep[8 + i] = (char)(count >> (8 * i));
    size_t off = HDR;
    for (const struct meta_wjob *j = jobs; j; j = j->next) {
        size_t n = 0;
        const char *d = rocksdb_writebatch_data(j->wb, &n);
        memcpy(rep + off, d + HDR, n - HDR);
        off += n - HDR;
    }
    rocksdb_writebatch_t *all = rocksdb_writebatch_create_from(rep, total);
    free(rep);
    return all;
}

static void job_done(struct meta_wjob *j, int rc)
{
    struct meta_wwait *w = j->wait;
    if (!w) { /* a rider: nobody waits for it */
        rocksdb_writebatch_destroy(j->wb);
        free(j);
        return;
    }
    j->rc = rc;
    pthread_mutex_lock(&w->mu);
    if (--w->pending == 0)
        pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void *drive_thread(void *arg)
{
    struct meta_drive *d = arg;
    pthread_mutex_lock(&d->mu);
    /* The next dead log segment due (CLOCK_MONOTONIC); at once after the
     * open, for the segments nothing counts any more. */
    uint64_t reap_ns = d->slog ? 1 : 0;
    for (;;) {
        while (!d->head && !d->stop) {
            if (!reap_ns) {
                pthread_cond_wait(&d->cv, &d->mu);
                continue;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t now = mono_ns(), wait = reap_ns > now ? reap_ns - now : 0;
            uint64_t at = (uint64_t)ts.tv_nsec + wait;
            ts.tv_sec += (time_t)(at / 1000000000u);
            ts.tv_nsec = (long)(at % 1000000000u);
            if (wait && pthread_cond_timedwait(&d->cv, &d->mu, &ts) != ETIMEDOUT)
                continue;
            pthread_mutex_unlock(&d->mu);
            reap_ns = strata_meta__slog_reap(d->slog);
            pthread_mutex_lock(&d->mu);
        }
        if (!d->head)
            break;
        struct meta_wjob *jobs = d->head;
        d->head = d->tail = NULL;
        pthread_mutex_unlock(&d->mu);

        char *err = NULL;
        int rc = 0;
        /* Jobs queued before a failure still reach RocksDB, which refuses
         * them without touching its WAL. */
        /* A group of riders only needs no sync: nobody waits for it. */
        rocksdb_writeoptions_t *wo = d->m->wnosync;
        /* The group's hints (those past the array: the keys are read). */
        struct meta_slog_hint hints[64];
        size_t nh = 0;
        for (const struct meta_wjob *j = jobs; j; j = j->next) {
            if (j->wait)
                wo = d->m->wsync;
            for (size_t i = 0; j->hints && i < j->hints->n && nh < 64; i++)
                hints[nh++] = j->hints->h[i];
        }
        pthread_rwlock_rdlock(&d->io_rw);
        if (!jobs->next) {
            db_write(d, wo, jobs->wb, hints, nh, &err);
            rc = write_result(d, err);
        } else {
            /* Batches of different keys commute; one synced write covers all. */
            rocksdb_writebatch_t *all = batches_merge(jobs);
            if (all) {
                db_write(d, wo, all, hints, nh, &err);
                rocksdb_writebatch_destroy(all);
                rc = write_result(d, err);
            } else {
                rc = STRATA_ENOMEM;
            }
        }
        pthread_rwlock_unlock(&d->io_rw);
        free(err);
        /* Before the waiters go on: a commit answered has ended the
         * cached reads of its keys.  A rider only drops tombstones that
         * every drive holds, which no read answers differently after, so
         * it leaves the cache alone (a GET filling meanwhile keeps its
         * entry). */
        for (struct meta_wjob *j = jobs; j; j = j->next)
            if (j->wait)
                strata_meta__rcache_wrote(d->m, j->wb);
        while (jobs) {
            struct meta_wjob *next = jobs->next; /* jobs belongs to its waiter after done */
            job_done(jobs, rc);
            jobs = next;
        }
        if (d->slog)
            reap_ns = strata_meta__slog_reap(d->slog);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* set_apply; rcs[d] (may be NULL) receives each drive's outcome. */
static unsigned set_apply_rc(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                             const struct meta_slog_hints *hints, bool *ok, int *rcs)
{
    struct meta_set *ms = &m->sets[set];
    struct meta_wjob jobs[STRATA_DRIVES_MAX];
    bool send[STRATA_DRIVES_MAX];
    struct meta_wwait w;
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    w.pending = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        struct meta_drive *dr = &ms->drives[d];
        ok[d] = false;
        jobs[d].rc = STRATA_EIO;
        /* A failed store is skipped like an offline drive (a probe aside). */
        send[d] = false;
        if (wbs[d]) {
            jobs[d].rc = drive_writable(dr);
            send[d] = jobs[d].rc == 0;
        }
        if (send[d]) {
            strata_meta__due_hook(wbs[d]); /* the index entries go in the same batch */
            w.pending++;
        }
    }
    unsigned queued = w.pending;
    for (unsigned d = 0; d < ms->n && queued; d++) {
        struct meta_drive *dr = &ms->drives[d];
        if (!send[d])
            continue;
        jobs[d].next = NULL;
        jobs[d].wb = wbs[d];
        jobs[d].hints = hints ? &hints[d] : NULL;
        jobs[d].wait = &w;
        pthread_mutex_lock(&dr->mu);
        if (dr->tail)
            dr->tail->next = &jobs[d];
        else
            dr->head = &jobs[d];
        dr->tail = &jobs[d];
        pthread_cond_signal(&dr->cv);
        pthread_mutex_unlock(&dr->mu);
    }
    pthread_mutex_lock(&w.mu);
    while (w.pending)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    unsigned n_ok = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (rcs)
            rcs[d] = wbs[d] ? jobs[d].rc : 0;
        if (send[d] && jobs[d].rc == 0) {
            ok[d] = true;
            n_ok++;
        }
    }
    return n_ok;
}

unsigned strata_meta__set_apply(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                                bool *ok)
{
    return set_apply_rc(m, set, wbs, NULL, ok, NULL);
}

static void tomb_drop_cb(void *st, const char *k, size_t klen, const char *v, size_t vlen)
{
    if (strata_meta__is_tomb(v, vlen))
        rocksdb_writebatch_delete(st, k, klen);
}

static void no_del_cb(void *st, const char *k, size_t klen)
{
    (void)st;
    (void)k;
    (void)klen;
}

/* Queue wb on drive d as a rider of its writer thread's next group (which
 * takes wb); false when the drive takes no writes now (wb is left to the
 * caller). */
static bool drive_ride(struct meta_drive *dr, rocksdb_writebatch_t *wb)
{
    if (drive_writable(dr))
        return false;
    struct meta_wjob *j = malloc(sizeof(*j));
    if (!j)
        return false;
    j->next = NULL;
    j->wb = wb;
    j->hints = NULL;
    j->rc = 0;
    j->wait = NULL;
    pthread_mutex_lock(&dr->mu);
    bool ok = dr->thr_started && !dr->stop;
    if (ok) {
        if (dr->tail)
            dr->tail->next = j;
        else
            dr->head = j;
        dr->tail = j;
        pthread_cond_signal(&dr->cv);
    }
    pthread_mutex_unlock(&dr->mu);
    if (!ok)
        free(j);
    return ok;
}

/*
 * A commit that put tombstones on every drive of the set left no drive that
 * could still hold the deleted versions, so the tombstones can go at once.
 * Batches of one commit carry the same keys on every drive.  The deletes
 * ride with each drive's next group commit instead of a write of their own
 * on the caller's thread: that write joined RocksDB's write group behind
 * the writer thread's synced one and waited for its fdatasync (about a
 * tenth of a small PUT's CPU with the wake-ups).  Queued after the commit
 * on the same queue, a drop is written after it; one that never lands (a
 * crash, a drive failing) leaves only a tombstone, which is harmless (heal
 * drops it).
 */
static void tombs_drop(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                       const bool *ok)
{
    struct meta_set *ms = &m->sets[set];
    for (unsigned d = 0; d < ms->n; d++)
        if (!wbs[d] || !ok[d])
            return;
    rocksdb_writebatch_t *drop = rocksdb_writebatch_create();
    rocksdb_writebatch_iterate(wbs[0], drop, tomb_drop_cb, no_del_cb);
    if (rocksdb_writebatch_count(drop) > 0) {
        size_t n = 0;
        const char *rep = rocksdb_writebatch_data(drop, &n);
        for (unsigned d = 0; d < ms->n; d++) {
            rocksdb_writebatch_t *wb = rocksdb_writebatch_create_from(rep, n);
            if (!drive_ride(&ms->drives[d], wb))
                rocksdb_writebatch_destroy(wb);
        }
    }
    rocksdb_writebatch_destroy(drop);
}

void strata_meta__batches_free(rocksdb_writebatch_t **wbs, rocksdb_writebatch_t **undo)
{
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++) {
        if (wbs[d])
            rocksdb_writebatch_destroy(wbs[d]);
        if (undo[d])
            rocksdb_writebatch_destroy(undo[d]);
        wbs[d] = undo[d] = NULL;
    }
}

void strata_meta__key_batches(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                              const char *v, size_t vl, const struct meta_qraw *old,
                              rocksdb_writebatch_t **wbs, rocksdb_writebatch_t **undo)
{
    struct meta_set *ms = &m->sets[set];
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        wbs[d] = rocksdb_writebatch_create();
        undo[d] = rocksdb_writebatch_create();
        strata_meta__wb_write(wbs[d], k, kl, v != NULL, v, vl);
        bool had = old && old->tried[d] && old->rc[d] == 0;
        strata_meta__wb_write(undo[d], k, kl, had, had ? old->v[d] : NULL, had ? old->vl[d] : 0);
    }
}

int strata_meta__set_commit(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                            rocksdb_writebatch_t **undo)
{
    return strata_meta__set_commit_lazy(m, set, wbs, undo, NULL, NULL);
}

int strata_meta__set_commit_lazy(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                                 rocksdb_writebatch_t **undo, meta_undo_fn undo_fn, void *ud)
{
    return strata_meta__set_commit_hinted(m, set, wbs, NULL, undo, undo_fn, ud);
}

int strata_meta__set_commit_hinted(struct strata_meta *m, unsigned set,
                                   rocksdb_writebatch_t **wbs,
                                   const struct meta_slog_hints *hints,
                                   rocksdb_writebatch_t **undo, meta_undo_fn undo_fn, void *ud)
{
    struct meta_set *ms = &m->sets[set];
    bool ok[STRATA_DRIVES_MAX];
    int rcs[STRATA_DRIVES_MAX];
    unsigned n_ok = set_apply_rc(m, set, wbs, hints, ok, rcs);
    if (n_ok >= strata_set_write_quorum(ms->set)) {
        tombs_drop(m, set, wbs, ok);
        if (n_ok < ms->n) /* committed, but a drive missed it: heal it now */
            for (unsigned d = 0; d < ms->n; d++)
                if (ok[d]) {
                    strata_meta__healq_push(m, set, wbs[d]);
                    break;
                }
        return 0;
    }
    strata_log(&m->log, STRATA_LOG_WARN, "meta", "set %u: %u commits below write quorum %u",
               set, n_ok, strata_set_write_quorum(ms->set));
    if (undo && undo_fn)
        undo_fn(ud, undo); /* only now: a commit that reached its quorum never needs it */
    if (undo) {
        rocksdb_writebatch_t *rb[STRATA_DRIVES_MAX];
        bool ok2[STRATA_DRIVES_MAX];
        unsigned nr = 0;
        for (unsigned d = 0; d < ms->n; d++) {
            rb[d] = ok[d] ? undo[d] : NULL;
            nr += rb[d] != NULL;
        }
        if (nr)
            strata_meta__set_apply(m, set, rb, ok2);
    }
    /* Full drives answer "storage full" (503 with its own message) when
     * they are at least half of the drives that missed the write, as
     * erasure/ does for shard writes. */
    unsigned n_nospc = 0;
    for (unsigned d = 0; d < ms->n; d++)
        n_nospc += !ok[d] && rcs[d] == STRATA_ENOSPC;
    if (n_nospc > 0 && n_nospc >= ms->n - n_ok - n_nospc)
        return STRATA_ENOSPC;
    return STRATA_EQUORUM;
}

/* ---- reads -------------------------------------------------------------- */

/*
 * A drive whose store is missing while another drive of its set has one
 * lost its records (meta/ wiped, or the drive was offline when the set was
 * first used): it is marked fresh before its store is created, so its
 * empty store does not vote until heal refilled it.  A heal that removes
 * records below quorum relies on this (heal.c).  A set whose stores are
 * all missing is a new deployment.  A drive that cannot be marked is left
 * closed (lost[d]: treated as offline) rather than voting empty.
 */
static void lost_stores(struct strata_meta *m, unsigned s, bool *lost)
{
    struct meta_set *ms = &m->sets[s];
    bool missing[STRATA_DRIVES_MAX] = {0}, any_kept = false;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!strata_set_drive_online(ms->set, d))
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/meta/CURRENT", strata_set_drive_path(ms->set, d));
        missing[d] = access(path, F_OK) != 0;
        any_kept |= !missing[d];
    }
    for (unsigned d = 0; d < ms->n && any_kept; d++) {
        if (!missing[d] || strata_set_drive_fresh(ms->set, d))
            continue;
        int rc = strata_set_drive_mark_fresh(ms->set, d);
        lost[d] = rc != 0;
        strata_log(&m->log, rc ? STRATA_LOG_ERR : STRATA_LOG_WARN, "meta",
                   "drive %s: metadata store missing, %s", strata_set_drive_path(ms->set, d),
                   rc ? "cannot mark it fresh: left offline" : "marked fresh until healed");
    }
}

bool strata_meta__drive_readable(const struct strata_meta *m, unsigned set, unsigned d)
{
    const struct meta_set *ms = &m->sets[set];
    /* A freshly formatted drive has no records yet: its "absent" must not
     * outvote the drives that hold the data, so it does not vote until healed. */
    return ms->drives[d].db && !strata_set_drive_fresh(ms->set, d);
}

static int drive_get(struct strata_meta *m, unsigned set, unsigned d, const char *k, size_t klen,
                     char **val, size_t *vlen, const rocksdb_readoptions_t *ro)
{
    struct meta_drive *dr = &m->sets[set].drives[d];
    if (!dr->db)
        return STRATA_EIO;
    char *err = NULL;
    size_t n = 0;
    char *v = rocksdb_get(dr->db, ro, k, klen, &n, &err);
    if (err) {
        free(err);
        return STRATA_EIO;
    }
    if (!v)
        return STRATA_ENOTFOUND;
    *val = v;
    *vlen = n;
    return 0;
}

int strata_meta__drive_get(struct strata_meta *m, unsigned set, unsigned d, const char *k,
                           size_t klen, char **val, size_t *vlen)
{
    return drive_get(m, set, d, k, klen, val, vlen, m->ropts);
}

int strata_meta__drive_get_uncached(struct strata_meta *m, unsigned set, unsigned d, const char *k,
                                    size_t klen, char **val, size_t *vlen)
{
    return drive_get(m, set, d, k, klen, val, vlen, m->ropts_nocache);
}

unsigned strata_meta__set_of(const struct strata_meta *m, const char *bucket, const char *key)
{
    if (m->nsets <= 1)
        return 0; /* one set, or none (a backend without drive sets: RADOS) */
    uint32_t h = strata_crc32c(0, bucket, strlen(bucket));
    h = strata_crc32c(h, "/", 1);
    h = strata_crc32c(h, key, strlen(key));
    return h % m->nsets;
}

int strata_meta__tier_idx(const struct strata_meta *m, const char *name)
{
    if (!name || !*name)
        return 0;
    for (unsigned t = 0; t < m->ntiers; t++)
        if (strcmp(m->tiers[t]->name, name) == 0)
            return (int)t;
    return -1;
}

struct strata_tier *strata_meta__tier(struct strata_meta *m, const char *name)
{
    int t = strata_meta__tier_idx(m, name);
    return t < 0 ? NULL : m->tiers[t];
}

bool strata_meta_tier_known(struct strata_meta *m, const char *name)
{
    return strata_meta__tier_idx(m, name) >= 0;
}

int strata_meta__data_rm(struct strata_meta *m, const char *tier, const char *bucket,
                         const char *key, const uint8_t *id)
{
    struct strata_tier *t = strata_meta__tier(m, tier);
    if (!t)
        return STRATA_EINVAL; /* a tier no longer configured: keep the data */
    strata_meta__dc_drop(m->dcache, t, id);
    return t->ops->remove(t->impl, strata_meta__place(bucket, key), id);
}

uint32_t strata_meta__place(const char *bucket, const char *key)
{
    return strata_meta__key_hash(bucket, key);
}

uint32_t strata_meta__key_hash(const char *bucket, const char *key)
{
    uint32_t h = strata_crc32c(0, bucket, strlen(bucket));
    h = strata_crc32c(h, "/", 1);
    return strata_crc32c(h, key, strlen(key));
}

pthread_mutex_t *strata_meta__key_lock(struct strata_meta *m, const char *bucket,
                                       const char *key)
{
    return &m->key_mu[strata_meta__key_hash(bucket, key) % META_LOCK_STRIPES];
}

_Atomic uint64_t *strata_meta__key_wseq(struct strata_meta *m, const char *bucket, const char *key)
{
    return &m->key_wseq[strata_meta__key_hash(bucket, key) % META_LOCK_STRIPES];
}

rocksdb_iterator_t *strata_meta__iter_new(struct strata_meta *m, unsigned set, unsigned d,
                                          rocksdb_readoptions_t **ro, const char *upper,
                                          size_t upper_len, bool fill_cache)
{
    struct meta_drive *dr = &m->sets[set].drives[d];
    if (!dr->db)
        return NULL;
    *ro = rocksdb_readoptions_create();
    if (upper)
        rocksdb_readoptions_set_iterate_upper_bound(*ro, upper, upper_len);
    if (!fill_cache)
        rocksdb_readoptions_set_fill_cache(*ro, 0);
    return rocksdb_create_iterator(dr->db, *ro);
}

unsigned strata_meta__list_drives(const struct strata_meta *m, unsigned set, unsigned *out)
{
    const struct meta_set *ms = &m->sets[set];
    unsigned want = ms->n - strata_set_write_quorum(ms->set) + 1, got = 0;
    for (unsigned d = 0; d < ms->n && got < want; d++)
        if (strata_meta__drive_readable(m, set, d))
            out[got++] = d;
    return got;
}

/* ---- merge -------------------------------------------------------------- */

int strata_meta__merge_open(struct meta_merge *mg, struct strata_meta *m, const unsigned *sets,
                            unsigned nsets, unsigned flags, const char *hi, size_t hilen)
{
    bool all_drives = flags & MERGE_ALL_DRIVES;
    memset(mg, 0, sizeof(*mg));
    STRATA_ASSERT(hilen <= sizeof(mg->hi));
    memcpy(mg->hi, hi, hilen);
    mg->hilen = hilen;
    mg->cur = -1;
    for (unsigned i = 0; i < nsets; i++) {
        unsigned s = sets[i], ds[STRATA_DRIVES_MAX], nd = 0;
        if (all_drives) {
            for (unsigned d = 0; d < m->sets[s].n; d++)
                if (m->sets[s].drives[d].db)
                    ds[nd++] = d;
        } else {
            nd = strata_meta__list_drives(m, s, ds);
            if (nd < m->sets[s].n - strata_set_write_quorum(m->sets[s].set) + 1) {
                strata_meta__merge_close(mg);
                return STRATA_EQUORUM;
            }
        }
        for (unsigned j = 0; j < nd && mg->n < MERGE_MAX; j++) {
            mg->it[mg->n] = strata_meta__iter_new(m, s, ds[j], &mg->ro[mg->n], mg->hi, mg->hilen,
                                                  !(flags & MERGE_NO_CACHE));
            mg->iset[mg->n] = s;
            if (mg->it[mg->n])
                mg->n++;
        }
    }
    return 0;
}

static int keycmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c)
        return c;
    return al < bl ? -1 : al > bl;
}

static void merge_pick(struct meta_merge *mg)
{
    mg->cur = -1;
    mg->cur_have = mg->cur_of = mg->cur_live = 0;
    const char *best = NULL;
    size_t bl = 0;
    for (unsigned i = 0; i < mg->n; i++) {
        if (!rocksdb_iter_valid(mg->it[i]))
            continue;
        size_t kl;
        const char *k = rocksdb_iter_key(mg->it[i], &kl);
        if (!best || keycmp(k, kl, best, bl) < 0) {
            best = k;
            bl = kl;
            mg->cur = (int)i;
        }
    }
    if (mg->cur < 0)
        return;
    /* Count the holders; a drive that missed a delete must not show the
     * version the others hold a tombstone for, so a tombstone wins (or an
     * upload's completed-upload record: a dead state, too). */
    unsigned set = mg->iset[mg->cur];
    bool tomb = false;
    for (unsigned i = 0; i < mg->n; i++) {
        if (mg->iset[i] != set)
            continue;
        mg->cur_of++;
        if (!rocksdb_iter_valid(mg->it[i]))
            continue;
        size_t kl, vl;
        const char *k = rocksdb_iter_key(mg->it[i], &kl);
        if (keycmp(k, kl, best, bl) != 0)
            continue;
        mg->cur_have++;
        const char *v = rocksdb_iter_value(mg->it[i], &vl);
        bool dead = strata_meta__is_dead(v, vl);
        mg->cur_live += !dead;
        if (!tomb && dead) {
            tomb = true;
            mg->cur = (int)i;
            best = rocksdb_iter_key(mg->it[i], &bl);
        }
    }
}

void strata_meta__merge_votes(const struct meta_merge *mg, unsigned *have, unsigned *of)
{
    *have = mg->cur_have;
    *of = mg->cur_of;
}

unsigned strata_meta__merge_live(const struct meta_merge *mg)
{
    return mg->cur_live;
}

void strata_meta__merge_seek(struct meta_merge *mg, const char *k, size_t klen)
{
    for (unsigned i = 0; i < mg->n; i++)
        rocksdb_iter_seek(mg->it[i], k, klen);
    merge_pick(mg);
}

bool strata_meta__merge_cur(struct meta_merge *mg, const char **k, size_t *klen, const char **v,
                            size_t *vlen)
{
    if (mg->cur < 0)
        return false;
    *k = rocksdb_iter_key(mg->it[mg->cur], klen);
    if (v)
        *v = rocksdb_iter_value(mg->it[mg->cur], vlen);
    return true;
}

void strata_meta__merge_next(struct meta_merge *mg)
{
    if (mg->cur < 0)
        return;
    size_t cl;
    const char *ck = rocksdb_iter_key(mg->it[mg->cur], &cl);
    for (unsigned i = 0; i < mg->n; i++) {
        if ((int)i == mg->cur || !rocksdb_iter_valid(mg->it[i]))
            continue;
        size_t kl;
        const char *k = rocksdb_iter_key(mg->it[i], &kl);
        if (keycmp(k, kl, ck, cl) == 0)
            rocksdb_iter_next(mg->it[i]);
    }
    rocksdb_iter_next(mg->it[mg->cur]); /* last: ck points into it */
    merge_pick(mg);
}

void strata_meta__merge_close(struct meta_merge *mg)
{
    for (unsigned i = 0; i < mg->n; i++) {
        rocksdb_iter_destroy(mg->it[i]);
        rocksdb_readoptions_destroy(mg->ro[i]);
    }
    mg->n = 0;
    mg->cur = -1;
}

/* ---- open / close ------------------------------------------------------- */

static void drive_close(struct meta_drive *d)
{
    if (d->thr_started) {
        strata_thread_stop(d->thr, &d->mu, &d->cv, &d->stop);
        d->thr_started = false;
    }
    strata_meta__slog_close(d->slog);
    d->slog = NULL;
    if (d->db) {
        rocksdb_close(d->db);
        d->db = NULL;
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    pthread_rwlock_destroy(&d->io_rw);
}

void strata_meta_close(struct strata_meta *m)
{
    if (!m)
        return;
    /* No other gateway's notification runs into a handle half closed
     * (RADOS: its watch answers "clock?" from the lock clock). */
    if (m->store && m->store->on_invalidate)
        m->store->on_invalidate(m, NULL, NULL);
    strata_meta__lock_clock_close(m); /* stops its thread, writes the last mark */
    strata_meta__slog_compactor_stop(m); /* before the drives it moves shards on */
    strata_meta__audit_close(m);
    if (m->store && m->store->close)
        m->store->close(m); /* the backend's own state (RADOS: the connection) */
    for (unsigned s = 0; s < m->nsets; s++)
        for (unsigned d = 0; d < m->sets[s].n; d++)
            drive_close(&m->sets[s].drives[d]);
    free(m->sets);
    if (m->ntiers > 0)
        strata_tier_destroy(m->tiers[0]); /* the others are the caller's */
    if (m->wsync)
        rocksdb_writeoptions_destroy(m->wsync);
    if (m->wnosync)
        rocksdb_writeoptions_destroy(m->wnosync);
    if (m->ropts)
        rocksdb_readoptions_destroy(m->ropts);
    if (m->ropts_nocache)
        rocksdb_readoptions_destroy(m->ropts_nocache);
    if (m->dbopts)
        rocksdb_options_destroy(m->dbopts);
    if (m->bbto)
        rocksdb_block_based_options_destroy(m->bbto);
    if (m->cache)
        rocksdb_cache_destroy(m->cache);
    strata_meta__pins_fini(m);
    strata_meta__healq_fini(m);
    strata_meta__rcache_fini(m);
    strata_meta__dc_destroy(m->dcache);
    pthread_mutex_destroy(&m->heal_mu);
    pthread_mutex_destroy(&m->pin_mu);
    pthread_mutex_destroy(&m->bucket_mu);
    for (unsigned i = 0; i < META_LOCK_STRIPES; i++)
        pthread_mutex_destroy(&m->key_mu[i]);
    for (unsigned i = 0; i < META_BUCKET_STRIPES; i++)
        pthread_rwlock_destroy(&m->bucket_rw[i]);
    free(m);
}

int strata_meta__new(const struct strata_meta_opts *opts, struct strata_meta **out)
{
    struct strata_meta *m = calloc(1, sizeof(*m));
    if (!m)
        return STRATA_ENOMEM;
    m->store = &strata_meta__store_local;
    pthread_mutex_init(&m->bucket_mu, NULL);
    pthread_mutex_init(&m->pin_mu, NULL);
    pthread_mutex_init(&m->heal_mu, NULL);
    for (unsigned i = 0; i < META_LOCK_STRIPES; i++)
        pthread_mutex_init(&m->key_mu[i], NULL);
    /* Writer-preferring: a steady stream of commits to a bucket must not
     * starve its DeleteBucket (commits never nest read locks). */
    pthread_rwlockattr_t rwa;
    pthread_rwlockattr_init(&rwa);
    pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    for (unsigned i = 0; i < META_BUCKET_STRIPES; i++)
        pthread_rwlock_init(&m->bucket_rw[i], &rwa);
    pthread_rwlockattr_destroy(&rwa);
    if (strata_meta__healq_init(m) != 0) {
        strata_meta_close(m);
        return STRATA_ENOMEM;
    }
    m->inline_max = opts && opts->inline_max ? opts->inline_max : STRATA_INLINE_MAX_DEFAULT;
    m->object_cache_mb = opts && opts->object_cache_mb ? opts->object_cache_mb : 64;
    m->slog_on = opts && opts->small_object_log;
    m->slog_seg_bytes = opts && opts->slog_segment_mb ? (uint64_t)opts->slog_segment_mb << 20
                                                      : (uint64_t)64 << 20;
    m->slog_grace_ms = opts && opts->slog_grace_ms ? opts->slog_grace_ms : 5000;
    m->slog_compact_ms = opts && opts->slog_compact_ms ? opts->slog_compact_ms : 10000;
    if (strata_meta__dc_create(opts ? opts->data_cache_mb : 0, &m->dcache) != 0) {
        strata_meta_close(m);
        return STRATA_ENOMEM;
    }
    m->dcache_on_write = opts && opts->data_cache_on_write;
    m->part_size_min =
        opts && opts->part_size_min ? opts->part_size_min : STRATA_PART_SIZE_MIN_DEFAULT;
    m->mpu_retry_ns =
        (int64_t)(opts && opts->mpu_retry_s ? opts->mpu_retry_s : STRATA_MPU_RETRY_S_DEFAULT) *
        1000000000;
    if (opts)
        m->log = opts->log;
    *out = m;
    return 0;
}

int strata_meta__open_finish(struct strata_meta *m)
{
    int rc = strata_meta__lock_clock_open(m);
    rc = rc ? rc : strata_meta__audit_open(m);
    return rc ? rc : strata_meta__lock_clock_start(m, strata_meta__audit_note);
}

int strata_meta_open(struct strata_set *const *sets, unsigned nsets,
                     const struct strata_meta_opts *opts, struct strata_meta **out,
                     struct strata_errinfo *ei)
{
    if (!sets || nsets == 0 || !out)
        return STRATA_EINVAL;
    struct strata_meta *m;
    int nrc = strata_meta__new(opts, &m);
    if (nrc)
        return nrc;
    size_t cache_mb = opts && opts->block_cache_mb ? opts->block_cache_mb : 64;
    m->cache = rocksdb_cache_create_lru(cache_mb << 20);
    m->bbto = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(m->bbto, m->cache);
    rocksdb_block_based_options_set_filter_policy(m->bbto, rocksdb_filterpolicy_create_bloom(10));
    /* XXH3 block checksums: this RocksDB's CRC32C is a table loop, and
     * every GET of an inline object verifies a block holding its shard
     * (tens of KiB) when the block cache misses.  The type is recorded per
     * file, so stores written with CRC32C read unchanged. */
    rocksdb_block_based_options_set_checksum(m->bbto, 4 /* kXXH3 */);
    m->dbopts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(m->dbopts, 1);
    rocksdb_options_set_block_based_table_factory(m->dbopts, m->bbto);
    rocksdb_options_set_keep_log_file_num(m->dbopts, 2);
    rocksdb_options_set_max_open_files(m->dbopts, 256);
    /* RocksDB's info LOG shares the drive: on a full disk a failed LOG
     * append followed by any later log line (the write error's own report,
     * "shutdown" at close) trips RocksDB 7.8's assertion and aborts the
     * process.  Only fatal and header lines are written; write errors reach
     * the daemon's log through the returned status (write failures above). */
    rocksdb_options_set_info_log_level(m->dbopts, 4 /* FATAL_LEVEL */);
    /* Memtables: one budget for every store.  RocksDB's default (64 MiB,
     * two per store) let 4 drives hold 512 MiB, and inline shards (tens of
     * KiB per record) fill them quickly.  This RocksDB's C API has no
     * shared WriteBufferManager, so the budget is split evenly. */
    size_t nstores = 0;
    for (unsigned s = 0; s < nsets; s++)
        nstores += strata_set_n(sets[s]);
    size_t budget = (opts && opts->memtable_mb ? opts->memtable_mb : STRATA_MEMTABLE_MB_DEFAULT)
                    << 20;
    m->memtable_size = budget / (nstores * 2);
    if (m->memtable_size < ((size_t)1 << 20))
        m->memtable_size = (size_t)1 << 20;
    rocksdb_options_set_write_buffer_size(m->dbopts, m->memtable_size);
    rocksdb_options_set_max_write_buffer_number(m->dbopts, 2);
    /* No compression: most bytes are inline shards, and parity (and any
     * already compressed data) does not compress; Snappy's attempts on
     * every flush and compaction, and decompression on reads, cost 10% of
     * the CPU of a PUT and 16% of a GET of 100 KiB (meta/README.md).  The
     * type is recorded per block: compressed stores read unchanged. */
    rocksdb_options_set_compression(m->dbopts, rocksdb_no_compression);
    /* Level 0 gathers eight memtables before it is merged into level 1,
     * and level 1 is sized to one such batch (RocksDB's tuning rule, never
     * below its 256 MiB default).  Inline shards make every memtable
     * tens of MiB of bytes that compaction copies again at each merge; at
     * RocksDB's trigger of four, compaction took a quarter to a third of
     * the daemon's CPU in the 32-connection 100 KiB PUT cell, and a batch
     * twice as large cut the daemon's CPU per PUT by 11% (meta/README.md
     * "Small durable PUTs").  Reads check at most eight more level-0
     * files' bloom filters; the stall triggers keep their distance. */
    rocksdb_options_set_level0_file_num_compaction_trigger(m->dbopts, STRATA_META_L0_TRIGGER);
    rocksdb_options_set_level0_slowdown_writes_trigger(m->dbopts, STRATA_META_L0_TRIGGER * 3);
    rocksdb_options_set_level0_stop_writes_trigger(m->dbopts, STRATA_META_L0_TRIGGER * 5);
    uint64_t l1 = (uint64_t)m->memtable_size * STRATA_META_L0_TRIGGER;
    rocksdb_options_set_max_bytes_for_level_base(m->dbopts, l1 > STRATA_META_L1_MIN ? l1 : STRATA_META_L1_MIN);
    m->wsync = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(m->wsync, 1);
    m->wnosync = rocksdb_writeoptions_create();
    m->ropts = rocksdb_readoptions_create();
    m->ropts_nocache = rocksdb_readoptions_create();
    rocksdb_readoptions_set_fill_cache(m->ropts_nocache, 0);

    m->sets = calloc(nsets, sizeof(*m->sets));
    if (!m->sets || strata_meta__rcache_init(m) != 0) {
        strata_meta_close(m);
        return STRATA_ENOMEM;
    }
    m->nsets = nsets;
    /* Writer-preferring: a drive's WAL sync is not starved by its writes. */
    pthread_rwlockattr_t iora;
    pthread_rwlockattr_init(&iora);
    pthread_rwlockattr_setkind_np(&iora, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    for (unsigned s = 0; s < nsets; s++) {
        struct meta_set *ms = &m->sets[s];
        ms->set = sets[s];
        ms->n = strata_set_n(sets[s]);
        for (unsigned d = 0; d < ms->n; d++) {
            struct meta_drive *dr = &ms->drives[d];
            dr->m = m;
            dr->set = s;
            dr->idx = d;
            pthread_mutex_init(&dr->mu, NULL);
            pthread_cond_init(&dr->cv, NULL);
            pthread_rwlock_init(&dr->io_rw, &iora);
        }
    }
    pthread_rwlockattr_destroy(&iora);
    int trc = strata_tier_local_create(STRATA_TIER_HOT, sets, nsets, &m->tiers[0]);
    if (trc) {
        strata_meta_close(m);
        return trc;
    }
    m->ntiers = 1;
    for (unsigned t = 0; opts && t < opts->ntiers; t++) {
        struct strata_tier *x = opts->tiers[t];
        if (m->ntiers == STRATA_TIERS_MAX || !x || strata_meta__tier(m, x->name)) {
            if (ei)
                snprintf(ei->msg, sizeof(ei->msg), "tier %s: twice or too many tiers",
                         x ? x->name : "?");
            strata_meta_close(m);
            return STRATA_EINVAL;
        }
        m->tiers[m->ntiers++] = x;
    }
    unsigned opened = 0;
    for (unsigned s = 0; s < nsets; s++) {
        struct meta_set *ms = &m->sets[s];
        bool lost[STRATA_DRIVES_MAX] = {0};
        lost_stores(m, s, lost);
        for (unsigned d = 0; d < ms->n; d++) {
            struct meta_drive *dr = &ms->drives[d];
            if (!strata_set_drive_online(ms->set, d) || lost[d])
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/meta", strata_set_drive_path(ms->set, d));
            char *err = NULL;
            dr->db = rocksdb_open(m->dbopts, path, &err);
            if (err) {
                /* A drive whose store will not open is treated as offline,
                 * like a drive erasure/ could not read. */
                strata_log(&m->log, STRATA_LOG_ERR, "meta", "open %s: %s", path, err);
                if (ei) {
                    ei->drive = (int)d;
                    snprintf(ei->msg, sizeof(ei->msg), "open %.300s: %.200s", path, err);
                }
                free(err);
                dr->db = NULL;
                continue;
            }
            int lrc = strata_meta__slog_open(m, s, d, dr->db, strata_set_drive_path(ms->set, d),
                                             &dr->slog);
            if (lrc) {
                /* Records on this drive may name its log: offline, like a
                 * store that will not open. */
                strata_log(&m->log, STRATA_LOG_ERR, "meta", "open %s/slog: %s",
                           strata_set_drive_path(ms->set, d), strata_strerror(lrc));
                rocksdb_close(dr->db);
                dr->db = NULL;
                continue;
            }
            if (pthread_create(&dr->thr, NULL, drive_thread, dr) != 0) {
                strata_meta_close(m);
                return STRATA_ENOMEM;
            }
            dr->thr_started = true;
            opened++;
        }
        unsigned ok = 0;
        for (unsigned d = 0; d < ms->n; d++)
            ok += ms->drives[d].db != NULL;
        if (ok < strata_set_read_quorum(ms->set)) {
            if (ei)
                snprintf(ei->msg, sizeof(ei->msg), "set %u: only %u metadata stores open", s, ok);
            strata_meta_close(m);
            return STRATA_EQUORUM;
        }
    }
    (void)opened;
    int rc = strata_meta__open_finish(m);
    if (rc == 0 && m->slog_on)
        rc = strata_meta__slog_compactor_start(m);
    if (rc) {
        strata_meta_close(m);
        return rc;
    }
    *out = m;
    return 0;
}
