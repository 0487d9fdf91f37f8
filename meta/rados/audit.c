/*
 * audit.c - the audit log in the cluster (the seam's audit_*; the entries
 * and their hash chain are meta/audit.c's).  One chain for every gateway:
 * segment objects audit.N of audit_seg entries each, entry SEQ in segment
 * (SEQ - 1) / audit_seg under key e/SEQ (16 hex) -> the line, and the
 * segment's last entry under \x01tail -> "SEQ HASH".  An append is one op on
 * the segment: omap_cmp(\x01tail, EQ, the tail read) + set of the entry and
 * the new tail, so entry and tail move together or not at all; a failed
 * compare means another gateway appended first: re-read the tail, re-seal
 * (new seq and prev) and retry.  The first entry of a segment compares the
 * new segment's empty tail, so two gateways rolling over race on it too.
 * `audit` holds \x01seg, a hint of the newest segment (set after its first
 * entry), where a reader starts looking for the tail.
 */
#include "rados.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAIL_KEY "\x01tail"
#define SEG_KEY "\x01seg"
#define APPEND_TRIES 64
#define ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"

static void seg_oid(char oid[40], uint64_t seg)
{
    snprintf(oid, 40, "audit.%" PRIu64, seg);
}

static uint64_t seg_of(const struct meta_rados *r, uint64_t seq)
{
    return seq ? (seq - 1) / r->audit_seg : 0;
}

/* Segment seg's tail: 1 with seq and hash, 0 when it has none (or does
 * not exist), or an error. */
static int tail_read(rados_ioctx_t io, uint64_t seg, uint64_t *seq, char hash[65])
{
    char oid[40], *v;
    size_t vl;
    seg_oid(oid, seg);
    int rc = strata_meta__rados_get1(io, oid, TAIL_KEY, &v, &vl);
    if (rc == STRATA_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    char h[65] = "";
    unsigned long long s = 0;
    bool ok = vl == 16 + 1 + 64 && sscanf(v, "%16llx %64s", &s, h) == 2 && strlen(h) == 64;
    free(v);
    if (!ok)
        return STRATA_ECORRUPT;
    *seq = s;
    memcpy(hash, h, 65);
    return 1;
}

/* The chain's tail, looking from segment start on (seq 0: empty log). */
static int tail_find(const struct meta_rados *r, rados_ioctx_t io, uint64_t start,
                     uint64_t *seq, char hash[65])
{
    uint64_t seg = start, s = 0;
    char h[65];
    int rc = tail_read(io, seg, &s, h);
    while (rc == 0 && seg > 0) /* a hint past the tail: look back */
        rc = tail_read(io, --seg, &s, h);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        *seq = 0;
        memcpy(hash, ZERO_HASH, 65);
        return 0;
    }
    /* A full segment: the chain may go on in the next ones. */
    while (s == (seg + 1) * r->audit_seg) {
        uint64_t s2;
        char h2[65];
        int n = tail_read(io, seg + 1, &s2, h2);
        if (n < 0)
            return n;
        if (n == 0)
            break;
        seg++;
        s = s2;
        memcpy(h, h2, 65);
    }
    *seq = s;
    memcpy(hash, h, 65);
    return 0;
}

static uint64_t seg_hint(rados_ioctx_t io)
{
    char *v;
    size_t vl;
    uint64_t seg = 0;
    if (strata_meta__rados_get1(io, RADOS_OID_AUDIT, SEG_KEY, &v, &vl) == 0) {
        seg = strtoull(v, NULL, 10);
        free(v);
    }
    return seg;
}

int strata_meta__rados_audit_open(struct strata_meta *m, strata_meta__audit_tail_fn tail,
                                  struct strata_meta__audit_found *found)
{
    (void)tail; /* the tail is kept explicitly, no line to parse */
    struct meta_rados *r = meta_rados_of(m);
    if (found)
        found->torn[0] = found->missing[0] = 0; /* an op is whole: nothing torn */
    pthread_mutex_lock(&r->audit_mu);
    int rc = tail_find(r, r->meta, seg_hint(r->meta), &r->audit_seq, r->audit_hash);
    pthread_mutex_unlock(&r->audit_mu);
    return rc;
}

