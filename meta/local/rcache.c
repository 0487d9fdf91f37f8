/*
 * rcache.c - the local backend's latest-version cache (rcache.h): a GET
 * or HEAD of a key nobody wrote since its last quorum read is answered
 * from memory, without a RocksDB read (the quorum read was most of a small
 * GET's cost).
 *
 * A set-associative table of entries (a key lives in one of the RC_WAYS
 * slots of its group; a new key takes a free slot or the group's least
 * recently used one), bounded in bytes; striped generations that every store
 * write bumps for the keys in its batch (after RocksDB applied it, so a
 * read that began before the write cannot keep its answer past it); and
 * the set's voting drives at the read.  The daemon is the only writer of
 * its drives' stores, so nothing else can change what a quorum read
 * answers.
 * Threads: any; slots under striped mutexes, generations atomic, entries
 * reference-counted (a hit is used outside the lock).
 */
#include "rcache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "strata/erasure.h"

/* A dataloader walks tens of thousands of keys round-robin: a direct-
 * mapped table of 8,192 slots kept under a third of 10,000 keys (two keys
 * of one slot evict each other on every pass).  Groups of ways keep every
 * key of such a working set while the byte budget allows. */
#define RC_WAYS      8u                   /* slots per group */
#define RC_GROUPS    8192u                /* groups (power of two) */
#define RC_SLOTS     (RC_WAYS * RC_GROUPS) /* entries at most */
#define RC_LOCKS     128u                 /* mutex stripes over the groups */
#define RC_GENS      16384u               /* generation stripes (power of two) */
/* An entry holds a record and an inline object's decoded bytes: up to
 * this much besides the object (the record's own shard and headers). */
#define RC_REC_MAX   (64u << 10)

struct meta_rc_ent {
    atomic_uint refs;
    uint32_t hash;
    unsigned set;
    uint64_t gen, all;
    uint32_t voters;
    uint32_t used; /* the group's clock at the last hit or fill (lock held) */
    bool ref;      /* hit or filled since the budget's hand last passed (lock held) */
    size_t bytes;
    uint8_t sk[SORTKEY_LEN];
    struct meta_rec rec; /* decoded from raw, pointers into it */
    const char *bucket, *key;
    char *raw;
    size_t rawlen;
    uint8_t *data; /* NULL: not an inline object with bytes */
    char buf[];    /* bucket, key, raw, data */
};

struct meta_rcache {
    pthread_mutex_t mu[RC_LOCKS];
    struct meta_rc_ent *slot[RC_SLOTS]; /* group g: slots g * RC_WAYS .. + RC_WAYS - 1 */
    uint32_t clock[RC_GROUPS];          /* per group, under its lock */
    _Atomic uint64_t gen[RC_GENS];
    _Atomic uint64_t all; /* bumped for a write whose keys could not be read */
    _Atomic uint64_t bytes, entries, hits, misses;
    _Atomic uint32_t hand; /* the next group a fill over the budget sweeps */
    uint64_t budget;       /* bytes of every entry (--object-cache-mb) */
    size_t entry_max;      /* bytes of one entry */
};

int strata_meta__rcache_init(struct strata_meta *m)
{
    struct meta_rcache *c = calloc(1, sizeof(*c));
    if (!c)
        return STRATA_ENOMEM;
    for (unsigned i = 0; i < RC_LOCKS; i++)
        pthread_mutex_init(&c->mu[i], NULL);
    c->budget = (uint64_t)(m->object_cache_mb ? m->object_cache_mb : 64) << 20;
    /* Whole inline objects (a dataloader's samples are up to --inline-max),
     * but no entry over a sixteenth of the budget. */
    c->entry_max = RC_REC_MAX + 2 * m->inline_max;
    if (c->entry_max > c->budget / 16)
        c->entry_max = (size_t)(c->budget / 16);
    m->rcache = c;
    return 0;
}

static void ent_unref(struct meta_rc_ent *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) {
        strata_meta__rec_fini(&e->rec);
        free(e);
    }
}

void strata_meta__rcache_fini(struct strata_meta *m)
{
    struct meta_rcache *c = m->rcache;
    if (!c)
        return;
    for (unsigned i = 0; i < RC_SLOTS; i++)
        ent_unref(c->slot[i]);
    for (unsigned i = 0; i < RC_LOCKS; i++)
        pthread_mutex_destroy(&c->mu[i]);
    free(c);
    m->rcache = NULL;
}

uint64_t strata_meta__rcache_gen(const struct strata_meta *m, uint32_t hash)
{
    return atomic_load(&m->rcache->gen[hash & (RC_GENS - 1)]);
}

uint32_t strata_meta__rcache_voters(const struct strata_meta *m, unsigned set)
{
    uint32_t v = 0;
    for (unsigned d = 0; d < m->sets[set].n; d++)
        if (strata_meta__drive_readable(m, set, d))
            v |= 1u << d;
    return v;
}

