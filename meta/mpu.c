/*
 * mpu.c - multipart uploads: create, part records, complete, abort, and the
 * two listings; plus the part table ('T' records) of completed objects.
 *
 * The rules live here; the upload and part records are the store's
 * (store.h, "multipart uploads"; locally meta/local/mpu.c, on RADOS
 * meta/rados/mpu.c).
 * - Complete never copies data: the new version's part table refers to the
 *   parts' data ids.  Its decide (complete_decide) is a pure function of
 *   the store's view (the key's versions, the upload record, the committed
 *   parts): the part list checked, the version record and part table made,
 *   the version rules of a PUT applied (strata_meta__version_decide; a
 *   replica's, strata_mpu_complete_as, keeps the source's version id and
 *   time as a replica PUT does: strata_meta__replica_decide), and
 *   the completed-upload record that answers a repeated complete with the
 *   same part list for m->mpu_retry_ns.  The store applies it at once with
 *   the upload's and the parts' removal.
 * - Data a commit stops referring to (a replaced part, parts not listed,
 *   an aborted upload's parts, replaced versions) is removed only after
 *   that commit, once.
 * - A completed object's part data is deleted before its 'T' records (so a
 *   crash leaves at worst orphan 'T' records, never a table naming deleted
 *   data of a live version: the version record is gone first).
 * Threads: any caller thread.
 */
#include "meta_internal.h"
#include "store.h"
#include "strata/hex.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + UPLOAD_LEN + 8)

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static bool names_ok(const char *bucket, const char *key)
{
    size_t bl = bucket ? strlen(bucket) : 0, kl = key ? strlen(key) : 0;
    return bl > 0 && bl <= STRATA_BUCKET_NAME_MAX && kl > 0 && kl <= STRATA_KEY_MAX;
}

/* ---- raw quorum reads --------------------------------------------------- */

void strata_meta__qraw_fini(struct meta_qraw *q)
{
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++) {
        free(q->v[d]);
        q->v[d] = NULL;
    }
}

int strata_meta__qraw_get(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                          bool read_all, struct meta_qraw *q)
{
    memset(q, 0, sizeof(*q));
    q->win = -1;
    struct meta_set *ms = &m->sets[set];
    unsigned rq = strata_set_read_quorum(ms->set);
    int result = STRATA_EQUORUM;
    bool decided = false;
    for (unsigned d = 0; d < ms->n; d++) {
        q->rc[d] = STRATA_EIO;
        if (!strata_meta__drive_readable(m, set, d))
            continue;
        q->tried[d] = true;
        q->rc[d] = strata_meta__drive_get(m, set, d, k, kl, &q->v[d], &q->vl[d]);
        if (decided || (q->rc[d] != 0 && q->rc[d] != STRATA_ENOTFOUND))
            continue;
        unsigned same = 0;
        for (unsigned j = 0; j <= d; j++) {
            if (!q->tried[j] || q->rc[j] != q->rc[d])
                continue;
            same += q->rc[d] == STRATA_ENOTFOUND ||
                    (q->vl[j] == q->vl[d] && memcmp(q->v[j], q->v[d], q->vl[d]) == 0);
        }
        if (same >= rq) {
            decided = true;
            result = q->rc[d];
            q->win = q->rc[d] == 0 ? (int)d : -1;
            if (!read_all)
                break;
        }
    }
    return result;
}

/* ---- upload ids and records --------------------------------------------- */

int strata_meta__upload_id_parse(const char *s, uint8_t upload[UPLOAD_LEN])
{
    if (strlen(s) != 2 * UPLOAD_LEN)
        return STRATA_EINVAL;
    for (int i = 0; i < 2 * UPLOAD_LEN; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return STRATA_EINVAL;
        if (i % 2 == 0)
            upload[i / 2] = (uint8_t)(v << 4);
        else
            upload[i / 2] |= (uint8_t)v;
    }
    return 0;
}

