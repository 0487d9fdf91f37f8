/*
 * s3_object_copy.c - CopyObject: a get of the source streamed into a put of
 * the destination in 1 MiB steps (meta.h keeps the source readable even
 * when it is the key being replaced).  Metadata is copied or replaced per
 * x-amz-metadata-directive; the x-amz-copy-source-if-* conditions are
 * checked before any byte is written.  Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"
#include "key_order.h"
#include "repl_hooks.h"
#include "notify.h"
#include "sse.h"

#include "authz.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COPY_STEP (1u << 20)

struct copy_src {
    char *bucket;
    char *key;
    char *version_id; /* NULL for the latest */
};

/* CopyObjectResult / CopyPartResult: the same two elements. */
static void copy_result(struct strata_sbuf *b, const char *root, const char *when,
                        const char *etag)
{
    strata_xml_doc_open(b, 4096, root);
    strata_sbuf_xml_elem(b, "LastModified", when);
    strata_sbuf_puts(b, "<ETag>&quot;");
    strata_sbuf_xml(b, etag);
    strata_sbuf_printf(b, "&quot;</ETag></%s>", root);
}

static void src_free(struct copy_src *s)
{
    free(s->bucket);
    free(s->key);
    free(s->version_id);
}

/* "[/]bucket/key[?versionId=v]", key URL-encoded.  S3E_NONE or the error. */
static enum s3_err src_parse(const char *hdr, struct copy_src *s)
{
    memset(s, 0, sizeof(*s));
    char *buf = strdup(hdr[0] == '/' ? hdr + 1 : hdr);
    if (!buf)
        return S3E_InternalError;
    char *q = strchr(buf, '?');
    if (q) {
        *q++ = '\0';
        if (strncmp(q, "versionId=", 10) != 0 || !q[10]) {
            free(buf);
            return S3E_InvalidArgument;
        }
        s->version_id = strdup(q + 10);
        if (!s->version_id || strata_url_decode_str(s->version_id, false) != 0) {
            free(buf);
            return S3E_InvalidArgument;
        }
    }
    char *slash = strchr(buf, '/');
    if (!slash || !slash[1] || slash == buf || strata_url_decode_str(buf, false) != 0) {
        free(buf);
        free(s->version_id);
        s->version_id = NULL;
        return S3E_InvalidArgument;
    }
    /* Bucket names hold no '/' or escapes: the first '/' ends the bucket. */
    slash = strchr(buf, '/');
    s->bucket = strndup(buf, (size_t)(slash - buf));
    s->key = strdup(slash + 1);
    free(buf);
    if (!s->bucket || !s->key) {
        src_free(s);
        return S3E_InternalError;
    }
    if (strlen(s->key) > STRATA_KEY_MAX) {
        src_free(s);
        return S3E_KeyTooLongError;
    }
    return S3E_NONE;
}

/* The x-amz-copy-source-if-* headers: any failure is 412 for a copy. */
static bool src_cond_ok(struct strata_req *r, const struct strata_obj_info *in)
{
    struct strata_s3_cond c = {
        .if_match = strata_req_hdr(r, "x-amz-copy-source-if-match"),
        .if_none_match = strata_req_hdr(r, "x-amz-copy-source-if-none-match"),
        .if_modified_since = strata_req_hdr(r, "x-amz-copy-source-if-modified-since"),
        .if_unmodified_since = strata_req_hdr(r, "x-amz-copy-source-if-unmodified-since"),
    };
    return strata_s3_cond_eval(&c, in->etag, (time_t)(in->mtime_ms / 1000)) == 0;
}

/* Streams [off, off + len) of g into p and commits it (p is consumed
 * whatever happens); with order, under the key order lock of r's key
 * (key_order.h), which *order then holds whatever the outcome.  Returns 0
 * or a STRATA_E* code. */
static int copy_range(struct strata_req *r, struct strata_get *g, uint64_t off, uint64_t len,
                      struct strata_put *p, struct strata_obj_info *out, void **order)
{
    uint8_t *buf = malloc(COPY_STEP);
    int rc = buf ? 0 : STRATA_ENOMEM;
    for (uint64_t done = 0; rc == 0 && done < len; done += COPY_STEP) {
        size_t n = len - done < COPY_STEP ? (size_t)(len - done) : COPY_STEP;
        rc = strata_obj_get_read(g, off + done, buf, n);
        if (rc == 0)
            rc = strata_obj_put_write(p, buf, n);
    }
    free(buf);
    if (rc) {
        strata_obj_put_abort(p);
        return rc;
    }
    if (order)
        *order = strata_key_order_hold(r, r->key);
    return strata_obj_put_commit(p, out);
}

