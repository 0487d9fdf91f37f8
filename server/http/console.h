/*
 * console.h - the web console: static files (server/console/) compiled
 * into the binary (cmake/embed_files.cmake) and served at
 * STRATA_CONSOLE_PREFIX to unsigned, query-less GET and HEAD requests.
 * The console itself signs its S3 and admin API calls in the browser.
 *
 * Every answer carries a strict Content-Security-Policy (scripts, styles
 * and connections to this origin only; no inline code, no frames) and
 * no-cache: a new binary serves a new console at once.
 */
#ifndef STRATA_SERVER_HTTP_CONSOLE_H
#define STRATA_SERVER_HTTP_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

#define STRATA_CONSOLE_PREFIX "/strata/console/"

struct strata_console_file {
    const char *name; /* "index.html" */
    const unsigned char *data;
    size_t len;
};
/* The generated table (console_assets.c in the build directory). */
extern const struct strata_console_file strata_console_files[];
extern const unsigned strata_console_nfiles;

struct strata_req;

/* Whether the request is the console's: GET or HEAD, no query, no
 * Authorization header, and the path "/strata/console" or under
 * STRATA_CONSOLE_PREFIX.  Signed requests stay S3 requests (a bucket
 * named "strata" keeps its other keys). */
bool strata_console_is(struct strata_req *r);
/* Answers a console request: the file (index.html for the directory),
 * 301 to the prefix for "/strata/console", 404 text for anything else. */
void strata_console_serve(struct strata_req *r);
/* The Content-Type of a file name by its extension. */
const char *strata_console_ctype(const char *name);

#endif /* STRATA_SERVER_HTTP_CONSOLE_H */
