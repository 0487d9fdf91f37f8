/*
 * test_multipart.c - multipart uploads through meta/: create, part uploads
 * (also replaced, parallel from 8 threads, failing digests), complete with
 * every failure path (wrong ETag, missing part, wrong order, too small,
 * unknown upload, abort then complete), ranged reads across part
 * boundaries, part lookup, COMPOSITE and FULL_OBJECT checksums against
 * values computed here (and the CRC combine math against CRCs of the
 * concatenation), both listings with paging, space reclaimed on abort,
 * complete and overwrite, copy onto itself, heal of a wiped drive, and the
 * time of a 1,000-part complete.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <pthread.h>
#include <time.h>

#include "meta_internal.h"
#include "meta_test_util.h"

#define PMIN (64u * 1024) /* part_size_min for these tests */

static void reopen_small_parts(struct mt_env *e)
{
    assert_int_equal(mt_reopen_part_min(e, PMIN), 0);
}

static struct mt_env *setup(const char *name, int versioning)
{
    struct mt_env *e = mt_setup(name);
    assert_non_null(e);
    reopen_small_parts(e);
    assert_int_equal(mt_bucket(e, "b", versioning), 0);
    return e;
}

static void md5_raw(const uint8_t *d, size_t n, uint8_t out[16])
{
    unsigned l;
    EVP_Digest(d, n, out, &l, EVP_md5(), NULL);
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int create(struct mt_env *e, const char *key, int algo, int type, char uid[40])
{
    struct strata_mpu_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.cksum_algo = algo;
    o.cksum_type = type;
    struct strata_kv h[] = {{"content-type", "application/x-test"}};
    o.hdrs = h;
    o.nhdrs = 1;
    return strata_mpu_create(e->m, &o, uid);
}

/* Upload one part; etag (33 bytes) and checksum out when non-NULL. */
static int upload(struct mt_env *e, const char *key, const char *uid, unsigned no,
                  const uint8_t *d, size_t len, char *etag, struct strata_obj_info *info_out)
{
    struct strata_part_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.upload_id = uid;
    o.part_number = no;
    o.size = len;
    struct strata_put *p;
    int rc = strata_mpu_part_begin(e->m, &o, &p);
    if (rc)
        return rc;
    for (size_t off = 0; off < len; off += 100000) {
        size_t n = len - off < 100000 ? len - off : 100000;
        rc = strata_obj_put_write(p, d + off, n);
        if (rc) {
            strata_obj_put_abort(p);
            return rc;
        }
    }
    struct strata_obj_info info;
    rc = strata_obj_put_commit(p, &info);
    if (rc == 0) {
        if (etag)
            snprintf(etag, 33, "%.32s", info.etag);
        if (info_out)
            *info_out = info;
        else
            strata_obj_info_fini(&info);
    }
    return rc;
}

/* Expected multipart ETag over parts of the given sizes of data. */
static void mp_etag(const uint8_t *d, const size_t *sizes, size_t n, char out[48])
{
    uint8_t *cat = malloc(16 * n), md[16];
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        md5_raw(d + off, sizes[i], cat + 16 * i);
        off += sizes[i];
    }
    md5_raw(cat, 16 * n, md);
    hex(md, 16, out);
    snprintf(out + 32, 16, "-%u", (unsigned)(n % 100000));
    free(cat);
}

static void read_all_check(struct mt_env *e, const char *key, const uint8_t *exp, size_t len)
{
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", key, NULL, &got, &gl), 0);
    assert_int_equal(gl, len);
    assert_memory_equal(got, exp, len);
    free(got);
}

