/*
 * lc_parse.c - LifecycleConfiguration XML into struct strata_lc_config,
 * with AWS's validation and error classes (MalformedXML for what breaks
 * the schema, InvalidArgument / InvalidRequest for values AWS refuses).
 * libxml2, elements matched by local name whatever the namespace, no
 * network, no entities.  Pure: any thread (libxml2 initialised by the
 * program).
 */
#include "strata/ilm.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#define LC_XML_MAX (2u << 20)
#define LC_TAGS_MAX 50 /* per And, as AWS's object tag limits allow */

/* Parse state: the first fault wins. */
struct pctx {
    struct strata_lc_error *err;
    int rc;
};

__attribute__((format(printf, 3, 4))) static int fail(struct pctx *p, int fault,
                                                      const char *fmt, ...)
{
    if (p->rc == 0) {
        p->rc = fault == STRATA_LC_NOT_IMPLEMENTED ? STRATA_ENOTIMPL : STRATA_EINVAL;
        if (p->err) {
            p->err->fault = fault;
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
            va_end(ap);
        }
    }
    return p->rc;
}

static bool is_elem(xmlNodePtr n)
{
    return n->type == XML_ELEMENT_NODE;
}

static bool named(xmlNodePtr n, const char *name)
{
    return is_elem(n) && strcmp((const char *)n->name, name) == 0;
}

/* Only elements, whitespace text and comments may appear among children;
 * stray text is a schema violation. */
static int check_children(struct pctx *p, xmlNodePtr parent)
{
    for (xmlNodePtr c = parent->children; c; c = c->next) {
        if (c->type == XML_TEXT_NODE) {
            for (const xmlChar *s = c->content; s && *s; s++)
                if (!isspace(*s))
                    return fail(p, STRATA_LC_MALFORMED, "unexpected text");
        } else if (c->type != XML_ELEMENT_NODE && c->type != XML_COMMENT_NODE) {
            return fail(p, STRATA_LC_MALFORMED, "unexpected node");
        }
    }
    return 0;
}

/* The only child called name, or NULL; a second one is MalformedXML. */
static xmlNodePtr one(struct pctx *p, xmlNodePtr parent, const char *name)
{
    xmlNodePtr hit = NULL;
    for (xmlNodePtr c = parent->children; c; c = c->next) {
        if (!named(c, name))
            continue;
        if (hit) {
            fail(p, STRATA_LC_MALFORMED, "duplicate %s", name);
            return NULL;
        }
        hit = c;
    }
    return hit;
}

/* Every element child must be one of names (NULL-terminated). */
static int only(struct pctx *p, xmlNodePtr parent, const char *const *names)
{
    if (check_children(p, parent))
        return p->rc;
    for (xmlNodePtr c = parent->children; c; c = c->next) {
        if (!is_elem(c))
            continue;
        bool ok = false;
        for (size_t i = 0; names[i] && !ok; i++)
            ok = strcmp((const char *)c->name, names[i]) == 0;
        if (!ok)
            return fail(p, STRATA_LC_MALFORMED, "unexpected element %s", (const char *)c->name);
    }
    return 0;
}

#define CHILDREN_MAX 3 /* the most children an element below has */

/* An element whose children are only the names given, each at most once:
 * the arguments are pairs of a name and the xmlNodePtr * that gets the
 * child of that name (or NULL), ended by NULL.  0 or p->rc. */
__attribute__((sentinel)) static int children(struct pctx *p, xmlNodePtr parent, ...)
{
    const char *names[CHILDREN_MAX + 1];
    xmlNodePtr *out[CHILDREN_MAX];
    size_t n = 0;
    va_list ap;
    va_start(ap, parent);
    for (const char *name; n < CHILDREN_MAX && (name = va_arg(ap, const char *)); n++) {
        names[n] = name;
        out[n] = va_arg(ap, xmlNodePtr *);
    }
    va_end(ap);
    names[n] = NULL;
    if (only(p, parent, names))
        return p->rc;
    for (size_t i = 0; i < n; i++)
        *out[i] = one(p, parent, names[i]);
    return p->rc;
}

