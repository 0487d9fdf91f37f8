/*
 * hex.h - the one hexadecimal codec of every module: digests as ETags and
 * signatures, data and upload ids in file names and records, version ids,
 * the sizes of aws-chunked chunks.  Header-only (static inline) so erasure/,
 * meta/ and server/ share it without a dependency edge.
 *
 * Pure functions; any thread.
 */
#ifndef STRATA_HEX_H
#define STRATA_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of one hex digit (either case), or -1. */
static inline int strata_hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Lower-case hex of in[0..n) into out: 2n characters and a NUL.  This
 * function can't fail. */
static inline void strata_hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Whether s[0..n) is all hex digits; with lower_only, upper-case digits
 * do not count (identifiers Strata writes itself have one spelling). */
static inline bool strata_hex_is(const char *s, size_t n, bool lower_only)
{
    for (size_t i = 0; i < n; i++)
        if (strata_hex_val(s[i]) < 0 || (lower_only && s[i] >= 'A' && s[i] <= 'F'))
            return false;
    return true;
}

/* 2n hex digits of s into n bytes of out.  0, or -1 (out untouched) when
 * a character is not a digit (or is upper-case with lower_only). */
static inline int strata_hex_decode(const char *s, size_t n, uint8_t *out, bool lower_only)
{
    if (!strata_hex_is(s, 2 * n, lower_only))
        return -1;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(strata_hex_val(s[2 * i]) << 4 | strata_hex_val(s[2 * i + 1]));
    return 0;
}

#endif /* STRATA_HEX_H */
