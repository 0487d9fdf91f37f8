/*
 * sse.c - encryption at rest, server side: the local key store behind
 * --kms-key-file and the SSE headers of PutObject, CopyObject, GET and
 * HEAD (formats in sse.h).  The data itself is sealed by meta/.  The key
 * store is read-only after start; any connection thread.
 */
#include "sse.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "srv.h"
#include "secret.h"

#define KMS_KEYS_MAX 256
#define KMS_NAME_MAX 64
#define DESC_VERSION 1
#define WRAP_LEN 60 /* nonce 12 + key 32 + tag 16 */
#define KMS_CTX_MAX 512 /* bytes of a decoded encryption context */

struct kms_key {
    char name[KMS_NAME_MAX + 1];
    uint8_t key[32];
    bool disabled;
};

struct strata_kms {
    struct kms_key *keys;
    size_t n;
    size_t active;
};

void strata_kms_free(struct strata_kms *k)
{
    if (!k)
        return;
    strata_secret_free(k->keys, k->n * sizeof(*k->keys));
    free(k);
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KMS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:", s[i]))
            return false;
    return true;
}

static int load_fail(char *err, size_t errlen, json_t *root, struct strata_kms *k, const char *msg,
                     const char *what)
{
    snprintf(err, errlen, "%s%s%s", msg, what ? ": " : "", what ? what : "");
    json_decref(root);
    strata_kms_free(k);
    return -1;
}

int strata_kms_load(const char *path, struct strata_kms **out, char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return load_fail(err, errlen, NULL, NULL, strerror(errno), path);
    if (st.st_mode & 077)
        return load_fail(err, errlen, NULL, NULL,
                         "key file must not be readable by group or others (chmod 600)", path);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return load_fail(err, errlen, NULL, NULL, "key file is not valid JSON", je.text);
    struct strata_kms *k = calloc(1, sizeof(*k));
    json_t *keys = json_object_get(root, "keys");
    const char *active = json_string_value(json_object_get(root, "active"));
    if (!k)
        return load_fail(err, errlen, root, k, "out of memory", NULL);
    if (!json_is_object(keys) || json_object_size(keys) == 0 ||
        json_object_size(keys) > KMS_KEYS_MAX || !active)
        return load_fail(err, errlen, root, k,
                         "key file needs \"active\" and a non-empty \"keys\" object", NULL);
    k->keys = calloc(json_object_size(keys), sizeof(*k->keys));
    if (!k->keys)
        return load_fail(err, errlen, root, k, "out of memory", NULL);
    const char *name;
    json_t *v;
    bool have_active = false;
    json_object_foreach(keys, name, v)
    {
        struct kms_key *kk = &k->keys[k->n];
        const char *b64 = json_string_value(json_object_get(v, "key"));
        json_t *dis = json_object_get(v, "disabled");
        uint8_t raw[48];
        if (!name_ok(name))
            return load_fail(err, errlen, root, k, "bad key name (1-64 of A-Za-z0-9-_./:)", name);
        if (!b64 || strata_b64_decode(b64, raw, sizeof(raw)) != 32)
            return load_fail(err, errlen, root, k, "key is not base64 of 32 bytes", name);
        if (dis && !json_is_boolean(dis))
            return load_fail(err, errlen, root, k, "\"disabled\" must be true or false", name);
        snprintf(kk->name, sizeof(kk->name), "%s", name);
        memcpy(kk->key, raw, 32);
        OPENSSL_cleanse(raw, sizeof(raw));
        kk->disabled = json_is_true(dis);
        if (strcmp(name, active) == 0) {
            k->active = k->n;
            have_active = true;
        }
        k->n++;
    }
    if (!have_active || k->keys[k->active].disabled)
        return load_fail(err, errlen, root, k, "the active key is missing or disabled", active);
    json_decref(root);
    *out = k;
    return 0;
}

