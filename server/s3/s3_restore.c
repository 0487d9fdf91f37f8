/*
 * s3_restore.c - RestoreObject (POST ?restore on an object), and the
 * x-amz-restore header of HEAD and GET.
 *
 * A version whose data is on an archive tier (--tier NAME:s3,restore:URL)
 * is read only through a restored copy (meta.h "restored copies"), as
 * AWS's GLACIER and DEEP_ARCHIVE: the first request answers 202 Accepted
 * and queues the copy (restore_worker.h), a request while it is made 409
 * RestoreAlreadyInProgress, one on a ready copy 200 with the copy's expiry
 * set anew from its Days.  Every other version needs no restore: 403
 * InvalidObjectState, as AWS answers for a class that is read directly.
 * The RestoreRequest document is checked first (SELECT restores are 501).
 * Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"

#include "http_date.h"
#include "notify.h"
#include "restore_worker.h"

/* AWS caps Days at 2147483647; Strata's copies expire within about 2^31
 * days either way (a 64-bit millisecond clock). */
#define RESTORE_DAYS_MAX 2147483647u

void strata_restore_hdr_add(struct strata_req *r, struct strata_resp *resp)
{
    const struct strata_obj_info *in = &r->s3->info;
    if (in->delete_marker || !strata_meta_tier_archived(r->srv->meta, in->tier))
        return;
    struct strata_restore_state st;
    if (strata_obj_restore_get(r->srv->meta, r->bucket, in->key, in->version_id, &st) != 0 ||
        !st.present)
        return;
    if (st.ongoing) {
        strata_resp_hdr(resp, "x-amz-restore", "ongoing-request=\"true\"");
        return;
    }
    char date[64], v[128];
    strata_http_date_format((time_t)(st.expiry_ms / 1000), date, sizeof(date));
    snprintf(v, sizeof(v), "ongoing-request=\"false\", expiry-date=\"%s\"", date);
    strata_resp_hdr(resp, "x-amz-restore", v);
}

void strata_h_restore(struct strata_req *r)
{
    unsigned days = 0;
    /* The RestoreRequest element is optional in the API: an empty body
     * asks for a restore with the defaults (none for an archived object). */
    if (r->body.len > 0) {
        enum s3_err e = strata_xml_restore_parse(r->body.data, r->body.len, &days);
        if (e) {
            if (e == S3E_NotImplemented)
                r->err_msg = "SELECT restores are not implemented.";
            strata_req_error(r, e, 0);
            return;
        }
    }
    const char *vid = strata_req_query(r, "versionId");
    struct strata_obj_info info = {0};
    int rc = strata_obj_head(r->srv->meta, r->bucket, r->key, vid, &info);
    bool archived = rc == 0 && strata_meta_tier_archived(r->srv->meta, info.tier);
    char version_id[STRATA_VERSION_ID_MAX + 1];
    snprintf(version_id, sizeof(version_id), "%s", info.version_id);
    uint64_t size = info.size;
    int64_t seq_after = info.seq_ns;
    char etag[STRATA_ETAG_MAX + 1];
    snprintf(etag, sizeof(etag), "%s", info.etag);
    strata_obj_info_fini(&info);
    if (rc) {
        strata_req_error_strata(r, rc, vid && *vid ? S3CTX_VERSION : S3CTX_OBJECT);
        return;
    }
    if (!archived) {
        r->err_msg = "Restore is not allowed for the object's current storage class";
        strata_req_error(r, S3E_InvalidObjectState, 0);
        return;
    }
    if (days == 0 || days > RESTORE_DAYS_MAX) {
        r->err_msg = "The Days element of RestoreRequest is required to restore an archived "
                     "object (1 to 2147483647).";
        strata_req_error(r, S3E_MalformedXML, 0);
        return;
    }
    struct strata_restore_state st;
    rc = strata_obj_restore_request(r->srv->meta, r->bucket, r->key, version_id, days,
                                    r->srv->cfg.lc_day_ms, &st);
    if (rc == STRATA_EBUSY) {
        strata_req_error(r, S3E_RestoreAlreadyInProgress, 0);
        return;
    }
    if (rc == STRATA_EEXISTS) {
        strata_req_send_empty(r, 200); /* a ready copy: its new expiry is set */
        return;
    }
    if (rc) {
        strata_req_error_strata(r, rc, vid && *vid ? S3CTX_VERSION : S3CTX_OBJECT);
        return;
    }
    if (strata_restorer_queue(r->srv, r->bucket, r->key, version_id) != 0)
        strata_srv_log(STRATA_LOG_WARN, "restore of %s/%s: queue full, made at the next start",
                       r->bucket, r->key);
    strata_notify_emit(r, "ObjectRestore:Post", r->key, size, etag,
                       r->binfo.versioning != STRATA_VERSIONING_OFF ? version_id : NULL,
                       strata_notify_stamp_clock(seq_after));
    strata_req_send_empty(r, 202);
}
