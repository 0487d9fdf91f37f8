/*
 * scan.c - the local backend's scans (store.h, "scans"): the version
 * records ('O' bucket 0 key 0 sortkey) of a bucket as one forward walk of a
 * k-way merge of iterators, N - Wq + 1 readable drives of every set, so
 * that every quorum-committed version, and every committed delete's
 * tombstone, is seen by at least one of them.  Equal RocksDB keys collapse
 * with a tombstone winning, and a deleted version is never shown.
 *
 * The read rule for disagreements: a version every merged drive of its set
 * holds is taken as is (the fast path); one that some merged drive lacks
 * (a write it missed, or a write that never reached quorum) is decided by
 * the read quorum (strata_meta__obj_resolve), so a scan shows exactly what
 * HEAD and GET show.  Versions of a key sort newest first, so a CURRENT
 * scan's entry for a key is the first live version met (or what the quorum
 * says is the latest), and the key's older versions are stepped over.
 * skip_past seeks every iterator past a prefix instead of walking it.
 * Memory is a fixed set of iterators and a few key buffers, whatever the
 * number of keys.  Threads: one scan is used by one thread at a time.
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>

#define LKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)

struct strata_meta__scan {
    struct strata_meta *m;
    enum strata_meta__scan_kind kind;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char base[LKEY_MAX]; /* 'O' bucket 0 */
    size_t bl;
    char prefix[STRATA_KEY_MAX + 1];
    size_t plen;
    struct meta_merge mg;
    char buf[LKEY_MAX];
    bool advance;     /* step past the entry returned last before reading */
    bool skip_exact;  /* the first key met is the after version itself: skip it */
    uint8_t skip_sk[SORTKEY_LEN];
    /* CURRENT: the key whose latest was decided; with skip_exact: after */
    char done[STRATA_KEY_MAX + 1];
    size_t done_len;
    bool have_done;
    bool info_live; /* info holds an entry to fini */
    struct strata_obj_info info;
    uint8_t sk[SORTKEY_LEN];
    uint64_t visited; /* merged keys looked at, for tests */
};

/* Seek every stream to base + s[0..n) (+ tail byte when tail >= 0). */
static void seek_to(struct strata_meta__scan *s, const char *k, size_t n, int tail)
{
    memcpy(s->buf, s->base, s->bl);
    memcpy(s->buf + s->bl, k, n);
    size_t len = s->bl + n;
    if (tail >= 0)
        s->buf[len++] = (char)tail;
    strata_meta__merge_seek(&s->mg, s->buf, len);
}

int strata_meta__local_scan_open(struct strata_meta *m, const struct strata_meta__scan_spec *spec,
                                 struct strata_meta__scan **out)
{
    *out = NULL;
    const char *prefix = spec->prefix ? spec->prefix : "";
    const char *after = spec->after && *spec->after ? spec->after : NULL;
    size_t bn = spec->bucket ? strlen(spec->bucket) : 0, plen = strlen(prefix);
    if (bn == 0 || bn > STRATA_BUCKET_NAME_MAX || plen > STRATA_KEY_MAX ||
        (after && strlen(after) > STRATA_KEY_MAX) ||
        (spec->kind != STRATA_META__SCAN_CURRENT && spec->kind != STRATA_META__SCAN_VERSIONS) ||
        (spec->after_sk && (!after || spec->kind != STRATA_META__SCAN_VERSIONS)))
        return STRATA_EINVAL;
    struct strata_meta__scan *s = calloc(1, sizeof(*s));
    if (!s)
        return STRATA_ENOMEM;
    s->m = m;
    s->kind = spec->kind;
    memcpy(s->bucket, spec->bucket, bn + 1);
    memcpy(s->prefix, prefix, plen + 1);
    s->plen = plen;
    s->base[0] = 'O';
    memcpy(s->base + 1, spec->bucket, bn);
    s->base[bn + 1] = 0;
    s->bl = bn + 2;
    char hi[LKEY_MAX];
    memcpy(hi, s->base, s->bl);
    hi[s->bl - 1] = 1;
    unsigned sets[64], ns = 0;
    for (unsigned i = 0; i < m->nsets && ns < 64; i++)
        sets[ns++] = i;
    int rc = strata_meta__merge_open(&s->mg, m, sets, ns, spec->no_cache ? MERGE_NO_CACHE : 0, hi,
                                     s->bl);
    if (rc) {
        free(s);
        return rc;
    }
    if (after && spec->after_sk) {
        char tmpk[STRATA_KEY_MAX + 1 + SORTKEY_LEN];
        size_t al = strlen(after);
        memcpy(tmpk, after, al);
        tmpk[al] = 0;
        memcpy(tmpk + al + 1, spec->after_sk, SORTKEY_LEN);
        seek_to(s, tmpk, al + 1 + SORTKEY_LEN, -1);
        memcpy(s->skip_sk, spec->after_sk, SORTKEY_LEN);
        s->skip_exact = true;
        memcpy(s->done, after, al + 1); /* for skip_exact's comparison */
        s->done_len = al;
    } else if (after) {
        seek_to(s, after, strlen(after), 1); /* past every version of it */
    } else {
        seek_to(s, prefix, plen, -1);
    }
    *out = s;
    return 0;
}

