/*
 * audit.c - the object-lock audit log: append-only, hash-chained, one copy
 * per drive (DRIVE/audit.log), fsynced on the write quorum before an append
 * returns.
 *
 * Entry format (one line per entry, JSON, fields in this order):
 *   {"seq":N,"time":"<ISO 8601 of the lock clock>","lock_ms":L,"wall_ms":W,
 *    "user":..,"bucket":..,["key":..|"key_hex":..,]["version_id":..,]
 *    "action":..,"outcome":..,["detail":..,]"prev":"<64 hex>","hash":"<64 hex>"}\n
 * "hash" is the SHA-256 of the line's bytes before ',"hash"'; those bytes
 * include "prev", the previous entry's "hash" on the same drive (64 zeros for
 * the first entry), so changing, removing or reordering any entry breaks the
 * chain at that entry.  "seq" is shared by the copies of one event on all
 * drives and grows by one per event; a drive that was offline has gaps.  A
 * key that is not UTF-8 is written as "key_hex".
 *
 * Threads: any number of request threads append.  audit->mu serialises the
 * seq assignment and the write() of each drive's line (a few microseconds).
 * Then the appender asks every drive's syncer thread to make its line
 * durable and waits for them: the drives fdatasync in parallel, and one
 * fdatasync covers every line written before it started, so concurrent
 * appends share them (group commit).  Lock order: mu -> a drive's sync_mu.
 *
 * Tail anchor: the lock clock thread writes each drive's last durable entry
 * (seq and hash) into that drive's lock-clock file with the clock's mark
 * ("audit_seq", "audit_hash"), so entries removed from the end of a log
 * older than a few seconds are found: by verify, and at open, which records
 * them as "AuditEntriesMissing".  Whoever can rewrite lock-clock as well
 * can hide that; the anchor raises the bar, it is no proof.
 */
#include "meta_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "strata/assert.h"
#include "strata/hex.h"

#define AUDIT_FILE "audit.log"
#define AUDIT_LINE_MAX (32u * 1024)  /* longer lines are corrupt */
/* Bytes kept of each caller-supplied string; escaped (6x at worst) a line
 * stays below AUDIT_LINE_MAX. */
#define AUDIT_DETAIL_MAX 1024
#define AUDIT_NAME_MAX 256 /* user, bucket */
#define AUDIT_WORD_MAX 64  /* version id, action, outcome */
#define AUDIT_HASH_TAG ",\"hash\":\""
#define AUDIT_HEX 64

struct audit_drive {
    int fd;          /* -1: offline at open; kept open until close */
    _Atomic bool dead; /* a write or sync failed: no longer written to */
    unsigned set;
    const char *path; /* drive directory, for logs */
    uint64_t off;    /* end of the last complete line (under audit mu) */
    pthread_mutex_t sync_mu; /* protects the fields below */
    uint64_t written;        /* off, and the seq and hash of the entry ending there */
    uint64_t w_seq;
    char w_hash[AUDIT_HEX + 1];
    uint64_t s_seq;          /* seq and hash of the entry ending at synced */
    char s_hash[AUDIT_HEX + 1];
    pthread_cond_t sync_cv;  /* wakes the syncer */
    pthread_cond_t done_cv;  /* wakes appenders waiting for synced */
    uint64_t want;           /* highest offset an appender waits for */
    uint64_t synced;         /* bytes known durable */
    bool sync_failed;        /* after a failed fdatasync nothing is known */
    bool stop;
    pthread_t thr;
    bool thr_started;
    char last[AUDIT_HEX + 1]; /* hash of the last entry */
};

struct meta_audit {
    pthread_mutex_t mu;
    uint64_t next_seq;
    unsigned n;
    struct audit_drive *d;
};

static void hex32(const uint8_t h[32], char out[AUDIT_HEX + 1])
{
    strata_hex_encode(h, 32, out);
}