void strata_meta__rados_audit_close(struct strata_meta *m)
{
    (void)m; /* nothing held between appends */
}

/* One attempt to append entry seq = tail + 1 with its line. */
static int append_once(struct meta_rados *r, const char *line, size_t len, uint64_t seq,
                       const char hash[65])
{
    uint64_t seg = seg_of(r, seq);
    char oid[40];
    seg_oid(oid, seg);
    bool first = seg != seg_of(r, r->audit_seq) || r->audit_seq == 0;
    if (first) { /* the segment must exist for its tail to compare as empty */
        rados_write_op_t cop = rados_create_write_op();
        rados_write_op_create(cop, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        int cr = rados_write_op_operate(cop, r->meta, oid, NULL, 0);
        rados_release_write_op(cop);
        if (cr < 0)
            return strata_meta__rados_err(cr);
    }
    char old[96] = "", now[96], ekey[24];
    size_t ol = 0;
    if (!first)
        ol = (size_t)snprintf(old, sizeof(old), "%016" PRIx64 " %s", r->audit_seq, r->audit_hash);
    size_t nl = (size_t)snprintf(now, sizeof(now), "%016" PRIx64 " %s", seq, hash);
    snprintf(ekey, sizeof(ekey), "e/%016" PRIx64, seq);
    const char *keys[] = {ekey, TAIL_KEY};
    const char *vals[] = {line, now};
    size_t lens[] = {len, nl};
    int prval = 0;
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    rados_write_op_omap_cmp(op, TAIL_KEY, LIBRADOS_CMPXATTR_OP_EQ, old, ol, &prval);
    rados_write_op_omap_set(op, keys, vals, lens, 2);
    int rc = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    if (rc == 0 && first && seg > 0) { /* a hint only: readers look further */
        char s[24];
        int sl = snprintf(s, sizeof(s), "%" PRIu64, seg);
        strata_meta__rados_cas1(r->meta, RADOS_OID_AUDIT, NULL, NULL, 0, SEG_KEY, s, (size_t)sl);
    }
    return strata_meta__rados_err(rc);
}

int strata_meta__rados_audit_append(struct strata_meta *m, const char *body,
                                    strata_meta__audit_seal_fn seal)
{
    struct meta_rados *r = meta_rados_of(m);
    char *line = malloc(STRATA_META__AUDIT_LINE_MAX);
    if (!line)
        return STRATA_ENOMEM;
    pthread_mutex_lock(&r->audit_mu);
    int rc = STRATA_EBUSY;
    for (int i = 0; i < APPEND_TRIES; i++) {
        uint64_t seq = r->audit_seq + 1;
        char hash[65];
        size_t len = seal(seq, body, r->audit_seq ? r->audit_hash : ZERO_HASH, line,
                          STRATA_META__AUDIT_LINE_MAX, hash);
        if (len == 0 || len >= STRATA_META__AUDIT_LINE_MAX) {
            rc = STRATA_ETOOBIG;
            break;
        }
        rc = append_once(r, line, len, seq, hash);
        if (rc == 0) {
            r->audit_seq = seq;
            memcpy(r->audit_hash, hash, 65);
            break;
        }
        if (rc != STRATA_EPRECOND)
            break;
        /* Another gateway appended first: its entries are the chain now. */
        rc = tail_find(r, r->meta, seg_of(r, r->audit_seq), &r->audit_seq, r->audit_hash);
        if (rc)
            break;
        rc = STRATA_EBUSY;
    }
    pthread_mutex_unlock(&r->audit_mu);
    free(line);
    return rc;
}

uint64_t strata_meta__rados_audit_last_seq(struct strata_meta *m)
{
    struct meta_rados *r = meta_rados_of(m);
    pthread_mutex_lock(&r->audit_mu);
    uint64_t seq;
    char hash[65];
    /* Other gateways append too: the cluster's tail, not this one's. */
    if (tail_find(r, r->meta, seg_of(r, r->audit_seq), &seq, hash) != 0)
        seq = r->audit_seq;
    pthread_mutex_unlock(&r->audit_mu);
    return seq;
}

/* ---- reading the chain without a daemon (strata audit) ---------------- */

#define PAGE 1000

/* The tail's reader over one segment's page: each entry to the caller's
 * cb, its seq kept (stop: cb's non-zero). */
struct tail_read {
    int (*cb)(void *ud, const char *line, size_t len);
    void *ud;
    uint64_t last;
    int stop;
};

static int tail_entry(void *ud, const char *k, const char *v, size_t vl)
{
    struct tail_read *t = ud;
    unsigned long long s;
    if (sscanf(k, "e/%16llx", &s) != 1)
        return 0;
    t->last = s;
    t->stop = t->cb(t->ud, v, vl);
    return t->stop ? 1 : 0;
}

int strata_meta__rados_audit_chain(struct strata_meta *m, char *copy, size_t ccap, char *name,
                                   size_t ncap)
{
    struct meta_rados *r = meta_rados_of(m);
    snprintf(name, ncap, "%s.meta", r->prefix);
    int n = snprintf(copy, ccap, "%s", r->where);
    return r->where[0] && n > 0 && (size_t)n < ccap ? 0 : STRATA_EINVAL;
}

int strata_meta__rados_audit_tail(struct strata_meta *m, unsigned n,
                                  int (*cb)(void *ud, const char *line, size_t len), void *ud,
                                  char *where, size_t cap)
{
    struct meta_rados *r = meta_rados_of(m);
    snprintf(where, cap, "%s.meta", r->prefix);
    pthread_mutex_lock(&r->audit_mu);
    uint64_t hint = seg_of(r, r->audit_seq);
    pthread_mutex_unlock(&r->audit_mu);
    /* The cluster's tail: other gateways append to the same chain. */
    uint64_t tail;
    char hash[65];
    int rc = tail_find(r, r->meta, hint, &tail, hash);
    if (rc || tail == 0 || n == 0)
        return rc;
    int stop = 0;
    for (uint64_t s = tail >= n ? tail - n + 1 : 1; rc == 0 && !stop && s <= tail;) {
        uint64_t seg = seg_of(r, s), end = (seg + 1) * r->audit_seg, last;
        if (end > tail)
            end = tail;
        uint64_t want = end - s + 1;
        char oid[40], after[24], lastk[24];
        seg_oid(oid, seg);
        snprintf(after, sizeof(after), "e/%016" PRIx64, s - 1);
        struct tail_read t = {cb, ud, s - 1, 0};
        bool more;
        rc = strata_meta__rados_page(r->meta, oid, after, "e/", want < PAGE ? (unsigned)want : PAGE,
                                     tail_entry, &t, lastk, sizeof(lastk), &more);
        if (rc == STRATA_ENOTFOUND)
            rc = 0; /* no such segment */
        last = t.last;
        stop = t.stop;
        /* Past the segment's end (or nothing more in it): the next one. */
        s = last >= s && last < end ? last + 1 : end + 1;
    }
    return rc;
}

struct strata_meta__audit_copy {
    struct meta_rados *r;
    uint64_t seg;
    char after[24]; /* the last key read */
    bool seg_done;
    rados_read_op_t op;
    rados_omap_iter_t it;
    bool more;
    char *line;
    size_t cap;
};

int strata_meta__rados_audit_where(char *buf, size_t cap, const struct strata_rados_opts *o)
{
    int n = snprintf(buf, cap, "rados:%s:%s:%s", o->id && *o->id ? o->id : "admin",
                     o->prefix && *o->prefix ? o->prefix : "strata", o->conf);
    return n > 0 && (size_t)n < cap ? 0 : STRATA_EINVAL;
}

/* where = rados:ID:PREFIX:CONF (CONF last: a path may hold ':'). */
static int where_connect(const char *where, struct meta_rados **out)
{
    *out = NULL;
    if (strncmp(where, "rados:", 6) != 0)
        return STRATA_EINVAL;
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", where + 6);
    char *id = buf, *prefix = strchr(id, ':');
    if (!prefix)
        return STRATA_EINVAL;
    *prefix++ = 0;
    char *conf = strchr(prefix, ':');
    if (!conf)
        return STRATA_EINVAL;
    *conf++ = 0;
    struct strata_rados_opts o = {.conf = conf, .id = id, .prefix = prefix};
    return strata_meta__rados_connect(&o, true, out, NULL, 0);
}

bool strata_meta__rados_audit_copy_anchor(const char *where, uint64_t *seq, char hash[65])
{
    struct meta_rados *r;
    if (where_connect(where, &r) != 0)
        return false;
    bool ok = tail_find(r, r->meta, seg_hint(r->meta), seq, hash) == 0 && *seq > 0;
    strata_meta__rados_disconnect(r);
    return ok;
}

int strata_meta__rados_audit_copy_open(const char *where, struct strata_meta__audit_copy **out)
{
    *out = NULL;
    struct meta_rados *r;
    int rc = where_connect(where, &r);
    if (rc)
        return rc;
    uint64_t seq;
    char hash[65];
    rc = tail_find(r, r->meta, 0, &seq, hash);
    if (rc == 0 && seq == 0)
        rc = STRATA_ENOTFOUND;
    struct strata_meta__audit_copy *c = rc ? NULL : calloc(1, sizeof(*c));
    if (!c) {
        strata_meta__rados_disconnect(r);
        return rc ? rc : STRATA_ENOMEM;
    }
    c->r = r;
    *out = c;
    return 0;
}

static void page_end(struct strata_meta__audit_copy *c)
{
    strata_meta__rados_iter_end(c->it);
    if (c->op)
        rados_release_read_op(c->op);
    c->it = NULL;
    c->op = NULL;
}

/* The next page of the current segment's entries; 1 read, 0 the segment
 * has no more, or an error. */
static int page_read(struct strata_meta__audit_copy *c)
{
    page_end(c);
    char oid[40];
    seg_oid(oid, c->seg);
    c->op = rados_create_read_op();
    if (!c->op)
        return STRATA_ENOMEM;
    unsigned char more = 0;
    int prval = 0;
    rados_read_op_omap_get_vals2(c->op, c->after, "e/", PAGE, &c->it, &more, &prval);
    int r = rados_read_op_operate(c->op, c->r->meta, oid, 0);
    if (r == 0)
        r = prval;
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return STRATA_EIO;
    c->more = more;
    return 1;
}

int strata_meta__rados_audit_copy_next(struct strata_meta__audit_copy *c, const char **line,
                                       size_t *len)
{
    for (;;) {
        if (c->it) {
            char *k = NULL, *v = NULL;
            size_t vl = 0;
            if (rados_omap_get_next(c->it, &k, &v, &vl) < 0)
                return STRATA_EIO;
            if (k) {
                snprintf(c->after, sizeof(c->after), "%s", k);
                if (vl > c->cap) {
                    char *n = realloc(c->line, vl);
                    if (!n)
                        return STRATA_ENOMEM;
                    c->line = n;
                    c->cap = vl;
                }
                memcpy(c->line, v, vl);
                *line = c->line;
                *len = vl;
                return 1;
            }
            bool more = c->more;
            page_end(c);
            if (!more) { /* this segment is read: on to the next */
                c->seg++;
                c->after[0] = 0;
            }
        }
        int rc = page_read(c);
        if (rc <= 0)
            return rc;
    }
}

void strata_meta__rados_audit_copy_close(struct strata_meta__audit_copy *c)
{
    if (!c)
        return;
    page_end(c);
    strata_meta__rados_disconnect(c->r);
    free(c->line);
    free(c);
}
