/*
 * body_blocks.c - kept body blocks (body_blocks.h).  Any thread.
 */
#include "body_blocks.h"

#include <stdlib.h>

void strata_body_blocks_init(struct strata_body_blocks *b, size_t size)
{
    pthread_mutex_init(&b->mu, NULL);
    b->size = size;
    b->n = 0;
}

void strata_body_blocks_fini(struct strata_body_blocks *b)
{
    while (b->n > 0)
        free(b->free[--b->n]);
    pthread_mutex_destroy(&b->mu);
}

uint8_t *strata_body_blocks_get(struct strata_body_blocks *b)
{
    uint8_t *p = NULL;
    pthread_mutex_lock(&b->mu);
    if (b->n > 0)
        p = b->free[--b->n];
    pthread_mutex_unlock(&b->mu);
    return p ? p : malloc(b->size);
}

void strata_body_blocks_put(struct strata_body_blocks *b, uint8_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&b->mu);
    if (b->n < STRATA_BODY_BLOCKS_KEEP) {
        b->free[b->n++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&b->mu);
    free(p);
}
