/*
 * notify_queue.c - the targets and their persistent queues (contract in
 * notify.h).  Each target is a kind's handle fed by one strata_pqueue
 * (server/pqueue.h) with one delivery thread, so that its events stay in
 * order, named after the target's ID: notify/ID.q and ID.ack on each of
 * the queue directories.  A kind with send_batch is fed batches.
 */
#include "notify.h"
#include "notify_internal.h"

#include "pqueue.h"
#include "sbuf.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct strata_notify_kind *const kinds[] = {
    &strata_notify_webhook, &strata_notify_redis, &strata_notify_nats,
    &strata_notify_amqp,    &strata_notify_mqtt,  &strata_notify_postgres};

struct target {
    char id[65];
    const struct strata_notify_kind *kind;
    void *h;
    struct strata_pqueue *q;
};

struct strata_notify {
    size_t n;
    size_t queue_max;
    struct target t[STRATA_NOTIFY_TARGETS_MAX];
};

_Atomic unsigned long long strata_notify__seq;

/* What /metrics shows; set while the daemon runs. */
static struct strata_notify *_Atomic active;

/* ID:KIND:ADDRESS split: the kind, or NULL with err set. */
static const struct strata_notify_kind *spec_split(const char *spec, char *id, size_t id_len,
                                                   const char **addr, char *err, size_t err_len)
{
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || !strata_pqueue_name_ok(spec, (size_t)(c1 - spec), 64) ||
        (size_t)(c1 - spec) >= id_len || !c2[1]) {
        snprintf(err, err_len, "--notify-target %s: want ID:KIND:ADDRESS, ID of letters, "
                               "digits, - and _", spec);
        return NULL;
    }
    memcpy(id, spec, (size_t)(c1 - spec));
    id[c1 - spec] = '\0';
    *addr = c2 + 1;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strlen(kinds[i]->name) == (size_t)(c2 - c1 - 1) &&
            strncmp(kinds[i]->name, c1 + 1, (size_t)(c2 - c1 - 1)) == 0)
            return kinds[i];
    snprintf(err, err_len, "--notify-target %s: unknown or unsupported KIND (this build: "
                           "webhook, redis, nats, amqp, mqtt, postgres)", spec);
    return NULL;
}

int strata_notify_spec_check(const char *spec, char *err, size_t err_len)
{
    char id[65];
    const char *addr;
    const struct strata_notify_kind *k = spec_split(spec, id, sizeof(id), &addr, err, err_len);
    void *h = NULL;
    /* Opening a target checks its ADDRESS and connects to nothing. */
    if (!k || k->open(k, addr, NULL, &h, err, err_len) != 0)
        return -1;
    k->close(h);
    return 0;
}

/* The first line of path (a bearer token), malloc'ed, or NULL with err. */
static char *token_read(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "re");
    char line[512];
    if (!f || !fgets(line, sizeof(line), f)) {
        snprintf(err, err_len, "--notify-token-file %s: %s", path,
                 f ? "empty" : strerror(errno));
        if (f)
            fclose(f);
        return NULL;
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0] || strpbrk(line, " \t")) {
        snprintf(err, err_len, "--notify-token-file %s: want one token on the first line", path);
        return NULL;
    }
    return strdup(line);
}

static enum strata_pqueue_sent target_send_cb(void *ud, const char *msg, size_t len)
{
    struct target *t = ud;
    return t->kind->send(t->h, msg, len) == 0 ? STRATA_PQUEUE_DONE : STRATA_PQUEUE_RETRY;
}

static size_t target_batch_cb(void *ud, const struct iovec *msgs, size_t n)
{
    struct target *t = ud;
    return t->kind->send_batch(t->h, msgs, n);
}

int strata_notify__enqueue(struct strata_notify *n, int t, const char *msg, size_t len)
{
    return strata_pqueue_push(n->t[t].q, msg, len);
}

static void target_fini(struct target *t)
{
    strata_pqueue_destroy(t->q); /* the thread first: it uses the handle */
    t->q = NULL;
    if (t->kind && t->h)
        t->kind->close(t->h);
}

void strata_notify_destroy(struct strata_notify *n)
{
    if (!n)
        return;
    if (atomic_load(&active) == n)
        atomic_store(&active, NULL);
    for (size_t i = 0; i < n->n; i++)
        target_fini(&n->t[i]);
    free(n);
}

static int target_open(struct strata_notify *n, const char *spec, const char *const *tokens,
                       size_t ntokens, const char *const *dirs, size_t ndirs,
                       struct strata_meta *cluster, char *err, size_t err_len)
{
    struct target *t = &n->t[n->n];
    n->n++; /* from here target_fini undoes it */
    const char *addr;
    t->kind = spec_split(spec, t->id, sizeof(t->id), &addr, err, err_len);
    if (!t->kind)
        return -1;
    for (size_t i = 0; i + 1 < n->n; i++)
        if (strcmp(n->t[i].id, t->id) == 0) {
            snprintf(err, err_len, "--notify-target %s: ID given twice", spec);
            return -1;
        }
    char *token = NULL;
    for (size_t i = 0; i < ntokens; i++) {
        size_t l = strlen(t->id);
        if (strncmp(tokens[i], t->id, l) == 0 && tokens[i][l] == ':' &&
            !(token = token_read(tokens[i] + l + 1, err, err_len)))
            return -1;
    }
    int rc = t->kind->open(t->kind, addr, token, &t->h, err, err_len);
    if (token)
        memset(token, 0, strlen(token));
    free(token);
    if (rc)
        return -1;
    char qerr[256];
    struct strata_pqueue_opts o = {.name = t->id, .max = n->queue_max, .threads = 1,
                                   .send = target_send_cb, .ud = t,
                                   .send_batch = t->kind->send_batch ? target_batch_cb : NULL,
                                   .cluster = cluster, .space = "notify"};
    if (strata_pqueue_create(dirs, ndirs, &o, &t->q, qerr, sizeof(qerr)) != 0) {
        snprintf(err, err_len, "notify target %s: %s", t->id, qerr);
        return -1;
    }
    return 0;
}

