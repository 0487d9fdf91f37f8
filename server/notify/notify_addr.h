/*
 * notify_addr.h - the ADDRESS of the amqp, mqtt and postgres targets:
 * SCHEME://[USER@]HOST:PORT/PATH (notify_addr.c).  The user name may be
 * in the address; a password never is (it comes from the target's
 * --notify-token-file).  Pure functions, any thread.
 */
#ifndef STRATA_SERVER_NOTIFY_NOTIFY_ADDR_H
#define STRATA_SERVER_NOTIFY_NOTIFY_ADDR_H

#include <stddef.h>

struct strata_notify_addr {
    char user[65];   /* "" when not given */
    char host[256];  /* a name, an IPv4 address or [IPv6] without brackets */
    int port;        /* 1..65535 */
    char path[1024]; /* after the first '/', never empty */
};

/*
 * Splits s, which must start with scheme followed by "://".  The user is
 * [A-Za-z0-9._-]{1,64}, the host has no '@', '/', ':' (except inside
 * [...]) and no spaces, the port is decimal, and the path has no space or
 * control character.  0 with *out, or -1 (nothing else said: the caller
 * names the form it wants).
 */
int strata_notify_addr_parse(const char *s, const char *scheme, struct strata_notify_addr *out);

/* Cuts a->path at its first '/': the part after it (a->path keeps the part
 * before), or NULL when there is none. */
char *strata_notify_addr_split(struct strata_notify_addr *a);

/* A target's password: strdup'ed (NULL: none, *out NULL), 0 or -1 (out of
 * memory); freed with strata_secret_str_free (secret.h). */
int strata_notify_secret_dup(const char *s, char **out);

#endif /* STRATA_SERVER_NOTIFY_NOTIFY_ADDR_H */
