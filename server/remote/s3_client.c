/*
 * s3_client.c - S3 requests over libcurl (s3_client.h).
 *
 * Each request borrows an easy handle from the client's pool, resets it
 * (curl_easy_reset keeps the handle's live connections, so requests to one
 * endpoint reuse their TCP/TLS connections), sets the options, performs
 * and returns it.  Error answers' bodies are collected (bounded) and parsed
 * for the S3 <Code>; success bodies go to the caller's callback.
 *
 * SigV4: s3_sign.c signs (not libcurl: s3_sign.h says why).  It uses the
 * URL's path and query as given, so paths are URI-encoded here already in
 * SigV4's canonical form, and sub-resource queries are written canonically
 * ("retention=&versionId=..": sorted, every name with '=').  The payload
 * hash travels in x-amz-content-sha256, which is signed as given:
 * UNSIGNED-PAYLOAD for streamed bodies (their integrity rides on
 * Content-MD5, TCP/TLS and the caller's checks), the real SHA-256 for the
 * small XML bodies built here.
 */
#include "s3_client.h"

#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <openssl/evp.h>

#include "base64.h"
#include "s3_sign.h"
#include "strata/hex.h"
#include "url.h"

#define POOL_MAX 16
#define ERRBODY_MAX 8192
#define META_MAX 64
#define URL_MAX 4096
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct strata_s3c {
    char endpoint[300];
    char access_key[256];
    char secret_key[256];
    char region[64];
    char *ca_file;
    long connect_timeout_ms, request_timeout_ms, stall_timeout_s;
    pthread_mutex_t mu;
    CURL *idle[POOL_MAX];
    unsigned nidle;
};

const char *strata_s3c_result_name(enum strata_s3c_result r)
{
    switch (r) {
    case STRATA_S3C_OK: return "ok";
    case STRATA_S3C_NOT_FOUND: return "not-found";
    case STRATA_S3C_RETRY: return "retry";
    case STRATA_S3C_AUTH: return "auth";
    case STRATA_S3C_OTHER: return "other";
    }
    return "other";
}

/* ---- pure helpers ------------------------------------------------------ */

static bool bucket_name_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) || b[i] == '.' ||
              b[i] == '-'))
            return false;
    return true;
}

int strata_s3c_url_parse(const char *url, struct strata_s3c_url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    bool tls = strncmp(url, "https://", 8) == 0;
    if (!tls && strncmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "remote URL \"%s\": want http[s]://HOST:PORT/BUCKET[/PREFIX]", url);
        return -1;
    }
    const char *h = url + (tls ? 8 : 7);
    const char *slash = strchr(h, '/');
    size_t hostlen = slash ? (size_t)(slash - h) : strlen(h);
    if (hostlen == 0 || memchr(h, '@', hostlen) || strpbrk(url, "?#") ||
        hostlen >= sizeof(out->endpoint) - 16) {
        snprintf(err, errlen, "remote URL \"%s\": bad host (no user@, query or fragment)", url);
        return -1;
    }
    /* HOST[:PORT], HOST possibly [v6]. */
    const char *close = memchr(h, ']', hostlen);
    const char *port = memchr(close ? close : h, ':', hostlen - (size_t)((close ? close : h) - h));
    size_t namelen = port ? (size_t)(port - h) : hostlen;
    unsigned long p = tls ? 443 : 80;
    if (port) {
        char *end = NULL;
        p = strtoul(port + 1, &end, 10);
        if (end != h + hostlen || port + 1 == end || p == 0 || p > 65535) {
            snprintf(err, errlen, "remote URL \"%s\": bad port", url);
            return -1;
        }
    }
    if (namelen == 0) {
        snprintf(err, errlen, "remote URL \"%s\": no host", url);
        return -1;
    }
    snprintf(out->endpoint, sizeof(out->endpoint), "%s://%.*s:%lu", tls ? "https" : "http",
             (int)namelen, h, p);
    const char *b = slash ? slash + 1 : "";
    const char *bend = strchr(b, '/');
    size_t blen = bend ? (size_t)(bend - b) : strlen(b);
    if (!bucket_name_ok(b, blen)) {
        snprintf(err, errlen,
                 "remote URL \"%s\": want a bucket (3 to 63 of a-z, 0-9, '.', '-') after the host",
                 url);
        return -1;
    }
    memcpy(out->bucket, b, blen);
    const char *pre = bend ? bend + 1 : "";
    size_t plen = strlen(pre);
    while (plen && pre[plen - 1] == '/')
        plen--;
    if (plen >= sizeof(out->prefix) || (plen && (pre[0] == '/' || strstr(pre, "//")))) {
        snprintf(err, errlen, "remote URL \"%s\": bad prefix", url);
        return -1;
    }
    memcpy(out->prefix, pre, plen);
    return 0;
}

