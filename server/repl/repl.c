/*
 * repl.c - replication targets, their queues and the copy of one version
 * to a target (contract in repl.h).
 *
 * A queue message is a small JSON object naming what to copy, not the
 * bytes: {"b": source bucket, "k": key, "v": version id, "d": destination
 * bucket, "sc": storage class or absent, "dm": true for a delete marker,
 * "op": "tags", "retention", "legal-hold" or "acl" for that metadata change of the
 * version alone, "t": wall-clock ms when queued, "x": true when queued by
 * `strata admin replicate`}.  A change is sent as its
 * S3 operation on the same version id (a Strata target keeps the source's
 * ids), carrying the version's state when sent, so the last one sent wins;
 * a target that answers 404 (the copy not there yet, or not a Strata that
 * keeps ids) gets the version whole instead.  The version is read back
 * when it is sent, so the queue stays small and a version deleted
 * meanwhile is simply skipped (nothing to replicate any more).
 */
#include "repl.h"
#include "repl_internal.h"

#include "acl.h"
#include "base64.h"
#include "http_date.h"
#include "pqueue.h"
#include "remote_creds.h"
#include "remote_spec.h"
#include "s3_checksum.h"
#include "s3_client.h"
#include "sbuf.h"
#include "srv.h"
#include "sse.h"
#include "strata/erasure.h"
#include "strata/hex.h"

#include <openssl/crypto.h>

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The sealed form of SSE-KMS versions (repl.h) a target refused for one
 * ReplicaKmsKeyID is not offered again for that key for the daemon's
 * --replication-sealed-retry-seconds (or until a restart): the target may
 * have been given the key since. */
#define SEALED_NO_MAX 8 /* key ids remembered per target (the oldest goes) */
#define KMS_ID_MAX 300

struct target {
    char name[STRATA_REMOTE_NAME_MAX + 1];
    char endpoint[300];
    struct strata_repl *owner;
    struct strata_s3c *c;
    struct strata_pqueue *q;
    _Atomic uint64_t bytes;         /* data bytes replicated */
    _Atomic uint64_t failed;        /* versions marked FAILED */
    _Atomic uint64_t changes;       /* metadata changes sent alone (no data) */
    _Atomic uint64_t ahead;         /* entries sent ahead of their own late message */
    _Atomic int64_t lag_ms;         /* queue-to-COMPLETED time of the last one */
    _Atomic uint64_t refused_sse_c;   /* FAILED: SSE-C, no customer key to read it */
    _Atomic uint64_t refused_sse_kms; /* FAILED: SSE-KMS, not selected by the rule */
    _Atomic uint64_t sealed_kms;      /* SSE-KMS versions sent sealed (the same key there) */
    _Atomic uint64_t sealed_refused;  /* of those offered sealed, refused (sent plaintext) */
    /* ReplicaKmsKeyIDs the target refused the sealed form of, until when
     * (wall ms): their versions go as plaintext without asking again. */
    pthread_mutex_t sealed_mu;
    struct {
        char kms[KMS_ID_MAX];
        int64_t until_ms;
    } sealed_no[SEALED_NO_MAX];
};

struct strata_repl {
    struct strata_meta *meta;
    const struct strata_kms *kms; /* SSE-S3 object keys; NULL without a key store */
    int64_t sealed_retry_ms;      /* a refused sealed key id remembered this long */
    size_t n;
    struct target t[STRATA_REPL_TARGETS_MAX];
};

/* STRATA_DEBUG_REPL_QUEUE_DELAY_MS (ordering tests only): each change is
 * queued that long after it committed, as on a slow gateway. */
static unsigned queue_delay_ms;

/* What /metrics shows; set while the daemon runs. */
static struct strata_repl *_Atomic active;
/* Versions marked FAILED because their rule names an unknown target. */
static _Atomic uint64_t unknown_target;

