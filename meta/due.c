/*
 * due.c - the version-time index ('D' keys): every live version record
 * has an index entry keyed by its bucket and mtime, so lifecycle finds the
 * versions whose due time has come with a range scan instead of a walk of
 * every version.
 *
 * The entry is derived from the 'O' key alone (the sort key carries the
 * mtime), so it is maintained in one place: strata_meta__due_hook runs on
 * every batch handed to set_apply and adds, in the same batch, a put of
 * the entry for every put of a version record, and a delete of it for every
 * tombstone or delete of an 'O' key.  The entry is therefore written or
 * removed atomically with its record on each drive (a crash keeps both or
 * neither), undo batches undo it too, and every write path (put, copy,
 * delete marker, multipart complete, delete by version id, the null version
 * a write replaces) keeps it current without knowing about it.
 *
 * A version becomes noncurrent exactly when the next newer version of its
 * key is written, at that version's mtime: the newer version's entry is
 * therefore also the "became noncurrent" event of the one below it.
 * Lifecycle rules are not involved, so a rule change needs no rewrite of the
 * index (ilm/ keeps a cursor per rule; a new rule starts from the oldest
 * entry).
 *
 * Entries are hints: heal writes records without them (heal copies the
 * entries as raw records where a read quorum holds them), a tombstone copied
 * by heal leaves an entry behind on the drive that missed the delete.  The
 * scan is the store's DUE scan (locally a merge of every online drive,
 * meta/local/scan.c); the consumer re-reads the version
 * through the quorum read rule before acting and drops stale entries with
 * strata_meta_due_drop.
 */
#include "meta_internal.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + 8 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)

