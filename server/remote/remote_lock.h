/*
 * remote_lock.h - Object Lock changes of versions already on a remote
 * tier with lock, carried to their remote objects.
 *
 * A retention extended or a legal hold changed after a version moved to
 * such a tier is applied locally at once (the request never waits on, nor
 * fails because of, the remote) and queued in a persistent queue
 * (server/pqueue.h: remote-lock.q with a copy on each of the first two
 * drives; on a RADOS store the cluster's queue tier.remote-lock, which
 * every gateway pushes into and the lease holder delivers); its delivery
 * threads set the version's state then on every remote object of it
 * (strata_obj_tier_lock_sync), retried with backoff while the remote is
 * down, also after a restart, so the remote copy is never left less
 * locked than the version.  A change the remote refuses for good is
 * counted as failed and logged.
 *
 * One queue per daemon (a singleton: the S3 handlers reach it without the
 * server struct).  Threads: changed() from connection threads; start and
 * stop from the main thread.
 */
#ifndef STRATA_SERVER_REMOTE_REMOTE_LOCK_H
#define STRATA_SERVER_REMOTE_REMOTE_LOCK_H

#include <stddef.h>

struct strata_meta;
struct strata_sbuf;
struct json_t;

/* The queue in dirs[0..ndirs) (in m when m keeps queues), its threads
 * started (what a previous run left is sent first).  0, or -1 with err set. */
int strata_remote_lock_start(const char *const *dirs, size_t ndirs, struct strata_meta *m,
                             char *err, size_t err_len);
/* Stops the threads (queued changes stay queued).  No-op when not started. */
void strata_remote_lock_stop(void);
/* After the retention or legal hold of version vid of bucket/key changed,
 * its data being on a remote tier: queued (a full queue is counted as
 * failed and logged). */
void strata_remote_lock_changed(const char *bucket, const char *key, const char *vid);
/* {"pending", "applied", "failed"}, or NULL when not started. */
struct json_t *strata_remote_lock_json(void);
/* strata_remote_tier_lock_updates_{pending,applied_total,failed_total}. */
void strata_remote_lock_metrics_render(struct strata_sbuf *b);

#endif /* STRATA_SERVER_REMOTE_REMOTE_LOCK_H */
