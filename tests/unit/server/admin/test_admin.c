/*
 * test_admin.c - the admin API (server/admin) on the wire: who may call
 * it, how a path picks an endpoint, its JSON errors, the config dump and
 * the users endpoints editing a real --users file.  The requests go
 * through libmicrohttpd on loopback (loopback.h) into strata_admin_route
 * and the route it sets, as the transport runs them after SigV4.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "admin.h"
#include "admin_internal.h"
#include "pipeline.h"
#include "server/loopback.h"

#define ROOT_AK  "rootak"
#define ROOT_SK  "rootsecret-never-shown"
#define ADMIN_AK "adminak"
#define BOB_AK   "bobak"

static struct strata_srv g_srv;
static char g_dir[256];
static char g_users[300];

/* The caller is the user named by x-test-user (none: anonymous): what
 * SigV4 verification would have left in r->auth. */
static void answer(struct strata_req *r)
{
    r->admin = true;
    const char *ak = strata_req_hdr(r, "x-test-user");
    r->auth.cred = ak ? strata_creds_find(atomic_load(&g_srv.http.creds), ak) : NULL;
    r->auth.anonymous = r->auth.cred == NULL;
    enum s3_err e = strata_admin_route(r);
    if (e != S3E_NONE) {
        strata_admin_error_s3(r, e, 0);
        return;
    }
    r->route->run(r);
}

static void call(const char *method, const char *target, const char *user, const char *body,
                 struct lb_reply *rp)
{
    char h[128];
    snprintf(h, sizeof(h), "x-test-user: %s", user ? user : "");
    const char *hdrs[] = {user ? h : NULL, NULL};
    lb_fetch_with(method, target, hdrs, body, rp);
}

/* The reply's JSON document (caller decrefs); fails the test unless the
 * reply is application/json. */
static json_t *json_of(const struct lb_reply *rp)
{
    char v[64];
    assert_non_null(lb_hdr(rp, "Content-Type", v, sizeof(v)));
    assert_string_equal(v, "application/json");
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)rp->body, rp->len, 0, &jerr);
    assert_non_null(doc);
    return doc;
}

/* An error reply: status, Code, and the request's id. */
static void assert_error(const char *method, const char *target, const char *user, const char *body,
                         long status, const char *code, const char *msg_part)
{
    struct lb_reply rp;
    call(method, target, user, body, &rp);
    print_message("%s %s -> %ld %s\n", method, target, rp.status, (const char *)rp.body);
    assert_int_equal(rp.status, status);
    json_t *doc = json_of(&rp);
    assert_string_equal(json_string_value(json_object_get(doc, "Code")), code);
    assert_string_equal(json_string_value(json_object_get(doc, "RequestId")), "0123456789ABCDEF");
    if (msg_part)
        assert_non_null(strstr(json_string_value(json_object_get(doc, "Message")), msg_part));
    json_decref(doc);
    lb_reply_free(&rp);
}