static const struct kms_key *kms_find(const struct strata_kms *k, const char *name)
{
    if (!name)
        return &k->keys[k->active];
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->keys[i].name, name) == 0)
            return &k->keys[i];
    return NULL;
}

/* AES-256-GCM of 32 bytes: in -> out (32), tag (16). */
static int gcm32(bool enc, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
                 size_t aad_len, const uint8_t *in, uint8_t *out, uint8_t *tag)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0, ok = c != NULL;
    ok = ok && (enc ? EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, nonce)
                    : EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, nonce)) == 1;
    ok = ok && EVP_CipherUpdate(c, NULL, &n, aad, (int)aad_len) == 1;
    ok = ok && EVP_CipherUpdate(c, out, &n, in, 32) == 1;
    if (enc) {
        ok = ok && EVP_CipherFinal_ex(c, out + n, &n) == 1;
        ok = ok && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    } else {
        ok = ok && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1;
        ok = ok && EVP_CipherFinal_ex(c, out + n, &n) == 1;
    }
    EVP_CIPHER_CTX_free(c);
    if (!ok)
        OPENSSL_cleanse(out, 32);
    return ok ? 0 : (enc ? STRATA_EINTERNAL : STRATA_ECORRUPT);
}

int strata_kms_wrap(const struct strata_kms *k, const char *name, const uint8_t key[32],
                    const uint8_t *aad, size_t aad_len, uint8_t blob[WRAP_LEN], char name_out[65])
{
    const struct kms_key *mk = kms_find(k, name);
    if (!mk)
        return STRATA_ENOTFOUND;
    if (mk->disabled)
        return STRATA_EMETHOD;
    snprintf(name_out, KMS_NAME_MAX + 1, "%s", mk->name);
    if (RAND_bytes(blob, 12) != 1)
        return STRATA_EINTERNAL;
    return gcm32(true, mk->key, blob, aad, aad_len, key, blob + 12, blob + 44);
}

int strata_kms_state(const struct strata_kms *k, const char *name)
{
    const struct kms_key *mk = kms_find(k, name);
    return !mk ? STRATA_ENOTFOUND : mk->disabled ? STRATA_EMETHOD : 0;
}

int strata_kms_unwrap(const struct strata_kms *k, const char *name, const uint8_t blob[WRAP_LEN],
                      const uint8_t *aad, size_t aad_len, uint8_t key[32])
{
    const struct kms_key *mk = kms_find(k, name);
    if (!mk)
        return STRATA_ENOTFOUND;
    uint8_t tag[16];
    memcpy(tag, blob + 44, 16);
    return gcm32(false, mk->key, blob, aad, aad_len, blob + 12, key, tag);
}

/* ---- requests ----------------------------------------------------------- */

void strata_sse_new_fini(struct strata_sse_new *n)
{
    OPENSSL_cleanse(n->key, sizeof(n->key));
    n->mode = 0;
}

void strata_sse_new_apply(const struct strata_sse_new *n, struct strata_put_opts *o)
{
    if (!n->mode)
        return;
    o->sse_sealed = n->sealed;
    o->sse_key = n->sealed ? NULL : n->key;
    o->sse = n->desc;
    o->sse_len = n->desc_len;
    if (n->etag[0])
        o->etag_override = n->etag;
}

/* Object key + descriptor wrapped under master key name (NULL: the
 * active one) for SSE-S3 or SSE-KMS (ctx: the encryption context, bound
 * to the wrap).  Layout in sse.h; the wrap's AAD is everything before it. */
