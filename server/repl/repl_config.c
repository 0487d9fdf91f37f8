/*
 * repl_config.c - the ReplicationConfiguration document (repl_config.h).
 *
 * Both of AWS's schemas are read: V1 rules (a rule-level <Prefix>, no
 * Priority, delete markers not replicated) and V2 rules (a <Filter> with a
 * Prefix, a Tag or an And of them, a Priority and a required
 * DeleteMarkerReplication).  What AWS offers and Strata does not do
 * (Replication Time Control, replication metrics, owner
 * translation, replica modification sync, ExistingObjectReplication
 * Enabled: Strata replicates existing objects on `strata admin replicate`)
 * is answered 501 rather than stored and never acted on.
 */
#include "repl_config.h"

#include "query.h"
#include "s3_names.h"
#include "sbuf.h"
#include "srv.h"

#include <errno.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>

#define ARN_PREFIX "arn:aws:s3:::"

void strata_repl_config_free(struct strata_repl_conf *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        struct strata_repl_rule *r = &c->r[i];
        free(r->id), free(r->prefix), free(r->dest_bucket), free(r->account);
        free(r->storage_class), free(r->replica_kms_key);
        for (size_t j = 0; j < r->ntags; j++)
            free(r->tags[j].key), free(r->tags[j].value);
    }
    free(c->r);
    free(c->role);
    free(c);
}

/* A Status element's value: 1 Enabled, 0 Disabled, -1 anything else. */
static int status_of(xmlNodePtr n)
{
    char *s = strata_xml_text(n);
    int v = !s ? -1 : strcmp(s, "Enabled") == 0 ? 1 : strcmp(s, "Disabled") == 0 ? 0 : -1;
    free(s);
    return v;
}

/* A container holding exactly one <Status>: its value, or -1. */
static int status_child(xmlNodePtr n)
{
    int v = -1, seen = 0;
    for (xmlNodePtr e = n->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        if (!strata_xml_named(e, "Status") || seen++)
            return -1;
        v = status_of(e);
    }
    return v;
}

static enum s3_err tag_parse(xmlNodePtr t, struct strata_repl_rule *r, const char **msg)
{
    if (r->ntags == STRATA_REPL_TAGS_MAX) {
        *msg = "Too many tags in the filter.";
        return S3E_InvalidArgument;
    }
    struct strata_repl_tag *g = &r->tags[r->ntags];
    for (xmlNodePtr e = t->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        if (strata_xml_named(e, "Key") && !g->key)
            g->key = strata_xml_text(e);
        else if (strata_xml_named(e, "Value") && !g->value)
            g->value = strata_xml_text(e);
        else
            return S3E_MalformedXML;
    }
    r->ntags++;
    if (!g->key || !g->value)
        return S3E_MalformedXML;
    if (!g->key[0] || strlen(g->key) > 128 || strlen(g->value) > 256) {
        *msg = "The TagKey you have provided is invalid";
        return S3E_InvalidTag;
    }
    for (size_t j = 0; j + 1 < r->ntags; j++)
        if (strcmp(r->tags[j].key, g->key) == 0) {
            *msg = "Duplicate Tag Keys are not allowed.";
            return S3E_InvalidRequest;
        }
    return S3E_NONE;
}

/* The elements of a <Filter> or of its <And>. */
static enum s3_err filter_parse(xmlNodePtr f, struct strata_repl_rule *r, bool in_and,
                                const char **msg)
{
    size_t kids = 0;
    for (xmlNodePtr e = f->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        kids++;
        enum s3_err err = S3E_NONE;
        if (strata_xml_named(e, "Prefix") && !r->prefix) {
            r->prefix = strata_xml_text(e);
        } else if (strata_xml_named(e, "Tag")) {
            err = tag_parse(e, r, msg);
        } else if (strata_xml_named(e, "And") && !in_and && !r->and) {
            r->and = true;
            err = filter_parse(e, r, true, msg);
        } else {
            return S3E_MalformedXML;
        }
        if (err)
            return err;
    }
    /* Outside an And: at most one of Prefix, Tag, And. */
    if (!in_and && kids > 1)
        return S3E_MalformedXML;
    return S3E_NONE;
}

/* <EncryptionConfiguration><ReplicaKmsKeyID>ID</ReplicaKmsKeyID>. */
static enum s3_err enc_conf_parse(xmlNodePtr n, struct strata_repl_rule *r)
{
    for (xmlNodePtr e = n->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        if (!strata_xml_named(e, "ReplicaKmsKeyID") || r->replica_kms_key)
            return S3E_MalformedXML;
        r->replica_kms_key = strata_xml_text(e);
    }
    return r->replica_kms_key && r->replica_kms_key[0] ? S3E_NONE : S3E_MalformedXML;
}

