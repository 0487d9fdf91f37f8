/*
 * s3_object_put.c - PutObject.  begin() validates the headers and opens a
 * strata_put before the body arrives (so a bad request is refused before
 * 100-continue); body() streams each decoded piece into
 * strata_obj_put_write, never buffering the object; run() hands over the
 * trailer checksum and commits.  Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"
#include "key_order.h"
#include "repl_hooks.h"
#include "notify.h"
#include "sse.h"
#include "srv_tiers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *keep(struct strata_hdr_set *h, const char *s, bool lower)
{
    size_t len = strlen(s) + 1;
    if (h->used + len > sizeof(h->buf))
        return NULL;
    char *d = h->buf + h->used;
    for (size_t i = 0; i < len; i++)
        d[i] = lower ? (char)tolower((unsigned char)s[i]) : s[i];
    h->used += len;
    return d;
}

enum s3_err strata_put_hdrs_pick(struct strata_req *r, struct strata_hdr_set *h)
{
    return strata_put_hdrs_pick_from(r->hdrs, r->nhdrs, h);
}

/* Chooses the stored headers.  Returns S3E_NONE or the error to answer. */
enum s3_err strata_put_hdrs_pick_from(const struct strata_auth_hdr *hdrs, size_t nhdrs,
                                      struct strata_hdr_set *h)
{
    h->n = h->used = h->meta_bytes = 0;
    for (size_t i = 0; i < nhdrs; i++) {
        char lname[128];
        if (strlen(hdrs[i].name) >= sizeof(lname))
            continue;
        for (size_t j = 0;; j++) {
            lname[j] = (char)tolower((unsigned char)hdrs[i].name[j]);
            if (!lname[j])
                break;
        }
        if (!strata_s3_hdr_is_stored(lname))
            continue;
        const char *value = hdrs[i].value;
        char enc[256];
        if (strcmp(lname, "content-encoding") == 0) {
            strata_s3_content_encoding_strip(value, enc, sizeof(enc));
            if (!enc[0])
                continue;
            value = enc;
        }
        /* AWS: an RFC 2047 encoded value is stored decoded (and answered
         * encoded again when it is not printable ASCII, s3_object_get.c). */
        char dec[STRATA_SRV_META_HDR_MAX + 1];
        if (strncmp(lname, "x-amz-meta-", 11) == 0 &&
            strata_s3_rfc2047_decode(value, dec, sizeof(dec)))
            value = dec;
        if (strncmp(lname, "x-amz-meta-", 11) == 0) {
            h->meta_bytes += strlen(lname) - 11 + strlen(value);
            if (h->meta_bytes > STRATA_SRV_META_HDR_MAX)
                return S3E_MetadataTooLarge;
        }
        if (h->n == STRATA_PUT_HDRS_MAX)
            return S3E_MetadataTooLarge;
        const char *n = keep(h, lname, true), *v = keep(h, value, false);
        if (!n || !v)
            return S3E_MetadataTooLarge;
        h->kv[h->n].name = n;
        h->kv[h->n].value = v;
        h->n++;
    }
    return S3E_NONE;
}

/* The body size, or the error to answer. */
enum s3_err strata_put_body_size(struct strata_req *r, uint64_t *size)
{
    const char *s;
    if (r->chunked) {
        s = strata_req_hdr(r, "x-amz-decoded-content-length");
        if (r->auth.decoded_length != UINT64_MAX)
            *size = r->auth.decoded_length;
        else if (!s)
            return S3E_MissingContentLength;
        else {
            char *end;
            *size = strtoull(s, &end, 10);
            if (*end || !isdigit((unsigned char)*s))
                return S3E_InvalidArgument;
        }
    } else {
        s = strata_req_hdr(r, "Content-Length");
        if (!s)
            return S3E_MissingContentLength;
        char *end;
        *size = strtoull(s, &end, 10);
        if (*end || !isdigit((unsigned char)*s))
            return S3E_InvalidArgument;
    }
    return *size > STRATA_SRV_PUT_MAX ? S3E_EntityTooLarge : S3E_NONE;
}

