/*
 * s3_list.c - ListObjectsV2, ListObjects (V1) and ListObjectVersions.  One
 * page per request, built from one strata_obj_list call (memory bounded by
 * the page, max 1000 entries).  Continuation tokens are opaque: base64 of
 * the key to resume after.  Connection thread.
 */
#include "srv.h"
#include "handlers.h"
#include "authz.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


struct page {
    struct strata_req *r;
    struct strata_sbuf items;    /* Contents / Version / DeleteMarker */
    struct strata_sbuf prefixes; /* CommonPrefixes */
    unsigned count;
    bool url;
    bool owner;
    bool versions;
    int ownership; /* of the bucket, enum strata_ownership; -1: not looked up yet */
    struct strata_list_opts o;
    struct strata_list_result res;
    int mk; /* max-keys */
};

/* The object's owner: the bucket owner, unless the version's ACL names
 * another (written by another user while ACLs were enabled). */
static void owner_elem(struct page *p, struct strata_sbuf *b, const struct strata_obj_info *in)
{
    char id[STRATA_ACL_ID_MAX];
    const char *owner = p->r->binfo.owner;
    if (in->acl && p->ownership < 0) {
        struct strata_policy_ref *ref = NULL;
        p->ownership = strata_policy_cache_get(p->r->srv->meta, &p->r->binfo, &ref) == 0
                           ? strata_policy_ref_ownership(ref)
                           : STRATA_OWN_ENFORCED;
        strata_policy_ref_put(ref);
    }
    if (in->acl && p->ownership != STRATA_OWN_ENFORCED &&
        strata_acl_owner(in->acl, in->acl_len, id) == 0)
        owner = id;
    const struct strata_cred *u = strata_creds_find(p->r->http->creds, owner);
    strata_sbuf_puts(b, "<Owner>");
    strata_sbuf_xml_elem(b, "ID", owner);
    strata_sbuf_xml_elem(b, "DisplayName", u ? u->display_name : owner);
    strata_sbuf_puts(b, "</Owner>");
}

static int entry_cb(const struct strata_list_entry *e, void *ud)
{
    struct page *p = ud;
    p->count++;
    if (e->is_prefix) {
        strata_sbuf_puts(&p->prefixes, "<CommonPrefixes>");
        strata_url_xml_elem(&p->prefixes, "Prefix", e->key, p->url);
        strata_sbuf_puts(&p->prefixes, "</CommonPrefixes>");
        return p->prefixes.failed ? STRATA_ENOMEM : 0;
    }
    const struct strata_obj_info *in = e->info;
    struct strata_sbuf *b = &p->items;
    char when[32];
    strata_iso8601_format(in->mtime_ms, when, sizeof(when));
    /* Plain appends, no printf: a page is up to 1,000 of these. */
    const char *tag = !p->versions ? "Contents" : in->delete_marker ? "DeleteMarker" : "Version";
    strata_sbuf_puts(b, "<");
    strata_sbuf_puts(b, tag);
    strata_sbuf_puts(b, ">");
    strata_url_xml_elem(b, "Key", e->key, p->url);
    if (p->versions) {
        strata_sbuf_xml_elem(b, "VersionId", in->version_id);
        strata_sbuf_puts(b, in->is_latest ? "<IsLatest>true</IsLatest>"
                                          : "<IsLatest>false</IsLatest>");
    }
    strata_sbuf_puts(b, "<LastModified>");
    strata_sbuf_puts(b, when);
    strata_sbuf_puts(b, "</LastModified>");
    if (!in->delete_marker) {
        char num[24], *np = num + sizeof(num);
        uint64_t v = in->size;
        do
            *--np = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        strata_sbuf_puts(b, "<ETag>&quot;");
        strata_sbuf_xml(b, in->etag);
        strata_sbuf_puts(b, "&quot;</ETag><Size>");
        strata_sbuf_append(b, np, (size_t)(num + sizeof(num) - np));
        strata_sbuf_puts(b, "</Size>");
        strata_sbuf_xml_elem(b, "StorageClass", in->storage_class[0] ? in->storage_class
                                                                      : "STANDARD");
    }
    if (p->owner || p->versions)
        owner_elem(p, b, in);
    strata_sbuf_puts(b, "</");
    strata_sbuf_puts(b, tag);
    strata_sbuf_puts(b, ">");
    return b->failed ? STRATA_ENOMEM : 0;
}

/* max-keys: default 1000, capped at 1000; -1 for a bad value. */
static int max_keys(struct strata_req *r)
{
    const char *s = strata_req_query(r, "max-keys");
    if (!s)
        return 1000;
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || !isdigit((unsigned char)*s))
        return -1;
    return v > 1000 ? 1000 : (int)v;
}

static void page_fini(struct page *p)
{
    strata_sbuf_fini(&p->items);
    strata_sbuf_fini(&p->prefixes);
}