static int new_wrapped(struct strata_req *r, struct strata_sse_new *n, int mode, const char *name,
                       const uint8_t *ctx, size_t ctx_len)
{
    const struct strata_kms *k = r->srv->kms;
    if (!k)
        return S3E_NotImplemented; /* no key store configured: cannot honour it */
    int st = strata_kms_state(k, name);
    if (st)
        return st == STRATA_ENOTFOUND ? S3E_KMS_NotFoundException : S3E_KMS_DisabledException;
    if (!name)
        name = k->keys[k->active].name;
    size_t nl = strlen(name), p = 3 + nl;
    n->desc[0] = DESC_VERSION;
    n->desc[1] = (uint8_t)mode;
    n->desc[2] = (uint8_t)nl;
    memcpy(n->desc + 3, name, nl);
    if (mode == STRATA_SSE_MODE_KMS) {
        n->desc[p] = (uint8_t)(ctx_len >> 8);
        n->desc[p + 1] = (uint8_t)ctx_len;
        if (ctx_len)
            memcpy(n->desc + p + 2, ctx, ctx_len);
        p += 2 + ctx_len;
    }
    char used[KMS_NAME_MAX + 1];
    if (RAND_bytes(n->key, 32) != 1 ||
        strata_kms_wrap(k, name, n->key, n->desc, p, n->desc + p, used) != 0)
        return S3E_InternalError;
    n->desc_len = p + WRAP_LEN;
    n->mode = mode;
    if (mode == STRATA_SSE_MODE_KMS) {
        uint8_t et[16];
        if (RAND_bytes(et, 16) != 1)
            return S3E_InternalError;
        for (int i = 0; i < 16; i++) /* not the MD5 of the plaintext, as on AWS */
            snprintf(n->etag + 2 * i, 3, "%02x", et[i]);
    }
    return 0;
}

/* SSE-KMS: the key id (a key store name; default the active key) and the
 * optional encryption context (base64 of a JSON object of strings). */
static int new_kms(struct strata_req *r, struct strata_sse_new *n)
{
    const char *id = strata_req_hdr(r, "x-amz-server-side-encryption-aws-kms-key-id");
    const char *c64 = strata_req_hdr(r, "x-amz-server-side-encryption-context");
    uint8_t ctx[KMS_CTX_MAX + 1];
    int cl = 0;
    if (id && (!*id || strlen(id) > KMS_NAME_MAX))
        return S3E_KMS_NotFoundException;
    if (c64) {
        cl = strata_b64_decode(c64, ctx, KMS_CTX_MAX);
        json_error_t je;
        json_t *j = cl > 0 ? json_loadb((const char *)ctx, (size_t)cl, 0, &je) : NULL;
        bool ok = json_is_object(j);
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) ok = ok && json_is_string(v);
        json_decref(j);
        if (!ok)
            return S3E_InvalidArgument; /* AWS: the context must be a JSON object of strings */
    }
    return new_wrapped(r, n, STRATA_SSE_MODE_KMS, id, ctx, (size_t)cl);
}

/* ---- SSE-C ---------------------------------------------------------------- */

struct ssec {
    bool present;
    uint8_t key[32];
};

/* The customer key headers (prefix "x-amz-" or "x-amz-copy-source-"):
 * 0 with c->present false when none is sent, else 0 or an enum s3_err. */
static int ssec_parse(struct strata_req *r, const char *prefix, struct ssec *c)
{
    char h[3][96];
    static const char *const sfx[3] = {"server-side-encryption-customer-algorithm",
                                       "server-side-encryption-customer-key",
                                       "server-side-encryption-customer-key-MD5"};
    /* Spelled out for the common prefix: every GET and PUT asks. */
    static const char *const own[3] = {"x-amz-server-side-encryption-customer-algorithm",
                                       "x-amz-server-side-encryption-customer-key",
                                       "x-amz-server-side-encryption-customer-key-MD5"};
    bool is_own = strcmp(prefix, "x-amz-") == 0;
    const char *v[3];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        if (!is_own)
            snprintf(h[i], sizeof(h[i]), "%s%s", prefix, sfx[i]);
        n += (v[i] = strata_req_hdr(r, is_own ? own[i] : h[i])) != NULL;
    }
    memset(c, 0, sizeof(*c));
    if (n == 0)
        return 0;
    if (!r->srv->cfg.http.tls_cert && !r->srv->cfg.sse_c_allow_http)
        return S3E_InvalidRequest; /* AWS: SSE-C requires HTTPS */
    if (n != 3)
        return S3E_InvalidArgument;
    if (strcmp(v[0], "AES256") != 0)
        return S3E_InvalidEncryptionAlgorithmError;
    uint8_t md[16], given[20];
    unsigned ml = 0;
    if (strata_b64_decode(v[1], c->key, sizeof(c->key)) != 32 ||
        strata_b64_decode(v[2], given, sizeof(given)) != 16 ||
        EVP_Digest(c->key, 32, md, &ml, EVP_md5(), NULL) != 1 ||
        CRYPTO_memcmp(md, given, 16) != 0) {
        OPENSSL_cleanse(c->key, sizeof(c->key));
        return S3E_InvalidArgument; /* key not 256 bits or its MD5 differs */
    }
    c->present = true;
    return 0;
}

