/*
 * options.c - the table of "strata server" options and what is derived
 * from it: defaults, flag parsing, the config file's values, --help and
 * each value as --print-config shows it (contract in options.h).
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "authz.h"
#include "notify.h"
#include "remote_spec.h"
#include "s3_names.h"
#include "srv_config.h"
#include "srv_tiers.h"
#include "strata/meta.h"

/* ---- the parsers and printers of the rows that need one ------------------ */

static const char *const level_names[] = {"err", "warn", "notice", "info", "debug"};

static int level_parse(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(v, level_names[i]) == 0) {
            o->cfg->log_level = i;
            return 0;
        }
    snprintf(err, n, "unknown log level %s", v);
    return -1;
}

static json_t *level_print(const struct strata_srv_config *c)
{
    return json_string(c->log_level >= 0 && c->log_level < 5 ? level_names[c->log_level]
                                                             : "info");
}

static int ownership_parse(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    int own = strata_ownership_parse(v, strlen(v));
    if (own != STRATA_OWN_NONE) {
        o->cfg->default_ownership = own;
        return 0;
    }
    snprintf(err, n, "--default-object-ownership must be ObjectWriter, BucketOwnerPreferred or "
                     "BucketOwnerEnforced");
    return -1;
}

static json_t *ownership_print(const struct strata_srv_config *c)
{
    return json_string(strata_ownership_name(c->default_ownership));
}

static bool nonempty(const char *v)
{
    return *v != '\0';
}

static bool display_name_ok(const char *v)
{
    return *v && strlen(v) < sizeof(((struct strata_cred *)0)->display_name);
}

static bool not_mask(const char *v)
{
    return strcmp(v, STRATA_CONFIG_MASK) != 0;
}

/* Never the secret, not even its length. */
static json_t *password_print(const struct strata_srv_config *c)
{
    (void)c;
    return json_string(STRATA_CONFIG_MASK);
}

static json_t *drives_print(const struct strata_srv_config *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->ndrives; i++)
        json_array_append_new(a, json_string(c->drives[i]));
    return a;
}

static int tier_parse(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    return strata_srv_tiers_add(o->tiers, v, err, n);
}

static int class_parse(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    return strata_srv_tiers_class(o->tiers, v, err, n);
}

static int notify_parse(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    (void)o;
    return strata_notify_spec_check(v, err, n);
}

static int token_parse(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    (void)o;
    if (strchr(v, ':') && strchr(v, ':') != v)
        return 0;
    snprintf(err, n, "--notify-token-file wants ID:FILE");
    return -1;
}

static int repl_parse(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    (void)o;
    return strata_remote_spec_check(v, err, n);
}

static int print_config_act(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    (void)v, (void)err, (void)n;
    o->print_config = true;
    return 0;
}

static int rewrap_act(struct strata_srv_opts *o, const char *v, char *err, size_t n)
{
    (void)v, (void)err, (void)n;
    o->kms_rewrap = true;
    return 0;
}

/* ---- the table ------------------------------------------------------------ */

#define MEMBER(m)                                                                           \
    .off = offsetof(struct strata_srv_config, m),                                           \
    .size = sizeof(((struct strata_srv_config *)0)->m)
#define LIST(m, count)                                                                      \
    .type = STRATA_OPT_LIST, MEMBER(m),                                                      \
    .count_off = offsetof(struct strata_srv_config, count),                                 \
    .cap = sizeof(((struct strata_srv_config *)0)->m) / sizeof(const char *)
/* A whole number of the flag's unit in [lo, hi], stored times scale. */
#define NUMS(m, sc, lo, hi)                                                                 \
    .type = STRATA_OPT_NUM, MEMBER(m), .scale = (sc), .min = (lo), .max = (hi),              \
    .is_signed = _Generic(((struct strata_srv_config *)0)->m, int: 1, long: 1, long long: 1, \
                          default: 0)
/* A count, size or rate without a limit of its own. */
#define NUM(m) NUMS(m, 1, 0, UINT32_MAX)
#define STR(m) .type = STRATA_OPT_STR, MEMBER(m)

