/*
 * pipeline.h - the request pipeline above the transport: routing and
 * authorisation (s3/), CORS and POST forms (s3/), the admin API (admin/)
 * and the metrics of every layer above the transport, handed to
 * server/http/ as one table (struct strata_pipeline, http/request.h).
 */
#ifndef STRATA_SERVER_PIPELINE_H
#define STRATA_SERVER_PIPELINE_H

#include "request.h"

/* Set in the transport's struct strata_http (pipe) before strata_srv_start. */
extern const struct strata_pipeline strata_daemon_pipeline;

#endif /* STRATA_SERVER_PIPELINE_H */