/* SHA-256 of line[0..len) as 64 lower-case hex characters. */
static void line_hash(const char *line, size_t len, char out[AUDIT_HEX + 1])
{
    uint8_t h[32];
    SHA256((const unsigned char *)line, len, h);
    hex32(h, out);
}

void strata_meta__iso8601(int64_t ms, char out[32])
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    int frac = (int)(ms - (int64_t)t * 1000);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", frac % 1000);
}

/* ---- verify ------------------------------------------------------------- */

static bool is_hex64(const char *s, size_t n);

/* The anchor lock_clock.c stored in drive/lock-clock; false when none. */
static bool anchor_read(const char *drive, uint64_t *seq, char hash[AUDIT_HEX + 1])
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/lock-clock", drive);
    json_error_t jerr;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    json_t *js = json_object_get(o, "audit_seq");
    const char *h = json_string_value(json_object_get(o, "audit_hash"));
    bool ok = json_is_integer(js) && json_integer_value(js) > 0 && h && is_hex64(h, strlen(h));
    if (ok) {
        *seq = (uint64_t)json_integer_value(js);
        memcpy(hash, h, AUDIT_HEX + 1);
    }
    json_decref(o);
    return ok;
}


static bool is_hex64(const char *s, size_t n)
{
    if (n != AUDIT_HEX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/*
 * Check one line (without its newline) against the previous entry's hash.
 * On success fills hash and seq; otherwise writes the reason.
 */
static bool check_line(const char *line, size_t len, const char *prev, uint64_t prev_seq,
                       bool first, char hash[AUDIT_HEX + 1], uint64_t *seq, char *why,
                       size_t whycap)
{
    const size_t tail = strlen(AUDIT_HASH_TAG) + AUDIT_HEX + 2; /* ,"hash":"<hex>"} */
    if (len < tail + 2 || memcmp(line + len - 2, "\"}", 2) != 0 ||
        memcmp(line + len - tail, AUDIT_HASH_TAG, strlen(AUDIT_HASH_TAG)) != 0) {
        snprintf(why, whycap, "entry does not end with its hash");
        return false;
    }
    const char *stored = line + len - tail + strlen(AUDIT_HASH_TAG);
    if (!is_hex64(stored, AUDIT_HEX)) {
        snprintf(why, whycap, "malformed hash");
        return false;
    }
    line_hash(line, len - tail, hash);
    if (memcmp(hash, stored, AUDIT_HEX) != 0) {
        snprintf(why, whycap, "hash mismatch: entry altered");
        return false;
    }
    json_error_t jerr;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        snprintf(why, whycap, "not a JSON object");
        return false;
    }
    json_t *jp = json_object_get(o, "prev");
    json_t *js = json_object_get(o, "seq");
    bool ok = false;
    if (!json_is_string(jp) || !json_is_integer(js) || json_integer_value(js) <= 0) {
        snprintf(why, whycap, "missing prev or seq");
    } else if (strcmp(json_string_value(jp), prev) != 0) {
        snprintf(why, whycap, "prev does not match the previous entry: entry removed or reordered");
    } else if (!first && (uint64_t)json_integer_value(js) <= prev_seq) {
        snprintf(why, whycap, "seq %lld does not follow %llu",
                 (long long)json_integer_value(js), (unsigned long long)prev_seq);
    } else {
        *seq = (uint64_t)json_integer_value(js);
        ok = true;
    }
    json_decref(o);
    return ok;
}

int strata_audit_verify_drive(const char *drive_dir, struct strata_audit_verify *out)
{
    memset(out, 0, sizeof(*out));
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", drive_dir, AUDIT_FILE);
    uint64_t aseq = 0;
    char ahash[AUDIT_HEX + 1];
    bool anchored = anchor_read(drive_dir, &aseq, ahash); /* before the log: it only grows */
    FILE *f = fopen(path, "re");
    if (!f && errno == ENOENT && anchored) {
        out->broken = true;
        snprintf(out->reason, sizeof(out->reason),
                 "audit.log is missing but lock-clock recorded seq %llu", (unsigned long long)aseq);
        return 0;
    }
    if (!f)
        return errno == ENOENT ? 0 : STRATA_EIO;
    char prev[AUDIT_HEX + 1];
    memset(prev, '0', AUDIT_HEX);
    prev[AUDIT_HEX] = 0;
    uint64_t prev_seq = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        uint64_t idx = out->entries;
        char hash[AUDIT_HEX + 1];
        uint64_t seq = 0;
        if (line[n - 1] != '\n') {
            snprintf(out->reason, sizeof(out->reason), "truncated entry (no newline)");
        } else if ((size_t)n > AUDIT_LINE_MAX) {
            snprintf(out->reason, sizeof(out->reason), "entry longer than %u bytes",
                     AUDIT_LINE_MAX);
        } else if (!check_line(line, (size_t)n - 1, prev, prev_seq, idx == 0, hash, &seq,
                               out->reason, sizeof(out->reason))) {
            /* reason set */
        } else if (anchored && (seq > aseq && prev_seq < aseq)) {
            snprintf(out->reason, sizeof(out->reason),
                     "entry seq %llu recorded in lock-clock is missing before this one",
                     (unsigned long long)aseq);
        } else if (anchored && seq == aseq && memcmp(hash, ahash, AUDIT_HEX) != 0) {
            snprintf(out->reason, sizeof(out->reason),
                     "hash differs from the one recorded in lock-clock: entry replaced");
        } else {
            memcpy(prev, hash, sizeof(prev));
            prev_seq = seq;
            out->last_seq = seq;
            out->entries++;
            continue;
        }
        out->broken = true;
        out->broken_at = idx;
        break;
    }
    if (!out->broken && anchored && prev_seq < aseq) {
        out->broken = true;
        out->broken_at = out->entries;
        snprintf(out->reason, sizeof(out->reason),
                 "log ends at seq %llu but lock-clock recorded seq %llu: entries removed from the end",
                 (unsigned long long)prev_seq, (unsigned long long)aseq);
    }
    if (ferror(f))
        rc = STRATA_EIO;
    free(line);
    fclose(f);
    return rc;
}

