/*
 * fuzz_repl_xml.c - libFuzzer target for the ReplicationConfiguration
 * parser (strata_repl_config_parse, server/repl/repl_config.c) and the
 * canonical form it is stored and answered in (strata_repl_config_format).
 *
 * Input: the request body.  It is parsed twice, as the document cache
 * reloads a stored document (no destination checks) and as the PUT
 * handler checks a new one, against a fixed target set (Account "site2",
 * or none).  Checks:
 *   - a refusal returns no configuration and a code the handler may send
 *     (InvalidArgument, InvalidRequest and NotImplemented with a message);
 *   - an accepted configuration: a Role, 1..1000 rules, each with a
 *     destination bucket, at most 10 tags, an ID of 1..255 bytes when
 *     given, V2 rules (Filter) with DeleteMarkerReplication, no delete
 *     marker replication with tags, no two IDs alike;
 *   - the checked parse accepts nothing the unchecked one refuses, and
 *     accepts what it accepts identically;
 *   - with the missing IDs named (as the handler does), format(c), when
 *     it fits the request-body limit, parses back to the same rules and
 *     formats to the same bytes;
 *   - strata_repl_rule_matches agrees with the rule's prefix and is false
 *     for a disabled rule;
 *   - everything is freed (LeakSanitizer).
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_xml.h"

#include "repl/repl_config.h"
#include "sbuf.h"
#include "srv.h"

static bool dest_ok(void *ud, const char *account)
{
    (void)ud;
    return !account || strcmp(account, "site2") == 0;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool rule_eq(const struct strata_repl_rule *a, const struct strata_repl_rule *b)
{
    if (!str_eq(a->id, b->id) || a->has_priority != b->has_priority ||
        (a->has_priority && a->priority != b->priority) || a->enabled != b->enabled ||
        a->filter != b->filter || a->and != b->and || a->ntags != b->ntags ||
        a->dm_given != b->dm_given || a->dm_enabled != b->dm_enabled ||
        a->eor_given != b->eor_given || !str_eq(a->dest_bucket, b->dest_bucket) ||
        !str_eq(a->account, b->account) || !str_eq(a->storage_class, b->storage_class))
        return false;
    /* A V1 rule's empty <Prefix/> and a missing one mean the same. */
    const char *pa = a->prefix && a->prefix[0] ? a->prefix : NULL;
    const char *pb = b->prefix && b->prefix[0] ? b->prefix : NULL;
    if (a->filter ? !str_eq(a->prefix, b->prefix) : !str_eq(pa, pb))
        return false;
    for (size_t i = 0; i < a->ntags; i++)
        if (!str_eq(a->tags[i].key, b->tags[i].key) || !str_eq(a->tags[i].value, b->tags[i].value))
            return false;
    return true;
}

static bool conf_eq(const struct strata_repl_conf *a, const struct strata_repl_conf *b)
{
    if (a->n != b->n || !str_eq(a->role, b->role))
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!rule_eq(&a->r[i], &b->r[i]))
            return false;
    return true;
}

static void check_refusal(enum s3_err e, const struct strata_repl_conf *c, const char *msg)
{
    if (c)
        STRATA_FUZZ_FAIL();
    if (e != S3E_MalformedXML && e != S3E_InvalidArgument && e != S3E_InvalidRequest &&
        e != S3E_NotImplemented && e != S3E_InvalidStorageClass && e != S3E_InvalidTag &&
        e != S3E_InternalError)
        STRATA_FUZZ_FAIL();
    if ((e == S3E_InvalidArgument || e == S3E_InvalidRequest || e == S3E_NotImplemented) &&
        (!msg || !msg[0]))
        STRATA_FUZZ_FAIL();
}

