/*
 * remote_creds.h - the credentials of the daemon's remote S3 endpoints
 * (remote tiers, replication targets), from --tier-credentials FILE:
 *
 *   {"NAME": {"access_key": "...", "secret_key": "...", "region": "..."}, ...}
 *
 * NAME is the tier's or target's name; region is optional (us-east-1).
 * Secrets never go on the command line, so the file is refused unless it
 * is a regular file owned by the daemon's effective user with no group or
 * other permission bits (mode 0600 or 0400).
 *
 * Loaded once at start, before threads; read-only afterwards (any thread).
 * Nothing here prints: errors come back as messages in err.
 */
#ifndef STRATA_SERVER_REMOTE_REMOTE_CREDS_H
#define STRATA_SERVER_REMOTE_REMOTE_CREDS_H

#include <stddef.h>

#define STRATA_REMOTE_NAME_MAX 63

struct strata_remote_cred {
    char name[STRATA_REMOTE_NAME_MAX + 1];
    char access_key[128];
    char secret_key[128];
    char region[64];
};

struct strata_remote_creds {
    struct strata_remote_cred *v; /* owned */
    size_t n;
};

/* Load path into out (which is overwritten); 0, or -1 with a message in
 * err naming the file and what is wrong (mode, owner, JSON, field). */
int strata_remote_creds_load(const char *path, struct strata_remote_creds *out, char *err,
                             size_t errlen);
/* The entry named name, or NULL. */
const struct strata_remote_cred *strata_remote_creds_find(const struct strata_remote_creds *cs,
                                                          const char *name);
/* Wipes the secrets and frees; NULL-safe, idempotent. */
void strata_remote_creds_fini(struct strata_remote_creds *cs);

#endif /* STRATA_SERVER_REMOTE_REMOTE_CREDS_H */
