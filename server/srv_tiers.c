/*
 * srv_tiers.c - tier specs (--tier NAME:[K+M:]DRIVES, NAME:s3:URL,
 * NAME:rados:POOL), the class map
 * (--storage-class CLASS:TIER) and opening the tiers' drive sets.
 */
#include "srv_tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drive_args.h"
#include "remote_creds.h"
#include "remote_tier.h"
#include "s3_client.h"
#include "srv.h"
#include "strata/log.h"

#define TIER_DRIVES_MAX 256

void strata_srv_tiers_init(struct strata_srv_tiers *ts)
{
    memset(ts, 0, sizeof(*ts));
    strata_class_map_default(&ts->map);
}

struct strata_srv_tier *strata_srv_tiers_find(struct strata_srv_tiers *ts, const char *name)
{
    for (unsigned i = 0; name && i < ts->n; i++)
        if (strcmp(ts->t[i].name, name) == 0)
            return &ts->t[i];
    return NULL;
}

/* "K+M:" at the start of s: geometry, and s advanced past it. */
static bool geometry(const char **s, unsigned *k, unsigned *m)
{
    unsigned a, b;
    int used = 0;
    if (sscanf(*s, "%u+%u:%n", &a, &b, &used) != 2 || used == 0)
        return false;
    *k = a;
    *m = b;
    *s += used;
    return true;
}

