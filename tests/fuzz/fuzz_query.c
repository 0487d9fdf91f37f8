/*
 * fuzz_query.c - libFuzzer target for URL and query decoding: the router's
 * strata_s3_query_parse over the one percent-decoder of server/http/url.c, whose
 * length-delimited form (what SigV4 canonicalises with) and in-place form
 * (what the router decodes paths with) are cross-checked against each
 * other and against a reference model written here, because the signature
 * and the routing must see the same bytes: decoders that disagree let a
 * request sign one name and act on another.
 *
 * Input: the raw query string (or path).  Checks: the parameter count is
 * within bounds and every name/value lies inside the parsed buffer; both
 * forms and the model accept and reject the same inputs (%00 refused) and
 * produce the same bytes; decoding never grows a string; encoding a
 * decoded string with strata_url_encode_sbuf and decoding it again gives it
 * back, and equals strata_url_encode with '/' kept.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "sbuf.h"
#include "strata/hex.h"
#include "url.h"

#define QMAX 16

/* The decoding rules restated: %XX (either case) is the byte, except
 * %00; '+' is a space in query mode; anything else is itself. */
static long model_decode(const char *s, size_t n, char *out, bool plus_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n || strata_hex_val(s[i + 1]) < 0 || strata_hex_val(s[i + 2]) < 0)
                return -1;
            int v = strata_hex_val(s[i + 1]) * 16 + strata_hex_val(s[i + 2]);
            if (v == 0)
                return -1;
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = s[i] == '+' && plus_space ? ' ' : s[i];
        }
    }
    return (long)o;
}

/* The forms of the decoder and the model must agree; s is not modified. */
static void pct_cross_check(const char *s, bool plus_space)
{
    size_t n = strlen(s);
    char *a = strdup(s);
    char *b = malloc(n + 1);
    char *m = malloc(n + 1);
    if (!a || !b || !m)
        STRATA_FUZZ_FAIL();
    int ra = strata_url_decode_str(a, plus_space);
    long rb = strata_url_decode(s, n, b, n, plus_space);
    long rm = model_decode(s, n, m, plus_space);
    if (rb > (long)n || (rb < 0) != (rm < 0) || (ra == 0) != (rb >= 0))
        STRATA_FUZZ_FAIL();
    if (rb >= 0) {
        if (rb != rm || memcmp(b, m, (size_t)rb) != 0 || memchr(b, '\0', (size_t)rb))
            STRATA_FUZZ_FAIL();
        if (strlen(a) != (size_t)rb || memcmp(a, b, (size_t)rb) != 0)
            STRATA_FUZZ_FAIL();
    }
    free(a);
    free(b);
    free(m);
}

/* Encoding a decoded name or value and decoding it again is the identity,
 * and the sbuf form of the encoder matches the buffer form. */
static void encode_round_trip(const char *v)
{
    struct strata_sbuf sb;
    strata_sbuf_init(&sb, 1u << 20);
    if (strata_url_encode_sbuf(&sb, v, true) != 0)
        STRATA_FUZZ_FAIL();
    size_t vl = strlen(v);
    char *sig = malloc(3 * vl + 1);
    if (!sig)
        STRATA_FUZZ_FAIL();
    long sl = strata_url_encode(v, vl, sig, 3 * vl, true);
    if (sl < 0 || (size_t)sl != sb.len || (sl && memcmp(sig, sb.data, (size_t)sl) != 0))
        STRATA_FUZZ_FAIL();
    free(sig);
    char *back = malloc(sb.len + 1);
    if (!back)
        STRATA_FUZZ_FAIL();
    if (sb.len)
        memcpy(back, sb.data, sb.len);
    back[sb.len] = '\0';
    if (strata_url_decode_str(back, true) != 0 || strcmp(back, v) != 0)
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
