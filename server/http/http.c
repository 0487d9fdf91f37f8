/*
 * http.c - the libmicrohttpd front end: daemon start/stop, the request
 * lifecycle (parse -> authenticate -> authorize -> body -> run -> respond ->
 * log) and the helpers handlers answer with.
 *
 * Threads: MHD's epoll threads (one per core) parse, check signatures and
 * send for every connection; GET and HEAD of an object (record reads,
 * inline bodies) run there too while memory answers them (a lookup that
 * needs a drive read continues on a worker, see s3_object_get.c).  Everything that may wait on a drive -
 * request bodies of PUT/UploadPart, every other handler (writes and their
 * fsyncs, listings), erasure-coded GET bodies - runs on the storage
 * workers (pool.h) while the connection is suspended, so a slow drive
 * holds workers, not the connections of an event thread.  One job per
 * request at a time (r->am guards the hand-over flags).  The in-flight
 * limit bounds the work accepted at once; a request over it gets 503
 * SlowDown, never a dropped connection.
 *
 * Ownership: struct strata_req is allocated when MHD reports the request
 * line (the URI log callback, the only place the raw request target is
 * visible; it becomes the request's context pointer) and is freed only in
 * the MHD_OPTION_NOTIFY_COMPLETED callback, together with every handle it
 * holds (put, get, chunked decoder, buffers).
 */
#include "request.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <openssl/rand.h>

#include "base64.h"
#include "console.h"
#include "http_date.h"
#include "s3_names.h"
#include "srv_err.h"
#include "url.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- request helpers ------------------------------------------------------ */

/* The layers above the transport (request.h), or NULL for a request a
 * unit test built without them: no CORS, admin API or authorisation. */
static const struct strata_pipeline *pipe_of(const struct strata_req *r)
{
    return r->http ? r->http->pipe : NULL;
}

const char *strata_req_hdr(struct strata_req *r, const char *name)
{
    if (!r->conn) { /* a request built by a unit test */
        for (size_t i = 0; i < r->nhdrs; i++)
            if (strcasecmp(r->hdrs[i].name, name) == 0)
                return r->hdrs[i].value;
        return NULL;
    }
    const char *form = r->s3 ? pipe_of(r)->form_hdr(r, name) : NULL;
    if (form)
        return form; /* POST Object: the form's fields are its headers */
    if (r->nhdrs && !r->hdrs_overflow) {
        /* The headers collected for auth, in MHD's order: the first match
         * is the one MHD would return.  Comparing the first letter first
         * skips most strcasecmp calls (a GET looks up about twenty). */
        char c0 = (char)(name[0] | 0x20);
        for (size_t i = 0; i < r->nhdrs; i++)
            if ((r->hdrs[i].name[0] | 0x20) == c0 && strcasecmp(r->hdrs[i].name, name) == 0)
                return r->hdrs[i].value;
        return NULL;
    }
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *strata_req_query(struct strata_req *r, const char *name)
{
    for (int i = 0; i < r->nq; i++)
        if (strcmp(r->q[i].name, name) == 0)
            return r->q[i].value;
    return NULL;
}

const char *strata_req_user(const struct strata_req *r)
{
    return r->auth.cred ? r->auth.cred->access_key : "";
}

const char *strata_req_display_name(const struct strata_req *r)
{
    if (!r->auth.cred)
        return "";
    return r->auth.cred->display_name[0] ? r->auth.cred->display_name : r->auth.cred->access_key;
}

bool strata_req_version_answered(const struct strata_req *r, const char *version_id)
{
    return r->binfo.versioning != STRATA_VERSIONING_OFF && version_id[0] &&
           strcmp(version_id, "null") != 0;
}

void strata_req_send(struct strata_req *r, int status, struct strata_resp *out)
{
    STRATA_ASSERT(!r->responded);
    struct MHD_Response *resp = (struct MHD_Response *)out; /* response.c's handle */
    strata_resp_hdr(out, "x-amz-request-id", r->id);
    strata_resp_hdr(out, "x-amz-id-2", r->http->host_id);
    strata_resp_hdr(out, "Server", "Strata");
    if (!r->admin && !r->ops && pipe_of(r))
        pipe_of(r)->cors_resp_hdrs(r, out); /* a cross-origin request on a bucket with CORS */
    if (r->close_conn)
        strata_resp_hdr(out, "Connection", "close");
    if (r->on_worker) {
        /* Queued by the event thread when the connection resumes. */
        r->stash = resp;
        r->stash_status = status;
    } else {
        if (MHD_queue_response(r->conn, (unsigned)status, resp) != MHD_YES)
            strata_srv_log(STRATA_LOG_ERR, "req %s: could not queue the %d answer", r->id,
                           status);
        MHD_destroy_response(resp);
    }
    r->responded = true;
    r->status = status;
    r->t_resp_ns = now_ns();
}

/* The S3 XML error document of e into b (the one writer of it). */
static void error_xml(struct strata_req *r, enum s3_err e, int err, struct strata_sbuf *b)
{
    strata_sbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
    strata_sbuf_xml_elem(b, "Code", strata_s3_err_code(e));
    strata_sbuf_xml_elem(b, "Message", r->err_msg ? r->err_msg : strata_s3_err_detail(err, e));
    /* Signed for another region: the one to sign for (SDKs retry with it). */
    if (r->err_region && r->http->cfg.region)
        strata_sbuf_xml_elem(b, "Region", r->http->cfg.region);
    if (r->err_arg_name) {
        strata_sbuf_xml_elem(b, "ArgumentName", r->err_arg_name);
        strata_sbuf_xml_elem(b, "ArgumentValue", r->err_arg_value ? r->err_arg_value : "");
    }
    if (r->bucket)
        strata_sbuf_xml_elem(b, "BucketName", r->bucket);
    /* A key that is not UTF-8 (InvalidURI) cannot go into the XML text. */
    bool key_text = r->key && strata_s3_utf8_valid(r->key);
    if (key_text)
        strata_sbuf_xml_elem(b, "Key", r->key);
    strata_sbuf_xml_elem(b, "Resource", r->resource && (key_text || !r->key) ? r->resource
                                         : r->raw_path ? r->raw_path : "/");
    strata_sbuf_xml_elem(b, "RequestId", r->id);
    strata_sbuf_xml_elem(b, "HostId", r->http->host_id);
    strata_sbuf_puts(b, "</Error>");
}

void strata_req_error(struct strata_req *r, enum s3_err e, int err)
{
    const struct strata_pipeline *p = pipe_of(r);
    if (r->admin && p) {
        p->admin_error(r, e, err);
        return;
    }
    if (p)
        e = p->authz_missing_key(r, e);
    struct strata_sbuf b;
    strata_sbuf_init(&b, 64 * 1024);
    error_xml(r, e, err, &b);
    int status = strata_s3_err_status(e);
    struct strata_resp *resp;
    if (status == 304 || b.failed) {
        resp = strata_resp_empty();
    } else {
        size_t len;
        char *body = strata_sbuf_steal(&b, &len);
        resp = strata_resp_take(body, len);
        strata_resp_hdr(resp, "Content-Type", "application/xml");
    }
    strata_sbuf_fini(&b);
    if (r->err_hdr_name)
        strata_resp_hdr(resp, r->err_hdr_name, r->err_hdr_value);
    /* Every bucket of this server is in its region; SDKs read the header
     * of an error to find the region to sign for. */
    if (r->http->cfg.region && status >= 400)
        strata_resp_hdr(resp, "x-amz-bucket-region", r->http->cfg.region);
    if (r->err_delete_marker)
        strata_resp_hdr(resp, "x-amz-delete-marker", "true");
    if (e == S3E_SlowDown || e == S3E_ServiceUnavailable)
        strata_resp_hdr(resp, "Retry-After", "1");
    r->sent_err = e;
    if (status >= 500 && r->term == 0)
        r->term = (err == STRATA_EQUORUM || err == STRATA_ENOSPC || err == STRATA_EIO ||
                   err == STRATA_ECORRUPT) ? 'D' : (status == 500 ? 'I' : 0);
    if (status == 500)
        strata_srv_log(STRATA_LOG_ERR, "req %s %s /%s/%s: internal error (%s)", r->id, r->method,
                       r->bucket ? r->bucket : "", r->key ? r->key : "", strata_errname(err));
    strata_req_send(r, status, resp);
}

void strata_req_error_strata(struct strata_req *r, int err, enum s3_ctx ctx)
{
    strata_req_error(r, strata_s3_err_from_strata(err, ctx), err);
}

void strata_req_defer_error(struct strata_req *r, enum s3_err e, int err)
{
    if (r->err == S3E_NONE) {
        r->err = e;
        r->err_strata = err;
    }
}

/* ---- request lifecycle ---------------------------------------------------- */

/* Request ids: each thread takes a block of REQID_BLOCK numbers from the
 * server's counter and hands them out in order, so the ids stay unique
 * across threads while the shared counter's cache line is touched once per
 * block instead of once per request.  16 hex digits, as before. */
#define REQID_BLOCK 1024u

static void req_id(struct strata_http *s, char out[17])
{
    static __thread struct strata_http *owner;
    static __thread uint64_t next, end;
    if (owner != s || next == end) {
        next = atomic_fetch_add_explicit(&s->reqid_seq, REQID_BLOCK, memory_order_relaxed);
        end = next + REQID_BLOCK;
        owner = s;
    }
    static const char hex[] = "0123456789ABCDEF";
    uint64_t v = s->reqid_base + next++;
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = hex[v & 15];
    out[16] = '\0';
}

/* Requests of this event thread whose headers MHD has not handed to the
 * access handler yet: MHD may refuse one of them in between (a
 * Content-Length it cannot parse, see early_answer), and tells only its
 * logger.  MHD runs a connection's callbacks on the one thread that owns
 * it, so the list needs no lock. */
static __thread struct strata_req *pend_head;

static void pend_push(struct strata_req *r)
{
    r->pend_prev = NULL;
    r->pend_next = pend_head;
    if (pend_head)
        pend_head->pend_prev = r;
    pend_head = r;
    r->pend_list = &pend_head;
}

static void pend_unlink(struct strata_req *r)
{
    if (!r->pend_list)
        return;
    if (r->pend_prev)
        r->pend_prev->pend_next = r->pend_next;
    else
        *r->pend_list = r->pend_next;
    if (r->pend_next)
        r->pend_next->pend_prev = r->pend_prev;
    r->pend_next = r->pend_prev = NULL;
    r->pend_list = NULL;
}

static void *uri_log_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct strata_http *s = cls;
    /* The layers' state of the request (r->s3) follows it in the same
     * allocation, aligned for any type. */
    const size_t align = _Alignof(max_align_t);
    size_t head = (sizeof(struct strata_req) + align - 1) & ~(align - 1);
    size_t state = s->pipe ? s->pipe->state_size : 0;
    struct strata_req *r = calloc(1, head + state);
    if (!r)
        return NULL;
    if (state)
        r->s3 = (struct strata_s3_state *)((char *)r + head);
    r->http = s;
    r->srv = s->srv;
    r->conn = conn;
    r->t0_ns = now_ns();
    r->raw_uri = strdup(uri ? uri : "/");
    req_id(s, r->id);
    strata_sbuf_init(&r->body, STRATA_SRV_XML_BODY_MAX);
    pthread_mutex_init(&r->am, NULL);
    r->crash_slot = -1;
    pend_push(r);
    return r;
}

