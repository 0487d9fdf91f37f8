/*
 * lock.c - Object Lock (WORM) rules: which lock a new version gets, when a
 * version may be removed or replaced, and retention / legal-hold changes.
 *
 * Invariants:
 * - Every retention is judged by the retention clock
 *   (strata_meta_lock_now_ms), never by the wall clock.
 * - A version whose retention has not expired, or whose legal hold is on,
 *   is never removed or replaced through meta/: the decide functions of
 *   object.c ask strata_meta__lock_may_remove (pure: it returns the audit
 *   entry of a refusal or bypass) before they edit a version away.
 *   Delete markers carry no lock.
 * - COMPLIANCE is extend-only for everyone; GOVERNANCE yields only to the
 *   bypass flag of the actor (the server sets it for permitted users).
 * - Every lock change and every refusal goes to the audit log; a change is
 *   committed only after its audit entry is durable.
 * Retention and legal-hold changes are a key_txn rewrite of the version
 * record (store.h), as tag rewrites are, so a crash leaves the old or the
 * new state; key_txn appends the change's audit entry before the apply.
 * Threads: any caller thread.
 */
#include "meta_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *mode_name(int mode)
{
    switch (mode) {
    case STRATA_LOCK_GOVERNANCE:
        return "GOVERNANCE";
    case STRATA_LOCK_COMPLIANCE:
        return "COMPLIANCE";
    default:
        return "NONE";
    }
}

/* "2027-01-01T00:00:00.000Z" for the audit log. */
static const char *iso(int64_t ms, char out[32])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(out, 32, "%lld", (long long)ms);
        return out;
    }
    char base[24];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%s.%03dZ", base, (int)(((ms % 1000) + 1000) % 1000));
    return out;
}

bool strata_obj_lock_active(const struct strata_obj_lock *lock, int64_t now_ms)
{
    return lock->legal_hold || (lock->mode != STRATA_LOCK_NONE && lock->until_ms > now_ms);
}

static void vid_of(const uint8_t *sk, const struct meta_rec *r, char out[STRATA_VERSION_ID_MAX + 1])
{
    if (r->flags & REC_F_NULL)
        snprintf(out, STRATA_VERSION_ID_MAX + 1, "null");
    else
        strata_meta__vid_format(sk, out);
}

int strata_meta__lock_check_req(struct strata_meta *m, const struct strata_bucket_info *b,
                                const struct strata_obj_lock *req)
{
    if (!req->mode && !req->legal_hold_set)
        return 0;
    if (!b->object_lock)
        return STRATA_EINVAL; /* InvalidRequest: the bucket has no object lock */
    if (req->mode < STRATA_LOCK_NONE || req->mode > STRATA_LOCK_COMPLIANCE)
        return STRATA_EINVAL;
    if (req->mode && req->until_ms <= strata_meta_lock_now_ms(m))
        return STRATA_EINVAL; /* a retain-until date must be in the future */
    return 0;
}

int strata_meta__lock_for_new(struct strata_meta *m, const struct strata_bucket_info *b,
                              const struct strata_obj_lock *req, struct strata_obj_lock *out)
{
    static const struct strata_obj_lock none;
    if (!req)
        req = &none;
    int rc = strata_meta__lock_check_req(m, b, req);
    if (rc)
        return rc;
    *out = *req;
    if (!out->mode && b->object_lock && b->lock_mode) {
        /* Default retention counts from the version's creation: days of
         * 24 h, or calendar years (Feb 29 + 1 year is Mar 1). */
        int64_t now = strata_meta_lock_now_ms(m);
        out->mode = b->lock_mode;
        out->until_ms = now + (int64_t)b->lock_days * 86400000LL;
        if (!b->lock_days) {
            time_t t = (time_t)(now / 1000);
            struct tm tm;
            if (!gmtime_r(&t, &tm))
                return STRATA_EINTERNAL;
            tm.tm_year += (int)b->lock_years;
            out->until_ms = (int64_t)timegm(&tm) * 1000 + now % 1000;
        }
    }
    return 0;
}

/* The entry of a lock decision on the version (sk, r). */
static void audit_of(struct strata_meta__key_audit *a, const struct strata_lock_actor *actor,
                     const uint8_t *sk, const struct meta_rec *r, const char *action,
                     const char *outcome)
{
    a->any = true;
    a->user = actor ? actor->user : NULL;
    vid_of(sk, r, a->version_id);
    a->action = action;
    a->outcome = outcome;
}

int strata_meta__lock_may_remove(const uint8_t *sk, const struct meta_rec *r,
                                 const struct strata_lock_actor *actor, const char *action,
                                 int64_t now, struct strata_meta__key_audit *a)
{
    if (r->flags & REC_F_DELETE_MARKER)
        return 0;
    if (!strata_obj_lock_active(&r->lock, now))
        return 0;
    bool active_ret = r->lock.mode != STRATA_LOCK_NONE && r->lock.until_ms > now;
    char d1[32];
    snprintf(a->detail, sizeof(a->detail), "mode=%s until=%s legal_hold=%s",
             mode_name(active_ret ? r->lock.mode : STRATA_LOCK_NONE), iso(r->lock.until_ms, d1),
             r->lock.legal_hold ? "ON" : "OFF");
    if (!r->lock.legal_hold && r->lock.mode == STRATA_LOCK_GOVERNANCE && actor &&
        actor->bypass_governance) {
        /* The bypass is itself a lock decision: audited, and the removal
         * refused when the audit entry cannot be made durable (key_txn). */
        audit_of(a, actor, sk, r, action, "allowed-bypass");
        return 0;
    }
    audit_of(a, actor, sk, r, action, "denied");
    return STRATA_ELOCKED;
}

