/*
 * scan.c - the local backend's scans (store.h, "scans"): one forward walk
 * of a k-way merge of RocksDB iterators per scan.
 *
 * CURRENT, VERSIONS: the version records ('O' bucket 0 key 0 sortkey) of
 * N - Wq + 1 readable drives of every set, so that every quorum-committed
 * version, and every committed delete's tombstone, is seen by at least one
 * of them.  Equal RocksDB keys collapse with a tombstone winning, and a
 * deleted version is never shown.  The read rule for disagreements: a
 * version every merged drive of its set holds is taken as is (the fast
 * path); one that some merged drive lacks (a write it missed, or a write
 * that never reached quorum) is decided by the read quorum
 * (strata_meta__obj_resolve), so a scan shows exactly what HEAD and GET
 * show.  A version tombstoned on one merged drive but live on another (a
 * delete the other missed, or an overwrite that crashed below its quorum)
 * goes to the read quorum too.  Versions of a key sort newest first, so a
 * CURRENT scan's entry for a key is the first live version met (or what
 * the quorum says is the latest), and the key's older versions are
 * stepped over.
 *
 * UPLOADS: the upload records ('U' bucket 0 key 0 upload), merged the same
 * way; a dead state on a merged drive wins the merge, and an upload not
 * every merged drive holds is decided as ListParts and UploadPart decide
 * (strata_meta__upload_read): a drive that missed an abort or a complete
 * cannot bring the upload back.
 *
 * DUE: the version-time index ('D' bucket 0 mtime key 0 sortkey) of every
 * online drive, without a read rule: entries are hints (due.c).
 *
 * INTENTS: the transition intents ('X' bucket 0 key 0 sortkey) of every
 * online drive of every set: one a drive holds below quorum is still
 * resolved (transition.c reads it again first).
 *
 * skip_past seeks every iterator past a prefix instead of walking it.
 * Memory is a fixed set of iterators and a few key buffers, whatever the
 * number of keys.  Threads: one scan is used by one thread at a time.
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>

#define LKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + 8 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)

struct strata_meta__scan {
    struct strata_meta *m;
    enum strata_meta__scan_kind kind;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char base[LKEY_MAX]; /* 'O' / 'U' bucket 0; 'D' bucket 0 */
    size_t bl;
    char prefix[STRATA_KEY_MAX + 1];
    size_t plen;
    struct meta_merge mg;
    char buf[LKEY_MAX];
    bool advance;    /* step past the entry returned last before reading */
    bool skip_exact; /* the first key met is the after version itself: skip it */
    uint8_t skip_sk[SORTKEY_LEN];
    /* CURRENT: the key whose latest was decided; with skip_exact: after */
    char done[STRATA_KEY_MAX + 1];
    size_t done_len;
    bool have_done;
    bool info_live; /* info holds an entry to fini */
    struct strata_obj_info info;
    struct strata_mpu_info upload;
    char key[STRATA_KEY_MAX + 1];             /* UPLOADS, DUE, INTENTS: the entry's key */
    char ibucket[STRATA_BUCKET_NAME_MAX + 1]; /* INTENTS: the entry's bucket */
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

static bool spec_ok(const struct strata_meta__scan_spec *spec)
{
    const char *after = spec->after && *spec->after ? spec->after : NULL;
    if (spec->kind == STRATA_META__SCAN_INTENTS)
        return !spec->bucket && !spec->prefix && !after && !spec->after_sk;
    size_t bn = spec->bucket ? strlen(spec->bucket) : 0;
    if (bn == 0 || bn > STRATA_BUCKET_NAME_MAX)
        return false;
    switch (spec->kind) {
    case STRATA_META__SCAN_DUE:
        return !spec->prefix && !after && !spec->after_sk && spec->from_ms < spec->to_ms;
    case STRATA_META__SCAN_CURRENT:
        if (spec->after_sk)
            return false;
        break;
    case STRATA_META__SCAN_VERSIONS:
    case STRATA_META__SCAN_UPLOADS:
        if (spec->after_sk && !after)
            return false;
        break;
    default:
        return false;
    }
    return (!spec->prefix || strlen(spec->prefix) <= STRATA_KEY_MAX) &&
           (!after || strlen(after) <= STRATA_KEY_MAX);
}

