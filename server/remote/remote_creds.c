/*
 * remote_creds.c - --tier-credentials FILE (remote_creds.h), with jansson.
 * The file is opened once and its mode and owner checked on that open
 * descriptor (fstat), so what is checked is what is read.
 */
#include "remote_creds.h"
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CREDS_FILE_MAX (1u << 20)

void strata_remote_creds_fini(struct strata_remote_creds *cs)
{
    if (!cs)
        return;
    strata_secret_free(cs->v, cs->n * sizeof(*cs->v));
    cs->v = NULL;
    cs->n = 0;
}

const struct strata_remote_cred *strata_remote_creds_find(const struct strata_remote_creds *cs,
                                                          const char *name)
{
    for (size_t i = 0; cs && name && i < cs->n; i++)
        if (strcmp(cs->v[i].name, name) == 0)
            return &cs->v[i];
    return NULL;
}

/* A string field into dst; required or optional. */
static int field(const char *path, const char *name, json_t *o, const char *key, char *dst,
                 size_t max, int required, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v && !required)
        return 0;
    const char *s = json_string_value(v);
    if (!s || !s[0] || strlen(s) >= max || strpbrk(s, "\r\n")) {
        snprintf(err, errlen, "%s: \"%s\": \"%s\" must be a string of 1 to %zu characters",
                 path, name, key, max - 1);
        return -1;
    }
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int parse(const char *path, const char *text, size_t len, struct strata_remote_creds *out,
                 char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        if (root)
            snprintf(err, errlen, "%s: want a JSON object {\"NAME\": {...}}", path);
        else
            snprintf(err, errlen, "%s: line %d: %s", path, je.line, je.text);
        json_decref(root);
        return -1;
    }
    size_t n = json_object_size(root);
    out->v = calloc(n ? n : 1, sizeof(*out->v));
    if (!out->v) {
        json_decref(root);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *name;
    json_t *o;
    int rc = 0;
    json_object_foreach(root, name, o) {
        struct strata_remote_cred *c = &out->v[out->n];
        if (!name[0] || strlen(name) > STRATA_REMOTE_NAME_MAX || !json_is_object(o)) {
            snprintf(err, errlen, "%s: \"%s\": want a name of 1 to %d characters and an object",
                     path, name, STRATA_REMOTE_NAME_MAX);
            rc = -1;
            break;
        }
        const char *known[] = {"access_key", "secret_key", "region"};
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) {
            size_t i = 0;
            while (i < 3 && strcmp(k, known[i]) != 0)
                i++;
            if (i == 3) {
                snprintf(err, errlen, "%s: \"%s\": unknown field \"%s\"", path, name, k);
                rc = -1;
            }
        }
        memcpy(c->name, name, strlen(name) + 1);
        snprintf(c->region, sizeof(c->region), "us-east-1");
        if (rc || field(path, name, o, "access_key", c->access_key, sizeof(c->access_key), 1, err,
                        errlen) ||
            field(path, name, o, "secret_key", c->secret_key, sizeof(c->secret_key), 1, err,
                  errlen) ||
            field(path, name, o, "region", c->region, sizeof(c->region), 0, err, errlen)) {
            rc = -1;
            break;
        }
        out->n++;
    }
    json_decref(root);
    if (rc)
        strata_remote_creds_fini(out);
    return rc;
}

int strata_remote_creds_load(const char *path, struct strata_remote_creds *out, char *err,
                             size_t errlen)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s: owned by uid %u, not by this daemon's user (uid %u): refused",
                 path, (unsigned)st.st_uid, (unsigned)geteuid());
        close(fd);
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen,
                 "%s: mode %04o lets others read the secret keys: refused (chmod 600 it)", path,
                 (unsigned)(st.st_mode & 07777));
        close(fd);
        return -1;
    }
    if (st.st_size > CREDS_FILE_MAX) {
        snprintf(err, errlen, "%s: larger than %u bytes", path, CREDS_FILE_MAX);
        close(fd);
        return -1;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (text && got < (size_t)st.st_size) {
        ssize_t r = read(fd, text + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!text || got != (size_t)st.st_size) {
        snprintf(err, errlen, "%s: cannot read it", path);
        free(text);
        return -1;
    }
    int rc = parse(path, text, got, out, err, errlen);
    explicit_bzero(text, got);
    free(text);
    return rc;
}
