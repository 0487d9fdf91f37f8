/*
 * s3_xml.c - parsing of S3 request bodies with libxml2: CreateBucket
 * configuration, versioning configuration, DeleteObjects and ACL
 * documents.  Elements are matched by local name, whatever the namespace,
 * as AWS does.  The parser never loads external entities or the network,
 * and a body with a DOCTYPE is MalformedXML (parse() is the one entry).
 * Pure: any thread (libxml2 is initialised once in main()).
 */
#include "srv.h"
#include "authz.h"
#include "sse.h"
#include "s3_cors.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

/* A DOCTYPE stops the parse at once: S3 bodies never carry one, and
 * refusing it before any entity is declared keeps entity expansion
 * ("billion laughs") and external subsets out entirely. */
static void doctype_cb(void *ctx, const xmlChar *name, const xmlChar *ext_id,
                       const xmlChar *sys_id)
{
    (void)name, (void)ext_id, (void)sys_id;
    xmlParserCtxtPtr c = ctx;
    c->_private = c; /* seen */
    xmlStopParser(c);
}

/* Every request body parser starts here: a well-formed document without a
 * DOCTYPE, or NULL (MalformedXML). */
static xmlDocPtr parse(const char *body, size_t len)
{
    if (len == 0 || len > STRATA_SRV_XML_BODY_MAX)
        return NULL;
    xmlParserCtxtPtr c = xmlNewParserCtxt();
    if (!c)
        return NULL;
    c->sax->internalSubset = doctype_cb;
    c->_private = NULL;
    xmlDocPtr doc = xmlCtxtReadMemory(c, body, (int)len, NULL, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    bool refused = c->_private != NULL || !c->wellFormed;
    xmlFreeParserCtxt(c);
    if (doc && (refused || doc->intSubset || doc->extSubset)) {
        xmlFreeDoc(doc);
        doc = NULL;
    }
    return doc;
}

static bool named(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static xmlNodePtr child(xmlNodePtr parent, const char *name)
{
    for (xmlNodePtr c = parent->children; c; c = c->next)
        if (named(c, name))
            return c;
    return NULL;
}

/* Text content, malloc'ed (caller frees), or NULL. */
static char *text(xmlNodePtr n)
{
    xmlChar *t = xmlNodeGetContent(n);
    if (!t)
        return NULL;
    char *s = strdup((const char *)t);
    xmlFree(t);
    return s;
}

/* The text of parent's first child named name (malloc'ed), or NULL when
 * parent is NULL or has none. */
static char *child_text(xmlNodePtr parent, const char *name)
{
    xmlNodePtr c = parent ? child(parent, name) : NULL;
    return c ? text(c) : NULL;
}

/* How every parser below opens its body: the root element when it is
 * named root_name, else NULL.  *doc is the document to free (NULL when the
 * body is not one; xmlFreeDoc takes NULL). */
static xmlNodePtr body_root(const char *body, size_t len, const char *root_name, xmlDocPtr *doc)
{
    *doc = parse(body, len);
    xmlNodePtr root = *doc ? xmlDocGetRootElement(*doc) : NULL;
    return root && named(root, root_name) ? root : NULL;
}

/* A zeroed array of one elem_size element per child of root named name
 * (root NULL: no children), *count of them; NULL with *e MalformedXML when
 * there are none or more than max, InternalError when out of memory. */
static void *per_child(xmlNodePtr root, const char *name, size_t max, size_t elem_size,
                       size_t *count, enum s3_err *e)
{
    size_t n = 0;
    for (xmlNodePtr c = root ? root->children : NULL; c; c = c->next)
        n += named(c, name);
    *count = n;
    void *arr = n == 0 || n > max ? NULL : calloc(n, elem_size);
    *e = n == 0 || n > max ? S3E_MalformedXML : arr ? S3E_NONE : S3E_InternalError;
    return arr;
}

enum s3_err strata_xml_location_parse(const char *body, size_t len, char *out, size_t out_len)
{
    out[0] = '\0';
    if (len == 0)
        return S3E_NONE;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "CreateBucketConfiguration", &doc);
    enum s3_err e = root ? S3E_NONE : S3E_MalformedXML;
    /* Location and Bucket describe directory buckets, Tags tags the new
     * bucket: none is done here, so none is ignored. */
    for (xmlNodePtr c = root ? root->children : NULL; c && !e; c = c->next)
        if (c->type == XML_ELEMENT_NODE && !named(c, "LocationConstraint"))
            e = S3E_NotImplemented;
    char *v = e ? NULL : child_text(root, "LocationConstraint");
    if (v && strlen(v) >= out_len)
        e = S3E_InvalidLocationConstraint;
    else if (v)
        snprintf(out, out_len, "%s", v);
    free(v);
    xmlFreeDoc(doc);
    return e;
}

enum s3_err strata_xml_versioning_parse(const char *body, size_t len, int *status)
{
    *status = -1;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "VersioningConfiguration", &doc);
    enum s3_err e = root ? S3E_NONE : S3E_MalformedXML;
    char *v = child_text(root, "Status"), *m = child_text(root, "MfaDelete");
    if (v && strcmp(v, "Enabled") == 0)
        *status = STRATA_VERSIONING_ENABLED;
    else if (v && strcmp(v, "Suspended") == 0)
        *status = STRATA_VERSIONING_SUSPENDED;
    else if (v)
        e = S3E_MalformedXML;
    if (m && strcmp(m, "Enabled") == 0)
        e = S3E_NotImplemented; /* MFA delete needs MFA devices we do not have */
    free(v);
    free(m);
    xmlFreeDoc(doc);
    return e;
}

