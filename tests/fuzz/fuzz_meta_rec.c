/*
 * fuzz_meta_rec.c - libFuzzer target for the RocksDB value decoders of
 * meta/record.c: strata_meta__rec_decode (version records, with and
 * without the stored headers), and the bucket (with its state time),
 * upload, completed-upload, part and part-table decoders.  Values on a drive may be rotten or
 * written by another version, so every decoder must refuse garbage without reading outside the
 * value or trusting a length from it (strata_meta__mp_sane).
 *
 * Input: one value as stored (version byte 0x01, or 0x03 for a completed
 * upload, then msgpack).  Every
 * decoder gets every input, so a seed of one kind also seeds the rest.
 * Whatever a decoder accepts is encoded again and decoded again, and must
 * come back the same: a record that changes on a heal or a tag rewrite
 * (decode, modify, encode) would be silently corrupted.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "meta_internal.h"

static void hdrs_same(const struct strata_kv *a, size_t na, const struct strata_kv *b, size_t nb)
{
    if (na != nb)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) != 0 || strcmp(a[i].value, b[i].value) != 0)
            STRATA_FUZZ_FAIL();
}

static void check_rec(const uint8_t *data, size_t size)
{
    struct meta_rec r;
    if (strata_meta__rec_decode(data, size, false, &r) == 0) {
        if (r.hdrs || r.hdr_buf)
            STRATA_FUZZ_FAIL(); /* without want_hdrs nothing is allocated */
        if ((r.flags & REC_F_INLINE) &&
            (!r.shard || (r.shard_len && (r.shard < data || r.shard + r.shard_len > data + size))))
            STRATA_FUZZ_FAIL();
        strata_meta__rec_fini(&r);
    }
    if (strata_meta__rec_decode(data, size, true, &r) != 0)
        return;
    if (r.cksum_len > sizeof(r.cksum) || r.tags_len > STRATA_TAGS_MAX ||
        (r.tags && (r.tags < data || r.tags + r.tags_len > data + size)) ||
        (r.pidx && (r.pidx < data || r.pidx + r.pidx_len > data + size)))
        STRATA_FUZZ_FAIL();
    char *v = NULL;
    size_t vl = 0;
    if (strata_meta__rec_encode(&r, &v, &vl) != 0)
        STRATA_FUZZ_FAIL();
    struct meta_rec r2;
    if (strata_meta__rec_decode(v, vl, true, &r2) != 0)
        STRATA_FUZZ_FAIL(); /* what we accept, we must be able to write back */
    /* rec_same covers what quorum voting compares; nparts and the chunk
     * index are only written for multipart versions. */
    bool mp = (r.flags & REC_F_MULTIPART) != 0;
    if (r.flags != r2.flags || r.size != r2.size || r.mtime_ns != r2.mtime_ns ||
        strcmp(r.etag, r2.etag) != 0 || r.has_data_id != r2.has_data_id ||
        (r.has_data_id && memcmp(r.data_id, r2.data_id, STRATA_DATA_ID_LEN) != 0) ||
        strcmp(r.storage_class, r2.storage_class) != 0 || r.cksum_type != r2.cksum_type ||
        r.tags_len != r2.tags_len || (r.tags_len && memcmp(r.tags, r2.tags, r.tags_len) != 0))
        STRATA_FUZZ_FAIL();
    if (mp && (r.nparts != r2.nparts || r.pidx_len != r2.pidx_len ||
               (r.pidx_len && memcmp(r.pidx, r2.pidx, r.pidx_len) != 0)))
        STRATA_FUZZ_FAIL();
    if ((r.flags & REC_F_INLINE) &&
        (r.shard_len != r2.shard_len || r.shard_crc != r2.shard_crc ||
         (r.shard_len && memcmp(r.shard, r2.shard, r.shard_len) != 0)))
        STRATA_FUZZ_FAIL();
    if (r.cksum_algo && (r.cksum_algo != r2.cksum_algo || r.cksum_len != r2.cksum_len ||
                         memcmp(r.cksum, r2.cksum, r.cksum_len) != 0))
        STRATA_FUZZ_FAIL();
    hdrs_same(r.hdrs, r.nhdrs, r2.hdrs, r2.nhdrs);
    strata_meta__rec_fini(&r2);
    free(v);
    strata_meta__rec_fini(&r);
}

static void check_bucket(const uint8_t *data, size_t size)
{
    struct strata_bucket_info b, b2;
    int64_t st = 0, st2 = 0;
    if (strata_meta__bucket_decode_at(data, size, &b, &st) != 0)
        return;
    if (st <= 0)
        STRATA_FUZZ_FAIL(); /* every record has a state time (field 11 or created_ms) */
    char *v = NULL;
    size_t vl = 0;
    if (strata_meta__bucket_encode_at(&b, st, &v, &vl) != 0 ||
        strata_meta__bucket_decode_at(v, vl, &b2, &st2) != 0)
        STRATA_FUZZ_FAIL();
    if (strcmp(b.name, b2.name) != 0 || strcmp(b.owner, b2.owner) != 0 ||
        strcmp(b.region, b2.region) != 0 || b.created_ms != b2.created_ms ||
        b.versioning != b2.versioning || b.object_lock != b2.object_lock || st != st2)
        STRATA_FUZZ_FAIL();
    free(v);
}

