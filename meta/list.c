/*
 * list.c - ListObjects / ListObjectVersions over the merged key streams.
 *
 * A page is one forward scan of a k-way merge of iterators: N - Wq + 1
 * readable drives of every set (so every quorum-committed version, and every
 * committed delete's tombstone, is seen by at least one of them), equal
 * RocksDB keys collapsed with a tombstone winning.  Versions of a key sort
 * newest first, so the latest is the first live one met.  A version every
 * merged drive of its set holds is taken as is (the fast path); one that
 * some merged drive lacks (a write it missed, or a write that never reached
 * quorum) is decided by the read quorum (strata_meta__obj_resolve), so a
 * listing shows exactly what HEAD and GET show.  A common
 * prefix is reported once and skipped with a seek past every key under it.
 * Memory is a fixed set of iterators and a few key buffers, whatever the
 * number of keys.  Threads: any caller thread.
 */
#include "meta_internal.h"

#include <stdlib.h>
#include <string.h>

#define LKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)

struct lister {
    struct strata_meta *m;
    const struct strata_list_opts *o;
    char base[LKEY_MAX]; /* 'O' bucket 0 */
    size_t bl;
    struct meta_merge mg;
    char buf[LKEY_MAX];
};

/* Seek every stream to base + s[0..n) (+ tail byte when tail >= 0). */
static void seek_to(struct lister *l, const char *s, size_t n, int tail)
{
    memcpy(l->buf, l->base, l->bl);
    memcpy(l->buf + l->bl, s, n);
    size_t len = l->bl + n;
    if (tail >= 0)
        l->buf[len++] = (char)tail;
    strata_meta__merge_seek(&l->mg, l->buf, len);
}

/* Seek past every key that starts with s[0..n). false: nothing can follow. */
static bool seek_past_prefix(struct lister *l, const char *s, size_t n)
{
    char tmp[STRATA_KEY_MAX + 1];
    memcpy(tmp, s, n);
    while (n > 0 && (uint8_t)tmp[n - 1] == 0xff)
        n--;
    if (n == 0)
        return false;
    tmp[n - 1]++;
    seek_to(l, tmp, n, -1);
    return true;
}

int strata_obj_list(struct strata_meta *m, const struct strata_list_opts *opts,
                    int (*cb)(const struct strata_list_entry *e, void *ud), void *ud,
                    struct strata_list_result *res)
{
    memset(res, 0, sizeof(*res));
    if (!opts || !opts->bucket)
        return STRATA_EINVAL;
    int rc = strata_meta_bucket_get(m, opts->bucket, NULL);
    if (rc)
        return rc;
    unsigned max = opts->max_keys > 1000 ? 1000 : opts->max_keys;
    if (max == 0)
        return 0;
    const char *prefix = opts->prefix ? opts->prefix : "";
    const char *delim = opts->delimiter && *opts->delimiter ? opts->delimiter : NULL;
    const char *after = opts->start_after && *opts->start_after ? opts->start_after : NULL;
    size_t plen = strlen(prefix), dlen = delim ? strlen(delim) : 0;
    if (plen > STRATA_KEY_MAX || (after && strlen(after) > STRATA_KEY_MAX))
        return STRATA_EINVAL;

    struct lister *l = calloc(1, sizeof(*l));
    if (!l)
        return STRATA_ENOMEM;
    l->m = m;
    l->o = opts;
    size_t bn = strlen(opts->bucket);
    l->base[0] = 'O';
    memcpy(l->base + 1, opts->bucket, bn);
    l->base[bn + 1] = 0;
    l->bl = bn + 2;
    char hi[LKEY_MAX];
    memcpy(hi, l->base, l->bl);
    hi[l->bl - 1] = 1;
    unsigned sets[64], ns = 0;
    for (unsigned s = 0; s < m->nsets && ns < 64; s++)
        sets[ns++] = s;
    rc = strata_meta__merge_open(&l->mg, m, sets, ns, opts->maintenance ? MERGE_NO_CACHE : 0, hi,
                                 l->bl);
    if (rc) {
        free(l);
        return rc;
    }

    /* Where to start: the prefix, or just after the marker when later. */
    char cur_key[STRATA_KEY_MAX + 1] = ""; /* key whose versions are being walked */
    bool have_cur = false;
    uint8_t skip_sk[SORTKEY_LEN];
    bool skip_exact = false;
    if (after && strcmp(after, prefix) >= 0) {
        const char *vm = opts->version_id_marker;
        if (opts->versions && vm && *vm) {
            bool found = true;
            if (strcmp(vm, "null") == 0) {
                /* The null version's sort key is found among the key's versions. */
                found = false;
                seek_to(l, after, strlen(after), 0);
                const char *k, *v;
                size_t kl, vl;
                size_t kk = l->bl + strlen(after) + 1;
                while (strata_meta__merge_cur(&l->mg, &k, &kl, &v, &vl) &&
                       kl == kk + SORTKEY_LEN && memcmp(k, l->buf, kk) == 0) {
                    struct meta_rec r;
                    if (strata_meta__rec_decode(v, vl, false, &r) == 0 &&
                        (r.flags & REC_F_NULL)) {
                        memcpy(skip_sk, k + kk, SORTKEY_LEN);
                        found = true;
                        break;
                    }
                    strata_meta__merge_next(&l->mg);
                }
            } else {
                found = strata_meta__vid_parse(vm, skip_sk) == 0;
            }
            if (found) {
                char tmpk[STRATA_KEY_MAX + 1 + SORTKEY_LEN];
                size_t al = strlen(after);
                memcpy(tmpk, after, al);
                tmpk[al] = 0;
                memcpy(tmpk + al + 1, skip_sk, SORTKEY_LEN);
                seek_to(l, tmpk, al + 1 + SORTKEY_LEN, -1);
                skip_exact = true;
                snprintf(cur_key, sizeof(cur_key), "%s", after);
                have_cur = true; /* later versions of it are not the latest */
            } else {
                seek_to(l, after, strlen(after), 1);
            }
        } else {
            seek_to(l, after, strlen(after), 1); /* past every version of it */
        }
    } else {
        seek_to(l, prefix, plen, -1);
    }

