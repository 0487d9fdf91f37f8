/*
 * base64.h - standard base64 (padded), over OpenSSL's EVP block codec.
 * Pure: no I/O, no globals; unit tests and fuzzers call them directly.
 */
#ifndef STRATA_SERVER_BASE64_H
#define STRATA_SERVER_BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Base64 (standard alphabet, padded).  decode returns the byte count or -1
 * for invalid input or when it does not fit out_max. */
int strata_b64_decode(const char *in, uint8_t *out, size_t out_max);
/* Writes a NUL-terminated string; out_max >= 4 * ceil(len / 3) + 1. */
int strata_b64_encode(const uint8_t *in, size_t len, char *out, size_t out_max);

#endif /* STRATA_SERVER_BASE64_H */
