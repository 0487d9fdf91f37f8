/*
 * repl_order.c - what one key still owes a target before a change of it
 * is sent (repl_internal.h), read from the key's versions in the index:
 * their order is the order they committed in, whichever gateway
 * committed them, where the queue's order is only the order they were
 * pushed in (README.md, "Two gateways on one RADOS cluster").
 */
#include "repl_internal.h"

#include "repl.h"
#include "repl_hooks.h"
#include "srv.h"

#include <stdlib.h>
#include <string.h>

/* Entries of the key listed at a time (and of those newer than a change,
 * how many nearest it are read), and at most listed per change (newer
 * than it, it, and older down to the first the target has). */
#define TURN_PAGE 1000
#define TURN_MAX 100000

struct page {
    const char *key;
    struct strata_repl__owed *e;
    size_t n;
};

static int page_cb(const struct strata_list_entry *le, void *ud)
{
    struct page *p = ud;
    if (le->is_prefix || strcmp(le->key, p->key) != 0)
        return 1; /* past the key: the rest of the prefix */
    if (p->n < TURN_PAGE) {
        snprintf(p->e[p->n].vid, sizeof(p->e[p->n].vid), "%s", le->info->version_id);
        p->e[p->n].marker = le->info->delete_marker;
        p->n++;
    }
    return 0;
}

int strata_repl__owed_add(struct strata_repl__owed_list *o, const char *vid, bool marker)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        struct strata_repl__owed *e = realloc(o->e, cap * sizeof(*e));
        if (!e)
            return STRATA_ENOMEM;
        o->e = e;
        o->cap = cap;
    }
    snprintf(o->e[o->n].vid, sizeof(o->e[o->n].vid), "%s", vid);
    o->e[o->n++].marker = marker;
    return 0;
}

/* Whose entries a turn looks at: those a rule sends to target ti (any:
 * every one); their state is ti's own (repl_status.c). */
struct whose {
    struct strata_repl *rp;
    int ti;
    struct strata_meta *m;
    bool any;
};

/* The replication state of entry vid of key (a delete marker's too) for
 * w's target: 1 owed (PENDING, or none: a change queued before markers
 * had one), 0 done (COMPLETED, FAILED), 2 neither (a REPLICA, or not sent
 * to w's target unless w->any), -1 gone, or -2 when the index cannot be
 * read now. */
/* Whether a rule sends entry in of key to w's target. */
static bool sent_to(const struct whose *w, const char *bucket, const char *key,
                    const struct strata_obj_info *in)
{
    bool sel[STRATA_REPL_TARGETS_MAX];
    return strata_repl__targets_of(w->rp, w->m, bucket, key, in->tags, in->tags_len,
                                   in->delete_marker, sel) > 0 &&
           sel[w->ti];
}

static int status_of(const struct whose *w, struct strata_meta *m, const char *bucket,
                     const char *key, const char *vid, bool none_owed)
{
    struct strata_obj_info in;
    int rc = strata_obj_head(m, bucket, key, vid, &in);
    int out;
    if (rc && rc != STRATA_EMETHOD) {
        out = rc == STRATA_ENOTFOUND ? -1 : -2;
    } else if (!w->any && !sent_to(w, bucket, key, &in)) {
        out = 2;
    } else {
        char buf[32];
        const char *st = strata_repl__status_own(&in, strata_repl__target_name(w->rp, w->ti), buf,
                                                 sizeof(buf));
        out = !st                          ? (none_owed ? 1 : 2)
              : strcmp(st, "PENDING") == 0 ? 1
              : strcmp(st, "REPLICA") == 0 ? 2
                                           : 0;
    }
    strata_obj_info_fini(&in);
    return out;
}

int strata_repl__turn_read(struct strata_repl *rp, int ti, struct strata_meta *m,
                           const char *bucket, const char *key, const char *vid,
                           struct strata_repl__turn *t)
{
    memset(t, 0, sizeof(*t));
    const struct whose w = {rp, ti, m, false};
    struct page p = {key, calloc(TURN_PAGE, sizeof(*p.e)), 0};
    /* The newer entries nearest vid, a ring of TURN_PAGE (listed, not
     * read: only those are looked at). */
    struct strata_repl__owed *ring = calloc(TURN_PAGE, sizeof(*ring));
    size_t newer = 0;
    struct strata_repl__owed_list o = {0}; /* older ones owed, newest first */
    if (!p.e || !ring) {
        free(p.e);
        free(ring);
        return STRATA_ENOMEM;
    }
    /* Page after page (each resumed at the last version listed), so a key
     * with more entries than a page is ordered too: down to vid, then the
     * older ones down to the first the target has, at most TURN_MAX. */
    enum { NEWER, OLDER, END } phase = NEWER;
    char last[STRATA_VERSION_ID_MAX + 1] = "";
    size_t looked = 0;
    bool more = true;
    int rc = 0;
    while (rc == 0 && more && phase != END && looked < TURN_MAX) {
        struct strata_list_opts lo = {.bucket = bucket, .prefix = key, .max_keys = TURN_PAGE,
                                      .versions = true, .start_after = last[0] ? key : NULL,
                                      .version_id_marker = last[0] ? last : NULL};
        struct strata_list_result res;
        p.n = 0;
        rc = strata_obj_list(m, &lo, page_cb, &p, &res);
        more = rc == 0 && res.truncated; /* rc 1: past the key */
        rc = rc == 1 ? 0 : rc;
        looked += p.n;
        if (p.n)
            snprintf(last, sizeof(last), "%s", p.e[p.n - 1].vid);
        for (size_t j = 0; rc == 0 && j < p.n && phase != END; j++) {
            if (phase == NEWER) {
                if (strcmp(p.e[j].vid, vid) == 0)
                    phase = OLDER;
                else
                    ring[newer++ % TURN_PAGE] = p.e[j];
                continue;
            }
            int s = status_of(&w, m, bucket, key, p.e[j].vid, false);
            rc = s == -2 ? STRATA_EIO : s == 1 ? strata_repl__owed_add(&o, p.e[j].vid,
                                                                       p.e[j].marker) : 0;
            if (s == 0)
                phase = END;
        }
    }
    free(p.e);
    /* Newer entries, nearest first: one the target has means vid can no
     * longer arrive in its place. */
    for (size_t c = 0; rc == 0 && c < newer && c < TURN_PAGE && !t->superseded; c++) {
        const struct strata_repl__owed *e = &ring[(newer - 1 - c) % TURN_PAGE];
        int s = status_of(&w, m, bucket, key, e->vid, false);
        rc = s == -2 ? STRATA_EIO : 0;
        t->superseded = s == 0;
        t->newer_done = *e;
    }
    free(ring);
    if (rc == 0) {
        const struct whose any = {rp, ti, m, true};
        t->self = status_of(&any, m, bucket, key, vid, true);
        rc = t->self == -2 ? STRATA_EIO : 0;
    }
    if (rc || t->superseded) {
        free(o.e);
        return rc;
    }
    /* Those still owed go first, oldest first. */
    for (size_t a = 0; a < o.n / 2; a++) {
        struct strata_repl__owed x = o.e[a];
        o.e[a] = o.e[o.n - 1 - a];
        o.e[o.n - 1 - a] = x;
    }
    t->e = o.e;
    t->n = o.n;
    return 0;
}

void strata_repl__turn_fini(struct strata_repl__turn *t)
{
    free(t->e);
    t->e = NULL;
    t->n = 0;
}
