/*
 * s3_range.h - the Range header of GET/HEAD, as S3 interprets it.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_S3_RANGE_H
#define STRATA_SERVER_S3_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Range header against an object of size bytes.  Returns
 *   0  serve the whole object (no header, a syntax S3 ignores, or several
 *      ranges, which AWS also answers with the whole object),
 *   1  serve [*off, *off + *len),
 *  -1  unsatisfiable (416 InvalidRange with Content-Range: bytes * /size).
 */
int strata_s3_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len);

#endif /* STRATA_SERVER_S3_RANGE_H */
