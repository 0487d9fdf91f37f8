/*
 * sigv4_presign.c - strata_presign_v4: builds a SigV4 presigned URL
 * (path + query) the way the AWS SDKs do, signing only "host" and an
 * UNSIGNED-PAYLOAD.  Used by tests and the CLI's "presign" command; the
 * verifier (sigv4.c) is the other half.  Reentrant.  Also the signature
 * of any signer's canonical request (strata_sigv4_signature).
 */
#include "sigv4_internal.h"

#include <openssl/crypto.h>

#include <stdio.h>
#include <string.h>

#include "strata/err.h"

int strata_sigv4_signature(const struct strata_cred *cred, const char *amz_date,
                           const char *region, const char *creq_hex, char out_hex[65])
{
    char date8[9], scope[128];
    if (!cred || !amz_date || !region || strlen(amz_date) != 16)
        return STRATA_EINVAL;
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    int n = snprintf(scope, sizeof(scope), "%s/%s/s3/aws4_request", date8, region);
    if (n < 0 || (size_t)n >= sizeof(scope))
        return STRATA_EINVAL;
    uint8_t key[32];
    int rc = strata_sigv4__signing_key(cred, date8, region, strlen(region), key);
    if (rc == 0)
        rc = strata_sigv4__sign(key, amz_date, scope, creq_hex, out_hex);
    OPENSSL_cleanse(key, sizeof(key));
    return rc;
}

int strata_presign_v4(const struct strata_cred *cred, const char *method, const char *host,
                      const char *raw_path, const char *region, time_t now, unsigned expires_s,
                      char *out, size_t out_len)
{
    if (!cred || !method || !host || !raw_path || !region || !out ||
        expires_s < 1 || expires_s > STRATA_SIGV4_MAX_EXPIRES_S || strlen(region) >= 64 || !*region)
        return STRATA_EINVAL;
    char amz_date[17], date8[9], scope[128], cred_str[256], cred_enc[768];
    strata_sigv4__fmt_iso8601(now, amz_date);
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    int n = snprintf(scope, sizeof(scope), "%s/%s/s3/aws4_request", date8, region);
    if (n < 0 || (size_t)n >= sizeof(scope))
        return STRATA_EINVAL;
    n = snprintf(cred_str, sizeof(cred_str), "%s/%s", cred->access_key, scope);
    if (n < 0 || (size_t)n >= sizeof(cred_str))
        return STRATA_EINVAL;
    long el = strata_url_encode(cred_str, (size_t)n, cred_enc, sizeof(cred_enc) - 1, false);
    if (el < 0)
        return STRATA_EINVAL;
    cred_enc[el] = '\0';

    char query[1024];
    n = snprintf(query, sizeof(query),
                 "X-Amz-Algorithm=" STRATA_SIGV4_ALGO "&X-Amz-Credential=%s&X-Amz-Date=%s"
                 "&X-Amz-Expires=%u&X-Amz-SignedHeaders=host",
                 cred_enc, amz_date, expires_s);
    if (n < 0 || (size_t)n >= sizeof(query))
        return STRATA_EINVAL;

    struct strata_auth_req req = {
        .method = method, .raw_path = raw_path, .raw_query = query, .hdrs = NULL, .nhdrs = 0,
        .now = now,
    };
    char creq[65], sig[65];
    if (strata_sigv4__canonical_hash(&req, "host", 4, NULL, host, "UNSIGNED-PAYLOAD", creq) !=
        STRATA_AUTH_OK)
        return STRATA_EINVAL;
    if (strata_sigv4_signature(cred, amz_date, region, creq, sig) != 0)
        return STRATA_EINTERNAL;
    n = snprintf(out, out_len, "%s?%s&X-Amz-Signature=%s", *raw_path ? raw_path : "/", query,
                 sig);
    if (n < 0 || (size_t)n >= out_len)
        return STRATA_ETOOBIG;
    return 0;
}
