/*
 * response.c - the response builders handlers answer with (response.h):
 * libmicrohttpd's responses behind an opaque handle.  strata_req_send and
 * the streamed body live in http.c, next to the request lifecycle they
 * hand over to.
 */
#include "response.h"

#include <stdlib.h>
#include <unistd.h>

#include <microhttpd.h>

#include "request.h"

/* The handle is libmicrohttpd's response itself: no allocation of ours. */
static struct strata_resp *wrap(struct MHD_Response *m)
{
    return (struct strata_resp *)m;
}

static struct MHD_Response *unwrap(struct strata_resp *resp)
{
    return (struct MHD_Response *)resp;
}

struct strata_resp *strata_resp_empty(void)
{
    return wrap(MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

struct strata_resp *strata_resp_take(void *body, size_t len)
{
    struct MHD_Response *m = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!m)
        free(body);
    return wrap(m);
}

struct strata_resp *strata_resp_borrow(const void *body, size_t len, void (*done)(void *cls),
                                       void *cls)
{
    return wrap(
        MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)body, done, cls));
}

struct strata_resp *strata_resp_fd(int fd, uint64_t off, uint64_t len)
{
    struct MHD_Response *m = MHD_create_response_from_fd_at_offset64(len, fd, off);
    if (!m)
        close(fd);
    return wrap(m);
}

void strata_resp_hdr(struct strata_resp *resp, const char *name, const char *value)
{
    if (resp)
        MHD_add_response_header(unwrap(resp), name, value);
}

struct strata_resp *strata_req_xml_response(struct strata_req *r, struct strata_sbuf *b)
{
    if (b->failed) {
        strata_sbuf_fini(b);
        strata_req_error(r, S3E_InternalError, STRATA_ENOMEM);
        return NULL;
    }
    size_t len;
    char *body = strata_sbuf_steal(b, &len);
    strata_sbuf_fini(b);
    struct strata_resp *resp = strata_resp_take(body, len);
    if (!resp) {
        strata_req_error(r, S3E_InternalError, STRATA_ENOMEM);
        return NULL;
    }
    strata_resp_hdr(resp, "Content-Type", "application/xml");
    r->bytes_out += len;
    return resp;
}

void strata_req_send_empty(struct strata_req *r, int status)
{
    strata_req_send(r, status, strata_resp_empty());
}

void strata_req_send_empty_hdr(struct strata_req *r, int status, const char *name,
                               const char *value)
{
    struct strata_resp *resp = strata_resp_empty();
    if (value && value[0])
        strata_resp_hdr(resp, name, value);
    strata_req_send(r, status, resp);
}

void strata_req_send_xml(struct strata_req *r, int status, struct strata_sbuf *b)
{
    struct strata_resp *resp = strata_req_xml_response(r, b);
    if (resp)
        strata_req_send(r, status, resp);
}

void strata_req_send_xml_hdr(struct strata_req *r, int status, struct strata_sbuf *b,
                             const char *name, const char *value)
{
    struct strata_resp *resp = strata_req_xml_response(r, b);
    if (!resp)
        return;
    if (value && value[0])
        strata_resp_hdr(resp, name, value);
    strata_req_send(r, status, resp);
}

void strata_req_send_body(struct strata_req *r, int status, const char *content_type, char *body,
                          size_t len)
{
    struct strata_resp *resp = strata_resp_take(body, len);
    strata_resp_hdr(resp, "Content-Type", content_type);
    if (resp)
        r->bytes_out += len;
    strata_req_send(r, status, resp);
}
