/*
 * sbuf.c - growable byte buffer with a ceiling (see sbuf.h).  Pure; any
 * thread.
 */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strata_sbuf_init(struct strata_sbuf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void strata_sbuf_fini(struct strata_sbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

static int grow(struct strata_sbuf *b, size_t need)
{
    if (b->failed)
        return -1;
    if (need > b->max) {
        b->failed = true;
        return -1;
    }
    if (need + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int strata_sbuf_append(struct strata_sbuf *b, const void *p, size_t len)
{
    if (grow(b, b->len + len) != 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int strata_sbuf_puts(struct strata_sbuf *b, const char *s)
{
    return strata_sbuf_append(b, s, strlen(s));
}

int strata_sbuf_printf(struct strata_sbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return -1;
    }
    if ((size_t)n < sizeof(small))
        return strata_sbuf_append(b, small, (size_t)n);
    if (grow(b, b->len + (size_t)n) != 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int strata_sbuf_xml(struct strata_sbuf *b, const char *s)
{
    const char *run = s;
    char ref[8];
    for (; *s; s++) {
        const char *rep = NULL;
        if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r') {
            /* XML 1.0 has no way to carry C0 controls, not even as
             * references; AWS writes "&#x1;" and so do we, so the text is
             * unambiguous.  Clients that list such keys ask for
             * encoding-type=url (botocore always does). */
            snprintf(ref, sizeof(ref), "&#x%x;", (unsigned)(unsigned char)*s);
            rep = ref;
        }
        switch (*s) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        case '\r': rep = "&#13;"; break; /* keep CR through XML parsers' newline folding */
        default: break;
        }
        if (rep) {
            strata_sbuf_append(b, run, (size_t)(s - run));
            strata_sbuf_puts(b, rep);
            run = s + 1;
        }
    }
    return strata_sbuf_append(b, run, (size_t)(s - run));
}

int strata_sbuf_xml_elem(struct strata_sbuf *b, const char *tag, const char *value)
{
    /* Appends, not printf: listings write a few per entry. */
    strata_sbuf_puts(b, "<");
    strata_sbuf_puts(b, tag);
    strata_sbuf_puts(b, ">");
    strata_sbuf_xml(b, value);
    strata_sbuf_puts(b, "</");
    strata_sbuf_puts(b, tag);
    return strata_sbuf_puts(b, ">");
}

char *strata_sbuf_steal(struct strata_sbuf *b, size_t *len)
{
    char *p = b->data;
    *len = b->len;
    if (!p) {
        p = calloc(1, 1);
        *len = 0;
    }
    size_t max = b->max;
    memset(b, 0, sizeof(*b));
    b->max = max;
    return p;
}
