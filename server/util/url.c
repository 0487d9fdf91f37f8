/*
 * url.c - percent-decoding and AWS URI-encoding (see url.h).  Pure, no
 * allocation, any thread.
 */
#include "url.h"

#include <stdint.h>
#include <string.h>

#include "sbuf.h"
#include "strata/hex.h"

long strata_url_decode(const char *s, size_t n, char *out, size_t cap, bool plus_space)
{
    /* Runs of bytes that stay as they are move in one go: a query string
     * is decoded on every request and is mostly such runs.  The next '%'
     * and '+' are found with memchr and looked for again only once passed. */
    const char *end = s + n;
    const char *pct = memchr(s, '%', n);
    const char *plus = plus_space ? memchr(s, '+', n) : NULL;
    size_t o = 0, i = 0;
    while (i < n) {
        if (pct && pct < s + i)
            pct = memchr(s + i, '%', n - i);
        if (plus && plus < s + i)
            plus = memchr(s + i, '+', n - i);
        const char *next = pct && (!plus || pct < plus) ? pct : plus ? plus : end;
        size_t j = (size_t)(next - s);
        if (j > i) {
            if (j - i > cap - o)
                return -1;
            if (out + o != s + i)
                memmove(out + o, s + i, j - i);
            o += j - i;
            i = j;
            if (i == n)
                break;
        }
        char c = ' '; /* '+' with plus_space */
        if (s[i] == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = strata_hex_val(s[i + 1]), lo = strata_hex_val(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi | lo) == 0)
                return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        i++;
        if (o >= cap)
            return -1;
        out[o++] = c;
    }
    return (long)o;
}

int strata_url_decode_str(char *s, bool plus_space)
{
    size_t n = strlen(s);
    long d = strata_url_decode(s, n, s, n, plus_space);
    if (d < 0)
        return -1;
    s[d] = '\0';
    return 0;
}

const uint8_t strata_url_unreserved_tab[256] = {
    ['-'] = 1, ['_'] = 1, ['.'] = 1, ['~'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
    ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1,
    ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
    ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
};

long strata_url_encode(const char *s, size_t n, char *out, size_t cap, bool keep_slash)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (strata_url_unreserved(c) || (c == '/' && keep_slash)) {
            if (o + 1 > cap)
                return -1;
            out[o++] = (char)c;
        } else {
            if (o + 3 > cap)
                return -1;
            out[o++] = '%';
            out[o++] = digits[c >> 4];
            out[o++] = digits[c & 15];
        }
    }
    return (long)o;
}

int strata_url_encode_sbuf(struct strata_sbuf *b, const char *s, bool keep_slash)
{
    /* In slices through a stack buffer: keys are up to 1 KiB, values of
     * any length. */
    char enc[3 * 256];
    for (size_t n = strlen(s); n && !b->failed;) {
        size_t k = n < 256 ? n : 256;
        long e = strata_url_encode(s, k, enc, sizeof(enc), keep_slash);
        strata_sbuf_append(b, enc, (size_t)e);
        s += k;
        n -= k;
    }
    return b->failed ? -1 : 0;
}

void strata_url_xml_elem(struct strata_sbuf *b, const char *tag, const char *v, bool url)
{
    strata_sbuf_puts(b, "<");
    strata_sbuf_puts(b, tag);
    strata_sbuf_puts(b, ">");
    if (url)
        strata_url_encode_sbuf(b, v, true);
    else
        strata_sbuf_xml(b, v);
    strata_sbuf_puts(b, "</");
    strata_sbuf_puts(b, tag);
    strata_sbuf_puts(b, ">");
}