/* Text content, malloc'ed; NULL on allocation failure (rc set). */
static char *text(struct pctx *p, xmlNodePtr n)
{
    xmlChar *t = xmlNodeGetContent(n);
    char *s = strdup(t ? (const char *)t : "");
    xmlFree(t);
    if (!s && p->rc == 0)
        p->rc = STRATA_ENOMEM;
    return s;
}

/* An element of one of two words: *on set for yes, left for no, else
 * MALFORMED with msg.  p->rc. */
static int word_elem(struct pctx *p, xmlNodePtr n, const char *yes, const char *no, bool *on,
                     const char *msg)
{
    char *s = text(p, n);
    if (s && strcmp(s, yes) == 0)
        *on = true;
    else if (s && strcmp(s, no) != 0)
        fail(p, STRATA_LC_MALFORMED, "%s", msg);
    free(s);
    return p->rc;
}

/* A decimal integer (surrounding spaces allowed) into *v. */
static bool parse_int(const char *s, long long *v)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return false;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (errno || *end || end == s)
        return false;
    *v = x;
    return true;
}

/* An integer element: MalformedXML when not a number, InvalidArgument
 * outside [lo, hi] with AWS's wording. */
static int int_elem(struct pctx *p, xmlNodePtr n, long long lo, long long hi, const char *what,
                    long long *out)
{
    char *s = text(p, n);
    if (!s)
        return p->rc;
    long long v;
    bool ok = parse_int(s, &v);
    free(s);
    if (!ok)
        return fail(p, STRATA_LC_MALFORMED, "%s is not an integer", what);
    if (v < lo || v > hi) {
        if (lo == 1)
            return fail(p, STRATA_LC_INVALID_ARG, "'%s' must be a positive integer", what);
        return fail(p, STRATA_LC_INVALID_ARG, "'%s' is out of range", what);
    }
    *out = v;
    return 0;
}

/* ISO 8601 date ("2012-12-31T00:00:00.000Z", "...Z", "+00:00" or a bare
 * date); must be midnight UTC, as AWS requires. */
static int date_elem(struct pctx *p, xmlNodePtr n, int64_t *out_ms)
{
    char *s = text(p, n);
    if (!s)
        return p->rc;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *q = s;
    while (isspace((unsigned char)*q))
        q++;
    const char *rest = strptime(q, "%Y-%m-%d", &tm);
    long long frac = 0;
    bool ok = rest != NULL;
    if (ok && *rest == 'T') {
        rest = strptime(rest + 1, "%H:%M:%S", &tm);
        ok = rest != NULL;
        if (ok && *rest == '.') {
            rest++;
            while (isdigit((unsigned char)*rest))
                frac |= *rest++ - '0';
        }
        if (ok && (*rest == 'Z' || *rest == 'z'))
            rest++;
        else if (ok && strncmp(rest, "+00:00", 6) == 0)
            rest += 6;
        else
            ok = false;
    }
    while (ok && isspace((unsigned char)*rest))
        rest++;
    ok = ok && *rest == '\0';
    free(s);
    if (!ok)
        return fail(p, STRATA_LC_MALFORMED, "Date is not an ISO 8601 date");
    if (tm.tm_hour || tm.tm_min || tm.tm_sec || frac)
        return fail(p, STRATA_LC_INVALID_ARG, "'Date' must be at midnight GMT");
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return fail(p, STRATA_LC_INVALID_ARG, "'Date' is out of range");
    *out_ms = (int64_t)t * 1000;
    return 0;
}

static int tag_elem(struct pctx *p, xmlNodePtr n, struct strata_lc_tag *t)
{
    xmlNodePtr k, v;
    if (children(p, n, "Key", &k, "Value", &v, NULL))
        return p->rc;
    if (!k || !v)
        return fail(p, STRATA_LC_MALFORMED, "Tag needs Key and Value");
    t->key = text(p, k);
    t->value = text(p, v);
    if (p->rc)
        return p->rc;
    size_t kl = strlen(t->key), vl = strlen(t->value);
    if (kl == 0 || kl > 128 || vl > 256)
        return fail(p, STRATA_LC_INVALID_ARG, "The TagKey or TagValue you have provided is invalid");
    return 0;
}

