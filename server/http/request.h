/*
 * request.h - the transport's request: the transport's server and
 * options, the request state, the route entry a pipeline hands back, and what the
 * transport offers every layer above it (request accessors, error answers,
 * the access log, metrics, crash report, start/stop).  Answers are built
 * with response.h.
 *
 * The transport (server/http/) calls nothing above it: routing,
 * authorisation, CORS, POST forms and the admin API reach it through
 * struct strata_pipeline, which the daemon assembles (server/pipeline.c)
 * and sets in struct strata_http before strata_http_start.  The daemon's
 * context (stores, caches, threads: server/srv_context.h) is opaque here.
 *
 * Threads: a few libmicrohttpd epoll threads (one per core) parse, sign-
 * check and answer every connection; a request's steps that may wait on a
 * drive run on the storage workers (pool.h) while its connection is
 * suspended (http.c).  A request is touched by one thread at a time.
 * struct strata_http is read-only after start except for its atomics.
 */
#ifndef STRATA_SERVER_HTTP_REQUEST_H
#define STRATA_SERVER_HTTP_REQUEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "strata/assert.h"
#include "strata/meta.h"
#include "auth.h"
#include "body_budget.h"
#include "pool.h"
#include "query.h"
#include "response.h"
#include "s3_checksum.h"
#include "s3_error.h"
#include "sbuf.h"
#include "srv_log.h"
#include "stages.h"

/* libmicrohttpd's handles, which only the transport (http/) opens. */
struct MHD_Daemon;
struct MHD_Connection;
struct MHD_Response;

#define STRATA_SRV_HDRS_MAX 128      /* request headers kept for auth */
/* MHD per-connection pool: bounds the request headers and is the read
 * buffer.  MHD zeroes it between requests, so bigger costs every small GET:
 * 64 KiB of memset was the largest user-space item of a 4 KiB GET's
 * profile (3.9 %).  32 KiB still holds any S3 request's headers (AWS
 * allows 8 KiB) and hands request bodies over in pieces of about 28 KiB. */
#ifndef STRATA_SRV_CONN_MEMORY
#define STRATA_SRV_CONN_MEMORY (32u * 1024)
#endif
#define STRATA_SRV_QPARAMS_MAX 64    /* query parameters */
/* Storage workers: enough for the writes of every connection of a busy
 * client to meet in one RocksDB WAL sync. */
#define STRATA_SRV_WORKERS_DEFAULT 32
#define STRATA_SRV_XML_BODY_MAX (2u << 20) /* DeleteObjects with 1000 long keys fits */

/* The transport's options: a part of the daemon's configuration
 * (server/srv_context.h), copied here before strata_http_start. */
struct strata_http_config {
    const char *address;     /* host:port */
    const char *tls_cert;
    const char *tls_key;
    const char *domain;      /* virtual-host style base domain, or NULL */
    /* --region: the one region this daemon serves.  SigV4 credentials
     * scoped to another are refused, buckets are created in it only, and
     * answers report it (x-amz-bucket-region, GetBucketLocation). */
    const char *region;
    unsigned max_inflight;
    unsigned conn_timeout_s;
    unsigned threads;        /* event threads; 0: one per core */
    unsigned workers;        /* storage workers (pool.h); 0: the default */
    unsigned conns_per_ip;   /* connections from one client address; 0: no limit */
    size_t body_memory;      /* bytes of request bodies buffered at once, all requests */
    bool metrics_public;     /* GET /metrics without credentials */
};

/* The daemon's context (server/srv_context.h): opaque here, handed back
 * to the pipeline and carried by each request for the layers above. */
struct strata_srv;

/* The transport's server: what http/ reads and writes while it serves. */
struct strata_http {
    struct strata_http_config cfg;
    /* The store: NULL until it is open (/health answers 503), and what the
     * pipeline looks buckets up in. */
    struct strata_meta *meta;
    /* Replaced whole on SIGHUP (main.c); a replaced table is kept until
     * exit, because requests in flight point into it. */
    struct strata_creds *_Atomic creds;
    struct MHD_Daemon *mhd;
    struct strata_pool *pool; /* storage workers; NULL: everything runs in place */
    /* Written by every request (inflight) or every buffered body
     * (body_budget): each on a cache line of its own, so that the fields
     * every request only reads do not bounce between the event threads. */
    _Alignas(64) atomic_uint inflight;
    _Alignas(64) struct strata_body_budget body_budget; /* max = cfg.body_memory */
    _Alignas(64) int access_log_fd;
    char host_id[48];
    uint64_t reqid_base;
    atomic_uint_fast64_t reqid_seq;
    char *tls_cert_pem;
    char *tls_key_pem;
    char *metrics_token;    /* --metrics-token-file's token, or NULL */
    const struct strata_pipeline *pipe; /* the layers above the transport (below) */
    struct strata_srv *srv; /* the daemon's context, set in each request */
};