/* Streams all of g into a new put of o, committed under *order. */
static int copy_bytes(struct strata_req *r, struct strata_get *g, const struct strata_put_opts *o,
                      struct strata_obj_info *out, void **order)
{
    struct strata_put *p = NULL;
    int rc = strata_obj_put_begin(r->srv->meta, o, &p);
    return rc ? rc : copy_range(r, g, 0, o->size, p, out, order);
}

/* The copy is queued (events, replication) before order is released. */
static void answer(struct strata_req *r, const struct strata_obj_info *dst,
                   const struct strata_obj_info *src, const struct strata_bucket_info *sb,
                   void *order)
{
    strata_notify_emit(r, "ObjectCreated:Copy", r->key, dst->size, dst->etag,
                       r->binfo.versioning != STRATA_VERSIONING_OFF ? dst->version_id : NULL,
                       dst->seq_ns);
    strata_repl_emit_put(r, dst);
    strata_key_order_release(order);
    char when[32];
    strata_iso8601_format(dst->mtime_ms, when, sizeof(when));
    struct strata_sbuf b;
    copy_result(&b, "CopyObjectResult", when, dst->etag);
    struct strata_resp *resp = strata_req_xml_response(r, &b);
    if (!resp)
        return;
    strata_sse_resp_hdrs(r, dst, resp);
    if (strata_req_version_answered(r, dst->version_id))
        strata_resp_hdr(resp, "x-amz-version-id", dst->version_id);
    if (sb->versioning != STRATA_VERSIONING_OFF && src->version_id[0])
        strata_resp_hdr(resp, "x-amz-copy-source-version-id", src->version_id);
    strata_req_send(r, 200, resp);
}

