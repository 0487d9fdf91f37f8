/*
 * sigv4_crypto.c - SHA-256, HMAC-SHA256/SHA1, hex and the SigV4 signing key,
 * on OpenSSL 3 EVP.
 *
 * Runs on every thread that authenticates requests (MHD workers, tests).
 * Fetching an algorithm and creating a context are the expensive parts of
 * EVP, so each thread creates its contexts once, reuses them for every
 * request, and frees them at thread exit (a pthread key destructor).
 *
 * Derived signing keys are cached per thread too (KEY_CACHE_WAYS entries,
 * least recently used replaced): deriving one costs four HMACs, and a
 * thread serves the same few users, dates and regions over and over.  An
 * entry is keyed by access key, secret, date and region (the service is
 * always "s3"), so a rotated secret misses and derives afresh; a deleted
 * key never reaches the cache (the credentials lookup refuses it first),
 * and its entry ages out.
 */
#include "sigv4_internal.h"

#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "strata/err.h"

#define KEY_CACHE_WAYS 8

struct key_entry {
    uint64_t used; /* 0: empty; else the tick of the last use (LRU) */
    size_t secret_len;
    char akid[sizeof(((struct strata_cred *)0)->access_key)];
    char secret[sizeof(((struct strata_cred *)0)->secret)];
    char date[9];
    char region[64];
    uint8_t key[32];
};

struct tls_crypto {
    EVP_MD_CTX *md;
    EVP_MAC_CTX *hmac256;
    EVP_MAC_CTX *hmac1;
    EVP_MAC_CTX *hmac_keyed; /* keyed with keyed_key: re-init without rekeying */
    bool keyed_valid;
    uint8_t keyed_key[32];
    uint64_t tick;
    struct strata_sigv4_key_stats stats;
    struct key_entry keys[KEY_CACHE_WAYS];
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static EVP_MD *g_sha256;
static EVP_MAC *g_hmac;
static _Thread_local struct tls_crypto *t_crypto;

static void tls_free_cb(void *p)
{
    struct tls_crypto *t = p;
    if (!t)
        return;
    EVP_MD_CTX_free(t->md);
    EVP_MAC_CTX_free(t->hmac256);
    EVP_MAC_CTX_free(t->hmac1);
    EVP_MAC_CTX_free(t->hmac_keyed);
    OPENSSL_cleanse(t, sizeof(*t));
    free(t);
    t_crypto = NULL;
}

static void global_init(void)
{
    /* Explicit fetches: implicit ones (EVP_sha256()) look the algorithm up
     * again on every init. */
    g_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    g_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    (void)pthread_key_create(&g_key, tls_free_cb);
}

static EVP_MAC_CTX *mac_ctx_new(const char *digest)
{
    EVP_MAC_CTX *m = EVP_MAC_CTX_new(g_hmac);
    if (!m)
        return NULL;
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_construct_end(),
    };
    if (!EVP_MAC_CTX_set_params(m, params)) {
        EVP_MAC_CTX_free(m);
        return NULL;
    }
    return m;
}

static struct tls_crypto *tls_get(void)
{
    if (t_crypto)
        return t_crypto;
    pthread_once(&g_once, global_init);
    if (!g_sha256 || !g_hmac)
        return NULL;
    struct tls_crypto *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->md = EVP_MD_CTX_new();
    t->hmac256 = mac_ctx_new("SHA256");
    t->hmac1 = mac_ctx_new("SHA1");
    t->hmac_keyed = mac_ctx_new("SHA256");
    if (!t->md || !t->hmac256 || !t->hmac1 || !t->hmac_keyed || pthread_setspecific(g_key, t) != 0) {
        tls_free_cb(t);
        return NULL;
    }
    t_crypto = t;
    return t;
}

int strata_sigv4__sha_begin(void)
{
    struct tls_crypto *t = tls_get();
    if (!t || !EVP_DigestInit_ex(t->md, g_sha256, NULL))
        return STRATA_EINTERNAL;
    return 0;
}

int strata_sigv4__sha_update(const void *p, size_t n)
{
    struct tls_crypto *t = tls_get();
    if (!t || !EVP_DigestUpdate(t->md, p, n))
        return STRATA_EINTERNAL;
    return 0;
}

int strata_sigv4__sha_end(uint8_t out[32])
{
    struct tls_crypto *t = tls_get();
    unsigned int len = 0;
    if (!t || !EVP_DigestFinal_ex(t->md, out, &len) || len != 32)
        return STRATA_EINTERNAL;
    return 0;
}

int strata_sigv4__sha256(const void *p, size_t n, uint8_t out[32])
{
    int rc = strata_sigv4__sha_begin();
    if (rc == 0)
        rc = strata_sigv4__sha_update(p, n);
    if (rc == 0)
        rc = strata_sigv4__sha_end(out);
    return rc;
}

/* The MAC of msg into out (exactly out_len bytes) with m, already keyed. */
static int hmac_finish(EVP_MAC_CTX *m, const void *msg, size_t msg_len, uint8_t *out,
                       size_t out_len)
{
    size_t got = 0;
    if (!EVP_MAC_update(m, msg, msg_len) || !EVP_MAC_final(m, out, &got, out_len) ||
        got != out_len)
        return STRATA_EINTERNAL;
    return 0;
}