/* Content-MD5 and x-amz-checksum-* / trailer into opts. */
enum s3_err strata_put_digests(struct strata_req *r, struct strata_put_opts *o)
{
    const char *md5 = strata_req_hdr(r, "Content-MD5");
    if (md5) {
        if (strata_b64_decode(md5, r->s3->md5, sizeof(r->s3->md5)) != 16)
            return S3E_InvalidDigest;
        o->md5 = r->s3->md5;
    }
    if (r->auth.payload_mode == STRATA_PAYLOAD_SIGNED)
        o->sha256 = r->auth.payload_sha256;
    for (size_t i = 0; i < r->nhdrs; i++) {
        int algo = strata_s3_cksum_from_hdr(r->hdrs[i].name);
        if (!algo)
            continue;
        if (o->cksum_algo)
            return S3E_InvalidRequest; /* AWS allows one checksum per request */
        int n = strata_b64_decode(r->hdrs[i].value, r->s3->cksum, sizeof(r->s3->cksum));
        if (n < 0 || (size_t)n != strata_s3_cksum_len(algo))
            return S3E_InvalidRequest;
        o->cksum_algo = algo;
        o->cksum = r->s3->cksum;
        o->cksum_len = (size_t)n;
    }
    if (r->auth.trailer[0]) {
        int algo = strata_s3_cksum_from_hdr(r->auth.trailer);
        if (!algo || !r->chunked)
            return S3E_InvalidRequest;
        if (o->cksum_algo && o->cksum_algo != algo)
            return S3E_InvalidRequest;
        o->cksum_algo = algo;
        r->s3->cksum_algo_trailer = algo;
    }
    const char *sdk = strata_req_hdr(r, "x-amz-sdk-checksum-algorithm");
    if (sdk && !o->cksum_algo) {
        o->cksum_algo = strata_s3_cksum_from_algo_name(sdk);
        if (!o->cksum_algo)
            return S3E_InvalidRequest;
    }
    return S3E_NONE;
}

enum s3_err strata_storage_class_resolve(struct strata_srv *srv, const char *sc,
                                        const char **cls, const char **tier)
{
    *cls = sc ? sc : "STANDARD";
    *tier = NULL;
    if (!sc) {
        /* STANDARD, wherever it is mapped (hot by default). */
        const char *t = srv->tiers ? strata_srv_class_tier(srv->tiers, "STANDARD") : NULL;
        *tier = t && strata_meta_tier_known(srv->meta, t) ? t : NULL;
        return S3E_NONE;
    }
    const char *t = srv->tiers ? strata_srv_class_tier(srv->tiers, sc)
                               : (strcmp(sc, "STANDARD") == 0 ? STRATA_TIER_HOT : NULL);
    if (!t || !strata_meta_tier_known(srv->meta, t))
        return S3E_InvalidStorageClass; /* unknown class, or its tier is not configured */
    /* A remote tier takes data by lifecycle transitions only, where Object
     * Lock is carried over or the move refused (remote_tier.h). */
    if (srv->tiers && strata_srv_tier_is_remote(srv->tiers, t))
        return S3E_InvalidStorageClass;
    *tier = t;
    return S3E_NONE;
}

enum s3_err strata_storage_class_pick(struct strata_req *r, const char **cls, const char **tier)
{
    return strata_storage_class_resolve(r->srv, strata_req_hdr(r, "x-amz-storage-class"), cls,
                                        tier);
}

enum s3_err strata_new_obj_parse(struct strata_req *r, struct strata_new_obj *n)
{
    memset(n, 0, sizeof(*n));
    enum s3_err ce = strata_storage_class_pick(r, &n->storage_class, &n->tier);
    if (ce)
        return ce;
    n->h = malloc(sizeof(*n->h));
    if (!n->h)
        return S3E_InternalError;
    strata_sbuf_init(&n->tags, STRATA_TAGS_MAX);
    strata_sbuf_init(&n->acl, STRATA_ACL_MAX);
    enum s3_err e = strata_acl_new_object(r, &n->acl);
    if (!e)
        e = strata_put_hdrs_pick(r, n->h);
    if (!e)
        e = strata_tagging_hdr(r, &n->tags);
    if (!e)
        e = strata_lock_hdrs_parse(r, &n->lock);
    /* Bucket replication: PENDING (or REPLICA) stored with the version. */
    const char *rs = e ? NULL : strata_repl_status_for_new(r, r->key, n->tags.data, n->tags.len);
    if (rs && n->h->n == STRATA_PUT_HDRS_MAX)
        e = S3E_MetadataTooLarge;
    else if (rs)
        n->h->kv[n->h->n++] = (struct strata_kv){STRATA_REPL_STATUS_HDR, rs};
    if (e)
        strata_new_obj_fini(n);
    return e;
}

