/*
 * console.c - serves the web console's embedded files (contract in
 * console.h).  Any connection thread; the table is read-only.
 */
#include "console.h"

#include <string.h>


#include "request.h"

#define CSP "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " \
            "img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; " \
            "frame-ancestors 'none'"

bool strata_console_is(struct strata_req *r)
{
    if ((strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) || r->raw_query[0] ||
        strata_req_hdr(r, "Authorization"))
        return false;
    return strcmp(r->raw_path, "/strata/console") == 0 ||
           strncmp(r->raw_path, STRATA_CONSOLE_PREFIX, strlen(STRATA_CONSOLE_PREFIX)) == 0;
}

const char *strata_console_ctype(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

static void send_static(struct strata_req *r, int status, const char *ctype, const void *data,
                        size_t len, const char *location)
{
    struct strata_resp *resp = strata_resp_borrow(data, len, NULL, NULL); /* static bytes */
    strata_resp_hdr(resp, "Content-Type", ctype);
    strata_resp_hdr(resp, "Content-Security-Policy", CSP);
    strata_resp_hdr(resp, "X-Content-Type-Options", "nosniff");
    strata_resp_hdr(resp, "X-Frame-Options", "DENY");
    strata_resp_hdr(resp, "Referrer-Policy", "no-referrer");
    strata_resp_hdr(resp, "Cache-Control", "no-cache");
    if (location)
        strata_resp_hdr(resp, "Location", location);
    if (strcmp(r->method, "GET") == 0)
        r->bytes_out += len;
    strata_req_send(r, status, resp);
}

void strata_console_serve(struct strata_req *r)
{
    static const char moved[] = "see " STRATA_CONSOLE_PREFIX "\n";
    static const char missing[] = "no such console file\n";
    if (strcmp(r->raw_path, "/strata/console") == 0) {
        send_static(r, 301, "text/plain; charset=utf-8", moved, sizeof(moved) - 1,
                    STRATA_CONSOLE_PREFIX);
        return;
    }
    const char *name = r->raw_path + strlen(STRATA_CONSOLE_PREFIX);
    if (!*name)
        name = "index.html";
    /* Exact names from the table only: no path is ever built from the
     * request, so "..", "%2e" and friends simply do not match. */
    for (unsigned i = 0; i < strata_console_nfiles; i++) {
        const struct strata_console_file *f = &strata_console_files[i];
        if (strcmp(f->name, name) == 0) {
            send_static(r, 200, strata_console_ctype(f->name), f->data, f->len, NULL);
            return;
        }
    }
    send_static(r, 404, "text/plain; charset=utf-8", missing, sizeof(missing) - 1, NULL);
}
