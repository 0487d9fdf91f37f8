/*
 * notify_config.c - Put/GetBucketNotificationConfiguration and the events
 * S3 handlers emit (notify.h).
 *
 * The configuration is validated as AWS validates it (destinations must be
 * configured targets, event names known, no two configurations sharing an
 * event type with overlapping prefix and suffix filters) and stored in
 * canonical form as the bucket's "notification" configuration document,
 * cached parsed (bucket_doc_cache.h) because every write consults it.
 * Applying a configuration sends AWS's s3:TestEvent message to each of
 * its destinations.
 * Strata produces the ObjectCreated, ObjectRemoved, ObjectTagging,
 * LifecycleExpiration and LifecycleTransition events; the other event
 * types AWS has (restore, replication, ...) are answered 501 rather than
 * accepted and never sent.
 */
#include "notify.h"
#include "handlers.h"
#include "notify_config.h"
#include "notify_internal.h"

#include "bucket_doc_cache.h"
#include "s3_bucket_config.h"
#include "srv.h"

#include <jansson.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Events Strata emits, AWS's names without "s3:". */
static const char *const events[] = {
    "ObjectCreated:Put",  "ObjectCreated:Post",   "ObjectCreated:Copy",
    "ObjectCreated:CompleteMultipartUpload",      "ObjectRemoved:Delete",
    "ObjectRemoved:DeleteMarkerCreated",          "ObjectTagging:Put",
    "ObjectTagging:Delete",       "LifecycleExpiration:Delete",
    "LifecycleExpiration:DeleteMarkerCreated",    "LifecycleTransition",
    "ObjectRestore:Post", "ObjectRestore:Completed", "ObjectRestore:Delete",
};
#define NEVENTS (sizeof(events) / sizeof(events[0]))
_Static_assert(NEVENTS == STRATA_NOTIFY_EVENT_TYPES, "notify_config.h's count of event types");

/* Valid on AWS, not produced by Strata: 501 instead of a silent never. */
static const char *const events_unsupported[] = {
    "s3:ReducedRedundancyLostObject", "s3:Replication:*",
    "s3:Replication:OperationFailedReplication", "s3:Replication:OperationMissedThreshold",
    "s3:Replication:OperationReplicatedAfterThreshold",
    "s3:Replication:OperationNotTracked", "s3:IntelligentTiering", "s3:ObjectAcl:Put",
};

void strata_notify_config_free(struct strata_notify_conf *c)
{
    for (size_t i = 0; c && i < c->n; i++) {
        struct strata_notify_rule *r = &c->r[i];
        free(r->id), free(r->arn), free(r->prefix), free(r->suffix);
        for (size_t j = 0; j < r->nev; j++)
            free(r->ev[j]);
        free(r->ev);
    }
    free(c);
}

/* The bits of an event name ("s3:ObjectCreated:*"); 0 when unknown. */
static unsigned event_mask(const char *s)
{
    if (strncmp(s, "s3:", 3) != 0)
        return 0;
    s += 3;
    size_t n = strlen(s);
    unsigned m = 0;
    for (size_t i = 0; i < NEVENTS; i++) {
        if (strcmp(events[i], s) == 0)
            m |= 1u << i;
        /* "ObjectCreated:*" covers every ObjectCreated:X */
        if (n >= 2 && s[n - 1] == '*' && s[n - 2] == ':' && strncmp(events[i], s, n - 1) == 0)
            m |= 1u << i;
    }
    return m;
}

