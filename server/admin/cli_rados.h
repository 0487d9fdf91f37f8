/*
 * cli_rados.h - "strata rados init|check": prepare a Ceph cluster for the
 * RADOS store (pools, control objects) and check that a daemon could use
 * it.  Local: talks to the cluster, not to a daemon.
 */
#ifndef STRATA_SERVER_CLI_RADOS_H
#define STRATA_SERVER_CLI_RADOS_H

/* argv[0] is "rados".  Returns the process exit code: 0 done / ready,
 * 1 the cluster is unreachable, a pool or the layout is missing, or init
 * failed, 2 usage, an unreadable conf file, or a build without librados.
 * Prints one line to stdout (success) or stderr. */
int strata_cli_rados(int argc, char **argv);

struct strata_rados_opts;
/* The --rados-conf/--rados-id/--rados-pool-prefix/--rados-timeout flags of
 * argv[from..argc) into o (zeroed first; --rados-conf required).  0, or 2
 * after printing why to stderr as "strata WHO: ...". */
int strata_cli_rados_flags(int argc, char **argv, int from, const char *who,
                           struct strata_rados_opts *o);

#endif /* STRATA_SERVER_CLI_RADOS_H */
