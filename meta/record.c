/*
 * record.c - RocksDB key encoding and the msgpack value codecs of meta/.
 *
 * The formats are tabled in meta_internal.h.  Decoders take untrusted bytes
 * (a damaged drive, a fuzzer) and must reject anything malformed without
 * crashing or allocating without bound: a bounds walk over the msgpack
 * headers (strata_meta__mp_sane) runs before msgpack-c unpacks, because
 * msgpack-c allocates for an announced container size before it has seen
 * the elements.  Pure functions, any thread.
 */
#include "meta_internal.h"
#include "sse.h"

#include "strata/assert.h"
#include "strata/hex.h"

#include <msgpack.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- keys --------------------------------------------------------------- */

size_t strata_meta__key_obj(char *out, size_t cap, const char *bucket, const char *key,
                            const uint8_t *sortkey)
{
    size_t bl = strlen(bucket), kl = strlen(key);
    size_t need = 1 + bl + 1 + kl + 1 + (sortkey ? SORTKEY_LEN : 0);
    STRATA_ASSERT(need <= cap);
    char *p = out;
    *p++ = 'O';
    memcpy(p, bucket, bl);
    p += bl;
    *p++ = 0;
    memcpy(p, key, kl);
    p += kl;
    *p++ = 0;
    if (sortkey) {
        memcpy(p, sortkey, SORTKEY_LEN);
        p += SORTKEY_LEN;
    }
    return (size_t)(p - out);
}

size_t strata_meta__key_bucket(char *out, size_t cap, const char *bucket)
{
    size_t bl = strlen(bucket);
    STRATA_ASSERT(bl + 1 <= cap);
    out[0] = 'B';
    memcpy(out + 1, bucket, bl);
    return bl + 1;
}

size_t strata_meta__key_config(char *out, size_t cap, const char *bucket, const char *kind)
{
    size_t bl = strlen(bucket), kl = strlen(kind);
    STRATA_ASSERT(bl + kl + 2 <= cap);
    out[0] = 'C';
    memcpy(out + 1, bucket, bl);
    out[1 + bl] = 0;
    memcpy(out + 2 + bl, kind, kl);
    return bl + kl + 2;
}

void strata_meta__sortkey_new(int64_t mtime_ns, uint8_t sk[SORTKEY_LEN])
{
    uint64_t inv = UINT64_MAX - (uint64_t)mtime_ns;
    for (int i = 0; i < 8; i++)
        sk[i] = (uint8_t)(inv >> (56 - 8 * i));
    if (RAND_bytes(sk + 8, 8) != 1) {
        /* RAND_bytes only fails without entropy; uniqueness then rests on
         * the nanosecond clock, which is still fine for ordering. */
        memset(sk + 8, 0, 8);
    }
}

void strata_meta__sortkey_make(int64_t mtime_ns, const uint8_t rnd[8], uint8_t sk[SORTKEY_LEN])
{
    uint64_t inv = UINT64_MAX - (uint64_t)mtime_ns;
    for (int i = 0; i < 8; i++)
        sk[i] = (uint8_t)(inv >> (56 - 8 * i));
    memcpy(sk + 8, rnd, 8);
}

int64_t strata_meta__sortkey_mtime(const uint8_t sk[SORTKEY_LEN])
{
    uint64_t inv = 0;
    for (int i = 0; i < 8; i++)
        inv = (inv << 8) | sk[i];
    return (int64_t)(UINT64_MAX - inv);
}

int64_t strata_meta__stamp_after(const struct meta_rec *r, int64_t now_ns)
{
    int64_t last = r->changed_ns > r->mtime_ns ? r->changed_ns : r->mtime_ns;
    return now_ns > last ? now_ns : last + 1;
}

void strata_meta__vid_format(const uint8_t sk[SORTKEY_LEN], char out[STRATA_VERSION_ID_MAX + 1])
{
    strata_hex_encode(sk, SORTKEY_LEN, out);
}

int strata_meta__vid_parse(const char *vid, uint8_t sk[SORTKEY_LEN])
{
    if (strlen(vid) != 2 * SORTKEY_LEN)
        return STRATA_EINVAL;
    /* Lower-case only: one version has one id. */
    return strata_hex_decode(vid, SORTKEY_LEN, sk, true) == 0 ? 0 : STRATA_EINVAL;
}

bool strata_meta_version_id_valid(const char *vid)
{
    uint8_t sk[SORTKEY_LEN];
    return strcmp(vid, "null") == 0 || strata_meta__vid_parse(vid, sk) == 0;
}

/* ---- msgpack bounds walk ------------------------------------------------ */

static uint64_t be(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/*
 * Walks the headers of one msgpack object and checks that every length and
 * element count fits in the bytes that remain (an element takes at least a
 * byte), and that the object ends exactly at len.  This is not a second
 * parser: it reads only sizes, so that msgpack-c never sizes an allocation
 * from a lying header.
 */
bool strata_meta__mp_sane(const uint8_t *p, size_t len)
{
    size_t pos = 0;
    uint64_t need = 1; /* elements still to read */
    while (need > 0) {
        if (pos >= len)
            return false;
        need--;
        uint8_t b = p[pos++];
        uint64_t skip = 0, elems = 0;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            /* fixint, nil, bool */
        } else if (b >= 0x80 && b <= 0x8f) {
            elems = 2u * (b & 0x0f);
        } else if (b >= 0x90 && b <= 0x9f) {
            elems = b & 0x0f;
        } else if (b >= 0xa0 && b <= 0xbf) {
            skip = b & 0x1f;
        } else {
            unsigned hl; /* bytes of length/size field */
            switch (b) {
            case 0xc4: case 0xd9: hl = 1; break;
            case 0xc5: case 0xda: case 0xdc: case 0xde: hl = 2; break;
            case 0xc6: case 0xdb: case 0xdd: case 0xdf: hl = 4; break;
            case 0xc7: hl = 1; break;
            case 0xc8: hl = 2; break;
            case 0xc9: hl = 4; break;
            case 0xca: skip = 4; hl = 0; break;
            case 0xcb: skip = 8; hl = 0; break;
            case 0xcc: case 0xd0: skip = 1; hl = 0; break;
            case 0xcd: case 0xd1: skip = 2; hl = 0; break;
            case 0xce: case 0xd2: skip = 4; hl = 0; break;
            case 0xcf: case 0xd3: skip = 8; hl = 0; break;
            case 0xd4: skip = 2; hl = 0; break;
            case 0xd5: skip = 3; hl = 0; break;
            case 0xd6: skip = 5; hl = 0; break;
            case 0xd7: skip = 9; hl = 0; break;
            case 0xd8: skip = 17; hl = 0; break;
            default: return false; /* 0xc1 is never used */
            }
            if (hl) {
                if (len - pos < hl)
                    return false;
                uint64_t v = be(p + pos, hl);
                pos += hl;
                if (b == 0xdc || b == 0xdd)
                    elems = v;
                else if (b == 0xde || b == 0xdf)
                    elems = 2 * v;
                else if (b >= 0xc7 && b <= 0xc9)
                    skip = v + 1; /* ext type byte */
                else
                    skip = v;
            }
        }
        if (skip > len - pos)
            return false;
        pos += skip;
        need += elems;
        if (need > len - pos)
            return false;
    }
    return pos == len;
}

