/*
 * s3_multipart.c - multipart uploads: CreateMultipartUpload, UploadPart
 * (streamed exactly like PutObject, through strata_mpu_part_begin),
 * CompleteMultipartUpload, AbortMultipartUpload, ListParts and
 * ListMultipartUploads.  Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"
#include "key_order.h"
#include "repl_hooks.h"
#include "notify.h"
#include "sse.h"


#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


static const char *algo_name(int algo)
{
    switch (algo) {
    case STRATA_CKSUM_CRC32: return "CRC32";
    case STRATA_CKSUM_CRC32C: return "CRC32C";
    case STRATA_CKSUM_CRC64NVME: return "CRC64NVME";
    case STRATA_CKSUM_SHA1: return "SHA1";
    case STRATA_CKSUM_SHA256: return "SHA256";
    default: return NULL;
    }
}

static const char *type_name(int t)
{
    return t == STRATA_CKSUM_TYPE_COMPOSITE ? "COMPOSITE"
           : t == STRATA_CKSUM_TYPE_FULL_OBJECT ? "FULL_OBJECT" : NULL;
}

void strata_h_mpu_create(struct strata_req *r)
{
    struct strata_mpu_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = r->bucket;
    o.key = r->key;
    const char *algo = strata_req_hdr(r, "x-amz-checksum-algorithm");
    const char *type = strata_req_hdr(r, "x-amz-checksum-type");
    enum s3_err e = S3E_NONE;
    if (algo && !(o.cksum_algo = strata_s3_cksum_from_algo_name(algo)))
        e = S3E_InvalidRequest;
    if (!e && type) {
        if (strcasecmp(type, "COMPOSITE") == 0)
            o.cksum_type = STRATA_CKSUM_TYPE_COMPOSITE;
        else if (strcasecmp(type, "FULL_OBJECT") == 0)
            o.cksum_type = STRATA_CKSUM_TYPE_FULL_OBJECT;
        else
            e = S3E_InvalidRequest;
    }
    struct strata_sse_new sse;
    memset(&sse, 0, sizeof(sse));
    /* A replica's upload (REPLICA stored with it) needs the peer's right;
     * a peer's may be a sealed replica's (sse_replica.c). */
    int peer = e ? 0 : strata_repl_peer(r, "s3:ReplicateObject");
    if (peer < 0)
        return;
    if (!e)
        e = peer ? strata_sse_replica_mpu_parse(r, &sse) : strata_sse_new_parse(r, &sse);
    strata_sse_new_fini(&sse); /* the descriptor stays; parts unwrap the key */
    struct strata_new_obj n;
    if (!e)
        e = strata_new_obj_parse(r, &n);
    if (strata_req_refused(r, e))
        return;
    o.sse = sse.desc_len ? sse.desc : NULL;
    o.sse_len = sse.desc_len;
    STRATA_NEW_OBJ_FILL(&o, &n);
    char id[STRATA_UPLOAD_ID_MAX + 1];
    int rc = strata_mpu_create(r->srv->meta, &o, id);
    strata_new_obj_fini(&n);
    if (rc) {
        strata_req_error_strata(r, rc, rc == STRATA_ENOTFOUND ? S3CTX_BUCKET : S3CTX_OBJECT);
        return;
    }
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 16384, "InitiateMultipartUploadResult");
    strata_sbuf_xml_elem(&b, "Bucket", r->bucket);
    strata_sbuf_xml_elem(&b, "Key", r->key);
    strata_sbuf_xml_elem(&b, "UploadId", id);
    strata_sbuf_puts(&b, "</InitiateMultipartUploadResult>");
    struct strata_resp *resp = strata_req_xml_response(r, &b);
    if (!resp)
        return;
    struct strata_obj_info si = {.sse = sse.desc, .sse_len = sse.desc_len};
    strata_sse_resp_hdrs(r, &si, resp);
    struct strata_mpu_info mi;
    const char *an = algo_name(o.cksum_algo);
    if (an && strata_mpu_get(r->srv->meta, r->bucket, r->key, id, &mi) == 0) {
        /* The type meta picked when none was asked (COMPOSITE / FULL_OBJECT). */
        strata_resp_hdr(resp, "x-amz-checksum-algorithm", an);
        const char *tn = type_name(mi.cksum_type);
        if (tn)
            strata_resp_hdr(resp, "x-amz-checksum-type", tn);
    }
    strata_req_send(r, 200, resp);
}