/* <SourceSelectionCriteria><SseKmsEncryptedObjects><Status>; replica
 * modification sync is not built. */
static enum s3_err ssc_parse(xmlNodePtr n, struct strata_repl_rule *r, const char **msg)
{
    for (xmlNodePtr e = n->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        if (strata_xml_named(e, "SseKmsEncryptedObjects") && !r->kms_given) {
            int v = status_child(e);
            if (v < 0)
                return S3E_MalformedXML;
            r->kms_given = true;
            r->kms_enabled = v == 1;
        } else if (strata_xml_named(e, "ReplicaModifications")) {
            *msg = "Strata does not implement replica modification sync.";
            return S3E_NotImplemented;
        } else {
            return S3E_MalformedXML;
        }
    }
    return S3E_NONE;
}

static enum s3_err dest_parse(xmlNodePtr d, struct strata_repl_rule *r, const char **msg)
{
    char *arn = NULL;
    enum s3_err err = S3E_NONE;
    for (xmlNodePtr e = d->children; e && !err; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        if (strata_xml_named(e, "Bucket") && !arn) {
            arn = strata_xml_text(e);
        } else if (strata_xml_named(e, "Account") && !r->account) {
            r->account = strata_xml_text(e);
        } else if (strata_xml_named(e, "StorageClass") && !r->storage_class) {
            r->storage_class = strata_xml_text(e);
        } else if (strata_xml_named(e, "EncryptionConfiguration") && !r->replica_kms_key) {
            err = enc_conf_parse(e, r);
        } else if (strata_xml_named(e, "AccessControlTranslation") ||
                   strata_xml_named(e, "Metrics") || strata_xml_named(e, "ReplicationTime")) {
            *msg = "Strata does not implement replication owner translation, replication "
                   "metrics or Replication Time Control.";
            err = S3E_NotImplemented;
        } else {
            err = S3E_MalformedXML;
        }
    }
    if (!err && !arn)
        err = S3E_MalformedXML;
    if (!err) {
        const char *b = arn + strlen(ARN_PREFIX);
        if (strncmp(arn, ARN_PREFIX, strlen(ARN_PREFIX)) != 0 ||
            !strata_s3_bucket_name_valid(b)) {
            *msg = "Invalid bucket ARN.";
            err = S3E_InvalidArgument;
        } else if (!(r->dest_bucket = strdup(b))) {
            err = S3E_InternalError;
        }
    }
    static const char *const classes[] = {"STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA",
                                          "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER",
                                          "DEEP_ARCHIVE", "GLACIER_IR"};
    bool class_ok = !r->storage_class;
    for (size_t i = 0; !class_ok && i < sizeof(classes) / sizeof(classes[0]); i++)
        class_ok = strcmp(r->storage_class, classes[i]) == 0;
    if (!err && !class_ok) {
        *msg = "The storage class you specified is not valid.";
        err = S3E_InvalidStorageClass;
    }
    free(arn);
    return err;
}