static int size_elem(struct pctx *p, xmlNodePtr n, bool *has, uint64_t *v)
{
    long long x;
    if (int_elem(p, n, 0, LLONG_MAX, (const char *)n->name, &x))
        return p->rc;
    *has = true;
    *v = (uint64_t)x;
    return 0;
}

/* The predicates of a Filter or an And (and_mode allows several). */
static int predicates(struct pctx *p, xmlNodePtr n, struct strata_lc_filter *f, bool and_mode)
{
    static const char *const fnames[] = {"Prefix", "Tag", "And", "ObjectSizeGreaterThan",
                                         "ObjectSizeLessThan", NULL};
    static const char *const anames[] = {"Prefix", "Tag", "ObjectSizeGreaterThan",
                                         "ObjectSizeLessThan", NULL};
    if (only(p, n, and_mode ? anames : fnames))
        return p->rc;
    size_t count = 0, ntags = 0;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        count += is_elem(c);
        ntags += named(c, "Tag");
    }
    if (!and_mode && count > 1)
        return fail(p, STRATA_LC_MALFORMED, "Filter takes one predicate; use And to combine");
    if (ntags > LC_TAGS_MAX)
        return fail(p, STRATA_LC_INVALID_ARG, "too many tags in a filter");
    if (ntags) {
        f->tags = calloc(ntags, sizeof(*f->tags));
        if (!f->tags)
            return p->rc = STRATA_ENOMEM;
    }
    for (xmlNodePtr c = n->children; c && !p->rc; c = c->next) {
        if (named(c, "Prefix")) {
            if (f->prefix)
                return fail(p, STRATA_LC_MALFORMED, "duplicate Prefix");
            f->prefix = text(p, c);
        } else if (named(c, "Tag")) {
            struct strata_lc_tag *t = &f->tags[f->ntags++];
            if (tag_elem(p, c, t))
                return p->rc;
            for (size_t i = 0; i + 1 < f->ntags; i++)
                if (strcmp(f->tags[i].key, t->key) == 0)
                    return fail(p, STRATA_LC_INVALID_ARG, "Duplicate Tag Keys are not allowed.");
        } else if (named(c, "ObjectSizeGreaterThan")) {
            if (f->has_size_gt)
                return fail(p, STRATA_LC_MALFORMED, "duplicate ObjectSizeGreaterThan");
            size_elem(p, c, &f->has_size_gt, &f->size_gt);
        } else if (named(c, "ObjectSizeLessThan")) {
            if (f->has_size_lt)
                return fail(p, STRATA_LC_MALFORMED, "duplicate ObjectSizeLessThan");
            size_elem(p, c, &f->has_size_lt, &f->size_lt);
        } else if (named(c, "And")) {
            f->and_form = true;
            predicates(p, c, f, true);
        }
    }
    if (p->rc)
        return p->rc;
    if (f->has_size_gt && f->has_size_lt && f->size_gt >= f->size_lt)
        return fail(p, STRATA_LC_INVALID_ARG,
                    "ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
    if (f->has_size_lt && f->size_lt == 0)
        return fail(p, STRATA_LC_INVALID_ARG, "ObjectSizeLessThan must be greater than 0");
    return 0;
}

static int expiration(struct pctx *p, xmlNodePtr n, struct strata_lc_rule *r)
{
    xmlNodePtr days, date, edm;
    if (children(p, n, "Days", &days, "Date", &date, "ExpiredObjectDeleteMarker", &edm, NULL))
        return p->rc;
    if (!!days + !!date + !!edm != 1)
        return fail(p, STRATA_LC_MALFORMED,
                    "Expiration takes exactly one of Days, Date and ExpiredObjectDeleteMarker");
    long long v;
    if (days && int_elem(p, days, 1, INT_MAX, "Days", &v) == 0)
        r->exp_days = (unsigned)v;
    if (date)
        r->exp_has_date = date_elem(p, date, &r->exp_date_ms) == 0;
    if (edm)
        word_elem(p, edm, "true", "false", &r->exp_delete_marker,
                  "ExpiredObjectDeleteMarker is true or false");
    return p->rc;
}