static void test_basic(void **state)
{
    (void)state;
    struct mt_env *e = setup("mpbasic", 0);
    size_t sizes[] = {PMIN + 1000, 200000, 70000, 12345};
    size_t total = 0;
    for (int i = 0; i < 4; i++)
        total += sizes[i];
    uint8_t *d = malloc(total);
    mt_fill(d, total, 7);
    char uid[40], et[4][33];
    assert_int_equal(create(e, "k/obj", 0, 0, uid), 0);
    assert_int_equal(strlen(uid), STRATA_UPLOAD_ID_MAX);
    /* Upload out of order, plus an extra part 9 that complete will not use. */
    size_t offs[4] = {0};
    for (int i = 1; i < 4; i++)
        offs[i] = offs[i - 1] + sizes[i - 1];
    for (int i = 3; i >= 0; i--)
        assert_int_equal(upload(e, "k/obj", uid, (unsigned)(i + 1), d + offs[i], sizes[i], et[i],
                                NULL),
                         0);
    int files4 = mt_data_files(e);
    assert_true(files4 > 0 && files4 % 4 == 0);
    int per_part = files4 / 4;
    uint8_t extra[5000];
    mt_fill(extra, sizeof(extra), 99);
    assert_int_equal(upload(e, "k/obj", uid, 9, extra, sizeof(extra), NULL, NULL), 0);
    assert_int_equal(mt_data_files(e), 5 * per_part);
    /* Parts' ETags are the MD5s of their bytes. */
    for (int i = 0; i < 4; i++) {
        uint8_t md[16];
        char h[33];
        md5_raw(d + offs[i], sizes[i], md);
        hex(md, 16, h);
        assert_string_equal(et[i], h);
    }
    struct strata_mpu_part parts[4];
    char quoted[33 + 2];
    snprintf(quoted, sizeof(quoted), "\"%s\"", et[0]);
    for (int i = 0; i < 4; i++)
        parts[i] = (struct strata_mpu_part){(unsigned)(i + 1), i == 0 ? quoted : et[i], NULL, 0};
    struct strata_mpu_complete_opts co;
    memset(&co, 0, sizeof(co));
    co.bucket = "b";
    co.key = "k/obj";
    co.upload_id = uid;
    co.parts = parts;
    co.nparts = 4;
    struct strata_obj_info out;
    assert_int_equal(strata_mpu_complete(e->m, &co, &out), 0);
    char exp_etag[48];
    mp_etag(d, sizes, 4, exp_etag);
    assert_string_equal(out.etag, exp_etag);
    assert_int_equal(out.size, total);
    assert_int_equal(out.nparts, 4);
    strata_obj_info_fini(&out);
    /* The unused part's data is gone; the upload too.  A repeated
     * complete of the same list (a retry) answers the same version,
     * another list NoSuchUpload (test_mpu_tomb.c has the details). */
    assert_int_equal(mt_data_files(e), 4 * per_part);
    assert_int_equal(strata_mpu_complete(e->m, &co, &out), 0);
    assert_string_equal(out.etag, exp_etag);
    strata_obj_info_fini(&out);
    co.nparts = 3;
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_ENOTFOUND);
    co.nparts = 4;
    assert_int_equal(mt_data_files(e), 4 * per_part);
    struct strata_mpu_info mi;
    assert_int_equal(strata_mpu_get(e->m, "b", "k/obj", uid, &mi), STRATA_ENOTFOUND);

    /* Head: part count, stored headers. */
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "k/obj", NULL, &info), 0);
    assert_int_equal(info.nparts, 4);
    assert_string_equal(info.etag, exp_etag);
    assert_string_equal(strata_obj_info_hdr(&info, "content-type"), "application/x-test");
    strata_obj_info_fini(&info);

    read_all_check(e, "k/obj", d, total);
    /* Ranged reads across every part boundary, in both directions. */
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", "k/obj", NULL, &info, &g), 0);
    uint8_t *buf = malloc(total);
    for (int i = 1; i < 4; i++) {
        size_t off = offs[i] - 3000;
        assert_int_equal(strata_obj_get_read(g, off, buf, 6000), 0);
        assert_memory_equal(buf, d + off, 6000);
    }
    for (int i = 3; i >= 1; i--) {
        size_t off = offs[i] - 1;
        assert_int_equal(strata_obj_get_read(g, off, buf, 2), 0);
        assert_memory_equal(buf, d + off, 2);
    }
    /* One read spanning all four parts. */
    assert_int_equal(strata_obj_get_read(g, 17, buf, total - 20), 0);
    assert_memory_equal(buf, d + 17, total - 20);
    assert_int_equal(strata_obj_get_read(g, total - 1, buf, 2), STRATA_ERANGE);
    /* Part lookup: offsets, sizes and ETags per position. */
    for (unsigned i = 1; i <= 4; i++) {
        struct strata_part_info pi;
        assert_int_equal(strata_obj_get_part(g, i, &pi), 0);
        assert_int_equal(pi.part_number, i);
        assert_int_equal(pi.offset, offs[i - 1]);
        assert_int_equal(pi.size, sizes[i - 1]);
        assert_string_equal(pi.etag, et[i - 1]);
    }
    struct strata_part_info pi;
    assert_int_equal(strata_obj_get_part(g, 5, &pi), STRATA_ERANGE);
    assert_int_equal(strata_obj_get_part(g, 0, &pi), STRATA_ERANGE);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(buf);

    /* Overwrite with a plain put: every part's data goes after the commit. */
    assert_int_equal(mt_put(e, "b", "k/obj", "small", 5, NULL), 0);
    assert_int_equal(mt_data_files(e), 0);
    read_all_check(e, "k/obj", (const uint8_t *)"small", 5);
    free(d);
    mt_teardown(e);
}

/* A complete over the null version (versioning off) replaces it, and the
 * replaced version's data goes after the commit, as under a PUT. */
static void test_complete_replaces_null(void **state)
{
    (void)state;
    struct mt_env *e = setup("mpnull", 0);
    static uint8_t d1[200000], d2[200000]; /* erasure-coded, not inline */
    mt_fill(d1, sizeof(d1), 5);
    mt_fill(d2, sizeof(d2), 6);
    assert_int_equal(mt_mpu_plain(e->m, "b", "k", NULL, d1, sizeof(d1), NULL), 0);
    int one = mt_data_files(e);
    assert_true(one > 0);
    assert_int_equal(mt_mpu_plain(e->m, "b", "k", NULL, d2, sizeof(d2), NULL), 0);
    assert_int_equal(mt_data_files(e), one); /* the first object's part went */
    read_all_check(e, "k", d2, sizeof(d2));
    mt_teardown(e);
}

