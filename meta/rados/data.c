/*
 * data.c - a data tier over one RADOS pool (tier.h's strata_tier_ops;
 * RADOS.md, "Small and large data" and "Tiers as pools").
 *
 * A data object of size S is stored as stripes of `stripe` bytes (4 MiB
 * by default), RADOS objects `ID.NNNNNNNN` (32 hex data id, 8 hex stripe
 * number), each written whole with rados_aio_write_full (never appended or
 * partly overwritten, so the pool may be EC without allow_ec_overwrites).
 * An object of size 0 is one empty stripe 0.
 *
 * The writer keeps up to `window` stripe writes in flight.  Stripe 0 is
 * written last, by finish, together with the xattr `strata` =
 * "1 SIZE STRIPE NSTRIPES" (format 1, decimal): what the tier knows of the
 * object (the bucket and key are in the w/ entry of the index shard, which
 * the tier does not see).  So stripe 0 existing means the writer finished,
 * and a remove knows how many stripes to remove from it.  A writer that
 * failed stops issuing, so every stripe it wrote is below the highest
 * issued one and, past the last `window` issued, none is missing; remove
 * without stripe 0 (a writer that died) removes stripes until
 * DATA_GAP_MAX in a row were absent (the window is at most that).
 *
 * The reader reads whole stripes with rados_aio_read into `readahead`
 * buffers; while reads are sequential (or the caller set a limit) it
 * keeps the stripes ahead in flight, up to the limit.  A stripe shorter
 * (or, the last one, longer) than the size says is STRATA_ECORRUPT, an
 * absent one STRATA_ENOTFOUND: never wrong bytes.
 *
 * A writer with an observer (the PUT's MD5) hands each full stripe buffer
 * to a helper thread (strata_ec__obs, kept in a small pool per tier) and
 * goes on filling the next while the digest runs, as the local tier does;
 * a buffer is refilled only once the helper is done with it.  An object
 * smaller than a stripe is observed at finish on the caller's thread: no
 * hand-over for the small ones.
 *
 * Threads: the tier from any thread; a writer or reader from one at a time.
 */
#include "index.h"
#include "rados.h"
#include "strata/erasure.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_XATTR "strata"
#define DATA_GAP_MAX 16 /* absent stripes in a row that end a remove without stripe 0 */
#define DATA_OID_MAX 48
#define DATA_OBS_IDLE 16 /* idle observer threads kept per tier */

struct rtier {
    rados_ioctx_t io;
    size_t stripe;
    unsigned window, readahead;
    pthread_mutex_t obs_mu; /* guards obs_idle */
    struct strata_ec__obs *obs_idle[DATA_OBS_IDLE];
    unsigned nobs_idle;
};

/* An observer thread from the tier's pool, or a new one (NULL: none). */
static struct strata_ec__obs *obs_get(struct rtier *t)
{
    struct strata_ec__obs *o = NULL;
    pthread_mutex_lock(&t->obs_mu);
    if (t->nobs_idle)
        o = t->obs_idle[--t->nobs_idle];
    pthread_mutex_unlock(&t->obs_mu);
    return o ? o : strata_ec__obs_start();
}

/* Back to the pool (every item it was given has run). */
static void obs_put(struct rtier *t, struct strata_ec__obs *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&t->obs_mu);
    bool kept = t->nobs_idle < DATA_OBS_IDLE;
    if (kept)
        t->obs_idle[t->nobs_idle++] = o;
    pthread_mutex_unlock(&t->obs_mu);
    if (!kept)
        strata_ec__obs_stop(o);
}

static void stripe_oid(char out[DATA_OID_MAX], const uint8_t id[STRATA_DATA_ID_LEN], uint32_t s)
{
    char hex[33];
    strata_meta__rados_sk_hex(id, hex);
    snprintf(out, DATA_OID_MAX, "%s.%08" PRIx32, hex, s);
}

static int err_of(int r)
{
    return r == -ENOENT ? STRATA_ENOTFOUND : strata_meta__rados_err(r);
}

/* ---- writer ---- */

struct wslot {
    rados_completion_t c; /* NULL: free */
    char *buf;
    uint64_t ticket; /* the observer's item over buf; 0: none */
};