enum strata_level {
    STRATA_LVL_SERVICE = 0, /* "/" */
    STRATA_LVL_BUCKET,      /* "/bucket" */
    STRATA_LVL_OBJECT,      /* "/bucket/key" */
};

/* Route flags. */
#define STRATA_RT_BODY_XML 0x1    /* body buffered (bounded) and handed to run */
#define STRATA_RT_BODY_STREAM 0x2 /* body streamed through body_cb */
#define STRATA_RT_NO_BUCKET 0x4   /* do not look the bucket up (CreateBucket) */
/* run() on the event thread: it reads records only, and streams bodies
 * that live on drives through strata_req_stream_response. */
#define STRATA_RT_IN_PLACE 0x8
/* Chosen instead of the route of the same method, level and subresource
 * whose body is an upload when x-amz-copy-source is sent. */
#define STRATA_RT_COPY_SOURCE 0x10

struct strata_req;

/* How a route is authorised (s3/authz.c): each route names its kind and
 * its s3: action, so no operation exists without one (the route table's
 * unit test refuses a route that lacks them).  0 is no kind: the bucket
 * owner only (fail closed). */
enum strata_authz_kind {
    STRATA_AZ_UNSET = 0,
    /* The bucket owner, the bucket policy and ACL grants decide action on
     * the request's bucket or key. */
    STRATA_AZ_POLICY,
    /* As POLICY; an object ACL grant is checked by the handler once it has
     * read the version (strata_authz_object). */
    STRATA_AZ_POLICY_OBJECT,
    /* The bucket policy's own operations: the owner always, others never
     * (405 when the policy would allow them, as AWS). */
    STRATA_AZ_POLICY_ADMIN,
    /* The handler checks action itself: per key (DeleteObjects), or once
     * the form names signer and key (POST Object). */
    STRATA_AZ_HANDLER,
    /* No bucket to authorise against (ListBuckets, CreateBucket): any
     * signed caller. */
    STRATA_AZ_SIGNED,
    /* No credentials at all (CORS preflight); action NULL. */
    STRATA_AZ_PUBLIC,
};

struct strata_route_authz {
    int kind;                   /* enum strata_authz_kind */
    const char *action;         /* "s3:GetObject", ... */
    const char *version_action; /* with ?versionId on an object, or NULL: action */
};

struct strata_route {
    const char *method;
    int level;       /* enum strata_level */
    const char *sub; /* subresource query parameter, or NULL for none */
    unsigned flags;
    const char *op;  /* operation name for logs */
    /* Streaming routes: after auth, before the body (may answer). */
    int (*begin)(struct strata_req *r);
    /* Streaming routes: decoded body bytes.  Non-zero stops the body: the
     * handler set r->err first. */
    int (*body_cb)(struct strata_req *r, const void *buf, size_t len);
    /* After the whole body: must answer (or r->err is answered). */
    void (*run)(struct strata_req *r);
    struct strata_route_authz authz;
};

