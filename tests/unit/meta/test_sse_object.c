/*
 * test_sse_object.c - encrypted versions through the object layer: sizes,
 * ETag and checksum over the plaintext, reads refused without the key and
 * failing with a wrong one, ranged reads, listing sizes, and no plaintext
 * in any file of any drive (shard files and RocksDB, inline or not).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "sse.h"

static const uint8_t KEY[32] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

/* A plaintext made of a marker that the drive scan looks for. */
static uint8_t *marked(size_t n, const char *marker)
{
    uint8_t *p = malloc(n ? n : 1);
    size_t ml = strlen(marker);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)marker[i % ml];
    return p;
}

static bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    bool found = false;
    if (n > 0) {
        char *b = malloc((size_t)n);
        if (fread(b, 1, (size_t)n, f) == (size_t)n)
            found = memmem(b, (size_t)n, needle, strlen(needle)) != NULL;
        free(b);
    }
    fclose(f);
    return found;
}

static const char *g_needle;
static int g_hits;
static int scan_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_F && file_has(p, g_needle))
        g_hits++;
    return 0;
}

/* Files under the set's drives holding needle. */
static int drive_hits(struct mt_env *e, const char *needle)
{
    g_needle = needle;
    g_hits = 0;
    nftw(e->root, scan_cb, 16, FTW_PHYS);
    return g_hits;
}

static int put_enc(struct mt_env *e, const char *key, const uint8_t *data, size_t len,
                   const char *etag_override, struct strata_obj_info *out)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.size = len;
    o.cksum_algo = STRATA_CKSUM_CRC32C;
    o.sse_key = KEY;
    o.sse = "desc-v1";
    o.sse_len = 7;
    o.etag_override = etag_override;
    return mt_put_opts(e, &o, data, len, 10007, out);
}

static void md5_hex(const uint8_t *d, size_t n, char out[33])
{
    uint8_t md[16];
    unsigned l = 0;
    EVP_Digest(d, n, md, &l, EVP_md5(), NULL);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void roundtrip(struct mt_env *e, const char *key, size_t n)
{
    uint8_t *pt = marked(n, "SSE-SECRET-PLAINTEXT-0123456789|");
    struct strata_obj_info info;
    assert_int_equal(put_enc(e, key, pt, n, NULL, &info), 0);
    char md5[33];
    md5_hex(pt, n, md5);
    assert_string_equal(info.etag, md5); /* ETag covers the plaintext */
    assert_int_equal(info.size, n);
    assert_int_equal(info.sse_len, 7);
    assert_int_equal(info.cksum_len, 4);
    uint32_t c = strata_crc32c(0, pt, n);
    uint8_t be[4] = {(uint8_t)(c >> 24), (uint8_t)(c >> 16), (uint8_t)(c >> 8), (uint8_t)c};
    assert_memory_equal(info.cksum, be, 4);
    strata_obj_info_fini(&info);

    assert_int_equal(strata_obj_head(e->m, "b", key, NULL, &info), 0);
    assert_int_equal(info.size, n);
    assert_memory_equal(info.sse, "desc-v1", 7);
    strata_obj_info_fini(&info);

    struct strata_get *g;
    uint8_t *got = malloc(n + 1);
    assert_int_equal(strata_obj_get_open(e->m, "b", key, NULL, &info, &g), 0);
    assert_int_equal(info.size, n);
    if (n) /* no key yet: nothing is read */
        assert_int_equal(strata_obj_get_read(g, 0, got, 1), STRATA_EINVAL);
    assert_int_equal(strata_obj_get_key(g, KEY), 0);
    assert_int_equal(strata_obj_get_read(g, 0, got, n), 0);
    assert_memory_equal(got, pt, n);
    for (int t = 0; n && t < 50; t++) {
        uint64_t off = (uint64_t)rand() % n;
        size_t len = 1 + (size_t)rand() % (n - off);
        assert_int_equal(strata_obj_get_read(g, off, got, len), 0);
        assert_memory_equal(got, pt + off, len);
    }
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);

    if (n) {
        uint8_t wrong[32];
        memcpy(wrong, KEY, 32);
        wrong[0] ^= 0x40;
        assert_int_equal(strata_obj_get_open(e->m, "b", key, NULL, &info, &g), 0);
        assert_int_equal(strata_obj_get_key(g, wrong), 0);
        assert_int_equal(strata_obj_get_read(g, 0, got, n), STRATA_ECORRUPT);
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
    }
    free(got);
    free(pt);
}

