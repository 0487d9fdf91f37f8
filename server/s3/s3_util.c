/*
 * s3_util.c - pure helpers of the S3 front end (see s3_util.h).  No I/O and
 * no globals; called from connection threads and from unit tests.
 */
#include "s3_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "http_date.h"
#include "sbuf.h"
#include "url.h"
#include "strata/erasure.h"
#include "strata/meta.h"

bool strata_s3_bucket_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 3 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
            return false;
        if (c == '.' && i + 1 < n && (name[i + 1] == '.' || name[i + 1] == '-'))
            return false;
        if (c == '-' && i + 1 < n && name[i + 1] == '.')
            return false;
    }
    if (!isalnum((unsigned char)name[0]) || !isalnum((unsigned char)name[n - 1]))
        return false;
    if (strncmp(name, "xn--", 4) == 0 || strncmp(name, "sthree-", 7) == 0)
        return false;
    if ((n > 8 && strcmp(name + n - 8, "-s3alias") == 0) ||
        (n > 7 && strcmp(name + n - 7, "--ol-s3") == 0))
        return false;
    /* An IPv4 address looks like a host, so AWS refuses it. */
    unsigned a, b, c, d;
    char tail;
    if (sscanf(name, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4)
        return false;
    return true;
}

bool strata_s3_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        unsigned n, cp, min;
        if (c >= 0xC2 && c <= 0xDF)
            n = 1, cp = c & 0x1F, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 2, cp = c & 0x0F, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3, cp = c & 0x07, min = 0x10000;
        else
            return false; /* a continuation byte, C0/C1 or F5-FF lead */
        for (unsigned i = 0; i < n; i++, p++) {
            if ((*p & 0xC0) != 0x80)
                return false; /* also stops at the terminating NUL */
            cp = (cp << 6) | (*p & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
    }
    return true;
}

/* Parses a decimal uint64 at *p; advances p.  -1 when no digits/overflow. */
static int parse_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    while (isdigit((unsigned char)*s)) {
        unsigned dgt = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - dgt) / 10)
            return -1;
        v = v * 10 + dgt;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

int strata_s3_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!hdr)
        return 0;
    while (*hdr == ' ')
        hdr++;
    if (strncasecmp(hdr, "bytes=", 6) != 0)
        return 0; /* other units are ignored, as AWS does */
    const char *p = hdr + 6;
    while (*p == ' ')
        p++;
    if (strchr(p, ','))
        return 0; /* several ranges: AWS answers with the whole object */
    uint64_t a = 0, b = 0;
    bool has_a = false, has_b = false;
    if (isdigit((unsigned char)*p)) {
        if (parse_u64(&p, &a) != 0)
            return 0;
        has_a = true;
    }
    if (*p != '-')
        return 0;
    p++;
    if (isdigit((unsigned char)*p)) {
        if (parse_u64(&p, &b) != 0)
            return 0;
        has_b = true;
    }
    while (*p == ' ')
        p++;
    if (*p != '\0' || (!has_a && !has_b))
        return 0;
    if (!has_a) { /* suffix: the last b bytes */
        if (b == 0 || size == 0)
            return -1;
        if (b > size)
            b = size;
        *off = size - b;
        *len = b;
        return 1;
    }
    if (has_b && b < a)
        return 0; /* syntactically invalid: ignored (RFC 7233 2.1) */
    if (a >= size)
        return -1;
    if (!has_b || b >= size)
        b = size - 1;
    *off = a;
    *len = b - a + 1;
    return 1;
}

bool strata_s3_etag_list_match(const char *list, const char *etag)
{
    size_t elen = strlen(etag);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        bool quoted = *p == '"';
        if (quoted)
            p++;
        const char *start = p;
        while (*p && (quoted ? *p != '"' : (*p != ',' && *p != ' ')))
            p++;
        if ((size_t)(p - start) == elen && strncmp(start, etag, elen) == 0)
            return true;
        if (quoted && *p == '"')
            p++;
    }
    return false;
}

int strata_s3_cond_eval(const struct strata_s3_cond *c, const char *etag, time_t mtime)
{
    time_t t;
    /* Step 1 and 2: If-Match, else If-Unmodified-Since. */
    if (c->if_match) {
        if (!strata_s3_etag_list_match(c->if_match, etag))
            return 412;
    } else if (c->if_unmodified_since && strata_http_date_parse(c->if_unmodified_since, &t) == 0) {
        if (mtime > t)
            return 412;
    }
    /* Step 3 and 4: If-None-Match, else If-Modified-Since. */
    if (c->if_none_match) {
        if (strata_s3_etag_list_match(c->if_none_match, etag))
            return 304;
    } else if (c->if_modified_since && strata_http_date_parse(c->if_modified_since, &t) == 0) {
        if (mtime <= t)
            return 304;
    }
    return 0;
}

