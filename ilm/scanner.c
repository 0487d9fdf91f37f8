/*
 * scanner.c - the lifecycle scanner: a background thread that, once per
 * interval, walks every bucket that has a lifecycle configuration and
 * applies its rules through meta.h's object layer, then heals and
 * reclaims tmp/ leftovers.
 *
 * A pass lists each bucket's versions a page at a time (newest first per
 * key) and decides per version: a current version due for Expiration is
 * deleted without a version id (meta adds a delete marker on a versioned
 * bucket, removes the object on an unversioned one); a noncurrent version
 * (noncurrent since the mtime of the next newer version) due for
 * NoncurrentVersionExpiration, beyond NewerNoncurrentVersions, is removed
 * by version id; a delete marker that is a key's only version is removed
 * when an ExpiredObjectDeleteMarker rule matches.  Incomplete multipart
 * uploads older than DaysAfterInitiation are aborted.  Decisions of a page
 * are carried out after the page has been listed.
 *
 * Object Lock is enforced by meta: a refused delete (STRATA_ELOCKED) is
 * counted as skipped-locked and the pass moves on; the version is looked
 * at again on the next pass only.  The walk is paced to rate_objs entries
 * per second.  Its position is saved in meta (scanpos.c) so a pass a
 * restart interrupted continues where it was.  Between pages and between
 * passes the thread drains the version-time index's expirations (due.c)
 * and meta's immediate heal queue (healing.c), so due work waits for
 * neither.  Moves are the mover's (mover.c): the pass hands them over.
 * The full heal is paced to heal_rate.
 *
 * Threads: the scanner thread and the mover thread (mover.c);
 * strata_ilm_run_once and the control functions may be called from
 * another thread (passes are serialised).
 */
#include "ilm_internal.h"
#include "ilm_transition.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD "ilm"
#define PAGE_MAX 1000
#define PACE_CREDIT_MS 1000
#define OBJ_TAGS_MAX 10
#define HAND_OVER_NAP_MS 50

enum act_kind { ACT_EXPIRE, ACT_NONCURRENT, ACT_MARKER, ACT_ABORT, ACT_TRANSITION };

struct action {
    int kind;
    const char *cls; /* ACT_TRANSITION: the class to move to (in the config) */
    char *key;
    char id[STRATA_VERSION_ID_MAX > STRATA_UPLOAD_ID_MAX ? STRATA_VERSION_ID_MAX + 1
                                                          : STRATA_UPLOAD_ID_MAX + 1];
};

/* State of one bucket's walk. */
struct walk {
    struct strata_ilm *e;
    const char *bucket;
    const struct strata_lc_config *cfg;
    struct strata_ilm_stats *st;
    int64_t now_ms;
    int64_t pass_t0_ms;
    bool logged_error; /* one WARN per bucket and pass, then DEBUG */
    /* the key being walked (versions come newest first) */
    char key[STRATA_KEY_MAX + 1];
    bool in_key;
    unsigned nversions;
    unsigned noncurrent_seen;
    int64_t newer_mtime_ms;
    int mode;             /* enum strata_ilm_walk_mode */
    unsigned attempt;     /* walk_key from the retry list: tries so far */
    const char *only_key; /* walk_key: this key only */
    const char *want_vid; /* walk_key: note whether this version is listed */
    bool saw_vid;
    struct ilm_pos *pos;  /* full pass: where to resume, saved per page */
    char done_key[STRATA_KEY_MAX + 1]; /* the last key whose versions are all seen */
    bool latest_marker;
    char marker_vid[STRATA_VERSION_ID_MAX + 1];
    int64_t marker_mtime_ms;
    /* decisions of the current page */
    struct action *acts;
    size_t nacts, cap;
    int oom;
};

#define now_ms() strata_ilm__now_ms()
#define day_ms(e) strata_ilm__day_ms(e)
#define KEY_PASSED 1 /* walk_key: the listing went past the key */

/* Both lanes of the due index when no mover thread runs the move lane. */
void strata_ilm__due_tick(struct strata_ilm *e, bool force, struct strata_ilm_stats *st)
{
    strata_ilm__due_lane_tick(e, STRATA_ILM_LANE_EXPIRE, force, st);
    if (!atomic_load(&e->mover_running))
        strata_ilm__move_tick(e, force, st);
}

