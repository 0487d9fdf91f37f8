#!/usr/bin/env bash
# engine.sh - storage engine benchmark (a program, never a timed test), in
# one go on the same drive directories:
#   1. fio, ioengine=io_uring, direct=1, bs=1M: sequential write then read of
#      one file per drive (4 jobs in parallel, like a 2+2 set) - the ceiling;
#   2. ./build/bench_codec (ISA-L encode/decode, erasure engineer's program);
#   3. ./build/bench_objects (object PUT/GET through meta/, meta engineer's),
#      given the same drive directories; its "GET warm" rows read back what
#      was just written (page cache: can exceed the fio read ceiling), its
#      "GET cold" rows read after drop_caches (as root), comparable to fio;
# then prints one table.  The programs' own output is shown as-is.  Exits 1
# when bench_codec or bench_objects failed (any failed read, write, head or
# list), so a benchmark over failures never passes for a result.
#
# Environment: BUILD (default ./build), BENCH_DIR (default a new dir under
# /tmp; drives are $BENCH_DIR/d1..d4, must be on a filesystem with O_DIRECT),
# FIO_SIZE per drive (default 256M; 256M-1G), CODEC_SECS (default 1),
# BENCH_OBJECTS_ARGS (extra arguments for bench_objects), KEEP=1 keeps the dir.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
FIO_SIZE=${FIO_SIZE:-256M}
CODEC_SECS=${CODEC_SECS:-1}
NDRIVES=4

command -v fio >/dev/null || { echo "engine.sh: fio not installed (deploy/install-deps.sh)" >&2; exit 1; }
if [[ -n "${BENCH_DIR:-}" ]]; then mkdir -p "$BENCH_DIR"; OWN_DIR=0
else BENCH_DIR=$(mktemp -d /tmp/strata-engine-bench.XXXXXX); OWN_DIR=1; fi
cleanup() {
    if [[ "${KEEP:-0}" != 1 ]]; then
        if [[ $OWN_DIR == 1 ]]; then rm -rf -- "$BENCH_DIR"; else rm -f -- "$BENCH_DIR"/d*/fio.dat; fi
    fi
}
trap cleanup EXIT
DRIVES=()
for i in $(seq 1 $NDRIVES); do mkdir -p "$BENCH_DIR/d$i"; DRIVES+=("$BENCH_DIR/d$i"); done

echo "engine benchmark: $(nproc) cores, $(uname -r), drives $BENCH_DIR/d{1..$NDRIVES} ($(df -h --output=source,fstype "$BENCH_DIR" | tail -1 | tr -s ' '))"

# ---- 1. fio ceiling -----------------------------------------------------------
# One job per drive directory, all at once, so the numbers are comparable to
# a stripe write across the set.  JSON output, parsed below.
fio_run() { # rw -> json file
    local rw=$1 out="$BENCH_DIR/fio-$1.json" args=()
    for d in "${DRIVES[@]}"; do args+=(--name="$(basename "$d")" --filename="$d/fio.dat"); done
    fio --output-format=json --output="$out" --ioengine=io_uring --direct=1 --bs=1M --rw="$rw" \
        --size="$FIO_SIZE" --iodepth=8 --numjobs=1 --group_reporting=1 --end_fsync=1 \
        "${args[@]}" >/dev/null
    echo "$out"
}
echo "==> fio: sequential write then read, $FIO_SIZE per drive, bs=1M, io_uring, O_DIRECT"
W=$(fio_run write)
R=$(fio_run read)
FIO_TABLE=$(/usr/bin/python3 - "$W" "$R" <<'EOF'
import json, sys
for path, kind in zip(sys.argv[1:], ("write", "read")):
    j = json.load(open(path))["jobs"][0][kind]
    mbs = j["bw_bytes"] / 1e6
    clat = j.get("clat_ns", {}).get("percentile", {})
    p50 = clat.get("50.000000", 0) / 1e6
    p99 = clat.get("99.000000", 0) / 1e6
    print(f"| fio seq {kind} (4 drives, 1 MiB) | {mbs:10.1f} MB/s | {j['iops']:8.0f} IOPS | p50 {p50:.2f} ms | p99 {p99:.2f} ms |")
EOF
)
rm -f "$BENCH_DIR"/d*/fio.dat

# ---- 2. codec -----------------------------------------------------------------------
FAILED=""
CODEC_OUT="(not built: $BUILD/bench_codec missing)"
if [[ -x "$BUILD/bench_codec" ]]; then
    echo "==> $BUILD/bench_codec $CODEC_SECS"
    CODEC_OUT=$("$BUILD/bench_codec" "$CODEC_SECS" 2>&1) || { CODEC_OUT="$CODEC_OUT
(bench_codec exited with status $?)"; FAILED="$FAILED bench_codec"; }
fi

# ---- 3. objects ---------------------------------------------------------------------
OBJ_OUT="(not built: $BUILD/bench_objects missing)"
if [[ -x "$BUILD/bench_objects" ]]; then
    echo "==> $BUILD/bench_objects ${BENCH_OBJECTS_ARGS:-} ${DRIVES[*]}"
    # shellcheck disable=SC2086
    OBJ_OUT=$(STRATA_BENCH_DRIVES="${DRIVES[*]}" "$BUILD/bench_objects" ${BENCH_OBJECTS_ARGS:-} "${DRIVES[@]}" 2>&1) ||
        { OBJ_OUT="$OBJ_OUT
(bench_objects exited with status $?)"; FAILED="$FAILED bench_objects"; }
fi

cat <<EOF

## Engine benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)

| ceiling | throughput | rate | latency | |
| --- | --- | --- | --- | --- |
$FIO_TABLE

### bench_codec (as printed)
\`\`\`
$CODEC_OUT
\`\`\`

### bench_objects (as printed)
\`\`\`
$OBJ_OUT
\`\`\`
EOF
if [[ -n "$FAILED" ]]; then
    echo "FAILED:$FAILED: an operation failed; the figures above are not results" >&2
    exit 1
fi