/* ---- compare across drives --------------------------------------------- */

/* ,"prev":"<64 hex>","hash":"<64 hex>"} after an entry's event fields. */
#define AUDIT_SUFFIX_LEN (9 + AUDIT_HEX + 1 + 9 + AUDIT_HEX + 2)

struct cmp_log {
    FILE *f;
    char *line;
    size_t cap;
    uint64_t seq;     /* of line; 0 when done */
    const char *body; /* the event fields of line */
    size_t body_len;
};

/* Next entry of l; l->seq 0 at the end or at a line verify would refuse. */
static void cmp_next(struct cmp_log *l)
{
    l->seq = 0;
    if (!l->f)
        return;
    ssize_t n = getline(&l->line, &l->cap, l->f);
    if (n <= 0 || l->line[n - 1] != '\n' || (size_t)n - 1 < AUDIT_SUFFIX_LEN + 8 ||
        strncmp(l->line, "{\"seq\":", 7) != 0)
        return;
    char *end;
    unsigned long long seq = strtoull(l->line + 7, &end, 10);
    size_t suffix = (size_t)n - 1 - AUDIT_SUFFIX_LEN;
    if (end == l->line + 7 || seq == 0 || (size_t)(end - l->line) > suffix ||
        memcmp(l->line + suffix, ",\"prev\":\"", 9) != 0)
        return;
    l->seq = seq;
    l->body = end;
    l->body_len = suffix - (size_t)(end - l->line);
}

