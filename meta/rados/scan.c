/*
 * scan.c - the RADOS backend's scans (store.h, "scans"): a merge, in key
 * order, of the version streams of a bucket's 8 index shards (RADOS.md,
 * "Keys of an index shard", "Sharding").
 *
 * Each shard's stream is its entries under the kind's prefix + the escaped
 * prefix (omap_get_vals2 with filter_prefix), read a page at a time from
 * the last key read: CURRENT reads the heads h/K\x01 (one per key: the
 * newest version's sort key and record, kept by every commit), VERSIONS
 * the versions o/K\x01SK.  Every key lives on one shard, so the merge picks
 * the smallest next entry of the streams (escaped keys sort as raw keys,
 * and a key's versions sort newest first under it).  skip_past drops what a stream buffered under the prefix and,
 * when its page ran out there, seeks it with start_after = prefix + 0xff:
 * one read per shard instead of a walk of the keys under the prefix.  A
 * scan that knows how many entries its caller takes (a page without a
 * delimiter) reads each shard's likely share of what is still to take
 * (share); otherwise a stream's reads start at FIRST_PAGE entries, after
 * a seek at SEEK_PAGE, and double up to SCAN_PAGE: a delimiter listing
 * reads a few entries per prefix, a long walk soon reads full pages.
 * UPLOADS merges the u/K\x01UP entries the same way (an upload id sorts
 * like a sort key: 32 hex), leaving out completed-upload records.
 * DUE merges the shards' due index entries e/MTIME\x01K\x01SK (16 hex ns,
 * index.h) from e/ + the hex of from_ms up to the first one at or past
 * to_ms: fixed-width hex sorts in time order, so the merge is oldest
 * first.  INTENTS merges the shards' x/K\x01SK entries of one bucket after
 * another (the bucket list as it was at open).
 * Threads: one scan is used by one thread at a time.
 */
#include "index.h"
#include "rados.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_PAGE 256 /* a long walk's reads */
#define FIRST_PAGE 32 /* the first read of a stream: a delimiter listing may seek soon */
#define SEEK_PAGE 1   /* after a seek past a prefix: what follows may be another prefix */
#define RADOS_OMAP_PAGE_MAX 1000 /* an OSD returns at most 1,024 entries per read */

static _Atomic uint64_t visited;

uint64_t strata_meta__rados_scan_visited(void)
{
    return atomic_load(&visited);
}

struct ent {
    char *k; /* one allocation: the key, its NUL, then the value */
    char *v;
    size_t vl;
};

struct stream {
    char oid[48];
    char start[RADOS_EKEY_MAX + 2]; /* read after this key next */
    struct ent *e;
    size_t n, pos;
    bool more; /* the shard has entries past the page */
    bool guard; /* the next read compares \x01layout (the first, on a cached record) */
    unsigned page; /* entries the next read asks for: doubles up to SCAN_PAGE */
    /* The shard object's version at this scan's reads: a stream whose reads
     * all saw one version may be stashed for the next page (stash_put). */
    uint64_t ver;
    bool ver_set, ver_mixed;
    bool verify; /* its entries came from a stash: the next read asserts ver */
};

struct strata_meta__scan {
    struct strata_meta *m;
    rados_ioctx_t io;
    enum strata_meta__scan_kind kind;
    char kc; /* the entries' kind: 'h' (CURRENT), 'o' (VERSIONS), 'u' (UPLOADS) */
    struct strata_mpu_info upl; /* UPLOADS: the entry returned last */
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char fp[RADOS_IKEY_MAX]; /* filter prefix: kc/ + escaped prefix; e/; x/ */
    char stop[24];           /* DUE: e/ + the hex of to_ms (ns): the end */
    struct rados_blist bl;   /* INTENTS: the buckets, and the one walked now */
    size_t bi;
    char key[STRATA_KEY_MAX + 1]; /* DUE, INTENTS: the entry's key */
    struct stream st[RADOS_IDX_SHARDS];
    bool seeking; /* skip_past was called: no read ahead */
    unsigned left; /* entries the caller still means to take (spec want), 0: unknown */
    /* CURRENT, VERSIONS, UPLOADS opened on the cached bucket record: where
     * the streams start, to start them again on a fresh one (SCAN_STALE) */
    bool cached;
    char start0[RADOS_IKEY_MAX + 2];
    uint64_t inc;  /* the incarnation the streams read */
    unsigned want; /* spec want: a page without a delimiter (stash_put) */
    /* The last two entries taken, in merge order (stash_put): the omap key
     * of the one before the last, and the stream of the last. */
    char taken[2][RADOS_IKEY_MAX + 2];
    unsigned ntaken, last_st;
    bool info_live;
    struct strata_obj_info info;
    uint8_t sk[16];
};

