/*
 * store_stats.c - RocksDB's stall and compaction figures of each drive's
 * metadata store, for /metrics (contract in meta.h,
 * strata_meta_store_stats_get).  Any thread: the stores are open from
 * strata_meta_open to strata_meta_close, and RocksDB's property reads are
 * thread-safe.
 */
#include "local.h"

#include <string.h>

#include "strata/err.h"

int strata_meta__local_store_stats(struct strata_meta *m, unsigned set, unsigned drive,
                                   struct strata_meta_store_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (set >= m->nsets || drive >= m->sets[set].n || !m->sets[set].drives[drive].db)
        return STRATA_ENOTFOUND;
    rocksdb_t *db = m->sets[set].drives[drive].db;
    static const struct {
        const char *name;
        size_t off;
    } props[] = {
        {"rocksdb.actual-delayed-write-rate", offsetof(struct strata_meta_store_stats, delayed_write_rate)},
        {"rocksdb.is-write-stopped", offsetof(struct strata_meta_store_stats, write_stopped)},
        {"rocksdb.num-running-compactions", offsetof(struct strata_meta_store_stats, running_compactions)},
        {"rocksdb.compaction-pending", offsetof(struct strata_meta_store_stats, compaction_pending)},
        {"rocksdb.estimate-pending-compaction-bytes",
         offsetof(struct strata_meta_store_stats, pending_compaction_bytes)},
        {"rocksdb.num-running-flushes", offsetof(struct strata_meta_store_stats, running_flushes)},
        {"rocksdb.cur-size-all-mem-tables", offsetof(struct strata_meta_store_stats, memtable_bytes)},
        {"rocksdb.live-sst-files-size", offsetof(struct strata_meta_store_stats, live_sst_bytes)},
        {"rocksdb.estimate-table-readers-mem",
         offsetof(struct strata_meta_store_stats, table_readers_bytes)},
    };
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
        uint64_t v = 0;
        if (rocksdb_property_int(db, props[i].name, &v) == 0) /* 0: found */
            memcpy((char *)out + props[i].off, &v, sizeof(v));
    }
    return 0;
}

uint64_t strata_meta__local_block_cache_bytes(struct strata_meta *m)
{
    return rocksdb_cache_get_usage(m->cache);
}

uint64_t strata_meta__local_memtable_size(const struct strata_meta *m)
{
    return m->memtable_size;
}