/* Everything after the source is open: directive, conditions, copy. */
static void copy_open(struct strata_req *r, struct strata_get *g, struct strata_obj_info *src,
                      const struct copy_src *cs, const struct strata_bucket_info *sb)
{
    const char *dir = strata_req_hdr(r, "x-amz-metadata-directive");
    bool replace = dir && strcmp(dir, "REPLACE") == 0;
    const char *td = strata_req_hdr(r, "x-amz-tagging-directive");
    if ((dir && !replace && strcmp(dir, "COPY") != 0) ||
        (td && strcmp(td, "COPY") != 0 && strcmp(td, "REPLACE") != 0)) {
        r->err_msg = dir && !replace && strcmp(dir, "COPY") != 0 ? "Unknown metadata directive."
                                                                  : "Unknown tagging directive.";
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    if (!src_cond_ok(r, src)) {
        strata_req_error(r, S3E_PreconditionFailed, 0);
        return;
    }
    if (src->size > STRATA_SRV_PUT_MAX) {
        strata_req_error(r, S3E_InvalidRequest, 0);
        return;
    }
    bool same = strcmp(cs->bucket, r->bucket) == 0 && strcmp(cs->key, r->key) == 0;
    const char *cls, *tier;
    enum s3_err ce = strata_storage_class_pick(r, &cls, &tier);
    if (ce) {
        strata_req_error(r, ce, 0);
        return;
    }
    if (same && !replace && !cs->version_id && !(td && strcmp(td, "REPLACE") == 0) &&
        !strata_req_hdr(r, "x-amz-storage-class") &&
        !strata_req_hdr(r, "x-amz-server-side-encryption") &&
        !strata_req_hdr(r, "x-amz-server-side-encryption-customer-algorithm")) {
        /* AWS refuses a copy onto itself that changes nothing. */
        strata_req_error(r, S3E_InvalidRequest, 0);
        return;
    }
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    /* The copy gets the lock the request names (or the bucket default),
     * never the source's. */
    enum s3_err le = strata_lock_hdrs_parse(r, &o.lock);
    if (le) {
        strata_req_error(r, le, 0);
        return;
    }
    o.bucket = r->bucket;
    o.key = r->key;
    o.size = src->size;
    o.storage_class = cls; /* AWS: STANDARD unless the copy names a class */
    o.tier = tier;
    const char *algo = strata_req_hdr(r, "x-amz-checksum-algorithm");
    o.cksum_algo = algo ? strata_s3_cksum_from_algo_name(algo) : src->cksum_algo;
    struct strata_hdr_set *h = NULL;
    if (replace) {
        h = malloc(sizeof(*h));
        enum s3_err e = h ? strata_put_hdrs_pick(r, h) : S3E_InternalError;
        if (e) {
            free(h);
            strata_req_error(r, e, 0);
            return;
        }
        o.hdrs = h->kv;
        o.nhdrs = h->n;
    } else {
        o.hdrs = src->hdrs;
        o.nhdrs = src->nhdrs;
    }
    const char *tdir = strata_req_hdr(r, "x-amz-tagging-directive");
    struct strata_sbuf tags;
    strata_sbuf_init(&tags, STRATA_TAGS_MAX);
    if (tdir && strcmp(tdir, "REPLACE") == 0) {
        enum s3_err e = strata_tagging_hdr(r, &tags);
        if (e) {
            strata_sbuf_fini(&tags);
            free(h);
            strata_req_error(r, e, 0);
            return;
        }
        o.tags = tags.data;
        o.tags_len = tags.len;
    } else {
        o.tags = src->tags;
        o.tags_len = src->tags_len;
    }
    /* The copy's own replication status (never the source's). */
    struct strata_kv rkv[STRATA_PUT_HDRS_MAX + 1];
    size_t rn = 0;
    for (size_t i = 0; i < o.nhdrs && rn < STRATA_PUT_HDRS_MAX; i++)
        if (strcmp(o.hdrs[i].name, STRATA_REPL_STATUS_HDR) != 0 &&
            strcmp(o.hdrs[i].name, STRATA_REPL_TARGETS_HDR) != 0)
            rkv[rn++] = o.hdrs[i];
    const char *rs = strata_repl_status_for_new(r, r->key, o.tags, o.tags_len);
    if (rs)
        rkv[rn++] = (struct strata_kv){STRATA_REPL_STATUS_HDR, rs};
    o.hdrs = rkv;
    o.nhdrs = rn;
    struct strata_sse_new sse;
    int se = strata_sse_new_parse(r, &sse);
    if (se) {
        strata_sbuf_fini(&tags);
        free(h);
        strata_req_error(r, (enum s3_err)se, 0);
        return;
    }
    strata_sse_new_apply(&sse, &o);
    /* The copy gets the ACL the request names (default private), never
     * the source's, as on AWS. */
    struct strata_sbuf acl;
    strata_sbuf_init(&acl, STRATA_ACL_MAX);
    enum s3_err ae = strata_acl_new_object(r, &acl);
    o.acl = acl.data;
    o.acl_len = acl.len;
    struct strata_obj_info dst;
    memset(&dst, 0, sizeof(dst));
    void *order = NULL;
    int rc = ae ? 0 : copy_bytes(r, g, &o, &dst, &order);
    strata_sse_new_fini(&sse);
    strata_sbuf_fini(&tags);
    strata_sbuf_fini(&acl);
    free(h);
    if (ae) {
        strata_obj_info_fini(&dst);
        strata_req_error(r, ae, 0);
        return;
    }
    if (rc) {
        strata_key_order_release(order);
        strata_obj_info_fini(&dst);
        strata_req_error_strata(r, rc, rc == STRATA_ENOTFOUND ? S3CTX_BUCKET : S3CTX_OBJECT);
        return;
    }
    answer(r, &dst, src, sb, order);
    strata_obj_info_fini(&dst);
}

/* Opens the x-amz-copy-source object (owner-checked).  Returns true with
 * *g, src, cs and sb filled, or false after answering the error. */
static bool src_open(struct strata_req *r, struct copy_src *cs, struct strata_bucket_info *sb,
                     struct strata_obj_info *src, struct strata_get **g)
{
    enum s3_err e = src_parse(strata_req_hdr(r, "x-amz-copy-source"), cs);
    if (e) {
        strata_req_error(r, e, 0);
        return false;
    }
    int rc = strata_bcache_get(r->srv->meta, cs->bucket, sb);
    const char *expect = strata_req_hdr(r, "x-amz-source-expected-bucket-owner");
    e = rc ? S3E_NONE
        : expect && strcmp(expect, sb->owner) != 0
            ? S3E_AccessDenied
            : strata_s3_err_from_auth(
                  strata_authz_check(r, sb, cs->version_id ? "s3:GetObjectVersion" : "s3:GetObject",
                                     cs->key, cs->version_id));
    if (rc || e) {
        src_free(cs);
        if (rc)
            strata_req_error_strata(r, rc, S3CTX_BUCKET);
        else
            strata_req_error(r, e, 0);
        return false;
    }
    memset(src, 0, sizeof(*src));
    *g = NULL;
    rc = strata_obj_get_open(r->srv->meta, cs->bucket, cs->key, cs->version_id, src, g);
    if (rc) {
        /* A delete marker named by version id is not copyable: 400. */
        strata_req_error(r, rc == STRATA_EMETHOD ? S3E_InvalidRequest
                                                 : strata_s3_err_from_strata(
                                                       rc, cs->version_id ? S3CTX_VERSION
                                                                          : S3CTX_OBJECT),
                         rc);
        strata_obj_info_fini(src);
        src_free(cs);
        return false;
    }
    int se = strata_sse_read_key(r, src, *g, true);
    if (se) {
        strata_req_error(r, (enum s3_err)se, 0);
        strata_obj_get_close(*g);
        *g = NULL;
        strata_obj_info_fini(src);
        src_free(cs);
        return false;
    }
    return true;
}

void strata_h_copy(struct strata_req *r)
{
    struct copy_src cs;
    struct strata_bucket_info sb;
    struct strata_obj_info src;
    struct strata_get *g;
    if (!src_open(r, &cs, &sb, &src, &g))
        return;
    copy_open(r, g, &src, &cs, &sb);
    strata_obj_get_close(g);
    strata_obj_info_fini(&src);
    src_free(&cs);
}

/* x-amz-copy-source-range "bytes=a-b": 0; -1 when not of that form (digits
 * only, one range), -2 when it does not lie within size. */
static int part_range(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!hdr) {
        *off = 0;
        *len = size;
        return 0;
    }
    if (strncmp(hdr, "bytes=", 6) != 0)
        return -1;
    const char *p = hdr + 6;
    char *end;
    if (!isdigit((unsigned char)*p))
        return -1;
    errno = 0;
    unsigned long long a = strtoull(p, &end, 10);
    if (errno || *end != '-' || !isdigit((unsigned char)end[1]))
        return -1;
    unsigned long long b = strtoull(end + 1, &end, 10);
    if (errno || *end)
        return -1;
    if (b < a || b >= size)
        return -2;
    *off = a;
    *len = b - a + 1;
    return 0;
}

