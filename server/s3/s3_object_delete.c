/*
 * s3_object_delete.c - DeleteObject and DeleteObjects (multi-object
 * delete, XML via libxml2, up to 1000 keys, Content-MD5 or an
 * x-amz-checksum-* header required and verified).  Connection thread.
 */
#include "srv.h"
#include "handlers.h"
#include "key_order.h"
#include "notify.h"
#include "repl_hooks.h"

#include "authz.h"

#include <stdio.h>
#include <string.h>

#define DELETE_MAX 1000

/* ObjectRemoved:DeleteMarkerCreated when a delete without a version id
 * left a marker, else ObjectRemoved:Delete. */
static void deleted_emit(struct strata_req *r, const char *key, const char *vid,
                         const struct strata_del_result *res)
{
    bool marker = !vid && res->delete_marker;
    strata_notify_emit(r, marker ? "ObjectRemoved:DeleteMarkerCreated" : "ObjectRemoved:Delete",
                       key, 0, NULL,
                       r->binfo.versioning != STRATA_VERSIONING_OFF ? res->version_id : NULL,
                       res->seq_ns);
    if (marker) /* deletes of a version are not replicated (as AWS) */
        strata_repl_emit_delete_marker(r, key, res->version_id);
}

void strata_h_delete(struct strata_req *r)
{
    const char *vid = strata_req_query(r, "versionId");
    if (vid && !*vid) {
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    struct strata_del_result res;
    memset(&res, 0, sizeof(res));
    struct strata_lock_actor a = strata_lock_actor_of(r);
    int peer = strata_repl_peer(r, "s3:ReplicateDelete");
    if (peer < 0)
        return;
    if (peer && vid) { /* deletes of a version are never replicated */
        r->err_msg = STRATA_REPL_HDR " goes with a delete marker, not a versionId.";
        strata_req_error(r, S3E_InvalidRequest, 0);
        return;
    }
    struct strata_kv st = {STRATA_REPL_STATUS_HDR,
                           vid ? NULL : strata_repl_marker_status(r, r->key)};
    a.marker_hdr = st.value ? &st : NULL;
    void *order = strata_key_order_hold(r, r->key);
    int rc = peer && !vid ? strata_obj_delete_marker_replica(r->srv->meta, r->bucket, r->key,
                                                             strata_req_hdr(r, STRATA_REPL_HDR),
                                                             &res)
                          : strata_obj_delete_opts(r->srv->meta, r->bucket, r->key, vid, &a, &res);
    if (rc == 0)
        deleted_emit(r, r->key, vid, &res);
    strata_key_order_release(order);
    if (rc == STRATA_ELOCKED)
        r->err_msg = "Access Denied because object protected by object lock.";
    if (rc && rc != STRATA_ENOTFOUND) {
        strata_req_error_strata(r, rc, vid ? S3CTX_VERSION : S3CTX_OBJECT);
        return;
    }
    struct strata_resp *resp = strata_resp_empty();
    if (rc == 0 && res.delete_marker)
        strata_resp_hdr(resp, "x-amz-delete-marker", "true");
    if (rc == 0 && res.version_id[0] && r->binfo.versioning != STRATA_VERSIONING_OFF)
        strata_resp_hdr(resp, "x-amz-version-id", res.version_id);
    strata_req_send(r, 204, resp);
}

static void add_error(struct strata_sbuf *b, const struct strata_xml_delobj *o, enum s3_err e)
{
    strata_sbuf_puts(b, "<Error>");
    strata_sbuf_xml_elem(b, "Key", o->key);
    if (o->version_id)
        strata_sbuf_xml_elem(b, "VersionId", o->version_id);
    strata_sbuf_xml_elem(b, "Code", strata_s3_err_code(e));
    strata_sbuf_xml_elem(b, "Message", strata_s3_err_message(e));
    strata_sbuf_puts(b, "</Error>");
}

void strata_h_delete_multi(struct strata_req *r)
{
    /* The digests were verified with the body (http.c); AWS requires one. */
    enum s3_err e = r->body_digest ? S3E_NONE : S3E_InvalidRequest;
    if (e) {
        r->err_msg = "Missing required header for this request: Content-MD5";
        strata_req_error(r, e, 0);
        return;
    }
    struct strata_xml_delobj *objs;
    size_t n;
    bool quiet;
    e = strata_xml_delete_parse(r->body.data, r->body.len, DELETE_MAX, &objs, &n, &quiet);
    if (strata_req_refused(r, e))
        return;
    /* The bypass header applies to every key; each key is judged alone. */
    struct strata_lock_actor a = strata_lock_actor_of(r);
    struct strata_sbuf b;
    strata_xml_doc_open(&b, STRATA_SRV_LIST_PAGE_MAX, "DeleteResult");
    for (size_t i = 0; i < n; i++) {
        const struct strata_xml_delobj *o = &objs[i];
        if (!*o->key || strlen(o->key) > STRATA_KEY_MAX) {
            add_error(&b, o, *o->key ? S3E_KeyTooLongError : S3E_InvalidArgument);
            continue;
        }
        const struct strata_route_authz *az = &r->route->authz;
        enum s3_err denied = strata_s3_err_from_auth(strata_authz_check(
            r, &r->binfo, o->version_id ? az->version_action : az->action, o->key, o->version_id));
        if (denied) {
            add_error(&b, o, denied);
            continue;
        }
        a.bypass_governance = strata_authz_bypass_governance(r, o->key, o->version_id);
        struct strata_del_result res;
        memset(&res, 0, sizeof(res));
        struct strata_kv st = {STRATA_REPL_STATUS_HDR,
                               o->version_id ? NULL : strata_repl_marker_status(r, o->key)};
        a.marker_hdr = st.value ? &st : NULL;
        void *order = strata_key_order_hold(r, o->key);
        int rc = strata_obj_delete_opts(r->srv->meta, r->bucket, o->key, o->version_id, &a, &res);
        if (rc == 0)
            deleted_emit(r, o->key, o->version_id, &res);
        strata_key_order_release(order);
        if (rc && rc != STRATA_ENOTFOUND) {
            add_error(&b, o, strata_s3_err_from_strata(rc, S3CTX_OBJECT));
            continue;
        }
        if (quiet)
            continue;
        strata_sbuf_puts(&b, "<Deleted>");
        strata_sbuf_xml_elem(&b, "Key", o->key);
        if (o->version_id)
            strata_sbuf_xml_elem(&b, "VersionId", o->version_id);
        if (rc == 0 && res.delete_marker) {
            strata_sbuf_puts(&b, "<DeleteMarker>true</DeleteMarker>");
            if (!o->version_id)
                strata_sbuf_xml_elem(&b, "DeleteMarkerVersionId", res.version_id);
        }
        strata_sbuf_puts(&b, "</Deleted>");
    }
    strata_sbuf_puts(&b, "</DeleteResult>");
    strata_xml_delete_free(objs, n);
    strata_req_send_xml(r, 200, &b);
}