static void test_encrypted_versions(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("sse");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    srand(7);
    roundtrip(e, "empty", 0);
    roundtrip(e, "inline", 1000);               /* inlined in the records */
    roundtrip(e, "chunk", SSE_CHUNK);            /* exactly one chunk */
    roundtrip(e, "ec", 3 * SSE_CHUNK + 12345);   /* erasure-coded */
    roundtrip(e, "big", 5u << 20);               /* several stripes */
    /* No file of any drive holds the plaintext. */
    assert_int_equal(drive_hits(e, "SSE-SECRET-PLAINTEXT-0123456789|"), 0);
    /* The scan does find plaintext where it is stored as sent. */
    uint8_t *plain = marked(1000, "CLEAR-PLAINTEXT-abcdefghijkl|");
    assert_int_equal(mt_put(e, "b", "clear", plain, 1000, NULL), 0);
    assert_true(drive_hits(e, "CLEAR-PLAINTEXT-abcdefghijkl|") > 0);
    free(plain);
    mt_teardown(e);
}

static int list_cb(const struct strata_list_entry *le, void *ud)
{
    uint64_t *sz = ud;
    if (le->info && strcmp(le->info->key, "k") == 0)
        *sz = le->info->size;
    return 0;
}

static void test_etag_override_and_listing(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("sse2");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    uint8_t *pt = marked(200000, "xyz");
    struct strata_obj_info info;
    assert_int_equal(put_enc(e, "k", pt, 200000, "0123456789abcdef0123456789abcdef", &info), 0);
    assert_string_equal(info.etag, "0123456789abcdef0123456789abcdef");
    strata_obj_info_fini(&info);
    struct strata_list_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.bucket = "b";
    lo.max_keys = 100;
    struct strata_list_result res;
    memset(&res, 0, sizeof(res));
    uint64_t sz = 0;
    assert_int_equal(strata_obj_list(e->m, &lo, list_cb, &sz, &res), 0);
    assert_int_equal(sz, 200000); /* listings show the plaintext size */
    /* Re-wrap: a compare-and-set of the descriptor; the data stays. */
    char vid[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &info), 0);
    snprintf(vid, sizeof(vid), "%s", info.version_id);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_sse_rewrap(e->m, "b", "k", vid, "nope", 4, "desc-v2", 7),
                     STRATA_EPRECOND);
    assert_int_equal(strata_obj_sse_rewrap(e->m, "b", "k", vid, "desc-v1", 7, "desc-v2", 7), 0);
    assert_int_equal(strata_obj_sse_rewrap(e->m, "b", "k", vid, "desc-v1", 7, "desc-v3", 7),
                     STRATA_EPRECOND);
    struct strata_get *g;
    uint8_t *got = malloc(200000);
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g), 0);
    assert_memory_equal(info.sse, "desc-v2", 7);
    assert_string_equal(info.etag, "0123456789abcdef0123456789abcdef");
    assert_int_equal(strata_obj_get_key(g, KEY), 0);
    assert_int_equal(strata_obj_get_read(g, 0, got, 200000), 0);
    assert_memory_equal(got, pt, 200000);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(got);
    /* A descriptor without a key, or a key without a descriptor, is refused. */
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "k2";
    o.size = 3;
    o.sse_key = KEY;
    struct strata_put *p;
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), STRATA_EINVAL);
    free(pt);
    mt_teardown(e);
}

/* Fields 18/19 round trip, and a record whose stream size does not match
 * its plaintext size (or that has one without the other) is refused. */
static void test_record_fields(void **state)
{
    (void)state;
    struct meta_rec r, d;
    memset(&r, 0, sizeof(r));
    r.has_data_id = true;
    r.psize = 3 * SSE_CHUNK + 1;
    r.size = strata_sse__stream_size(r.psize);
    r.sse = (const uint8_t *)"abc";
    r.sse_len = 3;
    snprintf(r.etag, sizeof(r.etag), "e");
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    assert_int_equal(strata_meta__rec_decode(v, vl, true, &d), 0);
    assert_int_equal(d.psize, r.psize);
    assert_int_equal(d.sse_len, 3);
    assert_memory_equal(d.sse, "abc", 3);
    assert_true(strata_meta__rec_same(&r, &d));
    strata_meta__rec_fini(&d);
    free(v);
    r.size++;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    assert_int_equal(strata_meta__rec_decode(v, vl, true, &d), STRATA_ECORRUPT);
    free(v);
}