static enum s3_err filter_parse(xmlNodePtr f, struct strata_notify_rule *r, const char **msg)
{
    for (xmlNodePtr k = f->children; k; k = k->next) {
        if (k->type != XML_ELEMENT_NODE)
            continue;
        if (!strata_xml_named(k, "S3Key"))
            return S3E_MalformedXML;
        for (xmlNodePtr fr = k->children; fr; fr = fr->next) {
            if (fr->type != XML_ELEMENT_NODE)
                continue;
            if (!strata_xml_named(fr, "FilterRule"))
                return S3E_MalformedXML;
            char *name = NULL, *value = NULL;
            for (xmlNodePtr e = fr->children; e; e = e->next) {
                if (strata_xml_named(e, "Name") && !name)
                    name = strata_xml_text(e);
                else if (strata_xml_named(e, "Value") && !value)
                    value = strata_xml_text(e);
                else if (e->type == XML_ELEMENT_NODE) {
                    free(name), free(value);
                    return S3E_MalformedXML;
                }
            }
            char **slot = !name                          ? NULL
                          : strcasecmp(name, "prefix") == 0 ? &r->prefix
                          : strcasecmp(name, "suffix") == 0 ? &r->suffix
                                                            : NULL;
            bool is_prefix = slot == &r->prefix;
            free(name);
            if (!slot || !value) {
                free(value);
                *msg = "filter rule name must be either prefix or suffix";
                return S3E_InvalidArgument;
            }
            if (*slot) {
                free(value);
                *msg = is_prefix ? "Cannot specify more than one prefix rule in a filter."
                                 : "Cannot specify more than one suffix rule in a filter.";
                return S3E_InvalidArgument;
            }
            *slot = value;
        }
    }
    return S3E_NONE;
}

static enum s3_err rule_parse(xmlNodePtr q, struct strata_notify_rule *r, const char **msg)
{
    for (xmlNodePtr e = q->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        if (strata_xml_named(e, "Id") && !r->id) {
            r->id = strata_xml_text(e);
        } else if (strata_xml_named(e, "Queue") && !r->arn) {
            r->arn = strata_xml_text(e);
        } else if (strata_xml_named(e, "Event")) {
            char *ev = strata_xml_text(e);
            char **nv = ev ? realloc(r->ev, (r->nev + 1) * sizeof(*nv)) : NULL;
            if (!nv) {
                free(ev);
                return S3E_InternalError;
            }
            r->ev = nv;
            r->ev[r->nev++] = ev;
            for (size_t i = 0; i < sizeof(events_unsupported) / sizeof(events_unsupported[0]); i++)
                if (strcmp(ev, events_unsupported[i]) == 0) {
                    *msg = "Strata does not produce this event type.";
                    return S3E_NotImplemented;
                }
            unsigned m = event_mask(ev);
            if (!m) {
                *msg = "The event is not supported for notifications";
                return S3E_InvalidArgument;
            }
            r->mask |= m;
        } else if (strata_xml_named(e, "Filter")) {
            enum s3_err fe = filter_parse(e, r, msg);
            if (fe)
                return fe;
        } else {
            return S3E_MalformedXML;
        }
    }
    if (!r->arn || !r->nev)
        return S3E_MalformedXML;
    return S3E_NONE;
}

/* Either is empty, or one starts (ends) with the other. */
static bool prefixes_overlap(const char *a, const char *b)
{
    a = a ? a : "", b = b ? b : "";
    size_t la = strlen(a), lb = strlen(b);
    return strncmp(a, b, la < lb ? la : lb) == 0;
}

static bool suffixes_overlap(const char *a, const char *b)
{
    a = a ? a : "", b = b ? b : "";
    size_t la = strlen(a), lb = strlen(b), l = la < lb ? la : lb;
    return memcmp(a + la - l, b + lb - l, l) == 0;
}

