/*
 * fuzz_s3_xml.c - libFuzzer target for the S3 request-body parsers of
 * server/s3/s3_xml.c (libxml2): CreateBucketConfiguration
 * (LocationConstraint), VersioningConfiguration, DeleteObjects,
 * CompleteMultipartUpload, Tagging, AccessControlPolicy and the Object
 * Lock documents (ObjectLockConfiguration, Retention, LegalHold),
 * CORSConfiguration, OwnershipControls, PublicAccessBlockConfiguration
 * and ServerSideEncryptionConfiguration.
 *
 * Input: the body.  Every parser may get every input (each rejects a
 * foreign root element at once), so one corpus seeds them all; a parser is
 * skipped when its root element's name is not in the bytes of an
 * ASCII-based document (see may_be), which changes no outcome and makes
 * the campaign several times faster.  Checks the
 * contracts the handlers rely on: results only on success, counts within
 * max, part numbers 1..10000, checksum lengths within the raw maximum, a
 * region that fits its buffer, a versioning status in range, a canonical
 * tag set of at most max tags; everything allocated is freed (LeakSanitizer
 * sees the rest).
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_xml.h"

#include "s3/authz.h"
#include "s3/sse.h"
#include "sbuf.h"
#include "s3_cors.h"
#include "srv.h"

#define DEL_MAX 1000
#define PARTS_MAX 10000
#define TAGS_MAX 10

static void check_location(const char *b, size_t n)
{
    char region[64];
    memset(region, 'x', sizeof(region));
    enum s3_err e = strata_xml_location_parse(b, n, region, sizeof(region));
    if (memchr(region, '\0', sizeof(region)) == NULL)
        STRATA_FUZZ_FAIL(); /* the region is always NUL-terminated inside its buffer */
    /* NotImplemented: an element besides LocationConstraint (c8c3ae7). */
    if (e != S3E_NONE && (region[0] || (e != S3E_MalformedXML && e != S3E_NotImplemented &&
                                        e != S3E_InvalidLocationConstraint)))
        STRATA_FUZZ_FAIL();
}

static void check_versioning(const char *b, size_t n)
{
    int st = -7;
    enum s3_err e = strata_xml_versioning_parse(b, n, &st);
    if (e == S3E_NONE && st != -1 && st != STRATA_VERSIONING_ENABLED &&
        st != STRATA_VERSIONING_SUSPENDED)
        STRATA_FUZZ_FAIL();
}

static void check_delete(const char *b, size_t n)
{
    struct strata_xml_delobj *objs = (void *)1;
    size_t cnt = 7;
    bool quiet = true;
    enum s3_err e = strata_xml_delete_parse(b, n, DEL_MAX, &objs, &cnt, &quiet);
    if (e != S3E_NONE) {
        if (objs || cnt)
            STRATA_FUZZ_FAIL();
        return;
    }
    if (!objs || cnt == 0 || cnt > DEL_MAX)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < cnt; i++)
        if (!objs[i].key)
            STRATA_FUZZ_FAIL(); /* DeleteObjects dereferences every key */
    strata_xml_delete_free(objs, cnt);
}

static void check_complete(const char *b, size_t n)
{
    struct strata_xml_part *parts = (void *)1;
    size_t cnt = 7;
    enum s3_err e = strata_xml_complete_parse(b, n, PARTS_MAX, &parts, &cnt);
    if (e != S3E_NONE) {
        if (parts || cnt)
            STRATA_FUZZ_FAIL();
        return;
    }
    if (!parts || cnt == 0 || cnt > PARTS_MAX)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < cnt; i++) {
        if (!parts[i].etag || parts[i].part_number < 1 || parts[i].part_number > 10000 ||
            parts[i].cksum_len > sizeof(parts[i].cksum))
            STRATA_FUZZ_FAIL();
    }
    strata_xml_complete_free(parts, cnt);
}