struct rwriter {
    struct rtier *t;
    uint8_t id[STRATA_DATA_ID_LEN];
    char *cur;        /* the stripe being filled */
    size_t curlen;
    uint32_t next;    /* its stripe number */
    char *s0;         /* stripe 0, held for finish */
    size_t s0len;
    struct wslot *slots; /* ring of window in-flight writes, oldest at head */
    unsigned head, n;
    uint32_t issued;  /* stripes 1..issued-1 may exist */
    uint64_t size;
    int err;          /* the first error: every later call returns it */
    bool finished, s0_issued;
    strata_ec_observe_cb obs_cb; /* NULL: not observed */
    void *obs_ud;
    struct strata_ec__obs *obs;  /* helper thread, taken at the first full stripe */
    uint64_t obs_last;           /* newest ticket posted */
};

/* Hand a full stripe buffer to the observer: on its helper thread when one
 * can be had (the ticket to wait for before refilling buf), else inline. */
static uint64_t observe(struct rwriter *w, const char *buf, size_t len)
{
    if (!w->obs_cb || len == 0)
        return 0;
    if (!w->obs && !(w->obs = obs_get(w->t))) {
        w->obs_cb(w->obs_ud, buf, len);
        return 0;
    }
    /* At most STRATA_EC_OBS_QUEUE items queued and not yet run. */
    if (w->obs_last >= STRATA_EC_OBS_QUEUE)
        strata_ec__obs_wait(w->obs, w->obs_last + 1 - STRATA_EC_OBS_QUEUE);
    return w->obs_last = strata_ec__obs_post(w->obs, w->obs_cb, w->obs_ud, buf, len);
}

/* Until every observer callback of w has returned. */
static void obs_drain(struct rwriter *w)
{
    if (w->obs && w->obs_last)
        strata_ec__obs_wait(w->obs, w->obs_last);
}

/* Wait for the oldest write in flight; its error becomes w->err. */
static void wait_oldest(struct rwriter *w)
{
    struct wslot *s = &w->slots[w->head];
    rados_aio_wait_for_complete(s->c);
    int r = rados_aio_get_return_value(s->c);
    rados_aio_release(s->c);
    s->c = NULL;
    if (r < 0 && !w->err)
        w->err = strata_meta__rados_err(r);
    w->head = (w->head + 1) % w->t->window;
    w->n--;
}

static void wait_all(struct rwriter *w)
{
    while (w->n)
        wait_oldest(w);
}

/* Issue the write of cur as stripe w->next (not 0), ticket its observer
 * item; cur gets a free buffer (the observer done with it). */
static int issue(struct rwriter *w, uint64_t ticket)
{
    if (w->n == w->t->window)
        wait_oldest(w);
    if (w->err)
        return w->err;
    struct wslot *s = &w->slots[(w->head + w->n) % w->t->window];
    if (!s->buf && !(s->buf = malloc(w->t->stripe)))
        return w->err = STRATA_ENOMEM;
    char oid[DATA_OID_MAX];
    stripe_oid(oid, w->id, w->next);
    if (rados_aio_create_completion(NULL, NULL, NULL, &s->c) < 0) {
        s->c = NULL;
        return w->err = STRATA_ENOMEM;
    }
    if (s->ticket) /* the observer may still read the buffer cur gets */
        strata_ec__obs_wait(w->obs, s->ticket);
    char *tmp = s->buf; /* the slot keeps the bytes until the write completes */
    s->buf = w->cur;
    s->ticket = ticket;
    w->cur = tmp;
    int r = rados_aio_write_full(w->t->io, oid, s->c, s->buf, w->curlen);
    if (r < 0) {
        rados_aio_release(s->c);
        s->c = NULL;
        return w->err = strata_meta__rados_err(r);
    }
    w->n++;
    w->issued = w->next + 1;
    w->curlen = 0;
    w->next++;
    return 0;
}