enum strata_s3c_result strata_s3c_classify(long status, const char *code)
{
    code = code ? code : "";
    if (status >= 200 && status < 300)
        return STRATA_S3C_OK;
    if (status == 0 || status >= 500 || status == 429 || strcmp(code, "SlowDown") == 0 ||
        strcmp(code, "RequestTimeout") == 0 || strcmp(code, "InternalError") == 0 ||
        strcmp(code, "ServiceUnavailable") == 0)
        return STRATA_S3C_RETRY;
    if (status == 404)
        return STRATA_S3C_NOT_FOUND;
    if (status == 401 || status == 403)
        return STRATA_S3C_AUTH;
    return STRATA_S3C_OTHER;
}

/* src cut to fit dst (max bytes with the NUL); NULL reads as "". */
static void copy_text(char *dst, size_t max, const char *src)
{
    size_t n = src ? strnlen(src, max - 1) : 0;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

void strata_s3c_error_parse(const char *body, size_t len, struct strata_s3c_error *e)
{
    if (!body || len == 0 || len > INT32_MAX)
        return;
    xmlDocPtr doc = xmlReadMemory(body, (int)len, NULL, NULL,
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (root && xmlStrcmp(root->name, (const xmlChar *)"Error") == 0) {
        for (xmlNodePtr n = root->children; n; n = n->next) {
            if (n->type != XML_ELEMENT_NODE)
                continue;
            bool is_code = xmlStrcmp(n->name, (const xmlChar *)"Code") == 0;
            if (!is_code && xmlStrcmp(n->name, (const xmlChar *)"Message") != 0)
                continue;
            xmlChar *t = xmlNodeGetContent(n);
            if (is_code)
                copy_text(e->code, sizeof(e->code), (const char *)t);
            else
                copy_text(e->message, sizeof(e->message), (const char *)t);
            xmlFree(t);
        }
    }
    xmlFreeDoc(doc);
}

int strata_s3c_key_encode(const char *key, char *out, size_t out_max)
{
    /* The one AWS URI-encoder (url.h), '/' kept, plus the NUL. */
    long n = out_max ? strata_url_encode(key, strlen(key), out, out_max - 1, true) : -1;
    if (n < 0)
        return -1;
    out[n] = '\0';
    return 0;
}

/* ---- the client and its handle pool ------------------------------------ */

int strata_s3c_create(const char *endpoint, const struct strata_s3c_opts *opts,
                      struct strata_s3c **out, char *err, size_t errlen)
{
    if (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0) {
        snprintf(err, errlen, "endpoint \"%s\": want http[s]://HOST:PORT", endpoint);
        return -1;
    }
    if (!opts->access_key || !opts->secret_key || !opts->access_key[0] ||
        strchr(opts->access_key, ':')) {
        snprintf(err, errlen, "endpoint %s: want an access key (no ':') and a secret key",
                 endpoint);
        return -1;
    }
    const char *region = opts->region && opts->region[0] ? opts->region : "us-east-1";
    struct strata_s3c *c = calloc(1, sizeof(*c));
    if (!c || strlen(endpoint) >= sizeof(c->endpoint) ||
        (opts->ca_file && !(c->ca_file = strdup(opts->ca_file)))) {
        if (c)
            free(c->ca_file);
        free(c);
        snprintf(err, errlen, "endpoint %s: too long, or out of memory", endpoint);
        return -1;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(c->ca_file);
        free(c);
        snprintf(err, errlen, "libcurl failed to initialise");
        return -1;
    }
    snprintf(c->endpoint, sizeof(c->endpoint), "%s", endpoint);
    size_t n = strlen(c->endpoint);
    while (n && c->endpoint[n - 1] == '/')
        c->endpoint[--n] = '\0';
    snprintf(c->access_key, sizeof(c->access_key), "%s", opts->access_key);
    snprintf(c->secret_key, sizeof(c->secret_key), "%s", opts->secret_key);
    snprintf(c->region, sizeof(c->region), "%s", region);
    c->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 3000;
    c->request_timeout_ms = opts->request_timeout_ms > 0 ? opts->request_timeout_ms : 15000;
    c->stall_timeout_s = opts->stall_timeout_s > 0 ? opts->stall_timeout_s : 30;
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return 0;
}

void strata_s3c_destroy(struct strata_s3c *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < c->nidle; i++)
        curl_easy_cleanup(c->idle[i]);
    pthread_mutex_destroy(&c->mu);
    explicit_bzero(c->secret_key, sizeof(c->secret_key));
    free(c->ca_file);
    free(c);
    curl_global_cleanup();
}

static CURL *handle_take(struct strata_s3c *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->nidle)
        h = c->idle[--c->nidle];
    pthread_mutex_unlock(&c->mu);
    if (h)
        curl_easy_reset(h);
    else
        h = curl_easy_init();
    return h;
}

