/*
 * index.c - the names of index shard entries (index.h; RADOS.md, "Keys
 * of an index shard"): bytes 0x01 and 0x02 of a key become 0x02 0x01 and
 * 0x02 0x02, 0x01 ends the key, so escaped keys sort as the raw keys do
 * and never hold a NUL (start_after and filter_prefix are C strings).
 */
#include "index.h"
#include "meta_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "strata/erasure.h"

void strata_meta__rados_idx_oid(char oid[48], uint64_t inc, unsigned shard)
{
    snprintf(oid, 48, "idx.%016" PRIx64 ".%u.%u", inc, (unsigned)RADOS_IDX_GEN, shard);
}

unsigned strata_meta__rados_idx_shard(const char *key, size_t len)
{
    return strata_crc32c(0, key, len) & (RADOS_IDX_SHARDS - 1);
}

static int nib(char c);

/* The escaped key[0..n) at out (NUL-terminated); its length. */
static size_t escape(char *out, const char *key, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c == 0x01 || c == 0x02)
            out[o++] = 0x02;
        out[o++] = (char)c;
    }
    out[o] = 0;
    return o;
}

size_t strata_meta__rados_ikey_prefix(char *out, char kind, const char *key, size_t n)
{
    out[0] = kind;
    out[1] = '/';
    return 2 + escape(out + 2, key, n);
}

size_t strata_meta__rados_ikey(char *out, char kind, const char *key, size_t n)
{
    size_t o = strata_meta__rados_ikey_prefix(out, kind, key, n);
    out[o++] = 0x01;
    out[o] = 0;
    return o;
}

/* Unescape from p up to the end byte (ikey_parse). */
static size_t unescape(const char *p, char *key, size_t cap, const char **rest)
{
    size_t o = 0;
    for (; *p; p++) {
        if (*p == 0x01) {
            key[o] = 0;
            *rest = p + 1;
            return o;
        }
        if (*p == 0x02 && (p[1] == 0x01 || p[1] == 0x02))
            p++;
        if (o + 1 >= cap)
            return 0;
        key[o++] = *p;
    }
    return 0;
}

size_t strata_meta__rados_ikey_parse(const char *ik, char *key, size_t cap, const char **rest)
{
    *rest = NULL;
    if (!ik[0] || ik[1] != '/')
        return 0;
    return unescape(ik + 2, key, cap, rest);
}

size_t strata_meta__rados_skey(char *out, char kind, const char *key, size_t n,
                               const uint8_t sk[16])
{
    size_t o = strata_meta__rados_ikey(out, kind, key, n);
    strata_meta__rados_sk_hex(sk, out + o);
    return o + 32;
}

void strata_meta__rados_hex16(uint64_t v, char out[17])
{
    snprintf(out, 17, "%016" PRIx64, v);
}

size_t strata_meta__rados_ekey_time(char *out, uint64_t ns)
{
    out[0] = 'e';
    out[1] = '/';
    strata_meta__rados_hex16(ns, out + 2);
    return 18;
}

size_t strata_meta__rados_ekey(char *out, const char *key, size_t n, const uint8_t sk[16])
{
    size_t o = strata_meta__rados_ekey_time(out, (uint64_t)strata_meta__sortkey_mtime(sk));
    out[o++] = 0x01;
    o += escape(out + o, key, n);
    out[o++] = 0x01;
    strata_meta__rados_sk_hex(sk, out + o);
    return o + 32;
}

size_t strata_meta__rados_ekey_parse(const char *ek, char *key, size_t cap, uint64_t *ns,
                                     uint8_t sk[16])
{
    if (strncmp(ek, "e/", 2) != 0 || strlen(ek) < 19 || ek[18] != 0x01)
        return 0;
    uint64_t v = 0;
    for (int i = 2; i < 18; i++) {
        int d = nib(ek[i]);
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    const char *rest;
    size_t kl = unescape(ek + 19, key, cap, &rest);
    if (!rest || strata_meta__rados_sk_parse(rest, sk))
        return 0;
    *ns = v;
    return kl;
}

void strata_meta__rados_sk_hex(const uint8_t sk[16], char out[33])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hx[sk[i] >> 4];
        out[2 * i + 1] = hx[sk[i] & 15];
    }
    out[32] = 0;
}

static int nib(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int strata_meta__rados_sk_parse(const char *hex, uint8_t sk[16])
{
    for (int i = 0; i < 16; i++) {
        int a = nib(hex[2 * i]), b = a < 0 ? -1 : nib(hex[2 * i + 1]);
        if (b < 0)
            return -1;
        sk[i] = (uint8_t)(a << 4 | b);
    }
    return hex[32] == 0 ? 0 : -1;
}
