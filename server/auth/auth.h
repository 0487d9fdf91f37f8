/*
 * auth.h - request authentication: SigV4 (Authorization header, presigned
 * query, all payload modes), the aws-chunked body decoder with chunk
 * signatures and trailers, and SigV2 for legacy clients.
 *
 * Pure functions of the request; no I/O, no MHD types, so unit tests and
 * fuzzers call them directly.  Thread-safe: the credential table is
 * read-only after load.
 */
#ifndef STRATA_SERVER_AUTH_H
#define STRATA_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "body_budget.h"

/* ---- errors ------------------------------------------------------------- */

/* Why auth refused a request.  Auth names the cause; the S3 layer decides
 * what the client is told (strata_s3_err_from_auth, server/s3proto/s3_error.c,
 * the one mapping to AWS's code, status and message). */
enum strata_auth_err {
    STRATA_AUTH_OK = 0,
    STRATA_AUTH_BAD_SIGNATURE,       /* the signature does not match */
    STRATA_AUTH_UNKNOWN_KEY,         /* no such access key */
    STRATA_AUTH_DISABLED_KEY,        /* a known access key, disabled */
    STRATA_AUTH_CLOCK_SKEW,          /* request date over 15 minutes off */
    STRATA_AUTH_EXPIRED,             /* presigned URL or POST policy out of its time */
    STRATA_AUTH_NO_DATE,             /* no valid Date or x-amz-date header */
    STRATA_AUTH_UNSIGNED_HEADER,     /* an x-amz-* header outside the signature */
    STRATA_AUTH_DENIED,              /* refused for another reason (see err_msg) */
    STRATA_AUTH_MALFORMED_HEADER,    /* SigV4 Authorization unparsable or wrong scope */
    STRATA_AUTH_MALFORMED_QUERY,     /* SigV4 presigned query parameters unparsable */
    STRATA_AUTH_BAD_ARGUMENT,        /* a bad value: payload hash, auth type, form field */
    STRATA_AUTH_MISSING_CONTENT_SHA, /* header-signed request without x-amz-content-sha256 */
    STRATA_AUTH_HEADERS_TOO_LARGE,   /* the string to sign would not fit */
    STRATA_AUTH_BAD_CHUNK,           /* aws-chunked framing broken */
    STRATA_AUTH_INCOMPLETE_BODY,     /* aws-chunked body ends early */
    STRATA_AUTH_OVER_BUDGET,         /* a chunk does not fit the body memory budget */
    STRATA_AUTH_BAD_POLICY,          /* POST policy document unparsable */
    STRATA_AUTH_POLICY_VIOLATION,    /* a POST form breaks its policy */
    STRATA_AUTH_OWNER_ONLY,          /* bucket-policy operation by a non-owner it allows */
    STRATA_AUTH_STORE,               /* metadata read failed (authz: STRATA_E* in *serr) */
    STRATA_AUTH_UNKNOWN_EMAIL,       /* an ACL grant to an e-mail address no user has */
    STRATA_AUTH_UNSUPPORTED,         /* an ACL Strata cannot grant (aws-exec-read) */
    STRATA_AUTH_INTERNAL,            /* allocation or crypto library failure */
    STRATA_AUTH__COUNT
};

/* ---- credentials -------------------------------------------------------- */

struct strata_cred {
    char access_key[128];
    char secret[128];
    char display_name[128];
    bool disabled; /* a "#strata:disabled" line: known, but refused */
    char email[128]; /* "" when the users file gives none */
};

struct strata_creds; /* immutable table of users */

/* Root user first, then the users of file (NULL for none): one user per
 * line, "ACCESS_KEY SECRET [DISPLAY NAME] [<EMAIL>]", '#' comments (the
 * e-mail address, in angle brackets, is what ACL grants by emailAddress=
 * name; it stays part of the line's name span below).  A line
 * "#strata:disabled ACCESS_KEY SECRET [NAME]" is a disabled user (an
 * older Strata reads it as a comment: the user is unknown, also refused).
 * Caller destroys.  The root user's display name is "root", or root_name
 * with strata_creds_load_named (--root-display-name). */
int strata_creds_load(const char *root_access, const char *root_secret, const char *file,
                      struct strata_creds **out, char *errmsg, size_t errmsg_len);
