/*
 * rcache.h - the local backend's cache of each key's latest version as the
 * read quorum last answered it (meta/local/rcache.c), so a GET or HEAD of
 * an unchanged key reads no RocksDB at all.  Private to meta/.
 *
 * Validity: an entry is used only while
 * - no write reached any drive's store for a key of its stripe since the
 *   read that filled it began (every store write, commit, undo, heal or
 *   tombstone drop, bumps the stripe generations of the version keys in
 *   its batch after RocksDB applied it: store.c), and
 * - its set's voting drives (a store open and not fresh) are the ones
 *   that voted then (a drive healed or lost changes what a quorum read
 *   would answer).
 * Only a read every tried drive answered (no read error, no corrupt
 * record) is kept; an inline object's bytes are kept as the read decoded
 * them (every shard's CRC32C checked).
 */
#ifndef STRATA_META_LOCAL_RCACHE_H
#define STRATA_META_LOCAL_RCACHE_H

#include "meta_internal.h"

struct meta_rcache;
struct meta_rc_ent;

/* A cached latest version, held by a lookup until rcache_put. */
struct meta_rc_hit {
    struct meta_rc_ent *e;
    uint8_t sk[SORTKEY_LEN];
    const struct meta_rec *rec; /* pointers into raw */
    const char *raw;
    size_t rawlen;
    const uint8_t *data; /* an inline object's bytes (rec->size), or NULL */
};

/* 0 or STRATA_ENOMEM. */
int strata_meta__rcache_init(struct strata_meta *m);
void strata_meta__rcache_fini(struct strata_meta *m);

/* The stripe generation of bucket/key (hash: strata_meta__key_hash), read
 * before a quorum read whose answer may be kept. */
uint64_t strata_meta__rcache_gen(const struct strata_meta *m, uint32_t hash);

/* The voting drives of set s as a bit mask. */
uint32_t strata_meta__rcache_voters(const struct strata_meta *m, unsigned set);

/* The valid entry of bucket/key of set (hash: strata_meta__key_hash) in
 * h (true), held until rcache_put.  An inline object's entry always holds
 * its bytes. */
bool strata_meta__rcache_get(struct strata_meta *m, unsigned set, uint32_t hash, const char *bucket,
                             const char *key, struct meta_rc_hit *h);
void strata_meta__rcache_put(struct meta_rc_hit *h);
/* Another reference to h's entry (its bytes stay valid), for
 * rcache_release: a GET body that outlives the lookup. */
void *strata_meta__rcache_hold(const struct meta_rc_hit *h);
void strata_meta__rcache_release(void *hold);

/* Could an entry of an inline object of len bytes with a record of
 * rawlen bytes be kept?  (A read copies the bytes for the cache only then.) */
bool strata_meta__rcache_fits(const struct strata_meta *m, const char *bucket, const char *key,
                              size_t rawlen, size_t len);

/* Keep the latest version of bucket/key as a quorum read found it, read
 * from gen with voters voting; data (may be NULL): its inline bytes. */
void strata_meta__rcache_fill(struct strata_meta *m, unsigned set, uint32_t hash, uint64_t gen,
                              uint32_t voters, const char *bucket, const char *key,
                              const uint8_t *sk, const char *raw, size_t rawlen,
                              const uint8_t *data, size_t data_len);

/* A write batch reached a drive's store (applied or refused): every
 * version key in it ends the entries of its stripe. */
void strata_meta__rcache_wrote(struct strata_meta *m, rocksdb_writebatch_t *wb);

/* Entries and bytes held, lookups answered and missed (tests). */
void strata_meta__rcache_stats(struct strata_meta *m, uint64_t *entries, uint64_t *bytes,
                               uint64_t *hits, uint64_t *misses);

#endif /* STRATA_META_LOCAL_RCACHE_H */