static void page_free(struct stream *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->e[i].k);
    free(s->e);
    s->e = NULL;
    s->n = s->pos = 0;
}

/* One stream's read in flight. */
struct pending {
    struct stream *s;
    rados_read_op_t op;
    rados_completion_t c;
    rados_omap_iter_t it;
    int pr, cpr;
    bool guarded;
    bool verified; /* asserted the version of a stashed stream */
    unsigned char more;
};

/* The reads of one refill: the caller sleeps once, until the last one
 * completed (its callback runs in librados' finisher thread), instead of
 * waking for each completion in turn: on a loaded machine every wake-up
 * waits for a CPU. */
struct group {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned left;
};

static void group_done(rados_completion_t c, void *arg)
{
    (void)c;
    struct group *g = arg;
    pthread_mutex_lock(&g->mu);
    if (--g->left == 0)
        pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* A guarded read met a closed shard (-ECANCELED) or none (-ENOENT): the
 * cached bucket record may name a deleted incarnation (bcache.c). */
#define SCAN_STALE 1

/* Keep what a finished read returned as the stream's page (ver: the
 * shard object's version it read). */
static int take_page(struct stream *s, struct pending *p, int r, uint64_t ver)
{
    int rc = 0;
    s->more = false;
    if (p->guarded && (r == -ECANCELED || r == -ENOENT))
        return SCAN_STALE;
    if (r == -ENOENT) {
        s->ver_mixed = true; /* an empty shard never written: no version to assert */
        return 0;
    }
    if (r < 0 || p->pr < 0)
        return strata_meta__rados_err(r < 0 ? r : p->pr);
    s->ver_mixed = s->ver_mixed || (s->ver_set && s->ver != ver);
    s->ver = ver;
    s->ver_set = true;
    if (!p->it)
        return 0;
    /* Append to what the stream still holds (a read ahead of its end). */
    for (size_t i = 0; i < s->pos; i++)
        free(s->e[i].k);
    size_t keep = s->n - s->pos;
    if (keep)
        memmove(s->e, s->e + s->pos, keep * sizeof(*s->e));
    s->n = keep;
    s->pos = 0;
    unsigned cnt = rados_omap_iter_size(p->it);
    struct ent *ne = realloc(s->e, (keep + cnt + 1) * sizeof(*s->e));
    if (!ne)
        return STRATA_ENOMEM;
    s->e = ne;
    cnt += (unsigned)keep;
    char *k, *v;
    size_t vl;
    while (s->n < cnt && rados_omap_get_next(p->it, &k, &v, &vl) == 0 && k) {
        struct ent *x = &s->e[s->n];
        size_t kl = strlen(k);
        x->k = malloc(kl + 1 + vl);
        if (!x->k) {
            rc = STRATA_ENOMEM;
            break;
        }
        memcpy(x->k, k, kl + 1);
        x->v = x->k + kl + 1;
        if (vl) /* index entries (e/) have empty values: v may be NULL */
            memcpy(x->v, v, vl);
        x->vl = vl;
        s->n++;
    }
    atomic_fetch_add(&visited, s->n - keep);
    s->more = p->more != 0 && s->n > keep;
    if (s->n)
        snprintf(s->start, sizeof(s->start), "%s", s->e[s->n - 1].k);
    return rc;
}

/* What one shard is likely to hold of the next `left` entries of the
 * merge: its share (keys hash evenly, so a shard's count is binomial, 1/8)
 * plus two standard deviations and 2.  Reading the share alone would end
 * most pages with a second round; reading more makes the OSD read (and
 * this side decode) entries the page never shows: an entry costs the OSD
 * ~4 us of CPU, mostly allocating (perf), so a page of 1,000 read 1,312
 * at 3.7 deviations against 1,184 now (148 a shard), and a second round
 * (one shard short, ~10 % of pages) reads a few entries. */
static unsigned share(unsigned left)
{
    unsigned var = (unsigned)((uint64_t)left * (RADOS_IDX_SHARDS - 1) /
                              ((uint64_t)RADOS_IDX_SHARDS * RADOS_IDX_SHARDS));
    unsigned sd = 0;
    while ((sd + 1) * (sd + 1) <= var)
        sd++;
    return left / RADOS_IDX_SHARDS + 2 * sd + 2 + (var > sd * sd); /* sd rounded up */
}

/* Entries the next read of stream s asks for, and whether it reads now:
 * a scan that knows how many entries it still takes (left) reads, in the
 * round a stream ran out, every stream short of its likely share of them,
 * up to that share; one that does not doubles its reads up to SCAN_PAGE
 * (see refill). */
static bool plan_read(const struct strata_meta__scan *sc, const struct stream *s, unsigned *page)
{
    size_t buffered = s->n - s->pos;
    if (!s->more)
        return false;
    if (sc->left && !sc->seeking) {
        unsigned want = share(sc->left);
        if (buffered >= want)
            return false;
        *page = want - (unsigned)buffered;
        if (*page > RADOS_OMAP_PAGE_MAX)
            *page = RADOS_OMAP_PAGE_MAX;
        return true;
    }
    if (s->pos < s->n && (sc->seeking || buffered > s->n / 2))
        return false;
    *page = s->page;
    return true;
}

/* plan_read, and a stream whose entries came from a stash reads in the
 * first round whatever it holds: its read asserts the version they were
 * read at (at least one entry, past what it holds). */
static bool plan_or_verify(const struct strata_meta__scan *sc, const struct stream *s,
                           unsigned *page)
{
    if (plan_read(sc, s, page))
        return true;
    *page = 1;
    return s->verify;
}

/* A stashed stream whose shard changed since (its read's version assert
 * failed): drop its entries and read it from the scan's start. */
static void unstash(struct strata_meta__scan *sc, struct stream *s, const struct pending *x)
{
    page_free(s);
    snprintf(s->start, sizeof(s->start), "%s", sc->start0);
    s->more = true;
    s->guard = x->guarded;
    s->page = FIRST_PAGE;
    s->ver_set = s->ver_mixed = false;
}

/* The next pages of the streams that ran out, read in parallel (aio): at
 * the start, all 8 shards at once; later, when one runs out, every stream
 * past half its page (or short of its share of what the scan still
 * takes: plan_read) reads ahead with it (hashed keys deplete the streams
 * at about the same rate), so a walk costs one round trip per round of
 * pages, not one per shard.  A scan that seeks past prefixes reads no
 * more than it needs: what it reads ahead it may seek past. */
static int refill(struct strata_meta__scan *sc)
{
    bool must = false;
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++)
        must = must || (sc->st[i].pos >= sc->st[i].n && sc->st[i].more) || sc->st[i].verify;
    if (!must)
        return 0;
    struct pending p[RADOS_IDX_SHARDS];
    unsigned np = 0;
    int rc = 0;
    bool again = false; /* a stashed stream was dropped: read it before any merge */
    struct group g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        struct stream *s = &sc->st[i];
        unsigned page;
        if (!plan_or_verify(sc, s, &page))
            continue;
        struct pending *x = &p[np];
        memset(x, 0, sizeof(*x));
        x->s = s;
        x->op = rados_create_read_op();
        if (!x->op || rados_aio_create_completion(&g, group_done, NULL, &x->c) < 0) {
            if (x->op)
                rados_release_read_op(x->op);
            rc = STRATA_ENOMEM;
            break;
        }
        pthread_mutex_lock(&g.mu);
        g.left++;
        pthread_mutex_unlock(&g.mu);
        x->guarded = s->guard;
        x->verified = s->verify;
        if (s->verify) /* first: a changed shard fails it, whatever else the op holds */
            rados_read_op_assert_version(x->op, s->ver);
        s->verify = false;
        if (s->guard) /* a shard closed by a bucket deletion fails it */
            rados_read_op_omap_cmp(x->op, RADOS_LAYOUT_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", 0,
                                   &x->cpr);
        s->guard = false;
        rados_read_op_omap_get_vals2(x->op, s->start, sc->fp, page, &x->it, &x->more, &x->pr);
        s->page = s->page * 2 < SCAN_PAGE ? s->page * 2 : SCAN_PAGE;
        int r = rados_aio_read_op_operate(x->op, sc->io, x->c, s->oid, 0);
        np++;
        if (r < 0) {
            group_done(x->c, &g); /* never submitted: no callback */
            rc = strata_meta__rados_err(r);
            break;
        }
    }
    pthread_mutex_lock(&g.mu);
    while (g.left)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    /* Each is complete now: the waits below return at once (and the
     * callbacks are done with g, which they touch only under its mutex). */
    for (unsigned j = 0; j < np; j++) {
        struct pending *x = &p[j];
        rados_aio_wait_for_complete(x->c);
        int r = rados_aio_get_return_value(x->c);
        if (x->verified && (r == -ERANGE || r == -EOVERFLOW)) {
            unstash(sc, x->s, x);
            again = true;
        } else if (rc == 0 || rc == SCAN_STALE) {
            int tr = take_page(x->s, x, r, rados_aio_get_version(x->c));
            rc = rc == 0 || tr < 0 ? tr : rc;
        }
        strata_meta__rados_iter_end(x->it);
        rados_aio_release(x->c);
        rados_release_read_op(x->op);
    }
    return rc == 0 && again ? refill(sc) : rc; /* no verify left: once more at most */
}

