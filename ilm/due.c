/*
 * due.c - due work from meta's version-time index, without visiting every
 * version.
 *
 * meta keeps an index entry (bucket, mtime, key, version id) with every
 * live version record (meta/due.c).  For each enabled rule and each of its
 * timed actions, a version is due once its base time is below a bound that
 * only depends on now:
 *   Expiration Days D          current version, base = its mtime
 *   NoncurrentVersionExpiration a version below a newer one, base = the
 *   NoncurrentDays D            newer version's mtime (when it became
 *                               noncurrent): the newer version's entry
 *   Expiration Date            every entry once the date has passed
 *   ExpiredObjectDeleteMarker  every entry (the marker's, or the newer
 *                              version's whose expiry leaves it alone)
 *   Transition Days D / Date   as Expiration Days / Date, one cursor per
 *                              stage (with tiers only, rule_actions)
 *   NoncurrentVersionTransition as NoncurrentVersionExpiration
 * with bound = the first base time whose due date (strata_lc_due_ms) is
 * after now.  Per (rule, action) a cursor says up to which base time the
 * index has been drained; a drain scans [cursor, bound) for entries whose
 * key has the rule's prefix and re-evaluates each such key with the full
 * pass's logic (strata_ilm__walk_key: a quorum listing of the key's
 * versions, every rule and its precedence, tags and sizes, Object Lock in
 * meta's delete).  So work is proportional to what became due, the index
 * entries are only hints (the real record decides), and an entry whose
 * version no longer exists is dropped.  A rule that is new or changed has
 * no cursor and starts from the oldest entry: that is the rebuild.
 *
 * The bound is also kept DUE_SETTLE_MS (or one lifecycle day, when shorter) behind now, so an entry whose commit
 * lands a little after its mtime (taken under the key lock just before the
 * commit) is not passed over.  Anything the index misses (entries a crash
 * or heal left out, a commit slower than that) the full pass still finds.
 *
 * Two lanes drain separately, each with its own cursors and lock: the
 * expirations (E, A, N, M below) on the scanner thread, and the moves (T,
 * D, V) on the mover thread (mover.c), so a long copy paced by
 * --ilm-move-mbps never holds back an expiration due in the same tick.
 * Each lane's walk still decides with every rule (an expiration due at
 * the same time wins over a move) but carries out only its own kind: the
 * mover never deletes, so two walks of one key never both expire it.
 *
 * Cursors live in memory and in the bucket's configuration documents
 * "ilm-due" (expirations) and "ilm-due-tr" (moves; read from "ilm-due"
 * while it does not exist yet, where older versions kept both), one line
 * per cursor: 16 hex digits of the action's hash, its base time in ms,
 * written when they moved and at most every DUE_SAVE_MS; losing the
 * latest ones in a crash only repeats work.  The documents go with the
 * bucket.
 */
#include "ilm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "ilm"
#define DUE_DOC "ilm-due"
#define DUE_DOC_MOVES "ilm-due-tr"
#define DUE_SETTLE_MS 5000
#define DUE_SAVE_MS 30000
#define DUE_BATCH 4096
#define DUE_WORKERS 4
#define DUE_CURSORS_MAX (STRATA_LC_RULES_MAX * (4 + 2 * STRATA_LC_TRANSITIONS_MAX))

int64_t strata_ilm__due_bound(int64_t now_ms, unsigned days, int64_t day_ms)
{
    /* due(b) = roundup(b + days, day) <= now  <=>  b <= floor(now) - days */
    int64_t fl = now_ms - ((now_ms % day_ms) + day_ms) % day_ms;
    return fl - (int64_t)days * day_ms + 1;
}

struct cursor {
    uint64_t id;
    int64_t ms;
};

struct bucket_cursors {
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    struct cursor *v;
    size_t n;
    bool loaded, dirty;
    int64_t saved_ms;
};