static int noncurrent_expiration(struct pctx *p, xmlNodePtr n, struct strata_lc_rule *r)
{
    xmlNodePtr days, newer;
    if (children(p, n, "NoncurrentDays", &days, "NewerNoncurrentVersions", &newer, NULL))
        return p->rc;
    if (!days)
        return fail(p, STRATA_LC_MALFORMED, "NoncurrentVersionExpiration needs NoncurrentDays");
    long long v;
    if (int_elem(p, days, 1, INT_MAX, "NoncurrentDays", &v) == 0)
        r->nc_days = (unsigned)v;
    if (newer && int_elem(p, newer, 1, STRATA_LC_NEWER_NONCURRENT_MAX, "NewerNoncurrentVersions",
                          &v) == 0)
        r->nc_newer = (unsigned)v;
    return p->rc;
}

static int storage_class(struct pctx *p, xmlNodePtr n, char out[32])
{
    static const char *const classes[] = {"GLACIER",     "STANDARD_IA",  "ONEZONE_IA",
                                          "INTELLIGENT_TIERING", "DEEP_ARCHIVE", "GLACIER_IR",
                                          "WARM", "COMPLIANCE", NULL};
    xmlNodePtr sc = one(p, n, "StorageClass");
    if (p->rc)
        return p->rc;
    if (!sc)
        return fail(p, STRATA_LC_MALFORMED, "a transition needs a StorageClass");
    char *s = text(p, sc);
    bool ok = false;
    for (size_t i = 0; s && classes[i] && !ok; i++)
        ok = strcmp(s, classes[i]) == 0;
    if (ok)
        snprintf(out, 32, "%s", s);
    free(s);
    if (!ok && !p->rc)
        return fail(p, STRATA_LC_INVALID_CLASS, "The storage class you specified is not valid");
    return p->rc;
}

static int transition(struct pctx *p, xmlNodePtr n, bool noncurrent, struct strata_lc_rule *r)
{
    static const char *const tnames[] = {"Days", "Date", "StorageClass", NULL};
    static const char *const nnames[] = {"NoncurrentDays", "StorageClass",
                                         "NewerNoncurrentVersions", NULL};
    struct strata_lc_transition *list = noncurrent ? r->nctr : r->tr;
    size_t *cnt = noncurrent ? &r->nnctr : &r->ntr;
    if (*cnt == STRATA_LC_TRANSITIONS_MAX)
        return fail(p, STRATA_LC_INVALID_ARG, "more than %d transitions in a rule",
                    STRATA_LC_TRANSITIONS_MAX);
    struct strata_lc_transition *t = &list[*cnt];
    memset(t, 0, sizeof(*t));
    if (only(p, n, noncurrent ? nnames : tnames) || storage_class(p, n, t->storage_class))
        return p->rc;
    for (size_t i = 0; i < *cnt; i++)
        if (strcmp(list[i].storage_class, t->storage_class) == 0)
            return fail(p, STRATA_LC_INVALID_ARG,
                        "'StorageClass' must be different for '%s' actions in same 'Rule'",
                        noncurrent ? "NoncurrentVersionTransition" : "Transition");
    long long v;
    if (noncurrent) {
        xmlNodePtr days = one(p, n, "NoncurrentDays");
        xmlNodePtr newer = one(p, n, "NewerNoncurrentVersions");
        if (!p->rc && !days)
            return fail(p, STRATA_LC_MALFORMED, "NoncurrentVersionTransition needs NoncurrentDays");
        if (!p->rc && int_elem(p, days, 0, INT_MAX, "NoncurrentDays", &v) == 0)
            t->days = (unsigned)v;
        if (!p->rc && newer &&
            int_elem(p, newer, 1, STRATA_LC_NEWER_NONCURRENT_MAX, "NewerNoncurrentVersions",
                     &v) == 0)
            t->newer = (unsigned)v;
        if (!p->rc)
            (*cnt)++;
        return p->rc;
    }
    xmlNodePtr days = one(p, n, "Days"), date = one(p, n, "Date");
    if (!p->rc && !!days + !!date != 1)
        return fail(p, STRATA_LC_MALFORMED, "Transition takes exactly one of Days and Date");
    if (!p->rc && days && int_elem(p, days, 0, INT_MAX, "Days", &v) == 0)
        t->days = (unsigned)v;
    if (!p->rc && date)
        t->has_date = date_elem(p, date, &t->date_ms) == 0;
    if (!p->rc && *cnt > 0 && list[0].has_date != t->has_date)
        return fail(p, STRATA_LC_INVALID_REQ,
                    "Found mixed 'Date' and 'Days' based Transition actions in lifecycle rule");
    if (!p->rc)
        (*cnt)++;
    return p->rc;
}

