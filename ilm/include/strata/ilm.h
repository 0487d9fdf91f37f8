/*
 * ilm.h - lifecycle (ILM): the bucket lifecycle configuration model (AWS's
 * LifecycleConfiguration XML, parsed and validated), rule matching and due
 * dates, and the background scanner that applies the rules through the
 * object layer of meta.h.
 *
 * Lifecycle days: every "Days" of a rule counts in lifecycle days of
 * day_ms milliseconds (86400000 in production; tests shorten it).  As AWS
 * does, a due date is the base time plus the days, rounded up to the next
 * lifecycle-day boundary since the Unix epoch, which for 86400 s days is
 * the next midnight UTC.
 *
 * Parsing and matching are pure functions, any thread.  The scanner runs in
 * its own thread; its control functions may be called from any one thread.
 * Nothing here prints: the scanner logs through the injected logger.
 */
#ifndef STRATA_ILM_H
#define STRATA_ILM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/erasure.h"
#include "strata/err.h"
#include "strata/log.h"
#include "strata/meta.h"

#define STRATA_LC_RULES_MAX 1000
#define STRATA_LC_ID_MAX 255
#define STRATA_LC_NEWER_NONCURRENT_MAX 100
#define STRATA_LC_DAY_MS_DEFAULT 86400000LL

/* ---- configuration model ------------------------------------------------ */

struct strata_lc_tag {
    char *key;
    char *value;
};

/* A rule's filter: every predicate set must hold (an empty filter matches
 * everything).  Sizes are strict bounds, as AWS's ObjectSizeGreaterThan /
 * ObjectSizeLessThan. */
struct strata_lc_filter {
    char *prefix; /* NULL: any key */
    struct strata_lc_tag *tags;
    size_t ntags;
    bool has_size_gt;
    uint64_t size_gt;
    bool has_size_lt;
    uint64_t size_lt;
    bool and_form; /* given inside <And> (kept for the round trip) */
};

/* One Transition (days/date of a current version) or NoncurrentVersionTransition
 * (days after becoming noncurrent, newer = NewerNoncurrentVersions, 0 none). */
#define STRATA_LC_TRANSITIONS_MAX 8
struct strata_lc_transition {
    unsigned days;
    bool has_date;   /* Date given instead of Days */
    int64_t date_ms; /* that Date (<= 0 before 1970-01-02: stored as given) */
    unsigned newer;
    char storage_class[32];
};

struct strata_lc_rule {
    char id[STRATA_LC_ID_MAX + 1];
    bool enabled;
    bool legacy_prefix; /* the filter came from a top-level <Prefix> */
    struct strata_lc_filter filter;
    /* Expiration of current versions: days > 0 or a date (not both). */
    unsigned exp_days;
    bool exp_has_date;
    int64_t exp_date_ms; /* with exp_has_date; <= 0 before 1970-01-02 */
    bool exp_delete_marker; /* ExpiredObjectDeleteMarker true */
    /* NoncurrentVersionExpiration: nc_days > 0 when present. */
    unsigned nc_days;
    unsigned nc_newer; /* NewerNoncurrentVersions, 0 = none */
    /* AbortIncompleteMultipartUpload: abort_days > 0 when present. */
    unsigned abort_days;
    /* Transition / NoncurrentVersionTransition were given (validated). */
    bool has_transition;
    bool has_nc_transition;
    /* Their values, in document order. */
    struct strata_lc_transition tr[STRATA_LC_TRANSITIONS_MAX];
    size_t ntr;
    struct strata_lc_transition nctr[STRATA_LC_TRANSITIONS_MAX];
    size_t nnctr;
};

struct strata_lc_config {
    struct strata_lc_rule *rules;
    size_t nrules;
};

/* Why a document was refused; the server maps it to the S3 error. */
enum strata_lc_fault {
    STRATA_LC_OK = 0,
    STRATA_LC_MALFORMED,      /* MalformedXML */
    STRATA_LC_INVALID_ARG,    /* InvalidArgument */
    STRATA_LC_INVALID_REQ,    /* InvalidRequest */
    STRATA_LC_INVALID_CLASS,  /* InvalidStorageClass */
    STRATA_LC_NOT_IMPLEMENTED /* valid, but needs tiers (Transition) */
};

struct strata_lc_error {
    int fault;      /* enum strata_lc_fault */
    char msg[160];  /* AWS-style detail for the error body */
};

