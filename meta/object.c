/*
 * object.c - the object layer: put, get, head and delete of object versions,
 * joining version records with erasure-coded (or inline) data.
 *
 * Invariants:
 * - A put verifies size and every digest before its data is finished, and
 *   commits the record only after the data is durable; the data of the
 *   version it replaces is deleted only after the commit.
 * - Conditional checks, the null-version lookup and the record commit of
 *   one key are one key_txn (store.h): the rules here are its pure decide
 *   functions over a view of the key, the backend makes the read, the
 *   decision and the apply atomic (locally: the key's stripe lock and a
 *   quorum batch with undo, meta/local/key.c).
 * - Reads: GET and HEAD read the version through key_get (store.h); the
 *   backend holds it while the read handle is made (locally the drives'
 *   iterators: an inline object is decoded from its shards in place).
 * - Hard deletes put tombstones (meta_internal.h), so a drive that missed
 *   the delete cannot bring the version back.
 * Threads: any caller thread; a put or get handle is used by one thread at
 * a time.
 */
#include "meta_internal.h"
#include "sse.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/assert.h"
#include "strata/hex.h"

/* ---- info --------------------------------------------------------------- */

/* dst (cap bytes, zeroed) = src, truncated: snprintf's cost on every GET. */
static void str_set(char *dst, size_t cap, const char *src)
{
    memcpy(dst, src, strnlen(src, cap - 1));
}

void strata_meta__info_from_rec(struct strata_obj_info *info, const char *bucket,
                                const char *key, const uint8_t *sk, struct meta_rec *r)
{
    memset(info, 0, sizeof(*info)); /* the caller's struct may be uninitialised */
    str_set(info->bucket, sizeof(info->bucket), bucket);
    str_set(info->key, sizeof(info->key), key);
    if (r->flags & REC_F_NULL)
        str_set(info->version_id, sizeof(info->version_id), "null");
    else
        strata_meta__vid_format(sk, info->version_id);
    info->delete_marker = (r->flags & REC_F_DELETE_MARKER) != 0;
    info->size = r->size;
    memcpy(info->etag, r->etag, sizeof(info->etag));
    info->mtime_ms = r->mtime_ns / 1000000;
    info->seq_ns = r->changed_ns > r->mtime_ns ? r->changed_ns : r->mtime_ns;
    str_set(info->storage_class, sizeof(info->storage_class),
            r->storage_class[0] ? r->storage_class : "STANDARD");
    str_set(info->tier, sizeof(info->tier), r->tier[0] ? r->tier : STRATA_TIER_HOT);
    info->inline_data = (r->flags & REC_F_INLINE) != 0;
    info->cksum_algo = r->cksum_algo;
    memcpy(info->cksum, r->cksum, r->cksum_len);
    info->cksum_len = r->cksum_len;
    info->hdrs = r->hdrs;
    info->nhdrs = r->nhdrs;
    info->priv_ = r->hdr_buf; /* ownership moves to info */
    r->hdr_buf = NULL;
    r->hdrs = NULL;
    r->nhdrs = 0;
    info->nparts = (r->flags & REC_F_MULTIPART) ? (unsigned)r->nparts : 0;
    info->cksum_type = r->cksum_type;
    info->lock = r->lock;
    if (r->sse_len) {
        /* As with tags, a failed copy shows as a failed read later
         * (no descriptor, no key) rather than as wrong bytes. */
        info->size = r->psize;
        info->sse = malloc(r->sse_len);
        if (info->sse) {
            memcpy(info->sse, r->sse, r->sse_len);
            info->sse_len = r->sse_len;
        }
    }
    if (r->acl_len) {
        /* A failed copy would read as the default (owner-only) ACL: the
         * narrower answer, never a wider one. */
        info->acl = malloc(r->acl_len);
        if (info->acl) {
            memcpy(info->acl, r->acl, r->acl_len);
            info->acl_len = r->acl_len;
        }
    }
    if (r->tags_len) {
        /* A failed copy leaves the info without tags rather than failing
         * a read or a listing; tags_get reports ENOMEM itself. */
        info->tags = malloc(r->tags_len);
        if (info->tags) {
            memcpy(info->tags, r->tags, r->tags_len);
            info->tags_len = r->tags_len;
        }
    }
}

void strata_obj_info_fini(struct strata_obj_info *info)
{
    if (!info)
        return;
    free(info->priv_);
    info->priv_ = NULL;
    info->hdrs = NULL;
    info->nhdrs = 0;
    strata_meta__bytes_free(&info->tags, &info->tags_len);
    strata_meta__bytes_free(&info->acl, &info->acl_len);
    strata_meta__bytes_free(&info->sse, &info->sse_len);
}

const char *strata_obj_info_hdr(const struct strata_obj_info *info, const char *name)
{
    for (size_t i = 0; i < info->nhdrs; i++)
        if (strcmp(info->hdrs[i].name, name) == 0)
            return info->hdrs[i].value;
    return NULL;
}

int strata_meta__info_from_found(struct strata_obj_info *info, const char *bucket,
                                 const char *key, const struct strata_meta__key_found *f)
{
    struct meta_rec r;
    int rc = strata_meta__rec_decode(f->raw, f->rawlen, true, &r);
    if (rc)
        return rc;
    strata_meta__info_from_rec(info, bucket, key, f->sk, &r);
    info->is_latest = f->is_latest;
    strata_meta__rec_fini(&r);
    return 0;
}

static bool key_ok(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    return n > 0 && n <= STRATA_KEY_MAX;
}

