/*
 * fuzz_notify_xml.c - libFuzzer target for the NotificationConfiguration
 * parser (strata_notify_config_parse, server/notify/notify_config.c) and
 * the canonical form it is stored and answered in
 * (strata_notify_config_format).
 *
 * Input: the request body.  It is parsed twice, as the document cache
 * reloads a stored document (no destination checks) and as the PUT
 * handler checks a new one, against a fixed destination set (any Queue
 * ARN starting "arn:strata:sqs:"; no daemon).  Checks:
 *   - a refusal returns no configuration and a code the handler may send
 *     (InvalidArgument and NotImplemented always with a message);
 *   - an accepted configuration: 0..100 rules, each with an ARN, 1 or more
 *     events, a non-zero mask within the event types, an Id of 1..255
 *     bytes when given; with checks, only accepted destinations, no two
 *     rules sharing an event type with overlapping filters or an Id;
 *   - the checked parse accepts nothing the unchecked one refuses, and
 *     both agree on what they accept;
 *   - with the missing Ids named (as the handler does), format(c), when
 *     it fits the request-body limit (the handler's ceiling: it refuses a
 *     longer one), parses back without checks to the same rules, format of
 *     that is the same bytes, and a checked configuration's stored form
 *     passes the checks again (GET then PUT of the same document is
 *     accepted);
 *   - everything is freed (LeakSanitizer).
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_xml.h"

#include "s3/notify_config.h"
#include "sbuf.h"
#include "srv.h"

/* The fixed destination set: every queue of a strata ARN. */
static bool dest_ok(void *ud, const char *arn)
{
    (void)ud;
    return strncmp(arn, "arn:strata:sqs:", 15) == 0;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool rule_eq(const struct strata_notify_rule *a, const struct strata_notify_rule *b)
{
    if (!str_eq(a->id, b->id) || !str_eq(a->arn, b->arn) || !str_eq(a->prefix, b->prefix) ||
        !str_eq(a->suffix, b->suffix) || a->nev != b->nev || a->mask != b->mask)
        return false;
    for (size_t i = 0; i < a->nev; i++)
        if (!str_eq(a->ev[i], b->ev[i]))
            return false;
    return true;
}

static bool conf_eq(const struct strata_notify_conf *a, const struct strata_notify_conf *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!rule_eq(&a->r[i], &b->r[i]))
            return false;
    return true;
}

static bool overlap(const char *a, const char *b, bool suffix)
{
    a = a ? a : "", b = b ? b : "";
    size_t la = strlen(a), lb = strlen(b), l = la < lb ? la : lb;
    return suffix ? memcmp(a + la - l, b + lb - l, l) == 0 : memcmp(a, b, l) == 0;
}

static void check_refusal(enum s3_err e, const struct strata_notify_conf *c, const char *msg)
{
    if (c)
        STRATA_FUZZ_FAIL();
    if (e != S3E_MalformedXML && e != S3E_InvalidArgument && e != S3E_NotImplemented &&
        e != S3E_InternalError)
        STRATA_FUZZ_FAIL();
    if ((e == S3E_InvalidArgument || e == S3E_NotImplemented) && (!msg || !msg[0]))
        STRATA_FUZZ_FAIL();
}

static void check_conf(const struct strata_notify_conf *c, bool checked)
{
    if (!c || c->n > STRATA_NOTIFY_RULES_MAX)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < c->n; i++) {
        const struct strata_notify_rule *r = &c->r[i];
        if (!r->arn || !r->nev || !r->ev || !r->mask ||
            (r->mask >> STRATA_NOTIFY_EVENT_TYPES) != 0)
            STRATA_FUZZ_FAIL();
        if (r->id && (!r->id[0] || strlen(r->id) > 255))
            STRATA_FUZZ_FAIL();
        for (size_t j = 0; j < r->nev; j++)
            if (!r->ev[j] || strncmp(r->ev[j], "s3:", 3) != 0)
                STRATA_FUZZ_FAIL();
        if (!checked)
            continue;
        if (!dest_ok(NULL, r->arn))
            STRATA_FUZZ_FAIL();
        for (size_t j = 0; j < i; j++) {
            const struct strata_notify_rule *o = &c->r[j];
            if ((r->mask & o->mask) && overlap(r->prefix, o->prefix, false) &&
                overlap(r->suffix, o->suffix, true))
                STRATA_FUZZ_FAIL();
            if (r->id && o->id && strcmp(r->id, o->id) == 0)
                STRATA_FUZZ_FAIL();
        }
    }
}

/* As strata_h_notification_put names a configuration given without an Id
 * (there with random hex): a deterministic name no other rule has. */
static void name_ids(struct strata_notify_conf *c)
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

/* format(c) parses back (without checks) to c, formats to the same bytes,
 * and passes the checks again when c did.  A form over the request-body
 * limit is refused by the PUT handler (it could not be parsed back). */
static void round_trip(const struct strata_notify_conf *c, bool checked)
{
    struct strata_sbuf f1, f2;
    strata_sbuf_init(&f1, STRATA_SRV_XML_BODY_MAX);
    strata_notify_config_format(&f1, c);
    if (f1.failed) {
        strata_sbuf_fini(&f1);
        return;
    }
    struct strata_notify_conf *again = NULL;
    const char *msg = NULL;
    if (strata_notify_config_parse(f1.data, f1.len, NULL, NULL, &again, &msg) != S3E_NONE)
        STRATA_FUZZ_FAIL();
    check_conf(again, false);
    if (!conf_eq(c, again))
        STRATA_FUZZ_FAIL();
    strata_sbuf_init(&f2, STRATA_SRV_XML_BODY_MAX);
    strata_notify_config_format(&f2, again);
    if (f2.failed || f2.len != f1.len || memcmp(f1.data, f2.data, f1.len) != 0)
        STRATA_FUZZ_FAIL();
    strata_notify_config_free(again);
    if (checked) {
        again = NULL;
        if (strata_notify_config_parse(f1.data, f1.len, dest_ok, NULL, &again, &msg) !=
                S3E_NONE ||
            !conf_eq(c, again))
            STRATA_FUZZ_FAIL();
        strata_notify_config_free(again);
    }
    strata_sbuf_fini(&f2);
    strata_sbuf_fini(&f1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    strata_fuzz_xml_init();
    char *b = strata_fuzz_memdup(data, size);

    struct strata_notify_conf *plain = (void *)1, *checked = (void *)1;
    const char *msg = (const char *)1;
    enum s3_err ep = strata_notify_config_parse(b, size, NULL, NULL, &plain, &msg);
    if (ep) {
        check_refusal(ep, plain, msg);
    } else {
        check_conf(plain, false);
    }
    msg = (const char *)1;
    enum s3_err ec = strata_notify_config_parse(b, size, dest_ok, NULL, &checked, &msg);
    free(b);
    if (ec) {
        check_refusal(ec, checked, msg);
    } else {
        check_conf(checked, true);
        /* The checks only refuse more (Topic/CloudFunction configurations,
         * which the unchecked parse skips, are refused by the checked one). */
        if (ep || !conf_eq(plain, checked))
            STRATA_FUZZ_FAIL();
        name_ids(checked);
        round_trip(checked, true);
    }
    if (!ep && ec) { /* else the same rules went round above */
        name_ids(plain);
        round_trip(plain, false);
    }
    strata_notify_config_free(checked);
    strata_notify_config_free(plain);
    return 0;
}