/* DUE: the range [from, to) of 'D' bucket 0 mtime_ns. */
static int open_due(struct strata_meta__scan *s, const struct strata_meta__scan_spec *spec,
                    const unsigned *sets, unsigned ns)
{
    size_t bn = strlen(spec->bucket);
    uint64_t lo_ns = spec->from_ms > 0 ? (uint64_t)spec->from_ms * 1000000u : 0;
    uint64_t hi_ns = (uint64_t)spec->to_ms * 1000000u;
    char hi[LKEY_MAX];
    size_t hil = strata_meta__key_due_prefix(hi, spec->bucket, bn, hi_ns);
    s->bl = strata_meta__key_due_prefix(s->base, spec->bucket, bn, lo_ns);
    int rc = strata_meta__merge_open(&s->mg, s->m, sets, ns, MERGE_MAINTENANCE, hi, hil);
    if (rc == 0)
        strata_meta__merge_seek(&s->mg, s->base, s->bl);
    return rc;
}

/* INTENTS: every 'X' key. */
static int open_intents(struct strata_meta__scan *s, const unsigned *sets, unsigned ns)
{
    char hi[1] = {'X' + 1};
    int rc = strata_meta__merge_open(&s->mg, s->m, sets, ns, MERGE_MAINTENANCE, hi, 1);
    if (rc == 0)
        strata_meta__merge_seek(&s->mg, "X", 1);
    return rc;
}

