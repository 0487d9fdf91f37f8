/*
 * dcache.c - the data cache (dcache.h): whole data objects read by GETs,
 * in memfds, served without a drive read.
 *
 * Filling: the first reader of an object not cached (and that fits) reads
 * it from the tier as always and copies each span it reads, in order from
 * offset 0, into a new memfd; when the last byte is in, the entry becomes
 * ready.  A reader that skips ahead (a Range), stops early or fails
 * abandons the fill.  A writer (strata_meta__dc_write_begin) fills the
 * same way with the bytes it stores; its entry becomes ready only when
 * the commit that names the data succeeded, and goes otherwise.  One fill per object at a time: other readers of it
 * meanwhile read the tier.  Space is reserved when a fill starts.
 * Eviction: second chance (CLOCK) over the entries in insertion order.
 * Recycling: an entry that goes (evicted, dropped, abandoned) with no
 * reader left keeps its memfd and pages as a spare, within the budget; a
 * new fill takes a spare and overwrites its pages, so a fill in a full
 * cache neither allocates nor frees shmem pages (the kernel's page
 * allocation was most of a fill's cost: meta/README.md "Data cache").
 * Threads: any; the table under one mutex (a few operations per GET),
 * entries reference-counted (a reader uses its entry outside the lock).
 */
#include "dcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "strata/err.h"
#include "strata/meta.h"

#define DC_BUCKETS 1024u /* hash chains (power of two) */

struct dc_ent {
    atomic_uint refs; /* the table's (while listed) + readers' */
    struct meta_dcache *dc;
    const struct strata_tier *inner;
    uint8_t id[STRATA_DATA_ID_LEN];
    uint64_t size;
    int fd;                     /* memfd of size bytes */
    uint8_t *map;               /* fd mapped, shared */
    atomic_bool lent;           /* fd duplicated for a sender: never recycled */
    bool warm;                  /* map's pages present and writable: fill by memcpy */
    bool populated;             /* map's page table filled (kept with the map) */
    bool ready;                 /* every byte is in (under mu) */
    bool ref;                   /* used since the hand last passed (under mu) */
    struct dc_ent *hnext;       /* hash chain */
    struct dc_ent *prev, *next; /* the clock ring, oldest first */
};

struct meta_dcache {
    pthread_mutex_t mu;
    struct dc_ent *bucket[DC_BUCKETS];
    struct dc_ent *ring; /* the hand: next entry eviction looks at */
    struct dc_ent *spare; /* unlisted, unreferenced, pages kept (hnext chain) */
    uint64_t spare_bytes; /* their sizes; with st.bytes at most the budget */
    uint64_t obj_max;
    struct strata_data_cache_stats st; /* what strata_meta__dc_stats copies */
};

struct dc_reader {
    struct meta_dc_view *v;
    struct dc_ent *hit;       /* answered from memory (a reference) */
    void *inner;              /* else the tier's reader */
    struct meta_dc_fill fill; /* being filled from inner's bytes, or fill.e NULL */
};

static void ent_free(struct dc_ent *e)
{
    if (e->map)
        munmap(e->map, e->size);
    if (e->fd >= 0)
        close(e->fd);
    free(e);
}

/* Under mu: e's last reference went.  A spare if its memfd may be written
 * again (no duplicate of it is out) and the budget has room, else freed. */
static void ent_retire(struct meta_dcache *dc, struct dc_ent *e)
{
    if (e->fd < 0 || !e->map || atomic_load(&e->lent) ||
        dc->st.bytes + dc->spare_bytes + e->size > dc->st.budget) {
        ent_free(e);
        return;
    }
    e->ready = e->ref = e->warm = false;
    e->hnext = dc->spare;
    dc->spare = e;
    dc->spare_bytes += e->size;
}

/* Under mu. */
static void ent_unref_locked(struct meta_dcache *dc, struct dc_ent *e)
{
    if (atomic_fetch_sub(&e->refs, 1) == 1)
        ent_retire(dc, e);
}

