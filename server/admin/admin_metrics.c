/*
 * admin_metrics.c - the storage and heal part of /metrics: per-drive
 * state and space, per-set error counters (drives and sets of every tier,
 * labelled tier="hot", "warm", ...), and the heal state.  Appended
 * to metrics.c's request metrics by the /metrics handlers (http.c and the
 * admin API's metrics endpoint).  Any connection thread: reads immutable
 * set facts, atomics, statvfs, and the heal state under its mutex.
 */
#include "admin_internal.h"
#include "srv_tiers.h"

#include <stddef.h>
#include <string.h>
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

/* The drive sets of one tier: the hot tier's (which hold the records too)
 * and each other configured tier's, in configuration order. */
struct tier_sets {
    const char *name;
    struct strata_set **sets;
    unsigned nsets;
};

/* Fills out (STRATA_TIERS_MAX + 1 entries); returns how many. */
static unsigned tier_sets(const struct strata_srv *s, struct tier_sets *out)
{
    unsigned n = 0;
    out[n++] = (struct tier_sets){STRATA_TIER_HOT, s->sets, s->nsets};
    for (unsigned i = 0; s->tiers && i < s->tiers->n && n <= STRATA_TIERS_MAX; i++) {
        const struct strata_srv_tier *t = &s->tiers->t[i];
        if (strcmp(t->name, STRATA_TIER_HOT) != 0 && t->sets)
            out[n++] = (struct tier_sets){t->name, t->sets, t->nsets};
    }
    return n;
}

static void drive_labels(struct strata_sbuf *b, const char *tier, unsigned set, unsigned d,
                         const char *path)
{
    strata_sbuf_puts(b, "tier=\"");
    label_value(b, tier);
    strata_sbuf_printf(b, "\",set=\"%u\",drive=\"%u\",path=\"", set, d);
    label_value(b, path ? path : "");
    strata_sbuf_puts(b, "\"");
}

static void drive_metric(struct strata_sbuf *b, const char *name, const char *tier, unsigned set,
                         unsigned d, const char *path, unsigned long long v)
{
    strata_sbuf_printf(b, "%s{", name);
    drive_labels(b, tier, set, d, path);
    strata_sbuf_printf(b, "} %llu\n", v);
}

/* One drive's series of one family: the latency histogram, or errors. */
static void drive_io_series(struct strata_sbuf *b, const char *tier, unsigned i, unsigned d,
                            const char *path, int op, const struct strata_drive_io_stats *st,
                            bool errors)
{
    if (errors) {
        strata_sbuf_puts(b, "strata_drive_io_errors_total{");
        drive_labels(b, tier, i, d, path);
        strata_sbuf_printf(b, ",op=\"%s\"} %llu\n",
                           strata_drive_io_op_name((enum strata_drive_io_op)op),
                           (unsigned long long)st->errors);
        return;
    }
    const char *opn = strata_drive_io_op_name((enum strata_drive_io_op)op);
    uint64_t cum = 0;
    for (unsigned k = 0; k <= STRATA_DRIVE_IO_BUCKETS; k++) {
        cum += st->bucket[k];
        strata_sbuf_puts(b, "strata_drive_io_seconds_bucket{");
        drive_labels(b, tier, i, d, path);
        if (k < STRATA_DRIVE_IO_BUCKETS)
            strata_sbuf_printf(b, ",op=\"%s\",le=\"%g\"} %llu\n", opn, strata_drive_io_bounds_s[k],
                               (unsigned long long)cum);
        else
            strata_sbuf_printf(b, ",op=\"%s\",le=\"+Inf\"} %llu\n", opn, (unsigned long long)cum);
    }
    strata_sbuf_puts(b, "strata_drive_io_seconds_sum{");
    drive_labels(b, tier, i, d, path);
    strata_sbuf_printf(b, ",op=\"%s\"} %.9f\n", opn, (double)st->sum_ns / 1e9);
    strata_sbuf_puts(b, "strata_drive_io_seconds_count{");
    drive_labels(b, tier, i, d, path);
    strata_sbuf_printf(b, ",op=\"%s\"} %llu\n", opn, (unsigned long long)st->count);
}

/* Every drive of every tier, every op (latencies: read and write only), in
 * one family (the exposition format wants a family's series together). */