static void handle_give(struct strata_s3c *c, CURL *h)
{
    pthread_mutex_lock(&c->mu);
    if (c->nidle < POOL_MAX) {
        c->idle[c->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (h)
        curl_easy_cleanup(h);
}

void strata_s3c_obj_fini(struct strata_s3c_obj *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->nmeta; i++)
        free(o->meta[i]);
    free(o->meta);
    o->meta = NULL;
    o->nmeta = 0;
}

/* ---- one request ------------------------------------------------------- */

struct req {
    CURL *h;
    struct strata_s3c_obj *info;  /* or NULL */
    strata_s3c_write_cb write_cb; /* success body; NULL: discarded */
    void *write_ud;
    bool write_failed;
    strata_s3c_read_cb read_cb;
    strata_s3c_rewind_cb rewind_cb;
    void *read_ud;
    bool read_failed;
    const char *body;             /* a small fixed body (XML) */
    size_t body_len, body_off;
    char errbody[ERRBODY_MAX];
    size_t errlen;
    uint64_t range_total;         /* from Content-Range */
    uint64_t content_length;
    bool have_length;
};

static bool status_ok(CURL *h)
{
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    return code >= 200 && code < 300;
}

static size_t body_cb(char *p, size_t sz, size_t nm, void *ud)
{
    struct req *r = ud;
    size_t n = sz * nm;
    if (!status_ok(r->h)) {
        size_t room = sizeof(r->errbody) - 1 - r->errlen;
        size_t take = n < room ? n : room;
        memcpy(r->errbody + r->errlen, p, take);
        r->errlen += take;
        return n;
    }
    if (r->write_cb && r->write_cb(r->write_ud, p, n) != 0) {
        r->write_failed = true;
        return 0; /* libcurl stops with CURLE_WRITE_ERROR */
    }
    return n;
}

static size_t read_cb(char *buf, size_t sz, size_t nm, void *ud)
{
    struct req *r = ud;
    size_t max = sz * nm, n = 0;
    if (r->body) {
        n = r->body_len - r->body_off < max ? r->body_len - r->body_off : max;
        memcpy(buf, r->body + r->body_off, n);
        r->body_off += n;
        return n;
    }
    if (r->read_cb(r->read_ud, buf, max, &n) != 0 || n > max) {
        r->read_failed = true;
        return CURL_READFUNC_ABORT;
    }
    return n;
}

static int seek_cb(void *ud, curl_off_t off, int origin)
{
    struct req *r = ud;
    if (off != 0 || origin != SEEK_SET)
        return CURL_SEEKFUNC_CANTSEEK;
    if (r->body) {
        r->body_off = 0;
        return CURL_SEEKFUNC_OK;
    }
    if (!r->rewind_cb || r->rewind_cb(r->read_ud) != 0)
        return CURL_SEEKFUNC_CANTSEEK;
    return CURL_SEEKFUNC_OK;
}

/* value of header line "Name: value\r\n" when its name is name, trimmed. */
static bool header_is(const char *line, size_t n, const char *name, char *val, size_t vmax)
{
    size_t nl = strlen(name);
    if (n <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0)
        return false;
    const char *v = line + nl + 1;
    const char *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v);
    if (len >= vmax)
        len = vmax - 1;
    memcpy(val, v, len);
    val[len] = '\0';
    return true;
}

static void meta_add(struct strata_s3c_obj *o, const char *line, size_t n)
{
    while (n && (line[n - 1] == '\r' || line[n - 1] == '\n'))
        n--;
    if (o->nmeta >= META_MAX)
        return;
    char **m = realloc(o->meta, (o->nmeta + 1) * sizeof(*m));
    if (!m)
        return;
    o->meta = m;
    char *s = strndup(line, n);
    if (!s)
        return;
    for (char *p = s; *p && *p != ':'; p++)
        *p = (char)tolower((unsigned char)*p);
    o->meta[o->nmeta++] = s;
}

static size_t header_cb(char *line, size_t sz, size_t nm, void *ud)
{
    struct req *r = ud;
    size_t n = sz * nm;
    char v[256];
    struct strata_s3c_obj *o = r->info;
    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) { /* a new answer (after 100, redirects) */
        r->have_length = false;
        r->range_total = 0;
        if (o) {
            strata_s3c_obj_fini(o);
            memset(o, 0, sizeof(*o));
        }
        return n;
    }
    if (header_is(line, n, "Content-Length", v, sizeof(v))) {
        r->content_length = strtoull(v, NULL, 10);
        r->have_length = true;
    } else if (header_is(line, n, "Content-Range", v, sizeof(v))) {
        const char *slash = strchr(v, '/');
        if (slash && slash[1] != '*')
            r->range_total = strtoull(slash + 1, NULL, 10);
    }
    if (!o)
        return n;
    if (header_is(line, n, "ETag", v, sizeof(v))) {
        char *s = v[0] == '"' ? v + 1 : v;
        size_t l = strlen(s);
        if (l && s[l - 1] == '"')
            s[--l] = '\0';
        copy_text(o->etag, sizeof(o->etag), s);
    } else if (n > 11 && strncasecmp(line, "x-amz-meta-", 11) == 0) {
        meta_add(o, line, n);
    } else {
        /* Headers kept as sent, each in its field of struct strata_s3c_obj. */
        static const struct {
            const char *name;
            size_t off, size;
        } fields[] = {
#define F(hdr, f) {hdr, offsetof(struct strata_s3c_obj, f), sizeof(((struct strata_s3c_obj *)0)->f)}
            F("x-amz-version-id", version_id),
            F("x-amz-storage-class", storage_class),
            F("Last-Modified", last_modified),
            F("x-amz-object-lock-mode", lock_mode),
            F("x-amz-object-lock-retain-until-date", lock_until),
            F("x-amz-object-lock-legal-hold", legal_hold),
            F("x-amz-checksum-crc32c", checksum_crc32c),
#undef F
        };
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
            if (header_is(line, n, fields[i].name, v, sizeof(v))) {
                copy_text((char *)o + fields[i].off, fields[i].size, v);
                break;
            }
    }
    return n;
}

