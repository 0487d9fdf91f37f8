/*
 * loopback.h - a libmicrohttpd daemon on 127.0.0.1 that hands each request
 * to the test as a struct strata_req, and a libcurl client that reads the
 * answer (status, header lines in order, body bytes).  For unit tests of
 * what answers through server/http/response.h (the response API, the
 * admin API) without the rest of the daemon.
 *
 * One per test program (static state): lb_start(http, answer), lb_fetch()
 * per request, lb_stop().  The request carries method, raw_path (path
 * only), its headers (hdrs, strata_req_hdr), the decoded query (q, nq)
 * and the whole body in r->body; answer
 * runs on the daemon's thread once the body is in and must answer.
 */
#ifndef STRATA_TEST_LOOPBACK_H
#define STRATA_TEST_LOOPBACK_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "query.h"
#include "request.h"

#define LB_BODY_MAX (1u << 20)

typedef void (*lb_answer_fn)(struct strata_req *r);

static struct {
    struct MHD_Daemon *mhd;
    unsigned port;
    struct strata_http *http;
    lb_answer_fn answer;
    atomic_int completed;    /* requests libmicrohttpd has completed */
    atomic_ullong bytes_out; /* r->bytes_out of the last completed request */
} lb;

/* The request and what the harness owns besides it. */
struct lb_req {
    struct strata_req r; /* first: req_cls points here */
    bool headers_seen;   /* the first call: headers only */
    bool answered;
};

/* The request target as sent, before libmicrohttpd splits off the query. */
static void *lb_uri_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    struct lb_req *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    struct strata_req *r = &w->r;
    r->http = lb.http;
    r->srv = lb.http->srv;
    r->conn = conn;
    r->ops = true; /* no bucket: no CORS headers */
    r->crash_slot = -1;
    snprintf(r->id, sizeof(r->id), "%s", "0123456789ABCDEF");
    const char *q = strchr(uri, '?');
    r->raw_path = strndup(uri, q ? (size_t)(q - uri) : strlen(uri));
    r->resource = r->raw_path;
    if (q && q[1]) {
        r->qbuf = strdup(q + 1);
        r->nq = r->qbuf ? strata_s3_query_parse(r->qbuf, r->q, STRATA_SRV_QPARAMS_MAX) : 0;
    }
    strata_sbuf_init(&r->body, LB_BODY_MAX);
    return w;
}

static enum MHD_Result lb_collect_hdr(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    struct strata_req *r = cls;
    if (r->nhdrs == STRATA_SRV_HDRS_MAX)
        return MHD_NO;
    r->hdrs[r->nhdrs].name = key;
    r->hdrs[r->nhdrs].value = value ? value : "";
    r->nhdrs++;
    return MHD_YES;
}

static enum MHD_Result lb_access_cb(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_size, void **req_cls)
{
    (void)cls, (void)url, (void)version;
    struct lb_req *w = *req_cls;
    if (!w)
        return MHD_NO;
    w->r.method = method;
    if (*upload_size) {
        if (strata_sbuf_append(&w->r.body, upload_data, *upload_size) != 0)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    /* libmicrohttpd calls once with the headers, once per piece of body,
     * and once more at its end. */
    if (!w->headers_seen) {
        w->headers_seen = true;
        MHD_get_connection_values(conn, MHD_HEADER_KIND, lb_collect_hdr, &w->r);
        return MHD_YES;
    }
    if (!w->answered) {
        w->answered = true;
        lb.answer(&w->r);
    }
    return MHD_YES;
}

static void lb_completed_cb(void *cls, struct MHD_Connection *conn, void **req_cls,
                            enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    struct lb_req *w = *req_cls;
    if (w) {
        atomic_store(&lb.bytes_out, w->r.bytes_out);
        strata_sbuf_fini(&w->r.body);
        free(w->r.raw_path);
        free(w->r.qbuf);
        free(w);
    }
    atomic_fetch_add(&lb.completed, 1);
    *req_cls = NULL;
}

/* 0, or -1 when the daemon did not start. */
static int lb_start(struct strata_http *http, lb_answer_fn answer)
{
    lb.http = http;
    lb.answer = answer;
    if (!http->host_id[0]) /* the x-amz-id-2 of every answer */
        snprintf(http->host_id, sizeof(http->host_id), "%s", "test-host-id");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    lb.mhd =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                         lb_access_cb, NULL, MHD_OPTION_NOTIFY_COMPLETED, lb_completed_cb, NULL,
                         MHD_OPTION_URI_LOG_CALLBACK, lb_uri_cb, NULL, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&(struct sockaddr_in){
                             .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)},
                         MHD_OPTION_END);
    if (!lb.mhd)
        return -1;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(lb.mhd, MHD_DAEMON_INFO_BIND_PORT);
    lb.port = di ? di->port : 0;
    return lb.port ? 0 : -1;
}

