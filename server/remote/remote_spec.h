/*
 * remote_spec.h - a remote S3 endpoint named on the command line as
 * NAME:URL (--replication-target): NAME of [A-Za-z0-9_-], 1..63, URL
 * http[s]://HOST:PORT.  Pure; shared by the option parser, which refuses a
 * bad spec at start, and the replication targets (server/repl/), which
 * split it.  Any thread.
 */
#ifndef STRATA_SERVER_REMOTE_REMOTE_SPEC_H
#define STRATA_SERVER_REMOTE_REMOTE_SPEC_H

#include <stddef.h>

/* spec split into name (STRATA_REMOTE_NAME_MAX + 1 bytes) and endpoint
 * (the URL, ep_len bytes): 0, or -1 with err set. */
int strata_remote_spec_split(const char *spec, char *name, char *endpoint, size_t ep_len,
                             char *err, size_t err_len);
/* The same check without the parts. */
int strata_remote_spec_check(const char *spec, char *err, size_t err_len);

#endif /* STRATA_SERVER_REMOTE_REMOTE_SPEC_H */