static int d_writer_open(void *impl, uint32_t place, const uint8_t *id, void **out)
{
    (void)place;
    struct rtier *t = impl;
    struct rwriter *w = calloc(1, sizeof(*w));
    if (!w)
        return STRATA_ENOMEM;
    w->t = t;
    memcpy(w->id, id, STRATA_DATA_ID_LEN);
    w->slots = calloc(t->window, sizeof(*w->slots));
    w->cur = malloc(t->stripe);
    if (!w->slots || !w->cur) {
        free(w->slots);
        free(w->cur);
        free(w);
        return STRATA_ENOMEM;
    }
    *out = w;
    return 0;
}

static int d_write(void *wp, const void *buf, size_t len)
{
    struct rwriter *w = wp;
    const char *p = buf;
    if (w->err)
        return w->err;
    while (len) {
        size_t room = w->t->stripe - w->curlen, n = len < room ? len : room;
        memcpy(w->cur + w->curlen, p, n);
        w->curlen += n;
        w->size += n;
        p += n;
        len -= n;
        if (w->curlen < w->t->stripe)
            break;
        uint64_t ticket = observe(w, w->cur, w->curlen);
        if (w->next == 0) { /* stripe 0 waits for finish; fill a new buffer */
            w->s0 = w->cur;
            w->s0len = w->curlen;
            w->cur = malloc(w->t->stripe);
            w->curlen = 0;
            w->next = 1;
            if (!w->cur) {
                obs_drain(w);
                return w->err = STRATA_ENOMEM;
            }
        } else if (issue(w, ticket)) {
            obs_drain(w);
            return w->err;
        }
    }
    return 0;
}

static int d_observe(void *wp, strata_ec_observe_cb cb, void *ud)
{
    struct rwriter *w = wp;
    if (!cb || w->obs_cb || w->size > 0 || w->finished || w->err)
        return STRATA_EINVAL;
    w->obs_cb = cb;
    w->obs_ud = ud;
    return 0;
}

static int d_finish(void *wp)
{
    struct rwriter *w = wp;
    if (w->err) {
        obs_drain(w);
        return w->err;
    }
    if (w->next == 0) { /* one stripe: cur is stripe 0, observed here */
        if (w->obs_cb && w->curlen)
            w->obs_cb(w->obs_ud, w->cur, w->curlen);
        w->s0 = w->cur;
        w->s0len = w->curlen;
        w->cur = NULL;
        w->curlen = 0;
        w->next = 1;
    } else if (w->curlen && issue(w, observe(w, w->cur, w->curlen))) {
        wait_all(w);
        obs_drain(w);
        return w->err;
    }
    uint64_t nstripes = w->next;
    char meta[96];
    int ml = snprintf(meta, sizeof(meta), "1 %" PRIu64 " %zu %" PRIu64, w->size, w->t->stripe,
                      nstripes);
    char oid[DATA_OID_MAX];
    stripe_oid(oid, w->id, 0);
    rados_write_op_t op = rados_create_write_op();
    if (!op) {
        wait_all(w);
        obs_drain(w);
        return w->err = STRATA_ENOMEM;
    }
    rados_write_op_write_full(op, w->s0 ? w->s0 : "", w->s0len);
    rados_write_op_setxattr(op, DATA_XATTR, meta, (size_t)ml);
    rados_completion_t c;
    int r = rados_aio_create_completion(NULL, NULL, NULL, &c);
    if (r == 0) {
        w->s0_issued = true;
        r = rados_aio_write_op_operate(op, w->t->io, c, oid, NULL, 0);
        if (r == 0) {
            wait_all(w); /* the other stripes meanwhile */
            rados_aio_wait_for_complete(c);
            r = rados_aio_get_return_value(c);
        }
        rados_aio_release(c);
    }
    rados_release_write_op(op);
    wait_all(w);
    obs_drain(w); /* the digest is complete when finish returns */
    if (r < 0 && !w->err)
        w->err = strata_meta__rados_err(r);
    if (!w->err)
        w->finished = true;
    return w->err;
}

/* Remove stripes [from, to) with aio removes DATA_GAP_MAX at a time.
 * *found: how many existed.  0 or the first error other than absent. */
