/*
 * fuzz.h - the libFuzzer entry point every tests/fuzz/fuzz_<name>.c
 * defines.  Declared here so the targets build warning-free under
 * -Wmissing-prototypes, both with clang's libFuzzer (tests/fuzz/build.sh)
 * and with replay_main.c, the plain main() CTest uses to replay a corpus.
 * Targets must be deterministic and keep no state between inputs other
 * than lazily initialised, read-only globals.
 */
#ifndef STRATA_TESTS_FUZZ_FUZZ_H
#define STRATA_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs one input; returns 0.  A finding is a crash, a sanitizer report or
 * an abort() on a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: names the check (file and line) on stderr, then
 * aborts, so a replay log says which contract an input broke. */
#define STRATA_FUZZ_FAIL()                                                      \
    do {                                                                        \
        fprintf(stderr, "%s:%d: %s: invariant broken\n", __FILE__, __LINE__,  \
                __func__);                                                      \
        abort();                                                                \
    } while (0)

/* A copy of data[0..size) with a NUL appended (caller frees), for the C
 * string parsers: the input may itself hold NULs, which simply end the
 * string early, as they would in a header.  Aborts when out of memory. */
static inline char *strata_fuzz_strdup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* An exact-size copy of data[0..size) (one byte when empty), so ASan sees
 * any read past the end of a parser's (body, len) input; caller frees.
 * Aborts when out of memory. */
static inline char *strata_fuzz_memdup(const uint8_t *data, size_t size)
{
    char *b = malloc(size ? size : 1);
    if (!b)
        abort();
    if (size)
        memcpy(b, data, size);
    return b;
}

#endif /* STRATA_TESTS_FUZZ_FUZZ_H */
