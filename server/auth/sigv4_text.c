/*
 * sigv4_text.c - text helpers for request authentication: header lookup,
 * the amz-date format SigV4 signs, query parameter lookup, and the digest
 * sink canonical requests stream into.  Percent-coding is url.c's, HTTP
 * dates are http_date.c's.
 *
 * Pure functions, reentrant, no allocation; run on any request thread.
 */
#include "sigv4_internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "strata/err.h"

const char *strata_sigv4__hdr(const struct strata_auth_req *r, const char *lname)
{
    /* Comparing the first letter first skips most strcasecmp calls; this
     * runs several times per request over every header. */
    char c0 = lname[0];
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *n = r->hdrs[i].name;
        if (n && (n[0] | 0x20) == c0 && strcasecmp(n, lname) == 0)
            return r->hdrs[i].value ? r->hdrs[i].value : "";
    }
    return NULL;
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar;
 * linear in d, so a day past the month's end rolls over as timegm does. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

int strata_sigv4__parse_iso8601(const char *s, time_t *out)
{
    /* Exactly yyyymmddThhmmssZ, each field in strptime's range (seconds
     * up to 61), then timegm's arithmetic: every request parses one, and
     * strptime + timegm cost more than the rest of the date handling. */
    if (!s || strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
        return STRATA_EINVAL;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)s[i]))
            return STRATA_EINVAL;
    int y = digits(s, 4), mo = digits(s + 4, 2), d = digits(s + 6, 2);
    int h = digits(s + 9, 2), mi = digits(s + 11, 2), sec = digits(s + 13, 2);
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 61)
        return STRATA_EINVAL;
    *out = (time_t)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec);
    return 0;
}

void strata_sigv4__fmt_iso8601(time_t t, char out[17])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    if (strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
        out[0] = '\0';
}

bool strata_sigv4__query_param(const char *q, const char *name, const char **val, size_t *len)
{
    if (!q)
        return false;
    size_t nl = strlen(name);
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t seg = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', seg);
        size_t kl = eq ? (size_t)(eq - q) : seg;
        if (kl == nl && memcmp(q, name, nl) == 0) {
            *val = eq ? eq + 1 : q + seg;
            *len = eq ? seg - kl - 1 : 0;
            return true;
        }
        if (!amp)
            break;
        q = amp + 1;
    }
    return false;
}

/* ---- sink ----------------------------------------------------------------- */

int strata_sigv4__sink_flush(struct strata_sigv4_sink *s)
{
    if (s->len && !s->err)
        s->err = s->flush_cb(s->ud, s->buf, s->len);
    s->len = 0;
    return s->err;
}

void strata_sigv4__sink_put(struct strata_sigv4_sink *s, const void *p, size_t n)
{
    const char *c = p;
    while (n && !s->err) {
        size_t room = sizeof(s->buf) - s->len;
        if (room == 0) {
            strata_sigv4__sink_flush(s);
            continue;
        }
        size_t k = n < room ? n : room;
        memcpy(s->buf + s->len, c, k);
        s->len += k;
        c += k;
        n -= k;
    }
}

void strata_sigv4__sink_puts(struct strata_sigv4_sink *s, const char *str)
{
    strata_sigv4__sink_put(s, str, strlen(str));
}

void strata_sigv4__sink_putc(struct strata_sigv4_sink *s, char c)
{
    if (s->len == sizeof(s->buf))
        strata_sigv4__sink_flush(s);
    if (!s->err)
        s->buf[s->len++] = c;
}

void strata_sigv4__sink_put_trimmed(struct strata_sigv4_sink *s, const char *v)
{
    bool first = true;
    for (;;) {
        v += strspn(v, " \t");
        size_t run = strcspn(v, " \t");
        if (run == 0)
            return;
        if (!first)
            strata_sigv4__sink_putc(s, ' ');
        first = false;
        strata_sigv4__sink_put(s, v, run);
        v += run;
    }
}