static int key_cb(void *ud, const void *desc, size_t len, uint8_t *key)
{
    (void)ud;
    if (len != 7 || memcmp(desc, "desc-mp", 7) != 0)
        return STRATA_EINTERNAL;
    memcpy(key, KEY, 32);
    return 0;
}

static int upload_part(struct mt_env *e, const char *uid, unsigned no, const uint8_t *d,
                       size_t len, bool with_key, char etag[33])
{
    struct strata_part_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "mp";
    o.upload_id = uid;
    o.part_number = no;
    o.size = len;
    o.sse_key_cb = with_key ? key_cb : NULL;
    struct strata_put *p;
    int rc = strata_mpu_part_begin(e->m, &o, &p);
    if (rc)
        return rc;
    for (size_t off = 0; off < len && rc == 0; off += 77777)
        rc = strata_obj_put_write(p, d + off, len - off < 77777 ? len - off : 77777);
    if (rc) {
        strata_obj_put_abort(p);
        return rc;
    }
    struct strata_obj_info info;
    rc = strata_obj_put_commit(p, &info);
    if (rc == 0) {
        assert_int_equal(info.size, len); /* parts report the plaintext size */
        snprintf(etag, 33, "%.32s", info.etag);
        strata_obj_info_fini(&info);
    }
    return rc;
}

/* An upload of key k encrypted under "desc-mp" into uid. */
static void mp_create(struct mt_env *e, const char *k, char uid[STRATA_UPLOAD_ID_MAX + 1])
{
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = k;
    mo.sse = "desc-mp";
    mo.sse_len = 7;
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
}

/* Completes upload uid of key k with parts[0..n). */
static int mp_complete(struct mt_env *e, const char *k, const char *uid,
                       const struct strata_mpu_part *parts, size_t n,
                       struct strata_obj_info *info)
{
    struct strata_mpu_complete_opts co;
    memset(&co, 0, sizeof(co));
    co.bucket = "b";
    co.key = k;
    co.upload_id = uid;
    co.parts = parts;
    co.nparts = n;
    return strata_mpu_complete(e->m, &co, info);
}

/* An encrypted multipart object: every part sealed as its own stream,
 * reads across part and chunk boundaries, no key -> no read, wrong key
 * -> ECORRUPT, no plaintext on the drives. */
