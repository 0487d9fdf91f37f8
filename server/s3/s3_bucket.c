/*
 * s3_bucket.c - bucket handlers: ListBuckets, CreateBucket, HeadBucket,
 * DeleteBucket, GetBucketLocation, Get/PutBucketVersioning.  Run on the
 * request's connection thread; ownership was checked by the request setup
 * (except CreateBucket, which checks it here).
 */
#include "srv.h"
#include "handlers.h"
#include "authz.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>


/* ListBuckets paging (max-buckets, continuation-token, prefix,
 * bucket-region; AWS 2024).  The walk is in name order, so the token is
 * the last name of a page, base64: opaque to clients, and a bucket created
 * or deleted between pages neither repeats nor hides another. */
#define LIST_BUCKETS_MAX 10000

struct list_ctx {
    struct strata_sbuf *b;
    const char *owner;
    const char *after;  /* names <= this were listed already, or NULL */
    const char *prefix; /* or NULL */
    const char *region; /* or NULL */
    const char *my_region; /* the server's: every bucket is in it */
    unsigned max, count;
    char last[STRATA_BUCKET_NAME_MAX + 1];
    bool truncated;
};

static int list_one(const struct strata_bucket_info *bi, void *ud)
{
    struct list_ctx *c = ud;
    if (strcmp(bi->owner, c->owner) != 0)
        return 0; /* only the caller's buckets */
    if ((c->after && strcmp(bi->name, c->after) <= 0) ||
        (c->prefix && strncmp(bi->name, c->prefix, strlen(c->prefix)) != 0) ||
        (c->region && strcmp(c->my_region, c->region) != 0))
        return 0;
    if (c->count == c->max) {
        c->truncated = true;
        return 1; /* one more exists: stop the walk */
    }
    char when[32];
    strata_iso8601_format(bi->created_ms, when, sizeof(when));
    strata_sbuf_puts(c->b, "<Bucket>");
    strata_sbuf_xml_elem(c->b, "Name", bi->name);
    strata_sbuf_xml_elem(c->b, "CreationDate", when);
    strata_sbuf_xml_elem(c->b, "BucketRegion", c->my_region);
    strata_sbuf_puts(c->b, "</Bucket>");
    c->count++;
    snprintf(c->last, sizeof(c->last), "%s", bi->name);
    return c->b->failed ? -1 : 0;
}

/* The paging parameters into c; S3E_NONE or InvalidArgument. */
static enum s3_err list_buckets_opts(struct strata_req *r, struct list_ctx *c, char *after,
                                     size_t after_len)
{
    const char *mb = strata_req_query(r, "max-buckets");
    c->max = UINT_MAX;
    if (mb) {
        char *end;
        unsigned long v = strtoul(mb, &end, 10);
        if (!isdigit((unsigned char)*mb) || *end || v < 1 || v > LIST_BUCKETS_MAX)
            return S3E_InvalidArgument;
        c->max = (unsigned)v;
    }
    const char *tok = strata_req_query(r, "continuation-token");
    if (tok) {
        int n = strata_b64_decode(tok, (uint8_t *)after, after_len - 1);
        if (n <= 0 || memchr(after, '\0', (size_t)n))
            return S3E_InvalidArgument; /* "The continuation token provided is incorrect" */
        after[n] = '\0';
        c->after = after;
    }
    const char *p = strata_req_query(r, "prefix");
    if (p && !strata_s3_utf8_valid(p))
        return S3E_InvalidArgument; /* echoed as XML text */
    c->prefix = p && *p ? p : NULL;
    const char *reg = strata_req_query(r, "bucket-region");
    c->region = reg && *reg ? reg : NULL;
    return S3E_NONE;
}

