/*
 * s3_post.c - POST Object (s3_post.h).  libmicrohttpd's post processor
 * parses the multipart/form-data body; the fields before the file are kept
 * (at most 20 KiB, as AWS), and when the file field starts the form is
 * judged as a whole: signature, POST policy, s3:PutObject for the final key,
 * the fields' own values (x-amz-* fields stand for the request headers of
 * their name: strata_post_hdr).  Only then is a strata_put opened, and the file's
 * bytes stream into it as they arrive; nothing is buffered whole.  Fields
 * after the file are ignored, as AWS does.  Any error is recorded and
 * answered after the body; the put is aborted, so stored data stays as it
 * was.  Connection thread of the request.
 */
#include "s3_post.h"
#include "handlers.h"
#include "key_order.h"
#include "notify.h"
#include "repl_hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "authz.h"
#include "form.h"
#include "post_policy.h"
#include "sse.h"

#define POST_FIELDS_MAX 64
#define POST_PRE_DATA_MAX (20u * 1024) /* AWS: fields before the file */
#define POST_PP_BUFFER (16u * 1024)
#define POST_TAGS_MAX 10 /* object tags, as x-amz-tagging */

struct strata_post {
    struct strata_req *r;
    struct strata_form *form;
    struct strata_auth_hdr f[POST_FIELDS_MAX]; /* names and values malloc'ed */
    size_t vlen[POST_FIELDS_MAX];
    size_t n;
    size_t pre_bytes;
    bool file_seen;  /* the file field started: the form is being judged */
    bool after_file; /* a field followed the file: the rest is ignored */
    uint64_t file_bytes;
    bool has_range;
    uint64_t min, max;
    struct strata_post_policy *policy;
    struct strata_sbuf tags; /* the tagging field, canonical ("k=v&..."), or empty */
    char msg[512]; /* the message of a deferred error (r->err_msg) */
};

void strata_post_free(struct strata_post *p)
{
    if (!p)
        return;
    strata_form_destroy(p->form);
    for (size_t i = 0; i < p->n; i++) {
        free((char *)p->f[i].name);
        free((char *)p->f[i].value);
    }
    strata_post_policy_free(p->policy);
    strata_sbuf_fini(&p->tags);
    free(p);
}

static const char *field(const struct strata_post *p, const char *name)
{
    return strata_post_field(p->f, p->n, name);
}

const char *strata_post_hdr(const struct strata_post *p, const char *name)
{
    static const char *const auth[] = {"x-amz-signature", "x-amz-credential", "x-amz-algorithm",
                                       "x-amz-date"};
    if (!p->file_seen)
        return NULL;
    if (strcasecmp(name, "x-amz-acl") == 0)
        return field(p, "acl");
    if (strcasecmp(name, "x-amz-tagging") == 0) /* the tagging field, as that header */
        return p->tags.len ? p->tags.data : NULL;
    if (strncasecmp(name, "x-amz-", 6) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof(auth) / sizeof(auth[0]); i++)
        if (strcasecmp(name, auth[i]) == 0)
            return NULL;
    return field(p, name);
}

static enum s3_err fail(struct strata_post *p, enum s3_err e, const char *msg)
{
    if (msg && msg != p->msg)
        snprintf(p->msg, sizeof(p->msg), "%s", msg);
    return e;
}

/* Adds (off 0) or extends (off > 0) a field before the file. */
static enum s3_err field_add(struct strata_post *p, const char *key, const char *data,
                             uint64_t off, size_t size)
{
    p->pre_bytes += size + (off == 0 ? strlen(key) : 0);
    if (p->pre_bytes > POST_PRE_DATA_MAX)
        return S3E_MaxPostPreDataLengthExceededError;
    if (off == 0) {
        if (p->n == POST_FIELDS_MAX)
            return S3E_MaxPostPreDataLengthExceededError;
        p->f[p->n].name = strdup(key);
        p->f[p->n].value = calloc(1, 1);
        p->vlen[p->n] = 0;
        p->n++;
        if (!p->f[p->n - 1].name || !p->f[p->n - 1].value)
            return S3E_InternalError;
    }
    if (p->n == 0)
        return S3E_MalformedPOSTRequest; /* a continuation without its start */
    size_t i = p->n - 1;
    if (size == 0)
        return S3E_NONE;
    if (memchr(data, '\0', size))
        return fail(p, S3E_InvalidArgument, "A form field contains a NUL byte.");
    char *v = realloc((char *)p->f[i].value, p->vlen[i] + size + 1);
    if (!v)
        return S3E_InternalError;
    memcpy(v + p->vlen[i], data, size);
    p->vlen[i] += size;
    v[p->vlen[i]] = '\0';
    p->f[i].value = v;
    return S3E_NONE;
}