static int abort_mpu(struct pctx *p, xmlNodePtr n, struct strata_lc_rule *r)
{
    xmlNodePtr d;
    if (children(p, n, "DaysAfterInitiation", &d, NULL))
        return p->rc;
    if (!d)
        return fail(p, STRATA_LC_MALFORMED,
                    "AbortIncompleteMultipartUpload needs DaysAfterInitiation");
    long long v;
    if (int_elem(p, d, 1, INT_MAX, "DaysAfterInitiation", &v) == 0)
        r->abort_days = (unsigned)v;
    return p->rc;
}

static int rule_filter(struct pctx *p, xmlNodePtr n, struct strata_lc_rule *r)
{
    xmlNodePtr filter = one(p, n, "Filter"), prefix = one(p, n, "Prefix");
    if (p->rc)
        return p->rc;
    if (filter && prefix)
        return fail(p, STRATA_LC_MALFORMED, "a rule takes Filter or Prefix, not both");
    if (!filter && !prefix)
        return fail(p, STRATA_LC_MALFORMED, "a rule needs Filter or Prefix");
    if (prefix) {
        r->filter.prefix = text(p, prefix);
        r->legacy_prefix = true;
        return p->rc;
    }
    return predicates(p, filter, &r->filter, false);
}

static int rule_actions(struct pctx *p, xmlNodePtr n, struct strata_lc_rule *r)
{
    xmlNodePtr exp = one(p, n, "Expiration"), nce = one(p, n, "NoncurrentVersionExpiration");
    xmlNodePtr ab = one(p, n, "AbortIncompleteMultipartUpload");
    if (p->rc)
        return p->rc;
    if (exp && expiration(p, exp, r))
        return p->rc;
    if (nce && noncurrent_expiration(p, nce, r))
        return p->rc;
    if (ab && abort_mpu(p, ab, r))
        return p->rc;
    for (xmlNodePtr c = n->children; c && !p->rc; c = c->next) {
        if (named(c, "Transition")) {
            r->has_transition = true;
            transition(p, c, false, r);
        } else if (named(c, "NoncurrentVersionTransition")) {
            r->has_nc_transition = true;
            transition(p, c, true, r);
        }
    }
    if (p->rc)
        return p->rc;
    if (!exp && !nce && !ab && !r->has_transition && !r->has_nc_transition)
        return fail(p, STRATA_LC_INVALID_REQ, "At least one action needs to be specified in a rule");
    if (r->filter.ntags && r->exp_delete_marker)
        return fail(p, STRATA_LC_INVALID_REQ,
                    "ExpiredObjectDeleteMarker cannot be specified with object tags");
    if (r->filter.ntags && r->abort_days)
        return fail(p, STRATA_LC_INVALID_REQ,
                    "AbortIncompleteMultipartUpload cannot be specified with Tags");
    if ((r->filter.has_size_gt || r->filter.has_size_lt) && r->abort_days)
        return fail(p, STRATA_LC_INVALID_REQ,
                    "AbortIncompleteMultipartUpload cannot be specified with an object size filter");
    return 0;
}

