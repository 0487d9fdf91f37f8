/*
 * restore_worker.c - the background thread of RestoreObject copies and
 * of the expiry of restored copies (restore_worker.h).
 */
#include "restore_worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "notify.h"
#include "srv.h"
#include "srv_tiers.h"
#include "strata/meta.h"

#define RESTORE_QUEUE_MAX 4096

struct rjob {
    struct rjob *next;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char key[STRATA_KEY_MAX + 1];
    char vid[STRATA_VERSION_ID_MAX + 1];
};

struct strata_restorer {
    struct strata_srv *srv;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rjob *head, *tail;
    unsigned n;
    bool stop;
};

static void enqueue_locked(struct strata_restorer *w, struct rjob *j)
{
    j->next = NULL;
    if (w->tail)
        w->tail->next = j;
    else
        w->head = j;
    w->tail = j;
    w->n++;
    pthread_cond_signal(&w->cv);
}

static int push(struct strata_restorer *w, const char *bucket, const char *key, const char *vid)
{
    struct rjob *j = calloc(1, sizeof(*j));
    if (!j)
        return -1;
    snprintf(j->bucket, sizeof(j->bucket), "%s", bucket);
    snprintf(j->key, sizeof(j->key), "%s", key);
    snprintf(j->vid, sizeof(j->vid), "%s", vid);
    pthread_mutex_lock(&w->mu);
    bool full = w->n >= RESTORE_QUEUE_MAX;
    if (!full)
        enqueue_locked(w, j);
    pthread_mutex_unlock(&w->mu);
    if (full)
        free(j);
    return full ? -1 : 0;
}

/* An event of a version (AWS's principal for the service's own); st:
 * of a copy made (ObjectRestore:Completed, with its expiry and class). */
static void event(struct strata_restorer *w, const char *name, const char *bucket,
                  const char *key, const char *vid, const struct strata_restore_state *st)
{
    struct strata_obj_info info = {0};
    uint64_t size = 0;
    const char *etag = NULL;
    if (strata_obj_head(w->srv->meta, bucket, key, vid, &info) == 0) {
        size = info.size;
        etag = info.etag;
    }
    /* The restored copy's record is not the version's: no stamp of its own. */
    int64_t seq_ns = strata_notify_stamp_clock(info.seq_ns);
    if (st)
        strata_notify_emit_restored(w->srv, bucket, key, size, etag, vid, seq_ns, st->expiry_ms,
                                    info.storage_class[0] ? info.storage_class : "STANDARD");
    else
        strata_notify_emit_srv(w->srv, name, bucket, key, size, etag, vid, seq_ns);
    strata_obj_info_fini(&info);
}

static void sweep_cb(void *ud, int ev, const char *bucket, const char *key, const char *vid)
{
    struct strata_restorer *w = ud;
    if (ev == STRATA_RESTORE_EV_RESUME) {
        if (push(w, bucket, key, vid) == 0)
            strata_srv_log(STRATA_LOG_NOTICE, "restore of %s/%s (%s): resumed", bucket, key, vid);
    } else if (ev == STRATA_RESTORE_EV_EXPIRED) {
        strata_srv_log(STRATA_LOG_INFO, "restored copy of %s/%s (%s) expired", bucket, key, vid);
        if (w->srv->notify)
            event(w, "ObjectRestore:Delete", bucket, key, vid, NULL);
    }
}

static void run_one(struct strata_restorer *w, const struct rjob *j)
{
    struct strata_restore_state st;
    int rc = strata_obj_restore_run(w->srv->meta, j->bucket, j->key, j->vid,
                                    w->srv->cfg.lc_day_ms, &st);
    if (rc) {
        strata_srv_log(STRATA_LOG_WARN, "restore of %s/%s (%s) failed: %s (may be asked again)",
                       j->bucket, j->key, j->vid, strata_strerror(rc));
        return;
    }
    if (w->srv->notify && st.present && !st.ongoing)
        event(w, "ObjectRestore:Completed", j->bucket, j->key, j->vid, &st);
}

/* Expiry and resumption, once per cluster: where the "ilm" lease is held
 * (on local drives always).  On local drives every copy being made at
 * the start is a crashed one; in a cluster, a copy is handed back once
 * its run (on any gateway) gave no sign of life for the stale time. */
static void sweep(struct strata_restorer *w, bool start)
{
    struct strata_srv *s = w->srv;
    if (strata_meta_lease(s->meta, "ilm", STRATA_LEASE_TAKE) != 0)
        return;
    int64_t resume = s->cfg.rados_conf ? strata_restore_stale_ms(s->cfg.lc_day_ms)
                     : start         ? 0
                                     : -1;
    strata_meta_restore_sweep(s->meta, resume, sweep_cb, w, NULL);
}

static void *worker(void *arg)
{
    struct strata_restorer *w = arg;
    /* Copies a crash interrupted: made again. */
    sweep(w, true);
    long every_s = w->srv->cfg.lc_day_ms < 3600 * 1000 ? 1 : 60;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        if (!w->head) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += every_s;
            if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0 && !w->head) {
                pthread_mutex_unlock(&w->mu);
                sweep(w, false);
                pthread_mutex_lock(&w->mu);
            }
            continue;
        }
        struct rjob *j = w->head;
        w->head = j->next;
        if (!w->head)
            w->tail = NULL;
        w->n--;
        pthread_mutex_unlock(&w->mu);
        run_one(w, j);
        free(j);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int strata_restorer_start(struct strata_srv *s)
{
    bool any = false;
    for (unsigned i = 0; s->tiers && i < s->tiers->n; i++)
        any |= s->tiers->t[i].restore;
    if (!any)
        return 0;
    struct strata_restorer *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->srv = s;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, worker, w) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot start the restore thread");
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return -1;
    }
    s->restorer = w;
    return 0;
}

int strata_restorer_queue(struct strata_srv *s, const char *bucket, const char *key,
                          const char *version_id)
{
    return s->restorer ? push(s->restorer, bucket, key, version_id) : -1;
}

void strata_restorer_stop(struct strata_srv *s)
{
    struct strata_restorer *w = s->restorer;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    while (w->head) {
        struct rjob *j = w->head;
        w->head = j->next;
        free(j);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    s->restorer = NULL;
}
