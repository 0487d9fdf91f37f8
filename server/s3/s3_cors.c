/*
 * s3_cors.c - bucket CORS (s3_cors.h): Put/Get/DeleteBucketCors, the
 * OPTIONS preflight and the Access-Control-* headers of actual responses.
 * The configuration is validated (s3_xml.c) and stored in canonical form as
 * the bucket's "cors" configuration document; a rejected one leaves the
 * stored one untouched.  Connection threads.
 */
#include "s3_cors.h"
#include "handlers.h"

#include "bucket_doc_cache.h"
#include "s3_bucket_config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    unsigned bit;
} methods[] = {
    {"GET", STRATA_CORS_GET},       {"PUT", STRATA_CORS_PUT},   {"POST", STRATA_CORS_POST},
    {"DELETE", STRATA_CORS_DELETE}, {"HEAD", STRATA_CORS_HEAD},
};

unsigned strata_cors_method_bit(const char *method)
{
    for (size_t i = 0; method && i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strcmp(methods[i].name, method) == 0)
            return methods[i].bit;
    return 0;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void strata_cors_free(struct strata_cors *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nrules; i++) {
        struct strata_cors_rule *r = &c->rules[i];
        free(r->id);
        strv_free(r->origins, r->norigins);
        strv_free(r->headers, r->nheaders);
        strv_free(r->expose, r->nexpose);
    }
    free(c->rules);
    free(c);
}

void strata_cors_format(struct strata_sbuf *b, const struct strata_cors *c)
{
    strata_xml_doc_head(b, "CORSConfiguration");
    for (size_t i = 0; i < c->nrules; i++) {
        const struct strata_cors_rule *r = &c->rules[i];
        strata_sbuf_puts(b, "<CORSRule>");
        if (r->id)
            strata_sbuf_xml_elem(b, "ID", r->id);
        for (size_t j = 0; j < r->nheaders; j++)
            strata_sbuf_xml_elem(b, "AllowedHeader", r->headers[j]);
        for (size_t j = 0; j < sizeof(methods) / sizeof(methods[0]); j++)
            if (r->methods & methods[j].bit)
                strata_sbuf_xml_elem(b, "AllowedMethod", methods[j].name);
        for (size_t j = 0; j < r->norigins; j++)
            strata_sbuf_xml_elem(b, "AllowedOrigin", r->origins[j]);
        for (size_t j = 0; j < r->nexpose; j++)
            strata_sbuf_xml_elem(b, "ExposeHeader", r->expose[j]);
        if (r->max_age_s >= 0)
            strata_sbuf_printf(b, "<MaxAgeSeconds>%ld</MaxAgeSeconds>", r->max_age_s);
        strata_sbuf_puts(b, "</CORSRule>");
    }
    strata_sbuf_puts(b, "</CORSConfiguration>");
}

/* ---- matching --------------------------------------------------------------- */

static bool eq_n(const char *a, const char *b, size_t n, bool nocase)
{
    return nocase ? strncasecmp(a, b, n) == 0 : strncmp(a, b, n) == 0;
}

bool strata_cors_wildcard_match(const char *pattern, const char *s, bool nocase)
{
    const char *star = strchr(pattern, '*');
    size_t plen = strlen(pattern), slen = strlen(s);
    if (!star)
        return plen == slen && eq_n(pattern, s, slen, nocase);
    size_t pre = (size_t)(star - pattern), post = plen - pre - 1;
    return slen >= pre + post && eq_n(pattern, s, pre, nocase) &&
           eq_n(star + 1, s + slen - post, post, nocase);
}

static bool any_match(char *const *pats, size_t n, const char *s, bool nocase)
{
    for (size_t i = 0; i < n; i++)
        if (strata_cors_wildcard_match(pats[i], s, nocase))
            return true;
    return false;
}

/* Every name of the comma list hdrs matches one of the rule's patterns. */
static bool headers_allowed(const struct strata_cors_rule *r, const char *hdrs)
{
    while (hdrs && *hdrs) {
        hdrs += strspn(hdrs, " \t,");
        size_t n = strcspn(hdrs, ",");
        size_t end = n;
        while (end && (hdrs[end - 1] == ' ' || hdrs[end - 1] == '\t'))
            end--;
        if (end) {
            char name[256];
            if (end >= sizeof(name))
                return false;
            memcpy(name, hdrs, end);
            name[end] = '\0';
            if (!any_match(r->headers, r->nheaders, name, true))
                return false;
        }
        hdrs += n;
    }
    return true;
}

const struct strata_cors_rule *strata_cors_match(const struct strata_cors *c, const char *origin,
                                                 unsigned method, const char *req_headers)
{
    for (size_t i = 0; c && i < c->nrules; i++) {
        const struct strata_cors_rule *r = &c->rules[i];
        if ((r->methods & method) && any_match(r->origins, r->norigins, origin, false) &&
            headers_allowed(r, req_headers))
            return r;
    }
    return NULL;
}

/* ---- storage ---------------------------------------------------------------- */

/* Every answer to a request with an Origin consults the rules: cached. */
STRATA_BUCKET_CONFIG_CACHE(cache, "cors", cors, struct strata_cors, strata_cors_free,
                           strata_cors_format, strata_xml_cors_parse);

/* The bucket's rules: 0 with *ref (NULL when it has none), or the error. */
static int cors_load(struct strata_req *r, struct strata_doc_ref **ref)
{
    return strata_doc_cache_get(&cache, r->srv->meta, &r->binfo, ref);
}