static void test_multipart(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("ssemp");
    assert_non_null(e);
    assert_int_equal(mt_reopen_part_min(e, 100000), 0);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    mp_create(e, "mp", uid);
    const size_t sz[3] = {3 * SSE_CHUNK + 5, 200000, 1234};
    size_t total = sz[0] + sz[1] + sz[2];
    uint8_t *pt = marked(total, "SSE-SECRET-PLAINTEXT-0123456789|");
    char et[3][33];
    /* A part without the key is refused: nothing is stored as sent. */
    assert_int_equal(upload_part(e, uid, 1, pt, sz[0], false, et[0]), STRATA_EINVAL);
    size_t off = 0;
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(upload_part(e, uid, i + 1, pt + off, sz[i], true, et[i]), 0);
        off += sz[i];
    }
    struct strata_mpu_part parts[3] = {{1, et[0], NULL, 0}, {2, et[1], NULL, 0},
                                       {3, et[2], NULL, 0}};
    struct strata_obj_info info;
    assert_int_equal(mp_complete(e, "mp", uid, parts, 3, &info), 0);
    assert_int_equal(info.size, total);
    assert_int_equal(info.sse_len, 7);
    strata_obj_info_fini(&info);
    struct strata_get *g;
    uint8_t *got = malloc(total);
    assert_int_equal(strata_obj_get_open(e->m, "b", "mp", NULL, &info, &g), 0);
    assert_int_equal(info.size, total);
    assert_memory_equal(info.sse, "desc-mp", 7);
    assert_int_equal(strata_obj_get_read(g, 0, got, 1), STRATA_EINVAL);
    assert_int_equal(strata_obj_get_key(g, KEY), 0);
    assert_int_equal(strata_obj_get_read(g, 0, got, total), 0);
    assert_memory_equal(got, pt, total);
    srand(11);
    for (int t = 0; t < 60; t++) {
        uint64_t o = (uint64_t)rand() % total;
        size_t len = 1 + (size_t)rand() % (total - o);
        if (t % 3 == 0) /* straddle the first part boundary */
            o = sz[0] - 3, len = 10;
        assert_int_equal(strata_obj_get_read(g, o, got, len), 0);
        assert_memory_equal(got, pt + o, len);
    }
    struct strata_part_info pi;
    assert_int_equal(strata_obj_get_part(g, 2, &pi), 0);
    assert_int_equal(pi.offset, sz[0]);
    assert_int_equal(pi.size, sz[1]);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    uint8_t wrong[32];
    memcpy(wrong, KEY, 32);
    wrong[5] ^= 1;
    assert_int_equal(strata_obj_get_open(e->m, "b", "mp", NULL, &info, &g), 0);
    assert_int_equal(strata_obj_get_key(g, wrong), 0);
    assert_int_equal(strata_obj_get_read(g, sz[0] + 10, got, 5), STRATA_ECORRUPT);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    assert_int_equal(drive_hits(e, "SSE-SECRET-PLAINTEXT-0123456789|"), 0);
    free(got);
    free(pt);
    mt_teardown(e);
}

static void read_all(struct mt_env *e, const char *key, const uint8_t *pt, size_t n)
{
    struct strata_obj_info info;
    struct strata_get *g;
    uint8_t *got = malloc(n);
    assert_int_equal(strata_obj_get_open(e->m, "b", key, NULL, &info, &g), 0);
    assert_int_equal(strata_obj_get_key(g, KEY), 0);
    assert_int_equal(strata_obj_get_read(g, 0, got, n), 0);
    assert_memory_equal(got, pt, n);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(got);
}

/* Healing works on ciphertext and needs no key: a wiped drive is rebuilt
 * (inline records, shard files, multipart parts), then carries its share
 * when two other drives are gone. */
static void test_heal_without_keys(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("sseheal");
    assert_non_null(e);
    assert_int_equal(mt_reopen_part_min(e, 100000), 0);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    uint8_t *a = marked(1000, "inline-secret|"), *b = marked(300000, "ec-secret|");
    uint8_t *c = marked(250000, "part-secret|");
    assert_int_equal(put_enc(e, "inline", a, 1000, NULL, NULL), 0);
    assert_int_equal(put_enc(e, "ec", b, 300000, NULL, NULL), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1], et[2][33];
    mp_create(e, "mp", uid);
    assert_int_equal(upload_part(e, uid, 1, c, 150000, true, et[0]), 0);
    assert_int_equal(upload_part(e, uid, 2, c + 150000, 100000, true, et[1]), 0);
    struct strata_mpu_part parts[2] = {{1, et[0], NULL, 0}, {2, et[1], NULL, 0}};
    assert_int_equal(mp_complete(e, "mp", uid, parts, 2, NULL), 0);
    mt_close(e);
    mt_rm_rf(e->drive[0]);
    mkdir(e->drive[0], 0755);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(mt_reopen_part_min(e, 100000), 0);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_true(st.shards_healed >= 3); /* ec + two parts */
    mt_close(e);
    mt_rm_rf(e->drive[1]);
    mt_rm_rf(e->drive[2]);
    assert_int_equal(mt_open(e), 0);
    read_all(e, "inline", a, 1000);
    read_all(e, "ec", b, 300000);
    read_all(e, "mp", c, 250000);
    free(a);
    free(b);
    free(c);
    mt_teardown(e);
}

/* The sealed stream of an encrypted version, read without its key,
 * stored again as a replica (strata_put_opts.sse_sealed): the same key
 * reads the same plaintext, with the ETag and checksum given. */