const struct strata_srv_opt strata_srv_opt_table[] = {
    {.flag = "address", .key = "address", .arg = "HOST:PORT", STR(http.address),
     .sdef = "127.0.0.1:9000", .group = "Options of server:",
     .help = "listen address (default {default})"},
    {.flag = "users", .key = "users", .arg = "FILE", STR(users_file),
     .help = "more users, one per line: ACCESS_KEY SECRET [NAME]"},
    {.flag = "tls-cert", .key = "tls-cert", .arg = "FILE", STR(http.tls_cert),
     .help = "PEM certificate: serve HTTPS (needs --tls-key)"},
    {.flag = "tls-key", .key = "tls-key", .arg = "FILE", STR(http.tls_key),
     .help = "PEM private key for --tls-cert"},
    {.flag = "domain", .key = "domain", .arg = "DOMAIN", STR(http.domain),
     .help = "accept virtual-host style requests (BUCKET.DOMAIN)"},
    /* AWS's default region: what SDKs sign for unless told. */
    {.flag = "region", .key = "region", .arg = "NAME", STR(http.region), .sdef = "us-east-1",
     .valid = strata_s3_region_name_valid,
     .must = "must be 1-31 letters, digits and '-' (as us-east-1)",
     .help = "the region this server is (default {default}): requests\n"
             "signed for another get AuthorizationHeaderMalformed,\n"
             "CreateBucket for another IllegalLocationConstraintException"},
    {.flag = "inline-max", .key = "inline-max", .arg = "BYTES", NUM(inline_max),
     .def = STRATA_INLINE_MAX_DEFAULT,
     .help = "objects up to this size live in metadata (default {default})"},
    /* RocksDB's flushes and compactions copying ~50 KiB inline shards were
     * 30-70 % of the daemon's CPU on PUT 100 KiB (meta/README.md). */
    {.flag = "small-object-log", .key = "small-object-log", .type = STRATA_OPT_BOOL,
     MEMBER(small_object_log),
     .help = "inline objects' shards are appended to a log per drive\n"
             "(DRIVE/slog/), the metadata records say where (off: the\n"
             "shards are in the records)"},
    {.flag = "small-object-log-segment-mb", .key = "small-object-log-segment-mb", .arg = "N",
     NUMS(slog_segment_mb, 1, 1, 4096), .def = 64, .must = "must be 1 to 4096 MiB",
     .help = "size of a log segment file, MiB; one whose objects were\n"
             "all replaced or deleted is unlinked (default {default})"},
    /* Small objects live in the metadata records and dataloaders re-read
     * them: a cache that holds the hot set saves a pread and a block
     * checksum per GET.  The cache is an LRU that only grows as it is used. */
    {.flag = "cache-mb", .key = "cache-mb", .arg = "N", NUM(cache_mb), .def = 1024,
     .help = "metadata block cache shared by all drives, MiB (default {default})"},
    /* A dataloader re-reads a working set of inline objects: kept whole
     * (with their records) they are served with no RocksDB read and no
     * shard checksum.  Entries are allocated as keys are read. */
    {.flag = "object-cache-mb", .key = "object-cache-mb", .arg = "N",
     NUMS(object_cache_mb, 1, 1, SIZE_MAX >> 21), .def = 2048,
     .must = "must be a number of MiB, at least 1",
     .help = "latest versions and whole inline objects kept in memory,\n"
             "MiB (default {default})"},
    /* A checkpoint or shard file re-read whole: its bytes kept in memory
     * are sent from there, no drive read or block checksum per GET. */
    {.flag = "data-cache-mb", .key = "data-cache-mb", .arg = "N",
     NUMS(data_cache_mb, 1, 0, SIZE_MAX >> 21), .def = 512,
     .must = "must be a number of MiB",
     .help = "whole erasure-coded objects (and parts) GETs read, kept in\n"
             "memory for the next GETs, MiB; one object up to a quarter\n"
             "of it; 0: none (default {default})"},
    /* A checkpoint read right after it was saved: from memory, at the
     * cost of a copy and the memfd's page allocation per PUT (about
     * 30-50 ms of CPU per 64 MiB on a 2-core machine), hence a choice. */
    {.flag = "data-cache-on-write", .key = "data-cache-on-write", .type = STRATA_OPT_BOOL,
     MEMBER(data_cache_on_write),
     .help = "PUTs and part uploads that fit the data cache also fill\n"
             "it with the bytes they store (read back from memory)"},
    {.flag = "memtable-mb", .key = "memtable-mb", .arg = "N",
     NUMS(memtable_mb, 1, 8, SIZE_MAX >> 21),
     .def = STRATA_MEMTABLE_MB_DEFAULT,
     .must = "must be a number of MiB, at least 8",
     .help = "metadata write buffers (RocksDB memtables) of all drives\n"
             "together, MiB, at least 8 (default {default}); with --cache-mb\n"
             "and --body-memory-mb the bulk of the daemon's memory"},
    {.flag = "read-cache-max-mb", .key = "read-cache-max-mb", .arg = "N",
     NUMS(read_cached_max, 1u << 20, 0, 1ll << 30), .def = STRATA_SRV_READ_CACHED_MAX >> 20,
     .must = "must be a number of MiB",
     .help = "erasure-coded objects (and parts of multipart ones) up\n"
             "to N MiB are read through the page cache, bigger ones\n"
             "straight from the drives (O_DIRECT); 0: all from the\n"
             "drives (default {default})"},
    {.flag = "access-log", .key = "access-log", .arg = "FILE", STR(access_log),
     .help = "access log file (default: stderr)"},
    {.flag = "max-inflight", .key = "max-inflight", .arg = "N", NUM(http.max_inflight), .def = 256,
     .help = "requests served at once; more get 503 SlowDown (default {default})"},
    {.flag = "timeout", .key = "timeout", .arg = "SECONDS", NUM(http.conn_timeout_s), .def = 120,
     .help = "idle/slow connection timeout (default {default})"},
    {.flag = "max-conns-per-ip", .key = "max-conns-per-ip", .arg = "N", NUM(http.conns_per_ip),
     .help = "connections from one client address; more are closed\n"
             "at accept (default {default}: no limit)"},
    /* 32 signed 16 MiB chunks, or 256 XML bodies of 2 MiB. */
    {.flag = "body-memory-mb", .key = "body-memory-mb", .arg = "N",
     NUMS(http.body_memory, 1u << 20, 1, SIZE_MAX >> 20),
     .def = 512, .must = "must be at least 1",
     .help = "request bodies buffered at once, all requests together\n"
             "(signed aws-chunked chunks, XML bodies), MiB; beyond it\n"
             "requests get 503 SlowDown (default {default})"},
    {.flag = "threads", .key = "threads", .arg = "N", NUM(http.threads),
     .help = "event threads serving the connections (default {default}: one\n"
             "per core)"},
    {.flag = "workers", .key = "workers", .arg = "N", NUM(http.workers),
     .help = "storage workers running what waits on drives: writes,\n"
             "listings, erasure-coded reads (default {default}: 32)"},
    {.flag = "log-level", .key = "log-level", .arg = "LEVEL", .type = STRATA_OPT_CUSTOM,
     .sdef = "info", .parse = level_parse, .print = level_print,
     .help = "err, warn, notice, info (default) or debug"},
    {.flag = "admin-users", .key = "admin-users", .arg = "K1,K2", STR(admin_users),
     .help = "access keys (of --users) that may use the admin API\n"
             "besides the root user"},
    {.flag = "root-display-name", .key = "root-display-name", .arg = "NAME",
     STR(root_display_name), .sdef = "root", .valid = display_name_ok,
     .must = "must be 1 to 127 bytes",
     .help = "the root user's DisplayName in ACLs and listings\n"
             "(default {default})"},
    {.flag = "default-object-ownership", .key = "default-object-ownership", .arg = "MODE",
     .type = STRATA_OPT_CUSTOM, .sdef = "BucketOwnerEnforced", .parse = ownership_parse,
     .print = ownership_print,
     .help = "Object Ownership of buckets created without\n"
             "x-amz-object-ownership: BucketOwnerEnforced (default,\n"
             "ACLs disabled, as AWS since 2023), BucketOwnerPreferred\n"
             "or ObjectWriter (ACLs enabled, for tools that set\n"
             "canned ACLs at CreateBucket)"},
    {.flag = "metrics-public", .key = "metrics-public", .type = STRATA_OPT_BOOL,
     MEMBER(http.metrics_public),
     .help = "serve /metrics without credentials (otherwise admins\n"
             "read it signed at /strata/admin/v1/metrics)"},
    {.flag = "metrics-token-file", .key = "metrics-token-file", .arg = "FILE",
     STR(metrics_token_file),
     .help = "/metrics also answers \"Authorization: Bearer T\"\n"
             "where T is FILE's first line (32-255 characters;\n"
             "Prometheus' bearer_token_file)"},
    /* Printed so that a printed configuration says what was read; ignored
     * when such a file is read back. */
    {.flag = "config", .key = "config", .arg = "FILE", STR(config_file), .file_ignores = true,
     .help = "a JSON object of these options by long name (\"address\",\n"
             "\"max-inflight\", ...), \"drives\": [...], \"root-user\",\n"
             "\"root-password\"; flags and the environment win over it"},
    {.flag = "print-config", .type = STRATA_OPT_ACTION, .parse = print_config_act,
     .help = "print the effective configuration (JSON, the root\n"
             "password masked) and exit; also strata --print-config"},
    {.flag = "kms-key-file", .key = "kms-key-file", .arg = "FILE", STR(kms_key_file),
     .help = "master keys for server-side encryption (JSON, mode 0600;\n"
             "format in server/README.md); without it SSE answers 501"},
    {.flag = "sse-c-allow-http", .key = "sse-c-allow-http", .type = STRATA_OPT_BOOL,
     MEMBER(sse_c_allow_http),
     .help = "accept SSE-C customer keys over plain HTTP (tests on\n"
             "loopback only; AWS and the default refuse them)"},
    {.flag = "mpu-retry-seconds", .key = "mpu-retry-seconds", .arg = "N",
     NUMS(mpu_retry_s, 1, 1, UINT32_MAX),
     .def = STRATA_MPU_RETRY_S_DEFAULT,
     .must = "must be a number of seconds, at least 1",
     .help = "a completed multipart upload answers a repeated\n"
             "CompleteMultipartUpload with the same part list (an SDK\n"
             "retrying a lost answer) with the same result for N\n"
             "seconds, at least 1 (default {default})"},
    /* A one-off action of this start: flag only. */
    {.flag = "kms-rewrap", .type = STRATA_OPT_ACTION, .parse = rewrap_act,
     .help = "after start, re-wrap the object keys of SSE-S3 objects\n"
             "held under an older master key with the active one\n"
             "(background pass, progress in the log; run again after\n"
             "a restart)"},

    /* The lifecycle scanner: a real day, a pass an hour, healing an hour,
     * tmp/ leftovers a day old (a slow upload may keep its tmp/ file for
     * hours). */
    {.flag = "lc-day-seconds", .key = "lc-day-seconds", .arg = "N",
     NUMS(lc_day_ms, 1000, 1, INT64_MAX / 1000),
     .def = 86400, .must = "must be at least 1",
     .group = "Lifecycle (bucket lifecycle rules, healing and tmp/ reclaim in the background):",
     .help = "one lifecycle day lasts N seconds (default {default}); rule\n"
             "\"Days\" count in these days and due dates round up to\n"
             "the next multiple of N since the epoch (midnight UTC\n"
             "for 86400).  For tests and demos."},
    /* -1: derived from the day length (main.c ilm_start). */
    {.flag = "ilm-interval-seconds", .key = "ilm-interval-seconds", .arg = "N",
     NUMS(ilm_interval_s, 1, -1, UINT32_MAX), .def = -1, .help_def = STRATA_ILM_INTERVAL_S_DEFAULT,
     .must = "must be at least 0",
     .help = "a scanner pass starts every N seconds (default {default},\n"
             "or half a lifecycle day when that is shorter); 0 turns\n"
             "the scanner off"},
    {.flag = "ilm-rate", .key = "ilm-rate", .arg = "N", NUM(ilm_rate), .def = 2000,
     .help = "versions and uploads the scanner examines per second\n"
             "(default {default}; 0: no limit)"},
    {.flag = "heal-interval-seconds", .key = "heal-interval-seconds", .arg = "N",
     NUM(heal_interval_s), .def = 3600,
     .help = "the scanner heals every drive set at most every N\n"
             "seconds, starting with its first pass (default {default}; 0: never)"},
    {.flag = "orphan-grace-seconds", .key = "orphan-grace-seconds", .arg = "N",
     NUM(orphan_grace_s), .def = 3600,
     .help = "shard files in data/ that no record references and\n"
             "leftovers in tmp/ are removed once they are N seconds\n"
             "old (default {default}; 0: never)"},
    {.flag = "ilm-move-mbps", .key = "ilm-move-mbps", .arg = "N", NUM(ilm_move_mbps), .def = 64,
     .help = "lifecycle transitions copy at most N MiB/s (default {default};\n"
             "0: no limit)"},
    {.flag = "ilm-due-rate", .key = "ilm-due-rate", .arg = "N", NUM(ilm_due_rate), .def = 250,
     .help = "due lifecycle work (expirations and transitions found\n"
             "through the due-time index) is carried out for at\n"
             "most N objects per second (default {default}; 0: no limit)"},
    {.flag = "heal-rate", .key = "heal-rate", .arg = "N", NUM(heal_rate), .def = 500,
     .help = "the scanner heals at most N keys per second: writes\n"
             "that missed a drive (the heal queue) and its full\n"
             "heal together (default {default}; 0: no limit)"},

    /* Before "storage-classes": a class names a tier. */
    {.flag = "tier", .key = "tiers", .arg = "NAME:[K+M:]DRIVES", LIST(tier_specs, ntier_specs),
     .parse = tier_parse, .flags_replace = true,
     .group = "Tiers (where object data lives; metadata always stays on the hot tier):",
     .help = "a tier of erasure sets of K data + M parity drives\n"
             "(without K+M: sets picked as for the plain drive list).\n"
             "DRIVES: comma-separated drives or ranges, e.g.\n"
             "--tier warm:4+2:/mnt/w{1...6}.  Repeatable; --tier hot:...\n"
             "replaces the plain drive arguments.  Config file:\n"
             "\"tiers\": [\"warm:4+2:/mnt/w{1...6}\", ...]"},
    {.flag = "tier", .arg = "NAME:s3[,lock][,restore]:URL", .type = STRATA_OPT_FORM,
     .help = "a remote tier: the bucket at\n"
             "URL = http[s]://HOST:PORT/BUCKET[/PREFIX] (path style) of\n"
             "any S3 endpoint; ,lock keeps Object Lock on its objects\n"
             "(the bucket must have Object Lock), without it locked\n"
             "versions never move there; ,restore makes it an archive\n"
             "tier: its objects are read only after RestoreObject (as\n"
             "GLACIER on AWS; a day of the copy's Days is\n"
             "--lc-day-seconds), else reads stream from the remote"},
    {.flag = "tier", .arg = "NAME:rados:POOL", .type = STRATA_OPT_FORM,
     .help = "a tier over POOL of the --rados-conf cluster (e.g. an\n"
             "EC pool on HDD OSDs; it must exist); RADOS store only"},
    {.flag = "tier-credentials", .key = "tier-credentials", .arg = "FILE",
     STR(tier_credentials),
     .help = "keys of remote tiers, JSON {\"NAME\": {\"access_key\":\n"
             "..., \"secret_key\": ..., \"region\": ...}}, mode 0600"},
    /* The file's classes stay with --storage-class flags (added to them). */
    {.flag = "storage-class", .key = "storage-classes", .arg = "CLASS:TIER",
     LIST(class_specs, nclass_specs), .parse = class_parse,
     .help = "serve x-amz-storage-class CLASS from TIER\n"
             "(repeatable; config \"storage-classes\": [...]).  Defaults:\n"
             "STANDARD:hot, STANDARD_IA:warm, WARM:warm, GLACIER:compliance,\n"
             "DEEP_ARCHIVE:compliance, COMPLIANCE:compliance.  A class whose\n"
             "tier is not configured is refused (InvalidStorageClass)."},

    {.flag = "rados-conf", .key = "rados-conf", .arg = "FILE", STR(rados_conf),
     .valid = nonempty, .must = "must not be empty",
     .group = "Store on a Ceph cluster (meta/RADOS.md; create the pools once with\n"
              "strata rados init):",
     .help = "keep buckets, objects, the retention clock and the audit\n"
             "log in the Ceph cluster of FILE (a ceph.conf with its\n"
             "keyring) instead of local drives; several daemons on\n"
             "one cluster serve one namespace.  The daemon refuses to\n"
             "start when the cluster is unreachable (10 s) or a pool\n"
             "is missing, and with drives or a --tier on local drives\n"
             "(other gateways could not reach them)"},
    {.flag = "rados-id", .key = "rados-id", .arg = "NAME", STR(rados_id), .sdef = "admin",
     .valid = nonempty, .must = "must not be empty",
     .help = "cephx user, without \"client.\" (default {default})"},
    {.flag = "rados-pool-prefix", .key = "rados-pool-prefix", .arg = "P",
     STR(rados_pool_prefix), .sdef = "strata", .valid = nonempty, .must = "must not be empty",
     .help = "pools P.meta and P.data (default {default})"},
    {.flag = "lease-seconds", .key = "lease-seconds", .arg = "N", NUMS(lease_s, 1, 3, 3600),
     .def = 15, .must = "must be 3 to 3600",
     .help = "work that runs once per cluster (lifecycle, reclaim,\n"
             "event and replication delivery) is held by one gateway\n"
             "for N seconds at a time, renewed every N/3; another\n"
             "takes it over within about N s of the holder's death\n"
             "(default {default})"},

    {.flag = "notify-target", .key = "notify-targets", .arg = "ID:KIND:ADDRESS",
     LIST(notify_specs, nnotify_specs), .parse = notify_parse, .flags_replace = true,
     .group = "Event notifications (PutBucketNotificationConfiguration names a target by\n"
              "its queue ARN arn:strata:sqs::ID:KIND):",
     .help = "an event target, e.g.\n"
             "hook1:webhook:http://127.0.0.1:8080/events.  KIND:\n"
             "webhook (HTTP POST), redis (ADDRESS HOST:PORT/KEY: RPUSH\n"
             "to list KEY), nats (ADDRESS nats://HOST:PORT/SUBJECT),\n"
             "amqp (amqp://[USER@]HOST:PORT/EXCHANGE/ROUTING_KEY),\n"
             "mqtt (mqtt://[USER@]HOST:PORT/TOPIC) or postgres\n"
             "(postgres://[USER@]HOST:PORT/DBNAME/TABLE).\n"
             "Repeatable; config \"notify-targets\": [...].  Each has a\n"
             "persistent queue on the first two drives (notify/ID.q)"},
    {.flag = "notify-token-file", .key = "notify-token-files", .arg = "ID:FILE",
     LIST(notify_token_specs, nnotify_token_specs), .parse = token_parse,
     .flags_replace = true,
     .help = "send \"Authorization: Bearer\" with the token on\n"
             "FILE's first line to target ID (redis: AUTH with it as\n"
             "the password; nats: the auth token; amqp, mqtt,\n"
             "postgres: the password; repeatable; config\n"
             "\"notify-token-files\": [...])"},
    /* 0: not set, notify.c's default. */
    {.flag = "notify-queue-max", .key = "notify-queue-max", .arg = "N",
     NUMS(notify_queue_max, 1, 1, 1ll << 32),
     .null0 = true, .help_def = STRATA_NOTIFY_QUEUE_MAX_DEFAULT,
     .must = "must be a number of events, at least 1",
     .help = "events pending per target before new ones are dropped\n"
             "and counted (default {default})"},

    {.flag = "replication-target", .key = "replication-targets", .arg = "NAME:URL",
     LIST(repl_specs, nrepl_specs), .parse = repl_parse, .flags_replace = true,
     .group = "Bucket replication (PutBucketReplication names a target by <Account>NAME):",
     .help = "a replication target, URL http[s]://HOST:PORT\n"
             "(another Strata or any S3).  Repeatable; config\n"
             "\"replication-targets\": [...].  Each has a persistent\n"
             "queue under the first drive (replication/NAME.q)\n"
             "Keys: NAME's in the --tier-credentials file"},
    {.flag = "replication-sealed-retry-seconds", .key = "replication-sealed-retry-seconds",
     .arg = "N", NUMS(repl_sealed_retry_s, 1, 0, 7 * 86400),
     .def = STRATA_REPL_SEALED_RETRY_S_DEFAULT, .help_def = STRATA_REPL_SEALED_RETRY_S_DEFAULT,
     .must = "must be 0 to 604800 seconds",
     .help = "after a target refuses an SSE-KMS version sent sealed\n"
             "(it lacks that ReplicaKmsKeyID), later versions under\n"
             "that key go to it as plaintext without a sealed offer\n"
             "for N seconds (default {default}; 0: offered sealed\n"
             "each time, a refused offer costing one request)"},

    /* Config file only: the root keys (STRATA_ROOT_USER/PASSWORD win over
     * them, main.c) and the drives (drive arguments replace them). */
    {.key = "root-user", STR(root_user),
     .help = "the root access key, unless STRATA_ROOT_USER and STRATA_ROOT_PASSWORD are set"},
    {.key = "root-password", STR(root_password), .valid = not_mask,
     .must = "is the mask of a printed configuration, not a password", .print = password_print,
     .help = "the root secret key; printed masked, and the mask is refused"},
    {.key = "drives", .type = STRATA_OPT_LIST, .late = true, .print = drives_print,
     .help = "the hot tier's drives (ranges allowed), unless drive arguments are given"},
};