static enum s3_err rule_parse(xmlNodePtr q, struct strata_repl_rule *r, const char **msg)
{
    bool dest = false, status = false, v1_prefix = false, ssc = false;
    for (xmlNodePtr e = q->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE)
            continue;
        enum s3_err err = S3E_NONE;
        if (strata_xml_named(e, "ID") && !r->id) {
            r->id = strata_xml_text(e);
        } else if (strata_xml_named(e, "Priority") && !r->has_priority) {
            char *s = strata_xml_text(e), *end = NULL;
            errno = 0;
            r->priority = s && s[0] ? strtol(s, &end, 10) : -1;
            bool ok = s && end && !*end && errno == 0 && r->priority >= 0 &&
                      r->priority <= 2147483647L;
            free(s);
            if (!ok)
                return S3E_MalformedXML;
            r->has_priority = true;
        } else if (strata_xml_named(e, "Status") && !status) {
            int v = status_of(e);
            if (v < 0)
                return S3E_MalformedXML;
            r->enabled = v == 1;
            status = true;
        } else if (strata_xml_named(e, "Prefix") && !v1_prefix && !r->filter) {
            r->prefix = strata_xml_text(e);
            v1_prefix = true;
        } else if (strata_xml_named(e, "Filter") && !r->filter && !v1_prefix) {
            r->filter = true;
            err = filter_parse(e, r, false, msg);
        } else if (strata_xml_named(e, "DeleteMarkerReplication") && !r->dm_given) {
            int v = status_child(e);
            if (v < 0)
                return S3E_MalformedXML;
            r->dm_given = true;
            r->dm_enabled = v == 1;
        } else if (strata_xml_named(e, "ExistingObjectReplication") && !r->eor_given) {
            int v = status_child(e);
            if (v < 0)
                return S3E_MalformedXML;
            if (v == 1) {
                *msg = "ExistingObjectReplication: Strata replicates existing objects with "
                       "`strata admin replicate BUCKET`.";
                return S3E_NotImplemented;
            }
            r->eor_given = true;
        } else if (strata_xml_named(e, "SourceSelectionCriteria") && !ssc) {
            ssc = true;
            err = ssc_parse(e, r, msg);
        } else if (strata_xml_named(e, "Destination") && !dest) {
            dest = true;
            err = dest_parse(e, r, msg);
        } else {
            return S3E_MalformedXML;
        }
        if (err)
            return err;
    }
    if (!dest || !status || (!r->filter && !v1_prefix))
        return S3E_MalformedXML;
    if (r->id && (!r->id[0] || strlen(r->id) > 255)) {
        *msg = "ID length should not exceed allowed limit of 255";
        return S3E_InvalidArgument;
    }
    if (r->filter && !r->dm_given) {
        *msg = "DeleteMarkerReplication must be specified for this version of Cross Region "
               "Replication configuration schema.";
        return S3E_InvalidRequest;
    }
    if (!r->filter && (r->dm_given || r->has_priority)) {
        *msg = "Priority and DeleteMarkerReplication need a Filter (the V2 schema).";
        return S3E_InvalidRequest;
    }
    /* AWS: the replica key and the SSE-KMS selection come together. */
    if (r->kms_enabled && !r->replica_kms_key) {
        *msg = "ReplicaKmsKeyID must be specified if SseKmsEncryptedObjects tag is present.";
        return S3E_InvalidRequest;
    }
    if (r->replica_kms_key && !r->kms_enabled) {
        *msg = "SseKmsEncryptedObjects must be specified if EncryptionConfiguration is "
               "present.";
        return S3E_InvalidRequest;
    }
    if (r->dm_enabled && r->ntags) {
        *msg = "Delete marker replication is not supported if any Tag filter is specified.";
        return S3E_InvalidRequest;
    }
    if (r->and && r->ntags + (r->prefix ? 1 : 0) < 1)
        return S3E_MalformedXML;
    return S3E_NONE;
}

enum s3_err strata_repl_config_parse(const char *body, size_t len, strata_repl_dest_cb dest_ok,
                                     void *ud, struct strata_repl_conf **out, const char **msg)
{
    *out = NULL;
    *msg = NULL;
    xmlDocPtr doc;
    xmlNodePtr root = strata_xml_body_root(body, len, "ReplicationConfiguration", &doc);
    if (!root)
        return S3E_MalformedXML;
    struct strata_repl_conf *c = calloc(1, sizeof(*c));
    size_t nrules = 0;
    for (xmlNodePtr q = root->children; q; q = q->next)
        nrules += strata_xml_named(q, "Rule");
    enum s3_err e = S3E_NONE;
    if (!c || !(c->r = calloc(nrules ? nrules : 1, sizeof(*c->r))))
        e = S3E_InternalError;
    else if (nrules > STRATA_REPL_RULES_MAX) {
        *msg = "Number of rules exceeds the limit of 1000.";
        e = S3E_InvalidRequest;
    }
    for (xmlNodePtr q = root->children; q && !e; q = q->next) {
        if (q->type != XML_ELEMENT_NODE)
            continue;
        if (strata_xml_named(q, "Role") && !c->role) {
            c->role = strata_xml_text(q);
        } else if (strata_xml_named(q, "Rule")) {
            struct strata_repl_rule *r = &c->r[c->n++];
            e = rule_parse(q, r, msg);
            if (!e && dest_ok && !dest_ok(ud, r->account)) {
                *msg = r->account ? "Invalid Account: not a replication target of this server."
                                  : "Destination Account must name a replication target (this "
                                    "server has none, or more than one).";
                e = S3E_InvalidArgument;
            }
        } else {
            e = S3E_MalformedXML;
        }
    }
    xmlFreeDoc(doc);
    if (!e && (!c->role || c->n == 0))
        e = S3E_MalformedXML;
    bool v2 = false, v1 = false;
    for (size_t i = 0; !e && i < c->n; i++) {
        v2 |= c->r[i].filter, v1 |= !c->r[i].filter;
        for (size_t j = i + 1; !e && j < c->n; j++) {
            const struct strata_repl_rule *a = &c->r[i], *b = &c->r[j];
            if (a->id && b->id && strcmp(a->id, b->id) == 0) {
                *msg = "Rule Id must be unique.";
                e = S3E_InvalidArgument;
            } else if (a->has_priority && b->has_priority && a->priority == b->priority &&
                       strcmp(a->dest_bucket, b->dest_bucket) == 0) {
                *msg = "Found overlapping priority.";
                e = S3E_InvalidRequest;
            }
        }
    }
    if (!e && v1 && v2) {
        *msg = "Rules of the V1 (Prefix) and V2 (Filter) schema cannot be mixed.";
        e = S3E_InvalidRequest;
    }
    if (e) {
        strata_repl_config_free(c);
        return e;
    }
    *out = c;
    return S3E_NONE;
}