/* Start the 8 streams of incarnation inc after start (a fresh read each). */
static void streams_start(struct strata_meta__scan *sc, uint64_t inc, const char *start)
{
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        struct stream *s = &sc->st[i];
        page_free(s);
        strata_meta__rados_idx_oid(s->oid, inc, i);
        snprintf(s->start, sizeof(s->start), "%s", start);
        s->more = true; /* the first page is read on the first next */
        s->guard = sc->cached;
        s->page = FIRST_PAGE;
        s->verify = s->ver_set = s->ver_mixed = false;
    }
    sc->inc = inc;
}

/* Read-ahead kept for the next page.  A page of a listing without a
 * delimiter reads each shard's likely share plus a margin (share), so its
 * streams end holding entries past the page (~18 % of what it read); the
 * next page (its continuation token is the key taken before the last, or
 * for ListObjectVersions its key and version id markers) would read them
 * again.  At close such a scan stashes, per shard, what it
 * did not return (and the entry taken last) with the shard object's
 * version its reads saw; a scan opened after that entry takes the stash,
 * and each stashed stream's first read asserts that version: a shard
 * written since fails it (-ERANGE, -EOVERFLOW) and that stream is read
 * again from the start, so a page shows what a fresh read would. */
struct rados_stash {
    uint64_t inc;
    int64_t at_us;
    char fp[RADOS_IKEY_MAX];
    char start[RADOS_IKEY_MAX + 3]; /* the start of the scan it serves: a taken entry (and ~) */
    struct stream st[RADOS_IDX_SHARDS];
    bool has[RADOS_IDX_SHARDS];
};