/* Keep the pass at rate_objs entries per second; true when asked to stop.
 * A pass that fell behind (a long drain, a slow move, a slow listing)
 * catches up at most PACE_CREDIT_MS of its schedule: a pass that caught
 * up minutes at full speed raised foreground p99 for as long. */
static bool pace(struct walk *w)
{
    if (!strata_ilm__lease_ok(w->e))
        return true; /* another gateway runs the lifecycle work now */
    int64_t t = now_ms();
    strata_ilm__due_tick(w->e, false, &w->e->pass_dr);
    strata_ilm__heal_tick(w->e, &w->e->pass_dr);
    t = now_ms() - t;
    w->pass_t0_ms += t; /* that work is not the walk's: keep its pace */
    unsigned rate = w->e->o.rate_objs;
    if (rate == 0)
        return atomic_load(&w->e->stop);
    int64_t due = w->pass_t0_ms + (int64_t)(w->st->scanned * 1000 / rate);
    int64_t floor = now_ms() - PACE_CREDIT_MS;
    if (due < floor) {
        w->pass_t0_ms += floor - due;
        due = floor;
    }
    return strata_ilm__nap_until(w->e, due, false);
}

static void add(struct walk *w, int kind, const char *key, const char *id)
{
    if (w->nacts == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        struct action *a = realloc(w->acts, cap * sizeof(*a));
        if (!a) {
            w->oom = STRATA_ENOMEM;
            return;
        }
        w->acts = a;
        w->cap = cap;
    }
    struct action *a = &w->acts[w->nacts];
    a->key = strdup(key);
    if (!a->key) {
        w->oom = STRATA_ENOMEM;
        return;
    }
    a->kind = kind;
    snprintf(a->id, sizeof(a->id), "%s", id ? id : "");
    w->nacts++;
}

static void fail_log(struct walk *w, const struct action *a, int rc)
{
    w->st->errors++;
    strata_log(&w->e->o.log, w->logged_error ? STRATA_LOG_DEBUG : STRATA_LOG_WARN, MOD,
               "lifecycle on /%s/%s (%s): %s; retried next pass", w->bucket, a->key,
               a->id[0] ? a->id : "current", strata_errname(rc));
    w->logged_error = true;
}

/* The pass hands a move to the mover; while the mover's list is full it
 * waits for room (or a stop), the expiry drains and the heal queue keeping
 * their tick. */
static void hand_over(struct walk *w, const struct action *a)
{
    struct strata_ilm *e = w->e;
    while (!strata_ilm__move_later(e, w->bucket, a->key, a->id, 0)) {
        strata_ilm__due_tick(e, false, &e->pass_dr);
        strata_ilm__heal_tick(e, &e->pass_dr);
        if (strata_ilm__nap_until(e, now_ms() + HAND_OVER_NAP_MS, false))
            return;
    }
}

/* A move the walk decided.  The expiry lane leaves it to the mover; the
 * pass hands it over while a mover runs (so the pass, and the expiry
 * drains it hosts, never wait for a copy).  A move meta refused because
 * the version changed meanwhile (EPRECOND) or an earlier move of it is not
 * resolved yet (EBUSY: a reader still holds the previous copy) goes to the
 * retry list, re-decided from the rules when its turn comes. */
static void run_move(struct walk *w, struct action *a)
{
    struct strata_ilm *e = w->e;
    if (w->mode == STRATA_ILM_WALK_NO_MOVES)
        return;
    if (w->mode == STRATA_ILM_WALK_ALL && atomic_load(&e->mover_running)) {
        hand_over(w, a);
        return;
    }
    pthread_rwlock_rdlock(&e->move_rw);
    int rc = strata_ilm__transition_run(&e->o, &e->move_budget, &e->stop, w->bucket, a->key,
                                        a->id, a->cls, w->st);
    pthread_rwlock_unlock(&e->move_rw);
    if ((rc == STRATA_EPRECOND || rc == STRATA_EBUSY) && !atomic_load(&e->stop)) {
        if (!strata_ilm__move_later(e, w->bucket, a->key, a->id, w->attempt + 1))
            strata_log(&e->o.log, STRATA_LOG_DEBUG, MOD,
                       "move of /%s/%s (%s): %s, left to the next pass", w->bucket, a->key,
                       a->id, strata_errname(rc));
    } else if (rc == STRATA_ELOCKED) {
        /* The target tier cannot keep this locked version locked. */
        w->st->skipped_locked++;
        strata_log(&e->o.log, STRATA_LOG_DEBUG, MOD,
                   "move of /%s/%s (%s): locked, the target tier cannot hold the lock",
                   w->bucket, a->key, a->id);
    } else if (rc && rc != STRATA_ENOTFOUND && rc != STRATA_EPRECOND && rc != STRATA_EBUSY) {
        fail_log(w, a, rc);
    }
}

