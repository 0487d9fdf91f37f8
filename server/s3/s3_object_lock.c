/*
 * s3_object_lock.c - the S3 Object Lock API: Put/GetObjectLockConfiguration
 * (?object-lock on a bucket), Put/GetObjectRetention (?retention) and
 * Put/GetObjectLegalHold (?legal-hold) per version, the x-amz-object-lock-*
 * headers of new objects and of GET/HEAD answers, and who may bypass
 * GOVERNANCE retention.  The rules themselves live in meta/ (lock.c), so
 * every caller is bound by them; this file parses, answers AWS's error
 * codes and messages, and maps the caller to a lock actor.
 * Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"
#include "key_order.h"
#include "remote_lock.h"
#include "repl_hooks.h"
#include "srv_tiers.h"

#include "authz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MSG_NO_LOCK "Bucket is missing Object Lock Configuration"
#define MSG_MD5 "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object " \
                "requests with Object Lock parameters"

static const char *mode_name(int mode)
{
    return mode == STRATA_LOCK_COMPLIANCE ? "COMPLIANCE" : "GOVERNANCE";
}

struct strata_lock_actor strata_lock_actor_of(struct strata_req *r)
{
    struct strata_lock_actor a = {.user = strata_req_user(r)};
    /* s3:BypassGovernanceRetention is a policy permission (authz.c). */
    a.bypass_governance = strata_authz_bypass_governance(
        r, r->key, r->key ? strata_req_query(r, "versionId") : NULL);
    return a;
}

enum s3_err strata_lock_hdrs_parse(struct strata_req *r, struct strata_obj_lock *out)
{
    memset(out, 0, sizeof(*out));
    const char *mode = strata_req_hdr(r, "x-amz-object-lock-mode");
    const char *date = strata_req_hdr(r, "x-amz-object-lock-retain-until-date");
    const char *hold = strata_req_hdr(r, "x-amz-object-lock-legal-hold");
    if (!mode && !date && !hold)
        return S3E_NONE;
    if (!r->binfo.object_lock) {
        r->err_msg = MSG_NO_LOCK;
        return S3E_InvalidRequest;
    }
    if ((mode != NULL) != (date != NULL)) {
        r->err_msg = "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both "
                     "be supplied";
        return S3E_InvalidArgument;
    }
    if (mode) {
        if (strcmp(mode, "GOVERNANCE") == 0)
            out->mode = STRATA_LOCK_GOVERNANCE;
        else if (strcmp(mode, "COMPLIANCE") == 0)
            out->mode = STRATA_LOCK_COMPLIANCE;
        else {
            r->err_msg = "Unknown wormMode directive.";
            return S3E_InvalidArgument;
        }
        if (strata_iso8601_parse(date, &out->until_ms)) {
            r->err_msg = "The retain until date must be provided in ISO 8601 format";
            return S3E_InvalidArgument;
        }
        if (out->until_ms <= strata_meta_lock_now_ms(r->srv->meta)) {
            r->err_msg = "The retain until date must be in the future!";
            return S3E_InvalidArgument;
        }
    }
    if (hold) {
        if (strcmp(hold, "ON") != 0 && strcmp(hold, "OFF") != 0) {
            r->err_msg = "Legal Hold must be either of 'ON' or 'OFF'";
            return S3E_InvalidArgument;
        }
        out->legal_hold = strcmp(hold, "ON") == 0;
        out->legal_hold_set = true;
    }
    return S3E_NONE;
}

void strata_lock_hdrs_add(struct strata_resp *resp, const struct strata_obj_lock *lock)
{
    if (lock->mode) {
        char when[40];
        strata_iso8601_format(lock->until_ms, when, sizeof(when));
        strata_resp_hdr(resp, "x-amz-object-lock-mode", mode_name(lock->mode));
        strata_resp_hdr(resp, "x-amz-object-lock-retain-until-date", when);
    }
    if (lock->legal_hold_set)
        strata_resp_hdr(resp, "x-amz-object-lock-legal-hold", lock->legal_hold ? "ON" : "OFF");
}

/* The lock calls need a lock bucket: InvalidRequest otherwise. */
static bool need_lock_bucket(struct strata_req *r)
{
    if (r->binfo.object_lock)
        return true;
    r->err_msg = MSG_NO_LOCK;
    strata_req_error(r, S3E_InvalidRequest, 0);
    return false;
}

