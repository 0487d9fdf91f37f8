/*
 * body_blocks.h - the 2 MiB blocks streamed request bodies are handed to
 * the storage workers in (http.c, BODY_BLOCK), kept for the next request
 * instead of going back to malloc.  A fresh 2 MiB block is new pages to
 * the kernel (glibc gives blocks that size back when they are freed): at
 * 32 concurrent 64 MiB PUTs the daemon took about 2,000 page faults per
 * PUT, each page zeroed by the kernel and then overwritten by the body.
 *
 * At most STRATA_BODY_BLOCKS_KEEP blocks are kept (the high-water mark of
 * blocks in use, up to that); a daemon that never sees a large body keeps
 * none.  Any thread; one mutex, held for a pointer push or pop.
 */
#ifndef STRATA_SERVER_HTTP_BODY_BLOCKS_H
#define STRATA_SERVER_HTTP_BODY_BLOCKS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define STRATA_BODY_BLOCKS_KEEP 64 /* 128 MiB at most: two per PUT of 32 in flight */

struct strata_body_blocks {
    pthread_mutex_t mu;
    size_t size; /* every block's size */
    unsigned n;
    uint8_t *free[STRATA_BODY_BLOCKS_KEEP];
};

void strata_body_blocks_init(struct strata_body_blocks *b, size_t size);
/* Frees the kept blocks; no block may be in use. */
void strata_body_blocks_fini(struct strata_body_blocks *b);
/* A block of b->size bytes (contents undefined), or NULL out of memory. */
uint8_t *strata_body_blocks_get(struct strata_body_blocks *b);
/* Gives back a block from strata_body_blocks_get (NULL: nothing). */
void strata_body_blocks_put(struct strata_body_blocks *b, uint8_t *p);

#endif /* STRATA_SERVER_HTTP_BODY_BLOCKS_H */
