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