/* Carry out the page's decisions. */
static void run_actions(struct walk *w)
{
    struct strata_meta *m = w->e->o.meta;
    for (size_t i = 0; i < w->nacts; i++) {
        struct action *a = &w->acts[i];
        int rc;
        if (a->kind == ACT_TRANSITION) {
            run_move(w, a);
            free(a->key);
            continue;
        }
        if (w->mode == STRATA_ILM_WALK_MOVES) { /* the expiry lane's (or the pass's) */
            free(a->key);
            continue;
        }
        struct strata_del_result res = {0};
        if (a->kind == ACT_ABORT)
            rc = strata_mpu_abort(m, w->bucket, a->key, a->id);
        else
            rc = strata_obj_delete(m, w->bucket, a->key, a->kind == ACT_EXPIRE ? NULL : a->id,
                                   &res);
        if (rc == 0 && a->kind != ACT_ABORT && w->e->o.event_cb)
            w->e->o.event_cb(w->e->o.event_ud,
                             a->kind == ACT_EXPIRE && res.delete_marker
                                 ? STRATA_ILM_EV_EXPIRE_MARKER
                                 : STRATA_ILM_EV_EXPIRE_DELETE,
                             w->bucket, a->key, a->kind == ACT_EXPIRE ? res.version_id : a->id);
        if (rc == 0) {
            uint64_t *c = a->kind == ACT_EXPIRE       ? &w->st->expired
                          : a->kind == ACT_NONCURRENT ? &w->st->noncurrent_expired
                          : a->kind == ACT_MARKER     ? &w->st->markers_removed
                                                      : &w->st->uploads_aborted;
            (*c)++;
        } else if (rc == STRATA_ELOCKED) {
            w->st->skipped_locked++;
            strata_log(&w->e->o.log, STRATA_LOG_DEBUG, MOD,
                       "lifecycle on /%s/%s (%s): locked, left alone", w->bucket, a->key, a->id);
        } else if (rc != STRATA_ENOTFOUND) {
            fail_log(w, a, rc);
        }
        free(a->key);
    }
    w->nacts = 0;
}

/* The key's versions are all seen: an expired delete marker goes when it
 * is the only version left and a rule makes it due (ExpiredObjectDeleteMarker
 * at once, Expiration Days by the marker's age); never one with noncurrent
 * versions behind it. */
static void key_done(struct walk *w)
{
    int64_t due = 0;
    if (w->in_key && w->latest_marker && w->nversions == 1 &&
        strata_lc_marker_rule(w->cfg, w->key, w->marker_mtime_ms, day_ms(w->e), &due) &&
        due <= w->now_ms)
        add(w, ACT_MARKER, w->key, w->marker_vid);
    w->in_key = false;
}