/* HMAC-SHA256(customer key, salt || label): the object key ("data") and
 * the stored check of the customer key ("check"). */
static int ssec_derive(const uint8_t ck[32], const uint8_t salt[32], const char *label,
                       uint8_t out[32])
{
    uint8_t msg[32 + 8];
    size_t ll = strlen(label);
    unsigned ol = 0;
    memcpy(msg, salt, 32);
    memcpy(msg + 32, label, ll);
    return HMAC(EVP_sha256(), ck, 32, msg, 32 + ll, out, &ol) && ol == 32 ? 0 : -1;
}

static int new_c(struct strata_sse_new *n, struct ssec *c)
{
    uint8_t *salt = n->desc + 3, *check = n->desc + 35, et[16];
    n->desc[0] = DESC_VERSION;
    n->desc[1] = STRATA_SSE_MODE_C;
    n->desc[2] = 0;
    int ok = RAND_bytes(salt, 32) == 1 && RAND_bytes(et, 16) == 1 &&
             ssec_derive(c->key, salt, "check", check) == 0 &&
             ssec_derive(c->key, salt, "data", n->key) == 0;
    OPENSSL_cleanse(c->key, sizeof(c->key));
    if (!ok)
        return S3E_InternalError;
    n->desc_len = 67;
    /* AWS's SSE-C ETag is not the MD5 of the plaintext (it would let
     * anyone confirm a guessed content): a random one. */
    for (int i = 0; i < 16; i++)
        snprintf(n->etag + 2 * i, 3, "%02x", et[i]);
    n->mode = STRATA_SSE_MODE_C;
    return 0;
}

int strata_sse_default_check(struct strata_req *r, const struct strata_sse_default *d)
{
    bool kms = strcmp(d->algo, "aws:kms") == 0;
    if (strcmp(d->algo, "aws:kms:dsse") == 0)
        return S3E_NotImplemented;
    if (!kms && (strcmp(d->algo, "AES256") != 0 || d->key_id[0]))
        return S3E_InvalidArgument;
    if (!r->srv->kms)
        return S3E_NotImplemented; /* nothing to encrypt new objects with */
    int st = strata_kms_state(r->srv->kms, d->key_id[0] ? d->key_id : NULL);
    return !st ? 0 : st == STRATA_ENOTFOUND ? S3E_KMS_NotFoundException
                                            : S3E_KMS_DisabledException;
}

/* No encryption named by the request: the bucket's default, if any. */
static int new_default(struct strata_req *r, struct strata_sse_new *n)
{
    struct strata_sse_default d;
    int rc = strata_sse_default_get(r, r->bucket, &d);
    if (rc == STRATA_ENOTFOUND)
        return 0;
    if (rc)
        return strata_s3_err_from_strata(rc, S3CTX_BUCKET);
    if (strcmp(d.algo, "aws:kms") == 0)
        return new_wrapped(r, n, STRATA_SSE_MODE_KMS, d.key_id[0] ? d.key_id : NULL, NULL, 0);
    return strcmp(d.algo, "AES256") == 0
               ? new_wrapped(r, n, STRATA_SSE_MODE_S3, NULL, NULL, 0)
               : S3E_InternalError; /* a stored default this build cannot apply */
}