static void check_done(const uint8_t *data, size_t size)
{
    struct meta_done d, d2;
    if (strata_meta__done_decode(data, size, &d) != 0)
        return;
    if (d.cksum_len > sizeof(d.cksum) || d.sse_len > STRATA_SSE_DESC_MAX ||
        (d.sse && (d.sse < data || d.sse + d.sse_len > data + size)))
        STRATA_FUZZ_FAIL();
    char *v = NULL;
    size_t vl = 0;
    if (strata_meta__done_encode(&d, &v, &vl) != 0 || strata_meta__done_decode(v, vl, &d2) != 0)
        STRATA_FUZZ_FAIL();
    if (d.done_ns != d2.done_ns || memcmp(d.digest, d2.digest, sizeof(d.digest)) != 0 ||
        memcmp(d.sk, d2.sk, SORTKEY_LEN) != 0 || d.flags != d2.flags ||
        strcmp(d.etag, d2.etag) != 0 || d.size != d2.size || d.mtime_ns != d2.mtime_ns ||
        d.cksum_algo != d2.cksum_algo || d.cksum_type != d2.cksum_type ||
        d.cksum_len != d2.cksum_len || memcmp(d.cksum, d2.cksum, d.cksum_len) != 0 ||
        d.nparts != d2.nparts || strcmp(d.storage_class, d2.storage_class) != 0 ||
        d.sse_len != d2.sse_len || (d.sse_len && memcmp(d.sse, d2.sse, d.sse_len) != 0))
        STRATA_FUZZ_FAIL();
    free(v);
}

static void check_upload(const uint8_t *data, size_t size)
{
    struct meta_upload u, u2;
    if (strata_meta__upload_decode(data, size, &u) != 0)
        return;
    char *v = NULL;
    size_t vl = 0;
    if (strata_meta__upload_encode(&u, &v, &vl) != 0 ||
        strata_meta__upload_decode(v, vl, &u2) != 0)
        STRATA_FUZZ_FAIL();
    if (u.init_ns != u2.init_ns || u.cksum_algo != u2.cksum_algo ||
        u.cksum_type != u2.cksum_type || strcmp(u.storage_class, u2.storage_class) != 0 ||
        u.tags_len != u2.tags_len || (u.tags_len && memcmp(u.tags, u2.tags, u.tags_len) != 0))
        STRATA_FUZZ_FAIL();
    hdrs_same(u.hdrs, u.nhdrs, u2.hdrs, u2.nhdrs);
    strata_meta__upload_fini(&u2);
    free(v);
    strata_meta__upload_fini(&u);
}

static bool part_same(const struct meta_part *a, const struct meta_part *b, bool number)
{
    return (!number || a->number == b->number) && a->size == b->size &&
           memcmp(a->md5, b->md5, 16) == 0 && a->has_data_id == b->has_data_id &&
           (!a->has_data_id || memcmp(a->data_id, b->data_id, STRATA_DATA_ID_LEN) == 0) &&
           a->cksum_len == b->cksum_len && memcmp(a->cksum, b->cksum, a->cksum_len) == 0;
}

static void check_part(const uint8_t *data, size_t size)
{
    static char bucket[STRATA_BUCKET_NAME_MAX + 1], key[STRATA_KEY_MAX + 1];
    static char bucket2[STRATA_BUCKET_NAME_MAX + 1], key2[STRATA_KEY_MAX + 1];
    struct meta_part p, p2;
    bucket[0] = key[0] = '\0';
    if (strata_meta__part_decode(data, size, &p, bucket, key) != 0)
        return;
    if (memchr(bucket, '\0', sizeof(bucket)) == NULL || memchr(key, '\0', sizeof(key)) == NULL)
        STRATA_FUZZ_FAIL();
    char *v = NULL;
    size_t vl = 0;
    if (strata_meta__part_encode(&p, bucket, key, &v, &vl) != 0 ||
        strata_meta__part_decode(v, vl, &p2, bucket2, key2) != 0)
        STRATA_FUZZ_FAIL();
    if (!part_same(&p, &p2, false) || p.mtime_ns != p2.mtime_ns ||
        p.cksum_algo != p2.cksum_algo || strcmp(bucket, bucket2) != 0 || strcmp(key, key2) != 0)
        STRATA_FUZZ_FAIL();
    free(v);
    /* NULL owner buffers are allowed and must not be written. */
    if (strata_meta__part_decode(data, size, &p2, NULL, NULL) != 0)
        STRATA_FUZZ_FAIL();
}

static void check_ptab(const uint8_t *data, size_t size)
{
    enum { CAP = MP_CHUNK_PARTS };
    static struct meta_part parts[CAP], parts2[CAP];
    size_t n = 0, n2 = 0;
    if (strata_meta__ptab_decode(data, size, parts, CAP, &n) != 0)
        return;
    if (n > CAP)
        STRATA_FUZZ_FAIL();
    char *v = NULL;
    size_t vl = 0;
    if (strata_meta__ptab_encode(parts, n, &v, &vl) != 0 ||
        strata_meta__ptab_decode(v, vl, parts2, CAP, &n2) != 0 || n2 != n)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < n; i++)
        if (!part_same(&parts[i], &parts2[i], true))
            STRATA_FUZZ_FAIL();
    free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_rec(data, size);
    check_bucket(data, size);
    check_upload(data, size);
    check_done(data, size);
    check_part(data, size);
    check_ptab(data, size);
    return 0;
}
