/*
 * s3_list_resume.h - where a listing resumes after a marker or continuation token.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_S3_LIST_RESUME_H
#define STRATA_SERVER_S3_LIST_RESUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Where a listing resumes after marker (exclusive).  When the marker lies
 * inside a common prefix (delimiter set, marker starts with prefix and the
 * rest holds the delimiter), everything under that prefix was already
 * returned as the prefix, so resume after prefix + 0xFF (never a UTF-8
 * byte).  Writes out (>= strlen(marker) + 2 bytes); returns out.
 */
char *strata_s3_list_resume_key(const char *prefix, const char *delim, const char *marker,
                                char *out, size_t out_len);

#endif /* STRATA_SERVER_S3_LIST_RESUME_H */