int strata_creds_load_named(const char *root_access, const char *root_secret,
                            const char *root_name, const char *file, struct strata_creds **out,
                            char *errmsg, size_t errmsg_len);
void strata_creds_destroy(struct strata_creds *c);
const struct strata_cred *strata_creds_find(const struct strata_creds *c, const char *access_key);
/* The user with this e-mail address (case-insensitive), or NULL. */
const struct strata_cred *strata_creds_find_email(const struct strata_creds *c, const char *email);
/* The table in its order (root first, then file order); i < count. */
size_t strata_creds_count(const struct strata_creds *c);
const struct strata_cred *strata_creds_at(const struct strata_creds *c, size_t i);

#define STRATA_CREDS_DISABLED_MARK "#strata:disabled "

/* One line of a users file, as strata_creds_load reads it.  Spans point
 * into the line (not NUL-terminated). */
enum strata_creds_line_kind {
    STRATA_CREDS_LINE_OTHER = 0, /* blank or comment */
    STRATA_CREDS_LINE_USER,
    STRATA_CREDS_LINE_DISABLED,  /* STRATA_CREDS_DISABLED_MARK user */
    STRATA_CREDS_LINE_BAD,       /* no secret */
};
struct strata_creds_line {
    const char *ak, *sk, *name;
    size_t ak_len, sk_len, name_len;
};
/* line without its newline. */
enum strata_creds_line_kind strata_creds_line_parse(const char *line,
                                                    struct strata_creds_line *out);

/* ---- the request as auth sees it --------------------------------------- */

struct strata_auth_hdr {
    const char *name; /* as received; compared case-insensitively */
    const char *value;
};

struct strata_auth_req {
    const char *method;      /* "GET" */
    const char *raw_path;    /* request target path exactly as sent, still %-encoded */
    const char *raw_query;   /* after '?', exactly as sent, or NULL/"" */
    const struct strata_auth_hdr *hdrs; /* every request header */
    size_t nhdrs;
    time_t now;              /* server time, for skew and presigned expiry */
    /* The bucket named by the Host header of a virtual-host style request
     * (not NUL-terminated), or NULL for path style.  SigV2 signs the
     * resource as "/" bucket raw_path, so a request cannot be replayed
     * against another bucket by changing Host. */
    const char *host_bucket;
    size_t host_bucket_len;
    /* The server's region (--region): a SigV4 credential scoped to another
     * is refused (SigV2 has none).  NULL: any region is accepted (unit
     * tests of the signature arithmetic alone). */
    const char *region;
};