int strata_s3_query_parse(char *buf, struct strata_qparam *out, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    if (!buf)
        return 0;
    for (char *tok = strtok_r(buf, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
        if (n == max)
            return -1;
        char *eq = strchr(tok, '=');
        char *val = tok + strlen(tok); /* "" inside buf: decoding writes to it */
        if (eq) {
            *eq = '\0';
            val = eq + 1;
        }
        if (strata_url_decode_str(tok, true) != 0 || strata_url_decode_str(val, true) != 0)
            return -1;
        out[n].name = tok;
        out[n].value = val;
        n++;
    }
    return (int)n;
}

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

/* Finds the first "{x...y}" in arg; fills positions and bounds. */
static int find_range(const char *arg, const char **lb, const char **rb, char *lo, char *hi,
                      size_t cap)
{
    const char *l = strchr(arg, '{');
    if (!l)
        return 0;
    const char *dots = strstr(l, "...");
    const char *r = strchr(l, '}');
    if (!dots || !r || dots > r)
        return -1;
    size_t nlo = (size_t)(dots - l - 1), nhi = (size_t)(r - dots - 3);
    if (nlo == 0 || nhi == 0 || nlo >= cap || nhi >= cap)
        return -1;
    memcpy(lo, l + 1, nlo);
    lo[nlo] = '\0';
    memcpy(hi, dots + 3, nhi);
    hi[nhi] = '\0';
    *lb = l;
    *rb = r;
    return 1;
}

int strata_drive_args_expand(const char *arg, char **out, size_t *n, size_t max)
{
    const char *lb, *rb;
    char lo[32], hi[32];
    int f = find_range(arg, &lb, &rb, lo, hi, sizeof(lo));
    if (f < 0)
        return -1;
    if (f == 0) {
        if (*n >= max)
            return -1;
        out[*n] = strdup(arg);
        if (!out[*n])
            return -1;
        (*n)++;
        return 0;
    }
    bool alpha = isalpha((unsigned char)lo[0]) && !lo[1] && isalpha((unsigned char)hi[0]) && !hi[1];
    long a, b;
    int width = 0;
    if (alpha) {
        a = lo[0];
        b = hi[0];
    } else {
        char *e1, *e2;
        a = strtol(lo, &e1, 10);
        b = strtol(hi, &e2, 10);
        if (*e1 || *e2 || a < 0)
            return -1;
        if (lo[0] == '0' && lo[1])
            width = (int)strlen(lo); /* {01...16} keeps the padding */
    }
    if (b < a || b - a > 1024)
        return -1;
    for (long v = a; v <= b; v++) {
        char item[32];
        if (alpha)
            snprintf(item, sizeof(item), "%c", (int)v);
        else
            snprintf(item, sizeof(item), "%0*ld", width, v);
        size_t plen = (size_t)(lb - arg), ilen = strlen(item), slen = strlen(rb + 1);
        char *next = malloc(plen + ilen + slen + 1);
        if (!next)
            return -1;
        memcpy(next, arg, plen);
        memcpy(next + plen, item, ilen);
        memcpy(next + plen + ilen, rb + 1, slen + 1);
        int rc = strata_drive_args_expand(next, out, n, max);
        free(next);
        if (rc != 0)
            return -1;
    }
    return 0;
}

unsigned strata_drive_set_size_pick(unsigned n)
{
    for (unsigned s = 16; s >= 4; s--)
        if (n % s == 0)
            return s;
    return 0;
}

bool strata_s3_hdr_is_stored(const char *lname)
{
    static const char *const names[] = {
        "content-type",     "content-encoding", "content-disposition",
        "content-language", "cache-control",    "expires",
    };
    if (strncmp(lname, "x-amz-meta-", 11) == 0)
        return lname[11] != '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(lname, names[i]) == 0)
            return true;
    return false;
}

char *strata_s3_list_resume_key(const char *prefix, const char *delim, const char *marker,
                                char *out, size_t out_len)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    snprintf(out, out_len, "%s", marker);
    if (!delim || !*delim || strncmp(marker, prefix ? prefix : "", plen) != 0)
        return out;
    const char *d = strstr(marker + plen, delim);
    if (!d)
        return out;
    size_t cut = (size_t)(d - marker) + strlen(delim);
    if (cut + 2 <= out_len) {
        out[cut] = '\xff';
        out[cut + 1] = '\0';
    }
    return out;
}

static const struct {
    int algo;
    const char *hdr;
    const char *name;
    size_t len;
} cksums[] = {
    {STRATA_CKSUM_CRC32, "x-amz-checksum-crc32", "CRC32", 4},
    {STRATA_CKSUM_CRC32C, "x-amz-checksum-crc32c", "CRC32C", 4},
    {STRATA_CKSUM_CRC64NVME, "x-amz-checksum-crc64nvme", "CRC64NVME", 8},
    {STRATA_CKSUM_SHA1, "x-amz-checksum-sha1", "SHA1", 20},
    {STRATA_CKSUM_SHA256, "x-amz-checksum-sha256", "SHA256", 32},
};
#define NCKSUMS (sizeof(cksums) / sizeof(cksums[0]))

