/*
 * s3_lifecycle.c - the bucket ?lifecycle subresource (Put/Get/Delete
 * BucketLifecycleConfiguration) and the x-amz-expiration header of GET,
 * HEAD and PUT.
 *
 * A PUT is parsed and validated by ilm/ (strata_lc_config_parse) and stored
 * in a canonical form written from the parsed rules, as the bucket's
 * "lifecycle" configuration document; GET returns that form, so rules
 * without an ID show the ID the scanner and x-amz-expiration use.  The
 * legacy top-level <Prefix> stays a top-level <Prefix>.
 *
 * x-amz-expiration needs the bucket's rules on every GET/HEAD/PUT, so the
 * parsed configuration is cached per bucket for one second
 * (bucket_doc_cache.h; this daemon invalidates it when it changes the
 * document).
 *
 * Connection threads.
 */
#include "srv.h"
#include "handlers.h"
#include "srv_tiers.h"

#include <stdlib.h>
#include <string.h>

#include "strata/ilm.h"
#include "bucket_doc_cache.h"
#include "s3_bucket_config.h"

#define LC_DOC_MAX (4u << 20)
#define LC_TAGS_MAX 10

/* ---- the canonical document ------------------------------------------------ */

static void put_filter(struct strata_sbuf *b, const struct strata_lc_rule *r)
{
    const struct strata_lc_filter *f = &r->filter;
    if (r->legacy_prefix) {
        strata_sbuf_xml_elem(b, "Prefix", f->prefix ? f->prefix : "");
        return;
    }
    unsigned n = (f->prefix != NULL) + (unsigned)f->ntags + f->has_size_gt + f->has_size_lt;
    bool and_form = n > 1 || f->and_form;
    strata_sbuf_puts(b, and_form ? "<Filter><And>" : "<Filter>");
    if (f->prefix)
        strata_sbuf_xml_elem(b, "Prefix", f->prefix);
    for (size_t i = 0; i < f->ntags; i++) {
        strata_sbuf_puts(b, "<Tag>");
        strata_sbuf_xml_elem(b, "Key", f->tags[i].key);
        strata_sbuf_xml_elem(b, "Value", f->tags[i].value);
        strata_sbuf_puts(b, "</Tag>");
    }
    if (f->has_size_gt)
        strata_sbuf_printf(b, "<ObjectSizeGreaterThan>%llu</ObjectSizeGreaterThan>",
                           (unsigned long long)f->size_gt);
    if (f->has_size_lt)
        strata_sbuf_printf(b, "<ObjectSizeLessThan>%llu</ObjectSizeLessThan>",
                           (unsigned long long)f->size_lt);
    strata_sbuf_puts(b, and_form ? "</And></Filter>" : "</Filter>");
}