static char *read_users(void)
{
    FILE *f = fopen(g_users, "r");
    assert_non_null(f);
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void test_path(void **state)
{
    (void)state;
    assert_true(strata_admin_path("/strata/admin/v1/info"));
    assert_true(strata_admin_path("/strata/admin/"));
    assert_false(strata_admin_path("/strata/admin"));
    assert_false(strata_admin_path("/strata/adminx/v1/info"));
    assert_false(strata_admin_path("/bucket/strata/admin/v1/info"));
    assert_false(strata_admin_path(NULL));
}

static void test_is_admin(void **state)
{
    (void)state;
    struct strata_srv_config cfg = {.root_user = "root", .admin_users = "ak1,ak2"};
    assert_true(strata_admin__is_admin(&cfg, "root"));
    assert_true(strata_admin__is_admin(&cfg, "ak1"));
    assert_true(strata_admin__is_admin(&cfg, "ak2"));
    assert_false(strata_admin__is_admin(&cfg, "ak"));   /* a prefix of an item */
    assert_false(strata_admin__is_admin(&cfg, "ak12")); /* longer than an item */
    assert_false(strata_admin__is_admin(&cfg, "ak1,ak2"));
    assert_false(strata_admin__is_admin(&cfg, ""));
    cfg.admin_users = NULL;
    assert_false(strata_admin__is_admin(&cfg, "ak1"));
}

/* Anyone but root and --admin-users: AccessDenied as JSON. */
static void test_denied(void **state)
{
    (void)state;
    assert_error("GET", "/strata/admin/v1/config", BOB_AK, NULL, 403, "AccessDenied", NULL);
    assert_error("GET", "/strata/admin/v1/config", NULL, NULL, 403, "AccessDenied", NULL);
    assert_error("DELETE", "/strata/admin/v1/users/" ROOT_AK, BOB_AK, NULL, 403, "AccessDenied",
                 NULL);
}

static void test_routing(void **state)
{
    (void)state;
    assert_error("GET", "/strata/admin/v2/info", ROOT_AK, NULL, 404, "NotFound",
                 "unknown admin API version");
    assert_error("GET", "/strata/admin/v1/nothing", ROOT_AK, NULL, 404, "NotFound",
                 "no such admin endpoint");
    assert_error("GET", "/strata/admin/v1/config/x", ROOT_AK, NULL, 404, "NotFound", NULL);
    assert_error("GET", "/strata/admin/v1/configx", ROOT_AK, NULL, 404, "NotFound", NULL);
    assert_error("POST", "/strata/admin/v1/config", ROOT_AK, NULL, 405, "MethodNotAllowed",
                 "config takes GET only");
    assert_error("GET", "/strata/admin/v1/config?verbose=1", ROOT_AK, NULL, 400, "InvalidArgument",
                 "no query parameters");
    assert_error("GET", "/strata/admin/v1/audit/other", ROOT_AK, NULL, 501, "NotImplemented", NULL);
}

/* The effective configuration, with the root secret masked. */
static void test_config(void **state)
{
    (void)state;
    struct lb_reply rp;
    call("GET", "/strata/admin/v1/config", ADMIN_AK, NULL, &rp);
    assert_int_equal(rp.status, 200);
    json_t *doc = json_of(&rp);
    assert_string_equal(json_string_value(json_object_get(doc, "region")), "eu-test-1");
    assert_string_equal(json_string_value(json_object_get(doc, "root-user")), ROOT_AK);
    assert_string_equal(json_string_value(json_object_get(doc, "users")), g_users);
    assert_string_equal(json_string_value(json_object_get(doc, "admin-users")), ADMIN_AK);
    const char *pw = json_string_value(json_object_get(doc, "root-password"));
    assert_non_null(pw);
    assert_string_not_equal(pw, ROOT_SK);
    assert_null(strstr((const char *)rp.body, ROOT_SK));
    assert_int_equal(rp.body[rp.len - 1], '\n');
    json_decref(doc);
    lb_reply_free(&rp);
}

/* One user of the GET users list, by access key. */
static json_t *find_user(json_t *users, const char *ak)
{
    size_t i;
    json_t *u;
    json_array_foreach(users, i, u)
    {
        if (strcmp(json_string_value(json_object_get(u, "access_key")), ak) == 0)
            return u;
    }
    return NULL;
}

static void test_users_list(void **state)
{
    (void)state;
    struct lb_reply rp;
    call("GET", "/strata/admin/v1/users", ROOT_AK, NULL, &rp);
    assert_int_equal(rp.status, 200);
    json_t *doc = json_of(&rp);
    json_t *users = json_object_get(doc, "users");
    assert_int_equal(json_array_size(users), 3);
    json_t *root = find_user(users, ROOT_AK);
    assert_non_null(root);
    assert_true(json_is_true(json_object_get(root, "root")));
    assert_true(json_is_true(json_object_get(root, "admin")));
    json_t *bob = find_user(users, BOB_AK);
    assert_non_null(bob);
    assert_string_equal(json_string_value(json_object_get(bob, "name")), "Bob");
    assert_string_equal(json_string_value(json_object_get(bob, "status")), "enabled");
    assert_true(json_is_false(json_object_get(bob, "root")));
    assert_true(json_is_false(json_object_get(bob, "admin")));
    assert_true(json_is_true(json_object_get(find_user(users, ADMIN_AK), "admin")));
    /* No secret anywhere in the answer. */
    assert_null(strstr((const char *)rp.body, "bobsecret1"));
    json_decref(doc);
    lb_reply_free(&rp);
}

/* Add, read, disable, remove: each edit lands in the users file. */
static void test_users_edit(void **state)
{
    (void)state;
    struct lb_reply rp;
    call("PUT", "/strata/admin/v1/users/carolak", ROOT_AK,
         "{\"secret\": \"carolsecret1\", \"name\": \"Carol\"}", &rp);
    assert_int_equal(rp.status, 201);
    lb_reply_free(&rp);
    assert_non_null(strstr(read_users(), "\ncarolak carolsecret1 Carol\n"));
    assert_non_null(strstr(read_users(), "bobak bobsecret1 Bob\n"));

    call("GET", "/strata/admin/v1/users/carolak", ROOT_AK, NULL, &rp);
    assert_int_equal(rp.status, 200);
    json_t *doc = json_of(&rp);
    assert_string_equal(json_string_value(json_object_get(doc, "access_key")), "carolak");
    assert_string_equal(json_string_value(json_object_get(doc, "name")), "Carol");
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "enabled");
    json_decref(doc);
    lb_reply_free(&rp);

    assert_error("PUT", "/strata/admin/v1/users/carolak", ROOT_AK, "{\"secret\": \"carolsecret1\"}",
                 409, "UserAlreadyExists", NULL);

    call("POST", "/strata/admin/v1/users/carolak/disable", ROOT_AK, NULL, &rp);
    assert_int_equal(rp.status, 200);
    lb_reply_free(&rp);
    assert_non_null(strstr(read_users(), STRATA_CREDS_DISABLED_MARK "carolak carolsecret1 Carol"));
    call("GET", "/strata/admin/v1/users/carolak", ROOT_AK, NULL, &rp);
    doc = json_of(&rp);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "disabled");
    json_decref(doc);
    lb_reply_free(&rp);

    call("DELETE", "/strata/admin/v1/users/carolak", ROOT_AK, NULL, &rp);
    assert_int_equal(rp.status, 200);
    doc = json_of(&rp);
    assert_true(json_is_true(json_object_get(doc, "removed")));
    json_decref(doc);
    lb_reply_free(&rp);
    assert_null(strstr(read_users(), "carolak"));
    assert_error("GET", "/strata/admin/v1/users/carolak", ROOT_AK, NULL, 404, "NoSuchUser", NULL);
}