void strata_xml_delete_free(struct strata_xml_delobj *objs, size_t n)
{
    for (size_t i = 0; objs && i < n; i++) {
        free(objs[i].key);
        free(objs[i].version_id);
    }
    free(objs);
}

enum s3_err strata_xml_delete_parse(const char *body, size_t len, size_t max,
                                    struct strata_xml_delobj **objs, size_t *n, bool *quiet)
{
    *quiet = false;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "Delete", &doc);
    size_t count;
    enum s3_err e;
    struct strata_xml_delobj *arr = per_child(root, "Object", max, sizeof(*arr), &count, &e);
    size_t i = 0;
    for (xmlNodePtr c = arr ? root->children : NULL; c && e == S3E_NONE; c = c->next) {
        if (named(c, "Quiet")) {
            char *v = text(c);
            *quiet = v && strcmp(v, "true") == 0;
            free(v);
        } else if (named(c, "Object")) {
            xmlNodePtr k = child(c, "Key"), vid = child(c, "VersionId");
            if (!k) {
                e = S3E_MalformedXML;
                break;
            }
            /* Conditional deletes are not evaluated: refuse rather
             * than delete unconditionally. */
            if (child(c, "ETag") || child(c, "LastModifiedTime") || child(c, "Size")) {
                e = S3E_NotImplemented;
                break;
            }
            arr[i].key = text(k);
            arr[i].version_id = vid ? text(vid) : NULL;
            if (!arr[i].key)
                e = S3E_MalformedXML;
            i++;
        }
    }
    xmlFreeDoc(doc);
    if (e)
        strata_xml_delete_free(arr, count);
    *objs = e ? NULL : arr;
    *n = e ? 0 : count;
    return e;
}

/* The Grantee's xsi:type, or what its children say when it has none. */
static int grantee_kind(xmlNodePtr ge)
{
    xmlChar *t = xmlGetNsProp(ge, (const xmlChar *)"type",
                              (const xmlChar *)"http://www.w3.org/2001/XMLSchema-instance");
    int k = -1;
    if (t) {
        k = strcmp((const char *)t, "CanonicalUser") == 0           ? 0
            : strcmp((const char *)t, "Group") == 0                 ? 1
            : strcmp((const char *)t, "AmazonCustomerByEmail") == 0 ? 2
                                                                    : -1;
        xmlFree(t);
        return k;
    }
    return child(ge, "ID") ? 0 : child(ge, "URI") ? 1 : child(ge, "EmailAddress") ? 2 : -1;
}

