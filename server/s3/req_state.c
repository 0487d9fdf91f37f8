/*
 * req_state.c - the S3 handlers' state of a request (srv.h, struct
 * strata_s3_state), as the transport releases and reads it through the
 * pipeline.
 */
#include "s3_post.h"
#include "srv.h"

void strata_s3_state_fini(struct strata_req *r)
{
    struct strata_s3_state *st = r->s3;
    if (st->post)
        strata_post_free(st->post);
    strata_obj_put_abort(st->put); /* not committed: nothing becomes visible */
    strata_obj_get_close(st->get);
    if (st->info_valid)
        strata_obj_info_fini(&st->info);
}

const char *strata_s3_form_hdr(struct strata_req *r, const char *name)
{
    return r->s3->post ? strata_post_hdr(r->s3->post, name) : NULL;
}
