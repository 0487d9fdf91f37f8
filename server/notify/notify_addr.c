/*
 * notify_addr.c - SCHEME://[USER@]HOST:PORT/PATH of the broker targets
 * (notify_addr.h).
 */
#include "notify_addr.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool user_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

/* No space, control character or DEL in [s, s + n). */
static bool printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

int strata_notify_addr_parse(const char *s, const char *scheme, struct strata_notify_addr *out)
{
    memset(out, 0, sizeof(*out));
    size_t sl = strlen(scheme);
    if (strncmp(s, scheme, sl) != 0 || strncmp(s + sl, "://", 3) != 0)
        return -1;
    const char *p = s + sl + 3;
    const char *slash = strchr(p, '/');
    if (!slash)
        return -1;
    const char *at = memchr(p, '@', (size_t)(slash - p));
    if (at) {
        size_t ul = (size_t)(at - p);
        if (ul == 0 || ul >= sizeof(out->user))
            return -1;
        for (size_t i = 0; i < ul; i++)
            if (!user_char(p[i]))
                return -1;
        memcpy(out->user, p, ul);
        p = at + 1;
    }
    const char *hs = p, *he, *colon;
    if (*p == '[') {
        hs = p + 1;
        he = memchr(hs, ']', (size_t)(slash - hs));
        if (!he || he[1] != ':')
            return -1;
        colon = he + 1;
    } else {
        colon = memchr(p, ':', (size_t)(slash - p));
        he = colon;
        if (!colon)
            return -1;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl >= sizeof(out->host) || !printable(hs, hl) || memchr(hs, '@', hl) ||
        (*p != '[' && memchr(hs, ':', hl)))
        return -1;
    long port = 0;
    const char *d = colon + 1;
    if (d == slash || slash - d > 5)
        return -1;
    for (; d < slash; d++) {
        if (*d < '0' || *d > '9')
            return -1;
        port = port * 10 + (*d - '0');
    }
    if (port < 1 || port > 65535)
        return -1;
    size_t pl = strlen(slash + 1);
    if (pl == 0 || pl >= sizeof(out->path) || !printable(slash + 1, pl))
        return -1;
    memcpy(out->host, hs, hl);
    out->port = (int)port;
    memcpy(out->path, slash + 1, pl + 1);
    return 0;
}

char *strata_notify_addr_split(struct strata_notify_addr *a)
{
    char *sep = strchr(a->path, '/');
    if (!sep)
        return NULL;
    *sep = '\0';
    return sep + 1;
}

int strata_notify_secret_dup(const char *s, char **out)
{
    *out = s ? strdup(s) : NULL;
    return s && !*out ? -1 : 0;
}
