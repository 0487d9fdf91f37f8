/*
 * test_object.c - put/get/head/delete through the object layer on a fresh
 * 2+2 set: sizes around the inline limit and the stripe size with byte
 * compares and ranged reads, stored headers and checksums, unknown-size
 * streaming, and every digest mismatch storing nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "meta_test_util.h"

static void md5_hex(const uint8_t *d, size_t n, char out[33])
{
    uint8_t md[16];
    unsigned l;
    EVP_Digest(d, n, md, &l, EVP_md5(), NULL);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void check_object(struct mt_env *e, const char *key, const uint8_t *data, size_t len)
{
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", key, NULL, &got, &gl), 0);
    assert_int_equal(gl, len);
    if (len)
        assert_memory_equal(got, data, len);
    free(got);
    /* Ranged reads: head, tail, middle, across a stripe boundary. */
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", key, NULL, &info, &g), 0);
    uint8_t *buf = malloc(len + 1);
    size_t offs[] = {0, len / 3, len > 7 ? len - 7 : 0, len > (1u << 20) ? (1u << 20) - 5 : 0};
    for (size_t i = 0; i < 4; i++) {
        size_t off = offs[i] > len ? len : offs[i];
        size_t n = len - off < 4099 ? len - off : 4099;
        assert_int_equal(strata_obj_get_read(g, off, buf, n), 0);
        if (n)
            assert_memory_equal(buf, data + off, n);
    }
    assert_int_equal(strata_obj_get_read(g, len, buf, 1), STRATA_ERANGE);
    free(buf);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
}

static void test_sizes(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("sizes");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t sizes[] = {0, 1, 4096, 128 * 1024, 128 * 1024 + 1, 5u << 20};
    uint8_t *data = malloc(5u << 20);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = sizes[i];
        char key[64], etag[33];
        snprintf(key, sizeof(key), "dir/obj-%zu", len);
        mt_fill(data, len, (uint32_t)len);
        md5_hex(data, len, etag);
        struct strata_obj_info out;
        assert_int_equal(mt_put(e, "b", key, data, len, &out), 0);
        assert_string_equal(out.etag, etag);
        assert_int_equal(out.size, len);
        assert_string_equal(out.version_id, "null");
        assert_true(out.is_latest);
        strata_obj_info_fini(&out);
        check_object(e, key, data, len);
        struct strata_obj_info info;
        assert_int_equal(strata_obj_head(e->m, "b", key, NULL, &info), 0);
        assert_int_equal(info.size, len);
        assert_string_equal(info.etag, etag);
        assert_string_equal(info.storage_class, "STANDARD");
        assert_false(info.delete_marker);
        assert_true(info.mtime_ms > 1600000000000LL);
        strata_obj_info_fini(&info);
    }
    /* Objects above the inline limit have shard files; inline ones do not. */
    assert_true(mt_data_files(e) > 0);
    /* Overwrite the big object with a small one: the old data is dropped. */
    mt_fill(data, 10, 77);
    assert_int_equal(mt_put(e, "b", "dir/obj-5242880", data, 10, NULL), 0);
    check_object(e, "dir/obj-5242880", data, 10);
    assert_int_equal(strata_obj_delete(e->m, "b", "dir/obj-131073", NULL, NULL), 0);
    assert_int_equal(mt_data_files(e), 0);
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "dir/obj-131073", NULL, &info), STRATA_ENOTFOUND);
    assert_false(info.delete_marker);
    /* Deleting an absent object is fine on an unversioned bucket. */
    assert_int_equal(strata_obj_delete(e->m, "b", "never", NULL, NULL), 0);
    /* Everything survives a reopen. */
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
    mt_fill(data, 4096, 4096);
    check_object(e, "dir/obj-4096", data, 4096);
    assert_int_equal(strata_obj_head(e->m, "nob", "k", NULL, &info), STRATA_ENOTFOUND);
    free(data);
    mt_teardown(e);
}

static void test_stream_unknown_size(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("stream");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t lens[] = {100, 128 * 1024, 300 * 1024, (2u << 20) + 3};
    uint8_t *data = malloc((2u << 20) + 3);
    for (size_t i = 0; i < 4; i++) {
        size_t len = lens[i];
        mt_fill(data, len, (uint32_t)i + 5);
        struct strata_put_opts o;
        memset(&o, 0, sizeof(o));
        o.bucket = "b";
        o.key = "s";
        o.size = UINT64_MAX;
        assert_int_equal(mt_put_opts(e, &o, data, len, 7777, NULL), 0);
        check_object(e, "s", data, len);
    }
    free(data);
    mt_teardown(e);
}