static int version_cb(const struct strata_list_entry *ent, void *ud)
{
    struct walk *w = ud;
    const struct strata_obj_info *in = ent->info;
    if (ent->is_prefix || !in)
        return 0;
    if (w->only_key && strcmp(ent->key, w->only_key) != 0)
        return KEY_PASSED;
    if (w->want_vid && strcmp(in->version_id, w->want_vid) == 0)
        w->saw_vid = true;
    if (!w->in_key || strcmp(w->key, ent->key) != 0) {
        if (w->in_key)
            snprintf(w->done_key, sizeof(w->done_key), "%s", w->key);
        key_done(w);
        snprintf(w->key, sizeof(w->key), "%s", ent->key);
        w->in_key = true;
        w->nversions = 0;
        w->noncurrent_seen = 0;
        w->latest_marker = false;
    }
    w->st->scanned++;
    bool current = w->nversions++ == 0;
    struct strata_kv tags[OBJ_TAGS_MAX];
    char tbuf[STRATA_TAGS_MAX + 1];
    int nt = in->tags_len ? w->e->o.tags_decode_cb(in->tags, in->tags_len, tags, OBJ_TAGS_MAX,
                                                   tbuf, sizeof(tbuf))
                          : 0;
    struct strata_lc_obj o = {.key = ent->key, .size = in->delete_marker ? 0 : in->size,
                              .tags = tags, .ntags = nt > 0 ? (size_t)nt : 0};
    int64_t due = 0;
    size_t before = w->nacts;
    if (current && in->delete_marker) {
        w->latest_marker = true;
        w->marker_mtime_ms = in->mtime_ms;
        snprintf(w->marker_vid, sizeof(w->marker_vid), "%s", in->version_id);
    } else if (current) {
        if (strata_lc_expiry(w->cfg, &o, in->mtime_ms, day_ms(w->e), &due) && due <= w->now_ms)
            add(w, ACT_EXPIRE, ent->key, NULL);
    } else {
        if (strata_lc_noncurrent_expiry(w->cfg, &o, w->newer_mtime_ms, w->noncurrent_seen,
                                        day_ms(w->e), &due) &&
            due <= w->now_ms)
            add(w, ACT_NONCURRENT, ent->key, in->version_id);
    }
    /* Expiration wins over a transition due at the same time (AWS). */
    const char *cls = w->nacts == before
                          ? strata_ilm__transition_target(&w->e->o, w->cfg, &o, in, current,
                                                          w->newer_mtime_ms, w->noncurrent_seen,
                                                          w->now_ms, day_ms(w->e))
                          : NULL;
    if (cls) {
        add(w, ACT_TRANSITION, ent->key, in->version_id);
        if (w->nacts > before)
            w->acts[w->nacts - 1].cls = cls;
    }
    if (!current)
        w->noncurrent_seen++;
    w->newer_mtime_ms = in->mtime_ms;
    return w->oom;
}

static int walk_versions(struct walk *w)
{
    unsigned page = w->e->o.rate_objs && w->e->o.rate_objs < PAGE_MAX ? w->e->o.rate_objs
                                                                      : PAGE_MAX;
    struct strata_list_result res;
    memset(&res, 0, sizeof(res));
    char after[STRATA_KEY_MAX + 1] = "", vid[STRATA_VERSION_ID_MAX + 1] = "";
    if (w->pos && w->pos->key[0]) { /* resume a pass a restart interrupted */
        snprintf(after, sizeof(after), "%s", w->pos->key);
        snprintf(vid, sizeof(vid), "%s", w->pos->vid);
    }
    int rc;
    do {
        struct strata_list_opts lo = {.bucket = w->bucket, .max_keys = page, .versions = true,
                                      .maintenance = true,
                                      .prefix = w->only_key,
                                      .start_after = after[0] ? after : NULL,
                                      .version_id_marker = vid[0] ? vid : NULL};
        rc = strata_obj_list(w->e->o.meta, &lo, version_cb, w, &res);
        if (rc == KEY_PASSED)
            rc = 0, res.truncated = false;
        if (rc == 0 && !res.truncated)
            key_done(w);
        run_actions(w);
        if (rc)
            break;
        snprintf(after, sizeof(after), "%s", res.next_key);
        snprintf(vid, sizeof(vid), "%s", res.next_version_id);
        if (w->only_key)
            continue;
        if (w->pos && res.truncated && w->done_key[0]) {
            /* Resume after the last key whose versions were all decided: a
             * key resumed mid-way would take a noncurrent version for the
             * current one. */
            snprintf(w->pos->key, sizeof(w->pos->key), "%s", w->done_key);
            w->pos->vid[0] = '\0';
            strata_ilm__pos_save(w->e, w->pos, false);
            strata_ilm__progress(w->e, w->st, w->bucket, w->done_key);
        }
        if (pace(w))
            return 0;
    } while (res.truncated);
    return rc;
}

static int upload_cb(const struct strata_mpu_list_entry *ent, void *ud)
{
    struct walk *w = ud;
    if (ent->is_prefix || !ent->info)
        return 0;
    w->st->scanned++;
    int64_t due = 0;
    if (strata_lc_abort_rule(w->cfg, ent->key, ent->info->initiated_ms, day_ms(w->e), &due) &&
        due <= w->now_ms)
        add(w, ACT_ABORT, ent->key, ent->info->upload_id);
    return w->oom;
}