/* Common validation; returns S3E_NONE and fills the shared options. */
static enum s3_err common_opts(struct strata_req *r, struct page *p, struct strata_list_opts *o,
                               int *mk)
{
    memset(o, 0, sizeof(*o));
    o->bucket = r->bucket;
    o->prefix = strata_req_query(r, "prefix");
    o->delimiter = strata_req_query(r, "delimiter");
    if (o->delimiter && !*o->delimiter)
        o->delimiter = NULL; /* "delimiter=" is no delimiter, and is not echoed */
    /* Listings are always in key order, which satisfies allow-unordered
     * (an RGW extension); RGW refuses it with a delimiter, and so do we. */
    const char *unordered = strata_req_query(r, "allow-unordered");
    if (unordered && strcasecmp(unordered, "true") == 0 && o->delimiter)
        return S3E_InvalidArgument;
    /* Echoed parameters must be UTF-8 to be XML text (keys are, since
     * PutObject refuses others). */
    static const char *const echoed[] = {"prefix", "delimiter", "start-after", "marker",
                                         "key-marker"};
    for (size_t i = 0; i < sizeof(echoed) / sizeof(echoed[0]); i++) {
        const char *v = strata_req_query(r, echoed[i]);
        if (v && !strata_s3_utf8_valid(v))
            return S3E_InvalidArgument;
    }
    const char *enc = strata_req_query(r, "encoding-type");
    if (enc && strcmp(enc, "url") != 0)
        return S3E_InvalidArgument;
    p->url = enc != NULL;
    *mk = max_keys(r);
    if (*mk < 0)
        return S3E_InvalidArgument;
    o->max_keys = (unsigned)*mk;
    return S3E_NONE;
}

/* Every listing's start: p set up for r, the options all share checked
 * (S3E_NONE, or the error to answer once the page is closed). */
static enum s3_err page_start(struct page *p, struct strata_req *r)
{
    memset(p, 0, sizeof(*p));
    p->r = r;
    p->ownership = -1;
    strata_sbuf_init(&p->items, STRATA_SRV_LIST_PAGE_MAX);
    strata_sbuf_init(&p->prefixes, STRATA_SRV_LIST_PAGE_MAX);
    return common_opts(r, p, &p->o, &p->mk);
}

/* Runs the listing of p->o (unless max-keys is 0) into p and p->res. */
static int run_list(struct page *p, char *resume, size_t resume_len)
{
    struct strata_list_opts *o = &p->o;
    struct strata_list_result *res = &p->res;
    memset(res, 0, sizeof(*res));
    if (o->start_after && *o->start_after) {
        strata_s3_list_resume_key(o->prefix, o->delimiter, o->start_after, resume, resume_len);
        o->start_after = resume;
    }
    if (o->max_keys == 0)
        return 0;
    return strata_obj_list(p->r->srv->meta, o, entry_cb, p, res);
}

static void finish(struct strata_req *r, struct page *p, struct strata_sbuf *b, const char *root)
{
    strata_sbuf_append(b, p->items.data ? p->items.data : "", p->items.len);
    strata_sbuf_append(b, p->prefixes.data ? p->prefixes.data : "", p->prefixes.len);
    strata_sbuf_printf(b, "</%s>", root);
    if (p->items.failed || p->prefixes.failed)
        b->failed = true;
    page_fini(p);
    strata_req_send_xml(r, 200, b);
}

static void head_common(struct strata_sbuf *b, const struct page *p)
{
    const struct strata_list_opts *o = &p->o;
    strata_sbuf_xml_elem(b, "Name", p->r->bucket);
    strata_url_xml_elem(b, "Prefix", o->prefix ? o->prefix : "", p->url);
    if (o->delimiter)
        strata_url_xml_elem(b, "Delimiter", o->delimiter, p->url);
    strata_sbuf_printf(b, "<MaxKeys>%d</MaxKeys>", p->mk);
    if (p->url)
        strata_sbuf_puts(b, "<EncodingType>url</EncodingType>");
}

/*
 * After the listing ran: answer the error if parsing (e) or the listing (rc)
 * failed and return false; otherwise open the reply document in b with its
 * root element and the fields every listing shares, and return true.
 */
static bool page_open(struct strata_req *r, struct page *p, enum s3_err e, int rc,
                      struct strata_sbuf *b, const char *root)
{
    if (e || rc) {
        page_fini(p);
        if (e)
            strata_req_error(r, e, 0);
        else
            strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return false;
    }
    strata_xml_doc_open(b, STRATA_SRV_LIST_PAGE_MAX * 2 + 65536, root);
    head_common(b, p);
    return true;
}

