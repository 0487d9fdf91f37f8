/*
 * dcache.h - the data cache (meta/dcache.c): whole data objects (an
 * erasure-coded version's bytes, or one part's) kept in memory after a GET
 * read them from the drives (or a PUT stored them, with
 * strata_meta_opts.data_cache_on_write), so the next GETs of that version read no
 * drive, check no block CRC and send from memory (the cache's memfd
 * mapping, or sendfile of the memfd).  Private to meta/.
 *
 * Validity: keyed by the data object's identity (tier and data id), never
 * by bucket/key.  A data id names one immutable object: a new version, a
 * part, a transition's or a restore's copy each get a new id, and a heal
 * rewrites the same bytes; so an entry can never answer bytes another
 * version holds, whatever was overwritten or deleted since.  The bytes
 * are the stored ones (the ciphertext of an encrypted version: plaintext
 * is never kept) and went through the tier reader's checks as they were
 * read.  Removal of the data (a delete, a reclaim) drops the entry.
 *
 * Bound: entries (ready or being filled) hold at most the budget
 * (strata_meta_opts.data_cache_mb), one object at most a quarter of it.
 * An entry evicted while a GET still sends from it is freed by that GET's
 * close (the memfd's last reference), so for that moment the memory in
 * use may exceed the budget by what in-flight GETs hold.  Entries gone
 * keep their memfds as spares for the next fills (within the budget
 * beside the entries), unless the memfd was lent out (reader_fd's lend).
 */
#ifndef STRATA_META_DCACHE_H
#define STRATA_META_DCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/tier.h"

struct meta_dcache;
struct dc_ent;

/* A GET handle's view of a tier through the cache: lives in the handle. */
struct meta_dc_view {
    struct strata_tier tier; /* ops: &ops */
    struct strata_tier_ops ops; /* the reader ops only */
    struct meta_dcache *dc;
    struct strata_tier *inner;
};

/* An entry being filled, from offset 0 in order. */
struct meta_dc_fill {
    struct meta_dcache *dc;
    struct dc_ent *e; /* a reference; NULL: no fill (given up, or done) */
    uint64_t pos;     /* bytes in from 0 */
    bool on_commit;   /* a writer's: ready at strata_meta__dc_write_end */
};

/* budget_mb 0: no cache (*out NULL).  0 or STRATA_ENOMEM. */
int strata_meta__dc_create(size_t budget_mb, struct meta_dcache **out);
void strata_meta__dc_destroy(struct meta_dcache *dc); /* NULL is a no-op */

/* The tier a GET handle reads inner through: inner itself without a cache,
 * else v's tier (v filled here).  Only its reader ops may be used. */
struct strata_tier *strata_meta__dc_view(struct meta_dcache *dc, struct strata_tier *inner,
                                         struct meta_dc_view *v);

/* A reader of a view answered from memory: the memfd holding the whole
 * data object (owned by the cache), else -1.  With lend the caller dups it
 * to keep it past the reader: the entry's memfd is then never recycled
 * for another object's bytes. */
int strata_meta__dc_reader_fd(const struct strata_tier *t, void *r, bool lend);

/* The data object was removed: its entry goes. */
void strata_meta__dc_drop(struct meta_dcache *dc, const struct strata_tier *inner,
                          const uint8_t id[STRATA_DATA_ID_LEN]);

/* A data object being written (size bytes as stored, id new: no record
 * names it yet): its bytes as the writer stores them, in order, go into a
 * new entry (f->e NULL when it does not fit or dc is NULL).  The entry is
 * listed (so it counts against the budget and a drop of the id ends it)
 * but not read until strata_meta__dc_write_end(f, true) after the commit
 * that names the data, when every byte is in; with false (a failed
 * write, finish or commit) it goes. */
void strata_meta__dc_write_begin(struct meta_dcache *dc, const struct strata_tier *inner,
                                 const uint8_t id[STRATA_DATA_ID_LEN], uint64_t size,
                                 struct meta_dc_fill *f);
void strata_meta__dc_write(struct meta_dc_fill *f, const void *p, size_t n);
void strata_meta__dc_write_end(struct meta_dc_fill *f, bool committed);

struct strata_data_cache_stats;
void strata_meta__dc_stats(struct meta_dcache *dc, struct strata_data_cache_stats *st);

#endif
