/*
 * slog_compact.c - compaction of the small-object log (slog.c): the live
 * shards of a sealed segment that is at most half live are copied to the
 * segment appended to and their records switched to the copies, so the
 * old segment's live bytes reach zero and the writer thread's reap
 * unlinks it (after the grace and a WAL sync, as for any dead segment).
 *
 * Safety: a record is switched only under its key's lock (every writer of
 * 'O' records holds it: key txns with their undo, heal, multipart,
 * transitions), after reading it again and finding that it still names
 * the old place (segment, offset, length and CRC32C).  The copy is read
 * through slog_load (CRC32C checked) and appended like a PUT's shard, so
 * the drive's write fdatasyncs it before the record naming it is written,
 * and the 'L' counts move in that same write.  A crash at any point
 * leaves each record naming one of the two places, both intact: the old
 * segment is unlinked only once no durable record names it.
 *
 * Finding the live shards: nothing in a segment is parsed, so a pass reads
 * every 'O' record of the drive (a maintenance walk, outside the block
 * cache) for the segments picked, at most once per segment and open.
 *
 * Threads: one compaction thread (strata_meta_opts.slog_compact_ms).
 */
#include "local.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/thread.h"

#define VICTIMS_MAX 16
#define GROUP_MAX   32 /* records switched per write */

struct meta_slog_compactor {
    pthread_t thr;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
};

/* A live shard found in a victim segment. */
struct live {
    char *k;
    size_t kl;
    uint64_t seg, off, len;
    uint32_t crc;
    bool done;
};