/* The tier being added is complete with *dst = a copy of v. */
static int keep(struct strata_srv_tiers *ts, char **dst, const char *v, char *err, size_t errlen)
{
    if (!(*dst = strdup(v))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ts->n++;
    return 0;
}

/* NAME:rados:POOL (rest is what follows NAME:, at "rados:"): the pool is
 * opened on the RADOS store's connection (srv_rados.c). */
static int pool_add(struct strata_srv_tiers *ts, struct strata_srv_tier *t, const char *rest,
                    char *err, size_t errlen)
{
    const char *pool = rest + strlen(STRATA_SRV_TIER_POOL);
    if (strcmp(t->name, STRATA_TIER_HOT) == 0) {
        snprintf(err, errlen, "tier hot is the pool PREFIX.data of the RADOS store "
                              "(--rados-pool-prefix): it cannot be given as a pool");
        return -1;
    }
    bool ok = *pool && strlen(pool) <= STRATA_SRV_POOL_MAX;
    for (const char *c = pool; ok && *c; c++)
        ok = *c > ' ' && *c < 0x7f && *c != ',' && *c != ':';
    if (!ok) {
        snprintf(err, errlen, "tier %s: want NAME:rados:POOL with a pool name of 1 to %d "
                              "printable characters (no space, comma or colon)",
                 t->name, STRATA_SRV_POOL_MAX);
        return -1;
    }
    return keep(ts, &t->pool, pool, err, errlen);
}

bool strata_srv_tier_spec_is_pool(const char *spec)
{
    const char *colon = strchr(spec, ':');
    return colon && strncmp(colon + 1, STRATA_SRV_TIER_POOL, strlen(STRATA_SRV_TIER_POOL)) == 0;
}

bool strata_srv_tier_spec_is_remote(const char *spec)
{
    const char *colon = strchr(spec, ':');
    return colon && (strncmp(colon + 1, "s3:", 3) == 0 || strncmp(colon + 1, "s3,", 3) == 0);
}

/* NAME:s3[,lock][,restore]:URL (rest is what follows NAME:, at "s3"). */
static int remote_add(struct strata_srv_tiers *ts, struct strata_srv_tier *t, const char *rest,
                      char *err, size_t errlen)
{
    const char *url = rest + 2;
    while (*url == ',') {
        if (strncmp(url, ",lock", 5) == 0 && !t->lock && (url[5] == ':' || url[5] == ',')) {
            t->lock = true;
            url += 5;
        } else if (strncmp(url, ",restore", 8) == 0 && !t->restore &&
                   (url[8] == ':' || url[8] == ',')) {
            t->restore = true;
            url += 8;
        } else {
            snprintf(err, errlen, "tier %s: flags of s3 are lock and restore (s3,lock,restore:URL)",
                     t->name);
            return -1;
        }
    }
    url++; /* the ':' */
    struct strata_s3c_url u;
    if (strcmp(t->name, STRATA_TIER_HOT) == 0) {
        snprintf(err, errlen, "tier hot holds the metadata: it cannot be remote");
        return -1;
    }
    char why[400];
    if (strata_s3c_url_parse(url, &u, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "tier %s: %s", t->name, why);
        return -1;
    }
    return keep(ts, &t->url, url, err, errlen);
}

int strata_srv_tiers_add(struct strata_srv_tiers *ts, const char *spec, char *err, size_t errlen)
{
    const char *colon = strchr(spec, ':');
    char name[STRATA_TIER_NAME_MAX + 2];
    if (!colon || (size_t)(colon - spec) > STRATA_TIER_NAME_MAX) {
        snprintf(err, errlen, "tier \"%s\": want NAME:[K+M:]DRIVES", spec);
        return -1;
    }
    snprintf(name, sizeof(name), "%.*s", (int)(colon - spec), spec);
    if (!strata_tier_name_ok(name)) {
        snprintf(err, errlen, "tier name \"%s\": 1 to 31 of a-z, 0-9, _ and -", name);
        return -1;
    }
    if (strata_srv_tiers_find(ts, name) || ts->n == STRATA_TIERS_MAX) {
        snprintf(err, errlen, "tier %s: given twice, or more than %d tiers", name,
                 STRATA_TIERS_MAX);
        return -1;
    }
    struct strata_srv_tier *t = &ts->t[ts->n];
    memset(t, 0, sizeof(*t));
    memcpy(t->name, name, strlen(name) + 1); /* at most STRATA_TIER_NAME_MAX, checked */
    const char *rest = colon + 1;
    if (strata_srv_tier_spec_is_remote(spec))
        return remote_add(ts, t, rest, err, errlen);
    if (strncmp(rest, STRATA_SRV_TIER_POOL, strlen(STRATA_SRV_TIER_POOL)) == 0)
        return pool_add(ts, t, rest, err, errlen);
    if (geometry(&rest, &t->k, &t->m) &&
        (t->k < 1 || t->m < 1 || t->k + t->m < STRATA_DRIVES_MIN ||
         t->k + t->m > STRATA_DRIVES_MAX)) {
        snprintf(err, errlen, "tier %s: geometry K+M needs K, M >= 1 and 4 <= K+M <= 16", name);
        return -1;
    }
    t->drives = calloc(TIER_DRIVES_MAX, sizeof(*t->drives));
    char *list = strdup(rest);
    if (!t->drives || !list) {
        free(t->drives);
        free(list);
        t->drives = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    char *save = NULL;
    for (char *d = strtok_r(list, ",", &save); d && rc == 0; d = strtok_r(NULL, ",", &save))
        rc = strata_drive_args_expand(d, t->drives, &t->ndrives, TIER_DRIVES_MAX);
    free(list);
    unsigned per = t->k ? t->k + t->m : strata_drive_set_size_pick((unsigned)t->ndrives);
    if (rc == 0 && (t->ndrives == 0 || per == 0 || t->ndrives % per != 0))
        rc = -1;
    if (rc) {
        snprintf(err, errlen, "tier %s: bad drives \"%s\" (%zu drives; sets of %u)", name, rest,
                 t->ndrives, per);
        for (size_t i = 0; i < t->ndrives; i++)
            free(t->drives[i]);
        free(t->drives);
        t->drives = NULL;
        return -1;
    }
    ts->n++;
    return 0;
}

int strata_srv_tiers_class(struct strata_srv_tiers *ts, const char *spec, char *err,
                           size_t errlen)
{
    int rc = strata_class_map_set(&ts->map, spec);
    if (rc)
        snprintf(err, errlen, "storage class \"%s\": want CLASS:TIER (CLASS of A-Z, 0-9, _)",
                 spec);
    return rc ? -1 : 0;
}

static int remote_open(struct strata_srv_tiers *ts, struct strata_srv_tier *t,
                       const struct strata_logger *log, char *err, size_t errlen)
{
    const char *std = strata_class_map_tier(&ts->map, "STANDARD");
    if (std && strcmp(std, t->name) == 0) {
        snprintf(err, errlen,
                 "tier %s is remote: STANDARD (the class of writes without "
                 "x-amz-storage-class) cannot map to it",
                 t->name);
        return -1;
    }
    const struct strata_remote_cred *c = strata_remote_creds_find(ts->creds, t->name);
    if (!c) {
        snprintf(err, errlen,
                 "tier %s: no credentials: give --tier-credentials FILE with an entry \"%s\"",
                 t->name, t->name);
        return -1;
    }
    struct strata_remote_tier_opts o = {.name = t->name, .url = t->url, .lock = t->lock,
                                        .access_key = c->access_key,
                                        .secret_key = c->secret_key, .region = c->region};
    if (strata_remote_tier_create(&o, &t->tier, err, errlen) != 0)
        return -1;
    int rc = strata_remote_tier_check(t->tier, err, errlen);
    if (rc < 0) {
        strata_tier_destroy(t->tier);
        t->tier = NULL;
        return -1;
    }
    if (rc > 0) /* down now: the tier works once it is back */
        strata_log(log, STRATA_LOG_WARN, "tiers", "%s", err);
    return 0;
}

int strata_srv_tier_open(struct strata_srv_tiers *ts, struct strata_srv_tier *t,
                         uint64_t read_cached_max, const struct strata_logger *log, char *err,
                         size_t errlen)
{
    if (t->url)
        return remote_open(ts, t, log, err, errlen);
    if (t->pool) { /* the RADOS store opens it (srv_rados.c) */
        snprintf(err, errlen,
                 "tier %s: a pool (NAME:rados:POOL) needs the RADOS store (--rados-conf FILE); "
                 "on local drives a tier is NAME:[K+M:]DRIVES or NAME:s3:URL",
                 t->name);
        return -1;
    }
    unsigned per = t->k ? t->k + t->m : strata_drive_set_size_pick((unsigned)t->ndrives);
    t->nsets = (unsigned)(t->ndrives / per);
    t->sets = calloc(t->nsets, sizeof(*t->sets));
    if (!t->sets) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned i = 0; i < t->nsets; i++) {
        struct strata_set_opts so = {.set_index = i, .direct_io = true, .m = t->m,
                                     .read_cached_max = read_cached_max, .log = *log};
        struct strata_errinfo ei = {.drive = -1};
        int rc = strata_set_open((const char *const *)t->drives + (size_t)i * per, per, &so,
                                 &t->sets[i], &ei);
        if (rc) {
            snprintf(err, errlen, "tier %s: cannot open drive set %u: %s%s%.300s", t->name, i,
                     strata_strerror(rc), ei.msg[0] ? ": " : "", ei.msg);
            for (unsigned j = 0; j < i; j++)
                strata_set_close(t->sets[j]);
            free(t->sets);
            t->sets = NULL;
            t->nsets = 0;
            return -1;
        }
    }
    return 0;
}

void strata_srv_tier_close(struct strata_srv_tier *t)
{
    strata_tier_destroy(t->tier);
    t->tier = NULL;
    for (unsigned j = 0; t->sets && j < t->nsets; j++)
        strata_set_close(t->sets[j]);
    free(t->sets);
    t->sets = NULL;
    t->nsets = 0;
}

void strata_srv_tiers_fini(struct strata_srv_tiers *ts)
{
    for (unsigned i = 0; i < ts->n; i++) {
        strata_srv_tier_close(&ts->t[i]);
        for (size_t d = 0; ts->t[i].drives && d < ts->t[i].ndrives; d++)
            free(ts->t[i].drives[d]);
        free(ts->t[i].drives);
        free(ts->t[i].url);
        free(ts->t[i].pool);
    }
    ts->n = 0;
}

bool strata_srv_tier_is_remote(const struct strata_srv_tiers *ts, const char *name)
{
    for (unsigned i = 0; ts && name && i < ts->n; i++)
        if (strcmp(ts->t[i].name, name) == 0)
            return ts->t[i].url != NULL;
    return false;
}

const char *strata_srv_class_tier(const struct strata_srv_tiers *ts, const char *cls)
{
    const char *tier = strata_class_map_tier(&ts->map, cls);
    if (!tier)
        return NULL;
    if (strcmp(tier, "hot") == 0)
        return tier;
    for (unsigned i = 0; i < ts->n; i++)
        if (strcmp(ts->t[i].name, tier) == 0)
            return tier;
    return NULL;
}

int strata_srv_tiers_archive(const struct strata_srv_tiers *ts, struct strata_meta *m)
{
    for (unsigned j = 0; ts && j < ts->n; j++) {
        int rc = ts->t[j].restore ? strata_meta_tier_archive(m, ts->t[j].name) : 0;
        if (rc) {
            strata_srv_log(STRATA_LOG_ERR, "tier %s: restore: %s", ts->t[j].name,
                           strata_strerror(rc));
            return -1;
        }
    }
    return 0;
}
