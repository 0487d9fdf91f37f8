/*
 * srv_config.c - the JSON configuration file and the effective
 * configuration (contract in srv_config.h).  Start-up only, main thread;
 * strata_srv_config_json also from connection threads (reads only).
 */
#include "srv_config.h"

#include <stdio.h>
#include <string.h>

#include "authz.h"

/* "config" is what --print-config says was read: accepted and ignored, so
 * a printed configuration loads back. */
static const char *const extra_keys[] = {"drives", "root-user", "root-password", "config",
                                         "metrics-public", "sse-c-allow-http", "tiers",
                                         "storage-classes", "notify-targets",
                                         "notify-token-files", "replication-targets"};

static bool key_known(const char *k, const char *const *keys, size_t nkeys)
{
    for (size_t i = 0; i < nkeys; i++)
        if (strcmp(keys[i], k) == 0)
            return true;
    for (size_t i = 0; i < sizeof(extra_keys) / sizeof(extra_keys[0]); i++)
        if (strcmp(extra_keys[i], k) == 0)
            return true;
    return false;
}

json_t *strata_srv_config_load(const char *path, const char *const *keys, size_t nkeys,
                               char *err, size_t err_len)
{
    json_error_t je;
    json_t *conf = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!conf) {
        snprintf(err, err_len, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(conf)) {
        snprintf(err, err_len, "%s: not a JSON object", path);
        json_decref(conf);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(conf, k, v) {
        const char *why = NULL;
        if (!key_known(k, keys, nkeys))
            why = "unknown key";
        else if (json_is_null(v))
            continue; /* not set, as --print-config shows it */
        else if (strcmp(k, "drives") == 0 || strcmp(k, "tiers") == 0 ||
                 strcmp(k, "storage-classes") == 0 || strcmp(k, "notify-targets") == 0 ||
                 strcmp(k, "notify-token-files") == 0 || strcmp(k, "replication-targets") == 0) {
            size_t i;
            json_t *d;
            if (!json_is_array(v))
                why = "want an array of strings";
            json_array_foreach(v, i, d) if (!json_is_string(d)) why = "want an array of strings";
        } else if (strcmp(k, "metrics-public") == 0 || strcmp(k, "sse-c-allow-http") == 0) {
            if (!json_is_boolean(v))
                why = "want true or false";
        } else if (!json_is_string(v) && !json_is_integer(v)) {
            why = "want a string, an integer or null";
        } else if (strcmp(k, "root-password") == 0 && json_is_string(v) &&
                   strcmp(json_string_value(v), STRATA_CONFIG_MASK) == 0) {
            why = "is the mask of a printed configuration, not a password";
        }
        if (why) {
            snprintf(err, err_len, "%s: \"%s\": %s", path, k, why);
            json_decref(conf);
            return NULL;
        }
    }
    return conf;
}

const char *strata_srv_config_value(json_t *conf, const char *key)
{
    json_t *v = conf ? json_object_get(conf, key) : NULL;
    if (json_is_integer(v)) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        /* Replaced by its text, so the string lives as long as conf. */
        json_object_set_new(conf, key, json_string(buf));
        v = json_object_get(conf, key);
    }
    return json_string_value(v);
}

static json_t *opt_str(const char *v)
{
    return v ? json_string(v) : json_null();
}