void strata_repl__unknown_target_count(void)
{
    atomic_fetch_add(&unknown_target, 1);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- one version to the target -------------------------------------- */

/* The bytes [base, base + size) of the version g reads; off from base.
 * sealed: its stored bytes (SSE-C, or SSE-KMS under the rule's own key),
 * not the plaintext: of the whole version, or with part (1-based) of that
 * part's own stream. */
struct body {
    struct strata_get *g;
    uint64_t off, size, base;
    bool sealed;
    unsigned part;
};

static int body_read_cb(void *ud, void *buf, size_t max, size_t *n)
{
    struct body *b = ud;
    size_t want = b->size - b->off < max ? (size_t)(b->size - b->off) : max;
    int rc = !want     ? 0
             : b->part   ? strata_obj_get_part_read_sealed(b->g, b->part, b->off, buf, want)
             : b->sealed ? strata_obj_get_read_sealed(b->g, b->base + b->off, buf, want)
                         : strata_obj_get_read(b->g, b->base + b->off, buf, want);
    if (rc)
        return -1;
    b->off += want;
    *n = want;
    return 0;
}

static int body_rewind_cb(void *ud)
{
    ((struct body *)ud)->off = 0;
    return 0;
}

/* The encryption header lines of a replica of in (sse_replica.c reads
 * them on a Strata target): a sealed version (SSE-C, or SSE-KMS sent as
 * stored) with its descriptor, size and ETag (and the SSE-C algorithm,
 * which an S3 that is not a Strata peer refuses without the customer key,
 * rather than store sealed bytes as plaintext); else an SSE-KMS one as
 * plaintext to encrypt under kms, the rule's ReplicaKmsKeyID, with its
 * context and ETag; an SSE-S3 one as plaintext the target seals under its
 * own key. */
static size_t replica_sse_hdrs(const struct strata_obj_info *in, const char *kms, bool sealed,
                               char **l)
{
    int mode = in->sse_len ? strata_sse_desc_mode(in->sse, in->sse_len) : 0;
    size_t n = 0;
    char line[8300], b64[STRATA_SSE_DESC_MAX * 2];
    if (mode == STRATA_SSE_MODE_S3)
        l[n++] = strdup("x-amz-server-side-encryption: AES256");
    if (sealed && strata_b64_encode(in->sse, in->sse_len, b64, sizeof(b64)) > 0) {
        l[n++] = strdup("x-amz-server-side-encryption-customer-algorithm: AES256");
        snprintf(line, sizeof(line), STRATA_SSE_REPLICA_HDR ": %s", b64);
        l[n++] = strdup(line);
        snprintf(line, sizeof(line), STRATA_SSE_REPLICA_SIZE_HDR ": %llu",
                 (unsigned long long)in->size);
        l[n++] = strdup(line);
    }
    if (mode == STRATA_SSE_MODE_KMS && kms && !sealed) {
        l[n++] = strdup("x-amz-server-side-encryption: aws:kms");
        snprintf(line, sizeof(line), "x-amz-server-side-encryption-aws-kms-key-id: %s", kms);
        l[n++] = strdup(line);
        if (strata_sse_kms_ctx_b64(in->sse, in->sse_len, b64, sizeof(b64)) == 1) {
            snprintf(line, sizeof(line), "x-amz-server-side-encryption-context: %s", b64);
            l[n++] = strdup(line);
        }
    }
    if ((mode == STRATA_SSE_MODE_C || mode == STRATA_SSE_MODE_KMS) && in->nparts == 0) {
        snprintf(line, sizeof(line), STRATA_SSE_REPLICA_ETAG_HDR ": %s", in->etag);
        l[n++] = strdup(line);
    }
    return n;
}

/* The header lines of a replica: malloc'ed, NULL-ended, in *out; each
 * line in lines[] storage (freed by the caller with free of each).  kms:
 * as replica_sse_hdrs. */
static size_t replica_hdrs(const struct strata_obj_info *in, const char *sc, const char *kms,
                           bool sealed, char **l, size_t max)
{
    size_t n = 0;
    char line[8300];
    for (size_t i = 0; i < in->nhdrs && n + 12 < max; i++) {
        if (strcmp(in->hdrs[i].name, STRATA_REPL_STATUS_HDR) == 0 ||
            strcmp(in->hdrs[i].name, STRATA_REPL_TARGETS_HDR) == 0)
            continue;
        snprintf(line, sizeof(line), "%s: %s", in->hdrs[i].name, in->hdrs[i].value);
        l[n++] = strdup(line);
    }
    snprintf(line, sizeof(line), STRATA_REPL_HDR ": %s", in->version_id);
    l[n++] = strdup(line);
    if (in->tags_len) {
        snprintf(line, sizeof(line), "x-amz-tagging: %.*s", (int)in->tags_len,
                 (const char *)in->tags);
        l[n++] = strdup(line);
    }
    if (in->lock.mode != STRATA_LOCK_NONE) {
        char until[40];
        strata_iso8601_format(in->lock.until_ms, until, sizeof(until));
        snprintf(line, sizeof(line), "x-amz-object-lock-mode: %s",
                 in->lock.mode == STRATA_LOCK_COMPLIANCE ? "COMPLIANCE" : "GOVERNANCE");
        l[n++] = strdup(line);
        snprintf(line, sizeof(line), "x-amz-object-lock-retain-until-date: %s", until);
        l[n++] = strdup(line);
    }
    if (in->lock.legal_hold_set) {
        snprintf(line, sizeof(line), "x-amz-object-lock-legal-hold: %s",
                 in->lock.legal_hold ? "ON" : "OFF");
        l[n++] = strdup(line);
    }
    const char *ch = strata_s3_cksum_hdr(in->cksum_algo);
    char b64[64];
    /* A multipart object's checksum is of its parts: the single-PUT replica
     * is checked by its full-object checksum only. */
    if (ch && in->cksum_len && in->nparts == 0 &&
        strata_b64_encode(in->cksum, in->cksum_len, b64, sizeof(b64)) > 0) {
        snprintf(line, sizeof(line), "%s: %s", ch, b64);
        l[n++] = strdup(line);
    }
    if (sc) {
        snprintf(line, sizeof(line), "x-amz-storage-class: %s", sc);
        l[n++] = strdup(line);
    }
    n += replica_sse_hdrs(in, kms, sealed, l + n);
    l[n] = NULL;
    return n;
}

/* Marks the source version done for t (repl_status.c) and logs a refusal. */
static void status_set(struct target *t, const char *b, const char *k, const char *v,
                       const char *status)
{
    int rc = strata_repl__status_set(t->owner, (int)(t - t->owner->t), t->owner->meta, b, k, v,
                                     status);
    if (rc && rc != STRATA_ENOTFOUND)
        strata_srv_log(STRATA_LOG_WARN, "replication %s: cannot mark %s/%s %s %s: %s", t->name,
                       b, k, v, status, strata_strerror(rc));
}

static enum strata_pqueue_sent give_up(struct target *t, const char *b, const char *k,
                                       const char *v, enum strata_s3c_result res,
                                       const struct strata_s3c_error *e)
{
    strata_srv_log(STRATA_LOG_WARN, "replication %s: %s/%s %s refused: %s %ld %s %s", t->name,
                   b, k, v, strata_s3c_result_name(res), e->http_status, e->code, e->message);
    status_set(t, b, k, v, "FAILED");
    atomic_fetch_add(&t->failed, 1);
    return STRATA_PQUEUE_GIVE_UP;
}

/* The header lines of part pi of a sealed multipart version:
 * the version id that makes it a peer's and the replica headers the
 * target reads as a part's sealed stream (sse_replica.c), then ck (the
 * part's checksum line) when set.  Into l[0..6), NULL-ended; the lines
 * are kept in buf. */
static void sealed_part_hdrs(const struct strata_obj_info *in, const struct strata_part_info *pi,
                             const char *ck, char (*buf)[2100], const char **l)
{
    char b64[STRATA_SSE_DESC_MAX * 2];
    if (strata_b64_encode(in->sse, in->sse_len, b64, sizeof(b64)) <= 0)
        b64[0] = '\0'; /* the target refuses it: InvalidArgument */
    snprintf(buf[0], sizeof(buf[0]), STRATA_REPL_HDR ": %s", in->version_id);
    snprintf(buf[1], sizeof(buf[1]), STRATA_SSE_REPLICA_HDR ": %s", b64);
    snprintf(buf[2], sizeof(buf[2]), STRATA_SSE_REPLICA_SIZE_HDR ": %llu",
             (unsigned long long)pi->size);
    snprintf(buf[3], sizeof(buf[3]), STRATA_SSE_REPLICA_ETAG_HDR ": %s", pi->etag);
    for (size_t i = 0; i < 4; i++)
        l[i] = buf[i];
    l[4] = ck;
    l[5] = NULL;
}

/* A multipart version as a multipart upload with the same part numbers
 * and boundaries (so the same "-N" ETag on the target): create with the
 * replica's header lines (and the version's checksum algorithm and type),
 * each part with its MD5 and checksum (so the target forms the same
 * checksum of the parts), complete with the version id; an upload that
 * fails is aborted.  sealed: each part goes as its sealed stream
 * (its stream number is its part number) with its plaintext size and
 * ETag, which only a Strata peer reads; an S3 that is not one refuses the
 * create (the SSE-C algorithm without the customer key). */
static enum strata_s3c_result put_multipart(struct target *t, struct strata_get *g,
                                            const struct strata_obj_info *in, const char *dest,
                                            const char *k, const char *const *lines,
                                            bool sealed, struct strata_s3c_error *e)
{
    const char *cl[STRATA_S3C_HDRS_MAX + 1];
    size_t n = 0;
    while (lines[n] && n + 3 < STRATA_S3C_HDRS_MAX) {
        cl[n] = lines[n];
        n++;
    }
    const char *algo = strata_s3_cksum_algo_name(in->cksum_algo);
    const char *type = strata_s3_cksum_type_name(in->cksum_type);
    const char *phdr = in->cksum_len ? strata_s3_cksum_hdr(in->cksum_algo) : NULL;
    char al[80], tl[80];
    if (algo && phdr) {
        snprintf(al, sizeof(al), "x-amz-checksum-algorithm: %s", algo);
        cl[n++] = al;
        if (type) {
            snprintf(tl, sizeof(tl), "x-amz-checksum-type: %s", type);
            cl[n++] = tl;
        }
    }
    cl[n] = NULL;
    char up[600];
    enum strata_s3c_result res = strata_s3c_mpu_create(t->c, dest, k, cl, up, sizeof(up), e);
    if (res != STRATA_S3C_OK)
        return res;
    char(*etags)[sizeof(((struct strata_s3c_obj *)0)->etag)] = calloc(in->nparts, sizeof(*etags));
    const char **ep = calloc(in->nparts, sizeof(*ep));
    unsigned *nums = calloc(in->nparts, sizeof(*nums));
    char(*sl)[2100] = sealed ? calloc(4, sizeof(*sl)) : NULL;
    if (!etags || !ep || !nums || (sealed && !sl))
        res = STRATA_S3C_RETRY;
    for (unsigned i = 1; res == STRATA_S3C_OK && i <= in->nparts; i++) {
        struct strata_part_info pi;
        if (strata_obj_get_part(g, i, &pi) != 0) {
            res = STRATA_S3C_RETRY;
            break;
        }
        /* The part's MD5 is of its plaintext: not of a sealed stream. */
        uint8_t md5[16];
        bool has_md5 = !sealed && strlen(pi.etag) == 32 &&
                       strata_hex_decode(pi.etag, 16, md5, false) == 0;
        struct body b = {g, 0, sealed ? pi.sealed_size : pi.size, pi.offset, sealed,
                         sealed ? i : 0};
        char ck[128], b64[64];
        const char *pl[6] = {ck, NULL};
        bool has_ck = phdr && pi.cksum_len && pi.cksum_algo == in->cksum_algo &&
                      strata_b64_encode(pi.cksum, pi.cksum_len, b64, sizeof(b64)) > 0;
        if (has_ck)
            snprintf(ck, sizeof(ck), "%s: %s", phdr, b64);
        if (sealed)
            sealed_part_hdrs(in, &pi, has_ck ? ck : NULL, sl, pl);
        struct strata_s3c_put p = {.bucket = dest, .key = k, .size = b.size,
                                   .md5 = has_md5 ? md5 : NULL,
                                   .headers = has_ck || sealed ? pl : NULL,
                                   .read_cb = body_read_cb, .rewind_cb = body_rewind_cb,
                                   .ud = &b};
        struct strata_s3c_obj info;
        res = strata_s3c_mpu_part(t->c, &p, up, pi.part_number, &info, e);
        snprintf(etags[i - 1], sizeof(etags[i - 1]), "%s", info.etag);
        ep[i - 1] = etags[i - 1];
        nums[i - 1] = pi.part_number;
        strata_s3c_obj_fini(&info);
        if (res == STRATA_S3C_OK)
            atomic_fetch_add(&t->bytes, pi.size);
    }
    char line[200];
    snprintf(line, sizeof(line), STRATA_REPL_HDR ": %s", in->version_id);
    const char *const vline[] = {line, NULL};
    struct strata_s3c_complete cp = {.bucket = dest, .key = k, .upload_id = up, .etags = ep,
                                     .numbers = nums, .nparts = in->nparts, .headers = vline};
    if (res == STRATA_S3C_OK)
        res = strata_s3c_mpu_complete(t->c, &cp, NULL, e);
    if (res != STRATA_S3C_OK)
        (void)strata_s3c_mpu_abort(t->c, dest, k, up, NULL); /* else left to the target's
                                                              * lifecycle */
    free(etags);
    free(ep);
    free(nums);
    free(sl);
    return res;
}

/* An SSE-S3 version is sent as its plaintext with x-amz-server-side-
 * encryption: AES256 (replica_hdrs), so the target seals it under its own
 * key, as AWS replicates SSE-S3 objects; its ETag, the MD5 of the
 * plaintext, is the same on both.  An SSE-KMS one the same way, with the
 * rule's ReplicaKmsKeyID.  0, or -1 (logged) when the key store cannot
 * give the object key. */
static int sse_s3_open(struct target *t, struct strata_get *g, const struct strata_obj_info *in)
{
    uint8_t key[32];
    int rc = strata_sse_s3_object_key(t->owner->kms, in->sse, in->sse_len, key);
    if (rc == 0)
        rc = strata_obj_get_key(g, key);
    OPENSSL_cleanse(key, sizeof(key));
    if (rc)
        strata_srv_log(STRATA_LOG_WARN, "replication %s: %s/%s %s: no object key: %s", t->name,
                       in->bucket, in->key, in->version_id, strata_strerror(rc));
    return rc ? -1 : 0;
}

/* PutObjectAcl of version in's ACL on the target (as-is, its owner
 * included); a version with the default ACL sends x-amz-acl: private. */
static enum strata_s3c_result send_acl(struct target *t, const char *dest, const char *k,
                                       const struct strata_obj_info *in,
                                       struct strata_s3c_error *e)
{
    char line[200];
    snprintf(line, sizeof(line), STRATA_REPL_HDR ": %s", in->version_id);
    const char *const lines[] = {line, in->acl ? NULL : "x-amz-acl: private", NULL};
    struct strata_acl *a = in->acl ? malloc(sizeof(*a)) : NULL;
    if (in->acl && (!a || strata_acl_decode(in->acl, in->acl_len, a) != 0)) {
        free(a);
        snprintf(e->message, sizeof(e->message), "unreadable stored ACL");
        return a ? STRATA_S3C_OTHER : STRATA_S3C_RETRY;
    }
    struct strata_sbuf x;
    strata_sbuf_init(&x, 256 * 1024);
    if (a)
        strata_acl_xml(a, NULL, NULL, &x);
    free(a);
    enum strata_s3c_result res =
        x.failed ? STRATA_S3C_RETRY
                 : strata_s3c_put_acl(t->c, dest, k, in->version_id, in->acl ? x.data : NULL,
                                      lines, e);
    strata_sbuf_fini(&x);
    return res;
}

/* The data of version in (g reads it) and its ACL to the target: sealed,
 * its stored bytes (SSE-C, or SSE-KMS under the rule's own key); else
 * its plaintext (g keyed for SSE-S3 and SSE-KMS).  kms: as
 * replica_sse_hdrs. */
static enum strata_s3c_result send_data(struct target *t, struct strata_get *g,
                                        const struct strata_obj_info *in, const char *dest,
                                        const char *k, const char *sc, const char *kms,
                                        bool sealed, struct strata_s3c_error *e)
{
    char *lines[160];
    size_t nl = replica_hdrs(in, sc, kms, sealed, lines, sizeof(lines) / sizeof(lines[0]));
    bool oom = false;
    for (size_t i = 0; i < nl; i++)
        oom |= !lines[i];
    int mode = in->sse ? strata_sse_desc_mode(in->sse, in->sse_len) : 0;
    uint8_t md5[16];
    /* The ETag is the MD5 of the plaintext for unencrypted and SSE-S3
     * versions only. */
    bool has_md5 = in->nparts == 0 && mode != STRATA_SSE_MODE_C && mode != STRATA_SSE_MODE_KMS &&
                   strlen(in->etag) == 32 && strata_hex_decode(in->etag, 16, md5, false) == 0;
    uint64_t size = sealed ? strata_obj_get_sealed_size(g) : in->size;
    struct body body = {g, 0, size, 0, sealed, 0};
    struct strata_s3c_put p = {.bucket = dest, .key = k, .size = size,
                               .md5 = has_md5 ? md5 : NULL,
                               .headers = (const char *const *)lines,
                               .read_cb = body_read_cb, .rewind_cb = body_rewind_cb,
                               .ud = &body};
    enum strata_s3c_result res =
        oom          ? STRATA_S3C_RETRY
        : in->nparts ? put_multipart(t, g, in, dest, k, (const char *const *)lines, sealed, e)
                     : strata_s3c_put_object(t->c, &p, NULL, e);
    if (res == STRATA_S3C_OK && in->acl) /* the replica's ACL, as the source's */
        res = send_acl(t, dest, k, in, e);
    for (size_t i = 0; i < nl; i++)
        free(lines[i]);
    return res;
}

/* Whether an SSE-KMS version (descriptor in) is sealed under kms, the
 * rule's ReplicaKmsKeyID: then it may go sealed, as it is stored, to a
 * Strata target holding the same key (sse_replica.c checks it unwraps). */
static bool kms_own_key(const struct strata_obj_info *in, const char *kms)
{
    char name[80];
    return strata_sse_desc_key_name(in->sse, in->sse_len, name, sizeof(name)) == 0 &&
           strcmp(name, kms) == 0;
}

/* Whether t refused the sealed form of key id kms within the last
 * sealed_retry_ms; note: it just did (remembered and counted). */
static bool sealed_refusal(struct target *t, const char *kms, bool note)
{
    int64_t now = wall_ms();
    bool refused = false;
    pthread_mutex_lock(&t->sealed_mu);
    size_t i = 0, old = 0;
    for (; i < SEALED_NO_MAX && strcmp(t->sealed_no[i].kms, kms) != 0; i++)
        if (t->sealed_no[i].until_ms < t->sealed_no[old].until_ms)
            old = i;
    if (note) {
        i = i < SEALED_NO_MAX ? i : old;
        snprintf(t->sealed_no[i].kms, sizeof(t->sealed_no[i].kms), "%s", kms);
        t->sealed_no[i].until_ms = now + t->owner->sealed_retry_ms;
        atomic_fetch_add(&t->sealed_refused, 1);
    } else {
        refused = i < SEALED_NO_MAX && t->sealed_no[i].until_ms > now;
    }
    pthread_mutex_unlock(&t->sealed_mu);
    return refused;
}

static enum strata_pqueue_sent send_version(struct target *t, const char *b, const char *k,
                                            const char *v, const char *dest, const char *sc)
{
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    struct strata_get *g = NULL;
    int rc = strata_obj_get_open(t->owner->meta, b, k, v, &in, &g);
    if (rc == STRATA_ENOTFOUND || rc == STRATA_EMETHOD) {
        strata_obj_info_fini(&in);
        return STRATA_PQUEUE_DONE; /* deleted since: nothing left to copy */
    }
    if (rc) {
        strata_obj_info_fini(&in);
        return STRATA_PQUEUE_RETRY;
    }
    struct strata_s3c_error e;
    memset(&e, 0, sizeof(e));
    enum strata_pqueue_sent out;
    int mode = in.sse ? strata_sse_desc_mode(in.sse, in.sse_len) : 0;
    char kms[KMS_ID_MAX];
    /* SSE-KMS: AWS replicates it only when the rule's SourceSelectionCriteria
     * asks (SseKmsEncryptedObjects Enabled), under its ReplicaKmsKeyID. */
    int kms_on = mode == STRATA_SSE_MODE_KMS
                     ? strata_repl__rule_kms(t->owner, (int)(t - t->owner->t), t->owner->meta, b,
                                             k, in.tags, in.tags_len, kms, sizeof(kms))
                     : 0;
    bool kms_sealed = kms_on > 0 && kms_own_key(&in, kms) && !sealed_refusal(t, kms, false);
    bool sealed = mode == STRATA_SSE_MODE_C || kms_sealed;
    if (kms_on < 0) {
        out = STRATA_PQUEUE_RETRY;
    } else if (mode == STRATA_SSE_MODE_KMS && !kms_on) {
        snprintf(e.message, sizeof(e.message), "SSE-KMS objects are replicated only by a rule "
                                               "with SseKmsEncryptedObjects Enabled");
        atomic_fetch_add(&t->refused_sse_kms, 1);
        out = give_up(t, b, k, v, STRATA_S3C_OTHER, &e);
    } else if ((mode == STRATA_SSE_MODE_S3 || mode == STRATA_SSE_MODE_KMS) && !sealed &&
               sse_s3_open(t, g, &in) != 0) {
        /* Its master key is not in the key store: FAILED, until the key is
         * back and `strata admin replicate` queues it again. */
        snprintf(e.message, sizeof(e.message), "the master key is not in the key store");
        out = give_up(t, b, k, v, STRATA_S3C_OTHER, &e);
    } else if (in.sse && !mode) {
        snprintf(e.message, sizeof(e.message), "objects of an unknown encryption are not "
                                               "replicated");
        out = give_up(t, b, k, v, STRATA_S3C_OTHER, &e);
    } else {
        const char *kl = kms_on ? kms : NULL;
        enum strata_s3c_result res = send_data(t, g, &in, dest, k, sc, kl, sealed, &e);
        if (kms_sealed && res == STRATA_S3C_OTHER) {
            /* Not a Strata holding that key (the SSE-C algorithm sent
             * without a customer key makes any other S3 refuse it): the
             * plaintext, encrypted there under ReplicaKmsKeyID. */
            strata_srv_log(STRATA_LOG_INFO, "replication %s: %s/%s %s: sealed SSE-KMS refused "
                           "(%ld %s): sending it to be encrypted again", t->name, b, k, v,
                           e.http_status, e.code);
            memset(&e, 0, sizeof(e));
            kms_sealed = false;
            (void)sealed_refusal(t, kms, true);
            if (sse_s3_open(t, g, &in) != 0)
                snprintf(e.message, sizeof(e.message), "the master key is not in the key store");
            else
                res = send_data(t, g, &in, dest, k, sc, kl, false, &e);
        }
        if (res == STRATA_S3C_OK) {
            /* Counted before the status turns COMPLETED: whoever sees the
             * status then sees the bytes. */
            if (!in.nparts) /* a multipart one counted part by part */
                atomic_fetch_add(&t->bytes, in.size);
            atomic_fetch_add(&t->sealed_kms, kms_sealed);
            status_set(t, b, k, v, "COMPLETED");
            out = STRATA_PQUEUE_DONE;
        } else if (res == STRATA_S3C_RETRY) {
            out = STRATA_PQUEUE_RETRY;
        } else {
            /* An SSE-C version refused: a target that is not a Strata peer
             * cannot store it without the customer key. */
            atomic_fetch_add(&t->refused_sse_c, mode == STRATA_SSE_MODE_C);
            out = give_up(t, b, k, v, res, &e);
        }
    }
    strata_obj_get_close(g);
    strata_obj_info_fini(&in);
    return out;
}

static enum strata_pqueue_sent send_marker(struct target *t, const char *b, const char *k,
                                           const char *v, const char *dest)
{
    char line[200];
    snprintf(line, sizeof(line), STRATA_REPL_HDR ": %s", v);
    const char *const lines[] = {line, NULL};
    struct strata_s3c_error e;
    memset(&e, 0, sizeof(e));
    enum strata_s3c_result res = strata_s3c_delete_object(t->c, dest, k, NULL, lines, &e);
    if (res == STRATA_S3C_OK)
        return STRATA_PQUEUE_DONE;
    if (res == STRATA_S3C_RETRY)
        return STRATA_PQUEUE_RETRY;
    strata_srv_log(STRATA_LOG_WARN, "replication %s: delete marker %s/%s %s refused: %s %ld %s",
                   t->name, b, k, v, strata_s3c_result_name(res), e.http_status, e.code);
    status_set(t, b, k, v, "FAILED");
    atomic_fetch_add(&t->failed, 1);
    return STRATA_PQUEUE_GIVE_UP;
}

/* Version or delete marker v of key k to the target, its status set. */
static enum strata_pqueue_sent send_entry(struct target *t, const char *b, const char *k,
                                          const char *v, const char *dest, const char *sc,
                                          bool marker)
{
    if (!marker)
        return send_version(t, b, k, v, dest, sc);
    enum strata_pqueue_sent out = send_marker(t, b, k, v, dest);
    if (out == STRATA_PQUEUE_DONE)
        status_set(t, b, k, v, "COMPLETED"); /* the marker's, as a version's */
    return out;
}

/* Whether the target keeps the source's version ids, so that an older
 * entry sent after a newer one still sorts below it there: it has the
 * newer entry o (done) under its source id (a delete marker answers 405
 * by version id).  1 yes, 0 no, -1 retry. */
static int keeps_ids(struct target *t, const char *dest, const char *k,
                     const struct strata_repl__owed *o)
{
    struct strata_s3c_obj info;
    struct strata_s3c_error e;
    memset(&info, 0, sizeof(info));
    memset(&e, 0, sizeof(e));
    enum strata_s3c_result res = strata_s3c_head_object(t->c, dest, k, o->vid, &info, &e);
    bool same = res == STRATA_S3C_OK && strcmp(info.version_id, o->vid) == 0;
    strata_s3c_obj_fini(&info);
    if (res == STRATA_S3C_RETRY)
        return -1;
    return same || (o->marker && e.http_status == 405);
}

/* Version or delete marker v of key k whole, in its turn (README.md, "Two
 * gateways on one RADOS cluster"): first every older entry of k still
 * owed to this target, oldest first;
 * nothing when it went ahead of its own message already, or when a newer
 * entry did (it can no longer arrive in its place: marked COMPLETED).
 * existing (`strata admin replicate`): an entry older than one the target
 * has already is sent all the same to a target that keeps the source's
 * version ids (it lands in its place there), and marked FAILED for any
 * other (sent now it would become the latest there). */
static enum strata_pqueue_sent send_in_turn(struct target *t, const char *b, const char *k,
                                            const char *v, const char *dest, const char *sc,
                                            bool marker, bool existing)
{
    struct strata_repl__turn tu;
    if (strata_repl__turn_read(t->owner, (int)(t - t->owner->t), t->owner->meta, b, k, v, &tu) !=
        0)
        return STRATA_PQUEUE_RETRY;
    enum strata_pqueue_sent out = STRATA_PQUEUE_DONE;
    int keeps = tu.superseded && tu.self == 1 && existing ? keeps_ids(t, dest, k, &tu.newer_done)
                                                          : 0;
    if (keeps < 0) {
        out = STRATA_PQUEUE_RETRY;
    } else if (keeps) {
        out = send_entry(t, b, k, v, dest, sc, marker);
    } else if (tu.superseded && tu.self == 1 && existing) {
        struct strata_s3c_error e = {0};
        snprintf(e.message, sizeof(e.message), "a newer version of the key is there already "
                                               "and the target keeps no source version ids");
        out = give_up(t, b, k, v, STRATA_S3C_OTHER, &e);
    } else if (tu.superseded && tu.self == 1) {
        status_set(t, b, k, v, "COMPLETED");
    }
    for (size_t i = 0; !tu.superseded && tu.self == 1 && i < tu.n; i++) {
        const struct strata_repl__owed *o = &tu.e[i];
        out = send_entry(t, b, k, o->vid, dest, sc, o->marker);
        if (out == STRATA_PQUEUE_RETRY)
            break;
        atomic_fetch_add(&t->ahead, 1);
    }
    if (out != STRATA_PQUEUE_RETRY && !tu.superseded && tu.self == 1)
        out = send_entry(t, b, k, v, dest, sc, marker);
    strata_repl__turn_fini(&tu);
    return out;
}

/* The metadata change op of version v alone (the module doc); the whole
 * version when the target does not have that version. */
static enum strata_pqueue_sent send_change(struct target *t, const char *b, const char *k,
                                           const char *v, const char *dest, const char *sc,
                                           const char *op)
{
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    int rc = strata_obj_head(t->owner->meta, b, k, v, &in);
    if (rc) {
        strata_obj_info_fini(&in);
        /* Deleted since: nothing left to copy. */
        return rc == STRATA_ENOTFOUND || rc == STRATA_EMETHOD ? STRATA_PQUEUE_DONE
                                                              : STRATA_PQUEUE_RETRY;
    }
    char line[200];
    snprintf(line, sizeof(line), STRATA_REPL_HDR ": %s", v);
    const char *const lines[] = {line, NULL};
    struct strata_s3c_error e;
    memset(&e, 0, sizeof(e));
    enum strata_s3c_result res = STRATA_S3C_NOT_FOUND; /* retention removed: sent whole */
    if (strcmp(op, "tags") == 0) {
        struct strata_sbuf x;
        strata_sbuf_init(&x, 65536);
        if (in.tags_len && strata_tags_xml(&x, in.tags, in.tags_len) != 0)
            res = STRATA_S3C_RETRY;
        else
            res = strata_s3c_put_tagging(t->c, dest, k, v, in.tags_len ? x.data : NULL, lines,
                                         &e);
        strata_sbuf_fini(&x);
    } else if (strcmp(op, "retention") == 0 && in.lock.mode != STRATA_LOCK_NONE) {
        char until[40];
        strata_iso8601_format(in.lock.until_ms, until, sizeof(until));
        res = strata_s3c_put_retention(
            t->c, dest, k, v, in.lock.mode == STRATA_LOCK_COMPLIANCE ? "COMPLIANCE" : "GOVERNANCE",
            until, lines, &e);
    } else if (strcmp(op, "legal-hold") == 0) {
        res = strata_s3c_put_legal_hold(t->c, dest, k, v, in.lock.legal_hold, lines, &e);
    } else if (strcmp(op, "acl") == 0) {
        res = send_acl(t, dest, k, &in, &e);
    }
    strata_obj_info_fini(&in);
    if (res == STRATA_S3C_OK) {
        atomic_fetch_add(&t->changes, 1); /* before the status, as above */
        status_set(t, b, k, v, "COMPLETED");
        return STRATA_PQUEUE_DONE;
    }
    if (res == STRATA_S3C_NOT_FOUND)
        return send_in_turn(t, b, k, v, dest, sc, false, false);
    if (res == STRATA_S3C_RETRY)
        return STRATA_PQUEUE_RETRY;
    return give_up(t, b, k, v, res, &e);
}

static enum strata_pqueue_sent target_send_cb(void *ud, const char *msg, size_t len)
{
    struct target *t = ud;
    json_t *j = json_loadb(msg, len, 0, NULL);
    const char *b = NULL, *k = NULL, *v = NULL, *d = NULL, *sc = NULL, *op = NULL;
    int dm = 0, x = 0;
    json_int_t queued = 0;
    if (!j || json_unpack(j, "{s:s, s:s, s:s, s:s, s?:s, s?:b, s?:s, s?:I, s?:b}", "b", &b, "k",
                          &k, "v", &v, "d", &d, "sc", &sc, "dm", &dm, "op", &op, "t", &queued,
                          "x", &x) != 0) {
        json_decref(j);
        return STRATA_PQUEUE_GIVE_UP; /* not ours: cannot happen short of a bad disk */
    }
    enum strata_pqueue_sent out = op ? send_change(t, b, k, v, d, sc, op)
                                     : send_in_turn(t, b, k, v, d, sc, dm, x);
    if (out == STRATA_PQUEUE_DONE && queued)
        atomic_store(&t->lag_ms, wall_ms() - (int64_t)queued);
    json_decref(j);
    return out;
}

/* The ordering key of a queue message: its source bucket and key, so a
 * key's versions, delete markers and changes reach the target in the
 * order they were written.  A target that keeps no source version ids
 * (radosgw, any S3 but a Strata) makes whatever arrives last the latest. */
static uint64_t target_order_cb(void *ud, const char *msg, size_t len)
{
    (void)ud;
    json_t *j = json_loadb(msg, len, 0, NULL);
    const char *b = NULL, *k = NULL;
    uint64_t ok = 0;
    if (j && json_unpack(j, "{s:s, s:s}", "b", &b, "k", &k) == 0)
        ok = (uint64_t)strata_crc32c(0, b, strlen(b) + 1) << 32 | strata_crc32c(0, k, strlen(k));
    json_decref(j);
    return ok ? ok : 1;
}

/* ---- targets --------------------------------------------------------- */

const char *strata_repl__target_name(const struct strata_repl *rp, int ti)
{
    return rp && ti >= 0 && (size_t)ti < rp->n ? rp->t[ti].name : NULL;
}

int strata_repl__target_find(const struct strata_repl *rp, const char *name)
{
    if (!rp)
        return -1;
    if (!name)
        return rp->n == 1 ? 0 : -1;
    for (size_t i = 0; i < rp->n; i++)
        if (strcmp(rp->t[i].name, name) == 0)
            return (int)i;
    return -1;
}

int strata_repl__enqueue(struct strata_repl *rp, int ti, const char *bucket, const char *key,
                         const char *vid, const char *dest, const char *sc, bool marker,
                         const char *op, bool existing)
{
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:I}", "b", bucket, "k", key, "v", vid, "d",
                          dest, "t", (json_int_t)wall_ms());
    if (j && sc)
        json_object_set_new(j, "sc", json_string(sc));
    if (j && marker)
        json_object_set_new(j, "dm", json_true());
    if (j && op)
        json_object_set_new(j, "op", json_string(op));
    if (j && existing)
        json_object_set_new(j, "x", json_true());
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (queue_delay_ms)
        nanosleep(&(struct timespec){queue_delay_ms / 1000, queue_delay_ms % 1000 * 1000000L},
                  NULL);
    int rc = s ? strata_pqueue_push(rp->t[ti].q, s, strlen(s)) : -1;
    free(s);
    json_decref(j);
    return rc;
}

