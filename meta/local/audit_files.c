/*
 * audit_files.c - the local backend's audit log storage (the seam's
 * audit_*; the entries and their hash chain are audit.c's): one copy per
 * drive, DRIVE/audit.log, fsynced on the write quorum before an append
 * returns.  A drive's copy chains its own entries ("prev" is the hash of
 * the drive's previous line), so each copy is sealed separately.
 *
 * Threads: any number of request threads append.  audit->mu serialises the
 * seq assignment and the write() of each drive's line (a few microseconds).
 * Then the appender asks every drive's syncer thread to make its line
 * durable and waits for them: the drives fdatasync in parallel, and one
 * fdatasync covers every line written before it started, so concurrent
 * appends share them (group commit).  Lock order: mu -> a drive's sync_mu.
 *
 * Tail anchor: the lock clock's mark (clock_mark.c) carries each drive's
 * last durable entry (seq and hash), so entries removed from the end of a
 * log older than a few seconds are found: by verify, and at open, which
 * reports them for an "AuditEntriesMissing" entry.  Whoever can rewrite
 * lock-clock as well can hide that; the anchor raises the bar, it is no
 * proof.
 */
#include "local.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata/assert.h"
#include "strata/thread.h"

#define AUDIT_FILE "audit.log"
#define AUDIT_LINE_MAX STRATA_META__AUDIT_LINE_MAX
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

/* ---- open / close ------------------------------------------------------- */

/*
 * Find the drive's last complete entry: its hash and seq.  A torn last line
 * (a crash during an append, before it was acknowledged) is cut off and
 * reported in *torn so the caller records that it did so.
 */
static int tail_load(struct strata_meta *m, struct audit_drive *ad,
                     strata_meta__audit_tail_fn tail, uint64_t *seq, size_t *torn)
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
        if (!tail(buf + start, end - 1 - start, seq, ad->last)) {
            /* Chain on from zeros: verify reports this entry as broken,
             * which it is, and the entries after it stay checkable. */
            strata_log(&m->log, STRATA_LOG_ERR, "meta",
                       "drive %s: last audit entry is corrupt; run strata audit verify", ad->path);
        }
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

bool strata_meta__local_audit_anchor(struct strata_meta *m, unsigned set, unsigned d,
                                     uint64_t *seq, char hash[65])
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
    if (!strata_meta__local_anchor_read(ad->path, &aseq, ahash))
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

static void audit_free(struct meta_audit *a)
{
    for (unsigned i = 0; i < a->n; i++) {
        struct audit_drive *ad = &a->d[i];
        if (ad->thr_started)
            strata_thread_stop(ad->thr, &ad->sync_mu, &ad->sync_cv, &ad->stop);
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

int strata_meta__local_audit_open(struct strata_meta *m, strata_meta__audit_tail_fn tail,
                                  struct strata_meta__audit_found *found)
{
    memset(found, 0, sizeof(*found));
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
            int rc = tail_load(m, ad, tail, &seq, &torn);
            if (rc) {
                close(ad->fd);
                ad->fd = -1;
                continue;
            }
            ad->written = ad->synced = ad->want = ad->off;
            ad->w_seq = ad->s_seq = seq;
            memcpy(ad->w_hash, ad->last, sizeof(ad->last));
            memcpy(ad->s_hash, ad->last, sizeof(ad->last));
            anchor_check(m, ad, seq, found->missing, sizeof(found->missing));
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
                size_t l = strlen(found->torn);
                snprintf(found->torn + l, sizeof(found->torn) - l, "%s%s: %zu bytes",
                         l ? "; " : "", ad->path, torn);
            }
        }
    }
    a->next_seq = max_seq + 1;
    m->audit = a;
    return 0;
}

void strata_meta__local_audit_close(struct strata_meta *m)
{
    if (!m->audit)
        return;
    audit_free(m->audit);
    m->audit = NULL;
}

/* ---- append ------------------------------------------------------------- */

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

int strata_meta__local_audit_append(struct strata_meta *m, const char *body,
                                    strata_meta__audit_seal_fn seal)
{
    struct meta_audit *a = m->audit;
    if (!a)
        return STRATA_EINTERNAL;
    size_t cap = strlen(body) + STRATA_META__AUDIT_SEAL_MAX;
    char *line = malloc(cap);
    if (!line)
        return STRATA_ENOMEM;
    bool *ok = calloc(a->n, sizeof(*ok));
    uint64_t *upto = calloc(a->n, sizeof(*upto));
    unsigned *got = calloc(m->nsets, sizeof(*got));
    if (!ok || !upto || !got) {
        free(ok);
        free(upto);
        free(got);
        free(line);
        return STRATA_ENOMEM;
    }

    pthread_mutex_lock(&a->mu);
    uint64_t seq = a->next_seq++;
    for (unsigned i = 0; i < a->n; i++) {
        struct audit_drive *ad = &a->d[i];
        ok[i] = false;
        if (ad->fd < 0 || ad->dead)
            continue;
        char hash[AUDIT_HEX + 1];
        size_t n = seal(seq, body, ad->last, line, cap, hash);
        if (!write_all(ad->fd, line, n)) {
            /* Take back a partial line so the chain stays whole; a drive
             * that cannot be is no longer written to. */
            strata_log(&m->log, STRATA_LOG_ERR, "meta", "drive %s: audit append failed: %s",
                       ad->path, strerror(errno));
            if (ftruncate(ad->fd, (off_t)ad->off) < 0)
                ad->dead = true;
            continue;
        }
        ad->off += n;
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
    int rc = 0;
    for (unsigned s = 0; s < m->nsets; s++)
        if (got[s] < strata_set_write_quorum(m->sets[s].set))
            rc = STRATA_EQUORUM;
    free(ok);
    free(upto);
    free(got);
    return rc;
}

uint64_t strata_meta__local_audit_last_seq(struct strata_meta *m)
{
    struct meta_audit *a = m->audit;
    uint64_t max = 0;
    for (unsigned i = 0; a && i < a->n; i++) {
        struct audit_drive *ad = &a->d[i];
        if (ad->fd < 0)
            continue;
        pthread_mutex_lock(&ad->sync_mu);
        if (ad->s_seq > max)
            max = ad->s_seq;
        pthread_mutex_unlock(&ad->sync_mu);
    }
    return max;
}

/* ---- reading a copy without the daemon ---------------------------------- */

struct strata_meta__audit_copy {
    FILE *f;
    char *line;
    size_t cap;
};

int strata_meta__local_audit_copy_open(const char *where, struct strata_meta__audit_copy **out)
{
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", where, AUDIT_FILE);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? STRATA_ENOTFOUND : STRATA_EIO;
    struct strata_meta__audit_copy *c = calloc(1, sizeof(*c));
    if (!c) {
        fclose(f);
        return STRATA_ENOMEM;
    }
    c->f = f;
    *out = c;
    return 0;
}

bool strata_meta__local_audit_copy_anchor(const char *where, uint64_t *seq, char hash[65])
{
    return strata_meta__local_anchor_read(where, seq, hash);
}

int strata_meta__local_audit_copy_next(struct strata_meta__audit_copy *c, const char **line,
                                       size_t *len)
{
    ssize_t n = getline(&c->line, &c->cap, c->f);
    if (n > 0) {
        *line = c->line;
        *len = (size_t)n;
        return 1;
    }
    return ferror(c->f) ? STRATA_EIO : 0;
}

void strata_meta__local_audit_copy_close(struct strata_meta__audit_copy *c)
{
    if (!c)
        return;
    fclose(c->f);
    free(c->line);
    free(c);
}