/* AWS requires Content-MD5 (or a checksum) on these bodies; http.c
 * verified it when given. */
static bool need_digest(struct strata_req *r)
{
    if (r->body_digest)
        return true;
    r->err_msg = "Missing required header for this request: Content-MD5";
    strata_req_error(r, S3E_InvalidRequest, 0);
    return false;
}

static void obj_error(struct strata_req *r, int rc, const char *vid)
{
    if (rc == STRATA_ELOCKED)
        r->err_msg = "Access Denied because object protected by object lock.";
    strata_req_error_strata(r, rc, vid && *vid ? S3CTX_VERSION : S3CTX_OBJECT);
}

/* ---- bucket configuration ----------------------------------------------- */

void strata_h_lock_config_get(struct strata_req *r)
{
    if (!r->binfo.object_lock) {
        strata_req_error(r, S3E_ObjectLockConfigurationNotFoundError, 0);
        return;
    }
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 4096, "ObjectLockConfiguration");
    strata_sbuf_puts(&b, "<ObjectLockEnabled>Enabled</ObjectLockEnabled>");
    if (r->binfo.lock_mode) {
        char n[16];
        strata_sbuf_puts(&b, "<Rule><DefaultRetention>");
        strata_sbuf_xml_elem(&b, "Mode", mode_name(r->binfo.lock_mode));
        snprintf(n, sizeof(n), "%u", r->binfo.lock_days ? r->binfo.lock_days : r->binfo.lock_years);
        strata_sbuf_xml_elem(&b, r->binfo.lock_days ? "Days" : "Years", n);
        strata_sbuf_puts(&b, "</DefaultRetention></Rule>");
    }
    strata_sbuf_puts(&b, "</ObjectLockConfiguration>");
    strata_req_send_xml(r, 200, &b);
}

void strata_h_lock_config_put(struct strata_req *r)
{
    if (!need_digest(r))
        return;
    bool enabled;
    int mode;
    unsigned days, years;
    enum s3_err e = strata_xml_lock_config_parse(r->body.data, r->body.len, &enabled, &mode,
                                                 &days, &years, &r->err_msg);
    if (strata_req_refused(r, e))
        return;
    if (!r->binfo.object_lock && r->binfo.versioning != STRATA_VERSIONING_ENABLED) {
        r->err_msg = "Versioning must be 'Enabled' on the bucket to apply a Object Lock "
                     "configuration";
        strata_req_error(r, S3E_InvalidBucketState, 0);
        return;
    }
    if (r->binfo.object_lock && strata_req_hdr(r, "x-amz-bucket-object-lock-token")) {
        /* Tokens belong to replication, which Strata does not have. */
        strata_req_error(r, S3E_NotImplemented, 0);
        return;
    }
    struct strata_lock_actor a = strata_lock_actor_of(r);
    int rc = strata_meta_bucket_lock_set(r->srv->meta, r->bucket, mode, days, years, &a);
    strata_bcache_invalidate(r->bucket);
    if (rc == STRATA_EINVAL) {
        strata_req_error(r, S3E_InvalidBucketState, rc); /* versioning changed meanwhile */
        return;
    }
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send_empty(r, 200);
}

/* ---- retention and legal hold ------------------------------------------- */

/* The version a Get{ObjectRetention,ObjectLegalHold} asks about; false
 * after answering the error. */
static bool head_version(struct strata_req *r, struct strata_obj_info *in)
{
    if (!need_lock_bucket(r))
        return false;
    const char *vid = strata_req_query(r, "versionId");
    int rc = strata_obj_head(r->srv->meta, r->bucket, r->key, vid, in);
    if (rc) {
        strata_obj_info_fini(in);
        obj_error(r, rc, vid);
        return false;
    }
    return true;
}

/* GetObjectRetention / GetObjectLegalHold: the version's lock state in root,
 * whose elements put writes; it returns false when the version has none of
 * it (NoSuchObjectLockConfiguration). */
static void lock_state_get(struct strata_req *r, const char *root,
                           bool (*put)(struct strata_sbuf *b, const struct strata_obj_lock *l))
{
    struct strata_obj_info in;
    if (!head_version(r, &in))
        return;
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 4096, root);
    if (!put(&b, &in.lock)) {
        strata_sbuf_fini(&b);
        strata_obj_info_fini(&in);
        strata_req_error(r, S3E_NoSuchObjectLockConfiguration, 0);
        return;
    }
    strata_sbuf_printf(&b, "</%s>", root);
    strata_req_send_xml_hdr(r, 200, &b, "x-amz-version-id", in.version_id);
    strata_obj_info_fini(&in);
}

