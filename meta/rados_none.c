/*
 * rados_none.c - the `strata rados` entry points of a build without
 * librados (CMake did not find it): they say so.  With librados they are
 * meta/rados/connect.c's.
 */
#include "meta_internal.h"

#include <stdio.h>
#include <string.h>

#ifndef STRATA_HAVE_RADOS
static int no_rados(char *msg, size_t cap)
{
    if (msg && cap)
        snprintf(msg, cap, "this strata was built without librados (install librados-dev)");
    return STRATA_ENOTIMPL;
}

int strata_meta_rados_init(const struct strata_rados_opts *o, char *msg, size_t cap)
{
    (void)o;
    return no_rados(msg, cap);
}

int strata_meta_rados_check(const struct strata_rados_opts *o, char *msg, size_t cap)
{
    (void)o;
    return no_rados(msg, cap);
}

int strata_meta_open_rados(const struct strata_rados_opts *ro, const struct strata_meta_opts *opts,
                           struct strata_meta **out, struct strata_errinfo *ei)
{
    (void)ro;
    (void)opts;
    *out = NULL;
    return no_rados(ei ? ei->msg : NULL, ei ? sizeof(ei->msg) : 0);
}

int strata_audit_verify_rados(const struct strata_rados_opts *o, struct strata_audit_verify *out)
{
    (void)o;
    memset(out, 0, sizeof(*out));
    return STRATA_ENOTIMPL;
}
#endif