void strata_h_cors_get(struct strata_req *r)
{
    strata_bucket_config_send_cached(r, &cache, S3E_NoSuchCORSConfiguration,
                                     STRATA_CORS_DOC_MAX * 2, cors_format);
}

void strata_h_cors_put(struct strata_req *r)
{
    if (!r->body_digest) {
        /* AWS requires the body's integrity for PutBucketCors. */
        r->err_msg = "Missing required header for this request: Content-MD5 OR x-amz-checksum-*";
        strata_req_error(r, S3E_InvalidRequest, 0);
        return;
    }
    struct strata_cors *c = NULL;
    const char *msg = NULL;
    enum s3_err e = strata_xml_cors_parse(r->body.data ? r->body.data : "", r->body.len, &c, &msg);
    if (e) {
        r->err_msg = msg;
        strata_req_error(r, e, 0);
        return;
    }
    struct strata_sbuf b;
    strata_sbuf_init(&b, STRATA_CORS_DOC_MAX * 2);
    strata_cors_format(&b, c);
    strata_cors_free(c);
    strata_bucket_config_write_buf(r, "cors", &b, &cache);
}

void strata_h_cors_delete(struct strata_req *r)
{
    strata_bucket_config_write(r, "cors", NULL, 0, &cache, 204);
}

/* ---- answers -------------------------------------------------------------------- */

/* The rule's methods as "GET, PUT". */
static void methods_list(const struct strata_cors_rule *rule, char *out, size_t len)
{
    out[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (!(rule->methods & methods[i].bit))
            continue;
        int n = snprintf(out + used, len - used, "%s%s", used ? ", " : "", methods[i].name);
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
    }
}

/* The headers every matched answer carries (preflight and actual). */
static void add_common(struct strata_resp *resp, const struct strata_cors_rule *rule,
                       const char *origin)
{
    /* A rule allowing every origin answers "*", as AWS does; a named origin
     * is echoed and may send credentials. */
    bool any = false;
    for (size_t i = 0; i < rule->norigins; i++)
        if (strcmp(rule->origins[i], "*") == 0 &&
            strata_cors_wildcard_match(rule->origins[i], origin, false))
            any = true;
    strata_resp_hdr(resp, "Access-Control-Allow-Origin", any ? "*" : origin);
    if (!any)
        strata_resp_hdr(resp, "Access-Control-Allow-Credentials", "true");
    char m[64];
    methods_list(rule, m, sizeof(m));
    strata_resp_hdr(resp, "Access-Control-Allow-Methods", m);
    for (size_t i = 0; i < rule->nexpose; i++)
        strata_resp_hdr(resp, "Access-Control-Expose-Headers", rule->expose[i]);
    if (rule->max_age_s >= 0) {
        char age[24];
        snprintf(age, sizeof(age), "%ld", rule->max_age_s);
        strata_resp_hdr(resp, "Access-Control-Max-Age", age);
    }
}

static const char vary[] = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";

void strata_h_cors_preflight(struct strata_req *r)
{
    const char *origin = strata_req_hdr(r, "Origin");
    const char *acrm = strata_req_hdr(r, "Access-Control-Request-Method");
    if (!origin || !*origin) {
        r->err_msg = "Insufficient information. Origin request header needed.";
        strata_req_error(r, S3E_BadRequest, 0);
        return;
    }
    unsigned bit = strata_cors_method_bit(acrm);
    if (!bit) {
        r->err_msg = "Invalid Access-Control-Request-Method.";
        strata_req_error(r, S3E_BadRequest, 0);
        return;
    }
    struct strata_doc_ref *ref = NULL;
    int rc = cors_load(r, &ref);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    const struct strata_cors *c = strata_doc_ref_get(ref);
    const char *acrh = strata_req_hdr(r, "Access-Control-Request-Headers");
    const struct strata_cors_rule *rule = strata_cors_match(c, origin, bit, acrh);
    if (!rule) {
        r->err_msg = c ? "This CORS request is not allowed. This is usually because the "
                         "evalution of Origin, request method / Access-Control-Request-Method "
                         "or Access-Control-Request-Headers are not whitelisted by the "
                         "resource's CORS spec."
                       : "CORS is not enabled for this bucket.";
        strata_doc_ref_put(ref);
        strata_req_error(r, S3E_CORSResponse, 0);
        return;
    }
    struct strata_resp *resp = strata_resp_empty();
    add_common(resp, rule, origin);
    if (acrh && *acrh) {
        /* Echoed in lower case, as AWS does. */
        char *low = strdup(acrh);
        for (char *p = low; p && *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (low)
            strata_resp_hdr(resp, "Access-Control-Allow-Headers", low);
        free(low);
    }
    strata_resp_hdr(resp, "Vary", vary);
    strata_doc_ref_put(ref);
    strata_req_send(r, 200, resp);
}

void strata_cors_resp_hdrs(struct strata_req *r, struct strata_resp *resp)
{
    const char *origin = strata_req_hdr(r, "Origin");
    if (!origin || !*origin || !r->binfo.name[0] || !r->route ||
        r->route->run == strata_h_cors_preflight)
        return;
    struct strata_doc_ref *ref = NULL;
    if (cors_load(r, &ref) != 0 || !ref)
        return;
    const struct strata_cors_rule *rule =
        strata_cors_match(strata_doc_ref_get(ref), origin, strata_cors_method_bit(r->method),
                          NULL);
    if (rule)
        add_common(resp, rule, origin);
    strata_resp_hdr(resp, "Vary", vary);
    strata_doc_ref_put(ref);
}
