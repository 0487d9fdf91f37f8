/*
 * admin_cli_print.c - tables for "strata admin" (see admin_cli_print.h).
 */
#include "admin_cli_print.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

/* 1536 -> "1.5 KiB"; exact bytes below 1 KiB. */
static const char *human(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double d = (double)v;
    unsigned u = 0;
    while (d >= 1024 && u < 6) {
        d /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", v);
    else
        snprintf(buf, len, "%.1f %s", d, units[u]);
    return buf;
}

static void when(time_t t, char *buf, size_t len)
{
    struct tm tm;
    if (t <= 0 || !gmtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(buf, len, "-");
}

/* A remote tier's health under its row: where, how much, when it last
 * answered and its last error. */
static void remote_rows(json_t *rem)
{
    char pb[32], gb[32];
    time_t now = time(NULL);
    uint64_t ok = num(rem, "last_success_ms") / 1000, bad = num(rem, "last_error_ms") / 1000;
    printf("  %s%s\n", str(rem, "url"), json_is_true(json_object_get(rem, "lock"))
                                           ? " (Object Lock kept)" : "");
    printf("  stored %" PRIu64 " (%s), read %" PRIu64 " (%s), errors %" PRIu64
           ", missing %" PRIu64 ", locked versions refused %" PRIu64 "\n",
           num(rem, "puts"), human(num(rem, "put_bytes"), pb, sizeof(pb)), num(rem, "gets"),
           human(num(rem, "get_bytes"), gb, sizeof(gb)), num(rem, "errors"), num(rem, "missing"),
           num(rem, "lock_refused"));
    json_t *lu = json_object_get(rem, "lock_updates");
    if (lu)
        printf("  lock changes to carry: pending %" PRIu64 ", applied %" PRIu64
               ", failed %" PRIu64 "\n",
               num(lu, "pending"), num(lu, "applied"), num(lu, "failed"));
    if (ok)
        printf("  last success %llds ago\n", (long long)(now - (time_t)ok));
    else
        printf("  last success: never\n");
    if (bad)
        printf("  last error %llds ago: %s\n", (long long)(now - (time_t)bad),
               str(rem, "last_error"));
}

/* A store in a cluster (RADOS): its health, space and pools, in place of
 * the drive tables a gateway without drives would print empty. */
static bool cluster_rows(json_t *store)
{
    if (!store || strcmp(str(store, "backend"), "local") == 0)
        return false;
    if (json_object_get(store, "error")) {
        printf("\nstore: %s, cluster not readable: %s\n", str(store, "backend"),
               str(store, "error"));
        return true;
    }
    char t[32], u[32], f[32];
    json_t *cl = json_object_get(store, "cluster");
    printf("\nstore: %s cluster, health %s\n", str(store, "backend"),
           *str(store, "health") ? str(store, "health") : "unknown");
    if (cl)
        printf("  %s total, %s used, %s free, %" PRIu64 " objects\n",
               human(num(cl, "total_bytes"), t, sizeof(t)),
               human(num(cl, "used_bytes"), u, sizeof(u)),
               human(num(cl, "free_bytes"), f, sizeof(f)), num(cl, "objects"));
    else
        printf("  space and object counts not reported by the cluster (no ceph-mgr running)\n");
    printf("  no drives: the cluster keeps, scrubs and recovers the objects\n");
    printf("  %-5s %10s %10s  %s\n", "POOL", "STORED", "OBJECTS", "NAME");
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(store, "pools"), i, p) {
        char o[32] = "-";
        if (cl)
            snprintf(o, sizeof(o), "%" PRIu64, num(p, "objects"));
        printf("  %-5s %10s %10s  %s\n", str(p, "role"),
               cl ? human(num(p, "bytes"), t, sizeof(t)) : "-", o, str(p, "name"));
    }
    return true;
}

void strata_admin_cli_print_info(json_t *doc)
{
    uint64_t up = (uint64_t)json_number_value(json_object_get(doc, "uptime_s"));
    printf("Strata %s, up %" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s, "
           "%" PRIu64 " set(s), %" PRIu64 "/%" PRIu64 " drives online\n",
           str(doc, "version"), up / 86400, up / 3600 % 24, up / 60 % 60, up % 60,
           num(doc, "sets_total"), num(doc, "drives_online"), num(doc, "drives_total"));
    if (cluster_rows(json_object_get(doc, "store")))
        return;
    size_t i;
    json_t *set;
    json_array_foreach(json_object_get(doc, "sets"), i, set) {
        json_t *e = json_object_get(set, "errors");
        printf("\nset %" PRIu64 ": %" PRIu64 "+%" PRIu64 " (write quorum %" PRIu64
               "), deployment %s\n"
               "  errors since start: %" PRIu64 " bitrot, %" PRIu64 " shards missing, %" PRIu64
               " stripes reconstructed, %" PRIu64 " shards healed\n",
               num(set, "index"), num(set, "data"), num(set, "parity"), num(set, "write_quorum"),
               str(set, "deployment_id"), num(e, "bitrot_detected"), num(e, "shards_missing"),
               num(e, "stripes_reconstructed"), num(e, "shards_healed"));
        printf("  %-5s %-9s %10s %10s %10s  %s\n", "DRIVE", "STATE", "TOTAL", "USED", "FREE",
               "PATH");
        size_t j;
        json_t *d;
        json_array_foreach(json_object_get(set, "drives"), j, d) {
            char t[32], u[32], f[32];
            bool sized = json_object_get(d, "total_bytes") != NULL;
            printf("  %-5" PRIu64 " %-9s %10s %10s %10s  %s\n", num(d, "index"), str(d, "state"),
                   sized ? human(num(d, "total_bytes"), t, sizeof(t)) : "-",
                   sized ? human(num(d, "used_bytes"), u, sizeof(u)) : "-",
                   sized ? human(num(d, "free_bytes"), f, sizeof(f)) : "-", str(d, "path"));
        }
    }
    /* The sets above are the hot tier's; the other tiers in one line each. */
    json_t *tier;
    printf("\n%-12s %5s %14s  %s\n", "TIER", "SETS", "DRIVES ONLINE", "CLASSES");
    json_array_foreach(json_object_get(doc, "tiers"), i, tier) {
        char classes[256] = "";
        size_t j, w = 0;
        json_t *c;
        json_array_foreach(json_object_get(tier, "classes"), j, c) {
            int n = snprintf(classes + w, sizeof(classes) - w, "%s%s", j ? "," : "",
                             json_string_value(c) ? json_string_value(c) : "");
            if (n < 0 || (size_t)n >= sizeof(classes) - w)
                break;
            w += (size_t)n;
        }
        char drives[32];
        snprintf(drives, sizeof(drives), "%" PRIu64 "/%" PRIu64, num(tier, "drives_online"),
                 num(tier, "drives_total"));
        json_t *rem = json_object_get(tier, "remote");
        if (rem) {
            printf("%-12s %5s %14s  %s\n", str(tier, "name"), "-", "remote", classes);
            remote_rows(rem);
            continue;
        }
        printf("%-12s %5" PRIu64 " %14s  %s\n", str(tier, "name"), num(tier, "sets_total"), drives,
               classes);
    }
}

static void usage_row(const char *name, json_t *u)
{
    char b[32], vb[32];
    printf("%-40s %10" PRIu64 " %10s %10" PRIu64 " %10s %8" PRIu64 " %8" PRIu64 "%s\n", name,
           num(u, "objects"), human(num(u, "bytes"), b, sizeof(b)), num(u, "versions"),
           human(num(u, "versions_bytes"), vb, sizeof(vb)), num(u, "delete_markers"),
           num(u, "incomplete_uploads"),
           json_is_false(json_object_get(u, "complete")) ? "  (partial)" : "");
}

void strata_admin_cli_print_usage(json_t *doc)
{
    printf("%-40s %10s %10s %10s %10s %8s %8s\n", "BUCKET", "OBJECTS", "BYTES", "VERSIONS",
           "ALL-BYTES", "MARKERS", "UPLOADS");
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(doc, "buckets"), i, b)
        usage_row(str(b, "name"), b);
    usage_row("TOTAL", json_object_get(doc, "total"));
    if (json_is_false(json_object_get(doc, "complete")))
        printf("the scan stopped at %" PRIu64 " entries: partial buckets are undercounted\n",
               num(doc, "scan_limit"));
}