static void req_free(struct strata_req *r)
{
    struct strata_http *s = r->http;
    if (r->s3)
        s->pipe->state_fini(r); /* an open put aborted: nothing becomes visible */
    if (r->chunked)
        strata_chunked_destroy(r->chunked); /* gives its chunk buffer back */
    strata_body_budget_give(&s->body_budget, r->body_taken);
    EVP_MD_CTX_free(r->sha256);
    strata_sbuf_fini(&r->body);
    if (r->stash)
        MHD_destroy_response(r->stash);
    free(r->acc);
    free(r->jbuf);
    free(r->rd_buf);
    pthread_mutex_destroy(&r->am);
    free(r->raw_uri);
    free(r->raw_uri_copy);
    free(r->qbuf);
    free(r->bucket);
    free(r->key);
    free(r->resource);
    free(r);
}

static void completed_cb(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct strata_http *s = cls;
    struct strata_req *r = *req_cls;
    if (!r)
        return;
    pend_unlink(r);
    if (r->started) {
        strata_crash_unregister(r->crash_slot);
        strata_metrics_count(r->method, r->status, r->sent_err, r->bytes_in, r->bytes_out);
        uint64_t t1 = now_ns();
        strata_metrics_latency(r->ops ? "Ops" : r->route ? r->route->op : "Other",
                               (r->t_resp_ns ? r->t_resp_ns : t1) - r->t0_ns, t1 - r->t0_ns);
        if (strata_stages_on) {
            r->st[STRATA_ST_START] = r->t0_ns;
            r->st[STRATA_ST_ANSWER] = r->t_resp_ns;
            r->st[STRATA_ST_DONE] = t1;
            strata_stages_add(r->st, r->st_running);
        }
        strata_srv_access_log(r, toe);
        atomic_fetch_sub(&s->inflight, 1);
    }
    *req_cls = NULL;
    /* A job still running (a read-ahead, a body block) when the client
     * went away: it frees r when it ends. */
    pthread_mutex_lock(&r->am);
    bool busy = r->job_busy;
    r->orphan = busy;
    pthread_mutex_unlock(&r->am);
    if (!busy)
        req_free(r);
}

