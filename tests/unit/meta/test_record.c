/*
 * test_record.c - the version/bucket record codecs and key encoding:
 * round trips, sort order of version keys, and rejection of truncated,
 * mutated and hostile input (the decoder is a fuzz target).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"

static void fill_rec(struct meta_rec *r, uint8_t *shard, struct strata_kv *kv)
{
    memset(r, 0, sizeof(*r));
    r->flags = REC_F_INLINE | REC_F_NULL;
    r->size = 12345;
    snprintf(r->etag, sizeof(r->etag), "0123456789abcdef0123456789abcdef");
    r->mtime_ns = 1700000000123456789LL;
    for (int i = 0; i < 64; i++)
        shard[i] = (uint8_t)(i * 7);
    r->shard = shard;
    r->shard_len = 64;
    r->shard_crc = strata_crc32c(0, shard, 64);
    snprintf(r->storage_class, sizeof(r->storage_class), "STANDARD");
    r->cksum_algo = STRATA_CKSUM_CRC64NVME;
    r->cksum_len = 8;
    memset(r->cksum, 0xab, 8);
    kv[0].name = "content-type";
    kv[0].value = "text/plain";
    kv[1].name = "x-amz-meta-a";
    kv[1].value = "";
    r->hdrs = kv;
    r->nhdrs = 2;
}

static void test_rec_roundtrip(void **state)
{
    (void)state;
    uint8_t shard[64];
    struct strata_kv kv[2];
    struct meta_rec r, d;
    fill_rec(&r, shard, kv);
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    assert_int_equal((uint8_t)v[0], VAL_VERSION_BYTE);
    assert_int_equal(strata_meta__rec_decode(v, vl, true, &d), 0);
    assert_int_equal(d.flags, r.flags);
    assert_int_equal(d.size, 12345);
    assert_string_equal(d.etag, r.etag);
    assert_true(d.mtime_ns == r.mtime_ns);
    assert_int_equal(d.shard_len, 64);
    assert_memory_equal(d.shard, shard, 64);
    assert_int_equal(d.shard_crc, r.shard_crc);
    assert_string_equal(d.storage_class, "STANDARD");
    assert_int_equal(d.cksum_algo, STRATA_CKSUM_CRC64NVME);
    assert_int_equal(d.cksum_len, 8);
    assert_memory_equal(d.cksum, r.cksum, 8);
    assert_int_equal(d.nhdrs, 2);
    assert_string_equal(d.hdrs[0].name, "content-type");
    assert_string_equal(d.hdrs[0].value, "text/plain");
    assert_string_equal(d.hdrs[1].name, "x-amz-meta-a");
    assert_string_equal(d.hdrs[1].value, "");
    assert_int_equal(d.nparts, 0);
    assert_true(strata_meta__rec_same(&r, &d));
    strata_meta__rec_fini(&d);

    /* A data (non-inline) version carries its data id. */
    r.flags = 0;
    r.has_data_id = true;
    memset(r.data_id, 0x5a, STRATA_DATA_ID_LEN);
    free(v);
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    assert_int_equal(strata_meta__rec_decode(v, vl, false, &d), 0);
    assert_true(d.has_data_id);
    assert_memory_equal(d.data_id, r.data_id, STRATA_DATA_ID_LEN);
    assert_null(d.shard);
    assert_int_equal(d.nhdrs, 0); /* not asked for */
    d.data_id[3] ^= 1;
    assert_false(strata_meta__rec_same(&r, &d));
    free(v);
}

/* Field 27, the last rewrite's change stamp: absent until set, kept
 * through a round trip, part of "same version"; stamp_after is past the
 * record's mtime and stamp, or the clock when that is later. */
static void test_rec_change_stamp(void **state)
{
    (void)state;
    uint8_t shard[64];
    struct strata_kv kv[2];
    struct meta_rec r, d;
    fill_rec(&r, shard, kv);
    char *v0, *v;
    size_t vl0, vl;
    assert_int_equal(strata_meta__rec_encode(&r, &v0, &vl0), 0);
    r.changed_ns = r.mtime_ns + 5;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    assert_true(vl > vl0);
    assert_int_equal(strata_meta__rec_decode(v, vl, false, &d), 0);
    assert_true(d.changed_ns == r.changed_ns);
    assert_true(strata_meta__rec_same(&r, &d));
    d.changed_ns++;
    assert_false(strata_meta__rec_same(&r, &d));
    assert_true(strata_meta__stamp_after(&r, 0) == r.mtime_ns + 6);
    assert_true(strata_meta__stamp_after(&r, r.mtime_ns + 100) == r.mtime_ns + 100);
    assert_int_equal(strata_meta__rec_decode(v0, vl0, false, &d), 0);
    assert_true(d.changed_ns == 0);
    assert_true(strata_meta__stamp_after(&d, 0) == r.mtime_ns + 1);
    free(v0);
    free(v);
}

