/*
 * admin_cli_print.h - the human-readable output of "strata admin": one
 * printer per reply shape (server/admin/README.md), to stdout.  Missing
 * fields print as "-"; never fails.
 */
#ifndef STRATA_SERVER_ADMIN_ADMIN_CLI_PRINT_H
#define STRATA_SERVER_ADMIN_ADMIN_CLI_PRINT_H

#include <jansson.h>
#include <stdint.h>

void strata_admin_cli_print_info(json_t *doc);
void strata_admin_cli_print_usage(json_t *doc);
void strata_admin_cli_print_heal(json_t *doc);
void strata_admin_cli_print_audit_verify(json_t *doc);
void strata_admin_cli_print_audit_tail(json_t *doc);
void strata_admin_cli_print_ilm(json_t *doc);
/* One progress-bar line of an ilm status reply, redrawn in place (\r). */
void strata_admin_cli_print_ilm_bar(json_t *doc);
/* "[####------...]": done of all in STRATA_ADMIN_CLI_BAR characters. */
#define STRATA_ADMIN_CLI_BAR 30
void strata_admin_cli_bar(char out[STRATA_ADMIN_CLI_BAR + 3], uint64_t done, uint64_t all);
/* GET replication/status: one line per replication target. */
void strata_admin_cli_print_repl(json_t *doc);
/* Any flat object: "key  value" lines (config, and replies without a table). */
void strata_admin_cli_print_config(json_t *doc);
void strata_admin_cli_print_users(json_t *doc);
void strata_admin_cli_print_user(json_t *doc);

#endif /* STRATA_SERVER_ADMIN_ADMIN_CLI_PRINT_H */
