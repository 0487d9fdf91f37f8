/*
 * slog.c - the small-object log (strata_meta_opts.small_object_log): per
 * drive, the erasure shards of inline objects appended to segment files
 * DRIVE/slog/<id>.seg, the drive's version record holding (segment,
 * offset, length, CRC32C) instead of the bytes.  RocksDB's flushes and
 * compactions then copy ~100-byte records, not ~50 KiB shards (they were
 * 30-70 % of the daemon's CPU on PUT 100 KiB).
 *
 * Durability: appends are pwritten by the committing thread before its
 * batch reaches the drive's writer; every write to the drive's RocksDB
 * (store.c: the writer's group, the direct writes of heal) whose batch
 * names an append its key did not name before first fdatasyncs the
 * segments with completed appends not synced yet, so a record written
 * never points at unsynced bytes.  Segment ids only grow
 * (a new one at each open: max id found + 1), a segment is never appended
 * to after a restart, and a record carries its shard's CRC32C: a torn tail
 * is bytes no record refers to, and nothing has to be parsed at open.
 *
 * Reclaim: the same writes account each segment's live bytes: for every
 * 'O' key the batch puts or deletes, the logged shard of the value it
 * replaces (the commit's hint, else read from the store) is subtracted,
 * the new one's added, and the totals go in the same batch as 'L' keys
 * (meta_internal.h).  A sealed
 * segment (not the one appended to) whose live bytes are zero and whose
 * appends' records were all written (or given up: kept until the next
 * open) is unlinked once the WAL is synced and the grace has passed (a
 * failed commit's undo may still bring a record back within it); readers
 * hold the segment's fd,
 * so a GET that decoded a record before the unlink still reads its bytes.
 * A sealed segment at most half live is compacted (slog_compact.c): its
 * live shards are copied to the current segment and their records
 * switched, after which it is dead and goes as above.
 *
 * Threads: put from committing threads, load from readers, write from the
 * drive's writer thread and heal, reap from the writer thread.
 */
#include "meta_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "strata/assert.h"
#include "strata/erasure.h"

struct slog_seg {
    uint64_t id;
    int fd;          /* -1: the file is gone (an 'L' key without one) */
    unsigned refs;   /* the table's, appenders' and readers' */
    bool listed;     /* in the table; the last ref closes fd once not */
    uint64_t size;   /* bytes reserved by appends */
    uint64_t live;   /* live bytes, as the store's 'L' key says */
    uint64_t pending;        /* appends whose records were not written yet */
    uint64_t zero_ns;        /* monotonic time live became 0 */
    bool compacted;          /* picked for compaction since the open */
    _Atomic uint64_t wgen;   /* appends completed */
    uint64_t sgen;           /* appends fdatasync'ed (under sync_mu) */
};

struct meta_slog {
    struct strata_meta *m;
    unsigned set, d;
    char dir[4096];
    int dfd; /* the directory, for its fsync after a segment is created */
    pthread_mutex_t mu;      /* segs, cur, each segment's size, live, refs */
    pthread_mutex_t acct_mu; /* the live-byte accounting and its write */
    struct slog_seg **segs;  /* sorted by id */
    size_t nsegs, cap;
    struct slog_seg *cur;    /* appended to; NULL: the log is read only */
    uint64_t seg_max;
    uint64_t grace_ns;
    _Atomic uint64_t acct_reads; /* values the accounting read back (no hint) */
    _Atomic uint64_t syncs;      /* fdatasyncs of segments */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Room for one more of *n elements of size esz in *arr (doubling *cap). */
static bool room(void *arr, size_t *cap, size_t n, size_t esz)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*(void **)arr, nc * esz);
    if (!p)
        return false;
    *(void **)arr = p;
    *cap = nc;
    return true;
}

static void seg_path(const struct meta_slog *s, uint64_t id, char *out, size_t n)
{
    snprintf(out, n, "%s/%016" PRIx64 ".seg", s->dir, id);
}

