/*
 * s3_post.h - POST Object: browser-based uploads with an HTML form
 * (multipart/form-data to the bucket URL), signed with a POST policy
 * (auth/post_policy.h) or anonymous where the bucket policy allows
 * s3:PutObject.  Connection thread of the request.
 */
#ifndef STRATA_SERVER_S3_POST_H
#define STRATA_SERVER_S3_POST_H

#include "srv.h"

/* The route's begin/body/run (router.c): begin refuses a body that is not
 * multipart/form-data; body parses the form with libmicrohttpd's post
 * processor and, once the file field starts, checks signature, policy and
 * permission and streams the file into the object layer; run commits and
 * answers as success_action_redirect / success_action_status ask. */
int strata_h_post_begin(struct strata_req *r);
int strata_h_post_body(struct strata_req *r, const void *buf, size_t len);
void strata_h_post_run(struct strata_req *r);
/* Once the form has been judged, its fields stand for the request headers
 * of the same name to the code that reads headers (authorisation condition
 * keys, encryption): an x-amz-* field (the signature fields aside),
 * "acl" as x-amz-acl and the tagging document as x-amz-tagging ("k=v&...").
 * NULL when the form has no such field. */
const char *strata_post_hdr(const struct strata_post *p, const char *name);
/* Releases r->post (completion callback); NULL is a no-op. */
void strata_post_free(struct strata_post *p);

#endif /* STRATA_SERVER_S3_POST_H */