static void tag_format(struct strata_sbuf *b, const struct strata_repl_tag *t)
{
    strata_sbuf_puts(b, "<Tag>");
    strata_sbuf_xml_elem(b, "Key", t->key);
    strata_sbuf_xml_elem(b, "Value", t->value);
    strata_sbuf_puts(b, "</Tag>");
}

static void status_format(struct strata_sbuf *b, const char *tag, bool on)
{
    strata_sbuf_printf(b, "<%s><Status>%s</Status></%s>", tag, on ? "Enabled" : "Disabled", tag);
}

void strata_repl_config_format(struct strata_sbuf *b, const struct strata_repl_conf *c)
{
    strata_sbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ReplicationConfiguration "
                        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    strata_sbuf_xml_elem(b, "Role", c->role);
    for (size_t i = 0; i < c->n; i++) {
        const struct strata_repl_rule *r = &c->r[i];
        strata_sbuf_puts(b, "<Rule>");
        strata_sbuf_xml_elem(b, "ID", r->id);
        if (r->has_priority)
            strata_sbuf_printf(b, "<Priority>%ld</Priority>", r->priority);
        strata_sbuf_xml_elem(b, "Status", r->enabled ? "Enabled" : "Disabled");
        if (!r->filter) {
            strata_sbuf_xml_elem(b, "Prefix", r->prefix ? r->prefix : "");
        } else {
            strata_sbuf_puts(b, "<Filter>");
            if (r->and)
                strata_sbuf_puts(b, "<And>");
            if (r->prefix)
                strata_sbuf_xml_elem(b, "Prefix", r->prefix);
            for (size_t j = 0; j < r->ntags; j++)
                tag_format(b, &r->tags[j]);
            if (r->and)
                strata_sbuf_puts(b, "</And>");
            strata_sbuf_puts(b, "</Filter>");
        }
        if (r->dm_given)
            status_format(b, "DeleteMarkerReplication", r->dm_enabled);
        if (r->kms_given) {
            strata_sbuf_puts(b, "<SourceSelectionCriteria>");
            status_format(b, "SseKmsEncryptedObjects", r->kms_enabled);
            strata_sbuf_puts(b, "</SourceSelectionCriteria>");
        }
        if (r->eor_given)
            status_format(b, "ExistingObjectReplication", false);
        strata_sbuf_puts(b, "<Destination>");
        strata_sbuf_puts(b, "<Bucket>" ARN_PREFIX);
        strata_sbuf_xml(b, r->dest_bucket);
        strata_sbuf_puts(b, "</Bucket>");
        if (r->account)
            strata_sbuf_xml_elem(b, "Account", r->account);
        if (r->storage_class)
            strata_sbuf_xml_elem(b, "StorageClass", r->storage_class);
        if (r->replica_kms_key) {
            strata_sbuf_puts(b, "<EncryptionConfiguration>");
            strata_sbuf_xml_elem(b, "ReplicaKmsKeyID", r->replica_kms_key);
            strata_sbuf_puts(b, "</EncryptionConfiguration>");
        }
        strata_sbuf_puts(b, "</Destination></Rule>");
    }
    strata_sbuf_puts(b, "</ReplicationConfiguration>");
}

bool strata_repl_rule_matches(const struct strata_repl_rule *r, const char *key,
                              const char *tags, size_t tags_len)
{
    if (!r->enabled || (r->prefix && strncmp(key, r->prefix, strlen(r->prefix)) != 0))
        return false;
    if (r->ntags == 0)
        return true;
    char *buf = tags_len ? strndup(tags, tags_len) : NULL;
    struct strata_qparam q[64];
    int n = buf ? strata_s3_query_parse(buf, q, sizeof(q) / sizeof(q[0])) : 0;
    bool all = n >= 0;
    for (size_t i = 0; all && i < r->ntags; i++) {
        bool found = false;
        for (int j = 0; j < n && !found; j++)
            found = strcmp(q[j].name, r->tags[i].key) == 0 &&
                    strcmp(q[j].value, r->tags[i].value) == 0;
        all = found;
    }
    free(buf);
    return all;
}
