/*
 * remote_tier.h - a tier whose data objects live in a bucket of another S3
 * endpoint (--tier NAME:s3:URL), behind the strata_tier_ops of tier.h.
 *
 * Layout on the remote: one S3 object per Strata data object, at key
 * [PREFIX/]<data id, 32 lower-case hex digits>, its bytes exactly the data
 * object's (ciphertext for SSE versions, one object per part of a
 * multipart version), with user metadata x-amz-meta-strata-crc32c (the
 * CRC32C of the bytes, 8 hex digits).  Which bucket, key and version a
 * data id belongs to is only in Strata's records: the remote bucket alone
 * does not rebuild a lost Strata.
 *
 * Writes spool (in memory up to 8 MiB, then in an unlinked temporary file
 * under spool_dir) because a PUT needs its length and Content-MD5 up
 * front; finish sends one PutObject and checks the answer's ETag against
 * the MD5 of what was sent.  verify is a HEAD (size and recorded CRC32C),
 * not a read-back.  Reads are ranged GETs with a read-ahead window, after
 * one HEAD at open (so a copy gone from the remote is an error before any
 * byte is sent).  Error mapping: remote unreachable, 5xx, SlowDown ->
 * STRATA_EBUSY on writes (transitions retry with backoff) and
 * STRATA_EQUORUM on reads (503); a copy gone -> STRATA_EIO (500) and the
 * "missing" counter; anything else -> STRATA_EIO.
 *
 * With lock, versions under Object Lock carry their retention and legal
 * hold to the remote object (x-amz-object-lock-* on the PutObject; the
 * remote bucket must have Object Lock enabled, checked at start and before
 * the first locked copy).  Without lock, a locked version is refused
 * (writer_lock: STRATA_ELOCKED), counted in lock_refused.
 *
 * Threads: any (tier.h); health counters are atomics.
 */
#ifndef STRATA_SERVER_REMOTE_REMOTE_TIER_H
#define STRATA_SERVER_REMOTE_REMOTE_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/tier.h"

struct strata_remote_tier_opts {
    const char *name;       /* the tier name */
    const char *url;        /* http[s]://HOST:PORT/BUCKET[/PREFIX] */
    bool lock;              /* the remote keeps Object Lock state */
    const char *access_key, *secret_key, *region;
    const char *spool_dir;  /* NULL: $TMPDIR, else /var/tmp */
};

/* 0, or -1 with err (bad URL, out of memory). No request is made. */
int strata_remote_tier_create(const struct strata_remote_tier_opts *o, struct strata_tier **out,
                              char *err, size_t errlen);
/* Whether t is a remote tier (made by strata_remote_tier_create). */
bool strata_remote_tier_is(const struct strata_tier *t);

/* The start-up check: the bucket answers to these keys and, with lock,
 * has Object Lock enabled.  0 when so; 1 when the remote cannot be reached
 * now (err says why; the tier works once it is back); -1 when it answers
 * no (wrong keys, no bucket, no Object Lock): err says what to fix. */
int strata_remote_tier_check(struct strata_tier *t, char *err, size_t errlen);

struct strata_remote_health {
    char url[600];
    bool lock;
    uint64_t puts, put_bytes;      /* data objects stored */
    uint64_t gets, get_bytes;      /* ranged GETs and their bytes */
    uint64_t errors;               /* failed requests (any) */
    uint64_t missing;              /* reads of a data object gone from the remote */
    uint64_t lock_refused;         /* locked versions refused (tier without lock) */
    int64_t last_ok_ms;            /* Unix ms of the last answered request, 0: none */
    int64_t last_error_ms;         /* 0: none */
    char last_error[300];          /* "PUT key: 503 SlowDown: message" */
};
void strata_remote_tier_health(struct strata_tier *t, struct strata_remote_health *out);

struct strata_sbuf;
/* The remote tiers' counters and health as Prometheus text (every remote
 * tier that exists now): strata_remote_tier_*{tier="NAME"}. */
void strata_remote_tier_metrics_render(struct strata_sbuf *b);

#endif /* STRATA_SERVER_REMOTE_REMOTE_TIER_H */
