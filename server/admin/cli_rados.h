/*
 * cli_rados.h - "strata rados init|check": prepare a Ceph cluster for the
 * RADOS store (pools, control objects) and check that a daemon could use
 * it.  Local: talks to the cluster, not to a daemon.
 */
#ifndef STRATA_SERVER_CLI_RADOS_H
#define STRATA_SERVER_CLI_RADOS_H

#include <stdio.h>

/* argv[0] is "rados".  Returns the process exit code: 0 done / ready,
 * 1 the cluster is unreachable, a pool or the layout is missing, or init
 * failed, 2 usage, an unreadable conf file, or a build without librados.
 * Prints one line to stdout (success) or stderr. */
int strata_cli_rados(int argc, char **argv);

/* The first word of a local command (strata rados, strata audit): none
 * prints usage to stderr and returns 2, --help or -h prints it to stdout
 * and returns 0; -1: a command word, go on. */
int strata_cli_help(int argc, char **argv, void (*print_usage)(FILE *f));

struct strata_rados_opts;
/* The --rados-conf/--rados-id/--rados-pool-prefix/--rados-timeout flags of
 * argv[from..argc) into o (zeroed first; --rados-conf required).  0, or 2
 * after printing why to stderr as "strata WHO: ...". */
int strata_cli_rados_flags(int argc, char **argv, int from, const char *who,
                           struct strata_rados_opts *o);

#endif /* STRATA_SERVER_CLI_RADOS_H */
