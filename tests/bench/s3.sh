#!/usr/bin/env bash
# s3.sh - S3 front-end benchmark (a program, never a timed test).  Starts
# strata (Release build) and, as the ceiling, nginx serving the same bytes
# from plain files (config generated into a temp dir, foreground, killed by
# PID), both on 127.0.0.1 only.  Uploads the dataset through S3 (4 KiB;
# N distinct 100 KiB objects; 1 MiB; 64 MiB), then runs wrk for DURATION
# seconds per cell at CONNS connections:
#   GET 4 KiB, GET 100 KiB over N keys, GET 1 MiB, GET 64 MiB  (presigned URLs)
#   PUT 100 KiB, PUT 64 MiB                                    (signed payload)
# and ListObjectsV2 over the dataset bucket (plus LIST_KEYS empty keys in a
# bucket of their own if LIST_KEYS > 0), timed with boto3 and with a raw
# SigV4 client (the server's own rate).  Prints req/s, MB/s, p50, p99 and the
# ratio to nginx.  Cleans up its processes and files at exit.
#
# GET cells re-read a small working set for DURATION seconds, so after the
# first pass both servers read from the page cache: they measure the HTTP
# path ("warm"), not the drives; tests/bench/engine.sh (bench_objects "GET
# cold") measures reads from the drives.  The run exits 1 when any request
# of any cell failed (non-2xx, socket error, timeout) or a listing failed:
# figures over failures are no results.  FAULT_DRILL=1 deletes the 4 KiB
# object before the GET cells, to check exactly that.
#
# Environment: CELLS (which of get4k get100k get1m get64m put100k put64m; all),
#   DURATION (s, default 10), PUT64M_DURATION (30), CONNS (32), THREADS (2), N100K (10000),
#   LIST_KEYS (0), STRATA_BIN (default: build build-bench/ as Release),
#   BENCH_DIR (default: new dir under /tmp), RESULTS (JSON lines, default
#   $BENCH_DIR/results.jsonl, copied to ./build-bench/s3-results.jsonl), KEEP=1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DURATION=${DURATION:-10}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
N100K=${N100K:-10000}
LIST_KEYS=${LIST_KEYS:-0}
PUT64M_DURATION=${PUT64M_DURATION:-30}
PY=/usr/bin/python3
HERE="$ROOT/tests/bench"

for tool in wrk nginx curl; do
    command -v "$tool" >/dev/null || { echo "s3.sh: $tool not installed (deploy/install-deps.sh)" >&2; exit 1; }
done

if [[ -z "${STRATA_BIN:-}" ]]; then
    echo "==> building strata (Release) in $ROOT/build-bench"
    cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$ROOT/build-bench" -j "$(nproc)" --target strata >/dev/null
    STRATA_BIN="$ROOT/build-bench/strata"
fi

if [[ -n "${BENCH_DIR:-}" ]]; then mkdir -p "$BENCH_DIR"; else BENCH_DIR=$(mktemp -d /tmp/strata-s3-bench.XXXXXX); fi
RESULTS=${RESULTS:-$BENCH_DIR/results.jsonl}
: >"$RESULTS"
STRATA_PID="" NGINX_PID=""

cleanup() {
    local pid
    for pid in $STRATA_PID $NGINX_PID; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    if [[ -s "$RESULTS" ]]; then mkdir -p "$ROOT/build-bench"; cp "$RESULTS" "$ROOT/build-bench/s3-results.jsonl"; fi
    if [[ "${KEEP:-0}" != 1 ]]; then rm -rf -- "$BENCH_DIR"; else echo "kept $BENCH_DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { # url seconds
    local deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --noproxy '*' "$1" || true) == 200 ]] && return 0
        sleep 0.1
    done
    return 1
}

# ---- strata ------------------------------------------------------------------------
AK=BENCH$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
SK=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
SPORT=$(free_port)
mkdir -p "$BENCH_DIR"/d1 "$BENCH_DIR"/d2 "$BENCH_DIR"/d3 "$BENCH_DIR"/d4
env -i PATH=/usr/bin:/bin HOME="$BENCH_DIR" STRATA_ROOT_USER="$AK" STRATA_ROOT_PASSWORD="$SK" \
    "$STRATA_BIN" server --address "127.0.0.1:$SPORT" "$BENCH_DIR"/d1 "$BENCH_DIR"/d2 "$BENCH_DIR"/d3 "$BENCH_DIR"/d4 \
    >"$BENCH_DIR/strata.log" 2>&1 </dev/null &
