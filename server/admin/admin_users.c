/*
 * admin_users.c - the users endpoints of the admin API and the one place
 * that replaces the daemon's credential table (admin edits and SIGHUP).
 *
 * Users are stored in the --users file itself: an edit rewrites it
 * atomically (a temporary file in the same directory, fsync, rename,
 * fsync of the directory), keeping every other line (comments, order) as
 * it was, then loads the new table and swaps it in.  A disabled user is
 * the line prefixed STRATA_CREDS_DISABLED_MARK (auth.h).  The root user
 * comes from the environment and cannot be removed or disabled.
 *
 * Threads: any connection thread; edits and reloads are serialised by one
 * mutex.  Replaced tables are kept until strata_admin_users_fini, because
 * requests in flight point into them.
 */
#include "admin_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "srv_err.h"

#define USERS_FILE_MAX (16u << 20)
#define SECRET_MIN 8 /* as MinIO */

static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;
static struct strata_creds **retired;
static size_t nretired;

/* Swap nc in; the old table is kept until fini.  Under users_mu. */
static int swap_locked(struct strata_srv *s, struct strata_creds *nc)
{
    struct strata_creds **rl = realloc(retired, (nretired + 1) * sizeof(*rl));
    if (!rl)
        return STRATA_ENOMEM;
    retired = rl;
    retired[nretired++] = atomic_exchange(&s->http.creds, nc);
    return 0;
}

static int reload_locked(struct strata_srv *s, char *errmsg, size_t errmsg_len)
{
    struct strata_creds *nc = NULL;
    int rc =
        strata_creds_load_named(s->cfg.root_user, s->cfg.root_password, s->cfg.root_display_name,
                                s->cfg.users_file, &nc, errmsg, errmsg_len);
    if (rc == 0 && (rc = swap_locked(s, nc)) != 0) {
        snprintf(errmsg, errmsg_len, "out of memory");
        strata_creds_destroy(nc);
    }
    return rc;
}

int strata_admin_users_reload(struct strata_srv *s, char *errmsg, size_t errmsg_len)
{
    pthread_mutex_lock(&users_mu);
    int rc = reload_locked(s, errmsg, errmsg_len);
    pthread_mutex_unlock(&users_mu);
    return rc;
}

void strata_admin_users_fini(void)
{
    for (size_t i = 0; i < nretired; i++)
        strata_creds_destroy(retired[i]);
    STRATA_FREE(retired);
    nretired = 0;
}

/* ---- the file ------------------------------------------------------------- */

/* Writes data to path atomically: a temporary file beside it (mode of
 * the old file), fsync, rename, fsync of the directory. */
static int write_atomic(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    char tmp[4096], dir[4096];
    struct stat st;
    mode_t mode = stat(path, &st) == 0 ? (st.st_mode & 0777) : 0600;
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return STRATA_EINVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(err, errlen, "%.300s: %.150s", tmp, strerror(errno));
        return STRATA_EIO;
    }
    size_t off = 0;
    bool ok = fchmod(fd, mode) == 0;
    while (ok && off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        ok = n > 0;
        off += ok ? (size_t)n : 0;
    }
    ok = ok && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        saved = ok ? errno : saved;
        unlink(tmp);
        snprintf(err, errlen, "%.300s: %.150s", path, strerror(saved));
        return STRATA_EIO;
    }
    snprintf(dir, sizeof(dir), "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

enum edit_op { OP_ADD, OP_REMOVE, OP_ENABLE, OP_DISABLE };

struct edit {
    enum edit_op op;
    const char *ak, *sk, *name;
    bool found;
};

/* The file with one edit applied, into out.  Every line but the user's
 * is copied as it was. */
static int rewrite(const char *file, struct edit *ed, struct strata_sbuf *out)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return STRATA_EIO;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        size_t len = (size_t)n;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        struct strata_creds_line cl;
        enum strata_creds_line_kind k = strata_creds_line_parse(line, &cl);
        bool mine = (k == STRATA_CREDS_LINE_USER || k == STRATA_CREDS_LINE_DISABLED) &&
                    cl.ak_len == strlen(ed->ak) && memcmp(cl.ak, ed->ak, cl.ak_len) == 0;
        if (!mine) {
            strata_sbuf_append(out, line, len);
            strata_sbuf_puts(out, "\n");
            continue;
        }
        ed->found = true;
        if (ed->op == OP_REMOVE)
            continue;
        if (ed->op == OP_DISABLE)
            strata_sbuf_puts(out, STRATA_CREDS_DISABLED_MARK);
        /* The user's fields, without the mark (enable) or with it. */
        strata_sbuf_append(out, cl.ak, (size_t)(cl.name + cl.name_len - cl.ak));
        strata_sbuf_puts(out, "\n");
    }
    bool rerr = ferror(f);
    free(line);
    fclose(f);
    if (rerr)
        return STRATA_EIO;
    if (ed->op == OP_ADD) {
        strata_sbuf_printf(out, "%s %s%s%s\n", ed->ak, ed->sk, ed->name[0] ? " " : "", ed->name);
        ed->found = true;
    }
    return out->failed ? STRATA_ETOOBIG : 0;
}