/* An inline shard in the drive's small-object log: the record carries
 * segment, offset, length and CRC32C (fields 25, 26, 8, 7), not the bytes;
 * a record of the older kind (field 6) still decodes as before. */
static void test_rec_logged(void **state)
{
    (void)state;
    uint8_t shard[64];
    struct strata_kv kv[2];
    struct meta_rec r, d;
    fill_rec(&r, shard, kv);
    char *inl, *v;
    size_t inll, vl;
    assert_int_equal(strata_meta__rec_encode(&r, &inl, &inll), 0);
    r.logged = true;
    r.log_seg = 0x1234567890ull;
    r.log_off = 63ull << 20;
    r.shard = NULL;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    assert_true(vl < inll - 64 + 16); /* the shard's bytes left out */
    assert_int_equal(strata_meta__rec_decode(v, vl, true, &d), 0);
    assert_true(d.logged);
    assert_true(d.log_seg == r.log_seg && d.log_off == r.log_off);
    assert_null(d.shard);
    assert_int_equal(d.shard_len, 64);
    assert_int_equal(d.shard_crc, r.shard_crc);
    assert_true(strata_meta__rec_same(&r, &d));
    strata_meta__rec_fini(&d);
    /* Re-encoding what was decoded keeps the reference (a rewrite). */
    assert_int_equal(strata_meta__rec_decode(v, vl, true, &d), 0);
    char *v2;
    size_t vl2;
    assert_int_equal(strata_meta__rec_encode(&d, &v2, &vl2), 0);
    assert_int_equal(vl2, vl);
    assert_memory_equal(v2, v, vl);
    strata_meta__rec_fini(&d);
    free(v2);
    /* Every truncation is refused, never read as an inline record. */
    for (size_t n = 1; n < vl; n++)
        if (strata_meta__rec_decode(v, n, false, &d) == 0) {
            assert_true(d.logged || !(d.flags & REC_F_INLINE));
            strata_meta__rec_fini(&d);
        }
    assert_int_equal(strata_meta__rec_decode(inl, inll, false, &d), 0);
    assert_false(d.logged);
    assert_memory_equal(d.shard, shard, 64);
    strata_meta__rec_fini(&d);
    free(v);
    free(inl);
}