static bool retention_xml(struct strata_sbuf *b, const struct strata_obj_lock *l)
{
    if (!l->mode)
        return false;
    char when[40];
    strata_iso8601_format(l->until_ms, when, sizeof(when));
    strata_sbuf_xml_elem(b, "Mode", mode_name(l->mode));
    strata_sbuf_xml_elem(b, "RetainUntilDate", when);
    return true;
}

static bool legal_hold_xml(struct strata_sbuf *b, const struct strata_obj_lock *l)
{
    if (!l->legal_hold_set)
        return false;
    strata_sbuf_xml_elem(b, "Status", l->legal_hold ? "ON" : "OFF");
    return true;
}

void strata_h_retention_get(struct strata_req *r)
{
    lock_state_get(r, "Retention", retention_xml);
}

void strata_h_legal_hold_get(struct strata_req *r)
{
    lock_state_get(r, "LegalHold", legal_hold_xml);
}

/* A version whose data is on a remote tier: its new lock state goes to
 * the remote objects too, from a durable queue (remote_lock.h). */
static void remote_lock_note(struct strata_req *r, const char *vid)
{
    if (!r->srv->tiers)
        return;
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    if (strata_obj_head(r->srv->meta, r->bucket, r->key, vid[0] ? vid : NULL, &in) == 0 &&
        strata_srv_tier_is_remote(r->srv->tiers, in.tier))
        strata_remote_lock_changed(r->bucket, r->key, in.version_id);
    strata_obj_info_fini(&in);
}

/* PutObjectRetention / PutObjectLegalHold may go on: the bucket has Object
 * Lock, the body its digest, and a replication peer's change is taken. */
static bool lock_put_allowed(struct strata_req *r)
{
    return need_lock_bucket(r) && need_digest(r) &&
           strata_repl_peer_change(r, "s3:ReplicateObject") >= 0;
}

/* Their answer once the version's lock state is written (rc) under order
 * (key_order.h): replicated as kind, order released, and passed on to a
 * remote tier. */
static void lock_put_done(struct strata_req *r, int rc, const char *vid, const char *vid_out,
                          enum strata_repl_change kind, void *order)
{
    if (rc == 0)
        strata_repl_emit_change(r, r->key, vid_out, kind);
    strata_key_order_release(order);
    if (rc) {
        obj_error(r, rc, vid);
        return;
    }
    remote_lock_note(r, vid_out);
    strata_req_send_empty_hdr(r, 200, "x-amz-version-id", vid_out);
}

void strata_h_retention_put(struct strata_req *r)
{
    if (!lock_put_allowed(r))
        return;
    int mode;
    int64_t until;
    if (strata_req_refused(r, strata_xml_retention_parse(r->body.data, r->body.len, &mode, &until)))
        return;
    if (mode && until <= strata_meta_lock_now_ms(r->srv->meta)) {
        r->err_msg = "The retain until date must be in the future!";
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    const char *vid = strata_req_query(r, "versionId");
    struct strata_lock_actor a = strata_lock_actor_of(r);
    char vid_out[STRATA_VERSION_ID_MAX + 1] = "";
    void *order = strata_key_order_hold(r, r->key);
    int rc = strata_obj_retention_put(r->srv->meta, r->bucket, r->key, vid, mode, until, &a,
                                      vid_out);
    lock_put_done(r, rc, vid, vid_out, STRATA_REPL_RETENTION, order);
}

void strata_h_legal_hold_put(struct strata_req *r)
{
    if (!lock_put_allowed(r))
        return;
    bool on;
    if (strata_req_refused(r, strata_xml_legal_hold_parse(r->body.data, r->body.len, &on)))
        return;
    const char *vid = strata_req_query(r, "versionId");
    struct strata_lock_actor a = strata_lock_actor_of(r);
    char vid_out[STRATA_VERSION_ID_MAX + 1] = "";
    void *order = strata_key_order_hold(r, r->key);
    int rc = strata_obj_legal_hold_put(r->srv->meta, r->bucket, r->key, vid, on, &a, vid_out);
    lock_put_done(r, rc, vid, vid_out, STRATA_REPL_LEGAL_HOLD, order);
}