const size_t strata_srv_opt_count = sizeof(strata_srv_opt_table) / sizeof(strata_srv_opt_table[0]);

/* ---- storing and reading a row's member ----------------------------------- */

static void *member(const struct strata_srv_config *c, const struct strata_srv_opt *r)
{
    return (char *)c + r->off;
}

static void num_store(struct strata_srv_config *c, const struct strata_srv_opt *r,
                      long long v)
{
    unsigned long long u = (unsigned long long)v * r->scale;
    long long s = v * (long long)r->scale;
    void *p = member(c, r);
    if (r->size == 4 && r->is_signed)
        *(int32_t *)p = (int32_t)s;
    else if (r->size == 4)
        *(uint32_t *)p = (uint32_t)u;
    else if (r->is_signed)
        *(int64_t *)p = s;
    else
        *(uint64_t *)p = u;
}

static long long num_load(const struct strata_srv_config *c, const struct strata_srv_opt *r)
{
    const void *p = member(c, r);
    long long v;
    if (r->size == 4)
        v = r->is_signed ? *(const int32_t *)p : (long long)*(const uint32_t *)p;
    else
        v = r->is_signed ? *(const int64_t *)p : (long long)*(const uint64_t *)p;
    return v / (long long)r->scale;
}

/* A whole decimal number (a sign only when negatives are allowed, no
 * suffix) in the row's range: 0 or -1. */
