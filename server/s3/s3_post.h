/*
 * s3_post.h - POST Object: browser-based uploads with an HTML form
 * (multipart/form-data to the bucket URL), signed with a POST policy
 * (auth/post_policy.h) or anonymous where the bucket policy allows
 * s3:PutObject.  Connection thread of the request.
 */
#ifndef STRATA_SERVER_S3_POST_H
#define STRATA_SERVER_S3_POST_H

#include "srv.h"

/* Once the form has been judged, its fields stand for the request headers
 * of the same name to the code that reads headers (authorisation condition
 * keys, encryption): an x-amz-* field (the signature fields aside),
 * "acl" as x-amz-acl and the tagging document as x-amz-tagging ("k=v&...").
 * NULL when the form has no such field. */
const char *strata_post_hdr(const struct strata_post *p, const char *name);
/* Releases r->s3->post (strata_s3_state_fini); NULL is a no-op. */
void strata_post_free(struct strata_post *p);

#endif /* STRATA_SERVER_S3_POST_H */
