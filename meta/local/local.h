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

/* ---- state.c ---- */
int strata_meta__local_state_put(struct strata_meta *m, const char *name, const void *doc,
                                 size_t len);
int strata_meta__local_state_get(struct strata_meta *m, const char *name, void **doc,
                                 size_t *len);

/* ---- clock_mark.c: DRIVE/lock-clock ---- */
int64_t strata_meta__local_mark_read(struct strata_meta *m);
int strata_meta__local_mark_advance(struct strata_meta *m, int64_t lock_ms);
/* The audit anchor stored in drive/lock-clock beside the mark; false when
 * none. */
bool strata_meta__local_anchor_read(const char *drive, uint64_t *seq, char hash[65]);

/* ---- audit_files.c: DRIVE/audit.log ---- */
int strata_meta__local_audit_open(struct strata_meta *m, strata_meta__audit_tail_fn tail,
                                  struct strata_meta__audit_found *found);
void strata_meta__local_audit_close(struct strata_meta *m);
int strata_meta__local_audit_append(struct strata_meta *m, const char *body,
                                    strata_meta__audit_seal_fn seal);
uint64_t strata_meta__local_audit_last_seq(struct strata_meta *m);
/* Seq and hash of drive (set, d)'s last durable audit entry, for its
 * lock-clock file; false when the drive has none. */
bool strata_meta__local_audit_anchor(struct strata_meta *m, unsigned set, unsigned d,
                                     uint64_t *seq, char hash[65]);
int strata_meta__local_audit_copy_open(const char *where, struct strata_meta__audit_copy **out);
bool strata_meta__local_audit_copy_anchor(const char *where, uint64_t *seq, char hash[65]);
int strata_meta__local_audit_copy_next(struct strata_meta__audit_copy *c, const char **line,
                                       size_t *len);
void strata_meta__local_audit_copy_close(struct strata_meta__audit_copy *c);

/* ---- bucket.c: 'B' and 'C' keys on every set ---- */
int strata_meta__local_bucket_txn(struct strata_meta *m, const struct strata_meta__bucket_txn *t);
int strata_meta__local_bucket_get(struct strata_meta *m, const char *name,
                                  struct strata_bucket_info *out);
int strata_meta__local_bucket_list(struct strata_meta *m,
                                   int (*cb)(const struct strata_bucket_info *b, void *ud),
                                   void *ud);
int strata_meta__local_config_put(struct strata_meta *m, const char *bucket, uint64_t inc,
                                  const char *kind, const void *doc, size_t len);
int strata_meta__local_config_get(struct strata_meta *m, const char *bucket, const char *kind,
                                  void **doc, size_t *len);

/* ---- key.c: one key's versions ---- */
int strata_meta__local_key_txn(struct strata_meta *m, const struct strata_meta__key_txn *t);
int strata_meta__local_key_read(struct strata_meta *m, const struct strata_meta__key_txn *t);
/* ---- get.c: the version GET and HEAD show ---- */
int strata_meta__local_key_get(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, strata_meta__key_found_fn fn, void *ud);
int strata_meta__local_key_get_nowait(struct strata_meta *m, const char *bucket, const char *key,
                                      const char *version_id, strata_meta__key_found_fn fn,
                                      void *ud);
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

/* ---- mpu.c: upload and part records ---- */
int strata_meta__local_upload_create(struct strata_meta *m, const char *bucket, const char *key,
                                     uint64_t inc, const uint8_t *up, const void *v, size_t vl);
int strata_meta__local_upload_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, struct meta_upload *u);
int strata_meta__local_part_put(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t *upload, const struct meta_part *part,
                                struct strata_meta__data_refs *old_data);
int strata_meta__local_parts_read(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, unsigned from,
                                  int (*cb)(void *ud, const struct meta_part *p), void *ud);
int strata_meta__local_mpu_complete(struct strata_meta *m, const struct strata_meta__mpu_txn *t,
                                    struct strata_meta__data_refs *unref);
int strata_meta__local_mpu_abort(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t *up, struct strata_meta__data_refs *unref);

/* ---- scan.c: merged walks of the version records ---- */
int strata_meta__local_scan_open(struct strata_meta *m, const struct strata_meta__scan_spec *spec,
                                 struct strata_meta__scan **out);
int strata_meta__local_scan_next(struct strata_meta__scan *s, struct strata_meta__scan_ent *e);
bool strata_meta__local_scan_skip_past(struct strata_meta__scan *s, const char *p, size_t n);
void strata_meta__local_scan_close(struct strata_meta__scan *s);
/* Merged keys the scan looked at so far (tests: a skip_past is a seek). */
uint64_t strata_meta__local_scan_visited(const struct strata_meta__scan *s);

/* ---- intent.c: a transition's 'X' records ---- */
int strata_meta__local_intent_put(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], const void *v, size_t vl);
int strata_meta__local_intent_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], char **v, size_t *vl);
int strata_meta__local_intent_resolve(struct strata_meta *m, const char *bucket, const char *key,
                                      const uint8_t sk[16], const void *v, size_t vl,
                                      const struct strata_meta__intent_loss *loss, size_t n);

/* ---- heal.c, healq.c, orphan.c, store_stats.c: the optional ops ---- */
int strata_meta__local_heal_all_paced(struct strata_meta *m, strata_heal_pace_cb pace_cb, void *ud,
                                      struct strata_heal_stats *out);
int strata_meta__local_heal_queued(struct strata_meta *m, size_t max,
                                   struct strata_heal_stats *out, size_t *pending);
void strata_meta__local_heal_queue_stats(struct strata_meta *m, size_t *pending,
                                         uint64_t *dropped);
int strata_meta__local_orphan_round(struct strata_meta *m, struct strata_orphans **state,
                                    unsigned age_s, uint64_t *removed);
int strata_meta__local_store_stats(struct strata_meta *m, unsigned set, unsigned drive,
                                   struct strata_meta_store_stats *out);
uint64_t strata_meta__local_block_cache_bytes(struct strata_meta *m);
uint64_t strata_meta__local_memtable_size(const struct strata_meta *m);

/* ---- restore.c: 'R' records of restored copies ---- */
int strata_meta__local_restore_get(struct strata_meta *m, const char *bucket, const char *key,
                                   const uint8_t sk[16], char **v, size_t *vl);
int strata_meta__local_restore_swap(struct strata_meta *m,
                                    const struct strata_meta__restore_swap *s);
int strata_meta__local_restore_walk(struct strata_meta *m, strata_meta__restore_walk_fn cb,
                                    void *ud);

#endif /* STRATA_META_LOCAL_LOCAL_H */