static enum MHD_Result collect_hdr(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct strata_req *r = cls;
    if (r->nhdrs == STRATA_SRV_HDRS_MAX) {
        r->hdrs_overflow = true;
        return MHD_NO;
    }
    r->hdrs[r->nhdrs].name = key;
    r->hdrs[r->nhdrs].value = value ? value : "";
    r->nhdrs++;
    return MHD_YES;
}

/* Splits the target into bucket/key (path or virtual-host style) and the
 * query.  The path is percent-decoded exactly once, here. */
static enum s3_err parse_target(struct strata_req *r)
{
    r->raw_uri_copy = strdup(r->raw_uri);
    if (!r->raw_uri_copy)
        return S3E_InternalError;
    char *q = strchr(r->raw_uri_copy, '?');
    if (q)
        *q++ = '\0';
    r->raw_path = r->raw_uri_copy;
    r->raw_query = q ? q : "";
    if (r->raw_path[0] != '/') {
        /* absolute-form target (RFC 7230 5.3.2, sent through proxies):
         * the path starts after the authority. */
        char *auth = strstr(r->raw_path, "://");
        char *slash = auth ? strchr(auth + 3, '/') : NULL;
        if (!slash)
            return S3E_InvalidURI;
        r->raw_path = slash;
    }
    r->qbuf = strdup(r->raw_query);
    r->nq = strata_s3_query_parse(r->qbuf, r->q, STRATA_SRV_QPARAMS_MAX);
    if (r->nq < 0)
        return S3E_InvalidURI;

    char *path = strdup(r->raw_path);
    if (!path)
        return S3E_InternalError;
    if (strata_url_decode_str(path, false) != 0) {
        free(path);
        return S3E_InvalidURI;
    }
    r->resource = path;

    const char *host_bucket = NULL;
    size_t hb_len = 0;
    const char *dom = r->http->cfg.domain;
    const char *host = strata_req_hdr(r, "Host");
    if (dom && *dom && host) {
        size_t hlen = strcspn(host, ":"), dlen = strlen(dom);
        if (hlen > dlen + 1 && host[hlen - dlen - 1] == '.' &&
            strncasecmp(host + hlen - dlen, dom, dlen) == 0) {
            host_bucket = host;
            hb_len = hlen - dlen - 1;
        }
    }
    const char *p = path + 1;
    if (host_bucket) {
        r->host_bucket = true;
        r->bucket = strndup(host_bucket, hb_len);
        if (*p)
            r->key = strdup(p);
    } else if (*p) {
        const char *slash = strchr(p, '/');
        r->bucket = slash ? strndup(p, (size_t)(slash - p)) : strdup(p);
        if (slash && slash[1])
            r->key = strdup(slash + 1);
    }
    if (r->bucket && !*r->bucket)
        return S3E_InvalidURI;
    r->level = r->key ? STRATA_LVL_OBJECT : r->bucket ? STRATA_LVL_BUCKET : STRATA_LVL_SERVICE;
    return S3E_NONE;
}

/* GET /metrics with "Authorization: Bearer ..." while --metrics-token-file
 * is set: the token decides (ops_endpoint), not SigV4. */
static bool metrics_bearer(struct strata_req *r)
{
    const char *a = strata_req_hdr(r, "Authorization");
    return r->http->metrics_token && a && strncmp(a, "Bearer ", 7) == 0 &&
           strcmp(r->raw_path, "/metrics") == 0;
}

/* /health/live, /health/ready, /metrics and the console: no SigV4.  True
 * when the request is one of them: unsigned, query-less GETs and HEADs (a
 * bucket named "metrics" stays reachable by every signed S3 request), or
 * /metrics with a bearer token. */
static bool ops_endpoint_is(struct strata_req *r)
{
    if ((strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) || r->raw_query[0])
        return false;
    if (strata_req_hdr(r, "Authorization"))
        return metrics_bearer(r);
    /* /metrics is anonymous only with --metrics-public; otherwise it is an
     * ordinary S3 path (refused unsigned) and admins read the admin API's
     * metrics endpoint. */
    return strcmp(r->raw_path, "/health/live") == 0 ||
           strcmp(r->raw_path, "/health/ready") == 0 || strata_console_is(r) ||
           (r->http->cfg.metrics_public && strcmp(r->raw_path, "/metrics") == 0);
}

/* Answers an ops request (see ops_endpoint_is). */
static void ops_endpoint(struct strata_req *r)
{
    if (strcmp(r->raw_path, "/health/live") == 0 || strcmp(r->raw_path, "/health/ready") == 0) {
        bool ready = r->http->meta != NULL;
        char *b = strdup(ready ? "OK\n" : "not ready\n");
        strata_req_send_body(r, ready ? 200 : 503, "text/plain", b, strlen(b));
        return;
    }
    if (strata_console_is(r)) {
        strata_console_serve(r);
        return;
    }
    /* /metrics: public, or a bearer token that must match. */
    if (strata_req_hdr(r, "Authorization") &&
        !strata_metrics_bearer_ok(r->http->metrics_token, strata_req_hdr(r, "Authorization"))) {
        r->err_msg = "The bearer token does not match --metrics-token-file.";
        strata_req_error(r, S3E_AccessDenied, 0);
        return;
    }
    size_t len;
    char *body = strata_metrics_scrape(r->http, r->srv, &len);
    if (!body) {
        strata_req_error(r, S3E_InternalError, 0);
        return;
    }
    strata_req_send_body(r, 200, "text/plain; version=0.0.4", body, len);
}

static bool is_streaming(int mode)
{
    return mode == STRATA_PAYLOAD_STREAMING_SIGNED ||
           mode == STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER ||
           mode == STRATA_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
}

static enum s3_err body_setup(struct strata_req *r);

/* First call: everything up to (not including) the body.  Returns the S3
 * error to answer now, or S3E_NONE. */