/* partNumber: 1..10000, else 0. */
static unsigned part_number(struct strata_req *r)
{
    const char *s = strata_req_query(r, "partNumber");
    if (!s || !isdigit((unsigned char)*s))
        return 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return *end || v == 0 || v > STRATA_PARTS_MAX ? 0 : (unsigned)v;
}

int strata_h_mpu_part_begin(struct strata_req *r)
{
    struct strata_put_opts po;
    memset(&po, 0, sizeof(po));
    struct strata_part_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = r->bucket;
    o.key = r->key;
    o.upload_id = strata_req_query(r, "uploadId");
    o.part_number = part_number(r);
    enum s3_err e = (enum s3_err)strata_sse_mpu_hdrs_check(r);
    if (!e && !o.part_number)
        e = S3E_InvalidArgument;
    if (!e)
        e = strata_put_body_size(r, &o.size);
    if (!e)
        e = strata_put_digests(r, &po);
    /* A peer's part of a sealed multipart replica: its sealed stream, the
     * part's plaintext size and ETag (sse_replica.c). */
    int peer = e || !strata_req_hdr(r, STRATA_SSE_REPLICA_HDR)
                   ? 0
                   : strata_repl_peer(r, "s3:ReplicateObject");
    if (peer < 0)
        return -1;
    struct strata_sse_new sse;
    if (!e && peer)
        e = strata_sse_replica_parse(r, &sse, &o.size);
    if (e) {
        strata_req_error(r, e, 0);
        return -1;
    }
    if (peer) {
        o.sealed_etag = sse.etag;
        o.sealed_desc = sse.desc;
        o.sealed_desc_len = sse.desc_len;
    }
    o.md5 = po.md5;
    o.sha256 = po.sha256;
    o.cksum_algo = po.cksum_algo;
    o.cksum = po.cksum;
    o.cksum_len = po.cksum_len;
    o.sse_key_cb = strata_sse_part_key_cb;
    o.sse_ud = r;
    o.late = true; /* this is the event thread (strata_h_put_body: part_err) */
    int rc = strata_mpu_part_begin(r->srv->meta, &o, &r->s3->put);
    if (rc && r->s3->sse_err) {
        r->s3->put = NULL;
        strata_req_error(r, (enum s3_err)r->s3->sse_err, 0);
        return -1;
    }
    if (rc) {
        r->s3->put = NULL;
        strata_req_error_strata(r, rc, rc == STRATA_ENOTFOUND ? S3CTX_UPLOAD : S3CTX_OBJECT);
        return -1;
    }
    return 0;
}

