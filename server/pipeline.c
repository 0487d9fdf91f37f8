/*
 * pipeline.c - assembles what the transport calls above it (pipeline.h):
 * the transport (http/) links none of these layers, the daemon hands them
 * over in this table.
 */
#include "pipeline.h"

#include "admin.h"
#include "authz.h"
#include "notify.h"
#include "remote_lock.h"
#include "remote_tier.h"
#include "repl.h"
#include "s3_cors.h"
#include "srv.h"

/* notify, remote tiers and their locks, replication, then drives, sets
 * and heal (admin_metrics.c). */
static void metrics_render(struct strata_sbuf *b, struct strata_srv *s)
{
    strata_notify_metrics_render(b);
    strata_remote_tier_metrics_render(b);
    strata_remote_lock_metrics_render(b);
    strata_repl_metrics_render(b);
    strata_admin_metrics_render(b, s);
}

const struct strata_pipeline strata_daemon_pipeline = {
    .route_find = strata_route_find,
    .bucket_get = strata_bcache_get,
    .authz_request = strata_authz_request,
    .authz_missing_key = strata_authz_missing_key,
    .cors_resp_hdrs = strata_cors_resp_hdrs,
    .state_size = sizeof(struct strata_s3_state),
    .state_fini = strata_s3_state_fini,
    .form_hdr = strata_s3_form_hdr,
    .admin_path = strata_admin_path,
    .admin_route = strata_admin_route,
    .admin_error = strata_admin_error_s3,
    .admin_init = strata_admin_init,
    .admin_fini = strata_admin_fini,
    .metrics_render = metrics_render,
};
