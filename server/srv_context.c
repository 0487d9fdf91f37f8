/*
 * srv_context.c - the daemon's context handed to the transport
 * (srv_context.h): the options the transport reads are copied into its own
 * configuration, so http/ never sees the daemon's.
 */
#include "srv_context.h"

void strata_srv_http_fill(struct strata_srv *s)
{
    const struct strata_srv_config *c = &s->cfg;
    s->http.cfg = (struct strata_http_config){
        .address = c->address,
        .tls_cert = c->tls_cert,
        .tls_key = c->tls_key,
        .domain = c->domain,
        .region = c->region,
        .max_inflight = c->max_inflight,
        .conn_timeout_s = c->conn_timeout_s,
        .threads = c->threads,
        .workers = c->workers,
        .conns_per_ip = c->conns_per_ip,
        .body_memory = c->body_memory,
        .metrics_public = c->metrics_public,
    };
    s->http.meta = s->meta;
    s->http.srv = s;
}

int strata_srv_start(struct strata_srv *s)
{
    strata_srv_http_fill(s);
    return strata_http_start(&s->http);
}

void strata_srv_stop(struct strata_srv *s, unsigned wait_s)
{
    strata_http_stop(&s->http, wait_s);
}