void strata_h_mpu_complete(struct strata_req *r)
{
    struct strata_xml_part *xp;
    size_t n;
    enum s3_err e = (enum s3_err)strata_sse_mpu_hdrs_check(r);
    if (strata_req_refused(r, e))
        return;
    /* A replica keeps the source's version id. */
    int peer = strata_repl_peer(r, "s3:ReplicateObject");
    if (peer < 0)
        return;
    e = strata_xml_complete_parse(r->body.data, r->body.len, STRATA_PARTS_MAX, &xp, &n);
    if (strata_req_refused(r, e))
        return;
    struct strata_mpu_part *parts = calloc(n, sizeof(*parts));
    if (!parts) {
        strata_xml_complete_free(xp, n);
        strata_req_error(r, S3E_InternalError, STRATA_ENOMEM);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        parts[i].part_number = xp[i].part_number;
        parts[i].etag = xp[i].etag;
        parts[i].cksum = xp[i].cksum_len ? xp[i].cksum : NULL;
        parts[i].cksum_len = xp[i].cksum_len;
    }
    struct strata_mpu_complete_opts o = {
        .bucket = r->bucket,
        .key = r->key,
        .upload_id = strata_req_query(r, "uploadId"),
        .parts = parts,
        .nparts = n,
        /* SSE-C headers, when sent, must be the upload's key (sse.c). */
        .sse_check = strata_sse_complete_check,
        .sse_ud = r,
    };
    char etag_in[STRATA_ETAG_MAX + 1];
    o.if_match = strata_put_if_match(r, etag_in);
    const char *inm = strata_req_hdr(r, "If-None-Match");
    o.if_none_match_star = inm && strcmp(inm, "*") == 0;
    if (inm && !o.if_none_match_star) {
        /* AWS takes only "*" here, as on PutObject. */
        free(parts);
        strata_xml_complete_free(xp, n);
        strata_req_error(r, S3E_NotImplemented, 0);
        return;
    }
    const char *mpsize = strata_req_hdr(r, "x-amz-mp-object-size");
    if (mpsize) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(mpsize, &end, 10);
        if (!isdigit((unsigned char)*mpsize) || *end || errno) {
            free(parts);
            strata_xml_complete_free(xp, n);
            strata_req_error(r, S3E_InvalidArgument, 0);
            return;
        }
        o.check_size = true;
        o.object_size = v;
    }
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    void *order = strata_key_order_hold(r, r->key);
    int rc = strata_mpu_complete_as(r->srv->meta, &o, peer ? strata_req_hdr(r, STRATA_REPL_HDR)
                                                           : NULL, &info);
    if (rc == 0) {
        strata_notify_emit(r, "ObjectCreated:CompleteMultipartUpload", r->key, info.size,
                           info.etag,
                           r->binfo.versioning != STRATA_VERSIONING_OFF ? info.version_id : NULL,
                           info.seq_ns);
        strata_repl_emit_put(r, &info);
    }
    strata_key_order_release(order);
    free(parts);
    strata_xml_complete_free(xp, n);
    if (rc) {
        strata_obj_info_fini(&info);
        if (rc == STRATA_EINTERNAL && r->s3->sse_err) {
            strata_req_error(r, (enum s3_err)r->s3->sse_err, 0);
            return;
        }
        if (rc == STRATA_EINVAL && o.check_size) {
            r->err_msg = "The provided 'x-amz-mp-object-size' header value does not match "
                         "what was computed.";
            strata_req_error(r, S3E_InvalidRequest, 0);
            return;
        }
        /* The upload is looked up before the If-Match check, so NOTFOUND
         * with If-Match is the key's (NoSuchKey, as AWS). */
        strata_req_error_strata(r, rc, rc == STRATA_ENOTFOUND && !o.if_match ? S3CTX_UPLOAD
                                                                              : S3CTX_OBJECT);
        return;
    }
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 16384, "CompleteMultipartUploadResult");
    strata_sbuf_puts(&b, "<Location>");
    strata_sbuf_xml(&b, r->resource);
    strata_sbuf_puts(&b, "</Location>");
    strata_sbuf_xml_elem(&b, "Bucket", r->bucket);
    strata_sbuf_xml_elem(&b, "Key", r->key);
    strata_sbuf_puts(&b, "<ETag>&quot;");
    strata_sbuf_xml(&b, info.etag);
    strata_sbuf_puts(&b, "&quot;</ETag>");
    const char *an = algo_name(info.cksum_algo), *tn = type_name(info.cksum_type);
    char val[96];
    if (an && strata_s3_cksum_value(&info, val, sizeof(val))) {
        strata_sbuf_printf(&b, "<Checksum%s>%s</Checksum%s>", an, val, an);
        if (tn)
            strata_sbuf_printf(&b, "<ChecksumType>%s</ChecksumType>", tn);
    }
    strata_sbuf_puts(&b, "</CompleteMultipartUploadResult>");
    /* The version id and SSE go in headers (none when neither applies). */
    struct strata_resp *resp = strata_req_xml_response(r, &b);
    if (resp) {
        if (strata_req_version_answered(r, info.version_id))
            strata_resp_hdr(resp, "x-amz-version-id", info.version_id);
        strata_sse_resp_hdrs(r, &info, resp);
        strata_req_send(r, 200, resp);
    }
    strata_obj_info_fini(&info);
}

void strata_h_mpu_abort(struct strata_req *r)
{
    int rc = strata_mpu_abort(r->srv->meta, r->bucket, r->key, strata_req_query(r, "uploadId"));
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_UPLOAD);
        return;
    }
    strata_req_send_empty(r, 204);
}

static int part_cb(const struct strata_part_info *p, void *ud)
{
    struct strata_sbuf *b = ud;
    char when[32];
    strata_iso8601_format(p->mtime_ms, when, sizeof(when));
    strata_sbuf_printf(b, "<Part><PartNumber>%u</PartNumber><LastModified>%s</LastModified>"
                          "<ETag>&quot;",
                       p->part_number, when);
    strata_sbuf_xml(b, p->etag);
    strata_sbuf_printf(b, "&quot;</ETag><Size>%llu</Size>", (unsigned long long)p->size);
    const char *an = algo_name(p->cksum_algo);
    if (an && p->cksum_len) {
        char b64[64];
        strata_b64_encode(p->cksum, p->cksum_len, b64, sizeof(b64));
        strata_sbuf_printf(b, "<Checksum%s>%s</Checksum%s>", an, b64, an);
    }
    strata_sbuf_puts(b, "</Part>");
    return b->failed ? STRATA_ENOMEM : 0;
}

