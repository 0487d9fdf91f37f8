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

static time_t tm_to_epoch(struct tm *tm)
{
    return timegm(tm);
}

int strata_sigv4__parse_iso8601(const char *s, time_t *out)
{
    /* Exactly yyyymmddThhmmssZ: strptime alone would accept short fields. */
    if (!s || strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
        return STRATA_EINVAL;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)s[i]))
            return STRATA_EINVAL;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);
    if (!end || *end)
        return STRATA_EINVAL;
    *out = tm_to_epoch(&tm);
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