int strata_meta__local_scan_open(struct strata_meta *m, const struct strata_meta__scan_spec *spec,
                                 struct strata_meta__scan **out)
{
    *out = NULL;
    if (!spec_ok(spec))
        return STRATA_EINVAL;
    if (spec->kind == STRATA_META__SCAN_INTENTS) {
        struct strata_meta__scan *s = calloc(1, sizeof(*s));
        if (!s)
            return STRATA_ENOMEM;
        s->m = m;
        s->kind = spec->kind;
        unsigned sets[64], ns = 0;
        for (unsigned i = 0; i < m->nsets && ns < 64; i++)
            sets[ns++] = i;
        int rc = open_intents(s, sets, ns);
        if (rc)
            free(s);
        else
            *out = s;
        return rc;
    }
    const char *prefix = spec->prefix ? spec->prefix : "";
    const char *after = spec->after && *spec->after ? spec->after : NULL;
    size_t bn = strlen(spec->bucket), plen = strlen(prefix);
    struct strata_meta__scan *s = calloc(1, sizeof(*s));
    if (!s)
        return STRATA_ENOMEM;
    s->m = m;
    s->kind = spec->kind;
    memcpy(s->bucket, spec->bucket, bn + 1);
    memcpy(s->prefix, prefix, plen + 1);
    s->plen = plen;
    unsigned sets[64], ns = 0;
    for (unsigned i = 0; i < m->nsets && ns < 64; i++)
        sets[ns++] = i;
    int rc;
    if (spec->kind == STRATA_META__SCAN_DUE) {
        rc = open_due(s, spec, sets, ns);
        if (rc)
            free(s);
        else
            *out = s;
        return rc;
    }
    s->base[0] = spec->kind == STRATA_META__SCAN_UPLOADS ? 'U' : 'O';
    memcpy(s->base + 1, spec->bucket, bn);
    s->base[bn + 1] = 0;
    s->bl = bn + 2;
    char hi[LKEY_MAX];
    memcpy(hi, s->base, s->bl);
    hi[s->bl - 1] = 1;
    rc = strata_meta__merge_open(&s->mg, m, sets, ns, spec->no_cache ? MERGE_NO_CACHE : 0, hi,
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

/* Move to the next merged key of an 'O' or 'U' scan under the prefix, at
 * or after the current one: 1 with its object key (kp, keylen bytes), 0
 * when there is none. */
static int cur_key(struct strata_meta__scan *s, const char **k, size_t *kl, const char **v,
                   size_t *vl, const char **kp, size_t *keylen)
{
    for (; strata_meta__merge_cur(&s->mg, k, kl, v, vl); strata_meta__merge_next(&s->mg)) {
        s->visited++;
        if (*kl < s->bl + 1 + SORTKEY_LEN || (*k)[*kl - SORTKEY_LEN - 1] != 0 ||
            *kl - s->bl - 1 - SORTKEY_LEN > STRATA_KEY_MAX)
            continue;
        *keylen = *kl - s->bl - 1 - SORTKEY_LEN;
        *kp = *k + s->bl;
        if (*keylen < s->plen || memcmp(*kp, s->prefix, s->plen) != 0)
            return 0; /* past the prefix: keys are sorted */
        if (s->skip_exact) {
            s->skip_exact = false;
            if (*keylen == s->done_len && memcmp(*kp, s->done, *keylen) == 0 &&
                memcmp(*k + *kl - SORTKEY_LEN, s->skip_sk, SORTKEY_LEN) == 0)
                continue;
        }
        return 1;
    }
    return 0;
}

static int next_version(struct strata_meta__scan *s, struct strata_meta__scan_ent *e)
{
    bool current = s->kind == STRATA_META__SCAN_CURRENT;
    const char *k, *v;
    size_t kl, vl;
    const char *kp;
    size_t keylen;
    for (; cur_key(s, &k, &kl, &v, &vl, &kp, &keylen); strata_meta__merge_next(&s->mg)) {
        const uint8_t *sk = (const uint8_t *)k + kl - SORTKEY_LEN;
        if (current && s->have_done && keylen == s->done_len && memcmp(kp, s->done, keylen) == 0)
            continue; /* an older version of a key already decided */
        /* A deleted version is never shown; one some merged drive still
         * holds live is decided by the read quorum, as GET decides it. */
        bool tomb = strata_meta__is_tomb(v, vl);
        if (tomb && strata_meta__merge_live(&s->mg) == 0)
            continue;
        char key[STRATA_KEY_MAX + 1];
        memcpy(key, kp, keylen);
        key[keylen] = 0;
        memcpy(s->sk, sk, SORTKEY_LEN);
        unsigned have, of;
        strata_meta__merge_votes(&s->mg, &have, &of);
        if (have == of && !tomb) {
            struct meta_rec r;
            if (strata_meta__rec_decode(v, vl, false, &r) != 0)
                continue; /* heal repairs it; never show garbage */
            strata_meta__info_from_rec(&s->info, s->bucket, key, sk, &r);
        } else {
            /* Only some merged drives hold it: the read quorum decides
             * (for CURRENT, which version of the key is the latest). */
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
        e->keylen = keylen;
        e->sk = current ? NULL : s->sk; /* the quorum's latest may be another version */
        e->info = &s->info;
        return 1;
    }
    return 0;
}

static int next_upload(struct strata_meta__scan *s, struct strata_meta__scan_ent *e)
{
    const char *k, *v;
    size_t kl, vl;
    const char *kp;
    size_t keylen;
    for (; cur_key(s, &k, &kl, &v, &vl, &kp, &keylen); strata_meta__merge_next(&s->mg)) {
        if (strata_meta__is_dead(v, vl))
            continue; /* aborted or completed: a dead state on a merged drive wins */
        memcpy(s->key, kp, keylen);
        s->key[keylen] = 0;
        const uint8_t *up = (const uint8_t *)k + kl - UPLOAD_LEN;
        unsigned have, of;
        strata_meta__merge_votes(&s->mg, &have, &of);
        struct meta_upload u;
        int urc = have < of
                      ? strata_meta__upload_read(s->m, s->mg.iset[s->mg.cur], s->bucket, s->key,
                                                 up, &u)
                      : strata_meta__upload_decode(v, vl, &u);
        if (urc != 0)
            continue; /* not live by the read quorum, or undecodable */
        strata_meta__upload_info(&s->upload, s->bucket, s->key, up, &u);
        strata_meta__upload_fini(&u);
        s->advance = true;
        e->key = s->key;
        e->keylen = keylen;
        e->upload = &s->upload;
        return 1;
    }
    return 0;
}

static int next_due(struct strata_meta__scan *s, struct strata_meta__scan_ent *e)
{
    size_t blen = strlen(s->bucket), off = s->bl;
    const char *k;
    size_t kl;
    for (; strata_meta__merge_cur(&s->mg, &k, &kl, NULL, NULL); strata_meta__merge_next(&s->mg)) {
        s->visited++;
        if (kl < off + 1 + SORTKEY_LEN || k[kl - SORTKEY_LEN - 1] != 0)
            continue;
        size_t klen = kl - SORTKEY_LEN - 1 - off;
        if (klen > STRATA_KEY_MAX)
            continue;
        memcpy(s->key, k + off, klen);
        s->key[klen] = 0;
        memcpy(s->sk, k + kl - SORTKEY_LEN, SORTKEY_LEN);
        s->advance = true;
        e->key = s->key;
        e->keylen = klen;
        e->sk = s->sk;
        e->due_ms = strata_meta__key_due_mtime_ms(k, blen);
        return 1;
    }
    return 0;
}

static int next_intent(struct strata_meta__scan *s, struct strata_meta__scan_ent *e)
{
    const char *k;
    size_t kl;
    for (; strata_meta__merge_cur(&s->mg, &k, &kl, NULL, NULL); strata_meta__merge_next(&s->mg)) {
        /* 'X' bucket 0 key 0 sk */
        s->visited++;
        if (kl <= 3 + SORTKEY_LEN || kl > LKEY_MAX || k[kl - SORTKEY_LEN - 1] != 0)
            continue;
        const char *bucket = k + 1;
        size_t bl = strnlen(bucket, kl - SORTKEY_LEN - 2);
        if (1 + bl + 1 > kl - SORTKEY_LEN - 1 || bl > STRATA_BUCKET_NAME_MAX)
            continue;
        size_t klen = kl - SORTKEY_LEN - 1 - (1 + bl + 1);
        if (klen > STRATA_KEY_MAX)
            continue;
        memcpy(s->ibucket, bucket, bl);
        s->ibucket[bl] = 0;
        memcpy(s->key, bucket + bl + 1, klen);
        s->key[klen] = 0;
        memcpy(s->sk, k + kl - SORTKEY_LEN, SORTKEY_LEN);
        s->advance = true;
        e->bucket = s->ibucket;
        e->key = s->key;
        e->keylen = klen;
        e->sk = s->sk;
        return 1;
    }
    return 0;
}

int strata_meta__local_scan_next(struct strata_meta__scan *s, struct strata_meta__scan_ent *e)
{
    drop_info(s);
    memset(e, 0, sizeof(*e));
    if (s->advance) {
        strata_meta__merge_next(&s->mg);
        s->advance = false;
    }
    switch (s->kind) {
    case STRATA_META__SCAN_UPLOADS:
        return next_upload(s, e);
    case STRATA_META__SCAN_DUE:
        return next_due(s, e);
    case STRATA_META__SCAN_INTENTS:
        return next_intent(s, e);
    default:
        return next_version(s, e);
    }
}

bool strata_meta__local_scan_skip_past(struct strata_meta__scan *s, const char *p, size_t n)
{
    char tmp[STRATA_KEY_MAX + 1];
    if (s->kind == STRATA_META__SCAN_DUE || s->kind == STRATA_META__SCAN_INTENTS ||
        n > STRATA_KEY_MAX)
        return false; /* DUE is in time order, INTENTS span buckets: no key prefix to skip */
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
