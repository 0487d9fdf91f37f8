/*
 * tier.h - where an object's data lives: a tier is a named store of data
 * objects (the erasure-coded drive sets of one geometry, or later a remote
 * S3 endpoint), reached only through the operations below.
 *
 * Every object's records live on the hot tier (the sets meta opens); the
 * record names the tier holding its data.  A data object is addressed by its
 * data id and a placement hint (place: the CRC32C of "bucket/key"), which a
 * tier of several sets uses to pick one; the same (place, id) always finds
 * the same data.
 *
 * Threads: a tier may be used from any number of threads; a writer or
 * reader handle belongs to one thread at a time.  Nothing here prints.
 */
#ifndef STRATA_TIER_H
#define STRATA_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/erasure.h"
#include "strata/err.h"

#define STRATA_TIER_NAME_MAX 31
#define STRATA_TIERS_MAX 8

/* The Object Lock state a data object must carry where it is stored (a
 * remote tier that keeps the same retention on its copy). */
struct strata_tier_lock {
    int mode;         /* enum strata_lock_mode (meta.h); 0: no retention */
    int64_t until_ms; /* retain-until, Unix ms, with a mode */
    bool legal_hold;
};

struct strata_tier_ops {
    /* A new data object (nothing refers to it before the caller commits a
     * record naming it).  finish makes it durable; destroy after a failed
     * or no finish removes what was written. */
    int (*writer_open)(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN],
                       void **w);
    /* Optional (NULL: the caller digests on its own thread): see
     * strata_ec_writer_observe. */
    int (*writer_observe)(void *w, strata_ec_observe_cb cb, void *ud);
    /* Optional, before the first write: the data's size, when known (see
     * strata_ec_writer_expect). */
    int (*writer_expect)(void *w, uint64_t size);
    int (*write)(void *w, const void *buf, size_t len);
    int (*finish)(void *w);
    void (*writer_destroy)(void *w); /* NULL is a no-op */
    /* Optional, before the first write: the data belongs to a version
     * Object Lock holds now.  NULL: the tier keeps no lock state of its own
     * (a local tier: the records hold it).  0, or STRATA_ELOCKED when the
     * tier cannot keep the data locked (the caller must not move it
     * there), STRATA_EBUSY when it cannot tell now (retry later). */
    int (*writer_lock)(void *w, const struct strata_tier_lock *lock);
    /* Optional: a data object already stored gets the lock state lock
     * (a retention extended or a legal hold changed after the move): 0,
     * STRATA_EBUSY when the tier cannot be reached now (retry later), or
     * another STRATA_E* when it refuses. */
    int (*lock_set)(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN],
                    const struct strata_tier_lock *lock);
    /* Byte ranges of a data object of size bytes; never wrong bytes
     * (STRATA_ECORRUPT, STRATA_EQUORUM, STRATA_ENOTFOUND as erasure.h). */
    int (*reader_open)(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN],
                       uint64_t size, void **r);
    int (*read)(void *r, uint64_t off, void *buf, size_t len);
    /* Optional: read without a copy, see strata_ec_reader_peek. */
    int (*peek)(void *r, uint64_t off, size_t max, const uint8_t **p, size_t *n);
    /* Optional: nothing at or past end will be read (no read-ahead there),
     * see strata_ec_reader_limit. */
    void (*reader_limit)(void *r, uint64_t end);
    void (*reader_close)(void *r); /* NULL is a no-op */
    /* Remove the data object; an absent one is fine. */
    int (*remove)(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN]);
    /* 0 when the data object of size bytes is there and readable (its first
     * and last byte), else STRATA_ENOTFOUND or the read error. */
    int (*stat)(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN], uint64_t size);
    /* Optional: whether the data object written (and finished) holds size
     * bytes whose CRC32C is crc, from what the tier checked as it stored
     * them (a remote's ETag against the MD5 of what was sent, and the
     * CRC32C recorded with it) rather than by reading the bytes back.
     * NULL: the caller reads the object back.  0, STRATA_ECORRUPT, or a
     * read error. */
    int (*verify)(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN], uint64_t size,
                  uint32_t crc);
    /* Optional: restore full redundancy; *healed counts pieces rewritten. */
    int (*heal)(void *impl, uint32_t place, const uint8_t id[STRATA_DATA_ID_LEN], uint64_t size,
                unsigned *healed);
    /* Optional: every data object the records name on this tier was healed
     * in one pass (heal.c); drives that were refilled by it (a local tier's
     * fresh drives) leave that state.  0, or the first STRATA_E* (those
     * drives stay as they were, to be refilled again next pass). */
    int (*healed)(void *impl);
    void (*destroy)(void *impl);
};

struct strata_tier {
    char name[STRATA_TIER_NAME_MAX + 1];
    const struct strata_tier_ops *ops;
    void *impl;
};

/* A tier over local erasure sets (owned by the caller, who keeps them open
 * while the tier exists); data id placement: set place % nsets.
 * STRATA_EINVAL for a bad name (1..31 of [a-z0-9_-]) or no sets. */
int strata_tier_local_create(const char *name, struct strata_set *const *sets, unsigned nsets,
                             struct strata_tier **out);
void strata_tier_destroy(struct strata_tier *t); /* NULL is a no-op */
bool strata_tier_name_ok(const char *name);

#endif /* STRATA_TIER_H */