static int num_parse(const struct strata_srv_opt *r, const char *v, long long *out)
{
    const char *d = *v == '-' && r->min < 0 ? v + 1 : v;
    char *end;
    if (*d < '0' || *d > '9')
        return -1;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno || x < r->min || x > r->max)
        return -1;
    *out = x;
    return 0;
}

static int refuse(const struct strata_srv_opt *r, char *err, size_t n)
{
    if (r->must)
        snprintf(err, n, "--%s %s", r->flag ? r->flag : r->key, r->must);
    else
        snprintf(err, n, "--%s must be a whole number from %lld to %lld",
                 r->flag ? r->flag : r->key, r->min, r->max);
    return -1;
}

int strata_srv_opt_set(struct strata_srv_opts *o, const struct strata_srv_opt *r,
                       const char *v, char *err, size_t errlen)
{
    switch (r->type) {
    case STRATA_OPT_STR:
        if (r->valid && !r->valid(v))
            return refuse(r, err, errlen);
        *(const char **)member(o->cfg, r) = v;
        return 0;
    case STRATA_OPT_NUM: {
        long long x;
        if (num_parse(r, v, &x) != 0)
            return refuse(r, err, errlen);
        num_store(o->cfg, r, x);
        return 0;
    }
    case STRATA_OPT_BOOL:
        *(bool *)member(o->cfg, r) = true;
        return 0;
    case STRATA_OPT_LIST: {
        if (r->late)
            return 0;
        unsigned *count = (unsigned *)((char *)o->cfg + r->count_off);
        if (*count >= r->cap) {
            snprintf(err, errlen, "too many --%s", r->flag);
            return -1;
        }
        if (r->parse(o, v, err, errlen) != 0)
            return -1;
        ((const char **)member(o->cfg, r))[(*count)++] = v;
        return 0;
    }
    case STRATA_OPT_CUSTOM:
    case STRATA_OPT_ACTION:
        return r->parse(o, v, err, errlen);
    case STRATA_OPT_FORM:
        break;
    }
    return 0;
}