#define STASH_MAX_AGE_US 10000000 /* unused for longer: nobody is turning pages */

static _Atomic uint64_t stash_hits;

uint64_t strata_meta__rados_scan_stash_hits(void)
{
    return atomic_load(&stash_hits);
}

static void stash_free(struct rados_stash *x)
{
    if (!x)
        return;
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++)
        page_free(&x->st[i]);
    free(x);
}

void strata_meta__rados_stash_free(struct meta_rados *r)
{
    for (unsigned i = 0; i < RADOS_STASH_SLOTS; i++) {
        stash_free(r->stash[i]);
        r->stash[i] = NULL;
    }
}

/* Stash what a finished page read past its end (see above). */
static void stash_put(struct strata_meta__scan *sc)
{
    bool cur = sc->kind == STRATA_META__SCAN_CURRENT;
    if ((!cur && sc->kind != STRATA_META__SCAN_VERSIONS) || !sc->want || sc->left ||
        sc->seeking || sc->ntaken < 2)
        return; /* not a page that ended full: no next page, or not from here */
    struct rados_stash *x = calloc(1, sizeof(*x));
    if (!x)
        return;
    x->inc = sc->inc;
    x->at_us = strata_meta__rados_mono_us();
    memcpy(x->fp, sc->fp, sizeof(x->fp));
    /* The next page starts after the entry taken before the last (the
     * caller took one more than it shows), as scan_open spells it: past
     * every version of that key (h/K\x01~), or past that version, whose
     * omap key o/K\x01SK is its key-marker and version-id-marker. */
    snprintf(x->start, sizeof(x->start), "%s%s", sc->taken[sc->ntaken & 1], cur ? "~" : "");
    bool any = false;
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        struct stream *s = &sc->st[i];
        size_t from = s->pos - (i == sc->last_st && s->pos > 0);
        if (!s->ver_set || s->ver_mixed)
            continue;
        for (size_t j = 0; j < from; j++)
            free(s->e[j].k);
        memmove(s->e, s->e + from, (s->n - from) * sizeof(*s->e));
        x->st[i] = *s;
        x->st[i].n = s->n - from;
        x->st[i].pos = 0;
        x->has[i] = any = true;
        s->e = NULL;
        s->n = s->pos = 0;
    }
    if (!any) {
        free(x);
        return;
    }
    struct meta_rados *r = meta_rados_of(sc->m);
    pthread_mutex_lock(&r->stash_mu);
    unsigned slot = 0;
    for (unsigned i = 1; i < RADOS_STASH_SLOTS && r->stash[slot]; i++)
        if (!r->stash[i] || r->stash[i]->at_us < r->stash[slot]->at_us)
            slot = i;
    struct rados_stash *old = r->stash[slot];
    r->stash[slot] = x;
    pthread_mutex_unlock(&r->stash_mu);
    stash_free(old);
}

