/*
 * sse.h - server-side encryption at rest: the local key store
 * (--kms-key-file) and the SSE request/response headers.
 *
 * Every encrypted object has its own random 256-bit object key; meta/
 * seals the data with it (meta/sse.h) and stores, opaque to itself, the
 * descriptor built here, which says how to get the object key back:
 *
 * Descriptor (record field 18), version 1, SSE-S3:
 *   OFFSET  SIZE  DESCRIPTION
 *   0       1     descriptor version (1)
 *   1       1     mode: 1 SSE-S3 (AES256)
 *   2       1     n = length of the master key name (1..64)
 *   3       n     master key name in the key store
 *   3+n     12    nonce of the key wrap
 *   15+n    32    object key, AES-256-GCM encrypted under the master key
 *                 with bytes 0 .. 3+n as additional authenticated data
 *   47+n    16    GCM tag of the wrap
 *
 * SSE-KMS (mode 2): as SSE-S3, with the encryption context between the
 * name and the wrap (and so in the wrap's AAD):
 *   3+n     2     c = context length, big-endian (0: none)
 *   5+n     c     the context as the client sent it (JSON, base64-decoded)
 *   5+n+c   60    the wrap (nonce, encrypted object key, tag)
 * In both, the wrap's AAD is every byte before it.
 *
 * SSE-C (the customer key is never stored):
 *   OFFSET  SIZE  DESCRIPTION
 *   0       1     descriptor version (1)
 *   1       1     mode: 3 SSE-C
 *   2       1     0
 *   3       32    random salt
 *   35      32    HMAC-SHA256(customer key, salt || "check"): checks the key
 *                 a GET, HEAD, copy or part upload brings
 *   object key  = HMAC-SHA256(customer key, salt || "data")
 *
 * Key store file (JSON, mode 0600 or stricter, outside the data drives):
 *   {"active": "k2",
 *    "keys": {"k1": {"key": "<base64 of 32 bytes>"},
 *             "k2": {"key": "<base64 of 32 bytes>", "disabled": false}}}
 * New objects are wrapped with the active key; every listed key unwraps,
 * so objects stay readable after a new key becomes active.
 *
 * SSE-KMS names its key (x-amz-server-side-encryption-aws-kms-key-id, a
 * key name in the file; default the active key): an unknown name answers
 * KMS.NotFoundException and a disabled key KMS.DisabledException, for new
 * objects and for reads alike.  SSE-S3 objects whose key was disabled
 * later stay readable (a retired key); reads of objects whose key is no
 * longer in the file answer KMS.NotFoundException naming it, counted in
 * strata_sse_key_missing_total.
 *
 * The key store is loaded once at start and read-only afterwards: any
 * connection thread may use it.
 */
#ifndef STRATA_SERVER_SSE_H
#define STRATA_SERVER_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/meta.h"
#include "s3_error.h"

#define STRATA_SSE_MODE_S3 1
#define STRATA_SSE_MODE_KMS 2
#define STRATA_SSE_MODE_C 3

struct strata_kms;
struct strata_req;
struct strata_resp;

/* Loads and checks path.  0, or -1 with a message in err. */
int strata_kms_load(const char *path, struct strata_kms **out, char *err, size_t errlen);
void strata_kms_free(struct strata_kms *k); /* NULL is a no-op */

/*
 * Key provider interface (the local key store implements it; a KMIP or
 * Vault client can take its place): wrap a 32-byte object key under a
 * named master key (NULL: the active one) into a 60-byte blob (nonce,
 * ciphertext, tag) bound to aad, and unwrap it again.
 *   wrap: 0; STRATA_ENOTFOUND (no such key); STRATA_EMETHOD (the key is
 *         disabled); fills name_out (<= 64 chars + NUL).
 *   unwrap: 0; STRATA_ENOTFOUND; STRATA_ECORRUPT (the blob does not
 *         verify under that key).  Disabled keys still unwrap.
 */
int strata_kms_wrap(const struct strata_kms *k, const char *name, const uint8_t key[32],
                    const uint8_t *aad, size_t aad_len, uint8_t blob[60], char name_out[65]);
/* 0 (usable), STRATA_ENOTFOUND or STRATA_EMETHOD (disabled); NULL: the
 * active key. */
int strata_kms_state(const struct strata_kms *k, const char *name);
int strata_kms_unwrap(const struct strata_kms *k, const char *name, const uint8_t blob[60],
                      const uint8_t *aad, size_t aad_len, uint8_t key[32]);

