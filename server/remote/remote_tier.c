/*
 * remote_tier.c - the remote S3 tier (remote_tier.h): data objects as S3
 * objects of one bucket, through the S3 client (s3_client.h).
 */
#include "remote_tier.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "http_date.h"
#include "s3_client.h"
#include "sbuf.h"
#include "strata/hex.h"
#include "strata/meta.h"

#define SPOOL_MEM_MAX (8u << 20)   /* a writer's bytes held in memory before a file */
#define READ_AHEAD (4u << 20)      /* one ranged GET fetches at least this much */
#define KEY_MAX (512 + 1 + 2 * STRATA_DATA_ID_LEN + 1)

struct rtier {
    struct strata_s3c *c;
    struct strata_s3c_url u;
    char url[600];
    bool lock;
    char *spool_dir;
    atomic_int lock_ok; /* 0 unknown, 1 the bucket has Object Lock, -1 it has not */
    atomic_uint_fast64_t puts, put_bytes, gets, get_bytes, errors, missing, lock_refused;
    atomic_int_fast64_t last_ok_ms, last_error_ms;
    pthread_mutex_t mu; /* last_error */
    char last_error[300];
};

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void data_key(const struct rtier *t, const uint8_t *id, char *out, size_t max)
{
    char hex[2 * STRATA_DATA_ID_LEN + 1];
    strata_hex_encode(id, STRATA_DATA_ID_LEN, hex);
    snprintf(out, max, "%s%s%s", t->u.prefix, t->u.prefix[0] ? "/" : "", hex);
}

/* Health bookkeeping of one request's result. */
static void note(struct rtier *t, const char *op, const char *key, enum strata_s3c_result r,
                 const struct strata_s3c_error *e)
{
    if (r == STRATA_S3C_OK) {
        atomic_store(&t->last_ok_ms, now_ms());
        return;
    }
    if (!(r == STRATA_S3C_NOT_FOUND && strcmp(op, "DELETE") == 0)) {
        atomic_fetch_add(&t->errors, 1);
        atomic_store(&t->last_error_ms, now_ms());
        pthread_mutex_lock(&t->mu);
        snprintf(t->last_error, sizeof(t->last_error), "%s %s: %s %ld %s%s%.160s", op, key,
                 strata_s3c_result_name(r), e->http_status, e->code, e->code[0] ? ": " : "",
                 e->message);
        pthread_mutex_unlock(&t->mu);
    }
}

/* Writes: a retryable failure is EBUSY, so the mover tries again later. */
static int write_err(enum strata_s3c_result r)
{
    return r == STRATA_S3C_RETRY ? STRATA_EBUSY : STRATA_EIO;
}

/* Reads: unreachable is 503 (EQUORUM: the only copy is out of reach). */
static int read_err(struct rtier *t, enum strata_s3c_result r)
{
    if (r == STRATA_S3C_NOT_FOUND) {
        atomic_fetch_add(&t->missing, 1);
        return STRATA_EIO;
    }
    return r == STRATA_S3C_RETRY ? STRATA_EQUORUM : STRATA_EIO;
}

/* ---- writer ------------------------------------------------------------ */

struct rwriter {
    struct rtier *t;
    char key[KEY_MAX];
    uint32_t place;
    EVP_MD_CTX *md5;
    uint32_t crc;
    uint64_t size;
    uint8_t *mem;  /* the first SPOOL_MEM_MAX bytes */
    int fd;        /* the whole object once past that, or -1 */
    struct strata_tier_lock lock;
    bool locked;
    uint64_t off;  /* read position of the PUT */
    bool put_tried; /* the remote may hold the object */
    int failed;    /* a spool error: every later call fails with it */
};

