/*
 * repl_config.h - the bucket's ReplicationConfiguration document
 * (repl_config.c): AWS's XML parsed into the rules writes are matched
 * against, and the canonical form it is stored and answered in.  Pure
 * functions (no daemon state), shared by Put/GetBucketReplication, the
 * parsed-document cache and tests/fuzz/fuzz_repl_xml.c.  Any thread.
 */
#ifndef STRATA_SERVER_REPL_REPL_CONFIG_H
#define STRATA_SERVER_REPL_REPL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "s3_error.h"

struct strata_sbuf;

#define STRATA_REPL_RULES_MAX 1000 /* AWS's limit of rules per configuration */
#define STRATA_REPL_TAGS_MAX 10    /* tags of one rule's filter */

struct strata_repl_tag {
    char *key, *value;
};

/* One Rule. */
struct strata_repl_rule {
    char *id;             /* NULL: none given (the PUT handler names it) */
    bool has_priority;    /* V2 rules (with a Filter) carry one */
    long priority;
    bool enabled;         /* Status */
    bool filter;          /* a <Filter> (V2 schema); else the V1 rule-level <Prefix> */
    bool and;             /* the filter is an <And> */
    char *prefix;         /* NULL: none */
    struct strata_repl_tag tags[STRATA_REPL_TAGS_MAX];
    size_t ntags;
    bool dm_given, dm_enabled; /* DeleteMarkerReplication */
    bool eor_given;            /* ExistingObjectReplication (Disabled only) */
    char *dest_bucket;    /* BUCKET of arn:aws:s3:::BUCKET */
    char *account;        /* the replication target's NAME; NULL: the only one */
    char *storage_class;  /* NULL: the source's */
    /* SourceSelectionCriteria/SseKmsEncryptedObjects: SSE-KMS versions are
     * replicated only when Enabled, encrypted on the target under
     * Destination/EncryptionConfiguration/ReplicaKmsKeyID (required then). */
    bool kms_given, kms_enabled;
    char *replica_kms_key; /* NULL: none */
};

struct strata_repl_conf {
    char *role; /* as given (Strata has no IAM roles: kept for GET) */
    size_t n;   /* 1..STRATA_REPL_RULES_MAX */
    struct strata_repl_rule *r;
};

/* Whether a Destination (account NULL: none given) names a configured
 * replication target. */
typedef bool (*strata_repl_dest_cb)(void *ud, const char *account);

/*
 * The whole document body[0..len), checked as AWS checks it.  dest_ok NULL:
 * a stored document being reloaded (destinations not checked again).
 * S3E_NONE with *out (free with strata_repl_config_free), or the error with
 * *out NULL and *msg the message, when there is one beyond the code's.
 */
enum s3_err strata_repl_config_parse(const char *body, size_t len, strata_repl_dest_cb dest_ok,
                                     void *ud, struct strata_repl_conf **out, const char **msg);
/* The canonical document (every rule's id must be set), appended to b:
 * check b->failed. */
void strata_repl_config_format(struct strata_sbuf *b, const struct strata_repl_conf *c);
/* NULL is a no-op. */
void strata_repl_config_free(struct strata_repl_conf *c);

/* Whether rule r selects key with the tag set tags ("k1=v1&k2=v2", URL
 * encoded as x-amz-tagging; NULL: none). */
bool strata_repl_rule_matches(const struct strata_repl_rule *r, const char *key,
                              const char *tags, size_t tags_len);

#endif /* STRATA_SERVER_REPL_REPL_CONFIG_H */
