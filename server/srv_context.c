/*
 * srv_context.c - the daemon's context handed to the transport
 * (srv_context.h): the options the transport reads (cfg.http) are copied
 * into its own server, so http/ never sees the daemon's.
 */
#include "srv_context.h"

void strata_srv_http_fill(struct strata_srv *s)
{
    s->http.cfg = s->cfg.http;
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