struct strata_req {
    struct strata_http *http; /* the transport serving it */
    struct strata_srv *srv;   /* the daemon's context (its http is the above) */
    struct MHD_Connection *conn;
    char id[17];
    uint64_t t0_ns;
    uint64_t t_resp_ns; /* when the response was queued (TTFB), or 0 */
    uint64_t st[STRATA_ST_N]; /* STRATA_DEBUG_STAGES: stage stamps (stages.h) */
    unsigned st_running;      /* handlers running when its own began */
    /* The request target as sent (from MHD's URI log callback). */
    char *raw_uri;
    char *raw_path;  /* points into raw_uri_copy */
    char *raw_query; /* "" when none */
    char *raw_uri_copy;
    char *qbuf;      /* decoded query storage */
    const char *method;
    char *bucket;    /* decoded, or NULL */
    bool host_bucket; /* bucket came from the Host header (virtual-host style) */
    char *key;       /* decoded, or NULL */
    char *resource;  /* decoded path for error bodies */
    int level;
    struct strata_qparam q[STRATA_SRV_QPARAMS_MAX];
    int nq;
    struct strata_auth_hdr hdrs[STRATA_SRV_HDRS_MAX];
    size_t nhdrs;
    bool hdrs_overflow;
    struct strata_auth_result auth;
    const struct strata_route *route;
    struct strata_bucket_info binfo;
    bool started;
    bool responded;
    bool ops;        /* /health or /metrics: no auth, answered at the end */
    bool admin;      /* /strata/admin/...: JSON errors (server/admin/admin.h) */
    bool close_conn; /* answer with Connection: close (untrusted framing) */
    int crash_slot;  /* in the crash report table, or -1 */
    /* On its event thread's list of requests whose headers MHD has not
     * handed to the access handler yet (http.c, early_answer). */
    struct strata_req *pend_next, *pend_prev;
    struct strata_req **pend_list; /* that list's head, or NULL when off it */
    /* body */
    struct strata_chunked *chunked;
    EVP_MD_CTX *sha256; /* signed payload of buffered bodies */
    struct strata_sbuf body;
    size_t body_taken;  /* bytes of body charged to srv->body_budget */
    bool body_digest;   /* an MD5/checksum of the buffered body was given and matched */
    uint64_t bytes_in;  /* raw body bytes received */
    /* deferred error: answered at the end of the body */
    enum s3_err err;
    int err_strata;
    char term; /* termination flag override: 'D' disk, 'I' internal */
    /* response */
    int status;
    enum s3_err sent_err;
    uint64_t bytes_out;
    const char *err_hdr_name;  /* one extra header on an error answer */
    const char *err_msg;       /* static Message for the error answer, or NULL */
    /* ArgumentName / ArgumentValue of an InvalidArgument answer, or NULL
     * (static, or the request's own header value). */
    const char *err_arg_name;
    const char *err_arg_value;
    char err_msg_buf[192];     /* a Message made for this request (err_msg points here) */
    char err_hdr_value[64];
    bool err_delete_marker;    /* add x-amz-delete-marker: true to the error */
    bool err_region;           /* signed for another region: <Region> in the error */
    /* The S3 handlers' state (server/srv.h), allocated with the request
     * (struct strata_pipeline's state_size), released by state_fini; NULL
     * without a pipeline. */
    struct strata_s3_state *s3;
    /* Work handed to the storage workers (http.c).  At most one job of a
     * request is queued or running; am guards the flags below, which the
     * event thread and the worker both touch. */
    pthread_mutex_t am;
    struct strata_job job;
    int job_kind;
    bool job_busy;     /* job queued or running */
    bool waiting;      /* the connection is suspended until the job ends */
    bool orphan;       /* MHD completed r while the job ran: the job frees it */
    bool on_worker;    /* strata_req_send keeps the answer for the event thread */
    bool rerun;        /* an in-place run() asks to be continued on a worker */
    bool body_finished;
    struct MHD_Response *stash;
    int stash_status;
    /* Streamed request bodies go to the worker in blocks: acc fills on
     * the event thread while the worker feeds jbuf to the route. */
    bool pooled_body;
    bool body_drop;    /* no memory for a block: the rest is drained */
    uint8_t *acc, *jbuf;
    size_t acc_len, acc_cap, jbuf_len;
    /* Streamed answers: rd holds the block after the one MHD is sending. */
    int (*stream_read)(struct strata_req *r, uint64_t off, void *buf, size_t len);
    /* Optional, instead of stream_read on the workers: *p points at *n
     * (1..max) bytes at off held by the route until its next call. */
    int (*stream_peek)(struct strata_req *r, uint64_t off, size_t max, const uint8_t **p,
                       size_t *n);
    uint64_t stream_len;
    const uint8_t *rd_ptr; /* the block: rd_buf, or what stream_peek gave */
    uint8_t *rd_buf;
    size_t rd_cap, rd_len;
    uint64_t rd_off;
    bool rd_ready;
    int rd_rc;
};

/* ---- the request (http.c); answers are built with response.h ----------- */

/* The value of a request header (case-insensitive), or NULL. */
const char *strata_req_hdr(struct strata_req *r, const char *name);
/* The peer's address as text into out ("" when unknown: a request built
 * by a unit test). */
void strata_req_client_ip(struct strata_req *r, char *out, size_t len);
/* A query parameter's value ("" for a bare "?acl"), or NULL when absent. */
const char *strata_req_query(struct strata_req *r, const char *name);
/* The S3 XML error answer; err is the internal code behind it (0 if none),
 * used for a more specific message. */
void strata_req_error(struct strata_req *r, enum s3_err e, int err);
/* Map an internal code in context and answer it. */
void strata_req_error_strata(struct strata_req *r, int err, enum s3_ctx ctx);
/* Record an error to answer once the body has been read. */
void strata_req_defer_error(struct strata_req *r, enum s3_err e, int err);

/* The caller's identity for owner checks ("" when anonymous). */
const char *strata_req_user(const struct strata_req *r);
const char *strata_req_display_name(const struct strata_req *r);
/* Whether a write's answer names the version it made (x-amz-version-id):
 * yes on a versioning-enabled bucket; not for the "null" version of a
 * suspended bucket, nor on one never versioned (AWS PutObject). */
bool strata_req_version_answered(const struct strata_req *r, const char *version_id);

/* ---- access log and metrics (log.c, metrics.c; the logger: srv_log.h) --- */

