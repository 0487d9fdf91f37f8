/*
 * metrics.c - Prometheus counters: requests by method and status, S3 error
 * codes, bytes in/out, in-flight rejections, and latency histograms per S3
 * operation (time to the response headers and total time).  Counters are
 * kept in per-thread shards, each written only by its own thread (a
 * relaxed load and store, no locked instruction, no cache line shared
 * between the event threads); /metrics sums the shards.  The lifecycle
 * scanner's totals come from its own stats (strata_ilm_stats_get), listed
 * in a second table.  The layers above add theirs after these (the
 * pipeline's metrics_render, request.h).
 */
#include "request.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "strata/ilm.h"

static const char *const methods[] = {"GET", "PUT", "HEAD", "DELETE", "POST", "OTHER"};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))
#define NSTATUS 600

/* Latency histograms.  Bucket bounds in seconds (Prometheus' le labels),
 * counts kept per bucket and summed when rendered. */
static const double le_s[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                              0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};
#define NLE (sizeof(le_s) / sizeof(le_s[0]))
#define NOPS 64 /* operation names (the route table's, plus a few): ample */

struct hist {
    atomic_uint_fast64_t bucket[NLE + 1]; /* the last is +Inf; _count is their sum */
    atomic_uint_fast64_t sum_ns;
};

/* One thread's counters.  Only its thread writes them; /metrics reads
 * every shard (relaxed atomics: a value read is some value written). */
struct shard {
    atomic_uint_fast64_t req_count[NMETHODS][NSTATUS];
    atomic_uint_fast64_t err_count[S3E__COUNT];
    atomic_uint_fast64_t bytes_in, bytes_out, inflight_rejected, sse_key_missing;
    struct hist op_total[NOPS], op_ttfb[NOPS];
    struct shard *next;
};

static pthread_mutex_t shards_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shard *_Atomic shards; /* pushed at the head, never removed */
static __thread struct shard *my_shard;

/* This thread's shard, made on first use.  A shard outlives its thread
 * (its counts stay in the totals).  NULL only when out of memory: the
 * count is lost, nothing else. */
static struct shard *shard_get(void)
{
    if (my_shard)
        return my_shard;
    struct shard *sh = calloc(1, sizeof(*sh));
    if (!sh)
        return NULL;
    pthread_mutex_lock(&shards_mu);
    sh->next = atomic_load_explicit(&shards, memory_order_relaxed);
    atomic_store_explicit(&shards, sh, memory_order_release);
    pthread_mutex_unlock(&shards_mu);
    my_shard = sh;
    return sh;
}