static void sealed_copy(struct mt_env *e, const char *key, size_t n)
{
    uint8_t *pt = marked(n, "SEALED-REPLICA|");
    struct strata_obj_info info;
    assert_int_equal(put_enc(e, key, pt, n, NULL, &info), 0);
    uint8_t ck[4];
    memcpy(ck, info.cksum, 4);
    strata_obj_info_fini(&info);
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", key, NULL, &info, &g), 0);
    uint64_t ss = strata_obj_get_sealed_size(g);
    assert_int_equal(ss, strata_sse__stream_size(n));
    uint8_t *st = malloc(ss);
    assert_int_equal(strata_obj_get_read_sealed(g, 0, st, ss), 0);
    assert_int_equal(strata_obj_get_read_sealed(g, ss, st, 1), STRATA_ERANGE);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);

    char rkey[64];
    snprintf(rkey, sizeof(rkey), "%s-replica", key);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = rkey;
    o.size = n;
    o.sse = "desc-v1";
    o.sse_len = 7;
    o.sse_sealed = true;
    o.cksum_algo = STRATA_CKSUM_CRC32C;
    o.cksum = ck;
    o.cksum_len = 4;
    struct strata_put *p;
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), STRATA_EINVAL); /* no ETag given */
    o.etag_override = "0123456789abcdef0123456789abcdef";
    /* One byte short of the stream: nothing stored. */
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
    assert_int_equal(strata_obj_put_write(p, st, ss - 1), 0);
    assert_int_equal(strata_obj_put_commit(p, NULL), STRATA_EINCOMPLETE);
    assert_int_equal(strata_obj_head(e->m, "b", rkey, NULL, &info), STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
    assert_int_equal(strata_obj_put_write(p, st, ss / 2), 0);
    assert_int_equal(strata_obj_put_write(p, st + ss / 2, ss - ss / 2), 0);
    assert_int_equal(strata_obj_put_write(p, st, 1), STRATA_EINCOMPLETE); /* past the stream */
    strata_obj_put_abort(p);
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
    assert_int_equal(strata_obj_put_write(p, st, ss), 0);
    assert_int_equal(strata_obj_put_commit(p, &info), 0);
    assert_int_equal(info.size, n);
    assert_string_equal(info.etag, "0123456789abcdef0123456789abcdef");
    assert_memory_equal(info.cksum, ck, 4);
    strata_obj_info_fini(&info);
    read_all(e, rkey, pt, n);
    free(st);
    free(pt);
}

static void test_sealed_replica(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("ssesealed");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    sealed_copy(e, "inline", 1000);
    sealed_copy(e, "ec", 3 * SSE_CHUNK + 12345);
    /* A version stored as sent has no sealed stream. */
    uint8_t plain[100] = {1};
    assert_int_equal(mt_put(e, "b", "clear", plain, sizeof(plain), NULL), 0);
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", "clear", NULL, &info, &g), 0);
    assert_int_equal(strata_obj_get_sealed_size(g), 0);
    assert_int_equal(strata_obj_get_read_sealed(g, 0, plain, 1), STRATA_EINVAL);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    mt_teardown(e);
}

/* One part of key k as a replica's sealed part (strata_part_opts
 * sealed_etag): 0 or the error of begin, write or commit. */
static int sealed_part(struct mt_env *e, const char *k, const char *uid, unsigned no,
                       const uint8_t *st, size_t slen, uint64_t size, const char *desc,
                       const char *etag)
{
    struct strata_part_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = k;
    o.upload_id = uid;
    o.part_number = no;
    o.size = size;
    o.sealed_etag = etag;
    o.sealed_desc = desc;
    o.sealed_desc_len = strlen(desc);
    struct strata_put *p;
    int rc = strata_mpu_part_begin(e->m, &o, &p);
    if (rc)
        return rc;
    rc = slen ? strata_obj_put_write(p, st, slen) : 0;
    if (rc) {
        strata_obj_put_abort(p);
        return rc;
    }
    return strata_obj_put_commit(p, NULL);
}

/* The sealed stream of each part of an encrypted multipart version, read
 * without its key (part numbers 2 and 5: each stream is sealed under its
 * number), stored again part by part as a replica: the same key reads the
 * same plaintext across the part boundary, with the same "-2" ETag.  A
 * sealed part needs the upload's own descriptor; a handle that read
 * sealed bytes reads plaintext once keyed. */