static void test_rec_garbage(void **state)
{
    (void)state;
    uint8_t shard[64];
    struct strata_kv kv[2];
    struct meta_rec r, d;
    fill_rec(&r, shard, kv);
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    /* Every truncation is refused. */
    for (size_t n = 0; n < vl; n++)
        assert_int_not_equal(strata_meta__rec_decode(v, n, true, &d), 0);
    /* Trailing garbage is refused. */
    char *big = malloc(vl + 1);
    memcpy(big, v, vl);
    big[vl] = 0;
    assert_int_not_equal(strata_meta__rec_decode(big, vl + 1, true, &d), 0);
    free(big);
    /* Wrong version byte. */
    v[0] = 2;
    assert_int_equal(strata_meta__rec_decode(v, vl, true, &d), STRATA_ECORRUPT);
    v[0] = VAL_VERSION_BYTE;
    /* Every single-byte mutation decodes or is refused, never crashes; a
     * decoded inline record still has a shard of the announced length. */
    char *mut = malloc(vl);
    uint32_t x = 99;
    for (size_t i = 0; i < vl; i++) {
        for (int t = 0; t < 8; t++) {
            memcpy(mut, v, vl);
            x = x * 1103515245u + 12345u;
            mut[i] = (char)(x >> 16);
            if (strata_meta__rec_decode(mut, vl, true, &d) == 0) {
                if ((d.flags & REC_F_INLINE) && !d.logged)
                    assert_non_null(d.shard);
                strata_meta__rec_fini(&d);
            }
        }
    }
    free(mut);
    /* Hostile headers: containers announcing 2^32-1 elements. */
    const uint8_t arr32[] = {0x01, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x00};
    const uint8_t map32[] = {0x01, 0xdf, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00};
    const uint8_t str32[] = {0x01, 0x81, 0x03, 0xdb, 0xff, 0xff, 0xff, 0xf0, 'a'};
    const uint8_t notmap[] = {0x01, 0x93, 0x01, 0x02, 0x03};
    const uint8_t c1[] = {0x01, 0xc1};
    assert_int_equal(strata_meta__rec_decode(arr32, sizeof(arr32), true, &d), STRATA_ECORRUPT);
    assert_int_equal(strata_meta__rec_decode(map32, sizeof(map32), true, &d), STRATA_ECORRUPT);
    assert_int_equal(strata_meta__rec_decode(str32, sizeof(str32), true, &d), STRATA_ECORRUPT);
    assert_int_equal(strata_meta__rec_decode(notmap, sizeof(notmap), true, &d), STRATA_ECORRUPT);
    assert_int_equal(strata_meta__rec_decode(c1, sizeof(c1), true, &d), STRATA_ECORRUPT);
    /* Random bytes. */
    uint8_t rnd[256];
    for (int t = 0; t < 2000; t++) {
        size_t n = 1 + (size_t)(t % 255);
        mt_fill(rnd, n, (uint32_t)t);
        rnd[0] = VAL_VERSION_BYTE;
        if (strata_meta__rec_decode(rnd, n, true, &d) == 0)
            strata_meta__rec_fini(&d);
    }
    free(v);
}

static void test_bucket_rec(void **state)
{
    (void)state;
    struct strata_bucket_info b, d;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "my-bucket");
    snprintf(b.owner, sizeof(b.owner), "AKIA");
    snprintf(b.region, sizeof(b.region), "eu-west-1");
    b.created_ms = 1234567;
    b.versioning = STRATA_VERSIONING_SUSPENDED;
    b.object_lock = true;
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__bucket_encode(&b, &v, &vl), 0);
    assert_int_equal(strata_meta__bucket_decode(v, vl, &d), 0);
    assert_memory_equal(&b, &d, sizeof(b));
    for (size_t n = 0; n < vl; n++)
        assert_int_not_equal(strata_meta__bucket_decode(v, n, &d), 0);
    free(v);
}

static void test_keys(void **state)
{
    (void)state;
    uint8_t a[SORTKEY_LEN], b[SORTKEY_LEN], p[SORTKEY_LEN];
    strata_meta__sortkey_new(1000, a);
    strata_meta__sortkey_new(2000, b); /* newer */
    assert_true(memcmp(b, a, SORTKEY_LEN) < 0);
    assert_true(strata_meta__sortkey_mtime(a) == 1000);
    char vid[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(a, vid);
    assert_int_equal(strlen(vid), 32);
    assert_int_equal(strata_meta__vid_parse(vid, p), 0);
    assert_memory_equal(a, p, SORTKEY_LEN);
    assert_int_equal(strata_meta__vid_parse("null", p), STRATA_EINVAL);
    vid[5] = 'Z';
    assert_int_equal(strata_meta__vid_parse(vid, p), STRATA_EINVAL);
    /* "a" sorts before "a/b" and before "a0" in encoded form. */
    char k1[200], k2[200], k3[200];
    size_t l1 = strata_meta__key_obj(k1, sizeof(k1), "b", "a", a);
    size_t l2 = strata_meta__key_obj(k2, sizeof(k2), "b", "a/b", a);
    size_t l3 = strata_meta__key_obj(k3, sizeof(k3), "b", "a0", a);
    assert_int_equal(l1, 1 + 1 + 1 + 1 + 1 + SORTKEY_LEN);
    assert_true(memcmp(k1, k2, l1 < l2 ? l1 : l2) < 0);
    assert_true(memcmp(k2, k3, l2 < l3 ? l2 : l3) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rec_roundtrip),
        cmocka_unit_test(test_rec_logged),
        cmocka_unit_test(test_rec_change_stamp),
        cmocka_unit_test(test_rec_garbage),
        cmocka_unit_test(test_bucket_rec),
        cmocka_unit_test(test_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