static int walk_uploads(struct walk *w)
{
    bool any = false;
    for (size_t i = 0; i < w->cfg->nrules && !any; i++)
        any = w->cfg->rules[i].enabled && w->cfg->rules[i].abort_days;
    if (!any)
        return 0;
    struct strata_mpu_list_result res;
    memset(&res, 0, sizeof(res));
    char key[STRATA_KEY_MAX + 1] = "", uid[STRATA_UPLOAD_ID_MAX + 1] = "";
    int rc;
    do {
        struct strata_mpu_list_opts lo = {.bucket = w->bucket, .max_uploads = PAGE_MAX,
                                          .key_marker = key[0] ? key : NULL,
                                          .upload_id_marker = key[0] ? uid : NULL};
        rc = strata_mpu_list(w->e->o.meta, &lo, upload_cb, w, &res);
        run_actions(w);
        if (rc)
            break;
        snprintf(key, sizeof(key), "%s", res.next_key_marker);
        snprintf(uid, sizeof(uid), "%s", res.next_upload_id_marker);
        if (pace(w))
            return 0;
    } while (res.truncated);
    return rc;
}

/* The bucket's lifecycle rules: 0 with cfg filled (caller finis), or
 * non-zero when it has none or they are unusable (logged, counted). */
static int load_rules(struct strata_ilm *e, const char *bucket, struct strata_lc_config *cfg,
                      struct strata_ilm_stats *st)
{
    void *doc = NULL;
    size_t len = 0;
    int rc = strata_meta_bucket_config_get(e->o.meta, bucket, "lifecycle", &doc, &len);
    if (rc || len == 0) {
        free(doc);
        if (rc && rc != STRATA_ENOTFOUND) {
            st->errors++;
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "lifecycle of %s unreadable: %s", bucket,
                       strata_errname(rc));
        }
        return rc ? rc : STRATA_ENOTFOUND;
    }
    struct strata_lc_error perr;
    rc = strata_lc_config_parse(doc, len, cfg, &perr);
    free(doc);
    if (rc) {
        st->errors++;
        strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "lifecycle of %s not applied: %s", bucket,
                   perr.msg[0] ? perr.msg : strata_errname(rc));
    }
    return rc;
}

int strata_ilm__load_rules(struct strata_ilm *e, const char *bucket, struct strata_lc_config *cfg,
                           struct strata_ilm_stats *st)
{
    return load_rules(e, bucket, cfg, st);
}

int strata_ilm__walk_key(struct strata_ilm *e, const char *bucket,
                         const struct strata_lc_config *cfg, const char *key, const char *vid,
                         int mode, unsigned attempt, bool *seen, struct strata_ilm_stats *st)
{
    struct walk w = {.e = e, .bucket = bucket, .cfg = cfg, .st = st, .now_ms = now_ms(),
                     .pass_t0_ms = now_ms(), .mode = mode, .attempt = attempt,
                     .only_key = key, .want_vid = vid};
    int rc = walk_versions(&w);
    for (size_t i = 0; i < w.nacts; i++)
        free(w.acts[i].key);
    free(w.acts);
    if (seen)
        *seen = w.saw_vid;
    return rc;
}

static void walk_bucket(struct strata_ilm *e, const char *bucket, struct strata_ilm_stats *st,
                        int64_t *t0_ms, struct ilm_pos *pos)
{
    struct strata_lc_config cfg;
    if (load_rules(e, bucket, &cfg, st) != 0)
        return;
    st->buckets++;
    struct walk w = {.e = e, .bucket = bucket, .cfg = &cfg, .st = st, .now_ms = now_ms(),
                     .pass_t0_ms = *t0_ms, .pos = pos};
    int rc = walk_versions(&w);
    if (rc == 0 && !atomic_load(&e->stop))
        rc = walk_uploads(&w);
    if (rc && rc != STRATA_ENOTFOUND) { /* ENOTFOUND: the bucket went meanwhile */
        st->errors++;
        strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "lifecycle walk of %s stopped: %s", bucket,
                   strata_errname(rc));
    }
    *t0_ms = w.pass_t0_ms; /* the next bucket keeps the pace, drains excluded */
    for (size_t i = 0; i < w.nacts; i++)
        free(w.acts[i].key);
    free(w.acts);
    strata_lc_config_fini(&cfg);
}

/* After every few keys of the full heal: the expiry drains keep their
 * tick (the heal may last long at heal_rate), and the keys are charged to
 * the heal budget that the heal-queue drain spends too. */
