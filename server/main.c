/*
 * main.c - the strata command line: "strata server" (the S3 daemon),
 * "strata selftest" (format a scratch drive set and round-trip objects
 * through meta.h) and --help.  The main thread parses flags, opens the
 * drive sets and metadata, starts the HTTP daemon, then sleeps in
 * sigtimedwait() (flushing the access log every 50 ms) until
 * SIGTERM/SIGINT and shuts down in reverse order.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <openssl/evp.h>

#include "cli_audit.h"
#include "cli_rados.h"
#include "drive_args.h"
#include "srv.h"
#include "sse.h"
#include "admin.h"
#include "admin_cli.h"
#include "authz.h"
#include "srv_config.h"
#include "srv_rados.h"
#include "srv_tiers.h"
#include "restore_worker.h"
#include "remote_creds.h"
#include "notify.h"
#include "pqueue.h"
#include "remote_lock.h"
#include "repl.h"
#include "strata/hex.h"
#include "strata/ilm.h"

#define DRIVES_MAX 1024
/* Small objects live in the metadata records and dataloaders re-read them:
 * a cache that holds the hot set saves a pread and a block checksum per GET.
 * The cache is an LRU that only grows as it is used. */
#define CACHE_MB_DEFAULT 1024u
/* 32 signed 16 MiB chunks, or 256 XML bodies of 2 MiB. */
#define BODY_MEMORY_MB_DEFAULT 512u
#define DEFAULT_ROOT_USER "strataadmin"
#define DEFAULT_ROOT_PASSWORD "strataadmin"
/* The lifecycle scanner: a real day, a pass an hour, healing an hour, tmp/
 * leftovers a day old (a slow upload may keep its tmp/ file for hours). */
#define LC_DAY_S_DEFAULT 86400u
#define ILM_INTERVAL_S_DEFAULT 3600u
#define ILM_RATE_DEFAULT 2000u
#define ILM_MOVE_MBPS_DEFAULT 64u
#define ILM_DUE_RATE_DEFAULT 250u
#define HEAL_RATE_DEFAULT 500u
#define HEAL_INTERVAL_S_DEFAULT 3600u
#define ORPHAN_GRACE_S_DEFAULT 3600u

/* Long options without a free letter. */
enum { OPT_REPL_TARGET = 1001, OPT_RADOS_CONF, OPT_RADOS_ID, OPT_RADOS_PREFIX };