int strata_audit_compare_drives(const char *const *drive_dirs, unsigned n,
                                struct strata_audit_compare *out)
{
    memset(out, 0, sizeof(*out));
    struct cmp_log *l = calloc(n ? n : 1, sizeof(*l));
    if (!l)
        return STRATA_ENOMEM;
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", drive_dirs[i], AUDIT_FILE);
        l[i].f = fopen(path, "re");
        if (!l[i].f && errno != ENOENT)
            rc = STRATA_EIO;
        cmp_next(&l[i]);
    }
    while (rc == 0 && !out->differ) {
        /* The smallest seq among the drives' current entries. */
        uint64_t seq = 0;
        for (unsigned i = 0; i < n; i++)
            if (l[i].seq && (!seq || l[i].seq < seq))
                seq = l[i].seq;
        if (!seq)
            break;
        out->events++;
        int first = -1;
        for (unsigned i = 0; i < n; i++) {
            if (l[i].seq != seq)
                continue;
            if (first < 0) {
                first = (int)i;
            } else if (l[i].body_len != l[first].body_len ||
                       memcmp(l[i].body, l[first].body, l[i].body_len) != 0) {
                out->differ = true;
                out->seq = seq;
                out->drive_a = (unsigned)first;
                out->drive_b = i;
                break;
            }
        }
        for (unsigned i = 0; i < n && !out->differ; i++)
            if (l[i].seq == seq)
                cmp_next(&l[i]);
    }
    for (unsigned i = 0; i < n; i++) {
        if (l[i].f && ferror(l[i].f))
            rc = STRATA_EIO;
        if (l[i].f)
            fclose(l[i].f);
        free(l[i].line);
    }
    free(l);
    return rc;
}

/* ---- open / close ------------------------------------------------------- */

/*
 * Find the drive's last complete entry: its hash and seq.  A torn last line
 * (a crash during an append, before it was acknowledged) is cut off and
 * reported in *torn so the caller records that it did so.
 */
static int tail_load(struct strata_meta *m, struct audit_drive *ad, uint64_t *seq, size_t *torn)
{
    struct stat st;
    if (fstat(ad->fd, &st) < 0)
        return STRATA_EIO;
    uint64_t size = (uint64_t)st.st_size;
    *seq = 0;
    *torn = 0;
    memset(ad->last, '0', AUDIT_HEX);
    ad->last[AUDIT_HEX] = 0;
    ad->off = size;
    if (size == 0)
        return 0;
    size_t want = size < 2 * AUDIT_LINE_MAX ? (size_t)size : 2 * AUDIT_LINE_MAX;
    char *buf = malloc(want);
    if (!buf)
        return STRATA_ENOMEM;
    ssize_t got = pread(ad->fd, buf, want, (off_t)(size - want));
    if (got != (ssize_t)want) {
        free(buf);
        return STRATA_EIO;
    }
    /* end = one past the newline of the last complete line. */
    size_t end = want;
    while (end > 0 && buf[end - 1] != '\n')
        end--;
    if (end == 0 && size > want) {
        free(buf);
        strata_log(&m->log, STRATA_LOG_ERR, "meta",
                   "drive %s: audit log ends in %zu bytes without a newline; not appending to it",
                   ad->path, want);
        return STRATA_ECORRUPT;
    }
    if (end < want) {
        *torn = want - end;
        if (ftruncate(ad->fd, (off_t)(size - *torn)) < 0 || fsync(ad->fd) < 0) {
            free(buf);
            return STRATA_EIO;
        }
        ad->off = size - *torn;
    }
    if (end > 0) {
        size_t start = end - 1;
        while (start > 0 && buf[start - 1] != '\n')
            start--;
        const char *line = buf + start;
        size_t len = end - 1 - start;
        const size_t tail = strlen(AUDIT_HASH_TAG) + AUDIT_HEX + 2;
        json_error_t jerr;
        json_t *o = json_loadb(line, len, 0, &jerr);
        json_t *js = o ? json_object_get(o, "seq") : NULL;
        if (len >= tail && json_is_integer(js) && json_integer_value(js) > 0 &&
            is_hex64(line + len - tail + strlen(AUDIT_HASH_TAG), AUDIT_HEX)) {
            *seq = (uint64_t)json_integer_value(js);
            memcpy(ad->last, line + len - tail + strlen(AUDIT_HASH_TAG), AUDIT_HEX);
        } else {
            /* Chain on from zeros: verify reports this entry as broken,
             * which it is, and the entries after it stay checkable. */
            strata_log(&m->log, STRATA_LOG_ERR, "meta",
                       "drive %s: last audit entry is corrupt; run strata audit verify", ad->path);
        }
        json_decref(o);
    }
    free(buf);
    return 0;
}

