/*
 * repl.h - bucket replication: the server's replication targets
 * (--replication-target NAME:URL, credentials for NAME in --tier-credentials),
 * the bucket's ReplicationConfiguration (Put/Get/DeleteBucketReplication),
 * and the asynchronous copy of each write to each target a rule names
 * (several targets: repl_status.c says what the status then is).
 *
 * A write a rule selects is stored with x-amz-replication-status PENDING,
 * then queued (server/pqueue.h: one persistent queue per target,
 * replication/NAME.q with a copy on each of the first two drives) after it
 * committed and before its answer is sent.  The target's delivery threads
 * read the version back and PUT it to the target with its data, stored
 * headers, tags, Object Lock settings and checksum, and the header
 * x-strata-replica-version-id (a
 * Strata target keeps the version id and stores the version as REPLICA);
 * the source's status then becomes COMPLETED, or FAILED when the target
 * refuses it for good (a target down is retried, the status stays
 * PENDING).  SSE-C versions go sealed, SSE-KMS ones (when the rule
 * selects them) re-encrypted under its ReplicaKmsKeyID (repl.c,
 * server/s3/sse_replica.c).  Delete markers are replicated the same way when the rule's
 * DeleteMarkerReplication is Enabled; deletes of a version never are.
 *
 * Replication sits above the S3 API (it reads versions, their encryption
 * and tags through it); the S3 handlers reach it through the table
 * strata_repl_s3_hooks only (s3/repl_hooks.h).
 *
 * Threads: the request hooks from connection threads; create/destroy from
 * the main thread.
 */
#ifndef STRATA_SERVER_REPL_REPL_H
#define STRATA_SERVER_REPL_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repl_hooks.h"

struct strata_req;
struct strata_sbuf;
struct strata_meta;
struct strata_obj_info;

#define STRATA_REPL_TARGETS_MAX 16
#define STRATA_REPL_QUEUE_MAX 1000000 /* versions pending per target */
/* Versions in flight per target, of different keys: the changes of one
 * key go one after the other, in the order they were written (a target
 * that is not a Strata keeps no source version ids, so the last to
 * arrive becomes its latest). */
#define STRATA_REPL_THREADS 8

struct strata_repl;

/*
 * The targets of specs[], their credentials from creds_path (required when
 * nspecs > 0), their queues with a copy in each of dirs[0..ndirs)
 * (strata_pqueue_create: one on each of the first two drives, so the
 * first drive's loss loses no pending version) and delivery threads;
 * versions left from a previous run are replicated first.  0 with *out
 * (NULL when nspecs is 0), or -1 with err set.
 */
struct strata_kms;
/* kms (may be NULL) gives the object keys of SSE-S3 versions, sent as
 * plaintext for the target to encrypt under its own key.  sealed_retry_s:
 * how long a refusal of an SSE-KMS key's sealed form is remembered (0:
 * never). */
int strata_repl_create(const char *const *specs, size_t nspecs, const char *creds_path,
                       const char *const *dirs, size_t ndirs, struct strata_meta *meta,
                       const struct strata_kms *kms, unsigned sealed_retry_s,
                       struct strata_repl **out, char *err, size_t err_len);
/* Stops the threads (queued versions stay queued) and frees.  NULL: no-op. */
void strata_repl_destroy(struct strata_repl *rp);

/* What the S3 handlers call around a write (STRATA_REPL_HDR, the
 * x-amz-replication-status to store, the queueing of versions, delete
 * markers and metadata changes) and Get/Put/DeleteBucketReplication
 * (repl_handlers.c): the daemon sets it as its context's repl_s3, the
 * S3 API's only way up to replication (s3/repl_hooks.h). */
extern const struct strata_s3_repl strata_repl_s3_hooks;

/*
 * `strata admin replicate BUCKET` (admin API): queues every version and
 * delete marker of bucket that a rule selects (a marker only by a rule
 * with DeleteMarkerReplication Enabled) and that is not replicated yet
 * (no status: written before the rule, or a marker from before markers
 * had one; or FAILED), marking it PENDING as a new write would be; a
 * key's entries oldest first, so the target's history of the key becomes
 * the source's.  *seen counts the versions and markers listed, *queued
 * those queued.  0, or a STRATA_E* code (STRATA_ENOTFOUND: no such
 * bucket, no replication configuration or no targets).  Runs on the
 * caller's thread for as long as the listing takes.
 */
int strata_repl_existing(struct strata_repl *rp, struct strata_meta *m, const char *bucket,
                         uint64_t *seen, uint64_t *queued);

/* {"targets": [{"name", "endpoint", "pending", "replicated", "failed",
 * "bytes", "lag_seconds"}]} of the running daemon (an empty list without
 * targets); NULL when out of memory.  Caller decrefs. */
struct json_t;
struct json_t *strata_repl_status_json(void);

/* Per-target gauges and counters, Prometheus text appended to b. */
void strata_repl_metrics_render(struct strata_sbuf *b);

#endif /* STRATA_SERVER_REPL_REPL_H */
