/*
 * repl_hooks.h - what the S3 API asks of bucket replication.  Replication
 * (server/repl/) is a layer above the S3 API: it reads versions, their
 * encryption and tags, and authorises peers through it.  The S3 API calls
 * it only through struct strata_s3_repl, which the daemon sets in its
 * context (srv->repl_s3: repl.h's strata_repl_s3_hooks), so the calls go
 * down only.  The functions below are the handlers' side of that table:
 * each forwards to it, and a daemon without it has no replication (no
 * status stored, nothing queued, a peer's header refused, the
 * ?replication operations 501).
 *
 * Threads: the request's thread.
 */
#ifndef STRATA_SERVER_S3_REPL_HOOKS_H
#define STRATA_SERVER_S3_REPL_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

struct strata_req;
struct strata_obj_info;

/* The request header a replication peer sends with a replica (PutObject)
 * or a replicated delete marker (DeleteObject): the source's version id.
 * Needs s3:ReplicateObject / s3:ReplicateDelete on the target bucket. */
#define STRATA_REPL_HDR "x-strata-replica-version-id"
#define STRATA_REPL_STATUS_HDR "x-amz-replication-status"
/* Stored beside it when a version goes to several targets: each one's own
 * state (server/repl/repl_status.c).  Never sent, never copied. */
#define STRATA_REPL_TARGETS_HDR "x-strata-replication-targets"

/* What changed of a version, and is sent as that operation alone. */
enum strata_repl_change {
    STRATA_REPL_TAGS,       /* PutObjectTagging / DeleteObjectTagging */
    STRATA_REPL_RETENTION,  /* PutObjectRetention */
    STRATA_REPL_LEGAL_HOLD, /* PutObjectLegalHold */
    STRATA_REPL_ACL         /* PutObjectAcl */
};

/* Replication as the S3 handlers use it; every member set.  What each
 * does is said at the forwarding function of the same name below. */
struct strata_s3_repl {
    const char *(*status_for_new)(struct strata_req *r, const char *key, const void *tags,
                                  size_t tags_len);
    bool (*configured)(struct strata_req *r);
    int (*peer)(struct strata_req *r, const char *action);
    int (*peer_change)(struct strata_req *r, const char *action);
    void (*emit_put)(struct strata_req *r, const struct strata_obj_info *info);
    void (*emit_change)(struct strata_req *r, const char *key, const char *vid,
                        enum strata_repl_change what);
    void (*emit_delete_marker)(struct strata_req *r, const char *key, const char *vid);
    const char *(*marker_status)(struct strata_req *r, const char *key);
    /* Get/Put/DeleteBucketReplication. */
    void (*config_get)(struct strata_req *r);
    void (*config_put)(struct strata_req *r);
    void (*config_delete)(struct strata_req *r);
};

/*
 * Before a new version of key is written (PutObject, CopyObject,
 * CreateMultipartUpload): the x-amz-replication-status value to store with
 * it: "REPLICA" for a replica from a peer, "PENDING" when a rule of r's
 * bucket selects key with tags (stored form, may be NULL), else NULL.
 */
const char *strata_repl_status_for_new(struct strata_req *r, const char *key, const void *tags,
                                       size_t tags_len);
/* Whether r is a replica from a peer (STRATA_REPL_HDR), authorised for
 * action ("s3:ReplicateObject" or "s3:ReplicateDelete"): 1 yes, 0 not a
 * replica, -1 refused (AccessDenied answered). */
int strata_repl_peer(struct strata_req *r, const char *action);
/* The same for a metadata change (PutObjectTagging, DeleteObjectTagging,
 * PutObjectRetention, PutObjectLegalHold, PutObjectAcl) a peer sends for one replicated
 * version: the header must name the request's versionId (else 400
 * InvalidArgument answered, -1). */
int strata_repl_peer_change(struct strata_req *r, const char *action);
/* Whether r's bucket has a replication configuration this daemon may
 * queue changes for (versioning Enabled, the daemon has targets): the
 * handlers then commit and queue a key's changes under key_order.h. */
bool strata_repl_configured(struct strata_req *r);
/* After a version committed (info of it): queues it when it is PENDING. */
void strata_repl_emit_put(struct strata_req *r, const struct strata_obj_info *info);
/* After the tags, retention or legal hold of version vid of key changed:
 * a version replication selected (any status but REPLICA) goes PENDING
 * and the change is sent as that metadata operation on the same version
 * id, with STRATA_REPL_HDR; a target without that version (the copy not
 * there yet, or a target that does not keep version ids) gets the version
 * again whole instead. */
void strata_repl_emit_change(struct strata_req *r, const char *key, const char *vid,
                             enum strata_repl_change what);
/* After a delete marker committed on r's bucket: queued when the rule
 * selecting key replicates delete markers. */
void strata_repl_emit_delete_marker(struct strata_req *r, const char *key, const char *vid);
/* Before a delete without a version id on r's bucket: the
 * x-amz-replication-status its delete marker is committed with, "PENDING"
 * when the rule selecting key replicates delete markers (so the delivery
 * sees in the index which markers it still owes), else NULL. */
const char *strata_repl_marker_status(struct strata_req *r, const char *key);

#endif /* STRATA_SERVER_S3_REPL_HOOKS_H */