/* Take e out of its slot (lock held); the slot's reference goes to *drop. */
static void slot_clear(struct meta_rcache *c, unsigned i, struct meta_rc_ent **drop)
{
    struct meta_rc_ent *e = c->slot[i];
    c->slot[i] = NULL;
    if (e) {
        atomic_fetch_sub(&c->bytes, e->bytes);
        atomic_fetch_sub(&c->entries, 1);
    }
    *drop = e;
}

/* The slot of bucket/key in group g (lock held), or -1. */
static int way_of(const struct meta_rcache *c, unsigned g, unsigned set, uint32_t hash,
                  const char *bucket, const char *key)
{
    for (unsigned i = g * RC_WAYS; i < (g + 1) * RC_WAYS; i++) {
        const struct meta_rc_ent *e = c->slot[i];
        if (e && e->hash == hash && e->set == set && strcmp(e->key, key) == 0 &&
            strcmp(e->bucket, bucket) == 0)
            return (int)i;
    }
    return -1;
}

/* Where a fill of bucket/key goes in group g (lock held): its own slot,
 * else a free one, else the least recently used. */
static unsigned way_for_fill(const struct meta_rcache *c, unsigned g, unsigned set, uint32_t hash,
                             const char *bucket, const char *key)
{
    int own = way_of(c, g, set, hash, bucket, key);
    if (own >= 0)
        return (unsigned)own;
    unsigned best = g * RC_WAYS;
    for (unsigned i = g * RC_WAYS; i < (g + 1) * RC_WAYS; i++) {
        if (!c->slot[i])
            return i;
        /* Clock distance, so that a wrapped counter still orders. */
        if (c->clock[g] - c->slot[i]->used > c->clock[g] - c->slot[best]->used)
            best = i;
    }
    return best;
}

bool strata_meta__rcache_get(struct strata_meta *m, unsigned set, uint32_t hash, const char *bucket,
                             const char *key, struct meta_rc_hit *h)
{
    struct meta_rcache *c = m->rcache;
    if (!c)
        return false;
    uint32_t voters = strata_meta__rcache_voters(m, set);
    unsigned g = hash & (RC_GROUPS - 1);
    struct meta_rc_ent *drop = NULL, *e = NULL;
    pthread_mutex_lock(&c->mu[g % RC_LOCKS]);
    int i = way_of(c, g, set, hash, bucket, key);
    if (i >= 0) {
        e = c->slot[i];
        if (e->gen != strata_meta__rcache_gen(m, hash) || e->all != atomic_load(&c->all) ||
            e->voters != voters) {
            slot_clear(c, (unsigned)i, &drop); /* written since, or another quorum */
            e = NULL;
        } else {
            e->used = ++c->clock[g];
            e->ref = true;
            atomic_fetch_add(&e->refs, 1);
        }
    }
    pthread_mutex_unlock(&c->mu[g % RC_LOCKS]);
    ent_unref(drop);
    if (!e) {
        atomic_fetch_add_explicit(&c->misses, 1, memory_order_relaxed);
        return false;
    }
    atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
    h->e = e;
    memcpy(h->sk, e->sk, SORTKEY_LEN);
    h->rec = &e->rec;
    h->raw = e->raw;
    h->rawlen = e->rawlen;
    h->data = e->data;
    return true;
}

void strata_meta__rcache_put(struct meta_rc_hit *h)
{
    ent_unref(h->e);
    h->e = NULL;
}

void *strata_meta__rcache_hold(const struct meta_rc_hit *h)
{
    atomic_fetch_add(&h->e->refs, 1);
    return h->e;
}

void strata_meta__rcache_release(void *hold)
{
    ent_unref(hold);
}

/* The bytes of an entry (struct, names, record, inline bytes). */
static size_t ent_bytes(const char *bucket, const char *key, size_t rawlen, size_t data_len)
{
    return sizeof(struct meta_rc_ent) + strlen(bucket) + 1 + strlen(key) + 1 + rawlen + data_len;
}

bool strata_meta__rcache_fits(const struct strata_meta *m, const char *bucket, const char *key,
                              size_t rawlen, size_t len)
{
    return m->rcache && ent_bytes(bucket, key, rawlen, len) <= m->rcache->entry_max;
}

/* Until bytes more fit in the budget, a clock hand goes round the slots
 * (no lock held but each group's in turn): an entry used since the hand
 * last passed gets another round, others are cleared.  So a working set
 * over the budget keeps turning over (the entries that filled it first do
 * not stay for good), and recently used entries stay longest.  At most two
 * rounds: every entry is cleared by then. */
