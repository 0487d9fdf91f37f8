/*
 * s3_conditional.h - If-Match, If-None-Match, If-Modified-Since and
 * If-Unmodified-Since, evaluated as S3 does.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_S3_CONDITIONAL_H
#define STRATA_SERVER_S3_CONDITIONAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The conditional request headers (any may be NULL). */
struct strata_s3_cond {
    const char *if_match;
    const char *if_none_match;
    const char *if_modified_since;
    const char *if_unmodified_since;
};
/* RFC 7232 section 6 order, as S3 applies it to GET/HEAD: 0 to proceed,
 * 304 (not modified) or 412 (precondition failed).  etag without quotes. */
int strata_s3_cond_eval(const struct strata_s3_cond *c, const char *etag, time_t mtime);
/* Whether an If-Match / If-None-Match list ("a", W/"b", *) names etag. */
bool strata_s3_etag_list_match(const char *list, const char *etag);

#endif /* STRATA_SERVER_S3_CONDITIONAL_H */
