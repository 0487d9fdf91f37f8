/*
 * s3_restore.c - RestoreObject (POST ?restore on an object).  Strata has no
 * archive storage class: every tier, remote ones included, serves reads
 * directly, so no version ever needs a restore.  The request is checked as
 * AWS checks it (the RestoreRequest document, then the version) and then
 * refused as AWS refuses the restore of an object whose class is readable:
 * 403 InvalidObjectState.  SELECT restores are 501.
 * Connection thread of the request.
 */
#include "srv.h"

void strata_h_restore(struct strata_req *r)
{
    unsigned days = 0;
    /* The RestoreRequest element is optional in the API: an empty body
     * asks for a restore with the defaults. */
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
    strata_obj_info_fini(&info);
    if (rc) {
        strata_req_error_strata(r, rc, vid && *vid ? S3CTX_VERSION : S3CTX_OBJECT);
        return;
    }
    r->err_msg = "Restore is not allowed for the object's current storage class";
    strata_req_error(r, S3E_InvalidObjectState, 0);
}