static void drive_io_family(struct strata_sbuf *b, const struct tier_sets *ts, unsigned nt,
                            bool errors)
{
    for (unsigned t = 0; t < nt; t++)
        for (unsigned i = 0; i < ts[t].nsets; i++) {
            struct strata_set *set = ts[t].sets[i];
            for (unsigned d = 0; d < strata_set_n(set); d++)
                for (int op = 0; op < (errors ? STRATA_DRIVE_IO_OPS : STRATA_DRIVE_IO_TIMED);
                     op++) {
                    struct strata_drive_io_stats st;
                    strata_set_drive_io_get(set, d, (enum strata_drive_io_op)op, &st);
                    drive_io_series(b, ts[t].name, i, d, strata_set_drive_path(set, d), op, &st,
                                    errors);
                }
        }
}

/* Shard I/O latency per drive and op (erasure's counters), and errors. */
static void drive_io_render(struct strata_sbuf *b, struct strata_srv *s)
{
    struct tier_sets ts[STRATA_TIERS_MAX + 1];
    unsigned nt = tier_sets(s, ts);
    family(b, "strata_drive_io_seconds", "histogram",
           "Shard stripe I/O latency per drive, submit to completion.");
    drive_io_family(b, ts, nt, false);
    family(b, "strata_drive_io_errors_total", "counter",
           "Failed operations per drive and op: read/write (shard stripe I/O), open, sync, "
           "rename, remove, store (its metadata store), probe (health probe).");
    drive_io_family(b, ts, nt, true);
}

/* The data cache's use (--data-cache-mb, meta/dcache.h). */
static void data_cache_render(struct strata_sbuf *b, struct strata_meta *m)
{
    struct strata_data_cache_stats st;
    strata_meta_data_cache_stats(m, &st);
    const struct {
        const char *name, *type, *help;
        uint64_t v;
    } f[] = {
        {"strata_data_cache_bytes", "gauge",
         "Bytes of whole data objects held for GETs, being filled included (--data-cache-mb).",
         st.bytes},
        {"strata_data_cache_objects", "gauge", "Data objects held for GETs.", st.entries},
        {"strata_data_cache_hits_total", "counter",
         "Data object reads answered from memory, no drive read.", st.hits},
        {"strata_data_cache_misses_total", "counter", "Data object reads from the drives.",
         st.misses},
        {"strata_data_cache_evictions_total", "counter", "Data objects evicted for room.",
         st.evictions},
        {"strata_data_cache_spare_bytes", "gauge",
         "Memory of entries gone, kept for the next fills to overwrite (within the budget).",
         st.spare},
        {"strata_data_cache_reused_total", "counter",
         "Fills that overwrote a spare's memory instead of allocating.", st.reused},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        family(b, f[i].name, f[i].type, f[i].help);
        strata_sbuf_printf(b, "%s %llu\n", f[i].name, (unsigned long long)f[i].v);
    }
}

/* RocksDB stall and compaction figures of each online drive's store. */
static void store_render(struct strata_sbuf *b, struct strata_srv *s)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } fams[] = {
#define F(n, h, f) {"strata_rocksdb_" n, h, offsetof(struct strata_meta_store_stats, f)}
        F("delayed_write_rate_bytes", "Write rate RocksDB slows writes to during a stall "
          "(bytes/s; 0 when not stalling).", delayed_write_rate),
        F("write_stopped", "1 while RocksDB stops writes (a hard stall).", write_stopped),
        F("running_compactions", "Compactions running now.", running_compactions),
        F("compaction_pending", "1 when at least one compaction is due.", compaction_pending),
        F("pending_compaction_bytes", "Estimated bytes compaction must rewrite to settle.",
          pending_compaction_bytes),
        F("running_flushes", "Memtable flushes running now.", running_flushes),
        F("memtable_bytes", "Bytes of all memtables.", memtable_bytes),
        F("live_sst_bytes", "Bytes of the live SST files.", live_sst_bytes),
        F("table_readers_bytes", "Estimated bytes of the open SST files' indexes and filters.",
          table_readers_bytes),
#undef F
    };
    if (!s->meta)
        return;
    family(b, "strata_rocksdb_block_cache_bytes", "gauge",
           "Bytes held by the block cache all stores share (--cache-mb).");
    strata_sbuf_printf(b, "strata_rocksdb_block_cache_bytes %llu\n",
                       (unsigned long long)strata_meta_block_cache_bytes(s->meta));
    family(b, "strata_rocksdb_memtable_size_bytes", "gauge",
           "Size of each store's memtable; a store holds two at most (--memtable-mb).");
    strata_sbuf_printf(b, "strata_rocksdb_memtable_size_bytes %llu\n",
                       (unsigned long long)strata_meta_memtable_size(s->meta));
    data_cache_render(b, s->meta);
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
        family(b, fams[f].name, "gauge", fams[f].help);
        for (unsigned i = 0; i < s->nsets; i++) {
            for (unsigned d = 0; d < strata_set_n(s->sets[i]); d++) {
                struct strata_meta_store_stats st;
                if (strata_meta_store_stats_get(s->meta, i, d, &st) != 0)
                    continue; /* offline: no sample rather than a false 0 */
                uint64_t v;
                memcpy(&v, (const char *)&st + fams[f].off, sizeof(v));
                const char *path = strata_set_drive_path(s->sets[i], d);
                strata_sbuf_printf(b, "%s{", fams[f].name);
                drive_labels(b, STRATA_TIER_HOT, i, d, path);
                strata_sbuf_printf(b, "} %llu\n", (unsigned long long)v);
            }
        }
    }
}