/* "/BUCKET/ENCODED-KEY[?query]" appended to the endpoint. */
static int build_url(const struct strata_s3c *c, const char *bucket, const char *key,
                     const char *query, char *url, size_t max)
{
    char enc[URL_MAX];
    if (!bucket || !bucket[0] || strata_s3c_key_encode(key ? key : "", enc, sizeof(enc)) != 0)
        return -1;
    int n = snprintf(url, max, "%s/%s%s%s%s%s", c->endpoint, bucket, key ? "/" : "", enc,
                     query && query[0] ? "?" : "", query ? query : "");
    return n < 0 || (size_t)n >= max ? -1 : 0;
}

/* versionId as a canonical query parameter (URI-encoded value). */
static int version_query(const char *first, const char *version_id, char *q, size_t max)
{
    char enc[400];
    if (version_id && strata_s3c_key_encode(version_id, enc, sizeof(enc)) != 0)
        return -1;
    if (version_id && strchr(enc, '/'))
        return -1; /* '/' is not a version id character */
    int n = snprintf(q, max, "%s%s%s%s", first ? first : "", first && version_id ? "&" : "",
                     version_id ? "versionId=" : "", version_id ? enc : "");
    return n < 0 || (size_t)n >= max ? -1 : 0;
}

enum method { M_GET, M_HEAD, M_PUT, M_DELETE, M_POST };

/* Common options, perform, classify.  hdrs is consumed (freed). */
static enum strata_s3c_result perform(struct strata_s3c *c, struct req *r, enum method m,
                                      const char *url, struct curl_slist *hdrs, uint64_t put_size,
                                      bool streamed, struct strata_s3c_error *e)
{
    struct strata_s3c_error scratch;
    if (!e)
        e = &scratch;
    memset(e, 0, sizeof(*e));
    char cerr[CURL_ERROR_SIZE] = "";
    CURL *h = r->h;
    /* No 100-continue (radosgw sends no 100 Continue: a wait for it costs
     * a second per request); the empty line is not sent, nor signed. */
    hdrs = curl_slist_append(hdrs, "Expect:");
    static const char *const mname[] = {"GET", "HEAD", "PUT", "DELETE", "POST"};
    if (!hdrs || strata_s3c_sign(mname[m], url, c->access_key, c->secret_key, c->region,
                                 time(NULL), &hdrs) != 0) {
        curl_slist_free_all(hdrs);
        copy_text(e->message, sizeof(e->message), "cannot sign the request");
        return STRATA_S3C_OTHER;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    if (streamed) {
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->stall_timeout_s);
    } else {
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->request_timeout_ms);
    }
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    if (m == M_HEAD)
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (m == M_DELETE)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    else if (m == M_PUT || m == M_POST) {
        if (m == M_POST) {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)put_size);
        } else {
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)put_size);
        }
        curl_easy_setopt(h, CURLOPT_READFUNCTION, read_cb);
        curl_easy_setopt(h, CURLOPT_READDATA, r);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_cb);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
    }
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &e->http_status);
    if (cc != CURLE_OK) {
        copy_text(e->message, sizeof(e->message), cerr[0] ? cerr : curl_easy_strerror(cc));
        if (r->write_failed || r->read_failed)
            return STRATA_S3C_OTHER; /* the caller stopped it */
        e->http_status = 0;          /* no complete answer */
        return STRATA_S3C_RETRY;
    }
    if (e->http_status < 200 || e->http_status >= 300) {
        r->errbody[r->errlen] = '\0';
        strata_s3c_error_parse(r->errbody, r->errlen, e);
    }
    return strata_s3c_classify(e->http_status, e->code);
}

static void md5_header(const uint8_t md5[16], char *line, size_t max)
{
    char b64[32];
    strata_b64_encode(md5, 16, b64, sizeof(b64));
    snprintf(line, max, "Content-MD5: %s", b64);
}

static struct curl_slist *add_headers(struct curl_slist *l, const char *const *headers)
{
    for (size_t i = 0; l && headers && headers[i]; i++)
        l = curl_slist_append(l, headers[i]);
    return l;
}

static enum strata_s3c_result no_handle(struct strata_s3c_error *e, const char *what)
{
    if (e) {
        memset(e, 0, sizeof(*e));
        copy_text(e->message, sizeof(e->message), what);
    }
    return STRATA_S3C_OTHER;
}

