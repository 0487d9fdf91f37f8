/*
 * creds.c - the credential table: the root user plus the users of an
 * optional file ("ACCESS_KEY SECRET [DISPLAY NAME] [<EMAIL>]" per line,
 * '#' comments).
 *
 * Built once at start (or on reload, as a new table that is swapped in) and
 * read-only afterwards, so any number of request threads may call
 * strata_creds_find concurrently.  Lookup is a binary search over a sorted
 * index; the array itself keeps file order with root first.
 */
#include "auth.h"
#include "secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "strata/err.h"

#define CREDS_MAX_USERS 100000

struct strata_creds {
    size_t n;
    struct strata_cred *users; /* root first, then file order */
    size_t *sorted;            /* indexes into users, by access_key */
};

static int set_field(char *dst, size_t cap, const char *src, size_t n)
{
    if (n == 0 || n >= cap)
        return STRATA_EINVAL;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

static int add_user(struct strata_creds *c, size_t *cap, const char *ak, size_t ak_len,
                    const char *sk, size_t sk_len, const char *name, size_t name_len,
                    const char *email, size_t email_len)
{
    if (c->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        if (ncap > CREDS_MAX_USERS)
            return STRATA_ETOOBIG;
        struct strata_cred *nu = realloc(c->users, ncap * sizeof(*nu));
        if (!nu)
            return STRATA_ENOMEM;
        c->users = nu;
        *cap = ncap;
    }
    struct strata_cred *u = &c->users[c->n];
    memset(u, 0, sizeof(*u));
    if (set_field(u->access_key, sizeof(u->access_key), ak, ak_len) ||
        set_field(u->secret, sizeof(u->secret), sk, sk_len))
        return STRATA_EINVAL;
    if (name_len) {
        if (set_field(u->display_name, sizeof(u->display_name), name, name_len))
            return STRATA_EINVAL;
    } else {
        memcpy(u->display_name, u->access_key, sizeof(u->display_name));
    }
    if (email_len && set_field(u->email, sizeof(u->email), email, email_len))
        return STRATA_EINVAL;
    c->n++;
    return 0;
}

static int by_key_cmp(const void *a, const void *b, void *ud)
{
    const struct strata_cred *u = ud;
    return strcmp(u[*(const size_t *)a].access_key, u[*(const size_t *)b].access_key);
}

enum strata_creds_line_kind strata_creds_line_parse(const char *line,
                                                    struct strata_creds_line *out)
{
    memset(out, 0, sizeof(*out));
    enum strata_creds_line_kind kind = STRATA_CREDS_LINE_USER;
    const char *p = line + strspn(line, " \t");
    if (strncmp(p, STRATA_CREDS_DISABLED_MARK, strlen(STRATA_CREDS_DISABLED_MARK)) == 0) {
        kind = STRATA_CREDS_LINE_DISABLED;
        p += strlen(STRATA_CREDS_DISABLED_MARK);
        p += strspn(p, " \t");
    } else if (*p == '\0' || *p == '#') {
        return STRATA_CREDS_LINE_OTHER;
    }
    size_t akl = strcspn(p, " \t");
    const char *sk = p + akl;
    sk += strspn(sk, " \t");
    size_t skl = strcspn(sk, " \t");
    const char *name = sk + skl;
    name += strspn(name, " \t");
    size_t nl = strlen(name);
    while (nl && (name[nl - 1] == ' ' || name[nl - 1] == '\t'))
        nl--;
    if (akl == 0 || skl == 0)
        return STRATA_CREDS_LINE_BAD;
    *out = (struct strata_creds_line){p, sk, name, akl, skl, nl};
    return kind;
}

/* A trailing "<address>" (with an '@') of the name span is the user's
 * e-mail address: split it off.  The span itself stays whole in the file
 * (admin_users.c copies it), so the address survives edits. */
static void name_email(const char **name, size_t *nl, const char **email, size_t *el)
{
    *email = NULL;
    *el = 0;
    const char *n = *name;
    size_t len = *nl;
    if (!len || n[len - 1] != '>')
        return;
    const char *lt = memrchr(n, '<', len);
    size_t span = lt ? (size_t)(n + len - lt) : 0;
    if (span <= 2 || !memchr(lt, '@', span))
        return;
    *email = lt + 1;
    *el = span - 2;
    len = (size_t)(lt - n);
    while (len && (n[len - 1] == ' ' || n[len - 1] == '\t'))
        len--;
    *nl = len;
}

static int load_file(struct strata_creds *c, size_t *cap, const char *file, char *errmsg,
                     size_t errmsg_len)
{
    FILE *f = fopen(file, "re");
    if (!f) {
        snprintf(errmsg, errmsg_len, "%s: %s", file, strerror(errno));
        return errno == ENOENT ? STRATA_ENOTFOUND : STRATA_EIO;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            snprintf(errmsg, errmsg_len, "%s:%d: line too long", file, lineno);
            rc = STRATA_EINVAL;
            break;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        struct strata_creds_line cl;
        enum strata_creds_line_kind kind = strata_creds_line_parse(line, &cl);
        if (kind == STRATA_CREDS_LINE_OTHER)
            continue;
        if (kind == STRATA_CREDS_LINE_BAD) {
            snprintf(errmsg, errmsg_len, "%s:%d: expected \"ACCESS_KEY SECRET [NAME] [<EMAIL>]\"",
                     file, lineno);
            rc = STRATA_EINVAL;
            break;
        }
        const char *email;
        size_t el;
        name_email(&cl.name, &cl.name_len, &email, &el);
        rc = add_user(c, cap, cl.ak, cl.ak_len, cl.sk, cl.sk_len, cl.name, cl.name_len, email, el);
        if (rc == 0)
            c->users[c->n - 1].disabled = kind == STRATA_CREDS_LINE_DISABLED;
        if (rc)
            snprintf(errmsg, errmsg_len, "%s:%d: %s", file, lineno,
                     rc == STRATA_EINVAL ? "field empty or longer than 127 bytes"
                                         : strata_strerror(rc));
    }
    if (rc == 0 && ferror(f)) {
        snprintf(errmsg, errmsg_len, "%s: read error", file);
        rc = STRATA_EIO;
    }
    fclose(f);
    return rc;
}

int strata_creds_load(const char *root_access, const char *root_secret, const char *file,
                      struct strata_creds **out, char *errmsg, size_t errmsg_len)
{
    return strata_creds_load_named(root_access, root_secret, NULL, file, out, errmsg, errmsg_len);
}

int strata_creds_load_named(const char *root_access, const char *root_secret,
                            const char *root_name, const char *file, struct strata_creds **out,
                            char *errmsg, size_t errmsg_len)
{
    char dummy[1];
    if (!errmsg || errmsg_len == 0) {
        errmsg = dummy;
        errmsg_len = sizeof(dummy);
    }
    errmsg[0] = '\0';
    *out = NULL;
    if (!root_access || !root_secret) {
        snprintf(errmsg, errmsg_len, "root access key and secret are required");
        return STRATA_EINVAL;
    }
    struct strata_creds *c = calloc(1, sizeof(*c));
    if (!c)
        return STRATA_ENOMEM;
    size_t cap = 0;
    if (!root_name)
        root_name = "root";
    int rc = add_user(c, &cap, root_access, strlen(root_access), root_secret, strlen(root_secret),
                      root_name, strlen(root_name), NULL, 0);
    if (rc)
        snprintf(errmsg, errmsg_len,
                 "root access key, secret or display name empty or longer than 127 bytes");
    if (rc == 0 && file)
        rc = load_file(c, &cap, file, errmsg, errmsg_len);
    if (rc == 0) {
        c->sorted = malloc((c->n ? c->n : 1) * sizeof(*c->sorted));
        if (!c->sorted)
            rc = STRATA_ENOMEM;
    }
    if (rc == 0) {
        for (size_t i = 0; i < c->n; i++)
            c->sorted[i] = i;
        qsort_r(c->sorted, c->n, sizeof(*c->sorted), by_key_cmp, c->users);
        for (size_t i = 1; i < c->n; i++) {
            if (strcmp(c->users[c->sorted[i]].access_key,
                       c->users[c->sorted[i - 1]].access_key) == 0) {
                snprintf(errmsg, errmsg_len, "duplicate access key %s",
                         c->users[c->sorted[i]].access_key);
                rc = STRATA_EEXISTS;
                break;
            }
        }
    }
    if (rc) {
        strata_creds_destroy(c);
        return rc;
    }
    *out = c;
    return 0;
}

void strata_creds_destroy(struct strata_creds *c)
{
    if (!c)
        return;
    strata_secret_free(c->users, c->n * sizeof(*c->users));
    free(c->sorted);
    free(c);
}

size_t strata_creds_count(const struct strata_creds *c)
{
    return c ? c->n : 0;
}

const struct strata_cred *strata_creds_at(const struct strata_creds *c, size_t i)
{
    return c && i < c->n ? &c->users[i] : NULL;
}

const struct strata_cred *strata_creds_find(const struct strata_creds *c, const char *access_key)
{
    if (!c || !access_key)
        return NULL;
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct strata_cred *u = &c->users[c->sorted[mid]];
        int cmp = strcmp(access_key, u->access_key);
        if (cmp == 0)
            return u;
        if (cmp < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const struct strata_cred *strata_creds_find_email(const struct strata_creds *c, const char *email)
{
    if (!c || !email || !*email)
        return NULL;
    /* Only grants by e-mail ask, rarely: a scan is enough. */
    for (size_t i = 0; i < c->n; i++)
        if (c->users[i].email[0] && strcasecmp(c->users[i].email, email) == 0)
            return &c->users[i];
    return NULL;
}