void strata_admin_cli_print_heal(json_t *doc)
{
    char t[64];
    when((time_t)num(doc, "started"), t, sizeof(t));
    if (json_object_get(doc, "reason")) {
        printf("heal: %s: %s\n", str(doc, "state"), str(doc, "reason"));
        return;
    }
    printf("heal: %s (runs finished: %" PRIu64 ", last started %s)\n", str(doc, "state"),
           num(doc, "runs_finished"), t);
    json_t *last = json_object_get(doc, "last");
    if (!last)
        return;
    when((time_t)num(last, "finished"), t, sizeof(t));
    const char *err = str(last, "error");
    printf("last run: finished %s, %s%s%s; %" PRIu64 " objects scanned, %" PRIu64
           " records healed, %" PRIu64 " shards healed\n",
           t, str(last, "result"), *err && strcmp(err, "-") ? ": " : "",
           *err && strcmp(err, "-") ? err : "", num(last, "objects_scanned"),
           num(last, "records_healed"), num(last, "shards_healed"));
}

void strata_admin_cli_print_config(json_t *doc)
{
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v) {
        if (json_is_array(v)) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e)
                printf("%-20s %s\n", i ? "" : k, json_is_string(e) ? json_string_value(e) : "?");
        } else if (json_is_string(v)) {
            printf("%-20s %s\n", k, json_string_value(v));
        } else if (json_is_integer(v)) {
            printf("%-20s %" JSON_INTEGER_FORMAT "\n", k, json_integer_value(v));
        } else if (json_is_boolean(v)) {
            printf("%-20s %s\n", k, json_is_true(v) ? "true" : "false");
        } else {
            printf("%-20s -\n", k);
        }
    }
}