/* The engine's cursors, bucket by bucket (e->due, under e->due_mu). */
struct due_state {
    struct bucket_cursors *b;
    size_t nb;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* An action's identity: what it is and what makes its bound; any change
 * of the rule gives a new cursor (a rebuild from the oldest entry). */
static uint64_t action_id(const struct strata_lc_rule *r, char kind, int64_t param,
                          const char *cls)
{
    uint64_t h = fnv(1469598103934665603ull, &kind, 1);
    h = fnv(h, r->id, strlen(r->id));
    h = fnv(h, &param, sizeof(param));
    if (r->filter.prefix)
        h = fnv(h, r->filter.prefix, strlen(r->filter.prefix) + 1);
    if (cls)
        h = fnv(h, cls, strlen(cls) + 1);
    /* Tag and size predicates too: a key the old filter left out may be due
     * under the new one. */
    for (size_t i = 0; i < r->filter.ntags; i++) {
        h = fnv(h, r->filter.tags[i].key, strlen(r->filter.tags[i].key) + 1);
        h = fnv(h, r->filter.tags[i].value, strlen(r->filter.tags[i].value) + 1);
    }
    if (r->filter.has_size_gt)
        h = fnv(fnv(h, ">", 1), &r->filter.size_gt, sizeof(r->filter.size_gt));
    if (r->filter.has_size_lt)
        h = fnv(fnv(h, "<", 1), &r->filter.size_lt, sizeof(r->filter.size_lt));
    return h;
}

static void cursors_save(struct strata_ilm *e, int lane, struct bucket_cursors *c, bool force);

void strata_ilm__due_forget(struct strata_ilm *e)
{
    for (int l = 0; l < STRATA_ILM_LANES; l++) {
        struct due_state *s = e->due[l];
        if (!s)
            continue;
        for (size_t j = 0; j < s->nb; j++) {
            cursors_save(e, l, &s->b[j], true); /* what moved since the last save */
            free(s->b[j].v);
        }
        free(s->b);
        free(s);
        e->due[l] = NULL;
    }
}

static const char *lane_doc(int lane)
{
    return lane == STRATA_ILM_LANE_MOVE ? DUE_DOC_MOVES : DUE_DOC;
}

static struct bucket_cursors *cursors_of(struct due_state *s, const char *bucket)
{
    for (size_t i = 0; i < s->nb; i++)
        if (strcmp(s->b[i].bucket, bucket) == 0)
            return &s->b[i];
    struct bucket_cursors *nb = realloc(s->b, (s->nb + 1) * sizeof(*nb));
    if (!nb)
        return NULL;
    s->b = nb;
    struct bucket_cursors *c = &s->b[s->nb++];
    memset(c, 0, sizeof(*c));
    snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
    return c;
}

static void cursors_load(struct strata_ilm *e, int lane, struct bucket_cursors *c)
{
    void *doc = NULL;
    size_t len = 0;
    c->loaded = true;
    int rc = strata_meta_bucket_config_get(e->o.meta, c->bucket, lane_doc(lane), &doc, &len);
    if (rc == STRATA_ENOTFOUND && lane == STRATA_ILM_LANE_MOVE) /* kept with the expirations' */
        rc = strata_meta_bucket_config_get(e->o.meta, c->bucket, DUE_DOC, &doc, &len);
    if (rc != 0)
        return;
    char *txt = malloc(len + 1);
    if (txt) {
        memcpy(txt, doc, len);
        txt[len] = '\0';
        size_t cap = 0;
        for (char *save = NULL, *l = strtok_r(txt, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save)) {
            unsigned long long id;
            long long ms;
            if (sscanf(l, "%16llx %lld", &id, &ms) != 2 || c->n >= DUE_CURSORS_MAX)
                continue;
            if (c->n == cap) {
                cap = cap ? cap * 2 : 8;
                struct cursor *v = realloc(c->v, cap * sizeof(*v));
                if (!v)
                    break;
                c->v = v;
            }
            c->v[c->n++] = (struct cursor){.id = id, .ms = ms};
        }
        free(txt);
    }
    free(doc);
}

static void cursors_save(struct strata_ilm *e, int lane, struct bucket_cursors *c, bool force)
{
    int64_t now = strata_ilm__now_ms();
    if (!c->dirty || (!force && now - c->saved_ms < DUE_SAVE_MS))
        return;
    char *doc = malloc(c->n * 40 + 1);
    if (!doc)
        return;
    size_t len = 0;
    for (size_t i = 0; i < c->n; i++)
        len += (size_t)snprintf(doc + len, 40, "%016llx %lld\n", (unsigned long long)c->v[i].id,
                                (long long)c->v[i].ms);
    int rc = strata_meta_bucket_config_put(e->o.meta, c->bucket, lane_doc(lane), doc, len);
    free(doc);
    if (rc == 0) {
        c->dirty = false;
        c->saved_ms = now;
    }
}

static struct cursor *cursor_get(struct bucket_cursors *c, uint64_t id)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].id == id)
            return &c->v[i];
    if (c->n >= DUE_CURSORS_MAX)
        return NULL;
    struct cursor *v = realloc(c->v, (c->n + 1) * sizeof(*v));
    if (!v)
        return NULL;
    c->v = v;
    c->v[c->n] = (struct cursor){.id = id, .ms = 0};
    return &c->v[c->n++];
}