    unsigned count = 0;
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    char key[STRATA_KEY_MAX + 1];
    const char *k, *v;
    size_t kl, vl;
    while (rc == 0 && strata_meta__merge_cur(&l->mg, &k, &kl, &v, &vl)) {
        if (kl < l->bl + 1 + SORTKEY_LEN || k[kl - SORTKEY_LEN - 1] != 0 ||
            kl - l->bl - 1 - SORTKEY_LEN > STRATA_KEY_MAX) {
            strata_meta__merge_next(&l->mg);
            continue;
        }
        size_t keylen = kl - l->bl - 1 - SORTKEY_LEN;
        const char *kp = k + l->bl;
        const uint8_t *sk = (const uint8_t *)k + kl - SORTKEY_LEN;
        if (keylen < plen || memcmp(kp, prefix, plen) != 0)
            break; /* past the prefix: keys are sorted */
        if (skip_exact) {
            skip_exact = false;
            if (keylen == strlen(after) && memcmp(kp, after, keylen) == 0 &&
                memcmp(sk, skip_sk, SORTKEY_LEN) == 0) {
                strata_meta__merge_next(&l->mg);
                continue;
            }
        }
        if (strata_meta__is_tomb(v, vl)) {
            strata_meta__merge_next(&l->mg); /* a deleted version is never listed */
            continue;
        }
        /* Where the key rolls up into a common prefix (cpl > 0). */
        size_t cpl = 0;
        if (delim && keylen - plen >= dlen) {
            const char *dp = memmem(kp + plen, keylen - plen, delim, dlen);
            if (dp) {
                cpl = (size_t)(dp - kp) + dlen;
                memcpy(key, kp, cpl);
                key[cpl] = 0;
                if (after && strcmp(key, after) <= 0) {
                    /* Reported on an earlier page. */
                    if (!seek_past_prefix(l, key, cpl))
                        break;
                    continue;
                }
            }
        }
        bool first = !have_cur || strlen(cur_key) != keylen || memcmp(cur_key, kp, keylen) != 0;
        if (!opts->versions && !first) {
            strata_meta__merge_next(&l->mg);
            continue; /* an older version */
        }
        memcpy(key, kp, keylen);
        key[keylen] = 0;
        unsigned have, of;
        strata_meta__merge_votes(&l->mg, &have, &of);
        if (have == of) {
            struct meta_rec r;
            if (strata_meta__rec_decode(v, vl, false, &r) != 0) {
                strata_meta__merge_next(&l->mg); /* heal repairs it; never list garbage */
                continue;
            }
            strata_meta__info_from_rec(&info, opts->bucket, key, sk, &r);
        } else {
            /* Only some merged drives hold it: let the read quorum decide
             * (for a plain listing, which version of the key is the latest). */
            uint8_t skc[SORTKEY_LEN];
            memcpy(skc, sk, SORTKEY_LEN);
            int qrc = strata_meta__obj_resolve(m, opts->bucket, key,
                                               opts->versions ? skc : NULL, &info);
            if (qrc == STRATA_ENOTFOUND) {
                if (!opts->versions) {
                    memcpy(cur_key, key, keylen + 1); /* no live version at all */
                    have_cur = true;
                }
                strata_meta__merge_next(&l->mg);
                continue;
            }
            if (qrc) {
                rc = qrc;
                break;
            }
        }
        /* The merge iterators did not move: k, kp and sk are still valid. */
        memcpy(cur_key, key, keylen + 1);
        have_cur = true;
        if (!opts->versions && info.delete_marker) {
            /* A prefix holding only deleted keys is not listed either. */
            strata_obj_info_fini(&info);
            strata_meta__merge_next(&l->mg);
            continue;
        }
        if (cpl) {
            strata_obj_info_fini(&info);
            key[cpl] = 0; /* the common prefix */
            if (count == max) {
                res->truncated = true;
                break;
            }
            struct strata_list_entry e = {.is_prefix = true, .info = NULL, .key = key};
            rc = cb(&e, ud);
            count++;
            snprintf(res->next_key, sizeof(res->next_key), "%s", key);
            res->next_version_id[0] = 0;
            if (!seek_past_prefix(l, key, cpl))
                break;
            continue;
        }
        if (count == max) {
            strata_obj_info_fini(&info);
            res->truncated = true;
            break;
        }
        info.is_latest = first;
        struct strata_list_entry e = {.is_prefix = false, .info = &info, .key = info.key};
        rc = cb(&e, ud);
        count++;
        snprintf(res->next_key, sizeof(res->next_key), "%s", key);
        if (opts->versions)
            snprintf(res->next_version_id, sizeof(res->next_version_id), "%s", info.version_id);
        strata_obj_info_fini(&info);
        strata_meta__merge_next(&l->mg);
    }
    if (!res->truncated) {
        res->next_key[0] = 0;
        res->next_version_id[0] = 0;
    }
    strata_meta__merge_close(&l->mg);
    free(l);
    return rc;
}
