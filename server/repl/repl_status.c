/*
 * repl_status.c - a version's replication status when rules send it to
 * more than one target (repl_internal.h).  As AWS says it for several
 * destinations, x-amz-replication-status is PENDING until every target
 * is done with the version, then COMPLETED when all completed, FAILED
 * when any failed.  Each target's own state is kept beside it in the
 * stored header STRATA_REPL_TARGETS_HDR ("site2=COMPLETED,site3=FAILED":
 * the targets done; one not named is as the status says), written only
 * for a version that goes to more than one target: a single target's
 * record is as before, and records without it read as they always did.
 */
#include "repl_internal.h"

#include "repl.h"
#include "repl_hooks.h"
#include "srv.h"
#include "strata/erasure.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LIST_MAX (STRATA_REPL_TARGETS_MAX * 48)

/* One daemon's updates of one version's states, one at a time (a read,
 * then a write of the list and the status). */
#define STRIPES 64
static pthread_mutex_t stripe[STRIPES] = {[0 ... STRIPES - 1] = PTHREAD_MUTEX_INITIALIZER};

/* Target name's state in list into out (len bytes): true when named. */
static bool list_find(const char *list, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        if (l > nl + 1 && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            snprintf(out, len, "%.*s", (int)(l - nl - 1), p + nl + 1);
            return true;
        }
    }
    return false;
}

const char *strata_repl__status_own(const struct strata_obj_info *in, const char *name,
                                    char *buf, size_t len)
{
    const char *st = strata_obj_info_hdr(in, STRATA_REPL_STATUS_HDR);
    const char *list = strata_obj_info_hdr(in, STRATA_REPL_TARGETS_HDR);
    return st && list && name && list_find(list, name, buf, len) ? buf : st;
}

int strata_repl__status_reset(struct strata_meta *m, const char *b, const char *k, const char *v,
                              bool listed)
{
    int rc = listed ? strata_obj_hdr_set(m, b, k, v, STRATA_REPL_TARGETS_HDR, NULL) : 0;
    return rc ? rc : strata_obj_hdr_set(m, b, k, v, STRATA_REPL_STATUS_HDR, "PENDING");
}

int strata_repl__status_set(struct strata_repl *rp, int ti, struct strata_meta *m, const char *b,
                            const char *k, const char *v, const char *st)
{
    if (!strata_repl__target_name(rp, 1)) /* one target: its state is the status */
        return strata_obj_hdr_set(m, b, k, v, STRATA_REPL_STATUS_HDR, st);
    char id[3 * 1024 + 200];
    int n = snprintf(id, sizeof(id), "%s/%s/%s", b, k, v);
    pthread_mutex_t *mu = &stripe[strata_crc32c(0, id, n > 0 && (size_t)n < sizeof(id)
                                                           ? (size_t)n : sizeof(id) - 1) %
                                   STRIPES];
    pthread_mutex_lock(mu);
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    bool sel[STRATA_REPL_TARGETS_MAX];
    int rc = strata_obj_head(m, b, k, v, &in);
    rc = rc == STRATA_EMETHOD ? 0 : rc; /* a delete marker's, by its id */
    int nsel = rc ? 0 : strata_repl__targets_of(rp, m, b, k, in.tags, in.tags_len,
                                                in.delete_marker, sel);
    const char *list = rc ? NULL : strata_obj_info_hdr(&in, STRATA_REPL_TARGETS_HDR);
    if (rc == 0 && (nsel < 2 || ti < 0 || !sel[ti])) {
        /* One target (or the rules changed since): its state is the status. */
        if (list)
            rc = strata_obj_hdr_set(m, b, k, v, STRATA_REPL_TARGETS_HDR, NULL);
        if (rc == 0)
            rc = strata_obj_hdr_set(m, b, k, v, STRATA_REPL_STATUS_HDR, st);
    } else if (rc == 0) {
        char out[LIST_MAX] = "", one[32];
        size_t ol = 0;
        bool pending = false, failed = false;
        for (int j = 0; j < STRATA_REPL_TARGETS_MAX; j++) {
            if (!sel[j])
                continue;
            const char *name = strata_repl__target_name(rp, j);
            const char *s = j == ti ? st
                            : list && list_find(list, name, one, sizeof(one)) ? one
                                                                                : "PENDING";
            pending |= strcmp(s, "PENDING") == 0;
            failed |= strcmp(s, "FAILED") == 0;
            if (strcmp(s, "PENDING") != 0 && ol < sizeof(out))
                ol += (size_t)snprintf(out + ol, sizeof(out) - ol, "%s%s=%s", ol ? "," : "",
                                       name, s);
        }
        if (out[0] || list)
            rc = strata_obj_hdr_set(m, b, k, v, STRATA_REPL_TARGETS_HDR, out[0] ? out : NULL);
        if (rc == 0)
            rc = strata_obj_hdr_set(m, b, k, v, STRATA_REPL_STATUS_HDR,
                                    pending ? "PENDING" : failed ? "FAILED" : "COMPLETED");
    }
    strata_obj_info_fini(&in);
    pthread_mutex_unlock(mu);
    return rc;
}