/* A streamed PUT of p to the key, with query (NULL: none). */
static enum strata_s3c_result put_streamed(struct strata_s3c *c, const struct strata_s3c_put *p,
                                           const char *query, struct strata_s3c_obj *info,
                                           struct strata_s3c_error *e)
{
    char url[URL_MAX];
    if (!p->key || build_url(c, p->bucket, p->key, query, url, sizeof(url)) != 0 || !p->read_cb)
        return no_handle(e, "bad bucket or key");
    struct req r = {.info = info, .read_cb = p->read_cb, .rewind_cb = p->rewind_cb,
                    .read_ud = p->ud};
    if (info)
        memset(info, 0, sizeof(*info));
    if (!(r.h = handle_take(c)))
        return no_handle(e, "out of memory");
    struct curl_slist *hdrs = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    char md5line[64];
    if (hdrs && p->md5) {
        md5_header(p->md5, md5line, sizeof(md5line));
        hdrs = curl_slist_append(hdrs, md5line);
    }
    hdrs = add_headers(hdrs, p->headers);
    enum strata_s3c_result res = perform(c, &r, M_PUT, url, hdrs, p->size, true, e);
    handle_give(c, r.h);
    return res;
}

enum strata_s3c_result strata_s3c_put_object(struct strata_s3c *c, const struct strata_s3c_put *p,
                                             struct strata_s3c_obj *info,
                                             struct strata_s3c_error *e)
{
    return put_streamed(c, p, NULL, info, e);
}

enum strata_s3c_result strata_s3c_get_object(struct strata_s3c *c, const char *bucket,
                                             const char *key, const char *version_id,
                                             uint64_t off, uint64_t len, strata_s3c_write_cb cb,
                                             void *ud, struct strata_s3c_obj *info,
                                             struct strata_s3c_error *e)
{
    char url[URL_MAX], q[512];
    if (!key || version_query(NULL, version_id, q, sizeof(q)) != 0 ||
        build_url(c, bucket, key, q, url, sizeof(url)) != 0)
        return no_handle(e, "bad bucket, key or version id");
    struct req r = {.info = info, .write_cb = cb, .write_ud = ud};
    if (info)
        memset(info, 0, sizeof(*info));
    if (!(r.h = handle_take(c)))
        return no_handle(e, "out of memory");
    struct curl_slist *hdrs = curl_slist_append(NULL, "x-amz-content-sha256: " EMPTY_SHA256);
    char range[80];
    if (hdrs && (off || len)) {
        if (len)
            snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)off,
                     (unsigned long long)(off + len - 1));
        else
            snprintf(range, sizeof(range), "Range: bytes=%llu-", (unsigned long long)off);
        hdrs = curl_slist_append(hdrs, range);
    }
    enum strata_s3c_result res = perform(c, &r, M_GET, url, hdrs, 0, true, e);
    if (info && res == STRATA_S3C_OK)
        info->size = r.range_total ? r.range_total : r.content_length;
    handle_give(c, r.h);
    return res;
}

/* A request without a streamed body: HEAD, DELETE, or a PUT of body. */
static enum strata_s3c_result simple(struct strata_s3c *c, enum method m, const char *bucket,
                                     const char *key, const char *query, const char *body,
                                     const char *const *headers, struct strata_s3c_obj *info,
                                     strata_s3c_write_cb cb, void *ud, struct strata_s3c_error *e)
{
    char url[URL_MAX];
    if (build_url(c, bucket, key, query, url, sizeof(url)) != 0)
        return no_handle(e, "bad bucket, key or version id");
    struct req r = {.info = info, .body = body ? body : "", .body_len = body ? strlen(body) : 0,
                    .write_cb = cb, .write_ud = ud};
    if (info)
        memset(info, 0, sizeof(*info));
    if (!(r.h = handle_take(c)))
        return no_handle(e, "out of memory");
    char sha[100] = "x-amz-content-sha256: " EMPTY_SHA256, md5line[64] = "";
    if (body) {
        uint8_t d[32], m5[16];
        unsigned dl = 0;
        EVP_Digest(body, r.body_len, d, &dl, EVP_sha256(), NULL);
        snprintf(sha, sizeof(sha), "x-amz-content-sha256: ");
        strata_hex_encode(d, 32, sha + strlen(sha));
        EVP_Digest(body, r.body_len, m5, &dl, EVP_md5(), NULL);
        md5_header(m5, md5line, sizeof(md5line));
    }
    struct curl_slist *hdrs = curl_slist_append(NULL, sha);
    if (hdrs && md5line[0])
        hdrs = curl_slist_append(hdrs, md5line);
    if (hdrs && body)
        hdrs = curl_slist_append(hdrs, "Content-Type: application/xml");
    hdrs = add_headers(hdrs, headers);
    enum strata_s3c_result res = perform(c, &r, m, url, hdrs, r.body_len, false, e);
    if (info && res == STRATA_S3C_OK)
        info->size = r.content_length;
    handle_give(c, r.h);
    return res;
}

