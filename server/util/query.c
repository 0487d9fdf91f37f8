/*
 * query.c - see query.h.
 */
#include "query.h"

#include <string.h>

#include "url.h"

int strata_s3_query_parse(char *buf, struct strata_qparam *out, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    if (!buf)
        return 0;
    for (char *tok = strtok_r(buf, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
        if (n == max)
            return -1;
        char *eq = strchr(tok, '=');
        char *val = tok + strlen(tok); /* "" inside buf: decoding writes to it */
        if (eq) {
            *eq = '\0';
            val = eq + 1;
        }
        if (strata_url_decode_str(tok, true) != 0 || strata_url_decode_str(val, true) != 0)
            return -1;
        out[n].name = tok;
        out[n].value = val;
        n++;
    }
    return (int)n;
}
