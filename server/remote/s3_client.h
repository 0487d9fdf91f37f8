/*
 * s3_client.h - a small S3 client over libcurl, for the daemon's remote
 * endpoints (remote tiers, replication targets).
 *
 * An endpoint is http[s]://HOST[:PORT]; every request names its bucket and
 * key and goes path style (/BUCKET/KEY), signed with SigV4 by libcurl
 * (CURLOPT_AWS_SIGV4, service s3).  Bodies stream: a PUT pulls its bytes
 * from a callback (Content-Length known up front, Content-MD5 optional), a
 * GET pushes them to one, so no object is held in memory here.
 *
 * Results: every request returns an enum strata_s3c_result, with the HTTP
 * status, the S3 XML error Code and Message (or libcurl's error) in a
 * struct strata_s3c_error when the caller passes one.  The client never
 * retries: a RETRY result tells the caller to try again later (network
 * error, timeout, 5xx, SlowDown, 429); the caller owns the backoff.
 *
 * Threads: a client may be used from any number of threads at once (it
 * keeps a small pool of libcurl handles, and with them their keep-alive
 * connections).  Callbacks run on the calling thread, synchronously,
 * before the request function returns.  Nothing here prints.
 *
 * Ownership: strings passed in are only read during the call; results are
 * written into caller-owned structs (strata_s3c_obj_fini frees the user
 * metadata lines a HEAD or GET returned).
 */
#ifndef STRATA_SERVER_REMOTE_S3_CLIENT_H
#define STRATA_SERVER_REMOTE_S3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum strata_s3c_result {
    STRATA_S3C_OK = 0,
    STRATA_S3C_NOT_FOUND, /* 404: NoSuchKey, NoSuchBucket, NoSuchVersion, ... */
    STRATA_S3C_RETRY,     /* unreachable, timed out, 5xx, 429, SlowDown, RequestTimeout */
    STRATA_S3C_AUTH,      /* 401/403: bad keys, signature, clock skew, access denied */
    STRATA_S3C_OTHER,     /* any other answer (4xx), a bad argument, out of memory,
                           * or a callback that asked to stop */
};

const char *strata_s3c_result_name(enum strata_s3c_result r); /* "ok", "not-found", ... */

struct strata_s3c_error {
    long http_status;   /* 0: no HTTP answer (see curl) */
    char code[64];      /* S3 <Code>, or "" */
    char message[256];  /* S3 <Message>, or libcurl's error text, or "" */
};

/* Host, port and URL pieces: URL = http[s]://HOST[:PORT]/BUCKET[/PREFIX]. */
struct strata_s3c_url {
    char endpoint[300]; /* "http://HOST:PORT" (port always written) */
    char bucket[64];
    char prefix[512];   /* without leading or trailing '/', may be "" */
};

/* Parse a remote's URL; 0, or -1 with a message in err.  Path style only,
 * so the bucket is the first path segment (3..63 of a-z, 0-9, '.', '-').
 * No user:password@, query or fragment.  Pure. */
int strata_s3c_url_parse(const char *url, struct strata_s3c_url *out, char *err, size_t errlen);

struct strata_s3c_opts {
    const char *access_key;
    const char *secret_key;
    const char *region;        /* NULL: "us-east-1" */
    long connect_timeout_ms;   /* 0: 3000 */
    long request_timeout_ms;   /* requests without a streamed body (HEAD, DELETE, ...); 0: 15000 */
    long stall_timeout_s;      /* a PUT/GET moving < 1 KiB/s for this long is cut; 0: 30 */
    const char *ca_file;       /* https: trust these CAs instead of the system's, or NULL */
};

struct strata_s3c;

/* A client of endpoint ("http[s]://HOST:PORT", as strata_s3c_url.endpoint);
 * opts' strings are copied.  0, or -1 with err. */
int strata_s3c_create(const char *endpoint, const struct strata_s3c_opts *opts,
                      struct strata_s3c **out, char *err, size_t errlen);
void strata_s3c_destroy(struct strata_s3c *c); /* NULL is a no-op; wipes the secret */

