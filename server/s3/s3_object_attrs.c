/*
 * s3_object_attrs.c - GetObjectAttributes: ETag (unquoted), Checksum,
 * ObjectParts (paged with x-amz-max-parts / x-amz-part-number-marker),
 * StorageClass and ObjectSize, only those named in x-amz-object-attributes.
 * Parts come from the completed object's part table through
 * strata_obj_get_part.  Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"
#include "sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { A_ETAG = 1, A_CKSUM = 2, A_PARTS = 4, A_CLASS = 8, A_SIZE = 16 };

/* The attribute set, or -1 for an unknown name or none at all. */
static int attrs_parse(const char *h)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"ETag", A_ETAG},           {"Checksum", A_CKSUM}, {"ObjectParts", A_PARTS},
                 {"StorageClass", A_CLASS}, {"ObjectSize", A_SIZE}};
    int set = 0;
    while (h && *h) {
        while (*h == ' ' || *h == ',')
            h++;
        size_t n = strcspn(h, ", ");
        if (n == 0)
            break;
        int bit = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i].name) == n && strncasecmp(h, names[i].name, n) == 0)
                bit = names[i].bit;
        if (!bit)
            return -1;
        set |= bit;
        h += n;
    }
    return set ? set : -1;
}

static long hdr_num(struct strata_req *r, const char *name, long def)
{
    const char *s = strata_req_hdr(r, name);
    if (!s)
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    return (!*s || *end || v < 0) ? -1 : v;
}

static void parts_xml(struct strata_req *r, struct strata_get *g, struct strata_sbuf *b)
{
    unsigned total = r->s3->info.nparts;
    long max = hdr_num(r, "x-amz-max-parts", 1000), marker = hdr_num(r, "x-amz-part-number-marker", 0);
    if (max < 0 || max > 1000)
        max = 1000;
    if (marker < 0)
        marker = 0;
    strata_sbuf_printf(b, "<ObjectParts><PartsCount>%u</PartsCount>"
                          "<PartNumberMarker>%ld</PartNumberMarker>",
                       total, marker);
    unsigned last = (unsigned)marker, n = 0;
    struct strata_sbuf items;
    strata_sbuf_init(&items, STRATA_SRV_LIST_PAGE_MAX);
    for (unsigned idx = (unsigned)marker + 1; idx <= total && n < (unsigned)max; idx++, n++) {
        struct strata_part_info pi;
        if (strata_obj_get_part(g, idx, &pi) != 0)
            break;
        strata_sbuf_printf(&items, "<Part><PartNumber>%u</PartNumber><Size>%llu</Size>", idx,
                           (unsigned long long)pi.size);
        const char *an = strata_s3_cksum_algo_name(pi.cksum_algo);
        char b64[64];
        if (an && pi.cksum_len && strata_b64_encode(pi.cksum, pi.cksum_len, b64, sizeof(b64)) > 0)
            strata_sbuf_printf(&items, "<Checksum%s>%s</Checksum%s>", an, b64, an);
        strata_sbuf_puts(&items, "</Part>");
        last = idx;
    }
    bool truncated = last < total;
    if (truncated)
        strata_sbuf_printf(b, "<NextPartNumberMarker>%u</NextPartNumberMarker>", last);
    strata_sbuf_printf(b, "<MaxParts>%ld</MaxParts><IsTruncated>%s</IsTruncated>", max,
                       truncated ? "true" : "false");
    strata_sbuf_append(b, items.data ? items.data : "", items.len);
    if (items.failed)
        b->failed = true;
    strata_sbuf_fini(&items);
    strata_sbuf_puts(b, "</ObjectParts>");
}

void strata_h_attributes(struct strata_req *r)
{
    int want = attrs_parse(strata_req_hdr(r, "x-amz-object-attributes"));
    /* Bad paging headers are refused, not read as the defaults. */
    if (want < 0 || hdr_num(r, "x-amz-max-parts", 0) < 0 ||
        hdr_num(r, "x-amz-part-number-marker", 0) < 0) {
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    const char *vid = strata_req_query(r, "versionId");
    int rc = strata_obj_get_open(r->srv->meta, r->bucket, r->key, vid, &r->s3->info, &r->s3->get);
    r->s3->info_valid = true;
    if (rc) {
        if (r->s3->info.delete_marker)
            r->err_delete_marker = true;
        strata_req_error_strata(r, rc, vid ? S3CTX_VERSION : S3CTX_OBJECT);
        return;
    }
    /* An SSE-C object shows its attributes only to its key's holder. */
    int se = r->s3->info.sse_len >= 2 && r->s3->info.sse[1] == STRATA_SSE_MODE_C
                 ? strata_sse_read_key(r, &r->s3->info, NULL, false)
                 : 0;
    if (se) {
        strata_req_error(r, (enum s3_err)se, 0);
        return;
    }
    const struct strata_obj_info *in = &r->s3->info;
    struct strata_sbuf b;
    strata_xml_doc_open(&b, STRATA_SRV_LIST_PAGE_MAX + 65536, "GetObjectAttributesResponse");
    if (want & A_ETAG)
        strata_sbuf_xml_elem(&b, "ETag", in->etag);
    char val[96];
    const char *an = strata_s3_cksum_algo_name(in->cksum_algo);
    if ((want & A_CKSUM) && an && strata_s3_cksum_value(in, val, sizeof(val))) {
        const char *t = strata_s3_cksum_type_name(in->cksum_type);
        strata_sbuf_printf(&b, "<Checksum><Checksum%s>%s</Checksum%s><ChecksumType>%s"
                               "</ChecksumType></Checksum>",
                           an, val, an, t ? t : "FULL_OBJECT");
    }
    if ((want & A_PARTS) && in->nparts > 0)
        parts_xml(r, r->s3->get, &b);
    if (want & A_CLASS)
        strata_sbuf_xml_elem(&b, "StorageClass", in->storage_class[0] ? in->storage_class
                                                                      : "STANDARD");
    if (want & A_SIZE)
        strata_sbuf_printf(&b, "<ObjectSize>%llu</ObjectSize>", (unsigned long long)in->size);
    strata_sbuf_puts(&b, "</GetObjectAttributesResponse>");
    struct strata_resp *resp = strata_req_xml_response(r, &b);
    if (!resp)
        return;
    char date[64];
    strata_http_date_format((time_t)(in->mtime_ms / 1000), date, sizeof(date));
    strata_resp_hdr(resp, "Last-Modified", date);
    if (r->binfo.versioning != STRATA_VERSIONING_OFF)
        strata_resp_hdr(resp, "x-amz-version-id", in->version_id);
    strata_req_send(r, 200, resp);
}
