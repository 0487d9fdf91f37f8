/*
 * s3_cors.h - bucket CORS: the CORSConfiguration document, rule matching,
 * Put/Get/DeleteBucketCors, the OPTIONS preflight and the Access-Control-*
 * headers of actual cross-origin responses.
 *
 * Matching follows AWS: the first rule whose AllowedOrigin matches the
 * Origin (case-sensitive, at most one '*' wildcard), whose AllowedMethod
 * lists the method and (preflight) whose AllowedHeader patterns cover every
 * name of Access-Control-Request-Headers (case-insensitive, one '*') wins.
 * Pure parsing and matching; connection threads.
 */
#ifndef STRATA_SERVER_S3_CORS_H
#define STRATA_SERVER_S3_CORS_H

#include <stdbool.h>
#include <stddef.h>

#include "srv.h"

#define STRATA_CORS_RULES_MAX 100   /* AWS's limit */
#define STRATA_CORS_DOC_MAX (64u * 1024)

enum {
    STRATA_CORS_GET = 1,
    STRATA_CORS_PUT = 2,
    STRATA_CORS_POST = 4,
    STRATA_CORS_DELETE = 8,
    STRATA_CORS_HEAD = 16,
};

struct strata_cors_rule {
    char *id;          /* or NULL */
    char **origins;
    size_t norigins;
    unsigned methods;  /* STRATA_CORS_* bits */
    char **headers;    /* AllowedHeader patterns */
    size_t nheaders;
    char **expose;
    size_t nexpose;
    long max_age_s;    /* -1 when absent */
};

struct strata_cors {
    struct strata_cors_rule *rules;
    size_t nrules;
};

/* The STRATA_CORS_* bit of an HTTP method, 0 for any other. */
unsigned strata_cors_method_bit(const char *method);

/* Parses a CORSConfiguration (s3_xml.c).  S3E_NONE with *out (free with
 * strata_cors_free); MalformedXML (not a configuration, no rules, more
 * than STRATA_CORS_RULES_MAX, a rule without AllowedOrigin or
 * AllowedMethod, a bad MaxAgeSeconds, an ID over 255 characters), or
 * InvalidRequest with *msg (static, AWS's text) for an unsupported
 * method or an origin/header with more than one wildcard. */
enum s3_err strata_xml_cors_parse(const char *body, size_t len, struct strata_cors **out,
                                  const char **msg);
void strata_cors_free(struct strata_cors *c); /* NULL is a no-op */
/* The canonical CORSConfiguration of c (what GET returns); it parses back
 * into the same rules.  b->failed on allocation failure. */
void strata_cors_format(struct strata_sbuf *b, const struct strata_cors *c);

/* The first rule allowing origin + method (a STRATA_CORS_* bit) and every
 * header of req_headers (a comma list, or NULL), or NULL. */
const struct strata_cors_rule *strata_cors_match(const struct strata_cors *c, const char *origin,
                                                 unsigned method, const char *req_headers);
/* '*'-pattern match: at most one '*' standing for any run of characters. */
bool strata_cors_wildcard_match(const char *pattern, const char *s, bool nocase);

/* Adds the Access-Control-* answer headers to resp for a request with an
 * Origin header on a bucket whose CORS configuration matches it (called by
 * strata_req_send for every answer about a bucket, errors included). */
void strata_cors_resp_hdrs(struct strata_req *r, struct strata_resp *resp);

#endif /* STRATA_SERVER_S3_CORS_H */
