/*
 * s3_error.c - the S3 error table (s3_errors.def) and the one mapping from
 * Strata's internal STRATA_E* codes to S3 errors.  Pure and thread-safe.
 */
#include "s3_error.h"

#include <stddef.h>

#include "strata/err.h"
#include "srv_err.h"

static const struct {
    const char *code;
    int status;
    const char *msg;
} table[S3E__COUNT] = {
    [S3E_NONE] = {"OK", 200, "OK"},
#define X(c, st, m) [S3E_##c] = {#c, st, m},
#include "s3_errors.def"
#undef X
};

const char *strata_s3_err_code(enum s3_err e)
{
    /* AWS spells the KMS codes with a dot, which an identifier cannot hold. */
    if (e == S3E_KMS_DisabledException)
        return "KMS.DisabledException";
    if (e == S3E_KMS_NotFoundException)
        return "KMS.NotFoundException";
    if ((unsigned)e >= S3E__COUNT)
        e = S3E_InternalError;
    return table[e].code;
}

int strata_s3_err_status(enum s3_err e)
{
    if ((unsigned)e >= S3E__COUNT)
        e = S3E_InternalError;
    return table[e].status;
}

const char *strata_s3_err_message(enum s3_err e)
{
    if ((unsigned)e >= S3E__COUNT)
        e = S3E_InternalError;
    return table[e].msg;
}

enum s3_err strata_s3_err_from_strata(int err, enum s3_ctx ctx)
{
    switch (err) {
    case 0:
        return S3E_NONE;
    case STRATA_ENOTFOUND:
        switch (ctx) {
        case S3CTX_BUCKET: return S3E_NoSuchBucket;
        case S3CTX_VERSION: return S3E_NoSuchVersion;
        case S3CTX_UPLOAD: return S3E_NoSuchUpload;
        case S3CTX_OBJECT: break;
        }
        return S3E_NoSuchKey;
    case STRATA_EEXISTS:
        /* A bucket the caller owns; handlers compare owners and answer
         * BucketAlreadyExists themselves for someone else's bucket. */
        return ctx == S3CTX_BUCKET ? S3E_BucketAlreadyOwnedByYou : S3E_PreconditionFailed;
    case STRATA_EINVAL: return S3E_InvalidArgument;
    case STRATA_ENOSPC: return S3E_ServiceUnavailable;
    case STRATA_EQUORUM: return S3E_ServiceUnavailable;
    case STRATA_EBUSY: return S3E_SlowDown;
    case STRATA_ENOTEMPTY: return S3E_BucketNotEmpty;
    case STRATA_ETOOBIG: return S3E_EntityTooLarge;
    case STRATA_ERANGE: return S3E_InvalidRange;
    case STRATA_EBADDIGEST: return S3E_BadDigest;
    case STRATA_ESHA256MISMATCH: return S3E_XAmzContentSHA256Mismatch;
    case STRATA_ECHECKSUM: return S3E_BadDigest;
    case STRATA_EPRECOND: return S3E_PreconditionFailed;
    case STRATA_ELOCKED: return S3E_AccessDenied;
    case STRATA_ENOTIMPL: return S3E_NotImplemented;
    case STRATA_EMETHOD: return S3E_MethodNotAllowed;
    case STRATA_EINCOMPLETE: return S3E_IncompleteBody;
    case STRATA_EPARTORDER: return S3E_InvalidPartOrder;
    case STRATA_EBADPART: return S3E_InvalidPart;
    case STRATA_ETOOSMALL: return S3E_EntityTooSmall;
    case STRATA_EARCHIVED: return S3E_InvalidObjectState;
    case STRATA_EIO:
    case STRATA_ECORRUPT:
    case STRATA_ENOMEM:
    case STRATA_EINTERNAL:
    case STRATA_EFORMAT:
        return S3E_InternalError;
    default:
        return S3E_InternalError;
    }
}

const char *strata_s3_err_detail(int err, enum s3_err e)
{
    switch (err) {
    case STRATA_ENOSPC:
        return "The storage is full: no space left on the drives. Free space or add drives.";
    case STRATA_EQUORUM:
        return "Not enough drives are online to serve this request; please retry.";
    case STRATA_ECHECKSUM:
        return "The checksum you specified did not match what we received.";
    case STRATA_EARCHIVED:
        return "The operation is not valid for the object's storage class";
    default:
        return strata_s3_err_message(e);
    }
}

enum s3_err strata_s3_err_from_auth(enum strata_auth_err e)
{
    switch (e) {
    case STRATA_AUTH_OK:
        return S3E_NONE;
    case STRATA_AUTH_BAD_SIGNATURE:
        return S3E_SignatureDoesNotMatch;
    /* AWS answers InvalidAccessKeyId for an inactive key too. */
    case STRATA_AUTH_UNKNOWN_KEY:
    case STRATA_AUTH_DISABLED_KEY:
        return S3E_InvalidAccessKeyId;
    case STRATA_AUTH_CLOCK_SKEW:
        return S3E_RequestTimeTooSkewed;
    /* An expired presigned URL or POST policy, a missing date and an
     * unsigned x-amz-* header are all AccessDenied on AWS, told apart only
     * by the message. */
    case STRATA_AUTH_EXPIRED:
    case STRATA_AUTH_NO_DATE:
    case STRATA_AUTH_UNSIGNED_HEADER:
    case STRATA_AUTH_DENIED:
    case STRATA_AUTH_POLICY_VIOLATION:
        return S3E_AccessDenied;
    case STRATA_AUTH_MALFORMED_HEADER:
        return S3E_AuthorizationHeaderMalformed;
    case STRATA_AUTH_MALFORMED_QUERY:
        return S3E_AuthorizationQueryParametersError;
    case STRATA_AUTH_BAD_ARGUMENT:
        return S3E_InvalidArgument;
    case STRATA_AUTH_MISSING_CONTENT_SHA:
        return S3E_InvalidRequest;
    case STRATA_AUTH_HEADERS_TOO_LARGE:
        return S3E_RequestHeaderSectionTooLarge;
    case STRATA_AUTH_BAD_CHUNK:
        return S3E_InvalidRequest;
    case STRATA_AUTH_INCOMPLETE_BODY:
        return S3E_IncompleteBody;
    case STRATA_AUTH_OVER_BUDGET:
        return S3E_SlowDown;
    case STRATA_AUTH_BAD_POLICY:
        return S3E_InvalidPolicyDocument;
    /* AWS answers 405 to a non-owner a bucket policy would allow to
     * manage that policy. */
    case STRATA_AUTH_UNKNOWN_EMAIL:
        return S3E_UnresolvableGrantByEmailAddress;
    case STRATA_AUTH_UNSUPPORTED:
        return S3E_NotImplemented;
    case STRATA_AUTH_OWNER_ONLY:
        return S3E_MethodNotAllowed;
    /* Callers with the STRATA_E* code map it (strata_s3_err_from_strata). */
    case STRATA_AUTH_STORE:
    case STRATA_AUTH_INTERNAL:
    case STRATA_AUTH__COUNT:
        break;
    }
    return S3E_InternalError;
}