static int heal_pace_cb(void *ud, uint64_t keys)
{
    struct strata_ilm *e = ud;
    strata_ilm__due_tick(e, false, &e->pass_dr);
    return strata_ilm__budget_take(&e->heal_budget, keys, &e->stop) ? STRATA_EBUSY : 0;
}

/* Healing and tmp/ reclaim, which nothing else in the daemon runs. */
static void housekeeping(struct strata_ilm *e, struct strata_ilm_stats *st)
{
    int64_t now = now_ms();
    if (e->o.heal_interval_s &&
        (e->last_heal_ms == 0 || now - e->last_heal_ms >= (int64_t)e->o.heal_interval_s * 1000)) {
        e->last_heal_ms = now;
        struct strata_heal_stats hs;
        memset(&hs, 0, sizeof(hs));
        int rc = strata_meta_heal_all_paced(e->o.meta, heal_pace_cb, e, &hs);
        st->healed += hs.records_healed + hs.shards_healed;
        /* ENOTIMPL: the backend's cluster heals itself (RADOS). */
        if (rc && rc != STRATA_ENOTIMPL && !atomic_load(&e->stop)) {
            st->errors++;
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "heal pass: %s", strata_errname(rc));
        }
    }
    for (unsigned i = 0; e->o.tmp_age_s && i < e->o.nsets && !atomic_load(&e->stop); i++) {
        unsigned removed = 0;
        int rc = strata_ec_tmp_reclaim(e->o.sets[i], e->o.tmp_age_s, &removed);
        st->tmp_reclaimed += removed;
        if (rc) {
            st->errors++;
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "tmp/ reclaim of set %u: %s", i,
                       strata_errname(rc));
        }
    }
    if (!atomic_load(&e->stop))
        strata_ilm__orphans(e, st);
}

static void stats_add(struct strata_ilm_stats *t, const struct strata_ilm_stats *s)
{
    strata_ilm__stats_add_counts(t, s);
    t->started_ms = s->started_ms;
    t->finished_ms = s->finished_ms;
}

/* The pass must end early: asked to stop, or the ilm lease is gone. */
static bool halted(struct strata_ilm *e)
{
    return atomic_load(&e->stop) || !atomic_load(&e->lease_held);
}

