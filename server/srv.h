/*
 * srv.h - the S3 layer's and the daemon's shared declarations, on top of
 * the transport's request (http/request.h): routing, the helpers handlers
 * share, the XML body parsers, the bucket record cache.
 */
#ifndef STRATA_SERVER_SRV_H
#define STRATA_SERVER_SRV_H

#include "request.h"
#include "srv_context.h"

#include "strata/assert.h"
#include "strata/meta.h"
#include "acl.h"
#include "auth.h"
#include "body_budget.h"
#include "s3_error.h"
#include "http_date.h"
#include "base64.h"
#include "query.h"
#include "response.h"
#include "s3_checksum.h"
#include "s3_conditional.h"
#include "s3_list_resume.h"
#include "s3_names.h"
#include "s3_object_headers.h"
#include "s3_range.h"
#include "s3_tags.h"
#include "sbuf.h"
#include "url.h"
#include "pool.h"
#include "srv_log.h"

/* What the S3 handlers keep of a request between its steps: allocated
 * zeroed with it (r->s3, struct strata_pipeline's state_size), released
 * by strata_s3_state_fini (req_state.c) when the request is freed. */
struct strata_s3_state {
    struct strata_put *put;
    struct strata_post *post; /* POST Object form state (s3_post.c) */
    struct strata_get *get;
    struct strata_obj_info info;
    bool info_valid;
    uint64_t get_off;
    uint64_t get_len;
    int cksum_algo_trailer;
    int sse_err; /* enum s3_err set by strata_sse_part_key_cb (sse.c) */
    struct strata_part_info part; /* GET ?partNumber of a multipart object */
    bool part_valid;
    int acl_need; /* object ACL permission the handler still checks (authz.h) */
    uint8_t md5[16];
    uint8_t cksum[STRATA_CKSUM_RAW_MAX];
};
/* An open put aborted (nothing becomes visible), a read closed, the form
 * and the version read released: struct strata_pipeline's state_fini. */
void strata_s3_state_fini(struct strata_req *r);
/* A field of r's POST Object form, or NULL: its form_hdr. */
const char *strata_s3_form_hdr(struct strata_req *r, const char *name);

/* Limits of the S3 operations (the transport's are in request.h). */
#define STRATA_SRV_LIST_PAGE_MAX (4u << 20)
#define STRATA_SRV_PUT_MAX (5ull << 30) /* single PUT limit, as AWS */
#define STRATA_SRV_META_HDR_MAX 2048    /* x-amz-meta-* bytes, as AWS */

/* ---- routing (router.c) ------------------------------------------------- */

/* The route for method/level and the request's query, or NULL.  *notimpl
 * is set when a known but unsupported subresource or header was asked. */
const struct strata_route *strata_route_find(struct strata_req *r, bool *notimpl);
/* Every route, *n of them (unit tests walk the table). */
const struct strata_route *strata_route_table(size_t *n);

/* ---- S3 answers (s3_answer.c) -------------------------------------------- */

#define STRATA_S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
/* The XML declaration and <root xmlns="S3 namespace"> appended to b. */
void strata_xml_doc_head(struct strata_sbuf *b, const char *root);
/* The same into b, initialised first with a ceiling of max bytes. */
void strata_xml_doc_open(struct strata_sbuf *b, size_t max, const char *root);
/* </root> appended to b, then b answered with 200 (b is taken). */
void strata_xml_doc_send(struct strata_req *r, struct strata_sbuf *b, const char *root);
/* When e is an error: r answered with it, true.  S3E_NONE: false. */
bool strata_req_refused(struct strata_req *r, enum s3_err e);

/* ---- S3 helpers shared by handlers --------------------------------------- */

/* x-amz-acl or any x-amz-grant-* header present. */
bool strata_acl_hdrs_present(struct strata_req *r);
/* The ACL the request's x-amz-acl / x-amz-grant-* headers set on a
 * resource owned by owner (*given false and the default when none).
 * InvalidRequest for both kinds at once (r->err_msg set), else as
 * strata_acl_canned / strata_acl_grant_hdr. */
enum s3_err strata_acl_from_hdrs(struct strata_req *r, bool bucket, const char *owner,
                                 const char *bucket_owner, struct strata_acl *out, bool *given);
struct strata_policy_ref;
/* Whether the bucket (ref: its access state) accepts setting a: under
 * BucketOwnerEnforced only the bucket owner's full control
 * (AccessControlListNotSupported), and with BlockPublicAcls nothing
 * public (AccessDenied).  S3E_NONE when !given. */