static int remove_range(struct rtier *t, const uint8_t *id, uint32_t from, uint32_t to,
                        unsigned *found)
{
    rados_completion_t c[DATA_GAP_MAX];
    int rc = 0;
    *found = 0;
    while (from < to) {
        unsigned k = 0;
        for (; k < DATA_GAP_MAX && from + k < to; k++) {
            char oid[DATA_OID_MAX];
            stripe_oid(oid, id, from + k);
            if (rados_aio_create_completion(NULL, NULL, NULL, &c[k]) < 0)
                return STRATA_ENOMEM;
            int r = rados_aio_remove(t->io, oid, c[k]);
            if (r < 0) {
                rados_aio_release(c[k]);
                c[k] = NULL;
                rc = rc ? rc : strata_meta__rados_err(r);
            }
        }
        for (unsigned i = 0; i < k; i++) {
            if (!c[i])
                continue;
            rados_aio_wait_for_complete(c[i]);
            int r = rados_aio_get_return_value(c[i]);
            rados_aio_release(c[i]);
            if (r == 0)
                (*found)++;
            else if (r != -ENOENT && !rc)
                rc = strata_meta__rados_err(r);
        }
        from += k;
    }
    return rc;
}

static void d_writer_destroy(void *wp)
{
    struct rwriter *w = wp;
    if (!w)
        return;
    wait_all(w);
    obs_drain(w);
    obs_put(w->t, w->obs);
    if (!w->finished) { /* what was written goes again */
        unsigned found;
        remove_range(w->t, w->id, 0, w->issued > 1 ? w->issued : 1, &found);
    }
    for (unsigned i = 0; i < w->t->window; i++)
        free(w->slots[i].buf);
    free(w->slots);
    free(w->cur);
    free(w->s0);
    free(w);
}

/* ---- remove, stat ---- */

/* Stripe 0's xattr: the object's size and stripe count.  0, STRATA_ENOTFOUND
 * (no stripe 0), STRATA_ECORRUPT (no readable xattr), or the read error. */
static int read_meta(struct rtier *t, const uint8_t *id, uint64_t *size, uint64_t *nstripes)
{
    char oid[DATA_OID_MAX], buf[96];
    stripe_oid(oid, id, 0);
    int r = rados_getxattr(t->io, oid, DATA_XATTR, buf, sizeof(buf) - 1);
    if (r < 0)
        return r == -ENODATA ? STRATA_ECORRUPT : err_of(r);
    buf[r] = 0;
    uint64_t stripe;
    if (sscanf(buf, "1 %" SCNu64 " %" SCNu64 " %" SCNu64, size, &stripe, nstripes) != 3 ||
        *nstripes == 0)
        return STRATA_ECORRUPT;
    return 0;
}

static int d_remove(void *impl, uint32_t place, const uint8_t *id)
{
    (void)place;
    struct rtier *t = impl;
    uint64_t size, n;
    unsigned found;
    int rc = read_meta(t, id, &size, &n);
    if (rc == 0) { /* the others first: stripe 0 goes last, so a retry finds them */
        rc = remove_range(t, id, 1, (uint32_t)n, &found);
        return rc ? rc : remove_range(t, id, 0, 1, &found);
    }
    if (rc != STRATA_ENOTFOUND && rc != STRATA_ECORRUPT)
        return rc;
    /* No finished stripe 0: a writer that died.  Its stripes have gaps of
     * less than its window. */
    for (uint32_t from = 0;; from += DATA_GAP_MAX) {
        rc = remove_range(t, id, from, from + DATA_GAP_MAX, &found);
        if (rc || found == 0)
            return rc;
    }
}

static int stat_one(struct rtier *t, const uint8_t *id, uint32_t s, uint64_t want)
{
    char oid[DATA_OID_MAX];
    stripe_oid(oid, id, s);
    uint64_t got;
    time_t mt;
    int r = rados_stat(t->io, oid, &got, &mt);
    if (r < 0)
        return err_of(r);
    return got == want ? 0 : STRATA_ECORRUPT;
}

static uint32_t nstripes_of(const struct rtier *t, uint64_t size)
{
    return size == 0 ? 1 : (uint32_t)((size + t->stripe - 1) / t->stripe);
}