int strata_ilm_run_once(struct strata_ilm *e, struct strata_ilm_stats *out)
{
    if (out)
        memset(out, 0, sizeof(*out));
    /* Once per cluster: only the holder of the ilm lease runs a pass. */
    if (!strata_ilm__lease_ok(e))
        return STRATA_EBUSY;
    pthread_mutex_lock(&e->pass_mu);
    struct strata_ilm_stats st;
    memset(&st, 0, sizeof(st));
    st.started_ms = now_ms();
    /* Interrupted moves first; never beside a running move (its copies
     * would look like leftovers): with moves in flight, the next pass. */
    if (pthread_rwlock_trywrlock(&e->move_rw) == 0) {
        strata_ilm__transition_pass_begin(&e->o, &st);
        pthread_rwlock_unlock(&e->move_rw);
        pthread_mutex_lock(&e->mu);
        e->reclaimed = true; /* the mover may start */
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
    /* Drains during the pass count into the totals at once and into the
     * pass's report (pass_dr, under mu) at its end. */
    pthread_mutex_lock(&e->mu);
    memset(&e->pass_dr, 0, sizeof(e->pass_dr));
    pthread_mutex_unlock(&e->mu);
    strata_ilm__due_tick(e, true, &e->pass_dr); /* due work first */
    int64_t pace_t0 = now_ms(); /* the walk's schedule starts after that drain */
    struct strata_ilm_names ns;
    int rc = strata_ilm__bucket_names(e, &ns);
    struct ilm_pos pos;
    if (strata_ilm__pos_load(e, &pos) != 0)
        memset(&pos, 0, sizeof(pos));
    if (pos.bucket[0])
        strata_log(&e->o.log, STRATA_LOG_INFO, MOD, "pass resumes at /%s/%s", pos.bucket,
                   pos.key);
    pthread_mutex_lock(&e->mu);
    memset(&e->prog, 0, sizeof(e->prog));
    e->prog.running = true;
    e->prog.resumed = pos.bucket[0] != 0;
    e->prog.buckets_total = ns.n;
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; rc == 0 && i < ns.n && !halted(e); i++) {
        int c = pos.bucket[0] ? strcmp(ns.v[i], pos.bucket) : 1;
        if (c >= 0) {
            if (c > 0) { /* a bucket not begun yet */
                snprintf(pos.bucket, sizeof(pos.bucket), "%s", ns.v[i]);
                pos.key[0] = pos.vid[0] = '\0';
                strata_ilm__pos_save(e, &pos, false);
            }
            strata_ilm__progress(e, &st, ns.v[i], pos.key);
            walk_bucket(e, ns.v[i], &st, &pace_t0, &pos);
        }
        pthread_mutex_lock(&e->mu);
        e->prog.buckets_done = i + 1;
        pthread_mutex_unlock(&e->mu);
    }
    free(ns.v);
    if (rc == 0 && !halted(e)) { /* the pass is complete */
        memset(&pos, 0, sizeof(pos));
        strata_ilm__pos_save(e, &pos, true);
    } else if (pos.bucket[0]) {
        strata_ilm__pos_save(e, &pos, true);
    }
    if (rc) {
        st.errors++;
        strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "bucket list: %s", strata_errname(rc));
    }
    if (!halted(e))
        housekeeping(e, &st);
    pthread_mutex_lock(&e->mu);
    struct strata_ilm_stats own = st; /* what the totals do not hold yet */
    strata_ilm__stats_add_counts(&st, &e->pass_dr);
    pthread_mutex_unlock(&e->mu);
    own.passes = 1;
    st.passes = 1;
    st.finished_ms = now_ms();
    bool acted = st.expired || st.noncurrent_expired || st.markers_removed ||
                 st.uploads_aborted || st.skipped_locked || st.errors || st.healed ||
                 st.tmp_reclaimed || st.transitioned;
    strata_log(&e->o.log, acted ? STRATA_LOG_INFO : STRATA_LOG_DEBUG, MOD,
               "pass: %llu buckets, %llu scanned, %llu expired, %llu noncurrent, %llu markers, "
               "%llu uploads aborted, %llu locked, %llu healed, %llu tmp, %llu transitioned "
               "(%llu bytes), %llu errors, %lld ms",
               (unsigned long long)st.buckets, (unsigned long long)st.scanned,
               (unsigned long long)st.expired, (unsigned long long)st.noncurrent_expired,
               (unsigned long long)st.markers_removed, (unsigned long long)st.uploads_aborted,
               (unsigned long long)st.skipped_locked, (unsigned long long)st.healed,
               (unsigned long long)st.tmp_reclaimed, (unsigned long long)st.transitioned,
               (unsigned long long)st.bytes_moved, (unsigned long long)st.errors,
               (long long)(st.finished_ms - st.started_ms));
    pthread_mutex_lock(&e->mu);
    e->last = st;
    own.started_ms = st.started_ms;
    own.finished_ms = now_ms();
    stats_add(&e->total, &own);
    memset(&e->prog, 0, sizeof(e->prog));
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_unlock(&e->pass_mu);
    if (out)
        *out = st;
    return rc;
}

static void *thread_main(void *arg)
{
    struct strata_ilm *e = arg;
    while (!atomic_load(&e->stop)) {
        int64_t t0 = now_ms();
        pthread_mutex_lock(&e->mu);
        e->kick = false;
        pthread_mutex_unlock(&e->mu);
        strata_ilm_run_once(e, NULL);
        /* Between passes: the due index and the heal queue, every drain_ms. */
        int64_t next = t0 + (int64_t)e->o.interval_s * 1000;
        unsigned tick = e->o.drain_ms ? e->o.drain_ms : 1000;
        bool stop = false;
        while (!stop && now_ms() < next) {
            pthread_mutex_lock(&e->mu);
            bool kicked = e->kick;
            pthread_mutex_unlock(&e->mu);
            if (kicked)
                break;
            strata_ilm__due_tick(e, false, NULL);
            strata_ilm__heal_tick(e, NULL);
            int64_t until = now_ms() + tick;
            stop = strata_ilm__nap_until(e, until < next ? until : next, true);
        }
        if (stop || atomic_load(&e->stop))
            break;
    }
    return NULL;
}

void strata_ilm_stats_now(struct strata_ilm *e, struct strata_ilm_stats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->total;
    if (e->prog.running)
        strata_ilm__stats_add_counts(out, &e->prog.st);
    pthread_mutex_unlock(&e->mu);
}