static void list_v2(struct strata_req *r)
{
    struct page p;
    enum s3_err e = page_start(&p, r);
    const char *token = strata_req_query(r, "continuation-token");
    const char *start_after = strata_req_query(r, "start-after");
    const char *fo = strata_req_query(r, "fetch-owner");
    p.owner = fo && strcmp(fo, "true") == 0;
    char tokkey[STRATA_KEY_MAX + 2], resume[STRATA_KEY_MAX + 3];
    p.o.start_after = start_after;
    if (!e && token) {
        int n = strata_b64_decode(token, (uint8_t *)tokkey, STRATA_KEY_MAX);
        if (n <= 0)
            e = S3E_InvalidArgument;
        else {
            tokkey[n] = '\0';
            p.o.start_after = tokkey;
        }
    }
    int rc = e ? 0 : run_list(&p, resume, sizeof(resume));
    struct strata_sbuf b;
    if (!page_open(r, &p, e, rc, &b, "ListBucketResult"))
        return;
    strata_sbuf_printf(&b, "<KeyCount>%u</KeyCount><IsTruncated>%s</IsTruncated>", p.count,
                       p.res.truncated ? "true" : "false");
    if (token)
        strata_sbuf_xml_elem(&b, "ContinuationToken", token);
    if (start_after)
        strata_url_xml_elem(&b, "StartAfter", start_after, p.url);
    if (p.res.truncated) {
        char tok[4 * (STRATA_KEY_MAX + 3) / 3 + 8];
        const char *next = p.res.next_key;
        strata_b64_encode((const uint8_t *)next, strlen(next), tok, sizeof(tok));
        strata_sbuf_xml_elem(&b, "NextContinuationToken", tok);
    }
    finish(r, &p, &b, "ListBucketResult");
}

static void list_v1(struct strata_req *r)
{
    struct page p;
    enum s3_err e = page_start(&p, r);
    p.owner = true;
    const char *marker = strata_req_query(r, "marker");
    char resume[STRATA_KEY_MAX + 3];
    p.o.start_after = marker;
    int rc = e ? 0 : run_list(&p, resume, sizeof(resume));
    struct strata_sbuf b;
    if (!page_open(r, &p, e, rc, &b, "ListBucketResult"))
        return;
    strata_url_xml_elem(&b, "Marker", marker ? marker : "", p.url);
    strata_sbuf_printf(&b, "<IsTruncated>%s</IsTruncated>", p.res.truncated ? "true" : "false");
    if (p.res.truncated && p.o.delimiter && *p.o.delimiter)
        strata_url_xml_elem(&b, "NextMarker", p.res.next_key, p.url);
    finish(r, &p, &b, "ListBucketResult");
}

void strata_h_list_objects(struct strata_req *r)
{
    const char *lt = strata_req_query(r, "list-type");
    if (lt && strcmp(lt, "2") == 0)
        list_v2(r);
    else if (lt)
        strata_req_error(r, S3E_InvalidArgument, 0);
    else
        list_v1(r);
}

void strata_h_list_versions(struct strata_req *r)
{
    struct page p;
    enum s3_err e = page_start(&p, r);
    p.versions = true;
    const char *km = strata_req_query(r, "key-marker");
    const char *vm = strata_req_query(r, "version-id-marker");
    char resume[STRATA_KEY_MAX + 3];
    p.o.versions = true;
    p.o.start_after = km;
    p.o.version_id_marker = vm && *vm ? vm : NULL;
    if (!e && p.o.version_id_marker && (!km || !*km))
        e = S3E_InvalidArgument; /* AWS: a version-id-marker needs a key-marker */
    if (!e && p.o.version_id_marker && !strata_meta_version_id_valid(p.o.version_id_marker)) {
        r->err_msg = "Invalid version id specified";
        e = S3E_InvalidArgument;
    }
    int rc = 0;
    if (!e && p.o.version_id_marker) {
        /* Resume inside km's versions: no prefix roll-up adjustment. */
        memset(&p.res, 0, sizeof(p.res));
        rc = p.o.max_keys ? strata_obj_list(r->srv->meta, &p.o, entry_cb, &p, &p.res) : 0;
    } else if (!e) {
        rc = run_list(&p, resume, sizeof(resume));
    }
    struct strata_sbuf b;
    if (!page_open(r, &p, e, rc, &b, "ListVersionsResult"))
        return;
    strata_url_xml_elem(&b, "KeyMarker", km ? km : "", p.url);
    strata_sbuf_xml_elem(&b, "VersionIdMarker", vm ? vm : "");
    strata_sbuf_printf(&b, "<IsTruncated>%s</IsTruncated>", p.res.truncated ? "true" : "false");
    if (p.res.truncated) {
        strata_url_xml_elem(&b, "NextKeyMarker", p.res.next_key, p.url);
        if (p.res.next_version_id[0])
            strata_sbuf_xml_elem(&b, "NextVersionIdMarker", p.res.next_version_id);
    }
    finish(r, &p, &b, "ListVersionsResult");
}
