/*
 * form.c - multipart/form-data bodies over libmicrohttpd's post processor
 * (form.h).
 */
#include "form.h"

#include <stdlib.h>

#include <microhttpd.h>

#include "request.h"

struct strata_form {
    struct MHD_PostProcessor *pp;
    strata_form_cb cb;
    void *cls;
};

static enum MHD_Result piece(void *cls, enum MHD_ValueKind kind, const char *key,
                             const char *filename, const char *content_type,
                             const char *transfer_encoding, const char *data, uint64_t off,
                             size_t size)
{
    (void)kind, (void)content_type, (void)transfer_encoding;
    struct strata_form *f = cls;
    return f->cb(f->cls, key, filename, data, off, size) ? MHD_NO : MHD_YES;
}

struct strata_form *strata_form_create(struct strata_req *r, size_t buffer, strata_form_cb cb,
                                       void *cls)
{
    struct strata_form *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->cb = cb;
    f->cls = cls;
    f->pp = r->conn ? MHD_create_post_processor(r->conn, buffer, piece, f) : NULL;
    if (!f->pp) {
        free(f);
        return NULL;
    }
    return f;
}

int strata_form_feed(struct strata_form *f, const void *buf, size_t len)
{
    return MHD_post_process(f->pp, buf, len) == MHD_YES ? 0 : -1;
}

bool strata_form_destroy(struct strata_form *f)
{
    if (!f)
        return false;
    bool complete = MHD_destroy_post_processor(f->pp) == MHD_YES;
    free(f);
    return complete;
}