void strata_admin_cli_print_audit_verify(json_t *doc)
{
    json_t *c = json_object_get(doc, "chain");
    if (c && json_object_get(c, "error"))
        printf("%s: ERROR: %s\n", str(c, "name"), str(c, "error"));
    else if (c && json_is_true(json_object_get(c, "broken")))
        printf("%s: BROKEN at entry %" PRIu64 ": %s\n", str(c, "name"), num(c, "broken_at"),
               str(c, "reason"));
    else if (c)
        printf("%s: ok, %" PRIu64 " entries, last seq %" PRIu64 "\n", str(c, "name"),
               num(c, "entries"), num(c, "last_seq"));
    size_t i;
    json_t *set;
    json_array_foreach(json_object_get(doc, "sets"), i, set) {
        printf("set %" PRIu64 ":\n", num(set, "index"));
        size_t j;
        json_t *d;
        json_array_foreach(json_object_get(set, "drives"), j, d) {
            const char *state = str(d, "state");
            if (strcmp(state, "online") != 0)
                printf("  %-40s %s: not checked\n", str(d, "path"), state);
            else if (json_object_get(d, "error"))
                printf("  %-40s ERROR: %s\n", str(d, "path"), str(d, "error"));
            else if (json_is_true(json_object_get(d, "broken")))
                printf("  %-40s BROKEN at entry %" PRIu64 ": %s\n", str(d, "path"),
                       num(d, "broken_at"), str(d, "reason"));
            else
                printf("  %-40s ok, %" PRIu64 " entries, last seq %" PRIu64 "\n", str(d, "path"),
                       num(d, "entries"), num(d, "last_seq"));
        }
        json_t *cmp = json_object_get(set, "compare");
        if (json_object_get(cmp, "error"))
            printf("  drives compared: ERROR: %s\n", str(cmp, "error"));
        else if (json_is_true(json_object_get(cmp, "differ")))
            printf("  drives DIFFER at seq %" PRIu64 ": %s vs %s\n", num(cmp, "seq"),
                   str(cmp, "drive_a"), str(cmp, "drive_b"));
        else
            printf("  drives agree on %" PRIu64 " events\n", num(cmp, "events"));
    }
    printf("audit log: %s\n", json_is_true(json_object_get(doc, "ok")) ? "ok" : "BROKEN");
}