static enum s3_err acl_grant(struct strata_acl *a, xmlNodePtr g, strata_acl_resolve_cb resolve,
                             void *ud)
{
    xmlNodePtr ge = child(g, "Grantee"), pe = child(g, "Permission");
    if (!ge || !pe)
        return S3E_MalformedACLError;
    char *perm = text(pe);
    int p = perm ? strata_acl_perm_parse(perm) : 0;
    free(perm);
    int kind = grantee_kind(ge);
    static const char *const elem[] = {"ID", "URI", "EmailAddress"};
    xmlNodePtr ve = kind >= 0 ? child(ge, elem[kind]) : NULL;
    char *v = ve ? text(ve) : NULL;
    enum s3_err e = S3E_NONE;
    char id[STRATA_ACL_ID_MAX];
    if (!p || !v || !*v) {
        e = S3E_MalformedACLError;
    } else if (kind == 1) {
        int t = strata_acl_group_parse(v);
        e = t < 0 ? S3E_InvalidArgument : strata_s3_err_from_auth(strata_acl_add(a, t, p, NULL));
    } else if (!resolve(ud, kind == 2, v, id)) {
        e = kind == 2 ? S3E_UnresolvableGrantByEmailAddress : S3E_InvalidArgument;
    } else {
        e = strata_s3_err_from_auth(strata_acl_add(a, STRATA_ACL_USER, p, id));
    }
    free(v);
    return e;
}

enum s3_err strata_xml_acl_parse(const char *body, size_t len, struct strata_acl *out,
                                 strata_acl_resolve_cb resolve, void *ud)
{
    memset(out, 0, offsetof(struct strata_acl, g));
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "AccessControlPolicy", &doc);
    xmlNodePtr owner = root ? child(root, "Owner") : NULL;
    xmlNodePtr list = root ? child(root, "AccessControlList") : NULL;
    char *o = child_text(owner, "ID");
    enum s3_err e = S3E_NONE;
    if (!list || !o || !*o || strlen(o) >= sizeof(out->owner))
        e = S3E_MalformedACLError;
    else
        snprintf(out->owner, sizeof(out->owner), "%s", o);
    free(o);
    for (xmlNodePtr g = list ? list->children : NULL; g && !e; g = g->next)
        if (named(g, "Grant"))
            e = acl_grant(out, g, resolve, ud);
    xmlFreeDoc(doc);
    return e;
}

void strata_xml_complete_free(struct strata_xml_part *parts, size_t n)
{
    for (size_t i = 0; parts && i < n; i++)
        free(parts[i].etag);
    free(parts);
}

/* The first Checksum* child, base64-decoded into p. */
static enum s3_err part_cksum(xmlNodePtr part, struct strata_xml_part *p)
{
    static const char *const names[] = {"ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME",
                                        "ChecksumSHA1", "ChecksumSHA256"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        xmlNodePtr c = child(part, names[i]);
        if (!c)
            continue;
        char *v = text(c);
        int n = v ? strata_b64_decode(v, p->cksum, sizeof(p->cksum)) : -1;
        free(v);
        if (n <= 0)
            return S3E_InvalidRequest;
        p->cksum_len = (size_t)n;
        return S3E_NONE;
    }
    return S3E_NONE;
}

enum s3_err strata_xml_complete_parse(const char *body, size_t len, size_t max,
                                      struct strata_xml_part **parts, size_t *n)
{
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "CompleteMultipartUpload", &doc);
    size_t count;
    enum s3_err e;
    struct strata_xml_part *arr = per_child(root, "Part", max, sizeof(*arr), &count, &e);
    size_t i = 0;
    for (xmlNodePtr c = arr ? root->children : NULL; c && !e; c = c->next) {
        if (!named(c, "Part"))
            continue;
        xmlNodePtr pn = child(c, "PartNumber"), et = child(c, "ETag");
        char *num = pn ? text(pn) : NULL;
        char *end = NULL;
        unsigned long v = num ? strtoul(num, &end, 10) : 0;
        if (!num || !*num || *end || v == 0 || v > 10000 || !et)
            e = S3E_MalformedXML;
        free(num);
        arr[i].part_number = (unsigned)v;
        arr[i].etag = et ? text(et) : NULL;
        if (!e && !arr[i].etag)
            e = S3E_MalformedXML;
        if (!e)
            e = part_cksum(c, &arr[i]);
        i++;
    }
    xmlFreeDoc(doc);
    if (e)
        strata_xml_complete_free(arr, count);
    *parts = e ? NULL : arr;
    *n = e ? 0 : count;
    return e;
}