void strata_h_list_buckets(struct strata_req *r)
{
    struct list_ctx c = {.owner = strata_req_user(r), .my_region = r->srv->cfg.http.region};
    char after[STRATA_BUCKET_NAME_MAX + 2];
    enum s3_err e = list_buckets_opts(r, &c, after, sizeof(after));
    if (strata_req_refused(r, e))
        return;
    struct strata_sbuf b;
    strata_sbuf_init(&b, STRATA_SRV_LIST_PAGE_MAX * 4);
    c.b = &b;
    strata_xml_doc_head(&b, "ListAllMyBucketsResult");
    strata_sbuf_puts(&b, "<Owner>");
    strata_sbuf_xml_elem(&b, "ID", strata_req_user(r));
    strata_sbuf_xml_elem(&b, "DisplayName", strata_req_display_name(r));
    strata_sbuf_puts(&b, "</Owner><Buckets>");
    int rc = strata_meta_bucket_list(r->srv->meta, list_one, &c);
    if (rc < 0 && !b.failed) {
        strata_sbuf_fini(&b);
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_sbuf_puts(&b, "</Buckets>");
    if (c.truncated) {
        char tok[4 * (STRATA_BUCKET_NAME_MAX + 2) / 3 + 8];
        strata_b64_encode((const uint8_t *)c.last, strlen(c.last), tok, sizeof(tok));
        strata_sbuf_xml_elem(&b, "ContinuationToken", tok);
    }
    if (c.prefix)
        strata_sbuf_xml_elem(&b, "Prefix", c.prefix);
    strata_xml_doc_send(r, &b, "ListAllMyBucketsResult");
}

/* CreateBucket's answer: 200 with the bucket's path in Location. */
static void send_created(struct strata_req *r)
{
    char loc[STRATA_BUCKET_NAME_MAX + 2];
    snprintf(loc, sizeof(loc), "/%s", r->bucket);
    strata_req_send_empty_hdr(r, 200, "Location", loc);
}

/* CreateBucket of a name that exists.  AWS keeps a legacy answer for
 * buckets in us-east-1: re-creating one you own is 200 OK and resets its
 * ACL (to the request's, default private); in any other region it is
 * BucketAlreadyOwnedByYou.  Someone else's bucket is BucketAlreadyExists. */
static void recreate(struct strata_req *r, const struct strata_bucket_info *bi)
{
    struct strata_bucket_info cur;
    int rc = strata_bcache_get(r->srv->meta, r->bucket, &cur);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    if (strcmp(cur.owner, bi->owner) != 0) {
        strata_req_error(r, S3E_BucketAlreadyExists, STRATA_EEXISTS);
        return;
    }
    if (strcmp(r->srv->cfg.http.region, "us-east-1") != 0) {
        strata_req_error(r, S3E_BucketAlreadyOwnedByYou, STRATA_EEXISTS);
        return;
    }
    struct strata_policy_ref *ref = NULL;
    rc = strata_policy_cache_get(r->srv->meta, &cur, &ref);
    int own = rc ? STRATA_OWN_NONE : strata_policy_ref_ownership(ref);
    strata_policy_ref_put(ref);
    enum s3_err e = rc ? strata_s3_err_from_strata(rc, S3CTX_BUCKET)
                       : strata_acl_bucket_set(r, own, false);
    if (strata_req_refused(r, e))
        return;
    send_created(r);
}

/* CreateBucketConfiguration's LocationConstraint (lc, "" when none) as
 * AWS answers it at a regional endpoint: a bucket is created in this
 * server's region only.  No constraint means us-east-1, and us-east-1 is
 * never written as one (InvalidLocationConstraint); "EU" is eu-west-1's
 * legacy name. */
static enum s3_err location_check(struct strata_req *r, const char *lc)
{
    const char *mine = r->srv->cfg.http.region;
    if (!*lc && strcmp(mine, "us-east-1") == 0)
        return S3E_NONE;
    if (strcmp(lc, "us-east-1") == 0) {
        r->err_msg = "The specified location-constraint is not valid";
        return S3E_InvalidLocationConstraint;
    }
    if (*lc && (strcmp(lc, mine) == 0 || (strcmp(lc, "EU") == 0 && strcmp(mine, "eu-west-1") == 0)))
        return S3E_NONE;
    snprintf(r->err_msg_buf, sizeof(r->err_msg_buf),
             "The %s location constraint is incompatible for the region specific endpoint this "
             "request was sent to.",
             *lc ? lc : "unspecified");
    r->err_msg = r->err_msg_buf;
    return S3E_IllegalLocationConstraintException;
}

void strata_h_bucket_create(struct strata_req *r)
{
    if (!strata_s3_bucket_name_valid(r->bucket)) {
        strata_req_error(r, S3E_InvalidBucketName, 0);
        return;
    }
    /* Object Ownership of the new bucket: the request's, else
     * --default-object-ownership (BucketOwnerEnforced unless set: AWS's
     * default since April 2023). */
    const char *oh = strata_req_hdr(r, "x-amz-object-ownership");
    int own = oh ? strata_ownership_parse(oh, strlen(oh))
                 : r->srv->cfg.default_ownership ? r->srv->cfg.default_ownership
                                                 : STRATA_OWN_ENFORCED;
    if (own == STRATA_OWN_NONE) {
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    /* The ACL is checked before anything is created. */
    enum s3_err ae = strata_acl_bucket_set(r, own, true);
    if (ae) {
        strata_req_error(r, ae, 0);
        return;
    }
    struct strata_bucket_info bi;
    memset(&bi, 0, sizeof(bi));
    enum s3_err e = strata_xml_location_parse(r->body.data, r->body.len, bi.region,
                                              sizeof(bi.region));
    if (!e)
        e = location_check(r, bi.region);
    if (strata_req_refused(r, e))
        return;
    snprintf(bi.region, sizeof(bi.region), "%s", r->srv->cfg.http.region);
    snprintf(bi.name, sizeof(bi.name), "%s", r->bucket);
    snprintf(bi.owner, sizeof(bi.owner), "%s", strata_req_user(r));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    bi.created_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    bi.versioning = STRATA_VERSIONING_OFF;
    const char *lock = strata_req_hdr(r, "x-amz-bucket-object-lock-enabled");
    if (lock && strcasecmp(lock, "true") == 0) {
        /* Object Lock turns versioning on, for good. */
        bi.object_lock = true;
        bi.versioning = STRATA_VERSIONING_ENABLED;
    }
    int rc = strata_meta_bucket_create(r->srv->meta, &bi);
    strata_bcache_invalidate(r->bucket);
    if (rc == STRATA_EEXISTS) {
        recreate(r, &bi);
        return;
    }
    if (rc == 0) {
        /* Every new bucket records its ownership controls; buckets from
         * before them have none (their objects belong to the writer). */
        const char *name = strata_ownership_name(own);
        rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, "ownership", name,
                                           strlen(name));
        if (rc == 0 && strata_acl_hdrs_present(r))
            rc = strata_acl_bucket_set(r, own, false) ? STRATA_EINTERNAL : 0;
        strata_policy_cache_invalidate(r->bucket);
    }
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    send_created(r);
}

void strata_h_bucket_head(struct strata_req *r)
{
    strata_req_send_empty_hdr(r, 200, "x-amz-bucket-region", r->srv->cfg.http.region);
}

void strata_h_bucket_delete(struct strata_req *r)
{
    int rc = strata_meta_bucket_delete(r->srv->meta, r->bucket);
    strata_bcache_invalidate(r->bucket);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send_empty(r, 204);
}

void strata_h_bucket_location(struct strata_req *r)
{
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 4096, "LocationConstraint");
    /* The server's region (a bucket stored with another constraint by an
     * older Strata is served here all the same); AWS answers an empty
     * constraint for us-east-1. */
    if (strcmp(r->srv->cfg.http.region, "us-east-1") != 0)
        strata_sbuf_xml(&b, r->srv->cfg.http.region);
    strata_xml_doc_send(r, &b, "LocationConstraint");
}

void strata_h_bucket_versioning_get(struct strata_req *r)
{
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 4096, "VersioningConfiguration");
    if (r->binfo.versioning == STRATA_VERSIONING_ENABLED)
        strata_sbuf_puts(&b, "<Status>Enabled</Status>");
    else if (r->binfo.versioning == STRATA_VERSIONING_SUSPENDED)
        strata_sbuf_puts(&b, "<Status>Suspended</Status>");
    strata_xml_doc_send(r, &b, "VersioningConfiguration");
}

void strata_h_bucket_versioning_put(struct strata_req *r)
{
    int status;
    if (strata_req_refused(r, strata_xml_versioning_parse(r->body.data, r->body.len, &status)))
        return;
    if (status < 0) {
        strata_req_error(r, S3E_MalformedXML, 0);
        return;
    }
    if (r->binfo.object_lock && status != STRATA_VERSIONING_ENABLED) {
        strata_req_error(r, S3E_InvalidBucketState, 0);
        return;
    }
    int rc = strata_meta_bucket_set_versioning(r->srv->meta, r->bucket, status);
    strata_bcache_invalidate(r->bucket);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send_empty(r, 200);
}