void strata_admin_metrics_render(struct strata_sbuf *b, struct strata_srv *s)
{
    static const struct {
        const char *name, *type, *help;
    } drive_fams[] = {
        {"strata_drive_online", "gauge",
         "1 when the drive is online, 0 when offline or failing writes (strata_drive_state)."},
        {"strata_drive_fresh", "gauge", "1 for a replacement drive heal has not refilled yet."},
        {"strata_drive_total_bytes", "gauge", "Size of the drive's filesystem (statvfs)."},
        {"strata_drive_free_bytes", "gauge",
         "Bytes available on the drive's filesystem (statvfs)."},
    };
    struct tier_sets ts[STRATA_TIERS_MAX + 1];
    unsigned nt = tier_sets(s, ts);
    for (size_t f = 0; f < sizeof(drive_fams) / sizeof(drive_fams[0]); f++) {
        family(b, drive_fams[f].name, drive_fams[f].type, drive_fams[f].help);
        for (unsigned t = 0; t < nt; t++) {
            for (unsigned i = 0; i < ts[t].nsets; i++) {
                struct strata_set *set = ts[t].sets[i];
                for (unsigned d = 0; d < strata_set_n(set); d++) {
                    const char *path = strata_set_drive_path(set, d);
                    path = path ? path : "";
                    unsigned long long v = 0;
                    struct statvfs vfs;
                    if (f == 0)
                        v = strata_set_drive_state(set, d) == STRATA_DRIVE_ONLINE;
                    else if (f == 1)
                        v = strata_set_drive_fresh(set, d);
                    else if (statvfs(path, &vfs) != 0)
                        continue; /* unknown: no sample rather than a false 0 */
                    else
                        v = f == 2 ? (unsigned long long)vfs.f_blocks * vfs.f_frsize
                                   : (unsigned long long)vfs.f_bavail * vfs.f_frsize;
                    drive_metric(b, drive_fams[f].name, ts[t].name, i, d, path, v);
                }
            }
        }
    }
    /* One series per state, 1 for the drive's current one. */
    family(b, "strata_drive_state", "gauge",
           "1 for the drive's state: online, offline, faulty (I/O errors), read-only, full.");
    for (unsigned t = 0; t < nt; t++)
        for (unsigned i = 0; i < ts[t].nsets; i++)
            for (unsigned d = 0; d < strata_set_n(ts[t].sets[i]); d++) {
                enum strata_drive_state cur = strata_set_drive_state(ts[t].sets[i], d);
                for (int st = 0; st < STRATA_DRIVE_STATES; st++) {
                    strata_sbuf_puts(b, "strata_drive_state{");
                    drive_labels(b, ts[t].name, i, d, strata_set_drive_path(ts[t].sets[i], d));
                    strata_sbuf_printf(b, ",state=\"%s\"} %d\n",
                                       strata_drive_state_name((enum strata_drive_state)st),
                                       (int)cur == st);
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
        for (unsigned t = 0; t < nt; t++) {
            for (unsigned i = 0; i < ts[t].nsets; i++) {
                struct strata_set_stats st;
                strata_set_stats_get(ts[t].sets[i], &st);
                uint64_t v = f == 0 ? st.bitrot_detected : f == 1 ? st.shards_missing
                             : f == 2 ? st.stripes_reconstructed : st.shards_healed;
                strata_sbuf_puts(b, set_fams[f][0]);
                strata_sbuf_puts(b, "{tier=\"");
                label_value(b, ts[t].name);
                strata_sbuf_printf(b, "\",set=\"%u\"} %llu\n", i, (unsigned long long)v);
            }
        }
    }
    drive_io_render(b, s);
    store_render(b, s);
    strata_admin__heal_metrics(b);
}