/* Index of id in segs, or where it would go. */
static size_t seg_pos(const struct meta_slog *s, uint64_t id)
{
    size_t lo = 0, hi = s->nsegs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->segs[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct slog_seg *seg_find(const struct meta_slog *s, uint64_t id)
{
    size_t i = seg_pos(s, id);
    return i < s->nsegs && s->segs[i]->id == id ? s->segs[i] : NULL;
}

static struct slog_seg *seg_add(struct meta_slog *s, uint64_t id, int fd)
{
    if (!room(&s->segs, &s->cap, s->nsegs, sizeof(*s->segs)))
        return NULL;
    struct slog_seg *g = malloc(sizeof(*g));
    if (!g)
        return NULL;
    *g = (struct slog_seg){.id = id, .fd = fd, .refs = 1, .listed = true};
    size_t i = seg_pos(s, id);
    memmove(s->segs + i + 1, s->segs + i, (s->nsegs - i) * sizeof(*s->segs));
    s->segs[i] = g;
    s->nsegs++;
    return g;
}

/* Under mu. */
static void seg_unref(struct slog_seg *g)
{
    if (--g->refs)
        return;
    if (g->fd >= 0)
        close(g->fd);
    free(g);
}

/* Under mu: out of the table (its file unlinked by the caller). */
static void seg_unlist(struct meta_slog *s, struct slog_seg *g)
{
    size_t i = seg_pos(s, g->id);
    STRATA_ASSERT(i < s->nsegs && s->segs[i] == g);
    memmove(s->segs + i, s->segs + i + 1, (s->nsegs - i - 1) * sizeof(*s->segs));
    s->nsegs--;
    g->listed = false;
    seg_unref(g);
}

/* Under mu: a new segment to append to, after every id there is. */
static int seg_new(struct meta_slog *s)
{
    uint64_t id = s->nsegs ? s->segs[s->nsegs - 1]->id + 1 : 1;
    char p[4200];
    seg_path(s, id, p, sizeof(p));
    int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno == ENOSPC ? STRATA_ENOSPC : STRATA_EIO;
    /* The name must outlive a power loss before any record names it. */
    if (fsync(s->dfd) != 0) {
        close(fd);
        unlink(p);
        return STRATA_EIO;
    }
    struct slog_seg *g = seg_add(s, id, fd);
    if (!g) {
        close(fd);
        unlink(p);
        return STRATA_ENOMEM;
    }
    s->cur = g;
    return 0;
}

/* ---- 'L' keys ------------------------------------------------------------ */

static size_t lkey(uint64_t id, char out[SLOG_LKEY_LEN])
{
    out[0] = 'L';
    for (unsigned i = 0; i < 8; i++)
        out[1 + i] = (char)(id >> (56 - 8 * i));
    return SLOG_LKEY_LEN;
}

static uint64_t be64(const char *p)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v = v << 8 | (uint8_t)p[i];
    return v;
}

/* Live bytes of every segment the store counts, into the table. */
static int live_load(struct meta_slog *s, rocksdb_t *db)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(db, s->m->ropts_nocache);
    int rc = 0;
    for (rocksdb_iter_seek(it, "L", 1); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl < 1 || k[0] != 'L')
            break;
        const char *v = rocksdb_iter_value(it, &vl);
        if (kl != SLOG_LKEY_LEN || vl != 8)
            continue;
        uint64_t id = be64(k + 1);
        struct slog_seg *g = seg_find(s, id);
        if (!g && !(g = seg_add(s, id, -1)))
            rc = STRATA_ENOMEM;
        else
            g->live = be64(v);
    }
    rocksdb_iter_destroy(it);
    return rc;
}

/* ---- open / close --------------------------------------------------------- */

static int scan_dir(struct meta_slog *s)
{
    DIR *dir = opendir(s->dir);
    if (!dir)
        return STRATA_EIO;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(dir))) {
        char *end;
        uint64_t id = strtoull(e->d_name, &end, 16);
        if (end != e->d_name + 16 || strcmp(end, ".seg") != 0)
            continue;
        int fd = openat(s->dfd, e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* its records read as corrupt shards: heal rewrites them */
        struct stat st;
        if (fstat(fd, &st) != 0 || !seg_add(s, id, fd)) {
            close(fd);
            rc = STRATA_ENOMEM;
        } else {
            seg_find(s, id)->size = (uint64_t)st.st_size;
        }
    }
    closedir(dir);
    return rc;
}

