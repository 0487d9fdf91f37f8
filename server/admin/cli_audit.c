/*
 * cli_audit.c - "strata audit verify DRIVE..." walks the hash chain of each
 * drive's audit log (meta's strata_audit_verify_drive) and names the first
 * broken entry; "strata audit show DRIVE" prints the entries one per line.
 * Drive arguments take MinIO-style ranges, as "strata server" does.
 * Runs on the main thread of a short-lived process.
 */
#include "cli_audit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli_rados.h"
#include "drive_args.h"
#include "strata/meta.h"

#define AUDIT_DRIVES_MAX 1024

static void usage(FILE *f)
{
    fprintf(f, "Usage: strata audit verify DRIVE...\n"
               "       strata audit verify --rados-conf FILE [--rados-id NAME] "
               "[--rados-pool-prefix P]\n"
               "       strata audit show DRIVE\n"
               "\n"
               "verify  Check the hash chain of each drive's audit log (DRIVE/audit.log).\n"
               "        Prints the first broken entry of a drive (0-based index, also its\n"
               "        line number) and exits 1 if any chain is broken.  With several\n"
               "        drives, also checks that every copy of an event is the same on each\n"
               "        drive that holds it (exit 1 otherwise).  Drives whose log ends at an\n"
               "        older seq than the others are noted: they were offline for the\n"
               "        later events, or their last entries were removed.  With\n"
               "        --rados-conf: the one chain kept in the Ceph cluster's P.meta\n"
               "        pool by daemons on the RADOS store (exit 2 when unreachable).\n"
               "show    Print a drive's entries: seq, time, user, action, outcome,\n"
               "        bucket/key, version id and detail, tab-separated.\n");
}

static const char *field(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "-";
}

static int show(const char *drive)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/audit.log", drive);
    FILE *f = fopen(path, "re");
    if (!f) {
        perror(path);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t idx = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t jerr;
        json_t *o = json_loadb(line, (size_t)n, 0, &jerr);
        if (!json_is_object(o)) {
            printf("#%" PRIu64 "\t(unreadable entry)\n", idx);
        } else {
            const char *key = json_string_value(json_object_get(o, "key"));
            const char *khex = json_string_value(json_object_get(o, "key_hex"));
            printf("%" PRId64 "\t%s\t%s\t%s\t%s\t%s%s%s%s\t%s\t%s\n",
                   (int64_t)json_integer_value(json_object_get(o, "seq")), field(o, "time"),
                   field(o, "user"), field(o, "action"), field(o, "outcome"),
                   field(o, "bucket"), key || khex ? "/" : "", key ? key : "",
                   khex ? "(hex)" : "", field(o, "version_id"), field(o, "detail"));
            if (khex)
                printf("\tkey hex: %s\n", khex);
        }
        json_decref(o);
        idx++;
    }
    free(line);
    fclose(f);
    return 0;
}

static int verify(char **drives, size_t nd)
{
    int rc = 0;
    uint64_t max_seq = 0;
    uint64_t *last = calloc(nd, sizeof(*last));
    if (!last)
        return 2;
    for (size_t i = 0; i < nd; i++) {
        /* A mistyped path would otherwise pass as an empty log. */
        struct stat st;
        if (stat(drives[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "%s: not a drive directory\n", drives[i]);
            rc = 2;
            continue;
        }
        struct strata_audit_verify v;
        int e = strata_audit_verify_drive(drives[i], &v);
        if (e) {
            fprintf(stderr, "%s: cannot read the audit log: %s\n", drives[i], strata_strerror(e));
            rc = 2;
            continue;
        }
        last[i] = v.last_seq;
        if (v.last_seq > max_seq)
            max_seq = v.last_seq;
        if (v.broken) {
            printf("%s: BROKEN at entry %" PRIu64 " (line %" PRIu64 "): %s; %" PRIu64
                   " entries before it verify\n",
                   drives[i], v.broken_at, v.broken_at + 1, v.reason, v.entries);
            if (rc == 0)
                rc = 1;
        } else {
            printf("%s: ok, %" PRIu64 " entries, last seq %" PRIu64 "\n", drives[i], v.entries,
                   v.last_seq);
        }
    }
    if (nd > 1) {
        struct strata_audit_compare c;
        int e = strata_audit_compare_drives((const char *const *)drives, (unsigned)nd, &c);
        if (e) {
            fprintf(stderr, "cannot compare the drives' audit logs: %s\n", strata_strerror(e));
            rc = 2;
        } else if (c.differ) {
            printf("DIFFER at seq %" PRIu64 ": %s and %s hold different events under it\n",
                   c.seq, drives[c.drive_a], drives[c.drive_b]);
            if (rc == 0)
                rc = 1;
        } else {
            printf("%zu drives agree on every event they share (%" PRIu64 " events)\n", nd,
                   c.events);
        }
    }
    for (size_t i = 0; i < nd; i++)
        if (last[i] < max_seq)
            printf("%s: note: ends at seq %" PRIu64 ", other drives at %" PRIu64
                   " (offline for the later events, or its last entries were removed)\n",
                   drives[i], last[i], max_seq);
    free(last);
    return rc;
}

/* The chain in a cluster: one copy, reported as a drive's is. */
static int verify_rados(int argc, char **argv)
{
    struct strata_rados_opts o;
    if (strata_cli_rados_flags(argc, argv, 2, "audit verify", &o) != 0)
        return 2;
    struct strata_audit_verify v;
    const char *pre = o.prefix ? o.prefix : "strata";
    char msg[512] = "";
    /* A missing pool is not an empty chain: the daemon's check first. */
    if (strata_meta_rados_check(&o, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "strata audit verify: %s\n", msg);
        return 2;
    }
    int e = strata_audit_verify_rados(&o, &v);
    if (e) {
        fprintf(stderr, "%s.meta of %s: cannot read the audit log: %s\n", pre, o.conf,
                strata_strerror(e));
        return 2;
    }
    if (v.broken) {
        printf("%s.meta: BROKEN at entry %" PRIu64 ": %s; %" PRIu64
               " entries before it verify\n",
               pre, v.broken_at, v.reason, v.entries);
        return 1;
    }
    printf("%s.meta: ok, %" PRIu64 " entries, last seq %" PRIu64 "\n", pre, v.entries,
           v.last_seq);
    return 0;
}

int strata_cli_audit(int argc, char **argv)
{
    int help = strata_cli_help(argc, argv, usage);
    if (help >= 0)
        return help;
    const char *sub = argv[1];
    if (strcmp(sub, "show") == 0) {
        if (argc != 3) {
            usage(stderr);
            return 2;
        }
        return show(argv[2]);
    }
    if (strcmp(sub, "verify") != 0 || argc < 3) {
        usage(stderr);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (strncmp(argv[i], "--rados-", 8) == 0)
            return verify_rados(argc, argv);
    char *drives[AUDIT_DRIVES_MAX];
    size_t nd = 0;
    int rc = 0;
    for (int i = 2; i < argc && rc == 0; i++) {
        if (strata_drive_args_expand(argv[i], drives, &nd, AUDIT_DRIVES_MAX) != 0) {
            fprintf(stderr, "strata: bad drive argument %s\n", argv[i]);
            rc = 2;
        }
    }
    if (rc == 0)
        rc = verify(drives, nd);
    for (size_t i = 0; i < nd; i++)
        free(drives[i]);
    return rc;
}
