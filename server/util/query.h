/*
 * query.h - a raw URL query split into decoded name/value pairs.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_QUERY_H
#define STRATA_SERVER_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A decoded query parameter; value is "" for "?acl". */
struct strata_qparam {
    char *name;
    char *value;
};
/*
 * Split buf (a raw query, modified in place) on '&' and '=', decoding %XX
 * and '+' in both parts.  Returns the number of parameters stored (at most
 * max), or -1 when there are more than max or an escape decodes to NUL.
 */
int strata_s3_query_parse(char *buf, struct strata_qparam *out, size_t max);

#endif /* STRATA_SERVER_QUERY_H */
