/*
 * srv_config.c - the JSON configuration file and the effective
 * configuration (contract in srv_config.h).  Start-up only, main thread;
 * strata_srv_config_json also from connection threads (reads only).
 */
#include "srv_config.h"

#include <stdio.h>
#include <string.h>

#include "options.h"

json_t *strata_srv_config_load(const char *path, char *err, size_t err_len)
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
        const struct strata_srv_opt *r = strata_srv_opt_by_key(k);
        if (!r)
            why = "unknown key";
        else if (json_is_null(v))
            continue; /* not set, as --print-config shows it */
        else if (r->type == STRATA_OPT_LIST) {
            size_t i;
            json_t *d;
            if (!json_is_array(v))
                why = "want an array of strings";
            json_array_foreach(v, i, d) if (!json_is_string(d)) why = "want an array of strings";
        } else if (r->type == STRATA_OPT_BOOL) {
            if (!json_is_boolean(v))
                why = "want true or false";
        } else if (!json_is_string(v) && !json_is_integer(v)) {
            why = "want a string, an integer or null";
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

json_t *strata_srv_config_json(const struct strata_srv_config *c)
{
    json_t *doc = json_object();
    for (size_t i = 0; doc && i < strata_srv_opt_count; i++) {
        const struct strata_srv_opt *r = &strata_srv_opt_table[i];
        if (r->key && json_object_set_new(doc, r->key, strata_srv_opt_json(r, c)) != 0) {
            json_decref(doc);
            return NULL;
        }
    }
    return doc;
}