/* One access-log line for r.  Lines are gathered per thread and written
 * in whole lines, at most PIPE_BUF bytes at a time, when the thread's
 * buffer is full or at strata_srv_access_log_flush().  toe: libmicrohttpd's
 * termination code of the request. */
void strata_srv_access_log(struct strata_req *r, int toe);
/* Where access-log lines go (default stderr). */
void strata_srv_access_log_open(int fd);
/* Writes out the lines every thread holds (main.c: every 50 ms, before a
 * reopen, after HTTP has stopped).  Any thread. */
void strata_srv_access_log_flush(void);

void strata_metrics_count(const char *method, int status, enum s3_err e, uint64_t in,
                          uint64_t out);
void strata_metrics_inflight_rejected(void);
/* A read refused because the object's master key is not in the key store. */
void strata_metrics_sse_key_missing(void);
struct strata_ilm;
/* The lifecycle scanner whose totals /metrics shows (NULL: none).  Must
 * stay valid until HTTP has stopped. */
void strata_metrics_set_ilm(struct strata_ilm *e);
/* The scanner registered above, or NULL (the admin API's ilm endpoints). */
struct strata_ilm *strata_metrics_ilm(void);
/* One finished request of S3 operation op (a static string: route->op):
 * time to its response headers and total time, into the histograms. */
void strata_metrics_latency(const char *op, uint64_t ttfb_ns, uint64_t total_ns);
/* The whole Prometheus text of /metrics (the transport's and the upper
 * layers', through the pipeline), malloc'ed, or NULL when it does not fit. */
char *strata_metrics_scrape(struct strata_http *h, struct strata_srv *srv, size_t *len);
/* The --metrics-token-file token (metrics_token.c): the file's first line,
 * 32 to 255 printable characters without spaces.  0, or STRATA_E* with
 * errmsg set.  *out is the caller's (free with strata_metrics_token_free). */
int strata_metrics_token_load(const char *path, char **out, char *errmsg, size_t errmsg_len);
void strata_metrics_token_free(char *token);
/* Whether the Authorization header value is "Bearer <token>" (constant
 * time in the token's length).  False when token is NULL. */
bool strata_metrics_bearer_ok(const char *token, const char *authorization);

/* ---- crash report (crash.c) -------------------------------------------- */

/* Fatal-signal handler that lists the requests in flight. */
void strata_crash_install(void);
/* Returns the slot (or -1) to pass to unregister at completion. */
int strata_crash_register(struct strata_req *r);
void strata_crash_unregister(int slot);

/* ---- the daemon (http.c) ------------------------------------------------ */

int strata_http_start(struct strata_http *h);
/* Stop accepting, wait for in-flight requests (up to wait_s), stop. */
void strata_http_stop(struct strata_http *h, unsigned wait_s);

/* ---- the pipeline above the transport (server/pipeline.c) -------------- */

/* What the transport calls above it, assembled by the daemon.  Every
 * member is set (strata_http_start refuses a server without a pipeline). */
struct strata_pipeline {
    /* The route of r (s3/router.c); *notimpl for a known but unsupported
     * subresource or header. */
    const struct strata_route *(*route_find)(struct strata_req *r, bool *notimpl);
    /* The bucket record behind the daemon's cache (s3/bucket_cache.c). */
    int (*bucket_get)(struct strata_meta *m, const char *name, struct strata_bucket_info *out);
    /* Authorisation of the matched route (s3/authz.c): a refusal reason,
     * or an internal code in *serr. */
    enum strata_auth_err (*authz_request)(struct strata_req *r, int *serr);
    /* The error to answer for e when the key may not be revealed. */
    enum s3_err (*authz_missing_key)(struct strata_req *r, enum s3_err e);
    /* Access-Control-* of an answer about a bucket (s3/s3_cors.c). */
    void (*cors_resp_hdrs)(struct strata_req *r, struct strata_resp *out);
    /* The bytes of the layers' own state of each request (r->s3),
     * allocated zeroed with it, and its release before the request is
     * freed (s3/req_state.c). */
    size_t state_size;
    void (*state_fini)(struct strata_req *r);
    /* A field of r's POST Object form (s3/s3_post.c), or NULL: read where
     * a header is. */
    const char *(*form_hdr)(struct strata_req *r, const char *name);
    /* The admin API (admin/admin.h): whether a raw path is its, its route,
     * its JSON error answer, its start and stop. */
    bool (*admin_path)(const char *raw_path);
    enum s3_err (*admin_route)(struct strata_req *r);
    void (*admin_error)(struct strata_req *r, enum s3_err e, int err);
    void (*admin_init)(struct strata_srv *s);
    void (*admin_fini)(struct strata_srv *s);
    /* Metrics of the layers above, appended after the transport's. */
    void (*metrics_render)(struct strata_sbuf *b, struct strata_srv *s);
};

#endif /* STRATA_SERVER_HTTP_REQUEST_H */