/* What an object answer said (PUT, HEAD, GET, copy). */
struct strata_s3c_obj {
    uint64_t size;            /* HEAD: Content-Length; GET: the whole object's size
                               * (from Content-Range when ranged) */
    char etag[80];            /* without quotes */
    char version_id[160];
    char storage_class[40];
    char last_modified[40];   /* as sent (RFC 1123) */
    char lock_mode[16];       /* x-amz-object-lock-mode, or "" */
    char lock_until[40];      /* x-amz-object-lock-retain-until-date, or "" */
    char legal_hold[8];       /* x-amz-object-lock-legal-hold (ON/OFF), or "" */
    char checksum_crc32c[16]; /* x-amz-checksum-crc32c (base64), or "" */
    char **meta;              /* "x-amz-meta-NAME: value" lines (names lower case) */
    size_t nmeta;
};
void strata_s3c_obj_fini(struct strata_s3c_obj *o); /* frees meta; NULL-safe */

/* The body of a PUT: fill buf with up to max bytes, set *n (0 only at the
 * end); return 0, or -1 to stop the request (STRATA_S3C_OTHER).  rewind_cb
 * (optional) restarts from the first byte, should libcurl need to resend. */
typedef int (*strata_s3c_read_cb)(void *ud, void *buf, size_t max, size_t *n);
typedef int (*strata_s3c_rewind_cb)(void *ud);

struct strata_s3c_put {
    const char *bucket;
    const char *key;
    uint64_t size;                 /* exactly this many bytes are read from read_cb */
    const uint8_t *md5;            /* 16 bytes: sent as Content-MD5 (the remote checks it), or NULL */
    const char *const *headers;    /* extra "Name: value" lines (x-amz-meta-*, Content-Type,
                                    * x-amz-object-lock-*, x-amz-storage-class, ...), NULL-ended, or NULL */
    strata_s3c_read_cb read_cb;
    strata_s3c_rewind_cb rewind_cb;
    void *ud;
};
/* PutObject; info (optional) gets the ETag and version id of the answer. */
enum strata_s3c_result strata_s3c_put_object(struct strata_s3c *c, const struct strata_s3c_put *p,
                                             struct strata_s3c_obj *info,
                                             struct strata_s3c_error *e);

/* The body of a GET, in order: return 0, or -1 to stop (STRATA_S3C_OTHER). */
typedef int (*strata_s3c_write_cb)(void *ud, const void *buf, size_t len);

/* GetObject of bytes [off, off + len) (len 0: to the end; the object may
 * be shorter: the answer's bytes are what the remote has).  info (optional)
 * gets the headers; version_id may be NULL.  An error answer's body is
 * parsed into e, never passed to write_cb. */
enum strata_s3c_result strata_s3c_get_object(struct strata_s3c *c, const char *bucket,
                                             const char *key, const char *version_id,
                                             uint64_t off, uint64_t len, strata_s3c_write_cb cb,
                                             void *ud, struct strata_s3c_obj *info,
                                             struct strata_s3c_error *e);

/* HeadObject (version_id may be NULL); info required. */
enum strata_s3c_result strata_s3c_head_object(struct strata_s3c *c, const char *bucket,
                                              const char *key, const char *version_id,
                                              struct strata_s3c_obj *info,
                                              struct strata_s3c_error *e);

/* DeleteObject (version_id NULL: the current version, which makes a delete
 * marker on a versioned bucket).  An absent key is OK, as S3 answers 204.
 * headers: extra "Name: value" lines (NULL-ended, or NULL): a replicated
 * delete marker carries its version id in one. */
enum strata_s3c_result strata_s3c_delete_object(struct strata_s3c *c, const char *bucket,
                                                const char *key, const char *version_id,
                                                const char *const *headers,
                                                struct strata_s3c_error *e);

/* CopyObject inside the endpoint: src_bucket/src_key to bucket/key.  With
 * headers (NULL-ended "Name: value"), the copy's metadata is replaced by
 * them (x-amz-metadata-directive: REPLACE), else copied from the source. */
enum strata_s3c_result strata_s3c_copy_object(struct strata_s3c *c, const char *src_bucket,
                                              const char *src_key, const char *bucket,
                                              const char *key, const char *const *headers,
                                              struct strata_s3c_obj *info,
                                              struct strata_s3c_error *e);

/* PutObjectRetention: mode "GOVERNANCE" or "COMPLIANCE", until an ISO 8601
 * date ("2030-01-01T00:00:00Z"); version_id may be NULL.  headers: extra
 * "Name: value" lines (NULL-ended, or NULL): a replication peer's version
 * id travels in one. */
enum strata_s3c_result strata_s3c_put_retention(struct strata_s3c *c, const char *bucket,
                                                const char *key, const char *version_id,
                                                const char *mode, const char *until,
                                                const char *const *headers,
                                                struct strata_s3c_error *e);