/*
 * AWS: ${filename} in any field stands for the name of the file the client
 * sent, without its directory part (what follows the last slash or
 * backslash), and the POST policy judges the fields as replaced.  No
 * name: "".
 */
static enum s3_err subst_filename(struct strata_post *p, const char *filename)
{
    static const char var[] = "${filename}";
    const char *base = filename ? filename : "";
    for (const char *c = base; *c; c++)
        if (*c == '/' || *c == '\\')
            base = c + 1;
    for (size_t i = 0; i < p->n; i++) {
        const char *v = p->f[i].value, *at;
        if (!strstr(v, var))
            continue;
        struct strata_sbuf b;
        strata_sbuf_init(&b, 4 * POST_PRE_DATA_MAX);
        for (; (at = strstr(v, var)) != NULL; v = at + sizeof(var) - 1) {
            strata_sbuf_append(&b, v, (size_t)(at - v));
            strata_sbuf_puts(&b, base);
        }
        strata_sbuf_puts(&b, v);
        size_t len = 0;
        char *nv = b.failed ? NULL : strata_sbuf_steal(&b, &len);
        bool too_long = b.failed;
        strata_sbuf_fini(&b);
        if (!nv)
            return too_long ? S3E_MaxPostPreDataLengthExceededError : S3E_InternalError;
        free((char *)p->f[i].value);
        p->f[i].value = nv;
        p->vlen[i] = len;
    }
    return S3E_NONE;
}

/* The key field (${filename} already replaced). */
static enum s3_err final_key(struct strata_post *p, char **out)
{
    const char *key = field(p, "key");
    if (!key)
        return fail(p, S3E_InvalidArgument,
                    "Bucket POST must contain a field named 'key'.  If it is specified, please "
                    "check the order of the fields.");
    if (strlen(key) > STRATA_KEY_MAX)
        return S3E_KeyTooLongError;
    if (!*key || !strata_s3_utf8_valid(key))
        return fail(p, S3E_InvalidArgument, "User key must have a length greater than 0.");
    *out = strdup(key);
    return *out ? S3E_NONE : S3E_InternalError;
}

/* Form fields asking for what Strata does not do here: refused, never
 * ignored. */
