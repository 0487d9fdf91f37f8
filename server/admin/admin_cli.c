/*
 * admin_cli.c - "strata admin" (contract in admin_cli.h): flags, the
 * signed HTTP call (strata_presign_v4 + libcurl) and the commands.  The
 * human-readable tables are in admin_cli_print.c.  Runs in the CLI
 * process only.
 */
#include "admin_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "admin_cli_print.h"
#include "auth.h"
#include "sbuf.h"

#define REPLY_MAX (16u << 20)
#define PRESIGN_EXPIRES_S 300

struct cli {
    const char *base; /* endpoint without a trailing '/' */
    char host[256];   /* the Host header curl sends: host[:port] */
    struct strata_cred cred;
    const char *region;
    const char *ca_cert; /* PEM file of the CA (or self-signed cert) to trust, or NULL */
    bool json;
};

static void cli_usage(FILE *f)
{
    fprintf(f,
"Usage: strata admin [OPTIONS] COMMAND\n"
"Commands:\n"
"  info              sets and drives: state, space, errors\n"
"  usage [BUCKET]    objects, bytes, versions, delete markers, uploads per bucket\n"
"  heal start        start a heal of every set (--wait: until it ends)\n"
"  heal status       running or idle, and the last run's result\n"
"  audit verify      verify every drive's Object Lock audit log and compare them\n"
"  audit tail [N]    the last N audit log entries (default 20)\n"
"  ilm run           start a lifecycle scanner pass now (--wait: until it\n"
"                    ends, with a progress bar when stdout is a terminal)\n"
"  ilm status        the scanner's pass in progress, last pass and totals\n"
"  replicate BUCKET  replicate the bucket's existing objects (its replication\n"
"                    rules; until done, with a progress bar on a terminal)\n"
"  replication status  each replication target's queue and counters\n"
"  kms rotate ...    a new SSE master key in a local key file (no daemon;\n"
"                    strata admin kms rotate --kms-key-file FILE [--name NAME])\n"
"  config            the server's effective configuration (secrets masked)\n"
"  user list         users: access key, name, status, role\n"
"  user add AK [SECRET] [--name NAME]\n"
"                    add a user to the --users file (SECRET read from stdin\n"
"                    when not given)\n"
"  user remove AK | user enable AK | user disable AK\n"
"Options:\n"
"  --endpoint URL    default $STRATA_ENDPOINT, else http://127.0.0.1:9000\n"
"  --access-key KEY  default $STRATA_ACCESS_KEY (an admin: the root user)\n"
"  --secret-key KEY  default $STRATA_SECRET_KEY\n"
"  --region NAME     signing region: the server's --region (default\n"
"                    $STRATA_REGION, else us-east-1)\n"
"  --ca-cert FILE    trust this PEM certificate for https (default\n"
"                    $STRATA_CA_CERT, else the system's CAs)\n"
"  --json            print the server's JSON instead of tables\n"
"Exit codes: 0 done, 1 the server answered an error, 2 bad usage,\n"
"3 the server could not be reached, 4 audit verify found the log broken.\n");
}

static size_t write_cb(char *p, size_t size, size_t n, void *ud)
{
    struct strata_sbuf *b = ud;
    if (strata_sbuf_append(b, p, size * n) != 0)
        return 0; /* over REPLY_MAX: curl reports a write error */
    return size * n;
}

/* One signed request.  Returns an exit code; on OK *doc is the reply
 * (caller decrefs) and *status its HTTP status (< 300). */