enum s3_err strata_xml_tagging_parse(const char *body, size_t len, int max, struct strata_sbuf *out)
{
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "Tagging", &doc);
    xmlNodePtr set = root ? child(root, "TagSet") : NULL;
    if (!set) {
        xmlFreeDoc(doc);
        return S3E_MalformedXML;
    }
    struct strata_qparam tags[64];
    char *owned[128];
    int n = 0, no = 0;
    enum s3_err e = S3E_NONE;
    for (xmlNodePtr t = set->children; t && !e; t = t->next) {
        if (!named(t, "Tag"))
            continue;
        if (n == (int)(sizeof(tags) / sizeof(tags[0])) || n >= max) {
            e = S3E_InvalidTag;
            break;
        }
        xmlNodePtr k = child(t, "Key"), v = child(t, "Value");
        char *ks = k ? text(k) : NULL, *vs = v ? text(v) : strdup("");
        if (ks)
            owned[no++] = ks;
        if (vs)
            owned[no++] = vs;
        if (!ks || !vs) {
            e = k ? S3E_InternalError : S3E_MalformedXML;
            break;
        }
        tags[n].name = ks;
        tags[n].value = vs;
        n++;
    }
    if (!e && strata_s3_tags_validate(tags, n, max) != 0)
        e = S3E_InvalidTag;
    if (!e && strata_s3_tags_encode(out, tags, n) != 0)
        e = S3E_InternalError;
    for (int i = 0; i < no; i++)
        free(owned[i]);
    xmlFreeDoc(doc);
    return e;
}

/* ---- Object Lock documents ---------------------------------------------- */

static int lock_mode_of(const char *s)
{
    if (s && strcmp(s, "GOVERNANCE") == 0)
        return STRATA_LOCK_GOVERNANCE;
    if (s && strcmp(s, "COMPLIANCE") == 0)
        return STRATA_LOCK_COMPLIANCE;
    return -1;
}

/* A whole-number period: 1 = ok, 0 = not a number, -1 = out of range. */
static int period_of(const char *s, unsigned max, unsigned *out)
{
    if (!s || !*s)
        return 0;
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!*p)
        return 0;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return 0;
    if (*s == '-' || strlen(p) > 9)
        return -1;
    unsigned long v = strtoul(p, NULL, 10);
    if (v == 0 || v > max)
        return -1;
    *out = (unsigned)v;
    return 1;
}

enum s3_err strata_xml_lock_config_parse(const char *body, size_t len, bool *enabled, int *mode,
                                         unsigned *days, unsigned *years, const char **msg)
{
    *enabled = false;
    *mode = 0;
    *days = *years = 0;
    *msg = NULL;
    enum s3_err e = S3E_NONE;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "ObjectLockConfiguration", &doc);
    char *v = child_text(root, "ObjectLockEnabled");
    if (!v || strcmp(v, "Enabled") != 0)
        e = S3E_MalformedXML;
    free(v);
    xmlNodePtr rule = e ? NULL : child(root, "Rule");
    if (rule) {
        xmlNodePtr dr = child(rule, "DefaultRetention");
        xmlNodePtr dn = dr ? child(dr, "Days") : NULL;
        xmlNodePtr yn = dr ? child(dr, "Years") : NULL;
        char *ms = child_text(dr, "Mode"), *ds = dn ? text(dn) : NULL, *ys = yn ? text(yn) : NULL;
        *mode = lock_mode_of(ms);
        if (!dr || *mode < 0 || (dn != NULL) == (yn != NULL)) {
            e = S3E_MalformedXML; /* Days and Years: exactly one */
        } else {
            int ok = dn ? period_of(ds, 36500, days) : period_of(ys, 100, years);
            if (ok == 0) {
                e = S3E_MalformedXML;
            } else if (ok < 0) {
                e = S3E_InvalidRetentionPeriod;
                *msg = "Default retention period must be a positive integer value.";
            }
        }
        free(ms);
        free(ds);
        free(ys);
        if (e)
            *mode = 0;
    }
    *enabled = e == S3E_NONE;
    xmlFreeDoc(doc);
    return e;
}

