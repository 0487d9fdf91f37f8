/*
 * s3_tags.c - see s3_tags.h.
 */
#include "s3_tags.h"

#include <string.h>

#include "sbuf.h"
#include "url.h"

/* Characters of a UTF-8 string (bytes that do not continue a sequence). */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

int strata_s3_tags_validate(const struct strata_qparam *tags, int n, int max)
{
    if (n < 0 || n > max)
        return -1;
    for (int i = 0; i < n; i++) {
        size_t kl = utf8_chars(tags[i].name), vl = utf8_chars(tags[i].value);
        if (kl == 0 || kl > 128 || vl > 256)
            return -1;
        for (int j = 0; j < i; j++)
            if (strcmp(tags[i].name, tags[j].name) == 0)
                return -1;
    }
    return 0;
}

int strata_s3_tags_encode(struct strata_sbuf *b, const struct strata_qparam *tags, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            strata_sbuf_puts(b, "&");
        strata_url_encode_sbuf(b, tags[i].name, true);
        strata_sbuf_puts(b, "=");
        strata_url_encode_sbuf(b, tags[i].value, true);
    }
    return b->failed ? -1 : 0;
}

unsigned strata_s3_tags_count(const uint8_t *tags, size_t len)
{
    if (!tags || len == 0)
        return 0;
    unsigned n = 1;
    for (size_t i = 0; i < len; i++)
        n += tags[i] == '&';
    return n;
}