/*
 * Rotation.  strata_kms_rotate adds a new random key to the key file and
 * makes it active (rewrites the file atomically, 0600); 0, or -1 with a
 * message in err (on success err holds the new key's name).  The daemon
 * reads the file at start.  strata_kms_rewrap_desc re-wraps an SSE-S3
 * descriptor under the active key into out (STRATA_SSE_DESC_MAX): 1 done,
 * 0 nothing to do (already active, SSE-C, SSE-KMS), or a STRATA_E* code
 * from unwrap.  The daemon's re-wrap pass (sse_rewrap.c) applies it to
 * every version.
 */
int strata_kms_rotate(const char *path, const char *name, char *err, size_t errlen);
int strata_kms_rewrap_desc(const struct strata_kms *k, const uint8_t *d, size_t len,
                           uint8_t *out, size_t *out_len);

/* Background re-wrap pass over every version of every bucket (started by
 * --kms-rewrap): logs progress; stop() ends it early (a restart simply
 * runs it again: re-wrapped versions are skipped). */
struct strata_rewrap;
struct strata_srv;
int strata_rewrap_start(struct strata_srv *s, struct strata_rewrap **out);
void strata_rewrap_stop(struct strata_rewrap *w); /* NULL is a no-op; joins */

/* Encryption asked for a new object (PutObject, CopyObject destination). */
struct strata_sse_new {
    int mode; /* 0: none */
    uint8_t key[32];
    uint8_t desc[STRATA_SSE_DESC_MAX];
    size_t desc_len;
    char etag[33]; /* replaces the ETag (SSE-C, SSE-KMS), or "" */
    bool sealed;   /* a replica's sealed stream: no key (strata_sse_replica_parse) */
};
/* Reads the request's x-amz-server-side-encryption* headers (SSE-S3, or
 * SSE-C with the customer key headers: refused over plain HTTP unless
 * --sse-c-allow-http); with one, makes the object key and its
 * descriptor.  Returns 0 or an enum s3_err. */
int strata_sse_new_parse(struct strata_req *r, struct strata_sse_new *n);
/* Points the put options at n (which must outlive the put's begin). */
void strata_sse_new_apply(const struct strata_sse_new *n, struct strata_put_opts *o);
void strata_sse_new_fini(struct strata_sse_new *n); /* wipes the key */

/* For a read of version in: recovers the object key of an encrypted one
 * and hands it to g (g NULL: HEAD, check only).  SSE-C takes the
 * customer key from the request (x-amz-copy-source-... headers when
 * copy_source): missing -> InvalidRequest, bad MD5 -> InvalidArgument,
 * another key -> AccessDenied; customer key headers on a version without
 * SSE-C -> InvalidRequest.  Returns 0 or an enum s3_err. */
int strata_sse_read_key(struct strata_req *r, const struct strata_obj_info *in,
                        struct strata_get *g, bool copy_source);
/* The mode (STRATA_SSE_MODE_*) of a stored descriptor, 0 when d is none
 * this build knows. */
int strata_sse_desc_mode(const uint8_t *d, size_t len);
/* The object key of an SSE-S3 or SSE-KMS descriptor, from the key store
 * alone (no request: bucket replication reads the plaintext it sends).
 * 0, STRATA_ENOTFOUND (SSE-C, or its master key is not in k) or
 * STRATA_ECORRUPT. */
int strata_sse_s3_object_key(const struct strata_kms *k, const uint8_t *d, size_t len,
                             uint8_t key[32]);
/* The master key name of an SSE-S3 or SSE-KMS descriptor into out: 0, or
 * -1 (another descriptor, or out too small). */
int strata_sse_desc_key_name(const uint8_t *d, size_t len, char *out, size_t out_len);
/* The encryption context of an SSE-KMS descriptor as the
 * x-amz-server-side-encryption-context header (base64) into out: 1, 0
 * when it has none, -1 when d is not SSE-KMS or out is too small. */
int strata_sse_kms_ctx_b64(const uint8_t *d, size_t len, char *out, size_t out_len);

/* ---- bucket replication of encrypted versions (sse_replica.c) ----------- */