static bool unsupported(const char *name)
{
    static const char *const prefixes[] = {
        "x-amz-object-lock-", "x-amz-grant-", "x-amz-website-redirect-location",
        "x-amz-security-token",
    };
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncasecmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* The options of the new object from the fields, then the put opened. */
static enum s3_err open_put(struct strata_post *p)
{
    struct strata_req *r = p->r;
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    enum s3_err ce = strata_storage_class_resolve(r->srv, field(p, "x-amz-storage-class"),
                                                  &o.storage_class, &o.tier);
    if (ce)
        return ce;
    o.bucket = r->bucket;
    o.key = r->key;
    o.size = UINT64_MAX;
    for (size_t i = 0; i < p->n; i++) {
        if (unsupported(p->f[i].name))
            return fail(p, S3E_NotImplemented, "A form field you provided implies "
                                               "functionality that is not implemented.");
        int algo = strata_s3_cksum_from_hdr(p->f[i].name);
        if (!algo)
            continue;
        int len = strata_b64_decode(p->f[i].value, r->s3->cksum, sizeof(r->s3->cksum));
        if (o.cksum_algo || len < 0 || (size_t)len != strata_s3_cksum_len(algo))
            return fail(p, S3E_InvalidRequest, "Value for x-amz-checksum is invalid.");
        o.cksum_algo = algo;
        o.cksum = r->s3->cksum;
        o.cksum_len = (size_t)len;
    }
    const char *calgo = field(p, "x-amz-checksum-algorithm");
    if (calgo && !o.cksum_algo && !(o.cksum_algo = strata_s3_cksum_from_algo_name(calgo)))
        return S3E_InvalidRequest;
    struct strata_hdr_set *h = malloc(sizeof(*h));
    struct strata_sse_new sse;
    memset(&sse, 0, sizeof(sse));
    struct strata_sbuf acl; /* the acl field, as x-amz-acl is to PutObject */
    strata_sbuf_init(&acl, STRATA_ACL_MAX);
    enum s3_err e = h ? strata_put_hdrs_pick_from(p->f, p->n, h) : S3E_InternalError;
    /* Bucket replication: PENDING stored with the version, as PutObject. */
    const char *rs = e ? NULL : strata_repl_status_for_new(r, r->key, p->tags.data, p->tags.len);
    if (rs && h->n == STRATA_PUT_HDRS_MAX)
        e = S3E_MetadataTooLarge;
    else if (rs)
        h->kv[h->n++] = (struct strata_kv){STRATA_REPL_STATUS_HDR, rs};
    if (!e)
        e = strata_acl_new_object(r, &acl);
    if (!e)
        e = (enum s3_err)strata_sse_new_parse(r, &sse); /* the form's, or the bucket default */
    if (!e) {
        strata_sse_new_apply(&sse, &o);
        o.acl = acl.data;
        o.acl_len = acl.len;
        o.hdrs = h->kv;
        o.nhdrs = h->n;
        o.tags = p->tags.data;
        o.tags_len = p->tags.len;
        int rc = strata_obj_put_begin(r->srv->meta, &o, &r->s3->put);
        if (rc) {
            r->s3->put = NULL;
            e = strata_s3_err_from_strata(rc, rc == STRATA_ENOTFOUND ? S3CTX_BUCKET
                                                                     : S3CTX_OBJECT);
        }
    }
    strata_sse_new_fini(&sse);
    strata_sbuf_fini(&acl);
    free(h);
    return e;
}

/* The whole form is known (the file starts): judge it and open the put. */
static enum s3_err form_ready(struct strata_post *p, const char *filename)
{
    struct strata_req *r = p->r;
    const struct strata_cred *cred = NULL;
    const char *msg = NULL;
    char *key = NULL;
    enum s3_err e = subst_filename(p, filename);
    if (!e)
        e = final_key(p, &key);
    if (e)
        return e;
    free(r->key);
    r->key = key; /* for the logs and the error's Key */
    /* Signed for another region: AWS's form answer (InvalidArgument, with
     * the region to sign for). */
    char got[64];
    if (!strata_post_region_ok(p->f, p->n, r->srv->cfg.http.region, got, sizeof(got))) {
        snprintf(p->msg, sizeof(p->msg), "the region '%s' is wrong; expecting '%s'", got,
                 r->srv->cfg.http.region);
        r->err_region = true;
        return S3E_InvalidArgument;
    }
    enum strata_auth_err ae = strata_post_auth(r->http->creds, p->f, p->n, &cred, &msg);
    if (ae)
        return fail(p, strata_s3_err_from_auth(ae), msg);
    const char *policy = field(p, "policy");
    if (policy) {
        ae = strata_post_policy_parse(policy, &p->policy, p->msg, sizeof(p->msg));
        if (!ae)
            ae = strata_post_policy_check(p->policy, r->bucket, p->f, p->n, time(NULL), p->msg,
                                          sizeof(p->msg));
        if (ae)
            return strata_s3_err_from_auth(ae);
        p->has_range = strata_post_policy_length_range(p->policy, &p->min, &p->max);
    }
    /* Before authorisation: s3:RequestObjectTag/<key> sees the tags. */
    const char *tagging = field(p, "tagging");
    if (tagging) {
        e = strata_xml_tagging_parse(tagging, strlen(tagging), POST_TAGS_MAX, &p->tags);
        if (e)
            return e;
    }
    if (cred) { /* the form's signer is who uploads */
        r->auth.cred = cred;
        r->auth.anonymous = false;
    }
    e = strata_s3_err_from_auth(
        strata_authz_check(r, &r->binfo, r->route->authz.action, r->key, NULL));
    if (e)
        return e;
    return open_put(p);
}

static enum s3_err file_data(struct strata_post *p, const char *data, size_t size)
{
    p->file_bytes += size;
    if ((p->has_range && p->file_bytes > p->max) || p->file_bytes > STRATA_SRV_PUT_MAX)
        return fail(p, S3E_EntityTooLarge,
                    "Your proposed upload exceeds the maximum allowed size");
    int rc = size ? strata_obj_put_write(p->r->s3->put, data, size) : 0;
    return rc ? strata_s3_err_from_strata(rc, S3CTX_OBJECT) : S3E_NONE;
}

/* One piece of a form field (strata_form_cb): non-zero stops the body. */
static int iter_cb(void *cls, const char *key, const char *filename, const char *data,
                   uint64_t off, size_t size)
{
    struct strata_post *p = cls;
    struct strata_req *r = p->r;
    if (r->err != S3E_NONE || p->after_file)
        return 0;
    enum s3_err e = S3E_NONE;
    bool is_file = strcasecmp(key, "file") == 0;
    if (is_file && !p->file_seen) {
        p->file_seen = true;
        e = form_ready(p, filename);
    } else if (p->file_seen && (!is_file || off == 0)) {
        p->after_file = true; /* AWS ignores every field after the file */
        return 0;
    } else if (!is_file) {
        e = field_add(p, key, data, off, size);
    }
    if (!e && is_file)
        e = file_data(p, data, size);
    if (e) {
        if (p->msg[0])
            r->err_msg = p->msg; /* else the message the failing call set, if any */
        strata_req_defer_error(r, e, 0);
        return -1;
    }
    return 0;
}

int strata_h_post_begin(struct strata_req *r)
{
    const char *ct = strata_req_hdr(r, "Content-Type");
    if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0) {
        r->err_msg = "Bucket POST must be of the enclosure-type multipart/form-data";
        strata_req_error(r, S3E_PreconditionFailed, 0);
        return -1;
    }
    struct strata_post *p = calloc(1, sizeof(*p));
    if (!p) {
        strata_req_error(r, S3E_InternalError, STRATA_ENOMEM);
        return -1;
    }
    p->r = r;
    strata_sbuf_init(&p->tags, STRATA_TAGS_MAX);
    r->s3->post = p;
    p->form = strata_form_create(r, POST_PP_BUFFER, iter_cb, p);
    if (!p->form) { /* no boundary */
        strata_req_error(r, S3E_MalformedPOSTRequest, 0);
        return -1;
    }
    return 0;
}