static void test_errors(void **state)
{
    (void)state;
    struct mt_env *e = setup("mperr", 0);
    uint8_t *d = malloc(3 * PMIN);
    mt_fill(d, 3 * PMIN, 3);
    char uid[40], et[3][33];
    assert_int_equal(create(e, "x", 0, 0, uid), 0);
    assert_int_equal(upload(e, "x", uid, 1, d, PMIN, et[0], NULL), 0);
    assert_int_equal(upload(e, "x", uid, 2, d + PMIN, PMIN - 1, et[1], NULL), 0);
    assert_int_equal(upload(e, "x", uid, 3, d + 2 * PMIN, 10, et[2], NULL), 0);
    struct strata_mpu_complete_opts co;
    memset(&co, 0, sizeof(co));
    co.bucket = "b";
    co.key = "x";
    co.upload_id = uid;
    struct strata_mpu_part p[3];
    co.parts = p;

    /* Wrong order and duplicates. */
    p[0] = (struct strata_mpu_part){2, et[1], NULL, 0};
    p[1] = (struct strata_mpu_part){1, et[0], NULL, 0};
    co.nparts = 2;
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_EPARTORDER);
    p[1] = (struct strata_mpu_part){2, et[1], NULL, 0};
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_EPARTORDER);
    /* Wrong ETag, missing part. */
    p[0] = (struct strata_mpu_part){1, et[1], NULL, 0};
    co.nparts = 1;
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_EBADPART);
    p[0] = (struct strata_mpu_part){4, et[0], NULL, 0};
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_EBADPART);
    /* A wrong checksum given for a part. */
    uint8_t bogus[4] = {1, 2, 3, 4};
    p[0] = (struct strata_mpu_part){1, et[0], bogus, 4};
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_EBADPART);
    /* Part 2 is one byte short of the minimum and not last. */
    p[0] = (struct strata_mpu_part){1, et[0], NULL, 0};
    p[1] = (struct strata_mpu_part){2, et[1], NULL, 0};
    p[2] = (struct strata_mpu_part){3, et[2], NULL, 0};
    co.nparts = 3;
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_ETOOSMALL);
    /* Nothing of that was stored: the object does not exist. */
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "x", NULL, &info), STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);
    /* A small last part is fine. */
    co.parts = &p[1];
    co.nparts = 2;
    p[1].part_number = 2;
    /* part 2 is small but part 3 is last: still too small (2 is not last) */
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_ETOOSMALL);
    p[1] = (struct strata_mpu_part){1, et[0], NULL, 0};
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), 0);
    size_t sz[2] = {PMIN, 10};
    uint8_t *exp = malloc(PMIN + 10);
    memcpy(exp, d, PMIN);
    memcpy(exp + PMIN, d + 2 * PMIN, 10);
    read_all_check(e, "x", exp, PMIN + 10);
    char exp_etag[48];
    mp_etag(exp, sz, 2, exp_etag);
    assert_int_equal(strata_obj_head(e->m, "b", "x", NULL, &info), 0);
    assert_string_equal(info.etag, exp_etag);
    strata_obj_info_fini(&info);
    free(exp);

    /* Unknown upload ids: well-formed, malformed, another key's. */
    const char *bad = "00000000000000000000000000000000";
    assert_int_equal(upload(e, "x", bad, 1, d, 10, NULL, NULL), STRATA_ENOTFOUND);
    assert_int_equal(upload(e, "x", "nope", 1, d, 10, NULL, NULL), STRATA_ENOTFOUND);
    char uid2[40];
    assert_int_equal(create(e, "y", 0, 0, uid2), 0);
    assert_int_equal(upload(e, "x", uid2, 1, d, 10, NULL, NULL), STRATA_ENOTFOUND);
    assert_int_equal(strata_mpu_abort(e->m, "b", "x", bad), STRATA_ENOTFOUND);
    co.upload_id = bad;
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_ENOTFOUND);
    struct strata_mpu_parts_result pr;
    assert_int_equal(strata_mpu_list_parts(e->m, "b", "x", bad, 0, 0, NULL, NULL, &pr),
                     STRATA_ENOTFOUND);
    /* Part numbers out of range. */
    assert_int_equal(upload(e, "y", uid2, 0, d, 10, NULL, NULL), STRATA_EINVAL);
    assert_int_equal(upload(e, "y", uid2, 10001, d, 10, NULL, NULL), STRATA_EINVAL);
    /* A failing Content-MD5 stores nothing. */
    int before = mt_data_files(e);
    struct strata_part_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = "b";
    po.key = "y";
    po.upload_id = uid2;
    po.part_number = 1;
    po.size = 100;
    uint8_t wrong[16] = {0};
    po.md5 = wrong;
    struct strata_put *pp;
    assert_int_equal(strata_mpu_part_begin(e->m, &po, &pp), 0);
    assert_int_equal(strata_obj_put_write(pp, d, 100), 0);
    assert_int_equal(strata_obj_put_commit(pp, NULL), STRATA_EBADDIGEST);
    assert_int_equal(mt_data_files(e), before);
    /* Abort then complete; a part begun before the abort commits into nothing. */
    assert_int_equal(upload(e, "y", uid2, 1, d, 1000, et[0], NULL), 0);
    po.md5 = NULL;
    assert_int_equal(strata_mpu_part_begin(e->m, &po, &pp), 0);
    assert_int_equal(strata_obj_put_write(pp, d, 100), 0);
    assert_int_equal(strata_mpu_abort(e->m, "b", "y", uid2), 0);
    assert_int_equal(strata_obj_put_commit(pp, NULL), STRATA_ENOTFOUND);
    co.key = "y";
    co.upload_id = uid2;
    co.parts = p;
    co.nparts = 1;
    p[0] = (struct strata_mpu_part){1, et[0], NULL, 0};
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), STRATA_ENOTFOUND);
    assert_int_equal(strata_mpu_abort(e->m, "b", "y", uid2), STRATA_ENOTFOUND);
    /* Only object x's two parts remain on the drives. */
    assert_int_equal(strata_obj_delete(e->m, "b", "x", NULL, NULL), 0);
    assert_int_equal(mt_data_files(e), 0);
    free(d);
    mt_teardown(e);
}