/* ---- version records ---------------------------------------------------- */

/* Every value opens with the value version byte (see meta_internal.h). */
static void val_begin(msgpack_sbuffer *sb, msgpack_packer *pk)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
    char vb = VAL_VERSION_BYTE;
    msgpack_sbuffer_write(sb, &vb, 1);
}

/* A record map of nfields fields, field 0 being the record format. */
static void map_begin(msgpack_packer *pk, size_t nfields)
{
    msgpack_pack_map(pk, nfields);
    msgpack_pack_uint64(pk, 0);
    msgpack_pack_uint64(pk, REC_FORMAT);
}

static void pk_str(msgpack_packer *pk, const char *s, size_t n)
{
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pk_bin(msgpack_packer *pk, const void *s, size_t n)
{
    msgpack_pack_bin(pk, n);
    msgpack_pack_bin_body(pk, s, n);
}

/* One field of a record map: its number, then its value. */
static void pf_uint(msgpack_packer *pk, uint64_t f, uint64_t v)
{
    msgpack_pack_uint64(pk, f);
    msgpack_pack_uint64(pk, v);
}

static void pf_int(msgpack_packer *pk, uint64_t f, int64_t v)
{
    msgpack_pack_uint64(pk, f);
    msgpack_pack_int64(pk, v);
}

static void pf_str(msgpack_packer *pk, uint64_t f, const char *v, size_t n)
{
    msgpack_pack_uint64(pk, f);
    pk_str(pk, v, n);
}

static void pf_bin(msgpack_packer *pk, uint64_t f, const void *v, size_t n)
{
    msgpack_pack_uint64(pk, f);
    pk_bin(pk, v, n);
}

static void pf_bool(msgpack_packer *pk, uint64_t f, bool v)
{
    msgpack_pack_uint64(pk, f);
    if (v)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
}

static int sb_release(msgpack_sbuffer *sb, char **out, size_t *outlen)
{
    if (!sb->data) {
        msgpack_sbuffer_destroy(sb);
        return STRATA_ENOMEM;
    }
    *outlen = sb->size;
    *out = msgpack_sbuffer_release(sb);
    msgpack_sbuffer_destroy(sb);
    return 0;
}

int strata_meta__rec_encode(const struct meta_rec *r, char **out, size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    val_begin(&sb, &pk);

    bool inl = (r->flags & REC_F_INLINE) != 0;
    bool mp = (r->flags & REC_F_MULTIPART) != 0;
    size_t nf = 8 + (r->has_data_id ? 1 : 0) + (inl ? (r->logged ? 4 : 3) : 0) + (r->cksum_algo ? 2 : 0) +
                (mp ? 2 : 0) + (r->cksum_type ? 1 : 0) + (r->tags_len ? 1 : 0) +
                (r->lock.mode ? 2 : 0) + (r->lock.legal_hold_set ? 1 : 0) +
                (r->sse_len ? 2 : 0) + (r->acl_len ? 1 : 0) + (r->tier[0] ? 1 : 0) +
                (r->changed_ns ? 1 : 0);
    map_begin(&pk, nf);
    pf_uint(&pk, 1, r->flags);
    pf_uint(&pk, 2, r->size);
    pf_str(&pk, 3, r->etag, strlen(r->etag));
    pf_int(&pk, 4, r->mtime_ns);
    if (r->has_data_id) {
        pf_bin(&pk, 5, r->data_id, STRATA_DATA_ID_LEN);
    }
    if (inl) {
        if (!r->logged)
            pf_bin(&pk, 6, r->shard, r->shard_len);
        pf_uint(&pk, 7, r->shard_crc);
        pf_uint(&pk, 8, r->shard_len);
    }
    pf_str(&pk, 9, r->storage_class, strlen(r->storage_class));
    if (r->cksum_algo) {
        pf_uint(&pk, 10, (uint64_t)r->cksum_algo);
        pf_bin(&pk, 11, r->cksum, r->cksum_len);
    }
    msgpack_pack_uint64(&pk, 12);
    msgpack_pack_array(&pk, 2 * r->nhdrs);
    for (size_t i = 0; i < r->nhdrs; i++) {
        pk_str(&pk, r->hdrs[i].name, strlen(r->hdrs[i].name));
        pk_str(&pk, r->hdrs[i].value, strlen(r->hdrs[i].value));
    }
    msgpack_pack_uint64(&pk, 13);
    msgpack_pack_array(&pk, 0); /* field 13 stays empty: parts live in 'T' records */
    if (mp) {
        pf_uint(&pk, 14, r->nparts);
        pf_bin(&pk, 15, r->pidx, r->pidx_len);
    }
    if (r->cksum_type) {
        pf_uint(&pk, 16, (uint64_t)r->cksum_type);
    }
    if (r->tags_len) {
        pf_bin(&pk, 17, r->tags, r->tags_len);
    }
    if (r->lock.mode) {
        pf_uint(&pk, 18, (uint64_t)r->lock.mode);
        pf_int(&pk, 19, r->lock.until_ms);
    }
    if (r->lock.legal_hold_set)
        pf_bool(&pk, 20, r->lock.legal_hold);
    if (r->sse_len) {
        pf_bin(&pk, 21, r->sse, r->sse_len);
        pf_uint(&pk, 22, r->psize);
    }
    if (r->acl_len) {
        pf_bin(&pk, 23, r->acl, r->acl_len);
    }
    if (r->tier[0]) {
        pf_str(&pk, 24, r->tier, strlen(r->tier));
    }
    if (inl && r->logged) {
        pf_uint(&pk, 25, r->log_seg);
        pf_uint(&pk, 26, r->log_off);
    }
    if (r->changed_ns)
        pf_int(&pk, 27, r->changed_ns);
    return sb_release(&sb, out, outlen);
}

/*
 * Map keys (field numbers) must be unique: a record with a field twice is
 * corrupt, not "last one wins" (decoded fields own memory, and two writers'
 * records must never be read as one).  Fields above 63 are a newer writer's
 * and skipped by the decoders, so their duplicates do not matter.
 */
static bool field_dup(uint64_t *seen, uint64_t f)
{
    if (f >= 64)
        return false;
    if (*seen & (1ull << f))
        return true;
    *seen |= 1ull << f;
    return false;
}

static bool get_uint(const msgpack_object *o, uint64_t *v)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return false;
    *v = o->via.u64;
    return true;
}

static bool get_int(const msgpack_object *o, int64_t *v)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > INT64_MAX)
            return false;
        *v = (int64_t)o->via.u64;
        return true;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return true;
    }
    return false;
}