enum s3_err strata_acl_check_set(struct strata_req *r, const struct strata_policy_ref *ref,
                                 const struct strata_acl *a, bool given);
/* The ACL of an object r creates in r->binfo (PutObject, CopyObject,
 * CreateMultipartUpload) from its headers, its writer and the bucket's
 * ownership controls, in stored form into out (left empty: the default).
 * Errors as strata_acl_from_hdrs and strata_acl_check_set. */
enum s3_err strata_acl_new_object(struct strata_req *r, struct strata_sbuf *out);
/* CreateBucket: the bucket ACL of the request's headers for a bucket with
 * the given ownership (InvalidBucketAclWithObjectOwnership for a
 * non-private ACL under BucketOwnerEnforced), stored unless check_only. */
enum s3_err strata_acl_bucket_set(struct strata_req *r, int ownership, bool check_only);
/* x-amz-tagging request header into canonical form in b (empty when the
 * header is absent).  S3E_NONE or InvalidTag. */
enum s3_err strata_tagging_hdr(struct strata_req *r, struct strata_sbuf *b);
struct strata_lc_config;
/* The canonical LifecycleConfiguration document of c (what GET returns);
 * it parses back into the same rules.  b->failed on allocation failure. */
void strata_lifecycle_format(struct strata_sbuf *b, const struct strata_lc_config *c);
/* x-amz-expiration on resp when a current-version Expiration rule of the
 * bucket applies to info (the latest version, not a delete marker). */
void strata_lifecycle_expiration_hdr(struct strata_req *r, const struct strata_obj_info *info,
                                     struct strata_resp *resp);
/* The stored tag-set encoding (s3_tags.h) decoded for lifecycle filters:
 * a strata_ilm_tags_decode_cb (max <= STRATA_SRV_QPARAMS_MAX). */
int strata_srv_tags_decode(const uint8_t *raw, size_t len, struct strata_kv *out, size_t max,
                           char *buf, size_t buf_len);

/* ---- Object Lock (s3_object_lock.c) ------------------------------------- */

/* x-amz-restore of r->s3->info's version on an archive tier (s3_restore.c). */
void strata_restore_hdr_add(struct strata_req *r, struct strata_resp *resp);
/* x-amz-object-lock-{mode,retain-until-date,legal-hold} of a new object
 * (PutObject, CreateMultipartUpload, CopyObject) into *out (zeroed when
 * absent).  InvalidArgument for bad values, a lone mode or date, or a date
 * not in the future; InvalidRequest when the bucket has no Object Lock.
 * Sets r->err_msg to AWS's message. */
enum s3_err strata_lock_hdrs_parse(struct strata_req *r, struct strata_obj_lock *out);
/* The x-amz-object-lock-* answer headers of a version (GET, HEAD). */
void strata_lock_hdrs_add(struct strata_resp *resp, const struct strata_obj_lock *lock);
/* The caller as a lock actor: bypass only with x-amz-bypass-governance-retention:
 * true from a user holding s3:BypassGovernanceRetention (authz.h). */
struct strata_lock_actor strata_lock_actor_of(struct strata_req *r);

/* Stored headers chosen from a PUT / CreateMultipartUpload request. */
#define STRATA_PUT_HDRS_MAX 64
struct strata_hdr_set {
    struct strata_kv kv[STRATA_PUT_HDRS_MAX];
    size_t n;
    char buf[STRATA_HDRS_MAX + 1024];
    size_t used;
    size_t meta_bytes;
};
/* Shared by PutObject and the multipart handlers (s3_object_put.c). */
enum s3_err strata_put_hdrs_pick(struct strata_req *r, struct strata_hdr_set *h);
/* The same over any name/value list (POST Object's form fields). */
enum s3_err strata_put_hdrs_pick_from(const struct strata_auth_hdr *hdrs, size_t nhdrs,
                                      struct strata_hdr_set *h);
/*
 * What a new object (PutObject, CreateMultipartUpload) takes from its
 * request: its ACL (x-amz-acl, x-amz-grant-*; strata_acl_new_object),
 * x-amz-storage-class (a class a configured tier serves), the stored headers
 * and x-amz-tagging.  On S3E_NONE the caller releases it
 * with strata_new_obj_fini; on an error nothing is left to release.
 */