static void put_rule(struct strata_sbuf *b, const struct strata_lc_rule *r)
{
    strata_sbuf_puts(b, "<Rule>");
    strata_sbuf_xml_elem(b, "ID", r->id);
    put_filter(b, r);
    strata_sbuf_puts(b, r->enabled ? "<Status>Enabled</Status>" : "<Status>Disabled</Status>");
    if (r->exp_days)
        strata_sbuf_printf(b, "<Expiration><Days>%u</Days></Expiration>", r->exp_days);
    else if (r->exp_has_date) {
        char date[32];
        strata_iso8601_format(r->exp_date_ms, date, sizeof(date));
        strata_sbuf_printf(b, "<Expiration><Date>%s</Date></Expiration>", date);
    } else if (r->exp_delete_marker)
        strata_sbuf_puts(b, "<Expiration><ExpiredObjectDeleteMarker>true"
                            "</ExpiredObjectDeleteMarker></Expiration>");
    for (size_t i = 0; i < r->ntr; i++) {
        const struct strata_lc_transition *t = &r->tr[i];
        strata_sbuf_puts(b, "<Transition>");
        if (t->has_date) {
            char date[32];
            strata_iso8601_format(t->date_ms, date, sizeof(date));
            strata_sbuf_printf(b, "<Date>%s</Date>", date);
        } else {
            strata_sbuf_printf(b, "<Days>%u</Days>", t->days);
        }
        strata_sbuf_printf(b, "<StorageClass>%s</StorageClass></Transition>", t->storage_class);
    }
    for (size_t i = 0; i < r->nnctr; i++) {
        const struct strata_lc_transition *t = &r->nctr[i];
        strata_sbuf_printf(b, "<NoncurrentVersionTransition><NoncurrentDays>%u</NoncurrentDays>",
                           t->days);
        if (t->newer)
            strata_sbuf_printf(b, "<NewerNoncurrentVersions>%u</NewerNoncurrentVersions>",
                               t->newer);
        strata_sbuf_printf(b, "<StorageClass>%s</StorageClass></NoncurrentVersionTransition>",
                           t->storage_class);
    }
    if (r->nc_days) {
        strata_sbuf_printf(b, "<NoncurrentVersionExpiration><NoncurrentDays>%u</NoncurrentDays>",
                           r->nc_days);
        if (r->nc_newer)
            strata_sbuf_printf(b, "<NewerNoncurrentVersions>%u</NewerNoncurrentVersions>",
                               r->nc_newer);
        strata_sbuf_puts(b, "</NoncurrentVersionExpiration>");
    }
    if (r->abort_days)
        strata_sbuf_printf(b, "<AbortIncompleteMultipartUpload><DaysAfterInitiation>%u"
                              "</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
                           r->abort_days);
    strata_sbuf_puts(b, "</Rule>");
}

void strata_lifecycle_format(struct strata_sbuf *b, const struct strata_lc_config *c)
{
    strata_xml_doc_head(b, "LifecycleConfiguration");
    for (size_t i = 0; i < c->nrules; i++)
        put_rule(b, &c->rules[i]);
    strata_sbuf_puts(b, "</LifecycleConfiguration>");
}

/* ---- the per-bucket cache of parsed rules ---------------------------------- */