static bool bucket_ok(const char *b)
{
    size_t n = b ? strlen(b) : 0;
    return n > 0 && n <= STRATA_BUCKET_NAME_MAX;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- head / get --------------------------------------------------------- */

/* Checks of bucket/key before a read or a change of the key (out, n
 * bytes, zeroed first, as every answer leaves it defined; NULL: none). */
static int key_args(const char *bucket, const char *key, void *out, size_t n)
{
    if (out)
        memset(out, 0, n);
    if (!bucket_ok(bucket))
        return STRATA_ENOTFOUND;
    if (!key_ok(key))
        return STRATA_EINVAL;
    return 0;
}

/* A delete marker found: 404 when it is the latest asked for, 405 when it
 * was named (S3: x-amz-delete-marker either way, from the info). */
static int marker_verdict(const struct strata_meta__key_found *f, const char *version_id)
{
    if (!(f->rec->flags & REC_F_DELETE_MARKER))
        return 0;
    return !version_id || !*version_id ? STRATA_ENOTFOUND : STRATA_EMETHOD;
}

struct head_ctx {
    const char *bucket, *key, *version_id;
    struct strata_obj_info *info;
};

static int head_found(void *ud, const struct strata_meta__key_found *f)
{
    struct head_ctx *c = ud;
    int rc = strata_meta__info_from_found(c->info, c->bucket, c->key, f);
    return rc ? rc : marker_verdict(f, c->version_id);
}

/* The store's key_get, or with nowait its answer from memory only
 * (STRATA_EBUSY where that needs a drive); a store without one waits. */
static int key_get(struct strata_meta *m, bool nowait, const char *bucket, const char *key,
                   const char *version_id, strata_meta__key_found_fn fn, void *ud)
{
    if (nowait && m->store->key_get_nowait)
        return m->store->key_get_nowait(m, bucket, key, version_id, fn, ud);
    return m->store->key_get(m, bucket, key, version_id, fn, ud);
}

static int obj_head(struct strata_meta *m, const char *bucket, const char *key,
                    const char *version_id, struct strata_obj_info *info, bool nowait)
{
    int rc = key_args(bucket, key, info, sizeof(*info));
    if (rc)
        return rc;
    struct head_ctx c = {bucket, key, version_id, info};
    return key_get(m, nowait, bucket, key, version_id, head_found, &c);
}

int strata_obj_head(struct strata_meta *m, const char *bucket, const char *key,
                    const char *version_id, struct strata_obj_info *info)
{
    return obj_head(m, bucket, key, version_id, info, false);
}

int strata_obj_head_nowait(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, struct strata_obj_info *info)
{
    return obj_head(m, bucket, key, version_id, info, true);
}

struct rec_ctx {
    const char *version_id;
    uint8_t *sk;
    struct meta_rec *out;
    char **raw;
};

static int rec_found(void *ud, const struct strata_meta__key_found *f)
{
    struct rec_ctx *c = ud;
    int rc = marker_verdict(f, c->version_id);
    if (rc)
        return rc;
    memcpy(c->sk, f->sk, SORTKEY_LEN);
    if (!(*c->raw = malloc(f->rawlen ? f->rawlen : 1)))
        return STRATA_ENOMEM;
    memcpy(*c->raw, f->raw, f->rawlen);
    rc = strata_meta__rec_decode(*c->raw, f->rawlen, false, c->out);
    if (rc) {
        free(*c->raw);
        *c->raw = NULL;
    }
    return rc;
}

int strata_meta__rec_get(struct strata_meta *m, const char *bucket, const char *key,
                         const char *version_id, uint8_t sk[SORTKEY_LEN], struct meta_rec *out,
                         char **raw)
{
    *raw = NULL;
    memset(out, 0, sizeof(*out));
    int rc = key_args(bucket, key, NULL, 0);
    if (rc)
        return rc;
    struct rec_ctx c = {version_id, sk, out, raw};
    return m->store->key_get(m, bucket, key, version_id, rec_found, &c);
}

struct strata_get {
    struct strata_meta *m;
    uint64_t size;
    const uint8_t *data; /* inline objects, decoded whole (<= inline_max) */
    uint8_t *data_own;   /* data when decoded here (freed at close) */
    void *data_hold;     /* else the backend's hold on data, released at close */
    void (*data_release)(void *hold);
    struct strata_tier *tier; /* holds the data */
    uint32_t place;
    void *r;                  /* tier reader */
    /* Multipart versions: the version record's fields needed to load part
     * table chunks lazily, the chunk loaded last, and one reader on the
     * part being read (opened on first touch, closed when the read moves
     * to another part). */
    unsigned set;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char key[STRATA_KEY_MAX + 1];
    uint8_t sk[SORTKEY_LEN];
    struct meta_rec mrec; /* pidx points into pidx_buf */
    uint8_t *pidx_buf;
    int cksum_algo;
    int chunk;            /* loaded chunk, -1 none */
    struct meta_part *cparts;
    size_t ncparts;
    uint64_t *coff;       /* object offset of each part of the chunk */
    int rpart;            /* index in chunk of the part r reads, -1 none */
    uint8_t single_md5[16];
    /* Erasure-coded versions: holds off the deletion of the data (and part
     * table) while this handle reads it (pin.c). */
    struct meta_pin *pin;
    /* Encrypted versions: size is the plaintext size, ssize the stored
     * size; reads go through sse (set by strata_obj_get_key). */
    bool enc;
    uint64_t ssize;
    struct sse_reader *sse;
    /* Encrypted multipart versions: the object key and a reader of the
     * sealed stream of the part r reads (stream number = part number). */
    bool keyed;
    uint8_t okey[SSE_KEY_LEN];
    struct sse_reader *psse;
    /* strata_obj_get_window: object bytes at or past it are not read. */
    uint64_t win_end;
    /* A version on an archive tier is read from its restored copy on the
     * hot tier: (the version's data id, the copy's) pairs (restore.c). */
    uint8_t (*rmap)[2][STRATA_DATA_ID_LEN];
    size_t nrmap;
    /* Erasure-coded data is read through the data cache (dcache.h): tier
     * is then dcv's view of the data's tier. */
    struct meta_dc_view dcv;
};

/* The data id g reads for the version's data id id. */
static const uint8_t *data_id_of(const struct strata_get *g, const uint8_t *id)
{
    for (size_t i = 0; i < g->nrmap; i++)
        if (memcmp(g->rmap[i][0], id, STRATA_DATA_ID_LEN) == 0)
            return g->rmap[i][1];
    return id;
}

/* Tell the tier reader r, reading the bytes of the object at [base, base +
 * len), where the caller's window ends, so it reads nothing ahead past it.
 * Stored offsets of encrypted data are not the object's: no bound. */
static void reader_bound(struct strata_get *g, uint64_t base, uint64_t len)
{
    if (g->r && !g->enc && g->tier->ops->reader_limit && g->win_end < base + len)
        g->tier->ops->reader_limit(g->r, g->win_end > base ? g->win_end - base : 0);
}

/* Forget the reader of the current part. */
static void part_reader_close(struct strata_get *g)
{
    if (g->r)
        g->tier->ops->reader_close(g->r);
    g->r = NULL;
    strata_sse__reader_destroy(g->psse);
    g->psse = NULL;
    g->rpart = -1;
}

static int tier_read_cb(void *ud, uint64_t off, void *buf, size_t len)
{
    struct strata_get *g = ud;
    return g->tier->ops->read(g->r, off, buf, len);
}

/* What a GET's open needs while the store holds the version found. */
struct get_ctx {
    struct strata_meta *m;
    const char *bucket, *key, *version_id;
    struct strata_obj_info *info;
    uint64_t gen;  /* the key's drop generation before the read (pin.c) */
    bool nowait;   /* an event thread's: never wait on a drive (STRATA_EBUSY) */
    bool busy;     /* the version's data was being dropped: read again */
    bool shown;    /* info describes a readable version (not a delete marker) */
    struct strata_get *g;
};

/* Make the read handle of the version found. */
static int get_found(void *ud, const struct strata_meta__key_found *f)
{
    struct get_ctx *c = ud;
    struct strata_meta *m = c->m;
    int rc = strata_meta__info_from_found(c->info, c->bucket, c->key, f);
    if (rc == 0)
        rc = marker_verdict(f, c->version_id);
    if (rc)
        return rc;
    c->shown = true;
    const struct meta_rec *r = f->rec;
    bool in_record = (r->flags & REC_F_INLINE) || r->size == 0;
    unsigned set = in_record ? 0 : strata_meta__set_of(m, c->bucket, c->key);
    /* Pin erasure-coded data, so an overwrite or delete committing while
     * we read defers its deletion to our close.  A drop of this key's
     * stripe between the read and the pin means the read may have found a
     * version whose data is going: the caller reads again. */
    struct meta_pin *pin = NULL;
    if (!in_record) {
        rc = strata_meta__pin(m, set, c->bucket, c->key, f->sk, c->gen, &pin);
        c->busy = rc == STRATA_EBUSY;
        if (rc)
            return rc;
    }
    struct strata_get *g = calloc(1, sizeof(*g));
    if (!g) {
        strata_meta__unpin(m, pin);
        return STRATA_ENOMEM;
    }
    c->g = g;
    g->m = m;
    g->pin = pin;
    g->chunk = -1;
    g->rpart = -1;
    g->win_end = UINT64_MAX;
    g->size = r->size;
    g->ssize = r->size;
    if (r->sse) {
        g->enc = true;
        g->size = r->psize;
    }
    g->set = set;
    g->place = strata_meta__place(c->bucket, c->key);
    g->tier = strata_meta__tier(m, r->tier);
    if (!g->tier && !in_record) {
        /* The record names a tier this daemon was not configured with. */
        strata_log(&m->log, STRATA_LOG_WARN, "meta", "%s/%s: data on unknown tier %s", c->bucket,
                   c->key, r->tier);
        return STRATA_EQUORUM;
    }
    if (strata_meta_tier_archived(m, r->tier[0] ? r->tier : STRATA_TIER_HOT)) {
        if (c->nowait)
            return STRATA_EBUSY; /* the restore map is read from the store */
        rc = strata_meta__restore_map(m, c->bucket, c->key, f->sk, &g->rmap, &g->nrmap);
        if (rc)
            return rc;
        if (!(r->flags & REC_F_INLINE))
            g->tier = m->tiers[0]; /* the restored copy */
    }
    if (!in_record)
        g->tier = strata_meta__dc_view(m->dcache, g->tier, &g->dcv);
    str_set(g->bucket, sizeof(g->bucket), c->bucket); /* g is zeroed */
    str_set(g->key, sizeof(g->key), c->key);
    memcpy(g->sk, f->sk, SORTKEY_LEN);
    g->cksum_algo = r->cksum_algo;
    g->mrec = *r;
    g->mrec.hdrs = NULL;
    g->mrec.hdr_buf = NULL;
    g->mrec.nhdrs = 0;
    g->mrec.shard = NULL;
    g->mrec.tags = NULL;
    g->mrec.tags_len = 0;
    if (r->flags & REC_F_MULTIPART) {
        g->pidx_buf = malloc(r->pidx_len);
        g->cparts = calloc(MP_CHUNK_PARTS, sizeof(*g->cparts));
        g->coff = calloc(MP_CHUNK_PARTS, sizeof(*g->coff));
        if (!g->pidx_buf || !g->cparts || !g->coff)
            return STRATA_ENOMEM;
        memcpy(g->pidx_buf, r->pidx, r->pidx_len);
        g->mrec.pidx = g->pidx_buf;
    } else if (r->flags & REC_F_INLINE) {
        if (r->size && f->inline_hold) {
            g->data = f->inline_hold(f, &g->data_hold); /* no copy: the cache's bytes */
            g->data_release = f->release;
            return 0;
        }
        g->data = g->data_own = malloc(r->size ? r->size : 1);
        if (!g->data)
            return STRATA_ENOMEM;
        if (r->size)
            return f->inline_read(f, g->data_own);
    } else if (r->size > 0) {
        return g->tier->ops->reader_open(g->tier->impl, g->place, data_id_of(g, r->data_id),
                                         r->size, &g->r);
    }
    return 0;
}

static int get_open(struct strata_meta *m, const char *bucket, const char *key,
                    const char *version_id, struct strata_obj_info *info, struct strata_get **out,
                    bool nowait)
{
    *out = NULL;
    struct strata_obj_info tmp;
    memset(&tmp, 0, sizeof(tmp));
    struct get_ctx c = {.m = m, .bucket = bucket, .key = key, .version_id = version_id,
                        .info = info ? info : &tmp, .nowait = nowait};
    int rc;
    for (unsigned attempt = 0;; attempt++) {
        rc = key_args(bucket, key, c.info, sizeof(*c.info));
        if (rc)
            return rc;
        c.gen = strata_meta__pin_gen(m, bucket, key);
        c.busy = c.shown = false;
        rc = key_get(m, nowait, bucket, key, version_id, get_found, &c);
        if (!c.busy || attempt == 16)
            break;
        strata_obj_info_fini(c.info);
    }
    strata_obj_info_fini(&tmp);
    if (rc) {
        strata_obj_get_close(c.g);
        if (info && c.shown)
            strata_obj_info_fini(info); /* a delete marker's info stays: its headers */
        return rc;
    }
    *out = c.g;
    return 0;
}

int strata_obj_get_open(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, struct strata_obj_info *info,
                        struct strata_get **out)
{
    return get_open(m, bucket, key, version_id, info, out, false);
}

int strata_obj_get_open_nowait(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, struct strata_obj_info *info,
                               struct strata_get **out)
{
    return get_open(m, bucket, key, version_id, info, out, true);
}

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Make chunk c the loaded one (and forget the reader of the old chunk). */
static int mp_chunk(struct strata_get *g, unsigned c)
{
    if (g->chunk == (int)c)
        return 0;
    part_reader_close(g);
    g->chunk = -1;
    int rc = strata_meta__ptab_load(g->m, g->set, g->bucket, g->key, g->sk, &g->mrec, c,
                                    g->cparts, &g->ncparts);
    if (rc)
        return rc;
    uint64_t o = be64(g->mrec.pidx + (size_t)c * MP_IDX_ENT);
    for (size_t i = 0; i < g->ncparts; i++) {
        g->coff[i] = o;
        o += g->cparts[i].size;
    }
    g->chunk = (int)c;
    return 0;
}

/* The chunk holding object offset off: the last one starting at or before it. */
static unsigned mp_chunk_of(const struct strata_get *g, uint64_t off)
{
    size_t nc = g->mrec.pidx_len / MP_IDX_ENT;
    size_t lo = 0, hi = nc; /* binary search over the chunk index */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (be64(g->mrec.pidx + mid * MP_IDX_ENT) <= off)
            lo = mid;
        else
            hi = mid;
    }
    return (unsigned)lo;
}

/* Make g->r read the part holding object offset off (0 <= off < size):
 * its index in the loaded chunk goes to *pi. */
static int mp_part(struct strata_get *g, uint64_t off, size_t *pi)
{
    int rc = mp_chunk(g, mp_chunk_of(g, off));
    if (rc)
        return rc;
    size_t i = 0;
    while (i + 1 < g->ncparts && g->coff[i + 1] <= off)
        i++;
    /* Skip empty parts and land on the one holding off. */
    while (i < g->ncparts && off >= g->coff[i] + g->cparts[i].size)
        i++;
    if (i >= g->ncparts)
        return STRATA_ECORRUPT; /* the index and the table disagree */
    const struct meta_part *p = &g->cparts[i];
    if (g->rpart != (int)i) {
        part_reader_close(g);
        if (g->enc && p->ssize != strata_sse__stream_size(p->size))
            return STRATA_ECORRUPT; /* a part stored as sent in an encrypted object */
        rc = g->tier->ops->reader_open(g->tier->impl, g->place, data_id_of(g, p->data_id),
                                       g->enc ? p->ssize : p->size, &g->r);
        if (rc == 0 && g->keyed) /* unkeyed: the sealed stream only (part_read_sealed) */
            rc = strata_sse__reader_create(g->okey, p->number, p->size, &g->psse);
        if (rc)
            return rc;
        g->rpart = (int)i;
        reader_bound(g, g->coff[i], p->size);
    }
    *pi = i;
    return 0;
}

static int mp_read(struct strata_get *g, uint64_t off, void *buf, size_t len)
{
    uint8_t *out = buf;
    while (len > 0) {
        size_t i;
        int rc = mp_part(g, off, &i);
        if (rc)
            return rc;
        const struct meta_part *p = &g->cparts[i];
        uint64_t in = off - g->coff[i];
        size_t n = p->size - in < len ? (size_t)(p->size - in) : len;
        if (g->enc && !g->psse)
            return STRATA_EINVAL; /* never the sealed bytes as plaintext */
        rc = g->psse ? strata_sse__reader_read(g->psse, in, out, n, tier_read_cb, g)
                     : g->tier->ops->read(g->r, in, out, n);
        if (rc)
            return rc;
        out += n;
        off += n;
        len -= n;
    }
    return 0;
}

/* Stored bytes (ciphertext of an encrypted version). */
static int raw_read(void *ud, uint64_t off, void *buf, size_t len)
{
    struct strata_get *g = ud;
    if (off > g->ssize || len > g->ssize - off)
        return STRATA_ECORRUPT; /* the record and its stream disagree */
    if (g->data) {
        memcpy(buf, g->data + off, len);
        return 0;
    }
    if (g->mrec.flags & REC_F_MULTIPART)
        return mp_read(g, off, buf, len);
    return g->tier->ops->read(g->r, off, buf, len);
}

int strata_obj_get_read(struct strata_get *g, uint64_t off, void *buf, size_t len)
{
    if (off > g->size || len > g->size - off)
        return STRATA_ERANGE;
    if (len == 0)
        return 0;
    if (g->enc && (g->mrec.flags & REC_F_MULTIPART))
        return g->keyed ? mp_read(g, off, buf, len) : STRATA_EINVAL;
    if (g->enc)
        return g->sse ? strata_sse__reader_read(g->sse, off, buf, len, raw_read, g)
                      : STRATA_EINVAL;
    return raw_read(g, off, buf, len);
}

uint64_t strata_obj_get_sealed_size(const struct strata_get *g)
{
    return g->enc && !(g->mrec.flags & REC_F_MULTIPART) ? g->ssize : 0;
}