/* The DisplayName of user id (--users, --root-display-name), or id. */
static const char *display_name(const struct strata_req *r, const char *id)
{
    const struct strata_cred *u = strata_creds_find(r->http->creds, id);
    return u ? u->display_name : id;
}

static void owner_xml(struct strata_sbuf *b, const char *tag, const char *owner, const char *name)
{
    strata_sbuf_printf(b, "<%s>", tag);
    strata_sbuf_xml_elem(b, "ID", owner);
    strata_sbuf_xml_elem(b, "DisplayName", name);
    strata_sbuf_printf(b, "</%s>", tag);
}

/* A bounded non-negative query integer (default def), or -1 when bad. */
static long query_num(struct strata_req *r, const char *name, long def, long max)
{
    const char *s = strata_req_query(r, name);
    if (!s)
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || v < 0)
        return -1;
    return v > max ? max : v;
}

void strata_h_mpu_list_parts(struct strata_req *r)
{
    const char *id = strata_req_query(r, "uploadId");
    long marker = query_num(r, "part-number-marker", 0, STRATA_PARTS_MAX);
    long max = query_num(r, "max-parts", 1000, 1000);
    if (marker < 0 || max < 0) {
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    struct strata_mpu_info mi;
    int rc = strata_mpu_get(r->srv->meta, r->bucket, r->key, id, &mi);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_UPLOAD);
        return;
    }
    struct strata_sbuf parts;
    strata_sbuf_init(&parts, STRATA_SRV_LIST_PAGE_MAX);
    struct strata_mpu_parts_result res;
    memset(&res, 0, sizeof(res));
    if (max > 0)
        rc = strata_mpu_list_parts(r->srv->meta, r->bucket, r->key, id, (unsigned)marker,
                                   (unsigned)max, part_cb, &parts, &res);
    if (rc) {
        strata_sbuf_fini(&parts);
        strata_req_error_strata(r, rc, S3CTX_UPLOAD);
        return;
    }
    struct strata_sbuf b;
    strata_xml_doc_open(&b, STRATA_SRV_LIST_PAGE_MAX + 65536, "ListPartsResult");
    strata_sbuf_xml_elem(&b, "Bucket", r->bucket);
    strata_sbuf_xml_elem(&b, "Key", r->key);
    strata_sbuf_xml_elem(&b, "UploadId", id);
    owner_xml(&b, "Initiator", r->binfo.owner, display_name(r, r->binfo.owner));
    owner_xml(&b, "Owner", r->binfo.owner, display_name(r, r->binfo.owner));
    strata_sbuf_xml_elem(&b, "StorageClass", mi.storage_class[0] ? mi.storage_class : "STANDARD");
    strata_sbuf_printf(&b, "<PartNumberMarker>%ld</PartNumberMarker>", marker);
    if (res.truncated)
        strata_sbuf_printf(&b, "<NextPartNumberMarker>%u</NextPartNumberMarker>", res.next_marker);
    strata_sbuf_printf(&b, "<MaxParts>%ld</MaxParts><IsTruncated>%s</IsTruncated>", max,
                       res.truncated ? "true" : "false");
    const char *an = algo_name(mi.cksum_algo), *tn = type_name(mi.cksum_type);
    if (an)
        strata_sbuf_printf(&b, "<ChecksumAlgorithm>%s</ChecksumAlgorithm>", an);
    if (an && tn)
        strata_sbuf_printf(&b, "<ChecksumType>%s</ChecksumType>", tn);
    strata_sbuf_append(&b, parts.data ? parts.data : "", parts.len);
    if (parts.failed)
        b.failed = true;
    strata_sbuf_fini(&parts);
    strata_sbuf_puts(&b, "</ListPartsResult>");
    strata_req_send_xml(r, 200, &b);
}

struct up_page {
    struct strata_sbuf items;
    struct strata_sbuf prefixes;
    const char *owner;
    const char *owner_name;
    bool url; /* encoding-type=url */
};