/*
 * Parse and validate a LifecycleConfiguration document (libxml2, no
 * network, no entities).  On success *out holds the rules (release with
 * strata_lc_config_fini) and 0 is returned.  On failure returns
 * STRATA_EINVAL with err filled (err may be NULL), or STRATA_ENOMEM;
 * *out is left empty.  Transition classes are AWS's (GLACIER, STANDARD_IA,
 * ONEZONE_IA, INTELLIGENT_TIERING, DEEP_ARCHIVE, GLACIER_IR) and Strata's
 * WARM and COMPLIANCE; whether a tier serves the class is the caller's
 * check (strata_class_map_tier).
 */
int strata_lc_config_parse(const char *xml, size_t len, struct strata_lc_config *out,
                           struct strata_lc_error *err);
void strata_lc_config_fini(struct strata_lc_config *c); /* safe on a zeroed struct */

/*
 * AWS's minimum ages for transitions to STANDARD_IA and ONEZONE_IA (30
 * days, Transition and NoncurrentVersionTransition).  Separate from the
 * parse because it only makes sense with real days: the server applies it
 * when a lifecycle day is 86400 s.  0, or STRATA_EINVAL with err
 * (InvalidArgument).
 */
int strata_lc_check_min_days(const struct strata_lc_config *c, struct strata_lc_error *err);

/* ---- storage classes and tiers ------------------------------------------- */

/* A class's place in AWS's transition waterfall (STANDARD 0, STANDARD_IA
 * and WARM 1, INTELLIGENT_TIERING 2, ONEZONE_IA 3, GLACIER_IR 4, GLACIER and
 * COMPLIANCE 5, DEEP_ARCHIVE 6; other classes 0).  Lifecycle only moves a
 * version to a class of a higher rank. */
int strata_lc_class_rank(const char *cls);

/*
 * Which tier serves which storage class.  Defaults: STANDARD -> hot;
 * STANDARD_IA, WARM -> warm; GLACIER, DEEP_ARCHIVE, COMPLIANCE ->
 * compliance.  Other classes have no tier until mapped.
 */
#define STRATA_CLASS_MAP_MAX 24
struct strata_class_map {
    size_t n;
    struct {
        char cls[32];
        char tier[32];
    } e[STRATA_CLASS_MAP_MAX];
};
void strata_class_map_default(struct strata_class_map *m);
/* "CLASS:TIER" (CLASS of [A-Z0-9_], TIER a tier name): sets or replaces
 * the class's tier.  STRATA_EINVAL for bad syntax, ENOSPC when full. */
int strata_class_map_set(struct strata_class_map *m, const char *spec);
/* The tier serving cls, or NULL (no such class mapped). */
const char *strata_class_map_tier(const struct strata_class_map *m, const char *cls);
/* The first class mapped to tier (the defaults' order: STANDARD, then
 * STANDARD_IA, then GLACIER for the three tiers), or NULL. */
const char *strata_class_map_class(const struct strata_class_map *m, const char *tier);

/* ---- matching ------------------------------------------------------------ */

/* What a rule looks at.  tags are decoded; ntags 0 for none. */
struct strata_lc_obj {
    const char *key;
    uint64_t size;
    const struct strata_kv *tags;
    size_t ntags;
};

bool strata_lc_filter_match(const struct strata_lc_filter *f, const struct strata_lc_obj *o);

/* base_ms + days lifecycle days, rounded up to a lifecycle-day boundary. */
int64_t strata_lc_due_ms(int64_t base_ms, unsigned days, int64_t day_ms);

/*
 * The expiration that applies to a current version created at mtime_ms:
 * among enabled rules whose filter matches and that have Expiration Days
 * or Date, the earliest due date wins (AWS: when rules overlap, the
 * shorter expiration applies).  Returns the rule, or NULL when none
 * applies; *due_ms receives its due date.  This is x-amz-expiration.
 */
const struct strata_lc_rule *strata_lc_expiry(const struct strata_lc_config *c,
                                              const struct strata_lc_obj *o, int64_t mtime_ms,
                                              int64_t day_ms, int64_t *due_ms);

/*
 * A noncurrent version that became noncurrent at since_ms and has
 * newer_nc noncurrent versions newer than itself: the enabled matching
 * rule with NoncurrentVersionExpiration that makes it due earliest, among
 * those whose NewerNoncurrentVersions it exceeds.  NULL when none.
 */
const struct strata_lc_rule *strata_lc_noncurrent_expiry(const struct strata_lc_config *c,
                                                         const struct strata_lc_obj *o,
                                                         int64_t since_ms, unsigned newer_nc,
                                                         int64_t day_ms, int64_t *due_ms);