/* Copies a str into a fixed NUL-terminated field; refuses NUL and overlong. */
static bool get_str(const msgpack_object *o, char *dst, size_t cap)
{
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap)
        return false;
    /* An empty str may have a NULL ptr: never pass it to mem*(). */
    if (o->via.str.size && memchr(o->via.str.ptr, 0, o->via.str.size))
        return false;
    if (o->via.str.size)
        memcpy(dst, o->via.str.ptr, o->via.str.size);
    dst[o->via.str.size] = 0;
    return true;
}

static int decode_hdrs(const msgpack_object *o, bool want, struct meta_rec *r)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size % 2)
        return STRATA_ECORRUPT;
    size_t total = 0, n = o->via.array.size;
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *s = &o->via.array.ptr[i];
        if (s->type != MSGPACK_OBJECT_STR ||
            (s->via.str.size && memchr(s->via.str.ptr, 0, s->via.str.size)))
            return STRATA_ECORRUPT;
        total += s->via.str.size + 1;
    }
    if (total > STRATA_HDRS_MAX + n)
        return STRATA_ECORRUPT;
    if (!want || n == 0)
        return 0;
    size_t np = n / 2;
    char *buf = malloc(np * sizeof(struct strata_kv) + total);
    if (!buf)
        return STRATA_ENOMEM;
    struct strata_kv *kv = (struct strata_kv *)buf;
    char *sp = buf + np * sizeof(struct strata_kv);
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *s = &o->via.array.ptr[i];
        if (s->via.str.size)
            memcpy(sp, s->via.str.ptr, s->via.str.size);
        sp[s->via.str.size] = 0;
        if (i % 2 == 0)
            kv[i / 2].name = sp;
        else
            kv[i / 2].value = sp;
        sp += s->via.str.size + 1;
    }
    r->hdrs = kv;
    r->nhdrs = np;
    r->hdr_buf = buf;
    return 0;
}

static bool parts_ok(const msgpack_object *o)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > META_PARTS_MAX)
        return false;
    for (size_t i = 0; i < o->via.array.size; i++) {
        const msgpack_object *p = &o->via.array.ptr[i];
        if (p->type != MSGPACK_OBJECT_ARRAY || p->via.array.size < 3)
            return false;
        if (p->via.array.ptr[0].type != MSGPACK_OBJECT_BIN ||
            p->via.array.ptr[0].via.bin.size != STRATA_DATA_ID_LEN ||
            p->via.array.ptr[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
            p->via.array.ptr[2].type != MSGPACK_OBJECT_STR)
            return false;
    }
    return true;
}

/* Object Lock fields, shared by version (18-20) and upload (7-9) records:
 * i = 0 mode, 1 retain-until ms, 2 legal hold. */
static bool lock_field(struct strata_obj_lock *l, uint64_t i, const msgpack_object *v)
{
    uint64_t u;
    switch (i) {
    case 0:
        if (!get_uint(v, &u) || u > STRATA_LOCK_COMPLIANCE)
            return false;
        l->mode = (int)u;
        return true;
    case 1:
        return get_int(v, &l->until_ms);
    default:
        if (v->type == MSGPACK_OBJECT_NIL)
            return true; /* never set */
        if (v->type != MSGPACK_OBJECT_BOOLEAN)
            return false;
        l->legal_hold = v->via.boolean;
        l->legal_hold_set = true;
        return true;
    }
}

static void lock_pack(msgpack_packer *pk, const struct strata_obj_lock *l, uint64_t first)
{
    pf_uint(pk, first, (uint64_t)l->mode);
    pf_int(pk, first + 1, l->until_ms);
    if (l->legal_hold_set) {
        pf_bool(pk, first + 2, l->legal_hold);
    } else {
        msgpack_pack_uint64(pk, first + 2);
        msgpack_pack_nil(pk);
    }
}

/* ---- table-driven field decoding ----------------------------------------
 *
 * Every record kind is a msgpack map of numbered fields.  A kind's decoder
 * is a table indexed by field number that says what each field must be and
 * where it goes in the decoded struct; fields_decode walks the map once for
 * all kinds (version byte, bounds walk, unique field numbers, the fields a
 * kind requires).  A field number past the table, or one it leaves
 * FD_SKIP, is a newer writer's and skipped. */

enum fd_kind {
    FD_SKIP = 0,
    FD_FORMAT, /* must be REC_FORMAT */
    FD_UINT,   /* unsigned in [lo, hi], into a 4- or 8-byte field */
    FD_INT,    /* int64_t */
    FD_BOOL,
    FD_STR,    /* into char[size]; lo = 1: not empty */
    FD_BIN,    /* [lo, hi] bytes copied into an array */
    FD_REF,    /* [lo, hi] bytes left in the buffer: const uint8_t * + len */
    FD_COPY,   /* [lo, hi] bytes in a malloc'd copy (none when empty) + len */
    FD_LOCK,   /* Object Lock field number - lo of a struct strata_obj_lock */
    FD_FN,     /* the kind's own function */
};

#define FD_NONE UINT16_MAX /* no length or presence field */
#define FD_NULL_EMPTY 1    /* FD_REF: NULL pointer when empty */

/* Decodes one field into rec; ctx is the kind's decoder state. */
typedef int fd_fn(void *rec, void *ctx, const msgpack_object *v);

struct fd {
    uint8_t kind, flags;
    uint16_t size;     /* FD_UINT, FD_STR: the field's size */
    uint16_t off;      /* where the value goes */
    uint16_t len, has; /* size_t length, bool presence: FD_NONE when none */
    uint64_t lo, hi;
    fd_fn *fn;
};

#define FD_AT(T, f) (uint16_t) offsetof(T, f)
#define FD_FMT {.kind = FD_FORMAT}
#define FD_U(T, f, l, h)                                                                         \
    {.kind = FD_UINT, .size = sizeof(((T *)0)->f), .off = FD_AT(T, f), .lo = (l), .hi = (h)}
#define FD_U64(T, f) FD_U(T, f, 0, UINT64_MAX)
#define FD_I64(T, f) {.kind = FD_INT, .off = FD_AT(T, f)}
#define FD_BOOLEAN(T, f) {.kind = FD_BOOL, .off = FD_AT(T, f)}
#define FD_S(T, f, nonempty)                                                                     \
    {.kind = FD_STR, .size = sizeof(((T *)0)->f), .off = FD_AT(T, f), .lo = (nonempty)}
#define FD_ARR(T, f, l, lenf, hasf)                                                              \
    {.kind = FD_BIN, .off = FD_AT(T, f), .len = (lenf), .has = (hasf), .lo = (l),              \
     .hi = sizeof(((T *)0)->f)}