static void test_abort_reclaims(void **state)
{
    (void)state;
    struct mt_env *e = setup("mpabort", 0);
    uint8_t *d = malloc(3u << 20);
    mt_fill(d, 3u << 20, 5);
    char uid[40];
    assert_int_equal(create(e, "big", 0, 0, uid), 0);
    assert_int_equal(upload(e, "big", uid, 1, d, 3u << 20, NULL, NULL), 0);
    assert_int_equal(upload(e, "big", uid, 2, d, 1u << 20, NULL, NULL), 0);
    /* Replacing part 2 removes the first upload's data. */
    int two = mt_data_files(e);
    assert_int_equal(upload(e, "big", uid, 2, d + 5, 1u << 20, NULL, NULL), 0);
    assert_int_equal(mt_data_files(e), two);
    assert_int_equal(strata_mpu_abort(e->m, "b", "big", uid), 0);
    assert_int_equal(mt_data_files(e), 0);
    /* Deleting the bucket aborts an upload (as AWS does). */
    assert_int_equal(create(e, "big", 0, 0, uid), 0);
    assert_int_equal(upload(e, "big", uid, 1, d, 1u << 20, NULL, NULL), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "b"), 0);
    assert_int_equal(mt_data_files(e), 0);
    assert_int_equal(strata_mpu_abort(e->m, "b", "big", uid), STRATA_ENOTFOUND);
    free(d);
    mt_teardown(e);
}

struct pjob {
    struct mt_env *e;
    const char *uid;
    const uint8_t *d;
    size_t psize;
    unsigned first, step, nparts;
    char (*etags)[33];
    int rc;
};

static void *pworker(void *arg)
{
    struct pjob *j = arg;
    for (unsigned no = j->first; no <= j->nparts && j->rc == 0; no += j->step)
        j->rc = upload(j->e, "par", j->uid, no, j->d + (size_t)(no - 1) * j->psize, j->psize,
                       j->etags[no - 1], NULL);
    return NULL;
}

struct lp_acc {
    unsigned n, last;
    char (*et)[33];
};

static int lp_cb(const struct strata_part_info *p, void *ud)
{
    struct lp_acc *acc = ud;
    assert_true(p->part_number > acc->last);
    assert_string_equal(p->etag, acc->et[p->part_number - 1]);
    acc->last = p->part_number;
    acc->n++;
    return 0;
}

static void test_parallel(void **state)
{
    (void)state;
    struct mt_env *e = setup("mppar", STRATA_VERSIONING_ENABLED);
    enum { NP = 24, NT = 8 };
    size_t psize = PMIN + 4096;
    uint8_t *d = malloc(NP * psize);
    mt_fill(d, NP * psize, 11);
    char uid[40], etags[NP][33];
    assert_int_equal(create(e, "par", 0, 0, uid), 0);
    pthread_t th[NT];
    struct pjob jobs[NT];
    for (unsigned t = 0; t < NT; t++) {
        jobs[t] = (struct pjob){e, uid, d, psize, t + 1, NT, NP, etags, 0};
        pthread_create(&th[t], NULL, pworker, &jobs[t]);
    }
    for (unsigned t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].rc, 0);
    }
    /* ListParts pages of 10: 1-10, 11-20, 21-24. */
    unsigned marker = 0, seen = 0, pages = 0;
    struct strata_mpu_parts_result pr;
    do {
        struct lp_acc acc = {0, marker, etags};
        assert_int_equal(
            strata_mpu_list_parts(e->m, "b", "par", uid, marker, 10, lp_cb, &acc, &pr),
                         0);
        seen += acc.n;
        marker = pr.next_marker;
        pages++;
        if (pr.truncated)
            assert_int_equal(acc.n, 10);
    } while (pr.truncated);
    assert_int_equal(seen, NP);
    assert_int_equal(pages, 3);
    struct strata_mpu_part parts[NP];
    for (unsigned i = 0; i < NP; i++)
        parts[i] = (struct strata_mpu_part){i + 1, etags[i], NULL, 0};
    struct strata_mpu_complete_opts co = {"b",   "par", uid, parts, NP,  NULL,
                                          false, false, 0,   NULL,  NULL};
    struct strata_obj_info out;
    assert_int_equal(strata_mpu_complete(e->m, &co, &out), 0);
    assert_int_not_equal(strcmp(out.version_id, "null"), 0);
    char vid[48];
    snprintf(vid, sizeof(vid), "%s", out.version_id);
    strata_obj_info_fini(&out);
    read_all_check(e, "par", d, NP * psize);
    /* Copy onto itself: read the version while putting a new one. */
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", "par", vid, &info, &g), 0);
    struct strata_put_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = "b";
    po.key = "par";
    po.size = info.size;
    struct strata_put *p;
    assert_int_equal(strata_obj_put_begin(e->m, &po, &p), 0);
    uint8_t *buf = malloc(1u << 20);
    for (uint64_t off = 0; off < info.size; off += 1u << 20) {
        size_t n = info.size - off < (1u << 20) ? info.size - off : (1u << 20);
        assert_int_equal(strata_obj_get_read(g, off, buf, n), 0);
        assert_int_equal(strata_obj_put_write(p, buf, n), 0);
    }
    assert_int_equal(strata_obj_put_commit(p, NULL), 0);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(buf);
    read_all_check(e, "par", d, NP * psize);
    /* Deleting the multipart version by id removes its parts' data; the
     * copy's data stays. */
    int with = mt_data_files(e);
    assert_int_equal(strata_obj_delete(e->m, "b", "par", vid, NULL), 0);
    assert_int_equal(mt_data_files(e), with - NP * (with / (NP + 1)));
    read_all_check(e, "par", d, NP * psize);
    free(d);
    mt_teardown(e);
}


/* ---- checksums ---------------------------------------------------------- */

static uint64_t crc_of(int algo, const uint8_t *d, size_t n)
{
    switch (algo) {
    case STRATA_CKSUM_CRC32:
        return strata_crc32(0, d, n);
    case STRATA_CKSUM_CRC32C:
        return strata_crc32c(0, d, n);
    default:
        return strata_crc64nvme(0, d, n);
    }
}