void strata_admin_cli_print_audit_tail(json_t *doc)
{
    printf("%-24s %-6s %-16s %-28s %-8s %s\n", "TIME", "SEQ", "USER", "ACTION", "OUTCOME",
           "BUCKET/KEY  DETAIL");
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "entries"), i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        printf("%-24s %-6" PRIu64 " %-16s %-28s %-8s %s%s%s  %s\n", str(e, "time"), num(e, "seq"),
               str(e, "user"), str(e, "action"), str(e, "outcome"), str(e, "bucket"),
               key ? "/" : "", key ? key : "",
               json_object_get(e, "detail") ? str(e, "detail") : "");
    }
}

static void ilm_line(const char *what, json_t *st)
{
    printf("%-10s passes %" PRIu64 ", scanned %" PRIu64 ", expired %" PRIu64
           ", noncurrent expired %" PRIu64 ", markers removed %" PRIu64 ", uploads aborted %" PRIu64
           ", skipped (locked) %" PRIu64 ", errors %" PRIu64 ", healed %" PRIu64
           ", transitioned %" PRIu64 " (%" PRIu64 " bytes moved)\n",
           what, num(st, "passes"), num(st, "scanned"), num(st, "expired"),
           num(st, "noncurrent_expired"), num(st, "delete_markers_removed"),
           num(st, "uploads_aborted"), num(st, "skipped_locked"), num(st, "errors"),
           num(st, "healed"), num(st, "transitioned"), num(st, "bytes_moved"));
}

/* The reclaim and index side of a counters object. */
static void ilm_line2(json_t *st)
{
    printf("%-10s reclaimed: orphans %" PRIu64 ", tmp %" PRIu64 "; heal queue %" PRIu64
           " keys; due index %" PRIu64 " entries looked at, %" PRIu64 " stale dropped\n",
           "", num(st, "orphans_reclaimed"), num(st, "tmp_reclaimed"), num(st, "heal_queued"),
           num(st, "due_scanned"), num(st, "due_dropped"));
}

void strata_admin_cli_bar(char out[STRATA_ADMIN_CLI_BAR + 3], uint64_t done, uint64_t all)
{
    int fill = all ? (int)((done > all ? all : done) * STRATA_ADMIN_CLI_BAR / all) : 0;
    out[0] = '[';
    for (int i = 0; i < STRATA_ADMIN_CLI_BAR; i++)
        out[1 + i] = i < fill ? '#' : '-';
    out[STRATA_ADMIN_CLI_BAR + 1] = ']';
    out[STRATA_ADMIN_CLI_BAR + 2] = '\0';
}