enum strata_payload_mode {
    STRATA_PAYLOAD_NONE = 0,          /* no body expected (still may be empty-signed) */
    STRATA_PAYLOAD_SIGNED,            /* x-amz-content-sha256: hex; verify while streaming */
    STRATA_PAYLOAD_UNSIGNED,          /* UNSIGNED-PAYLOAD, presigned, SigV2 */
    STRATA_PAYLOAD_STREAMING_SIGNED,  /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER,   /* ...-PAYLOAD-TRAILER */
    STRATA_PAYLOAD_STREAMING_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

struct strata_auth_result {
    const struct strata_cred *cred; /* NULL for anonymous */
    bool anonymous;                 /* no credentials were presented */
    int payload_mode;               /* enum strata_payload_mode; for anonymous
                                       requests it follows x-amz-content-sha256
                                       (UNSIGNED when absent) */
    uint8_t payload_sha256[32];     /* with STRATA_PAYLOAD_SIGNED */
    /* streaming modes: what the chunk decoder needs */
    uint8_t signing_key[32];
    char seed_signature[65];
    char amz_date[17];               /* yyyymmddThhmmssZ */
    char scope[128];                 /* date/region/s3/aws4_request */
    uint64_t decoded_length;         /* x-amz-decoded-content-length, or UINT64_MAX */
    char trailer[64];                /* x-amz-trailer: e.g. "x-amz-checksum-crc32", or "" */
    /* With an error: AWS's own message for it when more specific than the
     * S3 code's default text ("Request has expired"), static storage or
     * err_buf, or NULL. */
    const char *err_msg;
    /* A credential scoped to another region than req->region: the answer
     * names the server's region (<Region>, x-amz-bucket-region) so SDKs
     * can sign again for it. */
    bool wrong_region;
    char err_buf[160];
};

/*
 * Authenticate.  Returns STRATA_AUTH_OK and fills out, or why not: UNKNOWN_KEY,
 * DISABLED_KEY, BAD_SIGNATURE, CLOCK_SKEW (> 15 min), EXPIRED (presigned
 * URL), NO_DATE, UNSIGNED_HEADER, MALFORMED_HEADER, MALFORMED_QUERY,
 * BAD_ARGUMENT, MISSING_CONTENT_SHA, DENIED, with out->err_msg when AWS
 * words it more precisely than the S3 code's default text.
 * A credential for another region than req->region is refused before the
 * access key is looked up, as AWS does: MALFORMED_HEADER (header) or
 * MALFORMED_QUERY (presigned) with out->wrong_region set and AWS's message
 * ("... the region 'X' is wrong; expecting 'Y'").
 * Signatures are compared in constant time.  A request with no credentials
 * at all returns STRATA_AUTH_OK with out->anonymous set; the caller decides.
 */
enum strata_auth_err strata_auth_verify(const struct strata_creds *creds,
                                        const struct strata_auth_req *req,
                                        struct strata_auth_result *out);

/* ---- aws-chunked body decoder ------------------------------------------ */

struct strata_chunked;

/* For the STREAMING_* payload modes.  Caller destroys. */
int strata_chunked_create(const struct strata_auth_result *auth, struct strata_chunked **out);
void strata_chunked_destroy(struct strata_chunked *c);

/* Charge the decoder's chunk buffer to budget (may be NULL: unlimited).
 * A signed chunk that does not fit fails the feed with OVER_BUDGET; what was
 * taken is given back by strata_chunked_destroy.  Call before the first
 * feed. */
void strata_chunked_set_budget(struct strata_chunked *c, struct strata_body_budget *budget);

/*
 * Feed raw body bytes in pieces of any size; decoded payload bytes are
 * passed to out_cb as they are verified (a chunk's bytes only after its
 * signature checks out).  A non-zero return of out_cb stops decoding and is
 * returned as -1 with *err left STRATA_AUTH_OK.  Bad framing -> BAD_CHUNK
 * or INCOMPLETE_BODY; bad chunk signature -> BAD_SIGNATURE; a chunk over
 * the budget -> OVER_BUDGET.  Returns 0, or -1 with *err set.
 */
int strata_chunked_feed(struct strata_chunked *c, const void *data, size_t len,
                        int (*out_cb)(void *ud, const void *buf, size_t len), void *ud,
                        enum strata_auth_err *err);
/* After the last byte: the final 0-size chunk and trailers (with their
 * signature in the signed-trailer mode) must have been seen. */
int strata_chunked_finish(struct strata_chunked *c, enum strata_auth_err *err);
/* A trailer's value after finish (e.g. "x-amz-checksum-crc32"), or NULL. */
const char *strata_chunked_trailer(const struct strata_chunked *c, const char *name);
uint64_t strata_chunked_decoded_bytes(const struct strata_chunked *c);

/* ---- presigning (tests and the CLI's "presign" command) ----------------- */

/* The SigV4 signature (hex) of a canonical request whose SHA-256 is
 * creq_hex, signed by cred at amz_date ("yyyymmddThhmmssZ") for region and
 * the s3 service: what strata_presign_v4 and the S3 client (remote/) sign
 * with.  0, STRATA_EINVAL or STRATA_EINTERNAL. */
int strata_sigv4_signature(const struct strata_cred *cred, const char *amz_date,
                           const char *region, const char *creq_hex, char out_hex[65]);

/* Writes "path?X-Amz-...&X-Amz-Signature=..." for a GET of raw_path.
 * STRATA_EINVAL unless 1 <= expires_s <= 7 days (the verifier's range). */
int strata_presign_v4(const struct strata_cred *cred, const char *method, const char *host,
                      const char *raw_path, const char *region, time_t now, unsigned expires_s,
                      char *out, size_t out_len);

#endif /* STRATA_SERVER_AUTH_H */