static void *syncer(void *arg)
{
    struct audit_drive *ad = arg;
    pthread_mutex_lock(&ad->sync_mu);
    for (;;) {
        while (!ad->stop && (ad->want <= ad->synced || ad->sync_failed))
            pthread_cond_wait(&ad->sync_cv, &ad->sync_mu);
        if (ad->want <= ad->synced || ad->sync_failed)
            break; /* stopping, nothing pending */
        /* Every byte below written was written before the sync starts. */
        uint64_t target = ad->written, t_seq = ad->w_seq;
        char t_hash[AUDIT_HEX + 1];
        memcpy(t_hash, ad->w_hash, sizeof(t_hash));
        pthread_mutex_unlock(&ad->sync_mu);
        int rc = fdatasync(ad->fd);
        pthread_mutex_lock(&ad->sync_mu);
        if (rc == 0) {
            if (target > ad->synced) {
                ad->synced = target;
                ad->s_seq = t_seq;
                memcpy(ad->s_hash, t_hash, sizeof(t_hash));
            }
        } else {
            /* After a failed fsync the page cache state is unknown. */
            ad->sync_failed = true;
            ad->dead = true;
        }
        pthread_cond_broadcast(&ad->done_cv);
    }
    pthread_mutex_unlock(&ad->sync_mu);
    return NULL;
}

/* ---- tail anchor -------------------------------------------------------- */

bool strata_meta__audit_anchor(struct strata_meta *m, unsigned set, unsigned d, uint64_t *seq,
                               char hash[65])
{
    struct meta_audit *a = m->audit;
    if (!a)
        return false;
    unsigned i = 0;
    for (unsigned s = 0; s < set; s++)
        i += m->sets[s].n;
    struct audit_drive *ad = &a->d[i + d];
    if (ad->fd < 0)
        return false;
    pthread_mutex_lock(&ad->sync_mu);
    *seq = ad->s_seq;
    memcpy(hash, ad->s_hash, AUDIT_HEX + 1);
    pthread_mutex_unlock(&ad->sync_mu);
    return *seq > 0;
}

/* At open: the log must still reach the entry its anchor names. */
static void anchor_check(struct strata_meta *m, struct audit_drive *ad, uint64_t seq, char *note,
                         size_t cap)
{
    uint64_t aseq;
    char ahash[AUDIT_HEX + 1];
    if (!anchor_read(ad->path, &aseq, ahash))
        return;
    if (seq > aseq || (seq == aseq && memcmp(ahash, ad->last, AUDIT_HEX) == 0))
        return; /* entries before the tail are verify's business */
    strata_log(&m->log, STRATA_LOG_ERR, "meta",
               "drive %s: audit log ends at seq %llu but its last durable entry was seq %llu: "
               "entries were removed or altered; run strata audit verify",
               ad->path, (unsigned long long)seq, (unsigned long long)aseq);
    size_t l = strlen(note);
    snprintf(note + l, cap - l, "%s%s: log ends at seq %llu, anchor seq %llu", l ? "; " : "",
             ad->path, (unsigned long long)seq, (unsigned long long)aseq);
}

static void note_append(struct strata_meta *m, const char *action, const char *outcome,
                        const char *detail)
{
    struct strata_audit_event ev = {.user = "-", .bucket = "-", .action = action,
                                    .outcome = outcome, .detail = detail};
    int rc = strata_meta_audit_append(m, &ev);
    if (rc)
        strata_log(&m->log, STRATA_LOG_ERR, "meta", "audit: cannot record %s: %s", action,
                   strata_errname(rc));
}