int strata_obj_get_read_sealed(struct strata_get *g, uint64_t off, void *buf, size_t len)
{
    if (!strata_obj_get_sealed_size(g))
        return STRATA_EINVAL;
    if (off > g->ssize || len > g->ssize - off)
        return STRATA_ERANGE;
    return len ? raw_read(g, off, buf, len) : 0;
}

int strata_obj_get_part_read_sealed(struct strata_get *g, unsigned idx, uint64_t off, void *buf,
                                    size_t len)
{
    if (!g->enc || !(g->mrec.flags & REC_F_MULTIPART))
        return STRATA_EINVAL;
    if (idx == 0 || idx > g->mrec.nparts)
        return STRATA_ERANGE;
    size_t i = (idx - 1) % MP_CHUNK_PARTS;
    int rc = mp_chunk(g, (idx - 1) / MP_CHUNK_PARTS);
    if (rc)
        return rc;
    if (i >= g->ncparts)
        return STRATA_ECORRUPT;
    const struct meta_part *p = &g->cparts[i];
    if (off > p->ssize || len > p->ssize - off)
        return STRATA_ERANGE;
    if (len == 0)
        return 0;
    if (g->rpart != (int)i) {
        part_reader_close(g);
        if (p->ssize != strata_sse__stream_size(p->size))
            return STRATA_ECORRUPT;
        rc = g->tier->ops->reader_open(g->tier->impl, g->place, data_id_of(g, p->data_id),
                                       p->ssize, &g->r);
        if (rc)
            return rc;
        g->rpart = (int)i;
    }
    /* A keyed handle's part reader decrypts through psse; the stored bytes
     * come from the tier reader under it either way. */
    return g->tier->ops->read(g->r, off, buf, len);
}

bool strata_obj_get_peekable(const struct strata_get *g)
{
    /* Decrypted bytes need the caller's buffer; a multipart version is
     * read across part readers. */
    if (g->enc)
        return false;
    if (g->data)
        return true;
    if (!g->tier || !g->tier->ops->peek)
        return false;
    return (g->mrec.flags & REC_F_MULTIPART) || g->r;
}

int strata_obj_get_peek(struct strata_get *g, uint64_t off, size_t max, const uint8_t **p,
                        size_t *n)
{
    *p = NULL;
    *n = 0;
    if (off > g->size)
        return STRATA_ERANGE;
    if (off == g->size || max == 0)
        return 0;
    if (!strata_obj_get_peekable(g))
        return STRATA_EINVAL;
    if (g->data) {
        *p = g->data + off;
        *n = g->size - off < max ? (size_t)(g->size - off) : max;
        return 0;
    }
    if (!(g->mrec.flags & REC_F_MULTIPART))
        return g->tier->ops->peek(g->r, off, max, p, n);
    size_t i;
    int rc = mp_part(g, off, &i);
    if (rc)
        return rc;
    uint64_t in = off - g->coff[i], left = g->cparts[i].size - in;
    return g->tier->ops->peek(g->r, in, left < max ? (size_t)left : max, p, n);
}

void strata_obj_get_window(struct strata_get *g, uint64_t end)
{
    g->win_end = end;
    if (!(g->mrec.flags & REC_F_MULTIPART))
        reader_bound(g, 0, g->size);
}

bool strata_obj_get_in_memory(const struct strata_get *g)
{
    return g->data != NULL || strata_meta__dc_reader_fd(g->tier, g->r, false) >= 0;
}

