/*
 * admin.c - the admin API's front: who may call it, which endpoint a path
 * names, JSON answers and errors, the config dump and the 501 answers of
 * what is not built yet.  Any connection thread.
 */
#include "admin.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin_internal.h"
#include "srv_config.h"
#include "srv_err.h"

#define V1 STRATA_ADMIN_PREFIX "v1/"

static struct timespec started;

void strata_admin_init(struct strata_srv *s)
{
    clock_gettime(CLOCK_MONOTONIC, &started);
}

void strata_admin_fini(struct strata_srv *s)
{
    strata_admin__heal_join();
}

double strata_admin__uptime_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

bool strata_admin_path(const char *raw_path)
{
    return raw_path && strncmp(raw_path, STRATA_ADMIN_PREFIX, strlen(STRATA_ADMIN_PREFIX)) == 0;
}

void strata_admin__send_json(struct strata_req *r, int status, json_t *doc)
{
    char *body = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    if (!body) {
        strata_admin__error(r, 500, "InternalError", "cannot encode the reply");
        return;
    }
    size_t len = strlen(body);
    char *nl = realloc(body, len + 2); /* a final newline, for terminals */
    if (!nl) {
        free(body);
        strata_admin__error(r, 500, "InternalError", "out of memory");
        return;
    }
    nl[len] = '\n';
    nl[len + 1] = '\0';
    strata_req_send_body(r, status, "application/json", nl, len + 1);
}

void strata_admin__error(struct strata_req *r, int status, const char *code, const char *msg)
{
    json_t *doc = json_pack("{s:s, s:s, s:s}", "Code", code, "Message", msg, "RequestId", r->id);
    char *body = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
    json_decref(doc);
    size_t len = body ? strlen(body) : 0;
    struct strata_resp *resp = body ? strata_resp_take(body, len) : strata_resp_empty();
    if (body && resp)
        r->bytes_out += len;
    strata_resp_hdr(resp, "Content-Type", "application/json");
    if (status == 503)
        strata_resp_hdr(resp, "Retry-After", "1");
    strata_req_send(r, status, resp);
}

void strata_admin_error_s3(struct strata_req *r, enum s3_err e, int err)
{
    r->sent_err = e;
    strata_admin__error(r, strata_s3_err_status(e), strata_s3_err_code(e),
                        r->err_msg ? r->err_msg : strata_s3_err_detail(err, e));
}

static void not_built(struct strata_req *r, const char *arg)
{
    strata_admin__error(r, 501, "NotImplemented",
                        "this admin endpoint is not implemented by this Strata build yet; "
                        "see server/admin/README.md");
}

static void config_dump(struct strata_req *r, const char *arg)
{
    strata_admin__send_json(r, 200, strata_srv_config_json(&r->srv->cfg));
}

/* The Prometheus text of /metrics, for admins when it is not public. */
static void metrics_text(struct strata_req *r, const char *arg)
{
    size_t len;
    char *body = strata_metrics_scrape(r->http, r->srv, &len);
    if (!body) {
        strata_admin__error(r, 500, "InternalError", "metrics do not fit the reply buffer");
        return;
    }
    strata_req_send_body(r, 200, "text/plain; version=0.0.4", body, len);
}

struct endpoint {
    const char *method; /* NULL: any method */
    const char *name;
    bool arg_ok;        /* "name/ARG" accepted */
    bool prefix;        /* every path under name/ */
    void (*run)(struct strata_req *r, const char *arg);
};

static const struct endpoint endpoints[] = {
    {"GET", "info", false, false, strata_admin__info},
    {"GET", "usage", true, false, strata_admin__usage},
    {"POST", "heal/start", false, false, strata_admin__heal_start},
    {"GET", "heal/status", false, false, strata_admin__heal_status},
    {"GET", "config", false, false, config_dump},
    {"GET", "metrics", false, false, metrics_text},
    {"GET", "audit/verify", false, false, strata_admin__audit_verify},
    {"GET", "audit/tail", true, false, strata_admin__audit_tail},
    {NULL, "audit", true, true, not_built},
    {"POST", "ilm/run", false, false, strata_admin__ilm_run},
    {"GET", "ilm/status", false, false, strata_admin__ilm_status},
    {NULL, "users", true, true, strata_admin__users},
    {"POST", "replicate", true, false, strata_admin__replicate},
    {"GET", "replication/status", false, false, strata_admin__replication_status},
};

/* Query parameters other than a presigned request's X-Amz-* are refused:
 * the API takes none, and ignoring one would be a silent wrong answer. */
static bool query_ok(struct strata_req *r)
{
    for (int i = 0; i < r->nq; i++)
        if (strncmp(r->q[i].name, "X-Amz-", 6) != 0)
            return false;
    return true;
}

static void dispatch(struct strata_req *r)
{
    const char *path = r->resource ? r->resource : "";
    if (strncmp(path, V1, strlen(V1)) != 0) {
        strata_admin__error(r, 404, "NotFound",
                            "unknown admin API version: this server serves " V1);
        return;
    }
    const char *rest = path + strlen(V1);
    for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
        const struct endpoint *ep = &endpoints[i];
        size_t n = strlen(ep->name);
        if (strncmp(rest, ep->name, n) != 0 || (rest[n] != '\0' && rest[n] != '/'))
            continue;
        const char *arg = rest[n] == '/' ? rest + n + 1 : NULL;
        if (arg && !*arg)
            arg = NULL;
        if (!ep->prefix && arg && !ep->arg_ok)
            break; /* "info/x": no such endpoint */
        if (ep->method && strcmp(ep->method, r->method) != 0) {
            char msg[128];
            snprintf(msg, sizeof(msg), "%s takes %s only", ep->name, ep->method);
            strata_admin__error(r, 405, "MethodNotAllowed", msg);
            return;
        }
        if (!query_ok(r)) {
            strata_admin__error(r, 400, "InvalidArgument",
                                "admin endpoints take no query parameters");
            return;
        }
        ep->run(r, arg);
        return;
    }
    strata_admin__error(r, 404, "NotFound", "no such admin endpoint; see server/admin/README.md");
}

/* Bodies (users/AK's JSON) are buffered like S3's XML bodies: bounded,
 * charged to the body budget, checked against x-amz-content-sha256.  No
 * s3: action: strata_admin_route admits the admin users only. */
static const struct strata_route admin_route = {"*", STRATA_LVL_SERVICE, NULL,
                                                STRATA_RT_BODY_XML, "Admin",
                                                NULL, NULL, dispatch,
                                                {STRATA_AZ_UNSET, NULL, NULL}};

/* The root user, or a key named in --admin-users (whole comma-separated
 * items only: "AK" does not admit "AK2"). */
bool strata_admin__is_admin(const struct strata_srv_config *cfg, const char *ak)
{
    if (cfg->root_user && strcmp(ak, cfg->root_user) == 0)
        return true;
    size_t n = strlen(ak);
    for (const char *p = cfg->admin_users; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && n && strncmp(p, ak, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

enum s3_err strata_admin_route(struct strata_req *r)
{
    const struct strata_cred *c = r->auth.cred;
    if (!c || !strata_admin__is_admin(&r->srv->cfg, c->access_key))
        return S3E_AccessDenied;
    r->route = &admin_route;
    return S3E_NONE;
}
