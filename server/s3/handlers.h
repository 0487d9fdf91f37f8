/*
 * handlers.h - every S3 operation's handler, as the route table
 * (router.c) binds them to requests.  Included by router.c and by the
 * files that define handlers; nothing else calls a handler directly.
 *
 * A handler runs once its request has been authenticated, routed and
 * authorised (the route's action, authz.c): run() answers, or leaves
 * r->err to be answered.  Streaming routes add begin() (after
 * authorisation, before the body) and body() (decoded body bytes;
 * non-zero stops the body with r->err set).  Connection or worker thread
 * of the request, as http/request.h's struct strata_route says.
 */
#ifndef STRATA_SERVER_S3_HANDLERS_H
#define STRATA_SERVER_S3_HANDLERS_H

#include <stddef.h>

struct strata_req;

/* Service and bucket (s3_bucket.c, s3_list.c) */
void strata_h_list_buckets(struct strata_req *r);
void strata_h_bucket_create(struct strata_req *r);
void strata_h_bucket_head(struct strata_req *r);
void strata_h_bucket_delete(struct strata_req *r);
void strata_h_bucket_location(struct strata_req *r);
void strata_h_bucket_versioning_get(struct strata_req *r);
void strata_h_bucket_versioning_put(struct strata_req *r);
void strata_h_list_objects(struct strata_req *r);
void strata_h_list_versions(struct strata_req *r);

/* Objects (s3_object_*.c) */
int strata_h_put_begin(struct strata_req *r);
int strata_h_put_body(struct strata_req *r, const void *buf, size_t len);
void strata_h_put_run(struct strata_req *r);
void strata_h_get(struct strata_req *r); /* GET and HEAD */
void strata_h_copy(struct strata_req *r);
void strata_h_part_copy(struct strata_req *r);
void strata_h_attributes(struct strata_req *r);
void strata_h_delete(struct strata_req *r);
void strata_h_delete_multi(struct strata_req *r);
void strata_h_restore(struct strata_req *r); /* s3_restore.c */

/* Browser form upload (s3_post.c): begin refuses a body that is not
 * multipart/form-data; body parses the form with libmicrohttpd's post
 * processor and, once the file field starts, checks signature, policy and
 * permission and streams the file into the object layer; run commits and
 * answers as success_action_redirect / success_action_status ask. */
int strata_h_post_begin(struct strata_req *r);
int strata_h_post_body(struct strata_req *r, const void *buf, size_t len);
void strata_h_post_run(struct strata_req *r);

/* Multipart (s3_multipart.c).  Parts reuse strata_h_put_body/_run. */
void strata_h_mpu_create(struct strata_req *r);
int strata_h_mpu_part_begin(struct strata_req *r);
void strata_h_mpu_complete(struct strata_req *r);
void strata_h_mpu_abort(struct strata_req *r);
void strata_h_mpu_list_parts(struct strata_req *r);
void strata_h_mpu_list(struct strata_req *r);

/* ACLs (s3_acl.c), ownership controls (s3_ownership.c), public access
 * block (s3_public_access.c), bucket policy (s3_policy.c) */
void strata_h_acl_get(struct strata_req *r);
void strata_h_acl_put(struct strata_req *r);
void strata_h_ownership_get(struct strata_req *r);
void strata_h_ownership_put(struct strata_req *r);
void strata_h_ownership_delete(struct strata_req *r);
void strata_h_pab_get(struct strata_req *r);
void strata_h_pab_put(struct strata_req *r);
void strata_h_pab_delete(struct strata_req *r);
void strata_h_policy_get(struct strata_req *r);
void strata_h_policy_put(struct strata_req *r);
void strata_h_policy_delete(struct strata_req *r);
void strata_h_policy_status(struct strata_req *r);

/* Tagging (s3_tagging.c): objects and buckets */
void strata_h_tagging_get(struct strata_req *r);
void strata_h_tagging_put(struct strata_req *r);
void strata_h_tagging_delete(struct strata_req *r);

/* Object Lock (s3_object_lock.c) */
void strata_h_lock_config_get(struct strata_req *r);
void strata_h_lock_config_put(struct strata_req *r);
void strata_h_retention_get(struct strata_req *r);
void strata_h_retention_put(struct strata_req *r);
void strata_h_legal_hold_get(struct strata_req *r);
void strata_h_legal_hold_put(struct strata_req *r);

/* Bucket configurations: lifecycle (s3_lifecycle.c), default encryption
 * (s3_bucket_encryption.c), CORS (s3_cors.c), notifications
 * (notify/notify_config.c), replication (repl_hooks.c: forwarded to repl/) */
void strata_h_lifecycle_get(struct strata_req *r);
void strata_h_lifecycle_put(struct strata_req *r);
void strata_h_lifecycle_delete(struct strata_req *r);
void strata_h_encryption_get(struct strata_req *r);
void strata_h_encryption_put(struct strata_req *r);
void strata_h_encryption_delete(struct strata_req *r);
void strata_h_cors_get(struct strata_req *r);
void strata_h_cors_put(struct strata_req *r);
void strata_h_cors_delete(struct strata_req *r);
/* A CORS preflight (OPTIONS): unauthenticated, answered from the rules. */
void strata_h_cors_preflight(struct strata_req *r);
void strata_h_notification_get(struct strata_req *r);
void strata_h_notification_put(struct strata_req *r);
void strata_h_replication_get(struct strata_req *r);
void strata_h_replication_put(struct strata_req *r);
void strata_h_replication_delete(struct strata_req *r);

#endif /* STRATA_SERVER_S3_HANDLERS_H */
