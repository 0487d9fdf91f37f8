/*
 * http_date.c - HTTP-date and ISO 8601 formatting and parsing (see
 * http_date.h).  Pure, any thread.
 */
#include "http_date.h"

#include <stdio.h>
#include <string.h>

#include "strata/err.h"

static char *two(char *p, int v)
{
    *p++ = (char)('0' + v / 10);
    *p++ = (char)('0' + v % 10);
    return p;
}

void strata_http_date_format(time_t t, char *out, size_t out_len)
{
    static const char wday[] = "SunMonTueWedThuFriSat";
    static const char mon[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    struct tm tm;
    gmtime_r(&t, &tm);
    int year = tm.tm_year + 1900;
    if (out_len < 30 || year < 1000 || year > 9999) {
        strftime(out, out_len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        return;
    }
    /* What strftime writes in the C locale, without its format parsing
     * (Last-Modified on every GET). */
    char *p = out;
    memcpy(p, wday + 3 * tm.tm_wday, 3);
    p += 3;
    *p++ = ',';
    *p++ = ' ';
    p = two(p, tm.tm_mday);
    *p++ = ' ';
    memcpy(p, mon + 3 * tm.tm_mon, 3);
    p += 3;
    *p++ = ' ';
    p = two(p, year / 100);
    p = two(p, year % 100);
    *p++ = ' ';
    p = two(p, tm.tm_hour);
    *p++ = ':';
    p = two(p, tm.tm_min);
    *p++ = ':';
    p = two(p, tm.tm_sec);
    memcpy(p, " GMT", 5);
}

int strata_http_date_parse(const char *s, time_t *out)
{
    static const char *const fmts[] = {
        "%a, %d %b %Y %H:%M:%S GMT", /* RFC 1123, what every client sends */
        "%a, %d %b %Y %H:%M:%S %z",  /* RFC 2822 numeric zone (AWS's SigV2 examples) */
        "%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
        "%a %b %e %H:%M:%S %Y",      /* asctime */
    };
    if (!s)
        return STRATA_EINVAL;
    while (*s == ' ')
        s++;
    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
        struct tm tm;
        memset(&tm, 0, sizeof(tm));
        const char *end = strptime(s, fmts[i], &tm);
        if (!end)
            continue;
        while (*end == ' ')
            end++;
        if (*end)
            continue;
        /* timegm ignores tm_gmtoff, which only %z sets, and resets it:
         * read it first. */
        long gmtoff = tm.tm_gmtoff;
        *out = timegm(&tm) - gmtoff;
        return 0;
    }
    return STRATA_EINVAL;
}

/* n decimal digits of v (zero-padded) at p. */
static char *digits(char *p, unsigned v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + n;
}

/* Days since 1970-01-01 to a civil date (H. Hinnant's days_to_civil, exact
 * for every day): once per listed object, so no gmtime_r nor snprintf. */
static void civil(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void strata_iso8601_format(int64_t ms, char *out, size_t out_len)
{
    /* Floor division, so a time before 1970 keeps its second and date. */
    int64_t sec = ms / 1000, rem = ms % 1000;
    if (rem < 0) {
        sec--;
        rem += 1000;
    }
    int64_t days = sec / 86400, sod = sec % 86400;
    if (sod < 0) {
        days--;
        sod += 86400;
    }
    int64_t y;
    unsigned mo, d;
    civil(days, &y, &mo, &d);
    if (out_len > 24 && y >= 0 && y <= 9999) {
        char *p = digits(out, (unsigned)y, 4);
        *p++ = '-';
        p = digits(p, mo, 2);
        *p++ = '-';
        p = digits(p, d, 2);
        *p++ = 'T';
        p = digits(p, (unsigned)(sod / 3600), 2);
        *p++ = ':';
        p = digits(p, (unsigned)(sod / 60 % 60), 2);
        *p++ = ':';
        p = digits(p, (unsigned)(sod % 60), 2);
        *p++ = '.';
        p = digits(p, (unsigned)rem, 3);
        memcpy(p, "Z", 2);
        return;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    /* Four-digit years: strftime's %Y writes year 15 as "15". */
    snprintf(out, out_len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)rem);
}

int strata_iso8601_parse(const char *s, int64_t *ms)
{
    if (!s)
        return STRATA_EINVAL;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p || tm.tm_year < 70)
        return STRATA_EINVAL;
    int64_t frac = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                frac = frac * 10 + (*p - '0');
        if (digits == 0)
            return STRATA_EINVAL;
        for (; digits < 3; digits++)
            frac *= 10;
    }
    int64_t off_s = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        int hh, mm, n = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5 || hh > 23 || mm > 59)
            return STRATA_EINVAL;
        off_s = sign * (hh * 3600 + mm * 60);
        p += 1 + n;
    } else {
        return STRATA_EINVAL;
    }
    if (*p)
        return STRATA_EINVAL;
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return STRATA_EINVAL;
    *ms = ((int64_t)t - off_s) * 1000 + frac;
    return 0;
}