struct cand {
    char *key;
    char vid[STRATA_VERSION_ID_MAX + 1];
    int64_t mtime_ms;
};

struct scan {
    struct strata_ilm *e;
    const char *prefix;
    struct cand *v;
    size_t n;
    int64_t last_ms;
    struct strata_ilm_stats *st;
};

#define SCAN_FULL 1

static int scan_cb(const struct strata_due_entry *ent, void *ud)
{
    struct scan *s = ud;
    s->st->due_scanned++;
    s->last_ms = ent->mtime_ms;
    if (s->prefix && strncmp(ent->key, s->prefix, strlen(s->prefix)) != 0)
        return 0;
    if (s->n && strcmp(s->v[s->n - 1].key, ent->key) == 0)
        return 0; /* the key is evaluated once */
    char *k = strdup(ent->key);
    if (!k)
        return STRATA_ENOMEM;
    s->v[s->n].key = k;
    snprintf(s->v[s->n].vid, sizeof(s->v[s->n].vid), "%s", ent->version_id);
    s->v[s->n].mtime_ms = ent->mtime_ms;
    return ++s->n == DUE_BATCH ? SCAN_FULL : 0;
}

static void backlog(struct strata_ilm *e, int lane, uint64_t n)
{
    pthread_mutex_lock(&e->mu);
    *(lane == STRATA_ILM_LANE_MOVE ? &e->prog.move_backlog : &e->prog.due_backlog) = n;
    pthread_mutex_unlock(&e->mu);
}

/* The keys of one batch, evaluated by DUE_WORKERS threads: deletes wait
 * on synced commits, and concurrent ones share their fsyncs (group commit).
 * A key belongs to one worker (by hash), so its entries are evaluated one
 * after the other: two concurrent walks of a key would both expire its
 * current version (two delete markers). */
struct pool {
    struct strata_ilm *e;
    const char *bucket;
    const struct strata_lc_config *cfg;
    struct cand *v;
    size_t n;
    atomic_size_t ndone;
    atomic_uint worker_ids;
    unsigned nworkers;
    int lane;
    bool *done;
    struct strata_ilm_stats *out;
};

static unsigned key_worker(const char *key, unsigned n)
{
    uint64_t h = fnv(1469598103934665603ull, key, strlen(key));
    return (unsigned)(h % n);
}

