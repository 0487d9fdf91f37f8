/*
 * repl_internal.h - what the handlers and hooks (repl_handlers.c) use of
 * the targets and queues (repl.c).
 */
#ifndef STRATA_SERVER_REPL_REPL_INTERNAL_H
#define STRATA_SERVER_REPL_REPL_INTERNAL_H

#include <stdbool.h>

struct strata_repl;

/* A version a rule selected for a target this daemon does not have. */
void strata_repl__unknown_target_count(void);
/* The target a Destination's Account names (NULL: the only target), or -1. */
int strata_repl__target_find(const struct strata_repl *rp, const char *name);
/* Queues one version (or delete marker, or with op "tags", "retention" or
 * "legal-hold" that metadata of the version alone) for target ti: 0, or -1
 * (dropped). */
int strata_repl__enqueue(struct strata_repl *rp, int ti, const char *bucket, const char *key,
                         const char *vid, const char *dest, const char *sc, bool marker,
                         const char *op);

/* Whether the rule of bucket that selects key (tags: stored form) now
 * replicates SSE-KMS versions: 1 with its ReplicaKmsKeyID in kms, 0 not
 * (no SseKmsEncryptedObjects Enabled, or no rule any more), -1 when the
 * configuration cannot be read now (retry). */
struct strata_meta;
int strata_repl__rule_kms(struct strata_meta *m, const char *bucket, const char *key,
                          const void *tags, size_t tags_len, char *kms, size_t kms_len);

#endif /* STRATA_SERVER_REPL_REPL_INTERNAL_H */