int strata_notify_create(const char *const *specs, size_t nspecs, const char *const *token_specs,
                         size_t ntokens, const char *const *dirs, size_t ndirs, size_t queue_max,
                         struct strata_meta *cluster, struct strata_notify **out, char *err,
                         size_t err_len)
{
    *out = NULL;
    if (nspecs == 0)
        return 0;
    if (nspecs > STRATA_NOTIFY_TARGETS_MAX) {
        snprintf(err, err_len, "at most %d --notify-target", STRATA_NOTIFY_TARGETS_MAX);
        return -1;
    }
    for (size_t i = 0; i < ntokens; i++) {
        const char *c = strchr(token_specs[i], ':');
        bool named = false;
        for (size_t j = 0; c && j < nspecs; j++)
            named |= strncmp(specs[j], token_specs[i], (size_t)(c - token_specs[i]) + 1) == 0;
        if (!named) {
            snprintf(err, err_len, "--notify-token-file %s: want ID:FILE of a --notify-target",
                     token_specs[i]);
            return -1;
        }
    }
    struct strata_notify *n = calloc(1, sizeof(*n));
    if (!n) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    n->queue_max = queue_max ? queue_max : STRATA_NOTIFY_QUEUE_MAX_DEFAULT;
    for (size_t i = 0; i < nspecs; i++)
        if (target_open(n, specs[i], token_specs, ntokens, dirs, ndirs, cluster, err, err_len) != 0) {
            strata_notify_destroy(n);
            return -1;
        }
    atomic_store(&active, n);
    *out = n;
    return 0;
}

int strata_notify_target_find(const struct strata_notify *n, const char *arn)
{
    static const char pre[] = "arn:strata:sqs:";
    if (!n || strncmp(arn, pre, sizeof(pre) - 1) != 0)
        return -1;
    const char *region_end = strchr(arn + sizeof(pre) - 1, ':');
    if (!region_end)
        return -1;
    const char *id = region_end + 1, *c = strchr(id, ':');
    if (!c)
        return -1;
    for (size_t i = 0; i < n->n; i++)
        if (strlen(n->t[i].id) == (size_t)(c - id) && strncmp(n->t[i].id, id, (size_t)(c - id)) == 0 &&
            strcmp(n->t[i].kind->name, c + 1) == 0)
            return (int)i;
    return -1;
}

void strata_notify_metrics_render(struct strata_sbuf *b)
{
    struct strata_notify *n = atomic_load(&active);
    if (!n)
        return;
    struct strata_pqueue_stats st[STRATA_NOTIFY_TARGETS_MAX];
    for (size_t i = 0; i < n->n; i++)
        strata_pqueue_stats_get(n->t[i].q, &st[i]);
    static const struct {
        const char *name, *help;
        size_t off;
    } ctrs[] = {
        {"queued", "Events written to the target's queue.",
         offsetof(struct strata_pqueue_stats, queued)},
        {"delivered", "Events the target acknowledged.",
         offsetof(struct strata_pqueue_stats, delivered)},
        {"failed", "Delivery attempts that failed (retried).",
         offsetof(struct strata_pqueue_stats, failed)},
        {"dropped", "Events not queued: the queue was full or could not be written.",
         offsetof(struct strata_pqueue_stats, dropped)},
    };
    for (size_t c = 0; c < sizeof(ctrs) / sizeof(ctrs[0]); c++) {
        strata_sbuf_printf(b, "# HELP strata_notify_%s_total %s\n# TYPE strata_notify_%s_total "
                              "counter\n", ctrs[c].name, ctrs[c].help, ctrs[c].name);
        for (size_t i = 0; i < n->n; i++)
            strata_sbuf_printf(b, "strata_notify_%s_total{target=\"%s\",kind=\"%s\"} %llu\n",
                               ctrs[c].name, n->t[i].id, n->t[i].kind->name,
                               (unsigned long long)*(const uint64_t *)((const char *)&st[i] +
                                                                      ctrs[c].off));
    }
    static const char *const gauges[][2] = {
        {"pending", "Events queued and not yet delivered."},
        {"queue_copies", "Copies of the target's queue being written (one per queue drive)."},
    };
    for (size_t g = 0; g < 2; g++) {
        strata_sbuf_printf(b, "# HELP strata_notify_%s %s\n# TYPE strata_notify_%s gauge\n",
                           gauges[g][0], gauges[g][1], gauges[g][0]);
        for (size_t i = 0; i < n->n; i++)
            strata_sbuf_printf(b, "strata_notify_%s{target=\"%s\",kind=\"%s\"} %llu\n",
                               gauges[g][0], n->t[i].id, n->t[i].kind->name,
                               (unsigned long long)(g == 0 ? st[i].pending : st[i].copies));
    }
}