#define FD_BINREF(T, f, l, h, fl)                                                                \
    {.kind = FD_REF, .flags = (fl), .off = FD_AT(T, f), .len = FD_AT(T, f##_len), .lo = (l),   \
     .hi = (h)}
#define FD_BINCOPY(T, f, l, h)                                                                   \
    {.kind = FD_COPY, .off = FD_AT(T, f), .len = FD_AT(T, f##_len), .lo = (l), .hi = (h)}
#define FD_OLOCK(T, f, first) {.kind = FD_LOCK, .off = FD_AT(T, f), .lo = (first)}
#define FD_CALL(f) {.kind = FD_FN, .fn = (f)}

static bool get_bin(const msgpack_object *o, void *dst, size_t cap, size_t *n)
{
    if (o->type != MSGPACK_OBJECT_BIN || o->via.bin.size > cap)
        return false;
    if (o->via.bin.size)
        memcpy(dst, o->via.bin.ptr, o->via.bin.size);
    *n = o->via.bin.size;
    return true;
}

static int field_decode(const struct fd *d, uint64_t f, const msgpack_object *v, char *rec,
                        void *ctx)
{
    uint64_t u;
    int64_t i;
    size_t n = v->type == MSGPACK_OBJECT_BIN ? v->via.bin.size : 0;
    if (d->kind >= FD_BIN && d->kind <= FD_COPY &&
        (v->type != MSGPACK_OBJECT_BIN || n < d->lo || n > d->hi))
        return STRATA_ECORRUPT;
    switch (d->kind) {
    case FD_SKIP:
        return 0;
    case FD_FORMAT:
        return get_uint(v, &u) && u == REC_FORMAT ? 0 : STRATA_ECORRUPT;
    case FD_UINT:
        if (!get_uint(v, &u) || u < d->lo || u > d->hi)
            return STRATA_ECORRUPT;
        STRATA_ASSERT(d->size == sizeof(uint32_t) || d->size == sizeof(uint64_t));
        if (d->size == sizeof(uint32_t)) {
            uint32_t x = (uint32_t)u;
            memcpy(rec + d->off, &x, sizeof(x));
        } else {
            memcpy(rec + d->off, &u, sizeof(u));
        }
        return 0;
    case FD_INT:
        if (!get_int(v, &i))
            return STRATA_ECORRUPT;
        memcpy(rec + d->off, &i, sizeof(i));
        return 0;
    case FD_BOOL:
        if (v->type != MSGPACK_OBJECT_BOOLEAN)
            return STRATA_ECORRUPT;
        *(bool *)(rec + d->off) = v->via.boolean;
        return 0;
    case FD_STR:
        return get_str(v, rec + d->off, d->size) && (!d->lo || rec[d->off]) ? 0 : STRATA_ECORRUPT;
    case FD_BIN:
        if (n)
            memcpy(rec + d->off, v->via.bin.ptr, n);
        if (d->has != FD_NONE)
            *(bool *)(rec + d->has) = true;
        break;
    case FD_REF: {
        const uint8_t *p =
            (d->flags & FD_NULL_EMPTY) && !n ? NULL : (const uint8_t *)v->via.bin.ptr;
        memcpy(rec + d->off, &p, sizeof(p));
        break;
    }
    case FD_COPY: {
        if (!n)
            return 0;
        uint8_t *p = malloc(n);
        if (!p)
            return STRATA_ENOMEM;
        memcpy(p, v->via.bin.ptr, n);
        memcpy(rec + d->off, &p, sizeof(p));
        break;
    }
    case FD_LOCK:
        return lock_field((struct strata_obj_lock *)(void *)(rec + d->off), f - d->lo, v)
                   ? 0
                   : STRATA_ECORRUPT;
    default:
        return d->fn(rec, ctx, v);
    }
    if (d->len != FD_NONE)
        memcpy(rec + d->len, &n, sizeof(n));
    return 0;
}

/* Decode the map after version byte vb into rec by tab (ntab entries):
 * every field of need present, none twice; *seen gets the fields there. */
/* Each thread's unpack zone, kept between decodes: a zone of its own per
 * decode (msgpack_unpack_next) costs an 8 KiB malloc and free per record,
 * which with the small allocations around it sent glibc into
 * malloc_consolidate: 4-8 % of a RADOS gateway's CPU on a listing (perf).
 * Freed when its thread exits; tz is what LeakSanitizer sees of it. */
static pthread_key_t zone_key;
static pthread_once_t zone_once = PTHREAD_ONCE_INIT;
static _Thread_local msgpack_zone *tz;
static _Thread_local bool tz_busy; /* a decode within a decode uses its own */

static void zone_free(void *z)
{
    msgpack_zone_free(z);
}

static void zone_key_make(void)
{
    if (pthread_key_create(&zone_key, zone_free) != 0)
        zone_key = (pthread_key_t)-1;
}

static msgpack_zone *zone_take(void)
{
    if (tz_busy)
        return NULL;
    if (!tz) {
        pthread_once(&zone_once, zone_key_make);
        if (zone_key == (pthread_key_t)-1)
            return NULL;
        msgpack_zone *z = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
        if (!z)
            return NULL;
        if (pthread_setspecific(zone_key, z) != 0) {
            msgpack_zone_free(z);
            return NULL;
        }
        tz = z;
    }
    tz_busy = true;
    return tz;
}

static void zone_give(msgpack_zone *z)
{
    if (!z)
        return;
    msgpack_zone_clear(z); /* keeps its first chunk */
    tz_busy = false;
}

static int fields_decode(const struct fd *tab, size_t ntab, uint64_t need, uint8_t vb,
                         const void *buf, size_t len, void *rec, void *ctx, uint64_t *seen)
{
    const uint8_t *p = buf;
    *seen = 0;
    if (len < 2 || p[0] != vb || !strata_meta__mp_sane(p + 1, len - 1))
        return STRATA_ECORRUPT;
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    msgpack_zone *z = zone_take();
    size_t off = 0;
    int rc = STRATA_ECORRUPT;
    msgpack_unpack_return ur =
        z ? msgpack_unpack((const char *)p + 1, len - 1, &off, z, &up.data)
          : msgpack_unpack_next(&up, (const char *)p + 1, len - 1, &off);
    if (ur == MSGPACK_UNPACK_EXTRA_BYTES && z)
        ur = MSGPACK_UNPACK_SUCCESS; /* what msgpack_unpack_next answers for them */
    if (ur == MSGPACK_UNPACK_SUCCESS && up.data.type == MSGPACK_OBJECT_MAP)
        rc = 0;
    for (uint32_t i = 0; rc == 0 && i < up.data.via.map.size; i++) {
        const msgpack_object_kv *kv = &up.data.via.map.ptr[i];
        uint64_t f;
        if (!get_uint(&kv->key, &f) || field_dup(seen, f))
            rc = STRATA_ECORRUPT;
        else if (f < ntab)
            rc = field_decode(&tab[f], f, &kv->val, rec, ctx);
    }
    if (rc == 0 && (*seen & need) != need)
        rc = STRATA_ECORRUPT;
    /* Refs point into buf, not into the unpacked zone: a bin's ptr is the
     * buffer's own bytes (msgpack-c references, never copies, them). */
    zone_give(z);
    msgpack_unpacked_destroy(&up);
    return rc;
}

/* Version records ('O' values). */
struct rec_ctx {
    bool want_hdrs;
    uint64_t slen; /* field 8: the inline shard's length */
};

static int rec_shard_len(void *rec, void *ctx, const msgpack_object *v)
{
    (void)rec;
    return get_uint(v, &((struct rec_ctx *)ctx)->slen) ? 0 : STRATA_ECORRUPT;
}

static int rec_hdrs(void *rec, void *ctx, const msgpack_object *v)
{
    return decode_hdrs(v, ((struct rec_ctx *)ctx)->want_hdrs, rec);
}

static int rec_parts(void *rec, void *ctx, const msgpack_object *v)
{
    (void)rec, (void)ctx;
    return parts_ok(v) ? 0 : STRATA_ECORRUPT;
}

#define R struct meta_rec
static const struct fd rec_fields[] = {
    [0] = FD_FMT,
    [1] = FD_U(R, flags, 0, UINT32_MAX),
    [2] = FD_U64(R, size),
    [3] = FD_S(R, etag, 0),
    [4] = FD_I64(R, mtime_ns),
    [5] = FD_ARR(R, data_id, STRATA_DATA_ID_LEN, FD_NONE, FD_AT(R, has_data_id)),
    [6] = FD_BINREF(R, shard, 0, UINT64_MAX, 0),
    [7] = FD_U(R, shard_crc, 0, UINT32_MAX),
    [8] = FD_CALL(rec_shard_len),
    [9] = FD_S(R, storage_class, 0),
    [10] = FD_U(R, cksum_algo, 0, STRATA_CKSUM_SHA256),
    [11] = FD_ARR(R, cksum, 0, FD_AT(R, cksum_len), FD_NONE),
    [12] = FD_CALL(rec_hdrs),
    [13] = FD_CALL(rec_parts),
    [14] = FD_U(R, nparts, 1, META_PARTS_MAX),
    [15] = FD_BINREF(R, pidx, 0, UINT64_MAX, 0),
    [16] = FD_U(R, cksum_type, 0, STRATA_CKSUM_TYPE_FULL_OBJECT),
    [17] = FD_BINREF(R, tags, 0, STRATA_TAGS_MAX, FD_NULL_EMPTY),
    [18] = FD_OLOCK(R, lock, 18),
    [19] = FD_OLOCK(R, lock, 18),
    [20] = FD_OLOCK(R, lock, 18),
    [21] = FD_BINREF(R, sse, 1, STRATA_SSE_DESC_MAX, 0),
    [22] = FD_U64(R, psize),
    [23] = FD_BINREF(R, acl, 0, STRATA_ACL_MAX, FD_NULL_EMPTY),
    [24] = FD_S(R, tier, 1),
    [25] = FD_U64(R, log_seg),
    [26] = FD_U64(R, log_off),
    [27] = FD_I64(R, changed_ns),
};
#undef R

int strata_meta__rec_decode(const void *buf, size_t len, bool want_hdrs, struct meta_rec *r)
{
    memset(r, 0, sizeof(*r));
    struct rec_ctx c = {.want_hdrs = want_hdrs, .slen = UINT64_MAX};
    uint64_t seen;
    int rc = fields_decode(rec_fields, sizeof(rec_fields) / sizeof(rec_fields[0]), 1,
                           VAL_VERSION_BYTE, buf, len, r, &c, &seen);
    if (rc)
        goto out;
    rc = STRATA_ECORRUPT;
    if ((r->flags & REC_F_INLINE) && (r->flags & REC_F_MULTIPART))
        goto out; /* data lives in the record or in parts, never both */
    r->logged = (seen >> 25 & 1) != 0;
    if (r->logged != ((seen >> 26 & 1) != 0) || (r->logged && !(r->flags & REC_F_INLINE)))
        goto out; /* a log reference is both fields, of an inline shard */
    if (r->logged) {
        if (r->shard || c.slen == UINT64_MAX || c.slen == 0)
            goto out; /* the bytes are in the log, not here */
        r->shard_len = c.slen;
    } else if (r->flags & REC_F_INLINE) {
        if (!r->shard && r->shard_len == 0 && c.slen == 0)
            r->shard = (const uint8_t *)"";
        if (!r->shard || c.slen != r->shard_len)
            goto out;
    } else if (r->flags & REC_F_MULTIPART) {
        size_t nc = (r->nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS;
        if (r->nparts == 0 || !r->pidx || r->pidx_len != nc * MP_IDX_ENT)
            goto out; /* a multipart version must index its part table */
    } else if (!(r->flags & REC_F_DELETE_MARKER) && !r->has_data_id) {
        goto out; /* a data version must say where its data is */
    }
    if (!r->sse && (seen >> 22 & 1))
        goto out; /* a plaintext size without encryption */
    if (r->sse && (!(seen >> 22 & 1) ||
                   r->size != ((r->flags & REC_F_MULTIPART) ? r->psize
                                                             : strata_sse__stream_size(r->psize))))
        goto out; /* the stream must match its plaintext */
    rc = 0;
out:
    if (rc)
        strata_meta__rec_fini(r);
    return rc;
}

void strata_meta__tomb_encode(int64_t del_ns, char out[TOMB_LEN])
{
    out[0] = (char)VAL_TOMB_BYTE;
    uint64_t t = (uint64_t)del_ns;
    for (int i = 0; i < 8; i++)
        out[1 + i] = (char)(t >> (56 - 8 * i));
}

int64_t strata_meta__tomb_time(const void *v, size_t vl)
{
    const uint8_t *p = v;
    if (vl < TOMB_LEN)
        return 0;
    uint64_t t = 0;
    for (int i = 1; i < TOMB_LEN; i++)
        t = t << 8 | p[i];
    return (int64_t)t;
}

void strata_meta__rec_fini(struct meta_rec *r)
{
    if (r->hdr_buf) {
        free(r->hdr_buf);
        r->hdr_buf = NULL;
        r->hdrs = NULL;
        r->nhdrs = 0;
    }
}

bool strata_meta__rec_same_data(const struct meta_rec *a, const struct meta_rec *b)
{
    if (a->flags != b->flags || a->size != b->size || a->mtime_ns != b->mtime_ns ||
        a->has_data_id != b->has_data_id || strcmp(a->etag, b->etag) != 0)
        return false;
    if (a->has_data_id && memcmp(a->data_id, b->data_id, STRATA_DATA_ID_LEN) != 0)
        return false;
    if (a->nparts != b->nparts ||
        a->pidx_len != b->pidx_len || (a->pidx_len && memcmp(a->pidx, b->pidx, a->pidx_len)))
        return false;
    return true;
}

bool strata_meta__rec_same(const struct meta_rec *a, const struct meta_rec *b)
{
    if (!strata_meta__rec_same_data(a, b))
        return false;
    /* Tags are rewritten in place: a drive that missed the rewrite holds a
     * different record and must not vote with the others. */
    if (a->tags_len != b->tags_len || (a->tags_len && memcmp(a->tags, b->tags, a->tags_len) != 0))
        return false;
    /* Lock state is rewritten in place too: a drive that missed a
     * retention or legal-hold change is outvoted, never believed. */
    if (a->lock.mode != b->lock.mode || a->lock.legal_hold != b->lock.legal_hold ||
        a->lock.legal_hold_set != b->lock.legal_hold_set ||
        (a->lock.mode && a->lock.until_ms != b->lock.until_ms))
        return false;
    if (a->psize != b->psize || a->sse_len != b->sse_len ||
        (a->sse_len && memcmp(a->sse, b->sse, a->sse_len) != 0))
        return false;
    /* PutObjectAcl rewrites in place too. */
    if (a->acl_len != b->acl_len || (a->acl_len && memcmp(a->acl, b->acl, a->acl_len) != 0))
        return false;
    /* Every rewrite stamps the record: a drive that missed one is outvoted. */
    if (a->changed_ns != b->changed_ns)
        return false;
    /* A transition of inline data rewrites class and tier in place. */
    return strcmp(a->storage_class, b->storage_class) == 0 && strcmp(a->tier, b->tier) == 0;
}

/* ---- bucket records ----------------------------------------------------- */

int strata_meta__bucket_encode(const struct strata_bucket_info *b, char **out, size_t *outlen)
{
    return strata_meta__bucket_encode_at(b, 0, out, outlen);
}

int strata_meta__bucket_encode_at(const struct strata_bucket_info *b, int64_t state_ns, char **out,
                                  size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    val_begin(&sb, &pk);
    map_begin(&pk, (b->lock_mode ? 11 : 8) + (state_ns ? 1 : 0));
    pf_str(&pk, 1, b->name, strlen(b->name));
    pf_str(&pk, 2, b->owner, strnlen(b->owner, sizeof(b->owner) - 1));
    pf_str(&pk, 3, b->region, strnlen(b->region, sizeof(b->region) - 1));
    pf_int(&pk, 4, b->created_ms);
    pf_uint(&pk, 5, (uint64_t)b->versioning);
    pf_bool(&pk, 6, b->object_lock);
    pf_uint(&pk, 7, b->incarnation);
    if (b->lock_mode) {
        pf_uint(&pk, 8, (uint64_t)b->lock_mode);
        pf_uint(&pk, 9, b->lock_days);
        pf_uint(&pk, 10, b->lock_years);
    }
    if (state_ns) {
        pf_int(&pk, 11, state_ns);
    }
    return sb_release(&sb, out, outlen);
}

int strata_meta__bucket_decode_take(char *v, size_t vl, struct strata_bucket_info *out)
{
    struct strata_bucket_info tmp;
    int rc = strata_meta__bucket_decode(v, vl, &tmp);
    free(v);
    if (rc == 0 && out)
        *out = tmp;
    return rc;
}

int strata_meta__bucket_decode(const void *buf, size_t len, struct strata_bucket_info *b)
{
    return strata_meta__bucket_decode_at(buf, len, b, NULL);
}

static int bucket_state(void *rec, void *ctx, const msgpack_object *v)
{
    (void)rec;
    int64_t *st = ctx;
    return get_int(v, st) && *st > 0 ? 0 : STRATA_ECORRUPT;
}

#define B struct strata_bucket_info
static const struct fd bucket_fields[] = {
    [0] = FD_FMT,
    [1] = FD_S(B, name, 0),
    [2] = FD_S(B, owner, 0),
    [3] = FD_S(B, region, 0),
    [4] = FD_I64(B, created_ms),
    [5] = FD_U(B, versioning, 0, STRATA_VERSIONING_SUSPENDED),
    [6] = FD_BOOLEAN(B, object_lock),
    [7] = FD_U64(B, incarnation),
    [8] = FD_U(B, lock_mode, 0, STRATA_LOCK_COMPLIANCE),
    [9] = FD_U(B, lock_days, 0, UINT32_MAX),
    [10] = FD_U(B, lock_years, 0, UINT32_MAX),
    [11] = FD_CALL(bucket_state),
};
#undef B

int strata_meta__bucket_decode_at(const void *buf, size_t len, struct strata_bucket_info *b,
                                  int64_t *state_ns)
{
    memset(b, 0, sizeof(*b));
    int64_t st = 0;
    uint64_t seen;
    int rc = fields_decode(bucket_fields, sizeof(bucket_fields) / sizeof(bucket_fields[0]),
                           1u << 0 | 1u << 1, VAL_VERSION_BYTE, buf, len, b, &st, &seen);
    /* Records written before field 11: the creation time. */
    if (rc == 0 && state_ns)
        *state_ns = st ? st
                    : b->created_ms > 0 && b->created_ms < INT64_MAX / 1000000
                        ? b->created_ms * 1000000
                        : 1;
    return rc;
}

/* ---- multipart keys and records ----------------------------------------- */

size_t strata_meta__key_upload(char *out, size_t cap, const char *bucket, const char *key,
                               const uint8_t *upload)
{
    size_t n = strata_meta__key_obj(out, cap, bucket, key, NULL);
    STRATA_ASSERT(n + UPLOAD_LEN <= cap);
    out[0] = 'U';
    if (upload) {
        memcpy(out + n, upload, UPLOAD_LEN);
        n += UPLOAD_LEN;
    }
    return n;
}

size_t strata_meta__key_part(char *out, const uint8_t upload[UPLOAD_LEN], unsigned partno)
{
    out[0] = 'P';
    memcpy(out + 1, upload, UPLOAD_LEN);
    for (int i = 0; i < 4; i++)
        out[1 + UPLOAD_LEN + i] = (char)(partno >> (24 - 8 * i));
    return 1 + UPLOAD_LEN + 4;
}

size_t strata_meta__key_ptab(char *out, size_t cap, const char *bucket, const char *key,
                             const uint8_t *sk, unsigned chunk)
{
    size_t n = strata_meta__key_obj(out, cap, bucket, key, sk);
    STRATA_ASSERT(n + 2 <= cap);
    out[0] = 'T';
    out[n++] = (char)(chunk >> 8);
    out[n++] = (char)chunk;
    return n;
}

size_t strata_meta__cksum_len(int algo)
{
    switch (algo) {
    case STRATA_CKSUM_CRC32:
    case STRATA_CKSUM_CRC32C:
        return 4;
    case STRATA_CKSUM_CRC64NVME:
        return 8;
    case STRATA_CKSUM_SHA1:
        return 20;
    case STRATA_CKSUM_SHA256:
        return 32;
    default:
        return 0;
    }
}


int strata_meta__upload_encode(const struct meta_upload *u, char **out, size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    val_begin(&sb, &pk);
    map_begin(&pk, 10 + (u->sse_len ? 1 : 0) + (u->acl_len ? 1 : 0) + (u->tier[0] ? 1 : 0));
    pf_int(&pk, 1, u->init_ns);
    pf_uint(&pk, 2, (uint64_t)u->cksum_algo);
    pf_uint(&pk, 3, (uint64_t)u->cksum_type);
    msgpack_pack_uint64(&pk, 4);
    msgpack_pack_array(&pk, 2 * u->nhdrs);
    for (size_t i = 0; i < u->nhdrs; i++) {
        pk_str(&pk, u->hdrs[i].name, strlen(u->hdrs[i].name));
        pk_str(&pk, u->hdrs[i].value, strlen(u->hdrs[i].value));
    }
    pf_bin(&pk, 5, u->tags, u->tags_len);
    pf_str(&pk, 6, u->storage_class, strnlen(u->storage_class, sizeof(u->storage_class) - 1));
    lock_pack(&pk, &u->lock, 7);
    if (u->sse_len) {
        pf_bin(&pk, 10, u->sse, u->sse_len);
    }
    if (u->acl_len) {
        pf_bin(&pk, 11, u->acl, u->acl_len);
    }
    if (u->tier[0]) {
        pf_str(&pk, 12, u->tier, strlen(u->tier));
    }
    return sb_release(&sb, out, outlen);
}

/* Unpack one msgpack map value after the version byte and the bounds walk. */
static int unpack_map(const void *buf, size_t len, msgpack_unpacked *up)
{
    const uint8_t *p = buf;
    msgpack_unpacked_init(up);
    if (len < 2 || p[0] != VAL_VERSION_BYTE || !strata_meta__mp_sane(p + 1, len - 1))
        return STRATA_ECORRUPT;
    size_t off = 0;
    if (msgpack_unpack_next(up, (const char *)p + 1, len - 1, &off) != MSGPACK_UNPACK_SUCCESS)
        return STRATA_ECORRUPT;
    return 0;
}

void strata_meta__upload_info(struct strata_mpu_info *out, const char *bucket, const char *key,
                              const uint8_t upload[UPLOAD_LEN], const struct meta_upload *u)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->bucket, sizeof(out->bucket), "%s", bucket);
    snprintf(out->key, sizeof(out->key), "%s", key);
    strata_hex_encode(upload, UPLOAD_LEN, out->upload_id);
    out->initiated_ms = u->init_ns / 1000000;
    out->cksum_algo = u->cksum_algo;
    out->cksum_type = u->cksum_type;
    snprintf(out->storage_class, sizeof(out->storage_class), "%s",
             u->storage_class[0] ? u->storage_class : "STANDARD");
}

void strata_meta__upload_fini(struct meta_upload *u)
{
    free(u->hdr_buf);
    u->hdr_buf = NULL;
    u->hdrs = NULL;
    u->nhdrs = 0;
    strata_meta__bytes_free(&u->tags, &u->tags_len);
    strata_meta__bytes_free(&u->sse, &u->sse_len);
    strata_meta__bytes_free(&u->acl, &u->acl_len);
}

static int upload_hdrs(void *rec, void *ctx, const msgpack_object *v)
{
    (void)ctx;
    struct meta_upload *u = rec;
    struct meta_rec r;
    memset(&r, 0, sizeof(r));
    int rc = decode_hdrs(v, true, &r);
    u->hdrs = r.hdrs;
    u->nhdrs = r.nhdrs;
    u->hdr_buf = r.hdr_buf;
    return rc;
}

#define U struct meta_upload
static const struct fd upload_fields[] = {
    [0] = FD_FMT,
    [1] = FD_I64(U, init_ns),
    [2] = FD_U(U, cksum_algo, 0, STRATA_CKSUM_SHA256),
    [3] = FD_U(U, cksum_type, 0, STRATA_CKSUM_TYPE_FULL_OBJECT),
    [4] = FD_CALL(upload_hdrs),
    [5] = FD_BINCOPY(U, tags, 0, STRATA_TAGS_MAX),
    [6] = FD_S(U, storage_class, 0),
    [7] = FD_OLOCK(U, lock, 7),
    [8] = FD_OLOCK(U, lock, 7),
    [9] = FD_OLOCK(U, lock, 7),
    [10] = FD_BINCOPY(U, sse, 1, STRATA_SSE_DESC_MAX),
    [11] = FD_BINCOPY(U, acl, 1, STRATA_ACL_MAX),
    [12] = FD_S(U, tier, 1),
};
#undef U

int strata_meta__upload_decode(const void *buf, size_t len, struct meta_upload *u)
{
    memset(u, 0, sizeof(*u));
    uint64_t seen;
    int rc = fields_decode(upload_fields, sizeof(upload_fields) / sizeof(upload_fields[0]), 1,
                           VAL_VERSION_BYTE, buf, len, u, NULL, &seen);
    if (rc)
        strata_meta__upload_fini(u);
    return rc;
}

/* ---- completed-upload records ('U' value VAL_DONE_BYTE) -------------------- */

int strata_meta__done_encode(const struct meta_done *d, char **out, size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    char vb = VAL_DONE_BYTE;
    msgpack_sbuffer_write(&sb, &vb, 1);
    map_begin(&pk, 13 + (d->sse_len ? 1 : 0));
    pf_int(&pk, 1, d->done_ns);
    pf_bin(&pk, 2, d->digest, sizeof(d->digest));
    pf_bin(&pk, 3, d->sk, SORTKEY_LEN);
    pf_uint(&pk, 4, d->flags);
    pf_str(&pk, 5, d->etag, strlen(d->etag));
    pf_uint(&pk, 6, d->size);
    pf_int(&pk, 7, d->mtime_ns);
    pf_uint(&pk, 8, (uint64_t)d->cksum_algo);
    pf_uint(&pk, 9, (uint64_t)d->cksum_type);
    pf_bin(&pk, 10, d->cksum, d->cksum_len);
    pf_uint(&pk, 11, d->nparts);
    pf_str(&pk, 12, d->storage_class, strnlen(d->storage_class, sizeof(d->storage_class) - 1));
    if (d->sse_len) {
        pf_bin(&pk, 13, d->sse, d->sse_len);
    }
    return sb_release(&sb, out, outlen);
}

#define D struct meta_done
static const struct fd done_fields[] = {
    [0] = FD_FMT,
    [1] = FD_I64(D, done_ns),
    [2] = FD_ARR(D, digest, sizeof(((D *)0)->digest), FD_NONE, FD_NONE),
    [3] = FD_ARR(D, sk, SORTKEY_LEN, FD_NONE, FD_NONE),
    [4] = FD_U(D, flags, 0, UINT32_MAX),
    [5] = FD_S(D, etag, 0),
    [6] = FD_U64(D, size),
    [7] = FD_I64(D, mtime_ns),
    [8] = FD_U(D, cksum_algo, 0, STRATA_CKSUM_SHA256),
    [9] = FD_U(D, cksum_type, 0, STRATA_CKSUM_TYPE_FULL_OBJECT),
    [10] = FD_ARR(D, cksum, 0, FD_AT(D, cksum_len), FD_NONE),
    [11] = FD_U(D, nparts, 0, META_PARTS_MAX),
    [12] = FD_S(D, storage_class, 0),
    [13] = FD_BINREF(D, sse, 1, STRATA_SSE_DESC_MAX, 0),
};
#undef D

int strata_meta__done_decode(const void *buf, size_t len, struct meta_done *d)
{
    memset(d, 0, sizeof(*d));
    uint64_t seen;
    /* Every field but the encryption descriptor (13) is required. */
    return fields_decode(done_fields, sizeof(done_fields) / sizeof(done_fields[0]),
                         (1ull << 13) - 1, VAL_DONE_BYTE, buf, len, d, NULL, &seen);
}

int strata_meta__part_encode(const struct meta_part *p, const char *bucket, const char *key,
                             char **out, size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    val_begin(&sb, &pk);
    map_begin(&pk, 8 + (p->has_data_id ? 1 : 0) + (p->ssize ? 1 : 0) + (p->tier[0] ? 1 : 0));
    pf_uint(&pk, 1, p->size);
    pf_bin(&pk, 2, p->md5, 16);
    pf_int(&pk, 3, p->mtime_ns);
    if (p->has_data_id) {
        pf_bin(&pk, 4, p->data_id, STRATA_DATA_ID_LEN);
    }
    pf_uint(&pk, 5, (uint64_t)p->cksum_algo);
    pf_bin(&pk, 6, p->cksum, p->cksum_len);
    pf_str(&pk, 7, bucket, strlen(bucket));
    pf_str(&pk, 8, key, strlen(key));
    if (p->ssize) {
        pf_uint(&pk, 9, p->ssize);
    }
    if (p->tier[0]) {
        pf_str(&pk, 10, p->tier, strlen(p->tier));
    }
    return sb_release(&sb, out, outlen);
}

/* Where a part record's owner bucket (field 7) and key (8) go. */
struct part_ctx {
    char *bucket, *key;
};

static int part_bucket(void *rec, void *ctx, const msgpack_object *v)
{
    (void)rec;
    return get_str(v, ((struct part_ctx *)ctx)->bucket, STRATA_BUCKET_NAME_MAX + 1)
               ? 0
               : STRATA_ECORRUPT;
}

static int part_key(void *rec, void *ctx, const msgpack_object *v)
{
    (void)rec;
    return get_str(v, ((struct part_ctx *)ctx)->key, STRATA_KEY_MAX + 1) ? 0 : STRATA_ECORRUPT;
}

static int part_ssize(void *rec, void *ctx, const msgpack_object *v)
{
    (void)ctx;
    struct meta_part *p = rec;
    return get_uint(v, &p->ssize) && p->ssize == strata_sse__stream_size(p->size)
               ? 0
               : STRATA_ECORRUPT;
}

#define P struct meta_part
static const struct fd part_fields[] = {
    [0] = FD_FMT,
    [1] = FD_U64(P, size),
    [2] = FD_ARR(P, md5, 16, FD_NONE, FD_NONE),
    [3] = FD_I64(P, mtime_ns),
    [4] = FD_ARR(P, data_id, STRATA_DATA_ID_LEN, FD_NONE, FD_AT(P, has_data_id)),
    [5] = FD_U(P, cksum_algo, 0, STRATA_CKSUM_SHA256),
    [6] = FD_ARR(P, cksum, 0, FD_AT(P, cksum_len), FD_NONE),
    [7] = FD_CALL(part_bucket),
    [8] = FD_CALL(part_key),
    [9] = FD_CALL(part_ssize),
    [10] = FD_S(P, tier, 1),
};
#undef P

int strata_meta__part_decode(const void *buf, size_t len, struct meta_part *p,
                             char bucket[STRATA_BUCKET_NAME_MAX + 1],
                             char key[STRATA_KEY_MAX + 1])
{
    memset(p, 0, sizeof(*p));
    char tb[STRATA_BUCKET_NAME_MAX + 1], tk[STRATA_KEY_MAX + 1];
    struct part_ctx c = {.bucket = bucket ? bucket : tb, .key = key ? key : tk};
    uint64_t seen;
    int rc = fields_decode(part_fields, sizeof(part_fields) / sizeof(part_fields[0]),
                           1u << 0 | 1u << 2, VAL_VERSION_BYTE, buf, len, p, &c, &seen);
    if (rc == 0 && p->size > 0 && !p->has_data_id)
        rc = STRATA_ECORRUPT;
    return rc;
}

int strata_meta__ptab_encode(const struct meta_part *parts, size_t n, char **out,
                             size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    val_begin(&sb, &pk);
    msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++) {
        const struct meta_part *p = &parts[i];
        msgpack_pack_array(&pk, p->ssize ? 6 : 5);
        msgpack_pack_uint64(&pk, p->number);
        msgpack_pack_uint64(&pk, p->size);
        pk_bin(&pk, p->md5, 16);
        pk_bin(&pk, p->data_id, p->has_data_id ? STRATA_DATA_ID_LEN : 0);
        pk_bin(&pk, p->cksum, p->cksum_len);
        if (p->ssize)
            msgpack_pack_uint64(&pk, p->ssize);
    }
    return sb_release(&sb, out, outlen);
}

int strata_meta__ptab_decode(const void *buf, size_t len, struct meta_part *parts, size_t cap,
                             size_t *n)
{
    msgpack_unpacked up;
    int rc = unpack_map(buf, len, &up);
    if (rc == 0 && (up.data.type != MSGPACK_OBJECT_ARRAY || up.data.via.array.size > cap))
        rc = STRATA_ECORRUPT;
    for (uint32_t i = 0; rc == 0 && i < up.data.via.array.size; i++) {
        const msgpack_object *o = &up.data.via.array.ptr[i];
        struct meta_part *p = &parts[i];
        memset(p, 0, sizeof(*p));
        uint64_t num = 0;
        size_t ml = 0, dl = 0;
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 5 ||
            !get_uint(&o->via.array.ptr[0], &num) || num == 0 || num > META_PARTS_MAX ||
            !get_uint(&o->via.array.ptr[1], &p->size) ||
            !get_bin(&o->via.array.ptr[2], p->md5, 16, &ml) || ml != 16 ||
            !get_bin(&o->via.array.ptr[3], p->data_id, STRATA_DATA_ID_LEN, &dl) ||
            (dl != 0 && dl != STRATA_DATA_ID_LEN) || (p->size > 0 && dl == 0) ||
            !get_bin(&o->via.array.ptr[4], p->cksum, STRATA_CKSUM_RAW_MAX, &p->cksum_len) ||
            (o->via.array.size >= 6 &&
             (!get_uint(&o->via.array.ptr[5], &p->ssize) ||
              p->ssize != strata_sse__stream_size(p->size)))) {
            rc = STRATA_ECORRUPT;
            break;
        }
        p->number = (unsigned)num;
        p->has_data_id = dl != 0;
    }
    if (rc == 0)
        *n = up.data.via.array.size;
    msgpack_unpacked_destroy(&up);
    return rc;
}