/* A request on one key (and version): sub-resource sub ("retention=", or
 * NULL), body as in simple. */
static enum strata_s3c_result keyed_hdrs(struct strata_s3c *c, enum method m, const char *bucket,
                                         const char *key, const char *version_id, const char *sub,
                                         const char *body, const char *const *headers,
                                         struct strata_s3c_obj *info, struct strata_s3c_error *e)
{
    char q[512];
    if (!key || version_query(sub, version_id, q, sizeof(q)) != 0)
        return no_handle(e, "bad key or version id");
    return simple(c, m, bucket, key, q, body, headers, info, NULL, NULL, e);
}

static enum strata_s3c_result keyed(struct strata_s3c *c, enum method m, const char *bucket,
                                    const char *key, const char *version_id, const char *sub,
                                    const char *body, struct strata_s3c_obj *info,
                                    struct strata_s3c_error *e)
{
    return keyed_hdrs(c, m, bucket, key, version_id, sub, body, NULL, info, e);
}

enum strata_s3c_result strata_s3c_head_object(struct strata_s3c *c, const char *bucket,
                                              const char *key, const char *version_id,
                                              struct strata_s3c_obj *info,
                                              struct strata_s3c_error *e)
{
    return keyed(c, M_HEAD, bucket, key, version_id, NULL, NULL, info, e);
}

enum strata_s3c_result strata_s3c_delete_object(struct strata_s3c *c, const char *bucket,
                                                const char *key, const char *version_id,
                                                const char *const *headers,
                                                struct strata_s3c_error *e)
{
    char q[512];
    if (!key || version_query(NULL, version_id, q, sizeof(q)) != 0)
        return no_handle(e, "bad key or version id");
    return simple(c, M_DELETE, bucket, key, q, NULL, headers, NULL, NULL, NULL, e);
}

/* A small answer body into a char[2048] (the rest is cut). */
static int collect_cb(void *ud, const void *buf, size_t len)
{
    char *acc = ud;
    size_t have = strlen(acc), room = 2047 - have;
    size_t take = len < room ? len : room;
    memcpy(acc + have, buf, take);
    acc[have + take] = '\0';
    return 0;
}

enum strata_s3c_result strata_s3c_copy_object(struct strata_s3c *c, const char *src_bucket,
                                              const char *src_key, const char *bucket,
                                              const char *key, const char *const *headers,
                                              struct strata_s3c_obj *info,
                                              struct strata_s3c_error *e)
{
    char enc[URL_MAX], src[URL_MAX + 80];
    if (!src_bucket || !src_key || !key ||
        strata_s3c_key_encode(src_key, enc, sizeof(enc)) != 0)
        return no_handle(e, "bad source");
    snprintf(src, sizeof(src), "x-amz-copy-source: /%s/%s", src_bucket, enc);
    const char *lines[META_MAX + 3];
    size_t n = 0;
    lines[n++] = src;
    lines[n++] = headers ? "x-amz-metadata-directive: REPLACE" : "x-amz-metadata-directive: COPY";
    for (size_t i = 0; headers && headers[i] && n < META_MAX + 2; i++)
        lines[n++] = headers[i];
    lines[n] = NULL;
    /* An empty-bodied PUT; S3 answers 200 with a CopyObjectResult body,
     * or with an <Error> inside a 200 when the copy failed late. */
    struct strata_s3c_obj scratch;
    struct strata_s3c_obj *o = info ? info : &scratch;
    struct strata_s3c_error local;
    if (!e)
        e = &local;
    char body[2048] = "";
    enum strata_s3c_result res =
        simple(c, M_PUT, bucket, key, NULL, NULL, lines, o, collect_cb, body, e);
    if (res == STRATA_S3C_OK && strstr(body, "<Error>")) {
        strata_s3c_error_parse(body, strlen(body), e);
        res = strata_s3c_classify(500, e->code);
    } else if (res == STRATA_S3C_OK) {
        /* The copy's ETag is in the body, not in a header. */
        const char *t = strstr(body, "<ETag>");
        const char *end = t ? strstr(t, "</ETag>") : NULL;
        if (t && end) {
            t += 6;
            if (strncmp(t, "&quot;", 6) == 0)
                t += 6;
            else if (*t == '"')
                t++;
            size_t l = (size_t)(end - t);
            if (l >= 6 && strncmp(end - 6, "&quot;", 6) == 0)
                l -= 6;
            else if (l && t[l - 1] == '"')
                l--;
            snprintf(o->etag, sizeof(o->etag), "%.*s", (int)l, t);
        }
    }
    if (!info)
        strata_s3c_obj_fini(&scratch);
    return res;
}