void strata_repl_destroy(struct strata_repl *rp)
{
    if (!rp)
        return;
    if (atomic_load(&active) == rp)
        atomic_store(&active, NULL);
    for (size_t i = 0; i < rp->n; i++) {
        strata_pqueue_destroy(rp->t[i].q); /* the thread first: it uses the client */
        strata_s3c_destroy(rp->t[i].c);
    }
    for (size_t i = 0; i < STRATA_REPL_TARGETS_MAX; i++)
        pthread_mutex_destroy(&rp->t[i].sealed_mu);
    free(rp);
}

int strata_repl_create(const char *const *specs, size_t nspecs, const char *creds_path,
                       const char *const *dirs, size_t ndirs, struct strata_meta *meta,
                       const struct strata_kms *kms, unsigned sealed_retry_s,
                       struct strata_repl **out, char *err, size_t err_len)
{
    *out = NULL;
    if (nspecs == 0)
        return 0;
    if (nspecs > STRATA_REPL_TARGETS_MAX) {
        snprintf(err, err_len, "at most %d --replication-target", STRATA_REPL_TARGETS_MAX);
        return -1;
    }
    if (!creds_path) {
        snprintf(err, err_len, "--replication-target needs --tier-credentials FILE with the "
                               "target's keys");
        return -1;
    }
    struct strata_remote_creds creds = {0};
    if (strata_remote_creds_load(creds_path, &creds, err, err_len) != 0)
        return -1;
    struct strata_repl *rp = calloc(1, sizeof(*rp));
    if (!rp) {
        snprintf(err, err_len, "out of memory");
        strata_remote_creds_fini(&creds);
        return -1;
    }
    rp->meta = meta;
    rp->kms = kms;
    rp->sealed_retry_ms = (int64_t)sealed_retry_s * 1000;
    const char *dl = getenv("STRATA_DEBUG_REPL_QUEUE_DELAY_MS");
    queue_delay_ms = dl && atoi(dl) > 0 ? (unsigned)atoi(dl) : 0;
    if (queue_delay_ms)
        strata_srv_log(STRATA_LOG_WARN, "STRATA_DEBUG_REPL_QUEUE_DELAY_MS=%u: replication "
                       "changes are queued that long after they commit", queue_delay_ms);
    for (size_t i = 0; i < STRATA_REPL_TARGETS_MAX; i++)
        pthread_mutex_init(&rp->t[i].sealed_mu, NULL);
    int rc = 0;
    for (size_t i = 0; i < nspecs && rc == 0; i++) {
        struct target *t = &rp->t[rp->n];
        t->owner = rp;
        rc = strata_remote_spec_split(specs[i], t->name, t->endpoint, sizeof(t->endpoint), err,
                                      err_len);
        if (rc)
            break;
        rp->n++;
        if (strata_repl__target_find(rp, t->name) != (int)rp->n - 1) {
            snprintf(err, err_len, "--replication-target %s: NAME given twice", specs[i]);
            rc = -1;
            break;
        }
        const struct strata_remote_cred *cr = strata_remote_creds_find(&creds, t->name);
        if (!cr) {
            snprintf(err, err_len, "--replication-target %s: no credentials for %s in %s",
                     specs[i], t->name, creds_path);
            rc = -1;
            break;
        }
        struct strata_s3c_opts o = {.access_key = cr->access_key, .secret_key = cr->secret_key,
                                    .region = cr->region[0] ? cr->region : NULL};
        char e2[256], qname[80];
        snprintf(qname, sizeof(qname), "%s", t->name);
        if (strata_s3c_create(t->endpoint, &o, &t->c, e2, sizeof(e2)) != 0 ||
            strata_pqueue_create(dirs, ndirs,
                                 &(struct strata_pqueue_opts){.name = qname,
                                                              .max = STRATA_REPL_QUEUE_MAX,
                                                              .threads = STRATA_REPL_THREADS,
                                                              .send = target_send_cb,
                                                              .order_key = target_order_cb,
                                                              .ud = t,
                                                              .cluster = meta,
                                                              .space = "replication"},
                                 &t->q, e2, sizeof(e2)) != 0) {
            snprintf(err, err_len, "replication target %s: %s", t->name, e2);
            rc = -1;
        }
    }
    strata_remote_creds_fini(&creds);
    if (rc) {
        strata_repl_destroy(rp);
        return -1;
    }
    atomic_store(&active, rp);
    *out = rp;
    return 0;
}

