/*
 * srv_err.h - daemon-private additions to s3_error.h (kept out of the
 * shared header so the contract stays as agreed).
 */
#ifndef STRATA_SERVER_SRV_ERR_H
#define STRATA_SERVER_SRV_ERR_H

#include "s3_error.h"

/* The Message to send for S3 error e caused by internal code err: a more
 * specific text where the internal code says more (NOSPC: storage full),
 * else the table's message.  Never NULL or empty. */
const char *strata_s3_err_detail(int err, enum s3_err e);

#endif /* STRATA_SERVER_SRV_ERR_H */
