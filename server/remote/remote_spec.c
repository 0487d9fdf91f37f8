/*
 * remote_spec.c - NAME:URL endpoint specs (remote_spec.h).
 */
#include "remote_spec.h"

#include "pqueue.h"
#include "remote_creds.h"

#include <stdio.h>
#include <string.h>

int strata_remote_spec_split(const char *spec, char *name, char *endpoint, size_t ep_len,
                             char *err, size_t err_len)
{
    const char *c = strchr(spec, ':');
    if (!c || !strata_pqueue_name_ok(spec, (size_t)(c - spec), STRATA_REMOTE_NAME_MAX)) {
        snprintf(err, err_len, "--replication-target %s: want NAME:URL, NAME of letters, "
                               "digits, - and _", spec);
        return -1;
    }
    memcpy(name, spec, (size_t)(c - spec));
    name[c - spec] = '\0';
    const char *url = c + 1;
    const char *rest = strncmp(url, "http://", 7) == 0    ? url + 7
                       : strncmp(url, "https://", 8) == 0 ? url + 8
                                                          : NULL;
    const char *colon = rest ? strrchr(rest, ':') : NULL;
    size_t ul = strlen(url);
    if (!rest || !colon || colon == rest || !colon[1] || strchr(rest, '/') || ul >= ep_len ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
        snprintf(err, err_len, "--replication-target %s: URL must be http[s]://HOST:PORT", spec);
        return -1;
    }
    memcpy(endpoint, url, ul + 1);
    return 0;
}

int strata_remote_spec_check(const char *spec, char *err, size_t err_len)
{
    char name[STRATA_REMOTE_NAME_MAX + 1], ep[300];
    return strata_remote_spec_split(spec, name, ep, sizeof(ep), err, err_len);
}