void strata_admin_cli_print_ilm_bar(json_t *doc)
{
    json_t *p = json_object_get(doc, "progress"), *st = json_object_get(p, "counters");
    uint64_t done = num(p, "buckets_done"), all = num(p, "buckets_total");
    char bar[STRATA_ADMIN_CLI_BAR + 3];
    strata_admin_cli_bar(bar, done, all);
    printf("\r\033[K%s %" PRIu64 "/%" PRIu64 " buckets  scanned %" PRIu64 "  expired %" PRIu64
           "  healed %" PRIu64 "  reclaimed %" PRIu64 "  backlog %" PRIu64,
           bar, done, all, num(st, "scanned"), num(st, "expired") + num(st, "noncurrent_expired"),
           num(st, "healed"), num(st, "orphans_reclaimed") + num(st, "tmp_reclaimed"),
           num(p, "due_backlog"));
    fflush(stdout);
}

void strata_admin_cli_print_ilm(json_t *doc)
{
    if (!json_is_true(json_object_get(doc, "enabled"))) {
        printf("lifecycle scanner: off\n");
        return;
    }
    json_t *last = json_object_get(doc, "last");
    char t[64];
    when((time_t)(num(last, "finished_ms") / 1000), t, sizeof(t));
    printf("lifecycle scanner: on; last pass finished %s\n", t);
    json_t *p = json_object_get(doc, "progress");
    if (json_is_true(json_object_get(p, "running"))) {
        json_t *st = json_object_get(p, "counters");
        printf("pass running%s: bucket %" PRIu64 "/%" PRIu64 " (%s), at key %s; scanned %" PRIu64
               ", expired %" PRIu64 "\n",
               json_is_true(json_object_get(p, "resumed")) ? " (resumed after a restart)" : "",
               num(p, "buckets_done") + 1, num(p, "buckets_total"), str(p, "bucket"),
               str(p, "key"), num(st, "scanned"), num(st, "expired"));
    }
    printf("due index backlog: %" PRIu64 " expirations, %" PRIu64 " moves (%" PRIu64
           " refused, to retry); heal queue %" PRIu64 " keys\n",
           num(p, "due_backlog"), num(p, "move_backlog"), num(p, "move_retries"),
           num(p, "heal_pending"));
    ilm_line("last pass:", last);
    ilm_line2(last);
    ilm_line("total:", json_object_get(doc, "total"));
    ilm_line2(json_object_get(doc, "total"));
}

static void user_row(json_t *u)
{
    const char *role = json_is_true(json_object_get(u, "root"))    ? "root"
                       : json_is_true(json_object_get(u, "admin")) ? "admin"
                                                                   : "user";
    printf("%-24s %-9s %-6s %s\n", str(u, "access_key"), str(u, "status"), role, str(u, "name"));
}

void strata_admin_cli_print_users(json_t *doc)
{
    printf("%-24s %-9s %-6s %s\n", "ACCESS KEY", "STATUS", "ROLE", "NAME");
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(doc, "users"), i, u) user_row(u);
}

void strata_admin_cli_print_user(json_t *doc)
{
    if (json_is_true(json_object_get(doc, "removed"))) {
        printf("removed %s\n", str(doc, "access_key"));
        return;
    }
    json_t *one = json_pack("{s:[O]}", "users", doc);
    strata_admin_cli_print_users(one);
    json_decref(one);
}

void strata_admin_cli_print_repl(json_t *doc)
{
    size_t i;
    json_t *t;
    json_t *list = json_object_get(doc, "targets");
    if (!json_array_size(list)) {
        printf("no replication targets\n");
        return;
    }
    printf("%-16s %-28s %10s %12s %8s %14s %8s\n", "TARGET", "ENDPOINT", "PENDING",
           "REPLICATED", "FAILED", "BYTES", "LAG s");
    json_array_foreach(list, i, t)
        printf("%-16s %-28s %10" PRIu64 " %12" PRIu64 " %8" PRIu64 " %14" PRIu64 " %8.3f\n",
               json_string_value(json_object_get(t, "name")),
               json_string_value(json_object_get(t, "endpoint")), num(t, "pending"),
               num(t, "replicated"), num(t, "failed"), num(t, "bytes"),
               json_real_value(json_object_get(t, "lag_seconds")));
}