/* A scan opened where a stashed page ended takes its entries (see above). */
static void stash_take(struct strata_meta__scan *sc)
{
    struct meta_rados *r = meta_rados_of(sc->m);
    int64_t now = strata_meta__rados_mono_us();
    struct rados_stash *x = NULL;
    pthread_mutex_lock(&r->stash_mu);
    for (unsigned i = 0; i < RADOS_STASH_SLOTS && !x; i++) {
        struct rados_stash *y = r->stash[i];
        if (y && y->inc == sc->inc && now - y->at_us < STASH_MAX_AGE_US &&
            strcmp(y->start, sc->start0) == 0 && strcmp(y->fp, sc->fp) == 0) {
            x = y;
            r->stash[i] = NULL; /* one page continues from it */
        }
    }
    pthread_mutex_unlock(&r->stash_mu);
    if (!x)
        return;
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        if (!x->has[i])
            continue;
        struct stream *s = &sc->st[i];
        bool guard = s->guard;
        page_free(s);
        *s = x->st[i];
        x->st[i].e = NULL;
        x->st[i].n = 0;
        s->guard = guard;
        s->page = FIRST_PAGE;
        s->verify = true;
    }
    atomic_fetch_add(&stash_hits, 1);
    stash_free(x);
}

/* DUE: entries of [from_ms, to_ms) of one bucket. */
static int open_due(struct strata_meta *m, const struct strata_meta__scan_spec *spec,
                    struct strata_meta__scan *sc)
{
    if (spec->prefix || (spec->after && *spec->after) || spec->after_sk ||
        spec->from_ms >= spec->to_ms)
        return STRATA_EINVAL;
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(m, spec->bucket, &b);
    if (rc)
        return rc;
    uint64_t lo = spec->from_ms > 0 ? (uint64_t)spec->from_ms * 1000000u : 0;
    char start[24];
    strata_meta__rados_ekey_time(start, lo); /* sorts before every entry of lo */
    strata_meta__rados_ekey_time(sc->stop, (uint64_t)spec->to_ms * 1000000u);
    memcpy(sc->fp, "e/", 3);
    streams_start(sc, b.incarnation, start);
    return 0;
}

