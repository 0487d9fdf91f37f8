/*
 * admin_repl.c - the admin API of bucket replication:
 *   POST replicate/BUCKET   queue the bucket's existing versions a rule
 *                           selects and that are not replicated yet
 *   GET  replication/status each target's queue and counters
 * Connection threads (the scan runs on the request's thread).
 */
#include "admin_internal.h"

#include <stdio.h>

#include "repl.h"
#include "strata/err.h"

void strata_admin__replicate(struct strata_req *r, const char *arg)
{
    if (!arg || !*arg) {
        strata_admin__error(r, 400, "InvalidArgument", "want replicate/BUCKET");
        return;
    }
    if (!r->srv->repl) {
        strata_admin__error(r, 409, "NoReplicationTarget",
                            "the server has no --replication-target");
        return;
    }
    uint64_t seen = 0, queued = 0;
    int rc = strata_repl_existing(r->srv->repl, r->srv->meta, arg, &seen, &queued);
    if (rc == STRATA_ENOTFOUND) {
        strata_admin__error(r, 404, "NotFound",
                            "no such bucket, or it has no replication configuration");
        return;
    }
    if (rc) {
        strata_admin__error(r, 500, "InternalError", strata_strerror(rc));
        return;
    }
    strata_srv_log(STRATA_LOG_NOTICE, "replication of %s's existing objects requested by %s: "
                   "%llu queued of %llu", arg, strata_req_user(r), (unsigned long long)queued,
                   (unsigned long long)seen);
    json_t *doc = strata_repl_status_json();
    if (doc) {
        json_object_set_new(doc, "bucket", json_string(arg));
        json_object_set_new(doc, "seen", json_integer((json_int_t)seen));
        json_object_set_new(doc, "queued", json_integer((json_int_t)queued));
    }
    strata_admin__send_json(r, 202, doc);
}

void strata_admin__replication_status(struct strata_req *r, const char *arg)
{
    (void)arg;
    strata_admin__send_json(r, 200, strata_repl_status_json());
}