/* ---- the endpoints ---------------------------------------------------------- */

static json_t *user_json(const struct strata_srv *s, const struct strata_cred *u, bool root)
{
    return json_pack("{s:s, s:s, s:s, s:b, s:b}", "access_key", u->access_key, "name",
                     u->display_name, "status", u->disabled ? "disabled" : "enabled", "root", root,
                     "admin", strata_admin__is_admin(&s->cfg, u->access_key));
}

static void list(struct strata_req *r)
{
    const struct strata_creds *c = atomic_load(&r->http->creds);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < strata_creds_count(c); i++)
        json_array_append_new(arr, user_json(r->srv, strata_creds_at(c, i), i == 0));
    strata_admin__send_json(r, 200,
                            json_pack("{s:o, s:s?}", "users", arr, "users_file",
                                      r->srv->cfg.users_file));
}

/* Printable ASCII without spaces, '#' first or '/' (a path segment). */
static bool key_ok(const char *ak)
{
    size_t n = strlen(ak);
    if (n < 3 || n > 127 || ak[0] == '#')
        return false;
    for (const char *p = ak; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == '/')
            return false;
    return true;
}

static bool text_ok(const char *v, size_t min, bool spaces)
{
    size_t n = strlen(v);
    if (n < min || n > 127)
        return false;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < ' ' || *p == 0x7f || (!spaces && *p == ' '))
            return false;
    return !spaces || n == 0 || (v[0] != ' ' && v[n - 1] != ' ');
}

/* One edit: checks, rewrite, reload, answer. */
static void edit(struct strata_req *r, struct edit *ed)
{
    struct strata_srv *s = r->srv;
    if (!s->cfg.users_file) {
        strata_admin__error(r, 409, "NoUsersFile",
                            "users are stored in the --users file: start strata with "
                            "--users FILE to manage them");
        return;
    }
    if (s->cfg.root_user && strcmp(ed->ak, s->cfg.root_user) == 0) {
        strata_admin__error(r, ed->op == OP_ADD ? 409 : 400,
                            ed->op == OP_ADD ? "UserAlreadyExists" : "InvalidArgument",
                            "the root user is set by STRATA_ROOT_USER and cannot be changed here");
        return;
    }
    pthread_mutex_lock(&users_mu);
    const struct strata_cred *now = strata_creds_find(atomic_load(&s->http.creds), ed->ak);
    int status = 0;
    const char *code = NULL, *msg = NULL;
    if (ed->op == OP_ADD && now) {
        status = 409, code = "UserAlreadyExists", msg = "a user with this access key exists";
    } else if (ed->op != OP_ADD && !now) {
        status = 404, code = "NoSuchUser", msg = "no user has this access key";
    }
    char err[512] = "";
    int rc = 0;
    if (!status) {
        struct strata_sbuf b;
        strata_sbuf_init(&b, USERS_FILE_MAX);
        rc = rewrite(s->cfg.users_file, ed, &b);
        if (rc == 0 && !ed->found) /* in the table but not the file: edited by hand */
            status = 409, code = "UsersFileChanged",
            msg = "the --users file no longer has this user; send SIGHUP to reload it";
        if (rc == 0 && !status)
            rc = write_atomic(s->cfg.users_file, b.data ? b.data : "", b.len, err, sizeof(err));
        strata_sbuf_fini(&b);
        if (rc == 0 && !status)
            rc = reload_locked(s, err, sizeof(err));
    }
    json_t *doc = NULL;
    if (!status && rc == 0) {
        const struct strata_cred *u = strata_creds_find(atomic_load(&s->http.creds), ed->ak);
        doc = u ? user_json(s, u, false)
                : json_pack("{s:s, s:b}", "access_key", ed->ak, "removed", true);
    }
    pthread_mutex_unlock(&users_mu);
    if (status) {
        strata_admin__error(r, status, code, msg);
    } else if (rc) {
        strata_srv_log(STRATA_LOG_ERR, "admin users: %s: %s", s->cfg.users_file,
                       err[0] ? err : strata_strerror(rc));
        strata_admin__error(r, 500, "InternalError", "cannot rewrite the users file; see the log");
    } else {
        strata_srv_log(STRATA_LOG_NOTICE, "admin users: %s %s by %s",
                       ed->op == OP_ADD ? "added" : ed->op == OP_REMOVE ? "removed"
                       : ed->op == OP_ENABLE ? "enabled" : "disabled",
                       ed->ak, strata_req_user(r));
        strata_admin__send_json(r, ed->op == OP_ADD ? 201 : 200, doc);
    }
}

