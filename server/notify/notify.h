/*
 * notify.h - bucket event notifications: server-configured targets
 * (--notify-target ID:KIND:ADDRESS), the bucket's NotificationConfiguration
 * (Put/GetBucketNotificationConfiguration, AWS's XML) and the events S3
 * handlers emit after a successful change.
 *
 * Each target has a persistent queue (server/pqueue.h: an append-only file
 * notify/ID.q with the delivered offset in ID.ack, kept on each of the
 * first two drives so that one drive lost loses no queued event) and one
 * delivery thread, so its events go in order; a kind with send_batch gets
 * up to STRATA_NOTIFY_BATCH_MAX of them at once.  An event is written to
 * the queue before the S3 answer is sent (so kill -9 loses nothing; the
 * files are fdatasync'ed in batches by the delivery thread, so a power
 * loss can lose the last ~100 ms), and removed only after the target
 * acknowledged it: delivery is at least once, in order.  A queue over its
 * bound drops new events (counted).
 *
 * Threads: strata_notify_emit from any connection or worker thread; the
 * rest at start-up and shutdown (main thread).
 */
#ifndef STRATA_SERVER_NOTIFY_NOTIFY_H
#define STRATA_SERVER_NOTIFY_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/ilm.h"

struct strata_req;
struct strata_sbuf;

#define STRATA_NOTIFY_TARGETS_MAX 16
#define STRATA_NOTIFY_QUEUE_MAX_DEFAULT 100000 /* events pending per target */

struct strata_notify; /* the targets, their queues and threads */

/* A target spec ID:KIND:ADDRESS checked (KIND webhook, redis, nats, amqp, mqtt or
 * postgres; ID of [A-Za-z0-9_-], 1..64; ADDRESS as the kind wants it).  0, or -1
 * with err set. */
int strata_notify_spec_check(const char *spec, char *err, size_t err_len);

/*
 * Opens every target of specs[] (token_specs: "ID:FILE", a bearer token or
 * password for that target read from FILE's first line), its queue with a
 * copy in each of dirs[0..ndirs) (strata_pqueue_create: created, at most
 * STRATA_PQUEUE_COPIES used, one that cannot be used left out as long as
 * one can; in cluster instead when that store keeps queues,
 * strata_meta_queues_shared), and starts its delivery thread; events
 * left from a previous run are delivered first.  queue_max 0: the default.
 * 0 with *out (NULL when nspecs is 0), or -1 with err set.
 */
int strata_notify_create(const char *const *specs, size_t nspecs, const char *const *token_specs,
                         size_t ntokens, const char *const *dirs, size_t ndirs, size_t queue_max,
                         struct strata_meta *cluster, struct strata_notify **out, char *err,
                         size_t err_len);
/* Stops the threads (events still queued stay in their files) and frees.
 * NULL is a no-op. */
void strata_notify_destroy(struct strata_notify *n);

/* The target named by a queue ARN arn:strata:sqs:REGION:ID:KIND (REGION may
 * be empty), or -1. */
int strata_notify_target_find(const struct strata_notify *n, const char *arn);

/*
 * After a change of r's bucket has committed and before its answer is
 * sent: queues event ("ObjectCreated:Put", ...; AWS's eventName without
 * "s3:") for key to every target a matching QueueConfiguration of the
 * bucket names.  version_id NULL or "" for none.  seq_ns is the change's
 * stamp as the commit decided it (strata_obj_info.seq_ns,
 * strata_del_result.seq_ns; 0: none, this gateway's clock): the event's
 * sequencer is its 16 hex digits, so one key's events sort as the index
 * ordered its changes, whichever gateway made them (README.md,
 * "Sequencers").  Never fails the request: what cannot be queued is
 * counted as dropped.
 */
void strata_notify_emit(struct strata_req *r, const char *event, const char *key, uint64_t size,
                        const char *etag, const char *version_id, int64_t seq_ns);

/* The stamp of a change whose commit keeps none (a restore: the restored
 * copy's record is not the version's): this gateway's wall clock in ns,
 * or after_ns + 1 (the version's own stamp) when the clock is not past
 * it.  This function can't fail. */
int64_t strata_notify_stamp_clock(int64_t after_ns);

/* Whether r's bucket has a notification configuration and the daemon
 * targets (key_order.h: its writes then queue their events in commit
 * order). */
bool strata_notify_configured(struct strata_req *r);

/* A strata_ilm_event_cb (ud: the struct strata_srv): queues
 * LifecycleExpiration:Delete / :DeleteMarkerCreated and LifecycleTransition
 * events like strata_notify_emit. */
void strata_notify_ilm_event_cb(void *ud, enum strata_ilm_event ev, const char *bucket,
                                const char *key, const char *version_id, int64_t seq_ns);

struct strata_srv;
/* An event of the service itself (ObjectRestore:Completed, :Delete) on a
 * version of bucket, like strata_notify_emit, with AWS's principal for
 * them.  Any thread. */
void strata_notify_emit_srv(struct strata_srv *srv, const char *event, const char *bucket,
                            const char *key, uint64_t size, const char *etag,
                            const char *version_id, int64_t seq_ns);
/* ObjectRestore:Completed, the same, with AWS's glacierEventData: the
 * copy's expiry (Unix ms) and the class it was restored from. */
void strata_notify_emit_restored(struct strata_srv *srv, const char *bucket, const char *key,
                                 uint64_t size, const char *etag, const char *version_id,
                                 int64_t seq_ns, int64_t expiry_ms, const char *storage_class);

/* The per-target counters, Prometheus text appended to b (metrics.c). */
void strata_notify_metrics_render(struct strata_sbuf *b);

/* ---- inside server/notify ----------------------------------------------- */

/* Queue one message for target t: 0, or -1 (dropped; counted). */
int strata_notify__enqueue(struct strata_notify *n, int t, const char *msg, size_t len);

#endif /* STRATA_SERVER_NOTIFY_NOTIFY_H */
