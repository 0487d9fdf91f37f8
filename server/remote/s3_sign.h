/*
 * s3_sign.h - AWS Signature Version 4 of the S3 client's requests
 * (s3_client.c), computed here rather than by libcurl: libcurl 7.88's
 * signer sorts the canonical headers as "name:value" lines, so a header
 * whose name extends another's with '-' or a digit ("x-amz-server-side-
 * encryption-aws-kms-key-id" after "x-amz-server-side-encryption",
 * "x-amz-meta-a-b" after "x-amz-meta-a") comes first, and it signs header
 * lines it does not send ("Expect:"); an S3 that checks the signature as
 * AWS does (radosgw, AWS) refuses such requests.
 */
#ifndef STRATA_SERVER_REMOTE_S3_SIGN_H
#define STRATA_SERVER_REMOTE_S3_SIGN_H

#include <stddef.h>
#include <time.h>

struct curl_slist;

/*
 * Signs a request of method to url (http[s]://HOST[:PORT]/PATH[?QUERY],
 * path and query already in SigV4's canonical form) whose header lines
 * are *hdrs ("Name: value"; an empty value is a line libcurl does not
 * send, left unsigned; x-amz-content-sha256 among them gives the payload
 * hash): appends Host, X-Amz-Date (of now) and Authorization to *hdrs.
 * 0, or -1 (bad URL, out of memory: *hdrs may have grown).
 */
int strata_s3c_sign(const char *method, const char *url, const char *access_key,
                    const char *secret_key, const char *region, time_t now,
                    struct curl_slist **hdrs);

#endif /* STRATA_SERVER_REMOTE_S3_SIGN_H */
