/*
 * local.h - shared between the files of the local store backend
 * (meta/local/): the cluster state kept on the sets' drives.  Nothing
 * above the seam includes it; it reaches them through
 * strata_meta__store_local (store.h).
 */
#ifndef STRATA_META_LOCAL_LOCAL_H
#define STRATA_META_LOCAL_LOCAL_H

#include "meta_internal.h"
#include "store.h"

/* The store ops (store.h) as strata_meta__local_OP: state.c, clock_mark.c,
 * audit_files.c, bucket.c, key.c, get.c, mpu.c, scan.c, intent.c, heal.c,
 * healq.c, orphan.c, store_stats.c, restore.c and ops.c. */
STRATA_META__STORE_OPS(STRATA_META__STORE_DECLARE, local)

/* ---- clock_mark.c: DRIVE/lock-clock ---- */
/* The audit anchor stored in drive/lock-clock beside the mark; false when
 * none. */
bool strata_meta__local_anchor_read(const char *drive, uint64_t *seq, char hash[65]);

/* ---- audit_files.c: DRIVE/audit.log ---- */
/* Seq and hash of drive (set, d)'s last durable audit entry, for its
 * lock-clock file; false when the drive has none. */
bool strata_meta__local_audit_anchor(struct strata_meta *m, unsigned set, unsigned d,
                                     uint64_t *seq, char hash[65]);

/* ---- get.c, key.c: one key's versions ---- */
/* Quorum read of bucket/key for a scan whose drives disagree: version sk,
 * or the latest when sk is NULL.  0 with info filled (delete markers
 * included; caller strata_obj_info_fini's), STRATA_ENOTFOUND, STRATA_EQUORUM. */
int strata_meta__obj_resolve(struct strata_meta *m, const char *bucket, const char *key,
                             const uint8_t *sk, struct strata_obj_info *info);
/* Decide on t's view and apply under the key lock the caller holds, extra
 * adding to every drive's batch (the multipart complete); e: the edit. */
int strata_meta__local_key_apply(struct strata_meta *m, const struct strata_meta__key_txn *t,
                                 unsigned set, meta_extra_fn extra, void *ud,
                                 struct strata_meta__key_edit *e);

/* ---- scan.c: merged walks of the version records ---- */
/* Merged keys the scan looked at so far (tests: a skip_past is a seek). */
uint64_t strata_meta__local_scan_visited(const struct strata_meta__scan *s);

#endif /* STRATA_META_LOCAL_LOCAL_H */