/* PutObjectLegalHold ON or OFF; headers as above. */
enum strata_s3c_result strata_s3c_put_legal_hold(struct strata_s3c *c, const char *bucket,
                                                 const char *key, const char *version_id, bool on,
                                                 const char *const *headers,
                                                 struct strata_s3c_error *e);
/* PutObjectTagging with the <Tagging> document xml, or DeleteObjectTagging
 * when xml is NULL; headers as above. */
enum strata_s3c_result strata_s3c_put_tagging(struct strata_s3c *c, const char *bucket,
                                              const char *key, const char *version_id,
                                              const char *xml, const char *const *headers,
                                              struct strata_s3c_error *e);
/* PutObjectAcl with the <AccessControlPolicy> document xml, or with the
 * headers alone (x-amz-acl) when xml is NULL; headers as above. */
enum strata_s3c_result strata_s3c_put_acl(struct strata_s3c *c, const char *bucket,
                                          const char *key, const char *version_id,
                                          const char *xml, const char *const *headers,
                                          struct strata_s3c_error *e);
/* Multipart upload.  Create (POST ?uploads, headers as a PUT's, at most
 * STRATA_S3C_HDRS_MAX) writes the upload id into upload_id[0..max). */
#define STRATA_S3C_HDRS_MAX 160
enum strata_s3c_result strata_s3c_mpu_create(struct strata_s3c *c, const char *bucket,
                                             const char *key, const char *const *headers,
                                             char *upload_id, size_t max,
                                             struct strata_s3c_error *e);
/* UploadPart of p's bytes as part_number; info (optional) gets its ETag. */
enum strata_s3c_result strata_s3c_mpu_part(struct strata_s3c *c, const struct strata_s3c_put *p,
                                           const char *upload_id, unsigned part_number,
                                           struct strata_s3c_obj *info,
                                           struct strata_s3c_error *e);
/* CompleteMultipartUpload: nparts parts with etags[i] the ETag of part
 * numbers[i] (ascending; numbers NULL: part i + 1), without quotes. */
struct strata_s3c_complete {
    const char *bucket, *key, *upload_id;
    const char *const *etags;
    const unsigned *numbers;
    size_t nparts;
    const char *const *headers; /* as in strata_s3c_put */
};
/* info (optional) gets the answer's ETag and version id. */
enum strata_s3c_result strata_s3c_mpu_complete(struct strata_s3c *c,
                                               const struct strata_s3c_complete *p,
                                               struct strata_s3c_obj *info,
                                               struct strata_s3c_error *e);
/* AbortMultipartUpload. */
enum strata_s3c_result strata_s3c_mpu_abort(struct strata_s3c *c, const char *bucket,
                                            const char *key, const char *upload_id,
                                            struct strata_s3c_error *e);
/* GetObjectLockConfiguration: *enabled when the bucket has Object Lock on
 * (an answer of ObjectLockConfigurationNotFoundError is OK, *enabled false). */
enum strata_s3c_result strata_s3c_lock_enabled(struct strata_s3c *c, const char *bucket,
                                               bool *enabled, struct strata_s3c_error *e);
/* CreateBucket (with Object Lock enabled when lock; no location
 * constraint: the endpoint's default region).  An existing bucket of these
 * keys answers BucketAlreadyOwnedByYou (OTHER, or OK in us-east-1). */
enum strata_s3c_result strata_s3c_create_bucket(struct strata_s3c *c, const char *bucket,
                                                bool lock, struct strata_s3c_error *e);
/* HeadBucket: OK when the bucket is there and these keys may use it. */
enum strata_s3c_result strata_s3c_head_bucket(struct strata_s3c *c, const char *bucket,
                                              struct strata_s3c_error *e);

/* ---- pure helpers (unit-tested) ---- */

/* The result class of an answer: HTTP status and S3 error code ("" when
 * none).  status 0 = no answer (RETRY). */
enum strata_s3c_result strata_s3c_classify(long status, const char *code);
/* <Error><Code/><Message/></Error> of an answer body into e (code and
 * message; left "" when absent or not XML). */
void strata_s3c_error_parse(const char *body, size_t len, struct strata_s3c_error *e);
/* A key URI-encoded for the path (SigV4's rules: A-Z a-z 0-9 - _ . ~ and
 * '/' kept, every other byte %XX); -1 when it does not fit out_max. */
int strata_s3c_key_encode(const char *key, char *out, size_t out_max);

#endif /* STRATA_SERVER_REMOTE_S3_CLIENT_H */
