/*
 * cli_rados.c - "strata rados init" creates PREFIX.meta and PREFIX.data
 * and the control objects of the layout (meta/RADOS.md), leaving what
 * exists; "strata rados check" reports whether the cluster is reachable
 * and ready, with the message the daemon gives when it refuses to start.
 * Runs on the main thread of a short-lived process.
 */
#include "cli_rados.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/meta.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: strata rados init --rados-conf FILE [--rados-id NAME] [--rados-pool-prefix P]\n"
               "       strata rados check --rados-conf FILE [--rados-id NAME] [--rados-pool-prefix P]\n"
               "\n"
               "init   Create the pools P.meta (replicated: it holds omap) and P.data with\n"
               "       the cluster's defaults, and the control objects in P.meta.  Pools and\n"
               "       objects that exist are kept, so running it again is harmless.  Needs\n"
               "       a cephx user that may create pools (mon 'allow rw').\n"
               "check  Connect and check that both pools exist and P.meta holds the layout;\n"
               "       exits 1 with the reason otherwise.\n"
               "\n"
               "  --rados-conf FILE         ceph.conf of the cluster (with its keyring)\n"
               "  --rados-id NAME           cephx user, without \"client.\" (default admin)\n"
               "  --rados-pool-prefix P     pool name prefix (default strata)\n"
               "  --rados-timeout S         seconds to reach the monitors (default 10)\n");
}

int strata_cli_rados_flags(int argc, char **argv, int from, const char *who,
                           struct strata_rados_opts *o)
{
    memset(o, 0, sizeof(*o));
    for (int i = from; i < argc; i++) {
        const char *a = argv[i], **dst = NULL;
        if (strcmp(a, "--rados-conf") == 0)
            dst = &o->conf;
        else if (strcmp(a, "--rados-id") == 0)
            dst = &o->id;
        else if (strcmp(a, "--rados-pool-prefix") == 0)
            dst = &o->prefix;
        else if (strcmp(a, "--rados-timeout") == 0 && i + 1 < argc) {
            char *end;
            long s = strtol(argv[++i], &end, 10);
            if (*end || s < 1 || s > 3600) {
                fprintf(stderr, "strata %s: --rados-timeout takes 1..3600 seconds\n", who);
                return 2;
            }
            o->timeout_s = (unsigned)s;
            continue;
        }
        if (!dst || i + 1 >= argc || !*argv[i + 1]) {
            fprintf(stderr, "strata %s: %s %s\n", who, a,
                    dst ? "needs a value" : "is not an option");
            return 2;
        }
        *dst = argv[++i];
    }
    if (!o->conf) {
        fprintf(stderr, "strata %s: --rados-conf FILE is required\n", who);
        return 2;
    }
    return 0;
}

int strata_cli_help(int argc, char **argv, void (*print_usage)(FILE *f))
{
    if (argc >= 2 && strcmp(argv[1], "--help") != 0 && strcmp(argv[1], "-h") != 0)
        return -1;
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
}

int strata_cli_rados(int argc, char **argv)
{
    int help = strata_cli_help(argc, argv, usage);
    if (help >= 0)
        return help;
    const char *cmd = argv[1];
    bool init = strcmp(cmd, "init") == 0;
    if (!init && strcmp(cmd, "check") != 0) {
        fprintf(stderr, "strata rados: unknown command %s\n", cmd);
        usage(stderr);
        return 2;
    }
    struct strata_rados_opts o;
    if (strata_cli_rados_flags(argc, argv, 2, init ? "rados init" : "rados check", &o) != 0) {
        usage(stderr);
        return 2;
    }
    char msg[512] = "";
    int rc = init ? strata_meta_rados_init(&o, msg, sizeof(msg))
                  : strata_meta_rados_check(&o, msg, sizeof(msg));
    if (rc) {
        fprintf(stderr, "strata rados %s: %s\n", cmd, msg[0] ? msg : strata_strerror(rc));
        return rc == STRATA_ENOTIMPL || rc == STRATA_EINVAL ? 2 : 1;
    }
    printf("strata rados %s: %s\n", cmd, msg);
    return 0;
}
