/*
 * sbuf.h - a growable byte buffer with a ceiling, for XML bodies and
 * listing pages.  Growth past the ceiling fails (and sticks: after a
 * failure every append is a no-op), so a caller can append freely and
 * check once at the end.  One owner: whoever initialised it calls
 * strata_sbuf_fini() or takes the bytes with strata_sbuf_steal().
 * Any thread; one thread at a time per buffer.
 */
#ifndef STRATA_SERVER_SBUF_H
#define STRATA_SERVER_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strata_sbuf {
    char *data;   /* NUL-terminated while len < cap */
    size_t len;
    size_t cap;
    size_t max;   /* ceiling on len */
    bool failed;  /* an append hit the ceiling or malloc failed */
};

void strata_sbuf_init(struct strata_sbuf *b, size_t max);
void strata_sbuf_fini(struct strata_sbuf *b);
/* Return 0, or -1 (and set failed) when the ceiling or memory ran out. */
int strata_sbuf_append(struct strata_sbuf *b, const void *p, size_t len);
int strata_sbuf_puts(struct strata_sbuf *b, const char *s);
__attribute__((format(printf, 2, 3))) int strata_sbuf_printf(struct strata_sbuf *b,
                                                             const char *fmt, ...);
/* Append s with XML's five special characters escaped, CR as "&#13;" (so
 * parsers do not fold it) and other C0 controls as "&#xN;", as AWS does. */
int strata_sbuf_xml(struct strata_sbuf *b, const char *s);
/* <tag>escaped value</tag> */
int strata_sbuf_xml_elem(struct strata_sbuf *b, const char *tag, const char *value);
/* Hand the bytes to the caller (free() them); the buffer is left empty. */
char *strata_sbuf_steal(struct strata_sbuf *b, size_t *len);

#endif /* STRATA_SERVER_SBUF_H */