static void test_crc_combine(void **state)
{
    (void)state;
    uint8_t d[70000];
    mt_fill(d, sizeof(d), 42);
    int algos[] = {STRATA_CKSUM_CRC32, STRATA_CKSUM_CRC32C, STRATA_CKSUM_CRC64NVME};
    size_t cuts[] = {0, 1, 7, 8, 4096, 33333, 69999, 70000};
    for (int a = 0; a < 3; a++) {
        uint64_t whole = crc_of(algos[a], d, sizeof(d));
        for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
            size_t k = cuts[c];
            uint64_t ca = crc_of(algos[a], d, k), cb2 = crc_of(algos[a], d + k, sizeof(d) - k);
            assert_true(strata_meta__crc_combine(algos[a], ca, cb2, sizeof(d) - k) == whole);
        }
        /* Three pieces, folded left. */
        uint64_t c1 = crc_of(algos[a], d, 100), c2 = crc_of(algos[a], d + 100, 5000),
                 c3 = crc_of(algos[a], d + 5100, sizeof(d) - 5100);
        uint64_t f = strata_meta__crc_combine(algos[a], c1, c2, 5000);
        f = strata_meta__crc_combine(algos[a], f, c3, sizeof(d) - 5100);
        assert_true(f == whole);
    }
    /* The published check value of CRC-64/NVME, so the polynomial is right. */
    assert_true(strata_crc64nvme(0, "123456789", 9) == 0xae8b14860a799888ull);
}

static void raw_ck(int algo, const uint8_t *d, size_t n, uint8_t *out, size_t *len)
{
    if (algo == STRATA_CKSUM_SHA256 || algo == STRATA_CKSUM_SHA1) {
        unsigned l;
        EVP_Digest(d, n, out, &l, algo == STRATA_CKSUM_SHA1 ? EVP_sha1() : EVP_sha256(), NULL);
        *len = l;
        return;
    }
    uint64_t c = crc_of(algo, d, n);
    *len = algo == STRATA_CKSUM_CRC64NVME ? 8 : 4;
    for (size_t i = 0; i < *len; i++)
        out[i] = (uint8_t)(c >> (8 * (*len - 1 - i)));
}

static void test_checksums(void **state)
{
    (void)state;
    struct mt_env *e = setup("mpck", 0);
    size_t sizes[] = {PMIN + 17, PMIN, 999};
    size_t total = sizes[0] + sizes[1] + sizes[2];
    uint8_t *d = malloc(total);
    mt_fill(d, total, 77);
    struct {
        int algo, type, want_type;
    } cases[] = {
        {STRATA_CKSUM_CRC32, 0, STRATA_CKSUM_TYPE_COMPOSITE},
        {STRATA_CKSUM_CRC32C, STRATA_CKSUM_TYPE_COMPOSITE, STRATA_CKSUM_TYPE_COMPOSITE},
        {STRATA_CKSUM_SHA256, 0, STRATA_CKSUM_TYPE_COMPOSITE},
        {STRATA_CKSUM_SHA1, STRATA_CKSUM_TYPE_COMPOSITE, STRATA_CKSUM_TYPE_COMPOSITE},
        {STRATA_CKSUM_CRC32, STRATA_CKSUM_TYPE_FULL_OBJECT, STRATA_CKSUM_TYPE_FULL_OBJECT},
        {STRATA_CKSUM_CRC32C, STRATA_CKSUM_TYPE_FULL_OBJECT, STRATA_CKSUM_TYPE_FULL_OBJECT},
        {STRATA_CKSUM_CRC64NVME, 0, STRATA_CKSUM_TYPE_FULL_OBJECT},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char key[16], uid[40], et[3][33];
        snprintf(key, sizeof(key), "ck%zu", c);
        assert_int_equal(create(e, key, cases[c].algo, cases[c].type, uid), 0);
        uint8_t pck[3][32], cat[96];
        size_t pl = 0, off = 0;
        struct strata_mpu_part parts[3];
        for (int i = 0; i < 3; i++) {
            struct strata_obj_info pi;
            assert_int_equal(upload(e, key, uid, (unsigned)i + 1, d + off, sizes[i], et[i], &pi),
                             0);
            raw_ck(cases[c].algo, d + off, sizes[i], pck[i], &pl);
            /* The part's own checksum, as computed by the part upload. */
            assert_int_equal(pi.cksum_algo, cases[c].algo);
            assert_int_equal(pi.cksum_len, pl);
            assert_memory_equal(pi.cksum, pck[i], pl);
            strata_obj_info_fini(&pi);
            memcpy(cat + i * pl, pck[i], pl);
            parts[i] = (struct strata_mpu_part){(unsigned)i + 1, et[i], pck[i], pl};
            off += sizes[i];
        }
        struct strata_mpu_complete_opts co = {"b",   key,   uid, parts, 3,   NULL,
                                              false, false, 0,   NULL,  NULL};
        struct strata_obj_info out;
        assert_int_equal(strata_mpu_complete(e->m, &co, &out), 0);
        uint8_t want[32];
        size_t wl;
        if (cases[c].want_type == STRATA_CKSUM_TYPE_COMPOSITE)
            raw_ck(cases[c].algo, cat, 3 * pl, want, &wl);
        else
            raw_ck(cases[c].algo, d, total, want, &wl);
        assert_int_equal(out.cksum_algo, cases[c].algo);
        assert_int_equal(out.cksum_type, cases[c].want_type);
        assert_int_equal(out.cksum_len, wl);
        assert_memory_equal(out.cksum, want, wl);
        strata_obj_info_fini(&out);
        /* Stored: head says the same, and the parts keep their checksums. */
        struct strata_obj_info info;
        struct strata_get *g;
        assert_int_equal(strata_obj_get_open(e->m, "b", key, NULL, &info, &g), 0);
        assert_int_equal(info.cksum_type, cases[c].want_type);
        assert_memory_equal(info.cksum, want, wl);
        for (unsigned i = 1; i <= 3; i++) {
            struct strata_part_info pi;
            assert_int_equal(strata_obj_get_part(g, i, &pi), 0);
            assert_int_equal(pi.cksum_len, pl);
            assert_memory_equal(pi.cksum, pck[i - 1], pl);
        }
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
    }
    /* Refused combinations. */
    char uid[40];
    assert_int_equal(create(e, "z", STRATA_CKSUM_CRC64NVME, STRATA_CKSUM_TYPE_COMPOSITE, uid),
                     STRATA_EINVAL);
    assert_int_equal(create(e, "z", STRATA_CKSUM_SHA256, STRATA_CKSUM_TYPE_FULL_OBJECT, uid),
                     STRATA_EINVAL);
    assert_int_equal(create(e, "z", 0, STRATA_CKSUM_TYPE_FULL_OBJECT, uid), STRATA_EINVAL);
    /* A part with another algorithm than the upload's. */
    assert_int_equal(create(e, "z", STRATA_CKSUM_CRC32, 0, uid), 0);
    struct strata_part_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = "b";
    po.key = "z";
    po.upload_id = uid;
    po.part_number = 1;
    po.size = 10;
    po.cksum_algo = STRATA_CKSUM_SHA256;
    struct strata_put *p;
    assert_int_equal(strata_mpu_part_begin(e->m, &po, &p), STRATA_EINVAL);
    /* A wrong expected part checksum stores nothing. */
    po.cksum_algo = STRATA_CKSUM_CRC32;
    uint8_t wrong[4] = {0, 0, 0, 1};
    po.cksum = wrong;
    po.cksum_len = 4;
    assert_int_equal(strata_mpu_part_begin(e->m, &po, &p), 0);
    assert_int_equal(strata_obj_put_write(p, d, 10), 0);
    assert_int_equal(strata_obj_put_commit(p, NULL), STRATA_ECHECKSUM);
    struct strata_mpu_parts_result pr;
    struct lp_acc acc = {0, 0, NULL};
    assert_int_equal(strata_mpu_list_parts(e->m, "b", "z", uid, 0, 0, lp_cb, &acc, &pr), 0);
    assert_int_equal(acc.n, 0);
    assert_int_equal(strata_mpu_abort(e->m, "b", "z", uid), 0);
    free(d);
    mt_teardown(e);
}