static int rule(struct pctx *p, xmlNodePtr n, struct strata_lc_rule *r)
{
    static const char *const names[] = {"ID", "Filter", "Prefix", "Status", "Expiration",
                                        "Transition", "NoncurrentVersionExpiration",
                                        "NoncurrentVersionTransition",
                                        "AbortIncompleteMultipartUpload", NULL};
    if (only(p, n, names))
        return p->rc;
    xmlNodePtr id = one(p, n, "ID"), status = one(p, n, "Status");
    if (p->rc)
        return p->rc;
    if (id) {
        char *s = text(p, id);
        if (!s)
            return p->rc;
        size_t l = strlen(s);
        if (l > STRATA_LC_ID_MAX) {
            free(s);
            return fail(p, STRATA_LC_INVALID_ARG, "ID length should not exceed allowed limit of 255");
        }
        memcpy(r->id, s, l + 1);
        free(s);
    }
    if (!status)
        return fail(p, STRATA_LC_MALFORMED, "a rule needs Status");
    if (word_elem(p, status, "Enabled", "Disabled", &r->enabled, "Status is Enabled or Disabled") ||
        rule_filter(p, n, r))
        return p->rc;
    return rule_actions(p, n, r);
}

/* AWS makes up an ID for a rule without one; unique within the document. */
static void assign_ids(struct strata_lc_config *c)
{
    unsigned seq = 0;
    for (size_t i = 0; i < c->nrules; i++) {
        if (c->rules[i].id[0])
            continue;
        bool clash;
        do {
            snprintf(c->rules[i].id, sizeof(c->rules[i].id), "rule-%u", ++seq);
            clash = false;
            for (size_t j = 0; j < c->nrules && !clash; j++)
                clash = j != i && strcmp(c->rules[j].id, c->rules[i].id) == 0;
        } while (clash);
    }
}

static int config(struct pctx *p, xmlNodePtr root, struct strata_lc_config *c)
{
    static const char *const names[] = {"Rule", NULL};
    if (!named(root, "LifecycleConfiguration"))
        return fail(p, STRATA_LC_MALFORMED, "root element is not LifecycleConfiguration");
    if (only(p, root, names))
        return p->rc;
    size_t n = 0;
    for (xmlNodePtr x = root->children; x; x = x->next)
        n += is_elem(x);
    if (n == 0)
        return fail(p, STRATA_LC_MALFORMED, "no Rule");
    if (n > STRATA_LC_RULES_MAX)
        return fail(p, STRATA_LC_MALFORMED, "more than %d rules", STRATA_LC_RULES_MAX);
    c->rules = calloc(n, sizeof(*c->rules));
    if (!c->rules)
        return p->rc = STRATA_ENOMEM;
    for (xmlNodePtr x = root->children; x && !p->rc; x = x->next) {
        if (!is_elem(x))
            continue;
        struct strata_lc_rule *r = &c->rules[c->nrules++];
        if (rule(p, x, r))
            return p->rc;
        for (size_t i = 0; r->id[0] && i + 1 < c->nrules; i++)
            if (strcmp(c->rules[i].id, r->id) == 0)
                return fail(p, STRATA_LC_INVALID_ARG,
                            "Rule ID must be unique. Found same ID for more than one rule");
    }
    assign_ids(c);
    return 0;
}

int strata_lc_config_parse(const char *xml, size_t len, struct strata_lc_config *out,
                           struct strata_lc_error *err)
{
    memset(out, 0, sizeof(*out));
    if (err)
        memset(err, 0, sizeof(*err));
    struct pctx p = {.err = err};
    if (len == 0 || len > LC_XML_MAX) {
        fail(&p, STRATA_LC_MALFORMED, "empty or oversized document");
        return p.rc;
    }
    xmlDocPtr doc = xmlReadMemory(xml, (int)len, NULL, NULL,
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (!root)
        fail(&p, STRATA_LC_MALFORMED, "not well-formed XML");
    else
        config(&p, root, out);
    xmlFreeDoc(doc);
    if (p.rc)
        strata_lc_config_fini(out);
    return p.rc;
}

static void filter_fini(struct strata_lc_filter *f)
{
    free(f->prefix);
    for (size_t i = 0; i < f->ntags; i++) {
        free(f->tags[i].key);
        free(f->tags[i].value);
    }
    free(f->tags);
    memset(f, 0, sizeof(*f));
}

void strata_lc_config_fini(struct strata_lc_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nrules; i++)
        filter_fini(&c->rules[i].filter);
    free(c->rules);
    c->rules = NULL;
    c->nrules = 0;
}