static enum s3_err setup(struct strata_req *r, int *serr)
{
    enum s3_err e;
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_hdr, r);
    if (r->hdrs_overflow)
        return S3E_RequestHeaderSectionTooLarge;

    struct strata_auth_req ar = {
        .method = r->method,
        .raw_path = r->raw_path,
        .raw_query = r->raw_query,
        .hdrs = r->hdrs,
        .nhdrs = r->nhdrs,
        .now = time(NULL),
        .host_bucket = r->host_bucket ? r->bucket : NULL,
        .host_bucket_len = r->host_bucket && r->bucket ? strlen(r->bucket) : 0,
        .region = r->http->cfg.region,
    };
    if (strcmp(r->method, "OPTIONS") == 0) {
        /* A CORS preflight is never authenticated: browsers send it to the
         * URL of the request it announces, presigned query included, but
         * without that request's method or headers (s3_cors.c). */
        memset(&r->auth, 0, sizeof(r->auth));
        r->auth.anonymous = true;
        r->auth.payload_mode = STRATA_PAYLOAD_UNSIGNED;
    } else {
        e = strata_s3_err_from_auth(strata_auth_verify(r->http->creds, &ar, &r->auth));
        if (e) {
            r->err_msg = r->auth.err_msg;
            r->err_region = r->auth.wrong_region;
            return e;
        }
    }
    /* Anonymous requests reach authorisation only against a bucket,
     * whose policy may allow them (authz.c). */
    if (!r->auth.cred && !r->bucket)
        return S3E_AccessDenied;
    if (r->admin) {
        e = r->http->pipe->admin_route(r); /* no bucket: only the body part below applies */
        return e ? e : body_setup(r);
    }

    if (r->key && strlen(r->key) > STRATA_KEY_MAX)
        return S3E_KeyTooLongError;
    /* A key that is not UTF-8 could never be listed as XML: refused as AWS
     * does (InvalidURI) wherever a key is created.  Reads and deletes are
     * let through so keys stored before this check can still be removed. */
    if (r->key && (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0) &&
        !strata_s3_utf8_valid(r->key))
        return S3E_InvalidURI;
    bool notimpl = false;
    r->route = r->http->pipe->route_find(r, &notimpl);
    if (!r->route)
        return notimpl ? S3E_NotImplemented : S3E_MethodNotAllowed;

    if (!r->auth.cred && (r->route->flags & STRATA_RT_NO_BUCKET))
        return S3E_AccessDenied;
    if (r->bucket && !(r->route->flags & STRATA_RT_NO_BUCKET)) {
        int rc = r->http->pipe->bucket_get(r->http->meta, r->bucket, &r->binfo);
        if (rc) {
            *serr = rc;
            return strata_s3_err_from_strata(rc, S3CTX_BUCKET);
        }
        enum strata_auth_err ae = r->http->pipe->authz_request(r, serr);
        if (ae == STRATA_AUTH_STORE)
            return strata_s3_err_from_strata(*serr, S3CTX_BUCKET);
        e = strata_s3_err_from_auth(ae);
        if (e)
            return e;
    }
    const char *vid = r->key ? strata_req_query(r, "versionId") : NULL;
    if (vid && !strata_meta_version_id_valid(vid)) {
        r->err_msg = "Invalid version id specified";
        return S3E_InvalidArgument;
    }
    return body_setup(r);
}

/* The route is known: how its body is read (buffered, chunk-decoded,
 * hashed), and the route's begin hook. */
static enum s3_err body_setup(struct strata_req *r)
{
    /* Bodies that are buffered: refuse at once, before the client sends
     * anything, while the budget is spent (see body_budget.h). */
    bool buffers = r->auth.payload_mode == STRATA_PAYLOAD_STREAMING_SIGNED ||
                   r->auth.payload_mode == STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER ||
                   (r->route->flags & STRATA_RT_BODY_XML);
    if (buffers && strata_body_budget_full(&r->http->body_budget))
        return S3E_SlowDown;
    if (is_streaming(r->auth.payload_mode)) {
        if (strata_chunked_create(&r->auth, &r->chunked) != 0)
            return S3E_InternalError;
        strata_chunked_set_budget(r->chunked, &r->http->body_budget);
    } else if (r->auth.payload_mode == STRATA_PAYLOAD_SIGNED &&
               (r->route->flags & STRATA_RT_BODY_XML)) {
        r->sha256 = EVP_MD_CTX_new();
        if (!r->sha256 || EVP_DigestInit_ex(r->sha256, EVP_sha256(), NULL) != 1)
            return S3E_InternalError;
    }
    if (r->route->begin && r->route->begin(r) != 0)
        return S3E_NONE; /* begin answered */
    return S3E_NONE;
}

/* Decoded body bytes to the route's sink. */
static int body_sink(void *ud, const void *buf, size_t len)
{
    struct strata_req *r = ud;
    if (r->route->flags & STRATA_RT_BODY_STREAM)
        return r->route->body_cb(r, buf, len);
    if (r->route->flags & STRATA_RT_BODY_XML) {
        if (!strata_body_budget_take(&r->http->body_budget, len)) {
            strata_req_defer_error(r, S3E_SlowDown, 0);
            return -1;
        }
        r->body_taken += len;
        if (strata_sbuf_append(&r->body, buf, len) != 0) {
            strata_req_defer_error(r, S3E_MaxMessageLengthExceeded, 0);
            return -1;
        }
    }
    return 0; /* bodies of other requests are read and dropped */
}

static void feed_body(struct strata_req *r, const char *data, size_t len)
{
    if (r->err != S3E_NONE || r->responded)
        return; /* drain: the error is answered at the end */
    if (r->chunked) {
        enum strata_auth_err e = STRATA_AUTH_OK;
        if (strata_chunked_feed(r->chunked, data, len, body_sink, r, &e) != 0 &&
            e != STRATA_AUTH_OK)
            strata_req_defer_error(r, strata_s3_err_from_auth(e), 0);
        return;
    }
    if (r->sha256)
        EVP_DigestUpdate(r->sha256, data, len);
    body_sink(r, data, len);
}

/* One x-amz-checksum-* value (b64, NULL: absent or unknown algo) checked
 * against the buffered body. */
static enum s3_err body_cksum_check(const struct strata_req *r, int algo, const char *b64)
{
    uint8_t want[STRATA_CKSUM_RAW_MAX], got[STRATA_CKSUM_RAW_MAX];
    int n = b64 && algo ? strata_b64_decode(b64, want, sizeof(want)) : -1;
    if (n < 0 || (size_t)n != strata_s3_cksum_len(algo))
        return S3E_InvalidRequest;
    if (strata_s3_cksum_compute(algo, r->body.data ? r->body.data : "", r->body.len, got) ||
        memcmp(want, got, (size_t)n) != 0)
        return S3E_BadDigest;
    return S3E_NONE;
}

/* Buffered (XML) bodies: Content-MD5 and x-amz-checksum-* (header or
 * trailer) are verified whenever present; *have says whether any was. */
static enum s3_err xml_body_digests(struct strata_req *r, bool *have_out)
{
    const char *md5 = strata_req_hdr(r, "Content-MD5");
    bool have = false;
    if (md5) {
        uint8_t want[16], got[16];
        unsigned n = 0;
        if (strata_b64_decode(md5, want, sizeof(want)) != 16)
            return S3E_InvalidDigest;
        EVP_Digest(r->body.data ? r->body.data : "", r->body.len, got, &n, EVP_md5(), NULL);
        if (memcmp(want, got, 16) != 0)
            return S3E_BadDigest;
        have = true;
    }
    for (size_t i = 0; i < r->nhdrs; i++) {
        int algo = strata_s3_cksum_from_hdr(r->hdrs[i].name);
        if (!algo)
            continue;
        enum s3_err e = body_cksum_check(r, algo, r->hdrs[i].value);
        if (e)
            return e;
        have = true;
    }
    if (!have && r->chunked && r->auth.trailer[0]) {
        int algo = strata_s3_cksum_from_hdr(r->auth.trailer);
        const char *v = strata_chunked_trailer(r->chunked, r->auth.trailer);
        enum s3_err e = body_cksum_check(r, algo, v);
        if (e)
            return e;
        have = true;
    }
    *have_out = have;
    return S3E_NONE;
}