static int call_body(struct cli *c, const char *method, const char *path, const char *body,
                     json_t **doc)
{
    char signed_path[4096], url[4608];
    int rc = strata_presign_v4(&c->cred, method, c->host, path, c->region, time(NULL),
                               PRESIGN_EXPIRES_S, signed_path, sizeof(signed_path));
    if (rc != 0) {
        fprintf(stderr, "strata admin: cannot sign the request (bad region or keys?)\n");
        return STRATA_ADMIN_CLI_USAGE;
    }
    snprintf(url, sizeof(url), "%s%s", c->base, signed_path);
    CURL *h = curl_easy_init();
    if (!h)
        return STRATA_ADMIN_CLI_UNREACHABLE;
    struct strata_sbuf b;
    strata_sbuf_init(&b, REPLY_MAX);
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    struct curl_slist *hdrs = NULL;
    if (strcmp(method, "POST") == 0 || body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
        hdrs = curl_slist_append(hdrs, body ? "Content-Type: application/json" : "Expect:");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    if (c->ca_cert)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_cert);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 900L); /* a usage scan of a big bucket */
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK) {
        fprintf(stderr, "strata admin: %s: %s\n", c->base, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        strata_sbuf_fini(&b);
        return STRATA_ADMIN_CLI_UNREACHABLE;
    }
    json_error_t jerr;
    json_t *j = b.failed ? NULL : json_loadb(b.data ? b.data : "", b.len, 0, &jerr);
    strata_sbuf_fini(&b);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        fprintf(stderr, "strata admin: %s answered HTTP %ld without an admin API reply "
                        "(not a Strata server?)\n", c->base, status);
        return STRATA_ADMIN_CLI_UNREACHABLE;
    }
    if (status >= 300) {
        const char *code = json_string_value(json_object_get(j, "Code"));
        const char *msg = json_string_value(json_object_get(j, "Message"));
        if (c->json) {
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
            putchar('\n');
        }
        fprintf(stderr, "strata admin: %s (HTTP %ld): %s\n", code ? code : "error", status,
                msg ? msg : "");
        json_decref(j);
        return STRATA_ADMIN_CLI_API_ERROR;
    }
    *doc = j;
    return STRATA_ADMIN_CLI_OK;
}

static int call(struct cli *c, const char *method, const char *path, json_t **doc)
{
    return call_body(c, method, path, NULL, doc);
}

static int show(struct cli *c, json_t *doc, void (*print)(json_t *doc))
{
    if (c->json) {
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        putchar('\n');
    } else {
        print(doc);
    }
    json_decref(doc);
    return fflush(stdout) == 0 ? STRATA_ADMIN_CLI_OK : STRATA_ADMIN_CLI_API_ERROR;
}

static int simple(struct cli *c, const char *method, const char *path, void (*print)(json_t *))
{
    json_t *doc = NULL;
    int rc = call(c, method, path, &doc);
    return rc ? rc : show(c, doc, print);
}

/* heal start --wait: poll status until idle; a progress line on a tty. */
static int heal_wait(struct cli *c)
{
    bool tty = isatty(STDERR_FILENO);
    for (unsigned i = 0;; i++) {
        json_t *doc = NULL;
        int rc = call(c, "GET", "/strata/admin/v1/heal/status", &doc);
        if (rc)
            return rc;
        const char *state = json_string_value(json_object_get(doc, "state"));
        if (!state || strcmp(state, "running") != 0) {
            if (tty)
                fputs("\r\033[K", stderr);
            json_t *last = json_object_get(doc, "last");
            const char *res = json_string_value(json_object_get(last, "result"));
            bool ok = res && strcmp(res, "ok") == 0;
            rc = show(c, doc, strata_admin_cli_print_heal);
            return rc ? rc : ok ? STRATA_ADMIN_CLI_OK : STRATA_ADMIN_CLI_API_ERROR;
        }
        json_decref(doc);
        if (tty)
            fprintf(stderr, "\rhealing %c  %u s", "|/-\\"[i % 4], i / 5);
        usleep(200 * 1000);
    }
}

/* An access key as one path segment: refused here rather than sent
 * half-encoded (the server checks the same rule). */
static bool user_key_ok(const char *ak)
{
    size_t n = strlen(ak);
    if (n < 3 || n > 127 || ak[0] == '#')
        return false;
    for (const char *p = ak; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || strchr("/?%#", *p))
            return false;
    return true;
}

/* user list | add AK [SECRET] [--name NAME] | remove AK | enable AK |
 * disable AK.  Without SECRET, add reads it from stdin (one line), so it
 * stays out of the process list. */