static uint64_t stripe_len(const struct rtier *t, uint64_t size, uint32_t s)
{
    uint64_t off = (uint64_t)s * t->stripe;
    return size - off < t->stripe ? size - off : t->stripe;
}

static int d_stat(void *impl, uint32_t place, const uint8_t *id, uint64_t size)
{
    (void)place;
    struct rtier *t = impl;
    uint32_t n = nstripes_of(t, size);
    int rc = stat_one(t, id, 0, size == 0 ? 0 : stripe_len(t, size, 0));
    if (rc == 0 && n > 1)
        rc = stat_one(t, id, n - 1, stripe_len(t, size, n - 1));
    return rc;
}

/* ---- reader ---- */

struct rslot {
    rados_completion_t c; /* in flight or done, not yet collected */
    uint32_t stripe;
    bool ready; /* buf holds stripe's bytes (rc 0) or rc is its error */
    int rc;
    char *buf;
};

struct rreader {
    struct rtier *t;
    uint8_t id[STRATA_DATA_ID_LEN];
    uint64_t size, limit;
    uint32_t nstripes;
    struct rslot *slots; /* stripe s in slots[s % readahead] */
    int64_t last;        /* the stripe read last, -1: none */
    bool limited;
};

static void collect(struct rreader *r, struct rslot *s)
{
    if (!s->c)
        return;
    rados_aio_wait_for_complete(s->c);
    int x = rados_aio_get_return_value(s->c);
    rados_aio_release(s->c);
    s->c = NULL;
    uint64_t want = stripe_len(r->t, r->size, s->stripe);
    if (x < 0)
        s->rc = err_of(x);
    else
        s->rc = (uint64_t)x == want ? 0 : STRATA_ECORRUPT; /* shorter or longer than recorded */
    s->ready = true;
}

/* Start reading stripe s into its slot unless it is there already. */
static int start(struct rreader *r, uint32_t s)
{
    struct rslot *sl = &r->slots[s % r->t->readahead];
    if ((sl->c || sl->ready) && sl->stripe == s)
        return 0;
    collect(r, sl); /* an older stripe's read still owns the buffer */
    sl->ready = false;
    sl->stripe = s;
    if (!sl->buf && !(sl->buf = malloc(r->t->stripe)))
        return STRATA_ENOMEM;
    uint64_t want = stripe_len(r->t, r->size, s);
    /* The last stripe one byte more, so a longer object shows. */
    size_t ask = (size_t)(want < r->t->stripe ? want + 1 : want);
    char oid[DATA_OID_MAX];
    stripe_oid(oid, r->id, s);
    if (rados_aio_create_completion(NULL, NULL, NULL, &sl->c) < 0) {
        sl->c = NULL;
        return STRATA_ENOMEM;
    }
    int x = rados_aio_read(r->t->io, oid, sl->c, sl->buf, ask, 0);
    if (x < 0) {
        rados_aio_release(sl->c);
        sl->c = NULL;
        return strata_meta__rados_err(x);
    }
    return 0;
}

/* Stripe s's bytes, with the reads ahead of it started. */
static int get_stripe(struct rreader *r, uint32_t s, const char **buf)
{
    bool seq = r->limited || s == 0 || (int64_t)s == r->last + 1 || (int64_t)s == r->last;
    int rc = start(r, s);
    if (rc)
        return rc;
    if (seq) {
        uint64_t end = r->limited ? r->limit : r->size;
        uint32_t endst = end == 0 ? 0 : (uint32_t)((end - 1) / r->t->stripe);
        for (uint32_t a = s + 1; a < s + r->t->readahead && a <= endst && a < r->nstripes; a++)
            if ((rc = start(r, a)))
                return rc;
    }
    struct rslot *sl = &r->slots[s % r->t->readahead];
    collect(r, sl);
    r->last = s;
    *buf = sl->buf;
    return sl->rc;
}

