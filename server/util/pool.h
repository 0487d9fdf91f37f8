/*
 * pool.h - the bounded pool of storage workers.  The event threads hand it
 * every call that may wait on a drive (writes and their fsyncs, erasure-
 * coded reads, listings); a slow drive then holds workers, never the
 * threads that serve the other connections.
 *
 * Sharded: each shard has its own queue, lock and workers, and a job goes
 * to the shard a hash of its hint picks, so no one lock is taken by every
 * request; when that shard has no worker free the job goes to the next
 * shard that has one (no job waits while a worker idles).  Jobs of one
 * shard start in the order queued.  A job is owned by the submitter until
 * fn runs; fn may free it.
 */
#ifndef STRATA_SERVER_POOL_H
#define STRATA_SERVER_POOL_H

#include <stdint.h>

struct strata_job {
    struct strata_job *next;
    void (*fn)(struct strata_job *j);
};

struct strata_pool;

/* nworkers threads in nshards shards (each at least one worker).  0 or
 * STRATA_ENOMEM / STRATA_EIO. */
int strata_pool_start(unsigned nshards, unsigned nworkers, struct strata_pool **out);
/* Queue j on the shard hint picks (above).  -1 once stopping: the caller
 * runs it. */
int strata_pool_submit(struct strata_pool *p, uint64_t hint, struct strata_job *j);
/* Run what is queued and join the workers; later submits answer -1.
 * NULL is a no-op. */
void strata_pool_stop(struct strata_pool *p);
/* After stop, once nobody can submit any more.  NULL is a no-op. */
void strata_pool_free(struct strata_pool *p);

#endif