static void test_users_bad_requests(void **state)
{
    (void)state;
    const char *before = strdup(read_users());
    assert_error("PUT", "/strata/admin/v1/users/dave", ROOT_AK, "{not json", 400, "InvalidArgument",
                 NULL);
    assert_error("PUT", "/strata/admin/v1/users/dave", ROOT_AK, "{\"name\": \"Dave\"}", 400,
                 "InvalidArgument", NULL);
    assert_error("PUT", "/strata/admin/v1/users/dave", ROOT_AK, "{\"secret\": \"short\"}", 400,
                 "InvalidArgument", NULL);
    assert_error("PATCH", "/strata/admin/v1/users/" BOB_AK, ROOT_AK, NULL, 405, "MethodNotAllowed",
                 NULL);
    assert_error("POST", "/strata/admin/v1/users/" BOB_AK "/frobnicate", ROOT_AK, NULL, 404,
                 "NotFound", NULL);
    /* The root user lives in the environment, not the file. */
    assert_error("DELETE", "/strata/admin/v1/users/" ROOT_AK, ROOT_AK, NULL, 400, "InvalidArgument",
                 "cannot be changed");
    assert_string_equal(read_users(), before);
    free((void *)before);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("STRATA_TEST_TMPDIR");
    snprintf(g_dir, sizeof(g_dir), "%s/strata-admin-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_users, sizeof(g_users), "%s/users", g_dir);
    FILE *f = fopen(g_users, "w");
    if (!f)
        return -1;
    fputs("# test users\nbobak bobsecret1 Bob\nadminak adminsecret1 Ada\n", f);
    fclose(f);
    g_srv.cfg.root_user = ROOT_AK;
    g_srv.cfg.root_password = ROOT_SK;
    g_srv.cfg.admin_users = ADMIN_AK;
    g_srv.cfg.users_file = g_users;
    g_srv.cfg.http.region = "eu-test-1";
    struct strata_creds *c = NULL;
    char err[256];
    if (strata_creds_load(ROOT_AK, ROOT_SK, g_users, &c, err, sizeof(err)) != 0)
        return -1;
    atomic_store(&g_srv.http.creds, c);
    strata_admin_init(&g_srv);
    g_srv.http.pipe = &strata_daemon_pipeline; /* the admin API's JSON errors, metrics */
    strata_srv_http_fill(&g_srv);
    return lb_start(&g_srv.http, answer);
}

static int teardown(void **state)
{
    (void)state;
    lb_stop();
    strata_admin_fini(&g_srv);
    strata_creds_destroy(atomic_load(&g_srv.http.creds));
    strata_admin_users_fini();
    unlink(g_users);
    rmdir(g_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path),       cmocka_unit_test(test_is_admin),
        cmocka_unit_test(test_denied),     cmocka_unit_test(test_routing),
        cmocka_unit_test(test_config),     cmocka_unit_test(test_users_list),
        cmocka_unit_test(test_users_edit), cmocka_unit_test(test_users_bad_requests),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