static void check_tagging(const char *b, size_t n)
{
    struct strata_sbuf sb;
    strata_sbuf_init(&sb, 1u << 20);
    enum s3_err e = strata_xml_tagging_parse(b, n, TAGS_MAX, &sb);
    if (e == S3E_NONE) {
        /* The canonical form parses back as a query into the same count. */
        unsigned cnt = strata_s3_tags_count((const uint8_t *)sb.data, sb.len);
        if (cnt > TAGS_MAX)
            STRATA_FUZZ_FAIL();
        if (sb.len) {
            char *copy = strata_fuzz_strdup((const uint8_t *)sb.data, sb.len);
            struct strata_qparam q[TAGS_MAX + 1];
            int qn = strata_s3_query_parse(copy, q, TAGS_MAX + 1);
            if (qn < 0 || (unsigned)qn != cnt || strata_s3_tags_validate(q, qn, TAGS_MAX) != 0)
                STRATA_FUZZ_FAIL();
            free(copy);
        }
    }
    strata_sbuf_fini(&sb);
}

static bool fuzz_user(void *ud, bool by_email, const char *value, char *id_out)
{
    (void)ud;
    if (by_email && !strchr(value, '@'))
        return false;
    snprintf(id_out, STRATA_ACL_ID_MAX, "%s", value);
    return true;
}

/* A parsed ACL holds at most STRATA_ACL_GRANTS_MAX grants, each of one
 * known permission, and round-trips through the stored form. */
static void check_acl(const char *b, size_t n)
{
    static struct strata_acl a, back;
    enum s3_err e = strata_xml_acl_parse(b, n, &a, fuzz_user, NULL);
    if (e != S3E_NONE)
        return;
    if (a.n > STRATA_ACL_GRANTS_MAX || !a.owner[0])
        STRATA_FUZZ_FAIL();
    struct strata_sbuf sb;
    strata_sbuf_init(&sb, STRATA_ACL_MAX * 4);
    if (strata_acl_encode(&a, &sb) != 0 || strata_acl_decode(sb.data, sb.len, &back) != 0 ||
        back.n != a.n || strcmp(back.owner, a.owner) != 0 ||
        memcmp(back.g, a.g, a.n * sizeof(a.g[0])) != 0)
        STRATA_FUZZ_FAIL();
    strata_sbuf_fini(&sb);
}

static void check_lock(const char *b, size_t n)
{
    bool enabled = true, on = true;
    int mode = 7;
    unsigned days = 7, years = 7;
    const char *msg = NULL;
    enum s3_err e = strata_xml_lock_config_parse(b, n, &enabled, &mode, &days, &years, &msg);
    if (e == S3E_NONE) {
        /* A rule names a mode and exactly one positive period. */
        if (!enabled || mode < 0 || mode > STRATA_LOCK_COMPLIANCE ||
            (mode && (days == 0) == (years == 0)) || days > 36500 || years > 100)
            STRATA_FUZZ_FAIL();
    } else if (enabled || mode != 0 ||
               (e != S3E_MalformedXML && e != S3E_InvalidRetentionPeriod)) {
        STRATA_FUZZ_FAIL();
    }
    int64_t until = 7;
    e = strata_xml_retention_parse(b, n, &mode, &until);
    if (e == S3E_NONE ? (mode < 0 || mode > STRATA_LOCK_COMPLIANCE || (!mode && until != 0))
                      : (mode != 0 || e != S3E_MalformedXML))
        STRATA_FUZZ_FAIL();
    e = strata_xml_legal_hold_parse(b, n, &on);
    if (e != S3E_NONE && (on || e != S3E_MalformedXML))
        STRATA_FUZZ_FAIL();
}

/* CORS: a rule set only on success, every rule with an origin and a
 * method, no pattern with two wildcards, and the canonical form parses
 * back into as many rules. */
static void check_cors(const char *b, size_t n)
{
    struct strata_cors *c = (void *)1;
    const char *msg = NULL;
    enum s3_err e = strata_xml_cors_parse(b, n, &c, &msg);
    if (e != S3E_NONE) {
        if (c || (e != S3E_MalformedXML && e != S3E_InvalidRequest && e != S3E_InternalError))
            STRATA_FUZZ_FAIL();
        return;
    }
    if (!c || c->nrules == 0 || c->nrules > STRATA_CORS_RULES_MAX)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < c->nrules; i++) {
        const struct strata_cors_rule *r = &c->rules[i];
        if (!r->methods || !r->norigins)
            STRATA_FUZZ_FAIL();
        for (size_t j = 0; j < r->norigins; j++) {
            const char *star = strchr(r->origins[j], '*');
            if (star && strchr(star + 1, '*'))
                STRATA_FUZZ_FAIL();
        }
    }
    struct strata_sbuf f;
    strata_sbuf_init(&f, STRATA_CORS_DOC_MAX * 4);
    strata_cors_format(&f, c);
    struct strata_cors *again = NULL;
    if (!f.failed && f.len <= STRATA_CORS_DOC_MAX) {
        if (strata_xml_cors_parse(f.data, f.len, &again, &msg) != S3E_NONE ||
            again->nrules != c->nrules)
            STRATA_FUZZ_FAIL();
    }
    strata_cors_free(again);
    strata_sbuf_fini(&f);
    strata_cors_free(c);
}

