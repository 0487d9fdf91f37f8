/*
 * s3_acl.c - ACL handlers.  Strata has owner-only access, so GET answers
 * the owner with FULL_CONTROL, and PUT accepts only what amounts to
 * "private"; anything else is 501 NotImplemented rather than a grant we
 * would silently ignore.  Connection threads.
 */
#include "srv.h"

#include <string.h>

void strata_h_acl_get(struct strata_req *r)
{
    if (r->key) {
        struct strata_obj_info info;
        memset(&info, 0, sizeof(info));
        const char *vid = strata_req_query(r, "versionId");
        int rc = strata_obj_head(r->srv->meta, r->bucket, r->key, vid, &info);
        strata_obj_info_fini(&info);
        if (rc) {
            strata_req_error_strata(r, rc, vid ? S3CTX_VERSION : S3CTX_OBJECT);
            return;
        }
    }
    struct strata_sbuf b;
    strata_sbuf_init(&b, 8192);
    strata_sbuf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy "
                         "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner>");
    strata_sbuf_xml_elem(&b, "ID", r->binfo.owner);
    strata_sbuf_xml_elem(&b, "DisplayName", r->binfo.owner);
    strata_sbuf_puts(&b, "</Owner><AccessControlList><Grant><Grantee "
                         "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                         "xsi:type=\"CanonicalUser\">");
    strata_sbuf_xml_elem(&b, "ID", r->binfo.owner);
    strata_sbuf_xml_elem(&b, "DisplayName", r->binfo.owner);
    strata_sbuf_puts(&b, "</Grantee><Permission>FULL_CONTROL</Permission></Grant>"
                         "</AccessControlList></AccessControlPolicy>");
    strata_req_send_xml(r, 200, &b);
}

void strata_h_acl_put(struct strata_req *r)
{
    const char *canned = strata_req_hdr(r, "x-amz-acl");
    if (canned && strcmp(canned, "private") != 0) {
        strata_req_error(r, S3E_NotImplemented, 0);
        return;
    }
    if (!canned && r->body.len == 0) {
        strata_req_error(r, S3E_MissingSecurityHeader, 0);
        return;
    }
    if (r->body.len) {
        bool priv = false;
        enum s3_err e = strata_xml_acl_is_private(r->body.data, r->body.len, r->binfo.owner, &priv);
        if (e || !priv) {
            strata_req_error(r, e ? e : S3E_NotImplemented, 0);
            return;
        }
    }
    if (r->key) {
        struct strata_obj_info info;
        memset(&info, 0, sizeof(info));
        const char *vid = strata_req_query(r, "versionId");
        int rc = strata_obj_head(r->srv->meta, r->bucket, r->key, vid, &info);
        strata_obj_info_fini(&info);
        if (rc) {
            strata_req_error_strata(r, rc, vid ? S3CTX_VERSION : S3CTX_OBJECT);
            return;
        }
    }
    strata_req_send_empty(r, 200);
}