/* End of body: framing and digests of buffered bodies. */
static void finish_body(struct strata_req *r)
{
    if (r->err != S3E_NONE)
        return;
    if (r->chunked) {
        enum strata_auth_err e = STRATA_AUTH_OK;
        if (strata_chunked_finish(r->chunked, &e) != 0) {
            strata_req_defer_error(r, e ? strata_s3_err_from_auth(e) : S3E_IncompleteBody, 0);
            return;
        }
        if (r->auth.decoded_length != UINT64_MAX &&
            strata_chunked_decoded_bytes(r->chunked) != r->auth.decoded_length)
            strata_req_defer_error(r, S3E_IncompleteBody, 0);
    } else if (r->sha256) {
        uint8_t md[32];
        unsigned mdlen = 0;
        EVP_DigestFinal_ex(r->sha256, md, &mdlen);
        if (memcmp(md, r->auth.payload_sha256, 32) != 0)
            strata_req_defer_error(r, S3E_XAmzContentSHA256Mismatch, 0);
    }
    if (r->err == S3E_NONE && (r->route->flags & STRATA_RT_BODY_XML)) {
        enum s3_err e = xml_body_digests(r, &r->body_digest);
        if (e)
            strata_req_defer_error(r, e, 0);
    }
}


/* ---- work on the storage workers ------------------------------------------ */

enum { JOB_FEED = 1, JOB_FINAL, JOB_READ };

/* Request bodies go to the worker in blocks of this size (two per PUT).
 * Each block is one hand-off to a worker (a wake-up) and often a suspend
 * and resume of the connection: 2 MiB rather than 1 MiB took a signed
 * 64 MiB PUT from about 590 to 470 context switches (tests/bench/README.md). */
#define BODY_BLOCK (2u << 20)

/* After the body: digests, then the handler, or the deferred error. */
static void final_steps(struct strata_req *r)
{
    if (!r->body_finished) {
        r->body_finished = true;
        finish_body(r);
    }
    if (r->err != S3E_NONE) {
        strata_req_error(r, r->err, r->err_strata);
        return;
    }
    r->route->run(r);
    if (!r->responded && !r->rerun)
        strata_req_error(r, S3E_InternalError, STRATA_EINTERNAL);
}

static void job_fn(struct strata_job *j)
{
    struct strata_req *r = (struct strata_req *)((char *)j - offsetof(struct strata_req, job));
    int rd_rc = 0;
    const uint8_t *rd_ptr = NULL;
    size_t rd_n = 0;
    switch (r->job_kind) {
    case JOB_FEED:
        feed_body(r, (const char *)r->jbuf, r->jbuf_len);
        r->jbuf_len = 0;
        break;
    case JOB_FINAL:
        r->on_worker = true;
        r->rerun = false;
        if (strata_stages_on && !r->st[STRATA_ST_RUN]) {
            r->st[STRATA_ST_RUN] = now_ns();
            r->st_running = strata_stages_run_begin();
        }
        if (r->acc_len)
            feed_body(r, (const char *)r->acc, r->acc_len);
        r->acc_len = 0;
        final_steps(r);
        if (strata_stages_on && r->st_running && !r->rerun)
            strata_stages_run_end();
        r->on_worker = false;
        break;
    case JOB_READ:
        if (r->stream_peek) {
            rd_rc = r->stream_peek(r, r->rd_off, r->rd_len, &rd_ptr, &rd_n);
            if (!rd_rc && rd_n == 0)
                rd_rc = STRATA_EINTERNAL; /* short of stream_len: never loop */
        } else {
            rd_rc = r->stream_read(r, r->rd_off, r->rd_buf, r->rd_len);
            rd_ptr = r->rd_buf;
            rd_n = r->rd_len;
        }
        break;
    }
    pthread_mutex_lock(&r->am);
    r->job_busy = false;
    if (r->job_kind == JOB_READ) {
        r->rd_rc = rd_rc;
        r->rd_ptr = rd_ptr;
        r->rd_len = rd_n;
        r->rd_ready = true;
    }
    if (r->orphan) {
        pthread_mutex_unlock(&r->am);
        req_free(r);
        return;
    }
    if (r->waiting) {
        r->waiting = false;
        MHD_resume_connection(r->conn);
    }
    pthread_mutex_unlock(&r->am);
}

/* Under r->am, on the event thread: mark a job of this kind started;
 * with suspend, the connection waits for its end. */
static void job_mark(struct strata_req *r, int kind, bool suspend)
{
    r->job_kind = kind;
    r->job_busy = true;
    r->job.fn = job_fn;
    if (suspend) {
        r->waiting = true;
        MHD_suspend_connection(r->conn);
    }
}

/* After job_mark, with r->am released.  A stopping pool runs it here. */
static void job_go(struct strata_req *r)
{
    if (strata_pool_submit(r->http->pool, r->http->reqid_base ^ (uint64_t)(uintptr_t)r, &r->job))
        job_fn(&r->job);
}

/* Hand the filled block to the worker if it is idle (true).  Otherwise
 * false, and with suspend the connection waits for the worker. */
static bool body_flush(struct strata_req *r, bool suspend)
{
    pthread_mutex_lock(&r->am);
    if (r->job_busy) {
        if (suspend) {
            r->waiting = true;
            MHD_suspend_connection(r->conn);
        }
        pthread_mutex_unlock(&r->am);
        return false;
    }
    uint8_t *t = r->jbuf;
    r->jbuf = r->acc;
    r->jbuf_len = r->acc_len;
    r->acc = t;
    r->acc_len = 0;
    job_mark(r, JOB_FEED, false);
    pthread_mutex_unlock(&r->am);
    job_go(r);
    return true;
}

/* Body bytes of a streamed route: copied into the block being filled
 * while the worker stores the previous one.  Returns the bytes taken;
 * fewer than len means the connection is suspended until the worker
 * catches up (MHD then offers the rest again: it must never be left with
 * bytes neither taken nor waited for). */
static size_t body_accept(struct strata_req *r, const char *data, size_t len)
{
    if (r->body_drop)
        return len;
    size_t done = 0;
    while (done < len) {
        if (r->acc_len == r->acc_cap && !body_flush(r, true))
            break;
        if (!r->acc) {
            r->acc = malloc(r->acc_cap);
            if (!r->acc) {
                /* Drain the rest: the error is answered at the end. */
                pthread_mutex_lock(&r->am);
                strata_req_defer_error(r, S3E_InternalError, STRATA_ENOMEM);
                pthread_mutex_unlock(&r->am);
                r->body_drop = true;
                return len;
            }
        }
        size_t n = len - done < r->acc_cap - r->acc_len ? len - done : r->acc_cap - r->acc_len;
        memcpy(r->acc + r->acc_len, data + done, n);
        r->acc_len += n;
        done += n;
        if (r->acc_len == r->acc_cap)
            body_flush(r, false);
    }
    return done;
}