static int user_cmd(struct cli *c, int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "list") == 0)
        return simple(c, "GET", "/strata/admin/v1/users", strata_admin_cli_print_users);
    if (argc < 3 || !user_key_ok(argv[2])) {
        fprintf(stderr, "strata admin: user list | add ACCESS_KEY [SECRET] [--name NAME] | "
                        "remove|enable|disable ACCESS_KEY (keys: 3-127 characters, no spaces "
                        "or /?%%#)\n");
        return STRATA_ADMIN_CLI_USAGE;
    }
    char path[256];
    snprintf(path, sizeof(path), "/strata/admin/v1/users/%s", argv[2]);
    const char *verb = argv[1];
    if (strcmp(verb, "remove") == 0 && argc == 3)
        return simple(c, "DELETE", path, strata_admin_cli_print_user);
    if ((strcmp(verb, "enable") == 0 || strcmp(verb, "disable") == 0) && argc == 3) {
        strncat(path, strcmp(verb, "enable") == 0 ? "/enable" : "/disable",
                sizeof(path) - strlen(path) - 1);
        return simple(c, "POST", path, strata_admin_cli_print_user);
    }
    if (strcmp(verb, "add") != 0) {
        fprintf(stderr, "strata admin: unknown user command %s\n", verb);
        return STRATA_ADMIN_CLI_USAGE;
    }
    const char *secret = NULL, *name = NULL;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
            name = argv[++i];
        else if (!secret && argv[i][0] != '-')
            secret = argv[i];
        else {
            fprintf(stderr, "strata admin: user add: unexpected %s\n", argv[i]);
            return STRATA_ADMIN_CLI_USAGE;
        }
    }
    char line[256];
    if (!secret) {
        if (!fgets(line, sizeof(line), stdin)) {
            fprintf(stderr, "strata admin: user add: no SECRET given and none on stdin\n");
            return STRATA_ADMIN_CLI_USAGE;
        }
        line[strcspn(line, "\r\n")] = '\0';
        secret = line;
    }
    json_t *body = json_pack("{s:s}", "secret", secret);
    if (body && name)
        json_object_set_new(body, "name", json_string(name));
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        fprintf(stderr, "strata admin: user add: the secret and name must be UTF-8\n");
        return STRATA_ADMIN_CLI_USAGE;
    }
    json_t *doc = NULL;
    int rc = call_body(c, "PUT", path, text, &doc);
    free(text);
    return rc ? rc : show(c, doc, strata_admin_cli_print_user);
}

static uint64_t passes_of(json_t *doc)
{
    json_int_t v = json_integer_value(json_object_get(json_object_get(doc, "total"), "passes"));
    return v > 0 ? (uint64_t)v : 0;
}

/* count(doc) of the status document at path, into *out: the mark the
 * waits below compare against. */
static int status_count(struct cli *c, const char *path, uint64_t (*count)(json_t *doc),
                        uint64_t *out)
{
    json_t *doc = NULL;
    int rc = call(c, "GET", path, &doc);
    if (rc)
        return rc;
    *out = count(doc);
    json_decref(doc);
    return 0;
}

/* ilm run --wait: start a pass, poll status until one more pass finished;
 * a progress bar (buckets done) on a terminal. */
static int ilm_wait(struct cli *c)
{
    json_t *doc = NULL;
    uint64_t before;
    int rc = status_count(c, "/strata/admin/v1/ilm/status", passes_of, &before);
    if (rc || (rc = call(c, "POST", "/strata/admin/v1/ilm/run", &doc)))
        return rc;
    json_decref(doc);
    bool tty = !c->json && isatty(STDOUT_FILENO);
    for (;;) {
        if ((rc = call(c, "GET", "/strata/admin/v1/ilm/status", &doc)))
            return rc;
        if (passes_of(doc) > before) {
            if (tty)
                fputs("\r\033[K", stdout);
            return show(c, doc, strata_admin_cli_print_ilm);
        }
        if (tty)
            strata_admin_cli_print_ilm_bar(doc);
        json_decref(doc);
        usleep(200 * 1000);
    }
}

/* The replicated + failed count over every target of a status reply. */
static uint64_t repl_done(json_t *doc)
{
    uint64_t n = 0;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(doc, "targets"), i, t)
        n += (uint64_t)json_integer_value(json_object_get(t, "replicated")) +
             (uint64_t)json_integer_value(json_object_get(t, "failed"));
    return n;
}

/* replicate BUCKET: queue the existing objects, then follow the targets'
 * counters until that many more versions are done (replicated or
 * failed): a bar on a terminal, a line every second otherwise. */