int strata_h_post_body(struct strata_req *r, const void *buf, size_t len)
{
    if (strata_form_feed(r->s3->post->form, buf, len) != 0) {
        strata_req_defer_error(r, S3E_MalformedPOSTRequest, 0);
        return -1;
    }
    return r->err != S3E_NONE ? -1 : 0;
}

/* The object's URL, for Location. */
static void object_url(struct strata_req *r, struct strata_sbuf *b)
{
    const char *host = strata_req_hdr(r, "Host");
    strata_sbuf_puts(b, r->srv->cfg.http.tls_cert ? "https://" : "http://");
    strata_sbuf_puts(b, host ? host : "localhost");
    strata_sbuf_puts(b, "/");
    if (!r->host_bucket) {
        strata_url_encode_sbuf(b, r->bucket, false);
        strata_sbuf_puts(b, "/");
    }
    strata_url_encode_sbuf(b, r->key, true);
}

/* 303 to success_action_redirect (or the older redirect) when it is an
 * http(s) URL; else success_action_status 200, 201 (PostResponse) or 204. */
static void respond(struct strata_req *r, const struct strata_obj_info *info)
{
    struct strata_post *p = r->s3->post;
    char etag[STRATA_ETAG_MAX + 3];
    snprintf(etag, sizeof(etag), "\"%s\"", info->etag);
    struct strata_sbuf loc;
    strata_sbuf_init(&loc, 16 * 1024);
    object_url(r, &loc);
    const char *redir = field(p, "success_action_redirect");
    if (!redir)
        redir = field(p, "redirect");
    const char *st = field(p, "success_action_status");
    int status = st && strcmp(st, "200") == 0 ? 200 : st && strcmp(st, "201") == 0 ? 201 : 204;
    struct strata_resp *resp = NULL;
    if (redir && (strncasecmp(redir, "http://", 7) == 0 || strncasecmp(redir, "https://", 8) == 0)) {
        struct strata_sbuf to;
        strata_sbuf_init(&to, 16 * 1024);
        strata_sbuf_puts(&to, redir);
        strata_sbuf_puts(&to, strchr(redir, '?') ? "&bucket=" : "?bucket=");
        strata_url_encode_sbuf(&to, r->bucket, false);
        strata_sbuf_puts(&to, "&key=");
        strata_url_encode_sbuf(&to, r->key, false);
        strata_sbuf_puts(&to, "&etag=");
        strata_url_encode_sbuf(&to, etag, false);
        status = 303;
        resp = strata_resp_empty();
        if (strata_sbuf_puts(&to, "") == 0 && !to.failed)
            strata_resp_hdr(resp, "Location", to.data);
        strata_sbuf_fini(&to);
    } else if (status == 201) {
        struct strata_sbuf b;
        strata_sbuf_init(&b, 64 * 1024);
        strata_sbuf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PostResponse>");
        strata_sbuf_xml_elem(&b, "Location", loc.failed ? "" : loc.data);
        strata_sbuf_xml_elem(&b, "Bucket", r->bucket);
        strata_sbuf_xml_elem(&b, "Key", r->key);
        strata_sbuf_xml_elem(&b, "ETag", etag);
        strata_sbuf_puts(&b, "</PostResponse>");
        resp = strata_req_xml_response(r, &b);
        if (!resp) {
            strata_sbuf_fini(&loc);
            return;
        }
    } else {
        resp = strata_resp_empty();
    }
    if (status != 303 && !loc.failed && strata_sbuf_puts(&loc, "") == 0)
        strata_resp_hdr(resp, "Location", loc.data);
    strata_sbuf_fini(&loc);
    strata_put_answer_hdrs(r, info, resp);
    strata_req_send(r, status, resp);
}