struct strata_new_obj {
    struct strata_hdr_set *h;
    struct strata_sbuf tags;
    struct strata_sbuf acl;      /* stored form; empty: the default ACL */
    struct strata_obj_lock lock; /* x-amz-object-lock-* */
    const char *storage_class;   /* x-amz-storage-class (STANDARD when absent) */
    const char *tier;            /* the tier serving it (NULL: the one STANDARD maps to) */
};
/* x-amz-storage-class: the class and the configured tier serving it
 * (tier NULL when the header is absent: STANDARD's); InvalidStorageClass
 * for an unknown class or one whose tier is not configured. */
enum s3_err strata_storage_class_pick(struct strata_req *r, const char **cls, const char **tier);
/* The same for a class given otherwise (a POST form field; NULL: absent). */
enum s3_err strata_storage_class_resolve(struct strata_srv *srv, const char *sc,
                                        const char **cls, const char **tier);
enum s3_err strata_new_obj_parse(struct strata_req *r, struct strata_new_obj *n);
void strata_new_obj_fini(struct strata_new_obj *n);
/* Point the same-named fields of dst_ (a strata_put_opts or a
 * strata_mpu_opts: both describe the new object) at src_'s (a strata_new_obj,
 * kept until the call that takes dst_ returns). */
#define STRATA_NEW_OBJ_FILL(dst_, src_)                                                            \
    do {                                                                                           \
        (dst_)->hdrs = (src_)->h->kv;                                                              \
        (dst_)->nhdrs = (src_)->h->n;                                                              \
        (dst_)->tags = (src_)->tags.data;                                                          \
        (dst_)->tags_len = (src_)->tags.len;                                                       \
        (dst_)->acl = (src_)->acl.data;                                                            \
        (dst_)->acl_len = (src_)->acl.len;                                                         \
        (dst_)->lock = (src_)->lock;                                                               \
        (dst_)->storage_class = (src_)->storage_class;                                             \
        (dst_)->tier = (src_)->tier;                                                               \
    } while (0)
/* If-Match of a write, its quotes taken off, in etag; NULL when absent. */
const char *strata_put_if_match(struct strata_req *r, char etag[STRATA_ETAG_MAX + 1]);
/* Commit r->s3->put (always consumed) into *info (strata_obj_info_fini it):
 * 0, or non-zero once the error is answered. */
int strata_put_commit(struct strata_req *r, struct strata_obj_info *info);
/* The headers every answer to a stored object carries: ETag, SSE, the
 * version id where versioning answers one, the checksum. */
void strata_put_answer_hdrs(struct strata_req *r, const struct strata_obj_info *info,
                            struct strata_resp *resp);
enum s3_err strata_put_body_size(struct strata_req *r, uint64_t *size);
/* Content-MD5, signed sha256, x-amz-checksum-* / trailer into o. */
enum s3_err strata_put_digests(struct strata_req *r, struct strata_put_opts *o);

/* ---- XML request bodies (s3_xml.c), libxml2 ----------------------------- */

/* CreateBucketConfiguration: region into out ("" when none given).
 * Returns S3E_NONE, MalformedXML, InvalidLocationConstraint (too long) or
 * NotImplemented for any element besides LocationConstraint (Location,
 * Bucket, Tags). */
enum s3_err strata_xml_location_parse(const char *body, size_t len, char *out, size_t out_len);
/* VersioningConfiguration: *status = enum strata_versioning, or -1 for no
 * Status element.  MalformedXML on bad XML or an unknown Status. */
enum s3_err strata_xml_versioning_parse(const char *body, size_t len, int *status);

struct strata_xml_delobj {
    char *key;
    char *version_id; /* NULL when absent */
};
/* Delete: up to max objects (malloc'ed array and strings; free with
 * strata_xml_delete_free).  MalformedXML on bad XML, no objects or > max;
 * NotImplemented for an Object with ETag, LastModifiedTime or Size (a
 * conditional delete, not evaluated). */
enum s3_err strata_xml_delete_parse(const char *body, size_t len, size_t max,
                                    struct strata_xml_delobj **objs, size_t *n, bool *quiet);
void strata_xml_delete_free(struct strata_xml_delobj *objs, size_t n);
struct strata_xml_part {
    unsigned part_number;
    char *etag;
    uint8_t cksum[STRATA_CKSUM_RAW_MAX];
    size_t cksum_len; /* 0 when no Checksum* element */
};
/* CompleteMultipartUpload: parts in request order (malloc'ed; free with
 * strata_xml_complete_free).  MalformedXML on bad XML, no parts, > max,
 * a bad PartNumber or checksum. */
enum s3_err strata_xml_complete_parse(const char *body, size_t len, size_t max,
                                      struct strata_xml_part **parts, size_t *n);