static void test_headers_checksums(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("hdrs");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    uint8_t data[5000];
    mt_fill(data, sizeof(data), 3);
    struct strata_kv hd[] = {{"content-type", "image/png"}, {"x-amz-meta-owner", "bob"}};
    int algos[] = {STRATA_CKSUM_CRC32, STRATA_CKSUM_CRC32C, STRATA_CKSUM_CRC64NVME,
                   STRATA_CKSUM_SHA1, STRATA_CKSUM_SHA256};
    for (int i = 0; i < 5; i++) {
        uint8_t exp[32];
        size_t el;
        switch (algos[i]) {
        case STRATA_CKSUM_CRC32:
        case STRATA_CKSUM_CRC32C: {
            uint32_t c = algos[i] == STRATA_CKSUM_CRC32 ? strata_crc32(0, data, sizeof(data))
                                                        : strata_crc32c(0, data, sizeof(data));
            for (int j = 0; j < 4; j++)
                exp[j] = (uint8_t)(c >> (24 - 8 * j));
            el = 4;
            break;
        }
        case STRATA_CKSUM_CRC64NVME: {
            uint64_t c = strata_crc64nvme(0, data, sizeof(data));
            for (int j = 0; j < 8; j++)
                exp[j] = (uint8_t)(c >> (56 - 8 * j));
            el = 8;
            break;
        }
        default: {
            unsigned l;
            EVP_Digest(data, sizeof(data), exp, &l,
                       algos[i] == STRATA_CKSUM_SHA1 ? EVP_sha1() : EVP_sha256(), NULL);
            el = l;
        }
        }
        struct strata_put_opts o;
        memset(&o, 0, sizeof(o));
        o.bucket = "b";
        o.key = "h";
        o.size = sizeof(data);
        o.hdrs = hd;
        o.nhdrs = 2;
        o.cksum_algo = algos[i];
        /* Expected value given up front for even algos, by trailer for odd. */
        struct strata_put *p;
        if (i % 2 == 0) {
            o.cksum = exp;
            o.cksum_len = el;
        }
        assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
        assert_int_equal(strata_obj_put_write(p, data, 1000), 0);
        assert_int_equal(strata_obj_put_write(p, data + 1000, sizeof(data) - 1000), 0);
        if (i % 2)
            assert_int_equal(strata_obj_put_expect_checksum(p, algos[i], exp, el), 0);
        assert_int_equal(strata_obj_put_commit(p, NULL), 0);
        struct strata_obj_info info;
        assert_int_equal(strata_obj_head(e->m, "b", "h", NULL, &info), 0);
        assert_int_equal(info.cksum_algo, algos[i]);
        assert_int_equal(info.cksum_len, el);
        assert_memory_equal(info.cksum, exp, el);
        assert_int_equal(info.nhdrs, 2);
        assert_string_equal(strata_obj_info_hdr(&info, "content-type"), "image/png");
        assert_string_equal(strata_obj_info_hdr(&info, "x-amz-meta-owner"), "bob");
        assert_null(strata_obj_info_hdr(&info, "x-amz-meta-none"));
        strata_obj_info_fini(&info);
    }
    /* Bad keys are refused. */
    struct strata_put *p;
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "";
    o.size = 0;
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), STRATA_EINVAL);
    char longkey[STRATA_KEY_MAX + 2];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = 0;
    o.key = longkey;
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), STRATA_EINVAL);
    o.key = "x";
    o.bucket = "missing";
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), STRATA_ENOTFOUND);
    mt_teardown(e);
}