void strata_h_post_run(struct strata_req *r)
{
    struct strata_post *p = r->s3->post;
    bool complete = strata_form_destroy(p->form);
    p->form = NULL;
    enum s3_err e = S3E_NONE;
    if (!p->file_seen)
        e = complete ? fail(p, S3E_InvalidArgument,
                            "POST requires exactly one file upload per request.")
                     : S3E_MalformedPOSTRequest;
    else if (!complete && !p->after_file)
        e = S3E_MalformedPOSTRequest;
    else if (p->has_range && p->file_bytes < p->min)
        e = fail(p, S3E_EntityTooSmall, "Your proposed upload is smaller than the minimum "
                                        "allowed size");
    if (e) {
        if (p->msg[0])
            r->err_msg = p->msg;
        strata_req_error(r, e, 0);
        return;
    }
    struct strata_obj_info info;
    void *order = strata_key_order_hold(r, r->key);
    if (strata_put_commit(r, &info)) {
        strata_key_order_release(order);
        return;
    }
    strata_notify_emit(r, "ObjectCreated:Post", r->key, info.size, info.etag,
                       r->binfo.versioning != STRATA_VERSIONING_OFF ? info.version_id : NULL,
                       info.seq_ns);
    strata_repl_emit_put(r, &info);
    strata_key_order_release(order);
    respond(r, &info);
    strata_obj_info_fini(&info);
}
