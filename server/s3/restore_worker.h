/*
 * restore_worker.h - the copies RestoreObject asks for (archive tiers,
 * meta.h "restored copies"), made in the background: one thread takes
 * requested versions in order and runs strata_obj_restore_run for each,
 * and sweeps expired copies away (every second with a test day of
 * --lc-day-seconds under an hour, else every minute).  At start it
 * resumes the copies a crash interrupted.  Events: ObjectRestore:Completed
 * after a copy, ObjectRestore:Delete after an expiry.
 */
#ifndef STRATA_SERVER_S3_RESTORE_WORKER_H
#define STRATA_SERVER_S3_RESTORE_WORKER_H

struct strata_srv;
struct strata_restorer;

/* 0, or -1 (logged).  Nothing starts when no tier is an archive tier. */
int strata_restorer_start(struct strata_srv *s);
/* Queue a copy recorded by strata_obj_restore_request.  0, or -1 when the
 * queue is full (the copy stays recorded, ongoing, and is resumed by the
 * next start). */
int strata_restorer_queue(struct strata_srv *s, const char *bucket, const char *key,
                          const char *version_id);
/* Stops the thread (the copy in progress finishes first). */
void strata_restorer_stop(struct strata_srv *s);

#endif /* STRATA_SERVER_S3_RESTORE_WORKER_H */