static void usage(FILE *f)
{
    fprintf(f,
"Usage: strata server [OPTIONS] [DRIVE...]\n"
"       strata selftest [DIR]\n"
"       strata audit verify DRIVE... | strata audit show DRIVE\n"
"       strata rados init|check --rados-conf FILE [--rados-id NAME] [--rados-pool-prefix P]\n"
"       strata admin kms rotate --kms-key-file FILE [--name NAME]\n"
"       strata admin [--endpoint URL] [--json] COMMAND   (strata admin --help)\n"
"       strata --help | --version\n"
"\n"
"server    Serve the S3 API from the given drives.  A drive is a directory\n"
"          (ideally its own mount).  MinIO-style ranges expand: /mnt/d{1...4},\n"
"          /mnt/d{01...16}, /mnt/{a...d}/x.  Drives are grouped into erasure sets\n"
"          of 4 to 16 drives (the largest size dividing the count).  With no\n"
"          drives, four directories under $STRATA_DATA_DIR (default ./data) are\n"
"          used as one 2+2 set.  These drives are the hot tier, which also\n"
"          holds every object's metadata; --tier adds more tiers.\n"
"selftest  Format a temporary drive set under DIR (default /tmp), write, read\n"
"          back and verify objects of several sizes through the object layer,\n"
"          delete them and print a report.  Exits non-zero on any mismatch.\n"
"audit     Check the hash chain of the drives' object-lock audit logs, or\n"
"          print one (strata audit --help).\n"
"rados     Create the pools and control objects of the RADOS store in a Ceph\n"
"          cluster, or check them (strata rados --help).\n"
"\n"
"Options of server:\n"
"  --address HOST:PORT   listen address (default 127.0.0.1:9000)\n"
"  --users FILE          more users, one per line: ACCESS_KEY SECRET [NAME]\n"
"  --tls-cert FILE       PEM certificate: serve HTTPS (needs --tls-key)\n"
"  --tls-key FILE        PEM private key for --tls-cert\n"
"  --domain DOMAIN       accept virtual-host style requests (BUCKET.DOMAIN)\n"
"  --region NAME         the region this server is (default us-east-1): requests\n"
"                        signed for another get AuthorizationHeaderMalformed,\n"
"                        CreateBucket for another IllegalLocationConstraintException\n"
"  --inline-max BYTES    objects up to this size live in metadata (default %u)\n"
"  --cache-mb N          metadata block cache shared by all drives, MiB (default %u)\n"
"  --memtable-mb N       metadata write buffers (RocksDB memtables) of all drives\n"
"                        together, MiB, at least 8 (default %u); with --cache-mb\n"
"                        and --body-memory-mb the bulk of the daemon's memory\n"
"  --read-cache-max-mb N  erasure-coded objects (and parts of multipart ones) up\n"
"                        to N MiB are read through the page cache, bigger ones\n"
"                        straight from the drives (O_DIRECT); 0: all from the\n"
"                        drives (default %u)\n"
"  --access-log FILE     access log file (default: stderr)\n"
"  --max-inflight N      requests served at once; more get 503 SlowDown (default 256)\n"
"  --timeout SECONDS     idle/slow connection timeout (default 120)\n"
"  --max-conns-per-ip N  connections from one client address; more are closed\n"
"                        at accept (default 0: no limit)\n"
"  --body-memory-mb N    request bodies buffered at once, all requests together\n"
"                        (signed aws-chunked chunks, XML bodies), MiB; beyond it\n"
"                        requests get 503 SlowDown (default %u)\n"
"  --threads N           event threads serving the connections (default 0: one\n"
"                        per core)\n"
"  --workers N           storage workers running what waits on drives: writes,\n"
"                        listings, erasure-coded reads (default 0: 32)\n"
"  --log-level LEVEL     err, warn, notice, info (default) or debug\n"
"  --admin-users K1,K2   access keys (of --users) that may use the admin API\n"
"                        besides the root user\n"
"  --root-display-name NAME  the root user's DisplayName in ACLs and listings\n"
"                        (default root)\n"
"  --default-object-ownership MODE  Object Ownership of buckets created without\n"
"                        x-amz-object-ownership: BucketOwnerEnforced (default,\n"
"                        ACLs disabled, as AWS since 2023), BucketOwnerPreferred\n"
"                        or ObjectWriter (ACLs enabled, for tools that set\n"
"                        canned ACLs at CreateBucket)\n"
"  --metrics-public      serve /metrics without credentials (otherwise admins\n"
"                        read it signed at /strata/admin/v1/metrics)\n"
"  --metrics-token-file FILE  /metrics also answers \"Authorization: Bearer T\"\n"
"                        where T is FILE's first line (32-255 characters;\n"
"                        Prometheus' bearer_token_file)\n"
"  --config FILE         a JSON object of these options by long name (\"address\",\n"
"                        \"max-inflight\", ...), \"drives\": [...], \"root-user\",\n"
"                        \"root-password\"; flags and the environment win over it\n"
"  --print-config        print the effective configuration (JSON, the root\n"
"                        password masked) and exit; also strata --print-config\n"
"  --kms-key-file FILE   master keys for server-side encryption (JSON, mode 0600;\n"
"                        format in server/README.md); without it SSE answers 501\n"
"  --sse-c-allow-http    accept SSE-C customer keys over plain HTTP (tests on\n"
"                        loopback only; AWS and the default refuse them)\n"
"  --mpu-retry-seconds N  a completed multipart upload answers a repeated\n"
"                        CompleteMultipartUpload with the same part list (an SDK\n"
"                        retrying a lost answer) with the same result for N\n"
"                        seconds, at least 1 (default %u)\n"
"  --kms-rewrap          after start, re-wrap the object keys of SSE-S3 objects\n"
"                        held under an older master key with the active one\n"
"                        (background pass, progress in the log; run again after\n"
"                        a restart)\n"
"\n"
"Lifecycle (bucket lifecycle rules, healing and tmp/ reclaim in the background):\n"
"  --lc-day-seconds N    one lifecycle day lasts N seconds (default %u); rule\n"
"                        \"Days\" count in these days and due dates round up to\n"
"                        the next multiple of N since the epoch (midnight UTC\n"
"                        for 86400).  For tests and demos.\n"
"  --ilm-interval-seconds N  a scanner pass starts every N seconds (default %u,\n"
"                        or half a lifecycle day when that is shorter); 0 turns\n"
"                        the scanner off\n"
"  --ilm-rate N          versions and uploads the scanner examines per second\n"
"                        (default %u; 0: no limit)\n"
"  --heal-interval-seconds N  the scanner heals every drive set at most every N\n"
"                        seconds, starting with its first pass (default %u; 0: never)\n"
"  --orphan-grace-seconds N  shard files in data/ that no record references and\n"
"                        leftovers in tmp/ are removed once they are N seconds\n"
"                        old (default %u; 0: never)\n"
"  --ilm-move-mbps N     lifecycle transitions copy at most N MiB/s (default %u;\n"
"                        0: no limit)\n"
"  --ilm-due-rate N      due lifecycle work (expirations and transitions found\n"
"                        through the due-time index) is carried out for at\n"
"                        most N objects per second (default %u; 0: no limit)\n"
"  --heal-rate N         the scanner heals at most N keys per second: writes\n"
"                        that missed a drive (the heal queue) and its full\n"
"                        heal together (default %u; 0: no limit)\n"
"\n"
"Tiers (where object data lives; metadata always stays on the hot tier):\n"
"  --tier NAME:[K+M:]DRIVES  a tier of erasure sets of K data + M parity drives\n"
"                        (without K+M: sets picked as for the plain drive list).\n"
"                        DRIVES: comma-separated drives or ranges, e.g.\n"
"                        --tier warm:4+2:/mnt/w{1...6}.  Repeatable; --tier hot:...\n"
"                        replaces the plain drive arguments.  Config file:\n"
"                        \"tiers\": [\"warm:4+2:/mnt/w{1...6}\", ...]\n"
"  --tier NAME:s3[,lock][,restore]:URL  a remote tier: the bucket at\n"
"                        URL = http[s]://HOST:PORT/BUCKET[/PREFIX] (path style) of\n"
"                        any S3 endpoint; ,lock keeps Object Lock on its objects\n"
"                        (the bucket must have Object Lock), without it locked\n"
"                        versions never move there; ,restore makes it an archive\n"
"                        tier: its objects are read only after RestoreObject (as\n"
"                        GLACIER on AWS; a day of the copy's Days is\n"
"                        --lc-day-seconds), else reads stream from the remote\n"
"  --tier-credentials FILE  keys of remote tiers, JSON {\"NAME\": {\"access_key\":\n"
"                        ..., \"secret_key\": ..., \"region\": ...}}, mode 0600\n"
"  --storage-class CLASS:TIER  serve x-amz-storage-class CLASS from TIER\n"
"                        (repeatable; config \"storage-classes\": [...]).  Defaults:\n"
"                        STANDARD:hot, STANDARD_IA:warm, WARM:warm, GLACIER:compliance,\n"
"                        DEEP_ARCHIVE:compliance, COMPLIANCE:compliance.  A class whose\n"
"                        tier is not configured is refused (InvalidStorageClass).\n"
"\n"
"Store on a Ceph cluster (meta/RADOS.md; create the pools once with\n"
"strata rados init):\n"
"  --rados-conf FILE     keep buckets, objects, the retention clock and the audit\n"
"                        log in the Ceph cluster of FILE (a ceph.conf with its\n"
"                        keyring) instead of local drives; several daemons on\n"
"                        one cluster serve one namespace.  The daemon refuses to\n"
"                        start when the cluster is unreachable (10 s) or a pool\n"
"                        is missing, and with drives, --tier, --notify-target or\n"
"                        --replication-target (they keep data on local drives)\n"
"  --rados-id NAME       cephx user, without \"client.\" (default admin)\n"
"  --rados-pool-prefix P  pools P.meta and P.data (default strata)\n"
"\n"
"Event notifications (PutBucketNotificationConfiguration names a target by\n"
"its queue ARN arn:strata:sqs::ID:KIND):\n"
"  --notify-target ID:KIND:ADDRESS  an event target, e.g.\n"
"                        hook1:webhook:http://127.0.0.1:8080/events.  KIND:\n"
"                        webhook (HTTP POST), redis (ADDRESS HOST:PORT/KEY: RPUSH\n"
"                        to list KEY), nats (ADDRESS nats://HOST:PORT/SUBJECT),\n"
"                        amqp (amqp://[USER@]HOST:PORT/EXCHANGE/ROUTING_KEY),\n"
"                        mqtt (mqtt://[USER@]HOST:PORT/TOPIC) or postgres\n"
"                        (postgres://[USER@]HOST:PORT/DBNAME/TABLE).\n"
"                        Repeatable; config \"notify-targets\": [...].  Each has a\n"
"                        persistent queue on the first two drives (notify/ID.q)\n"
"  --notify-token-file ID:FILE  send \"Authorization: Bearer\" with the token on\n"
"                        FILE's first line to target ID (redis: AUTH with it as\n"
"                        the password; nats: the auth token; amqp, mqtt,\n"
"                        postgres: the password; repeatable; config\n"
"                        \"notify-token-files\": [...])\n"
"  --notify-queue-max N  events pending per target before new ones are dropped\n"
"                        and counted (default %u)\n"
"\n"
"Bucket replication (PutBucketReplication names a target by <Account>NAME):\n"
"  --replication-target NAME:URL  a replication target, URL http[s]://HOST:PORT\n"
"                        (another Strata or any S3).  Repeatable; config\n"
"                        \"replication-targets\": [...].  Each has a persistent\n"
"                        queue under the first drive (replication/NAME.q)\n"
"                        Keys: NAME's in the --tier-credentials file\n"
"\n"
"Environment:\n"
"  STRATA_ROOT_USER      root access key (default %s)\n"
"  STRATA_ROOT_PASSWORD  root secret key (default %s)\n"
"                        The defaults are only allowed on a loopback --address\n"
"                        (with a warning): on any other address the server\n"
"                        refuses to start until both are set.\n"
"  STRATA_DATA_DIR       where the default drives live when none are given\n"
"  STRATA_DEBUG_TRANSITION_CRASH K  fault tests only: the daemon exits at once\n"
"                        (_exit 137, like kill -9) when a lifecycle transition\n"
"                        reaches step K (1..7, meta.h STRATA_TR_STEP_*)\n"
"\n"
"Signals: SIGTERM/SIGINT stop accepting, let in-flight requests finish, close\n"
"the metadata and drive sets, and exit 0.  SIGUSR1 starts a lifecycle scanner\n"
"pass now (its counters are the strata_ilm_* lines of GET /metrics).  SIGHUP\n"
"reloads the --users file and reopens the --access-log file; other settings\n"
"need a restart.\n",
            STRATA_INLINE_MAX_DEFAULT, CACHE_MB_DEFAULT, STRATA_MEMTABLE_MB_DEFAULT,
            (unsigned)(STRATA_SRV_READ_CACHED_MAX >> 20), BODY_MEMORY_MB_DEFAULT,
            STRATA_MPU_RETRY_S_DEFAULT, LC_DAY_S_DEFAULT,
            ILM_INTERVAL_S_DEFAULT, ILM_RATE_DEFAULT, HEAL_INTERVAL_S_DEFAULT,
            ORPHAN_GRACE_S_DEFAULT, ILM_MOVE_MBPS_DEFAULT, ILM_DUE_RATE_DEFAULT,
            HEAL_RATE_DEFAULT, (unsigned)STRATA_NOTIFY_QUEUE_MAX_DEFAULT, DEFAULT_ROOT_USER,
            DEFAULT_ROOT_PASSWORD);
}

static void free_drives(char **drives, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(drives[i]);
}