/* Set the body up for the workers (streamed routes, after begin). */
static void body_pool_setup(struct strata_req *r)
{
    if (!r->http->pool || !(r->route->flags & STRATA_RT_BODY_STREAM) || r->responded)
        return;
    const char *cl = strata_req_hdr(r, "Content-Length");
    unsigned long long n = cl ? strtoull(cl, NULL, 10) : BODY_BLOCK;
    r->acc_cap = n > 0 && n < BODY_BLOCK ? (size_t)n : BODY_BLOCK;
    r->pooled_body = true;
}

/*
 * A body that cannot be completed: the client must see the connection end
 * now.  MHD (with MHD_USE_TURBO) closes the socket only when it next looks
 * at the connection, which after a resume can be the connection timeout
 * later, so the client would wait that long for the rest of the body.
 */
static ssize_t stream_abort(struct strata_req *r)
{
    const union MHD_ConnectionInfo *ci =
        r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    if (ci)
        shutdown(ci->connect_fd, SHUT_RDWR);
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

static ssize_t stream_sync_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct strata_req *r = cls;
    if (pos >= r->stream_len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = r->stream_len - pos < max ? (size_t)(r->stream_len - pos) : max;
    if (r->stream_read(r, pos, buf, n))
        return stream_abort(r);
    r->bytes_out += n;
    return (ssize_t)n;
}

/*
 * Streamed answers through the workers: MHD asks for the bytes at pos;
 * the block holding them was read ahead (copy it out and start reading the
 * next one while MHD sends), or the connection is suspended until the
 * worker has read it.
 */
static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct strata_req *r = cls;
    if (pos >= r->stream_len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (!r->rd_buf && !r->stream_peek) {
        r->rd_buf = malloc(r->rd_cap);
        if (!r->rd_buf)
            return stream_abort(r);
    }
    pthread_mutex_lock(&r->am);
    /* A failed read ends the body whatever its range: a failed peek leaves
     * no range (rd_len 0), and asking again would loop on the same error. */
    if (!r->job_busy && r->rd_ready && r->rd_rc) {
        pthread_mutex_unlock(&r->am);
        return stream_abort(r);
    }
    if (!r->job_busy && r->rd_ready && pos >= r->rd_off && pos < r->rd_off + r->rd_len) {
        size_t n = (size_t)(r->rd_off + r->rd_len - pos);
        if (n > max)
            n = max;
        memcpy(buf, r->rd_ptr + (pos - r->rd_off), n);
        r->bytes_out += n;
        bool ahead = pos + n == r->rd_off + r->rd_len && pos + n < r->stream_len;
        if (ahead) {
            r->rd_off = pos + n;
            r->rd_len = r->stream_len - r->rd_off < r->rd_cap ? (size_t)(r->stream_len - r->rd_off)
                                                                : r->rd_cap;
            r->rd_ready = false;
            job_mark(r, JOB_READ, false);
        }
        pthread_mutex_unlock(&r->am);
        if (ahead)
            job_go(r);
        return (ssize_t)n;
    }
    if (r->job_busy) { /* the read-ahead is still on its way */
        r->waiting = true;
        MHD_suspend_connection(r->conn);
        pthread_mutex_unlock(&r->am);
        return 0;
    }
    r->rd_off = pos;
    r->rd_len = r->stream_len - pos < r->rd_cap ? (size_t)(r->stream_len - pos) : r->rd_cap;
    r->rd_ready = false;
    job_mark(r, JOB_READ, true);
    pthread_mutex_unlock(&r->am);
    job_go(r);
    return 0;
}

struct strata_resp *strata_req_stream_response(struct strata_req *r, uint64_t len, size_t block)
{
    r->stream_len = len;
    r->rd_cap = len < block ? (size_t)len : block;
    return (struct strata_resp *)MHD_create_response_from_callback(
        len, block, !r->http->pool || !r->conn ? stream_sync_cb : stream_cb, r, NULL);
}

void strata_req_client_ip(struct strata_req *r, char *out, size_t len)
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  (socklen_t)len);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                  (socklen_t)len);
}

/* ---- message framing (RFC 9112 section 6) --------------------------------- */

struct framing {
    uint64_t cl;      /* the Content-Length every value agrees on */
    unsigned ncl;     /* Content-Length values seen (list elements count) */
    unsigned nte;     /* Transfer-Encoding fields */
    bool cl_bad;      /* two different lengths, or one that is not a number */
    bool te_chunked;  /* the only Transfer-Encoding is exactly "chunked" */
};

/* One Content-Length field: a comma list whose elements must all be the
 * same decimal number as every other value seen. */
static void framing_cl(struct framing *f, const char *v)
{
    for (;;) {
        v += strspn(v, " \t");
        size_t n = strspn(v, "0123456789");
        const char *end = v + n;
        end += strspn(end, " \t");
        if (n == 0 || n > 19 || (*end && *end != ',')) {
            f->cl_bad = true;
            return;
        }
        uint64_t x = strtoull(v, NULL, 10);
        if (f->ncl++ && x != f->cl)
            f->cl_bad = true;
        f->cl = x;
        if (!*end)
            return;
        v = end + 1;
    }
}

static enum MHD_Result framing_hdr(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct framing *f = cls;
    const char *v = value ? value : "";
    if (strcasecmp(key, "Content-Length") == 0) {
        framing_cl(f, v);
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        f->nte++;
        v += strspn(v, " \t");
        size_t n = strcspn(v, " \t");
        f->te_chunked = n == 7 && strncasecmp(v, "chunked", 7) == 0 && !v[n + strspn(v + n, " \t")];
    }
    return MHD_YES;
}

/*
 * How the body is delimited, checked before anything else: libmicrohttpd
 * takes the first Content-Length, and reads a body of unknown coding until
 * the client closes.  Conflicting lengths would let the rest of a body be
 * read as the next request on the connection (request smuggling), so they
 * are refused; identical duplicates are one length (RFC 9112 6.3).  Both
 * Transfer-Encoding and Content-Length is refused too rather than letting
 * chunked win, and only the "chunked" coding is implemented.  Every refusal
 * closes the connection: its remaining bytes cannot be trusted.
 */