/* Not under mu.  dc is read before the retire, which may free e. */
static void ent_unref(struct dc_ent *e)
{
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    struct meta_dcache *dc = e->dc;
    pthread_mutex_lock(&dc->mu);
    ent_retire(dc, e);
    pthread_mutex_unlock(&dc->mu);
}

static unsigned hash_of(const struct strata_tier *inner, const uint8_t *id)
{
    uint64_t h = (uint64_t)(uintptr_t)inner;
    for (unsigned i = 0; i < STRATA_DATA_ID_LEN; i++)
        h = h * 1099511628211ull ^ id[i];
    return (unsigned)(h ^ (h >> 29)) & (DC_BUCKETS - 1);
}

/* Under mu. */
static struct dc_ent **find_slot(struct meta_dcache *dc, const struct strata_tier *inner,
                                 const uint8_t *id)
{
    struct dc_ent **pp = &dc->bucket[hash_of(inner, id)];
    while (*pp && ((*pp)->inner != inner || memcmp((*pp)->id, id, STRATA_DATA_ID_LEN) != 0))
        pp = &(*pp)->hnext;
    return pp;
}

/* Under mu: take e out of the table (its bytes stay with its readers). */
static void unlist(struct meta_dcache *dc, struct dc_ent *e)
{
    struct dc_ent **pp = find_slot(dc, e->inner, e->id);
    if (*pp == e)
        *pp = e->hnext;
    if (e->next == e) {
        dc->ring = NULL;
    } else {
        e->prev->next = e->next;
        e->next->prev = e->prev;
        if (dc->ring == e)
            dc->ring = e->next;
    }
    dc->st.bytes -= e->size;
    dc->st.entries--;
    ent_unref_locked(dc, e); /* the table's reference */
}

/* Under mu: evict ready entries (second chance) until need more bytes fit;
 * false when fills in progress hold too much for that. */
static bool make_room(struct meta_dcache *dc, uint64_t need)
{
    /* Two turns of the hand clear every ref bit and evict what is ready. */
    uint64_t steps = 2 * dc->st.entries + 2;
    while (dc->st.bytes + need > dc->st.budget && dc->ring && steps--) {
        struct dc_ent *e = dc->ring;
        if (!e->ready) {
            dc->ring = e->next; /* a fill: not evictable */
        } else if (e->ref) {
            e->ref = false;
            dc->ring = e->next;
        } else {
            unlist(dc, e);
            dc->st.evictions++;
        }
    }
    return dc->st.bytes + need <= dc->st.budget;
}

/* Under mu: list e as the newest entry (just behind the hand). */
static void list_add(struct meta_dcache *dc, struct dc_ent *e)
{
    *find_slot(dc, e->inner, e->id) = e;
    if (!dc->ring) {
        e->prev = e->next = e;
        dc->ring = e;
    } else {
        e->next = dc->ring;
        e->prev = dc->ring->prev;
        e->prev->next = e;
        dc->ring->prev = e;
    }
    dc->st.bytes += e->size;
    dc->st.entries++;
}

/* Under mu: spares go (onto *gone, to be freed outside mu) until need
 * more bytes fit in the budget beside the entries and the spares left. */
static void spare_trim(struct meta_dcache *dc, uint64_t need, struct dc_ent **gone)
{
    while (dc->spare && dc->st.bytes + need + dc->spare_bytes > dc->st.budget) {
        struct dc_ent *x = dc->spare;
        dc->spare = x->hnext;
        dc->spare_bytes -= x->size;
        x->hnext = *gone;
        *gone = x;
    }
}

static void free_chain(struct dc_ent *gone)
{
    while (gone) {
        struct dc_ent *x = gone;
        gone = x->hnext;
        ent_free(x);
    }
}

/* Under mu: a spare for an entry of size bytes, taken off the list: the
 * smallest at least that large, else the largest (its file grows); NULL
 * when there is none. */
