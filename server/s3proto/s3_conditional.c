/*
 * s3_conditional.c - see s3_conditional.h.
 */
#include "s3_conditional.h"

#include <string.h>

#include "http_date.h"

bool strata_s3_etag_list_match(const char *list, const char *etag)
{
    size_t elen = strlen(etag);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        bool quoted = *p == '"';
        if (quoted)
            p++;
        const char *start = p;
        while (*p && (quoted ? *p != '"' : (*p != ',' && *p != ' ')))
            p++;
        if ((size_t)(p - start) == elen && strncmp(start, etag, elen) == 0)
            return true;
        if (quoted && *p == '"')
            p++;
    }
    return false;
}

int strata_s3_cond_eval(const struct strata_s3_cond *c, const char *etag, time_t mtime)
{
    time_t t;
    /* Step 1 and 2: If-Match, else If-Unmodified-Since. */
    if (c->if_match) {
        if (!strata_s3_etag_list_match(c->if_match, etag))
            return 412;
    } else if (c->if_unmodified_since && strata_http_date_parse(c->if_unmodified_since, &t) == 0) {
        if (mtime > t)
            return 412;
    }
    /* Step 3 and 4: If-None-Match, else If-Modified-Since. */
    if (c->if_none_match) {
        if (strata_s3_etag_list_match(c->if_none_match, etag))
            return 304;
    } else if (c->if_modified_since && strata_http_date_parse(c->if_modified_since, &t) == 0) {
        if (mtime <= t)
            return 304;
    }
    return 0;
}
