/*
 * assert.h - STRATA_ASSERT stays on in release builds (programmer errors
 * must stop the process before they corrupt data); STRATA_DASSERT is for hot
 * paths and only exists in debug builds.
 */
#ifndef STRATA_ASSERT_H
#define STRATA_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#define STRATA_ASSERT(cond)                                                     \
    do {                                                                        \
        if (__builtin_expect(!(cond), 0)) {                                     \
            fprintf(stderr, "strata: assertion failed: %s (%s:%d)\n", #cond,  \
                    __FILE__, __LINE__);                                        \
            abort();                                                            \
        }                                                                       \
    } while (0)

#ifdef NDEBUG
#define STRATA_DASSERT(cond) ((void)0)
#else
#define STRATA_DASSERT(cond) STRATA_ASSERT(cond)
#endif

#define STRATA_FREE(p)                                                          \
    do {                                                                        \
        free(p);                                                                \
        (p) = NULL;                                                             \
    } while (0)

#endif /* STRATA_ASSERT_H */