int strata_meta__slog_open(struct strata_meta *m, unsigned set, unsigned d, rocksdb_t *db,
                           const char *drive, struct meta_slog **out)
{
    *out = NULL;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/slog", drive);
    if (m->slog_on) {
        if (mkdir(dir, 0755) == 0) {
            /* The directory's name outlives a power loss before a record
             * names a segment in it. */
            int pfd = open(drive, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            bool synced = pfd >= 0 && fsync(pfd) == 0;
            if (pfd >= 0)
                close(pfd);
            if (!synced)
                return STRATA_EIO;
        } else if (errno != EEXIST) {
            return STRATA_EIO;
        }
    } else if (access(dir, F_OK) != 0) {
        return 0; /* never had one: nothing to read */
    }
    struct meta_slog *s = calloc(1, sizeof(*s));
    if (!s)
        return STRATA_ENOMEM;
    s->m = m;
    s->set = set;
    s->d = d;
    snprintf(s->dir, sizeof(s->dir), "%s", dir);
    s->seg_max = m->slog_seg_bytes;
    s->grace_ns = m->slog_grace_ms * 1000000ull;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->acct_mu, NULL);
    s->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = s->dfd < 0 ? STRATA_EIO : scan_dir(s);
    if (rc == 0)
        rc = live_load(s, db);
    if (rc == 0 && m->slog_on)
        rc = seg_new(s);
    /* Segments nothing counts (dead ones, the unacknowledged tails of the
     * last run, empty segments of earlier opens) are due at once: their
     * zero_ns is 0. */
    if (rc == 0)
        *out = s;
    else
        strata_meta__slog_close(s);
    return rc;
}

void strata_meta__slog_close(struct meta_slog *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    while (s->nsegs)
        seg_unlist(s, s->segs[s->nsegs - 1]);
    pthread_mutex_unlock(&s->mu);
    free(s->segs);
    if (s->dfd >= 0)
        close(s->dfd);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->acct_mu);
    free(s);
}

/* ---- append / read --------------------------------------------------------- */

static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 && errno == ENOSPC ? STRATA_ENOSPC : STRATA_EIO;
        p += w, n -= (size_t)w, off += (uint64_t)w;
    }
    return 0;
}

int strata_meta__slog_put(struct meta_slog *s, struct meta_rec *r)
{
    STRATA_ASSERT(r->shard && !r->logged);
    if (!s || r->shard_len == 0)
        return STRATA_ENOTIMPL;
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (!s->cur)
        rc = STRATA_ENOTIMPL;
    else if (s->cur->size && s->cur->size + r->shard_len > s->seg_max)
        rc = seg_new(s);
    struct slog_seg *g = s->cur;
    uint64_t off = 0;
    if (rc == 0) {
        off = g->size;
        g->size += r->shard_len;
        g->refs++;
        g->pending++;
    }
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return rc;
    rc = pwrite_all(g->fd, r->shard, r->shard_len, off);
    atomic_fetch_add(&g->wgen, 1); /* after the bytes: the next sync covers them */
    pthread_mutex_lock(&s->mu);
    uint64_t id = g->id;
    if (rc)
        g->pending--; /* no record will name it */
    seg_unref(g);
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return rc;
    r->logged = true;
    r->log_seg = id;
    r->log_off = off;
    r->shard = NULL;
    return 0;
}