static void lb_stop(void)
{
    MHD_stop_daemon(lb.mhd);
    curl_global_cleanup();
}

/* lb_stop as a cmocka group teardown. */
static inline int lb_teardown(void **state)
{
    (void)state;
    lb_stop();
    return 0;
}

struct lb_reply {
    long status;
    char hdrs[4096]; /* header lines as received, "\r\n" kept */
    size_t nh;
    uint8_t *body; /* NUL-terminated */
    size_t len;
};

static size_t lb_on_hdr(char *p, size_t size, size_t n, void *ud)
{
    struct lb_reply *rp = ud;
    size_t len = size * n;
    if (rp->nh + len < sizeof(rp->hdrs)) {
        memcpy(rp->hdrs + rp->nh, p, len);
        rp->nh += len;
        rp->hdrs[rp->nh] = '\0';
    }
    return len;
}

static size_t lb_on_body(char *p, size_t size, size_t n, void *ud)
{
    struct lb_reply *rp = ud;
    size_t len = size * n;
    uint8_t *nb = realloc(rp->body, rp->len + len + 1);
    if (!nb)
        return 0;
    memcpy(nb + rp->len, p, len);
    rp->body = nb;
    rp->len += len;
    rp->body[rp->len] = 0;
    return len;
}

/* Until *f reaches value, at most 1 s. */
static void lb_wait_for(atomic_int *f, int value)
{
    for (int i = 0; i < 200 && atomic_load(f) < value; i++)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
}

/* One request on a new connection, with extra header lines (NULL-ended,
 * may be NULL) and a body (NULL: none); returns once the daemon completed
 * it.  Free the reply with lb_reply_free. */
static void lb_fetch_with(const char *method, const char *target, const char *const *hdrs,
                          const char *body, struct lb_reply *rp)
{
    memset(rp, 0, sizeof(*rp));
    int done = atomic_load(&lb.completed);
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", lb.port, target);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; hdrs && hdrs[i]; i++)
        hl = curl_slist_append(hl, hdrs[i]);
    hl = curl_slist_append(hl, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, lb_on_hdr);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, rp);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, lb_on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, rp);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rp->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    lb_wait_for(&lb.completed, done + 1);
    assert_int_equal(atomic_load(&lb.completed), done + 1);
}

static inline void lb_fetch(const char *method, const char *target, struct lb_reply *rp)
{
    lb_fetch_with(method, target, NULL, NULL, rp);
}

/* The value of header name (first line), or NULL; copied into out. */
static inline const char *lb_hdr(const struct lb_reply *rp, const char *name, char *out,
                                 size_t out_len)
{
    size_t nl = strlen(name);
    for (const char *l = rp->hdrs; l && *l; l = strstr(l, "\r\n") ? strstr(l, "\r\n") + 2 : NULL) {
        if (strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = strcspn(v, "\r\n");
            snprintf(out, out_len, "%.*s", (int)vl, v);
            return out;
        }
    }
    return NULL;
}

static void lb_reply_free(struct lb_reply *rp)
{
    free(rp->body);
}

#endif /* STRATA_TEST_LOOPBACK_H */