static void eval_one(struct pool *p, size_t i, struct strata_ilm_stats *st)
{
    struct cand *c = &p->v[i];
    bool seen = true;
    uint64_t before = st->noncurrent_expired + st->expired;
    int mode = p->lane == STRATA_ILM_LANE_MOVE ? STRATA_ILM_WALK_MOVES : STRATA_ILM_WALK_NO_MOVES;
    int rc = strata_ilm__walk_key(p->e, p->bucket, p->cfg, c->key, c->vid, mode, 0, &seen, st);
    /* A marker left alone by what just expired goes now, not next pass
     * (if a rule makes it due: the walk decides by its age). */
    if (rc == 0 && st->noncurrent_expired + st->expired != before &&
        strata_lc_marker_rule(p->cfg, c->key, 0, strata_ilm__day_ms(p->e), NULL))
        rc = strata_ilm__walk_key(p->e, p->bucket, p->cfg, c->key, NULL, mode, 0, NULL, st);
    if (rc == 0 && !seen && strata_meta_due_drop(p->e->o.meta, p->bucket, c->key, c->vid) == 0)
        st->due_dropped++;
}

static void *pool_main(void *arg)
{
    struct pool *p = arg;
    unsigned id = atomic_fetch_add(&p->worker_ids, 1);
    struct strata_ilm_stats loc;
    memset(&loc, 0, sizeof(loc));
    for (size_t i = 0; i < p->n && !atomic_load(&p->e->stop); i++) {
        /* done[i] of another worker's key is that worker's to write */
        if (key_worker(p->v[i].key, p->nworkers) != id || p->done[i])
            continue;
        if (strata_ilm__budget_take(&p->e->due_budget, 1, &p->e->stop))
            break; /* due_rate: the workers together */
        eval_one(p, i, &loc);
        p->done[i] = true;
        size_t d = atomic_fetch_add(&p->ndone, 1) + 1;
        if (d % 64 == 0 || loc.bytes_moved) { /* counters and backlog move while a long
                                                  drain runs; a move at once */
            backlog(p->e, p->lane, p->n - d);
            strata_ilm__publish(p->e, &loc, p->out);
            memset(&loc, 0, sizeof(loc));
        }
    }
    strata_ilm__publish(p->e, &loc, p->out);
    return NULL;
}

/* Evaluate v[0..n); returns the index of the first one not done (n: all). */
static size_t eval_batch(struct strata_ilm *e, int lane, const char *bucket,
                         const struct strata_lc_config *cfg, struct cand *v, size_t n,
                         struct strata_ilm_stats *out)
{
    bool *done = calloc(n ? n : 1, sizeof(*done));
    if (!done)
        return 0;
    struct pool p = {.e = e, .lane = lane, .bucket = bucket, .cfg = cfg, .v = v, .n = n,
                     .done = done,
                     .out = out, .nworkers = n < DUE_WORKERS ? (unsigned)(n ? n : 1) : DUE_WORKERS};
    atomic_init(&p.ndone, 0);
    atomic_init(&p.worker_ids, 0);
    backlog(e, lane, n);
    pthread_t t[DUE_WORKERS];
    unsigned nt = 0;
    for (; nt < p.nworkers; nt++)
        if (pthread_create(&t[nt], NULL, pool_main, &p) != 0)
            break;
    if (nt < p.nworkers) { /* no thread: this one does the rest */
        p.nworkers = 1;
        for (unsigned i = 0; i < nt; i++)
            pthread_join(t[i], NULL);
        nt = 0;
        atomic_store(&p.worker_ids, 0);
        pool_main(&p);
    }
    for (unsigned i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
    backlog(e, lane, 0);
    size_t first = 0;
    while (first < n && done[first])
        first++;
    free(done);
    return first;
}

/* Drain [cur->ms, bound) of one action; false when asked to stop. */
static bool drain_range(struct strata_ilm *e, int lane, const char *bucket,
                        const struct strata_lc_config *cfg, const struct strata_lc_rule *r,
                        struct cursor *cur, int64_t bound, struct strata_ilm_stats *out,
                        bool *dirty)
{
    struct cand *v = malloc(DUE_BATCH * sizeof(*v));
    if (!v)
        return true;
    bool more = true;
    while (more && cur->ms < bound && !atomic_load(&e->stop)) {
        struct strata_ilm_stats sst;
        memset(&sst, 0, sizeof(sst));
        struct scan s = {.e = e, .prefix = r->filter.prefix, .v = v, .st = &sst,
                         .last_ms = cur->ms};
        int rc = strata_meta_due_scan(e->o.meta, bucket, cur->ms, bound, scan_cb, &s);
        more = rc == SCAN_FULL;
        if (rc && rc != SCAN_FULL) {
            sst.errors++;
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "due index of %s: %s", bucket,
                       strata_errname(rc));
        }
        strata_ilm__publish(e, &sst, out);
        size_t done = eval_batch(e, lane, bucket, cfg, v, s.n, out);
        for (size_t i = 0; i < s.n; i++)
            free(v[i].key);
        if (done < s.n) { /* stopped: resume at the first one not done */
            if (v[done].mtime_ms > cur->ms) {
                cur->ms = v[done].mtime_ms;
                *dirty = true;
            }
            break;
        }
        int64_t next = more ? s.last_ms : bound;
        if (more && next <= cur->ms)
            next = cur->ms + 1; /* a full batch within one millisecond */
        if (rc && rc != SCAN_FULL)
            break;
        cur->ms = next;
        *dirty = true;
    }
    free(v);
    return !atomic_load(&e->stop);
}