int strata_sse_new_parse(struct strata_req *r, struct strata_sse_new *n)
{
    /* An object key made here for an upload is dropped once wrapped: each
     * part unwraps it again (strata_sse_part_key_cb). */
    memset(n, 0, sizeof(*n));
    const char *v = strata_req_hdr(r, "x-amz-server-side-encryption");
    struct ssec c;
    int e = ssec_parse(r, "x-amz-", &c);
    if (e)
        return e;
    if (c.present && v) {
        OPENSSL_cleanse(c.key, sizeof(c.key));
        return S3E_InvalidArgument; /* one kind of encryption per object */
    }
    if (c.present)
        return new_c(n, &c);
    if (!v)
        return strata_req_hdr(r, "x-amz-server-side-encryption-aws-kms-key-id") ||
                       strata_req_hdr(r, "x-amz-server-side-encryption-context")
                   ? S3E_InvalidArgument
                   : new_default(r, n);
    bool kms_hdrs = strata_req_hdr(r, "x-amz-server-side-encryption-aws-kms-key-id") ||
                    strata_req_hdr(r, "x-amz-server-side-encryption-context");
    if (strcmp(v, "aws:kms") == 0)
        return new_kms(r, n);
    if (kms_hdrs)
        return S3E_InvalidArgument; /* KMS headers need aws:kms */
    if (strcmp(v, "AES256") == 0)
        return new_wrapped(r, n, STRATA_SSE_MODE_S3, NULL, NULL, 0);
    if (strcmp(v, "aws:kms:dsse") == 0)
        return S3E_NotImplemented; /* dual-layer encryption is not built */
    return S3E_InvalidArgument; /* AWS: the encryption method is not supported */
}

/* A parsed SSE-S3 / SSE-KMS descriptor (points into it). */
struct desc_view {
    int mode;
    char name[KMS_NAME_MAX + 1];
    const uint8_t *ctx;
    size_t ctx_len;
};

static int desc_view(const uint8_t *d, size_t len, struct desc_view *v)
{
    memset(v, 0, sizeof(*v));
    size_t nl = len >= 3 ? d[2] : 0, p = 3 + nl;
    if (len < 3 || d[0] != DESC_VERSION || nl == 0 || nl > KMS_NAME_MAX || len < p + WRAP_LEN)
        return -1;
    v->mode = d[1];
    memcpy(v->name, d + 3, nl);
    if (v->mode == STRATA_SSE_MODE_KMS) {
        if (len < p + 2 + WRAP_LEN)
            return -1;
        v->ctx_len = (size_t)d[p] << 8 | d[p + 1];
        v->ctx = d + p + 2;
        p += 2 + v->ctx_len;
    } else if (v->mode != STRATA_SSE_MODE_S3) {
        return -1;
    }
    return len == p + WRAP_LEN ? 0 : -1;
}

/* SSE-C: the request's customer key (headers with prefix) must be the one
 * descriptor d was made with; then the object key. */
static int desc_key_c(struct strata_req *r, const char *prefix, const uint8_t *d, size_t len,
                      uint8_t key[32])
{
    struct ssec c;
    int e = ssec_parse(r, prefix, &c);
    if (e)
        return e;
    if (!c.present)
        return S3E_InvalidRequest; /* the object needs its customer key */
    uint8_t check[32];
    if (len != 67 || ssec_derive(c.key, d + 3, "check", check) != 0)
        e = S3E_InternalError;
    else if (CRYPTO_memcmp(check, d + 35, 32) != 0)
        e = S3E_AccessDenied; /* another key */
    else if (ssec_derive(c.key, d + 3, "data", key) != 0)
        e = S3E_InternalError;
    OPENSSL_cleanse(c.key, sizeof(c.key));
    return e;
}