static int replicate(struct cli *c, const char *bucket)
{
    char path[512];
    if (strlen(bucket) > 63 || strpbrk(bucket, "/?%#")) {
        fprintf(stderr, "strata admin: %s is not a bucket name\n", bucket);
        return STRATA_ADMIN_CLI_USAGE;
    }
    json_t *doc = NULL;
    uint64_t before;
    int rc = status_count(c, "/strata/admin/v1/replication/status", repl_done, &before);
    snprintf(path, sizeof(path), "/strata/admin/v1/replicate/%s", bucket);
    if (rc || (rc = call(c, "POST", path, &doc)))
        return rc;
    uint64_t queued = (uint64_t)json_integer_value(json_object_get(doc, "queued"));
    uint64_t seen = (uint64_t)json_integer_value(json_object_get(doc, "seen"));
    json_decref(doc);
    bool tty = !c->json && isatty(STDOUT_FILENO);
    if (!c->json)
        printf("%s: %llu versions and delete markers, %llu queued for replication\n", bucket,
               (unsigned long long)seen, (unsigned long long)queued);
    for (unsigned tick = 0;; tick++) {
        if ((rc = call(c, "GET", "/strata/admin/v1/replication/status", &doc)))
            return rc;
        uint64_t done = repl_done(doc) - before;
        done = done > queued ? queued : done;
        if (done >= queued) {
            if (tty)
                fputs("\r\033[K", stdout);
            if (c->json) {
                json_object_set_new(doc, "bucket", json_string(bucket));
                json_object_set_new(doc, "queued", json_integer((json_int_t)queued));
                json_object_set_new(doc, "done", json_integer((json_int_t)done));
                return show(c, doc, NULL);
            }
            json_decref(doc);
            printf("%s: %llu of %llu replicated or failed\n", bucket, (unsigned long long)done,
                   (unsigned long long)queued);
            return STRATA_ADMIN_CLI_OK;
        }
        json_decref(doc);
        if (tty) {
            char bar[STRATA_ADMIN_CLI_BAR + 3];
            strata_admin_cli_bar(bar, done, queued);
            printf("\r\033[K%s %llu/%llu", bar, (unsigned long long)done,
                   (unsigned long long)queued);
            fflush(stdout);
        } else if (!c->json && tick % 5 == 0) {
            printf("%llu/%llu\n", (unsigned long long)done, (unsigned long long)queued);
            fflush(stdout);
        }
        usleep(200 * 1000);
    }
}

