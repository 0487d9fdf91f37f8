/*
 * admin_audit.c - the Object Lock audit log over the admin API:
 * GET audit/verify checks every drive's hash chain
 * (strata_audit_verify_drive) and compares the copies of each set's
 * drives event by event (strata_audit_compare_drives), or the store's one
 * chain when it has one ("chain"; on RADOS the cluster's, as `strata audit
 * verify --rados-conf`); GET audit/tail[/N]
 * returns the last N entries (default 20, at most 1000) of the first
 * online drive of set 0, or of the store's one chain when it has one (on
 * RADOS: the cluster's, every gateway's entries; "drive" names its pool).
 * Reads files or the store; any connection thread.
 */
#include "admin_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata/err.h"

#define TAIL_DEFAULT 20
#define TAIL_MAX 1000
#define TAIL_CHUNK (64u * 1024)

/* What one chain's check found, added to j: entries, broken, last seq,
 * and the error or where and why it broke. */
static json_t *verify_json(json_t *j, int rc, const struct strata_audit_verify *v, bool *ok)
{
    json_object_set_new(j, "entries", json_integer((json_int_t)v->entries));
    json_object_set_new(j, "broken", json_boolean(rc == 0 && v->broken));
    json_object_set_new(j, "last_seq", json_integer((json_int_t)v->last_seq));
    if (rc) {
        *ok = false;
        json_object_set_new(j, "error", json_string(strata_strerror(rc)));
    } else if (v->broken) {
        *ok = false;
        json_object_set_new(j, "broken_at", json_integer((json_int_t)v->broken_at));
        json_object_set_new(j, "reason", json_string(v->reason));
    }
    return j;
}

static json_t *set_verify(struct strata_set *set, unsigned idx, bool *ok)
{
    unsigned n = strata_set_n(set);
    const char *dirs[64];
    unsigned nd = 0;
    json_t *drives = json_array();
    for (unsigned d = 0; d < n; d++) {
        const char *path = strata_set_drive_path(set, d);
        if (!strata_set_drive_online(set, d) || !path) {
            json_array_append_new(drives, json_pack("{s:i, s:s, s:s}", "index", (int)d, "path",
                                                    path ? path : "", "state", "offline"));
            continue;
        }
        if (nd < 64)
            dirs[nd++] = path;
        struct strata_audit_verify v;
        memset(&v, 0, sizeof(v));
        int rc = strata_audit_verify_drive(path, &v);
        json_t *j = json_pack("{s:i, s:s, s:s}", "index", (int)d, "path", path, "state",
                              "online");
        json_array_append_new(drives, verify_json(j, rc, &v, ok));
    }
    struct strata_audit_compare cmp;
    memset(&cmp, 0, sizeof(cmp));
    int rc = strata_audit_compare_drives(dirs, nd, &cmp);
    json_t *jc = json_pack("{s:I, s:b}", "events", (json_int_t)cmp.events, "differ",
                           rc == 0 && cmp.differ);
    if (rc) {
        *ok = false;
        json_object_set_new(jc, "error", json_string(strata_strerror(rc)));
    } else if (cmp.differ) {
        *ok = false;
        json_object_set_new(jc, "seq", json_integer((json_int_t)cmp.seq));
        json_object_set_new(jc, "drive_a", json_string(dirs[cmp.drive_a]));
        json_object_set_new(jc, "drive_b", json_string(dirs[cmp.drive_b]));
    }
    return json_pack("{s:i, s:o, s:o}", "index", (int)idx, "drives", drives, "compare", jc);
}

void strata_admin__audit_verify(struct strata_req *r, const char *arg)
{
    bool ok = true;
    struct strata_audit_verify v;
    char name[128];
    int crc = strata_meta_audit_verify(r->srv->meta, &v, name, sizeof(name));
    if (crc != STRATA_ENOTIMPL) { /* the store keeps one chain: that one */
        json_t *chain = verify_json(json_pack("{s:s}", "name", name), crc, &v, &ok);
        strata_admin__send_json(r, 200, json_pack("{s:b, s:o, s:[]}", "ok", ok, "chain", chain,
                                                  "sets"));
        return;
    }
    json_t *sets = json_array();
    for (unsigned i = 0; i < r->srv->nsets; i++)
        json_array_append_new(sets, set_verify(r->srv->sets[i], i, &ok));
    strata_admin__send_json(r, 200, json_pack("{s:b, s:o}", "ok", ok, "sets", sets));
}

