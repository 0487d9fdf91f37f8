/*
 * repl_internal.h - what the handlers and hooks (repl_handlers.c) use of
 * the targets and queues (repl.c).
 */
#ifndef STRATA_SERVER_REPL_REPL_INTERNAL_H
#define STRATA_SERVER_REPL_REPL_INTERNAL_H

#include <stdbool.h>

#include "strata/meta.h"

struct strata_repl;

/* A version a rule selected for a target this daemon does not have. */
void strata_repl__unknown_target_count(void);
/* The target a Destination's Account names (NULL: the only target), or -1. */
int strata_repl__target_find(const struct strata_repl *rp, const char *name);
/* Queues one version (or delete marker, or with op "tags", "retention" or
 * "legal-hold" that metadata of the version alone) for target ti: 0, or -1
 * (dropped).  existing: queued by `strata admin replicate`, which may
 * queue an entry older than one the target has already (repl.c,
 * send_in_turn). */
int strata_repl__enqueue(struct strata_repl *rp, int ti, const char *bucket, const char *key,
                         const char *vid, const char *dest, const char *sc, bool marker,
                         const char *op, bool existing);

/* The name of target ti of rp. */
const char *strata_repl__target_name(const struct strata_repl *rp, int ti);

/* Whether the rule of bucket sending key (tags: stored form) to target ti
 * now replicates SSE-KMS versions: 1 with its ReplicaKmsKeyID in kms, 0
 * not (no SseKmsEncryptedObjects Enabled, or no rule any more), -1 when
 * the configuration cannot be read now (retry). */
struct strata_meta;
int strata_repl__rule_kms(struct strata_repl *rp, int ti, struct strata_meta *m,
                          const char *bucket, const char *key, const void *tags, size_t tags_len,
                          char *kms, size_t kms_len);

/* The targets of rp the rules of bucket send key to (tags: stored form;
 * marker: a delete marker, only by rules replicating them; AWS: every
 * destination a rule selects it for): sel[ti] set for each, and how many,
 * or -1 (sel all false) when the configuration cannot be read now. */
int strata_repl__targets_of(struct strata_repl *rp, struct strata_meta *m, const char *bucket,
                            const char *key, const void *tags, size_t tags_len, bool marker,
                            bool sel[]);

/* A version's (or delete marker's) replication status with several
 * targets (repl_status.c).  own: target name's own state of in (a
 * pointer into in, or buf), the status itself when none is kept for it.
 * set: target ti is done with it (st COMPLETED or FAILED): its own state
 * and the status of all the targets the rules send it to (PENDING until
 * every one is done, then FAILED when any failed, else COMPLETED); one
 * daemon's updates of a version one at a time.  reset: PENDING again for
 * every target (a change queued to each).  0, or a STRATA_E* code. */
struct strata_obj_info;
const char *strata_repl__status_own(const struct strata_obj_info *in, const char *name,
                                    char *buf, size_t len);
int strata_repl__status_set(struct strata_repl *rp, int ti, struct strata_meta *m, const char *b,
                            const char *k, const char *v, const char *st);
/* Status PENDING for every target again; listed: the caller's read of the
 * version found a per-target list (STRATA_REPL_TARGETS_HDR), which goes. */
int strata_repl__status_reset(struct strata_meta *m, const char *b, const char *k, const char *v,
                              bool listed);

/* What one key (bucket, key) owes a target before its entry vid (a
 * version or delete marker) is sent, read from the index, whose order is
 * commit order across gateways (repl_order.c).  superseded: an entry
 * newer than vid is done (COMPLETED or FAILED), so vid sent now would
 * arrive after a newer one; self: 1 vid is owed (PENDING, or no status),
 * 0 done already (sent ahead of its own message), 2 a REPLICA, -1 gone;
 * newer_done: with superseded, that newer entry; e[0..n) (not with
 * superseded): the older entries still PENDING above the newest older
 * one done, oldest first.  The key's entries are listed page by page
 * until that one done (at most TURN_MAX of them); of the newer ones, the
 * TURN_PAGE nearest vid are looked at (repl_order.c).  Entries a rule
 * sends to another target than ti of rp are left out.  0, or a STRATA_E*
 * code (retry). */
struct strata_repl__owed {
    char vid[STRATA_VERSION_ID_MAX + 1];
    bool marker;
};
/* A growing list of entries: 0, or STRATA_ENOMEM (o unchanged). */
struct strata_repl__owed_list {
    struct strata_repl__owed *e;
    size_t n, cap;
};
int strata_repl__owed_add(struct strata_repl__owed_list *o, const char *vid, bool marker);

struct strata_repl__turn {
    bool superseded;
    struct strata_repl__owed newer_done;
    int self;
    size_t n;
    struct strata_repl__owed *e;
};
int strata_repl__turn_read(struct strata_repl *rp, int ti, struct strata_meta *m,
                           const char *bucket, const char *key, const char *vid,
                           struct strata_repl__turn *t);
void strata_repl__turn_fini(struct strata_repl__turn *t);

#endif /* STRATA_SERVER_REPL_REPL_INTERNAL_H */
