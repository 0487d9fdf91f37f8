/*
 * repl_hooks.c - the S3 handlers' calls into replication, forwarded to
 * the table the daemon set (repl_hooks.h).  Without one the daemon has no
 * replication: nothing stored or queued, a peer's header and the
 * ?replication operations answered 501.
 */
#include "repl_hooks.h"
#include "handlers.h"

#include "srv.h"

static const struct strata_s3_repl *hooks(const struct strata_req *r)
{
    return r->srv ? r->srv->repl_s3 : NULL;
}

static void not_built(struct strata_req *r)
{
    r->err_msg = "This server has no bucket replication.";
    strata_req_error(r, S3E_NotImplemented, 0);
}

const char *strata_repl_status_for_new(struct strata_req *r, const char *key, const void *tags,
                                       size_t tags_len)
{
    const struct strata_s3_repl *h = hooks(r);
    if (!h)
        return NULL;
    return h->status_for_new(r, key, tags, tags_len);
}

bool strata_repl_configured(struct strata_req *r)
{
    const struct strata_s3_repl *h = hooks(r);
    return h && h->configured(r);
}

int strata_repl_peer(struct strata_req *r, const char *action)
{
    const struct strata_s3_repl *h = hooks(r);
    if (h)
        return h->peer(r, action);
    if (!strata_req_hdr(r, STRATA_REPL_HDR))
        return 0;
    not_built(r);
    return -1;
}

int strata_repl_peer_change(struct strata_req *r, const char *action)
{
    const struct strata_s3_repl *h = hooks(r);
    if (h)
        return h->peer_change(r, action);
    return strata_repl_peer(r, action);
}

void strata_repl_emit_put(struct strata_req *r, const struct strata_obj_info *info)
{
    const struct strata_s3_repl *h = hooks(r);
    if (h)
        h->emit_put(r, info);
}

void strata_repl_emit_change(struct strata_req *r, const char *key, const char *vid,
                             enum strata_repl_change what)
{
    const struct strata_s3_repl *h = hooks(r);
    if (h)
        h->emit_change(r, key, vid, what);
}

void strata_repl_emit_delete_marker(struct strata_req *r, const char *key, const char *vid)
{
    const struct strata_s3_repl *h = hooks(r);
    if (h)
        h->emit_delete_marker(r, key, vid);
}

const char *strata_repl_marker_status(struct strata_req *r, const char *key)
{
    const struct strata_s3_repl *h = hooks(r);
    return h ? h->marker_status(r, key) : NULL;
}

/* The replication configuration handlers: the library's, or 501. */
#define CONFIG_HANDLER(name, member)                                                               \
    void name(struct strata_req *r)                                                                \
    {                                                                                              \
        const struct strata_s3_repl *h = hooks(r);                                                 \
        if (h)                                                                                     \
            h->member(r);                                                                          \
        else                                                                                       \
            not_built(r);                                                                          \
    }
CONFIG_HANDLER(strata_h_replication_get, config_get)
CONFIG_HANDLER(strata_h_replication_put, config_put)
CONFIG_HANDLER(strata_h_replication_delete, config_delete)
#undef CONFIG_HANDLER