json_t *strata_srv_config_json(const struct strata_srv_config *c)
{
    static const char *const levels[] = {"err", "warn", "notice", "info", "debug"};
    json_t *drives = json_array();
    for (size_t i = 0; drives && i < c->ndrives; i++)
        json_array_append_new(drives, json_string(c->drives[i]));
    json_t *doc = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
        " s:s, s:b, s:o}",
        "config", opt_str(c->config_file), "address", opt_str(c->address),
        "users", opt_str(c->users_file), "tls-cert", opt_str(c->tls_cert),
        "tls-key", opt_str(c->tls_key), "domain", opt_str(c->domain),
        "access-log", opt_str(c->access_log), "admin-users", opt_str(c->admin_users),
        "root-user", opt_str(c->root_user),
        /* Never the secret, not even its length. */
        "root-password", STRATA_CONFIG_MASK,
        "inline-max", (json_int_t)c->inline_max, "cache-mb", (json_int_t)c->cache_mb,
        "max-inflight", (json_int_t)c->max_inflight, "timeout", (json_int_t)c->conn_timeout_s,
        "threads", (json_int_t)c->threads, "workers", (json_int_t)c->workers,
        "max-conns-per-ip", (json_int_t)c->conns_per_ip,
        "body-memory-mb", (json_int_t)(c->body_memory >> 20),
        "log-level", c->log_level >= 0 && c->log_level < 5 ? levels[c->log_level] : "info",
        "metrics-public", c->metrics_public, "drives", drives);
    if (doc) {
        /* The lifecycle flags (-1: derived from the day length). */
        json_object_set_new(doc, "lc-day-seconds", json_integer(c->lc_day_ms / 1000));
        json_object_set_new(doc, "ilm-interval-seconds", json_integer(c->ilm_interval_s));
        json_object_set_new(doc, "ilm-rate", json_integer(c->ilm_rate));
        json_object_set_new(doc, "heal-interval-seconds", json_integer(c->heal_interval_s));
        json_object_set_new(doc, "orphan-grace-seconds", json_integer(c->orphan_grace_s));
        json_object_set_new(doc, "ilm-move-mbps", json_integer(c->ilm_move_mbps));
        json_object_set_new(doc, "ilm-due-rate", json_integer(c->ilm_due_rate));
        json_object_set_new(doc, "heal-rate", json_integer(c->heal_rate));
        json_object_set_new(doc, "memtable-mb", json_integer((json_int_t)c->memtable_mb));
        json_object_set_new(doc, "mpu-retry-seconds", json_integer(c->mpu_retry_s));
        json_object_set_new(doc, "read-cache-max-mb",
                            json_integer((json_int_t)(c->read_cached_max >> 20)));
        json_t *tiers = json_array(), *classes = json_array();
        for (unsigned i = 0; tiers && i < c->ntier_specs; i++)
            json_array_append_new(tiers, json_string(c->tier_specs[i]));
        for (unsigned i = 0; classes && i < c->nclass_specs; i++)
            json_array_append_new(classes, json_string(c->class_specs[i]));
        json_object_set_new(doc, "tiers", tiers ? tiers : json_null());
        json_object_set_new(doc, "storage-classes", classes ? classes : json_null());
        json_object_set_new(doc, "kms-key-file", opt_str(c->kms_key_file));
        json_object_set_new(doc, "tier-credentials", opt_str(c->tier_credentials));
        json_t *nt = json_array(), *nk = json_array();
        for (unsigned i = 0; nt && i < c->nnotify_specs; i++)
            json_array_append_new(nt, json_string(c->notify_specs[i]));
        for (unsigned i = 0; nk && i < c->nnotify_token_specs; i++)
            json_array_append_new(nk, json_string(c->notify_token_specs[i]));
        json_object_set_new(doc, "notify-targets", nt ? nt : json_null());
        json_object_set_new(doc, "notify-token-files", nk ? nk : json_null());
        json_object_set_new(doc, "notify-queue-max",
                            c->notify_queue_max ? json_integer((json_int_t)c->notify_queue_max)
                                                : json_null());
        json_t *rt = json_array();
        for (unsigned i = 0; rt && i < c->nrepl_specs; i++)
            json_array_append_new(rt, json_string(c->repl_specs[i]));
        json_object_set_new(doc, "replication-targets", rt ? rt : json_null());
        json_object_set_new(doc, "sse-c-allow-http", json_boolean(c->sse_c_allow_http));
        json_object_set_new(doc, "metrics-token-file", opt_str(c->metrics_token_file));
        json_object_set_new(doc, "region", opt_str(c->region));
        json_object_set_new(doc, "default-object-ownership",
                            json_string(strata_ownership_name(c->default_ownership)));
        json_object_set_new(doc, "rados-conf", opt_str(c->rados_conf));
        json_object_set_new(doc, "rados-id", opt_str(c->rados_id));
        json_object_set_new(doc, "rados-pool-prefix", opt_str(c->rados_pool_prefix));
        json_object_set_new(doc, "root-display-name",
                            json_string(c->root_display_name ? c->root_display_name : "root"));
    }
    return doc;
}
