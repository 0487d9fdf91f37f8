/*
 * form.h - multipart/form-data request bodies (POST Object's HTML form),
 * parsed by libmicrohttpd's post processor behind the transport's handle.
 * The boundary comes from the request's Content-Type.  Threads: the one
 * feeding the body.
 */
#ifndef STRATA_SERVER_HTTP_FORM_H
#define STRATA_SERVER_HTTP_FORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strata_req;
struct strata_form;

/* A piece of a field: its name, the file name for a file field (else
 * NULL), size bytes of its value at off.  Non-zero stops the parse. */
typedef int (*strata_form_cb)(void *cls, const char *name, const char *filename, const char *data,
                              uint64_t off, size_t size);

/* A parser of r's body, buffering fields in up to buffer bytes; NULL when
 * the Content-Type names no boundary (or out of memory). */
struct strata_form *strata_form_create(struct strata_req *r, size_t buffer, strata_form_cb cb,
                                       void *cls);
/* The next len bytes of the body: 0, or -1 when the body is malformed or
 * the callback stopped. */
int strata_form_feed(struct strata_form *f, const void *buf, size_t len);
/* Releases f (NULL: false); whether the body ended where the form does. */
bool strata_form_destroy(struct strata_form *f);

#endif /* STRATA_SERVER_HTTP_FORM_H */