static int parse_level(const char *s)
{
    static const char *const names[] = {"err", "warn", "notice", "info", "debug"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

/* The tiers besides hot: opened, each behind a local tier for meta.
 * On failure closes what it opened. */
static int open_tiers(struct strata_srv *s, struct strata_tier **out, unsigned *n)
{
    *n = 0;
    for (unsigned i = 0; s->tiers && i < s->tiers->n; i++) {
        struct strata_srv_tier *t = &s->tiers->t[i];
        if (strcmp(t->name, STRATA_TIER_HOT) == 0)
            continue;
        char err[512];
        struct strata_logger log = strata_srv_logger();
        int rc = strata_srv_tier_open(s->tiers, t, s->cfg.read_cached_max, &log, err,
                                      sizeof(err));
        if (rc == 0 && !t->url &&
            strata_tier_local_create(t->name, t->sets, t->nsets, &t->tier) != 0) {
            snprintf(err, sizeof(err), "tier %s: out of memory", t->name);
            rc = -1;
        }
        if (rc) {
            strata_srv_log(STRATA_LOG_ERR, "%s", err);
            for (unsigned j = 0; j <= i; j++)
                strata_srv_tier_close(&s->tiers->t[j]);
            return -1;
        }
        out[(*n)++] = t->tier;
        if (t->url) {
            strata_srv_log(STRATA_LOG_INFO, "tier %s: remote %s%s%s", t->name, t->url,
                           t->lock ? " (Object Lock kept)" : "",
                           t->restore ? " (archive: reads need RestoreObject)" : "");
            continue;
        }
        strata_srv_log(STRATA_LOG_INFO, "tier %s: %u set%s of %u+%u", t->name, t->nsets,
                       t->nsets == 1 ? "" : "s", strata_set_k(t->sets[0]),
                       strata_set_m(t->sets[0]));
    }
    return 0;
}

static void close_storage(struct strata_srv *s);

/* Opens every set and the metadata (or the RADOS store): 0, or 1 (2: a
 * bad --rados-conf file) after logging why.  On failure closes what it
 * opened. */
static int open_storage(struct strata_srv *s, size_t inline_max, size_t cache_mb,
                        size_t memtable_mb)
{
    if (s->cfg.rados_conf)
        return strata_srv_rados_open(s, inline_max);
    struct strata_srv_tier *hot = s->tiers ? strata_srv_tiers_find(s->tiers, STRATA_TIER_HOT)
                                           : NULL;
    unsigned per = hot && hot->k ? hot->k + hot->m
                                 : strata_drive_set_size_pick((unsigned)s->cfg.ndrives);
    if (per == 0) {
        strata_srv_log(STRATA_LOG_ERR,
                       "%zu drives cannot form erasure sets of 4 to 16 drives", s->cfg.ndrives);
        return -1;
    }
    s->nsets = (unsigned)(s->cfg.ndrives / per);
    s->sets = calloc(s->nsets, sizeof(*s->sets));
    if (!s->sets)
        return -1;
    for (unsigned i = 0; i < s->nsets; i++) {
        struct strata_set_opts so = {.set_index = i, .direct_io = true, .m = hot ? hot->m : 0,
                                     .read_cached_max = s->cfg.read_cached_max,
                                     .log = strata_srv_logger()};
        struct strata_errinfo ei = {.drive = -1};
        int rc = strata_set_open((const char *const *)s->cfg.drives + (size_t)i * per, per, &so,
                                 &s->sets[i], &ei);
        if (rc) {
            strata_srv_log(STRATA_LOG_ERR, "cannot open drive set %u: %s%s%s", i,
                           strata_strerror(rc), ei.msg[0] ? ": " : "", ei.msg);
            for (unsigned j = 0; j < i; j++)
                strata_set_close(s->sets[j]);
            return -1;
        }
    }
    struct strata_tier *tiers[STRATA_TIERS_MAX];
    unsigned ntiers = 0;
    if (open_tiers(s, tiers, &ntiers) != 0) {
        for (unsigned j = 0; j < s->nsets; j++)
            strata_set_close(s->sets[j]);
        return -1;
    }
    struct strata_meta_opts mo = {.inline_max = inline_max, .block_cache_mb = cache_mb,
                                  .memtable_mb = memtable_mb,
                                  .log = strata_srv_logger(), .tiers = tiers,
                                  .ntiers = ntiers, .mpu_retry_s = s->cfg.mpu_retry_s};
    struct strata_errinfo ei = {.drive = -1};
    int rc = strata_meta_open(s->sets, s->nsets, &mo, &s->meta, &ei);
    if (rc) {
        strata_srv_log(STRATA_LOG_ERR, "cannot open metadata: %s%s%s", strata_strerror(rc),
                       ei.msg[0] ? ": " : "", ei.msg);
        for (unsigned j = 0; j < s->nsets; j++)
            strata_set_close(s->sets[j]);
        for (unsigned j = 0; s->tiers && j < s->tiers->n; j++)
            strata_srv_tier_close(&s->tiers->t[j]);
        return -1;
    }
    for (unsigned j = 0; s->tiers && j < s->tiers->n; j++) {
        if (s->tiers->t[j].restore && strata_meta_tier_archive(s->meta, s->tiers->t[j].name)) {
            strata_srv_log(STRATA_LOG_ERR, "tier %s: restore needs the local metadata backend",
                           s->tiers->t[j].name);
            close_storage(s);
            return -1;
        }
    }
    return 0;
}

static void close_storage(struct strata_srv *s)
{
    if (s->meta)
        strata_meta_close(s->meta);
    s->meta = NULL;
    for (unsigned j = 0; s->sets && j < s->nsets; j++)
        strata_set_close(s->sets[j]);
    free(s->sets);
    s->sets = NULL;
    for (unsigned j = 0; s->tiers && j < s->tiers->n; j++)
        strata_srv_tier_close(&s->tiers->t[j]);
}

static int default_drives(char **drives, size_t *n)
{
    const char *base = getenv("STRATA_DATA_DIR");
    if (!base || !*base)
        base = "./data";
    if (mkdir(base, 0755) != 0 && errno != EEXIST) {
        strata_srv_log(STRATA_LOG_ERR, "cannot create %s: %s", base, strerror(errno));
        return -1;
    }
    for (int i = 1; i <= 4; i++) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/d%d", base, i);
        drives[(*n)++] = strdup(p);
    }
    strata_srv_log(STRATA_LOG_NOTICE, "no drives given: using %s/d{1...4} (2+2)", base);
    return 0;
}

/* Whether --address names an IPv4 loopback host (127.0.0.0/8).  An empty
 * host is the wildcard, and anything unparseable counts as exposed. */
static bool address_is_loopback(const char *address)
{
    const char *colon = strrchr(address, ':');
    char host[64];
    size_t n = colon ? (size_t)(colon - address) : strlen(address);
    struct in_addr a;
    if (n == 0 || n >= sizeof(host))
        return false;
    memcpy(host, address, n);
    host[n] = '\0';
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/*
 * Root credentials from the environment.  The built-in defaults are known
 * to everyone, so they are refused on any address other than loopback (a
 * server reachable from the network would be open to anyone); on loopback
 * they are kept with a warning so a first local run works.  Runs before
 * the drives are opened and the socket is bound.
 */
static int root_creds_pick(struct strata_srv_config *cfg, json_t *conf)
{
    cfg->root_user = getenv("STRATA_ROOT_USER");
    cfg->root_password = getenv("STRATA_ROOT_PASSWORD");
    if (!cfg->root_user || !*cfg->root_user || !cfg->root_password || !*cfg->root_password) {
        /* The environment wins over the config file, as flags do. */
        cfg->root_user = strata_srv_config_value(conf, "root-user");
        cfg->root_password = strata_srv_config_value(conf, "root-password");
    }
    if (!cfg->root_user || !*cfg->root_user || !cfg->root_password || !*cfg->root_password) {
        cfg->root_user = DEFAULT_ROOT_USER;
        cfg->root_password = DEFAULT_ROOT_PASSWORD;
    }
    if (strcmp(cfg->root_user, DEFAULT_ROOT_USER) != 0 ||
        strcmp(cfg->root_password, DEFAULT_ROOT_PASSWORD) != 0)
        return 0;
    if (!address_is_loopback(cfg->address)) {
        strata_srv_log(STRATA_LOG_ERR,
                       "refusing to serve %s with the default root credentials (%s / %s): "
                       "set both STRATA_ROOT_USER and STRATA_ROOT_PASSWORD in the environment, "
                       "e.g. STRATA_ROOT_USER=admin STRATA_ROOT_PASSWORD=\"$(openssl rand -hex 20)\", "
                       "or listen on loopback (--address 127.0.0.1:PORT)",
                       cfg->address, DEFAULT_ROOT_USER, DEFAULT_ROOT_PASSWORD);
        return -1;
    }
    strata_srv_log(STRATA_LOG_WARN,
                   "STRATA_ROOT_USER/STRATA_ROOT_PASSWORD not set: using the default "
                   "credentials %s / %s, accepted on loopback only; set both before "
                   "listening on any other address",
                   DEFAULT_ROOT_USER, DEFAULT_ROOT_PASSWORD);
    return 0;
}

/* STRATA_DEBUG_TRANSITION_CRASH=K (fault tests only): the daemon dies with
 * _exit(137), like kill -9, when a transition reaches step K
 * (STRATA_TR_STEP_*, 1..7). */
static void crash_hook(void *ud, int step)
{
    if (step == (int)(intptr_t)ud)
        _exit(137);
}

static void crash_hook_arm(struct strata_meta *m)
{
    const char *v = getenv("STRATA_DEBUG_TRANSITION_CRASH");
    int k = v ? atoi(v) : 0;
    if (k < 1 || k > STRATA_TR_STEPS)
        return;
    strata_srv_log(STRATA_LOG_WARN, "STRATA_DEBUG_TRANSITION_CRASH=%d: the daemon exits at "
                   "that step of the first transition reaching it", k);
    strata_meta_set_step_hook(m, crash_hook, (void *)(intptr_t)k);
}

/* SUB under each of the first STRATA_PQUEUE_COPIES drives: where a
 * persistent queue keeps its copies.  The count. */
static size_t queue_dirs(const struct strata_srv *s, const char *sub,
                         char (*buf)[4200], const char **dp)
{
    size_t nd = 0;
    for (; nd < STRATA_PQUEUE_COPIES && nd < s->cfg.ndrives; nd++) {
        snprintf(buf[nd], sizeof(buf[nd]), "%s/%s", s->cfg.drives[nd], sub);
        dp[nd] = buf[nd];
    }
    return nd;
}

/* The replication targets and their queues (a copy on each of the first
 * two drives), before HTTP starts so that no write misses them.  0 or -1. */
static int repl_start(struct strata_srv *s)
{
    char dirs[STRATA_PQUEUE_COPIES][4200], err[512];
    const char *dp[STRATA_PQUEUE_COPIES];
    size_t nd = queue_dirs(s, "replication", dirs, dp);
    if (strata_repl_create(s->cfg.repl_specs, s->cfg.nrepl_specs, s->cfg.tier_credentials, dp,
                           nd, s->meta, s->kms, &s->repl, err, sizeof(err)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot start bucket replication: %s", err);
        return -1;
    }
    for (unsigned i = 0; i < s->cfg.nrepl_specs; i++)
        strata_srv_log(STRATA_LOG_INFO, "replication target %s", s->cfg.repl_specs[i]);
    return 0;
}

/* The queue carrying lock changes to remote objects, when a remote tier
 * keeps Object Lock (remote_lock.h).  0 or -1. */
static int remote_lock_start(struct strata_srv *s)
{
    bool any = false;
    for (unsigned i = 0; s->tiers && i < s->tiers->n; i++)
        any |= s->tiers->t[i].url && s->tiers->t[i].lock;
    char dirs[STRATA_PQUEUE_COPIES][4200], err[512];
    const char *dp[STRATA_PQUEUE_COPIES];
    size_t nd = queue_dirs(s, "remote-lock", dirs, dp);
    if (any && strata_remote_lock_start(dp, nd, s->meta, err, sizeof(err)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot start the remote lock queue: %s", err);
        return -1;
    }
    return 0;
}

/* The event targets and their queues (a copy on each of the first two
 * drives), before HTTP starts so that no event is emitted without them.
 * 0 or -1. */
static int notify_start(struct strata_srv *s)
{
    char dirs[STRATA_PQUEUE_COPIES][4200], err[512];
    const char *dp[STRATA_PQUEUE_COPIES];
    size_t nd = queue_dirs(s, "notify", dirs, dp);
    if (strata_notify_create(s->cfg.notify_specs, s->cfg.nnotify_specs,
                             s->cfg.notify_token_specs, s->cfg.nnotify_token_specs, dp, nd,
                             s->cfg.notify_queue_max, &s->notify, err, sizeof(err)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot start event notifications: %s", err);
        return -1;
    }
    for (unsigned i = 0; i < s->cfg.nnotify_specs; i++)
        strata_srv_log(STRATA_LOG_INFO, "notify target %s", s->cfg.notify_specs[i]);
    return 0;
}

struct ilm_flags {
    unsigned long day_s;
    long interval_s; /* -1: derived from day_s */
    unsigned rate;
    unsigned heal_s;
    unsigned orphan_s;
    unsigned move_mbps;
    unsigned due_rate;
    unsigned heal_rate;
};

/* The lifecycle engine, after the HTTP daemon is up (0 = scanner off). */
static int ilm_start(struct strata_srv *s, const struct ilm_flags *f, struct strata_ilm **out)
{
    long interval = f->interval_s;
    if (interval < 0)
        interval = f->day_s / 2 < ILM_INTERVAL_S_DEFAULT ? (long)(f->day_s / 2) : ILM_INTERVAL_S_DEFAULT;
    if (interval == 0 && f->interval_s < 0)
        interval = 1;
    if (interval == 0) {
        strata_srv_log(STRATA_LOG_NOTICE, "lifecycle scanner off (--ilm-interval-seconds 0)");
        return 0;
    }
    /* tmp/ reclaim covers every tier's sets. */
    static struct strata_set *all[STRATA_TIERS_MAX * 64];
    unsigned nall = 0;
    for (unsigned i = 0; i < s->nsets && nall < sizeof(all) / sizeof(all[0]); i++)
        all[nall++] = s->sets[i];
    for (unsigned t = 0; s->tiers && t < s->tiers->n; t++)
        for (unsigned i = 0; i < s->tiers->t[t].nsets && nall < sizeof(all) / sizeof(all[0]); i++)
            all[nall++] = s->tiers->t[t].sets[i];
    struct strata_ilm_opts o = {.meta = s->meta, .sets = all, .nsets = nall,
                                .day_ms = s->cfg.lc_day_ms, .interval_s = (unsigned)interval,
                                .rate_objs = f->rate, .heal_interval_s = f->heal_s,
                                .tmp_age_s = f->orphan_s, .orphan_age_s = f->orphan_s,
                                .tags_decode_cb = strata_srv_tags_decode,
                                .log = strata_srv_logger(),
                                .classes = s->tiers ? &s->tiers->map : NULL,
                                .move_mbps = f->move_mbps, .due_rate = f->due_rate,
                                .heal_rate = f->heal_rate,
                                .event_cb = s->notify ? strata_notify_ilm_event_cb : NULL,
                                .event_ud = s};
    int rc = strata_ilm_create(&o, out);
    if (rc == 0)
        rc = strata_ilm_start(*out);
    if (rc) {
        strata_srv_log(STRATA_LOG_ERR, "cannot start the lifecycle scanner: %s",
                       strata_strerror(rc));
        strata_ilm_destroy(*out);
        *out = NULL;
        strata_srv_stop(s, 0);
        return -1;
    }
    strata_metrics_set_ilm(*out);
    strata_srv_log(STRATA_LOG_INFO, "lifecycle scanner: a pass every %ld s, day %lu s, %u/s",
                   interval, f->day_s, f->rate);
    return 0;
}

/* What the server's flags and its config file set, before they are checked. */
struct server_args {
    struct strata_srv_config *cfg;
    size_t inline_max, cache_mb, body_mb, memtable_mb;
    struct ilm_flags ilm;
    struct strata_srv_tiers *tiers;
    bool tier_flags;  /* a --tier flag was given: the config file's "tiers" do not count */
};

/* A whole decimal number (MiB, seconds) in [min, max] (no sign, no
 * suffix): 0 or -1. */
static int parse_mib(const char *v, unsigned long long min, unsigned long long max,
                     unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long mb = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno || mb < min || mb > max)
        return -1;
    *out = mb;
    return 0;
}

/* One option (long flag name's short code c) with its value, from the
 * command line or the config file.  0, or 2 after printing why. */
static int server_opt(struct server_args *a, int c, const char *v)
{
    switch (c) {
    case 'a': a->cfg->address = v; break;
    case 'u': a->cfg->users_file = v; break;
    case 'c': a->cfg->tls_cert = v; break;
    case 'k': a->cfg->tls_key = v; break;
    case 'd': a->cfg->domain = v; break;
    case 'g':
        if (!strata_s3_region_name_valid(v)) {
            fprintf(stderr, "strata: --region must be 1-31 letters, digits and '-' (as "
                            "us-east-1)\n");
            return 2;
        }
        a->cfg->region = v;
        break;
    case 'i': a->inline_max = strtoull(v, NULL, 10); break;
    case 'l': a->cfg->access_log = v; break;
    case 'm': a->cfg->max_inflight = (unsigned)strtoul(v, NULL, 10); break;
    case 't': a->cfg->conn_timeout_s = (unsigned)strtoul(v, NULL, 10); break;
    case 'T': a->cfg->threads = (unsigned)strtoul(v, NULL, 10); break;
    case 'w': a->cfg->workers = (unsigned)strtoul(v, NULL, 10); break;
    case 'C': a->cache_mb = strtoull(v, NULL, 10); break;
    case 'N': {
        unsigned long long mb;
        if (parse_mib(v, 8, SIZE_MAX >> 21, &mb) != 0) {
            fprintf(stderr, "strata: --memtable-mb must be a number of MiB, at least 8\n");
            return 2;
        }
        a->memtable_mb = mb;
        break;
    }
    case 'e': {
        unsigned long long mb;
        if (parse_mib(v, 0, 1ull << 30, &mb) != 0) {
            fprintf(stderr, "strata: --read-cache-max-mb must be a number of MiB\n");
            return 2;
        }
        a->cfg->read_cached_max = mb << 20;
        break;
    }
    case 'P': a->cfg->conns_per_ip = (unsigned)strtoul(v, NULL, 10); break;
    case 'U': {
        unsigned long long sec;
        if (parse_mib(v, 1, UINT32_MAX, &sec) != 0) {
            fprintf(stderr, "strata: --mpu-retry-seconds must be a number of seconds, "
                            "at least 1\n");
            return 2;
        }
        a->cfg->mpu_retry_s = (unsigned)sec;
        break;
    }
    case 'B': a->body_mb = strtoull(v, NULL, 10); break;
    case 'D': a->ilm.day_s = strtoul(v, NULL, 10); break;
    case 'I': a->ilm.interval_s = strtol(v, NULL, 10); break;
    case 'R': a->ilm.rate = (unsigned)strtoul(v, NULL, 10); break;
    case 'H': a->ilm.heal_s = (unsigned)strtoul(v, NULL, 10); break;
    case 'G': a->ilm.orphan_s = (unsigned)strtoul(v, NULL, 10); break;
    case 'O': a->ilm.move_mbps = (unsigned)strtoul(v, NULL, 10); break;
    case 'J': a->ilm.due_rate = (unsigned)strtoul(v, NULL, 10); break;
    case 'Q': a->ilm.heal_rate = (unsigned)strtoul(v, NULL, 10); break;
    case 'Y':
    case 'Z': {
        char err[512];
        int rc = c == 'Y' ? strata_srv_tiers_add(a->tiers, v, err, sizeof(err))
                          : strata_srv_tiers_class(a->tiers, v, err, sizeof(err));
        if (rc) {
            fprintf(stderr, "strata: %s\n", err);
            return 2;
        }
        struct strata_srv_config *cf = a->cfg;
        if (c == 'Y' && cf->ntier_specs < sizeof(cf->tier_specs) / sizeof(cf->tier_specs[0]))
            cf->tier_specs[cf->ntier_specs++] = v;
        if (c == 'Z' && cf->nclass_specs < sizeof(cf->class_specs) / sizeof(cf->class_specs[0]))
            cf->class_specs[cf->nclass_specs++] = v;
        break;
    }
    case 'j':
    case 'y': {
        struct strata_srv_config *cf = a->cfg;
        char err[512];
        if (c == 'j' && strata_notify_spec_check(v, err, sizeof(err)) != 0) {
            fprintf(stderr, "strata: %s\n", err);
            return 2;
        }
        if (c == 'y' && (!strchr(v, ':') || strchr(v, ':') == v)) {
            fprintf(stderr, "strata: --notify-token-file wants ID:FILE\n");
            return 2;
        }
        const char **arr = c == 'j' ? cf->notify_specs : cf->notify_token_specs;
        unsigned *cnt = c == 'j' ? &cf->nnotify_specs : &cf->nnotify_token_specs;
        if (*cnt == sizeof(cf->notify_specs) / sizeof(cf->notify_specs[0])) {
            fprintf(stderr, "strata: too many --notify-target or --notify-token-file\n");
            return 2;
        }
        arr[(*cnt)++] = v;
        break;
    }
    case OPT_REPL_TARGET: {
        struct strata_srv_config *cf = a->cfg;
        char err[512];
        if (strata_repl_spec_check(v, err, sizeof(err)) != 0) {
            fprintf(stderr, "strata: %s\n", err);
            return 2;
        }
        if (cf->nrepl_specs == sizeof(cf->repl_specs) / sizeof(cf->repl_specs[0])) {
            fprintf(stderr, "strata: too many --replication-target\n");
            return 2;
        }
        cf->repl_specs[cf->nrepl_specs++] = v;
        break;
    }
    case 'q': {
        unsigned long long q;
        if (parse_mib(v, 1, 1ull << 32, &q) != 0) {
            fprintf(stderr, "strata: --notify-queue-max must be a number of events, at least 1\n");
            return 2;
        }
        a->cfg->notify_queue_max = (size_t)q;
        break;
    }
    case OPT_RADOS_CONF:
    case OPT_RADOS_ID:
    case OPT_RADOS_PREFIX:
        if (!*v) {
            fprintf(stderr, "strata: --rados-%s must not be empty\n",
                    c == OPT_RADOS_CONF ? "conf" : c == OPT_RADOS_ID ? "id" : "pool-prefix");
            return 2;
        }
        *(c == OPT_RADOS_CONF ? &a->cfg->rados_conf
          : c == OPT_RADOS_ID ? &a->cfg->rados_id
                              : &a->cfg->rados_pool_prefix) = v;
        break;
    case 'K': a->cfg->kms_key_file = v; break;
    case 'E': a->cfg->tier_credentials = v; break;
    case 'A': a->cfg->admin_users = v; break;
    case 'X': a->cfg->metrics_token_file = v; break;
    case 'o':
        a->cfg->default_ownership = strata_ownership_parse(v, strlen(v));
        if (a->cfg->default_ownership == STRATA_OWN_NONE) {
            fprintf(stderr, "strata: --default-object-ownership must be ObjectWriter, "
                            "BucketOwnerPreferred or BucketOwnerEnforced\n");
            return 2;
        }
        break;
    case 'n':
        if (!*v || strlen(v) >= sizeof(((struct strata_cred *)0)->display_name)) {
            fprintf(stderr, "strata: --root-display-name must be 1 to 127 bytes\n");
            return 2;
        }
        a->cfg->root_display_name = v;
        break;
    case 'v':
        if (parse_level(v) < 0) {
            fprintf(stderr, "strata: unknown log level %s\n", v);
            return 2;
        }
        a->cfg->log_level = parse_level(v);
        break;
    default: return 2;
    }
    return 0;
}

/* Whether argv holds the flag --NAME (before "--"). */
static bool argv_has(int argc, char **argv, const char *flag)
{
    size_t n = strlen(flag);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strncmp(argv[i], flag, n) == 0 && (argv[i][n] == 0 || argv[i][n] == '='))
            return true;
    return false;
}

/* The config file's "tiers" (unless --tier flags replace them) and
 * "storage-classes" arrays.  0, or 2 after printing why. */
static int config_tiers(struct server_args *a, json_t *conf, bool flags)
{
    static const char *const keys[] = {"tiers", "storage-classes"};
    for (int k = flags ? 1 : 0; k < 2; k++) {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(conf, keys[k]), i, v)
            if (server_opt(a, k == 0 ? 'Y' : 'Z', json_string_value(v)) != 0)
                return 2;
    }
    return 0;
}

/* The config file's "notify-targets" and "notify-token-files" (unless the
 * flags replace them).  0, or 2 after printing why. */
static int config_notify(struct server_args *a, json_t *conf, bool targets, bool tokens)
{
    static const char *const keys[] = {"notify-targets", "notify-token-files"};
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *v;
        if (k == 0 ? targets : tokens)
            continue;
        json_array_foreach(json_object_get(conf, keys[k]), i, v)
            if (server_opt(a, k == 0 ? 'j' : 'y', json_string_value(v)) != 0)
                return 2;
    }
    return 0;
}

/* The config file's "replication-targets" (unless the flag replaces them). */
static int config_repl(struct server_args *a, json_t *conf, bool flags)
{
    size_t i;
    json_t *v;
    if (!flags)
        json_array_foreach(json_object_get(conf, "replication-targets"), i, v)
            if (server_opt(a, OPT_REPL_TARGET, json_string_value(v)) != 0)
                return 2;
    return 0;
}

/* The value of --config (or --config=FILE) in argv, or NULL. */
static const char *config_arg(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            path = argv[i] + 9;
    }
    return path;
}

