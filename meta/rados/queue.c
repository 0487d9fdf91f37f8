/*
 * queue.c - message queues shared by the gateways (strata_meta_queue_*,
 * RADOS.md "Queues"): object q.NAME of the meta pool, one omap key per
 * message.  A key is 16 hex digits of a microsecond stamp (this process's
 * wall clock, never repeated nor going back), '.', and the gateway id, so
 * keys of one gateway sort in push order and two gateways never collide;
 * the value is the message.  A push is one write op (durable on the
 * pool's replicas when it returns); a delivered message's key is removed.
 * The right to deliver is a cls_lock on q.NAME itself (lease_ctl.c).
 */
#include "rados.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OID_MAX    (STRATA_META_QUEUE_NAME_MAX + 3)
#define COUNT_PAGE 1000

static void queue_oid(char oid[OID_MAX], const char *name)
{
    snprintf(oid, OID_MAX, "q.%s", name);
}

/* A stamp after every earlier one of this process. */
static uint64_t stamp_us(void)
{
    static _Atomic uint64_t last;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
    uint64_t prev = atomic_load(&last);
    for (;;) {
        uint64_t next = now > prev ? now : prev + 1;
        if (atomic_compare_exchange_weak(&last, &prev, next))
            return next;
    }
}

int strata_meta__rados_queue_push(struct strata_meta *m, const char *name, const void *msg,
                                  size_t len)
{
    struct meta_rados *r = meta_rados_of(m);
    char oid[OID_MAX], key[STRATA_META_QUEUE_KEY_MAX];
    queue_oid(oid, name);
    snprintf(key, sizeof(key), "%016" PRIx64 ".%s", stamp_us(), r->gw);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    const char *k = key, *v = msg;
    rados_write_op_omap_set(op, &k, &v, &len, 1);
    int rc = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    return strata_meta__rados_err(rc);
}

struct queue_page {
    struct strata_meta_queue_ent *out;
    size_t *n, max;
};

static int queue_take(void *ud, const char *k, const char *v, size_t vl)
{
    struct queue_page *p = ud;
    size_t kl = strlen(k);
    if (kl >= STRATA_META_QUEUE_KEY_MAX)
        return 0; /* not a key push wrote */
    struct strata_meta_queue_ent *e = &p->out[*p->n];
    if (!(e->msg = malloc(vl + 1)))
        return STRATA_ENOMEM;
    memcpy(e->key, k, kl + 1);
    memcpy(e->msg, v, vl);
    e->msg[vl] = 0;
    e->len = vl;
    return ++*p->n == p->max; /* stop once out is full */
}

int strata_meta__rados_queue_read(struct strata_meta *m, const char *name, const char *after,
                                  size_t max, struct strata_meta_queue_ent *out, size_t *n)
{
    struct meta_rados *r = meta_rados_of(m);
    char oid[OID_MAX], last[STRATA_META_QUEUE_KEY_MAX + 1];
    queue_oid(oid, name);
    if (*n >= max)
        return 0;
    struct queue_page p = {out, n, max};
    bool more;
    int rc = strata_meta__rados_page(r->meta, oid, after, "", (unsigned)max, queue_take, &p, last,
                                     sizeof(last), &more);
    if (rc == STRATA_ENOTFOUND)
        rc = 0; /* never pushed to: empty */
    if (rc) {
        strata_meta_queue_ents_fini(out, *n);
        *n = 0;
    }
    return rc;
}

int strata_meta__rados_queue_remove(struct strata_meta *m, const char *name,
                                    const char *const *keys, size_t n)
{
    struct meta_rados *r = meta_rados_of(m);
    char oid[OID_MAX];
    queue_oid(oid, name);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    /* Only while the queue exists: a remove never creates it. */
    rados_write_op_assert_exists(op);
    rados_write_op_omap_rm_keys(op, keys, n);
    int rc = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    return rc == -ENOENT ? 0 : strata_meta__rados_err(rc);
}

static int count_one(void *ud, const char *k, const char *v, size_t vl)
{
    (void)k;
    (void)v;
    (void)vl;
    ++*(uint64_t *)ud;
    return 0;
}

int strata_meta__rados_queue_count(struct strata_meta *m, const char *name, uint64_t upto,
                                   uint64_t *n)
{
    struct meta_rados *r = meta_rados_of(m);
    char oid[OID_MAX], after[STRATA_META_QUEUE_KEY_MAX] = "";
    queue_oid(oid, name);
    while (*n < upto) {
        uint64_t page = upto - *n < COUNT_PAGE ? upto - *n : COUNT_PAGE, got = 0;
        bool more;
        int rc = strata_meta__rados_key_page(r->meta, oid, after, (unsigned)page, count_one, &got,
                                             after, sizeof(after), &more);
        if (rc == STRATA_ENOTFOUND)
            return 0; /* never pushed to: empty */
        if (rc)
            return rc;
        *n += got;
        if (!more || got == 0)
            return 0;
    }
    return 0;
}

int strata_meta__rados_queue_lease(struct strata_meta *m, const char *name, enum strata_lease_op op)
{
    char oid[OID_MAX];
    queue_oid(oid, name);
    return strata_meta__rados_lock(meta_rados_of(m), oid, op);
}