/* ---- ListMultipartUploads ----------------------------------------------- */

struct ul_acc {
    char items[32][80];
    unsigned n;
};

static int ul_cb(const struct strata_mpu_list_entry *en, void *ud)
{
    struct ul_acc *a = ud;
    if (en->is_prefix)
        snprintf(a->items[a->n++], 80, "P:%s", en->key);
    else
        snprintf(a->items[a->n++], 80, "%s@%s", en->key, en->info->upload_id);
    return 0;
}

static void test_list_uploads(void **state)
{
    (void)state;
    struct mt_env *e = setup("mplist", 0);
    const char *keys[] = {"c", "a/1", "b", "a/2", "c", "d/x/y"};
    char uids[6][40];
    for (int i = 0; i < 6; i++) {
        assert_int_equal(create(e, keys[i], 0, 0, uids[i]), 0);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL); /* distinct initiation times */
    }
    /* Key order, then initiation order for the two uploads of "c". */
    char want[6][80];
    snprintf(want[0], 80, "a/1@%s", uids[1]);
    snprintf(want[1], 80, "a/2@%s", uids[3]);
    snprintf(want[2], 80, "b@%s", uids[2]);
    snprintf(want[3], 80, "c@%s", uids[0]);
    snprintf(want[4], 80, "c@%s", uids[4]);
    snprintf(want[5], 80, "d/x/y@%s", uids[5]);
    struct strata_mpu_list_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.bucket = "b";
    struct ul_acc a = {0};
    struct strata_mpu_list_result res;
    assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), 0);
    assert_int_equal(a.n, 6);
    assert_false(res.truncated);
    for (int i = 0; i < 6; i++)
        assert_string_equal(a.items[i], want[i]);
    /* Pages of 2 with key and upload id markers. */
    unsigned got = 0;
    char km[STRATA_KEY_MAX + 1] = "", um[40] = "";
    do {
        memset(&a, 0, sizeof(a));
        lo.max_uploads = 2;
        lo.key_marker = km[0] ? km : NULL;
        lo.upload_id_marker = um[0] ? um : NULL;
        assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), 0);
        for (unsigned i = 0; i < a.n; i++)
            assert_string_equal(a.items[i], want[got + i]);
        got += a.n;
        snprintf(km, sizeof(km), "%s", res.next_key_marker);
        snprintf(um, sizeof(um), "%s", res.next_upload_id_marker);
    } while (res.truncated);
    assert_int_equal(got, 6);
    /* Delimiter: prefixes roll up. */
    memset(&lo, 0, sizeof(lo));
    lo.bucket = "b";
    lo.delimiter = "/";
    memset(&a, 0, sizeof(a));
    assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), 0);
    assert_int_equal(a.n, 5);
    assert_string_equal(a.items[0], "P:a/");
    assert_string_equal(a.items[1], want[2]);
    assert_string_equal(a.items[4], "P:d/");
    /* Prefix with delimiter, and a prefix marker resuming past it. */
    lo.prefix = "d/";
    memset(&a, 0, sizeof(a));
    assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), 0);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.items[0], "P:d/x/");
    lo.prefix = NULL;
    lo.key_marker = "a/";
    memset(&a, 0, sizeof(a));
    assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), 0);
    assert_int_equal(a.n, 4);
    assert_string_equal(a.items[0], want[2]);
    /* Abort removes from the listing; other buckets are separate. */
    assert_int_equal(strata_mpu_abort(e->m, "b", "b", uids[2]), 0);
    assert_int_equal(mt_bucket(e, "other", 0), 0);
    memset(&lo, 0, sizeof(lo));
    lo.bucket = "b";
    memset(&a, 0, sizeof(a));
    assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), 0);
    assert_int_equal(a.n, 5);
    lo.bucket = "other";
    memset(&a, 0, sizeof(a));
    assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), 0);
    assert_int_equal(a.n, 0);
    lo.bucket = "nosuch";
    assert_int_equal(strata_mpu_list(e->m, &lo, ul_cb, &a, &res), STRATA_ENOTFOUND);
    mt_teardown(e);
}

