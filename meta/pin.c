/*
 * pin.c - readers' pins on versions, and the deletion of replaced or
 * deleted data deferred until the last reader of it is done.
 *
 * A GET opens its version's data lazily: shard files when a stripe is
 * first read, a multipart object's parts (and their part-table chunks) as
 * the read reaches them.  An overwrite or delete that commits meanwhile
 * must not pull those files from under the reader, who has answered 200
 * already.  So strata_obj_get_open pins the version (set, bucket, key,
 * sort key) and strata_meta__drop parks the drop of a pinned version on
 * its pin; the last strata_obj_get_close runs it.
 *
 * The lookup and the pin are not atomic: a drop may run after the lookup
 * found the version and before the pin exists.  Each key stripe (the key
 * lock's) has a drop generation that every drop of one of its keys bumps
 * under pin_mu; a reader notes the generation before its lookup and pins
 * only if it is unchanged, else looks up again.  A drop that bumped it
 * before the note had committed its records before the lookup began, so
 * that lookup saw the new state.
 *
 * Crash safety: a parked drop lives only in memory.  A crash while one is
 * parked leaves data (and, for multipart versions, 'T' part-table records)
 * that no version record refers to any more; the scanner's orphan reclaim
 * removes them, as it does for a crash between a commit and its drop.
 *
 * Threads: any.  pin_mu guards the table and the generations; the drop
 * itself runs without it, on the committing thread or on the thread that
 * released the last pin.
 */
#include "meta_internal.h"

#include <stdlib.h>
#include <string.h>

#include "strata/assert.h"

struct meta_pin {
    struct meta_pin *next;
    uint32_t hash; /* strata_meta__key_hash of bucket/key */
    unsigned set;
    unsigned refs;
    uint8_t sk[SORTKEY_LEN];
    bool parked; /* drop is to run when refs reaches 0 */
    struct meta_drop drop;
    bool iparked; /* a transition's intent resolution, likewise (its own slot:
                     the version may also be deleted while read) */
    struct meta_drop idrop;
    const char *key;  /* into names */
    char names[];     /* bucket NUL key NUL */
};

static struct meta_pin **slot(struct strata_meta *m, uint32_t hash)
{
    return &m->pins[hash % META_PIN_SLOTS];
}

static struct meta_pin *find(struct strata_meta *m, uint32_t hash, unsigned set,
                             const char *bucket, const char *key, const uint8_t *sk)
{
    for (struct meta_pin *p = *slot(m, hash); p; p = p->next)
        if (p->hash == hash && p->set == set && memcmp(p->sk, sk, SORTKEY_LEN) == 0 &&
            strcmp(p->names, bucket) == 0 && strcmp(p->key, key) == 0)
            return p;
    return NULL;
}

uint64_t strata_meta__pin_gen(struct strata_meta *m, const char *bucket, const char *key)
{
    uint32_t h = strata_meta__key_hash(bucket, key);
    pthread_mutex_lock(&m->pin_mu);
    uint64_t g = m->drop_gen[h % META_LOCK_STRIPES];
    pthread_mutex_unlock(&m->pin_mu);
    return g;
}

int strata_meta__pin(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                     const uint8_t sk[SORTKEY_LEN], uint64_t gen, struct meta_pin **out)
{
    *out = NULL;
    uint32_t h = strata_meta__key_hash(bucket, key);
    size_t bl = strlen(bucket) + 1, kl = strlen(key) + 1;
    /* Allocated before the lock, freed again when the version is pinned
     * already: the table lock is never held across malloc. */
    struct meta_pin *n = calloc(1, sizeof(*n) + bl + kl);
    if (!n)
        return STRATA_ENOMEM;
    pthread_mutex_lock(&m->pin_mu);
    if (m->drop_gen[h % META_LOCK_STRIPES] != gen) {
        pthread_mutex_unlock(&m->pin_mu);
        free(n);
        return STRATA_EBUSY;
    }
    struct meta_pin *p = find(m, h, set, bucket, key, sk);
    if (!p) {
        p = n;
        n = NULL;
        p->hash = h;
        p->set = set;
        memcpy(p->sk, sk, SORTKEY_LEN);
        memcpy(p->names, bucket, bl);
        memcpy(p->names + bl, key, kl);
        p->key = p->names + bl;
        p->next = *slot(m, h);
        *slot(m, h) = p;
    }
    p->refs++;
    pthread_mutex_unlock(&m->pin_mu);
    free(n);
    *out = p;
    return 0;
}

void strata_meta__unpin(struct strata_meta *m, struct meta_pin *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&m->pin_mu);
    STRATA_ASSERT(p->refs > 0);
    bool last = --p->refs == 0;
    if (last) {
        struct meta_pin **pp = slot(m, p->hash);
        while (*pp != p)
            pp = &(*pp)->next;
        *pp = p->next;
    }
    pthread_mutex_unlock(&m->pin_mu);
    if (!last)
        return;
    if (p->parked)
        strata_meta__drop_now(m, p->set, p->names, p->key, &p->drop);
    if (p->iparked)
        strata_meta__drop_now(m, p->set, p->names, p->key, &p->idrop);
    free(p);
}

bool strata_meta__drop_park(struct strata_meta *m, unsigned set, const char *bucket,
                            const char *key, const struct meta_drop *drop)
{
    uint32_t h = strata_meta__key_hash(bucket, key);
    pthread_mutex_lock(&m->pin_mu);
    m->drop_gen[h % META_LOCK_STRIPES]++;
    struct meta_pin *p = find(m, h, set, bucket, key, drop->sk);
    if (p && drop->intent) {
        p->iparked = true;
        p->idrop = *drop;
    } else if (p) {
        p->parked = true;
        p->drop = *drop;
    }
    pthread_mutex_unlock(&m->pin_mu);
    return p != NULL;
}

void strata_meta__pins_fini(struct strata_meta *m)
{
    /* Every get handle must be closed before the meta handle; a pin left
     * over is a caller bug, and its parked drop is left to the scanner. */
    for (unsigned i = 0; i < META_PIN_SLOTS; i++) {
        while (m->pins[i]) {
            struct meta_pin *p = m->pins[i];
            m->pins[i] = p->next;
            free(p);
        }
    }
}

void strata_meta__pins_parked_data(struct strata_meta *m,
                                   void (*cb)(const uint8_t id[STRATA_DATA_ID_LEN], void *ud),
                                   void *ud)
{
    pthread_mutex_lock(&m->pin_mu);
    for (unsigned i = 0; i < META_PIN_SLOTS; i++)
        for (struct meta_pin *p = m->pins[i]; p; p = p->next)
            if (p->parked && p->drop.has_data_id)
                cb(p->drop.data_id, ud);
    pthread_mutex_unlock(&m->pin_mu);
}

bool strata_meta__pinned(struct strata_meta *m, unsigned set, const char *bucket,
                         const char *key, const uint8_t sk[SORTKEY_LEN])
{
    uint32_t h = strata_meta__key_hash(bucket, key);
    pthread_mutex_lock(&m->pin_mu);
    bool pinned = find(m, h, set, bucket, key, sk) != NULL;
    pthread_mutex_unlock(&m->pin_mu);
    return pinned;
}