void strata_new_obj_fini(struct strata_new_obj *n)
{
    STRATA_FREE(n->h);
    strata_sbuf_fini(&n->tags);
    strata_sbuf_fini(&n->acl);
}

int strata_h_put_begin(struct strata_req *r)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = r->bucket;
    o.key = r->key;
    enum s3_err e = strata_put_body_size(r, &o.size);
    int peer = strata_repl_peer(r, "s3:ReplicateObject");
    if (peer < 0)
        return -1;
    if (peer) /* a replica keeps the source's version id */
        o.version_id = strata_req_hdr(r, STRATA_REPL_HDR);
    if (!e)
        e = strata_put_digests(r, &o);
    struct strata_sse_new sse;
    memset(&sse, 0, sizeof(sse));
    if (!e) /* a peer's replica may come sealed (sse_replica.c) */
        e = peer ? strata_sse_replica_parse(r, &sse, &o.size) : strata_sse_new_parse(r, &sse);
    struct strata_new_obj nobj;
    if (!e)
        e = strata_new_obj_parse(r, &nobj);
    if (e) {
        strata_sse_new_fini(&sse);
        strata_req_error(r, e, 0);
        return -1;
    }
    strata_sse_new_apply(&sse, &o);
    STRATA_NEW_OBJ_FILL(&o, &nobj);
    if ((strata_req_hdr(r, "x-amz-object-lock-mode") ||
         strata_req_hdr(r, "x-amz-object-lock-legal-hold")) &&
        !o.md5 && !o.cksum_algo) {
        /* AWS wants the body's integrity pinned before it is locked. */
        strata_new_obj_fini(&nobj);
        r->err_msg = "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object "
                     "requests with Object Lock parameters";
        strata_req_error(r, S3E_InvalidRequest, 0);
        return -1;
    }
    char etag[STRATA_ETAG_MAX + 1];
    o.if_match = strata_put_if_match(r, etag);
    const char *inm = strata_req_hdr(r, "If-None-Match");
    if (inm) {
        if (strcmp(inm, "*") != 0) {
            strata_new_obj_fini(&nobj);
            strata_sse_new_fini(&sse);
            strata_req_error(r, S3E_NotImplemented, 0);
            return -1;
        }
        o.if_none_match_star = true;
    }
    int rc = strata_obj_put_begin(r->srv->meta, &o, &r->s3->put);
    strata_new_obj_fini(&nobj); /* put_begin copied the headers, tags and key */
    strata_sse_new_fini(&sse);
    if (rc) {
        r->s3->put = NULL;
        strata_req_error_strata(r, rc, rc == STRATA_ENOTFOUND ? S3CTX_BUCKET : S3CTX_OBJECT);
        return -1;
    }
    return 0;
}

/* An UploadPart's error from its write or commit: on RADOS its begin (the
 * upload read, the SSE-C key check) runs with the first bytes
 * (strata_part_opts.late).  0: not a part's. */
static enum s3_err part_err(struct strata_req *r, int rc)
{
    if (r->route->body_cb != strata_h_put_body || !r->route->sub)
        return S3E_NONE; /* PutObject */
    if (r->s3->sse_err)
        return (enum s3_err)r->s3->sse_err;
    struct strata_bucket_info bi;
    if (rc == STRATA_ENOTFOUND && strata_meta_bucket_get(r->srv->meta, r->bucket, &bi) == 0)
        return strata_s3_err_from_strata(rc, S3CTX_UPLOAD);
    return S3E_NONE;
}

int strata_h_put_body(struct strata_req *r, const void *buf, size_t len)
{
    int rc = strata_obj_put_write(r->s3->put, buf, len);
    if (rc) {
        /* Not found while storing: the bucket went away since begin (on
         * RADOS the data's pending record is written with the first bytes). */
        enum s3_err e = part_err(r, rc);
        strata_req_defer_error(r, e ? e : strata_s3_err_from_strata(rc, rc == STRATA_ENOTFOUND
                                                                           ? S3CTX_BUCKET
                                                                           : S3CTX_OBJECT),
                               rc);
        return -1;
    }
    return 0;
}

