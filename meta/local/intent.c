/*
 * intent.c - the local backend's transition intents (store.h,
 * "a transition's intent records"): 'X' bucket 0 key 0 sortkey in the
 * version's set (meta_internal.h), put on the write quorum with undo, read
 * by quorum (any copy counts: a write that missed its quorum must still be
 * resolved), removed best effort once the losing copies are gone.
 * The protocol and the intent's bytes are transition.c's.
 * Threads: any caller thread.
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>

#define XKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)

size_t strata_meta__key_intent(char *out, size_t cap, const char *bucket, const char *key,
                               const uint8_t *sk)
{
    size_t n = strata_meta__key_obj(out, cap, bucket, key, sk);
    out[0] = 'X';
    return n;
}

/* A delete of an intent that a drive keeps has it resolved again,
 * harmlessly (meta_internal.h: also restore.c's restored-copy records). */
int strata_meta__intent_write(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                              const char *v, size_t vl)
{
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
    strata_meta__key_batches(m, set, k, kl, v, vl, NULL, wbs, undo);
    int rc = 0;
    if (v) {
        rc = strata_meta__set_commit(m, set, wbs, undo);
    } else {
        bool ok[STRATA_DRIVES_MAX];
        strata_meta__set_apply(m, set, wbs, ok);
    }
    strata_meta__batches_free(wbs, undo);
    return rc;
}

int strata_meta__local_intent_put(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], const void *v, size_t vl)
{
    char k[XKEY_MAX];
    size_t kl = strata_meta__key_intent(k, sizeof(k), bucket, key, sk);
    return strata_meta__intent_write(m, strata_meta__set_of(m, bucket, key), k, kl, v, vl);
}

int strata_meta__local_intent_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], char **v, size_t *vl)
{
    *v = NULL;
    *vl = 0;
    char k[XKEY_MAX];
    size_t kl = strata_meta__key_intent(k, sizeof(k), bucket, key, sk);
    struct meta_qraw q;
    int qrc = strata_meta__qraw_get(m, strata_meta__set_of(m, bucket, key), k, kl, true, &q);
    /* The quorum's bytes, else any drive's: an intent below quorum still
     * names copies that may exist. */
    int d = qrc == 0 ? q.win : -1;
    for (unsigned i = 0; i < STRATA_DRIVES_MAX && d < 0; i++)
        if (q.tried[i] && q.rc[i] == 0)
            d = (int)i;
    int rc = qrc == 0 ? 0 : qrc;
    if (d >= 0) {
        rc = 0;
        if (!(*v = malloc(q.vl[d] ? q.vl[d] : 1)))
            rc = STRATA_ENOMEM;
        else
            memcpy(*v, q.v[d], q.vl[d]);
        *vl = rc ? 0 : q.vl[d];
    }
    strata_meta__qraw_fini(&q);
    return rc;
}

int strata_meta__local_intent_resolve(struct strata_meta *m, const char *bucket, const char *key,
                                      const uint8_t sk[16], const void *v, size_t vl,
                                      const struct strata_meta__intent_loss *loss, size_t n)
{
    (void)v;
    (void)vl;
    for (size_t i = 0; i < n; i++) {
        int rc = strata_meta__data_rm(m, loss[i].tier, bucket, key, loss[i].id);
        if (rc)
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "transition of %s/%s: remove on %s: %s",
                       bucket, key, loss[i].tier[0] ? loss[i].tier : STRATA_TIER_HOT,
                       strata_errname(rc));
    }
    strata_meta__tr_step(m, STRATA_TR_STEP_REMOVED);
    char k[XKEY_MAX];
    size_t kl = strata_meta__key_intent(k, sizeof(k), bucket, key, sk);
    strata_meta__intent_write(m, strata_meta__set_of(m, bucket, key), k, kl, NULL, 0);
    strata_meta__tr_step(m, STRATA_TR_STEP_DONE);
    return 0;
}
