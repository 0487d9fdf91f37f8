/*
 * base64.c - see base64.h.
 */
#include "base64.h"

#include <openssl/evp.h>
#include <string.h>

int strata_b64_decode(const char *in, uint8_t *out, size_t out_max)
{
    size_t n = strlen(in);
    if (n == 0)
        return 0;
    if (n % 4 != 0)
        return -1;
    size_t pad = 0;
    if (in[n - 1] == '=')
        pad++;
    if (in[n - 2] == '=')
        pad++;
    size_t need = n / 4 * 3;
    if (need > out_max + 2)
        return -1; /* too long to fit even after padding is removed */
    uint8_t tmp[need];
    int r = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)n);
    if (r < 0 || (size_t)r != need)
        return -1;
    size_t len = need - pad;
    if (len > out_max)
        return -1;
    memcpy(out, tmp, len);
    return (int)len;
}

int strata_b64_encode(const uint8_t *in, size_t len, char *out, size_t out_max)
{
    if (out_max < 4 * ((len + 2) / 3) + 1)
        return -1;
    return EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}