/* OwnershipControls, PublicAccessBlock and encryption: a value only on
 * success; an ownership's stored name reads back as the same value; an
 * encryption default names an algorithm and keeps both strings inside
 * their buffers (sse.c checks the values). */
static void check_bucket_docs(const char *b, size_t n)
{
    int own = 7;
    enum s3_err e = strata_xml_ownership_parse(b, n, &own);
    if (e == S3E_NONE) {
        const char *name = strata_ownership_name(own);
        if (own == STRATA_OWN_NONE || !name || strata_ownership_parse(name, strlen(name)) != own)
            STRATA_FUZZ_FAIL();
    } else if (own != STRATA_OWN_NONE || e != S3E_MalformedXML) {
        STRATA_FUZZ_FAIL();
    }
    unsigned bits = 77;
    e = strata_xml_pab_parse(b, n, &bits);
    if ((e == S3E_NONE && bits > 0xfu) || (e != S3E_NONE && e != S3E_MalformedXML))
        STRATA_FUZZ_FAIL();
    struct strata_sse_default d;
    memset(&d, 'x', sizeof(d));
    e = strata_xml_encryption_parse(b, n, &d);
    if (e == S3E_NONE) {
        if (!d.algo[0] || !memchr(d.algo, '\0', sizeof(d.algo)) ||
            !memchr(d.key_id, '\0', sizeof(d.key_id)))
            STRATA_FUZZ_FAIL();
    } else if (d.algo[0] || d.key_id[0] || d.bucket_key ||
               (e != S3E_MalformedXML && e != S3E_InvalidArgument)) {
        STRATA_FUZZ_FAIL();
    }
}

/* RestoreRequest: Days in range when accepted, 0 on any error; only
 * MalformedXML and NotImplemented (SELECT restores) are refusals. */
static void check_restore(const char *b, size_t n)
{
    unsigned days = 77;
    enum s3_err e = strata_xml_restore_parse(b, n, &days);
    if (e == S3E_NONE ? days > 2147483647u
                      : (e != S3E_MalformedXML && e != S3E_NotImplemented))
        STRATA_FUZZ_FAIL();
}

/* Whether the parser of root element root could accept b: an element is
 * named by its bytes in an ASCII-based document without an encoding
 * declaration (a DOCTYPE is refused, so no entity makes markup).  When
 * the document may be in another encoding (a NUL, a byte-order mark or
 * EBCDIC first, "encoding" anywhere), or is empty, every parser runs. */
static bool may_be(const char *b, size_t n, const char *root)
{
    size_t i = 0;
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
        i++;
    if (n == 0 || i == n || b[i] != '<' || memchr(b, '\0', n) || memmem(b, n, "encoding", 8))
        return true;
    return memmem(b, n, root, strlen(root)) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    strata_fuzz_xml_init();
    char *b = strata_fuzz_memdup(data, size);
    check_versioning(b, size); /* every input: the parse all of them share */
    if (may_be(b, size, "CreateBucketConfiguration"))
        check_location(b, size);
    if (may_be(b, size, "Delete"))
        check_delete(b, size);
    if (may_be(b, size, "CompleteMultipartUpload"))
        check_complete(b, size);
    if (may_be(b, size, "Tagging"))
        check_tagging(b, size);
    if (may_be(b, size, "AccessControlPolicy"))
        check_acl(b, size);
    if (may_be(b, size, "ObjectLockConfiguration") || may_be(b, size, "Retention") ||
        may_be(b, size, "LegalHold"))
        check_lock(b, size);
    if (may_be(b, size, "CORSConfiguration"))
        check_cors(b, size);
    if (may_be(b, size, "OwnershipControls") || may_be(b, size, "PublicAccessBlock") ||
        may_be(b, size, "ServerSideEncryptionConfiguration"))
        check_bucket_docs(b, size);
    if (may_be(b, size, "RestoreRequest"))
        check_restore(b, size);
    free(b);
    return 0;
}