/* One timed action of a rule: its cursor's identity and its bound now. */
struct due_act {
    char kind;
    int64_t param;
    const char *cls; /* transitions: the class (a new class is a new cursor) */
    int64_t bound;
};
#define DUE_ACTS_MAX (4 + 2 * STRATA_LC_TRANSITIONS_MAX)

/* The index bound of a Date action: every entry once the date passed. */
static int64_t date_bound(int64_t now, int64_t date_ms)
{
    return now >= date_ms ? now + 1 : 0;
}

/* The move lane's timed actions of rule r (none without a class map). */
static size_t rule_moves(const struct strata_ilm *e, const struct strata_lc_rule *r, int64_t now,
                         int64_t day, struct due_act *v)
{
    size_t n = 0;
    if (!e->o.classes)
        return n; /* no tiers: transitions never act */
    for (size_t i = 0; i < r->ntr; i++) {
        const struct strata_lc_transition *t = &r->tr[i];
        v[n++] = t->has_date
                     ? (struct due_act){'D', t->date_ms, t->storage_class,
                                        date_bound(now, t->date_ms)}
                     : (struct due_act){'T', t->days, t->storage_class,
                                        strata_ilm__due_bound(now, t->days, day)};
    }
    for (size_t i = 0; i < r->nnctr; i++) {
        const struct strata_lc_transition *t = &r->nctr[i];
        v[n++] = (struct due_act){'V', (int64_t)t->days * 1000 + t->newer, t->storage_class,
                                  strata_ilm__due_bound(now, t->days, day)};
    }
    return n;
}

/*
 * The timed actions of rule r in lane: the expirations in the expiry lane;
 * in the move lane (rule_moves), when the engine moves data (a class
 * map), every Transition (base: the version's mtime, like
 * Expiration) and NoncurrentVersionTransition (base: the newer version's
 * mtime, like NoncurrentVersionExpiration).  Each transition stage has its
 * own cursor, so a version reaches the second stage by the index too.
 * The drain re-evaluates the key with the full pass's logic
 * (strata_ilm__walk_key): the waterfall, the tier check, an expiration
 * due at the same time winning, Object Lock, the crash-safe move.
 */