int strata_meta__slog_load(struct meta_slog *s, struct meta_rec *r, bool nowait, uint8_t **buf)
{
    *buf = NULL;
    if (!r->logged)
        return 0;
    r->shard = NULL;
    if (!s)
        return STRATA_ECORRUPT;
    pthread_mutex_lock(&s->mu);
    struct slog_seg *g = seg_find(s, r->log_seg);
    if (g && g->fd >= 0)
        g->refs++;
    else
        g = NULL;
    pthread_mutex_unlock(&s->mu);
    if (!g)
        return STRATA_ECORRUPT;
    uint8_t *b = malloc(r->shard_len ? r->shard_len : 1);
    int rc = b ? 0 : STRATA_ENOMEM;
    size_t got = 0;
    while (rc == 0 && got < r->shard_len) {
        struct iovec iov = {.iov_base = b + got, .iov_len = r->shard_len - got};
        ssize_t n = preadv2(g->fd, &iov, 1, (off_t)(r->log_off + got), nowait ? RWF_NOWAIT : 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && nowait && (errno == EAGAIN || errno == EOPNOTSUPP))
            rc = STRATA_EBUSY; /* not in the page cache: a thread that may wait reads it */
        else if (n <= 0)
            rc = STRATA_ECORRUPT; /* short: a torn or truncated segment */
        else
            got += (size_t)n;
    }
    pthread_mutex_lock(&s->mu);
    seg_unref(g);
    pthread_mutex_unlock(&s->mu);
    if (rc == 0 && strata_crc32c(0, b, r->shard_len) != r->shard_crc)
        rc = STRATA_ECORRUPT;
    if (rc) {
        free(b);
        return rc;
    }
    r->shard = b;
    *buf = b;
    return 0;
}

/* ---- writes: sync and accounting ------------------------------------------ */

/* Fdatasync every segment with appends completed since its last sync. */
static int sync_appends(struct meta_slog *s)
{
    struct slog_seg *dirty[64];
    uint64_t gen[64];
    int rc = 0;
    for (;;) {
        size_t n = 0;
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < s->nsegs && n < 64; i++) {
            struct slog_seg *g = s->segs[i];
            uint64_t w = atomic_load(&g->wgen);
            if (g->fd >= 0 && w != g->sgen) {
                g->refs++;
                dirty[n] = g;
                gen[n++] = w;
            }
        }
        pthread_mutex_unlock(&s->mu);
        for (size_t i = 0; i < n; i++)
            if (fdatasync(dirty[i]->fd) != 0)
                rc = errno == ENOSPC ? STRATA_ENOSPC : STRATA_EIO;
        atomic_fetch_add_explicit(&s->syncs, n, memory_order_relaxed);
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < n; i++) {
            if (rc == 0)
                dirty[i]->sgen = gen[i];
            seg_unref(dirty[i]);
        }
        pthread_mutex_unlock(&s->mu);
        if (rc || n < 64)
            return rc;
    }
}

/* What a batch does to the live bytes: per 'O' key the batch writes, the
 * logged shard its value had (the store's value, or the batch's own
 * earlier write of that key) and has after. */
struct ref {
    bool logged;
    uint64_t seg, off, len;
};

struct acct {
    struct meta_slog *s;
    rocksdb_t *db;
    const struct meta_slog_hint *hints;
    size_t nhints;
    struct {
        const char *k; /* into the batch, which the iteration leaves alone */
        size_t kl;
        struct ref r;
    } *seen;
    size_t nseen, cseen;
    struct {
        uint64_t seg;
        int64_t delta;
        uint64_t live;  /* after the batch */
        uint64_t fresh; /* records naming new appends (their pending ends) */
    } *segs;
    size_t nsegs, csegs;
    int rc;
};

static struct ref ref_of(const char *v, size_t vl)
{
    struct ref f = {0};
    struct meta_rec r;
    if (vl && (uint8_t)v[0] == VAL_VERSION_BYTE && strata_meta__rec_decode(v, vl, false, &r) == 0) {
        f.logged = r.logged;
        f.seg = r.log_seg;
        f.off = r.log_off;
        f.len = r.shard_len;
        strata_meta__rec_fini(&r);
    }
    return f;
}

static void acct_delta(struct acct *a, const struct ref *f, int sign, bool fresh)
{
    if (!f->logged || !f->len)
        return;
    for (size_t i = 0; i < a->nsegs; i++)
        if (a->segs[i].seg == f->seg) {
            a->segs[i].delta += sign * (int64_t)f->len;
            a->segs[i].fresh += fresh;
            return;
        }
    if (!room(&a->segs, &a->csegs, a->nsegs, sizeof(*a->segs))) {
        a->rc = STRATA_ENOMEM;
        return;
    }
    a->segs[a->nsegs].seg = f->seg;
    a->segs[a->nsegs].delta = sign * (int64_t)f->len;
    a->segs[a->nsegs].fresh = fresh;
    a->nsegs++;
}