enum strata_s3c_result strata_s3c_put_retention(struct strata_s3c *c, const char *bucket,
                                                const char *key, const char *version_id,
                                                const char *mode, const char *until,
                                                const char *const *headers,
                                                struct strata_s3c_error *e)
{
    if (!mode || !until || (strcmp(mode, "GOVERNANCE") != 0 && strcmp(mode, "COMPLIANCE") != 0) ||
        strlen(until) > 40 || strpbrk(until, "<>&"))
        return no_handle(e, "bad retention mode or date");
    char body[256];
    snprintf(body, sizeof(body),
             "<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Mode>%s</Mode>"
             "<RetainUntilDate>%s</RetainUntilDate></Retention>",
             mode, until);
    return keyed_hdrs(c, M_PUT, bucket, key, version_id, "retention=", body, headers, NULL, e);
}

enum strata_s3c_result strata_s3c_put_legal_hold(struct strata_s3c *c, const char *bucket,
                                                 const char *key, const char *version_id, bool on,
                                                 const char *const *headers,
                                                 struct strata_s3c_error *e)
{
    char body[160];
    snprintf(body, sizeof(body),
             "<LegalHold xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>%s</Status>"
             "</LegalHold>",
             on ? "ON" : "OFF");
    return keyed_hdrs(c, M_PUT, bucket, key, version_id, "legal-hold=", body, headers, NULL, e);
}

enum strata_s3c_result strata_s3c_put_tagging(struct strata_s3c *c, const char *bucket,
                                              const char *key, const char *version_id,
                                              const char *xml, const char *const *headers,
                                              struct strata_s3c_error *e)
{
    return keyed_hdrs(c, xml ? M_PUT : M_DELETE, bucket, key, version_id, "tagging=", xml,
                      headers, NULL, e);
}

enum strata_s3c_result strata_s3c_put_acl(struct strata_s3c *c, const char *bucket,
                                          const char *key, const char *version_id,
                                          const char *xml, const char *const *headers,
                                          struct strata_s3c_error *e)
{
    return keyed_hdrs(c, M_PUT, bucket, key, version_id, "acl=", xml, headers, NULL, e);
}

/* The text of the first <name> element of a small answer body into out
 * (max bytes with the NUL; "&quot;" read as '"'); whether there was one. */
static bool xml_field(const char *body, const char *name, char *out, size_t max)
{
    char open[64], close[64];
    snprintf(open, sizeof(open), "<%s>", name);
    snprintf(close, sizeof(close), "</%s>", name);
    const char *t = strstr(body, open);
    const char *end = t ? strstr(t, close) : NULL;
    if (!end)
        return false;
    t += strlen(open);
    size_t o = 0;
    while (t < end && o + 1 < max) {
        if (strncmp(t, "&quot;", 6) == 0) {
            out[o++] = '"';
            t += 6;
        } else {
            out[o++] = *t++;
        }
    }
    out[o] = '\0';
    return true;
}

/* "uploadId=ENC" after first ("partNumber=N&", or ""). */
static int upload_query(const char *first, const char *upload_id, char *q, size_t max)
{
    char enc[600];
    if (strata_s3c_key_encode(upload_id, enc, sizeof(enc)) != 0 || strchr(enc, '/'))
        return -1;
    int n = snprintf(q, max, "%suploadId=%s", first, enc);
    return n < 0 || (size_t)n >= max ? -1 : 0;
}

enum strata_s3c_result strata_s3c_mpu_create(struct strata_s3c *c, const char *bucket,
                                             const char *key, const char *const *headers,
                                             char *upload_id, size_t max,
                                             struct strata_s3c_error *e)
{
    struct strata_s3c_error local;
    if (!e)
        e = &local;
    char body[2048] = "";
    /* No Content-Type in headers: none, rather than libcurl's form type. */
    bool ct = false;
    const char *lines[STRATA_S3C_HDRS_MAX + 2];
    size_t n = 0;
    for (size_t i = 0; headers && headers[i] && n < STRATA_S3C_HDRS_MAX; i++) {
        ct |= strncasecmp(headers[i], "content-type:", 13) == 0;
        lines[n++] = headers[i];
    }
    if (!ct)
        lines[n++] = "Content-Type:";
    lines[n] = NULL;
    enum strata_s3c_result res =
        simple(c, M_POST, bucket, key, "uploads=", NULL, lines, NULL, collect_cb, body, e);
    if (res == STRATA_S3C_OK && (!xml_field(body, "UploadId", upload_id, max) || !upload_id[0])) {
        copy_text(e->message, sizeof(e->message), "no UploadId in the answer");
        res = STRATA_S3C_RETRY;
    }
    return res;
}

enum strata_s3c_result strata_s3c_mpu_part(struct strata_s3c *c, const struct strata_s3c_put *p,
                                           const char *upload_id, unsigned part_number,
                                           struct strata_s3c_obj *info,
                                           struct strata_s3c_error *e)
{
    char first[32], q[700];
    snprintf(first, sizeof(first), "partNumber=%u&", part_number);
    if (upload_query(first, upload_id, q, sizeof(q)) != 0)
        return no_handle(e, "bad upload id");
    return put_streamed(c, p, q, info, e);
}