enum s3_err strata_xml_retention_parse(const char *body, size_t len, int *mode, int64_t *until_ms)
{
    *mode = 0;
    *until_ms = 0;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "Retention", &doc);
    xmlNodePtr mn = root ? child(root, "Mode") : NULL;
    xmlNodePtr dn = root ? child(root, "RetainUntilDate") : NULL;
    char *ms = mn ? text(mn) : NULL, *ds = dn ? text(dn) : NULL;
    enum s3_err e = S3E_NONE;
    if (!root || (mn != NULL) != (dn != NULL))
        e = S3E_MalformedXML;
    else if (mn && ((*mode = lock_mode_of(ms)) < 0 || strata_iso8601_parse(ds, until_ms)))
        e = S3E_MalformedXML;
    free(ms);
    free(ds);
    if (e)
        *mode = 0;
    xmlFreeDoc(doc);
    return e;
}

enum s3_err strata_xml_ownership_parse(const char *body, size_t len, int *own)
{
    *own = STRATA_OWN_NONE;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "OwnershipControls", &doc);
    int rules = 0;
    xmlNodePtr rule = NULL;
    for (xmlNodePtr c = root ? root->children : NULL; c; c = c->next)
        if (named(c, "Rule")) {
            rules++;
            rule = c;
        }
    char *v = rules == 1 ? child_text(rule, "ObjectOwnership") : NULL;
    if (v)
        *own = strata_ownership_parse(v, strlen(v));
    free(v);
    xmlFreeDoc(doc);
    return *own == STRATA_OWN_NONE ? S3E_MalformedXML : S3E_NONE;
}

enum s3_err strata_xml_pab_parse(const char *body, size_t len, unsigned *bits)
{
    static const char *const names[] = {"BlockPublicAcls", "IgnorePublicAcls",
                                        "BlockPublicPolicy", "RestrictPublicBuckets"};
    *bits = 0;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "PublicAccessBlockConfiguration", &doc);
    enum s3_err e = root ? S3E_NONE : S3E_MalformedXML;
    for (unsigned i = 0; i < 4 && !e; i++) {
        char *v = child_text(root, names[i]);
        if (v && strcmp(v, "true") == 0)
            *bits |= 1u << i;
        else if (v && strcmp(v, "false") != 0)
            e = S3E_MalformedXML;
        free(v);
    }
    xmlFreeDoc(doc);
    return e;
}

enum s3_err strata_xml_legal_hold_parse(const char *body, size_t len, bool *on)
{
    *on = false;
    enum s3_err e = S3E_MalformedXML;
    xmlDocPtr doc;
    char *v = child_text(body_root(body, len, "LegalHold", &doc), "Status");
    if (v && (strcmp(v, "ON") == 0 || strcmp(v, "OFF") == 0)) {
        *on = strcmp(v, "ON") == 0;
        e = S3E_NONE;
    }
    free(v);
    xmlFreeDoc(doc);
    return e;
}