static void part_copy_run(struct strata_req *r, struct strata_get *g,
                          const struct strata_obj_info *src, const struct strata_bucket_info *sb)
{
    uint64_t off, len;
    if (!src_cond_ok(r, src)) {
        strata_req_error(r, S3E_PreconditionFailed, 0);
        return;
    }
    /* AWS answers both with 400 InvalidArgument. */
    int pr = part_range(strata_req_hdr(r, "x-amz-copy-source-range"), src->size, &off, &len);
    if (pr != 0) {
        r->err_msg = pr == -1 ? "The x-amz-copy-source-range value must be of the form "
                                "bytes=first-last where first and last are the zero-based "
                                "offsets of the first and last bytes to copy"
                              : "Range specified is not valid for source object.";
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    const char *pn = strata_req_query(r, "partNumber");
    char *end = NULL;
    unsigned long num = pn ? strtoul(pn, &end, 10) : 0;
    if (!pn || !*pn || *end || num == 0 || num > STRATA_PARTS_MAX) {
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    struct strata_part_opts o = {
        .bucket = r->bucket,
        .key = r->key,
        .upload_id = strata_req_query(r, "uploadId"),
        .part_number = (unsigned)num,
        .size = len,
    };
    struct strata_put *p = NULL;
    o.sse_key_cb = strata_sse_part_key_cb;
    o.sse_ud = r;
    int rc = strata_mpu_part_begin(r->srv->meta, &o, &p);
    struct strata_obj_info dst;
    memset(&dst, 0, sizeof(dst));
    if (rc == 0)
        rc = copy_range(r, g, off, len, p, &dst, NULL); /* a part: not queued */
    if (rc && r->s3->sse_err) {
        strata_obj_info_fini(&dst);
        strata_req_error(r, (enum s3_err)r->s3->sse_err, 0);
        return;
    }
    if (rc) {
        strata_obj_info_fini(&dst);
        strata_req_error_strata(r, rc, rc == STRATA_ENOTFOUND ? S3CTX_UPLOAD : S3CTX_OBJECT);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char when[32];
    strata_iso8601_format((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when, sizeof(when));
    struct strata_sbuf b;
    copy_result(&b, "CopyPartResult", when, dst.etag);
    strata_obj_info_fini(&dst);
    (void)sb;
    strata_req_send_xml(r, 200, &b);
}

void strata_h_part_copy(struct strata_req *r)
{
    struct copy_src cs;
    struct strata_bucket_info sb;
    struct strata_obj_info src;
    struct strata_get *g;
    enum s3_err e = (enum s3_err)strata_sse_mpu_hdrs_check(r);
    if (strata_req_refused(r, e))
        return;
    if (!src_open(r, &cs, &sb, &src, &g))
        return;
    part_copy_run(r, g, &src, &sb);
    strata_obj_get_close(g);
    strata_obj_info_fini(&src);
    src_free(&cs);
}