STRATA_PID=$!
wait_http "http://127.0.0.1:$SPORT/health/ready" 30 || { echo "strata did not start:"; tail -30 "$BENCH_DIR/strata.log"; exit 1; }
SEP="http://127.0.0.1:$SPORT"

# ---- nginx, the ceiling: same bytes from plain files -------------------------------------
NPORT=$(free_port)
WWW="$BENCH_DIR/www"
mkdir -p "$WWW" "$BENCH_DIR/nginx"
USER_LINE=""
[[ $(id -u) -eq 0 ]] && USER_LINE="user root;"   # workers must read our 0700 temp dir
cat >"$BENCH_DIR/nginx/nginx.conf" <<EOF
$USER_LINE
worker_processes auto;
pid $BENCH_DIR/nginx/nginx.pid;
error_log $BENCH_DIR/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    default_type application/octet-stream;
    client_body_temp_path $BENCH_DIR/nginx/body;
    proxy_temp_path $BENCH_DIR/nginx/proxy;
    fastcgi_temp_path $BENCH_DIR/nginx/fastcgi;
    uwsgi_temp_path $BENCH_DIR/nginx/uwsgi;
    scgi_temp_path $BENCH_DIR/nginx/scgi;
    server {
        listen 127.0.0.1:$NPORT;
        root $WWW;
        location = /health { return 200; }
        location / {
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 0;
            client_body_buffer_size 1m;
        }
    }
}
EOF
nginx -p "$BENCH_DIR/nginx" -c "$BENCH_DIR/nginx/nginx.conf" -g 'daemon off; master_process on;' \
    >"$BENCH_DIR/nginx/stdout.log" 2>&1 </dev/null &
NGINX_PID=$!
wait_http "http://127.0.0.1:$NPORT/health" 15 || { echo "nginx did not start:"; cat "$BENCH_DIR/nginx/"*.log; exit 1; }
NEP="http://127.0.0.1:$NPORT"

# ---- wrk scripts --------------------------------------------------------------------------
cat >"$BENCH_DIR/common.lua" <<'EOF'
-- Each thread starts at its own offset in the list.
local counter = 0
function setup(thread)
    thread:set("id", counter)
    counter = counter + 1
end
function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format(
        '{"requests":%d,"bytes":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,' ..
        '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
        summary.requests, summary.bytes, summary.duration, latency:percentile(50),
        latency:percentile(99), e.connect, e.read, e.write, e.status, e.timeout))
end
EOF
cat "$BENCH_DIR/common.lua" - >"$BENCH_DIR/get.lua" <<'EOF'
-- args[1]: file of request paths (presigned for strata), walked round-robin.
local paths, idx = {}, 0
function init(args)
    for line in io.lines(args[1]) do paths[#paths + 1] = line end
    idx = ((id or 0) * 7919) % #paths
end
function request()
    idx = idx % #paths + 1
    return wrk.format("GET", paths[idx])
end
EOF
cat "$BENCH_DIR/common.lua" - >"$BENCH_DIR/put.lua" <<'EOF'
-- args[1]: "path<TAB>x-amz-date<TAB>authorization<TAB>sha256" lines; args[2]: body file.
local reqs, idx, body = {}, 0, nil
function init(args)
    local f = assert(io.open(args[2], "rb"))
    body = f:read("*a")
    f:close()
    for line in io.lines(args[1]) do
        local p, d, a, s = line:match("([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)")
        reqs[#reqs + 1] = { path = p, h = { ["x-amz-date"] = d, ["Authorization"] = a,
                                            ["x-amz-content-sha256"] = s } }
    end
    idx = ((id or 0) * 7919) % #reqs
end
function request()
    idx = idx % #reqs + 1
    local r = reqs[idx]
    return wrk.format("PUT", r.path, r.h, body)
end
EOF

