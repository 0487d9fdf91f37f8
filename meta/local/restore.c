/*
 * restore.c - the local backend's records of restored copies (store.h
 * restore_get / restore_swap / restore_walk; the rules are meta/restore.c).
 *
 * A record is the key 'R' bucket 0 key 0 sortkey on the version's set,
 * written like a transition intent (the write quorum) and read with the
 * quorum rule.  A swap compares and writes under the key lock, so every
 * read-modify-write of one key's records in this process is serialised;
 * the data ids are the caller's (no pending entries: orphan reclaim and
 * heal read the records, local/orphan.c and local/heal.c).
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>

#define RKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)

static size_t rkey(char *out, const char *bucket, const char *key, const uint8_t *sk)
{
    size_t n = strata_meta__key_obj(out, RKEY_MAX, bucket, key, sk);
    out[0] = 'R';
    return n;
}

/* The quorum's record at k of set: 0 (*v malloc'ed), STRATA_ENOTFOUND, or
 * a read error. */
static int get_raw(struct strata_meta *m, unsigned set, const char *k, size_t kl, char **v,
                   size_t *vl)
{
    *v = NULL;
    *vl = 0;
    struct meta_qraw q;
    int rc = strata_meta__qraw_get(m, set, k, kl, false, &q);
    if (rc == 0) {
        *vl = q.vl[q.win];
        *v = malloc(*vl + 1);
        if (*v)
            memcpy(*v, q.v[q.win], *vl);
        else
            rc = STRATA_ENOMEM;
    }
    strata_meta__qraw_fini(&q);
    return rc;
}

int strata_meta__local_restore_get(struct strata_meta *m, const char *bucket, const char *key,
                                   const uint8_t sk[16], char **v, size_t *vl)
{
    char k[RKEY_MAX];
    size_t kl = rkey(k, bucket, key, sk);
    return get_raw(m, strata_meta__set_of(m, bucket, key), k, kl, v, vl);
}

int strata_meta__local_restore_swap(struct strata_meta *m, const struct strata_meta__restore_swap *s)
{
    unsigned set = strata_meta__set_of(m, s->bucket, s->key);
    char k[RKEY_MAX];
    size_t kl = rkey(k, s->bucket, s->key, s->sk);
    pthread_mutex_t *lk = strata_meta__key_lock(m, s->bucket, s->key);
    pthread_mutex_lock(lk);
    char *cur = NULL;
    size_t cl = 0;
    int rc = get_raw(m, set, k, kl, &cur, &cl);
    if (rc == STRATA_ENOTFOUND)
        rc = s->old ? STRATA_EPRECOND : 0;
    else if (rc == 0 && (!s->old || cl != s->oldlen || memcmp(cur, s->old, cl) != 0))
        rc = STRATA_EPRECOND;
    if (rc == 0 && (s->nw || s->old))
        rc = strata_meta__intent_write(m, set, k, kl, (const char *)s->nw, s->nw ? s->nwlen : 0);
    pthread_mutex_unlock(lk);
    free(cur);
    return rc;
}

int strata_meta__walk_vkeys(struct strata_meta *m, char kind, meta_vkey_fn cb, void *ud,
                            uint64_t *n)
{
    *n = 0;
    for (unsigned s = 0; s < m->nsets; s++) {
        struct meta_merge mg;
        char lo[1] = {kind}, hi[1] = {(char)(kind + 1)};
        int rc = strata_meta__merge_open(&mg, m, &s, 1, MERGE_MAINTENANCE, hi, 1);
        if (rc)
            return rc;
        strata_meta__merge_seek(&mg, lo, 1);
        const char *k, *v;
        size_t kl, vl;
        while (strata_meta__merge_cur(&mg, &k, &kl, &v, &vl)) {
            /* kind bucket 0 key 0 sk */
            char kc[RKEY_MAX + 1];
            if (kl > 3 + SORTKEY_LEN && kl <= RKEY_MAX && k[kl - SORTKEY_LEN - 1] == 0) {
                memcpy(kc, k, kl);
                kc[kl - SORTKEY_LEN - 1] = 0;
                const char *bucket = kc + 1;
                size_t bl = strnlen(bucket, kl - SORTKEY_LEN - 2);
                if (1 + bl + 1 <= kl - SORTKEY_LEN - 1) {
                    uint8_t sk[SORTKEY_LEN];
                    memcpy(sk, k + kl - SORTKEY_LEN, SORTKEY_LEN);
                    cb(m, s, bucket, bucket + bl + 1, sk, ud);
                    (*n)++;
                }
            }
            strata_meta__merge_next(&mg);
        }
        strata_meta__merge_close(&mg);
    }
    return 0;
}

struct walk {
    strata_meta__restore_walk_fn cb;
    void *ud;
};

static void walk_one(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                     const uint8_t *sk, void *ud)
{
    (void)m;
    (void)set;
    struct walk *w = ud;
    w->cb(w->ud, bucket, key, sk);
}

int strata_meta__local_restore_walk(struct strata_meta *m, strata_meta__restore_walk_fn cb,
                                    void *ud)
{
    struct walk w = {cb, ud};
    uint64_t n;
    return strata_meta__walk_vkeys(m, 'R', walk_one, &w, &n);
}
