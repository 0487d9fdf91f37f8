/*
 * fuzz_query.c - libFuzzer target for URL and query decoding: the router's
 * strata_s3_query_parse and strata_s3_pct_decode, cross-checked against
 * the SigV4 canonicaliser's own decoder (strata_sigv4__pct_decode) and
 * encoder, because the signature and the routing must see the same
 * bytes: two decoders that disagree let a request sign one name and act
 * on another.
 *
 * Input: the raw query string (or path).  Checks: the parameter count is
 * within bounds and every name/value lies inside the parsed buffer; both
 * decoders accept and reject the same inputs (NUL aside) and produce the
 * same bytes; decoding never grows a string; encoding a decoded string
 * with strata_s3_url_encode and decoding it again gives it back, and that
 * encoding equals the SigV4 URI encoding with '/' kept.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "s3_util.h"
#include "sbuf.h"
#include "sigv4_internal.h"

#define QMAX 16

/* s decoded by both decoders must agree; s is not modified. */
static void pct_cross_check(const char *s, bool plus_space)
{
    size_t n = strlen(s);
    char *a = strdup(s);
    char *b = malloc(n + 1);
    if (!a || !b)
        STRATA_FUZZ_FAIL();
    int ra = strata_s3_pct_decode(a, plus_space);
    long rb = strata_sigv4__pct_decode(s, n, b, n, plus_space);
    if (rb > (long)n)
        STRATA_FUZZ_FAIL();
    /* The router also refuses an escape that decodes to NUL (%00); the
     * SigV4 decoder returns it as a byte.  Otherwise they must agree. */
    bool b_ok = rb >= 0 && !memchr(b, '\0', (size_t)rb);
    if ((ra == 0) != b_ok)
        STRATA_FUZZ_FAIL();
    if (ra == 0) {
        if (strlen(a) != (size_t)rb || memcmp(a, b, (size_t)rb) != 0)
            STRATA_FUZZ_FAIL();
        if (strlen(a) > n)
            STRATA_FUZZ_FAIL();
    }
    free(a);
    free(b);
}

/* Encoding a decoded name or value and decoding it again is the identity,
 * and the router's encoder matches SigV4's. */
static void encode_round_trip(const char *v)
{
    struct strata_sbuf sb;
    strata_sbuf_init(&sb, 1u << 20);
    if (strata_s3_url_encode(&sb, v) != 0)
        STRATA_FUZZ_FAIL();
    size_t vl = strlen(v);
    char *sig = malloc(3 * vl + 1);
    if (!sig)
        STRATA_FUZZ_FAIL();
    long sl = strata_sigv4__uri_encode(v, vl, sig, 3 * vl, true);
    if (sl < 0 || (size_t)sl != sb.len || (sl && memcmp(sig, sb.data, (size_t)sl) != 0))
        STRATA_FUZZ_FAIL();
    free(sig);
    char *back = malloc(sb.len + 1);
    if (!back)
        STRATA_FUZZ_FAIL();
    if (sb.len)
        memcpy(back, sb.data, sb.len);
    back[sb.len] = '\0';
    if (strata_s3_pct_decode(back, true) != 0 || strcmp(back, v) != 0)
        STRATA_FUZZ_FAIL();
    free(back);
    strata_sbuf_fini(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *raw = strata_fuzz_strdup(data, size);
    size_t rawlen = strlen(raw);

    pct_cross_check(raw, false);
    pct_cross_check(raw, true);

    char *buf = strdup(raw);
    if (!buf)
        STRATA_FUZZ_FAIL();
    struct strata_qparam q[QMAX];
    int n = strata_s3_query_parse(buf, q, QMAX);
    if (n < -1 || n > QMAX)
        STRATA_FUZZ_FAIL();
    for (int i = 0; i < n; i++) {
        /* Both strings live inside buf, which decoding only shrinks. */
        if (q[i].name < buf || q[i].name > buf + rawlen || q[i].value < buf ||
            q[i].value > buf + rawlen)
            STRATA_FUZZ_FAIL();
        if (q[i].name + strlen(q[i].name) > buf + rawlen ||
            q[i].value + strlen(q[i].value) > buf + rawlen)
            STRATA_FUZZ_FAIL();
        if (strchr(q[i].name, '&') && !strstr(raw, "%26"))
            STRATA_FUZZ_FAIL(); /* a literal '&' always separates parameters */
        encode_round_trip(q[i].name);
        encode_round_trip(q[i].value);
    }
    free(buf);
    free(raw);
    return 0;
}