static void test_digest_mismatch(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("digest");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t sizes[] = {4096, 300 * 1024};
    uint8_t *data = malloc(300 * 1024);
    for (int s = 0; s < 2; s++) {
        size_t len = sizes[s];
        mt_fill(data, len, 11);
        uint8_t wrong[32];
        memset(wrong, 0x42, sizeof(wrong));
        for (int kind = 0; kind < 5; kind++) {
            struct strata_put_opts o;
            memset(&o, 0, sizeof(o));
            o.bucket = "b";
            o.key = "bad";
            o.size = len;
            int expect;
            switch (kind) {
            case 0:
                o.md5 = wrong;
                expect = STRATA_EBADDIGEST;
                break;
            case 1:
                o.sha256 = wrong;
                expect = STRATA_ESHA256MISMATCH;
                break;
            case 2:
                o.cksum_algo = STRATA_CKSUM_CRC32C;
                o.cksum = wrong;
                o.cksum_len = 4;
                expect = STRATA_ECHECKSUM;
                break;
            case 3:
                o.cksum_algo = STRATA_CKSUM_SHA256;
                o.cksum = wrong;
                o.cksum_len = 32;
                expect = STRATA_ECHECKSUM;
                break;
            default:
                o.size = len + 1; /* body shorter than announced */
                expect = STRATA_EINCOMPLETE;
                break;
            }
            assert_int_equal(mt_put_opts(e, &o, data, len, 65536, NULL), expect);
            struct strata_obj_info info;
            assert_int_equal(strata_obj_head(e->m, "b", "bad", NULL, &info), STRATA_ENOTFOUND);
            assert_int_equal(mt_data_files(e), 0);
        }
        /* The right digests store it. */
        uint8_t md5[16], sha[32];
        unsigned l;
        EVP_Digest(data, len, md5, &l, EVP_md5(), NULL);
        EVP_Digest(data, len, sha, &l, EVP_sha256(), NULL);
        struct strata_put_opts o;
        memset(&o, 0, sizeof(o));
        o.bucket = "b";
        o.key = "good";
        o.size = len;
        o.md5 = md5;
        o.sha256 = sha;
        assert_int_equal(mt_put_opts(e, &o, data, len, 10000, NULL), 0);
        check_object(e, "good", data, len);
        assert_int_equal(strata_obj_delete(e->m, "b", "good", NULL, NULL), 0);
        /* A write past the announced size fails the handle. */
        struct strata_put *p;
        o.size = 10;
        o.md5 = o.sha256 = NULL;
        assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
        assert_int_equal(strata_obj_put_write(p, data, 11), STRATA_EINCOMPLETE);
        assert_int_equal(strata_obj_put_write(p, data, 1), STRATA_EINCOMPLETE);
        assert_int_equal(strata_obj_put_commit(p, NULL), STRATA_EINCOMPLETE);
        /* Abort leaves nothing either. */
        o.size = len;
        assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
        assert_int_equal(strata_obj_put_write(p, data, len / 2), 0);
        strata_obj_put_abort(p);
        assert_int_equal(mt_data_files(e), 0);
    }
    free(data);
    mt_teardown(e);
}

/* A body handed over in one write much larger than the slices the digests
 * and the store path take at a time: ETag, SHA-256, checksum and bytes are
 * those of the whole body; a wrong SHA-256 or one byte too many stores
 * nothing. */
static void test_one_large_write(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("bigwrite");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t len = (3u << 20) + 777;
    uint8_t *data = malloc(len + 1);
    mt_fill(data, len + 1, 29);
    uint8_t md5[16], sha[32], wrong[32];
    unsigned l;
    EVP_Digest(data, len, md5, &l, EVP_md5(), NULL);
    EVP_Digest(data, len, sha, &l, EVP_sha256(), NULL);
    uint32_t c = strata_crc32c(0, data, len);
    uint8_t crc[4] = {(uint8_t)(c >> 24), (uint8_t)(c >> 16), (uint8_t)(c >> 8), (uint8_t)c};
    memcpy(wrong, sha, sizeof(wrong));
    wrong[31] ^= 1;

    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "k";
    o.size = len;
    o.sha256 = wrong;
    assert_int_equal(mt_put_opts(e, &o, data, len, 0, NULL), STRATA_ESHA256MISMATCH);
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &info), STRATA_ENOTFOUND);
    assert_int_equal(mt_data_files(e), 0);

    /* One byte more than announced, in the same single write. */
    o.sha256 = NULL;
    struct strata_put *p;
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
    assert_int_equal(strata_obj_put_write(p, data, len + 1), STRATA_EINCOMPLETE);
    assert_int_equal(strata_obj_put_commit(p, NULL), STRATA_EINCOMPLETE);
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &info), STRATA_ENOTFOUND);
    assert_int_equal(mt_data_files(e), 0);

    o.sha256 = sha;
    o.md5 = md5;
    o.cksum_algo = STRATA_CKSUM_CRC32C;
    o.cksum = crc;
    o.cksum_len = 4;
    struct strata_obj_info out;
    assert_int_equal(mt_put_opts(e, &o, data, len, 0, &out), 0);
    char hex[33];
    md5_hex(data, len, hex);
    assert_string_equal(out.etag, hex);
    assert_int_equal(out.cksum_algo, STRATA_CKSUM_CRC32C);
    assert_memory_equal(out.cksum, crc, 4);
    strata_obj_info_fini(&out);
    check_object(e, "k", data, len);
    free(data);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_stream_unknown_size),
        cmocka_unit_test(test_headers_checksums),
        cmocka_unit_test(test_digest_mismatch),
        cmocka_unit_test(test_one_large_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