static bool in_ids(const uint64_t *ids, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* The logged shards of drive (set, d) that live in one of ids. */
static int find_live(struct strata_meta *m, unsigned set, unsigned d, const uint64_t *ids,
                     size_t nids, struct live **out, size_t *nout)
{
    rocksdb_readoptions_t *ro = NULL;
    rocksdb_iterator_t *it = strata_meta__iter_new(m, set, d, &ro, "P", 1, false);
    if (!it)
        return STRATA_ENOMEM;
    struct live *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (rocksdb_iter_seek(it, "O", 1); rc == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        const char *val = rocksdb_iter_value(it, &vl);
        struct meta_rec r;
        if (vl < 1 || (uint8_t)val[0] != VAL_VERSION_BYTE ||
            strata_meta__rec_decode(val, vl, false, &r) != 0)
            continue;
        bool want = r.logged && in_ids(ids, nids, r.log_seg);
        struct live l = {
            .kl = kl, .seg = r.log_seg, .off = r.log_off, .len = r.shard_len, .crc = r.shard_crc};
        strata_meta__rec_fini(&r);
        if (!want)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct live *p = realloc(v, nc * sizeof(*v));
            if (!p) {
                rc = STRATA_ENOMEM;
                break;
            }
            v = p;
            cap = nc;
        }
        if (!(l.k = malloc(kl))) {
            rc = STRATA_ENOMEM;
            break;
        }
        memcpy(l.k, k, kl);
        v[n++] = l;
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err) {
        free(err);
        rc = rc ? rc : STRATA_EIO;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    *out = v;
    *nout = n;
    return rc;
}

/* The key lock of an 'O' key ('O' bucket 0x00 key 0x00 sortkey). */
static pthread_mutex_t *lock_of(struct strata_meta *m, const struct live *l)
{
    char bucket[STRATA_BUCKET_NAME_MAX + 1], key[STRATA_KEY_MAX + 1];
    if (l->kl < 1 + 1 + 1 + SORTKEY_LEN)
        return NULL;
    const char *p = l->k + 1, *end = l->k + l->kl - SORTKEY_LEN - 1;
    const char *z = memchr(p, 0, (size_t)(end - p));
    if (!z || (size_t)(z - p) > STRATA_BUCKET_NAME_MAX || (size_t)(end - z - 1) > STRATA_KEY_MAX)
        return NULL;
    memcpy(bucket, p, (size_t)(z - p));
    bucket[z - p] = 0;
    memcpy(key, z + 1, (size_t)(end - z - 1));
    key[end - z - 1] = 0;
    return strata_meta__key_lock(m, bucket, key);
}

/* Under l's key lock: l's record copied into wb naming a fresh append of
 * its shard, if the record still names l's place.  true: added. */
static bool move_one(struct strata_meta *m, unsigned set, unsigned d, const struct live *l,
                     rocksdb_writebatch_t *wb)
{
    struct meta_slog *s = m->sets[set].drives[d].slog;
    char *cur = NULL;
    size_t cl = 0;
    if (strata_meta__drive_get_uncached(m, set, d, l->k, l->kl, &cur, &cl) != 0)
        return false; /* gone meanwhile, or unreadable: nothing to move */
    struct meta_rec r;
    bool added = false;
    if (cl < 1 || (uint8_t)cur[0] != VAL_VERSION_BYTE ||
        strata_meta__rec_decode(cur, cl, true, &r) != 0) {
        free(cur);
        return false;
    }
    uint8_t *buf = NULL;
    if (r.logged && r.log_seg == l->seg && r.log_off == l->off && r.shard_len == l->len &&
        r.shard_crc == l->crc && strata_meta__slog_load(s, &r, false, &buf) == 0) {
        /* A shard that does not read back is heal's (it stays put). */
        r.logged = false;
        char *v = NULL;
        size_t vl = 0;
        if (strata_meta__slog_put(s, &r) == 0 && strata_meta__rec_encode(&r, &v, &vl) == 0) {
            rocksdb_writebatch_put(wb, l->k, l->kl, v, vl);
            added = true;
        }
        free(v);
    }
    free(buf);
    strata_meta__rec_fini(&r);
    free(cur);
    return added;
}

/* Move the shards of one group of lv's keys: the first not done under a
 * lock it waits for, the others whose locks are free now (a lock held
 * elsewhere never blocks while this holds some). */
static int move_group(struct strata_meta *m, unsigned set, unsigned d, struct live *lv, size_t n,
                      uint64_t *moved)
{
    pthread_mutex_t *held[GROUP_MAX];
    size_t nheld = 0, group[GROUP_MAX], ng = 0;
    for (size_t i = 0; i < n && ng < GROUP_MAX; i++) {
        if (lv[i].done)
            continue;
        pthread_mutex_t *lk = lock_of(m, &lv[i]);
        if (!lk) {
            lv[i].done = true; /* not an object key this can lock */
            continue;
        }
        bool have = false;
        for (size_t j = 0; j < nheld; j++)
            have = have || held[j] == lk;
        if (!have) {
            if (nheld == 0)
                pthread_mutex_lock(lk);
            else if (pthread_mutex_trylock(lk) != 0)
                continue;
            held[nheld++] = lk;
        }
        group[ng++] = i;
    }
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    int rc = 0;
    size_t added = 0;
    for (size_t g = 0; g < ng; g++) {
        lv[group[g]].done = true;
        added += move_one(m, set, d, &lv[group[g]], wb);
    }
    /* No sync of the WAL: the old bytes stay until reap synced it. */
    if (added)
        rc = strata_meta__drive_write(m, set, d, m->wnosync, wb);
    rocksdb_writebatch_destroy(wb);
    for (size_t j = 0; j < nheld; j++)
        pthread_mutex_unlock(held[j]);
    if (rc == 0)
        *moved += added;
    return rc;
}

static int compact_drive(struct strata_meta *m, unsigned set, unsigned d, uint64_t *moved)
{
    struct meta_drive *dr = &m->sets[set].drives[d];
    /* The segments the last round emptied (the writer thread reaps only
     * after its own groups: an idle drive would keep them). */
    (void)strata_meta__slog_reap(dr->slog);
    uint64_t ids[VICTIMS_MAX];
    size_t nids = dr->db ? strata_meta__slog_victims(dr->slog, ids, VICTIMS_MAX) : 0;
    if (!nids)
        return 0;
    struct live *lv = NULL;
    size_t n = 0;
    int rc = find_live(m, set, d, ids, nids, &lv, &n);
    size_t left = rc == 0 ? n : 0;
    while (left && rc == 0) {
        rc = move_group(m, set, d, lv, n, moved);
        left = 0;
        for (size_t i = 0; i < n; i++)
            left += !lv[i].done;
    }
    for (size_t i = 0; i < n; i++)
        free(lv[i].k);
    free(lv);
    return rc;
}

int strata_meta__slog_compact_round(struct strata_meta *m, uint64_t *moved)
{
    *moved = 0;
    int rc = 0;
    for (unsigned s = 0; s < m->nsets; s++)
        for (unsigned d = 0; d < m->sets[s].n; d++) {
            int r = compact_drive(m, s, d, moved);
            rc = rc ? rc : r; /* a drive that failed does not stop the others */
        }
    return rc;
}

static void *compactor(void *arg)
{
    struct strata_meta *m = arg;
    struct meta_slog_compactor *c = m->slog_compactor;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t at = (uint64_t)ts.tv_nsec + m->slog_compact_ms * 1000000ull;
        ts.tv_sec += (time_t)(at / 1000000000u);
        ts.tv_nsec = (long)(at % 1000000000u);
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&c->mu);
        uint64_t moved = 0;
        int rc = strata_meta__slog_compact_round(m, &moved);
        if (rc)
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "small-object log compaction: %s",
                       strata_strerror(rc));
        else if (moved)
            strata_log(&m->log, STRATA_LOG_INFO, "meta",
                       "small-object log compaction: %llu shards moved", (unsigned long long)moved);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int strata_meta__slog_compactor_start(struct strata_meta *m)
{
    struct meta_slog_compactor *c = calloc(1, sizeof(*c));
    if (!c)
        return STRATA_ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    m->slog_compactor = c;
    if (pthread_create(&c->thr, NULL, compactor, m) != 0) {
        m->slog_compactor = NULL;
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        free(c);
        return STRATA_ENOMEM;
    }
    return 0;
}

void strata_meta__slog_compactor_stop(struct strata_meta *m)
{
    struct meta_slog_compactor *c = m->slog_compactor;
    if (!c)
        return;
    strata_thread_stop(c->thr, &c->mu, &c->cv, &c->stop);
    m->slog_compactor = NULL;
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}
