/*
 * srv_context.h - the daemon's context: the server options, and the state
 * the daemon assembles around the transport (drive sets, the metadata
 * store, key store, tiers, event and replication targets, restore
 * workers).  main.c fills it; the S3 API, replication and the admin API
 * read it through each request's r->srv.  The transport sees only its own
 * part, struct strata_http (http/request.h).
 *
 * Threads: filled by the main thread before start; read-only afterwards.
 */
#ifndef STRATA_SERVER_SRV_CONTEXT_H
#define STRATA_SERVER_SRV_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

struct strata_srv_config {
    /* The transport's options (--address, TLS, --domain, --region, limits,
     * threads): copied into its struct strata_http at start. */
    struct strata_http_config http;
    const char *users_file;
    const char *access_log;  /* file, or NULL for stderr */
    const char *root_user;
    const char *root_password;
    size_t inline_max;
    int64_t lc_day_ms;       /* one lifecycle day (--lc-day-seconds), for x-amz-expiration */
    const char *kms_key_file; /* --kms-key-file: master keys for SSE, or NULL */
    const char *tier_credentials; /* --tier-credentials: keys of remote endpoints, or NULL */
    bool sse_c_allow_http;    /* --sse-c-allow-http: SSE-C without TLS (loopback tests) */
    const char *metrics_token_file; /* GET /metrics with "Authorization: Bearer" this token */
    const char *admin_users; /* access keys with the admin role besides root, comma-separated */
    const char *root_display_name; /* --root-display-name: Owner DisplayName of root */
    int default_ownership;   /* --default-object-ownership: enum strata_ownership of new buckets */
    char **drives;
    size_t ndrives;
    const char *config_file; /* --config, or NULL */
    long ilm_interval_s;     /* the lifecycle flags, for the config dump */
    unsigned ilm_rate;
    unsigned ilm_move_mbps;
    unsigned ilm_due_rate; /* --ilm-due-rate (objects/s) */
    unsigned heal_rate;    /* --heal-rate (keys/s) */
    const char *notify_specs[16]; /* --notify-target ID:KIND:ADDRESS (notify.h) */
    unsigned nnotify_specs;
    const char *notify_token_specs[16]; /* --notify-token-file ID:FILE */
    unsigned nnotify_token_specs;
    size_t notify_queue_max; /* --notify-queue-max; 0: the default */
    const char *repl_specs[16]; /* --replication-target NAME:URL (repl.h) */
    unsigned nrepl_specs;
    /* --replication-sealed-retry-seconds: how long a target's refusal of
     * the sealed form of one SSE-KMS key is remembered (server/repl). */
    unsigned repl_sealed_retry_s;
#define STRATA_REPL_SEALED_RETRY_S_DEFAULT 600
    const char *tier_specs[8];   /* --tier / "tiers", for the config dump */
    unsigned ntier_specs;
    const char *class_specs[24]; /* --storage-class / "storage-classes" */
    unsigned nclass_specs;
    unsigned heal_interval_s;
    unsigned orphan_grace_s;
    size_t cache_mb;
    size_t object_cache_mb; /* --object-cache-mb: the latest-version cache */
    size_t data_cache_mb;   /* --data-cache-mb: whole data objects GETs read */
    bool data_cache_on_write; /* --data-cache-on-write: and the ones PUTs store */
    bool small_object_log;    /* --small-object-log: inline shards in per-drive logs */
    unsigned slog_segment_mb; /* --small-object-log-segment-mb */
    size_t memtable_mb; /* --memtable-mb */
    uint64_t read_cached_max; /* --read-cache-max-mb, bytes */
    unsigned mpu_retry_s;     /* --mpu-retry-seconds: a completed upload answers retries */
    int log_level;           /* STRATA_LOG_* */
    /* --rados-conf: the namespace is in this Ceph cluster (srv_rados.h),
     * NULL: the local drives; --rados-id, --rados-pool-prefix. */
    const char *rados_conf;
    const char *rados_id;
    const char *rados_pool_prefix;
    unsigned lease_s; /* --lease-seconds */
};

struct strata_srv {
    struct strata_srv_config cfg;
    /* The transport serving this daemon (http/request.h): its options are
     * cfg.http, its creds, pool and host id are the daemon's too. */
    struct strata_http http;
    struct strata_set **sets;
    unsigned nsets;
    struct strata_meta *meta;
    struct strata_kms *kms; /* sse.c; NULL without --kms-key-file (SSE answers 501) */
    /* Storage tiers and the class map (srv_tiers.h); NULL: hot tier only,
     * default classes. */
    struct strata_srv_tiers *tiers;
    struct strata_notify *notify; /* event targets (notify.h); NULL: none */
    struct strata_repl *repl;     /* replication targets (repl.h); NULL: none */
    /* Replication as the S3 handlers call it (s3/repl_hooks.h); NULL: none. */
    const struct strata_s3_repl *repl_s3;
    struct strata_restorer *restorer; /* RestoreObject copies (restore_worker.h); NULL: none */
};

/* The transport's part of s filled from the rest: its options
 * (cfg.http), the store, the context itself. */
void strata_srv_http_fill(struct strata_srv *s);
/* strata_srv_http_fill, then the transport started: strata_http_start's
 * result. */
int strata_srv_start(struct strata_srv *s);
/* strata_http_stop of s's transport. */
void strata_srv_stop(struct strata_srv *s, unsigned wait_s);

#endif /* STRATA_SERVER_SRV_CONTEXT_H */