enum s3_err strata_xml_encryption_parse(const char *body, size_t len,
                                        struct strata_sse_default *out)
{
    memset(out, 0, sizeof(*out));
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "ServerSideEncryptionConfiguration", &doc);
    xmlNodePtr rule = root ? child(root, "Rule") : NULL;
    xmlNodePtr def = rule ? child(rule, "ApplyServerSideEncryptionByDefault") : NULL;
    xmlNodePtr alg = def ? child(def, "SSEAlgorithm") : NULL;
    xmlNodePtr kid = def ? child(def, "KMSMasterKeyID") : NULL;
    xmlNodePtr bk = rule ? child(rule, "BucketKeyEnabled") : NULL;
    enum s3_err e = alg ? S3E_NONE : S3E_MalformedXML;
    int rules = 0;
    for (xmlNodePtr c = root && !e ? root->children : NULL; c; c = c->next)
        rules += named(c, "Rule");
    if (rules > 1)
        e = S3E_MalformedXML; /* AWS takes exactly one rule */
    char *a = e ? NULL : text(alg), *k = kid ? text(kid) : NULL, *b = bk ? text(bk) : NULL;
    if (!e && (!a || strlen(a) >= sizeof(out->algo) ||
               (k && (!*k || strlen(k) >= sizeof(out->key_id)))))
        e = S3E_InvalidArgument;
    if (!e && b && strcmp(b, "true") != 0 && strcmp(b, "false") != 0)
        e = S3E_MalformedXML;
    if (!e) {
        snprintf(out->algo, sizeof(out->algo), "%s", a);
        if (k)
            snprintf(out->key_id, sizeof(out->key_id), "%s", k);
        out->bucket_key = b && strcmp(b, "true") == 0;
    }
    free(a);
    free(k);
    free(b);
    xmlFreeDoc(doc);
    return e;
}

/* ---- CORSConfiguration ---------------------------------------------------- */

/* Appends the text of each child named name of rule to *arr. */
static enum s3_err cors_list(xmlNodePtr rule, const char *name, char ***arr, size_t *n)
{
    for (xmlNodePtr c = rule->children; c; c = c->next) {
        if (!named(c, name))
            continue;
        char **grown = realloc(*arr, (*n + 1) * sizeof(**arr));
        if (!grown)
            return S3E_InternalError;
        *arr = grown;
        (*arr)[*n] = text(c);
        if (!(*arr)[*n])
            return S3E_InternalError;
        (*n)++;
    }
    return S3E_NONE;
}

static bool cors_one_wildcard(const char *s)
{
    const char *star = strchr(s, '*');
    return !star || !strchr(star + 1, '*');
}

static enum s3_err cors_rule_parse(xmlNodePtr n, struct strata_cors_rule *rule, const char **msg)
{
    rule->max_age_s = -1;
    char **methods = NULL;
    size_t nmethods = 0;
    enum s3_err e = cors_list(n, "AllowedMethod", &methods, &nmethods);
    for (size_t i = 0; i < nmethods && !e; i++) {
        unsigned bit = strata_cors_method_bit(methods[i]);
        if (!bit) {
            *msg = "Found unsupported HTTP method in CORS config.";
            e = S3E_InvalidRequest;
        }
        rule->methods |= bit;
    }
    for (size_t i = 0; i < nmethods; i++)
        free(methods[i]);
    free(methods);
    if (!e)
        e = cors_list(n, "AllowedOrigin", &rule->origins, &rule->norigins);
    if (!e)
        e = cors_list(n, "AllowedHeader", &rule->headers, &rule->nheaders);
    if (!e)
        e = cors_list(n, "ExposeHeader", &rule->expose, &rule->nexpose);
    if (e)
        return e;
    if (!rule->methods || !rule->norigins)
        return S3E_MalformedXML;
    for (size_t i = 0; i < rule->norigins; i++)
        if (!cors_one_wildcard(rule->origins[i])) {
            *msg = "AllowedOrigin can not have more than one wildcard.";
            return S3E_InvalidRequest;
        }
    for (size_t i = 0; i < rule->nheaders; i++)
        if (!cors_one_wildcard(rule->headers[i])) {
            *msg = "AllowedHeader can not have more than one wildcard.";
            return S3E_InvalidRequest;
        }
    for (size_t i = 0; i < rule->nexpose; i++)
        if (strchr(rule->expose[i], '*')) {
            *msg = "ExposeHeader contains wildcard. We currently do not support wildcard for "
                   "ExposeHeader.";
            return S3E_InvalidRequest;
        }
    xmlNodePtr id = child(n, "ID"), age = child(n, "MaxAgeSeconds");
    if (id) {
        rule->id = text(id);
        if (!rule->id || strlen(rule->id) > 255)
            return S3E_MalformedXML;
    }
    if (age) {
        char *v = text(age), *end = NULL;
        long x = v && *v ? strtol(v, &end, 10) : -1;
        bool ok = end && !*end && x >= 0 && x <= 0x7fffffff;
        free(v);
        if (!ok)
            return S3E_MalformedXML;
        rule->max_age_s = x;
    }
    return S3E_NONE;
}