enum s3_err strata_notify_config_parse(const char *body, size_t len, strata_notify_dest_cb dest_ok,
                                       void *ud, struct strata_notify_conf **out,
                                       const char **msg)
{
    bool check = dest_ok != NULL;
    *out = NULL;
    *msg = NULL;
    xmlDocPtr doc;
    xmlNodePtr root = strata_xml_body_root(body, len, "NotificationConfiguration", &doc);
    if (!root)
        return S3E_MalformedXML;
    struct strata_notify_conf *c = calloc(1, sizeof(*c));
    enum s3_err e = c ? S3E_NONE : S3E_InternalError;
    bool bad_dest = false;
    for (xmlNodePtr q = root->children; q && !e; q = q->next) {
        if (q->type != XML_ELEMENT_NODE)
            continue;
        if (strata_xml_named(q, "EventBridgeConfiguration")) {
            *msg = "Strata has no EventBridge.";
            e = S3E_NotImplemented;
        } else if (strata_xml_named(q, "TopicConfiguration") ||
                   strata_xml_named(q, "CloudFunctionConfiguration")) {
            /* No SNS topic or Lambda function exists here: as AWS answers
             * a destination it cannot reach. */
            bad_dest = true;
        } else if (!strata_xml_named(q, "QueueConfiguration")) {
            e = S3E_MalformedXML;
        } else if (c->n == STRATA_NOTIFY_RULES_MAX) {
            *msg = "Too many notification configurations.";
            e = S3E_InvalidArgument;
        } else {
            struct strata_notify_rule *r = &c->r[c->n++];
            e = rule_parse(q, r, msg);
            if (!e && check && !dest_ok(ud, r->arn))
                bad_dest = true;
            if (!e && r->id && (!r->id[0] || strlen(r->id) > 255)) {
                *msg = "The Id must be 1 to 255 characters.";
                e = S3E_InvalidArgument;
            }
        }
    }
    xmlFreeDoc(doc);
    if (!e && check && bad_dest) {
        *msg = "Unable to validate the following destination configurations";
        e = S3E_InvalidArgument;
    }
    for (size_t i = 0; !e && check && i < c->n; i++)
        for (size_t j = i + 1; !e && j < c->n; j++) {
            const struct strata_notify_rule *a = &c->r[i], *b = &c->r[j];
            if ((a->mask & b->mask) && prefixes_overlap(a->prefix, b->prefix) &&
                suffixes_overlap(a->suffix, b->suffix)) {
                *msg = "Configurations overlap. Configurations on the same bucket cannot share "
                       "a common event type.";
                e = S3E_InvalidArgument;
            }
            if (!e && a->id && b->id && strcmp(a->id, b->id) == 0) {
                *msg = "The same Id is used for more than one configuration.";
                e = S3E_InvalidArgument;
            }
        }
    if (e) {
        strata_notify_config_free(c);
        return e;
    }
    *out = c;
    return S3E_NONE;
}

static void rule_format(struct strata_sbuf *b, const char *name, const char *value)
{
    strata_sbuf_puts(b, "<FilterRule>");
    strata_sbuf_xml_elem(b, "Name", name);
    strata_sbuf_xml_elem(b, "Value", value);
    strata_sbuf_puts(b, "</FilterRule>");
}

void strata_notify_config_format(struct strata_sbuf *b, const struct strata_notify_conf *c)
{
    strata_xml_doc_head(b, "NotificationConfiguration");
    for (size_t i = 0; c && i < c->n; i++) {
        const struct strata_notify_rule *r = &c->r[i];
        strata_sbuf_puts(b, "<QueueConfiguration>");
        strata_sbuf_xml_elem(b, "Id", r->id);
        strata_sbuf_xml_elem(b, "Queue", r->arn);
        for (size_t j = 0; j < r->nev; j++)
            strata_sbuf_xml_elem(b, "Event", r->ev[j]);
        if (r->prefix || r->suffix) {
            strata_sbuf_puts(b, "<Filter><S3Key>");
            if (r->prefix)
                rule_format(b, "Prefix", r->prefix);
            if (r->suffix)
                rule_format(b, "Suffix", r->suffix);
            strata_sbuf_puts(b, "</S3Key></Filter>");
        }
        strata_sbuf_puts(b, "</QueueConfiguration>");
    }
    strata_sbuf_puts(b, "</NotificationConfiguration>");
}

/* Every write of a bucket consults it when targets are configured. */
STRATA_BUCKET_CONFIG_CACHE(cache, "notification", nconf, struct strata_notify_conf,
                           strata_notify_config_free, strata_notify_config_format,
                           strata_notify_config_parse, NULL, NULL);

/* A bucket without one answers an empty configuration, as AWS. */
void strata_h_notification_get(struct strata_req *r)
{
    strata_bucket_config_send_cached(r, &cache, S3E_NONE, STRATA_SRV_XML_BODY_MAX * 2,
                                     nconf_format);
}