/* ---- 1,000 parts -------------------------------------------------------- */

struct kjob {
    struct mt_env *e;
    const char *uid;
    const uint8_t *d;
    size_t psize;
    unsigned first, step, n;
    char (*etags)[33];
    int rc;
};

static void *kworker(void *arg)
{
    struct kjob *j = arg;
    for (unsigned no = j->first; no <= j->n && j->rc == 0; no += j->step)
        j->rc = upload(j->e, "thousand", j->uid, no, j->d + (size_t)(no - 1) * j->psize, j->psize,
                       j->etags[no - 1], NULL);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The bound on a 1,000-part complete: it catches a per-part round trip or
 * a quadratic step (several seconds), not a slow machine.  ASan makes each
 * part record's decode 5-10x dearer, and CI runs two tests at once. */
#if defined(__SANITIZE_ADDRESS__)
#define COMPLETE_1000_MAX_S 3.0
#else
#define COMPLETE_1000_MAX_S 1.0
#endif

static void test_thousand_parts(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("mp1000");
    assert_non_null(e);
    strata_meta_close(e->m);
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.part_size_min = 1; /* tiny parts: this measures metadata, not data */
    struct strata_errinfo ei;
    assert_int_equal(strata_meta_open(&e->set, 1, &o, &e->m, &ei), 0);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    enum { N = 1000, NT = 8 };
    size_t psize = 1000;
    uint8_t *d = malloc(N * psize);
    mt_fill(d, N * psize, 1000);
    char uid[40];
    static char etags[N][33];
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "thousand";
    mo.cksum_algo = STRATA_CKSUM_CRC64NVME;
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
    double t0 = now_s();
    pthread_t th[NT];
    struct kjob jobs[NT];
    for (unsigned t = 0; t < NT; t++) {
        jobs[t] = (struct kjob){e, uid, d, psize, t + 1, NT, N, etags, 0};
        pthread_create(&th[t], NULL, kworker, &jobs[t]);
    }
    for (unsigned t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].rc, 0);
    }
    double t1 = now_s();
    struct strata_mpu_part *parts = calloc(N, sizeof(*parts));
    for (unsigned i = 0; i < N; i++)
        parts[i] = (struct strata_mpu_part){i + 1, etags[i], NULL, 0};
    struct strata_mpu_complete_opts co = {"b",   "thousand", uid, parts, N,   NULL,
                                          false, false,      0,   NULL,  NULL};
    struct strata_obj_info out;
    double t2 = now_s();
    assert_int_equal(strata_mpu_complete(e->m, &co, &out), 0);
    double t3 = now_s();
    fprintf(stderr, "# 1000 parts: upload %.2f s (8 threads), complete %.1f ms\n", t1 - t0,
            (t3 - t2) * 1e3);
    assert_true(t3 - t2 < COMPLETE_1000_MAX_S);
    assert_int_equal(out.nparts, N);
    uint8_t want[8];
    size_t wl;
    raw_ck(STRATA_CKSUM_CRC64NVME, d, N * psize, want, &wl);
    assert_memory_equal(out.cksum, want, 8);
    strata_obj_info_fini(&out);
    /* HEAD and a small ranged GET do not load the part table whole. */
    double t4 = now_s();
    struct strata_obj_info info;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(strata_obj_head(e->m, "b", "thousand", NULL, &info), 0);
        strata_obj_info_fini(&info);
    }
    double t5 = now_s();
    struct strata_get *g;
    uint8_t buf[5000];
    for (int i = 0; i < 100; i++) {
        assert_int_equal(strata_obj_get_open(e->m, "b", "thousand", NULL, &info, &g), 0);
        size_t off = (size_t)(i * 9973) % (N * psize - 5000);
        assert_int_equal(strata_obj_get_read(g, off, buf, 5000), 0);
        assert_memory_equal(buf, d + off, 5000);
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
    }
    double t6 = now_s();
    fprintf(stderr, "# 1000-part object: HEAD %.0f us, open+5000 B ranged GET %.0f us\n",
            (t5 - t4) * 1e4, (t6 - t5) * 1e4);
    read_all_check(e, "thousand", d, N * psize);
    /* Part 1000 lookup is in the last part table chunk. */
    assert_int_equal(strata_obj_get_open(e->m, "b", "thousand", NULL, &info, &g), 0);
    struct strata_part_info pi;
    assert_int_equal(strata_obj_get_part(g, N, &pi), 0);
    assert_int_equal(pi.offset, (N - 1) * psize);
    assert_string_equal(pi.etag, etags[N - 1]);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_delete(e->m, "b", "thousand", NULL, NULL), 0);
    assert_int_equal(mt_data_files(e), 0);
    free(parts);
    free(d);
    mt_teardown(e);
}