int strata_mpu_create(struct strata_meta *m, const struct strata_mpu_opts *opts,
                      char upload_id[STRATA_UPLOAD_ID_MAX + 1])
{
    upload_id[0] = 0;
    if (!opts || !opts->bucket || !*opts->bucket || strlen(opts->bucket) > STRATA_BUCKET_NAME_MAX)
        return STRATA_ENOTFOUND;
    if (!names_ok(opts->bucket, opts->key))
        return STRATA_EINVAL;
    int algo = opts->cksum_algo, type = opts->cksum_type;
    if (algo < STRATA_CKSUM_NONE || algo > STRATA_CKSUM_SHA256 || type < 0 ||
        type > STRATA_CKSUM_TYPE_FULL_OBJECT)
        return STRATA_EINVAL;
    if (algo == STRATA_CKSUM_NONE) {
        if (type != STRATA_CKSUM_TYPE_NONE)
            return STRATA_EINVAL;
    } else if (type == STRATA_CKSUM_TYPE_NONE) {
        type = algo == STRATA_CKSUM_CRC64NVME ? STRATA_CKSUM_TYPE_FULL_OBJECT
                                              : STRATA_CKSUM_TYPE_COMPOSITE;
    } else if ((algo == STRATA_CKSUM_CRC64NVME && type != STRATA_CKSUM_TYPE_FULL_OBJECT) ||
               ((algo == STRATA_CKSUM_SHA1 || algo == STRATA_CKSUM_SHA256) &&
                type != STRATA_CKSUM_TYPE_COMPOSITE)) {
        return STRATA_EINVAL;
    }
    if (opts->tags_len > STRATA_TAGS_MAX || opts->acl_len > STRATA_ACL_MAX)
        return STRATA_ETOOBIG;
    if ((opts->sse == NULL) != (opts->sse_len == 0) || opts->sse_len > STRATA_SSE_DESC_MAX)
        return STRATA_EINVAL;
    size_t total = 0;
    for (size_t i = 0; i < opts->nhdrs; i++)
        total += strlen(opts->hdrs[i].name) + strlen(opts->hdrs[i].value);
    if (total > STRATA_HDRS_MAX)
        return STRATA_ETOOBIG;
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(m, opts->bucket, &b);
    if (rc)
        return rc;
    rc = strata_meta__lock_check_req(m, &b, &opts->lock);
    if (rc)
        return rc;
    int tix = strata_meta__tier_idx(m, opts->tier);
    if (tix < 0 || (opts->storage_class && strlen(opts->storage_class) >= 32))
        return STRATA_EINVAL;
    struct meta_upload u;
    memset(&u, 0, sizeof(u));
    u.lock = opts->lock;
    u.init_ns = now_ns();
    u.cksum_algo = algo;
    u.cksum_type = type;
    snprintf(u.storage_class, sizeof(u.storage_class), "%s",
             opts->storage_class ? opts->storage_class : "STANDARD");
    if (tix > 0)
        snprintf(u.tier, sizeof(u.tier), "%s", m->tiers[tix]->name);
    u.hdrs = (struct strata_kv *)(uintptr_t)opts->hdrs; /* borrowed for encoding only */
    u.nhdrs = opts->nhdrs;
    u.tags = (uint8_t *)(uintptr_t)opts->tags;
    u.tags_len = opts->tags_len;
    u.sse = (uint8_t *)(uintptr_t)opts->sse; /* borrowed for encoding only */
    u.sse_len = opts->sse_len;
    u.acl = (uint8_t *)(uintptr_t)opts->acl; /* borrowed for encoding only */
    u.acl_len = opts->acl_len;
    uint8_t up[UPLOAD_LEN];
    for (int i = 0; i < 8; i++)
        up[i] = (uint8_t)((uint64_t)u.init_ns >> (56 - 8 * i));
    if (RAND_bytes(up + 8, 8) != 1)
        return STRATA_EINTERNAL;
    char *v = NULL;
    size_t vl = 0;
    rc = strata_meta__upload_encode(&u, &v, &vl);
    if (rc)
        return rc;
    /* Not into a bucket deleted (or re-created) since the check above. */
    rc = m->store->upload_create(m, opts->bucket, opts->key, b.incarnation, up, v, vl);
    free(v);
    if (rc == 0)
        strata_hex_encode(up, UPLOAD_LEN, upload_id);
    return rc;
}

int strata_mpu_get(struct strata_meta *m, const char *bucket, const char *key,
                   const char *upload_id, struct strata_mpu_info *out)
{
    memset(out, 0, sizeof(*out));
    uint8_t up[UPLOAD_LEN];
    if (!names_ok(bucket, key) || !upload_id || strata_meta__upload_id_parse(upload_id, up))
        return STRATA_ENOTFOUND;
    struct meta_upload u;
    int rc = m->store->upload_get(m, bucket, key, up, &u);
    if (rc)
        return rc;
    strata_meta__upload_info(out, bucket, key, up, &u);
    strata_meta__upload_fini(&u);
    return 0;
}

/* ---- complete ----------------------------------------------------------- */

/* Strip the quotes a client may keep around an ETag. */
static bool etag_eq(const char *given, const char *ours)
{
    size_t n = strlen(given);
    if (n >= 2 && given[0] == '"' && given[n - 1] == '"') {
        given++;
        n -= 2;
    }
    return n == strlen(ours) && strncasecmp(given, ours, n) == 0;
}

