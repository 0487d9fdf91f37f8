/*
 * response.h - how a handler answers: a status, headers, and a body that is
 * empty, a buffer (XML, JSON, text, bytes held elsewhere) or streamed in
 * blocks.  The transport (http/) owns libmicrohttpd; the layers above build
 * a struct strata_resp here and hand it to strata_req_send, so no handler
 * names libmicrohttpd (a test refuses one that does:
 * cmake/check_no_mhd.cmake).
 *
 * Ownership: a response belongs to its builder until strata_req_send, which
 * takes it whatever happens.  Builders return NULL only when out of memory;
 * strata_resp_hdr and strata_req_send accept a NULL response (nothing is
 * added; strata_req_send logs that the answer could not be queued), so a
 * handler checks NULL once, where it can still answer an error.
 * Threads: the request's thread (event thread or storage worker).
 */
#ifndef STRATA_SERVER_HTTP_RESPONSE_H
#define STRATA_SERVER_HTTP_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

struct strata_req;
struct strata_sbuf;

/* A response under construction (an opaque handle of the transport). */
struct strata_resp;

/* No body (Content-Length: 0; a HEAD answer says the same). */
struct strata_resp *strata_resp_empty(void);
/* A body of len bytes the response takes: body was malloc'ed and is freed
 * with the response (also when NULL is returned). */
struct strata_resp *strata_resp_take(void *body, size_t len);
/* A body of len bytes held by the caller until done(cls) runs, once the
 * bytes are sent or dropped (not when NULL is returned); done NULL for
 * bytes that outlive every response (static data). */
struct strata_resp *strata_resp_borrow(const void *body, size_t len, void (*done)(void *cls),
                                       void *cls);
/* Body: len bytes of file fd from off, sent with sendfile where the
 * connection allows; the response owns fd (closed when done, also when
 * this fails). */
struct strata_resp *strata_resp_fd(int fd, uint64_t off, uint64_t len);
/* A response of len bytes produced by r->stream_read(off, buf, n) in
 * blocks of up to block bytes, on the storage workers with one block read
 * ahead (in place when there is no pool).  A read error cuts the body.
 * On HEAD nothing is read: len is the Content-Length. */
struct strata_resp *strata_req_stream_response(struct strata_req *r, uint64_t len, size_t block);
/* An XML body (the sbuf is consumed), Content-Type application/xml, for
 * the caller to add headers to and strata_req_send; NULL after answering
 * InternalError for a failed sbuf or no memory. */
struct strata_resp *strata_req_xml_response(struct strata_req *r, struct strata_sbuf *b);

/* Adds a header (in the order added; the transport's own follow them). */
void strata_resp_hdr(struct strata_resp *resp, const char *name, const char *value);

/* Queue resp with the common headers (request id, host id, Server, the
 * CORS headers of a bucket request, Connection: close when framing was
 * untrusted) and record status for the logs.  Takes resp. */
void strata_req_send(struct strata_req *r, int status, struct strata_resp *resp);
/* Status with an empty body. */
void strata_req_send_empty(struct strata_req *r, int status);
/* Status with an empty body and one header, left out when value is NULL
 * or "" (an answer's x-amz-version-id, say). */
void strata_req_send_empty_hdr(struct strata_req *r, int status, const char *name,
                               const char *value);
/* An XML body (the sbuf is consumed); a failed sbuf answers InternalError. */
void strata_req_send_xml(struct strata_req *r, int status, struct strata_sbuf *b);
/* The same with one header, left out when value is NULL or "". */
void strata_req_send_xml_hdr(struct strata_req *r, int status, struct strata_sbuf *b,
                             const char *name, const char *value);
/* A body of len malloc'ed bytes (taken) with its Content-Type: JSON of the
 * admin API, Prometheus text, stored documents. */
void strata_req_send_body(struct strata_req *r, int status, const char *content_type, char *body,
                          size_t len);

#endif /* STRATA_SERVER_HTTP_RESPONSE_H */