/* HMAC-SHA1 (sha1) or HMAC-SHA256 of msg with the thread's context. */
static int hmac_run(bool sha1, const void *key, size_t key_len, const void *msg, size_t msg_len,
                    uint8_t *out)
{
    struct tls_crypto *t = tls_get();
    EVP_MAC_CTX *m = !t ? NULL : sha1 ? t->hmac1 : t->hmac256;
    if (!m || !EVP_MAC_init(m, key, key_len, NULL))
        return STRATA_EINTERNAL;
    return hmac_finish(m, msg, msg_len, out, sha1 ? 20 : 32);
}

int strata_sigv4__hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                              uint8_t out[32])
{
    return hmac_run(false, key, key_len, msg, msg_len, out);
}

int strata_sigv4__hmac_signing(const uint8_t key[32], const void *msg, size_t msg_len,
                               uint8_t out[32])
{
    struct tls_crypto *t = tls_get();
    if (!t)
        return STRATA_EINTERNAL;
    /* Re-initialising an HMAC with its previous key skips the key schedule
     * (and most of OpenSSL's allocations); requests and chunks of one
     * client share the signing key, so this is the common case. */
    bool same = t->keyed_valid && CRYPTO_memcmp(t->keyed_key, key, 32) == 0;
    if (!EVP_MAC_init(t->hmac_keyed, same ? NULL : key, same ? 0 : 32, NULL)) {
        t->keyed_valid = false;
        return STRATA_EINTERNAL;
    }
    if (!same) {
        memcpy(t->keyed_key, key, 32);
        t->keyed_valid = true;
    }
    return hmac_finish(t->hmac_keyed, msg, msg_len, out, 32);
}

int strata_sigv4__hmac_sha1(const void *key, size_t key_len, const void *msg, size_t msg_len,
                            uint8_t out[20])
{
    return hmac_run(true, key, key_len, msg, msg_len, out);
}

static bool entry_is(const struct key_entry *e, const struct strata_cred *cred, size_t slen,
                     const char *date8, const char *region, size_t region_len)
{
    return e->used && memcmp(e->date, date8, 9) == 0 &&
           strncmp(e->region, region, region_len) == 0 && e->region[region_len] == '\0' &&
           strcmp(e->akid, cred->access_key) == 0 && e->secret_len == slen &&
           CRYPTO_memcmp(e->secret, cred->secret, slen) == 0;
}

static int derive_key(const char *secret, size_t slen, const char *date8, const char *region,
                      size_t region_len, uint8_t out[32])
{
    char k0[4 + sizeof(((struct strata_cred *)0)->secret)];
    uint8_t a[32], b[32];
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, secret, slen);
    int rc = strata_sigv4__hmac_sha256(k0, 4 + slen, date8, 8, a);
    if (rc == 0)
        rc = strata_sigv4__hmac_sha256(a, 32, region, region_len, b);
    if (rc == 0)
        rc = strata_sigv4__hmac_sha256(b, 32, "s3", 2, a);
    if (rc == 0)
        rc = strata_sigv4__hmac_sha256(a, 32, "aws4_request", 12, out);
    OPENSSL_cleanse(k0, sizeof(k0));
    OPENSSL_cleanse(a, sizeof(a));
    OPENSSL_cleanse(b, sizeof(b));
    return rc;
}

int strata_sigv4__signing_key(const struct strata_cred *cred, const char *date8, const char *region,
                              size_t region_len, uint8_t out[32])
{
    struct tls_crypto *t = tls_get();
    size_t slen = strnlen(cred->secret, sizeof(cred->secret));
    if (!t || slen >= sizeof(cred->secret) || strlen(date8) != 8 ||
        strnlen(cred->access_key, sizeof(cred->access_key)) >= sizeof(cred->access_key))
        return STRATA_EINVAL;
    bool cacheable = region_len < sizeof(t->keys[0].region);
    struct key_entry *victim = &t->keys[0];
    for (unsigned i = 0; cacheable && i < KEY_CACHE_WAYS; i++) {
        struct key_entry *e = &t->keys[i];
        if (entry_is(e, cred, slen, date8, region, region_len)) {
            e->used = ++t->tick;
            t->stats.hits++;
            memcpy(out, e->key, 32);
            return 0;
        }
        if (e->used < victim->used)
            victim = e;
    }
    t->stats.misses++;
    int rc = derive_key(cred->secret, slen, date8, region, region_len, out);
    if (rc != 0 || !cacheable)
        return rc;
    OPENSSL_cleanse(victim, sizeof(*victim));
    strcpy(victim->akid, cred->access_key);
    memcpy(victim->secret, cred->secret, slen);
    victim->secret_len = slen;
    memcpy(victim->date, date8, 9);
    memcpy(victim->region, region, region_len);
    victim->region[region_len] = '\0';
    memcpy(victim->key, out, 32);
    victim->used = ++t->tick;
    return 0;
}

struct strata_sigv4_key_stats strata_sigv4__key_cache_stats(void)
{
    struct tls_crypto *t = tls_get();
    struct strata_sigv4_key_stats z = {0, 0};
    return t ? t->stats : z;
}

bool strata_sigv4__ct_eq(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
