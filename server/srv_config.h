/*
 * srv_config.h - the daemon's configuration file and its effective
 * configuration as JSON (jansson; Debian has no C TOML library).
 *
 * The file is one JSON object whose keys are the config keys of the
 * option table (options.h: the long flag names of "strata server", the
 * repeatable ones in the plural, "tiers", ...), plus the file-only rows
 * "drives" (an array of drive arguments, ranges allowed), "root-user" and
 * "root-password".  Switches are true/false, lists arrays of strings,
 * other values strings, integers or null (not set); "config" (which
 * --print-config shows) is ignored.  Flags on the command line win over
 * the file; STRATA_ROOT_USER/PASSWORD win over its root keys; drive
 * arguments on the command line replace its "drives".
 *
 * strata_srv_config_json is what `strata --print-config` prints and the
 * admin API's config endpoint answers: the same keys, with the root
 * password masked as STRATA_CONFIG_MASK.  A file holding the mask as its
 * password is refused, so a printed configuration cannot silently set it.
 */
#ifndef STRATA_SERVER_SRV_CONFIG_H
#define STRATA_SERVER_SRV_CONFIG_H

#include <stddef.h>

#include <jansson.h>

#include "srv.h"

#define STRATA_CONFIG_MASK "********"

/*
 * Reads path.  Returns the object (caller decrefs; strings handed out by
 * strata_srv_config_value live as long as it), or NULL with a message in
 * err naming the file, line or key: not JSON, not an object, a key no row
 * of the option table has, a value of the wrong type for its row.  The
 * values themselves are checked when they are applied
 * (strata_srv_opts_apply_file: the masked password, a bad number, ...).
 */
json_t *strata_srv_config_load(const char *path, char *err, size_t err_len);
/* The value of key as a string ("7" for the integer 7, kept in conf), or
 * NULL when absent. */
const char *strata_srv_config_value(json_t *conf, const char *key);

/* The effective configuration: every row with a config key, in table
 * order (new reference; NULL on out of memory). */
json_t *strata_srv_config_json(const struct strata_srv_config *c);

#endif /* STRATA_SERVER_SRV_CONFIG_H */
