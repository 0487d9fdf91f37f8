/*
 * state.c - the local backend's state documents ('S' name; the seam's
 * state_put/get).  Written like a version record, on every drive of set 0
 * in one synced batch with the write quorum (rolled back below it); read
 * with the read quorum of identical values.
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>

static size_t state_key(char *out, const char *name)
{
    size_t n = strlen(name);
    out[0] = 'S';
    memcpy(out + 1, name, n);
    return n + 1;
}

int strata_meta__local_state_put(struct strata_meta *m, const char *name, const void *doc,
                                 size_t len)
{
    char k[STRATA_META__STATE_NAME_MAX + 1];
    size_t kl = state_key(k, name);
    char *v = malloc(len + 1);
    if (!v)
        return STRATA_ENOMEM;
    v[0] = VAL_VERSION_BYTE;
    if (len)
        memcpy(v + 1, doc, len);
    struct meta_qraw q;
    strata_meta__qraw_get(m, 0, k, kl, true, &q); /* each drive's old value, for the undo */
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
    strata_meta__key_batches(m, 0, k, kl, len ? v : NULL, len + 1, &q, wbs, undo);
    int rc = strata_meta__set_commit(m, 0, wbs, undo);
    strata_meta__batches_free(wbs, undo);
    strata_meta__qraw_fini(&q);
    free(v);
    return rc;
}

int strata_meta__local_state_get(struct strata_meta *m, const char *name, void **doc,
                                 size_t *len)
{
    char k[STRATA_META__STATE_NAME_MAX + 1];
    size_t kl = state_key(k, name);
    struct meta_qraw q;
    int rc = strata_meta__qraw_get(m, 0, k, kl, false, &q);
    if (rc == 0) {
        const char *v = q.v[q.win];
        size_t vl = q.vl[q.win];
        if (vl < 1 || (uint8_t)v[0] != VAL_VERSION_BYTE) {
            rc = STRATA_ECORRUPT;
        } else {
            *doc = malloc(vl > 1 ? vl - 1 : 1);
            if (!*doc) {
                rc = STRATA_ENOMEM;
            } else {
                memcpy(*doc, v + 1, vl - 1);
                *len = vl - 1;
            }
        }
    }
    strata_meta__qraw_fini(&q);
    return rc;
}