static int run(struct cli *c, int argc, char **argv)
{
    const char *cmd = argv[0];
    if (strcmp(cmd, "info") == 0 && argc == 1)
        return simple(c, "GET", "/strata/admin/v1/info", strata_admin_cli_print_info);
    if (strcmp(cmd, "config") == 0 && argc == 1)
        return simple(c, "GET", "/strata/admin/v1/config", strata_admin_cli_print_config);
    if (strcmp(cmd, "usage") == 0 && argc <= 2) {
        char path[512];
        if (argc == 2 && (strlen(argv[1]) > 63 || strpbrk(argv[1], "/?%#"))) {
            fprintf(stderr, "strata admin: %s is not a bucket name\n", argv[1]);
            return STRATA_ADMIN_CLI_USAGE;
        }
        snprintf(path, sizeof(path), "/strata/admin/v1/usage%s%s", argc == 2 ? "/" : "",
                 argc == 2 ? argv[1] : "");
        return simple(c, "GET", path, strata_admin_cli_print_usage);
    }
    if (strcmp(cmd, "heal") == 0 && argc >= 2) {
        if (strcmp(argv[1], "status") == 0 && argc == 2)
            return simple(c, "GET", "/strata/admin/v1/heal/status", strata_admin_cli_print_heal);
        bool wait = argc == 3 && strcmp(argv[2], "--wait") == 0;
        if (strcmp(argv[1], "start") == 0 && (argc == 2 || wait)) {
            json_t *doc = NULL;
            int rc = call(c, "POST", "/strata/admin/v1/heal/start", &doc);
            if (rc || !wait)
                return rc ? rc : show(c, doc, strata_admin_cli_print_heal);
            json_decref(doc);
            return heal_wait(c);
        }
    }
    if (strcmp(cmd, "audit") == 0 && argc == 2 && strcmp(argv[1], "verify") == 0) {
        json_t *doc = NULL;
        int rc = call(c, "GET", "/strata/admin/v1/audit/verify", &doc);
        if (rc)
            return rc;
        bool ok = json_is_true(json_object_get(doc, "ok"));
        rc = show(c, doc, strata_admin_cli_print_audit_verify);
        return rc ? rc : ok ? STRATA_ADMIN_CLI_OK : STRATA_ADMIN_CLI_CHECK_FAILED;
    }
    if (strcmp(cmd, "audit") == 0 && (argc == 2 || argc == 3) && strcmp(argv[1], "tail") == 0) {
        char path[128];
        if (argc == 3 && (strspn(argv[2], "0123456789") != strlen(argv[2]) ||
                          strlen(argv[2]) > 6)) {
            fprintf(stderr, "strata admin: audit tail N: N is a number\n");
            return STRATA_ADMIN_CLI_USAGE;
        }
        snprintf(path, sizeof(path), "/strata/admin/v1/audit/tail%s%s", argc == 3 ? "/" : "",
                 argc == 3 ? argv[2] : "");
        return simple(c, "GET", path, strata_admin_cli_print_audit_tail);
    }
    if (strcmp(cmd, "user") == 0 && argc >= 2)
        return user_cmd(c, argc, argv);
    if (strcmp(cmd, "ilm") == 0 && argc == 2 && strcmp(argv[1], "run") == 0)
        return simple(c, "POST", "/strata/admin/v1/ilm/run", strata_admin_cli_print_ilm);
    if (strcmp(cmd, "ilm") == 0 && argc == 3 && strcmp(argv[1], "run") == 0 &&
        strcmp(argv[2], "--wait") == 0)
        return ilm_wait(c);
    if (strcmp(cmd, "ilm") == 0 && argc == 2 && strcmp(argv[1], "status") == 0)
        return simple(c, "GET", "/strata/admin/v1/ilm/status", strata_admin_cli_print_ilm);
    if (strcmp(cmd, "replicate") == 0 && argc == 2)
        return replicate(c, argv[1]);
    if (strcmp(cmd, "replication") == 0 && argc == 2 && strcmp(argv[1], "status") == 0)
        return simple(c, "GET", "/strata/admin/v1/replication/status",
                      strata_admin_cli_print_repl);
    fprintf(stderr, "strata admin: unknown command or arguments: %s\n", cmd);
    cli_usage(stderr);
    return STRATA_ADMIN_CLI_USAGE;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

int strata_admin_cli(int argc, char **argv)
{
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"access-key", required_argument, NULL, 'a'},
        {"secret-key", required_argument, NULL, 's'}, {"region", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
        {"ca-cert", required_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    /* The server's --region: requests signed for another are refused. */
    struct cli c = {.region = env_or("STRATA_REGION", "us-east-1"),
                    .ca_cert = env_or("STRATA_CA_CERT", NULL)};
    const char *endpoint = env_or("STRATA_ENDPOINT", "http://127.0.0.1:9000");
    const char *ak = env_or("STRATA_ACCESS_KEY", NULL), *sk = env_or("STRATA_SECRET_KEY", NULL);
    int o;
    /* "+": stop at the command, so "heal start --wait" keeps its flag. */
    while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (o) {
        case 'e': endpoint = optarg; break;
        case 'a': ak = optarg; break;
        case 's': sk = optarg; break;
        case 'r': c.region = optarg; break;
        case 'c': c.ca_cert = optarg; break;
        case 'j': c.json = true; break;
        case 'h': cli_usage(stdout); return STRATA_ADMIN_CLI_OK;
        default: cli_usage(stderr); return STRATA_ADMIN_CLI_USAGE;
        }
    }
    if (optind >= argc) {
        cli_usage(stderr);
        return STRATA_ADMIN_CLI_USAGE;
    }
    if (!ak || !sk) {
        fprintf(stderr, "strata admin: no keys: give --access-key/--secret-key or set "
                        "STRATA_ACCESS_KEY/STRATA_SECRET_KEY\n");
        return STRATA_ADMIN_CLI_USAGE;
    }
    const char *sep = strstr(endpoint, "://");
    const char *hs = sep ? sep + 3 : NULL;
    size_t hl = hs ? strcspn(hs, "/") : 0;
    if (!hs || hl == 0 || hl >= sizeof(c.host) || (strncmp(endpoint, "http://", 7) != 0 &&
                                                    strncmp(endpoint, "https://", 8) != 0) ||
        strlen(ak) >= sizeof(c.cred.access_key) || strlen(sk) >= sizeof(c.cred.secret)) {
        fprintf(stderr, "strata admin: bad endpoint %s (want http[s]://HOST:PORT) or keys\n",
                endpoint);
        return STRATA_ADMIN_CLI_USAGE;
    }
    memcpy(c.host, hs, hl);
    c.host[hl] = '\0';
    char *base = strndup(endpoint, (size_t)(hs - endpoint) + hl);
    if (!base)
        return STRATA_ADMIN_CLI_UNREACHABLE;
    c.base = base;
    snprintf(c.cred.access_key, sizeof(c.cred.access_key), "%s", ak);
    snprintf(c.cred.secret, sizeof(c.cred.secret), "%s", sk);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = run(&c, argc - optind, argv + optind);
    curl_global_cleanup();
    free(base);
    return rc;
}
