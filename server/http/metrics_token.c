/*
 * metrics_token.c - the static bearer token of /metrics
 * (--metrics-token-file; contract in srv.h).  Prometheus sends it as
 * "Authorization: Bearer TOKEN" (its bearer_token_file setting), so a
 * scraper needs no SigV4 signer.  Loaded once at start; compared in
 * constant time from any connection thread.
 */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "strata/err.h"

#define TOKEN_MIN 32
#define TOKEN_MAX 255

int strata_metrics_token_load(const char *path, char **out, char *errmsg, size_t errmsg_len)
{
    *out = NULL;
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(errmsg, errmsg_len, "%s: %s", path, strerror(errno));
        return STRATA_EIO;
    }
    /* A longer first line fills the buffer without its newline: too long. */
    char line[TOKEN_MAX + 3] = "";
    bool ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    size_t n = strcspn(line, "\r\n");
    line[n] = '\0';
    for (size_t i = 0; ok && i < n; i++)
        ok = line[i] > ' ' && line[i] < 0x7f;
    if (!ok || n < TOKEN_MIN || n > TOKEN_MAX) {
        OPENSSL_cleanse(line, sizeof(line));
        snprintf(errmsg, errmsg_len,
                 "%s: the first line must be a token of %d to %d printable characters "
                 "without spaces (e.g. openssl rand -hex 32)", path, TOKEN_MIN, TOKEN_MAX);
        return STRATA_EINVAL;
    }
    *out = strdup(line);
    OPENSSL_cleanse(line, sizeof(line));
    return *out ? 0 : STRATA_ENOMEM;
}

void strata_metrics_token_free(char *token)
{
    if (token) {
        OPENSSL_cleanse(token, strlen(token));
        free(token);
    }
}

bool strata_metrics_bearer_ok(const char *token, const char *authorization)
{
    if (!token || !authorization || strncmp(authorization, "Bearer ", 7) != 0)
        return false;
    const char *given = authorization + 7;
    size_t n = strlen(token);
    /* Length first (not secret: fixed by the operator), then the bytes in
     * constant time. */
    return strlen(given) == n && CRYPTO_memcmp(given, token, n) == 0;
}