int strata_obj_get_fd(struct strata_get *g, uint64_t off, uint64_t len, uint64_t *fd_off)
{
    if (g->enc || g->data || len == 0 || off > g->size || len > g->size - off)
        return -1; /* decrypted bytes are never in a file */
    uint64_t in = off;
    if (g->mrec.flags & REC_F_MULTIPART) {
        size_t i;
        if (mp_part(g, off, &i) != 0)
            return -1;
        in = off - g->coff[i];
        if (len > g->cparts[i].size - in)
            return -1; /* across parts */
    }
    int fd = strata_meta__dc_reader_fd(g->tier, g->r, true);
    if (fd < 0)
        return -1;
    *fd_off = in;
    return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

void strata_meta_data_cache_stats(struct strata_meta *m, struct strata_data_cache_stats *out)
{
    strata_meta__dc_stats(m->dcache, out);
}

const uint8_t *strata_obj_get_bytes(const struct strata_get *g)
{
    return g->enc ? NULL : g->data;
}

int strata_obj_get_key(struct strata_get *g, const uint8_t *key)
{
    if (!g->enc || g->sse || g->keyed)
        return STRATA_EINVAL;
    if (g->mrec.flags & REC_F_MULTIPART) {
        part_reader_close(g); /* opened unkeyed by a sealed read: open again */
        memcpy(g->okey, key, SSE_KEY_LEN);
        g->keyed = true;
        return 0;
    }
    return strata_sse__reader_create(key, 0, g->size, &g->sse);
}

void strata_obj_get_close(struct strata_get *g)
{
    if (!g)
        return;
    part_reader_close(g);
    strata_meta__unpin(g->m, g->pin);
    strata_sse__reader_destroy(g->sse);
    OPENSSL_cleanse(g->okey, sizeof(g->okey));
    free(g->data_own);
    if (g->data_release)
        g->data_release(g->data_hold);
    free(g->pidx_buf);
    free(g->cparts);
    free(g->coff);
    free(g->rmap);
    free(g);
}

int strata_obj_get_part(struct strata_get *g, unsigned idx, struct strata_part_info *out)
{
    memset(out, 0, sizeof(*out));
    if (!(g->mrec.flags & REC_F_MULTIPART)) {
        if (idx != 1)
            return STRATA_ERANGE;
        out->part_number = 1;
        out->size = g->size;
        memcpy(out->etag, g->mrec.etag, sizeof(out->etag));
        out->cksum_algo = g->mrec.cksum_algo;
        memcpy(out->cksum, g->mrec.cksum, g->mrec.cksum_len);
        out->cksum_len = g->mrec.cksum_len;
        return 0;
    }
    if (idx == 0 || idx > g->mrec.nparts)
        return STRATA_ERANGE;
    unsigned c = (idx - 1) / MP_CHUNK_PARTS, i = (idx - 1) % MP_CHUNK_PARTS;
    int rc = mp_chunk(g, c);
    if (rc)
        return rc;
    if (i >= g->ncparts)
        return STRATA_ECORRUPT;
    const struct meta_part *p = &g->cparts[i];
    out->part_number = p->number;
    out->size = p->size;
    out->sealed_size = g->enc ? p->ssize : 0;
    out->offset = g->coff[i];
    strata_hex_encode(p->md5, 16, out->etag);
    out->cksum_algo = g->cksum_algo;
    memcpy(out->cksum, p->cksum, p->cksum_len);
    out->cksum_len = p->cksum_len;
    return 0;
}

/* ---- put ---------------------------------------------------------------- */

struct strata_put {
    struct strata_meta *m;
    unsigned set;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char key[STRATA_KEY_MAX + 1];
    int versioning;
    uint64_t bucket_inc; /* incarnation of the bucket at begin */
    uint64_t size_expected, got;
    EVP_MD_CTX *md5, *sha256, *ck_md;
    int ck_algo;
    uint32_t crc32;
    uint64_t crc64;
    bool has_md5, has_sha, has_ck;
    uint8_t exp_md5[16], exp_sha[32], exp_ck[STRATA_CKSUM_RAW_MAX];
    size_t exp_ck_len;
    uint8_t *buf;
    size_t buflen, bufcap;
    struct strata_tier *tier; /* where the data goes (inline data: the records) */
    void *w;                  /* tier writer */
    bool md5_here;            /* the tier cannot observe: MD5 on this thread */
    /* The stored bytes also go into the data cache (dcache.h), readable
     * once the commit named them: a checkpoint read right after it was
     * saved comes from memory. */
    struct meta_dc_fill dcf;
    char storage_class[32];
    uint8_t data_id[STRATA_DATA_ID_LEN];
    struct strata_kv *hdrs;
    size_t nhdrs;
    char *if_match;
    bool if_none_match_star;
    uint8_t *tags;
    size_t tags_len;
    uint8_t *acl;
    size_t acl_len;
    struct strata_obj_lock lock; /* of the new version, default applied */
    /* Encrypted puts: the plaintext goes through enc, which hands sealed
     * chunks to the store path; stored counts them.  The MD5 is then taken
     * here, over the plaintext, not by the observer. */
    struct sse_writer *enc;
    uint8_t *sse;
    size_t sse_len;
    uint64_t stored;
    char etag_override[STRATA_ETAG_MAX + 1];
    /* strata_put_opts.sse_sealed: writes are the sealed stream, counted
     * in stored; got is set to the plaintext size once it is complete. */
    bool sealed;
    /* MD5 (the ETag) of bytes that go through the erasure writer is taken
     * by the writer's observer thread (md5_observe_cb), beside this thread's
     * SHA-256, checksum, encode and I/O; it is final once the writer
     * finished.  Inline objects hash their buffer at commit. */
    bool md5_failed; /* written by the observer, read after finish */
    /* Part uploads (strata_mpu_part_begin): always erasure-coded. */
    bool is_part;
    bool writer_late; /* the writer starts with the first stored bytes (put_begin) */
    struct part_late *late; /* a part begun late: the rest of p is unset (part_resolve) */
    uint8_t upload[UPLOAD_LEN];
    unsigned part_no;
    int failed;
    bool replica; /* keeps replica_sk, the source's, as the version's sort key */
    uint8_t replica_sk[SORTKEY_LEN];
};

/* A part's options as strata_mpu_part_begin got them (late), copied. */
struct part_late {
    struct strata_part_opts o; /* its pointers: into the copies below */
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char key[STRATA_KEY_MAX + 1];
    char upload_id[STRATA_UPLOAD_ID_MAX + 1];
    uint8_t md5[16], sha256[32], cksum[STRATA_CKSUM_RAW_MAX];
    char sealed_etag[STRATA_ETAG_MAX + 1];
    void *sealed_desc;
};

static void part_late_free(struct part_late *l)
{
    if (l)
        free(l->sealed_desc);
    free(l);
}

void strata_obj_put_abort(struct strata_put *p)
{
    if (!p)
        return;
    strata_meta__dc_write_end(&p->dcf, false); /* not committed: the entry goes */
    if (p->w)
        p->tier->ops->writer_destroy(p->w);
    EVP_MD_CTX_free(p->md5);
    EVP_MD_CTX_free(p->sha256);
    EVP_MD_CTX_free(p->ck_md);
    free(p->buf);
    free(p->hdrs);
    free(p->if_match);
    free(p->tags);
    free(p->acl);
    strata_sse__writer_destroy(p->enc);
    free(p->sse);
    part_late_free(p->late);
    free(p);
}

/* Runs on the writer's observer thread, over the writer's stripe buffers. */
static void md5_observe_cb(void *ud, const void *data, size_t len)
{
    struct strata_put *p = ud;
    if (EVP_DigestUpdate(p->md5, data, len) != 1)
        p->md5_failed = true;
}

static int start_writer(struct strata_put *p)
{
    strata_data_id_new(p->data_id);
    const struct strata_tier_ops *ops = p->tier->ops;
    struct strata_meta *m = p->m;
    /* A version's or a part's data is pending until its commit (store.h:
     * the key_txn PUT or the part_put that names it clears it). */
    if (m->store->pending_add) {
        int prc = m->store->pending_add(m, p->bucket, p->bucket_inc, p->key,
                                        p->tier == m->tiers[0] ? NULL : p->tier->name, p->data_id);
        if (prc)
            return prc;
    }
    int rc = ops->writer_open(p->tier->impl, strata_meta__place(p->bucket, p->key), p->data_id,
                              &p->w);
    if (rc)
        return rc;
    if (!p->enc && ops->writer_observe) {
        rc = ops->writer_observe(p->w, md5_observe_cb, p);
        if (rc)
            return rc;
    }
    p->md5_here = !p->enc && !ops->writer_observe;
    /* The stored size follows from the announced one (sealed streams are
     * longer than their plaintext); a wrong one costs a truncate. */
    if (ops->writer_expect && p->size_expected != UINT64_MAX) {
        uint64_t n = p->enc || p->sealed ? strata_sse__stream_size(p->size_expected)
                                         : p->size_expected;
        rc = ops->writer_expect(p->w, n);
        if (rc)
            return rc;
        if (m->dcache_on_write && n > m->inline_max)
            strata_meta__dc_write_begin(m->dcache, p->tier, p->data_id, n, &p->dcf);
    }
    if (p->buflen) {
        if (p->md5_here && EVP_DigestUpdate(p->md5, p->buf, p->buflen) != 1)
            return STRATA_EINTERNAL;
        rc = ops->write(p->w, p->buf, p->buflen);
        if (rc)
            return rc;
        strata_meta__dc_write(&p->dcf, p->buf, p->buflen);
    }
    free(p->buf);
    p->buf = NULL;
    p->buflen = p->bufcap = 0;
    return 0;
}

static int put_begin(struct strata_meta *m, const struct strata_put_opts *opts, bool part,
                     uint32_t stream, struct strata_put **out)
{
    *out = NULL;
    if (!opts || !bucket_ok(opts->bucket))
        return STRATA_ENOTFOUND;
    if (!key_ok(opts->key))
        return STRATA_EINVAL;
    size_t ckl = strata_meta__cksum_len(opts->cksum_algo);
    if (opts->cksum_algo < 0 || opts->cksum_algo > STRATA_CKSUM_SHA256 ||
        (opts->cksum && opts->cksum_len != ckl))
        return STRATA_EINVAL;
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(m, opts->bucket, &b);
    if (rc)
        return rc;
    struct strata_put *p = calloc(1, sizeof(*p));
    if (!p)
        return STRATA_ENOMEM;
    p->m = m;
    snprintf(p->bucket, sizeof(p->bucket), "%s", opts->bucket);
    snprintf(p->key, sizeof(p->key), "%s", opts->key);
    p->set = strata_meta__set_of(m, p->bucket, p->key);
    p->tier = strata_meta__tier(m, opts->tier);
    snprintf(p->storage_class, sizeof(p->storage_class), "%s",
             opts->storage_class ? opts->storage_class : "STANDARD");
    if (!p->tier || (opts->storage_class && strlen(opts->storage_class) >= 32)) {
        rc = STRATA_EINVAL;
        goto fail;
    }
    p->versioning = b.versioning;
    p->bucket_inc = b.incarnation;
    if (opts->version_id) {
        if (part || b.versioning != STRATA_VERSIONING_ENABLED ||
            strata_meta__vid_parse(opts->version_id, p->replica_sk) != 0) {
            rc = STRATA_EINVAL;
            goto fail;
        }
        p->replica = true;
    }
    p->size_expected = opts->size;
    if (!part && (rc = strata_meta__lock_for_new(m, &b, &opts->lock, &p->lock)))
        goto fail;
    p->if_none_match_star = opts->if_none_match_star;
    rc = STRATA_ETOOBIG;
    if (opts->tags_len > STRATA_TAGS_MAX || opts->acl_len > STRATA_ACL_MAX)
        goto fail;
    rc = STRATA_ENOMEM;
    if (opts->if_match && !(p->if_match = strdup(opts->if_match)))
        goto fail;
    if (opts->acl_len) {
        if (!(p->acl = malloc(opts->acl_len)))
            goto fail;
        memcpy(p->acl, opts->acl, opts->acl_len);
        p->acl_len = opts->acl_len;
    }
    if (opts->tags_len) {
        if (!(p->tags = malloc(opts->tags_len)))
            goto fail;
        memcpy(p->tags, opts->tags, opts->tags_len);
        p->tags_len = opts->tags_len;
    }
    /* Copy the headers into one block: the kv array, then the strings. */
    size_t total = 0;
    for (size_t i = 0; i < opts->nhdrs; i++)
        total += strlen(opts->hdrs[i].name) + strlen(opts->hdrs[i].value) + 2;
    if (total > STRATA_HDRS_MAX + 2 * opts->nhdrs) {
        rc = STRATA_ETOOBIG;
        goto fail;
    }
    if (opts->nhdrs) {
        char *blk = malloc(opts->nhdrs * sizeof(struct strata_kv) + total);
        if (!blk)
            goto fail;
        p->hdrs = (struct strata_kv *)blk;
        char *sp = blk + opts->nhdrs * sizeof(struct strata_kv);
        for (size_t i = 0; i < opts->nhdrs; i++) {
            size_t nl = strlen(opts->hdrs[i].name) + 1, vl = strlen(opts->hdrs[i].value) + 1;
            memcpy(sp, opts->hdrs[i].name, nl);
            p->hdrs[i].name = sp;
            sp += nl;
            memcpy(sp, opts->hdrs[i].value, vl);
            p->hdrs[i].value = sp;
            sp += vl;
        }
        p->nhdrs = opts->nhdrs;
    }
    if (!(p->md5 = EVP_MD_CTX_new()) || EVP_DigestInit_ex(p->md5, EVP_md5(), NULL) != 1)
        goto fail;
    if (opts->md5) {
        p->has_md5 = true;
        memcpy(p->exp_md5, opts->md5, 16);
    }
    if (opts->sha256) {
        p->has_sha = true;
        memcpy(p->exp_sha, opts->sha256, 32);
        if (!(p->sha256 = EVP_MD_CTX_new()) ||
            EVP_DigestInit_ex(p->sha256, EVP_sha256(), NULL) != 1)
            goto fail;
    }
    p->ck_algo = opts->cksum_algo;
    if (p->ck_algo == STRATA_CKSUM_SHA1 || p->ck_algo == STRATA_CKSUM_SHA256) {
        if (!(p->ck_md = EVP_MD_CTX_new()) ||
            EVP_DigestInit_ex(p->ck_md,
                              p->ck_algo == STRATA_CKSUM_SHA1 ? EVP_sha1() : EVP_sha256(),
                              NULL) != 1)
            goto fail;
    }
    if (opts->cksum) {
        p->has_ck = true;
        memcpy(p->exp_ck, opts->cksum, ckl);
        p->exp_ck_len = ckl;
    }
    p->is_part = part;
    if (opts->sse_sealed && (opts->sse_key || !opts->etag_override ||
                             opts->size == UINT64_MAX)) {
        rc = STRATA_EINVAL;
        goto fail;
    }
    if (opts->sse_key || opts->sse_sealed) {
        rc = STRATA_EINVAL;
        if (!opts->sse || opts->sse_len == 0 || opts->sse_len > STRATA_SSE_DESC_MAX ||
            (opts->etag_override && strlen(opts->etag_override) > STRATA_ETAG_MAX))
            goto fail;
        rc = STRATA_ENOMEM;
        if (!(p->sse = malloc(opts->sse_len)))
            goto fail;
        memcpy(p->sse, opts->sse, opts->sse_len);
        p->sse_len = opts->sse_len;
        if (opts->etag_override)
            snprintf(p->etag_override, sizeof(p->etag_override), "%s", opts->etag_override);
        p->sealed = opts->sse_sealed;
        rc = p->sealed ? 0 : strata_sse__writer_create(opts->sse_key, stream, &p->enc);
        if (rc)
            goto fail;
    }
    if (part || (p->size_expected != UINT64_MAX && p->size_expected > m->inline_max)) {
        /* A store whose pending record is a remote op (RADOS: w/ on the
         * key's index shard, one round trip) would make begin's caller, the
         * server's event thread, wait for it with every connection it
         * serves: 2 event threads held ~200 such PUTs/s.  The writer
         * starts with the first bytes stored instead, on the thread that
         * stores them, still before any data byte is written. */
        if (m->store->pending_add) {
            p->writer_late = true;
        } else {
            rc = start_writer(p);
            if (rc)
                goto fail;
        }
    }
    *out = p;
    return 0;
fail:
    strata_obj_put_abort(p);
    return rc;
}

int strata_obj_put_begin(struct strata_meta *m, const struct strata_put_opts *opts,
                         struct strata_put **out)
{
    return put_begin(m, opts, false, 0, out);
}

/* strata_mpu_part_begin once its options are checked: the upload read. */
static int part_begin_now(struct strata_meta *m, const struct strata_part_opts *opts,
                          const uint8_t up[UPLOAD_LEN], struct strata_put **out)
{
    struct meta_upload u;
    int rc = m->store->upload_get(m, opts->bucket, opts->key, up, &u);
    if (rc)
        return rc;
    int algo = u.cksum_algo;
    uint8_t key[SSE_KEY_LEN] = {0}, md5[16];
    bool sse = u.sse_len != 0;
    bool sealed = opts->sealed_etag != NULL;
    if (sealed) /* a replica's sealed part: of the upload's very descriptor */
        rc = !sse || opts->sealed_desc_len != u.sse_len ||
                     memcmp(opts->sealed_desc, u.sse, u.sse_len) != 0 ||
                     strlen(opts->sealed_etag) != 32 ||
                     strata_hex_decode(opts->sealed_etag, 16, md5, true) != 0
                 ? STRATA_EINVAL
                 : 0;
    else if (opts->sse_key_cb)
        rc = opts->sse_key_cb(opts->sse_ud, u.sse, u.sse_len, key);
    else if (sse)
        rc = STRATA_EINVAL;
    if (rc) {
        strata_meta__upload_fini(&u);
        return rc;
    }
    if (opts->cksum_algo != STRATA_CKSUM_NONE) {
        if (algo != STRATA_CKSUM_NONE && opts->cksum_algo != algo) {
            OPENSSL_cleanse(key, sizeof(key));
            strata_meta__upload_fini(&u);
            return STRATA_EINVAL;
        }
        algo = opts->cksum_algo;
    }
    struct strata_put_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = opts->bucket;
    po.key = opts->key;
    po.size = opts->size;
    po.md5 = opts->md5;
    po.sha256 = opts->sha256;
    po.cksum_algo = algo;
    po.cksum = opts->cksum;
    po.cksum_len = opts->cksum_len;
    po.tier = u.tier;
    po.storage_class = u.storage_class[0] ? u.storage_class : NULL;
    if (sse) {
        po.sse_key = sealed ? NULL : key;
        po.sse_sealed = sealed;
        po.etag_override = opts->sealed_etag;
        po.sse = u.sse; /* reported by the part's commit, never stored with it */
        po.sse_len = u.sse_len;
    }
    rc = put_begin(m, &po, true, opts->part_number, out);
    OPENSSL_cleanse(key, sizeof(key));
    strata_meta__upload_fini(&u);
    if (rc)
        return rc;
    memcpy((*out)->upload, up, UPLOAD_LEN);
    (*out)->part_no = opts->part_number;
    return 0;
}

/* opts copied into l, its pointers into l's copies. */
static int part_late_copy(struct part_late *l, const struct strata_part_opts *opts)
{
    l->o = *opts;
    snprintf(l->bucket, sizeof(l->bucket), "%s", opts->bucket);
    snprintf(l->key, sizeof(l->key), "%s", opts->key);
    snprintf(l->upload_id, sizeof(l->upload_id), "%s", opts->upload_id);
    l->o.bucket = l->bucket;
    l->o.key = l->key;
    l->o.upload_id = l->upload_id;
    if (opts->md5)
        l->o.md5 = memcpy(l->md5, opts->md5, sizeof(l->md5));
    if (opts->sha256)
        l->o.sha256 = memcpy(l->sha256, opts->sha256, sizeof(l->sha256));
    if (opts->cksum) {
        if (opts->cksum_len > sizeof(l->cksum))
            return STRATA_EINVAL;
        l->o.cksum = memcpy(l->cksum, opts->cksum, opts->cksum_len);
    }
    if (opts->sealed_etag) {
        if (strlen(opts->sealed_etag) > STRATA_ETAG_MAX)
            return STRATA_EINVAL;
        l->o.sealed_etag = strcpy(l->sealed_etag, opts->sealed_etag);
    }
    if (opts->sealed_desc_len) {
        if (!opts->sealed_desc || !(l->sealed_desc = malloc(opts->sealed_desc_len)))
            return opts->sealed_desc ? STRATA_ENOMEM : STRATA_EINVAL;
        l->o.sealed_desc = memcpy(l->sealed_desc, opts->sealed_desc, opts->sealed_desc_len);
    }
    return 0;
}

int strata_mpu_part_begin(struct strata_meta *m, const struct strata_part_opts *opts,
                          struct strata_put **out)
{
    *out = NULL;
    if (!opts || !bucket_ok(opts->bucket))
        return STRATA_ENOTFOUND;
    if (!key_ok(opts->key) || opts->part_number < 1 || opts->part_number > STRATA_PARTS_MAX)
        return STRATA_EINVAL;
    uint8_t up[UPLOAD_LEN];
    if (!opts->upload_id || strata_meta__upload_id_parse(opts->upload_id, up))
        return STRATA_ENOTFOUND;
    /* As put_begin's writer: on a store whose reads are remote (RADOS,
     * where the pending record is), reading the upload here would make the
     * server's event thread wait a cluster round trip with every connection
     * it serves.  The caller that allows it gets a handle whose begin runs
     * with the first bytes, on the thread that stores them (part_resolve). */
    if (!opts->late || !m->store->pending_add)
        return part_begin_now(m, opts, up, out);
    struct strata_put *p = calloc(1, sizeof(*p));
    struct part_late *l = calloc(1, sizeof(*l));
    int rc = p && l ? part_late_copy(l, opts) : STRATA_ENOMEM;
    if (rc) {
        part_late_free(l);
        free(p);
        return rc;
    }
    p->m = m;
    p->is_part = true;
    p->late = l;
    *out = p;
    return 0;
}

/* A part begun late: its begin now (the shell p becomes the handle it
 * made: nothing points at p yet, its writer starts later); an error is
 * kept as p's failure. */
static int part_resolve(struct strata_put *p)
{
    struct part_late *l = p->late;
    p->late = NULL;
    uint8_t up[UPLOAD_LEN];
    struct strata_put *in = NULL;
    int rc = strata_meta__upload_id_parse(l->o.upload_id, up) ? STRATA_ENOTFOUND
                                                               : part_begin_now(p->m, &l->o, up, &in);
    part_late_free(l);
    if (rc)
        return p->failed = rc;
    *p = *in;
    free(in);
    return 0;
}

int strata_obj_put_expect_checksum(struct strata_put *p, int algo, const uint8_t *raw, size_t len)
{
    if (p->late && !p->failed)
        part_resolve(p);
    if (p->failed)
        return p->failed;
    if (algo != p->ck_algo || algo == STRATA_CKSUM_NONE || len != strata_meta__cksum_len(algo) ||
        !raw)
        return STRATA_EINVAL;
    memcpy(p->exp_ck, raw, len);
    p->exp_ck_len = len;
    p->has_ck = true;
    return 0;
}

static int put_store(void *ud, const uint8_t *buf, size_t len);

static int put_write(struct strata_put *p, const void *buf, size_t len)
{
    if (p->sealed) { /* the stream as it came: its size follows the plaintext's */
        if (len > strata_sse__stream_size(p->size_expected) - p->stored)
            return STRATA_EINCOMPLETE;
        if (p->sha256 && EVP_DigestUpdate(p->sha256, buf, len) != 1)
            return STRATA_EINTERNAL;
        return put_store(p, buf, len);
    }
    if (p->size_expected != UINT64_MAX && len > p->size_expected - p->got)
        return STRATA_EINCOMPLETE; /* more bytes than announced */
    if (p->sha256 && EVP_DigestUpdate(p->sha256, buf, len) != 1)
        return STRATA_EINTERNAL;
    switch (p->ck_algo) {
    case STRATA_CKSUM_CRC32:
        p->crc32 = strata_crc32(p->crc32, buf, len);
        break;
    case STRATA_CKSUM_CRC32C:
        p->crc32 = strata_crc32c(p->crc32, buf, len);
        break;
    case STRATA_CKSUM_CRC64NVME:
        p->crc64 = strata_crc64nvme(p->crc64, buf, len);
        break;
    case STRATA_CKSUM_SHA1:
    case STRATA_CKSUM_SHA256:
        if (EVP_DigestUpdate(p->ck_md, buf, len) != 1)
            return STRATA_EINTERNAL;
        break;
    default:
        break;
    }
    p->got += len;
    if (p->enc) {
        if (EVP_DigestUpdate(p->md5, buf, len) != 1)
            return STRATA_EINTERNAL;
        return strata_sse__writer_write(p->enc, buf, len, put_store, p);
    }
    return put_store(p, buf, len);
}

/* Bytes as stored: into the inline buffer until they outgrow it, then
 * through the erasure writer. */
static int put_store(void *ud, const uint8_t *buf, size_t len)
{
    struct strata_put *p = ud;
    p->stored += len;
    if (!p->w && (p->writer_late || p->buflen + len > p->m->inline_max)) {
        int rc = start_writer(p);
        if (rc)
            return rc;
    }
    if (p->w) {
        if (p->md5_here && EVP_DigestUpdate(p->md5, buf, len) != 1)
            return STRATA_EINTERNAL;
        int rc = p->tier->ops->write(p->w, buf, len);
        if (rc == 0)
            strata_meta__dc_write(&p->dcf, buf, len);
        return rc;
    }
    if (p->buflen + len > p->bufcap) {
        size_t cap = p->bufcap ? p->bufcap : 16384;
        /* The announced size at once: growing by doubling copied a 100 KiB
         * body three times over. */
        if (!p->bufcap && !p->enc && !p->sealed && p->size_expected != UINT64_MAX &&
            p->size_expected >= p->buflen + len && p->size_expected <= p->m->inline_max)
            cap = (size_t)p->size_expected;
        while (cap < p->buflen + len)
            cap *= 2;
        if (cap > p->m->inline_max && p->m->inline_max >= p->buflen + len)
            cap = p->m->inline_max;
        uint8_t *nb = realloc(p->buf, cap);
        if (!nb)
            return STRATA_ENOMEM;
        p->buf = nb;
        p->bufcap = cap;
    }
    memcpy(p->buf + p->buflen, buf, len);
    p->buflen += len;
    return 0;
}

/* Bytes handed to put_write at a time: the SHA-256 and the checksum read
 * a slice just before the store path copies it, so the copy reads it from
 * the core's cache rather than from memory. */
#define PUT_SLICE (64u << 10)

int strata_obj_put_write(struct strata_put *p, const void *buf, size_t len)
{
    if (p->failed)
        return p->failed;
    if (len == 0)
        return 0;
    if (p->late && part_resolve(p))
        return p->failed;
    const uint8_t *b = buf;
    while (len > 0) {
        size_t n = len < PUT_SLICE ? len : PUT_SLICE;
        int rc = put_write(p, b, n);
        if (rc) {
            p->failed = rc;
            return rc;
        }
        b += n;
        len -= n;
    }
    return 0;
}

/* Finish the digests and compare them with what the client announced.
 * With a writer, only after strata_ec_writer_finish (the MD5 is complete
 * and the observer no longer touches p->md5). */
static int put_verify(struct strata_put *p, char etag[STRATA_ETAG_MAX + 1],
                      uint8_t ck[STRATA_CKSUM_RAW_MAX], size_t *ckl)
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdl = 0;
    if (p->size_expected != UINT64_MAX && p->got != p->size_expected)
        return STRATA_EINCOMPLETE;
    if (!p->enc && !p->w && p->buflen && EVP_DigestUpdate(p->md5, p->buf, p->buflen) != 1)
        return STRATA_EINTERNAL;
    if (p->md5_failed || EVP_DigestFinal_ex(p->md5, md, &mdl) != 1 || mdl != 16)
        return STRATA_EINTERNAL;
    strata_hex_encode(md, 16, etag);
    if (p->has_md5 && memcmp(md, p->exp_md5, 16) != 0)
        return STRATA_EBADDIGEST;
    if (p->etag_override[0])
        snprintf(etag, STRATA_ETAG_MAX + 1, "%s", p->etag_override);
    if (p->sha256) {
        uint8_t sh[EVP_MAX_MD_SIZE];
        unsigned shl = 0;
        if (EVP_DigestFinal_ex(p->sha256, sh, &shl) != 1 || shl != 32)
            return STRATA_EINTERNAL;
        if (memcmp(sh, p->exp_sha, 32) != 0)
            return STRATA_ESHA256MISMATCH;
    }
    if (p->sealed) { /* the checksum of a plaintext this side cannot read: as given */
        *ckl = p->has_ck ? p->exp_ck_len : 0;
        memcpy(ck, p->exp_ck, *ckl);
        return 0;
    }
    *ckl = strata_meta__cksum_len(p->ck_algo);
    switch (p->ck_algo) {
    case STRATA_CKSUM_CRC32:
    case STRATA_CKSUM_CRC32C:
        for (int i = 0; i < 4; i++)
            ck[i] = (uint8_t)(p->crc32 >> (24 - 8 * i));
        break;
    case STRATA_CKSUM_CRC64NVME:
        for (int i = 0; i < 8; i++)
            ck[i] = (uint8_t)(p->crc64 >> (56 - 8 * i));
        break;
    case STRATA_CKSUM_SHA1:
    case STRATA_CKSUM_SHA256: {
        unsigned l = 0;
        if (EVP_DigestFinal_ex(p->ck_md, ck, &l) != 1 || l != *ckl)
            return STRATA_EINTERNAL;
        break;
    }
    default:
        break;
    }
    if (p->has_ck && (p->exp_ck_len != *ckl || memcmp(ck, p->exp_ck, *ckl) != 0))
        return STRATA_ECHECKSUM;
    return 0;
}

