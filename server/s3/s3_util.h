/*
 * s3_util.h - pure helpers of the S3 front end: bucket-name rules, Range
 * parsing, conditional-header evaluation, query parsing,
 * base64, drive-range expansion, header selection and listing resume keys.
 * No I/O, no globals: unit tests and fuzzers call them directly, and any
 * thread may.
 */
#ifndef STRATA_SERVER_S3_UTIL_H
#define STRATA_SERVER_S3_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct strata_sbuf;

/* AWS's rules for new buckets: 3-63 chars of [a-z0-9.-], starts and ends
 * with a letter or digit, no "..", not an IPv4 address, no "xn--" prefix,
 * no "-s3alias" / "--ol-s3" suffix. */
bool strata_s3_bucket_name_valid(const char *name);

/* True when s is well-formed UTF-8 (no overlong forms, no surrogates, at
 * most U+10FFFF).  S3 keys must be: AWS answers InvalidURI otherwise, and
 * a listing could not carry such a key in XML. */
bool strata_s3_utf8_valid(const char *s);

/*
 * Range header against an object of size bytes.  Returns
 *   0  serve the whole object (no header, a syntax S3 ignores, or several
 *      ranges, which AWS also answers with the whole object),
 *   1  serve [*off, *off + *len),
 *  -1  unsatisfiable (416 InvalidRange with Content-Range: bytes * /size).
 */
int strata_s3_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len);

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

/* Base64 (standard alphabet, padded).  decode returns the byte count or -1
 * for invalid input or when it does not fit out_max. */
int strata_b64_decode(const char *in, uint8_t *out, size_t out_max);
/* Writes a NUL-terminated string; out_max >= 4 * ceil(len / 3) + 1. */
int strata_b64_encode(const uint8_t *in, size_t len, char *out, size_t out_max);

/*
 * Expand MinIO-style ranges: "/d{1...4}" -> /d1 /d2 /d3 /d4, "{01...16}"
 * zero-pads, "{a...d}" takes letters, several ranges in one argument
 * multiply.  Appends malloc'ed strings to out[*n..max-1]; caller frees each.
 * -1 on a malformed range or when more than max paths result.
 */
int strata_drive_args_expand(const char *arg, char **out, size_t *n, size_t max);
/* Drives per set for n drives: the largest size in 4..16 dividing n; 0 when
 * none does. */
unsigned strata_drive_set_size_pick(unsigned n);

/* Whether a request header (lower-case name) is stored with an object and
 * returned on GET/HEAD. */
bool strata_s3_hdr_is_stored(const char *lname);

/*
 * Where a listing resumes after marker (exclusive).  When the marker lies
 * inside a common prefix (delimiter set, marker starts with prefix and the
 * rest holds the delimiter), everything under that prefix was already
 * returned as the prefix, so resume after prefix + 0xFF (never a UTF-8
 * byte).  Writes out (>= strlen(marker) + 2 bytes); returns out.
 */
char *strata_s3_list_resume_key(const char *prefix, const char *delim, const char *marker,
                                char *out, size_t out_len);

/* S3 checksums: enum strata_cksum_algo <-> header "x-amz-checksum-crc32"
 * and the SDK's algorithm names ("CRC32").  0 / NULL when unknown. */
int strata_s3_cksum_from_hdr(const char *name);
int strata_s3_cksum_from_algo_name(const char *name);
const char *strata_s3_cksum_hdr(int algo);
size_t strata_s3_cksum_len(int algo);
/* Compute algo over buf into out (strata_s3_cksum_len bytes); -1 unknown. */
int strata_s3_cksum_compute(int algo, const void *buf, size_t len, uint8_t *out);

/* An object's S3 checksum value as sent in headers and XML: base64, with
 * "-N" appended for a COMPOSITE checksum of an N-part object, as AWS
 * does.  Returns the length, or 0 when the object has no checksum. */
struct strata_obj_info;
size_t strata_s3_cksum_value(const struct strata_obj_info *in, char *out, size_t out_len);
/* "COMPOSITE" / "FULL_OBJECT" for enum strata_cksum_type, else NULL. */
const char *strata_s3_cksum_type_name(int type);
/* "CRC32" ... for enum strata_cksum_algo, else NULL. */
const char *strata_s3_cksum_algo_name(int algo);

/* Content-Encoding without the "aws-chunked" token; "" when nothing is
 * left.  Writes out (>= strlen(in) + 1). */
void strata_s3_content_encoding_strip(const char *in, char *out, size_t out_len);

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

#endif /* STRATA_SERVER_S3_UTIL_H */