/* Retention change rules; 0 when allowed, STRATA_ELOCKED otherwise. */
static int retention_rule(const struct strata_obj_lock *cur, int mode, int64_t until_ms,
                          int64_t now, bool bypass)
{
    if (cur->mode == STRATA_LOCK_NONE || cur->until_ms <= now)
        return 0; /* no retention in force: anything goes */
    bool extends = mode != STRATA_LOCK_NONE && until_ms >= cur->until_ms;
    if (cur->mode == STRATA_LOCK_COMPLIANCE)
        return extends && mode == STRATA_LOCK_COMPLIANCE ? 0 : STRATA_ELOCKED;
    /* GOVERNANCE: extending (also into COMPLIANCE) needs nothing; anything
     * else needs the bypass. */
    return extends || bypass ? 0 : STRATA_ELOCKED;
}

struct lock_change {
    struct strata_meta *m;
    const char *bucket, *key;
    const struct strata_lock_actor *actor;
    bool is_hold;
    bool hold_on;
    int mode;
    int64_t until_ms;
    const char *version_id;
    char vid[STRATA_VERSION_ID_MAX + 1]; /* of the version decided on */
};

/* The change's decide: the rule on the version's lock, and the audit
 * entry every lock change and refusal gets (key_txn appends it before the
 * apply, so a change is committed only once its entry is durable). */
static int change_decide(void *ud, const struct strata_meta__key_view *v,
                         struct strata_meta__key_edit *e)
{
    struct lock_change *c = ud;
    int rc = strata_meta__rewrite_begin(v, c->version_id, e, c->vid);
    if (rc)
        return rc;
    const struct meta_rec *cur = v->version.rec;
    struct strata_obj_lock *lk = &e->rw.lock;
    const char *action = c->is_hold ? "PutObjectLegalHold" : "PutObjectRetention";
    char *detail = e->audit.detail;
    size_t cap = sizeof(e->audit.detail);
    if (c->is_hold) {
        snprintf(detail, cap, "legal_hold %s -> %s", cur->lock.legal_hold ? "ON" : "OFF",
                 c->hold_on ? "ON" : "OFF");
        lk->legal_hold = c->hold_on;
        lk->legal_hold_set = true;
    } else {
        char d1[32], d2[32];
        snprintf(detail, cap, "mode=%s until=%s -> mode=%s until=%s%s", mode_name(cur->lock.mode),
                 iso(cur->lock.until_ms, d1), mode_name(c->mode), iso(c->until_ms, d2),
                 c->actor && c->actor->bypass_governance ? " bypass" : "");
        rc = retention_rule(&cur->lock, c->mode, c->until_ms, v->lock_now_ms,
                            c->actor && c->actor->bypass_governance);
        lk->mode = c->mode;
        lk->until_ms = c->mode ? c->until_ms : 0;
    }
    audit_of(&e->audit, c->actor, v->version.sk, cur, action, rc ? "denied" : "allowed");
    return rc;
}

static int lock_change(struct lock_change *c, const char *version_id,
                       char vid_out[STRATA_VERSION_ID_MAX + 1])
{
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(c->m, c->bucket, &b);
    if (rc)
        return rc;
    if (!b.object_lock)
        return STRATA_EINVAL;
    if (!c->bucket || !*c->bucket || strlen(c->bucket) > STRATA_BUCKET_NAME_MAX)
        return STRATA_ENOTFOUND;
    if (!c->key || !*c->key || strlen(c->key) > STRATA_KEY_MAX)
        return STRATA_EINVAL;
    c->version_id = version_id;
    struct strata_meta__key_txn t = {
        .bucket = c->bucket,
        .key = c->key,
        .want = STRATA_META__KEY_VERSION,
        .want_copies = true,
        .version_id = version_id,
        .decide = change_decide,
        .ud = c,
    };
    rc = c->m->store->key_txn(c->m, &t);
    if (rc == 0 && vid_out)
        memcpy(vid_out, c->vid, sizeof(c->vid));
    return rc;
}

int strata_obj_retention_put(struct strata_meta *m, const char *bucket, const char *key,
                             const char *version_id, int mode, int64_t until_ms,
                             const struct strata_lock_actor *actor,
                             char vid_out[STRATA_VERSION_ID_MAX + 1])
{
    if (mode < STRATA_LOCK_NONE || mode > STRATA_LOCK_COMPLIANCE ||
        (mode && until_ms <= strata_meta_lock_now_ms(m)))
        return STRATA_EINVAL;
    struct lock_change c = {m, bucket, key, actor, false, false, mode, until_ms, NULL, ""};
    return lock_change(&c, version_id, vid_out);
}

int strata_obj_legal_hold_put(struct strata_meta *m, const char *bucket, const char *key,
                              const char *version_id, bool on,
                              const struct strata_lock_actor *actor,
                              char vid_out[STRATA_VERSION_ID_MAX + 1])
{
    struct lock_change c = {m, bucket, key, actor, true, on, 0, 0, NULL, ""};
    return lock_change(&c, version_id, vid_out);
}
