/*
 * walk.c - the walk of one bucket's versions and uploads that applies its
 * lifecycle rules: a page at a time (newest first per key), each version
 * decided (a current version due for Expiration is deleted without a
 * version id: meta adds a delete marker on a versioned bucket, removes
 * the object on an unversioned one; a noncurrent version due for
 * NoncurrentVersionExpiration, beyond NewerNoncurrentVersions, is removed
 * by version id; a delete marker that is a key's only version goes when
 * an ExpiredObjectDeleteMarker rule matches; a version due for a
 * Transition is moved), incomplete multipart uploads older than
 * DaysAfterInitiation aborted, the page's decisions carried out after it
 * was listed.  The full pass (scanner.c) walks whole buckets, paced, and
 * lets its host run the drains between pages (host_drains); the due
 * drains and the mover walk one key (strata_ilm__walk_key).
 *
 * Object Lock is enforced by meta: a refused delete (STRATA_ELOCKED) is
 * counted as skipped-locked and the walk moves on.
 *
 * Threads: whichever thread walks (scanner, due drain worker, mover).
 */
#include "ilm_internal.h"
#include "ilm_transition.h"

#include <stdlib.h>
#include <string.h>

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

/* Keep the pass at rate_objs entries per second; true when asked to stop.
 * A pass that fell behind (a long drain, a slow move, a slow listing)
 * catches up at most PACE_CREDIT_MS of its schedule: a pass that caught
 * up minutes at full speed raised foreground p99 for as long. */
static bool pace(struct walk *w)
{
    if (!strata_ilm__lease_ok(w->e))
        return true; /* another gateway runs the lifecycle work now */
    int64_t t = now_ms();
    w->e->host_drains(w->e);
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
        e->host_drains(e);
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
                             w->bucket, a->key, a->kind == ACT_EXPIRE ? res.version_id : a->id,
                             res.seq_ns);
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

void strata_ilm__walk_bucket(struct strata_ilm *e, const char *bucket, struct strata_ilm_stats *st,
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
