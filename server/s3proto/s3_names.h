/*
 * s3_names.h - which bucket names and object keys S3 accepts.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_S3_NAMES_H
#define STRATA_SERVER_S3_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* AWS's rules for new buckets: 3-63 chars of [a-z0-9.-], starts and ends
 * with a letter or digit, no "..", not an IPv4 address, no "xn--" prefix,
 * no "-s3alias" / "--ol-s3" suffix. */
bool strata_s3_bucket_name_valid(const char *name);

/* A region name this server can be (--region): 1-31 chars of [A-Za-z0-9-]
 * (us-east-1, eu-west-1, dc1, ...), so it fits the bucket record and a
 * SigV4 credential scope, and is one hostname label as SDKs expect. */
bool strata_s3_region_name_valid(const char *name);

/* True when s is well-formed UTF-8 (no overlong forms, no surrogates, at
 * most U+10FFFF).  S3 keys must be: AWS answers InvalidURI otherwise, and
 * a listing could not carry such a key in XML. */
bool strata_s3_utf8_valid(const char *s);

#endif /* STRATA_SERVER_S3_NAMES_H */
