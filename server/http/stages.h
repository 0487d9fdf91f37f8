/*
 * stages.h - where a request's time goes inside the daemon, for profiling
 * (STRATA_DEBUG_STAGES=N: every N requests that ran a handler on a storage
 * worker, one NOTICE line of mean times per stage).  Off (the default):
 * one predictable branch per request.  Any thread.
 */
#ifndef STRATA_SERVER_HTTP_STAGES_H
#define STRATA_SERVER_HTTP_STAGES_H

#include <stdbool.h>
#include <stdint.h>

/* A request's stamps (CLOCK_MONOTONIC ns; 0: not reached). */
enum strata_stage {
    STRATA_ST_START,  /* request line read (t0) */
    STRATA_ST_BODY,   /* whole body received: the final access call */
    STRATA_ST_RUN,    /* the handler starts on a worker */
    STRATA_ST_ANSWER, /* the handler answered (queued for the event thread) */
    STRATA_ST_QUEUED, /* the event thread queued the answer after the resume */
    STRATA_ST_DONE,   /* MHD sent it: completed */
    STRATA_ST_N,
};

extern bool strata_stages_on;

/* Reads STRATA_DEBUG_STAGES (at daemon start). */
void strata_stages_init(void);
/* Around a handler on a worker: how many run at once (returns the count
 * including this one, for strata_stages_add). */
unsigned strata_stages_run_begin(void);
void strata_stages_run_end(void);
/* One finished request's stamps and the handlers running when it began. */
void strata_stages_add(const uint64_t t[STRATA_ST_N], unsigned running);

#endif /* STRATA_SERVER_HTTP_STAGES_H */