/* INTENTS: every bucket's x/ entries. */
static int open_intents(struct strata_meta *m, const struct strata_meta__scan_spec *spec,
                        struct strata_meta__scan *sc)
{
    if (spec->bucket || spec->prefix || (spec->after && *spec->after) || spec->after_sk)
        return STRATA_EINVAL;
    int rc = strata_meta__rados_blist_read(m, &sc->bl);
    if (rc)
        return rc;
    memcpy(sc->fp, "x/", 3);
    if (sc->bl.n) {
        snprintf(sc->bucket, sizeof(sc->bucket), "%s", sc->bl.name[0]);
        streams_start(sc, sc->bl.inc[0], "");
    }
    return 0;
}

/* A scan of spec's kind (and bucket), nothing read yet. */
static struct strata_meta__scan *scan_new(struct strata_meta *m,
                                          const struct strata_meta__scan_spec *spec)
{
    struct strata_meta__scan *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return NULL;
    sc->m = m;
    sc->io = meta_rados_of(m)->meta;
    sc->kind = spec->kind;
    if (spec->bucket)
        snprintf(sc->bucket, sizeof(sc->bucket), "%s", spec->bucket);
    return sc;
}

int strata_meta__rados_scan_open(struct strata_meta *m, const struct strata_meta__scan_spec *spec,
                                 struct strata_meta__scan **out)
{
    *out = NULL;
    bool bucket_ok =
        spec->bucket && *spec->bucket && strlen(spec->bucket) <= STRATA_BUCKET_NAME_MAX;
    if (spec->kind == STRATA_META__SCAN_INTENTS || spec->kind == STRATA_META__SCAN_DUE) {
        if (spec->kind == STRATA_META__SCAN_DUE && !bucket_ok)
            return STRATA_EINVAL;
        struct strata_meta__scan *sc = scan_new(m, spec);
        if (!sc)
            return STRATA_ENOMEM;
        int rc =
            spec->kind == STRATA_META__SCAN_DUE ? open_due(m, spec, sc) : open_intents(m, spec, sc);
        if (rc)
            strata_meta__rados_scan_close(sc);
        else
            *out = sc;
        return rc;
    }
    if (!bucket_ok)
        return STRATA_EINVAL;
    if (spec->kind != STRATA_META__SCAN_CURRENT && spec->kind != STRATA_META__SCAN_VERSIONS &&
        spec->kind != STRATA_META__SCAN_UPLOADS)
        return STRATA_EINVAL;
    const char *after = spec->after && *spec->after ? spec->after : NULL;
    const char *prefix = spec->prefix ? spec->prefix : "";
    if (strlen(prefix) > STRATA_KEY_MAX || (after && strlen(after) > STRATA_KEY_MAX) ||
        (spec->after_sk && (!after || spec->kind == STRATA_META__SCAN_CURRENT)))
        return STRATA_EINVAL;
    /* The cached record (no round trip per page); the first reads check
     * that its shards are live (SCAN_STALE). */
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_get(m, spec->bucket, &b);
    if (rc)
        return rc;
    struct strata_meta__scan *sc = scan_new(m, spec);
    if (!sc)
        return STRATA_ENOMEM;
    sc->kc = spec->kind == STRATA_META__SCAN_CURRENT   ? 'h'
             : spec->kind == STRATA_META__SCAN_UPLOADS ? 'u'
                                                       : 'o';
    strata_meta__rados_ikey_prefix(sc->fp, sc->kc, prefix, strlen(prefix));
    char start[RADOS_IKEY_MAX + 2] = "";
    if (after) {
        size_t n = strata_meta__rados_ikey(start, sc->kc, after, strlen(after));
        if (spec->after_sk)
            strata_meta__rados_sk_hex(spec->after_sk, start + n); /* past that version
                                                                   * (upload: its id) */
        else
            memcpy(start + n, "~", 2); /* '~' sorts after every hex digit: past the key */
    }
    sc->cached = true;
    sc->left = sc->want = spec->want;
    memcpy(sc->start0, start, sizeof(start));
    streams_start(sc, b.incarnation, start);
    if (sc->kind != STRATA_META__SCAN_UPLOADS && after)
        stash_take(sc);
    *out = sc;
    return 0;
}

