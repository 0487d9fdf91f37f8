/*
 * list.c - ListObjects / ListObjectVersions: the prefix, delimiter and
 * marker rules over the store's scans (store.h, "scans").
 *
 * A page is one scan of the bucket: CURRENT (each key's latest version)
 * for a listing of objects, VERSIONS for a listing of versions; the store
 * applies its read rule, so a listing shows exactly what HEAD and GET show
 * (the local backend: meta/local/scan.c).  A key under a common prefix is
 * reported once as the prefix, and the scan is moved past every key under
 * it with scan_skip_past (one seek, not a walk of the keys).  A prefix
 * holding only keys whose latest version is a delete marker is not listed.
 * Memory is the scan's, whatever the number of keys.  Threads: any caller
 * thread.
 */
#include "meta_internal.h"
#include "store.h"

#include <stdlib.h>
#include <string.h>

/* The sort key of key's null version, read through a VERSIONS scan:
 * 0, STRATA_ENOTFOUND when it has none, or the scan's error. */
static int null_version_sk(struct strata_meta *m, const struct strata_meta__scan_spec *page,
                           const char *key, uint8_t sk[SORTKEY_LEN])
{
    struct strata_meta__scan_spec spec = {
        .bucket = page->bucket,
        .kind = STRATA_META__SCAN_VERSIONS,
        .prefix = key, /* key's own versions come first */
        .no_cache = page->no_cache,
    };
    struct strata_meta__scan *sc;
    int rc = m->store->scan_open(m, &spec, &sc);
    if (rc)
        return rc;
    struct strata_meta__scan_ent e;
    bool found = false;
    while (!found && (rc = m->store->scan_next(sc, &e)) == 1 && strcmp(e.key, key) == 0) {
        if (strcmp(e.info->version_id, "null") == 0) {
            memcpy(sk, e.sk, SORTKEY_LEN);
            found = true;
        }
    }
    m->store->scan_close(sc);
    return found ? 0 : rc < 0 ? rc : STRATA_ENOTFOUND;
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

    struct strata_meta__scan_spec spec = {
        .bucket = opts->bucket,
        .kind = opts->versions ? STRATA_META__SCAN_VERSIONS : STRATA_META__SCAN_CURRENT,
        .prefix = prefix,
        .no_cache = opts->maintenance,
        .want = delim ? 0 : max + 1, /* one more: is the listing truncated? */
    };
    /* Where to start: the prefix, or just after the marker when later. */
    char cur_key[STRATA_KEY_MAX + 1] = ""; /* key whose versions are being walked */
    bool have_cur = false;
    uint8_t marker_sk[SORTKEY_LEN];
    if (after && strcmp(after, prefix) >= 0) {
        spec.after = after; /* past every version of it, unless: */
        const char *vm = opts->version_id_marker;
        if (opts->versions && vm && *vm) {
            int frc = strcmp(vm, "null") == 0 ? null_version_sk(m, &spec, after, marker_sk)
                      : strata_meta__vid_parse(vm, marker_sk) == 0 ? 0
                                                                   : STRATA_ENOTFOUND;
            if (frc && frc != STRATA_ENOTFOUND)
                return frc;
            if (frc == 0) {
                spec.after_sk = marker_sk; /* past that version: its older ones follow */
                snprintf(cur_key, sizeof(cur_key), "%s", after);
                have_cur = true; /* later versions of it are not the latest */
            }
        }
    }
    struct strata_meta__scan *sc;
    rc = m->store->scan_open(m, &spec, &sc);
    if (rc)
        return rc;

    unsigned count = 0;
    char key[STRATA_KEY_MAX + 1];
    struct strata_meta__scan_ent e;
    int n = 0;
    while (rc == 0 && (n = m->store->scan_next(sc, &e)) == 1) {
        const char *kp = e.key;
        size_t keylen = e.keylen;
        struct strata_obj_info *info = e.info;
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
                    if (!m->store->scan_skip_past(sc, key, cpl))
                        break;
                    continue;
                }
            }
        }
        bool first = !have_cur || strcmp(cur_key, kp) != 0;
        memcpy(cur_key, kp, keylen + 1);
        have_cur = true;
        if (!opts->versions && info->delete_marker)
            continue; /* a prefix holding only deleted keys is not listed either */
        if (cpl) {
            if (count == max) {
                res->truncated = true;
                break;
            }
            struct strata_list_entry le = {.is_prefix = true, .info = NULL, .key = key};
            rc = cb(&le, ud);
            count++;
            snprintf(res->next_key, sizeof(res->next_key), "%s", key);
            res->next_version_id[0] = 0;
            if (!m->store->scan_skip_past(sc, key, cpl))
                break;
            continue;
        }
        if (count == max) {
            res->truncated = true;
            break;
        }
        info->is_latest = first;
        struct strata_list_entry le = {.is_prefix = false, .info = info, .key = info->key};
        rc = cb(&le, ud);
        count++;
        memcpy(res->next_key, kp, keylen + 1); /* keylen <= STRATA_KEY_MAX */
        if (opts->versions)
            snprintf(res->next_version_id, sizeof(res->next_version_id), "%s", info->version_id);
    }
    if (rc == 0 && n < 0)
        rc = n; /* the scan's error (a read quorum not reached) */
    if (!res->truncated) {
        res->next_key[0] = 0;
        res->next_version_id[0] = 0;
    }
    m->store->scan_close(sc);
    return rc;
}
