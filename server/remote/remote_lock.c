/*
 * remote_lock.c - the queue of Object Lock changes for remote objects
 * (remote_lock.h).  A message names the version, {"b", "k", "v"}; the
 * state sent is the version's when it is sent, so a later change queued
 * behind an earlier one is never undone by it.
 */
#include "remote_lock.h"

#include "pqueue.h"
#include "sbuf.h"
#include "srv_log.h"
#include "strata/err.h"
#include "strata/meta.h"

#include <jansson.h>
#include <stdatomic.h>
#include <string.h>

#define LOCK_QUEUE_MAX 1000000
#define LOCK_THREADS 2

static struct strata_pqueue *_Atomic queue;
static struct strata_meta *meta;
static _Atomic uint64_t applied, failed;

static enum strata_pqueue_sent send_cb(void *ud, const char *msg, size_t len)
{
    (void)ud;
    json_t *j = json_loadb(msg, len, 0, NULL);
    const char *b = NULL, *k = NULL, *v = NULL;
    if (!j || json_unpack(j, "{s:s, s:s, s:s}", "b", &b, "k", &k, "v", &v) != 0) {
        json_decref(j);
        atomic_fetch_add(&failed, 1);
        return STRATA_PQUEUE_GIVE_UP; /* not ours: cannot happen short of a bad disk */
    }
    int rc = strata_obj_tier_lock_sync(meta, b, k, v, NULL);
    enum strata_pqueue_sent out = STRATA_PQUEUE_DONE;
    if (rc == 0) {
        atomic_fetch_add(&applied, 1);
    } else if (rc == STRATA_ENOTFOUND || rc == STRATA_EMETHOD) {
        /* deleted since: its remote objects went with it */
    } else if (rc == STRATA_EBUSY || rc == STRATA_EQUORUM) {
        out = STRATA_PQUEUE_RETRY; /* the remote (or a quorum) is back later */
    } else {
        strata_srv_log(STRATA_LOG_ERR, "remote tier: lock of %s/%s %s not applied: %s", b, k, v,
                       strata_strerror(rc));
        atomic_fetch_add(&failed, 1);
        out = STRATA_PQUEUE_GIVE_UP;
    }
    json_decref(j);
    return out;
}

int strata_remote_lock_start(const char *const *dirs, size_t ndirs, struct strata_meta *m,
                             char *err, size_t err_len)
{
    meta = m;
    struct strata_pqueue *q = NULL;
    /* On a store several gateways share the queue is theirs (tier.remote-lock
     * in the cluster): a change pushed by one is carried by the lease holder,
     * also when the pushing gateway is gone for good. */
    struct strata_pqueue_opts o = {.name = "remote-lock", .max = LOCK_QUEUE_MAX,
                                   .threads = LOCK_THREADS, .send = send_cb,
                                   .cluster = m, .space = "tier"};
    if (strata_pqueue_create(dirs, ndirs, &o, &q, err, err_len) != 0)
        return -1;
    atomic_store(&queue, q);
    return 0;
}

void strata_remote_lock_stop(void)
{
    strata_pqueue_destroy(atomic_exchange(&queue, NULL));
}

void strata_remote_lock_changed(const char *bucket, const char *key, const char *vid)
{
    struct strata_pqueue *q = atomic_load(&queue);
    if (!q)
        return;
    json_t *j = json_pack("{s:s, s:s, s:s}", "b", bucket, "k", key, "v", vid);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (!s || strata_pqueue_push(q, s, strlen(s)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "remote tier: lock change of %s/%s %s not queued", bucket,
                       key, vid);
        atomic_fetch_add(&failed, 1);
    }
    free(s);
    json_decref(j);
}

json_t *strata_remote_lock_json(void)
{
    struct strata_pqueue *q = atomic_load(&queue);
    if (!q)
        return NULL;
    struct strata_pqueue_stats st;
    strata_pqueue_stats_get(q, &st);
    return json_pack("{s:I, s:I, s:I}", "pending", (json_int_t)st.pending, "applied",
                     (json_int_t)atomic_load(&applied), "failed",
                     (json_int_t)atomic_load(&failed));
}

void strata_remote_lock_metrics_render(struct strata_sbuf *b)
{
    struct strata_pqueue *q = atomic_load(&queue);
    if (!q)
        return;
    struct strata_pqueue_stats st;
    strata_pqueue_stats_get(q, &st);
    strata_sbuf_printf(
        b,
        "# HELP strata_remote_tier_lock_updates_pending Retention and legal hold changes of "
        "versions on a remote tier not yet set on the remote objects.\n"
        "# TYPE strata_remote_tier_lock_updates_pending gauge\n"
        "strata_remote_tier_lock_updates_pending %llu\n"
        "# HELP strata_remote_tier_lock_updates_applied_total Such changes set on the remote.\n"
        "# TYPE strata_remote_tier_lock_updates_applied_total counter\n"
        "strata_remote_tier_lock_updates_applied_total %llu\n"
        "# HELP strata_remote_tier_lock_updates_failed_total Such changes the remote refused "
        "for good, or that could not be queued.\n"
        "# TYPE strata_remote_tier_lock_updates_failed_total counter\n"
        "strata_remote_tier_lock_updates_failed_total %llu\n",
        (unsigned long long)st.pending, (unsigned long long)atomic_load(&applied),
        (unsigned long long)atomic_load(&failed));
}
