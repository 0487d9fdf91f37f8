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
#include "options.h"
#include "pipeline.h"
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
#define DEFAULT_ROOT_USER "strataadmin"
#define DEFAULT_ROOT_PASSWORD "strataadmin"

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
"          cluster, or check them (strata rados --help).\n");
    strata_srv_opts_usage(f);
    fprintf(f,
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
"  STRATA_DEBUG_RESTORE_CRASH N  fault tests only: the daemon exits at once\n"
"                        (_exit 137) when a restore's copy made its N-th piece\n"
"  STRATA_DEBUG_REPL_QUEUE_DELAY_MS MS  ordering tests only: each replication\n"
"                        change is queued MS after it commits (a slow gateway)\n"
"\n"
"Signals: SIGTERM/SIGINT stop accepting, let in-flight requests finish, close\n"
"the metadata and drive sets, and exit 0.  SIGUSR1 starts a lifecycle scanner\n"
"pass now (its counters are the strata_ilm_* lines of GET /metrics).  SIGHUP\n"
"reloads the --users file and reopens the --access-log file; other settings\n"
"need a restart.\n",
            DEFAULT_ROOT_USER, DEFAULT_ROOT_PASSWORD);
}

static void free_drives(char **drives, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(drives[i]);
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
/* Close the first n drive sets (fewer on a failed open) and free the array. */
static void drop_sets(struct strata_srv *s, unsigned n)
{
    for (unsigned j = 0; j < n; j++)
        strata_set_close(s->sets[j]);
    free(s->sets);
    s->sets = NULL;
    s->nsets = 0;
}

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
            drop_sets(s, i);
            return -1;
        }
    }
    struct strata_tier *tiers[STRATA_TIERS_MAX];
    unsigned ntiers = 0;
    if (open_tiers(s, tiers, &ntiers) != 0) {
        drop_sets(s, s->nsets);
        return -1;
    }
    struct strata_meta_opts mo = {.inline_max = inline_max, .block_cache_mb = cache_mb,
                                  .object_cache_mb = s->cfg.object_cache_mb,
                                  .data_cache_mb = s->cfg.data_cache_mb,
                                  .data_cache_on_write = s->cfg.data_cache_on_write,
                                  .small_object_log = s->cfg.small_object_log,
                                  .slog_segment_mb = s->cfg.slog_segment_mb,
                                  .memtable_mb = memtable_mb,
                                  .log = strata_srv_logger(), .tiers = tiers,
                                  .ntiers = ntiers, .mpu_retry_s = s->cfg.mpu_retry_s};
    struct strata_errinfo ei = {.drive = -1};
    int rc = strata_meta_open(s->sets, s->nsets, &mo, &s->meta, &ei);
    if (rc) {
        strata_srv_log(STRATA_LOG_ERR, "cannot open metadata: %s%s%s", strata_strerror(rc),
                       ei.msg[0] ? ": " : "", ei.msg);
        drop_sets(s, s->nsets);
        for (unsigned j = 0; s->tiers && j < s->tiers->n; j++)
            strata_srv_tier_close(&s->tiers->t[j]);
        return -1;
    }
    if (strata_srv_tiers_archive(s->tiers, s->meta) != 0) {
        close_storage(s);
        return -1;
    }
    return 0;
}

static void close_storage(struct strata_srv *s)
{
    if (s->meta)
        strata_meta_close(s->meta);
    s->meta = NULL;
    drop_sets(s, s->sets ? s->nsets : 0);
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
static int root_creds_pick(struct strata_srv_config *cfg)
{
    const char *user = getenv("STRATA_ROOT_USER"), *password = getenv("STRATA_ROOT_PASSWORD");
    /* The environment wins over the config file's root keys (in cfg now),
     * as flags do. */
    if (user && *user && password && *password) {
        cfg->root_user = user;
        cfg->root_password = password;
    }
    if (!cfg->root_user || !*cfg->root_user || !cfg->root_password || !*cfg->root_password) {
        cfg->root_user = DEFAULT_ROOT_USER;
        cfg->root_password = DEFAULT_ROOT_PASSWORD;
    }
    if (strcmp(cfg->root_user, DEFAULT_ROOT_USER) != 0 ||
        strcmp(cfg->root_password, DEFAULT_ROOT_PASSWORD) != 0)
        return 0;
    if (!address_is_loopback(cfg->http.address)) {
        strata_srv_log(STRATA_LOG_ERR,
                       "refusing to serve %s with the default root credentials (%s / %s): "
                       "set both STRATA_ROOT_USER and STRATA_ROOT_PASSWORD in the environment, "
                       "e.g. STRATA_ROOT_USER=admin STRATA_ROOT_PASSWORD=\"$(openssl rand -hex 20)\", "
                       "or listen on loopback (--address 127.0.0.1:PORT)",
                       cfg->http.address, DEFAULT_ROOT_USER, DEFAULT_ROOT_PASSWORD);
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
    const char *r = getenv("STRATA_DEBUG_RESTORE_CRASH");
    if (r && atoi(r) > 0) {
        strata_srv_log(STRATA_LOG_WARN, "STRATA_DEBUG_RESTORE_CRASH=%d: the daemon exits when a "
                       "restore's copy made that piece", atoi(r));
        strata_meta_test_restore_crash((unsigned)atoi(r));
    }
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
                           nd, s->meta, s->kms, s->cfg.repl_sealed_retry_s, &s->repl, err,
                           sizeof(err)) != 0) {
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
                             s->cfg.notify_queue_max, s->meta, &s->notify, err,
                             sizeof(err)) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "cannot start event notifications: %s", err);
        return -1;
    }
    for (unsigned i = 0; i < s->cfg.nnotify_specs; i++)
        strata_srv_log(STRATA_LOG_INFO, "notify target %s", s->cfg.notify_specs[i]);
    return 0;
}

