/*
 * cli_audit.h - "strata audit": check and print the object-lock audit log
 * of drives, offline (no daemon needed; safe while one runs, since the log
 * is append-only).
 */
#ifndef STRATA_SERVER_CLI_AUDIT_H
#define STRATA_SERVER_CLI_AUDIT_H

/* argv[0] is "audit".  Returns the process exit code: 0 all chains intact,
 * 1 a chain is broken, 2 usage or read error.  Prints to stdout/stderr. */
int strata_cli_audit(int argc, char **argv);

#endif /* STRATA_SERVER_CLI_AUDIT_H */