static int upload_cb(const struct strata_mpu_list_entry *e, void *ud)
{
    struct up_page *p = ud;
    if (e->is_prefix) {
        strata_sbuf_puts(&p->prefixes, "<CommonPrefixes>");
        strata_url_xml_elem(&p->prefixes, "Prefix", e->key, p->url);
        strata_sbuf_puts(&p->prefixes, "</CommonPrefixes>");
        return p->prefixes.failed ? STRATA_ENOMEM : 0;
    }
    char when[32];
    strata_iso8601_format(e->info->initiated_ms, when, sizeof(when));
    strata_sbuf_puts(&p->items, "<Upload>");
    strata_url_xml_elem(&p->items, "Key", e->key, p->url);
    strata_sbuf_xml_elem(&p->items, "UploadId", e->info->upload_id);
    owner_xml(&p->items, "Initiator", p->owner, p->owner_name);
    owner_xml(&p->items, "Owner", p->owner, p->owner_name);
    strata_sbuf_xml_elem(&p->items, "StorageClass",
                         e->info->storage_class[0] ? e->info->storage_class : "STANDARD");
    strata_sbuf_printf(&p->items, "<Initiated>%s</Initiated></Upload>", when);
    return p->items.failed ? STRATA_ENOMEM : 0;
}

void strata_h_mpu_list(struct strata_req *r)
{
    long max = query_num(r, "max-uploads", 1000, 1000);
    const char *enc = strata_req_query(r, "encoding-type");
    if (max < 0 || (enc && strcmp(enc, "url") != 0)) {
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    struct strata_mpu_list_opts o = {
        .bucket = r->bucket,
        .prefix = strata_req_query(r, "prefix"),
        .delimiter = strata_req_query(r, "delimiter"),
        .key_marker = strata_req_query(r, "key-marker"),
        .upload_id_marker = strata_req_query(r, "upload-id-marker"),
        .max_uploads = (unsigned)max,
    };
    if (o.upload_id_marker && (!o.key_marker || !*o.key_marker))
        o.upload_id_marker = NULL; /* AWS ignores it without a key marker */
    struct up_page p = {.owner = r->binfo.owner,
                        .owner_name = display_name(r, r->binfo.owner),
                        .url = enc != NULL};
    strata_sbuf_init(&p.items, STRATA_SRV_LIST_PAGE_MAX);
    strata_sbuf_init(&p.prefixes, STRATA_SRV_LIST_PAGE_MAX);
    struct strata_mpu_list_result res;
    memset(&res, 0, sizeof(res));
    int rc = max > 0 ? strata_mpu_list(r->srv->meta, &o, upload_cb, &p, &res) : 0;
    if (rc) {
        strata_sbuf_fini(&p.items);
        strata_sbuf_fini(&p.prefixes);
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    struct strata_sbuf b;
    strata_xml_doc_open(&b, STRATA_SRV_LIST_PAGE_MAX * 2 + 65536, "ListMultipartUploadsResult");
    strata_sbuf_xml_elem(&b, "Bucket", r->bucket);
    strata_url_xml_elem(&b, "KeyMarker", o.key_marker ? o.key_marker : "", p.url);
    strata_sbuf_xml_elem(&b, "UploadIdMarker", o.upload_id_marker ? o.upload_id_marker : "");
    if (res.truncated) {
        strata_url_xml_elem(&b, "NextKeyMarker", res.next_key_marker, p.url);
        strata_sbuf_xml_elem(&b, "NextUploadIdMarker", res.next_upload_id_marker);
    }
    if (o.prefix)
        strata_url_xml_elem(&b, "Prefix", o.prefix, p.url);
    if (o.delimiter)
        strata_url_xml_elem(&b, "Delimiter", o.delimiter, p.url);
    if (p.url)
        strata_sbuf_puts(&b, "<EncodingType>url</EncodingType>");
    strata_sbuf_printf(&b, "<MaxUploads>%ld</MaxUploads><IsTruncated>%s</IsTruncated>", max,
                       res.truncated ? "true" : "false");
    strata_sbuf_append(&b, p.items.data ? p.items.data : "", p.items.len);
    strata_sbuf_append(&b, p.prefixes.data ? p.prefixes.data : "", p.prefixes.len);
    if (p.items.failed || p.prefixes.failed)
        b.failed = true;
    strata_sbuf_fini(&p.items);
    strata_sbuf_fini(&p.prefixes);
    strata_sbuf_puts(&b, "</ListMultipartUploadsResult>");
    strata_req_send_xml(r, 200, &b);
}