static void check_conf(const struct strata_repl_conf *c, bool checked)
{
    if (!c || !c->role || c->n == 0 || c->n > STRATA_REPL_RULES_MAX)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < c->n; i++) {
        const struct strata_repl_rule *r = &c->r[i];
        if (!r->dest_bucket || r->ntags > STRATA_REPL_TAGS_MAX)
            STRATA_FUZZ_FAIL();
        if (r->id && (!r->id[0] || strlen(r->id) > 255))
            STRATA_FUZZ_FAIL();
        if (r->filter && !r->dm_given)
            STRATA_FUZZ_FAIL();
        if (r->dm_enabled && r->ntags)
            STRATA_FUZZ_FAIL();
        for (size_t j = 0; j < r->ntags; j++)
            if (!r->tags[j].key || !r->tags[j].value)
                STRATA_FUZZ_FAIL();
        if (checked && !dest_ok(NULL, r->account))
            STRATA_FUZZ_FAIL();
        for (size_t j = 0; j < i; j++)
            if (r->id && c->r[j].id && strcmp(r->id, c->r[j].id) == 0)
                STRATA_FUZZ_FAIL();
        /* The matcher follows the prefix (no tags: no tag lookups). */
        if (r->ntags == 0) {
            const char *key = r->prefix ? r->prefix : "k";
            if (strata_repl_rule_matches(r, key, NULL, 0) != r->enabled)
                STRATA_FUZZ_FAIL();
        }
    }
}

/* As the PUT handler names a rule given without an ID: a deterministic
 * name no other rule has. */
static void name_ids(struct strata_repl_conf *c)
{
    unsigned k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->r[i].id)
            continue;
        char id[40];
        bool used;
        do {
            snprintf(id, sizeof(id), "%024x", k++);
            used = false;
            for (size_t j = 0; j < c->n && !used; j++)
                used = c->r[j].id && strcmp(c->r[j].id, id) == 0;
        } while (used);
        if (!(c->r[i].id = strdup(id)))
            abort();
    }
}

static void round_trip(const struct strata_repl_conf *c)
{
    struct strata_sbuf f1, f2;
    strata_sbuf_init(&f1, STRATA_SRV_XML_BODY_MAX);
    strata_repl_config_format(&f1, c);
    if (f1.failed) {
        strata_sbuf_fini(&f1);
        return;
    }
    struct strata_repl_conf *again = NULL;
    const char *msg = NULL;
    if (strata_repl_config_parse(f1.data, f1.len, NULL, NULL, &again, &msg) != S3E_NONE)
        STRATA_FUZZ_FAIL();
    check_conf(again, false);
    if (!conf_eq(c, again))
        STRATA_FUZZ_FAIL();
    strata_sbuf_init(&f2, STRATA_SRV_XML_BODY_MAX);
    strata_repl_config_format(&f2, again);
    if (f2.failed || f2.len != f1.len || memcmp(f1.data, f2.data, f1.len) != 0)
        STRATA_FUZZ_FAIL();
    strata_repl_config_free(again);
    strata_sbuf_fini(&f2);
    strata_sbuf_fini(&f1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    strata_fuzz_xml_init();
    char *b = strata_fuzz_memdup(data, size);
    struct strata_repl_conf *plain = (void *)1, *checked = (void *)1;
    const char *msg = (const char *)1;
    enum s3_err ep = strata_repl_config_parse(b, size, NULL, NULL, &plain, &msg);
    if (ep)
        check_refusal(ep, plain, msg);
    else
        check_conf(plain, false);
    msg = (const char *)1;
    enum s3_err ec = strata_repl_config_parse(b, size, dest_ok, NULL, &checked, &msg);
    free(b);
    if (ec) {
        check_refusal(ec, checked, msg);
    } else {
        check_conf(checked, true);
        if (ep || !conf_eq(plain, checked))
            STRATA_FUZZ_FAIL();
        name_ids(checked);
        round_trip(checked);
    }
    if (!ep && ec) {
        name_ids(plain);
        round_trip(plain);
    }
    strata_repl_config_free(checked);
    strata_repl_config_free(plain);
    return 0;
}
