/*
 * s3_tagging.c - object tagging (?tagging on a key, per version, stored in
 * the version record by meta) and bucket tagging (the bucket's "tagging"
 * configuration document), plus the x-amz-tagging request header.  Tag
 * sets are kept in one canonical "k=v&k2=v2" form (s3_tags.h).
 * Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"
#include "key_order.h"
#include "notify.h"
#include "repl_hooks.h"
#include "s3_bucket_config.h"

#include <stdlib.h>
#include <string.h>

#define OBJECT_TAGS_MAX 10
#define BUCKET_TAGS_MAX 50

enum s3_err strata_tagging_hdr(struct strata_req *r, struct strata_sbuf *b)
{
    const char *h = strata_req_hdr(r, "x-amz-tagging");
    if (!h || !*h)
        return S3E_NONE;
    char *copy = strdup(h);
    struct strata_qparam tags[OBJECT_TAGS_MAX + 1];
    int n = copy ? strata_s3_query_parse(copy, tags, OBJECT_TAGS_MAX + 1) : -1;
    enum s3_err e = S3E_NONE;
    if (n < 0 || strata_s3_tags_validate(tags, n, OBJECT_TAGS_MAX) != 0)
        e = S3E_InvalidTag;
    else if (strata_s3_tags_encode(b, tags, n) != 0)
        e = S3E_InternalError;
    free(copy);
    return e;
}

int strata_tags_xml(struct strata_sbuf *b, const void *tags, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, tags, len);
    copy[len] = '\0';
    struct strata_qparam t[BUCKET_TAGS_MAX];
    int n = strata_s3_query_parse(copy, t, BUCKET_TAGS_MAX);
    strata_xml_doc_head(b, "Tagging");
    strata_sbuf_puts(b, "<TagSet>");
    for (int i = 0; i < n; i++) {
        strata_sbuf_puts(b, "<Tag>");
        strata_sbuf_xml_elem(b, "Key", t[i].name);
        strata_sbuf_xml_elem(b, "Value", t[i].value);
        strata_sbuf_puts(b, "</Tag>");
    }
    strata_sbuf_puts(b, "</TagSet></Tagging>");
    free(copy);
    return n < 0 || b->failed ? -1 : 0;
}

/* The x-amz-version-id a tagging answer names: only on a bucket that has
 * versioning (enabled or suspended). */
static const char *answered_vid(const struct strata_req *r, const char *vid)
{
    return r->binfo.versioning != STRATA_VERSIONING_OFF ? vid : NULL;
}

/* The <Tagging> answer for a canonical tag set. */
static void send_tags(struct strata_req *r, const void *tags, size_t len, const char *vid)
{
    struct strata_sbuf b;
    strata_sbuf_init(&b, 65536);
    if (strata_tags_xml(&b, tags, len) != 0) {
        strata_sbuf_fini(&b);
        strata_req_error(r, S3E_InternalError, STRATA_ECORRUPT);
        return;
    }
    strata_req_send_xml_hdr(r, 200, &b, "x-amz-version-id", answered_vid(r, vid));
}

static void send_done(struct strata_req *r, int status, const char *vid)
{
    strata_req_send_empty_hdr(r, status, "x-amz-version-id", answered_vid(r, vid));
}

static void obj_error(struct strata_req *r, int rc, const char *vid)
{
    strata_req_error_strata(r, rc, vid && *vid ? S3CTX_VERSION : S3CTX_OBJECT);
}

/* The end of a Put/DeleteObjectTagging (key) or Put/DeleteBucketTagging:
 * the error of rc, or the event and replication of an object's change and
 * status; order (key_order.h, held over the change) released once queued. */
static void tags_answer(struct strata_req *r, int rc, const char *vid, const char *vid_out,
                        int64_t seq_ns, const char *event, int status, void *order)
{
    if (rc == 0 && r->key) {
        strata_notify_emit(r, event, r->key, 0, NULL,
                           r->binfo.versioning != STRATA_VERSIONING_OFF ? vid_out : NULL, seq_ns);
        strata_repl_emit_change(r, r->key, vid_out, STRATA_REPL_TAGS);
    }
    strata_key_order_release(order);
    if (rc) {
        if (!r->key)
            strata_req_error_strata(r, rc, S3CTX_BUCKET);
        else
            obj_error(r, rc, vid);
        return;
    }
    send_done(r, status, vid_out);
}

void strata_h_tagging_get(struct strata_req *r)
{
    void *tags = NULL;
    size_t len = 0;
    int rc;
    if (!r->key) {
        if (!strata_bucket_config_read(r, "tagging", S3E_NoSuchTagSet, &tags, &len))
            return;
        send_tags(r, tags, len, NULL);
        free(tags);
        return;
    }
    const char *vid = strata_req_query(r, "versionId");
    char vid_out[STRATA_VERSION_ID_MAX + 1] = "";
    rc = strata_obj_tags_get(r->srv->meta, r->bucket, r->key, vid, &tags, &len, vid_out);
    if (rc) {
        obj_error(r, rc, vid);
        return;
    }
    send_tags(r, tags, len, vid_out);
    free(tags);
}

/* Stores the tag set data[0..len) on the bucket or the object (data NULL:
 * removes it) and answers with status. */
static void tags_store(struct strata_req *r, const char *data, size_t len, const char *event,
                       int status)
{
    int rc;
    char vid_out[STRATA_VERSION_ID_MAX + 1] = "";
    int64_t seq_ns = 0;
    const char *vid = strata_req_query(r, "versionId");
    void *order = r->key ? strata_key_order_hold(r, r->key) : NULL;
    if (!r->key)
        rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, "tagging", data ? data : "",
                                           data ? len : 0);
    else /* data NULL, len 0: the tag set removed */
        rc = strata_obj_tags_set(r->srv->meta, r->bucket, r->key, vid, data, data ? len : 0,
                                 vid_out, &seq_ns);
    if (rc == STRATA_ENOTFOUND && !r->key && !data)
        rc = 0; /* AWS answers 204 whether or not the bucket had tags */
    tags_answer(r, rc, vid, vid_out, seq_ns, event, status, order);
}

void strata_h_tagging_put(struct strata_req *r)
{
    if (r->key && strata_repl_peer_change(r, "s3:ReplicateTags") < 0)
        return;
    struct strata_sbuf b;
    strata_sbuf_init(&b, STRATA_TAGS_MAX);
    enum s3_err e = strata_xml_tagging_parse(r->body.data, r->body.len,
                                             r->key ? OBJECT_TAGS_MAX : BUCKET_TAGS_MAX, &b);
    if (e)
        strata_req_error(r, e, 0);
    else
        tags_store(r, b.data ? b.data : "", b.len, "ObjectTagging:Put", r->key ? 200 : 204);
    strata_sbuf_fini(&b);
}

void strata_h_tagging_delete(struct strata_req *r)
{
    if (r->key && strata_repl_peer_change(r, "s3:ReplicateTags") < 0)
        return;
    tags_store(r, NULL, 0, "ObjectTagging:Delete", 204);
}
