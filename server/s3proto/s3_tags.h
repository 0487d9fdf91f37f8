/*
 * s3_tags.h - object and bucket tag sets: AWS's limits and the stored form.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_S3_TAGS_H
#define STRATA_SERVER_S3_TAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query.h"

struct strata_sbuf;

/*
 * Tag sets.  Stored (opaque to meta) in one canonical form: "k=v&k2=v2",
 * keys and values URL-encoded as strata_url_encode_sbuf does with '/' kept.  validate
 * checks AWS's limits: at most max tags, keys 1..128 and values 0..256
 * characters, no duplicate keys; 0 or -1.  encode appends the canonical
 * form of tags[0..n-1] to b.
 */
int strata_s3_tags_validate(const struct strata_qparam *tags, int n, int max);
int strata_s3_tags_encode(struct strata_sbuf *b, const struct strata_qparam *tags, int n);
/* Number of tags in a canonical tag set (0 for len 0). */
unsigned strata_s3_tags_count(const uint8_t *tags, size_t len);

#endif /* STRATA_SERVER_S3_TAGS_H */
