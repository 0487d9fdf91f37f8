/*
 * admin_ilm.c - the lifecycle scanner over the admin API: POST ilm/run
 * starts a pass now (strata_ilm_kick, as SIGUSR1 does), GET ilm/status
 * gives the last finished pass, the totals since start, and the pass in
 * progress (position, buckets done, its counters, the due-index backlog
 * and meta's heal queue).  The engine is
 * the one the daemon registered for /metrics (strata_metrics_ilm); it
 * outlives HTTP, so a request never sees it destroyed.
 */
#include "admin_internal.h"

#include "strata/ilm.h"

static json_t *stats_json(const struct strata_ilm_stats *st)
{
    json_t *doc = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "passes", (json_int_t)st->passes, "buckets", (json_int_t)st->buckets,
                     "scanned", (json_int_t)st->scanned, "expired", (json_int_t)st->expired,
                     "noncurrent_expired", (json_int_t)st->noncurrent_expired,
                     "delete_markers_removed", (json_int_t)st->markers_removed,
                     "uploads_aborted", (json_int_t)st->uploads_aborted,
                     "skipped_locked", (json_int_t)st->skipped_locked,
                     "errors", (json_int_t)st->errors, "healed", (json_int_t)st->healed,
                     "tmp_reclaimed", (json_int_t)st->tmp_reclaimed,
                     "started_ms", (json_int_t)st->started_ms,
                     "finished_ms", (json_int_t)st->finished_ms);
    if (doc) {
        json_object_set_new(doc, "due_scanned", json_integer((json_int_t)st->due_scanned));
        json_object_set_new(doc, "due_dropped", json_integer((json_int_t)st->due_dropped));
        json_object_set_new(doc, "heal_queued", json_integer((json_int_t)st->heal_queued));
        json_object_set_new(doc, "orphans_reclaimed",
                            json_integer((json_int_t)st->orphans_reclaimed));
        json_object_set_new(doc, "transitioned", json_integer((json_int_t)st->transitioned));
        json_object_set_new(doc, "bytes_moved", json_integer((json_int_t)st->bytes_moved));
        json_object_set_new(doc, "transitions_resumed",
                            json_integer((json_int_t)st->intents_resolved));
    }
    return doc;
}

/* The pass in progress: where it is and its counters so far. */
static json_t *progress_json(struct strata_ilm *e)
{
    struct strata_ilm_progress p;
    strata_ilm_progress_get(e, &p);
    json_t *doc = json_pack("{s:b, s:b, s:s, s:s, s:I, s:I, s:I, s:I}", "running", p.running,
                            "resumed", p.resumed, "bucket", p.bucket, "key", p.key,
                            "buckets_done", (json_int_t)p.buckets_done, "buckets_total",
                            (json_int_t)p.buckets_total, "due_backlog",
                            (json_int_t)p.due_backlog, "heal_pending",
                            (json_int_t)p.heal_pending);
    if (doc) {
        json_object_set_new(doc, "move_backlog", json_integer((json_int_t)p.move_backlog));
        json_object_set_new(doc, "move_retries", json_integer((json_int_t)p.move_retries));
    }
    if (doc)
        json_object_set_new(doc, "counters", stats_json(&p.st));
    return doc;
}

static json_t *status_json(struct strata_ilm *e)
{
    if (!e)
        return json_pack("{s:b}", "enabled", false);
    struct strata_ilm_stats last, total;
    strata_ilm_stats_get(e, &last, NULL);
    strata_ilm_stats_now(e, &total); /* with the pass in progress */
    return json_pack("{s:b, s:o, s:o, s:o}", "enabled", true, "last", stats_json(&last),
                     "total", stats_json(&total), "progress", progress_json(e));
}

static bool scanner_on(struct strata_req *r, struct strata_ilm *e)
{
    if (!e)
        strata_admin__error(r, 409, "ScannerOff",
                            "the lifecycle scanner is off (--ilm-interval-seconds 0)");
    return e != NULL;
}

void strata_admin__ilm_run(struct strata_req *r, const char *arg)
{
    struct strata_ilm *e = strata_metrics_ilm();
    if (!scanner_on(r, e))
        return;
    strata_ilm_kick(e);
    strata_srv_log(STRATA_LOG_NOTICE, "lifecycle scanner pass requested by %s",
                   strata_req_user(r));
    strata_admin__send_json(r, 202, status_json(e));
}

void strata_admin__ilm_status(struct strata_req *r, const char *arg)
{
    strata_admin__send_json(r, 200, status_json(strata_metrics_ilm()));
}