static enum s3_err framing_check(struct strata_req *r)
{
    struct framing f = {0};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, framing_hdr, &f);
    if (f.nte == 0 && !f.cl_bad)
        return S3E_NONE;
    r->close_conn = true;
    if (f.cl_bad || (f.nte && f.ncl))
        return S3E_InvalidRequest;
    if (f.nte > 1)
        return S3E_InvalidRequest; /* "chunked" twice, or codings split over fields */
    if (!f.te_chunked)
        return S3E_NotImplemented;
    r->close_conn = false;
    return S3E_NONE;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
    struct strata_http *s = cls;
    struct strata_req *r = *req_cls;
    if (!r)
        return MHD_NO; /* out of memory at the request line: drop */
    if (!r->started) {
        pend_unlink(r);
        r->started = true;
        r->method = method;
        r->crash_slot = strata_crash_register(r);
        unsigned n = atomic_fetch_add(&s->inflight, 1) + 1;
        enum s3_err fe = framing_check(r);
        if (fe != S3E_NONE) {
            strata_req_error(r, fe, 0);
            return MHD_YES;
        }
        if (n > s->cfg.max_inflight) {
            strata_metrics_inflight_rejected();
            strata_req_error(r, S3E_SlowDown, 0);
            return MHD_YES;
        }
        int serr = 0;
        enum s3_err e = r->raw_uri ? parse_target(r) : S3E_InternalError;
        /* Answered on the final call: answering before MHD has seen the
         * whole request makes it close the connection. */
        if (e == S3E_NONE && ops_endpoint_is(r)) {
            r->ops = true;
            STRATA_FREE(r->bucket); /* not a bucket: keep it out of the logs */
            STRATA_FREE(r->key);
            return MHD_YES;
        }
        if (e == S3E_NONE && r->http->pipe->admin_path(r->raw_path)) {
            r->admin = true;
            STRATA_FREE(r->bucket); /* not a bucket: keep it out of the logs */
            STRATA_FREE(r->key);
        }
        if (e == S3E_NONE)
            e = setup(r, &serr);
        if (e != S3E_NONE && !r->responded)
            strata_req_error(r, e, serr);
        if (!r->responded && r->route)
            body_pool_setup(r);
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (r->pooled_body && !r->responded) {
            size_t n = body_accept(r, upload_data, *upload_data_size);
            r->bytes_in += n;
            *upload_data_size -= n;
            return MHD_YES;
        }
        r->bytes_in += *upload_data_size;
        feed_body(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->stash) { /* the worker's answer */
        if (strata_stages_on)
            r->st[STRATA_ST_QUEUED] = now_ns();
        if (MHD_queue_response(conn, (unsigned)r->stash_status, r->stash) != MHD_YES)
            strata_srv_log(STRATA_LOG_ERR, "req %s: could not queue the %d answer", r->id,
                           r->stash_status);
        MHD_destroy_response(r->stash);
        r->stash = NULL;
        return MHD_YES;
    }
    if (r->responded)
        return MHD_YES;
    if (r->ops) {
        ops_endpoint(r);
        return MHD_YES;
    }
    if (s->pool && (r->pooled_body || !(r->route->flags & STRATA_RT_IN_PLACE))) {
        if (strata_stages_on && !r->st[STRATA_ST_BODY])
            r->st[STRATA_ST_BODY] = now_ns();
        pthread_mutex_lock(&r->am);
        if (r->job_busy) { /* the last body block is still being stored */
            r->waiting = true;
            MHD_suspend_connection(conn);
            pthread_mutex_unlock(&r->am);
            return MHD_YES;
        }
        job_mark(r, JOB_FINAL, true);
        pthread_mutex_unlock(&r->am);
        job_go(r);
        return MHD_YES;
    }
    final_steps(r);
    if (r->rerun && !r->responded) {
        pthread_mutex_lock(&r->am);
        job_mark(r, JOB_FINAL, true);
        pthread_mutex_unlock(&r->am);
        job_go(r);
    }
    return MHD_YES;
}

/*
 * A Content-Length libmicrohttpd cannot parse (negative, not a number,
 * over 2^64) is refused by MHD itself, in parse_connection_headers: it
 * queues its own HTML 400 (413 for the overflow) and never calls the
 * access handler; no callback sees the connection in between.  Its logger
 * is called right before, on the connection's thread, so the request is
 * found here among the thread's pending ones (the one whose Content-Length
 * MHD's parser refuses) and given the S3 XML error on the socket itself
 * (through the connection's GnuTLS session under TLS, then its
 * close_notify); the write side is then shut, so MHD's own answer goes
 * nowhere (its send fails and it closes the connection).
 */

/* All of p on the connection: 0, or -1.  The socket is non-blocking, but
 * its send buffer is empty (MHD reads the next request only after the
 * previous answer has gone out whole), so a few KiB go at once. */
static int early_send(struct strata_http *s, struct MHD_Connection *conn, int fd, const char *p,
                      size_t n)
{
    if (!s->cfg.tls_cert)
        return send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n ? 0 : -1;
    const union MHD_ConnectionInfo *ti =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t ts = ti ? (gnutls_session_t)ti->tls_session : NULL;
    for (int tries = 0; ts && n && tries < 8;) {
        ssize_t w = gnutls_record_send(ts, p, n);
        if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) {
            tries++;
            continue;
        }
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    if (!ts || n)
        return -1;
    (void)gnutls_bye(ts, GNUTLS_SHUT_WR); /* close_notify: the answer is whole */
    return 0;
}

/* 0: a length MHD takes; 1: not a number (MHD's 400); 2: digits beyond
 * 2^64 - 1 (MHD's 413).  MHD's rule: only digits, at least one. */
static int cl_refused(const char *v)
{
    size_t n = strspn(v, "0123456789");
    if (n == 0 || v[n])
        return 1;
    errno = 0;
    (void)strtoull(v, NULL, 10);
    return errno == ERANGE ? 2 : 0;
}

static void early_answer(struct strata_http *s)
{
    struct strata_req *r = pend_head;
    int why = 0;
    for (; r; r = r->pend_next) {
        const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
        /* With Transfer-Encoding MHD does not look at Content-Length. */
        if (cl && !MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Transfer-Encoding") &&
            (why = cl_refused(cl)) != 0)
            break;
    }
    const union MHD_ConnectionInfo *ci =
        r ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    if (!ci)
        return;
    pend_unlink(r);
    r->started = true; /* completed_cb logs and counts it */
    r->method = "-";   /* MHD does not tell the method before the access handler */
    atomic_fetch_add(&s->inflight, 1);
    r->close_conn = true;
    (void)parse_target(r); /* the error names what could be parsed */
    enum s3_err e = why == 2 ? S3E_EntityTooLarge : S3E_InvalidArgument;
    r->err_msg = why == 2 ? "Your proposed upload exceeds the maximum allowed object size."
                          : "The Content-Length header must be a non-negative decimal number.";
    struct strata_sbuf b, h;
    strata_sbuf_init(&b, 64 * 1024);
    strata_sbuf_init(&h, 4096);
    error_xml(r, e, 0, &b);
    char date[40];
    strata_http_date_format(time(NULL), date, sizeof(date));
    strata_sbuf_printf(&h,
                       "HTTP/1.1 %d Bad Request\r\nDate: %s\r\n"
                       "Content-Type: application/xml\r\nContent-Length: %zu\r\n"
                       "x-amz-request-id: %s\r\nx-amz-id-2: %s\r\n"
                       "x-amz-bucket-region: %s\r\nServer: Strata\r\nConnection: close\r\n\r\n",
                       strata_s3_err_status(e), date, b.len, r->id, s->host_id,
                       s->cfg.region ? s->cfg.region : "us-east-1");
    strata_sbuf_append(&h, b.data, b.len);
    if (!h.failed && !b.failed && early_send(s, r->conn, ci->connect_fd, h.data, h.len) == 0) {
        r->status = strata_s3_err_status(e);
        r->sent_err = e;
        r->bytes_out = b.len;
    }
    shutdown(ci->connect_fd, SHUT_WR);
    r->t_resp_ns = now_ns();
    strata_sbuf_fini(&b);
    strata_sbuf_fini(&h);
}

