/*
 * admin.h - the admin REST API under /strata/admin/v1/ (JSON, jansson).
 *
 * The transport (http.c) marks a request whose path starts with
 * STRATA_ADMIN_PREFIX as an admin request before authentication; it is
 * then SigV4-verified like any S3 request, and every error it gets,
 * authentication errors included, is answered as a JSON document
 *   {"Code": "...", "Message": "...", "RequestId": "..."}
 * with the HTTP status of the S3 code (AccessDenied 403, ...).  Only
 * admins may call it: the root user (STRATA_ROOT_USER) and the users named
 * by --admin-users.
 *
 * Endpoints (server/admin/README.md has the reply shapes):
 *   GET  info            version, uptime, sets and drives, space, errors
 *   GET  usage[/BUCKET]  per-bucket objects, bytes, versions, markers, uploads
 *   POST heal/start      start strata_meta_heal_all on a background thread
 *   GET  heal/status     running/idle and the last run's result
 *   GET  config          the effective configuration, secrets masked
 *   GET  metrics         the Prometheus text of /metrics
 *   GET  audit/verify    every drive's audit log chain, and the drives compared
 *   GET  audit/tail[/N]  the last N audit entries (default 20, at most 1000)
 *   POST ilm/run         start a lifecycle scanner pass now
 *   GET  ilm/status      the scanner's last pass and totals
 *   GET  users           every user (no secrets): key, name, status, role
 *   GET  users/AK        one user
 *   PUT  users/AK        add a user, body {"secret": "...", "name": "..."}
 *   DELETE users/AK      remove a user
 *   POST users/AK/enable, users/AK/disable
 *   (users live in the --users file, rewritten atomically; admin_users.c)
 *
 * Threads: handlers run on the connection's thread; the heal runs on its
 * own thread, one at a time, started by heal/start and joined by
 * strata_admin_fini.
 */
#ifndef STRATA_SERVER_ADMIN_ADMIN_H
#define STRATA_SERVER_ADMIN_ADMIN_H

#include <stdbool.h>

#include "srv.h"

#define STRATA_ADMIN_PREFIX "/strata/admin/"

/* Whether raw_path (still %-encoded) names the admin API. */
bool strata_admin_path(const char *raw_path);
/* After authentication: S3E_AccessDenied for a non-admin, else sets
 * r->route to the admin dispatcher and returns S3E_NONE. */
enum s3_err strata_admin_route(struct strata_req *r);
/* Answers e (the S3 error table's status and code) as a JSON error. */
void strata_admin_error_s3(struct strata_req *r, enum s3_err e, int err);
/* Drive, set and heal metrics (Prometheus text) appended to b; what
 * /metrics serves after the transport's own (through the pipeline, pipeline.c). */
void strata_admin_metrics_render(struct strata_sbuf *b, struct strata_srv *s);
/* Daemon start / stop (strata_srv_start / strata_srv_stop): records the
 * start time; fini waits for a running heal to finish. */
void strata_admin_init(struct strata_srv *s);
void strata_admin_fini(struct strata_srv *s);
/* Reload the --users file into a new credential table and swap it in
 * (SIGHUP); serialised with the users endpoints' edits.  On error the old
 * table stays and errmsg says why.  Replaced tables are freed by
 * strata_admin_users_fini (at exit, after the HTTP threads stopped). */
int strata_admin_users_reload(struct strata_srv *s, char *errmsg, size_t errmsg_len);
void strata_admin_users_fini(void);

#endif /* STRATA_SERVER_ADMIN_ADMIN_H */
