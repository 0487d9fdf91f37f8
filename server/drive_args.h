/*
 * drive_args.h - drive arguments of `strata server` and `strata audit`: MinIO-style
 * range expansion and the erasure set size for a drive count.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_DRIVE_ARGS_H
#define STRATA_SERVER_DRIVE_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif /* STRATA_SERVER_DRIVE_ARGS_H */
