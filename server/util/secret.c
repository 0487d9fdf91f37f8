/*
 * secret.c - wipe-then-free of secrets (secret.h).
 */
#include "secret.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

void strata_secret_free(void *p, size_t len)
{
    if (p)
        OPENSSL_cleanse(p, len);
    free(p);
}

void strata_secret_str_free(char *s)
{
    strata_secret_free(s, s ? strlen(s) : 0);
}