json_t *strata_repl_status_json(void)
{
    struct strata_repl *rp = atomic_load(&active);
    json_t *list = json_array();
    for (size_t i = 0; list && rp && i < rp->n; i++) {
        const struct target *t = &rp->t[i];
        struct strata_pqueue_stats st;
        strata_pqueue_stats_get(t->q, &st);
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:f}", "name", t->name, "endpoint",
                            t->endpoint, "pending", (json_int_t)st.pending, "replicated",
                            (json_int_t)st.delivered, "failed", (json_int_t)st.rejected, "bytes",
                            (json_int_t)atomic_load(&t->bytes),
                            "lag_seconds", (double)atomic_load(&t->lag_ms) / 1000.0));
    }
    return list ? json_pack("{s:o}", "targets", list) : NULL;
}

void strata_repl_metrics_render(struct strata_sbuf *b)
{
    strata_sbuf_printf(b, "# HELP strata_replication_unknown_target_total Versions a replication "
                          "rule selected for a target this daemon does not have (marked "
                          "FAILED).\n# TYPE strata_replication_unknown_target_total counter\n"
                          "strata_replication_unknown_target_total %llu\n",
                       (unsigned long long)atomic_load(&unknown_target));
    struct strata_repl *rp = atomic_load(&active);
    if (!rp)
        return;
    static const struct {
        const char *name, *type, *help;
    } m[] = {
        {"pending", "gauge", "Versions and delete markers queued for the target and not yet "
                             "replicated."},
        {"bytes_total", "counter", "Object bytes replicated."},
        {"failed_total", "counter", "Versions the target refused for good (marked FAILED)."},
        {"lag_seconds", "gauge", "Time from queueing to completion of the last version "
                                 "replicated."},
        {"changes_total", "counter", "Tag, retention and legal hold changes sent alone, "
                                     "without the data."},
        {"sse_c_refused_total", "counter", "SSE-C versions marked FAILED: refused by a "
                                           "target that is not a Strata peer (it needs the "
                                           "customer key)."},
        {"sse_kms_refused_total", "counter", "SSE-KMS versions marked FAILED (not replicated "
                                             "without SseKmsEncryptedObjects)."},
        {"sse_kms_sealed_total", "counter", "SSE-KMS versions sent sealed, as stored (the "
                                            "target holds their ReplicaKmsKeyID, the same "
                                            "key), not encrypted again."},
        {"sse_kms_sealed_refused_total", "counter", "SSE-KMS versions the target refused "
                                                    "sealed (then sent as plaintext); their "
                                                    "key id is not offered sealed to it again "
                                                    "for --replication-sealed-retry-seconds "
                                                    "or until a restart."},
        {"sent_ahead_total", "counter", "Versions and delete markers sent before a newer "
                                        "change of their key whose message came first (two "
                                        "gateways), so the target gets them in index order."},
    };
    for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
        strata_sbuf_printf(b, "# HELP strata_replication_%s %s\n# TYPE strata_replication_%s %s\n",
                           m[k].name, m[k].help, m[k].name, m[k].type);
        for (size_t i = 0; i < rp->n; i++) {
            struct target *t = &rp->t[i];
            struct strata_pqueue_stats st;
            strata_pqueue_stats_get(t->q, &st);
            double v = k == 0   ? (double)st.pending
                       : k == 1 ? (double)atomic_load(&t->bytes)
                       : k == 2 ? (double)atomic_load(&t->failed)
                       : k == 3 ? (double)atomic_load(&t->lag_ms) / 1000.0
                       : k == 4 ? (double)atomic_load(&t->changes)
                       : k == 5 ? (double)atomic_load(&t->refused_sse_c)
                       : k == 6 ? (double)atomic_load(&t->refused_sse_kms)
                       : k == 7 ? (double)atomic_load(&t->sealed_kms)
                       : k == 8 ? (double)atomic_load(&t->sealed_refused)
                                : (double)atomic_load(&t->ahead);
            strata_sbuf_printf(b, "strata_replication_%s{target=\"%s\"} %.*f\n", m[k].name,
                               t->name, k == 3 ? 3 : 0, v);
        }
    }
}