void strata_xml_complete_free(struct strata_xml_part *parts, size_t n);
/* Tagging: the canonical tag-set encoding (see s3_tags.h) appended to out.
 * MalformedXML, or InvalidTag over max tags / bad lengths / duplicates. */
enum s3_err strata_xml_tagging_parse(const char *body, size_t len, int max,
                                     struct strata_sbuf *out);
/* The <Tagging> document of a canonical tag set appended to b: 0, or -1
 * (out of memory, b full, or not a tag set).  s3_tagging.c. */
int strata_tags_xml(struct strata_sbuf *b, const void *tags, size_t len);
/* ObjectLockConfiguration: *enabled when ObjectLockEnabled is "Enabled";
 * the default retention (mode 0 when no Rule).  MalformedXML, or
 * InvalidRetentionPeriod for Days/Years out of range (r->err_msg set). */
enum s3_err strata_xml_lock_config_parse(const char *body, size_t len, bool *enabled, int *mode,
                                         unsigned *days, unsigned *years, const char **msg);
/* Retention: mode 0 with *until_ms 0 when both are absent (removal).
 * MalformedXML for a lone Mode or date, an unknown mode or a bad date. */
enum s3_err strata_xml_retention_parse(const char *body, size_t len, int *mode,
                                       int64_t *until_ms);
/* OwnershipControls: the one rule's ObjectOwnership (enum
 * strata_ownership).  MalformedXML for bad XML, no or several rules or an
 * unknown value. */
enum s3_err strata_xml_ownership_parse(const char *body, size_t len, int *own);
/* PublicAccessBlockConfiguration: STRATA_PAB_* bits of the elements that
 * are "true" (absent ones are false).  MalformedXML otherwise. */
enum s3_err strata_xml_pab_parse(const char *body, size_t len, unsigned *bits);
/* LegalHold: Status ON/OFF, else MalformedXML. */
enum s3_err strata_xml_legal_hold_parse(const char *body, size_t len, bool *on);
/* RestoreRequest: Days (>= 1, 0 when absent), Tier or GlacierJobParameters'
 * Tier (Standard, Bulk, Expedited), Description; else MalformedXML.  A
 * SELECT restore (Type, SelectParameters, OutputLocation): NotImplemented. */
enum s3_err strata_xml_restore_parse(const char *body, size_t len, unsigned *days);
/* AccessControlPolicy into out (owner and grants as written; e-mail and
 * ID grantees resolved through resolve).  MalformedACLError for bad XML,
 * a missing Owner/ID, Grantee or Permission or an unknown permission;
 * InvalidArgument for an unknown ID or group URI or over 100 grants;
 * UnresolvableGrantByEmailAddress for an unknown address. */
enum s3_err strata_xml_acl_parse(const char *body, size_t len, struct strata_acl *out,
                                 strata_acl_resolve_cb resolve, void *ud);
struct _xmlNode;
/* The hardened parse of any request body (no DOCTYPE, no network), for
 * parsers outside s3_xml.c (server/notify): the libxml2 document (free
 * with xmlFreeDoc) or NULL for MalformedXML. */
struct _xmlDoc *strata_xml_body_parse(const char *body, size_t len);
/* The same, and its root element when it is named root_name (free *doc
 * with xmlFreeDoc); NULL for MalformedXML, with nothing left to free. */
struct _xmlNode *strata_xml_body_root(const char *body, size_t len, const char *root_name,
                                      struct _xmlDoc **doc);
/* Whether n is the element name; its text content malloc'ed (caller
 * frees), or NULL. */
bool strata_xml_named(const struct _xmlNode *n, const char *name);
char *strata_xml_text(struct _xmlNode *n);

/* ---- bucket records (bucket_cache.c) ----------------------------------- */

/* strata_meta_bucket_get behind a 1 s cache; same errors. */
int strata_bcache_get(struct strata_meta *m, const char *name, struct strata_bucket_info *out);
/* Call after this daemon changes or deletes bucket name (NULL: every
 * bucket, when another gateway's changes may have been missed). */
void strata_bcache_invalidate(const char *name);
/* Drop what the bucket caches (records, policies, configuration documents)
 * hold of bucket (NULL: everything) whenever another gateway on the same
 * store changed it (cache_watch.c; strata_meta_on_invalidate). */
int strata_srv_caches_watch(struct strata_srv *s);
void strata_srv_caches_unwatch(struct strata_srv *s);

#endif /* STRATA_SERVER_SRV_H */