/* ---- the rules of a new version (key_txn decide functions) ------------- */

/* If-Match on a key with no current version (or a delete marker) is
 * STRATA_ENOTFOUND, as AWS answers 404 there; "*" matches any version. */
static int check_cond(const char *if_match, bool if_none_match_star,
                      const struct strata_meta__key_slot *latest)
{
    bool exists = latest->rc == 0 && !(latest->rec->flags & REC_F_DELETE_MARKER);
    if (if_none_match_star && exists)
        return STRATA_EPRECOND;
    if (if_match && !exists)
        return STRATA_ENOTFOUND;
    if (if_match && strcmp(if_match, "*") != 0 && strcmp(if_match, latest->rec->etag) != 0)
        return STRATA_EPRECOND;
    return 0;
}

/* The version a new unversioned write or delete replaces: the null version. */
static bool replaces_null(int versioning)
{
    return versioning != STRATA_VERSIONING_ENABLED;
}

unsigned strata_meta__version_want(int versioning)
{
    if (versioning == STRATA_VERSIONING_OFF)
        return STRATA_META__KEY_NULL | STRATA_META__KEY_NULL_IS_LATEST;
    return STRATA_META__KEY_LATEST | (replaces_null(versioning) ? STRATA_META__KEY_NULL : 0);
}

void strata_meta__slot_vid(const struct strata_meta__key_slot *s,
                           char out[STRATA_VERSION_ID_MAX + 1])
{
    if (s->rec->flags & REC_F_NULL)
        snprintf(out, STRATA_VERSION_ID_MAX + 1, "null");
    else
        strata_meta__vid_format(s->sk, out);
}

/* What the slot's version leaves to drop once it is replaced or deleted. */
static void reclaim_of(const struct strata_meta__key_slot *s, struct strata_meta__key_reclaim *rc)
{
    memset(rc, 0, sizeof(*rc));
    if (s->rc != 0 || !s->rec)
        return;
    rc->any = true;
    rc->flags = s->rec->flags;
    rc->has_data_id = s->rec->has_data_id;
    memcpy(rc->data_id, s->rec->data_id, STRATA_DATA_ID_LEN);
    memcpy(rc->sk, s->sk, SORTKEY_LEN);
    rc->nparts = s->rec->nparts;
    snprintf(rc->tier, sizeof(rc->tier), "%s", s->rec->tier);
}

