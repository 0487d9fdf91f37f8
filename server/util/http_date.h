/*
 * http_date.h - the dates of HTTP and S3: the HTTP-date of Date,
 * Last-Modified, If-Modified-Since and SigV2 (RFC 9110 5.6.7, with the
 * numeric-zone form of RFC 2822 that AWS's SigV2 examples use) and the
 * ISO 8601 form of S3's XML bodies.  The amz-date of SigV4
 * ("20130524T000000Z") belongs to signing and lives in sigv4_text.c.
 *
 * Pure functions, any thread.
 */
#ifndef STRATA_SERVER_HTTP_DATE_H
#define STRATA_SERVER_HTTP_DATE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* "Sun, 06 Nov 1994 08:49:37 GMT" into out (>= 30 bytes). */
void strata_http_date_format(time_t t, char *out, size_t out_len);
/* An HTTP-date in any of its forms: RFC 1123 ("Sun, 06 Nov 1994 08:49:37
 * GMT", also with a numeric zone "+0000"), RFC 850 ("Sunday, 06-Nov-94
 * 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37 1994"); surrounding
 * spaces ignored.  0, or STRATA_EINVAL when unparseable. */
int strata_http_date_parse(const char *s, time_t *out);
/* "2009-10-12T17:50:30.000Z" into out (>= 25 bytes). */
void strata_iso8601_format(int64_t ms, char *out, size_t out_len);
/* "2027-01-01T00:00:00Z" (Object Lock retain-until dates), with an optional
 * fraction of a second (beyond ms truncated) and "Z" or a "+hh:mm"/"-hh:mm"
 * offset, into Unix ms; no date before 1970.  0, or STRATA_EINVAL. */
int strata_iso8601_parse(const char *s, int64_t *ms);

#endif /* STRATA_SERVER_HTTP_DATE_H */