static void drop_info(struct strata_meta__scan *s)
{
    if (s->info_live)
        strata_obj_info_fini(&s->info);
    s->info_live = false;
}

static void set_done(struct strata_meta__scan *s, const char *kp, size_t keylen)
{
    memcpy(s->done, kp, keylen);
    s->done[keylen] = 0;
    s->done_len = keylen;
    s->have_done = true;
}

int strata_meta__local_scan_next(struct strata_meta__scan *s, struct strata_meta__scan_ent *e)
{
    drop_info(s);
    if (s->advance) {
        strata_meta__merge_next(&s->mg);
        s->advance = false;
    }
    bool current = s->kind == STRATA_META__SCAN_CURRENT;
    const char *k, *v;
    size_t kl, vl;
    for (; strata_meta__merge_cur(&s->mg, &k, &kl, &v, &vl); strata_meta__merge_next(&s->mg)) {
        s->visited++;
        if (kl < s->bl + 1 + SORTKEY_LEN || k[kl - SORTKEY_LEN - 1] != 0 ||
            kl - s->bl - 1 - SORTKEY_LEN > STRATA_KEY_MAX)
            continue;
        size_t keylen = kl - s->bl - 1 - SORTKEY_LEN;
        const char *kp = k + s->bl;
        const uint8_t *sk = (const uint8_t *)k + kl - SORTKEY_LEN;
        if (keylen < s->plen || memcmp(kp, s->prefix, s->plen) != 0)
            return 0; /* past the prefix: keys are sorted */
        if (s->skip_exact) {
            s->skip_exact = false;
            if (keylen == s->done_len && memcmp(kp, s->done, keylen) == 0 &&
                memcmp(sk, s->skip_sk, SORTKEY_LEN) == 0)
                continue;
        }
        if (current && s->have_done && keylen == s->done_len && memcmp(kp, s->done, keylen) == 0)
            continue; /* an older version of a key already decided */
        if (strata_meta__is_tomb(v, vl))
            continue; /* a deleted version is never shown */
        char key[STRATA_KEY_MAX + 1];
        memcpy(key, kp, keylen);
        key[keylen] = 0;
        unsigned have, of;
        strata_meta__merge_votes(&s->mg, &have, &of);
        if (have == of) {
            struct meta_rec r;
            if (strata_meta__rec_decode(v, vl, false, &r) != 0)
                continue; /* heal repairs it; never show garbage */
            strata_meta__info_from_rec(&s->info, s->bucket, key, sk, &r);
            memcpy(s->sk, sk, SORTKEY_LEN);
        } else {
            /* Only some merged drives hold it: the read quorum decides
             * (for CURRENT, which version of the key is the latest). */
            memcpy(s->sk, sk, SORTKEY_LEN);
            int qrc = strata_meta__obj_resolve(s->m, s->bucket, key, current ? NULL : s->sk,
                                               &s->info);
            if (qrc == STRATA_ENOTFOUND) {
                if (current)
                    set_done(s, kp, keylen); /* no live version at all */
                continue;
            }
            if (qrc)
                return qrc;
        }
        s->info_live = true;
        if (current)
            set_done(s, kp, keylen);
        s->advance = true;
        e->key = s->info.key;
        e->sk = current ? NULL : s->sk; /* the quorum's latest may be another version */
        e->info = &s->info;
        return 1;
    }
    return 0;
}

bool strata_meta__local_scan_skip_past(struct strata_meta__scan *s, const char *p, size_t n)
{
    char tmp[STRATA_KEY_MAX + 1];
    if (n > STRATA_KEY_MAX)
        return false;
    memcpy(tmp, p, n);
    while (n > 0 && (uint8_t)tmp[n - 1] == 0xff)
        n--;
    if (n == 0)
        return false;
    tmp[n - 1]++;
    drop_info(s);
    s->advance = false;
    s->skip_exact = false;
    seek_to(s, tmp, n, -1);
    return true;
}

void strata_meta__local_scan_close(struct strata_meta__scan *s)
{
    if (!s)
        return;
    drop_info(s);
    strata_meta__merge_close(&s->mg);
    free(s);
}

uint64_t strata_meta__local_scan_visited(const struct strata_meta__scan *s)
{
    return s->visited;
}