static int d_reader_open(void *impl, uint32_t place, const uint8_t *id, uint64_t size, void **out)
{
    (void)place;
    struct rtier *t = impl;
    struct rreader *r = calloc(1, sizeof(*r));
    if (!r)
        return STRATA_ENOMEM;
    r->slots = calloc(t->readahead, sizeof(*r->slots));
    if (!r->slots) {
        free(r);
        return STRATA_ENOMEM;
    }
    r->t = t;
    memcpy(r->id, id, STRATA_DATA_ID_LEN);
    r->size = size;
    r->nstripes = size == 0 ? 0 : nstripes_of(t, size);
    r->last = -1;
    *out = r;
    return 0;
}

static int d_peek(void *rp, uint64_t off, size_t max, const uint8_t **p, size_t *n)
{
    struct rreader *r = rp;
    *n = 0;
    *p = NULL;
    if (off > r->size)
        return STRATA_EINVAL;
    if (off == r->size || max == 0)
        return 0;
    uint32_t s = (uint32_t)(off / r->t->stripe);
    const char *buf;
    int rc = get_stripe(r, s, &buf);
    if (rc)
        return rc;
    uint64_t in = off - (uint64_t)s * r->t->stripe, left = stripe_len(r->t, r->size, s) - in;
    *p = (const uint8_t *)buf + in;
    *n = left < max ? (size_t)left : max;
    return 0;
}

static int d_read(void *rp, uint64_t off, void *buf, size_t len)
{
    struct rreader *r = rp;
    if (off > r->size || len > r->size - off)
        return STRATA_EINVAL;
    char *o = buf;
    while (len) {
        const uint8_t *p;
        size_t n;
        int rc = d_peek(r, off, len, &p, &n);
        if (rc)
            return rc;
        memcpy(o, p, n);
        o += n;
        off += n;
        len -= n;
    }
    return 0;
}

static void d_reader_limit(void *rp, uint64_t end)
{
    struct rreader *r = rp;
    r->limit = end < r->size ? end : r->size;
    r->limited = true;
}

static void d_reader_close(void *rp)
{
    struct rreader *r = rp;
    if (!r)
        return;
    for (unsigned i = 0; i < r->t->readahead; i++) {
        collect(r, &r->slots[i]);
        free(r->slots[i].buf);
    }
    free(r->slots);
    free(r);
}

static void d_destroy(void *impl)
{
    struct rtier *t = impl;
    while (t->nobs_idle)
        strata_ec__obs_stop(t->obs_idle[--t->nobs_idle]);
    pthread_mutex_destroy(&t->obs_mu);
    rados_ioctx_destroy(t->io);
    free(t);
}

static const struct strata_tier_ops rados_data_ops = {
    .writer_open = d_writer_open,
    .write = d_write,
    .writer_observe = d_observe,
    .finish = d_finish,
    .writer_destroy = d_writer_destroy,
    .reader_open = d_reader_open,
    .read = d_read,
    .peek = d_peek,
    .reader_limit = d_reader_limit,
    .reader_close = d_reader_close,
    .remove = d_remove,
    .stat = d_stat,
    .destroy = d_destroy,
};

int strata_meta__rados_data_create(struct meta_rados *r, const char *name, const char *pool,
                                   const struct strata_meta__rados_data_opts *o,
                                   struct strata_tier **out)
{
    *out = NULL;
    size_t stripe = o && o->stripe ? o->stripe : RADOS_DATA_STRIPE;
    unsigned window = o && o->window ? o->window : RADOS_DATA_WINDOW;
    unsigned ra = o && o->readahead ? o->readahead : RADOS_DATA_READAHEAD;
    if (!strata_tier_name_ok(name) || window > DATA_GAP_MAX || stripe > (1u << 30))
        return STRATA_EINVAL;
    struct strata_tier *t = calloc(1, sizeof(*t));
    struct rtier *d = calloc(1, sizeof(*d));
    if (!t || !d) {
        free(t);
        free(d);
        return STRATA_ENOMEM;
    }
    int x = rados_ioctx_create(r->c, pool, &d->io);
    if (x < 0) {
        free(t);
        free(d);
        return err_of(x);
    }
    pthread_mutex_init(&d->obs_mu, NULL);
    d->stripe = stripe;
    d->window = window;
    d->readahead = ra;
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->ops = &rados_data_ops;
    t->impl = d;
    *out = t;
    return 0;
}
