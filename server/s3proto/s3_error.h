/*
 * s3_error.h - S3 error codes (from s3_errors.def) and the mappings from
 * Strata's internal codes and from auth's refusals to them.
 */
#ifndef STRATA_SERVER_S3_ERROR_H
#define STRATA_SERVER_S3_ERROR_H

#include "auth.h"

enum s3_err {
    S3E_NONE = 0,
#define X(code, status, msg) S3E_##code,
#include "s3_errors.def"
#undef X
    S3E__COUNT
};

const char *strata_s3_err_code(enum s3_err e);    /* "NoSuchKey" */
int strata_s3_err_status(enum s3_err e);          /* 404 */
const char *strata_s3_err_message(enum s3_err e); /* never empty */

/* What the request was doing, for codes whose S3 meaning depends on it
 * (NOTFOUND is NoSuchBucket for a bucket, NoSuchKey for a key, ...). */
enum s3_ctx {
    S3CTX_BUCKET,
    S3CTX_OBJECT,
    S3CTX_VERSION,
    S3CTX_UPLOAD,
};
enum s3_err strata_s3_err_from_strata(int strata_err, enum s3_ctx ctx);

/* Why auth refused (server/auth) -> the S3 error AWS answers for it, e.g.
 * BAD_SIGNATURE -> SignatureDoesNotMatch, EXPIRED -> AccessDenied.  The one
 * place auth's errors become S3 codes; STRATA_AUTH_OK -> S3E_NONE. */
enum s3_err strata_s3_err_from_auth(enum strata_auth_err e);

#endif /* STRATA_SERVER_S3_ERROR_H */
