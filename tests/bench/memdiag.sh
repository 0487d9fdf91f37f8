#!/usr/bin/env bash
# memdiag.sh PID [ENDPOINT] - where a running strata daemon's resident memory
# is: VmRSS and /proc/PID/smaps_rollup, the RocksDB figures of /metrics
# (memtables, table readers, block cache; the daemon needs --metrics-public),
# and glibc malloc's arenas (malloc_info through gdb: the process stops for
# a moment).  Used as RSS_HOOK by s3.sh; run as root.
set -uo pipefail
PID=$1 EP=${2:-}
echo "== memdiag pid $PID"
awk '/^(VmRSS|RssAnon|RssFile|VmHWM|Threads):/ {printf "  %s %s %s\n", $1, $2, $3}' "/proc/$PID/status"
if [[ -n $EP ]]; then
    curl -s --noproxy '*' "$EP/metrics" | awk '
        /^strata_rocksdb_(memtable_bytes|table_readers_bytes|block_cache_bytes|memtable_size_bytes)/ {
            n = $1; sub(/\{.*/, "", n); s[n] += $NF }
        END { for (n in s) printf "  %s %.1f MiB\n", n, s[n] / 1048576 }'
fi
if command -v gdb >/dev/null; then
    out=$(mktemp)
    gdb -p "$PID" -batch -nx \
        -ex "call (void *)fopen(\"$out\", \"w\")" -ex 'call (int)malloc_info(0, $1)' \
        -ex 'call (int)fclose($1)' >/dev/null 2>&1
    /usr/bin/python3 - "$out" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as e:
    print("  malloc_info: unreadable:", e); sys.exit(0)
heaps = root.findall("heap")
def tot(node, tag, typ):
    for t in node.findall(tag):
        if t.get("type") == typ:
            return int(t.get("size", 0)), int(t.get("count", 0))
    return 0, 0
busy = sum(1 for h in heaps if tot(h, "system", "current")[0] > 0)
print(f"  malloc arenas: {len(heaps)} ({busy} with memory)")
cur = tot(root, "system", "current")[0]
free_b = tot(root, "total", "fast")[0] + tot(root, "total", "rest")[0]
mm = tot(root, "total", "mmap")
print(f"  malloc system {cur/1048576:.1f} MiB, free in arenas {free_b/1048576:.1f} MiB, "
      f"mmapped {mm[0]/1048576:.1f} MiB in {mm[1]} chunks")
top = sorted(heaps, key=lambda h: -tot(h, "system", "current")[0])[:4]
for h in top:
    c = tot(h, "system", "current")[0]
    f = tot(h, "total", "fast")[0] + tot(h, "total", "rest")[0] if h.find("total") is not None else 0
    print(f"    arena {h.get('nr')}: {c/1048576:.1f} MiB, free {f/1048576:.1f} MiB")
PY
    rm -f "$out"
fi