/* ---- heal --------------------------------------------------------------- */

static void test_heal(void **state)
{
    (void)state;
    struct mt_env *e = setup("mpheal", 0);
    size_t sizes[] = {PMIN, PMIN + 5};
    uint8_t *d = malloc(2 * PMIN + 5);
    mt_fill(d, 2 * PMIN + 5, 8);
    char uid[40], uid2[40], et[2][33];
    assert_int_equal(create(e, "done", 0, 0, uid), 0);
    assert_int_equal(upload(e, "done", uid, 1, d, sizes[0], et[0], NULL), 0);
    assert_int_equal(upload(e, "done", uid, 2, d + PMIN, sizes[1], et[1], NULL), 0);
    struct strata_mpu_part parts[2] = {{1, et[0], NULL, 0}, {2, et[1], NULL, 0}};
    struct strata_mpu_complete_opts co = {"b",   "done", uid, parts, 2,   NULL,
                                          false, false,  0,   NULL,  NULL};
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), 0);
    assert_int_equal(create(e, "open", 0, 0, uid2), 0);
    assert_int_equal(upload(e, "open", uid2, 1, d, PMIN, et[0], NULL), 0);
    int files = mt_data_files(e);
    mt_close(e);
    mt_rm_rf(e->drive[0]);
    mkdir(e->drive[0], 0755);
    assert_int_equal(mt_open(e), 0);
    reopen_small_parts(e);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    /* bucket, version, 1 'T' chunk, upload, part: all back on drive 0 */
    assert_true(st.records_healed >= 5);
    assert_true(st.shards_healed >= 3);
    assert_int_equal(mt_data_files(e), files);
    mt_close(e);
    /* Lose two other drives: drive 0 now carries its share of everything. */
    mt_rm_rf(e->drive[1]);
    mt_rm_rf(e->drive[2]);
    assert_int_equal(mt_open(e), 0);
    reopen_small_parts(e);
    read_all_check(e, "done", d, 2 * PMIN + 5);
    struct strata_mpu_info mi;
    assert_int_equal(strata_mpu_get(e->m, "b", "open", uid2, &mi), 0);
    /* (The lost drives came back empty and fresh: the upload goes on.) */
    assert_int_equal(upload(e, "open", uid2, 2, d + PMIN, 7, et[1], NULL), 0);
    struct strata_mpu_complete_opts co2 = {"b",   "open", uid2, parts, 2,   NULL,
                                           false, false,  0,    NULL,  NULL};
    assert_int_equal(strata_mpu_complete(e->m, &co2, NULL), 0);
    read_all_check(e, "open", d, PMIN + 7);
    free(d);
    mt_teardown(e);
}

/* Save drive i's directory as DRIVE.pre, or (back) put that copy in its
 * place; the meta handle is closed. */
static void drive_copy(struct mt_env *e, int i, bool back)
{
    const char *d = e->drive[i];
    char cmd[2048];
    if (back)
        snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mv '%s.pre' '%s'", d, d, d);
    else
        snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s.pre'", d, d);
    assert_int_equal(system(cmd), 0);
}

/*
 * A complete killed after its batch reached one drive of four leaves the
 * version and the completed-upload record there only (built here by
 * putting back three drives' copies from before the complete); heal then
 * spreads the record.  A retry of that complete must not be answered with
 * the version, which the read quorum does not show: STRATA_EQUORUM, never
 * a success for a version that is not there.
 */
static void test_retry_of_minority_complete(void **state)
{
    (void)state;
    struct mt_env *e = setup("mpminority", STRATA_VERSIONING_ENABLED);
    uint8_t d[PMIN];
    mt_fill(d, PMIN, 21);
    char uid[40], et[33];
    assert_int_equal(create(e, "k", 0, 0, uid), 0);
    assert_int_equal(upload(e, "k", uid, 1, d, PMIN, et, NULL), 0);
    mt_close(e);
    for (int i = 1; i < MT_DRIVES; i++)
        drive_copy(e, i, false);
    assert_int_equal(mt_open(e), 0);
    struct strata_mpu_part part = {1, et, NULL, 0};
    struct strata_mpu_complete_opts co = {"b", "k", uid, &part, 1, NULL, false, false, 0, NULL, NULL};
    struct strata_obj_info out;
    assert_int_equal(strata_mpu_complete(e->m, &co, &out), 0);
    char vid[STRATA_VERSION_ID_MAX + 1];
    snprintf(vid, sizeof(vid), "%s", out.version_id);
    strata_obj_info_fini(&out);
    mt_close(e);
    for (int i = 1; i < MT_DRIVES; i++)
        drive_copy(e, i, true);
    assert_int_equal(mt_open(e), 0);
    /* Heal copies the completed-upload record to every drive (a dead
     * state wins) and leaves the one-drive multipart version alone. */
    struct strata_heal_stats st;
    memset(&st, 0, sizeof(st));
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", vid, &h), STRATA_ENOTFOUND);
    assert_int_equal(strata_mpu_complete(e->m, &co, &out), STRATA_EQUORUM);
    assert_string_equal(out.version_id, "");
    assert_int_equal(strata_obj_head(e->m, "b", "k", vid, &h), STRATA_ENOTFOUND);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_combine),
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_complete_replaces_null),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_abort_reclaims),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_checksums),
        cmocka_unit_test(test_list_uploads),
        cmocka_unit_test(test_thousand_parts),
        cmocka_unit_test(test_heal),
        cmocka_unit_test(test_retry_of_minority_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