static struct dc_ent *spare_take(struct meta_dcache *dc, uint64_t size)
{
    struct dc_ent **best = NULL;
    for (struct dc_ent **pp = &dc->spare; *pp; pp = &(*pp)->hnext) {
        uint64_t sz = (*pp)->size;
        if (!best || (sz >= size ? (*best)->size < size || sz < (*best)->size
                                 : (*best)->size < size && sz > (*best)->size))
            best = pp;
    }
    if (!best)
        return NULL;
    struct dc_ent *e = *best;
    *best = e->hnext;
    dc->spare_bytes -= e->size;
    dc->st.reused++;
    return e;
}

/* Not under mu: e's memfd sized and mapped for size bytes (a spare's
 * pages are kept up to that size).  0, or -1 (e keeps what it had). */
static int ent_shape(struct dc_ent *e, uint64_t size)
{
    if (e->fd < 0)
        e->fd = memfd_create("strata-data-cache", MFD_CLOEXEC);
    if (e->fd < 0)
        return -1;
    bool spare = e->map != NULL;
    if (e->map && e->size == size)
        goto warm;
    if (e->map) {
        munmap(e->map, e->size);
        e->map = NULL;
    }
    if (ftruncate(e->fd, (off_t)size) != 0)
        return -1;
    void *m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
    if (m == MAP_FAILED)
        return -1;
    e->map = m;
    e->size = size;
    e->populated = false;
    if (!spare)
        return 0;
warm:
    /* A spare's pages exist: mapped writable up front (no allocation, no
     * zeroing), the fill is a plain copy, without a call and a page cache
     * lookup per page as pwrite has.  Once per mapping: a spare of the
     * same size keeps its mapping and page table for the next fills. */
    if (!e->populated)
        e->populated = madvise(e->map, (size_t)size, MADV_POPULATE_WRITE) == 0;
    e->warm = e->populated;
    return 0;
}

/* A fill entry for a miss of (inner, id), listed (not ready), with a
 * reference for the filler; NULL when it does not fit or memory is short.
 * Room is made first, so an entry evicted for it is the spare it takes. */
static struct dc_ent *fill_start(struct meta_dcache *dc, const struct strata_tier *inner,
                                 const uint8_t *id, uint64_t size)
{
    if (size == 0 || size > dc->obj_max || size > SIZE_MAX)
        return NULL;
    struct dc_ent *gone = NULL, *e = NULL;
    pthread_mutex_lock(&dc->mu);
    bool ok = !*find_slot(dc, inner, id) && make_room(dc, size);
    if (ok) {
        e = spare_take(dc, size);
        spare_trim(dc, size, &gone);
    }
    pthread_mutex_unlock(&dc->mu);
    free_chain(gone);
    gone = NULL;
    if (!ok)
        return NULL;
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e)
            return NULL;
        e->dc = dc;
        e->fd = -1;
    }
    if (ent_shape(e, size) != 0) {
        ent_free(e);
        return NULL;
    }
    e->inner = inner;
    memcpy(e->id, id, STRATA_DATA_ID_LEN);
    e->hnext = NULL;
    atomic_init(&e->refs, 2); /* the table's and the filler's */
    pthread_mutex_lock(&dc->mu);
    ok = !*find_slot(dc, inner, id) && make_room(dc, size);
    if (ok) {
        list_add(dc, e);
        dc->st.fills++;
        spare_trim(dc, 0, &gone); /* another fill may have listed meanwhile */
    }
    pthread_mutex_unlock(&dc->mu);
    free_chain(gone);
    if (!ok) {
        atomic_store(&e->refs, 1);
        ent_unref(e);
        return NULL;
    }
    return e;
}

/* The filler gives up: the entry goes (nobody else reads a fill). */
static void fill_abandon(struct meta_dc_fill *f)
{
    struct dc_ent *e = f->e;
    if (!e)
        return;
    f->e = NULL;
    pthread_mutex_lock(&f->dc->mu);
    if (*find_slot(f->dc, e->inner, e->id) == e)
        unlist(f->dc, e);
    pthread_mutex_unlock(&f->dc->mu);
    ent_unref(e);
}

/* Every byte of f is in (not under mu): the entry is ready if still
 * listed (a drop meanwhile unlisted it: its data is gone). */