int strata_srv_opts_defaults(struct strata_srv_opts *o, char *err, size_t errlen)
{
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        if (r->type == STRATA_OPT_NUM)
            num_store(o->cfg, r, r->def);
        else if ((r->type == STRATA_OPT_STR || r->type == STRATA_OPT_CUSTOM) && r->sdef &&
                 strata_srv_opt_set(o, r, r->sdef, err, errlen) != 0)
            return -1;
    }
    return 0;
}

const struct strata_srv_opt *strata_srv_opt_by_key(const char *key)
{
    for (size_t i = 0; i < strata_srv_opt_count; i++)
        if (strata_srv_opt_table[i].key && strcmp(strata_srv_opt_table[i].key, key) == 0)
            return &strata_srv_opt_table[i];
    return NULL;
}

/* Whether argv holds the flag --NAME (before "--"). */
static bool argv_has(int argc, char **argv, const char *flag)
{
    size_t n = strlen(flag);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, flag, n) == 0 &&
            (argv[i][n + 2] == 0 || argv[i][n + 2] == '='))
            return true;
    return false;
}

int strata_srv_opts_apply_file(struct strata_srv_opts *o, json_t *conf, const char *path,
                               int argc, char **argv, char *err, size_t errlen)
{
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        json_t *v = r->key ? json_object_get(conf, r->key) : NULL;
        if (!v || json_is_null(v) || r->file_ignores || r->late)
            continue;
        char why[512] = "";
        int rc = 0;
        if (r->type == STRATA_OPT_BOOL) {
            *(bool *)member(o->cfg, r) = json_is_true(v);
        } else if (r->type == STRATA_OPT_LIST) {
            size_t j;
            json_t *e;
            if (r->flags_replace && argv_has(argc, argv, r->flag))
                continue;
            json_array_foreach(v, j, e) if (rc == 0)
                rc = strata_srv_opt_set(o, r, json_string_value(e), why, sizeof(why));
            if (rc) {
                /* As the flag's own message. */
                snprintf(err, errlen, "%s", why);
                return -1;
            }
        } else {
            rc = strata_srv_opt_set(o, r, strata_srv_config_value(conf, r->key), why,
                                    sizeof(why));
        }
        if (rc && !r->flag) {
            snprintf(err, errlen, "bad --config: %s: \"%s\": %s", path, r->key, r->must);
            return -1;
        }
        if (rc) {
            snprintf(err, errlen, "%s\nstrata: bad --config %s: \"%s\"", why, path, r->key);
            return -1;
        }
    }
    return 0;
}

