/*
 * orphan.c - orphan reclaim of data/ shard files (contract in meta.h).
 * Threads: one caller at a time per state (the scanner's thread); it runs
 * beside puts, deletes and heal, which is why a data id must be found
 * unreferenced in two rounds, and why only files older than the age count.
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>

struct cand {
    uint8_t id[STRATA_DATA_ID_LEN];
    unsigned set;
    bool ref;
};

struct local_orphans {
    struct strata_orphans base; /* release: local_orphans_free */
    struct cand *v;             /* sorted by (id, set) */
    size_t n;
};

struct clist {
    struct cand *v;
    size_t n, cap;
    unsigned set;
    int oom;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    int c = memcmp(x->id, y->id, STRATA_DATA_ID_LEN);
    return c ? c : (x->set > y->set) - (x->set < y->set);
}

static int list_cb(const uint8_t id[STRATA_DATA_ID_LEN], void *ud)
{
    struct clist *c = ud;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct cand *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return c->oom = STRATA_ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    struct cand *e = &c->v[c->n++];
    memcpy(e->id, id, STRATA_DATA_ID_LEN);
    e->set = c->set;
    e->ref = false;
    return 0;
}

/* Mark every candidate with this id (any set: a record may point across). */
static void mark(struct clist *c, const uint8_t id[STRATA_DATA_ID_LEN])
{
    struct cand key;
    memcpy(key.id, id, STRATA_DATA_ID_LEN);
    key.set = 0;
    size_t lo = 0, hi = c->n;
    while (lo < hi) { /* first entry >= (id, 0) */
        size_t mid = (lo + hi) / 2;
        if (cand_cmp(&c->v[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < c->n && memcmp(c->v[lo].id, id, STRATA_DATA_ID_LEN) == 0; lo++)
        c->v[lo].ref = true;
}

static void mark_cb(const uint8_t id[STRATA_DATA_ID_LEN], void *ud)
{
    mark(ud, id);
}

/* Every data id a record of set s refers to. */
static int mark_set(struct strata_meta *m, unsigned s, struct clist *c, struct meta_part *parts)
{
    struct meta_merge mg;
    int rc = strata_meta__merge_open(&mg, m, &s, 1, MERGE_MAINTENANCE, "U", 1); /* 'O' 'P' 'R' 'T' < 'U' */
    if (rc)
        return rc;
    strata_meta__merge_seek(&mg, "O", 1);
    const char *k, *v;
    size_t kl, vl;
    while (strata_meta__merge_cur(&mg, &k, &kl, &v, &vl)) {
        if (k[0] == 'O' && !strata_meta__is_tomb(v, vl)) {
            struct meta_rec r;
            if (strata_meta__rec_decode(v, vl, false, &r) == 0) {
                if (r.has_data_id)
                    mark(c, r.data_id);
                strata_meta__rec_fini(&r);
            }
        } else if (k[0] == 'P') {
            struct meta_part p;
            if (strata_meta__part_decode(v, vl, &p, NULL, NULL) == 0 && p.has_data_id)
                mark(c, p.data_id);
        } else if (k[0] == 'R') {
            /* Restored copies on the hot tier, from their recording on. */
            strata_meta__restore_refs(v, vl, mark_cb, c);
        } else if (k[0] == 'T') {
            size_t n = 0;
            if (strata_meta__ptab_decode(v, vl, parts, MP_CHUNK_PARTS, &n) == 0)
                for (size_t i = 0; i < n; i++)
                    if (parts[i].has_data_id)
                        mark(c, parts[i].data_id);
        }
        strata_meta__merge_next(&mg);
    }
    strata_meta__merge_close(&mg);
    return 0;
}

/* Every data id a record of any set refers to (a record may point across
 * sets), read on every online drive: a record only a minority holds still
 * protects its data. */
static int mark_referenced(struct strata_meta *m, struct clist *c)
{
    struct meta_part *parts = malloc(MP_CHUNK_PARTS * sizeof(*parts));
    if (!parts)
        return STRATA_ENOMEM;
    int rc = 0;
    for (unsigned s = 0; s < m->nsets && rc == 0; s++)
        rc = mark_set(m, s, c, parts);
    free(parts);
    return rc;
}

static bool was_candidate(const struct local_orphans *prev, const struct cand *e)
{
    return prev && prev->n &&
           bsearch(e, prev->v, prev->n, sizeof(*prev->v), cand_cmp) != NULL;
}

static void local_orphans_free(struct strata_orphans *state)
{
    struct local_orphans *o = (struct local_orphans *)state;
    free(o->v);
    free(o);
}

int strata_meta__local_orphan_round(struct strata_meta *m, struct strata_orphans **state,
                                    unsigned age_s, uint64_t *removed)
{
    *removed = 0;
    /* Every committed record must be on some drive read below: a write
     * quorum of drives holds it, so N - Wq + 1 online drives suffice. */
    for (unsigned s = 0; s < m->nsets; s++) {
        unsigned online = 0;
        for (unsigned d = 0; d < m->sets[s].n; d++)
            online += m->sets[s].drives[d].db != NULL;
        if (online < m->sets[s].n - strata_set_write_quorum(m->sets[s].set) + 1)
            return STRATA_EQUORUM;
    }
    struct clist c = {0};
    int rc = 0;
    for (unsigned s = 0; s < m->nsets && rc == 0; s++) {
        c.set = s;
        rc = strata_ec_data_list(m->sets[s].set, age_s, list_cb, &c);
    }
    if (rc == 0 && c.n) {
        qsort(c.v, c.n, sizeof(*c.v), cand_cmp);
        size_t w = 0; /* one entry per (id, set): several drives list it */
        for (size_t i = 0; i < c.n; i++)
            if (w == 0 || cand_cmp(&c.v[w - 1], &c.v[i]) != 0)
                c.v[w++] = c.v[i];
        c.n = w;
        rc = mark_referenced(m, &c);
        /* Readers still streaming a deleted version hold its data. */
        strata_meta__pins_parked_data(m, mark_cb, &c);
    }
    if (rc) {
        free(c.v);
        return rc;
    }
    struct local_orphans *prev = (struct local_orphans *)*state;
    size_t keep = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (c.v[i].ref)
            continue;
        if (was_candidate(prev, &c.v[i])) {
            if (strata_ec_delete(m->sets[c.v[i].set].set, c.v[i].id) == 0) {
                (*removed)++;
                continue;
            }
        }
        c.v[keep++] = c.v[i]; /* unreferenced once: deleted next round if still so */
    }
    if (!prev) {
        prev = calloc(1, sizeof(*prev));
        if (!prev) {
            free(c.v);
            return STRATA_ENOMEM;
        }
        prev->base.release = local_orphans_free;
        *state = &prev->base;
    }
    free(prev->v);
    prev->v = c.v;
    prev->n = keep;
    return 0;
}