/* The single writer's increment: no read-modify-write instruction. */
static inline void bump(atomic_uint_fast64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

/* Sum of one counter (at offset off of struct shard) over every shard. */
static uint64_t sum_at(size_t off)
{
    uint64_t v = 0;
    for (struct shard *sh = atomic_load_explicit(&shards, memory_order_acquire); sh;
         sh = sh->next)
        v += atomic_load_explicit((atomic_uint_fast64_t *)((char *)sh + off),
                                  memory_order_relaxed);
    return v;
}

/* The one table of scalar metrics: name, type, help, counter. */
static const struct {
    const char *name;
    const char *type;
    const char *help;
    size_t off; /* in struct shard */
} scalars[] = {
    {"strata_http_received_bytes_total", "counter", "Request body bytes received.",
     offsetof(struct shard, bytes_in)},
    {"strata_http_sent_bytes_total", "counter", "Response body bytes sent.",
     offsetof(struct shard, bytes_out)},
    {"strata_http_inflight_rejected_total", "counter",
     "Requests answered 503 SlowDown because the in-flight limit was reached.",
     offsetof(struct shard, inflight_rejected)},
    {"strata_sse_key_missing_total", "counter",
     "Reads of encrypted objects refused because their master key is not in the key store "
     "(--kms-key-file).",
     offsetof(struct shard, sse_key_missing)},
};

/* The scanner's totals since start: name, help, field of strata_ilm_stats. */
static const struct {
    const char *name;
    const char *help;
    size_t off;
} ilm_counters[] = {
#define ILM_C(n, h, f) {"strata_ilm_" n "_total", h, offsetof(struct strata_ilm_stats, f)}
    ILM_C("passes", "Lifecycle scanner passes finished.", passes),
    ILM_C("scanned", "Versions, delete markers and uploads the scanner examined.", scanned),
    ILM_C("expired", "Current versions expired by lifecycle rules.", expired),
    ILM_C("noncurrent_expired", "Noncurrent versions removed by lifecycle rules.",
          noncurrent_expired),
    ILM_C("delete_markers_removed", "Expired object delete markers removed.", markers_removed),
    ILM_C("uploads_aborted", "Incomplete multipart uploads aborted by lifecycle rules.",
          uploads_aborted),
    ILM_C("skipped_locked", "Lifecycle deletes and moves refused by Object Lock (left alone).",
          skipped_locked),
    ILM_C("errors", "Lifecycle, heal and reclaim failures (retried next pass).", errors),
    ILM_C("healed", "Records and shards rewritten by healing from the scanner.", healed),
    ILM_C("tmp_reclaimed", "Stale tmp/ files removed by the scanner.", tmp_reclaimed),
    ILM_C("due_scanned", "Version-time index entries the scanner looked at for due work.",
          due_scanned),
    ILM_C("due_dropped", "Stale version-time index entries removed.", due_dropped),
    ILM_C("heal_queued", "Keys healed from the immediate heal queue (writes that missed a drive).",
          heal_queued),
    ILM_C("orphans_reclaimed", "Unreferenced data/ shard sets removed by orphan reclaim.",
          orphans_reclaimed),
    ILM_C("transitioned", "Versions moved to another tier or class by lifecycle transitions.",
          transitioned),
    ILM_C("bytes_moved", "Bytes copied between tiers by lifecycle transitions.", bytes_moved),
    ILM_C("transitions_resumed", "Interrupted transitions finished by a later pass.",
          intents_resolved),
#undef ILM_C
};
static struct strata_ilm *_Atomic ilm_engine;

void strata_metrics_set_ilm(struct strata_ilm *e)
{
    atomic_store(&ilm_engine, e);
}

struct strata_ilm *strata_metrics_ilm(void)
{
    return atomic_load(&ilm_engine);
}

/* Operation names are static strings (route->op); a slot is claimed once
 * with a CAS on its name pointer and never released. */
static _Atomic(const char *) op_name[NOPS];

static int op_index(const char *op)
{
    for (int i = 0; i < NOPS; i++) {
        const char *cur = atomic_load_explicit(&op_name[i], memory_order_acquire);
        if (cur == op)
            return i; /* the same static string: the usual case */
        if (!cur) {
            const char *expect = NULL;
            if (atomic_compare_exchange_strong(&op_name[i], &expect, op))
                return i;
            cur = expect; /* another thread took the slot: compare with its name */
        }
        if (strcmp(cur, op) == 0)
            return i;
    }
    return -1;
}

static void hist_add(struct hist *h, uint64_t ns)
{
    double s = (double)ns / 1e9;
    size_t b = 0;
    while (b < NLE && s > le_s[b])
        b++;
    bump(&h->bucket[b], 1);
    bump(&h->sum_ns, ns);
}

void strata_metrics_latency(const char *op, uint64_t ttfb_ns, uint64_t total_ns)
{
    int i = op_index(op ? op : "Other");
    struct shard *sh = shard_get();
    if (i < 0 || !sh)
        return;
    hist_add(&sh->op_ttfb[i], ttfb_ns);
    hist_add(&sh->op_total[i], total_ns);
}

/* hs: offsetof(struct shard, op_total or op_ttfb). */
static void hist_render(struct strata_sbuf *b, const char *name, const char *help, size_t hs)
{
    strata_sbuf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < NOPS; i++) {
        const char *op = atomic_load_explicit(&op_name[i], memory_order_acquire);
        if (!op)
            break;
        size_t h = hs + (size_t)i * sizeof(struct hist);
        /* _count is the +Inf bucket's running sum, so the two always
         * agree even while requests complete during the render. */
        uint64_t cum = 0;
        for (size_t k = 0; k <= NLE; k++) {
            cum += sum_at(h + offsetof(struct hist, bucket) + k * sizeof(atomic_uint_fast64_t));
            if (k < NLE)
                strata_sbuf_printf(b, "%s_bucket{op=\"%s\",le=\"%g\"} %llu\n", name, op, le_s[k],
                                   (unsigned long long)cum);
            else
                strata_sbuf_printf(b, "%s_bucket{op=\"%s\",le=\"+Inf\"} %llu\n", name, op,
                                   (unsigned long long)cum);
        }
        strata_sbuf_printf(b, "%s_sum{op=\"%s\"} %.9f\n%s_count{op=\"%s\"} %llu\n", name, op,
                           (double)sum_at(h + offsetof(struct hist, sum_ns)) / 1e9,
                           name, op, (unsigned long long)cum);
    }
}

static size_t method_index(const char *m)
{
    for (size_t i = 0; m && i + 1 < NMETHODS; i++)
        if (strcmp(m, methods[i]) == 0)
            return i;
    return NMETHODS - 1;
}

void strata_metrics_count(const char *method, int status, enum s3_err e, uint64_t in,
                          uint64_t out)
{
    if (status < 0 || status >= NSTATUS)
        status = 0;
    struct shard *sh = shard_get();
    if (!sh)
        return;
    bump(&sh->req_count[method_index(method)][status], 1);
    if (e > S3E_NONE && e < S3E__COUNT)
        bump(&sh->err_count[e], 1);
    bump(&sh->bytes_in, in);
    bump(&sh->bytes_out, out);
}

