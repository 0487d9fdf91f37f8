/*
 * notify_config.h - the bucket's NotificationConfiguration document
 * (notify_config.c): AWS's XML parsed into the rules events are matched
 * against, and the canonical form it is stored and answered in.  Pure
 * functions (no daemon state), shared by Put/GetBucketNotificationConfiguration,
 * the parsed-document cache and tests/fuzz/fuzz_notify_xml.c.  Any thread.
 */
#ifndef STRATA_SERVER_NOTIFY_NOTIFY_CONFIG_H
#define STRATA_SERVER_NOTIFY_NOTIFY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "s3_error.h"

struct strata_sbuf;

#define STRATA_NOTIFY_RULES_MAX 100   /* QueueConfigurations per bucket */
#define STRATA_NOTIFY_EVENT_TYPES 14  /* event types Strata emits: bits of a rule's mask */

/* One QueueConfiguration. */
struct strata_notify_rule {
    char *id;              /* NULL: none given (the PUT handler names it) */
    char *arn;             /* never NULL */
    char *prefix, *suffix; /* NULL: no such filter rule */
    char **ev;             /* as written ("s3:ObjectCreated:*"), for GET; nev >= 1 */
    size_t nev;
    unsigned mask;         /* the event types ev[] covers, never 0 */
};

struct strata_notify_conf {
    size_t n; /* <= STRATA_NOTIFY_RULES_MAX; 0: notifications off */
    struct strata_notify_rule r[STRATA_NOTIFY_RULES_MAX];
};

/* Whether a QueueConfiguration's Queue ARN names a destination that exists. */
typedef bool (*strata_notify_dest_cb)(void *ud, const char *arn);

/*
 * The whole document body[0..len), checked as AWS checks it.  dest_ok NULL:
 * a stored document being reloaded, whose destinations, overlaps and Id
 * uniqueness are not checked again (and Topic/CloudFunction configurations
 * are skipped).  Otherwise every Queue must satisfy dest_ok(ud, arn), there
 * must be no Topic or CloudFunction configuration, no two configurations
 * sharing an event type with overlapping filters, no Id twice.
 * S3E_NONE with *out (free with strata_notify_config_free), or the error
 * with *out NULL and *msg the message, when there is one beyond the
 * code's (else NULL).
 */
enum s3_err strata_notify_config_parse(const char *body, size_t len, strata_notify_dest_cb dest_ok,
                                       void *ud, struct strata_notify_conf **out,
                                       const char **msg);
/* The canonical document (every rule's id must be set); c NULL: an empty
 * configuration.  Appended to b: check b->failed.  It parses back to the
 * same rules when it fits STRATA_SRV_XML_BODY_MAX (the parser refuses a
 * longer body), which is the ceiling the PUT handler stores with. */
void strata_notify_config_format(struct strata_sbuf *b, const struct strata_notify_conf *c);
/* NULL is a no-op. */
void strata_notify_config_free(struct strata_notify_conf *c);

#endif /* STRATA_SERVER_NOTIFY_NOTIFY_CONFIG_H */