static size_t rule_actions(const struct strata_ilm *e, int lane, const struct strata_lc_rule *r,
                           int64_t now, int64_t day, struct due_act *v)
{
    size_t n = 0;
    if (lane == STRATA_ILM_LANE_MOVE)
        return rule_moves(e, r, now, day, v);
    if (r->exp_days > 0)
        v[n++] = (struct due_act){'E', r->exp_days, NULL,
                                  strata_ilm__due_bound(now, r->exp_days, day)};
    if (r->exp_has_date)
        v[n++] = (struct due_act){'A', r->exp_date_ms, NULL, date_bound(now, r->exp_date_ms)};
    if (r->nc_days > 0)
        v[n++] = (struct due_act){'N', r->nc_days, NULL,
                                  strata_ilm__due_bound(now, r->nc_days, day)};
    if (r->exp_delete_marker)
        v[n++] = (struct due_act){'M', 0, NULL, now + 1};
    return n;
}

static void drain_bucket(struct strata_ilm *e, int lane, struct due_state *ds,
                         const char *bucket, struct strata_ilm_stats *st)
{
    struct strata_lc_config cfg;
    struct strata_ilm_stats lst;
    memset(&lst, 0, sizeof(lst));
    int lrc = strata_ilm__load_rules(e, bucket, &cfg, &lst);
    strata_ilm__publish(e, &lst, st);
    if (lrc != 0)
        return;
    struct bucket_cursors *c = cursors_of(ds, bucket);
    if (!c) {
        strata_lc_config_fini(&cfg);
        return;
    }
    if (!c->loaded)
        cursors_load(e, lane, c);
    int64_t now = strata_ilm__now_ms(), day = strata_ilm__day_ms(e);
    /* Short test days (--lc-day-seconds) settle within a day: anything
     * slower is the full pass's. */
    int64_t settled = now - (day < DUE_SETTLE_MS ? day : DUE_SETTLE_MS);
    for (size_t i = 0; i < cfg.nrules && !atomic_load(&e->stop); i++) {
        const struct strata_lc_rule *r = &cfg.rules[i];
        if (!r->enabled)
            continue;
        struct due_act acts[DUE_ACTS_MAX];
        size_t n = rule_actions(e, lane, r, now, day, acts);
        for (size_t a = 0; a < n; a++) {
            int64_t bound = acts[a].bound < settled ? acts[a].bound : settled;
            struct cursor *cur =
                cursor_get(c, action_id(r, acts[a].kind, acts[a].param, acts[a].cls));
            if (!cur || bound <= cur->ms)
                continue;
            if (!drain_range(e, lane, bucket, &cfg, r, cur, bound, st, &c->dirty))
                break;
        }
    }
    cursors_save(e, lane, c, atomic_load(&e->stop));
    strata_lc_config_fini(&cfg);
}

void strata_ilm__due_lane_tick(struct strata_ilm *e, int lane, bool force,
                               struct strata_ilm_stats *st)
{
    if (!strata_ilm__lease_ok(e))
        return; /* once per cluster: the lease holder drains */
    int64_t now = strata_ilm__now_ms();
    unsigned every = e->o.drain_ms ? e->o.drain_ms : 1000;
    if (pthread_mutex_trylock(&e->due_mu[lane]) != 0)
        return; /* another thread drains: a drain runs its whole range */
    if (!force && now - e->last_drain_ms[lane] < (int64_t)every) {
        pthread_mutex_unlock(&e->due_mu[lane]);
        return;
    }
    e->last_drain_ms[lane] = now;
    if (!e->due[lane])
        e->due[lane] = calloc(1, sizeof(struct due_state));
    struct due_state *ds = e->due[lane];
    struct strata_ilm_names ns = {0};
    if (ds && strata_ilm__bucket_names(e, &ns) == 0)
        for (size_t i = 0; i < ns.n && !atomic_load(&e->stop); i++)
            drain_bucket(e, lane, ds, ns.v[i], st);
    free(ns.v);
    pthread_mutex_unlock(&e->due_mu[lane]);
}
