/*
 * clock_mark.c - the local backend's high-water mark of the retention clock
 * (the seam's clock_mark_read/advance; the clock itself is lock_clock.c's).
 *
 * DRIVE/lock-clock, a JSON object {"format":1,"lock_ms":..,"wall_ms":..
 * [,"audit_seq":..,"audit_hash":..]} (the audit fields are the drive's last
 * durable audit entry, see audit_files.c), written tmp + fsync + rename +
 * fsync of the drive directory on every drive.  The mark read at open is
 * each set's write-quorum-th highest of its drives' marks (so a mark forged
 * or corrupted on fewer drives than the write quorum moves nothing), and
 * the lowest of the sets' marks.
 */
#include "local.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define CLOCK_FILE "lock-clock"
#define CLOCK_TMP "lock-clock.tmp"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The drive's mark, or -1 when absent or unreadable. */
static int64_t mark_read(struct strata_meta *m, const char *drive)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", drive, CLOCK_FILE);
    json_error_t jerr;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        if (access(path, F_OK) == 0)
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "%s: unreadable: %s", path, jerr.text);
        return -1;
    }
    json_t *v = json_object_get(o, "lock_ms");
    json_t *f = json_object_get(o, "format");
    int64_t ms = -1;
    if (json_is_integer(f) && json_integer_value(f) == 1 && json_is_integer(v) &&
        json_integer_value(v) >= 0)
        ms = (int64_t)json_integer_value(v);
    else
        strata_log(&m->log, STRATA_LOG_WARN, "meta", "%s: not a lock clock mark", path);
    json_decref(o);
    return ms;
}

static int mark_write(struct strata_meta *m, unsigned set, unsigned d, int64_t lock_ms)
{
    const char *drive = strata_set_drive_path(m->sets[set].set, d);
    char tmp[4096], dst[4096], body[256], anchor[128] = "", hash[65];
    snprintf(tmp, sizeof(tmp), "%s/%s", drive, CLOCK_TMP);
    snprintf(dst, sizeof(dst), "%s/%s", drive, CLOCK_FILE);
    uint64_t seq;
    if (strata_meta__local_audit_anchor(m, set, d, &seq, hash))
        snprintf(anchor, sizeof(anchor), ",\"audit_seq\":%llu,\"audit_hash\":\"%s\"",
                 (unsigned long long)seq, hash);
    int n = snprintf(body, sizeof(body), "{\"format\":1,\"lock_ms\":%lld,\"wall_ms\":%lld%s}\n",
                     (long long)lock_ms, (long long)wall_ms(), anchor);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return STRATA_EIO;
    bool ok = write(fd, body, (size_t)n) == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, dst) < 0)
        return STRATA_EIO;
    int dfd = open(drive, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return STRATA_EIO;
    ok = fsync(dfd) == 0;
    close(dfd);
    return ok ? 0 : STRATA_EIO;
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int64_t strata_meta__local_clock_mark_read(struct strata_meta *m)
{
    int64_t mark = -1;
    for (unsigned s = 0; s < m->nsets; s++) {
        int64_t v[STRATA_DRIVES_MAX];
        unsigned n = 0;
        for (unsigned d = 0; d < m->sets[s].n; d++) {
            if (!m->sets[s].drives[d].db)
                continue;
            int64_t ms = mark_read(m, strata_set_drive_path(m->sets[s].set, d));
            if (ms >= 0)
                v[n++] = ms;
        }
        unsigned wq = strata_set_write_quorum(m->sets[s].set);
        if (n < wq)
            continue; /* a new set, or too few marks to trust */
        qsort(v, n, sizeof(v[0]), cmp_desc);
        if (mark < 0 || v[wq - 1] < mark)
            mark = v[wq - 1];
    }
    return mark;
}

/* Every open drive gets the mark; a drive that cannot take it is logged
 * and the others still do (the quorum rule at open copes with a few). */
int strata_meta__local_clock_mark_advance(struct strata_meta *m, int64_t lock_ms)
{
    int rc = 0;
    for (unsigned s = 0; s < m->nsets; s++)
        for (unsigned d = 0; d < m->sets[s].n; d++) {
            if (!m->sets[s].drives[d].db)
                continue;
            if (mark_write(m, s, d, lock_ms) != 0) {
                strata_log(&m->log, STRATA_LOG_ERR, "meta", "drive %s: cannot persist %s: %s",
                           strata_set_drive_path(m->sets[s].set, d), CLOCK_FILE,
                           strerror(errno));
                rc = STRATA_EIO;
            }
        }
    return rc;
}

bool strata_meta__local_anchor_read(const char *drive, uint64_t *seq, char hash[65])
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", drive, CLOCK_FILE);
    json_error_t jerr;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    json_t *js = json_object_get(o, "audit_seq");
    const char *h = json_string_value(json_object_get(o, "audit_hash"));
    bool ok = json_is_integer(js) && json_integer_value(js) > 0 && h &&
              strata_meta__hex64_valid(h, strlen(h));
    if (ok) {
        *seq = (uint64_t)json_integer_value(js);
        memcpy(hash, h, 65);
    }
    json_decref(o);
    return ok;
}