static void be64_put(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static uint64_t be64_get(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

size_t strata_meta__key_due_prefix(char *out, const char *bucket, size_t blen, uint64_t mtime_ns)
{
    out[0] = 'D';
    memcpy(out + 1, bucket, blen);
    out[1 + blen] = 0;
    be64_put((uint8_t *)out + 2 + blen, mtime_ns);
    return 2 + blen + 8;
}

int64_t strata_meta__key_due_mtime_ms(const char *k, size_t blen)
{
    return (int64_t)(be64_get((const uint8_t *)k + 2 + blen) / 1000000u);
}

size_t strata_meta__key_due_of_obj(char *out, size_t cap, const char *ok, size_t okl)
{
    /* 'O' bucket 0 key 0 sk[16] */
    if (okl < 1 + 1 + 1 + SORTKEY_LEN || ok[0] != 'O' || ok[okl - SORTKEY_LEN - 1] != 0)
        return 0;
    const char *b = ok + 1;
    size_t blen = strnlen(b, okl - 1);
    if (1 + blen + 1 > okl - SORTKEY_LEN - 1)
        return 0;
    const char *key = b + blen + 1;
    size_t klen = (size_t)(ok + okl - SORTKEY_LEN - 1 - key);
    size_t need = 2 + blen + 8 + klen + 1 + SORTKEY_LEN;
    if (need > cap)
        return 0;
    const uint8_t *sk = (const uint8_t *)ok + okl - SORTKEY_LEN;
    size_t n = strata_meta__key_due_prefix(out, b, blen, UINT64_MAX - be64_get(sk));
    memcpy(out + n, key, klen);
    out[n + klen] = 0;
    memcpy(out + n + klen + 1, sk, SORTKEY_LEN);
    return need;
}

static void hook_put_cb(void *st, const char *k, size_t kl, const char *v, size_t vl)
{
    char dk[DKEY_MAX];
    size_t dl = strata_meta__key_due_of_obj(dk, sizeof(dk), k, kl);
    if (!dl)
        return;
    if (vl >= 1 && (uint8_t)v[0] == VAL_VERSION_BYTE)
        rocksdb_writebatch_put(st, dk, dl, "", 0);
    else
        rocksdb_writebatch_delete(st, dk, dl);
}

static void hook_del_cb(void *st, const char *k, size_t kl)
{
    char dk[DKEY_MAX];
    size_t dl = strata_meta__key_due_of_obj(dk, sizeof(dk), k, kl);
    if (dl)
        rocksdb_writebatch_delete(st, dk, dl);
}

static void copy_put_cb(void *st, const char *k, size_t kl, const char *v, size_t vl)
{
    rocksdb_writebatch_put(st, k, kl, v, vl);
}

static void copy_del_cb(void *st, const char *k, size_t kl)
{
    rocksdb_writebatch_delete(st, k, kl);
}

void strata_meta__due_hook(rocksdb_writebatch_t *wb)
{
    rocksdb_writebatch_t *ix = rocksdb_writebatch_create();
    rocksdb_writebatch_iterate(wb, ix, hook_put_cb, hook_del_cb);
    if (rocksdb_writebatch_count(ix) > 0)
        rocksdb_writebatch_iterate(ix, wb, copy_put_cb, copy_del_cb);
    rocksdb_writebatch_destroy(ix);
}

int strata_meta_due_scan(struct strata_meta *m, const char *bucket, int64_t from_ms, int64_t to_ms,
                         int (*cb)(const struct strata_due_entry *e, void *ud), void *ud)
{
    size_t blen = strlen(bucket);
    if (blen > STRATA_BUCKET_NAME_MAX || to_ms <= from_ms)
        return blen > STRATA_BUCKET_NAME_MAX ? STRATA_EINVAL : 0;
    struct strata_meta__scan_spec spec = {
        .bucket = bucket,
        .kind = STRATA_META__SCAN_DUE,
        .from_ms = from_ms,
        .to_ms = to_ms,
        .no_cache = true,
    };
    struct strata_meta__scan *sc;
    int rc = m->store->scan_open(m, &spec, &sc);
    if (rc)
        return rc;
    struct strata_meta__scan_ent se;
    int n;
    do {
        n = m->store->scan_next(sc, &se);
        struct strata_due_entry e;
        if (n == 1) {
            snprintf(e.key, sizeof(e.key), "%s", se.key);
            e.mtime_ms = se.due_ms;
            strata_meta__vid_format(se.sk, e.version_id);
            rc = cb(&e, ud);
        }
    } while (n == 1 && rc == 0);
    m->store->scan_close(sc);
    return n < 0 ? n : rc;
}

int strata_meta_due_drop(struct strata_meta *m, const char *bucket, const char *key,
                         const char *version_id)
{
    uint8_t sk[SORTKEY_LEN];
    if (strata_meta__vid_parse(version_id, sk) != 0)
        return STRATA_EINVAL;
    if (m->store->due_exact)
        return STRATA_ENOTFOUND; /* no hints: the entry went with its version */
    char ok[1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN];
    size_t okl = strata_meta__key_obj(ok, sizeof(ok), bucket, key, sk);
    char dk[DKEY_MAX];
    size_t dl = strata_meta__key_due_of_obj(dk, sizeof(dk), ok, okl);
    if (!dl)
        return STRATA_EINVAL;
    unsigned set = strata_meta__set_of(m, bucket, key);
    struct meta_set *ms = &m->sets[set];
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    pthread_mutex_lock(lk);
    /* Only where no live record backs it (a put may have landed since). */
    for (unsigned d = 0; d < ms->n; d++) {
        char *v = NULL;
        size_t vl = 0;
        if (!ms->drives[d].db)
            continue;
        int grc = strata_meta__drive_get(m, set, d, ok, okl, &v, &vl);
        bool live = grc == 0 && vl >= 1 && (uint8_t)v[0] == VAL_VERSION_BYTE;
        free(v);
        if (live || (grc != 0 && grc != STRATA_ENOTFOUND))
            continue;
        /* a hint: a failure leaves it for the next look */
        (void)strata_meta__drive_delete(m, set, d, m->wnosync, dk, dl);
    }
    pthread_mutex_unlock(lk);
    return 0;
}