const char *strata_put_if_match(struct strata_req *r, char etag[STRATA_ETAG_MAX + 1])
{
    const char *im = strata_req_hdr(r, "If-Match");
    if (!im)
        return NULL;
    size_t n = strlen(im);
    if (n >= 2 && im[0] == '"' && im[n - 1] == '"')
        snprintf(etag, STRATA_ETAG_MAX + 1, "%.*s", (int)(n - 2), im + 1);
    else
        snprintf(etag, STRATA_ETAG_MAX + 1, "%s", im);
    return etag;
}

int strata_put_commit(struct strata_req *r, struct strata_obj_info *info)
{
    memset(info, 0, sizeof(*info));
    struct strata_put *p = r->s3->put;
    r->s3->put = NULL; /* commit frees it whatever the outcome */
    int rc = strata_obj_put_commit(p, info);
    enum s3_err pe = rc ? part_err(r, rc) : S3E_NONE;
    if (pe) {
        strata_obj_info_fini(info);
        strata_req_error(r, pe, rc);
    } else if (rc) {
        strata_obj_info_fini(info);
        enum s3_ctx ctx = S3CTX_OBJECT;
        if (rc == STRATA_ENOTFOUND) {
            /* If-Match on a key without a current version is NoSuchKey;
             * otherwise the bucket went away under the upload. */
            struct strata_bucket_info bi;
            bool bucket_gone = !strata_req_hdr(r, "If-Match") ||
                               strata_meta_bucket_get(r->srv->meta, r->bucket, &bi) != 0;
            ctx = bucket_gone ? S3CTX_BUCKET : S3CTX_OBJECT;
        }
        strata_req_error_strata(r, rc, ctx);
    }
    return rc;
}

void strata_put_answer_hdrs(struct strata_req *r, const struct strata_obj_info *info,
                            struct strata_resp *resp)
{
    char etag[STRATA_ETAG_MAX + 3];
    snprintf(etag, sizeof(etag), "\"%s\"", info->etag);
    strata_resp_hdr(resp, "ETag", etag);
    strata_sse_resp_hdrs(r, info, resp);
    if (strata_req_version_answered(r, info->version_id))
        strata_resp_hdr(resp, "x-amz-version-id", info->version_id);
    const char *ch = strata_s3_cksum_hdr(info->cksum_algo);
    char b64[64];
    if (ch && info->cksum_len &&
        strata_b64_encode(info->cksum, info->cksum_len, b64, sizeof(b64)) > 0)
        strata_resp_hdr(resp, ch, b64);
}

void strata_h_put_run(struct strata_req *r)
{
    if (r->s3->cksum_algo_trailer) {
        const char *v = strata_chunked_trailer(r->chunked, r->auth.trailer);
        uint8_t raw[STRATA_CKSUM_RAW_MAX];
        int n = v ? strata_b64_decode(v, raw, sizeof(raw)) : -1;
        if (n < 0 || (size_t)n != strata_s3_cksum_len(r->s3->cksum_algo_trailer)) {
            strata_req_error(r, S3E_InvalidRequest, 0);
            return;
        }
        int rc =
            strata_obj_put_expect_checksum(r->s3->put, r->s3->cksum_algo_trailer, raw, (size_t)n);
        if (rc) {
            strata_req_error_strata(r, rc, S3CTX_OBJECT);
            return;
        }
    }
    struct strata_obj_info info;
    void *order = r->route->sub == NULL ? strata_key_order_hold(r, r->key) : NULL;
    if (strata_put_commit(r, &info)) {
        strata_key_order_release(order);
        return;
    }
    struct strata_resp *resp = strata_resp_empty();
    strata_put_answer_hdrs(r, &info, resp); /* a part has no version id */
    if (info.key[0]) /* not for parts */
        strata_lifecycle_expiration_hdr(r, &info, resp);
    if (r->route->sub == NULL) { /* PutObject, not UploadPart */
        strata_notify_emit(r, "ObjectCreated:Put", info.key, info.size, info.etag,
                           r->binfo.versioning != STRATA_VERSIONING_OFF ? info.version_id : NULL,
                           info.seq_ns);
        strata_repl_emit_put(r, &info);
    }
    strata_key_order_release(order);
    strata_obj_info_fini(&info);
    strata_req_send(r, 200, resp);
}