static void test_sealed_multipart_replica(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("ssesealmp");
    assert_non_null(e);
    assert_int_equal(mt_reopen_part_min(e, 100000), 0);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    mp_create(e, "mp", uid);
    const size_t sz[2] = {2 * SSE_CHUNK + 7, 3000};
    const unsigned no[2] = {2, 5};
    uint8_t *pt = marked(sz[0] + sz[1], "SEALED-PARTS|");
    char et[2][33];
    assert_int_equal(upload_part(e, uid, no[0], pt, sz[0], true, et[0]), 0);
    assert_int_equal(upload_part(e, uid, no[1], pt + sz[0], sz[1], true, et[1]), 0);
    struct strata_mpu_part parts[2] = {{no[0], et[0], NULL, 0}, {no[1], et[1], NULL, 0}};
    struct strata_obj_info info;
    assert_int_equal(mp_complete(e, "mp", uid, parts, 2, &info), 0);
    char etag[STRATA_ETAG_MAX + 1];
    snprintf(etag, sizeof(etag), "%s", info.etag);
    strata_obj_info_fini(&info);

    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", "mp", NULL, &info, &g), 0);
    assert_int_equal(strata_obj_get_sealed_size(g), 0); /* not one stream */
    uint8_t *st[2];
    struct strata_part_info pi[2];
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(strata_obj_get_part(g, i + 1, &pi[i]), 0);
        assert_int_equal(pi[i].part_number, no[i]);
        assert_int_equal(pi[i].sealed_size, strata_sse__stream_size(sz[i]));
        st[i] = malloc(pi[i].sealed_size);
        assert_int_equal(strata_obj_get_part_read_sealed(g, i + 1, 0, st[i], pi[i].sealed_size),
                         0);
        assert_int_equal(strata_obj_get_part_read_sealed(g, i + 1, pi[i].sealed_size, st[i], 1),
                         STRATA_ERANGE);
    }
    assert_int_equal(strata_obj_get_part_read_sealed(g, 3, 0, st[0], 1), STRATA_ERANGE);
    /* No plaintext before the key; after it, plaintext (not the sealed
     * bytes of the part reader the sealed read opened). */
    uint8_t *got = malloc(sz[0] + sz[1]);
    assert_int_equal(strata_obj_get_read(g, sz[0], got, 10), STRATA_EINVAL);
    assert_int_equal(strata_obj_get_key(g, KEY), 0);
    assert_int_equal(strata_obj_get_read(g, sz[0], got, sz[1]), 0);
    assert_memory_equal(got, pt + sz[0], sz[1]);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);

    mp_create(e, "mp2", uid);
    /* Another descriptor than the upload's, or a bad ETag: refused. */
    assert_int_equal(sealed_part(e, "mp2", uid, no[0], st[0], pi[0].sealed_size, sz[0],
                                 "desc-xx", et[0]),
                     STRATA_EINVAL);
    assert_int_equal(sealed_part(e, "mp2", uid, no[0], st[0], pi[0].sealed_size, sz[0],
                                 "desc-mp", "not-hex"),
                     STRATA_EINVAL);
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(sealed_part(e, "mp2", uid, no[i], st[i], pi[i].sealed_size, sz[i],
                                     "desc-mp", et[i]),
                         0);
    assert_int_equal(mp_complete(e, "mp2", uid, parts, 2, &info), 0);
    assert_string_equal(info.etag, etag);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_get_open(e->m, "b", "mp2", NULL, &info, &g), 0);
    assert_int_equal(info.size, sz[0] + sz[1]);
    assert_int_equal(strata_obj_get_key(g, KEY), 0);
    assert_int_equal(strata_obj_get_read(g, 0, got, sz[0] + sz[1]), 0);
    assert_memory_equal(got, pt, sz[0] + sz[1]);
    assert_int_equal(strata_obj_get_read(g, sz[0] - 5, got, 10), 0); /* across the parts */
    assert_memory_equal(got, pt + sz[0] - 5, 10);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(got);
    free(st[0]);
    free(st[1]);
    free(pt);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encrypted_versions),
        cmocka_unit_test(test_etag_override_and_listing),
        cmocka_unit_test(test_record_fields),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_heal_without_keys),
        cmocka_unit_test(test_sealed_replica),
        cmocka_unit_test(test_sealed_multipart_replica),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