/* The enabled rule that removes an expired object delete marker (a marker
 * that is its key's only version) with this key and mtime, and when
 * (*due_ms, may be NULL): an ExpiredObjectDeleteMarker rule at once (its
 * due time is the marker's mtime); an Expiration Days rule once the marker
 * is that old (AWS: with Days, S3 cleans up expired object delete markers
 * old enough to satisfy the age criteria); the earliest wins.  Prefix
 * filters only (a marker has no tags or size).  NULL: no rule ever does. */
const struct strata_lc_rule *strata_lc_marker_rule(const struct strata_lc_config *c,
                                                   const char *key, int64_t mtime_ms,
                                                   int64_t day_ms, int64_t *due_ms);

/*
 * The transition due for a current version created at mtime_ms: among
 * enabled matching rules, every Transition whose due date (Days or Date)
 * has passed at now_ms, the one due last (the coldest stage reached);
 * NULL when none.  Noncurrent: the same over NoncurrentVersionTransition
 * with since_ms and newer_nc as strata_lc_noncurrent_expiry.
 */
const struct strata_lc_transition *strata_lc_transition_due(const struct strata_lc_config *c,
                                                            const struct strata_lc_obj *o,
                                                            int64_t mtime_ms, int64_t now_ms,
                                                            int64_t day_ms);
const struct strata_lc_transition *
strata_lc_nc_transition_due(const struct strata_lc_config *c, const struct strata_lc_obj *o,
                            int64_t since_ms, unsigned newer_nc, int64_t now_ms, int64_t day_ms);

/* The enabled rule with AbortIncompleteMultipartUpload whose prefix matches
 * key and makes an upload initiated at init_ms due earliest, or NULL. */
const struct strata_lc_rule *strata_lc_abort_rule(const struct strata_lc_config *c,
                                                  const char *key, int64_t init_ms,
                                                  int64_t day_ms, int64_t *due_ms);

/* ---- the scanner ---------------------------------------------------------- */

/*
 * Decode a stored tag set (the server's encoding, opaque to meta and ilm)
 * into at most max name/value pairs whose strings live in buf.  Returns the
 * number of pairs, or -1 when the set cannot be decoded.
 */
typedef int (*strata_ilm_tags_decode_cb)(const uint8_t *raw, size_t len, struct strata_kv *out,
                                         size_t max, char *buf, size_t buf_len);

/* What a lifecycle action did, for strata_ilm_event_cb. */
enum strata_ilm_event {
    STRATA_ILM_EV_EXPIRE_DELETE = 1, /* a version or an expired delete marker removed */
    STRATA_ILM_EV_EXPIRE_MARKER,     /* a current version expired behind a new delete marker */
    STRATA_ILM_EV_TRANSITION,        /* a version moved to another tier */
};
/*
 * After a lifecycle action committed: the bucket, key and version id
 * concerned (the marker's for EXPIRE_MARKER; "" when none) and the
 * change's stamp (strata_obj_info.seq_ns; 0: none known).  Called from the
 * scanner, due-drain and mover threads, synchronously: it must not block
 * for long (the daemon queues notification events).
 */
typedef void (*strata_ilm_event_cb)(void *ud, enum strata_ilm_event ev, const char *bucket,
                                    const char *key, const char *version_id, int64_t seq_ns);

struct strata_ilm_opts {
    struct strata_meta *meta;
    struct strata_set *const *sets; /* for tmp/ reclaim; may be NULL with nsets 0 */
    unsigned nsets;
    int64_t day_ms;           /* one lifecycle day; 0 = STRATA_LC_DAY_MS_DEFAULT */
    unsigned interval_s;      /* a pass starts this long after the previous one began */
    unsigned rate_objs;       /* versions and uploads examined per second; 0 = unbounded */
    unsigned heal_interval_s; /* heal (strata_meta_heal_all) at most this often; 0 = never */
    unsigned tmp_age_s;       /* tmp/ leftovers older than this are removed; 0 = never */
    unsigned orphan_age_s;    /* data/ shards no record references, older than this, are
                                 removed by the full pass; 0 = never */
    unsigned drain_ms;        /* the due index is drained this often; 0 = 1000 */
    strata_ilm_tags_decode_cb tags_decode_cb;
    struct strata_logger log;
    /* Transitions: which tier serves which class (NULL: no transitions are
     * carried out), and the copy rate in MiB/s (0: unbounded). */
    const struct strata_class_map *classes;
    unsigned move_mbps;
    /* Budgets that keep background work off the foreground's p99: keys
     * the due-index drains and the mover's retries evaluate per second
     * (all their workers together), keys healed per second from meta's
     * immediate heal queue and by the full heal together (0: unbounded,
     * each). */
    unsigned due_rate;
    unsigned heal_rate;
    strata_ilm_event_cb event_cb; /* optional */
    void *event_ud;
};