static void audit_free(struct meta_audit *a)
{
    for (unsigned i = 0; i < a->n; i++) {
        struct audit_drive *ad = &a->d[i];
        if (ad->thr_started) {
            pthread_mutex_lock(&ad->sync_mu);
            ad->stop = true;
            pthread_cond_signal(&ad->sync_cv);
            pthread_mutex_unlock(&ad->sync_mu);
            pthread_join(ad->thr, NULL);
        }
        if (ad->fd >= 0)
            close(ad->fd);
        pthread_mutex_destroy(&ad->sync_mu);
        pthread_cond_destroy(&ad->sync_cv);
        pthread_cond_destroy(&ad->done_cv);
    }
    pthread_mutex_destroy(&a->mu);
    free(a->d);
    free(a);
}

int strata_meta__audit_open(struct strata_meta *m)
{
    struct meta_audit *a = calloc(1, sizeof(*a));
    if (!a)
        return STRATA_ENOMEM;
    pthread_mutex_init(&a->mu, NULL);
    unsigned total = 0;
    for (unsigned s = 0; s < m->nsets; s++)
        total += m->sets[s].n;
    a->d = calloc(total, sizeof(*a->d));
    if (!a->d) {
        audit_free(a);
        return STRATA_ENOMEM;
    }
    uint64_t max_seq = 0;
    char torn_note[512] = "", missing_note[512] = "";
    for (unsigned s = 0; s < m->nsets; s++) {
        for (unsigned d = 0; d < m->sets[s].n; d++) {
            struct audit_drive *ad = &a->d[a->n++];
            ad->fd = -1;
            ad->set = s;
            ad->path = strata_set_drive_path(m->sets[s].set, d);
            pthread_mutex_init(&ad->sync_mu, NULL);
            pthread_cond_init(&ad->sync_cv, NULL);
            pthread_cond_init(&ad->done_cv, NULL);
            if (!m->sets[s].drives[d].db)
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", ad->path, AUDIT_FILE);
            ad->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
            if (ad->fd < 0) {
                strata_log(&m->log, STRATA_LOG_ERR, "meta", "open %s: %s", path,
                           strerror(errno));
                continue;
            }
            uint64_t seq;
            size_t torn;
            int rc = tail_load(m, ad, &seq, &torn);
            if (rc) {
                close(ad->fd);
                ad->fd = -1;
                continue;
            }
            ad->written = ad->synced = ad->want = ad->off;
            ad->w_seq = ad->s_seq = seq;
            memcpy(ad->w_hash, ad->last, sizeof(ad->last));
            memcpy(ad->s_hash, ad->last, sizeof(ad->last));
            anchor_check(m, ad, seq, missing_note, sizeof(missing_note));
            if (pthread_create(&ad->thr, NULL, syncer, ad) != 0) {
                audit_free(a);
                return STRATA_ENOMEM;
            }
            ad->thr_started = true;
            if (seq > max_seq)
                max_seq = seq;
            if (torn) {
                strata_log(&m->log, STRATA_LOG_WARN, "meta",
                           "drive %s: cut %zu bytes of an incomplete last audit entry", ad->path,
                           torn);
                size_t l = strlen(torn_note);
                snprintf(torn_note + l, sizeof(torn_note) - l, "%s%s: %zu bytes", l ? "; " : "",
                         ad->path, torn);
            }
        }
    }
    a->next_seq = max_seq + 1;
    m->audit = a;
    /* What open found is itself recorded, so it never goes unseen. */
    if (missing_note[0])
        note_append(m, "AuditEntriesMissing", "detected", missing_note);
    if (torn_note[0])
        note_append(m, "AuditTornEntry", "repaired", torn_note);
    return 0;
}

void strata_meta__audit_close(struct strata_meta *m)
{
    if (!m->audit)
        return;
    audit_free(m->audit);
    m->audit = NULL;
}

/* ---- append ------------------------------------------------------------- */