/* The last n lines of fd (size bytes) as a malloc'ed buffer from the
 * start of the first of them; reads backwards in chunks. */
static char *tail_lines(int fd, off_t size, unsigned n, size_t *len)
{
    off_t start = size;
    unsigned seen = 0;
    char *buf = NULL;
    size_t have = 0;
    while (start > 0) {
        size_t step = start > (off_t)TAIL_CHUNK ? TAIL_CHUNK : (size_t)start;
        start -= (off_t)step;
        char *nb = malloc(have + step + 1);
        if (!nb) {
            free(buf);
            return NULL;
        }
        if (pread(fd, nb, step, start) != (ssize_t)step) {
            free(nb);
            free(buf);
            return NULL;
        }
        if (buf)
            memcpy(nb + step, buf, have);
        free(buf);
        buf = nb;
        have += step;
        /* Count newlines in the new chunk, ignoring the file's last one. */
        for (size_t i = step; i-- > 0;) {
            if (buf[i] == '\n' && (off_t)i + start != size - 1 && ++seen == n) {
                memmove(buf, buf + i + 1, have - i - 1);
                have -= i + 1;
                buf[have] = '\0';
                *len = have;
                return buf;
            }
        }
    }
    if (buf)
        buf[have] = '\0';
    *len = have;
    return buf ? buf : strdup("");
}

/* One line of the log as a JSON entry (kept as "unparsed" when it is not
 * one). */
static void entry_add(json_t *entries, const char *line, size_t len)
{
    if (len && line[len - 1] == '\n')
        len--;
    json_error_t je;
    json_t *e = json_loadb(line, len, 0, &je);
    json_array_append_new(entries, e ? e : json_pack("{s:s%}", "unparsed", line, len));
}

static int store_line(void *ud, const char *line, size_t len)
{
    entry_add(ud, line, len);
    return 0;
}

void strata_admin__audit_tail(struct strata_req *r, const char *arg)
{
    unsigned n = TAIL_DEFAULT;
    if (arg) {
        char *end;
        unsigned long v = strtoul(arg, &end, 10);
        if (*end || v == 0 || v > TAIL_MAX) {
            strata_admin__error(r, 400, "InvalidArgument",
                                "audit/tail/N: N is a number from 1 to 1000");
            return;
        }
        n = (unsigned)v;
    }
    json_t *entries = json_array();
    char where[128];
    int trc = strata_meta_audit_tail(r->srv->meta, n, store_line, entries, where, sizeof(where));
    if (trc != STRATA_ENOTIMPL) { /* the store keeps one chain */
        if (trc) {
            json_decref(entries);
            strata_admin__error(r, 500, "InternalError", "cannot read the audit log");
            return;
        }
        strata_admin__send_json(r, 200, json_pack("{s:s, s:o}", "drive", where, "entries", entries));
        return;
    }
    const char *drive = NULL;
    struct strata_set *set = r->srv->nsets ? r->srv->sets[0] : NULL;
    for (unsigned d = 0; set && d < strata_set_n(set) && !drive; d++)
        if (strata_set_drive_online(set, d))
            drive = strata_set_drive_path(set, d);
    char path[4096];
    snprintf(path, sizeof(path), "%s/audit.log", drive ? drive : "");
    int fd = drive ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0 && drive && errno != ENOENT) {
        json_decref(entries);
        strata_admin__error(r, 500, "InternalError", "cannot open the audit log");
        return;
    }
    if (fd >= 0) {
        struct stat st;
        size_t len = 0;
        char *text = fstat(fd, &st) == 0 ? tail_lines(fd, st.st_size, n, &len) : NULL;
        close(fd);
        if (!text) {
            json_decref(entries);
            strata_admin__error(r, 500, "InternalError", "cannot read the audit log");
            return;
        }
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save))
            entry_add(entries, line, strlen(line));
        free(text);
    }
    strata_admin__send_json(r, 200, json_pack("{s:s, s:o}", "drive", drive ? drive : "",
                                              "entries", entries));
}