enum strata_s3c_result strata_s3c_mpu_complete(struct strata_s3c *c,
                                               const struct strata_s3c_complete *p,
                                               struct strata_s3c_obj *info,
                                               struct strata_s3c_error *e)
{
    size_t nparts = p->nparts;
    const char *const *etags = p->etags;
    struct strata_s3c_error local;
    if (!e)
        e = &local;
    char q[700];
    if (upload_query("", p->upload_id, q, sizeof(q)) != 0)
        return no_handle(e, "bad upload id");
    size_t cap = 128 + nparts * 160;
    char *x = malloc(cap);
    if (!x)
        return no_handle(e, "out of memory");
    size_t o = (size_t)snprintf(x, cap, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/"
                                        "doc/2006-03-01/\">");
    for (size_t i = 0; i < nparts; i++) {
        if (strlen(etags[i]) > 100 || strpbrk(etags[i], "<>&\"")) {
            free(x);
            return no_handle(e, "bad part ETag");
        }
        o += (size_t)snprintf(x + o, cap - o,
                              "<Part><PartNumber>%zu</PartNumber><ETag>\"%s\"</ETag></Part>",
                              p->numbers ? (size_t)p->numbers[i] : i + 1, etags[i]);
    }
    snprintf(x + o, cap - o, "</CompleteMultipartUpload>");
    struct strata_s3c_obj scratch;
    struct strata_s3c_obj *ob = info ? info : &scratch;
    char body[2048] = "";
    /* S3 may answer 200 with an <Error> when the complete failed late. */
    enum strata_s3c_result res =
        simple(c, M_POST, p->bucket, p->key, q, x, p->headers, ob, collect_cb, body, e);
    free(x);
    if (res == STRATA_S3C_OK && strstr(body, "<Error>")) {
        strata_s3c_error_parse(body, strlen(body), e);
        res = strata_s3c_classify(500, e->code);
    } else if (res == STRATA_S3C_OK) {
        char etag[80];
        if (xml_field(body, "ETag", etag, sizeof(etag))) {
            size_t l = strlen(etag);
            bool quoted = l >= 2 && etag[0] == '"' && etag[l - 1] == '"';
            snprintf(ob->etag, sizeof(ob->etag), "%.*s", (int)(quoted ? l - 2 : l),
                     quoted ? etag + 1 : etag);
        }
    }
    if (!info)
        strata_s3c_obj_fini(&scratch);
    return res;
}

enum strata_s3c_result strata_s3c_mpu_abort(struct strata_s3c *c, const char *bucket,
                                            const char *key, const char *upload_id,
                                            struct strata_s3c_error *e)
{
    char q[700];
    if (upload_query("", upload_id, q, sizeof(q)) != 0)
        return no_handle(e, "bad upload id");
    return simple(c, M_DELETE, bucket, key, q, NULL, NULL, NULL, NULL, NULL, e);
}

enum strata_s3c_result strata_s3c_lock_enabled(struct strata_s3c *c, const char *bucket,
                                               bool *enabled, struct strata_s3c_error *e)
{
    char url[URL_MAX], body[2048] = "";
    struct strata_s3c_error local;
    if (!e)
        e = &local;
    *enabled = false;
    if (build_url(c, bucket, NULL, "object-lock=", url, sizeof(url)) != 0)
        return no_handle(e, "bad bucket");
    struct req r = {.write_cb = collect_cb, .write_ud = body};
    if (!(r.h = handle_take(c)))
        return no_handle(e, "out of memory");
    struct curl_slist *hdrs = curl_slist_append(NULL, "x-amz-content-sha256: " EMPTY_SHA256);
    enum strata_s3c_result res = perform(c, &r, M_GET, url, hdrs, 0, false, e);
    handle_give(c, r.h);
    if (res == STRATA_S3C_NOT_FOUND && strcmp(e->code, "ObjectLockConfigurationNotFoundError") == 0)
        return STRATA_S3C_OK;
    if (res == STRATA_S3C_OK) {
        xmlDocPtr doc = xmlReadMemory(body, (int)strlen(body), NULL, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
        for (xmlNodePtr n = root ? root->children : NULL; n; n = n->next) {
            if (n->type != XML_ELEMENT_NODE ||
                xmlStrcmp(n->name, (const xmlChar *)"ObjectLockEnabled") != 0)
                continue;
            xmlChar *t = xmlNodeGetContent(n);
            *enabled = t && xmlStrcmp(t, (const xmlChar *)"Enabled") == 0;
            xmlFree(t);
        }
        xmlFreeDoc(doc);
    }
    return res;
}

enum strata_s3c_result strata_s3c_create_bucket(struct strata_s3c *c, const char *bucket,
                                                bool lock, struct strata_s3c_error *e)
{
    const char *hdrs[] = {"x-amz-bucket-object-lock-enabled: true", NULL};
    return simple(c, M_PUT, bucket, NULL, NULL, NULL, lock ? hdrs : NULL, NULL, NULL, NULL, e);
}

enum strata_s3c_result strata_s3c_head_bucket(struct strata_s3c *c, const char *bucket,
                                              struct strata_s3c_error *e)
{
    return simple(c, M_HEAD, bucket, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e);
}
