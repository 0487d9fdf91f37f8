/*
 * err.h - Strata's internal error codes.
 *
 * Every function in erasure/, meta/ and ilm/ returns int: 0 on success and a
 * negative STRATA_E* code on failure.  The codes are defined once here, as an
 * X-macro table; server/ maps them to S3 errors in exactly one place.
 * errno never crosses a module boundary: it is mapped at the syscall or
 * io_uring boundary and, when useful, carried in struct strata_errinfo.
 */
#ifndef STRATA_ERR_H
#define STRATA_ERR_H

#include <stddef.h>

/* X(NAME, value, message) */
#define STRATA_ERR_MAP(X)                                                       \
    X(NOTFOUND, -1, "not found")                                                \
    X(EXISTS, -2, "already exists")                                             \
    X(INVAL, -3, "invalid argument")                                            \
    X(NOSPC, -4, "no space left on drive")                                      \
    X(IO, -5, "input/output error")                                             \
    X(CORRUPT, -6, "data corrupt")                                              \
    X(QUORUM, -7, "quorum not reached")                                         \
    X(BUSY, -8, "busy, retry later")                                            \
    X(NOMEM, -9, "out of memory")                                               \
    X(INTERNAL, -10, "internal error")                                          \
    X(NOTEMPTY, -11, "not empty")                                               \
    X(TOOBIG, -12, "too large")                                                 \
    X(RANGE, -13, "range not satisfiable")                                      \
    X(FORMAT, -14, "drive format mismatch")                                     \
    X(BADDIGEST, -15, "Content-MD5 mismatch")                                   \
    X(SHA256MISMATCH, -16, "payload SHA-256 mismatch")                          \
    X(CHECKSUM, -17, "checksum mismatch")                                       \
    X(PRECOND, -18, "precondition failed")                                      \
    X(LOCKED, -19, "object is locked")                                          \
    X(NOTIMPL, -20, "not implemented")                                          \
    X(METHOD, -21, "method not allowed on this version")                        \
    X(INCOMPLETE, -22, "body shorter than announced")                           \
    X(PARTORDER, -23, "parts not in ascending order")                           \
    X(BADPART, -24, "part missing or its ETag/checksum differs")                \
    X(TOOSMALL, -25, "part smaller than the minimum part size")                 \
    X(ARCHIVED, -26, "data on an archive tier: restore it first")

enum strata_err {
    STRATA_OK = 0,
#define STRATA__ERR_ENUM(name, val, msg) STRATA_E##name = (val),
    STRATA_ERR_MAP(STRATA__ERR_ENUM)
#undef STRATA__ERR_ENUM
};

/* A code's message and name, from the one table of STRATA_ERR_MAP
 * (indexed by -code); an unknown code's when err is none of them. */
struct strata__err_text {
    const char *msg, *name;
};
static inline const struct strata__err_text *strata__err_text(int err)
{
    static const struct strata__err_text rows[] = {[0] = {"success", "OK"},
#define STRATA__ERR_ROW(name, val, msg) [-(val)] = {msg, "E" #name},
                                                   STRATA_ERR_MAP(STRATA__ERR_ROW)
#undef STRATA__ERR_ROW
    };
    static const struct strata__err_text unknown = {"unknown error", "EUNKNOWN"};
    int n = (int)(sizeof(rows) / sizeof(rows[0]));
    return err <= 0 && err > -n && rows[-err].msg ? &rows[-err] : &unknown;
}

/* Human text for a code; never NULL.  This function can't fail. */
static inline const char *strata_strerror(int err)
{
    return strata__err_text(err)->msg;
}

/* "ENOTFOUND" style name for logs; never NULL. */
static inline const char *strata_errname(int err)
{
    return strata__err_text(err)->name;
}

/*
 * Optional detail for an error, filled by functions that take it (may be
 * NULL).  drive is the index of the drive at fault, or -1.
 */
struct strata_errinfo {
    int sys_errno;
    int drive;
    char msg[512];
};

#endif /* STRATA_ERR_H */