/* PUT users/AK, body {"secret": "...", "name": "..."}. */
static void add(struct strata_req *r, const char *ak)
{
    json_error_t jerr;
    json_t *body = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &jerr);
    const char *sk = json_string_value(json_object_get(body, "secret"));
    json_t *jname = json_object_get(body, "name");
    const char *name = jname ? json_string_value(jname) : "";
    const char *why = NULL;
    if (!json_is_object(body))
        why = "the body must be a JSON object {\"secret\": \"...\", \"name\": \"...\"}";
    else if (!sk || !text_ok(sk, SECRET_MIN, false))
        why = "\"secret\" must be 8 to 127 printable characters without spaces";
    else if (!name || !text_ok(name, 0, true))
        why = "\"name\" must be up to 127 printable characters, no leading or trailing space";
    else if (json_object_size(body) > (size_t)(jname ? 2 : 1))
        why = "unknown field in the body (known: secret, name)";
    if (why) {
        json_decref(body);
        strata_admin__error(r, 400, "InvalidArgument", why);
        return;
    }
    struct edit ed = {OP_ADD, ak, sk, name, false};
    edit(r, &ed);
    json_decref(body);
}

void strata_admin__users(struct strata_req *r, const char *arg)
{
    if (!arg) {
        if (strcmp(r->method, "GET") != 0) {
            strata_admin__error(r, 405, "MethodNotAllowed", "users takes GET only");
            return;
        }
        list(r);
        return;
    }
    char ak[128];
    size_t n = strcspn(arg, "/");
    const char *verb = arg[n] == '/' ? arg + n + 1 : NULL;
    if (n >= sizeof(ak)) {
        strata_admin__error(r, 400, "InvalidArgument", "access key longer than 127 bytes");
        return;
    }
    memcpy(ak, arg, n);
    ak[n] = '\0';
    if (!key_ok(ak)) {
        strata_admin__error(r, 400, "InvalidArgument",
                            "an access key is 3 to 127 printable characters, no spaces, "
                            "not starting with '#'");
        return;
    }
    struct { const char *method, *verb; } allowed[] = {
        {"GET", NULL}, {"PUT", NULL}, {"DELETE", NULL}, {"POST", "enable"}, {"POST", "disable"},
    };
    size_t i;
    for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        if (strcmp(r->method, allowed[i].method) == 0 &&
            (verb ? allowed[i].verb && strcmp(verb, allowed[i].verb) == 0 : !allowed[i].verb))
            break;
    if (i == sizeof(allowed) / sizeof(allowed[0])) {
        bool known = !verb || strcmp(verb, "enable") == 0 || strcmp(verb, "disable") == 0;
        strata_admin__error(r, known ? 405 : 404, known ? "MethodNotAllowed" : "NotFound",
                            "users/AK takes GET, PUT or DELETE; users/AK/enable and "
                            "users/AK/disable take POST");
        return;
    }
    if (i == 0) {
        const struct strata_creds *c = atomic_load(&r->http->creds);
        const struct strata_cred *u = strata_creds_find(c, ak);
        if (!u)
            strata_admin__error(r, 404, "NoSuchUser", "no user has this access key");
        else
            strata_admin__send_json(r, 200, user_json(r->srv, u, u == strata_creds_at(c, 0)));
        return;
    }
    if (i == 1) {
        add(r, ak);
        return;
    }
    struct edit ed = {i == 2 ? OP_REMOVE : i == 3 ? OP_ENABLE : OP_DISABLE, ak, NULL, NULL, false};
    edit(r, &ed);
}