void strata_meta__drop_of_reclaim(const struct strata_meta *m,
                                  const struct strata_meta__key_reclaim *rc,
                                  struct meta_drop *drop)
{
    memset(drop, 0, sizeof(*drop));
    if (!rc->any)
        return;
    drop->any = true;
    drop->flags = rc->flags;
    drop->has_data_id = rc->has_data_id;
    memcpy(drop->data_id, rc->data_id, STRATA_DATA_ID_LEN);
    memcpy(drop->sk, rc->sk, SORTKEY_LEN);
    drop->nparts = rc->nparts;
    int t = strata_meta__tier_idx(m, rc->tier);
    drop->tier = t < 0 ? 0 : (unsigned)t;
}

/* The mtime of a new version: now, or just after the latest if the clock
 * stepped back (versions keep their newest-first order). */
/* A new version's mtime: after the latest's, and after its last rewrite,
 * so that the key's change stamps (event sequencers) keep the index's
 * order whichever gateway's clock decides. */
static int64_t new_mtime(const struct strata_meta__key_view *v)
{
    return v->latest.rc == 0 ? strata_meta__stamp_after(v->latest.rec, v->now_ns) : v->now_ns;
}

/*
 * A replica whose version id is already there (a replay after a crash of
 * the source, or the version sent again) replaces it, except a delete
 * marker (STRATA_EEXISTS), and except a version under Object Lock, which
 * keeps its bytes (STRATA_ELOCKED; the same bytes again are taken).
 */
/* A replica sent again may keep or strengthen the lock of the version it
 * replaces, never weaken it: a peer allowed to replicate is not allowed to
 * release a legal hold, shorten a retention or lower COMPLIANCE (those
 * changes are made on each side by its own owner). */
static bool lock_weaker(const struct strata_obj_lock *old, const struct strata_obj_lock *nw,
                        int64_t now_ms)
{
    if (old->legal_hold && !nw->legal_hold)
        return true;
    if (old->mode == STRATA_LOCK_NONE || old->until_ms <= now_ms)
        return false;
    if (nw->mode == STRATA_LOCK_NONE || nw->until_ms < old->until_ms)
        return true;
    return old->mode == STRATA_LOCK_COMPLIANCE && nw->mode != STRATA_LOCK_COMPLIANCE;
}

static int replica_may_replace(const struct strata_meta__key_view *v, const struct meta_rec *r)
{
    const struct strata_meta__key_slot *s = &v->version;
    if (s->rc == STRATA_ENOTFOUND)
        return 0;
    if (s->rc)
        return s->rc;
    if (s->rec->flags & REC_F_DELETE_MARKER)
        return STRATA_EEXISTS;
    if (strata_obj_lock_active(&s->rec->lock, v->lock_now_ms) &&
        (strcmp(s->rec->etag, r->etag) != 0 || lock_weaker(&s->rec->lock, &r->lock, v->lock_now_ms)))
        return STRATA_ELOCKED;
    return 0;
}

/* version_decide, and with replica_sk (non-NULL) a replica's: that sort
 * key and the time it carries, the version of that id (the view's version
 * slot) replaced. */
static int new_version_decide(const struct strata_meta__key_view *v, int versioning,
                              struct meta_rec *r, const char *if_match, bool if_none_match_star,
                              const uint8_t *replica_sk, struct strata_meta__key_edit *e)
{
    if (v->latest.rc != 0 && v->latest.rc != STRATA_ENOTFOUND)
        return v->latest.rc;
    int rc = check_cond(if_match, if_none_match_star, &v->latest);
    if (rc)
        return rc;
    bool rn = replaces_null(versioning);
    if (rn) {
        if (v->null.rc != 0 && v->null.rc != STRATA_ENOTFOUND)
            return v->null.rc;
        /* A write that replaces the null version must not replace a locked
         * one (Object Lock buckets keep versioning enabled, so only a
         * bucket whose versions were locked before some other path could
         * get here). */
        if (v->null.rc == 0) {
            rc = strata_meta__lock_may_remove(v->null.sk, v->null.rec, NULL, "PutObject",
                                              v->lock_now_ms, &e->audit);
            if (rc)
                return rc;
        }
    }
    int64_t mt;
    if (replica_sk) {
        if (rn) /* a replica has an id of its own: versioning enabled */
            return STRATA_EINVAL;
        if ((rc = replica_may_replace(v, r)) != 0)
            return rc;
        memcpy(e->sk, replica_sk, SORTKEY_LEN);
        mt = strata_meta__sortkey_mtime(replica_sk);
    } else {
        mt = new_mtime(v);
        strata_meta__sortkey_make(mt, v->rand, e->sk);
    }
    e->op = STRATA_META__KEY_PUT;
    r->flags &= ~REC_F_NULL;
    r->flags |= rn ? REC_F_NULL : 0;
    r->mtime_ns = mt;
    e->rec = r;
    e->tomb_ns = mt;
    if (rn) {
        e->replace = STRATA_META__SLOT_NULL;
        reclaim_of(&v->null, &e->reclaim);
    } else if (replica_sk && v->version.rc == 0) { /* written over it, its data dropped */
        e->replace = STRATA_META__SLOT_VERSION;
        reclaim_of(&v->version, &e->reclaim);
    }
    return 0;
}

int strata_meta__version_decide(const struct strata_meta__key_view *v, int versioning,
                                struct meta_rec *r, const char *if_match,
                                bool if_none_match_star, struct strata_meta__key_edit *e)
{
    return new_version_decide(v, versioning, r, if_match, if_none_match_star, NULL, e);
}

int strata_meta__replica_decide(const struct strata_meta__key_view *v, struct meta_rec *r,
                                const uint8_t sk[SORTKEY_LEN], struct strata_meta__key_edit *e)
{
    return new_version_decide(v, STRATA_VERSIONING_ENABLED, r, NULL, false, sk, e);
}

/* Remove the (unreferenced) data of a put that failed. */
static void put_data_rm(struct strata_put *p)
{
    p->tier->ops->remove(p->tier->impl, strata_meta__place(p->bucket, p->key), p->data_id);
}

/* A part's data is finished (by the caller) and its record committed by
 * mpu.c (which checks the upload under the key lock); on failure the data
 * goes. */
static int part_commit(struct strata_put *p, const char *etag, const uint8_t *ck, size_t ckl,
                       struct strata_obj_info *out)
{
    struct strata_meta *m = p->m;
    int rc;
    struct meta_part part;
    memset(&part, 0, sizeof(part));
    part.number = p->part_no;
    part.size = p->got;
    part.ssize = p->enc || p->sealed ? p->stored : 0;
    if (strata_hex_decode(etag, 16, part.md5, true) != 0) /* our own etag */
        return STRATA_EINTERNAL;
    part.has_data_id = true;
    memcpy(part.data_id, p->data_id, STRATA_DATA_ID_LEN);
    if (p->tier != m->tiers[0])
        snprintf(part.tier, sizeof(part.tier), "%s", p->tier->name);
    part.cksum_algo = p->ck_algo;
    memcpy(part.cksum, ck, ckl);
    part.cksum_len = ckl;
    part.mtime_ns = now_ns();
    rc = strata_meta__part_store(m, p->bucket, p->key, p->upload, &part);
    strata_meta__dc_write_end(&p->dcf, rc == 0);
    if (rc) {
        p->tier->ops->remove(p->tier->impl, strata_meta__place(p->bucket, p->key), p->data_id);
    } else if (out) {
        memset(out, 0, sizeof(*out));
        snprintf(out->bucket, sizeof(out->bucket), "%s", p->bucket);
        snprintf(out->key, sizeof(out->key), "%s", p->key);
        out->size = part.size;
        snprintf(out->etag, sizeof(out->etag), "%s", etag);
        out->mtime_ms = part.mtime_ns / 1000000;
        snprintf(out->storage_class, sizeof(out->storage_class), "%s", p->storage_class);
        snprintf(out->tier, sizeof(out->tier), "%s", p->tier->name);
        out->cksum_algo = part.cksum_algo;
        memcpy(out->cksum, ck, ckl);
        out->cksum_len = ckl;
        if ((p->enc || p->sealed) && (out->sse = malloc(p->sse_len)) != NULL) {
            memcpy(out->sse, p->sse, p->sse_len);
            out->sse_len = p->sse_len;
        }
    }
    strata_obj_put_abort(p);
    return rc;
}

/* A PUT's commit: the record of p under the version rules. */
struct put_txn {
    struct strata_put *p;
    const char *etag;
    const uint8_t *ck;
    size_t ckl;
    struct meta_rec r;               /* the new version's record (decide's last run) */
    struct strata_meta__key_edit e; /* and its edit: sort key, reclaim */
};

/* The early conditional check, on a read without the key lock. */
static int put_cond_decide(void *ud, const struct strata_meta__key_view *v,
                           struct strata_meta__key_edit *e)
{
    (void)e;
    const struct strata_put *p = ud;
    if (v->latest.rc != 0 && v->latest.rc != STRATA_ENOTFOUND)
        return v->latest.rc;
    return check_cond(p->if_match, p->if_none_match_star, &v->latest);
}

static int put_decide(void *ud, const struct strata_meta__key_view *v,
                      struct strata_meta__key_edit *e)
{
    struct put_txn *x = ud;
    struct strata_put *p = x->p;
    struct strata_meta *m = p->m;
    struct meta_rec *r = &x->r;
    memset(r, 0, sizeof(*r));
    r->size = p->got;
    if (p->enc || p->sealed) {
        r->size = p->stored;
        r->psize = p->got;
        r->sse = p->sse;
        r->sse_len = p->sse_len;
    }
    snprintf(r->etag, sizeof(r->etag), "%s", x->etag);
    snprintf(r->storage_class, sizeof(r->storage_class), "%s", p->storage_class);
    if (p->tier != m->tiers[0])
        snprintf(r->tier, sizeof(r->tier), "%s", p->tier->name);
    r->cksum_algo = p->ck_algo;
    memcpy(r->cksum, x->ck, x->ckl);
    r->cksum_len = x->ckl;
    strata_meta__rec_borrow(r, p->hdrs, p->nhdrs, p->tags, p->tags_len, p->acl, p->acl_len);
    r->lock = p->lock;
    if (p->w) {
        r->has_data_id = true;
        memcpy(r->data_id, p->data_id, STRATA_DATA_ID_LEN);
    } else {
        r->flags |= REC_F_INLINE;
        e->inline_data = p->buf;
        e->inline_len = p->buflen;
    }
    int rc = new_version_decide(v, p->versioning, r, p->if_match, p->if_none_match_star,
                                p->replica ? p->replica_sk : NULL, e);
    x->e = *e;
    return rc;
}

/* The caller's info of the committed version, with its own headers. */
static void put_info(struct strata_put *p, struct meta_rec *r, const uint8_t *sk,
                     struct strata_obj_info *out)
{
    r->shard = NULL;
    r->hdrs = NULL;
    r->nhdrs = 0;
    strata_meta__info_from_rec(out, p->bucket, p->key, sk, r);
    out->is_latest = true;
    /* Give the caller its own copy of the headers. */
    struct meta_rec tmp;
    char *v;
    size_t vl;
    memset(&tmp, 0, sizeof(tmp));
    r->hdrs = p->hdrs;
    r->nhdrs = p->nhdrs;
    r->flags &= ~REC_F_INLINE;
    r->has_data_id = true;
    if (strata_meta__rec_encode(r, &v, &vl) == 0) {
        if (strata_meta__rec_decode(v, vl, true, &tmp) == 0) {
            out->hdrs = tmp.hdrs;
            out->nhdrs = tmp.nhdrs;
            out->priv_ = tmp.hdr_buf;
        }
        free(v);
    }
}

