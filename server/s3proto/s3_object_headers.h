/*
 * s3_object_headers.h - which request headers are stored with an object, the
 * Content-Encoding it keeps, and RFC 2047 encoded metadata values.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_S3_OBJECT_HEADERS_H
#define STRATA_SERVER_S3_OBJECT_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a request header (lower-case name) is stored with an object and
 * returned on GET/HEAD. */
bool strata_s3_hdr_is_stored(const char *lname);

/* Content-Encoding without the "aws-chunked" token; "" when nothing is
 * left.  Writes out (>= strlen(in) + 1). */
void strata_s3_content_encoding_strip(const char *in, char *out, size_t out_len);

/* An RFC 2047 encoded word that is the whole of in ("=?UTF-8?B?...?=" or
 * "=?UTF-8?Q?...?=", charset UTF-8 or US-ASCII in any case): its decoded
 * bytes, NUL-terminated, into out and true.  false (out undefined) for
 * anything else, a decoding holding a NUL byte, or one not fitting
 * out_len. */
bool strata_s3_rfc2047_decode(const char *in, char *out, size_t out_len);

#endif /* STRATA_SERVER_S3_OBJECT_HEADERS_H */
