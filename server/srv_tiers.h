/*
 * srv_tiers.h - the daemon's storage tiers: parsing --tier / "tiers",
 * --storage-class / "storage-classes", opening each tier's drive sets.
 *
 * A tier spec is NAME:[K+M:]DRIVE[,DRIVE...]; each DRIVE may be a range
 * (/mnt/w{1...6}).  NAME:s3[,lock][,restore]:URL is a remote tier (remote_tier.h),
 * its keys under NAME in the --tier-credentials file.  NAME:rados:POOL is
 * a pool of the daemon's RADOS store (--rados-conf only; meta opens it).  K+M fixes the geometry (the drive count must be a
 * multiple of K+M); without it the sets are picked as for the plain drive
 * list.  "hot" names the tier that also holds the metadata (the plain
 * drive arguments, when no --tier hot is given).
 */
#ifndef STRATA_SERVER_SRV_TIERS_H
#define STRATA_SERVER_SRV_TIERS_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/erasure.h"
#include "strata/ilm.h"
#include "strata/tier.h"

/*
 * Erasure-coded objects up to this size are read through the page cache
 * (strata_set_opts.read_cached_max), bigger ones with O_DIRECT: hot
 * objects of a training set are then served from memory, as a web server
 * serves files, while a stream of huge objects does not evict them.  Every
 * block's CRC is still checked on every read; heal reads the drives.
 */
#define STRATA_SRV_READ_CACHED_MAX (64ull << 20) /* --read-cache-max-mb's default */

struct strata_srv_tier {
    char name[STRATA_TIER_NAME_MAX + 1];
    unsigned k, m;      /* 0: picked from the drive count */
    char **drives;      /* owned */
    size_t ndrives;
    struct strata_set **sets; /* after open */
    unsigned nsets;
    struct strata_tier *tier; /* after open (not for hot: meta makes that one) */
    char *url;          /* a remote (S3) tier's http[s]://HOST:PORT/BUCKET[/PREFIX]; owned */
    bool lock;          /* remote: Object Lock kept on the remote objects */
    bool restore;       /* remote: read only through RestoreObject (an archive tier) */
    char *pool;         /* NAME:rados:POOL: the pool of the RADOS store; owned */
};
#define STRATA_SRV_TIER_POOL "rados:" /* what follows NAME: in a pool tier's spec */
#define STRATA_SRV_POOL_MAX 127

struct strata_remote_creds;

struct strata_srv_tiers {
    struct strata_srv_tier t[STRATA_TIERS_MAX];
    unsigned n;
    struct strata_class_map map;
    const struct strata_remote_creds *creds; /* --tier-credentials, for remote tiers */
};

void strata_srv_tiers_init(struct strata_srv_tiers *ts); /* default class map, no tiers */
/* One tier spec; 0, or -1 with a message in err. */
int strata_srv_tiers_add(struct strata_srv_tiers *ts, const char *spec, char *err, size_t errlen);
/* One CLASS:TIER; 0 or -1 with err. */
int strata_srv_tiers_class(struct strata_srv_tiers *ts, const char *spec, char *err,
                           size_t errlen);
/* The tier named name, or NULL. */
struct strata_srv_tier *strata_srv_tiers_find(struct strata_srv_tiers *ts, const char *name);
/* Sets of K+M drives (or picked), opened with set indexes from 0; a
 * remote tier: its strata_tier made (t->tier) and its bucket checked (a
 * remote that cannot be reached now is only logged); a pool tier: -1
 * (pools are opened by the RADOS store, never on local drives).
 * 0, or -1 with err (what was opened is closed again). */
int strata_srv_tier_open(struct strata_srv_tiers *ts, struct strata_srv_tier *t,
                         uint64_t read_cached_max, const struct strata_logger *log, char *err,
                         size_t errlen);
void strata_srv_tier_close(struct strata_srv_tier *t);
/* Whether a tier spec is NAME:rados:POOL (checked or not). */
bool strata_srv_tier_spec_is_pool(const char *spec);
/* Whether a tier spec is NAME:s3[,FLAGS]:URL (checked or not). */
bool strata_srv_tier_spec_is_remote(const char *spec);
void strata_srv_tiers_fini(struct strata_srv_tiers *ts); /* closes and frees */
/* Mark the tiers with the restore flag as archive tiers of meta m (after
 * the store is open): 0, or -1 logged. */
struct strata_meta;
int strata_srv_tiers_archive(const struct strata_srv_tiers *ts, struct strata_meta *m);
/* Whether the tier named name is a remote (S3) tier: reached by lifecycle
 * transitions only, never by a write naming its class. */
bool strata_srv_tier_is_remote(const struct strata_srv_tiers *ts, const char *name);
/* Every storage class mapped to a configured tier is usable; "the class
 * of a request" check: the tier name, or NULL (InvalidStorageClass). */
const char *strata_srv_class_tier(const struct strata_srv_tiers *ts, const char *cls);

#endif /* STRATA_SERVER_SRV_TIERS_H */
