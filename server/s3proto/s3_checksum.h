/*
 * s3_checksum.h - S3 additional checksums: algorithm names, headers, sizes and values.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_S3_CHECKSUM_H
#define STRATA_SERVER_S3_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif /* STRATA_SERVER_S3_CHECKSUM_H */