static void mhd_log_cb(void *cls, const char *fmt, va_list ap)
{
    /* MHD 0.9.75's words before its own Content-Length refusals. */
    if (strncmp(fmt, "Failed to parse `Content-Length' header", 39) == 0 ||
        strncmp(fmt, "Too large value of 'Content-Length' header", 42) == 0)
        early_answer(cls);
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    strata_srv_log(STRATA_LOG_WARN, "http: %s", line);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct strata_sbuf b;
    strata_sbuf_init(&b, 1u << 20);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        strata_sbuf_append(&b, buf, n);
    fclose(f);
    if (b.failed) {
        strata_sbuf_fini(&b);
        return NULL;
    }
    size_t len;
    return strata_sbuf_steal(&b, &len);
}

int strata_http_start(struct strata_http *s)
{
    if (!s->pipe) {
        strata_srv_log(STRATA_LOG_ERR, "no request pipeline: the transport has nothing to serve");
        return -1;
    }
    strata_stages_init();
    char host[256];
    const char *colon = strrchr(s->cfg.address, ':');
    if (!colon || (size_t)(colon - s->cfg.address) >= sizeof(host)) {
        strata_srv_log(STRATA_LOG_ERR, "bad --address %s (want HOST:PORT)", s->cfg.address);
        return -1;
    }
    memcpy(host, s->cfg.address, (size_t)(colon - s->cfg.address));
    host[colon - s->cfg.address] = '\0';
    long port = strtol(colon + 1, NULL, 10);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (port <= 0 || port > 65535 || inet_pton(AF_INET, host[0] ? host : "0.0.0.0",
                                               &sin.sin_addr) != 1) {
        strata_srv_log(STRATA_LOG_ERR, "bad --address %s (want IPv4:PORT)", s->cfg.address);
        return -1;
    }
    uint8_t rnd[8];
    RAND_bytes(rnd, sizeof(rnd));
    memcpy(&s->reqid_base, rnd, sizeof(rnd));
    s->reqid_base &= 0x0fffffffffffffffull; /* room for the counter without wrapping */
    /* x-amz-id-2 / HostId: opaque and random per start, like AWS's token;
     * it must not leak host facts such as the PID. */
    uint8_t hid[24];
    RAND_bytes(hid, sizeof(hid));
    strata_b64_encode(hid, sizeof(hid), s->host_id, sizeof(s->host_id));
    atomic_store(&s->inflight, 0);
    atomic_store(&s->body_budget.used, 0);
    s->pipe->admin_init(s->srv);
    s->body_budget.max = s->cfg.body_memory;

    /* Event threads (one per core by default) with suspend/resume; what
     * may wait on a drive goes to the storage workers (see the top of the
     * file, and server/README.md "Threads" for the measurements). */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nthreads = s->cfg.threads ? s->cfg.threads : ncpu > 0 ? (unsigned)ncpu : 1;
    unsigned nworkers = s->cfg.workers ? s->cfg.workers : STRATA_SRV_WORKERS_DEFAULT;
    if (strata_pool_start(nthreads, nworkers, &s->pool) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot start %u storage workers", nworkers);
        return -1;
    }
    unsigned flags = MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_TURBO |
                     MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    if (s->cfg.tls_cert) {
        s->tls_cert_pem = slurp(s->cfg.tls_cert);
        s->tls_key_pem = slurp(s->cfg.tls_key);
        if (!s->tls_cert_pem || !s->tls_key_pem) {
            strata_srv_log(STRATA_LOG_ERR, "cannot read --tls-cert %s / --tls-key %s",
                           s->cfg.tls_cert, s->cfg.tls_key ? s->cfg.tls_key : "(none)");
            return -1;
        }
        flags |= MHD_USE_TLS;
    }
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert_pem},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key_pem},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_OptionItem no_opts[] = {{MHD_OPTION_END, 0, NULL}};
    /* Connection limit above the in-flight limit, so excess requests are
     * answered 503 SlowDown rather than refused at accept. */
    s->mhd = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, access_cb, s,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log_cb, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
        MHD_OPTION_URI_LOG_CALLBACK, uri_log_cb, s,
        MHD_OPTION_NOTIFY_COMPLETED, completed_cb, s,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.conn_timeout_s,
        /* Bounds request headers and is MHD's read buffer, so it also sets
         * the size of the body pieces handed to us. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)STRATA_SRV_CONN_MEMORY,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(s->cfg.max_inflight * 2 + 64),
        /* One client address cannot take every slot (0: no limit).  Over
         * it MHD closes the new connection at accept. */
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->cfg.conns_per_ip,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        MHD_OPTION_THREAD_POOL_SIZE, nthreads > 1 ? nthreads : 0u,
        MHD_OPTION_ARRAY, s->cfg.tls_cert ? tls_opts : no_opts,
        MHD_OPTION_END);
    if (!s->mhd) {
        strata_srv_log(STRATA_LOG_ERR, "cannot listen on %s: %s", s->cfg.address, strerror(errno));
        strata_pool_free(s->pool);
        s->pool = NULL;
        return -1;
    }
    return 0;
}

void strata_http_stop(struct strata_http *s, unsigned wait_s)
{
    if (!s->mhd)
        return;
    MHD_socket fd = MHD_quiesce_daemon(s->mhd);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    /* Let in-flight requests finish: MHD_stop_daemon would cut them. */
    for (unsigned i = 0; i < wait_s * 10 && atomic_load(&s->inflight) > 0; i++)
        usleep(100000);
    /* Every suspended connection waits for a job: once the workers have
     * run them all, none is left suspended (MHD_stop_daemon requires it);
     * later steps run on the event threads themselves. */
    strata_pool_stop(s->pool);
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
    strata_pool_free(s->pool);
    s->pool = NULL;
    s->pipe->admin_fini(s->srv); /* a running heal ends before the metadata closes */
    free(s->tls_cert_pem);
    free(s->tls_key_pem);
    s->tls_cert_pem = s->tls_key_pem = NULL;
}