/* AWS's test message, queued once to each destination of a configuration
 * just applied (its own shape: no Records). */
static void test_events(struct strata_req *r, const struct strata_notify_conf *c)
{
    bool sent[STRATA_NOTIFY_TARGETS_MAX] = {false};
    char when[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    strata_iso8601_format((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when, sizeof(when));
    json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "Service", "Amazon S3", "Event",
                          "s3:TestEvent", "Time", when, "Bucket", r->bucket, "RequestId", r->id,
                          "HostId", r->http->host_id);
    char *s = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    for (size_t i = 0; s && i < c->n; i++) {
        int t = strata_notify_target_find(r->srv->notify, c->r[i].arn);
        if (t >= 0 && !sent[t]) {
            sent[t] = true;
            strata_notify__enqueue(r->srv->notify, t, s, strlen(s));
        }
    }
    free(s);
}

/* A strata_notify_dest_cb: ud is the daemon's struct strata_notify (or NULL). */
static bool dest_known(void *ud, const char *arn)
{
    return strata_notify_target_find(ud, arn) >= 0;
}

void strata_h_notification_put(struct strata_req *r)
{
    struct strata_notify_conf *c = NULL;
    const char *msg = NULL;
    enum s3_err e = strata_notify_config_parse(r->body.data ? r->body.data : "", r->body.len,
                                               dest_known, r->srv->notify, &c, &msg);
    if (e) {
        r->err_msg = msg;
        strata_req_error(r, e, 0);
        return;
    }
    for (size_t i = 0; i < c->n; i++)
        if (!c->r[i].id) {
            c->r[i].id = strata_doc_id_new(); /* AWS names one given without an Id */
        }
    /* The stored form must parse again: the cache reloads it with the
     * request-body parser, which refuses more than STRATA_SRV_XML_BODY_MAX,
     * and escaping (' as &apos;) can make it six times the request. */
    struct strata_sbuf b;
    strata_sbuf_init(&b, STRATA_SRV_XML_BODY_MAX);
    if (c->n)
        strata_notify_config_format(&b, c);
    if (b.failed) {
        strata_notify_config_free(c);
        strata_sbuf_fini(&b);
        r->err_msg = "The notification configuration is too large.";
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    /* An empty configuration turns notifications off: nothing stored. */
    int rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, "notification",
                                           b.data ? b.data : "", b.len);
    strata_sbuf_fini(&b);
    strata_doc_cache_invalidate(&cache, r->bucket);
    if (rc && !(rc == STRATA_ENOTFOUND && b.len == 0)) {
        strata_notify_config_free(c);
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    test_events(r, c);
    strata_notify_config_free(c);
    strata_req_send_empty(r, 200);
}

/* ---- events ----------------------------------------------------------- */

static bool key_matches(const struct strata_notify_rule *rl, const char *key)
{
    size_t kl = strlen(key);
    if (rl->prefix && strncmp(key, rl->prefix, strlen(rl->prefix)) != 0)
        return false;
    if (rl->suffix) {
        size_t sl = strlen(rl->suffix);
        if (sl > kl || memcmp(key + kl - sl, rl->suffix, sl) != 0)
            return false;
    }
    return true;
}

/* AWS's event key: URL-encoded as a form value ('/' kept, ' ' as '+'). */
static char *key_encode(const char *key)
{
    size_t n = strlen(key);
    char *enc = malloc(3 * n + 1);
    long l = enc ? strata_url_encode(key, n, enc, 3 * n, true) : -1;
    if (l < 0) {
        free(enc);
        return NULL;
    }
    size_t o = 0;
    for (long i = 0; i < l; i++) {
        if (i + 2 < l && enc[i] == '%' && enc[i + 1] == '2' && enc[i + 2] == '0') {
            enc[o++] = '+';
            i += 2;
        } else {
            enc[o++] = enc[i];
        }
    }
    enc[o] = '\0';
    return enc;
}

/* Who caused an event: the request's id, user and address. */
struct origin {
    const char *reqid;
    const char *user;
    const char *ip;
};

/* ObjectRestore:Completed's glacierEventData.restoreEventData: when the
 * restored copy expires and the class it was restored from. */
struct restored {
    int64_t expiry_ms;
    const char *storage_class;
};

int64_t strata_notify_stamp_clock(int64_t after_ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return now > after_ns ? now : after_ns + 1;
}

/* AWS's sequencer: fixed-width upper-case hex that grows with the order of
 * one key's changes.  The change's stamp (16 digits) orders it; two digits
 * of this daemon's event count after it keep two events of one stamp
 * apart (a removal's stamp is not kept in the index, so another gateway
 * may, rarely, give the key's next change the same one). */
static void sequencer_format(int64_t seq_ns, char out[STRATA_NOTIFY_SEQUENCER_LEN + 1])
{
    if (seq_ns <= 0)
        seq_ns = strata_notify_stamp_clock(0);
    unsigned tie = (unsigned)(atomic_fetch_add(&strata_notify__seq, 1) & 0xff);
    snprintf(out, STRATA_NOTIFY_SEQUENCER_LEN + 1, "%016llX%02X", (unsigned long long)seq_ns, tie);
}

static void emit(struct strata_srv *srv, const struct strata_bucket_info *bi,
                 const struct origin *og, const char *event, const char *key, uint64_t size,
                 const char *etag, const char *version_id, int64_t seq_ns,
                 const struct restored *rs)
{
    struct strata_notify *n = srv->notify;
    unsigned bit = 0;
    for (size_t i = 0; i < NEVENTS; i++)
        if (strcmp(events[i], event) == 0)
            bit = 1u << i;
    struct strata_doc_ref *ref = NULL;
    if (!bit || strata_doc_cache_get(&cache, srv->meta, bi, &ref) != 0 || !ref)
        return;
    const struct strata_notify_conf *c = strata_doc_ref_get(ref);
    char *ekey = NULL, when[40] = "", seq[STRATA_NOTIFY_SEQUENCER_LEN + 1] = "";
    for (size_t i = 0; i < c->n; i++) {
        const struct strata_notify_rule *rl = &c->r[i];
        int t = strata_notify_target_find(n, rl->arn);
        if (!(rl->mask & bit) || !key_matches(rl, key) || t < 0)
            continue;
        if (!ekey) {
            if (!(ekey = key_encode(key)))
                break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            strata_iso8601_format((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when,
                                  sizeof(when));
            sequencer_format(seq_ns, seq);
        }
        json_t *obj = json_pack("{s:s, s:s}", "key", ekey, "sequencer", seq);
        if (obj && etag) {
            json_object_set_new(obj, "size", json_integer((json_int_t)size));
            json_object_set_new(obj, "eTag", json_string(etag));
        }
        if (obj && version_id && version_id[0])
            json_object_set_new(obj, "versionId", json_string(version_id));
        char arn[STRATA_BUCKET_NAME_MAX + 16];
        snprintf(arn, sizeof(arn), "arn:aws:s3:::%s", bi->name);
        json_t *rec = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s, s:s},"
            " s:{s:s, s:s, s:{s:s, s:{s:s}, s:s}, s:o}}",
            "eventVersion", "2.1", "eventSource", "aws:s3", "awsRegion",
            bi->region[0] ? bi->region : "us-east-1", "eventTime", when, "eventName", event,
            "userIdentity", "principalId", og->user, "requestParameters", "sourceIPAddress",
            og->ip, "responseElements", "x-amz-request-id", og->reqid, "x-amz-id-2",
            srv->http.host_id, "s3", "s3SchemaVersion", "1.0", "configurationId",
            rl->id ? rl->id : "", "bucket", "name", bi->name, "ownerIdentity", "principalId",
            bi->owner, "arn", arn, "object", obj);
        if (rec && rs) {
            char exp[40];
            strata_iso8601_format(rs->expiry_ms, exp, sizeof(exp));
            json_object_set_new(rec, "glacierEventData",
                                json_pack("{s:{s:s, s:s}}", "restoreEventData",
                                          "lifecycleRestorationExpiryTime", exp,
                                          "lifecycleRestoreStorageClass", rs->storage_class));
        }
        json_t *msg = rec ? json_pack("{s:[o]}", "Records", rec) : NULL;
        char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        /* Not queued (queue full): counted as dropped by the queue. */
        if (s)
            strata_notify__enqueue(n, t, s, strlen(s));
        free(s);
        json_decref(msg);
    }
    free(ekey);
    strata_doc_ref_put(ref);
}

bool strata_notify_configured(struct strata_req *r)
{
    struct strata_doc_ref *ref = NULL;
    bool on = r->srv->notify && strata_doc_cache_get(&cache, r->srv->meta, &r->binfo, &ref) == 0 &&
              ref && ((const struct strata_notify_conf *)strata_doc_ref_get(ref))->n > 0;
    strata_doc_ref_put(ref);
    return on;
}

void strata_notify_emit(struct strata_req *r, const char *event, const char *key, uint64_t size,
                        const char *etag, const char *version_id, int64_t seq_ns)
{
    if (!r->srv->notify)
        return; /* no targets: no configuration can name one */
    char ip[64];
    strata_req_client_ip(r, ip, sizeof(ip));
    const char *user = strata_req_user(r);
    struct origin og = {.reqid = r->id, .user = user[0] ? user : "anonymous", .ip = ip};
    emit(r->srv, &r->binfo, &og, event, key, size, etag, version_id, seq_ns, NULL);
}

/* An event of the service itself; rs for ObjectRestore:Completed. */
static void emit_srv(struct strata_srv *srv, const char *event, const char *bucket,
                     const char *key, uint64_t size, const char *etag, const char *version_id,
                     int64_t seq_ns, const struct restored *rs)
{
    struct strata_bucket_info bi;
    if (!srv->notify || strata_bcache_get(srv->meta, bucket, &bi) != 0)
        return;
    struct origin og = {.reqid = "", .user = "s3.amazonaws.com", .ip = ""};
    emit(srv, &bi, &og, event, key, size, etag,
         bi.versioning != STRATA_VERSIONING_OFF ? version_id : NULL, seq_ns, rs);
}

void strata_notify_emit_srv(struct strata_srv *srv, const char *event, const char *bucket,
                            const char *key, uint64_t size, const char *etag,
                            const char *version_id, int64_t seq_ns)
{
    emit_srv(srv, event, bucket, key, size, etag, version_id, seq_ns, NULL);
}

void strata_notify_emit_restored(struct strata_srv *srv, const char *bucket, const char *key,
                                 uint64_t size, const char *etag, const char *version_id,
                                 int64_t seq_ns, int64_t expiry_ms, const char *storage_class)
{
    struct restored rs = {expiry_ms, storage_class};
    emit_srv(srv, "ObjectRestore:Completed", bucket, key, size, etag, version_id, seq_ns, &rs);
}

void strata_notify_ilm_event_cb(void *ud, enum strata_ilm_event ev, const char *bucket,
                                const char *key, const char *version_id, int64_t seq_ns)
{
    struct strata_srv *srv = ud;
    struct strata_bucket_info bi;
    if (!srv->notify || strata_bcache_get(srv->meta, bucket, &bi) != 0)
        return;
    /* AWS names the lifecycle itself as the principal of these events. */
    struct origin og = {.reqid = "", .user = "s3.amazonaws.com", .ip = ""};
    const char *event = ev == STRATA_ILM_EV_TRANSITION      ? "LifecycleTransition"
                        : ev == STRATA_ILM_EV_EXPIRE_MARKER ? "LifecycleExpiration:DeleteMarkerCreated"
                                                            : "LifecycleExpiration:Delete";
    emit(srv, &bi, &og, event, key, 0, NULL,
         bi.versioning != STRATA_VERSIONING_OFF ? version_id : NULL, seq_ns, NULL);
}
