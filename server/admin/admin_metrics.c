/*
 * admin_metrics.c - the storage and heal part of /metrics: per-drive
 * state and space, per-set error counters, and the heal state.  Appended
 * to metrics.c's request metrics by the /metrics handlers (http.c and the
 * admin API's metrics endpoint).  Any connection thread: reads immutable
 * set facts, atomics, statvfs, and the heal state under its mutex.
 */
#include "admin_internal.h"

#include <sys/statvfs.h>

static void family(struct strata_sbuf *b, const char *name, const char *type, const char *help)
{
    strata_sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Prometheus label values escape backslash, quote and newline. */
static void label_value(struct strata_sbuf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            strata_sbuf_printf(b, "\\%c", *v);
        else if (*v == '\n')
            strata_sbuf_puts(b, "\\n");
        else
            strata_sbuf_append(b, v, 1);
    }
}

static void drive_metric(struct strata_sbuf *b, const char *name, unsigned set, unsigned d,
                         const char *path, unsigned long long v)
{
    strata_sbuf_printf(b, "%s{set=\"%u\",drive=\"%u\",path=\"", name, set, d);
    label_value(b, path);
    strata_sbuf_printf(b, "\"} %llu\n", v);
}

void strata_admin_metrics_render(struct strata_sbuf *b, struct strata_srv *s)
{
    static const struct {
        const char *name, *type, *help;
    } drive_fams[] = {
        {"strata_drive_online", "gauge", "1 when the drive is online, 0 when offline."},
        {"strata_drive_fresh", "gauge", "1 for a replacement drive heal has not refilled yet."},
        {"strata_drive_total_bytes", "gauge", "Size of the drive's filesystem (statvfs)."},
        {"strata_drive_free_bytes", "gauge", "Bytes available on the drive's filesystem (statvfs)."},
    };
    for (size_t f = 0; f < sizeof(drive_fams) / sizeof(drive_fams[0]); f++) {
        family(b, drive_fams[f].name, drive_fams[f].type, drive_fams[f].help);
        for (unsigned i = 0; i < s->nsets; i++) {
            struct strata_set *set = s->sets[i];
            for (unsigned d = 0; d < strata_set_n(set); d++) {
                const char *path = strata_set_drive_path(set, d);
                path = path ? path : "";
                unsigned long long v = 0;
                struct statvfs vfs;
                if (f == 0)
                    v = strata_set_drive_online(set, d);
                else if (f == 1)
                    v = strata_set_drive_fresh(set, d);
                else if (statvfs(path, &vfs) != 0)
                    continue; /* unknown: no sample rather than a false 0 */
                else
                    v = f == 2 ? (unsigned long long)vfs.f_blocks * vfs.f_frsize
                               : (unsigned long long)vfs.f_bavail * vfs.f_frsize;
                drive_metric(b, drive_fams[f].name, i, d, path, v);
            }
        }
    }
    static const char *const set_fams[][2] = {
        {"strata_set_bitrot_detected_total", "Shard blocks whose CRC32C failed, since start."},
        {"strata_set_shards_missing_total", "Shard reads that found no file or got EIO, since start."},
        {"strata_set_stripes_reconstructed_total", "Stripes rebuilt from parity on read, since start."},
        {"strata_set_shards_healed_total", "Shard files rewritten by heal, since start."},
    };
    for (size_t f = 0; f < 4; f++) {
        family(b, set_fams[f][0], "counter", set_fams[f][1]);
        for (unsigned i = 0; i < s->nsets; i++) {
            struct strata_set_stats st;
            strata_set_stats_get(s->sets[i], &st);
            uint64_t v = f == 0 ? st.bitrot_detected : f == 1 ? st.shards_missing
                         : f == 2 ? st.stripes_reconstructed : st.shards_healed;
            strata_sbuf_printf(b, "%s{set=\"%u\"} %llu\n", set_fams[f][0], i,
                               (unsigned long long)v);
        }
    }
    strata_admin__heal_metrics(b);
}
