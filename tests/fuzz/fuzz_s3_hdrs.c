/*
 * fuzz_s3_hdrs.c - libFuzzer target for the request-header helpers of
 * server/s3/ (s3_conditional.c, s3_checksum.c, s3_object_headers.c),
 * server/http/ (base64.c, http_date.c) and server/drive_args.c that have no target of their
 * own: HTTP dates and the
 * conditional headers (If-Match lists, If-Modified-Since...), base64 of
 * Content-MD5 / x-amz-checksum-*, the Content-Encoding filter, the
 * listing resume key, and the drive-range arguments of the command line.
 *
 * Input: the header value (the first byte also picks a few small
 * parameters).  Checks: results stay within their buffers and contracts
 * (base64 never returns more than fits, a resume key keeps the marker as
 * its prefix, a stripped Content-Encoding never grows and never names
 * aws-chunked, expanded drive paths are bounded), and an HTTP date that
 * parses formats back to a date that parses to the same time.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_date.h"
#include "drive_args.h"
#include "base64.h"
#include "query.h"
#include "s3_checksum.h"
#include "s3_conditional.h"
#include "s3_list_resume.h"
#include "s3_names.h"
#include "s3_object_headers.h"
#include "s3_range.h"
#include "s3_tags.h"

static void check_date(const char *s)
{
    time_t t;
    if (strata_http_date_parse(s, &t) != 0)
        return;
    char buf[64], buf2[64];
    strata_http_date_format(t, buf, sizeof(buf));
    time_t t2;
    /* Years past 9999 do not print as four digits: skip those. */
    if (t >= 0 && t < 253402300800LL) {
        if (strata_http_date_parse(buf, &t2) != 0 || t2 != t)
            STRATA_FUZZ_FAIL();
        strata_http_date_format(t2, buf2, sizeof(buf2));
        if (strcmp(buf, buf2) != 0)
            STRATA_FUZZ_FAIL();
    }
}

static void check_cond(const char *s, uint8_t sel)
{
    static const char etag[] = "9bb58f26192e4ba00f01e2e7b136bbd8";
    if (strata_s3_etag_list_match("*", etag) != true ||
        strata_s3_etag_list_match("", etag) != false)
        STRATA_FUZZ_FAIL();
    bool m = strata_s3_etag_list_match(s, etag);
    struct strata_s3_cond c = {0};
    if (sel & 1)
        c.if_match = s;
    if (sel & 2)
        c.if_none_match = s;
    if (sel & 4)
        c.if_modified_since = s;
    if (sel & 8)
        c.if_unmodified_since = s;
    int r = strata_s3_cond_eval(&c, etag, 784111777);
    if (r != 0 && r != 304 && r != 412)
        STRATA_FUZZ_FAIL();
    /* If-Match that names the ETag never fails; one that does not, does. */
    if ((sel & 1) && r == 412 && m)
        STRATA_FUZZ_FAIL();
    if ((sel & 1) && !m && r != 412)
        STRATA_FUZZ_FAIL();
}

static void check_b64(const char *s, uint8_t sel)
{
    uint8_t out[64];
    size_t max = sel % sizeof(out);
    memset(out, 0xee, sizeof(out));
    int n = strata_b64_decode(s, out, max);
    if (n < -1 || n > (int)max)
        STRATA_FUZZ_FAIL();
    for (size_t i = max; i < sizeof(out); i++)
        if (out[i] != 0xee)
            STRATA_FUZZ_FAIL(); /* wrote past out_max */
    if (n > 0) {
        /* Decoded bytes encode back to canonical base64 of the same length. */
        char enc[4 * sizeof(out) / 3 + 8];
        if (strata_b64_encode(out, (size_t)n, enc, sizeof(enc)) < 0)
            STRATA_FUZZ_FAIL();
        uint8_t back[64];
        if (strata_b64_decode(enc, back, sizeof(back)) != n || memcmp(back, out, (size_t)n))
            STRATA_FUZZ_FAIL();
    }
}

static void check_ce(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(n + 1);
    if (!out)
        abort();
    strata_s3_content_encoding_strip(s, out, n + 1);
    if (strlen(out) > n)
        STRATA_FUZZ_FAIL();
    /* No token left is aws-chunked. */
    for (const char *p = out; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        while (l && p[l - 1] == ' ')
            l--;
        while (l && *p == ' ') {
            p++;
            l--;
        }
        if (l == 11 && strncasecmp(p, "aws-chunked", 11) == 0)
            STRATA_FUZZ_FAIL();
        p = e ? e + 1 : p + strlen(p);
    }
    free(out);
}

static void check_resume(const char *s)
{
    /* prefix, delimiter and marker are three '|'-separated fields. */
    char *dup = strdup(s);
    if (!dup)
        abort();
    char *prefix = dup, *delim = strchr(prefix, '|'), *marker = NULL;
    if (delim) {
        *delim++ = '\0';
        marker = strchr(delim, '|');
    }
    if (marker) {
        *marker++ = '\0';
        size_t cap = strlen(marker) + 2;
        char *out = malloc(cap);
        if (!out)
            abort();
        strata_s3_list_resume_key(prefix, delim, marker, out, cap);
        size_t ol = strlen(out);
        if (ol > cap - 1)
            STRATA_FUZZ_FAIL();
        /* The resume key is the marker, or a prefix of it plus 0xFF. */
        if (strcmp(out, marker) != 0 &&
            (ol == 0 || (unsigned char)out[ol - 1] != 0xff || strncmp(out, marker, ol - 1) != 0))
            STRATA_FUZZ_FAIL();
        free(out);
    }
    free(dup);
}

static void check_drives(const char *s)
{
    enum { MAX = 64 };
    char *paths[MAX];
    size_t n = 0;
    int r = strata_drive_args_expand(s, paths, &n, MAX);
    if (n > MAX || (r == 0 && n == 0))
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < n; i++) {
        /* Any '{' left would be a range that did not expand (items are
         * digits or letters, never '{'), which must have failed. */
        if (r == 0 && strchr(paths[i], '{'))
            STRATA_FUZZ_FAIL();
        free(paths[i]);
    }
    if (strata_drive_set_size_pick((unsigned)n) != 0 &&
        n % strata_drive_set_size_pick((unsigned)n) != 0)
        STRATA_FUZZ_FAIL();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    uint8_t sel = data[0];
    char *s = strata_fuzz_strdup(data + 1, size - 1);
    check_date(s);
    check_cond(s, sel);
    check_b64(s, sel);
    check_ce(s);
    check_resume(s);
    check_drives(s);
    free(s);
    return 0;
}