/* SIGHUP: reload the users file, reopen the access log file.  Everything
 * else needs a restart.  A users file that does not load keeps the old
 * table. */
static void reload(struct strata_srv *s, int access_fd)
{
    char errmsg[256] = "";
    if (strata_admin_users_reload(s, errmsg, sizeof(errmsg)) != 0)
        strata_srv_log(STRATA_LOG_ERR, "SIGHUP: cannot reload users, keeping the old ones: %s",
                       errmsg);
    else
        strata_srv_log(STRATA_LOG_NOTICE, "SIGHUP: users reloaded%s%s",
                       s->cfg.users_file ? " from " : "",
                       s->cfg.users_file ? s->cfg.users_file : "");
    if (s->cfg.access_log && access_fd >= 0) {
        /* dup2 swaps the file under the same descriptor: a line being
         * written goes whole to the old file or the new one. */
        int fd = open(s->cfg.access_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, access_fd) < 0)
            strata_srv_log(STRATA_LOG_ERR, "SIGHUP: cannot reopen %s: %s", s->cfg.access_log,
                           strerror(errno));
        else
            strata_srv_log(STRATA_LOG_NOTICE, "SIGHUP: reopened %s", s->cfg.access_log);
        if (fd >= 0)
            close(fd);
    }
    strata_srv_log(STRATA_LOG_NOTICE, "SIGHUP: other settings need a restart");
}