static void make_room(struct meta_rcache *c, size_t bytes)
{
    for (unsigned n = 0; n < 2 * RC_GROUPS && atomic_load(&c->bytes) + bytes > c->budget; n++) {
        unsigned g = atomic_fetch_add(&c->hand, 1) & (RC_GROUPS - 1);
        struct meta_rc_ent *drop[RC_WAYS] = {0};
        pthread_mutex_lock(&c->mu[g % RC_LOCKS]);
        for (unsigned i = g * RC_WAYS; i < (g + 1) * RC_WAYS; i++) {
            struct meta_rc_ent *e = c->slot[i];
            if (e && e->ref)
                e->ref = false;
            else if (e)
                slot_clear(c, i, &drop[i - g * RC_WAYS]);
        }
        pthread_mutex_unlock(&c->mu[g % RC_LOCKS]);
        for (unsigned w = 0; w < RC_WAYS; w++)
            ent_unref(drop[w]);
    }
}

void strata_meta__rcache_fill(struct strata_meta *m, unsigned set, uint32_t hash, uint64_t gen,
                              uint32_t voters, const char *bucket, const char *key,
                              const uint8_t *sk, const char *raw, size_t rawlen,
                              const uint8_t *data, size_t data_len)
{
    struct meta_rcache *c = m->rcache;
    if (!c)
        return;
    size_t bl = strlen(bucket) + 1, kl = strlen(key) + 1;
    size_t bytes = ent_bytes(bucket, key, rawlen, data_len);
    if (bytes > c->entry_max || strata_meta__rcache_gen(m, hash) != gen)
        return;
    make_room(c, bytes);
    uint64_t all = atomic_load(&c->all);
    struct meta_rc_ent *e = malloc(bytes);
    if (!e)
        return;
    memset(e, 0, sizeof(*e));
    atomic_init(&e->refs, 1);
    e->hash = hash;
    e->set = set;
    e->gen = gen;
    e->all = all;
    e->voters = voters;
    e->bytes = bytes;
    memcpy(e->sk, sk, SORTKEY_LEN);
    char *p = e->buf;
    memcpy(p, bucket, bl);
    e->bucket = p;
    p += bl;
    memcpy(p, key, kl);
    e->key = p;
    p += kl;
    memcpy(p, raw, rawlen);
    e->raw = p;
    e->rawlen = rawlen;
    p += rawlen;
    if (data) {
        memcpy(p, data, data_len);
        e->data = (uint8_t *)p;
    }
    if (strata_meta__rec_decode(e->raw, e->rawlen, false, &e->rec) != 0) {
        free(e);
        return;
    }
    unsigned g = hash & (RC_GROUPS - 1);
    struct meta_rc_ent *drop = NULL;
    pthread_mutex_lock(&c->mu[g % RC_LOCKS]);
    unsigned i = way_for_fill(c, g, set, hash, bucket, key);
    slot_clear(c, i, &drop);
    /* Checked again under the lock: a write bumps after it applied, so an
     * answer read before it is never stored after its bump. */
    if (strata_meta__rcache_gen(m, hash) == gen && atomic_load(&c->all) == all &&
        atomic_load(&c->bytes) + bytes <= c->budget) {
        e->used = ++c->clock[g];
        e->ref = true;
        c->slot[i] = e;
        atomic_fetch_add(&c->bytes, bytes);
        atomic_fetch_add(&c->entries, 1);
        e = NULL;
    }
    pthread_mutex_unlock(&c->mu[g % RC_LOCKS]);
    ent_unref(drop);
    ent_unref(e);
}

/* A version key of the batch: bump its key's stripe. */
static void wrote_key(void *ud, const char *k, size_t kl)
{
    struct meta_rcache *c = ud;
    if (kl < 1 || k[0] != 'O')
        return;
    /* 'O' bucket 0x00 key 0x00 sortkey[16] */
    const char *b = k + 1, *nul = kl > 1 ? memchr(b, 0, kl - 1) : NULL;
    if (!nul || kl < (size_t)(nul - k) + 2 + SORTKEY_LEN || k[kl - SORTKEY_LEN - 1] != 0) {
        atomic_fetch_add(&c->all, 1);
        return;
    }
    const char *key = nul + 1;
    size_t keylen = (size_t)(k + kl - SORTKEY_LEN - 1 - key);
    uint32_t h = strata_crc32c(0, b, (size_t)(nul - b));
    h = strata_crc32c(h, "/", 1);
    h = strata_crc32c(h, key, keylen);
    atomic_fetch_add(&c->gen[h & (RC_GENS - 1)], 1);
}

static void wrote_put(void *ud, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    wrote_key(ud, k, kl);
}

void strata_meta__rcache_wrote(struct strata_meta *m, rocksdb_writebatch_t *wb)
{
    if (m->rcache && wb)
        rocksdb_writebatch_iterate(wb, m->rcache, wrote_put, wrote_key);
}

void strata_meta__rcache_stats(struct strata_meta *m, uint64_t *entries, uint64_t *bytes,
                               uint64_t *hits, uint64_t *misses)
{
    struct meta_rcache *c = m->rcache;
    *entries = c ? atomic_load(&c->entries) : 0;
    *bytes = c ? atomic_load(&c->bytes) : 0;
    *hits = c ? atomic_load(&c->hits) : 0;
    *misses = c ? atomic_load(&c->misses) : 0;
}