static void be_put(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t be_get(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The object checksum from the part checksums (see meta.h). */
static int object_cksum(int algo, int type, const struct meta_part *const *parts, size_t n,
                        uint8_t *out, size_t *outlen)
{
    size_t cl = strata_meta__cksum_len(algo);
    *outlen = 0;
    if (algo == STRATA_CKSUM_NONE)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (parts[i]->cksum_len != cl)
            return STRATA_EBADPART; /* a part without the upload's checksum */
    if (type == STRATA_CKSUM_TYPE_FULL_OBJECT) {
        uint64_t crc = be_get(parts[0]->cksum, (unsigned)cl);
        for (size_t i = 1; i < n; i++)
            crc = strata_meta__crc_combine(algo, crc, be_get(parts[i]->cksum, (unsigned)cl),
                                           parts[i]->size);
        be_put(out, crc, (unsigned)cl);
        *outlen = cl;
        return 0;
    }
    uint8_t *cat = malloc(n * cl);
    if (!cat)
        return STRATA_ENOMEM;
    for (size_t i = 0; i < n; i++)
        memcpy(cat + i * cl, parts[i]->cksum, cl);
    switch (algo) {
    case STRATA_CKSUM_CRC32:
        be_put(out, strata_crc32(0, cat, n * cl), 4);
        break;
    case STRATA_CKSUM_CRC32C:
        be_put(out, strata_crc32c(0, cat, n * cl), 4);
        break;
    case STRATA_CKSUM_CRC64NVME:
        be_put(out, strata_crc64nvme(0, cat, n * cl), 8);
        break;
    default: {
        unsigned l = 0;
        if (EVP_Digest(cat, n * cl, out, &l, algo == STRATA_CKSUM_SHA1 ? EVP_sha1() : EVP_sha256(),
                       NULL) != 1) {
            free(cat);
            return STRATA_EINTERNAL;
        }
        break;
    }
    }
    free(cat);
    *outlen = cl;
    return 0;
}

/* The part list's digest: SHA-256 over each part's number (4 bytes,
 * big-endian), its ETag as given (surrounding quotes stripped, hex digits
 * in lower case) and a 0 byte. */
static int list_digest(const struct strata_mpu_part *parts, size_t n, uint8_t out[32])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    for (size_t i = 0; ok && i < n; i++) {
        uint8_t no[4];
        be_put(no, parts[i].part_number, 4);
        const char *et = parts[i].etag;
        size_t el = strlen(et);
        if (el >= 2 && et[0] == '"' && et[el - 1] == '"') {
            et++;
            el -= 2;
        }
        char low[STRATA_ETAG_MAX + 2];
        if (el >= sizeof(low))
            el = sizeof(low) - 1; /* longer than any ETag: matches none anyway */
        for (size_t j = 0; j < el; j++)
            low[j] = (char)(et[j] >= 'A' && et[j] <= 'Z' ? et[j] + 32 : et[j]);
        low[el] = 0;
        ok = EVP_DigestUpdate(md, no, 4) == 1 && EVP_DigestUpdate(md, low, el + 1) == 1;
    }
    unsigned l = 0;
    ok = ok && EVP_DigestFinal_ex(md, out, &l) == 1 && l == 32;
    EVP_MD_CTX_free(md);
    return ok ? 0 : STRATA_EINTERNAL;
}

/*
 * A complete of an upload that was completed (v: its completed-upload
 * record): the same part list within the retry window is answered with the
 * version that complete made, nothing written; anything else is
 * STRATA_ENOTFOUND (NoSuchUpload: "aborted or completed").
 */
static int complete_replay(struct strata_meta *m, const struct strata_mpu_complete_opts *o,
                           const char *v, size_t vl, const uint8_t digest[32], int64_t now,
                           uint8_t sk[SORTKEY_LEN], struct strata_obj_info *out)
{
    struct meta_done dn;
    int rc = strata_meta__done_decode(v, vl, &dn);
    if (rc)
        return rc;
    memcpy(sk, dn.sk, SORTKEY_LEN);
    if (memcmp(dn.digest, digest, sizeof(dn.digest)) != 0 ||
        now - dn.done_ns > m->mpu_retry_ns)
        return STRATA_ENOTFOUND;
    if (o->sse_check && (rc = o->sse_check(o->sse_ud, dn.sse_len ? dn.sse : NULL, dn.sse_len)))
        return rc;
    if (o->check_size && o->object_size != dn.size)
        return STRATA_EINVAL;
    if (out) {
        struct meta_rec r;
        memset(&r, 0, sizeof(r));
        r.flags = dn.flags;
        r.size = dn.size;
        memcpy(r.etag, dn.etag, sizeof(r.etag));
        r.mtime_ns = dn.mtime_ns;
        memcpy(r.storage_class, dn.storage_class, sizeof(r.storage_class));
        r.cksum_algo = dn.cksum_algo;
        r.cksum_type = dn.cksum_type;
        memcpy(r.cksum, dn.cksum, dn.cksum_len);
        r.cksum_len = dn.cksum_len;
        r.nparts = dn.nparts;
        if (dn.sse_len) {
            r.sse = dn.sse;
            r.sse_len = dn.sse_len;
            r.psize = dn.size;
        }
        strata_meta__info_from_rec(out, o->bucket, o->key, dn.sk, &r);
        out->is_latest = true; /* as the first answer said */
    }
    return 0;
}

/* ---- part commit, reclaim ----------------------------------------------- */

int strata_meta__data_refs_add(struct strata_meta__data_refs *refs, const char *tier,
                               const uint8_t *id)
{
    struct strata_meta__data_ref *nv = realloc(refs->v, (refs->n + 1) * sizeof(*nv));
    if (!nv)
        return STRATA_ENOMEM;
    refs->v = nv;
    snprintf(nv[refs->n].tier, sizeof(nv[refs->n].tier), "%s", tier ? tier : "");
    memcpy(nv[refs->n].data_id, id, STRATA_DATA_ID_LEN);
    refs->n++;
    return 0;
}

int strata_meta__mpu_decide(const struct strata_meta__mpu_txn *t,
                            const struct strata_meta__key_view *v, bool done, const char *uv,
                            size_t uvl, const struct meta_part *parts, size_t nparts,
                            struct strata_meta__mpu_edit *me, struct strata_meta__key_edit *e)
{
    struct strata_meta__mpu_view mv;
    memset(&mv, 0, sizeof(mv));
    mv.key = *v;
    mv.done = done;
    mv.uv = uv;
    mv.uvl = uvl;
    mv.parts = parts;
    mv.nparts = nparts;
    memset(me, 0, sizeof(*me));
    int rc = t->decide(t->ud, &mv, me);
    *e = me->key;
    if (rc == 0 && e->op != STRATA_META__KEY_NONE &&
        (e->op != STRATA_META__KEY_PUT || !me->done_v))
        return STRATA_EINTERNAL; /* a complete writes a version and its done record */
    return rc;
}

/* Remove the data a committed multipart edit stopped referring to, once. */
static void refs_reclaim(struct strata_meta *m, const char *bucket, const char *key,
                         struct strata_meta__data_refs *refs)
{
    for (size_t i = 0; i < refs->n; i++)
        strata_meta__data_rm(m, refs->v[i].tier, bucket, key, refs->v[i].data_id);
    free(refs->v);
    refs->v = NULL;
    refs->n = 0;
}

int strata_meta__part_store(struct strata_meta *m, const char *bucket, const char *key,
                            const uint8_t upload[UPLOAD_LEN], const struct meta_part *part)
{
    struct strata_meta__data_refs old;
    int rc = m->store->part_put(m, bucket, key, upload, part, &old);
    /* The replaced part's data, after the commit. */
    refs_reclaim(m, bucket, key, &old);
    return rc;
}

/* ---- complete ----------------------------------------------------------- */

/* What a complete's decide works with; rerun from scratch on each call. */
struct cdecide {
    struct strata_meta *m;
    const struct strata_mpu_complete_opts *o;
    const struct strata_bucket_info *b;
    const uint8_t *digest;
    const uint8_t *replica_sk; /* a replica's: the source's sort key, else NULL */
    struct strata_obj_info *out;
    bool replayed; /* answered from the completed-upload record */
    uint8_t done_sk[SORTKEY_LEN]; /* the new version's sort key */
    struct strata_meta__key_reclaim reclaim; /* the version it replaced, if any */
    /* Per run: */
    struct meta_upload u;
    bool u_live;
    struct meta_rec r;
    const struct meta_part **sel;
    char **tv;
    size_t *tvl, nchunks;
    uint8_t *pidx;
    struct meta_part *chunk;
    bool *kept;
    char *done_v;
    size_t done_vl;
};

static void cdecide_reset(struct cdecide *c)
{
    if (c->u_live)
        strata_meta__upload_fini(&c->u);
    c->u_live = false;
    for (size_t i = 0; i < c->nchunks; i++) {
        free(c->tv[i]);
        c->tv[i] = NULL;
    }
    free(c->done_v);
    c->done_v = NULL;
    c->done_vl = 0;
    memset(&c->r, 0, sizeof(c->r));
    memset(c->kept, 0, (META_PARTS_MAX + 1) * sizeof(*c->kept));
    c->replayed = false;
}

static int part_cmp(const void *a, const void *b)
{
    unsigned x = ((const struct meta_part *)a)->number, y = ((const struct meta_part *)b)->number;
    return x < y ? -1 : x > y;
}

/* The committed part numbered no of the view, or NULL. */
static const struct meta_part *view_part(const struct strata_meta__mpu_view *v, unsigned no)
{
    struct meta_part k;
    k.number = no;
    return v->nparts ? bsearch(&k, v->parts, v->nparts, sizeof(k), part_cmp) : NULL;
}

/* The completed-upload record of version sk (record r). */
static int done_make(const struct meta_rec *r, const uint8_t *sk, int64_t done_ns,
                     const uint8_t digest[32], char **out, size_t *outl)
{
    struct meta_done dn;
    memset(&dn, 0, sizeof(dn));
    memcpy(dn.digest, digest, sizeof(dn.digest));
    dn.done_ns = done_ns;
    memcpy(dn.sk, sk, SORTKEY_LEN);
    dn.flags = r->flags;
    snprintf(dn.etag, sizeof(dn.etag), "%s", r->etag);
    dn.size = r->sse_len ? r->psize : r->size;
    dn.mtime_ns = r->mtime_ns;
    dn.cksum_algo = r->cksum_algo;
    dn.cksum_type = r->cksum_type;
    memcpy(dn.cksum, r->cksum, r->cksum_len);
    dn.cksum_len = r->cksum_len;
    dn.nparts = r->nparts;
    snprintf(dn.storage_class, sizeof(dn.storage_class), "%s", r->storage_class);
    dn.sse = r->sse;
    dn.sse_len = r->sse_len;
    return strata_meta__done_encode(&dn, out, outl);
}

/* The rules of a complete over the store's view (pure but for o's
 * sse_check, which only reads): the part list against the committed parts,
 * the new version's record and part table, and the version rules of a PUT
 * (strata_meta__version_decide), or a replica PUT's under the source's
 * sort key (strata_meta__replica_decide). */
static int complete_decide(void *ud, const struct strata_meta__mpu_view *v,
                           struct strata_meta__mpu_edit *me)
{
    struct cdecide *c = ud;
    const struct strata_mpu_complete_opts *o = c->o;
    cdecide_reset(c);
    if (v->done) {
        /* Completed before: a retry (the client lost the answer). */
        c->replayed = true;
        me->key.op = STRATA_META__KEY_NONE;
        return complete_replay(c->m, o, v->uv, v->uvl, c->digest, v->key.now_ns, c->done_sk,
                               c->out);
    }
    int rc = strata_meta__upload_decode(v->uv, v->uvl, &c->u);
    if (rc)
        return rc;
    c->u_live = true;
    struct meta_upload *u = &c->u;
    if (o->sse_check && (rc = o->sse_check(o->sse_ud, u->sse, u->sse_len)) != 0)
        return rc;
    /* Validate the list against the committed parts. */
    uint64_t total = 0;
    for (size_t i = 0; i < o->nparts; i++) {
        const struct strata_mpu_part *lp = &o->parts[i];
        const struct meta_part *p = view_part(v, lp->part_number);
        char et[33];
        if (!p)
            return STRATA_EBADPART;
        strata_hex_encode(p->md5, 16, et);
        if (!etag_eq(lp->etag, et) ||
            (lp->cksum && (lp->cksum_len != p->cksum_len ||
                           memcmp(lp->cksum, p->cksum, p->cksum_len) != 0)))
            return STRATA_EBADPART;
        if (i + 1 < o->nparts && p->size < c->m->part_size_min)
            return STRATA_ETOOSMALL;
        if (u->sse_len && p->size && !p->ssize)
            return STRATA_ECORRUPT; /* a part of an encrypted upload stored as sent */
        c->sel[i] = p;
        c->kept[lp->part_number] = true;
        total += p->size;
    }
    if (o->check_size && total != o->object_size)
        return STRATA_EINVAL;
    struct meta_rec *r = &c->r;
    /* ETag: MD5 of the concatenated binary part MD5s, "-N". */
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    uint8_t d[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    if (!md || EVP_DigestInit_ex(md, EVP_md5(), NULL) != 1)
        rc = STRATA_EINTERNAL;
    for (size_t i = 0; rc == 0 && i < o->nparts; i++)
        if (EVP_DigestUpdate(md, c->sel[i]->md5, 16) != 1)
            rc = STRATA_EINTERNAL;
    if (rc == 0 && EVP_DigestFinal_ex(md, d, &dl) != 1)
        rc = STRATA_EINTERNAL;
    EVP_MD_CTX_free(md);
    if (rc)
        return rc;
    strata_hex_encode(d, 16, r->etag);
    snprintf(r->etag + 32, sizeof(r->etag) - 32, "-%zu", o->nparts);
    rc = object_cksum(u->cksum_algo, u->cksum_type, c->sel, o->nparts, r->cksum, &r->cksum_len);
    /* Part table chunks and their index. */
    uint64_t off = 0;
    for (size_t ch = 0; rc == 0 && ch < c->nchunks; ch++) {
        size_t first = ch * MP_CHUNK_PARTS, n = o->nparts - first;
        if (n > MP_CHUNK_PARTS)
            n = MP_CHUNK_PARTS;
        be_put(c->pidx + ch * MP_IDX_ENT, off, 8);
        for (size_t i = 0; i < n; i++) {
            c->chunk[i] = *c->sel[first + i];
            off += c->chunk[i].size;
        }
        rc = strata_meta__ptab_encode(c->chunk, n, &c->tv[ch], &c->tvl[ch]);
        if (rc == 0)
            be_put(c->pidx + ch * MP_IDX_ENT + 8, strata_crc32c(0, c->tv[ch], c->tvl[ch]), 4);
    }
    if (rc)
        return rc;
    r->flags = REC_F_MULTIPART;
    r->size = total;
    snprintf(r->tier, sizeof(r->tier), "%s", u->tier);
    snprintf(r->storage_class, sizeof(r->storage_class), "%s",
             u->storage_class[0] ? u->storage_class : "STANDARD");
    r->cksum_algo = u->cksum_algo;
    r->cksum_type = u->cksum_algo ? u->cksum_type : 0;
    strata_meta__rec_borrow(r, u->hdrs, u->nhdrs, u->tags, u->tags_len, u->acl, u->acl_len);
    r->nparts = o->nparts;
    if (u->sse_len) {
        r->sse = u->sse;
        r->sse_len = u->sse_len;
        r->psize = total; /* parts sealed one stream each; sizes are plaintext */
    }
    /* The retention asked for at create, or the bucket's default from now;
     * a date that passed meanwhile is kept as given (AWS judges it at
     * CreateMultipartUpload). */
    r->lock = u->lock;
    if (!r->lock.mode) {
        struct strata_obj_lock deflt, hold = {0, 0, u->lock.legal_hold, u->lock.legal_hold_set};
        rc = strata_meta__lock_for_new(c->m, c->b, &hold, &deflt);
        r->lock = deflt;
        if (rc)
            return rc;
    }
    r->pidx = c->pidx;
    r->pidx_len = c->nchunks * MP_IDX_ENT;
    rc = c->replica_sk ? strata_meta__replica_decide(&v->key, r, c->replica_sk, &me->key)
                       : strata_meta__version_decide(&v->key, c->b->versioning, r, o->if_match,
                                                     o->if_none_match_star, &me->key);
    if (rc)
        return rc;
    const struct strata_meta__key_reclaim *rcl = &me->key.reclaim;
    c->reclaim = *rcl;
    if (rcl->any && (rcl->flags & REC_F_MULTIPART) && !memcmp(rcl->sk, me->key.sk, SORTKEY_LEN))
        /* A multipart replica sent again: this commit writes its part table
         * over the earlier copy's (same sort key), so a drop after it would
         * remove the new version's data.  A store that reclaims in the txn
         * reads the earlier table before writing over it (the edit keeps
         * the reclaim); locally the orphan audit reclaims those parts. */
        memset(&c->reclaim, 0, sizeof(c->reclaim));
    memcpy(c->done_sk, me->key.sk, SORTKEY_LEN);
    rc = done_make(r, me->key.sk, v->key.now_ns, c->digest, &c->done_v, &c->done_vl);
    if (rc)
        return rc;
    me->nchunks = c->nchunks;
    me->chunk_v = c->tv;
    me->chunk_len = c->tvl;
    me->done_v = c->done_v;
    me->done_vl = c->done_vl;
    me->kept = c->kept;
    return 0;
}

/*
 * A retry is answered from the completed-upload record only when the
 * version it names was committed.  The record goes in the same per-drive
 * batch as the version, and one dead state on any drive makes the upload
 * completed (local/mpu.c), so a complete killed after its batch reached
 * fewer drives than a commit needs leaves a record naming a version the
 * read quorum does not show: answering 200 from it would acknowledge a
 * version that is not there.  That retry gets STRATA_EQUORUM (503) instead.
 */
static int replay_committed(struct strata_meta *m, const struct strata_mpu_complete_opts *o,
                            const uint8_t sk[SORTKEY_LEN])
{
    char vid[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(sk, vid);
    struct strata_obj_info h;
    int rc = strata_obj_head(m, o->bucket, o->key, vid, &h);
    if (rc == 0)
        strata_obj_info_fini(&h);
    return rc == STRATA_ENOTFOUND ? STRATA_EQUORUM : rc;
}

int strata_mpu_complete(struct strata_meta *m, const struct strata_mpu_complete_opts *o,
                        struct strata_obj_info *out)
{
    return strata_mpu_complete_as(m, o, NULL, out);
}

int strata_mpu_complete_as(struct strata_meta *m, const struct strata_mpu_complete_opts *o,
                           const char *version_id, struct strata_obj_info *out)
{
    if (out)
        memset(out, 0, sizeof(*out));
    uint8_t up[UPLOAD_LEN];
    if (!o || !names_ok(o->bucket, o->key) || !o->upload_id ||
        strata_meta__upload_id_parse(o->upload_id, up))
        return STRATA_ENOTFOUND;
    if (o->nparts == 0 || o->nparts > STRATA_PARTS_MAX || !o->parts)
        return STRATA_EINVAL;
    for (size_t i = 0; i < o->nparts; i++) {
        if (i > 0 && o->parts[i].part_number <= o->parts[i - 1].part_number)
            return STRATA_EPARTORDER;
    }
    for (size_t i = 0; i < o->nparts; i++)
        if (o->parts[i].part_number < 1 || o->parts[i].part_number > STRATA_PARTS_MAX ||
            !o->parts[i].etag)
            return STRATA_EBADPART;
    uint8_t digest[32];
    int rc = list_digest(o->parts, o->nparts, digest);
    if (rc)
        return rc;
    struct strata_bucket_info b;
    rc = strata_meta_bucket_get(m, o->bucket, &b);
    if (rc)
        return rc;
    /* A replica keeps the source's id and time (as strata_put_opts.version_id). */
    uint8_t rsk[SORTKEY_LEN];
    char vid[STRATA_VERSION_ID_MAX + 1];
    if (version_id && (b.versioning != STRATA_VERSIONING_ENABLED ||
                       strata_meta__vid_parse(version_id, rsk) != 0))
        return STRATA_EINVAL;
    struct cdecide c;
    memset(&c, 0, sizeof(c));
    c.m = m;
    c.o = o;
    c.b = &b;
    c.digest = digest;
    c.replica_sk = version_id ? rsk : NULL;
    c.out = out;
    c.nchunks = (o->nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS;
    c.sel = calloc(o->nparts, sizeof(*c.sel));
    c.tv = calloc(c.nchunks, sizeof(*c.tv));
    c.tvl = calloc(c.nchunks, sizeof(*c.tvl));
    c.pidx = calloc(c.nchunks, MP_IDX_ENT);
    c.chunk = calloc(MP_CHUNK_PARTS, sizeof(*c.chunk));
    c.kept = calloc(META_PARTS_MAX + 1, sizeof(*c.kept));
    struct strata_meta__data_refs unref = {0};
    if (!c.sel || !c.tv || !c.tvl || !c.pidx || !c.chunk || !c.kept) {
        rc = STRATA_ENOMEM;
    } else {
        struct strata_meta__mpu_txn t = {
            .bucket = o->bucket,
            .key = o->key,
            .incarnation = b.incarnation,
            .upload = up,
            .want = strata_meta__version_want(b.versioning) | STRATA_META__KEY_NO_BYTES,
            .decide = complete_decide,
            .ud = &c,
        };
        if (version_id) { /* the version the source's id already names, if any */
            strata_meta__vid_format(rsk, vid);
            t.want |= STRATA_META__KEY_VERSION;
            t.version_id = vid;
        }
        rc = m->store->mpu_complete(m, &t, &unref);
    }
    if (rc == 0 && c.replayed && (rc = replay_committed(m, o, c.done_sk)) != 0 && out) {
        strata_obj_info_fini(out);
        memset(out, 0, sizeof(*out));
    }
    if (rc == 0 && !c.replayed) {
        /* The version replaced (null, or a replica's sent again), as a PUT's. */
        struct meta_drop drop;
        strata_meta__drop_of_reclaim(m, &c.reclaim, &drop);
        strata_meta__drop(m, strata_meta__set_of(m, o->bucket, o->key), o->bucket, o->key, &drop);
        /* Keep the listed parts' data; everything else of the upload goes. */
        refs_reclaim(m, o->bucket, o->key, &unref);
        if (out) {
            c.r.hdrs = NULL;
            c.r.nhdrs = 0;
            strata_meta__info_from_rec(out, o->bucket, o->key, c.done_sk, &c.r);
            out->is_latest = true;
        }
    }
    free(unref.v);
    if (c.kept)
        cdecide_reset(&c);
    free(c.sel);
    free(c.tv);
    free(c.tvl);
    free(c.pidx);
    free(c.chunk);
    free(c.kept);
    return rc;
}

/* ---- abort -------------------------------------------------------------- */

int strata_mpu_abort(struct strata_meta *m, const char *bucket, const char *key,
                     const char *upload_id)
{
    uint8_t up[UPLOAD_LEN];
    if (!names_ok(bucket, key) || !upload_id || strata_meta__upload_id_parse(upload_id, up))
        return STRATA_ENOTFOUND;
    struct strata_meta__data_refs unref = {0};
    int rc = m->store->mpu_abort(m, bucket, key, up, &unref);
    if (rc == 0)
        refs_reclaim(m, bucket, key, &unref);
    free(unref.v);
    return rc;
}

/* ---- ListParts ---------------------------------------------------------- */

struct lpstate {
    unsigned max, count;
    int cksum_algo;
    int (*cb)(const struct strata_part_info *p, void *ud);
    void *ud;
    struct strata_mpu_parts_result *res;
    unsigned last;
};

static int lp_cb(void *ud, const struct meta_part *pp)
{
    struct lpstate *st = ud;
    const struct meta_part p = *pp;
    unsigned no = p.number;
    if (st->count == st->max) {
        st->res->truncated = true;
        st->res->next_marker = st->last;
        return 1; /* stop: one more exists */
    }
    struct strata_part_info pi;
    memset(&pi, 0, sizeof(pi));
    pi.part_number = no;
    pi.size = p.size;
    strata_hex_encode(p.md5, 16, pi.etag);
    pi.mtime_ms = p.mtime_ns / 1000000;
    pi.cksum_algo = p.cksum_algo;
    memcpy(pi.cksum, p.cksum, p.cksum_len);
    pi.cksum_len = p.cksum_len;
    st->count++;
    st->last = no;
    int rc = st->cb(&pi, st->ud);
    return rc;
}

int strata_mpu_list_parts(struct strata_meta *m, const char *bucket, const char *key,
                          const char *upload_id, unsigned marker, unsigned max_parts,
                          int (*cb)(const struct strata_part_info *p, void *ud), void *ud,
                          struct strata_mpu_parts_result *res)
{
    memset(res, 0, sizeof(*res));
    uint8_t up[UPLOAD_LEN];
    if (!names_ok(bucket, key) || !upload_id || strata_meta__upload_id_parse(upload_id, up))
        return STRATA_ENOTFOUND;
    if (max_parts == 0 || max_parts > 1000)
        max_parts = 1000;
    if (marker >= META_PARTS_MAX)
        return 0;
    struct meta_upload u;
    int rc = m->store->upload_get(m, bucket, key, up, &u);
    if (rc)
        return rc;
    strata_meta__upload_fini(&u);
    struct lpstate st = {max_parts, 0, 0, cb, ud, res, 0};
    rc = m->store->parts_read(m, bucket, key, up, marker + 1, lp_cb, &st);
    if (rc == 1 && res->truncated)
        rc = 0;
    return rc;
}

/* ---- part tables of completed objects ----------------------------------- */

int strata_meta__ptab_load(struct strata_meta *m, unsigned set, const char *bucket,
                           const char *key, const uint8_t *sk, const struct meta_rec *r,
                           unsigned c, struct meta_part *parts, size_t *n)
{
    size_t nc = r->pidx_len / MP_IDX_ENT;
    if (c >= nc)
        return STRATA_ERANGE;
    uint32_t want = (uint32_t)be_get(r->pidx + (size_t)c * MP_IDX_ENT + 8, 4);
    size_t expect = c + 1 < nc ? MP_CHUNK_PARTS : r->nparts - (size_t)c * MP_CHUNK_PARTS;
    if (m->store->ptab_get) { /* one copy, the cluster's */
        char *v = NULL;
        size_t vl = 0;
        int grc = m->store->ptab_get(m, bucket, key, sk, c, &v, &vl);
        if (grc == 0 && !(strata_crc32c(0, v, vl) == want &&
                          strata_meta__ptab_decode(v, vl, parts, MP_CHUNK_PARTS, n) == 0 &&
                          *n == expect))
            grc = STRATA_ECORRUPT;
        free(v);
        return grc == STRATA_ENOTFOUND ? STRATA_ECORRUPT : grc; /* the record names it */
    }
    char k[UKEY_MAX];
    size_t kl = strata_meta__key_ptab(k, sizeof(k), bucket, key, sk, c);
    struct meta_set *ms = &m->sets[set];
    int rc = STRATA_EQUORUM;
    /* Any drive's copy that matches the CRC32C the quorum-agreed version
     * record carries is the right one: one Get in the common case. */
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        char *v = NULL;
        size_t vl = 0;
        int grc = strata_meta__drive_get(m, set, d, k, kl, &v, &vl);
        if (grc) {
            if (rc == STRATA_EQUORUM)
                rc = grc == STRATA_ENOTFOUND ? STRATA_ECORRUPT : grc;
            continue;
        }
        if (strata_crc32c(0, v, vl) == want &&
            strata_meta__ptab_decode(v, vl, parts, MP_CHUNK_PARTS, n) == 0 && *n == expect) {
            free(v);
            return 0;
        }
        free(v);
        rc = STRATA_ECORRUPT;
    }
    return rc;
}

void strata_meta__mp_drop(struct strata_meta *m, unsigned set, const char *bucket,
                          const char *key, const uint8_t *sk, size_t nparts, unsigned tier)
{
    struct strata_tier *t = m->tiers[tier < m->ntiers ? tier : 0];
    uint32_t place = strata_meta__place(bucket, key);
    struct meta_set *ms = &m->sets[set];
    size_t nc = (nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS;
    struct meta_part *parts = calloc(MP_CHUNK_PARTS, sizeof(*parts));
    if (!parts)
        return; /* the scanner reclaims unreferenced data */
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0};
    for (unsigned d = 0; d < ms->n; d++)
        if (ms->drives[d].db)
            wbs[d] = rocksdb_writebatch_create();
    char k[UKEY_MAX];
    for (size_t c = 0; c < nc; c++) {
        size_t kl = strata_meta__key_ptab(k, sizeof(k), bucket, key, sk, (unsigned)c);
        char *first = NULL;
        size_t firstl = 0;
        for (unsigned d = 0; d < ms->n; d++) {
            if (!ms->drives[d].db)
                continue;
            rocksdb_writebatch_delete(wbs[d], k, kl);
            char *v = NULL;
            size_t vl = 0, n = 0;
            if (strata_meta__drive_get(m, set, d, k, kl, &v, &vl) != 0)
                continue;
            /* Identical copies name the same data: delete it once. */
            if (first && firstl == vl && memcmp(first, v, vl) == 0) {
                free(v);
                continue;
            }
            if (strata_meta__ptab_decode(v, vl, parts, MP_CHUNK_PARTS, &n) == 0)
                for (size_t i = 0; i < n; i++)
                    if (parts[i].has_data_id) {
                        strata_meta__dc_drop(m->dcache, t, parts[i].data_id);
                        t->ops->remove(t->impl, place, parts[i].data_id);
                    }
            if (!first) {
                first = v;
                firstl = vl;
            } else {
                free(v);
            }
        }
        free(first);
    }
    free(parts);
    /* Under the key lock so heal cannot write a 'T' record back meanwhile. */
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    bool ok[STRATA_DRIVES_MAX];
    pthread_mutex_lock(lk);
    strata_meta__set_apply(m, set, wbs, ok);
    pthread_mutex_unlock(lk);
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++)
        if (wbs[d])
            rocksdb_writebatch_destroy(wbs[d]);
}

/* ---- ListMultipartUploads ----------------------------------------------- */

int strata_mpu_list(struct strata_meta *m, const struct strata_mpu_list_opts *o,
                    int (*cb)(const struct strata_mpu_list_entry *e, void *ud), void *ud,
                    struct strata_mpu_list_result *res)
{
    memset(res, 0, sizeof(*res));
    if (!o || !o->bucket || !*o->bucket || strlen(o->bucket) > STRATA_BUCKET_NAME_MAX)
        return STRATA_ENOTFOUND;
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(m, o->bucket, &b);
    if (rc)
        return rc;
    const char *prefix = o->prefix ? o->prefix : "";
    const char *delim = o->delimiter && *o->delimiter ? o->delimiter : NULL;
    unsigned max = o->max_uploads == 0 || o->max_uploads > 1000 ? 1000 : o->max_uploads;
    size_t pl = strlen(prefix), dl = delim ? strlen(delim) : 0;
    if (pl > STRATA_KEY_MAX)
        return 0;
    /* The store's UPLOADS scan applies the read rule: only live uploads. */
    struct strata_meta__scan_spec spec = {
        .bucket = o->bucket,
        .kind = STRATA_META__SCAN_UPLOADS,
        .prefix = prefix,
    };
    uint8_t skip_up[UPLOAD_LEN];
    bool marker_cp = false;
    const char *km = o->key_marker && *o->key_marker ? o->key_marker : NULL;
    if (km && strlen(km) <= STRATA_KEY_MAX && strcmp(km, prefix) >= 0) {
        size_t kml = strlen(km);
        spec.after = km; /* past every upload of the marker key, unless: */
        if (o->upload_id_marker && *o->upload_id_marker &&
            strata_meta__upload_id_parse(o->upload_id_marker, skip_up) == 0)
            spec.after_sk = skip_up; /* past that upload of it */
        else /* a marker that is a common prefix skips the keys under it */
            marker_cp = dl && kml >= pl + dl && strcmp(km + kml - dl, delim) == 0;
    }
    struct strata_meta__scan *sc;
    rc = m->store->scan_open(m, &spec, &sc);
    if (rc)
        return rc;
    if (marker_cp && !m->store->scan_skip_past(sc, km, strlen(km))) {
        m->store->scan_close(sc);
        return 0;
    }
    unsigned count = 0;
    char last_key[STRATA_KEY_MAX + 1] = "", last_up[STRATA_UPLOAD_ID_MAX + 1] = "";
    struct strata_meta__scan_ent se;
    int n = 0;
    while (rc == 0 && (n = m->store->scan_next(sc, &se)) == 1) {
        const char *key = se.key;
        size_t keyl = se.keylen;
        const char *dp = NULL;
        if (delim)
            for (size_t i = pl; i + dl <= keyl && !dp; i++)
                if (memcmp(key + i, delim, dl) == 0)
                    dp = key + i + dl;
        if (count == max) {
            res->truncated = true;
            break;
        }
        count++;
        if (dp) {
            /* A common prefix, shown once: only a live upload shows it. */
            char name[STRATA_KEY_MAX + 1];
            size_t cpl = (size_t)(dp - key);
            memcpy(name, key, cpl);
            name[cpl] = 0;
            struct strata_mpu_list_entry e = {true, name, NULL};
            snprintf(last_key, sizeof(last_key), "%s", name);
            last_up[0] = 0;
            rc = cb(&e, ud);
            /* Skip every key under the common prefix with one seek. */
            if (!m->store->scan_skip_past(sc, name, cpl))
                break;
            continue;
        }
        struct strata_mpu_list_entry e = {false, key, se.upload};
        snprintf(last_key, sizeof(last_key), "%s", key);
        snprintf(last_up, sizeof(last_up), "%s", se.upload->upload_id);
        rc = cb(&e, ud);
    }
    if (rc == 0 && n < 0)
        rc = n; /* the scan's error */
    if (res->truncated) {
        snprintf(res->next_key_marker, sizeof(res->next_key_marker), "%s", last_key);
        snprintf(res->next_upload_id_marker, sizeof(res->next_upload_id_marker), "%s", last_up);
    }
    m->store->scan_close(sc);
    return rc;
}
