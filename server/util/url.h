/*
 * url.h - percent-encoding as the HTTP transport and S3 use it: the one
 * decoder of request targets, query parameters and signed parameters, and
 * the one encoder (AWS's URI-encoding, for SigV4 canonical requests,
 * encoding-type=url listings, tag sets and the access log).
 *
 * Pure functions, no allocation, any thread.
 */
#ifndef STRATA_SERVER_URL_H
#define STRATA_SERVER_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strata_sbuf;

/*
 * Percent-decode s[0..n) into out (cap bytes).  out may be s itself:
 * decoding never grows.  '+' becomes ' ' when plus_space (query strings).
 * Returns the decoded length, or -1 on a malformed escape ("%", "%4",
 * "%zz"), on overflow, or when an escape decodes to a NUL byte: no bucket,
 * key or parameter S3 accepts contains one, and refusing it everywhere
 * keeps the C strings the handlers see identical to the bytes that were
 * signed.
 */
long strata_url_decode(const char *s, size_t n, char *out, size_t cap, bool plus_space);
/* The same in place on a NUL-terminated string: 0 or -1. */
int strata_url_decode_str(char *s, bool plus_space);

/*
 * AWS URI-encoding: A-Z a-z 0-9 - _ . ~ stay, every other byte becomes
 * %XX (upper-case hex); '/' stays when keep_slash.  Writes s[0..n) encoded
 * to out (no NUL added) and returns the length, or -1 when cap is too
 * small (3n always suffices).
 */
long strata_url_encode(const char *s, size_t n, char *out, size_t cap, bool keep_slash);
/* The bytes AWS's URI-encoding leaves alone: A-Z a-z 0-9 - _ . ~ */
extern const uint8_t strata_url_unreserved_tab[256];
static inline bool strata_url_unreserved(unsigned char c)
{
    return strata_url_unreserved_tab[c] != 0;
}
/* The same for a NUL-terminated s, appended to b.  0, or -1 when b has
 * failed (out of memory or over its cap). */
int strata_url_encode_sbuf(struct strata_sbuf *b, const char *s, bool keep_slash);
/* <tag>v</tag> appended to b: v URL-encoded ('/' kept) when url (a
 * listing's encoding-type=url), else XML-escaped. */
void strata_url_xml_elem(struct strata_sbuf *b, const char *tag, const char *v, bool url);

#endif /* STRATA_SERVER_URL_H */