# run_wrk NAME SERVER URL SCRIPT ARGS...: one cell; appends a JSON line to $RESULTS.
run_wrk() {
    local name=$1 server=$2 url=$3 script=$4; shift 4
    local out
    out=$(wrk -t "$THREADS" -c "$CONNS" -d "${CELL_DURATION:-$DURATION}s" --timeout 120s -s "$script" "$url" -- "$@" 2>&1 | grep '^{"requests"' || true)
    [[ -n "$out" ]] || out='{"requests":0,"bytes":0,"duration_us":1,"p50_us":0,"p99_us":0,"err_connect":0,"err_read":0,"err_write":0,"err_status":0,"err_timeout":0,"failed":true}'
    printf '{"name":"%s","server":"%s",%s\n' "$name" "$server" "${out#\{}" >>"$RESULTS"
    printf '  %-12s %-7s %s\n' "$name" "$server" "$out"
}

# ---- dataset --------------------------------------------------------------------------------
BUCKET=bench
echo "==> uploading the dataset through S3 (4 KiB, $N100K x 100 KiB, 1 MiB, 64 MiB)"
LOAD=$($PY "$HERE/s3_dataset.py" load --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" \
    --www "$WWW" --out "$BENCH_DIR" --n100k "$N100K")
echo "  $LOAD"
printf '{"name":"dataset-upload","server":"strata",%s\n' "${LOAD#\{}" >>"$RESULTS"
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
if [[ "${FAULT_DRILL:-0}" == 1 ]]; then
    echo "==> FAULT_DRILL: deleting get4k/obj: the get4k cell must fail the run"
    $PY "$HERE/s3_dataset.py" delete --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" --key get4k/obj
fi

echo "==> GET (warm: page cache after the first pass): wrk -t$THREADS -c$CONNS -d${DURATION}s"
CELLS=${CELLS:-get4k get100k get1m get64m put100k put64m}
want() { [[ " $CELLS " == *" $1 "* ]]; }
for cell in get4k get100k get1m get64m; do
    want "$cell" || continue
    run_wrk "$cell" strata "$SEP" "$BENCH_DIR/get.lua" "$BENCH_DIR/$cell.strata"
    run_wrk "$cell" nginx "$NEP" "$BENCH_DIR/get.lua" "$BENCH_DIR/$cell.nginx"
done

echo "==> PUT (signed payload)"
$PY "$HERE/s3_dataset.py" putsign --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" \
    --n 1000 --size $((100 * 1024)) --prefix put100k/ --body "$BENCH_DIR/body100k" --out "$BENCH_DIR/put100k.req"
$PY "$HERE/s3_dataset.py" putsign --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" \
    --n 8 --size $((64 << 20)) --prefix put64m/ --body "$BENCH_DIR/body64m" --out "$BENCH_DIR/put64m.req"
want put100k && run_wrk put100k strata "$SEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put100k.req" "$BENCH_DIR/body100k"
want put100k && run_wrk put100k nginx "$NEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put100k.req" "$BENCH_DIR/body100k"
# 32 concurrent 64 MiB uploads are 2 GiB in flight: give them PUT64M_DURATION
# (default 30 s) so that whole requests complete several times over.
want put64m && CELL_DURATION=$PUT64M_DURATION run_wrk put64m strata "$SEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put64m.req" "$BENCH_DIR/body64m"
want put64m && CELL_DURATION=$PUT64M_DURATION run_wrk put64m nginx "$NEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put64m.req" "$BENCH_DIR/body64m"

# Two clients: boto3 (what users run; its XML parsing is the limit) and a
# raw keep-alive SigV4 client that measures the server.
echo "==> ListObjectsV2"
for client in raw boto3; do
    L=$($PY "$HERE/s3_dataset.py" list --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" \
        --client "$client" --repeat 2 || echo '{"failed":true}')
    echo "  $BUCKET ($client): $L"
    printf '{"name":"list-dataset","server":"strata",%s\n' "${L#\{}" >>"$RESULTS"
done
if ((LIST_KEYS > 0)); then
    make=$LIST_KEYS
    for client in raw boto3; do
        L=$($PY "$HERE/s3_dataset.py" list --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket listbench \
            --make "$make" --client "$client" --repeat 2 || echo '{"failed":true}')
        make=0
        echo "  listbench ($client): $L"
        printf '{"name":"list-%s","server":"strata",%s\n' "$LIST_KEYS" "${L#\{}" >>"$RESULTS"
    done
fi

# Daemon health after the run: still alive, no sanitizer reports.
kill -0 "$STRATA_PID" 2>/dev/null || { echo "strata died during the benchmark:"; tail -30 "$BENCH_DIR/strata.log"; }

$PY - "$RESULTS" "$DURATION" "$CONNS" "$THREADS" <<'EOF'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cells = {}
for r in rows:
    cells.setdefault(r["name"], {})[r["server"]] = r
print(f"\n## S3 benchmark: {sys.argv[2]} s per cell (PUT 64 MiB longer), {sys.argv[3]} connections, wrk -t{sys.argv[4]}, "
      f"{os.cpu_count()} cores, everything on 127.0.0.1\n")
print("| workload | strata req/s | strata MB/s | p50 ms | p99 ms | nginx req/s | nginx MB/s | p50 ms | p99 ms | strata/nginx |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
# Payload per request.  wrk's byte count includes responses still in flight
# when the clock stops (a big share for 64 MiB), and for PUT it counts only
# the response, so MB/s is completed requests x object size.
OBJ_BYTES = {"get4k": 4096, "get100k": 100 * 1024, "get1m": 1 << 20, "get64m": 64 << 20,
             "put100k": 100 * 1024, "put64m": 64 << 20}
def fmt(r):
    if not r:
        return ["-"] * 4  # cell not run (CELLS)
    if r.get("failed"):
        return ["failed"] * 4
    secs = r["duration_us"] / 1e6
    moved = r["requests"] * OBJ_BYTES[r["name"]]
    errs = r["err_connect"] + r["err_read"] + r["err_write"] + r["err_status"] + r["err_timeout"]
    rps = f"{r['requests'] / secs:.0f}" + (f" ({errs} err)" if errs else "")
    return [rps, f"{moved / secs / 1e6:.1f}", f"{r['p50_us'] / 1e3:.2f}", f"{r['p99_us'] / 1e3:.2f}"]
for name in ("get4k", "get100k", "get1m", "get64m", "put100k", "put64m"):
    c = cells.get(name, {})
    s, n = c.get("strata"), c.get("nginx")
    ratio = "-"
    if s and n and not s.get("failed") and not n.get("failed") and n["requests"]:
        ratio = f"{(s['requests'] / s['duration_us']) / (n['requests'] / n['duration_us']):.2f}"
    label = {"get4k": "GET 4 KiB (warm)", "get100k": "GET 100 KiB, N keys (warm)",
             "get1m": "GET 1 MiB (warm)", "get64m": "GET 64 MiB (warm)", "put100k": "PUT 100 KiB",
             "put64m": "PUT 64 MiB"}[name]
    print("| " + " | ".join([label] + fmt(s) + fmt(n) + [ratio]) + " |")
for r in rows:
    if r["name"].startswith("list"):
        print(f"\nListObjectsV2 ({r['name']}, {r.get('client', '?')} client): {r.get('keys')} keys in "
              f"{r.get('pages')} pages, {r.get('seconds')} s, {r.get('keys_per_s')} keys/s")
    if r["name"] == "dataset-upload":
        print(f"\nDataset upload (boto3, 16 threads): {r.get('uploaded_objects')} objects, "
              f"{r.get('bytes', 0) / 1e6:.0f} MB in {r.get('seconds')} s ({r.get('MBps')} MB/s)")
print("\nRequests with errors (non-2xx, socket errors) are counted in '(N err)'; a cell with errors is not a valid result.")
print("GET cells are warm (the working set is in the page cache after the first pass); cold reads: tests/bench/engine.sh.")
bad = [f"{r['name']}/{r['server']}" for r in rows
       if r.get("failed") or any(r.get(k, 0) for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))]
if bad:
    print(f"\nFAILED: requests failed in {', '.join(bad)}: the benchmark run is not valid")
    sys.exit(1)
EOF