/* Counters; per run (the last finished pass) and totals since start. */
struct strata_ilm_stats {
    uint64_t passes;
    uint64_t buckets;          /* with a lifecycle configuration */
    uint64_t scanned;          /* versions, markers and uploads examined */
    uint64_t expired;          /* current versions expired (deleted or marked) */
    uint64_t noncurrent_expired;
    uint64_t markers_removed;  /* expired object delete markers */
    uint64_t uploads_aborted;
    uint64_t skipped_locked;   /* refused by Object Lock: left alone */
    uint64_t errors;
    uint64_t healed;           /* records + shards rewritten by healing */
    uint64_t tmp_reclaimed;
    uint64_t due_scanned;      /* version-time index entries looked at */
    uint64_t due_dropped;      /* stale index entries removed */
    uint64_t heal_queued;      /* keys healed from the immediate heal queue */
    uint64_t orphans_reclaimed; /* unreferenced data/ shard directories removed */
    uint64_t transitioned;     /* versions moved to another tier / class */
    uint64_t bytes_moved;      /* bytes copied by transitions */
    uint64_t intents_resolved; /* transitions finished after an interruption */
    int64_t started_ms;        /* of the pass */
    int64_t finished_ms;
};

/* The pass in progress, for status. */
struct strata_ilm_progress {
    bool running;              /* a pass is in progress */
    bool resumed;              /* it continues a pass a restart interrupted */
    char bucket[STRATA_BUCKET_NAME_MAX + 1]; /* its position */
    char key[STRATA_KEY_MAX + 1];
    uint64_t buckets_done, buckets_total;
    struct strata_ilm_stats st; /* its counters so far */
    uint64_t due_backlog;      /* expirations found due in the index, not yet acted on */
    uint64_t move_backlog;     /* transitions found due in the index, not yet acted on */
    uint64_t move_retries;     /* refused transitions waiting to be tried again */
    uint64_t heal_pending;     /* keys in meta's immediate heal queue */
};

struct strata_ilm;

/* Validates opts (meta and tags_decode_cb required, interval_s > 0):
 * STRATA_EINVAL, STRATA_ENOMEM.  Caller destroys. */
int strata_ilm_create(const struct strata_ilm_opts *opts, struct strata_ilm **out);
/* Start the scanner thread (first pass at once) and the mover thread
 * (every tier move; it starts moving once the first pass has resolved
 * interrupted moves).  STRATA_EBUSY if running. */
int strata_ilm_start(struct strata_ilm *e);
/* Ask the thread to stop; with wait, join it (a pass in progress stops
 * between two objects).  Safe when not running. */
void strata_ilm_stop(struct strata_ilm *e, bool wait);
/* Stops (waiting) if needed and frees.  NULL is a no-op. */
void strata_ilm_destroy(struct strata_ilm *e);
/* Start a pass now instead of at the next interval. */
void strata_ilm_kick(struct strata_ilm *e);
/* Copies of the last finished pass and of the totals; either may be NULL. */
void strata_ilm_stats_get(struct strata_ilm *e, struct strata_ilm_stats *last,
                          struct strata_ilm_stats *total);
/* The totals since start including the counters of the pass in progress,
 * read at one instant (what /metrics shows). */
void strata_ilm_stats_now(struct strata_ilm *e, struct strata_ilm_stats *out);
/* The pass in progress (running false between passes). */
void strata_ilm_progress_get(struct strata_ilm *e, struct strata_ilm_progress *p);
/* One pass in the calling thread (tests, an admin "run now"): drains the
 * due index, then walks every bucket with rules from the persisted
 * position (a pass that a stop or a crash interrupted continues where it
 * was), then heals and reclaims.  Passes and due drains run once per
 * cluster: STRATA_EBUSY, doing nothing, while another gateway holds meta's
 * "ilm" lease (the engine takes and renews it; strata_ilm_stop releases it). */
int strata_ilm_run_once(struct strata_ilm *e, struct strata_ilm_stats *out);

#endif /* STRATA_ILM_H */
