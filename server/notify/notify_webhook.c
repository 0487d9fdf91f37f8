/*
 * notify_webhook.c - the webhook target: each event is one HTTP POST of
 * its JSON (Content-Type: application/json) to ADDRESS, with
 * "Authorization: Bearer TOKEN" when the target has a token.  Any 2xx
 * answer acknowledges it.  libcurl; one easy handle per target, so the
 * connection is kept alive between events.  Delivery thread only.
 */
#include "notify_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

struct hook {
    CURL *c;
    struct curl_slist *hdrs;
};

static size_t discard_cb(char *p, size_t sz, size_t n, void *ud)
{
    (void)p, (void)ud;
    return sz * n;
}

static void hook_close(void *h)
{
    struct hook *k = h;
    if (!k)
        return;
    curl_slist_free_all(k->hdrs);
    curl_easy_cleanup(k->c);
    free(k);
}

static int hook_open(const struct strata_notify_kind *kind, const char *address, const char *token,
                     void **h, char *err, size_t err_len)
{
    (void)kind;
    if (strncmp(address, "http://", 7) != 0 && strncmp(address, "https://", 8) != 0) {
        snprintf(err, err_len, "webhook address %s: want http:// or https://", address);
        return -1;
    }
    struct hook *k = calloc(1, sizeof(*k));
    if (!k || !(k->c = curl_easy_init())) {
        free(k);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    k->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (token) {
        char line[512];
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        k->hdrs = curl_slist_append(k->hdrs, line);
        memset(line, 0, sizeof(line));
    }
    /* No Expect: 100-continue round trip for small bodies. */
    k->hdrs = curl_slist_append(k->hdrs, "Expect:");
    curl_easy_setopt(k->c, CURLOPT_URL, address);
    curl_easy_setopt(k->c, CURLOPT_HTTPHEADER, k->hdrs);
    curl_easy_setopt(k->c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k->c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(k->c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(k->c, CURLOPT_WRITEFUNCTION, discard_cb);
    curl_easy_setopt(k->c, CURLOPT_PROTOCOLS_STR, "http,https");
    *h = k;
    return 0;
}

static int hook_send(void *h, const char *msg, size_t len)
{
    struct hook *k = h;
    curl_easy_setopt(k->c, CURLOPT_POSTFIELDS, msg);
    curl_easy_setopt(k->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    if (curl_easy_perform(k->c) != CURLE_OK)
        return -1;
    long code = 0;
    curl_easy_getinfo(k->c, CURLINFO_RESPONSE_CODE, &code);
    return code >= 200 && code < 300 ? 0 : -1;
}

const struct strata_notify_kind strata_notify_webhook = {
    .name = "webhook", .open = hook_open, .send = hook_send, .close = hook_close};
