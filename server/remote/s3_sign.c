/*
 * s3_sign.c - SigV4 of the S3 client's requests (contract in s3_sign.h).
 */
#include "s3_sign.h"

#include "auth.h"
#include "sbuf.h"
#include "strata/hex.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HDRS_MAX 200

struct hline {
    char name[128]; /* lower case */
    const char *val; /* as sent: trimmed when signed */
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct hline *)a)->name, ((const struct hline *)b)->name);
}

/* SigV4's canonical value: no leading or trailing blanks, inner runs of
 * blanks as one space. */
static void put_value(struct strata_sbuf *b, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    bool blank = false;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t') {
            blank = true;
            continue;
        }
        if (blank)
            strata_sbuf_append(b, " ", 1);
        blank = false;
        strata_sbuf_append(b, v, 1);
    }
}

/* One "Name: value" line into h: 1, 0 when it is not signed (no value:
 * libcurl does not send it; ours to add), -1 malformed. */
static int line_parse(const char *l, struct hline *h)
{
    const char *c = strchr(l, ':');
    size_t n = c ? (size_t)(c - l) : 0;
    if (!c || n == 0 || n >= sizeof(h->name))
        return -1;
    for (size_t i = 0; i < n; i++)
        h->name[i] = (char)tolower((unsigned char)l[i]);
    h->name[n] = '\0';
    h->val = c + 1;
    const char *v = h->val + strspn(h->val, " \t");
    if (!*v || strcmp(h->name, "host") == 0 || strcmp(h->name, "x-amz-date") == 0 ||
        strcmp(h->name, "authorization") == 0)
        return 0;
    return 1;
}

/* auth's SigV4 signature for these keys (auth.h). */
static int sign_as(const char *access_key, const char *secret_key, const char *date,
                   const char *region, const char *creq_hex, char sig[65])
{
    struct strata_cred c;
    memset(&c, 0, sizeof(c));
    int rc = strlen(access_key) < sizeof(c.access_key) && strlen(secret_key) < sizeof(c.secret)
                 ? 0
                 : -1;
    if (rc == 0) {
        memcpy(c.access_key, access_key, strlen(access_key));
        memcpy(c.secret, secret_key, strlen(secret_key));
        rc = strata_sigv4_signature(&c, date, region, creq_hex, sig) == 0 ? 0 : -1;
    }
    OPENSSL_cleanse(&c, sizeof(c));
    return rc;
}

int strata_s3c_sign(const char *method, const char *url, const char *access_key,
                    const char *secret_key, const char *region, time_t now,
                    struct curl_slist **hdrs)
{
    const char *p = strncmp(url, "https://", 8) == 0 ? url + 8
                    : strncmp(url, "http://", 7) == 0 ? url + 7
                                                      : NULL;
    if (!p)
        return -1;
    size_t hl = strcspn(p, "/?");
    const char *path = p + hl, *q = strchr(path, '?');
    size_t pl = q ? (size_t)(q - path) : strlen(path);
    char host[300], date[17], date8[9];
    if (hl == 0 || hl >= sizeof(host))
        return -1;
    memcpy(host, p, hl);
    host[hl] = '\0';
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    memcpy(date8, date, 8);
    date8[8] = '\0';

    struct hline *h = calloc(HDRS_MAX, sizeof(*h));
    if (!h)
        return -1;
    size_t n = 0;
    const char *payload = NULL;
    int rc = 0;
    for (const struct curl_slist *s = *hdrs; s && rc == 0; s = s->next) {
        if (n + 2 >= HDRS_MAX) {
            rc = -1;
            break;
        }
        int r = line_parse(s->data, &h[n]);
        if (r < 0)
            rc = -1;
        if (r > 0 && strcmp(h[n].name, "x-amz-content-sha256") == 0)
            payload = h[n].val + strspn(h[n].val, " \t");
        n += r > 0;
    }
    snprintf(h[n].name, sizeof(h[n].name), "host");
    h[n++].val = host;
    snprintf(h[n].name, sizeof(h[n].name), "x-amz-date");
    h[n++].val = date;
    qsort(h, n, sizeof(*h), by_name);

    struct strata_sbuf cr, sh;
    strata_sbuf_init(&cr, 1 << 20);
    strata_sbuf_init(&sh, 16384);
    strata_sbuf_printf(&cr, "%s\n", method);
    if (pl)
        strata_sbuf_append(&cr, path, pl);
    else
        strata_sbuf_puts(&cr, "/");
    strata_sbuf_printf(&cr, "\n%s\n", q ? q + 1 : "");
    for (size_t i = 0; i < n; i++) {
        bool same = i && strcmp(h[i].name, h[i - 1].name) == 0; /* values joined by ',' */
        if (!same) {
            if (i)
                strata_sbuf_puts(&cr, "\n");
            strata_sbuf_printf(&cr, "%s:", h[i].name);
            strata_sbuf_printf(&sh, "%s%s", i ? ";" : "", h[i].name);
        } else {
            strata_sbuf_puts(&cr, ",");
        }
        put_value(&cr, h[i].val);
    }
    strata_sbuf_printf(&cr, "\n\n%s\n%s", sh.data ? sh.data : "", payload ? payload : "");

    uint8_t d[32];
    unsigned dl = 0;
    char hash[65], sig[65], line[1024];
    if (rc || !payload || cr.failed || sh.failed ||
        EVP_Digest(cr.data, cr.len, d, &dl, EVP_sha256(), NULL) != 1) {
        rc = -1;
    } else {
        strata_hex_encode(d, 32, hash);
        rc = sign_as(access_key, secret_key, date, region, hash, sig);
    }
    struct curl_slist *l = *hdrs;
    if (rc == 0) {
        snprintf(line, sizeof(line), "Host: %s", host);
        /* curl_slist_append returns the list's head, or NULL (list kept). */
        l = curl_slist_append(l, line);
        snprintf(line, sizeof(line), "x-amz-date: %s", date);
        l = l ? curl_slist_append(l, line) : NULL;
        int w = snprintf(line, sizeof(line),
                         "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, "
                         "SignedHeaders=%s, Signature=%s",
                         access_key, date8, region, sh.data, sig);
        l = l && w > 0 && (size_t)w < sizeof(line) ? curl_slist_append(l, line) : NULL;
        if (l)
            *hdrs = l;
        else
            rc = -1;
    }
    strata_sbuf_fini(&cr);
    strata_sbuf_fini(&sh);
    free(h);
    return rc;
}