static void fill_done(struct meta_dc_fill *f)
{
    struct dc_ent *e = f->e;
    f->e = NULL;
    pthread_mutex_lock(&f->dc->mu);
    e->ready = true;
    pthread_mutex_unlock(&f->dc->mu);
    ent_unref(e);
}

/* Bytes [off, off + n) read or written: the next span of the fill? */
static void fill_take(struct meta_dc_fill *f, uint64_t off, const void *p, size_t n)
{
    struct dc_ent *e = f->e;
    if (!e || off + n <= f->pos)
        return; /* nothing new (a span read again) */
    if (off > f->pos || off + n > e->size) {
        fill_abandon(f); /* a gap (the bytes before it are not read), or too many */
        return;
    }
    /* A new memfd by pwrite, not a copy into the mapping: the kernel
     * allocates its pages whole, without a page fault and zeroing per
     * page.  A spare's pages are there already (ent_shape). */
    size_t skip = (size_t)(f->pos - off);
    const uint8_t *src = (const uint8_t *)p + skip;
    size_t left = n - skip;
    if (e->warm) {
        memcpy(e->map + f->pos, src, left);
        f->pos += left;
        left = 0;
    }
    while (left) {
        ssize_t w = pwrite(e->fd, src, left, (off_t)f->pos);
        if (w <= 0) {
            fill_abandon(f);
            return;
        }
        src += w;
        left -= (size_t)w;
        f->pos += (uint64_t)w;
    }
    if (f->pos == e->size && !f->on_commit)
        fill_done(f);
}

static int dc_reader_open(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN],
                          uint64_t size, void **out)
{
    struct meta_dc_view *v = impl;
    struct meta_dcache *dc = v->dc;
    struct dc_reader *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return STRATA_ENOMEM;
    rd->v = v;
    pthread_mutex_lock(&dc->mu);
    struct dc_ent *e = *find_slot(dc, v->inner, id);
    bool have = e != NULL;
    if (e && e->ready && e->size == size) {
        atomic_fetch_add(&e->refs, 1);
        e->ref = true;
        rd->hit = e;
        dc->st.hits++;
    } else {
        dc->st.misses++;
    }
    pthread_mutex_unlock(&dc->mu);
    if (rd->hit) {
        *out = rd;
        return 0;
    }
    int rc = v->inner->ops->reader_open(v->inner->impl, place, id, size, &rd->inner);
    if (rc) {
        free(rd);
        return rc;
    }
    rd->fill.dc = dc;
    if (!have)
        rd->fill.e = fill_start(dc, v->inner, id, size);
    *out = rd;
    return 0;
}

static int dc_read(void *r, uint64_t off, void *buf, size_t len)
{
    struct dc_reader *rd = r;
    if (rd->hit) {
        if (off > rd->hit->size || len > rd->hit->size - off)
            return STRATA_ERANGE;
        memcpy(buf, rd->hit->map + off, len);
        return 0;
    }
    int rc = rd->v->inner->ops->read(rd->inner, off, buf, len);
    if (rc)
        fill_abandon(&rd->fill);
    else
        fill_take(&rd->fill, off, buf, len);
    return rc;
}

static int dc_peek(void *r, uint64_t off, size_t max, const uint8_t **p, size_t *n)
{
    struct dc_reader *rd = r;
    if (rd->hit) {
        if (off > rd->hit->size)
            return STRATA_ERANGE;
        *p = rd->hit->map + off;
        *n = rd->hit->size - off < max ? (size_t)(rd->hit->size - off) : max;
        return 0;
    }
    const struct strata_tier_ops *o = rd->v->inner->ops;
    int rc = o->peek(rd->inner, off, max, p, n);
    if (rc)
        fill_abandon(&rd->fill);
    else
        fill_take(&rd->fill, off, *p, *n);
    return rc;
}

static void dc_reader_limit(void *r, uint64_t end)
{
    struct dc_reader *rd = r;
    if (rd->hit)
        return;
    if (rd->fill.e && end < rd->fill.e->size)
        fill_abandon(&rd->fill); /* the rest will not be read */
    if (rd->v->inner->ops->reader_limit)
        rd->v->inner->ops->reader_limit(rd->inner, end);
}