/* The cached bucket record named a shard that is closed or gone: start
 * the streams again on the record read now (unguarded: today's shards,
 * whatever their layout key says). */
static int restart_fresh(struct strata_meta__scan *sc)
{
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(sc->m, sc->bucket, &b);
    if (rc)
        return rc;
    sc->cached = false;
    streams_start(sc, b.incarnation, sc->start0);
    return 0;
}

/* One more entry returned: one fewer the caller still takes (the last
 * one it meant to take leaves it unknown). */
static void taken(struct strata_meta__scan *sc)
{
    if (sc->left)
        sc->left--;
}

/* DUE, INTENTS: bx (taken from its stream) as an entry; false to skip it. */
static bool index_ent(struct strata_meta__scan *sc, const struct ent *bx,
                      struct strata_meta__scan_ent *e)
{
    size_t kl;
    if (sc->kind == STRATA_META__SCAN_DUE) {
        uint64_t ns;
        kl = strata_meta__rados_ekey_parse(bx->k, sc->key, sizeof(sc->key), &ns, sc->sk);
        e->due_ms = (int64_t)(ns / 1000000u);
    } else {
        const char *rest;
        kl = strata_meta__rados_ikey_parse(bx->k, sc->key, sizeof(sc->key), &rest);
        if (!rest || strata_meta__rados_sk_parse(rest, sc->sk))
            kl = 0;
        e->bucket = sc->bucket;
    }
    if (!kl)
        return false; /* not an entry of ours: never show garbage */
    e->key = sc->key;
    e->keylen = kl;
    e->sk = sc->sk;
    return true;
}

