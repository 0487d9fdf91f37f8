/*
 * test_sigv4_key_cache.c - the per-thread cache of derived SigV4 signing
 * keys (sigv4_crypto.c): a repeated (access key, secret, date, region) is
 * a hit and gives the same key as a fresh derivation; another date or
 * region is another key; the cache is bounded (least recently used goes);
 * a deleted access key is refused and a rotated secret invalidates what was
 * signed with the old one, through strata_auth_verify as the server runs it.
 * Reference keys come from OpenSSL's one-shot HMAC, not from Strata.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth.h"
#include "s3_error.h"
#include "sigv4_internal.h"

#define NOW ((time_t)1700000000) /* 2023-11-14T22:13:20Z */

static void ref_key(const char *secret, const char *date8, const char *region, uint8_t out[32])
{
    char k0[256];
    unsigned n = 32;
    uint8_t a[32], b[32];
    snprintf(k0, sizeof(k0), "AWS4%s", secret);
    HMAC(EVP_sha256(), k0, (int)strlen(k0), (const uint8_t *)date8, 8, a, &n);
    HMAC(EVP_sha256(), a, 32, (const uint8_t *)region, strlen(region), b, &n);
    HMAC(EVP_sha256(), b, 32, (const uint8_t *)"s3", 2, a, &n);
    HMAC(EVP_sha256(), a, 32, (const uint8_t *)"aws4_request", 12, out, &n);
}

static struct strata_cred mkcred(const char *ak, const char *sk)
{
    struct strata_cred c;
    memset(&c, 0, sizeof(c));
    snprintf(c.access_key, sizeof(c.access_key), "%s", ak);
    snprintf(c.secret, sizeof(c.secret), "%s", sk);
    return c;
}

/* Signing key through the cache; checks it against the reference and
 * returns whether it was a hit. */
static bool key_of(const struct strata_cred *c, const char *date8, const char *region)
{
    struct strata_sigv4_key_stats s0 = strata_sigv4__key_cache_stats();
    uint8_t got[32], want[32];
    assert_int_equal(strata_sigv4__signing_key(c, date8, region, strlen(region), got), 0);
    ref_key(c->secret, date8, region, want);
    assert_memory_equal(got, want, 32);
    struct strata_sigv4_key_stats s1 = strata_sigv4__key_cache_stats();
    assert_int_equal((s1.hits - s0.hits) + (s1.misses - s0.misses), 1);
    return s1.hits == s0.hits + 1;
}

static void test_hit_and_distinct_keys(void **state)
{
    (void)state;
    struct strata_cred a = mkcred("KCUSERA", "secretA"), b = mkcred("KCUSERB", "secretB");
    assert_false(key_of(&a, "20231114", "us-east-1"));
    assert_true(key_of(&a, "20231114", "us-east-1"));
    /* another date, region or user: another key, derived once, then hits */
    assert_false(key_of(&a, "20231115", "us-east-1"));
    assert_false(key_of(&a, "20231114", "eu-west-3"));
    assert_false(key_of(&b, "20231114", "us-east-1"));
    assert_true(key_of(&a, "20231115", "us-east-1"));
    assert_true(key_of(&a, "20231114", "eu-west-3"));
    assert_true(key_of(&b, "20231114", "us-east-1"));
    assert_true(key_of(&a, "20231114", "us-east-1"));
    /* a region that is a prefix of a cached one is not that one */
    assert_false(key_of(&a, "20231114", "eu-west"));
    uint8_t k1[32], k2[32];
    assert_int_equal(strata_sigv4__signing_key(&a, "20231114", "us-east-1", 9, k1), 0);
    assert_int_equal(strata_sigv4__signing_key(&a, "20231114", "eu-west-3", 9, k2), 0);
    assert_memory_not_equal(k1, k2, 32);
}