void strata_ilm_progress_get(struct strata_ilm *e, struct strata_ilm_progress *p)
{
    pthread_mutex_lock(&e->mu);
    *p = e->prog;
    pthread_mutex_unlock(&e->mu);
    size_t pending = 0;
    strata_meta_heal_queue_stats(e->o.meta, &pending, NULL);
    p->heal_pending = pending;
    p->move_retries = strata_ilm__retry_pending(e);
}

void strata_ilm__progress(struct strata_ilm *e, const struct strata_ilm_stats *st,
                          const char *bucket, const char *key)
{
    pthread_mutex_lock(&e->mu);
    e->prog.st = *st;
    snprintf(e->prog.bucket, sizeof(e->prog.bucket), "%s", bucket ? bucket : "");
    snprintf(e->prog.key, sizeof(e->prog.key), "%s", key ? key : "");
    pthread_mutex_unlock(&e->mu);
}

int strata_ilm_create(const struct strata_ilm_opts *opts, struct strata_ilm **out)
{
    *out = NULL;
    if (!opts || !opts->meta || !opts->tags_decode_cb || opts->interval_s == 0 ||
        (opts->nsets && !opts->sets))
        return STRATA_EINVAL;
    struct strata_ilm *e = calloc(1, sizeof(*e));
    if (!e)
        return STRATA_ENOMEM;
    e->o = *opts;
    atomic_init(&e->stop, false);
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->lease_mu, NULL);
    atomic_init(&e->lease_held, false);
    e->lease_every_ms = STRATA_LEASE_RENEW_MS;
    pthread_mutex_init(&e->pass_mu, NULL);
    for (int l = 0; l < STRATA_ILM_LANES; l++)
        pthread_mutex_init(&e->due_mu[l], NULL);
    pthread_rwlock_init(&e->move_rw, NULL);
    pthread_mutex_init(&e->retry_mu, NULL);
    atomic_init(&e->mover_running, false);
    pthread_cond_init(&e->cv, NULL);
    strata_ilm__budget_init(&e->due_budget, opts->due_rate);
    strata_ilm__budget_init(&e->heal_budget, opts->heal_rate);
    strata_ilm__budget_init(&e->move_budget, (uint64_t)opts->move_mbps << 20);
    *out = e;
    return 0;
}

int strata_ilm_start(struct strata_ilm *e)
{
    if (e->running)
        return STRATA_EBUSY;
    atomic_store(&e->stop, false);
    /* The mover first, so the first pass already hands its moves over;
     * without one the scanner thread moves, as a drain called directly
     * does. */
    if (strata_ilm__mover_start(e) != 0)
        strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "no mover thread: moves run on the scanner");
    if (pthread_create(&e->thr, NULL, thread_main, e) != 0) {
        pthread_mutex_lock(&e->mu);
        atomic_store(&e->stop, true);
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        strata_ilm__mover_join(e);
        return STRATA_ENOMEM;
    }
    e->running = true;
    return 0;
}

void strata_ilm_stop(struct strata_ilm *e, bool wait)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    atomic_store(&e->stop, true);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (wait && e->running) {
        pthread_join(e->thr, NULL);
        strata_ilm__mover_join(e);
        e->running = false;
    }
    if (wait)
        strata_ilm__lease_release(e);
}

void strata_ilm_destroy(struct strata_ilm *e)
{
    if (!e)
        return;
    strata_ilm_stop(e, true);
    strata_ilm__due_forget(e);
    strata_ilm__retry_forget(e);
    strata_meta_orphans_free(e->orphans);
    for (int l = 0; l < STRATA_ILM_LANES; l++)
        pthread_mutex_destroy(&e->due_mu[l]);
    pthread_rwlock_destroy(&e->move_rw);
    pthread_mutex_destroy(&e->retry_mu);
    strata_ilm__budget_fini(&e->due_budget);
    strata_ilm__budget_fini(&e->heal_budget);
    strata_ilm__budget_fini(&e->move_budget);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->pass_mu);
    pthread_mutex_destroy(&e->lease_mu);
    free(e);
}

void strata_ilm_kick(struct strata_ilm *e)
{
    pthread_mutex_lock(&e->mu);
    e->kick = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void strata_ilm_stats_get(struct strata_ilm *e, struct strata_ilm_stats *last,
                          struct strata_ilm_stats *total)
{
    pthread_mutex_lock(&e->mu);
    if (last)
        *last = e->last;
    if (total)
        *total = e->total;
    pthread_mutex_unlock(&e->mu);
}