/* A replica of an SSE-C version comes from a Strata source as its sealed
 * stream (strata_put_opts.sse_sealed): the descriptor (base64), the
 * plaintext size and the ETag ride in these headers, only from an
 * authorised replication peer.  So does an SSE-KMS one whose rule's
 * ReplicaKmsKeyID is the key it is sealed under, when this side's key
 * store holds that very key (the descriptor unwraps here; else
 * KMS.NotFoundException, and the source sends the plaintext instead).
 * The ETag header also keeps the source's ETag on an SSE-KMS replica the
 * target encrypts again. */
#define STRATA_SSE_REPLICA_HDR "x-strata-replica-sse"
#define STRATA_SSE_REPLICA_SIZE_HDR "x-strata-replica-size"
#define STRATA_SSE_REPLICA_ETAG_HDR "x-strata-replica-etag"
/* For a PutObject from a replication peer: with STRATA_SSE_REPLICA_HDR,
 * n describes the sealed replica and *size becomes its plaintext size
 * (bad headers: InvalidArgument); without, strata_sse_new_parse, and an
 * SSE-KMS replica keeps the ETag header's value.  0 or an enum s3_err. */
int strata_sse_replica_parse(struct strata_req *r, struct strata_sse_new *n, uint64_t *size);
/* The same for CreateMultipartUpload from a peer: with
 * STRATA_SSE_REPLICA_HDR the upload of a sealed multipart replica (its
 * descriptor only; each UploadPart then brings its part's sealed stream
 * with the three headers, read by strata_sse_replica_parse), without,
 * strata_sse_new_parse. */
int strata_sse_replica_mpu_parse(struct strata_req *r, struct strata_sse_new *n);
/* strata_part_opts.sse_key_cb (also refuses customer key headers on an
 * upload without SSE-C); ud is the request.  On failure sets
 * r->sse_err (the S3 error to answer) and returns STRATA_EINTERNAL. */
int strata_sse_part_key_cb(void *ud, const void *desc, size_t len, uint8_t *key);
/* strata_mpu_complete_opts.sse_check (ud: the request): the SSE-C
 * customer key headers CompleteMultipartUpload may carry (boto3's
 * transfer manager sends the upload's).  None: nothing is checked (AWS
 * needs them only for checksums).  Sent: checked as for a read of the
 * upload's descriptor (bad MD5 InvalidArgument, another key AccessDenied,
 * an upload without SSE-C InvalidRequest, plain HTTP InvalidRequest).  On
 * failure sets r->sse_err and returns STRATA_EINTERNAL. */
int strata_sse_complete_check(void *ud, const void *desc, size_t len);
/* UploadPart, UploadPartCopy and CompleteMultipartUpload take no
 * x-amz-server-side-encryption, -aws-kms-key-id or -context header (the
 * encryption is chosen at CreateMultipartUpload): AWS answers 400
 * InvalidArgument "<header> header is not supported for this operation."
 * with the header as ArgumentName.  Returns 0, or that error with
 * r->err_msg and the argument set. */
int strata_sse_mpu_hdrs_check(struct strata_req *r);
/* The SSE headers of a response about version in (SSE-C echoes the
 * request's key MD5). */
void strata_sse_resp_hdrs(struct strata_req *r, const struct strata_obj_info *in,
                          struct strata_resp *resp);

/* ---- bucket default encryption (s3_bucket_encryption.c) ----------------- */

/* ServerSideEncryptionConfiguration's one rule. */
struct strata_sse_default {
    char algo[16];   /* "AES256", "aws:kms", ... as sent */
    char key_id[65]; /* KMSMasterKeyID, or "" */
    bool bucket_key; /* BucketKeyEnabled (stored and reported; no effect) */
};
/* s3_xml.c: MalformedXML (not a configuration, no algorithm, several
 * rules), InvalidArgument (oversize values).  Values are not checked. */
enum s3_err strata_xml_encryption_parse(const char *body, size_t len,
                                        struct strata_sse_default *out);
/* The bucket's default (STRATA_ENOTFOUND: none).  Stored as the config
 * document "encryption": "algo\nkey_id\nbucket_key(0|1)". */
int strata_sse_default_get(struct strata_req *r, const char *bucket,
                           struct strata_sse_default *out);
/* Whether d can be applied here: AES256 or aws:kms (with a usable key),
 * else InvalidArgument / KMS.NotFoundException / KMS.DisabledException,
 * NotImplemented without a key store or for aws:kms:dsse. */
int strata_sse_default_check(struct strata_req *r, const struct strata_sse_default *d);

#endif /* STRATA_SERVER_SSE_H */