enum s3_err strata_xml_cors_parse(const char *body, size_t len, struct strata_cors **out,
                                  const char **msg)
{
    *out = NULL;
    *msg = NULL;
    if (len > STRATA_CORS_DOC_MAX)
        return S3E_MalformedXML;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "CORSConfiguration", &doc);
    size_t count;
    enum s3_err e;
    struct strata_cors_rule *rules =
        per_child(root, "CORSRule", STRATA_CORS_RULES_MAX, sizeof(*rules), &count, &e);
    struct strata_cors *c = rules ? calloc(1, sizeof(*c)) : NULL;
    if (c) {
        c->rules = rules;
    } else if (rules) {
        free(rules);
        e = S3E_InternalError;
    }
    for (xmlNodePtr n = c ? root->children : NULL; n && !e; n = n->next)
        if (named(n, "CORSRule"))
            e = cors_rule_parse(n, &c->rules[c->nrules++], msg);
    xmlFreeDoc(doc);
    if (e)
        strata_cors_free(c);
    *out = e ? NULL : c;
    return e;
}

struct _xmlDoc *strata_xml_body_parse(const char *body, size_t len)
{
    return parse(body, len);
}

struct _xmlNode *strata_xml_body_root(const char *body, size_t len, const char *root_name,
                                      struct _xmlDoc **doc)
{
    xmlNodePtr root = body_root(body, len, root_name, doc);
    if (!root) {
        xmlFreeDoc(*doc);
        *doc = NULL;
    }
    return root;
}

bool strata_xml_named(const struct _xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

char *strata_xml_text(struct _xmlNode *n)
{
    return text(n);
}

/* One of RestoreObject's retrieval tiers, or NULL text (absent). */
static bool restore_tier_ok(xmlNodePtr n)
{
    char *v = n ? text(n) : NULL;
    bool ok = !n || (v && (strcmp(v, "Standard") == 0 || strcmp(v, "Bulk") == 0 ||
                           strcmp(v, "Expedited") == 0));
    free(v);
    return ok;
}

enum s3_err strata_xml_restore_parse(const char *body, size_t len, unsigned *days)
{
    *days = 0;
    xmlDocPtr doc;
    xmlNodePtr root = body_root(body, len, "RestoreRequest", &doc);
    enum s3_err e = root ? S3E_NONE : S3E_MalformedXML;
    for (xmlNodePtr c = root ? root->children : NULL; c && !e; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        char *v = text(c);
        if (named(c, "Days")) {
            char *end = NULL;
            unsigned long d = v ? strtoul(v, &end, 10) : 0;
            if (!v || v[0] < '0' || v[0] > '9' || *end || d < 1 || d > 2147483647UL)
                e = S3E_MalformedXML;
            else
                *days = (unsigned)d;
        } else if (named(c, "GlacierJobParameters")) {
            xmlNodePtr t = child(c, "Tier");
            if (!t || !restore_tier_ok(t))
                e = S3E_MalformedXML;
        } else if (named(c, "Tier")) {
            if (!restore_tier_ok(c))
                e = S3E_MalformedXML;
        } else if (named(c, "Type")) {
            /* SELECT is the only type: restores that query the object. */
            e = v && strcmp(v, "SELECT") == 0 ? S3E_NotImplemented : S3E_MalformedXML;
        } else if (named(c, "SelectParameters") || named(c, "OutputLocation")) {
            e = S3E_NotImplemented;
        } else if (!named(c, "Description")) {
            e = S3E_MalformedXML;
        }
        free(v);
    }
    xmlFreeDoc(doc);
    return e;
}