/* The object key behind descriptor d: 0 or an enum s3_err (logged).
 * prefix names the SSE-C request headers that go with d. */
static int desc_key(struct strata_req *r, const char *prefix, const uint8_t *d, size_t len,
                    uint8_t key[32])
{
    if (len >= 2 && d[0] == DESC_VERSION && d[1] == STRATA_SSE_MODE_C)
        return desc_key_c(r, prefix, d, len, key);
    struct ssec c;
    int e = ssec_parse(r, prefix, &c);
    OPENSSL_cleanse(c.key, sizeof(c.key));
    if (e || c.present)
        return e ? e : S3E_InvalidRequest; /* customer key for an object without one */
    struct desc_view dv;
    if (desc_view(d, len, &dv) != 0) {
        strata_srv_log(STRATA_LOG_ERR, "%s: %s/%s: unknown encryption descriptor", r->id,
                       r->bucket ? r->bucket : "", r->key ? r->key : "");
        return S3E_InternalError;
    }
    const struct strata_kms *k = r->srv->kms;
    int rc = k ? strata_kms_state(k, dv.name) : STRATA_ENOTFOUND;
    if (rc == STRATA_ENOTFOUND) {
        /* The key was taken out of the key file (or the daemon runs
         * without one): the client learns which key, as AWS names a
         * missing KMS key; the operator sees the count in /metrics. */
        strata_metrics_sse_key_missing();
        strata_srv_log(STRATA_LOG_ERR, "%s: %s/%s: master key %s not in the key store", r->id,
                       r->bucket ? r->bucket : "", r->key ? r->key : "", dv.name);
        snprintf(r->err_msg_buf, sizeof(r->err_msg_buf),
                 "The master key '%s' this object was encrypted with is not in the "
                 "server's key store.",
                 dv.name);
        r->err_msg = r->err_msg_buf;
        return S3E_KMS_NotFoundException;
    }
    if (dv.mode == STRATA_SSE_MODE_KMS && rc) /* a disabled KMS key: AWS's answer */
        return S3E_KMS_DisabledException;
    rc = strata_kms_unwrap(k, dv.name, d + len - WRAP_LEN, d, len - WRAP_LEN, key);
    if (rc) { /* SSE-S3: retired (disabled) keys still unwrap */
        strata_srv_log(STRATA_LOG_ERR, "%s: %s/%s: master key %s %s", r->id,
                       r->bucket ? r->bucket : "", r->key ? r->key : "", dv.name,
                       rc == STRATA_ENOTFOUND ? "not in the key store" : "does not unwrap");
        return S3E_InternalError;
    }
    return 0;
}

int strata_sse_read_key(struct strata_req *r, const struct strata_obj_info *in,
                        struct strata_get *g, bool copy_source)
{
    const char *prefix = copy_source ? "x-amz-copy-source-" : "x-amz-";
    if (!in->sse_len) {
        struct ssec c;
        int e = ssec_parse(r, prefix, &c);
        OPENSSL_cleanse(c.key, sizeof(c.key));
        return e ? e : c.present ? S3E_InvalidRequest : 0; /* AWS: not applicable */
    }
    uint8_t key[32];
    int e = desc_key(r, prefix, in->sse, in->sse_len, key);
    if (e == 0 && g && strata_obj_get_key(g, key) != 0)
        e = S3E_InternalError;
    OPENSSL_cleanse(key, sizeof(key));
    return e;
}

int strata_sse_desc_mode(const uint8_t *d, size_t len)
{
    struct desc_view dv;
    if (len == 67 && d[0] == DESC_VERSION && d[1] == STRATA_SSE_MODE_C)
        return STRATA_SSE_MODE_C;
    return desc_view(d, len, &dv) == 0 ? dv.mode : 0;
}