static void acct_key(struct acct *a, const char *k, size_t kl, const char *v, size_t vl)
{
    if (a->rc || kl < 1 || k[0] != 'O')
        return;
    struct ref now = v ? ref_of(v, vl) : (struct ref){0};
    size_t i;
    for (i = 0; i < a->nseen; i++)
        if (a->seen[i].kl == kl && memcmp(a->seen[i].k, k, kl) == 0)
            break;
    struct ref old = {0};
    const struct meta_slog_hint *h = NULL;
    for (size_t j = 0; i == a->nseen && j < a->nhints && !h; j++)
        if (a->hints[j].kl == kl && memcmp(a->hints[j].k, k, kl) == 0)
            h = &a->hints[j];
    if (i < a->nseen) {
        old = a->seen[i].r;
    } else if (h) {
        old = (struct ref){.logged = h->logged, .seg = h->seg, .off = h->off, .len = h->len};
    } else {
        char *err = NULL;
        size_t ol = 0;
        atomic_fetch_add_explicit(&a->s->acct_reads, 1, memory_order_relaxed);
        char *ov = rocksdb_get(a->db, a->s->m->ropts, k, kl, &ol, &err);
        if (err) {
            free(err);
            a->rc = STRATA_EIO;
            return;
        }
        if (ov)
            old = ref_of(ov, ol);
        free(ov);
    }
    if (i == a->nseen) {
        if (!room(&a->seen, &a->cseen, a->nseen, sizeof(*a->seen))) {
            a->rc = STRATA_ENOMEM;
            return;
        }
        a->seen[i].k = k;
        a->seen[i].kl = kl;
        a->nseen++;
    }
    a->seen[i].r = now;
    /* A reference the key did not have names a new append (a rewrite
     * re-puts the one it had). */
    bool fresh = now.logged && !(old.logged && old.seg == now.seg && old.off == now.off);
    acct_delta(a, &old, -1, false);
    acct_delta(a, &now, 1, fresh);
}

static void acct_put_cb(void *st, const char *k, size_t kl, const char *v, size_t vl)
{
    acct_key(st, k, kl, v, vl);
}

static void acct_del_cb(void *st, const char *k, size_t kl)
{
    acct_key(st, k, kl, NULL, 0);
}

static void acct_fini(struct acct *a)
{
    free(a->seen);
    free(a->segs);
}

int strata_meta__slog_write(struct meta_slog *s, rocksdb_t *db, rocksdb_writeoptions_t *wo,
                            rocksdb_writebatch_t *wb, const struct meta_slog_hint *hints,
                            size_t nhints, char **err)
{
    *err = NULL;
    pthread_mutex_lock(&s->acct_mu);
    struct acct a = {.s = s, .db = db, .hints = hints, .nhints = nhints};
    rocksdb_writebatch_iterate(wb, &a, acct_put_cb, acct_del_cb);
    /* Only a batch naming new appends needs them synced first (a record
     * that keeps its reference was synced when it got it): a group of
     * tombstone drops does not make the log sync. */
    bool fresh = false;
    for (size_t i = 0; i < a.nsegs; i++)
        fresh = fresh || a.segs[i].fresh;
    int rc = a.rc == 0 && fresh ? sync_appends(s) : 0;
    if (rc) {
        pthread_mutex_unlock(&s->acct_mu);
        acct_fini(&a);
        *err = strdup(rc == STRATA_ENOSPC ? "small-object log sync: No space left on device"
                                          : "small-object log sync: I/O error");
        return rc;
    }
    /* The 'L' keys go on the caller's batch and come off again after the
     * write (a save point, not a copy of ~50 KiB shards' worth of batch). */
    bool counted = a.rc == 0 && a.nsegs;
    if (counted) {
        rocksdb_writebatch_set_save_point(wb);
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < a.nsegs; i++) {
            struct slog_seg *g = seg_find(s, a.segs[i].seg);
            int64_t live = (int64_t)(g ? g->live : 0) + a.segs[i].delta;
            a.segs[i].live = live > 0 ? (uint64_t)live : 0; /* a segment lost meanwhile */
        }
        pthread_mutex_unlock(&s->mu);
        for (size_t i = 0; i < a.nsegs; i++) {
            char k[SLOG_LKEY_LEN], v[8];
            lkey(a.segs[i].seg, k);
            for (unsigned b = 0; b < 8; b++)
                v[b] = (char)(a.segs[i].live >> (56 - 8 * b));
            strata_meta__wb_write(wb, k, sizeof(k), a.segs[i].live != 0, v, sizeof(v));
        }
    }
    if (a.rc) {
        /* Not counted: a write whose accounting failed is refused. */
        *err = strdup("small-object log accounting: out of memory or read error");
        rc = a.rc;
    } else {
        rocksdb_write(db, wo, wb, err);
    }
    if (counted) {
        char *serr = NULL;
        rocksdb_writebatch_rollback_to_save_point(wb, &serr);
        free(serr); /* the save point was just set: nothing can fail */
    }
    if (!*err && a.nsegs) {
        uint64_t t = now_ns();
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < a.nsegs; i++) {
            struct slog_seg *g = seg_find(s, a.segs[i].seg);
            if (!g && a.segs[i].live && (g = seg_add(s, a.segs[i].seg, -1)) == NULL)
                continue; /* counted in the store; read back at the next open */
            if (!g)
                continue;
            if (g->live && !a.segs[i].live)
                g->zero_ns = t;
            g->live = a.segs[i].live;
            g->pending -= a.segs[i].fresh < g->pending ? a.segs[i].fresh : g->pending;
            if (!g->live && g->fd < 0)
                seg_unlist(s, g);
        }
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&s->acct_mu);
    acct_fini(&a);
    return rc;
}

