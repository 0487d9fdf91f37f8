/*
 * gen_meta_seeds.c - writes seed values for fuzz_meta_rec with meta's own
 * encoders (the records of tests/unit/meta/test_record.c and their
 * multipart, delete-marker, bucket, upload, part and part-table
 * siblings), so the corpus starts from what drives really hold.
 * Build and run (from the repository, after a CMake build in $B):
 *   cc -std=c11 -D_GNU_SOURCE -Iinclude -Imeta tests/fuzz/tools/gen_meta_seeds.c \
 *      $B/libstrata_meta.a $B/libstrata_erasure.a -lrocksdb -lmsgpackc -lisal \
 *      -luring -ljansson -lcrypto -lpthread -o /tmp/gen && /tmp/gen DIR
 * Single-threaded; a tool, not a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_internal.h"

static void put(const char *dir, const char *name, const char *v, size_t vl)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, 1, vl, f) != vl || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    char *v;
    size_t vl;
    uint8_t shard[64], pidx[2 * MP_IDX_ENT], tags[] = "a=1&b%20c=d";
    for (size_t i = 0; i < sizeof(shard); i++)
        shard[i] = (uint8_t)(i * 7);
    memset(pidx, 0x11, sizeof(pidx));
    struct strata_kv kv[2] = {{"content-type", "text/plain"}, {"x-amz-meta-a", ""}};

    /* Inline version with headers and a CRC64NVME checksum. */
    struct meta_rec r;
    memset(&r, 0, sizeof(r));
    r.flags = REC_F_INLINE;
    r.size = 12345;
    strcpy(r.etag, "0123456789abcdef0123456789abcdef");
    r.mtime_ns = 1700000000123456789LL;
    r.shard = shard;
    r.shard_len = sizeof(shard);
    r.shard_crc = 0xdeadbeef;
    strcpy(r.storage_class, "STANDARD");
    r.cksum_algo = STRATA_CKSUM_CRC64NVME;
    memset(r.cksum, 0xab, 8);
    r.cksum_len = 8;
    r.hdrs = kv;
    r.nhdrs = 2;
    if (strata_meta__rec_encode(&r, &v, &vl))
        return 1;
    put(dir, "rec-inline", v, vl);
    free(v);

    /* Erasure-coded data version with tags. */
    r.flags = 0;
    r.has_data_id = true;
    memset(r.data_id, 0x5a, STRATA_DATA_ID_LEN);
    r.tags = tags;
    r.tags_len = sizeof(tags) - 1;
    r.cksum_type = STRATA_CKSUM_TYPE_FULL_OBJECT;
    if (strata_meta__rec_encode(&r, &v, &vl))
        return 1;
    put(dir, "rec-data", v, vl);
    free(v);

    /* Multipart version of 200 parts (two chunks). */
    r.flags = REC_F_MULTIPART;
    r.has_data_id = false;
    r.nparts = 200;
    r.pidx = pidx;
    r.pidx_len = sizeof(pidx);
    strcpy(r.etag, "0123456789abcdef0123456789abcdef-200");
    if (strata_meta__rec_encode(&r, &v, &vl))
        return 1;
    put(dir, "rec-multipart", v, vl);
    free(v);

    /* Null-version delete marker. */
    memset(&r, 0, sizeof(r));
    r.flags = REC_F_DELETE_MARKER | REC_F_NULL;
    r.mtime_ns = 1;
    if (strata_meta__rec_encode(&r, &v, &vl))
        return 1;
    put(dir, "rec-marker", v, vl);
    free(v);

    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    strcpy(b.name, "my-bucket");
    strcpy(b.owner, "AKIAIOSFODNN7EXAMPLE");
    strcpy(b.region, "us-east-1");
    b.created_ms = 1700000000000LL;
    b.versioning = STRATA_VERSIONING_SUSPENDED;
    b.object_lock = true;
    if (strata_meta__bucket_encode(&b, &v, &vl))
        return 1;
    put(dir, "bucket", v, vl);
    free(v);
    if (strata_meta__bucket_encode_at(&b, 1700000000123456789LL, &v, &vl))
        return 1;
    put(dir, "bucket-state", v, vl);
    free(v);

    struct meta_done dn;
    memset(&dn, 0, sizeof(dn));
    static const uint8_t desc[67] = {1, 3};
    dn.done_ns = 1700000000000000001LL;
    memset(dn.digest, 0xab, sizeof(dn.digest));
    memset(dn.sk, 0x7f, sizeof(dn.sk));
    dn.flags = REC_F_MULTIPART | REC_F_NULL;
    strcpy(dn.etag, "0123456789abcdef0123456789abcdef-3");
    dn.size = 10485770;
    dn.mtime_ns = 1700000000000000000LL;
    dn.cksum_algo = STRATA_CKSUM_CRC32C;
    dn.cksum_type = STRATA_CKSUM_TYPE_COMPOSITE;
    dn.cksum_len = 4;
    memcpy(dn.cksum, "\x01\x02\x03\x04", 4);
    dn.nparts = 3;
    strcpy(dn.storage_class, "STANDARD");
    dn.sse = desc;
    dn.sse_len = sizeof(desc);
    if (strata_meta__done_encode(&dn, &v, &vl))
        return 1;
    put(dir, "upload-done", v, vl);
    free(v);

    struct meta_upload u;
    memset(&u, 0, sizeof(u));
    u.init_ns = 1700000000000000000LL;
    u.cksum_algo = STRATA_CKSUM_SHA256;
    u.cksum_type = STRATA_CKSUM_TYPE_COMPOSITE;
    strcpy(u.storage_class, "STANDARD_IA");
    u.hdrs = kv;
    u.nhdrs = 2;
    u.tags = tags;
    u.tags_len = sizeof(tags) - 1;
    if (strata_meta__upload_encode(&u, &v, &vl))
        return 1;
    put(dir, "upload", v, vl);
    free(v);

    struct meta_part p[3];
    memset(p, 0, sizeof(p));
    for (unsigned i = 0; i < 3; i++) {
        p[i].number = i + 1;
        p[i].size = i == 2 ? 0 : 5u << 20;
        memset(p[i].md5, (int)(0x30 + i), 16);
        p[i].has_data_id = i != 2;
        memset(p[i].data_id, (int)(0x40 + i), STRATA_DATA_ID_LEN);
        p[i].cksum_algo = STRATA_CKSUM_CRC32C;
        memset(p[i].cksum, 0x77, 4);
        p[i].cksum_len = 4;
        p[i].mtime_ns = 42;
    }
    if (strata_meta__part_encode(&p[0], "my-bucket", "dir/key.bin", &v, &vl))
        return 1;
    put(dir, "part", v, vl);
    free(v);
    if (strata_meta__part_encode(&p[2], "my-bucket", "empty", &v, &vl))
        return 1;
    put(dir, "part-empty", v, vl);
    free(v);
    if (strata_meta__ptab_encode(p, 3, &v, &vl))
        return 1;
    put(dir, "ptab", v, vl);
    free(v);
    return 0;
}