int strata_meta__rados_scan_next(struct strata_meta__scan *sc, struct strata_meta__scan_ent *e)
{
    memset(e, 0, sizeof(*e));
    if (sc->info_live) {
        strata_obj_info_fini(&sc->info);
        sc->info_live = false;
    }
    for (;;) {
        int rc = refill(sc);
        if (rc == SCAN_STALE) { /* only the first reads are guarded: nothing taken yet */
            rc = restart_fresh(sc);
            if (rc == 0)
                continue;
        }
        if (rc)
            return rc;
        struct stream *best = NULL;
        struct ent *bx = NULL;
        for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
            struct stream *st = &sc->st[i];
            struct ent *x = st->pos < st->n ? &st->e[st->pos] : NULL;
            if (x && (!bx || strcmp(x->k, bx->k) < 0)) {
                bx = x;
                best = &sc->st[i];
            }
        }
        if (!bx && sc->kind == STRATA_META__SCAN_INTENTS && sc->bi + 1 < sc->bl.n) {
            sc->bi++; /* this bucket's intents are done: the next one's */
            snprintf(sc->bucket, sizeof(sc->bucket), "%s", sc->bl.name[sc->bi]);
            streams_start(sc, sc->bl.inc[sc->bi], "");
            continue;
        }
        if (!bx || (sc->kind == STRATA_META__SCAN_DUE && strcmp(bx->k, sc->stop) >= 0))
            return 0;
        best->pos++;
        if (sc->want) { /* the last two taken, for stash_put (no printf: per entry) */
            size_t kl = strnlen(bx->k, sizeof(sc->taken[0]) - 1);
            char *t = sc->taken[sc->ntaken++ & 1];
            memcpy(t, bx->k, kl);
            t[kl] = 0;
            sc->last_st = (unsigned)(best - sc->st);
        }
        if (sc->kind == STRATA_META__SCAN_DUE || sc->kind == STRATA_META__SCAN_INTENTS) {
            if (index_ent(sc, bx, e))
                return 1;
            continue;
        }
        char key[STRATA_KEY_MAX + 1];
        const char *rest;
        size_t kl = strata_meta__rados_ikey_parse(bx->k, key, sizeof(key), &rest);
        /* A version: its sort key ends the omap key.  A head: it starts
         * the value, the record follows. */
        bool head = sc->kc == 'h';
        char hx[33] = "";
        if (head && bx->vl >= 32) {
            memcpy(hx, bx->v, 32);
            hx[32] = 0;
        }
        const char *rv = head ? bx->v + 32 : bx->v;
        size_t rl = head ? bx->vl - 32 : bx->vl;
        if (!rest || (head && (*rest || bx->vl < 32)) ||
            strata_meta__rados_sk_parse(head ? hx : rest, sc->sk))
            continue; /* not an entry of its kind: never show garbage */
        if (sc->kind == STRATA_META__SCAN_UPLOADS) {
            struct meta_upload u;
            if (strata_meta__is_dead(bx->v, bx->vl) ||
                strata_meta__upload_decode(bx->v, bx->vl, &u) != 0)
                continue; /* a completed upload (or garbage): not live */
            strata_meta__upload_info(&sc->upl, sc->bucket, key, sc->sk, &u);
            strata_meta__upload_fini(&u);
            e->key = sc->upl.key;
            e->keylen = kl;
            e->upload = &sc->upl;
            taken(sc);
            return 1;
        }
        struct meta_rec r;
        if (strata_meta__rec_decode(rv, rl, false, &r) != 0)
            continue;
        strata_meta__info_from_rec(&sc->info, sc->bucket, key, sc->sk, &r);
        strata_meta__rec_fini(&r);
        sc->info_live = true;
        e->key = sc->info.key;
        e->keylen = kl;
        e->sk = sc->kind == STRATA_META__SCAN_VERSIONS ? sc->sk : NULL;
        e->info = &sc->info;
        taken(sc);
        return 1;
    }
}

bool strata_meta__rados_scan_skip_past(struct strata_meta__scan *sc, const char *p, size_t n)
{
    if (sc->kind == STRATA_META__SCAN_DUE || sc->kind == STRATA_META__SCAN_INTENTS)
        return false; /* in time order, or across buckets: no key prefix to skip */
    char pre[RADOS_IKEY_MAX + 2];
    size_t pl = strata_meta__rados_ikey_prefix(pre, sc->kc, p, n);
    sc->seeking = true;
    bool any = false;
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        struct stream *s = &sc->st[i];
        while (s->pos < s->n && strncmp(s->e[s->pos].k, pre, pl) == 0)
            s->pos++;
        if (s->pos >= s->n && s->more && strncmp(s->start, pre, pl) == 0) {
            /* The page ended under the prefix: read on past all of it. */
            memcpy(s->start, pre, pl);
            s->start[pl] = (char)0xff;
            s->start[pl + 1] = 0;
            s->page = SEEK_PAGE; /* small reads while prefixes follow each other */
        }
        any = any || s->pos < s->n || s->more;
    }
    return any;
}

void strata_meta__rados_scan_close(struct strata_meta__scan *sc)
{
    if (!sc)
        return;
    stash_put(sc);
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++)
        page_free(&sc->st[i]);
    strata_meta__rados_blist_free(&sc->bl);
    if (sc->info_live)
        strata_obj_info_fini(&sc->info);
    free(sc);
}