/* The lifecycle engine, after the HTTP daemon is up (0 = scanner off). */
static int ilm_start(struct strata_srv *s, struct strata_ilm **out)
{
    const struct strata_srv_config *f = &s->cfg;
    unsigned long day_s = (unsigned long)(f->lc_day_ms / 1000);
    long interval = f->ilm_interval_s;
    if (interval < 0)
        interval = day_s / 2 < STRATA_ILM_INTERVAL_S_DEFAULT ? (long)(day_s / 2)
                                                             : STRATA_ILM_INTERVAL_S_DEFAULT;
    if (interval == 0 && f->ilm_interval_s < 0)
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
                                .rate_objs = f->ilm_rate, .heal_interval_s = f->heal_interval_s,
                                .tmp_age_s = f->orphan_grace_s, .orphan_age_s = f->orphan_grace_s,
                                .tags_decode_cb = strata_srv_tags_decode,
                                .log = strata_srv_logger(),
                                .classes = s->tiers ? &s->tiers->map : NULL,
                                .move_mbps = f->ilm_move_mbps, .due_rate = f->ilm_due_rate,
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
                   interval, day_s, f->ilm_rate);
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
    struct strata_srv s;
    memset(&s, 0, sizeof(s));
    s.http.pipe = &strata_daemon_pipeline; /* what the transport serves */
    s.repl_s3 = &strata_repl_s3_hooks; /* what the S3 handlers call of replication */
    static struct strata_srv_tiers tiers;
    strata_srv_tiers_init(&tiers);
    s.tiers = &tiers;
    struct strata_srv_opts o = {.cfg = &s.cfg, .tiers = &tiers, .print_config = print_only};
    char err[1024];
    if (strata_srv_opts_defaults(&o, err, sizeof(err)) != 0) {
        fprintf(stderr, "strata: %s\n", err);
        return 2;
    }
    /* The config file first, so that every flag wins over it. */
    s.cfg.config_file = config_arg(argc, argv);
    json_t *conf = NULL;
    if (s.cfg.config_file) {
        conf = strata_srv_config_load(s.cfg.config_file, err, sizeof(err));
        /* Its strings are the configuration's until exit: kept reachable
         * here so no early error return leaks it. */
        config_doc = conf;
        if (!conf) {
            fprintf(stderr, "strata: bad --config: %s\n", err);
            return 2;
        }
        if (strata_srv_opts_apply_file(&o, conf, s.cfg.config_file, argc, argv, err,
                                       sizeof(err)) != 0) {
            fprintf(stderr, "strata: %s\n", err);
            return 2;
        }
    }
    int arc = strata_srv_opts_parse_argv(&o, argc, argv, err, sizeof(err));
    if (arc == -1)
        fprintf(stderr, "strata: %s\n", err);
    if (arc == -2)
        usage(stderr);
    if (arc != 0)
        return 2;
    if (o.help) {
        usage(stdout);
        return 0;
    }
    print_only = o.print_config;
    bool rewrap = o.kms_rewrap;
    strata_srv_log_set_level(s.cfg.log_level);
    if ((s.cfg.http.tls_cert == NULL) != (s.cfg.http.tls_key == NULL)) {
        fprintf(stderr, "strata: --tls-cert and --tls-key go together\n");
        return 2;
    }
    if (s.cfg.http.max_inflight == 0)
        s.cfg.http.max_inflight = 1;
    if (s.cfg.inline_max == 0)
        s.cfg.inline_max = STRATA_INLINE_MAX_DEFAULT;
    /* Before any drive is touched and long before binding. */
    if (root_creds_pick(&s.cfg) != 0)
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
    atomic_store(&s.http.creds, creds);
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
        strata_metrics_token_load(s.cfg.metrics_token_file, &s.http.metrics_token, errmsg,
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
    int orc = open_storage(&s, s.cfg.inline_max, s.cfg.cache_mb, s.cfg.memtable_mb);
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
            ilm_start(&s, &engine) == 0) {
            if (s.cfg.rados_conf)
                printf("Strata S3 endpoint: %s://%s (RADOS pools %s.* of %s)\n",
                       s.cfg.http.tls_cert ? "https" : "http", s.cfg.http.address,
                       s.cfg.rados_pool_prefix, s.cfg.rados_conf);
            else
                printf("Strata S3 endpoint: %s://%s (%zu drives, %u set%s)\n",
                       s.cfg.http.tls_cert ? "https" : "http", s.cfg.http.address, nd, s.nsets,
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
    strata_creds_destroy(atomic_load(&s.http.creds));
    strata_admin_users_fini();
    json_decref(config_doc);
    config_doc = NULL;
    strata_kms_free(s.kms);
    strata_metrics_token_free(s.http.metrics_token);
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