static void dc_reader_close(void *r)
{
    struct dc_reader *rd = r;
    if (!rd)
        return;
    fill_abandon(&rd->fill);
    ent_unref(rd->hit);
    if (rd->inner && rd->v->inner->ops->reader_close)
        rd->v->inner->ops->reader_close(rd->inner);
    free(rd);
}

struct strata_tier *strata_meta__dc_view(struct meta_dcache *dc, struct strata_tier *inner,
                                         struct meta_dc_view *v)
{
    if (!dc || !inner)
        return inner;
    memset(v, 0, sizeof(*v));
    memcpy(v->tier.name, inner->name, sizeof(v->tier.name));
    /* Reads only; peek where the inner tier has it (the handle asks
     * ops->peek and reads with a copy when it is NULL). */
    v->ops.reader_open = dc_reader_open;
    v->ops.read = dc_read;
    v->ops.peek = inner->ops->peek ? dc_peek : NULL;
    v->ops.reader_limit = dc_reader_limit;
    v->ops.reader_close = dc_reader_close;
    v->tier.ops = &v->ops;
    v->tier.impl = v;
    v->dc = dc;
    v->inner = inner;
    return &v->tier;
}

int strata_meta__dc_reader_fd(const struct strata_tier *t, void *r, bool lend)
{
    if (!t || !r || t->ops->reader_open != dc_reader_open)
        return -1;
    const struct dc_reader *rd = r;
    if (!rd->hit)
        return -1;
    if (lend)
        atomic_store(&rd->hit->lent, true);
    return rd->hit->fd;
}

void strata_meta__dc_drop(struct meta_dcache *dc, const struct strata_tier *inner,
                          const uint8_t id[STRATA_DATA_ID_LEN])
{
    if (!dc)
        return;
    pthread_mutex_lock(&dc->mu);
    struct dc_ent *e = *find_slot(dc, inner, id);
    if (e)
        unlist(dc, e); /* a fill in progress: its filler keeps the bytes, unlisted */
    pthread_mutex_unlock(&dc->mu);
}

void strata_meta__dc_write_begin(struct meta_dcache *dc, const struct strata_tier *inner,
                                 const uint8_t id[STRATA_DATA_ID_LEN], uint64_t size,
                                 struct meta_dc_fill *f)
{
    memset(f, 0, sizeof(*f));
    if (!dc)
        return;
    f->dc = dc;
    f->on_commit = true;
    f->e = fill_start(dc, inner, id, size);
}

void strata_meta__dc_write(struct meta_dc_fill *f, const void *p, size_t n)
{
    if (f->e)
        fill_take(f, f->pos, p, n);
}

void strata_meta__dc_write_end(struct meta_dc_fill *f, bool committed)
{
    if (!f->e)
        return;
    if (committed && f->pos == f->e->size)
        fill_done(f);
    else
        fill_abandon(f);
}

int strata_meta__dc_create(size_t budget_mb, struct meta_dcache **out)
{
    *out = NULL;
    if (!budget_mb)
        return 0;
    struct meta_dcache *dc = calloc(1, sizeof(*dc));
    if (!dc)
        return STRATA_ENOMEM;
    pthread_mutex_init(&dc->mu, NULL);
    dc->st.budget = (uint64_t)budget_mb << 20;
    dc->obj_max = dc->st.budget / 4;
    *out = dc;
    return 0;
}

void strata_meta__dc_destroy(struct meta_dcache *dc)
{
    if (!dc)
        return;
    pthread_mutex_lock(&dc->mu);
    while (dc->ring)
        unlist(dc, dc->ring);
    free_chain(dc->spare);
    dc->spare = NULL;
    pthread_mutex_unlock(&dc->mu);
    pthread_mutex_destroy(&dc->mu);
    free(dc);
}

void strata_meta__dc_stats(struct meta_dcache *dc, struct strata_data_cache_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!dc)
        return;
    pthread_mutex_lock(&dc->mu);
    *st = dc->st;
    st->spare = dc->spare_bytes;
    pthread_mutex_unlock(&dc->mu);
}
