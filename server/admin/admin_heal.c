/*
 * admin_heal.c - POST heal/start runs strata_meta_heal_all on a background
 * thread, one run at a time (a second start while one runs is 409
 * HealInProgress); GET heal/status says running or idle and the last
 * run's result.  The state is one mutex-protected struct per process:
 * there is one daemon per process.  strata_admin__heal_join (daemon stop)
 * waits for a run to end before the metadata is closed.  A store whose
 * cluster heals itself (RADOS) has no heal: start answers 501, status
 * "not applicable" with the reason.
 */
#include "admin_internal.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "strata/err.h"

static struct {
    pthread_mutex_t mu;
    pthread_t thread;
    bool joinable; /* a thread was started and not joined yet */
    bool running;
    unsigned runs;  /* runs finished since start */
    struct strata_meta *meta;
    time_t started, finished;
    int rc; /* of the last finished run */
    struct strata_heal_stats stats;
} heal = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* A backend whose cluster heals itself (RADOS) has no heal to run. */
static const char *heal_result(int rc)
{
    return rc == STRATA_ENOTIMPL ? "not applicable on this backend" : rc ? "error" : "ok";
}

static void *heal_main(void *arg)
{
    struct strata_heal_stats st;
    memset(&st, 0, sizeof(st));
    int rc = strata_meta_heal_all(heal.meta, &st);
    pthread_mutex_lock(&heal.mu);
    heal.stats = st;
    heal.rc = rc;
    heal.finished = time(NULL);
    heal.running = false;
    heal.runs++;
    pthread_mutex_unlock(&heal.mu);
    strata_srv_log(rc && rc != STRATA_ENOTIMPL ? STRATA_LOG_WARN : STRATA_LOG_NOTICE,
                   "heal finished: %s, %llu objects scanned, %llu records and %llu shards healed, "
                   "%llu versions below quorum removed, %llu rolled forward",
                   heal_result(rc), (unsigned long long)st.objects_scanned,
                   (unsigned long long)st.records_healed, (unsigned long long)st.shards_healed,
                   (unsigned long long)st.minority_removed,
                   (unsigned long long)st.minority_healed);
    return NULL;
}

/* Why there is no heal on a store whose cluster keeps the redundancy. */
#define NO_HEAL "the store is a Ceph cluster, which scrubs and recovers its own objects: " \
                "see its health in strata admin info"

static json_t *status_json(struct strata_meta *m)
{
    /* Called with heal.mu held. */
    if (!strata_meta_has_heal(m))
        return json_pack("{s:s, s:i, s:s}", "state", "not applicable", "runs_finished", 0,
                         "reason", NO_HEAL);
    json_t *doc = json_pack("{s:s, s:i}", "state", heal.running ? "running" : "idle",
                            "runs_finished", (int)heal.runs);
    if (heal.started)
        json_object_set_new(doc, "started", json_integer((json_int_t)heal.started));
    if (heal.runs) {
        json_object_set_new(
            doc, "last",
            json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "finished",
                      (json_int_t)heal.finished, "result", heal_result(heal.rc), "error",
                      heal.rc ? strata_strerror(heal.rc) : "", "objects_scanned",
                      (json_int_t)heal.stats.objects_scanned, "records_healed",
                      (json_int_t)heal.stats.records_healed, "shards_healed",
                      (json_int_t)heal.stats.shards_healed, "minority_removed",
                      (json_int_t)heal.stats.minority_removed, "minority_healed",
                      (json_int_t)heal.stats.minority_healed));
    }
    return doc;
}

void strata_admin__heal_start(struct strata_req *r, const char *arg)
{
    if (!strata_meta_has_heal(r->srv->meta)) {
        strata_admin__error(r, 501, "NotImplemented", "no heal to run: " NO_HEAL);
        return;
    }
    pthread_mutex_lock(&heal.mu);
    if (heal.running) {
        pthread_mutex_unlock(&heal.mu);
        strata_admin__error(r, 409, "HealInProgress",
                            "a heal is already running; see heal/status");
        return;
    }
    if (heal.joinable) {
        pthread_join(heal.thread, NULL); /* finished: reap it */
        heal.joinable = false;
    }
    heal.meta = r->srv->meta;
    heal.running = true;
    heal.started = time(NULL);
    if (pthread_create(&heal.thread, NULL, heal_main, NULL) != 0) {
        heal.running = false;
        pthread_mutex_unlock(&heal.mu);
        strata_admin__error(r, 503, "ServiceUnavailable", "cannot start the heal thread");
        return;
    }
    heal.joinable = true;
    json_t *doc = status_json(heal.meta);
    pthread_mutex_unlock(&heal.mu);
    strata_srv_log(STRATA_LOG_NOTICE, "heal started by %s", strata_req_user(r));
    strata_admin__send_json(r, 202, doc);
}

void strata_admin__heal_status(struct strata_req *r, const char *arg)
{
    pthread_mutex_lock(&heal.mu);
    json_t *doc = status_json(r->srv->meta);
    pthread_mutex_unlock(&heal.mu);
    strata_admin__send_json(r, 200, doc);
}

void strata_admin__heal_join(void)
{
    pthread_mutex_lock(&heal.mu);
    bool join = heal.joinable;
    heal.joinable = false;
    pthread_mutex_unlock(&heal.mu);
    if (join)
        pthread_join(heal.thread, NULL);
}

void strata_admin__heal_metrics(struct strata_sbuf *b)
{
    pthread_mutex_lock(&heal.mu);
    bool running = heal.running;
    unsigned runs = heal.runs;
    int rc = heal.rc;
    struct strata_heal_stats st = heal.stats;
    pthread_mutex_unlock(&heal.mu);
    strata_sbuf_printf(b,
        "# HELP strata_heal_running 1 while a heal runs.\n# TYPE strata_heal_running gauge\n"
        "strata_heal_running %d\n"
        "# HELP strata_heal_runs_total Heal runs finished since start.\n"
        "# TYPE strata_heal_runs_total counter\nstrata_heal_runs_total %u\n",
        running ? 1 : 0, runs);
    if (!runs)
        return; /* no last run: no samples rather than zeros */
    strata_sbuf_printf(b,
        "# HELP strata_heal_last_success 1 when the last finished heal succeeded.\n"
        "# TYPE strata_heal_last_success gauge\nstrata_heal_last_success %d\n"
        "# HELP strata_heal_last_objects_scanned Objects the last finished heal scanned.\n"
        "# TYPE strata_heal_last_objects_scanned gauge\nstrata_heal_last_objects_scanned %llu\n"
        "# HELP strata_heal_last_records_healed Records the last finished heal rewrote.\n"
        "# TYPE strata_heal_last_records_healed gauge\nstrata_heal_last_records_healed %llu\n"
        "# HELP strata_heal_last_shards_healed Shards the last finished heal rewrote.\n"
        "# TYPE strata_heal_last_shards_healed gauge\nstrata_heal_last_shards_healed %llu\n",
        rc == 0, (unsigned long long)st.objects_scanned, (unsigned long long)st.records_healed,
        (unsigned long long)st.shards_healed);
}