int strata_srv_opts_parse_argv(struct strata_srv_opts *o, int argc, char **argv, char *err,
                               size_t errlen)
{
    enum { VAL_BASE = 256, VAL_HELP = 'h' };
    static struct option longopts[128];
    size_t n = 0;
    for (size_t i = 0; i < strata_srv_opt_count && n + 2 < sizeof(longopts) / sizeof(longopts[0]);
         i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        if (!r->flag || r->type == STRATA_OPT_FORM)
            continue;
        bool sw = r->type == STRATA_OPT_BOOL || r->type == STRATA_OPT_ACTION;
        longopts[n++] = (struct option){r->flag, sw ? no_argument : required_argument, NULL,
                                        VAL_BASE + (int)i};
    }
    /* The command's own --help: not a setting, so not a row. */
    longopts[n++] = (struct option){"help", no_argument, NULL, VAL_HELP};
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == VAL_HELP) {
            o->help = true;
            return 0;
        }
        if (c < VAL_BASE || (size_t)(c - VAL_BASE) >= strata_srv_opt_count)
            return -2;
        if (strata_srv_opt_set(o, &strata_srv_opt_table[c - VAL_BASE], optarg, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* One row of --help: "  --FLAG ARG" in a column of 24, then the help text
 * with {default} expanded, its further lines indented to the column. */
static void usage_row(FILE *f, const struct strata_srv_opt *r)
{
    char head[128], def[64] = "";
    int n = snprintf(head, sizeof(head), "  --%s%s%s", r->flag, r->arg ? " " : "",
                     r->arg ? r->arg : "");
    fprintf(f, "%s%*s", head, n < 22 ? 24 - n : 2, "");
    if (r->type == STRATA_OPT_NUM)
        snprintf(def, sizeof(def), "%lld", r->help_def ? r->help_def : r->def);
    else if (r->sdef)
        snprintf(def, sizeof(def), "%s", r->sdef);
    for (const char *p = r->help; *p;) {
        const char *mark = strstr(p, "{default}"), *nl = strchr(p, '\n');
        if (mark && (!nl || mark < nl)) {
            fprintf(f, "%.*s%s", (int)(mark - p), p, def);
            p = mark + strlen("{default}");
        } else if (nl) {
            fprintf(f, "%.*s\n%24s", (int)(nl - p), p, "");
            p = nl + 1;
        } else {
            fputs(p, f);
            break;
        }
    }
    fputc('\n', f);
}

void strata_srv_opts_usage(FILE *f)
{
    for (size_t i = 0; i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        if (r->group)
            fprintf(f, "\n%s\n", r->group);
        if (r->flag)
            usage_row(f, r);
    }
}

json_t *strata_srv_opt_json(const struct strata_srv_opt *r, const struct strata_srv_config *c)
{
    if (r->print)
        return r->print(c);
    switch (r->type) {
    case STRATA_OPT_STR: {
        const char *v = *(const char *const *)member(c, r);
        return v ? json_string(v) : json_null();
    }
    case STRATA_OPT_NUM: {
        long long v = num_load(c, r);
        return r->null0 && v == 0 ? json_null() : json_integer((json_int_t)v);
    }
    case STRATA_OPT_BOOL:
        return json_boolean(*(const bool *)member(c, r));
    case STRATA_OPT_LIST: {
        json_t *a = json_array();
        unsigned n = *(const unsigned *)((const char *)c + r->count_off);
        for (unsigned i = 0; a && i < n; i++)
            json_array_append_new(a, json_string(((const char *const *)member(c, r))[i]));
        return a ? a : json_null();
    }
    default:
        return json_null();
    }
}