int strata_sse_s3_object_key(const struct strata_kms *k, const uint8_t *d, size_t len,
                             uint8_t key[32])
{
    struct desc_view dv;
    if (!k || desc_view(d, len, &dv) != 0)
        return STRATA_ENOTFOUND;
    return strata_kms_unwrap(k, dv.name, d + len - WRAP_LEN, d, len - WRAP_LEN, key);
}

int strata_sse_desc_key_name(const uint8_t *d, size_t len, char *out, size_t out_len)
{
    struct desc_view dv;
    if (desc_view(d, len, &dv) != 0 || strlen(dv.name) >= out_len)
        return -1;
    memcpy(out, dv.name, strlen(dv.name) + 1);
    return 0;
}

int strata_sse_kms_ctx_b64(const uint8_t *d, size_t len, char *out, size_t out_len)
{
    struct desc_view dv;
    if (desc_view(d, len, &dv) != 0 || dv.mode != STRATA_SSE_MODE_KMS)
        return -1;
    if (!dv.ctx_len)
        return 0;
    return strata_b64_encode(dv.ctx, dv.ctx_len, out, out_len) > 0 ? 1 : -1;
}

int strata_sse_part_key_cb(void *ud, const void *desc, size_t len, uint8_t *key)
{
    struct strata_req *r = ud;
    struct strata_obj_info in = {.sse = (uint8_t *)(uintptr_t)desc, .sse_len = len};
    int e = desc ? desc_key(r, "x-amz-", desc, len, key) : strata_sse_read_key(r, &in, NULL, false);
    if (e)
        r->s3->sse_err = e;
    return e ? STRATA_EINTERNAL : 0;
}

int strata_sse_complete_check(void *ud, const void *desc, size_t len)
{
    struct strata_req *r = ud;
    struct ssec c;
    int e = ssec_parse(r, "x-amz-", &c);
    OPENSSL_cleanse(c.key, sizeof(c.key));
    if (e == 0 && !c.present)
        return 0; /* AWS needs the key here only for checksums: not asked */
    if (e == 0) {
        struct strata_obj_info in = {.sse = (uint8_t *)(uintptr_t)desc, .sse_len = len};
        e = strata_sse_read_key(r, &in, NULL, false);
    }
    if (e)
        r->s3->sse_err = e;
    return e ? STRATA_EINTERNAL : 0;
}

int strata_sse_mpu_hdrs_check(struct strata_req *r)
{
    static const struct {
        const char *name, *msg;
    } hs[] = {
        {"x-amz-server-side-encryption",
         "x-amz-server-side-encryption header is not supported for this operation."},
        {"x-amz-server-side-encryption-aws-kms-key-id",
         "x-amz-server-side-encryption-aws-kms-key-id header is not supported for this "
         "operation."},
        {"x-amz-server-side-encryption-context",
         "x-amz-server-side-encryption-context header is not supported for this operation."},
    };
    for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
        const char *v = strata_req_hdr(r, hs[i].name);
        if (!v)
            continue;
        r->err_msg = hs[i].msg;
        r->err_arg_name = hs[i].name;
        r->err_arg_value = v;
        return S3E_InvalidArgument;
    }
    return 0;
}

void strata_sse_resp_hdrs(struct strata_req *r, const struct strata_obj_info *in,
                          struct strata_resp *resp)
{
    struct desc_view dv;
    if (in->sse_len && desc_view(in->sse, in->sse_len, &dv) == 0) {
        bool kms = dv.mode == STRATA_SSE_MODE_KMS;
        strata_resp_hdr(resp, "x-amz-server-side-encryption", kms ? "aws:kms" : "AES256");
        char c64[KMS_CTX_MAX * 2];
        if (kms)
            strata_resp_hdr(resp, "x-amz-server-side-encryption-aws-kms-key-id", dv.name);
        if (kms && dv.ctx_len && strata_b64_encode(dv.ctx, dv.ctx_len, c64, sizeof(c64)) > 0)
            strata_resp_hdr(resp, "x-amz-server-side-encryption-context", c64);
    }
    if (in->sse_len >= 2 && in->sse[1] == STRATA_SSE_MODE_C) {
        /* The key's MD5 is not stored: it is the request's, checked. */
        const char *md5 = strata_req_hdr(r, "x-amz-server-side-encryption-customer-key-MD5");
        strata_resp_hdr(resp, "x-amz-server-side-encryption-customer-algorithm",
                                "AES256");
        if (md5)
            strata_resp_hdr(resp, "x-amz-server-side-encryption-customer-key-MD5", md5);
    }
}