int strata_obj_put_commit(struct strata_put *p, struct strata_obj_info *out)
{
    if (p->late && !p->failed)
        part_resolve(p); /* no byte came */
    struct strata_meta *m = p->m;
    if (p->failed) {
        int f = p->failed;
        strata_obj_put_abort(p);
        return f;
    }
    char etag[STRATA_ETAG_MAX + 1];
    uint8_t ck[STRATA_CKSUM_RAW_MAX];
    size_t ckl = 0;
    int rc = 0;
    if (p->sealed && p->stored == strata_sse__stream_size(p->size_expected))
        p->got = p->size_expected;
    if (p->size_expected != UINT64_MAX && p->got != p->size_expected) {
        strata_obj_put_abort(p);
        return STRATA_EINCOMPLETE;
    }
    bool data_done = false;
    if (!p->is_part && (p->if_match || p->if_none_match_star)) {
        /* Early check, so a doomed write does not finish its data; the
         * authoritative check runs again in the commit's key_txn. */
        struct strata_meta__key_txn ct = {
            .bucket = p->bucket,
            .key = p->key,
            .want = STRATA_META__KEY_LATEST | STRATA_META__KEY_NO_BYTES,
            .decide = put_cond_decide,
            .ud = p,
        };
        rc = m->store->key_read(m, &ct);
        if (rc) {
            strata_obj_put_abort(p);
            return rc;
        }
    }
    /* Data first: its fsyncs run while the observer thread finishes the
     * MD5; the digests are verified before anything is committed, and a
     * mismatch removes the (unreferenced) data again. */
    if (p->enc && (rc = strata_sse__writer_finish(p->enc, put_store, p)) != 0) {
        strata_obj_put_abort(p);
        return rc;
    }
    if (!p->w && p->writer_late && (rc = start_writer(p)) != 0) { /* no byte came */
        strata_obj_put_abort(p);
        return rc;
    }
    if (p->w) {
        rc = p->tier->ops->finish(p->w);
        if (rc) {
            strata_obj_put_abort(p);
            return rc;
        }
        data_done = true;
    }
    rc = put_verify(p, etag, ck, &ckl);
    if (rc) {
        if (data_done)
            put_data_rm(p);
        strata_obj_put_abort(p);
        return rc;
    }
    if (p->is_part)
        return part_commit(p, etag, ck, ckl, out);

    /* The bucket may have been deleted (and even created again) since
     * begin: the txn checks it and holds it until the commit is done. */
    struct put_txn x = {.p = p, .etag = etag, .ck = ck, .ckl = ckl};
    struct strata_meta__key_txn t = {
        .bucket = p->bucket,
        .key = p->key,
        .incarnation = p->bucket_inc,
        .hold_bucket = true,
        .want = strata_meta__version_want(p->versioning) | STRATA_META__KEY_NO_BYTES,
        .want_copies = true,
        .decide = put_decide,
        .ud = &x,
    };
    char vid[STRATA_VERSION_ID_MAX + 1];
    if (p->replica) { /* the version the source's id already names, if any */
        strata_meta__vid_format(p->replica_sk, vid);
        t.want |= STRATA_META__KEY_VERSION;
        t.version_id = vid;
    }
    rc = m->store->key_txn(m, &t);
    strata_meta__dc_write_end(&p->dcf, rc == 0);
    if (rc == 0) {
        struct meta_drop drop;
        strata_meta__drop_of_reclaim(m, &x.e.reclaim, &drop);
        strata_meta__drop(m, p->set, p->bucket, p->key, &drop);
        if (out)
            put_info(p, &x.r, x.e.sk, out);
    } else if (data_done) {
        put_data_rm(p);
    }
    strata_obj_put_abort(p);
    return rc;
}

/* ---- delete ------------------------------------------------------------- */

int strata_obj_delete(struct strata_meta *m, const char *bucket, const char *key,
                      const char *version_id, struct strata_del_result *out)
{
    return strata_obj_delete_opts(m, bucket, key, version_id, NULL, out);
}

/* A DeleteObject's txn: by version (or on a never-versioned bucket) the
 * version is deleted for good, else a delete marker is the new version
 * (the null one on suspended buckets, replacing the null version). */
struct del_txn {
    int versioning;
    bool by_version;
    const uint8_t *marker_sk; /* a replicated marker's sort key (the source's), or NULL */
    const struct strata_lock_actor *actor;
    struct meta_rec r; /* a delete marker's record */
    struct strata_del_result res;
    struct strata_meta__key_edit e;
};

static int del_version_decide(struct del_txn *x, const struct strata_meta__key_view *v,
                              struct strata_meta__key_edit *e)
{
    const struct strata_meta__key_slot *s = &v->version;
    if (s->rc == STRATA_ENOTFOUND && !x->by_version)
        return 0; /* deleting an absent object is fine */
    if (s->rc)
        return s->rc;
    int rc = strata_meta__lock_may_remove(s->sk, s->rec, x->actor, "DeleteObject",
                                          v->lock_now_ms, &e->audit);
    if (rc)
        return rc;
    e->op = STRATA_META__KEY_REMOVE;
    e->replace = STRATA_META__SLOT_VERSION;
    e->tomb_ns = v->now_ns;
    reclaim_of(s, &e->reclaim);
    x->res.delete_marker = (s->rec->flags & REC_F_DELETE_MARKER) != 0;
    x->res.seq_ns = strata_meta__stamp_after(s->rec, v->now_ns);
    strata_meta__slot_vid(s, x->res.version_id);
    return 0;
}

/* A replicated marker: its id and time are the source's.  A marker of that
 * id already there is the same marker sent again (nothing to write); any
 * other version of that id is STRATA_EEXISTS. */
static int del_replica_decide(struct del_txn *x, const struct strata_meta__key_view *v,
                              struct strata_meta__key_edit *e)
{
    const struct strata_meta__key_slot *s = &v->version;
    if (s->rc != 0 && s->rc != STRATA_ENOTFOUND)
        return s->rc;
    x->res.delete_marker = true;
    x->res.seq_ns = strata_meta__sortkey_mtime(x->marker_sk);
    strata_meta__vid_format(x->marker_sk, x->res.version_id);
    if (s->rc == 0)
        return s->rec->flags & REC_F_DELETE_MARKER ? 0 : STRATA_EEXISTS;
    struct meta_rec *r = &x->r;
    memset(r, 0, sizeof(*r));
    r->flags = REC_F_DELETE_MARKER;
    r->mtime_ns = strata_meta__sortkey_mtime(x->marker_sk);
    snprintf(r->storage_class, sizeof(r->storage_class), "STANDARD");
    e->op = STRATA_META__KEY_PUT;
    e->rec = r;
    e->tomb_ns = r->mtime_ns;
    memcpy(e->sk, x->marker_sk, SORTKEY_LEN);
    return 0;
}

static int del_marker_decide(struct del_txn *x, const struct strata_meta__key_view *v,
                             struct strata_meta__key_edit *e)
{
    if (x->marker_sk)
        return del_replica_decide(x, v, e);
    if (v->latest.rc != 0 && v->latest.rc != STRATA_ENOTFOUND)
        return v->latest.rc;
    int64_t mt = new_mtime(v);
    bool suspended = x->versioning == STRATA_VERSIONING_SUSPENDED;
    if (suspended) {
        if (v->null.rc != 0 && v->null.rc != STRATA_ENOTFOUND)
            return v->null.rc;
        if (v->null.rc == 0) { /* the null delete marker replaces the null version */
            int rc = strata_meta__lock_may_remove(v->null.sk, v->null.rec, x->actor,
                                                  "DeleteObject", v->lock_now_ms, &e->audit);
            if (rc)
                return rc;
            e->replace = STRATA_META__SLOT_NULL;
            reclaim_of(&v->null, &e->reclaim);
        }
    }
    struct meta_rec *r = &x->r;
    memset(r, 0, sizeof(*r));
    r->flags = REC_F_DELETE_MARKER | (suspended ? REC_F_NULL : 0);
    r->mtime_ns = mt;
    if (x->actor && x->actor->marker_hdr) {
        r->hdrs = (struct strata_kv *)x->actor->marker_hdr; /* borrowed for the encode */
        r->nhdrs = 1;
    }
    snprintf(r->storage_class, sizeof(r->storage_class), "STANDARD");
    e->op = STRATA_META__KEY_PUT;
    e->rec = r;
    e->tomb_ns = mt;
    strata_meta__sortkey_make(mt, v->rand, e->sk);
    x->res.delete_marker = true;
    x->res.seq_ns = mt;
    if (suspended)
        snprintf(x->res.version_id, sizeof(x->res.version_id), "null");
    else
        strata_meta__vid_format(e->sk, x->res.version_id);
    return 0;
}

static int del_decide(void *ud, const struct strata_meta__key_view *v,
                      struct strata_meta__key_edit *e)
{
    struct del_txn *x = ud;
    memset(&x->res, 0, sizeof(x->res));
    int rc = x->by_version || x->versioning == STRATA_VERSIONING_OFF
                 ? del_version_decide(x, v, e)
                 : del_marker_decide(x, v, e);
    x->e = *e;
    return rc;
}

/* marker_vid: a replicated delete marker's id (parsed into marker_sk), or
 * NULL. */
static int delete_impl(struct strata_meta *m, const char *bucket, const char *key,
                       const char *version_id, const struct strata_lock_actor *actor,
                       const char *marker_vid, const uint8_t *marker_sk,
                       struct strata_del_result *out)
{
    int rc = key_args(bucket, key, out, sizeof(*out));
    if (rc)
        return rc;
    struct strata_bucket_info b;
    rc = strata_meta_bucket_get(m, bucket, &b);
    if (rc)
        return rc;
    struct del_txn xs, *x = &xs;
    memset(x, 0, sizeof(*x));
    x->versioning = b.versioning;
    x->by_version = version_id && *version_id;
    x->actor = actor;
    x->marker_sk = marker_sk;
    if (marker_sk && (b.versioning != STRATA_VERSIONING_ENABLED || x->by_version))
        return STRATA_EINVAL;
    /* No delete marker lands in a deleted bucket: the txn holds it. */
    struct strata_meta__key_txn t = {
        .bucket = bucket,
        .key = key,
        .incarnation = b.incarnation,
        .hold_bucket = true,
        .want_copies = true,
    };
    if (marker_sk) { /* the version its id names already, if any */
        t.want = STRATA_META__KEY_VERSION;
        t.version_id = marker_vid;
    } else if (x->by_version || b.versioning == STRATA_VERSIONING_OFF) {
        t.want = STRATA_META__KEY_VERSION;
        t.version_id = x->by_version ? version_id : "null";
    } else {
        t.want = STRATA_META__KEY_LATEST | STRATA_META__KEY_NO_BYTES |
                 (b.versioning == STRATA_VERSIONING_SUSPENDED ? STRATA_META__KEY_NULL : 0);
    }
    t.decide = del_decide;
    t.ud = x;
    rc = m->store->key_txn(m, &t);
    if (rc == 0) {
        if (out)
            *out = x->res;
        struct meta_drop drop;
        strata_meta__drop_of_reclaim(m, &x->e.reclaim, &drop);
        strata_meta__drop(m, strata_meta__set_of(m, bucket, key), bucket, key, &drop);
    }
    return rc;
}

int strata_obj_delete_opts(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, const struct strata_lock_actor *actor,
                           struct strata_del_result *out)
{
    return delete_impl(m, bucket, key, version_id, actor, NULL, NULL, out);
}

int strata_obj_delete_marker_replica(struct strata_meta *m, const char *bucket, const char *key,
                                     const char *marker_vid, struct strata_del_result *out)
{
    uint8_t sk[SORTKEY_LEN];
    if (out)
        memset(out, 0, sizeof(*out));
    if (!marker_vid || strata_meta__vid_parse(marker_vid, sk) != 0)
        return STRATA_EINVAL;
    return delete_impl(m, bucket, key, NULL, NULL, marker_vid, sk, out);
}

/* ---- tags --------------------------------------------------------------- */