static int lc_parse_cb(const void *doc, size_t len, void **out)
{
    struct strata_lc_config *c = calloc(1, sizeof(*c));
    if (!c || strata_lc_config_parse(doc, len, c, NULL) != 0) {
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

static void lc_destroy_cb(void *parsed)
{
    strata_lc_config_fini(parsed);
    free(parsed);
}

static struct strata_doc_cache lc_cache = STRATA_DOC_CACHE_INIT("lifecycle", lc_parse_cb,
                                                                lc_destroy_cb);

/* ---- tags ------------------------------------------------------------------ */

int strata_srv_tags_decode(const uint8_t *raw, size_t len, struct strata_kv *out, size_t max,
                          char *buf, size_t buf_len)
{
    if (!raw || len == 0)
        return 0;
    if (len >= buf_len || max > STRATA_SRV_QPARAMS_MAX)
        return -1;
    memcpy(buf, raw, len);
    buf[len] = '\0';
    struct strata_qparam q[STRATA_SRV_QPARAMS_MAX];
    int n = strata_s3_query_parse(buf, q, max);
    for (int i = 0; i < n; i++) {
        out[i].name = q[i].name;
        out[i].value = q[i].value;
    }
    return n;
}

/* ---- x-amz-expiration ------------------------------------------------------ */

void strata_lifecycle_expiration_hdr(struct strata_req *r, const struct strata_obj_info *info,
                              struct strata_resp *resp)
{
    if (!info->is_latest || info->delete_marker)
        return;
    /* No rules, or unreadable ones: no header is better than a failed GET. */
    struct strata_doc_ref *ref = NULL;
    if (strata_doc_cache_get(&lc_cache, r->srv->meta, &r->binfo, &ref) != 0 || !ref)
        return;
    struct strata_kv tags[LC_TAGS_MAX];
    char tbuf[STRATA_TAGS_MAX + 1];
    int nt = strata_srv_tags_decode(info->tags, info->tags_len, tags, LC_TAGS_MAX, tbuf,
                                   sizeof(tbuf));
    struct strata_lc_obj o = {.key = info->key, .size = info->size, .tags = tags,
                              .ntags = nt > 0 ? (size_t)nt : 0};
    int64_t due = 0;
    const struct strata_lc_rule *rule =
        strata_lc_expiry(strata_doc_ref_get(ref), &o, info->mtime_ms, r->srv->cfg.lc_day_ms, &due);
    if (rule) {
        char date[64], v[sizeof(date) + STRATA_LC_ID_MAX + 40];
        strata_http_date_format((time_t)(due / 1000), date, sizeof(date));
        snprintf(v, sizeof(v), "expiry-date=\"%s\", rule-id=\"%s\"", date, rule->id);
        strata_resp_hdr(resp, "x-amz-expiration", v);
    }
    strata_doc_ref_put(ref);
}

/* ---- handlers -------------------------------------------------------------- */

static enum s3_err lc_fault_err(const struct strata_lc_error *e, int rc)
{
    if (rc == STRATA_ENOMEM)
        return S3E_InternalError;
    switch (e->fault) {
    case STRATA_LC_INVALID_ARG: return S3E_InvalidArgument;
    case STRATA_LC_INVALID_REQ: return S3E_InvalidRequest;
    case STRATA_LC_INVALID_CLASS: return S3E_InvalidStorageClass;
    case STRATA_LC_NOT_IMPLEMENTED: return S3E_NotImplemented;
    default: return S3E_MalformedXML;
    }
}

void strata_h_lifecycle_put(struct strata_req *r)
{
    /* The digests were verified with the body (http.c); AWS requires one. */
    if (!r->body_digest) {
        strata_req_error(r, S3E_InvalidRequest, 0);
        return;
    }
    struct strata_lc_config c;
    struct strata_lc_error e;
    int rc = strata_lc_config_parse(r->body.data, r->body.len, &c, &e);
    if (rc) {
        strata_srv_log(STRATA_LOG_DEBUG, "req %s PutBucketLifecycleConfiguration /%s: %s", r->id,
                       r->bucket, e.msg);
        strata_req_error(r, lc_fault_err(&e, rc), 0);
        return;
    }
    /* AWS's 30-day minimum for the IA classes needs real days; with a short
     * --lc-day-seconds (tests, demos) it is not applied. */
    if (r->srv->cfg.lc_day_ms == STRATA_LC_DAY_MS_DEFAULT && strata_lc_check_min_days(&c, &e)) {
        strata_lc_config_fini(&c);
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    /* A transition to a class no configured tier serves would never act:
     * refused, as AWS refuses a class it does not offer. */
    for (size_t i = 0; i < c.nrules; i++) {
        const struct strata_lc_rule *rl = &c.rules[i];
        for (size_t j = 0; j < rl->ntr + rl->nnctr; j++) {
            const char *cls = j < rl->ntr ? rl->tr[j].storage_class
                                          : rl->nctr[j - rl->ntr].storage_class;
            const char *tier = r->srv->tiers ? strata_srv_class_tier(r->srv->tiers, cls) : NULL;
            if (!tier || !strata_meta_tier_known(r->srv->meta, tier)) {
                strata_srv_log(STRATA_LOG_DEBUG, "req %s PutBucketLifecycleConfiguration /%s: "
                               "no tier serves %s", r->id, r->bucket, cls);
                strata_lc_config_fini(&c);
                strata_req_error(r, S3E_InvalidStorageClass, 0);
                return;
            }
        }
    }
    struct strata_sbuf b;
    strata_sbuf_init(&b, LC_DOC_MAX);
    strata_lifecycle_format(&b, &c);
    strata_lc_config_fini(&c);
    strata_bucket_config_write_buf(r, "lifecycle", &b, &lc_cache);
}

void strata_h_lifecycle_get(struct strata_req *r)
{
    /* Stored in canonical form: the answer as it is. */
    strata_bucket_config_send(r, "lifecycle", S3E_NoSuchLifecycleConfiguration, "application/xml");
}

/* AWS answers 204 whether or not a configuration existed (idempotent). */
void strata_h_lifecycle_delete(struct strata_req *r)
{
    strata_bucket_config_write(r, "lifecycle", NULL, 0, &lc_cache, 204);
}