/* ---- key rotation --------------------------------------------------------- */

int strata_kms_rewrap_desc(const struct strata_kms *k, const uint8_t *d, size_t len,
                           uint8_t *out, size_t *out_len)
{
    struct desc_view dv;
    if (desc_view(d, len, &dv) != 0 || dv.mode != STRATA_SSE_MODE_S3)
        return 0; /* SSE-C has no wrap; SSE-KMS keeps the key its client named */
    const char *active = k->keys[k->active].name;
    if (strcmp(dv.name, active) == 0)
        return 0;
    uint8_t key[32];
    int rc = strata_kms_unwrap(k, dv.name, d + len - WRAP_LEN, d, len - WRAP_LEN, key);
    if (rc)
        return rc;
    size_t nl = strlen(active);
    out[0] = DESC_VERSION;
    out[1] = STRATA_SSE_MODE_S3;
    out[2] = (uint8_t)nl;
    memcpy(out + 3, active, nl);
    char used[KMS_NAME_MAX + 1];
    rc = strata_kms_wrap(k, active, key, out, 3 + nl, out + 3 + nl, used);
    OPENSSL_cleanse(key, sizeof(key));
    if (rc)
        return rc;
    *out_len = 3 + nl + WRAP_LEN;
    return 1;
}

int strata_kms_rotate(const char *path, const char *name, char *err, size_t errlen)
{
    struct strata_kms *k = NULL;
    if (strata_kms_load(path, &k, err, errlen) != 0)
        return -1;
    strata_kms_free(k);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    json_t *keys = json_object_get(root, "keys");
    uint8_t raw[32];
    char b64[64], gen[32], tmp[4096];
    if (!name) {
        snprintf(gen, sizeof(gen), "k%lld", (long long)time(NULL));
        name = gen;
    }
    int rc = -1;
    if (!name_ok(name) || json_object_get(keys, name)) {
        snprintf(err, errlen, "key name %s is invalid or already in the file", name);
    } else if (RAND_bytes(raw, 32) != 1 || strata_b64_encode(raw, 32, b64, sizeof(b64)) <= 0) {
        snprintf(err, errlen, "no random bytes");
    } else {
        json_t *kv = json_pack("{s:s}", "key", b64);
        json_object_set_new(keys, name, kv);
        json_object_set_new(root, "active", json_string(name));
        /* Write a new file (0600) and rename it over the old one, so a crash
         * leaves the old or the new key store, never half of one. */
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char *txt = json_dumps(root, JSON_INDENT(2));
        size_t n = txt ? strlen(txt) : 0;
        if (fd < 0 || !txt || write(fd, txt, n) != (ssize_t)n || write(fd, "\n", 1) != 1 ||
            fsync(fd) != 0 || rename(tmp, path) != 0)
            snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        else
            rc = 0;
        if (fd >= 0)
            close(fd);
        if (rc)
            unlink(tmp);
        if (txt)
            OPENSSL_cleanse(txt, n);
        free(txt);
        if (rc == 0)
            snprintf(err, errlen, "%s", name);
    }
    OPENSSL_cleanse(raw, sizeof(raw));
    OPENSSL_cleanse(b64, sizeof(b64));
    json_decref(root);
    return rc;
}