int strata_s3_cksum_from_hdr(const char *name)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (strcasecmp(name, cksums[i].hdr) == 0)
            return cksums[i].algo;
    return 0;
}

int strata_s3_cksum_from_algo_name(const char *name)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (strcasecmp(name, cksums[i].name) == 0)
            return cksums[i].algo;
    return 0;
}

const char *strata_s3_cksum_hdr(int algo)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (cksums[i].algo == algo)
            return cksums[i].hdr;
    return NULL;
}

size_t strata_s3_cksum_len(int algo)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (cksums[i].algo == algo)
            return cksums[i].len;
    return 0;
}

int strata_s3_cksum_compute(int algo, const void *buf, size_t len, uint8_t *out)
{
    uint32_t c32;
    uint64_t c64;
    unsigned mdlen;
    switch (algo) {
    case STRATA_CKSUM_CRC32:
    case STRATA_CKSUM_CRC32C:
        c32 = algo == STRATA_CKSUM_CRC32 ? strata_crc32(0, buf, len) : strata_crc32c(0, buf, len);
        for (int i = 0; i < 4; i++)
            out[i] = (uint8_t)(c32 >> (24 - 8 * i)); /* big-endian, as S3 encodes it */
        return 0;
    case STRATA_CKSUM_CRC64NVME:
        c64 = strata_crc64nvme(0, buf, len);
        for (int i = 0; i < 8; i++)
            out[i] = (uint8_t)(c64 >> (56 - 8 * i));
        return 0;
    case STRATA_CKSUM_SHA1:
        return EVP_Digest(buf, len, out, &mdlen, EVP_sha1(), NULL) == 1 ? 0 : -1;
    case STRATA_CKSUM_SHA256:
        return EVP_Digest(buf, len, out, &mdlen, EVP_sha256(), NULL) == 1 ? 0 : -1;
    default:
        return -1;
    }
}

void strata_s3_content_encoding_strip(const char *in, char *out, size_t out_len)
{
    size_t w = 0;
    const char *p = in;
    out[0] = '\0';
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        size_t n = (size_t)(p - start);
        while (n && start[n - 1] == ' ')
            n--;
        if (n == 0 || (n == 11 && strncasecmp(start, "aws-chunked", 11) == 0))
            continue;
        if (w + n + 2 >= out_len)
            break;
        if (w)
            out[w++] = ',';
        memcpy(out + w, start, n);
        w += n;
        out[w] = '\0';
    }
}

/* Characters of a UTF-8 string (bytes that do not continue a sequence). */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

int strata_s3_tags_validate(const struct strata_qparam *tags, int n, int max)
{
    if (n < 0 || n > max)
        return -1;
    for (int i = 0; i < n; i++) {
        size_t kl = utf8_chars(tags[i].name), vl = utf8_chars(tags[i].value);
        if (kl == 0 || kl > 128 || vl > 256)
            return -1;
        for (int j = 0; j < i; j++)
            if (strcmp(tags[i].name, tags[j].name) == 0)
                return -1;
    }
    return 0;
}

int strata_s3_tags_encode(struct strata_sbuf *b, const struct strata_qparam *tags, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            strata_sbuf_puts(b, "&");
        strata_url_encode_sbuf(b, tags[i].name, true);
        strata_sbuf_puts(b, "=");
        strata_url_encode_sbuf(b, tags[i].value, true);
    }
    return b->failed ? -1 : 0;
}

unsigned strata_s3_tags_count(const uint8_t *tags, size_t len)
{
    if (!tags || len == 0)
        return 0;
    unsigned n = 1;
    for (size_t i = 0; i < len; i++)
        n += tags[i] == '&';
    return n;
}

size_t strata_s3_cksum_value(const struct strata_obj_info *in, char *out, size_t out_len)
{
    if (!strata_s3_cksum_hdr(in->cksum_algo) || in->cksum_len == 0 || out_len < 64)
        return 0;
    int n = strata_b64_encode(in->cksum, in->cksum_len, out, out_len);
    if (n <= 0)
        return 0;
    if (in->cksum_type == STRATA_CKSUM_TYPE_COMPOSITE && in->nparts > 0)
        n += snprintf(out + n, out_len - (size_t)n, "-%u", in->nparts);
    return (size_t)n;
}

const char *strata_s3_cksum_type_name(int type)
{
    return type == STRATA_CKSUM_TYPE_COMPOSITE     ? "COMPOSITE"
           : type == STRATA_CKSUM_TYPE_FULL_OBJECT ? "FULL_OBJECT"
                                                   : NULL;
}

const char *strata_s3_cksum_algo_name(int algo)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (cksums[i].algo == algo)
            return cksums[i].name;
    return NULL;
}