static int w_open(void *impl, uint32_t place, const uint8_t *id, void **out)
{
    struct rtier *t = impl;
    struct rwriter *w = calloc(1, sizeof(*w));
    if (!w || !(w->md5 = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(w->md5, EVP_md5(), NULL)) {
        if (w)
            EVP_MD_CTX_free(w->md5);
        free(w);
        return STRATA_ENOMEM;
    }
    w->t = t;
    w->fd = -1;
    w->place = place;
    data_key(t, id, w->key, sizeof(w->key));
    *out = w;
    return 0;
}

static int w_lock(void *wp, const struct strata_tier_lock *lock)
{
    struct rwriter *w = wp;
    struct rtier *t = w->t;
    if (!t->lock) {
        atomic_fetch_add(&t->lock_refused, 1);
        return STRATA_ELOCKED;
    }
    if (atomic_load(&t->lock_ok) == 0) {
        bool en = false;
        struct strata_s3c_error e;
        enum strata_s3c_result r = strata_s3c_lock_enabled(t->c, t->u.bucket, &en, &e);
        note(t, "GET ?object-lock", t->u.bucket, r, &e);
        if (r != STRATA_S3C_OK)
            return write_err(r);
        atomic_store(&t->lock_ok, en ? 1 : -1);
    }
    if (atomic_load(&t->lock_ok) < 0) {
        atomic_fetch_add(&t->lock_refused, 1);
        return STRATA_ELOCKED;
    }
    w->lock = *lock;
    w->locked = true;
    return 0;
}

/* The spool file: unlinked from the start, so nothing outlives the writer. */
static int spool_file(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    char path[600];
    snprintf(path, sizeof(path), "%s/strata-spool-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return errno == ENOSPC ? STRATA_ENOSPC : STRATA_EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int w_write(void *wp, const void *buf, size_t len)
{
    struct rwriter *w = wp;
    if (w->failed)
        return w->failed;
    w->crc = strata_crc32c(w->crc, buf, len);
    EVP_DigestUpdate(w->md5, buf, len);
    int rc = 0;
    if (w->fd < 0 && w->size + len <= SPOOL_MEM_MAX) {
        if (!w->mem && !(w->mem = malloc(SPOOL_MEM_MAX)))
            rc = STRATA_ENOMEM;
        else
            memcpy(w->mem + w->size, buf, len);
    } else {
        if (w->fd < 0) {
            w->fd = spool_file(w->t->spool_dir);
            rc = w->fd < 0 ? STRATA_EIO : write_all(w->fd, w->mem, (size_t)w->size);
            free(w->mem);
            w->mem = NULL;
        }
        if (rc == 0)
            rc = write_all(w->fd, buf, len);
    }
    if (rc)
        w->failed = rc;
    else
        w->size += len;
    return rc;
}

static int put_read_cb(void *ud, void *buf, size_t max, size_t *n)
{
    struct rwriter *w = ud;
    size_t want = w->size - w->off < max ? (size_t)(w->size - w->off) : max;
    if (w->fd < 0) {
        memcpy(buf, w->mem + w->off, want);
    } else {
        ssize_t got = pread(w->fd, buf, want, (off_t)w->off);
        if (got < 0)
            return -1;
        want = (size_t)got;
    }
    w->off += want;
    *n = want;
    return 0;
}

static int put_rewind_cb(void *ud)
{
    ((struct rwriter *)ud)->off = 0;
    return 0;
}

static int w_finish(void *wp)
{
    struct rwriter *w = wp;
    struct rtier *t = w->t;
    if (w->failed)
        return w->failed;
    uint8_t md5[16];
    unsigned ml = 0;
    EVP_DigestFinal_ex(w->md5, md5, &ml);
    char crcline[64], mode[80], until[96], iso[40], hold[64];
    const char *hdrs[5];
    size_t nh = 0;
    snprintf(crcline, sizeof(crcline), "x-amz-meta-strata-crc32c: %08x", w->crc);
    hdrs[nh++] = crcline;
    if (w->locked && w->lock.mode != STRATA_LOCK_NONE) {
        snprintf(mode, sizeof(mode), "x-amz-object-lock-mode: %s",
                 w->lock.mode == STRATA_LOCK_COMPLIANCE ? "COMPLIANCE" : "GOVERNANCE");
        strata_iso8601_format(w->lock.until_ms, iso, sizeof(iso));
        snprintf(until, sizeof(until), "x-amz-object-lock-retain-until-date: %s", iso);
        hdrs[nh++] = mode;
        hdrs[nh++] = until;
    }
    if (w->locked && w->lock.legal_hold) {
        snprintf(hold, sizeof(hold), "x-amz-object-lock-legal-hold: ON");
        hdrs[nh++] = hold;
    }
    hdrs[nh] = NULL;
    struct strata_s3c_put p = {.bucket = t->u.bucket, .key = w->key, .size = w->size,
                               .md5 = md5, .headers = hdrs, .read_cb = put_read_cb,
                               .rewind_cb = put_rewind_cb, .ud = w};
    struct strata_s3c_obj info;
    struct strata_s3c_error e;
    w->off = 0;
    w->put_tried = true;
    enum strata_s3c_result r = strata_s3c_put_object(t->c, &p, &info, &e);
    strata_s3c_obj_fini(&info);
    note(t, "PUT", w->key, r, &e);
    if (r != STRATA_S3C_OK)
        return write_err(r);
    /* The remote checked Content-MD5; a plain (non-KMS) S3 ETag is the MD5
     * too, and any other 32-hex ETag means other bytes were stored. */
    char hex[33];
    strata_hex_encode(md5, 16, hex);
    if (strlen(info.etag) == 32 && strata_hex_is(info.etag, 32, false) &&
        strcasecmp(info.etag, hex) != 0) {
        struct strata_s3c_error de;
        strata_s3c_delete_object(t->c, t->u.bucket, w->key, NULL, NULL, &de);
        return STRATA_ECORRUPT;
    }
    atomic_fetch_add(&t->puts, 1);
    atomic_fetch_add(&t->put_bytes, w->size);
    w->failed = 1; /* finished: destroy keeps the object */
    return 0;
}

static void w_destroy(void *wp)
{
    struct rwriter *w = wp;
    if (!w)
        return;
    /* A finish that failed may still have stored the object (an answer
     * lost after the remote committed): remove it. */
    if (w->failed != 1 && w->put_tried) {
        struct strata_s3c_error e;
        strata_s3c_delete_object(w->t->c, w->t->u.bucket, w->key, NULL, NULL, &e);
    }
    if (w->fd >= 0)
        close(w->fd);
    free(w->mem);
    EVP_MD_CTX_free(w->md5);
    free(w);
}

/* ---- reader ------------------------------------------------------------ */

struct rreader {
    struct rtier *t;
    char key[KEY_MAX];
    uint64_t size, end;   /* end: nothing at or past it is read (reader_limit) */
    uint8_t *buf;         /* the read-ahead window [boff, boff + blen) */
    uint64_t boff;
    size_t blen;
};

struct sink {
    uint8_t *p;
    size_t want, got;
};

static int sink_cb(void *ud, const void *buf, size_t len)
{
    struct sink *s = ud;
    if (len > s->want - s->got)
        return -1; /* more than asked: never pass on wrong bytes */
    memcpy(s->p + s->got, buf, len);
    s->got += len;
    return 0;
}

/* One ranged GET of exactly [off, off + len) into p. */
static int fetch(struct rreader *r, uint64_t off, void *p, size_t len)
{
    struct rtier *t = r->t;
    struct sink s = {.p = p, .want = len};
    struct strata_s3c_obj info;
    struct strata_s3c_error e;
    enum strata_s3c_result res =
        strata_s3c_get_object(t->c, t->u.bucket, r->key, NULL, off, len, sink_cb, &s, &info, &e);
    strata_s3c_obj_fini(&info);
    note(t, "GET", r->key, res, &e);
    if (res != STRATA_S3C_OK)
        return read_err(t, res);
    if (s.got != len || info.size != r->size)
        return STRATA_ECORRUPT; /* the remote object is not the one written */
    atomic_fetch_add(&t->gets, 1);
    atomic_fetch_add(&t->get_bytes, len);
    return 0;
}

static int head_sized(struct rtier *t, const char *key, uint64_t size, struct strata_s3c_obj *info)
{
    struct strata_s3c_error e;
    enum strata_s3c_result res = strata_s3c_head_object(t->c, t->u.bucket, key, NULL, info, &e);
    note(t, "HEAD", key, res, &e);
    if (res != STRATA_S3C_OK)
        return res;
    return info->size == size ? 0 : -1;
}

static int r_open(void *impl, uint32_t place, const uint8_t *id, uint64_t size, void **out)
{
    struct rtier *t = impl;
    struct rreader *r = calloc(1, sizeof(*r));
    if (!r)
        return STRATA_ENOMEM;
    r->t = t;
    r->size = r->end = size;
    data_key(t, id, r->key, sizeof(r->key));
    struct strata_s3c_obj info;
    int hr = head_sized(t, r->key, size, &info);
    strata_s3c_obj_fini(&info);
    if (hr != 0) {
        free(r);
        return hr < 0 ? STRATA_ECORRUPT : read_err(t, (enum strata_s3c_result)hr);
    }
    *out = r;
    return 0;
}

static int r_read(void *rp, uint64_t off, void *buf, size_t len)
{
    struct rreader *r = rp;
    if (off > r->size || len > r->size - off)
        return STRATA_ERANGE;
    uint8_t *out = buf;
    while (len) {
        if (r->buf && off >= r->boff && off < r->boff + r->blen) {
            size_t n = (size_t)(r->boff + r->blen - off);
            n = n < len ? n : len;
            memcpy(out, r->buf + (off - r->boff), n);
            out += n;
            off += n;
            len -= n;
            continue;
        }
        if (len >= READ_AHEAD)
            return fetch(r, off, out, len); /* big reads go straight to the caller */
        uint64_t end = r->end > off + len ? r->end : off + len;
        uint64_t want = end - off < READ_AHEAD ? end - off : READ_AHEAD;
        want = want < len ? len : want;
        if (!r->buf && !(r->buf = malloc(READ_AHEAD)))
            return STRATA_ENOMEM;
        r->blen = 0;
        int rc = fetch(r, off, r->buf, (size_t)want);
        if (rc)
            return rc;
        r->boff = off;
        r->blen = (size_t)want;
    }
    return 0;
}

static void r_limit(void *rp, uint64_t end)
{
    struct rreader *r = rp;
    r->end = end < r->size ? end : r->size;
}

static void r_close(void *rp)
{
    struct rreader *r = rp;
    if (!r)
        return;
    free(r->buf);
    free(r);
}

/* ---- whole objects ----------------------------------------------------- */

static int t_remove(void *impl, uint32_t place, const uint8_t *id)
{
    struct rtier *t = impl;
    char key[KEY_MAX];
    data_key(t, id, key, sizeof(key));
    /* On a versioned (Object Lock) bucket a plain DELETE only adds a
     * marker: delete the version the HEAD names, which Object Lock on the
     * remote refuses while it holds the object. */
    struct strata_s3c_obj info;
    struct strata_s3c_error e;
    enum strata_s3c_result r = strata_s3c_head_object(t->c, t->u.bucket, key, NULL, &info, &e);
    if (r == STRATA_S3C_NOT_FOUND) {
        strata_s3c_obj_fini(&info);
        return 0;
    }
    if (r == STRATA_S3C_OK) {
        const char *vid = info.version_id[0] && strcmp(info.version_id, "null") != 0
                              ? info.version_id
                              : NULL;
        r = strata_s3c_delete_object(t->c, t->u.bucket, key, vid, NULL, &e);
    }
    strata_s3c_obj_fini(&info);
    note(t, "DELETE", key, r, &e);
    return r == STRATA_S3C_OK || r == STRATA_S3C_NOT_FOUND ? 0 : write_err(r);
}

static int t_stat(void *impl, uint32_t place, const uint8_t *id, uint64_t size)
{
    struct rtier *t = impl;
    char key[KEY_MAX];
    data_key(t, id, key, sizeof(key));
    struct strata_s3c_obj info;
    int hr = head_sized(t, key, size, &info);
    strata_s3c_obj_fini(&info);
    if (hr == STRATA_S3C_NOT_FOUND)
        return STRATA_ENOTFOUND;
    return hr < 0 ? STRATA_ECORRUPT : hr ? read_err(t, (enum strata_s3c_result)hr) : 0;
}

static int t_verify(void *impl, uint32_t place, const uint8_t *id, uint64_t size, uint32_t crc)
{
    struct rtier *t = impl;
    char key[KEY_MAX], want[40];
    data_key(t, id, key, sizeof(key));
    snprintf(want, sizeof(want), "x-amz-meta-strata-crc32c: %08x", crc);
    struct strata_s3c_obj info;
    int hr = head_sized(t, key, size, &info);
    bool crc_ok = false;
    for (size_t i = 0; hr == 0 && i < info.nmeta; i++)
        crc_ok |= strcmp(info.meta[i], want) == 0;
    strata_s3c_obj_fini(&info);
    if (hr > 0)
        return write_err((enum strata_s3c_result)hr);
    return hr == 0 && crc_ok ? 0 : STRATA_ECORRUPT;
}

/* Every live remote tier, for /metrics (registered at create). */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct strata_tier *reg[STRATA_TIERS_MAX];

static void reg_set(struct strata_tier *add, const void *impl_gone)
{
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < STRATA_TIERS_MAX; i++) {
        if (add && !reg[i]) {
            reg[i] = add;
            break;
        }
        if (!add && reg[i] && reg[i]->impl == impl_gone)
            reg[i] = NULL;
    }
    pthread_mutex_unlock(&reg_mu);
}

void strata_remote_tier_metrics_render(struct strata_sbuf *b)
{
    static const struct {
        const char *name, *type, *help;
    } m[] = {
        {"puts_total", "counter", "Data objects stored on the remote tier."},
        {"put_bytes_total", "counter", "Bytes stored on the remote tier."},
        {"gets_total", "counter", "Ranged GETs from the remote tier."},
        {"get_bytes_total", "counter", "Bytes read from the remote tier."},
        {"errors_total", "counter", "Failed requests to the remote tier."},
        {"missing_total", "counter",
         "Reads of a data object gone from the remote (answered 500 InternalError)."},
        {"lock_refused_total", "counter",
         "Transitions of versions under Object Lock refused: the tier cannot keep them locked."},
        {"last_success_timestamp_seconds", "gauge", "Unix time of the last successful request."},
        {"last_error_timestamp_seconds", "gauge", "Unix time of the last failed request."},
    };
    pthread_mutex_lock(&reg_mu);
    for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
        bool any = false;
        for (size_t i = 0; i < STRATA_TIERS_MAX; i++) {
            if (!reg[i])
                continue;
            if (!any)
                strata_sbuf_printf(b, "# HELP strata_remote_tier_%s %s\n# TYPE strata_remote_tier_%s %s\n",
                                   m[k].name, m[k].help, m[k].name, m[k].type);
            any = true;
            struct strata_remote_health h;
            strata_remote_tier_health(reg[i], &h);
            uint64_t v[] = {h.puts, h.put_bytes, h.gets, h.get_bytes, h.errors, h.missing,
                            h.lock_refused, (uint64_t)(h.last_ok_ms / 1000),
                            (uint64_t)(h.last_error_ms / 1000)};
            strata_sbuf_printf(b, "strata_remote_tier_%s{tier=\"%s\"} %llu\n", m[k].name,
                               reg[i]->name, (unsigned long long)v[k]);
        }
    }
    pthread_mutex_unlock(&reg_mu);
}

/* A later retention or legal hold of a version already moved: the same
 * PutObjectRetention / PutObjectLegalHold on its remote object (the
 * remote refuses a shorter retention, so its copy stays at least as
 * locked). */
static int t_lock_set(void *impl, uint32_t place, const uint8_t *id,
                      const struct strata_tier_lock *lock)
{
    (void)place;
    struct rtier *t = impl;
    if (!t->lock) {
        /* A version locked after it moved here: its copy cannot be locked
         * (counted, and the caller's failure is logged). */
        atomic_fetch_add(&t->lock_refused, 1);
        return STRATA_ELOCKED;
    }
    char key[KEY_MAX], until[40];
    data_key(t, id, key, sizeof(key));
    struct strata_s3c_error e;
    memset(&e, 0, sizeof(e));
    enum strata_s3c_result r = STRATA_S3C_OK;
    if (lock->mode != STRATA_LOCK_NONE) {
        strata_iso8601_format(lock->until_ms, until, sizeof(until));
        r = strata_s3c_put_retention(
            t->c, t->u.bucket, key, NULL,
            lock->mode == STRATA_LOCK_COMPLIANCE ? "COMPLIANCE" : "GOVERNANCE", until, NULL, &e);
        note(t, "PUT ?retention", key, r, &e);
    }
    if (r == STRATA_S3C_OK) {
        r = strata_s3c_put_legal_hold(t->c, t->u.bucket, key, NULL, lock->legal_hold, NULL, &e);
        note(t, "PUT ?legal-hold", key, r, &e);
    }
    return r == STRATA_S3C_OK ? 0 : write_err(r);
}

static void t_destroy(void *impl)
{
    struct rtier *t = impl;
    reg_set(NULL, t);
    strata_s3c_destroy(t->c);
    pthread_mutex_destroy(&t->mu);
    free(t->spool_dir);
    free(t);
}

static const struct strata_tier_ops remote_ops = {
    .writer_open = w_open,
    .write = w_write,
    .finish = w_finish,
    .writer_destroy = w_destroy,
    .writer_lock = w_lock,
    .lock_set = t_lock_set,
    .reader_open = r_open,
    .read = r_read,
    .reader_limit = r_limit,
    .reader_close = r_close,
    .remove = t_remove,
    .stat = t_stat,
    .verify = t_verify,
    .destroy = t_destroy,
};

bool strata_remote_tier_is(const struct strata_tier *t)
{
    return t && t->ops == &remote_ops;
}

int strata_remote_tier_create(const struct strata_remote_tier_opts *o, struct strata_tier **out,
                              char *err, size_t errlen)
{
    *out = NULL;
    struct strata_s3c_url u;
    if (!strata_tier_name_ok(o->name)) {
        snprintf(err, errlen, "tier name \"%s\": 1 to 31 of a-z, 0-9, _ and -", o->name);
        return -1;
    }
    if (strata_s3c_url_parse(o->url, &u, err, errlen) != 0)
        return -1;
    const char *dir = o->spool_dir;
    if (!dir || !dir[0])
        dir = getenv("TMPDIR");
    if (!dir || !dir[0])
        dir = "/var/tmp";
    struct strata_tier *tier = calloc(1, sizeof(*tier));
    struct rtier *t = calloc(1, sizeof(*t));
    if (!tier || !t || !(t->spool_dir = strdup(dir))) {
        if (t)
            free(t->spool_dir);
        free(t);
        free(tier);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct strata_s3c_opts so = {.access_key = o->access_key, .secret_key = o->secret_key,
                                 .region = o->region};
    if (strata_s3c_create(u.endpoint, &so, &t->c, err, errlen) != 0) {
        free(t->spool_dir);
        free(t);
        free(tier);
        return -1;
    }
    t->u = u;
    snprintf(t->url, sizeof(t->url), "%s", o->url);
    t->lock = o->lock;
    pthread_mutex_init(&t->mu, NULL);
    snprintf(tier->name, sizeof(tier->name), "%s", o->name);
    tier->ops = &remote_ops;
    tier->impl = t;
    reg_set(tier, NULL);
    *out = tier;
    return 0;
}

int strata_remote_tier_check(struct strata_tier *tier, char *err, size_t errlen)
{
    struct rtier *t = tier->impl;
    struct strata_s3c_error e;
    enum strata_s3c_result r = strata_s3c_head_bucket(t->c, t->u.bucket, &e);
    note(t, "HEAD", t->u.bucket, r, &e);
    if (r == STRATA_S3C_OK && t->lock) {
        bool en = false;
        r = strata_s3c_lock_enabled(t->c, t->u.bucket, &en, &e);
        note(t, "GET ?object-lock", t->u.bucket, r, &e);
        if (r == STRATA_S3C_OK && !en) {
            snprintf(err, errlen,
                     "tier %s: bucket %s at %s has no Object Lock, which the tier's lock flag "
                     "needs (create it with Object Lock enabled, or drop the flag)",
                     tier->name, t->u.bucket, t->u.endpoint);
            return -1;
        }
        if (r == STRATA_S3C_OK)
            atomic_store(&t->lock_ok, 1);
    }
    if (r == STRATA_S3C_OK)
        return 0;
    snprintf(err, errlen, "tier %s: bucket %s at %s: %s (HTTP %ld%s%s%s%.120s)", tier->name,
             t->u.bucket, t->u.endpoint,
             r == STRATA_S3C_RETRY       ? "unreachable now"
             : r == STRATA_S3C_NOT_FOUND ? "no such bucket"
             : r == STRATA_S3C_AUTH      ? "the credentials are refused"
                                         : "refused",
             e.http_status, e.code[0] ? " " : "", e.code, e.message[0] ? ": " : "", e.message);
    return r == STRATA_S3C_RETRY ? 1 : -1;
}

void strata_remote_tier_health(struct strata_tier *tier, struct strata_remote_health *out)
{
    struct rtier *t = tier->impl;
    memset(out, 0, sizeof(*out));
    snprintf(out->url, sizeof(out->url), "%s", t->url);
    out->lock = t->lock;
    out->puts = atomic_load(&t->puts);
    out->put_bytes = atomic_load(&t->put_bytes);
    out->gets = atomic_load(&t->gets);
    out->get_bytes = atomic_load(&t->get_bytes);
    out->errors = atomic_load(&t->errors);
    out->missing = atomic_load(&t->missing);
    out->lock_refused = atomic_load(&t->lock_refused);
    out->last_ok_ms = atomic_load(&t->last_ok_ms);
    out->last_error_ms = atomic_load(&t->last_error_ms);
    pthread_mutex_lock(&t->mu);
    snprintf(out->last_error, sizeof(out->last_error), "%s", t->last_error);
    pthread_mutex_unlock(&t->mu);
}