static void test_bounded_lru(void **state)
{
    (void)state;
    struct strata_cred c = mkcred("KCLRU", "lru-secret");
    char date[9];
    /* Far more dates than the cache holds: each is derived once... */
    for (int d = 1; d <= 28; d++) {
        snprintf(date, sizeof(date), "202402%02d", d);
        assert_false(key_of(&c, date, "us-east-1"));
    }
    /* ...the most recent ones are still there, the oldest were replaced. */
    assert_true(key_of(&c, "20240228", "us-east-1"));
    assert_true(key_of(&c, "20240221", "us-east-1"));
    assert_false(key_of(&c, "20240201", "us-east-1"));
}

static struct strata_creds *table(const char *users)
{
    const char *dir = getenv("STRATA_TEST_TMPDIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/kc-users-%d", dir && *dir ? dir : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(users, f);
    fclose(f);
    struct strata_creds *c = NULL;
    assert_int_equal(strata_creds_load("KCROOT", "rootsecret", path, &c, NULL, 0), 0);
    unlink(path);
    return c;
}

/* A presigned GET signed with ak/sk, verified against creds. */
static enum s3_err presigned_get(const struct strata_creds *creds, const char *ak, const char *sk)
{
    struct strata_cred c = mkcred(ak, sk);
    char url[1024];
    assert_int_equal(
        strata_presign_v4(&c, "GET", "h:1", "/b/k", "us-east-1", NOW, 600, url, sizeof(url)), 0);
    char *q = strchr(url, '?');
    *q++ = '\0';
    struct strata_auth_hdr h[] = {{"Host", "h:1"}};
    struct strata_auth_req r = {"GET", url, q, h, 1, NOW, NULL, 0, "us-east-1"};
    struct strata_auth_result res;
    return strata_s3_err_from_auth(strata_auth_verify(creds, &r, &res));
}

static void test_deleted_key(void **state)
{
    (void)state;
    struct strata_creds *t1 = table("KCDEL delsecret\nKCKEEP keepsecret\n");
    assert_int_equal(presigned_get(t1, "KCDEL", "delsecret"), S3E_NONE);
    assert_int_equal(presigned_get(t1, "KCDEL", "delsecret"), S3E_NONE);
    strata_creds_destroy(t1);
    /* The users file loses KCDEL: its cached key must not let it in. */
    struct strata_creds *t2 = table("KCKEEP keepsecret\n");
    assert_int_equal(presigned_get(t2, "KCDEL", "delsecret"), S3E_InvalidAccessKeyId);
    assert_int_equal(presigned_get(t2, "KCKEEP", "keepsecret"), S3E_NONE);
    strata_creds_destroy(t2);
}

static void test_rotated_secret(void **state)
{
    (void)state;
    struct strata_creds *t1 = table("KCROT old-secret\n");
    assert_int_equal(presigned_get(t1, "KCROT", "old-secret"), S3E_NONE);
    assert_int_equal(presigned_get(t1, "KCROT", "old-secret"), S3E_NONE);
    strata_creds_destroy(t1);
    struct strata_creds *t2 = table("KCROT new-secret\n");
    struct strata_sigv4_key_stats s0 = strata_sigv4__key_cache_stats();
    /* Same access key, date and region: the old key must not be reused. */
    assert_int_equal(presigned_get(t2, "KCROT", "old-secret"), S3E_SignatureDoesNotMatch);
    assert_int_equal(presigned_get(t2, "KCROT", "new-secret"), S3E_NONE);
    struct strata_sigv4_key_stats s1 = strata_sigv4__key_cache_stats();
    assert_true(s1.misses > s0.misses);
    strata_creds_destroy(t2);
    /* Rotated back: the old secret's requests verify again. */
    struct strata_creds *t3 = table("KCROT old-secret\n");
    assert_int_equal(presigned_get(t3, "KCROT", "new-secret"), S3E_SignatureDoesNotMatch);
    assert_int_equal(presigned_get(t3, "KCROT", "old-secret"), S3E_NONE);
    strata_creds_destroy(t3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_and_distinct_keys),
        cmocka_unit_test(test_bounded_lru),
        cmocka_unit_test(test_deleted_key),
        cmocka_unit_test(test_rotated_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