static int set_str(json_t *o, const char *name, const char *v)
{
    json_t *j = json_string(v);
    if (!j)
        return STRATA_EINVAL; /* not UTF-8 */
    return json_object_set_new(o, name, j) == 0 ? 0 : STRATA_ENOMEM;
}

/* Length of v cut to at most cap bytes, not inside a UTF-8 sequence. */
static size_t utf8_cut(const char *v, size_t cap)
{
    size_t n = strnlen(v, cap + 1);
    if (n <= cap)
        return n;
    n = cap;
    while (n > 0 && ((unsigned char)v[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/*
 * Set a caller-supplied string, cut to cap bytes (so every line stays far
 * below AUDIT_LINE_MAX).  NULL v sets fallback (or nothing when fallback is
 * NULL); a string that is not UTF-8 is recorded as bad rather than
 * dropping the event.  STRATA_EINVAL when v is not UTF-8 and bad is NULL.
 */
static int set_field(json_t *o, const char *name, const char *v, size_t cap,
                     const char *fallback, const char *bad)
{
    if (!v)
        return fallback ? set_str(o, name, fallback) : 0;
    json_t *j = json_stringn(v, utf8_cut(v, cap));
    if (!j)
        return bad ? set_str(o, name, bad) : STRATA_EINVAL;
    return json_object_set_new(o, name, j) == 0 ? 0 : STRATA_ENOMEM;
}

/* The event's fields between "seq" and "prev", as ',"time":...' text. */
static int body_build(struct strata_meta *m, const struct strata_audit_event *ev, char **out)
{
    json_t *o = json_object();
    if (!o)
        return STRATA_ENOMEM;
    int64_t lock_ms = strata_meta_lock_now_ms(m);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char iso[32];
    strata_meta__iso8601(lock_ms, iso);
    int rc = set_str(o, "time", iso);
    rc = rc ? rc : json_object_set_new(o, "lock_ms", json_integer(lock_ms));
    rc = rc ? rc
            : json_object_set_new(o, "wall_ms",
                                  json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
    rc = rc ? rc : set_field(o, "user", ev->user, AUDIT_NAME_MAX, "-", "-");
    rc = rc ? rc : set_field(o, "bucket", ev->bucket, AUDIT_NAME_MAX, "-", "-");
    if (!rc && ev->key && set_field(o, "key", ev->key, STRATA_KEY_MAX, NULL, NULL) != 0) {
        size_t kl = utf8_cut(ev->key, STRATA_KEY_MAX);
        char *hex = malloc(2 * kl + 1);
        if (!hex) {
            rc = STRATA_ENOMEM;
        } else {
            strata_hex_encode((const uint8_t *)ev->key, kl, hex);
            rc = set_str(o, "key_hex", hex);
            free(hex);
        }
    }
    rc = rc ? rc : set_field(o, "version_id", ev->version_id, AUDIT_WORD_MAX, NULL, "-");
    rc = rc ? rc : set_field(o, "action", ev->action, AUDIT_WORD_MAX, "-", "-");
    rc = rc ? rc : set_field(o, "outcome", ev->outcome, AUDIT_WORD_MAX, "-", "-");
    rc = rc ? rc : set_field(o, "detail", ev->detail, AUDIT_DETAIL_MAX, NULL, "(not UTF-8)");
    char *s = rc ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (rc)
        return rc;
    if (!s)
        return STRATA_ENOMEM;
    size_t n = strlen(s);
    STRATA_ASSERT(n >= 2 && s[0] == '{' && s[n - 1] == '}');
    s[0] = ',';   /* ',"time":...' follows '{"seq":N' */
    s[n - 1] = 0; /* the caller appends prev and hash */
    *out = s;
    return 0;
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Ask ad's syncer to make the bytes below upto durable. */
static void sync_ask(struct audit_drive *ad, uint64_t upto)
{
    pthread_mutex_lock(&ad->sync_mu);
    if (ad->want < upto) {
        ad->want = upto;
        pthread_cond_signal(&ad->sync_cv);
    }
    pthread_mutex_unlock(&ad->sync_mu);
}

/* Wait until they are; false when the drive's fdatasync failed. */
static bool sync_wait(struct audit_drive *ad, uint64_t upto)
{
    pthread_mutex_lock(&ad->sync_mu);
    while (ad->synced < upto && !ad->sync_failed)
        pthread_cond_wait(&ad->done_cv, &ad->sync_mu);
    bool ok = ad->synced >= upto;
    pthread_mutex_unlock(&ad->sync_mu);
    return ok;
}

int strata_meta_audit_append(struct strata_meta *m, const struct strata_audit_event *ev)
{
    STRATA_ASSERT(m && ev);
    struct meta_audit *a = m->audit;
    if (!a)
        return STRATA_EINTERNAL;
    char *body = NULL;
    int rc = body_build(m, ev, &body);
    if (rc)
        return rc;
    size_t blen = strlen(body);
    size_t cap = blen + 64 + 3 * AUDIT_HEX;
    char *line = malloc(cap);
    if (!line) {
        free(body);
        return STRATA_ENOMEM;
    }
    bool *ok = calloc(a->n, sizeof(*ok));
    uint64_t *upto = calloc(a->n, sizeof(*upto));
    unsigned *got = calloc(m->nsets, sizeof(*got));
    if (!ok || !upto || !got) {
        free(ok);
        free(upto);
        free(got);
        free(line);
        free(body);
        return STRATA_ENOMEM;
    }

    pthread_mutex_lock(&a->mu);
    uint64_t seq = a->next_seq++;
    for (unsigned i = 0; i < a->n; i++) {
        struct audit_drive *ad = &a->d[i];
        ok[i] = false;
        if (ad->fd < 0 || ad->dead)
            continue;
        int n = snprintf(line, cap, "{\"seq\":%llu%s,\"prev\":\"%s\"", (unsigned long long)seq,
                         body, ad->last);
        STRATA_ASSERT(n > 0 && (size_t)n + strlen(AUDIT_HASH_TAG) + AUDIT_HEX + 3 < cap);
        char hash[AUDIT_HEX + 1];
        line_hash(line, (size_t)n, hash);
        n += snprintf(line + n, cap - (size_t)n, "%s%s\"}\n", AUDIT_HASH_TAG, hash);
        if (!write_all(ad->fd, line, (size_t)n)) {
            /* Take back a partial line so the chain stays whole; a drive
             * that cannot be is no longer written to. */
            strata_log(&m->log, STRATA_LOG_ERR, "meta", "drive %s: audit append failed: %s",
                       ad->path, strerror(errno));
            if (ftruncate(ad->fd, (off_t)ad->off) < 0)
                ad->dead = true;
            continue;
        }
        ad->off += (uint64_t)n;
        memcpy(ad->last, hash, sizeof(ad->last));
        pthread_mutex_lock(&ad->sync_mu);
        ad->written = ad->off;
        ad->w_seq = seq;
        memcpy(ad->w_hash, hash, sizeof(ad->w_hash));
        pthread_mutex_unlock(&ad->sync_mu);
        upto[i] = ad->off;
        ok[i] = true;
    }
    pthread_mutex_unlock(&a->mu);
    free(line);
    free(body);

    for (unsigned i = 0; i < a->n; i++)
        if (ok[i])
            sync_ask(&a->d[i], upto[i]);
    for (unsigned i = 0; i < a->n; i++) {
        if (!ok[i])
            continue;
        if (sync_wait(&a->d[i], upto[i]))
            got[a->d[i].set]++;
        else
            strata_log(&m->log, STRATA_LOG_ERR, "meta", "drive %s: audit fsync failed",
                       a->d[i].path);
    }
    rc = 0;
    for (unsigned s = 0; s < m->nsets; s++)
        if (got[s] < strata_set_write_quorum(m->sets[s].set))
            rc = STRATA_EQUORUM;
    free(ok);
    free(upto);
    free(got);
    return rc;
}
