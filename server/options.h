/*
 * options.h - the one table of "strata server" options.  Each row names a
 * long flag, a config file key, its type, where it lives in struct
 * strata_srv_config, its default, range and help text; flag parsing
 * (getopt_long), --help, the config file (srv_config.c) and
 * --print-config are all derived from it, so a new option is one row in
 * options.c (and, for a new setting, its member in struct
 * strata_srv_config); another usage form of a flag in --help (a new kind
 * of --tier) is a STRATA_OPT_FORM row after it.
 *
 * Start-up only, main thread (strata_srv_opts_json also from connection
 * threads: it only reads).  Functions return errors in err (no "strata: "
 * prefix) and never print, except strata_srv_opts_usage.
 */
#ifndef STRATA_SERVER_OPTIONS_H
#define STRATA_SERVER_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "srv.h"

struct strata_srv_tiers;

/* The lifecycle scanner's pass interval when --ilm-interval-seconds is not
 * given (or half a lifecycle day when that is shorter). */
#define STRATA_ILM_INTERVAL_S_DEFAULT 3600u

/* What parsing fills: the configuration, the tiers the --tier and
 * --storage-class rows build, and the flags that are actions rather than
 * settings. */
struct strata_srv_opts {
    struct strata_srv_config *cfg;
    struct strata_srv_tiers *tiers;
    bool help;         /* --help */
    bool print_config; /* --print-config */
    bool kms_rewrap;   /* --kms-rewrap */
};

enum strata_srv_opt_type {
    STRATA_OPT_STR,    /* const char *; valid() may refuse it */
    STRATA_OPT_NUM,    /* a whole number in [min, max], stored times scale */
    STRATA_OPT_BOOL,   /* a switch: flag without value, config true/false */
    STRATA_OPT_LIST,   /* repeatable flag; config key: an array of strings */
    STRATA_OPT_CUSTOM, /* parse() and print() do the work */
    STRATA_OPT_ACTION, /* flag only, no config key: parse() with NULL */
    STRATA_OPT_FORM,   /* another usage form of the row above: --help only */
};

struct strata_srv_opt;

/* A value of a CUSTOM or LIST row (a LIST row's check before it is kept):
 * 0, or -1 with the whole message in err. */
typedef int (*strata_srv_opt_parse_fn)(struct strata_srv_opts *o, const char *v, char *err,
                                       size_t errlen);

struct strata_srv_opt {
    const char *flag; /* long flag without "--"; NULL: config file only */
    const char *key;  /* config file and --print-config key; NULL: flag only */
    const char *arg;  /* the value's name in --help; NULL for switches */
    enum strata_srv_opt_type type;
    /* The member of struct strata_srv_config (STR, NUM, BOOL, LIST: the
     * array; CUSTOM: none). */
    size_t off, size;
    bool is_signed;
    /* NUM: default and range in the flag's unit, stored times scale;
     * help_def: the default --help shows when def means "derived". */
    long long def, min, max, help_def;
    unsigned long long scale;
    bool null0;        /* NUM: 0 is "not set" (printed null), exempt from the range */
    const char *sdef;  /* STR, CUSTOM: the default (CUSTOM: parsed at start) */
    bool (*valid)(const char *v); /* STR: NULL accepts anything */
    const char *must;  /* STR, NUM: "--FLAG <must>" when a value is refused */
    strata_srv_opt_parse_fn parse;
    json_t *(*print)(const struct strata_srv_config *c); /* CUSTOM */
    size_t count_off, cap; /* LIST: the unsigned count member, the array's size */
    bool flags_replace;    /* LIST: the flag on the command line drops the file's list */
    bool file_ignores;     /* the key is printed but ignored when read back */
    bool late;             /* read by main after the flags (the file's "drives") */
    const char *group;     /* heading printed in --help before this row */
    const char *help;      /* lines without a final newline; {default} expands */
};

extern const struct strata_srv_opt strata_srv_opt_table[];
extern const size_t strata_srv_opt_count;

/* The row whose config key is key, or NULL. */
const struct strata_srv_opt *strata_srv_opt_by_key(const char *key);

/* Every row's default into o->cfg (o->tiers untouched).  0, or -1 with err. */
int strata_srv_opts_defaults(struct strata_srv_opts *o, char *err, size_t errlen);

/* One value of row r (a flag's argument or a config file value as text;
 * NULL for switches).  0, or -1 with the message in err. */
int strata_srv_opt_set(struct strata_srv_opts *o, const struct strata_srv_opt *r,
                       const char *v, char *err, size_t errlen);

/* The config file conf (as strata_srv_config_load returned it; its strings
 * must outlive o->cfg) applied, except the lists whose flag is in argv.
 * 0, or -1 with err ("<why>\nstrata: bad --config FILE: \"KEY\"" when a
 * value is refused, the two lines the daemon prints). */
int strata_srv_opts_apply_file(struct strata_srv_opts *o, json_t *conf, const char *path,
                               int argc, char **argv, char *err, size_t errlen);

/* The flags in argv (getopt_long; optind is left after the last one).
 * 0; -1 with err for a refused value; -2 for an unknown flag or a missing
 * value (getopt_long printed why). */
int strata_srv_opts_parse_argv(struct strata_srv_opts *o, int argc, char **argv, char *err,
                               size_t errlen);

/* The option sections of --help. */
void strata_srv_opts_usage(FILE *f);

/* The value of row r in c as --print-config shows it (new reference). */
json_t *strata_srv_opt_json(const struct strata_srv_opt *r, const struct strata_srv_config *c);

#endif /* STRATA_SERVER_OPTIONS_H */