/* ---- reclaim --------------------------------------------------------------- */

/* Under mu: a sealed segment with nothing live for the grace, and no
 * append whose record may still be written (one that never is, a commit
 * given up, keeps it until the next open). */
static bool reapable(const struct meta_slog *s, const struct slog_seg *g, uint64_t t)
{
    return g != s->cur && g->fd >= 0 && g->live == 0 && g->pending == 0 &&
           t - g->zero_ns >= s->grace_ns;
}

uint64_t strata_meta__slog_reap(struct meta_slog *s)
{
    if (!s)
        return 0;
    uint64_t t = now_ns(), next = 0;
    bool any = false;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nsegs; i++) {
        const struct slog_seg *g = s->segs[i];
        if (reapable(s, g, t))
            any = true;
        else if (g != s->cur && g->fd >= 0 && g->live == 0 && g->pending == 0) {
            uint64_t due = g->zero_ns + s->grace_ns;
            if (!next || due < next)
                next = due;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (!any)
        return next;
    /* The batches that made them dead are durable before the bytes go. */
    if (strata_meta__drive_sync_wal(s->m, s->set, s->d) != 0)
        return t + s->grace_ns;
    pthread_mutex_lock(&s->acct_mu);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nsegs;) {
        struct slog_seg *g = s->segs[i];
        if (!reapable(s, g, t)) {
            i++;
            continue;
        }
        char p[4200];
        seg_path(s, g->id, p, sizeof(p));
        if (unlink(p) != 0 && errno != ENOENT) {
            i++;
            continue;
        }
        seg_unlist(s, g);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->acct_mu);
    return next;
}

size_t strata_meta__slog_victims(struct meta_slog *s, uint64_t *ids, size_t max)
{
    size_t n = 0;
    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nsegs && n < max; i++) {
        struct slog_seg *g = s->segs[i];
        /* Sealed, every append's record written (or the scan would miss
         * it), and half dead or more. */
        if (!s->cur || g == s->cur || g->fd < 0 || g->compacted || g->pending || !g->live ||
            g->live > g->size / 2)
            continue;
        g->compacted = true; /* once per open: a shard that cannot move stays */
        ids[n++] = g->id;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

void strata_meta__slog_counts(struct meta_slog *s, uint64_t *acct_reads, uint64_t *syncs)
{
    *acct_reads = s ? atomic_load(&s->acct_reads) : 0;
    *syncs = s ? atomic_load(&s->syncs) : 0;
}
