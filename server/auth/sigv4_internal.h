/*
 * sigv4_internal.h - helpers shared by the request-authentication files
 * (sigv4*.c, sigv2*.c, chunked*.c, creds*.c).  Not a contract for the rest
 * of server/: use auth.h.
 *
 * Everything here is reentrant.  The crypto helpers keep one set of OpenSSL
 * contexts per thread (created on first use, freed at thread exit) so that
 * verifying a request allocates nothing once a thread is warm.
 */
#ifndef STRATA_SERVER_SIGV4_INTERNAL_H
#define STRATA_SERVER_SIGV4_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "auth.h"
#include "http_date.h"
#include "strata/hex.h"
#include "url.h"

#define STRATA_SIGV4_ALGO "AWS4-HMAC-SHA256"
#define STRATA_SIGV4_MAX_SKEW_S 900       /* AWS: 15 minutes */
#define STRATA_SIGV4_MAX_EXPIRES_S 604800 /* AWS: 7 days */
#define STRATA_SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* ---- crypto (sigv4_crypto.c) ------------------------------------------- */

/* Streaming SHA-256 over the calling thread's digest context.  Only one
 * strata_sigv4__sha_* sequence may be open per thread at a time. */
int strata_sigv4__sha_begin(void);
int strata_sigv4__sha_update(const void *p, size_t n);
int strata_sigv4__sha_end(uint8_t out[32]);
int strata_sigv4__sha256(const void *p, size_t n, uint8_t out[32]);

/* One-shot HMACs on the calling thread's MAC contexts.  0 or STRATA_EINTERNAL. */
int strata_sigv4__hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                              uint8_t out[32]);
/* HMAC-SHA256 keyed with a 32-byte signing key, cheaper than the above
 * when the thread used the same key last time. */
int strata_sigv4__hmac_signing(const uint8_t key[32], const void *msg, size_t msg_len,
                               uint8_t out[32]);
int strata_sigv4__hmac_sha1(const void *key, size_t key_len, const void *msg, size_t msg_len,
                            uint8_t out[20]);

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date8), region), "s3"),
 * "aws4_request") for cred's secret.  Derived keys are cached per thread
 * (a few entries, least recently used replaced), keyed by access key,
 * secret, date and region: a rotated secret derives a new key.  0 or
 * STRATA_EINVAL / STRATA_EINTERNAL. */
int strata_sigv4__signing_key(const struct strata_cred *cred, const char *date8, const char *region,
                              size_t region_len, uint8_t out[32]);

/* The calling thread's signing-key cache counters (tests, diagnostics). */
struct strata_sigv4_key_stats {
    uint64_t hits, misses;
};
struct strata_sigv4_key_stats strata_sigv4__key_cache_stats(void);

/* Constant-time equality of two n-byte strings. */
bool strata_sigv4__ct_eq(const void *a, const void *b, size_t n);

/* ---- text helpers (sigv4_text.c) ---------------------------------------- */

/* First header named lname (lower-case), compared case-insensitively; NULL
 * when absent. */
const char *strata_sigv4__hdr(const struct strata_auth_req *r, const char *lname);

/* "20130524T000000Z" -> epoch seconds.  0 or STRATA_EINVAL. */
int strata_sigv4__parse_iso8601(const char *s, time_t *out);
/* epoch -> "yyyymmddThhmmssZ" (17 bytes with the NUL). */
void strata_sigv4__fmt_iso8601(time_t t, char out[17]);

/* A write-through buffer: text is collected in buf and handed to flush_cb
 * when buf fills and at the end, so long canonical requests stream into a
 * digest without a heap buffer. */
struct strata_sigv4_sink {
    int (*flush_cb)(void *ud, const void *p, size_t n);
    void *ud;
    size_t len;
    int err;
    char buf[2048];
};
void strata_sigv4__sink_put(struct strata_sigv4_sink *s, const void *p, size_t n);
void strata_sigv4__sink_puts(struct strata_sigv4_sink *s, const char *str);
void strata_sigv4__sink_putc(struct strata_sigv4_sink *s, char c);
int strata_sigv4__sink_flush(struct strata_sigv4_sink *s);
/* A header value as SigV4 canonicalises it: outer spaces trimmed and
 * inner runs of spaces/tabs folded to one space. */
void strata_sigv4__sink_put_trimmed(struct strata_sigv4_sink *s, const char *v);

/* ---- the verifiers (sigv4.c, sigv4_presign.c, sigv2.c) ------------------- */

/* A signature in the Authorization header (authz), and one in the query
 * string (presigned URLs); each version has both. */
typedef enum strata_auth_err strata_sig__verify_header_fn(const struct strata_creds *creds,
                                                          const struct strata_auth_req *req,
                                                          const char *authz,
                                                          struct strata_auth_result *out);
typedef enum strata_auth_err strata_sig__verify_query_fn(const struct strata_creds *creds,
                                                         const struct strata_auth_req *req,
                                                         struct strata_auth_result *out);
strata_sig__verify_header_fn strata_sigv4__verify_header, strata_sigv2__verify_header;
strata_sig__verify_query_fn strata_sigv4__verify_query, strata_sigv2__verify_query;

/* Canonical request -> hex SHA-256, shared by the header and query forms and
 * by strata_presign_v4.  signed_headers is the ';'-list exactly as signed;
 * skip_param, when not NULL, is a query parameter left out (the presigned
 * X-Amz-Signature); host_override, when not NULL, is used as the value of
 * "host" (presigning has no request headers).  Returns STRATA_AUTH_OK or why
 * the input is malformed. */
enum strata_auth_err strata_sigv4__canonical_hash(const struct strata_auth_req *req,
                                                  const char *signed_headers,
                                                  size_t signed_headers_len, const char *skip_param,
                                                  const char *host_override,
                                                  const char *payload_hash, char out_hex[65]);

/* String to sign + HMAC with the signing key -> hex signature. */
int strata_sigv4__sign(const uint8_t key[32], const char *amz_date, const char *scope,
                       const char *creq_hex, char out_hex[65]);

/* The query parameter named name (exact, case-sensitive as AWS is), raw
 * (still %-encoded): sets *val and *len, returns true when present. */
bool strata_sigv4__query_param(const char *raw_query, const char *name, const char **val,
                               size_t *len);

#endif /* STRATA_SERVER_SIGV4_INTERNAL_H */