int strata_obj_tags_get(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, void **tags, size_t *len,
                        char vid_out[STRATA_VERSION_ID_MAX + 1])
{
    *tags = NULL;
    *len = 0;
    struct strata_obj_info info;
    int rc = strata_obj_head(m, bucket, key, version_id, &info);
    if (rc == 0) {
        if (vid_out)
            memcpy(vid_out, info.version_id, sizeof(info.version_id));
        *tags = info.tags;
        *len = info.tags_len;
        info.tags = NULL;
        info.tags_len = 0;
    }
    strata_obj_info_fini(&info);
    return rc;
}

int strata_meta__rewrite_begin(const struct strata_meta__key_view *v, const char *version_id,
                               struct strata_meta__key_edit *e, char vid[STRATA_VERSION_ID_MAX + 1])
{
    const struct strata_meta__key_slot *s = &v->version;
    if (s->rc)
        return s->rc;
    const struct meta_rec *cur = s->rec;
    if (cur->flags & REC_F_DELETE_MARKER)
        return !version_id || !*version_id ? STRATA_ENOTFOUND : STRATA_EMETHOD;
    e->op = STRATA_META__KEY_REWRITE;
    e->rw.changed_ns = strata_meta__stamp_after(cur, v->now_ns);
    e->rw.tags = cur->tags;
    e->rw.tags_len = cur->tags_len;
    e->rw.lock = cur->lock;
    e->rw.sse = cur->sse;
    e->rw.sse_len = cur->sse_len;
    e->rw.acl = cur->acl;
    e->rw.acl_len = cur->acl_len;
    strata_meta__slot_vid(s, vid);
    return 0;
}

/* A rewrite through key_txn: fn decides once per view, on the agreed
 * record, what changes. */
struct rewrite_txn {
    const char *version_id;
    meta_edit_fn fn;
    void *ud;
    bool markers; /* a delete marker named by its id is rewritten too */
    char vid[STRATA_VERSION_ID_MAX + 1];
    int64_t seq_ns; /* the change stamp of the rewrite decided last */
};

static int rewrite_decide(void *ud, const struct strata_meta__key_view *v,
                          struct strata_meta__key_edit *e)
{
    struct rewrite_txn *x = ud;
    const struct strata_meta__key_slot *s = &v->version;
    int rc;
    if (x->markers && s->rc == 0 && (s->rec->flags & REC_F_DELETE_MARKER) && x->version_id &&
        *x->version_id) {
        e->op = STRATA_META__KEY_REWRITE; /* a marker has no tags, lock, key or ACL */
        e->rw.changed_ns = strata_meta__stamp_after(s->rec, v->now_ns);
        strata_meta__slot_vid(s, x->vid);
        rc = 0;
    } else {
        rc = strata_meta__rewrite_begin(v, x->version_id, e, x->vid);
    }
    if (rc)
        return rc;
    x->seq_ns = e->rw.changed_ns;
    return x->fn(x->ud, v->version.sk, v->version.rec, &e->rw);
}

/*
 * Rewrite the version's record in place (key_txn; the backend keeps each
 * drive's own inline shard).  Committed atomically or not at all.
 */
int strata_meta__rec_edit(struct meta_rec *r, const struct meta_edit *e, struct strata_kv **hkv)
{
    r->changed_ns = e->changed_ns;
    r->tags = e->tags_len ? e->tags : NULL;
    r->tags_len = e->tags_len;
    r->lock = e->lock;
    r->sse = e->sse;
    r->sse_len = e->sse_len;
    r->acl = e->acl_len ? e->acl : NULL;
    r->acl_len = e->acl_len;
    if (e->storage_class)
        snprintf(r->storage_class, sizeof(r->storage_class), "%s", e->storage_class);
    if (e->tier)
        snprintf(r->tier, sizeof(r->tier), "%s", e->tier);
    if (e->set_data_id)
        memcpy(r->data_id, e->data_id, STRATA_DATA_ID_LEN);
    if (e->pidx) {
        r->pidx = e->pidx;
        r->pidx_len = e->pidx_len;
    }
    *hkv = NULL;
    if (!e->hdr_name)
        return 0;
    /* The header list is the decoded record's: replaced by a new one
     * without name (and with it when there is a value), freed by the
     * caller after encoding. */
    *hkv = malloc((r->nhdrs + 1) * sizeof(**hkv));
    if (!*hkv)
        return STRATA_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < r->nhdrs; i++)
        if (strcmp(r->hdrs[i].name, e->hdr_name) != 0)
            (*hkv)[n++] = r->hdrs[i];
    if (e->hdr_value)
        (*hkv)[n++] = (struct strata_kv){e->hdr_name, e->hdr_value};
    r->hdrs = *hkv;
    r->nhdrs = n;
    return 0;
}

static int rec_rewrite(struct strata_meta *m, const char *bucket, const char *key,
                       const char *version_id, meta_edit_fn fn, void *ud, bool markers,
                       char vid_out[STRATA_VERSION_ID_MAX + 1], int64_t *seq_ns_out)
{
    int rc = key_args(bucket, key, NULL, 0);
    if (rc)
        return rc;
    struct rewrite_txn x = {version_id, fn, ud, markers, "", 0};
    struct strata_meta__key_txn t = {
        .bucket = bucket,
        .key = key,
        .want = STRATA_META__KEY_VERSION,
        .want_copies = true,
        .version_id = version_id,
        .decide = rewrite_decide,
        .ud = &x,
    };
    rc = m->store->key_txn(m, &t);
    if (rc == 0 && vid_out)
        memcpy(vid_out, x.vid, sizeof(x.vid));
    if (rc == 0 && seq_ns_out)
        *seq_ns_out = x.seq_ns;
    return rc;
}

int strata_meta__rec_rewrite(struct strata_meta *m, const char *bucket, const char *key,
                             const char *version_id, meta_edit_fn fn, void *ud,
                             char vid_out[STRATA_VERSION_ID_MAX + 1], int64_t *seq_ns_out)
{
    return rec_rewrite(m, bucket, key, version_id, fn, ud, false, vid_out, seq_ns_out);
}

/* A rewrite that sets one thing whatever the record holds: the tag set,
 * the ACL, or one stored header (value NULL: removed). */
enum set_what { SET_TAGS, SET_ACL, SET_HDR };

struct set_edit {
    enum set_what what;
    const void *p; /* the tags, the ACL, or the header's value */
    size_t len;
    const char *name; /* SET_HDR */
};

static int set_edit_cb(void *ud, const uint8_t *sk, const struct meta_rec *cur, struct meta_edit *e)
{
    (void)sk;
    (void)cur;
    const struct set_edit *x = ud;
    switch (x->what) {
    case SET_TAGS:
        e->tags = x->p;
        e->tags_len = x->len;
        break;
    case SET_ACL:
        e->acl = x->p;
        e->acl_len = x->len;
        break;
    case SET_HDR:
        e->hdr_name = x->name;
        e->hdr_value = x->p;
        break;
    }
    return 0;
}

/* Set a document of at most max bytes (len 0: none) on the version. */
static int doc_put(struct strata_meta *m, const char *bucket, const char *key,
                   const char *version_id, enum set_what what, const void *p, size_t len,
                   size_t max, char vid_out[STRATA_VERSION_ID_MAX + 1], int64_t *seq_ns_out)
{
    if (len > max)
        return STRATA_ETOOBIG;
    struct set_edit x = {what, len ? p : NULL, len, NULL};
    return strata_meta__rec_rewrite(m, bucket, key, version_id, set_edit_cb, &x, vid_out,
                                    seq_ns_out);
}

int strata_obj_tags_set(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, const void *tags, size_t len,
                        char vid_out[STRATA_VERSION_ID_MAX + 1], int64_t *seq_ns_out)
{
    return doc_put(m, bucket, key, version_id, SET_TAGS, tags, len, STRATA_TAGS_MAX, vid_out,
                   seq_ns_out);
}

int strata_obj_tags_put(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, const void *tags, size_t len,
                        char vid_out[STRATA_VERSION_ID_MAX + 1])
{
    return strata_obj_tags_set(m, bucket, key, version_id, tags, len, vid_out, NULL);
}

struct sse_edit {
    const void *old, *desc;
    size_t old_len, len;
};

static int sse_edit_cb(void *ud, const uint8_t *sk, const struct meta_rec *cur,
                       struct meta_edit *e)
{
    (void)sk;
    const struct sse_edit *s = ud;
    if (cur->sse_len != s->old_len || !cur->sse || memcmp(cur->sse, s->old, s->old_len) != 0)
        return STRATA_EPRECOND; /* changed since the caller read it */
    e->sse = s->desc;
    e->sse_len = s->len;
    return 0;
}

int strata_obj_sse_rewrap(struct strata_meta *m, const char *bucket, const char *key,
                          const char *version_id, const void *old, size_t old_len,
                          const void *desc, size_t len)
{
    if (!version_id || !*version_id || !old || !old_len || !desc || !len ||
        len > STRATA_SSE_DESC_MAX)
        return STRATA_EINVAL;
    struct sse_edit s = {old, desc, old_len, len};
    return strata_meta__rec_rewrite(m, bucket, key, version_id, sse_edit_cb, &s, NULL, NULL);
}

int strata_obj_acl_put(struct strata_meta *m, const char *bucket, const char *key,
                       const char *version_id, const void *acl, size_t len,
                       char vid_out[STRATA_VERSION_ID_MAX + 1])
{
    return doc_put(m, bucket, key, version_id, SET_ACL, acl, len, STRATA_ACL_MAX, vid_out, NULL);
}

int strata_obj_hdr_set(struct strata_meta *m, const char *bucket, const char *key,
                       const char *version_id, const char *name, const char *value)
{
    if (!name || !*name)
        return STRATA_EINVAL;
    struct set_edit x = {SET_HDR, value, 0, name};
    return rec_rewrite(m, bucket, key, version_id, set_edit_cb, &x, true, NULL, NULL);
}

int strata_obj_tags_delete(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, char vid_out[STRATA_VERSION_ID_MAX + 1])
{
    return strata_obj_tags_put(m, bucket, key, version_id, NULL, 0, vid_out);
}

void strata_meta__drop(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                       const struct meta_drop *drop)
{
    /* Inline versions and delete markers have nothing to drop (and are
     * never pinned). */
    bool data = (drop->flags & REC_F_MULTIPART) ||
                (drop->has_data_id && !(drop->flags & (REC_F_INLINE | REC_F_DELETE_MARKER)));
    if (m->store->reclaim_in_txn && !drop->intent)
        return; /* the commit queued it for the backend's reclaim (store.h) */
    if (drop->any && data && !strata_meta__drop_park(m, set, bucket, key, drop))
        strata_meta__drop_now(m, set, bucket, key, drop);
}

void strata_meta__drop_now(struct strata_meta *m, unsigned set, const char *bucket,
                           const char *key, const struct meta_drop *drop)
{
    if (!drop->any)
        return;
    /* A version gone from an archive tier takes its restored copy along. */
    if (!drop->intent && !(drop->flags & REC_F_DELETE_MARKER) && drop->tier < 32 &&
        (m->archive_tiers & (1u << drop->tier)))
        strata_meta__restore_drop(m, set, bucket, key, drop->sk);
    if (drop->intent) {
        strata_meta__intent_resolve_now(m, set, bucket, key, drop->sk);
    } else if (drop->flags & REC_F_MULTIPART) {
        strata_meta__mp_drop(m, set, bucket, key, drop->sk, drop->nparts, drop->tier);
    } else if (drop->has_data_id && !(drop->flags & (REC_F_INLINE | REC_F_DELETE_MARKER))) {
        struct strata_tier *t = m->tiers[drop->tier < m->ntiers ? drop->tier : 0];
        strata_meta__dc_drop(m->dcache, t, drop->data_id);
        int rc = t->ops->remove(t->impl, strata_meta__place(bucket, key), drop->data_id);
        if (rc)
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "delete of replaced data: %s",
                       strata_errname(rc));
    }
}