void strata_metrics_inflight_rejected(void)
{
    struct shard *sh = shard_get();
    if (sh)
        bump(&sh->inflight_rejected, 1);
}

void strata_metrics_sse_key_missing(void)
{
    struct shard *sh = shard_get();
    if (sh)
        bump(&sh->sse_key_missing, 1);
}

static void metrics_render(struct strata_sbuf *b, unsigned inflight)
{
    strata_sbuf_puts(b, "# HELP strata_http_requests_total HTTP requests by method and status.\n"
                        "# TYPE strata_http_requests_total counter\n");
    for (size_t m = 0; m < NMETHODS; m++)
        for (int st = 0; st < NSTATUS; st++) {
            uint64_t v = sum_at(offsetof(struct shard, req_count) +
                                (m * NSTATUS + (size_t)st) * sizeof(atomic_uint_fast64_t));
            if (v)
                strata_sbuf_printf(b, "strata_http_requests_total{method=\"%s\",status=\"%d\"} %llu\n",
                                   methods[m], st, (unsigned long long)v);
        }
    strata_sbuf_puts(b, "# HELP strata_s3_errors_total S3 error answers by code.\n"
                        "# TYPE strata_s3_errors_total counter\n");
    for (int e = 1; e < S3E__COUNT; e++) {
        uint64_t v = sum_at(offsetof(struct shard, err_count) +
                            (size_t)e * sizeof(atomic_uint_fast64_t));
        if (v)
            strata_sbuf_printf(b, "strata_s3_errors_total{code=\"%s\"} %llu\n",
                               strata_s3_err_code((enum s3_err)e), (unsigned long long)v);
    }
    for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
        strata_sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", scalars[i].name,
                           scalars[i].help, scalars[i].name, scalars[i].type, scalars[i].name,
                           (unsigned long long)sum_at(scalars[i].off));
    struct strata_ilm *ilm = atomic_load(&ilm_engine);
    if (ilm) {
        struct strata_ilm_stats t;
        strata_ilm_stats_now(ilm, &t); /* the pass in progress counts at once */
        for (size_t i = 0; i < sizeof(ilm_counters) / sizeof(ilm_counters[0]); i++)
            strata_sbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n",
                               ilm_counters[i].name, ilm_counters[i].help, ilm_counters[i].name,
                               ilm_counters[i].name,
                               (unsigned long long)*(const uint64_t *)((const char *)&t +
                                                                       ilm_counters[i].off));
        struct strata_ilm_progress p;
        strata_ilm_progress_get(ilm, &p);
        strata_sbuf_printf(b, "# HELP strata_ilm_due_backlog Expirations found due in the "
                              "version-time index and not acted on yet.\n"
                              "# TYPE strata_ilm_due_backlog gauge\n"
                              "strata_ilm_due_backlog %llu\n"
                              "# HELP strata_ilm_move_backlog Transitions found due in the "
                              "version-time index and not acted on yet.\n"
                              "# TYPE strata_ilm_move_backlog gauge\n"
                              "strata_ilm_move_backlog %llu\n"
                              "# HELP strata_ilm_move_retries Refused transitions (a reader on "
                              "the old copy) waiting to be tried again.\n"
                              "# TYPE strata_ilm_move_retries gauge\n"
                              "strata_ilm_move_retries %llu\n"
                              "# HELP strata_ilm_heal_pending Keys waiting in the immediate heal "
                              "queue.\n# TYPE strata_ilm_heal_pending gauge\n"
                              "strata_ilm_heal_pending %llu\n"
                              "# HELP strata_ilm_pass_running 1 while a scanner pass runs.\n"
                              "# TYPE strata_ilm_pass_running gauge\nstrata_ilm_pass_running %d\n",
                           (unsigned long long)p.due_backlog, (unsigned long long)p.move_backlog,
                           (unsigned long long)p.move_retries, (unsigned long long)p.heal_pending,
                           p.running ? 1 : 0);
    }
    hist_render(b, "strata_s3_request_duration_seconds",
                "Time from the request line to the end of the response, by S3 operation.",
                offsetof(struct shard, op_total));
    hist_render(b, "strata_s3_ttfb_seconds",
                "Time from the request line to the response headers being queued, by S3 operation.",
                offsetof(struct shard, op_ttfb));
    strata_sbuf_printf(b, "# HELP strata_http_inflight Requests being served.\n"
                          "# TYPE strata_http_inflight gauge\nstrata_http_inflight %u\n",
                       inflight);
}

char *strata_metrics_scrape(struct strata_http *h, struct strata_srv *srv, size_t *len)
{
    struct strata_sbuf b;
    strata_sbuf_init(&b, 4u << 20);
    metrics_render(&b, atomic_load(&h->inflight));
    h->pipe->metrics_render(&b, srv);
    if (b.failed) {
        strata_sbuf_fini(&b);
        return NULL;
    }
    return strata_sbuf_steal(&b, len);
}