static json_t *config_doc;

static int cmd_server(int argc, char **argv, bool print_only)
{
    static const struct option opts[] = {
        {"address", required_argument, NULL, 'a'},  {"users", required_argument, NULL, 'u'},
        {"tls-cert", required_argument, NULL, 'c'}, {"tls-key", required_argument, NULL, 'k'},
        {"domain", required_argument, NULL, 'd'},   {"inline-max", required_argument, NULL, 'i'},
        {"region", required_argument, NULL, 'g'},
        {"access-log", required_argument, NULL, 'l'},
        {"max-inflight", required_argument, NULL, 'm'},
        {"timeout", required_argument, NULL, 't'},  {"log-level", required_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 'T'},  {"cache-mb", required_argument, NULL, 'C'},
        {"memtable-mb", required_argument, NULL, 'N'},
        {"read-cache-max-mb", required_argument, NULL, 'e'},
        {"workers", required_argument, NULL, 'w'},
        {"max-conns-per-ip", required_argument, NULL, 'P'},
        {"body-memory-mb", required_argument, NULL, 'B'},
        {"lc-day-seconds", required_argument, NULL, 'D'},
        {"ilm-interval-seconds", required_argument, NULL, 'I'},
        {"ilm-rate", required_argument, NULL, 'R'},
        {"heal-interval-seconds", required_argument, NULL, 'H'},
        {"orphan-grace-seconds", required_argument, NULL, 'G'},
        {"ilm-move-mbps", required_argument, NULL, 'O'},
        {"ilm-due-rate", required_argument, NULL, 'J'},
        {"heal-rate", required_argument, NULL, 'Q'},
        {"tier", required_argument, NULL, 'Y'},
        {"storage-class", required_argument, NULL, 'Z'},
        {"notify-target", required_argument, NULL, 'j'},
        {"notify-token-file", required_argument, NULL, 'y'},
        {"notify-queue-max", required_argument, NULL, 'q'},
        {"replication-target", required_argument, NULL, OPT_REPL_TARGET},
        {"rados-conf", required_argument, NULL, OPT_RADOS_CONF},
        {"rados-id", required_argument, NULL, OPT_RADOS_ID},
        {"rados-pool-prefix", required_argument, NULL, OPT_RADOS_PREFIX},
        {"kms-key-file", required_argument, NULL, 'K'},
        {"tier-credentials", required_argument, NULL, 'E'},
        {"sse-c-allow-http", no_argument, NULL, 'S'},
        {"kms-rewrap", no_argument, NULL, 'W'},
        {"mpu-retry-seconds", required_argument, NULL, 'U'},
        {"config", required_argument, NULL, 'F'},   {"print-config", no_argument, NULL, 'p'},
        {"metrics-public", no_argument, NULL, 'M'},
        {"metrics-token-file", required_argument, NULL, 'X'},
        {"admin-users", required_argument, NULL, 'A'},
        {"default-object-ownership", required_argument, NULL, 'o'},
        {"root-display-name", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    struct strata_srv s;
    memset(&s, 0, sizeof(s));
    s.cfg.address = "127.0.0.1:9000";
    s.cfg.region = "us-east-1"; /* AWS's default: what SDKs sign for unless told */
    s.cfg.max_inflight = 256;
    s.cfg.conn_timeout_s = 120;
    s.cfg.log_level = STRATA_LOG_INFO;
    s.cfg.read_cached_max = STRATA_SRV_READ_CACHED_MAX;
    s.cfg.mpu_retry_s = STRATA_MPU_RETRY_S_DEFAULT;
    s.cfg.default_ownership = STRATA_OWN_ENFORCED;
    s.cfg.rados_id = "admin";
    s.cfg.rados_pool_prefix = "strata";
    static struct strata_srv_tiers tiers;
    strata_srv_tiers_init(&tiers);
    s.tiers = &tiers;
    struct server_args a = {.cfg = &s.cfg, .cache_mb = CACHE_MB_DEFAULT,
                            .memtable_mb = STRATA_MEMTABLE_MB_DEFAULT,
                            .body_mb = BODY_MEMORY_MB_DEFAULT, .tiers = &tiers,
                            .ilm = {.day_s = LC_DAY_S_DEFAULT, .interval_s = -1,
                                    .rate = ILM_RATE_DEFAULT, .heal_s = HEAL_INTERVAL_S_DEFAULT,
                                    .orphan_s = ORPHAN_GRACE_S_DEFAULT,
                                    .move_mbps = ILM_MOVE_MBPS_DEFAULT,
                                    .due_rate = ILM_DUE_RATE_DEFAULT,
                                    .heal_rate = HEAL_RATE_DEFAULT}};
    /* The config file first, so that every flag wins over it. */
    s.cfg.config_file = config_arg(argc, argv);
    json_t *conf = NULL;
    if (s.cfg.config_file) {
        const char *keys[sizeof(opts) / sizeof(opts[0])];
        size_t nkeys = 0;
        for (size_t i = 0; opts[i].name; i++)
            if (opts[i].has_arg == required_argument && opts[i].val != 'F' &&
                opts[i].val != 'Y' && opts[i].val != 'Z' && opts[i].val != 'j' &&
                opts[i].val != 'y' && opts[i].val != OPT_REPL_TARGET)
                keys[nkeys++] = opts[i].name;
        char err[512];
        conf = strata_srv_config_load(s.cfg.config_file, keys, nkeys, err, sizeof(err));
        /* Its strings are the configuration's until exit: kept reachable
         * here so no early error return leaks it. */
        config_doc = conf;
        if (!conf) {
            fprintf(stderr, "strata: bad --config: %s\n", err);
            return 2;
        }
        s.cfg.metrics_public = json_is_true(json_object_get(conf, "metrics-public"));
        s.cfg.sse_c_allow_http = json_is_true(json_object_get(conf, "sse-c-allow-http"));
        for (size_t i = 0; i < nkeys; i++) {
            const char *v = strata_srv_config_value(conf, keys[i]);
            int val = 0;
            for (size_t j = 0; opts[j].name; j++)
                if (strcmp(opts[j].name, keys[i]) == 0)
                    val = opts[j].val;
            if (v && server_opt(&a, val, v) != 0) {
                fprintf(stderr, "strata: bad --config %s: \"%s\"\n", s.cfg.config_file, keys[i]);
                return 2;
            }
        }
        if (config_tiers(&a, conf, argv_has(argc, argv, "--tier")) != 0)
            return 2;
        if (config_notify(&a, conf, argv_has(argc, argv, "--notify-target"),
                          argv_has(argc, argv, "--notify-token-file")) != 0)
            return 2;
        if (config_repl(&a, conf, argv_has(argc, argv, "--replication-target")) != 0)
            return 2;
    }
    bool rewrap = false;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'F': break; /* read above */
        case 'p': print_only = true; break;
        case 'S': s.cfg.sse_c_allow_http = true; break;
        case 'W': rewrap = true; break;
        case 'M': s.cfg.metrics_public = true; break;
        case 'h': usage(stdout); return 0;
        default:
            if (c == '?' || server_opt(&a, c, optarg) != 0) {
                if (c == '?')
                    usage(stderr);
                return 2;
            }
        }
    }
    strata_srv_log_set_level(s.cfg.log_level);
    size_t inline_max = a.inline_max, cache_mb = a.cache_mb, body_mb = a.body_mb;
    struct ilm_flags ilm = a.ilm;
    s.cfg.cache_mb = cache_mb;
    s.cfg.memtable_mb = a.memtable_mb;
    if ((s.cfg.tls_cert == NULL) != (s.cfg.tls_key == NULL)) {
        fprintf(stderr, "strata: --tls-cert and --tls-key go together\n");
        return 2;
    }
    if (s.cfg.max_inflight == 0)
        s.cfg.max_inflight = 1;
    if (body_mb == 0 || body_mb > (SIZE_MAX >> 20)) {
        fprintf(stderr, "strata: --body-memory-mb must be at least 1\n");
        return 2;
    }
    s.cfg.body_memory = body_mb << 20;
    if (ilm.day_s == 0 || ilm.interval_s < -1) {
        fprintf(stderr, "strata: --lc-day-seconds must be at least 1, "
                        "--ilm-interval-seconds at least 0\n");
        return 2;
    }
    s.cfg.lc_day_ms = (int64_t)ilm.day_s * 1000;
    s.cfg.ilm_interval_s = ilm.interval_s; /* for the config dump */
    s.cfg.ilm_rate = ilm.rate;
    s.cfg.heal_interval_s = ilm.heal_s;
    s.cfg.orphan_grace_s = ilm.orphan_s;
    s.cfg.ilm_move_mbps = ilm.move_mbps;
    s.cfg.ilm_due_rate = ilm.due_rate;
    s.cfg.heal_rate = ilm.heal_rate;
    s.cfg.inline_max = inline_max ? inline_max : STRATA_INLINE_MAX_DEFAULT; /* for the config dump */
    /* Before any drive is touched and long before binding. */
    if (root_creds_pick(&s.cfg, conf) != 0)
        return 1;
    static char *drives[DRIVES_MAX];
    size_t nd = 0;
    for (int i = optind; i < argc; i++)
        if (strata_drive_args_expand(argv[i], drives, &nd, DRIVES_MAX) != 0) {
            fprintf(stderr, "strata: bad drive argument %s\n", argv[i]);
            free_drives(drives, nd);
            return 2;
        }
    /* Drive arguments replace the config file's "drives". */
    size_t i_conf;
    json_t *d_conf, *conf_drives = nd == 0 && conf ? json_object_get(conf, "drives") : NULL;
    json_array_foreach(conf_drives, i_conf, d_conf)
        if (strata_drive_args_expand(json_string_value(d_conf), drives, &nd, DRIVES_MAX) != 0) {
            fprintf(stderr, "strata: bad drive %s in %s\n", json_string_value(d_conf),
                    s.cfg.config_file);
            free_drives(drives, nd);
            return 2;
        }
    struct strata_srv_tier *hot = strata_srv_tiers_find(&tiers, STRATA_TIER_HOT);
    if (hot && nd > 0) {
        fprintf(stderr, "strata: give the hot tier's drives either as arguments or with "
                        "--tier hot:..., not both\n");
        free_drives(drives, nd);
        return 2;
    }
    for (size_t i = 0; hot && i < hot->ndrives && nd < DRIVES_MAX; i++)
        drives[nd++] = strdup(hot->drives[i]);
    if (nd == 0 && !s.cfg.rados_conf && default_drives(drives, &nd) != 0)
        return 1;
    s.cfg.drives = drives;
    s.cfg.ndrives = nd;
    if (print_only) {
        json_t *eff = strata_srv_config_json(&s.cfg);
        int prc = eff && json_dumpf(eff, stdout, JSON_INDENT(2)) == 0 ? 0 : 1;
        putchar('\n');
        json_decref(eff);
        free_drives(drives, nd);
        return prc; /* config_doc stays reachable: freed at exit */
    }
    if (s.cfg.rados_conf && strata_srv_rados_conflicts(&s.cfg, nd) != 0) {
        free_drives(drives, nd);
        return 2;
    }

    int access_fd = -1;
    if (s.cfg.access_log) {
        access_fd = open(s.cfg.access_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (access_fd < 0) {
            fprintf(stderr, "strata: cannot open %s: %s\n", s.cfg.access_log, strerror(errno));
            free_drives(drives, nd);
            return 1;
        }
        strata_srv_access_log_open(access_fd);
    }
    char errmsg[256] = "";
    struct strata_creds *creds = NULL;
    if (strata_creds_load_named(s.cfg.root_user, s.cfg.root_password, s.cfg.root_display_name,
                                s.cfg.users_file, &creds, errmsg, sizeof(errmsg)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot load users: %s", errmsg);
        free_drives(drives, nd);
        return 1;
    }
    atomic_store(&s.creds, creds);
    if (s.cfg.kms_key_file &&
        strata_kms_load(s.cfg.kms_key_file, &s.kms, errmsg, sizeof(errmsg)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot load --kms-key-file: %s", errmsg);
        strata_creds_destroy(creds);
        free_drives(drives, nd);
        return 1;
    }
    static struct strata_remote_creds tier_creds;
    if (s.cfg.tier_credentials &&
        strata_remote_creds_load(s.cfg.tier_credentials, &tier_creds, errmsg, sizeof(errmsg))) {
        strata_srv_log(STRATA_LOG_ERR, "cannot load --tier-credentials: %s", errmsg);
        strata_creds_destroy(creds);
        free_drives(drives, nd);
        return 1;
    }
    tiers.creds = &tier_creds;
    if (s.cfg.metrics_token_file &&
        strata_metrics_token_load(s.cfg.metrics_token_file, &s.metrics_token, errmsg,
                                  sizeof(errmsg)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot load --metrics-token-file: %s", errmsg);
        strata_kms_free(s.kms);
        strata_creds_destroy(creds);
        free_drives(drives, nd);
        return 1;
    }
    int rc = 1;
    /* Block the stop signals before any thread starts (the drive sets' probe
     * threads, RocksDB's, the audit syncers', MHD's), so every thread
     * inherits the mask and only sigtimedwait() below sees the signals: one
     * thread left unblocked would take a SIGTERM's default action and kill
     * the daemon without a clean stop. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    int orc = open_storage(&s, inline_max, cache_mb, a.memtable_mb);
    if (orc == 2)
        rc = 2; /* an unusable --rados-conf file: as a usage error */
    if (orc == 0) {
        crash_hook_arm(s.meta);
        struct strata_ilm *engine = NULL;
        int wrc = strata_srv_caches_watch(&s);
        if (wrc)
            strata_srv_log(STRATA_LOG_ERR, "cannot watch for other gateways' bucket changes: %s",
                           strata_strerror(wrc));
        if (wrc == 0 && notify_start(&s) == 0 && repl_start(&s) == 0 &&
            remote_lock_start(&s) == 0 && strata_restorer_start(&s) == 0 &&
            strata_srv_start(&s) == 0 &&
            ilm_start(&s, &ilm, &engine) == 0) {
            if (s.cfg.rados_conf)
                printf("Strata S3 endpoint: %s://%s (RADOS pools %s.* of %s)\n",
                       s.cfg.tls_cert ? "https" : "http", s.cfg.address,
                       s.cfg.rados_pool_prefix, s.cfg.rados_conf);
            else
                printf("Strata S3 endpoint: %s://%s (%zu drives, %u set%s)\n",
                       s.cfg.tls_cert ? "https" : "http", s.cfg.address, nd, s.nsets,
                       s.nsets == 1 ? "" : "s");
            fflush(stdout);
            struct strata_rewrap *rw = NULL;
            if (rewrap && strata_rewrap_start(&s, &rw) != 0)
                strata_srv_log(STRATA_LOG_ERR, "--kms-rewrap needs --kms-key-file");
            int sig = 0;
            /* Between signals, every 50 ms: access-log lines the event
             * threads hold go out (log.c). */
            const struct timespec flush_every = {.tv_sec = 0, .tv_nsec = 50 * 1000000L};
            for (;;) {
                sig = sigtimedwait(&set, NULL, &flush_every);
                if (sig < 0) {
                    if (errno != EAGAIN && errno != EINTR)
                        break;
                    strata_srv_access_log_flush();
                    continue;
                }
                if (sig != SIGUSR1 && sig != SIGHUP)
                    break;
                if (sig == SIGHUP) {
                    strata_srv_access_log_flush(); /* the lines so far: the old file */
                    reload(&s, access_fd);
                    continue;
                }
                strata_srv_log(STRATA_LOG_NOTICE, "SIGUSR1: lifecycle scanner pass requested%s",
                               engine ? "" : ", but the scanner is off");
                if (engine)
                    strata_ilm_kick(engine);
            }
            strata_rewrap_stop(rw); /* before the storage goes */
            strata_srv_log(STRATA_LOG_NOTICE, "signal %d: stopping (in-flight requests finish)",
                           sig);
            strata_ilm_stop(engine, true); /* between two objects */
            strata_srv_stop(&s, 30);
            strata_srv_access_log_flush(); /* every request has completed */
            strata_restorer_stop(&s); /* after HTTP: nothing queues any more */
            strata_ilm_destroy(engine); /* after HTTP: /metrics reads its stats */
            strata_notify_destroy(s.notify); /* after HTTP: nothing emits any more */
            s.notify = NULL;
            strata_repl_destroy(s.repl); /* after HTTP: nothing queues any more */
            s.repl = NULL;
            strata_remote_lock_stop();
            rc = 0;
            strata_srv_log(STRATA_LOG_NOTICE, "HTTP stopped; closing metadata and drives");
        }
        strata_restorer_stop(&s); /* a start that failed half-way */
        strata_notify_destroy(s.notify);
        s.notify = NULL;
        strata_repl_destroy(s.repl);
        s.repl = NULL;
        strata_remote_lock_stop();
        strata_srv_caches_unwatch(&s);
        close_storage(&s);
    }
    strata_creds_destroy(atomic_load(&s.creds));
    strata_admin_users_fini();
    json_decref(config_doc);
    config_doc = NULL;
    strata_kms_free(s.kms);
    strata_metrics_token_free(s.metrics_token);
    free_drives(drives, nd);
    strata_srv_tiers_fini(&tiers);
    strata_remote_creds_fini(&tier_creds);
    if (rc == 0)
        strata_srv_log(STRATA_LOG_NOTICE, "stopped cleanly");
    return rc;
}

/* ---- selftest ------------------------------------------------------------ */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void md5_hex(const uint8_t *buf, size_t len, char out[33])
{
    uint8_t md[16];
    unsigned n = 0;
    EVP_Digest(buf, len, md, &n, EVP_md5(), NULL);
    strata_hex_encode(md, 16, out);
}

static double secs_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* One object: put, read back in 1 MiB steps, compare, delete, check gone. */
static int selftest_one(struct strata_meta *m, const uint8_t *data, size_t size, uint8_t *rbuf)
{
    char key[64], want[33];
    snprintf(key, sizeof(key), "dir/obj-%zu", size);
    md5_hex(data, size, want);
    struct strata_put_opts po = {.bucket = "selftest", .key = key, .size = size};
    struct strata_put *p = NULL;
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = strata_obj_put_begin(m, &po, &p);
    for (size_t off = 0; rc == 0 && off < size; off += 1u << 20)
        rc = strata_obj_put_write(p, data + off, size - off < (1u << 20) ? size - off : 1u << 20);
    if (rc) {
        strata_obj_put_abort(p);
        printf("  %9zu bytes: put FAILED (%s)\n", size, strata_errname(rc));
        return -1;
    }
    rc = strata_obj_put_commit(p, &info);
    double tput = secs_since(&t0);
    if (rc || strcmp(info.etag, want) != 0 || info.size != size) {
        printf("  %9zu bytes: commit FAILED (%s, etag %s want %s)\n", size, strata_errname(rc),
               info.etag, want);
        strata_obj_info_fini(&info);
        return -1;
    }
    strata_obj_info_fini(&info);
    struct strata_get *g = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = strata_obj_get_open(m, "selftest", key, NULL, &info, &g);
    bool same = rc == 0 && info.size == size;
    for (size_t off = 0; same && off < size; off += 1u << 20) {
        size_t n = size - off < (1u << 20) ? size - off : 1u << 20;
        rc = strata_obj_get_read(g, off, rbuf, n);
        same = rc == 0 && memcmp(rbuf, data + off, n) == 0;
    }
    double tget = secs_since(&t0);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    if (!same) {
        printf("  %9zu bytes: read back MISMATCH (%s)\n", size, strata_errname(rc));
        return -1;
    }
    rc = strata_obj_delete(m, "selftest", key, NULL, NULL);
    int hrc = strata_obj_head(m, "selftest", key, NULL, &info);
    strata_obj_info_fini(&info);
    if (rc || hrc != STRATA_ENOTFOUND) {
        printf("  %9zu bytes: delete FAILED (%s, head after: %s)\n", size, strata_errname(rc),
               strata_errname(hrc));
        return -1;
    }
    double mb = (double)size / 1048576.0;
    printf("  %9zu bytes: ok  etag %s  put %.1f ms (%.0f MiB/s)  get %.1f ms (%.0f MiB/s)\n",
           size, want, tput * 1e3, tput > 0 ? mb / tput : 0, tget * 1e3, tget > 0 ? mb / tget : 0);
    return 0;
}

static int cmd_selftest(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : "/tmp";
    char root[4096];
    snprintf(root, sizeof(root), "%s/strata-selftest-XXXXXX", base);
    if (!mkdtemp(root)) {
        fprintf(stderr, "strata selftest: cannot create a directory in %s: %s\n", base,
                strerror(errno));
        return 1;
    }
    static const size_t sizes[] = {0, 1, 4095, 128 * 1024, 128 * 1024 + 1, (1u << 20) + 7,
                                   (8u << 20) + 3};
    size_t maxsz = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
    uint8_t *data = malloc(maxsz), *rbuf = malloc(1u << 20);
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
    for (size_t i = 0; data && i < maxsz; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        data[i] = (uint8_t)x;
    }
    struct strata_srv s;
    memset(&s, 0, sizeof(s));
    static char *drives[4];
    for (int i = 0; i < 4; i++) {
        char p[4200];
        snprintf(p, sizeof(p), "%s/d%d", root, i + 1);
        drives[i] = strdup(p);
    }
    s.cfg.drives = drives;
    s.cfg.ndrives = 4;
    int failures = 0;
    printf("strata selftest in %s (4 drives, 2+2)\n", root);
    if (!data || !rbuf || open_storage(&s, 0, 0, 0) != 0) {
        failures = 1;
    } else {
        struct strata_bucket_info bi = {.name = "selftest", .owner = "selftest",
                                        .region = "us-east-1"};
        int rc = strata_meta_bucket_create(s.meta, &bi);
        if (rc) {
            printf("  bucket create FAILED (%s)\n", strata_errname(rc));
            failures++;
        }
        for (size_t i = 0; rc == 0 && i < sizeof(sizes) / sizeof(sizes[0]); i++)
            if (selftest_one(s.meta, data, sizes[i], rbuf) != 0)
                failures++;
        if (rc == 0 && (rc = strata_meta_bucket_delete(s.meta, "selftest")) != 0) {
            printf("  bucket delete FAILED (%s)\n", strata_errname(rc));
            failures++;
        }
        close_storage(&s);
    }
    free_drives(drives, 4);
    free(data);
    free(rbuf);
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    printf("selftest %s: %d failure%s\n", failures ? "FAILED" : "passed", failures,
           failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}

/* strata admin kms rotate --kms-key-file FILE [--name NAME]: a new active
 * master key in the key file (restart the daemon with --kms-rewrap). */
static int cmd_admin(int argc, char **argv)
{
    const char *file = NULL, *name = NULL;
    if (argc < 3 || strcmp(argv[1], "kms") != 0 || strcmp(argv[2], "rotate") != 0) {
        fprintf(stderr, "strata: usage: strata admin kms rotate --kms-key-file FILE "
                        "[--name NAME]\n");
        return 2;
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--kms-key-file") == 0)
            file = argv[i + 1];
        else if (strcmp(argv[i], "--name") == 0)
            name = argv[i + 1];
        else
            file = NULL, i = argc;
    }
    if (!file || (argc - 3) % 2) {
        fprintf(stderr, "strata: usage: strata admin kms rotate --kms-key-file FILE "
                        "[--name NAME]\n");
        return 2;
    }
    char msg[512];
    if (strata_kms_rotate(file, name, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "strata: %s\n", msg);
        return 1;
    }
    printf("new active key %s in %s; restart the daemon with --kms-rewrap to re-wrap "
           "older objects\n", msg, file);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    /* Request buffers of 100 KiB-1 MiB are allocated and freed all the time
     * by the event threads and storage workers.  With glibc's defaults each
     * thread arena hands freed memory back to the kernel and every new
     * request faults in freshly zeroed pages (10% of the CPU of small GETs
     * in perf).  Keep freed memory for reuse instead. */
    mallopt(M_MMAP_THRESHOLD, 16 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    xmlInitParser();
    strata_crash_install();
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("strata %s\n", STRATA_VERSION);
        return 0;
    }
    if (strcmp(cmd, "server") == 0)
        return cmd_server(argc - 1, argv + 1, false);
    /* "strata --print-config [server options]" */
    if (strcmp(cmd, "--print-config") == 0)
        return cmd_server(argc, argv, true);
    if (strcmp(cmd, "selftest") == 0)
        return cmd_selftest(argc - 1, argv + 1);
    if (strcmp(cmd, "audit") == 0)
        return strata_cli_audit(argc - 1, argv + 1);
    if (strcmp(cmd, "rados") == 0)
        return strata_cli_rados(argc - 1, argv + 1);
    if (strcmp(cmd, "admin") == 0)
        /* "kms rotate" edits a local key file; everything else talks to a
         * running daemon over the admin API. */
        return argc > 2 && strcmp(argv[2], "kms") == 0 ? cmd_admin(argc - 1, argv + 1)
                                                        : strata_admin_cli(argc - 1, argv + 1);
    fprintf(stderr, "strata: unknown command %s\n", cmd);
    usage(stderr);
    return 2;
}
