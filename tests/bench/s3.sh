#!/usr/bin/env bash
# s3.sh - S3 front-end benchmark (a program, never a timed test).  Starts
# strata (Release build) and, as the ceiling, nginx serving the same bytes
# from plain files (config generated into a temp dir, foreground, killed by
# PID), both on 127.0.0.1 only.  Uploads the dataset through S3 (4 KiB;
# N distinct 100 KiB objects; 1 MiB; 64 MiB), then runs every cell RUNS
# times, strata and nginx alternating, and reports the medians and the
# strata/nginx ratio of the medians:
#   get4k get100k get1m get64m  GET by presigned URL, wrk -c CONNS
#   put100k put64m              PUT with signed payload, wrk -c CONNS
#   mixed    GET 100 KiB (the dataloader row) while one connection PUTs
#            64 MiB objects back to back beside it
#   scale    GET 100 KiB with the server pinned to 1 core, then to every
#            core (taskset -a -p on the running processes); the ratio
#   ckpt     1 GiB checkpoint, 8 parts in flight, PUT then read right back:
#            boto3's transfer manager against strata and against nginx (a
#            minimal S3 shim in its config: multipart calls answered with
#            fixed XML, parts stored through WebDAV), and a lean client
#            (http.client; presigned UploadPart and ranged GET URLs for
#            strata) against both; boto3's time against nginx beyond the
#            lean client's is boto3's own cost
#   torch    the README's PyTorch DataLoader (boto3, ranged GETs of shard
#            objects) against the same loader reading the shards from nginx,
#            samples/s and p99 wait per batch (tests/bench/torch_loader.py)
#   fio      the engine.sh write ceiling (io_uring, O_DIRECT, 1 MiB, one
#            job per drive directory), for the PUT 64 MiB row
# and the daemon's RSS after the dataloader cell; then ListObjectsV2 over
# the dataset bucket (plus LIST_KEYS empty keys in a bucket of their own if
# LIST_KEYS > 0), timed with boto3 and with a raw SigV4 client.
#
# Every row on a quiet machine, one command (about 25 minutes):
#   STRATA_BIN=build-rel/strata tests/bench/s3.sh
#
# GET cells re-read a small working set for DURATION seconds, so after the
# first pass both servers read from the page cache: they measure the HTTP
# path ("warm"), not the drives; tests/bench/engine.sh (bench_objects "GET
# cold") measures reads from the drives.  The run exits 1 when any request
# of any cell failed (non-2xx, socket error, timeout) or a listing failed:
# figures over failures are no results.  FAULT_DRILL=1 deletes the 4 KiB
# object before the GET cells, to check exactly that.
#
# Environment: CELLS (which of get4k get100k get1m get64m put100k put64m
#   mixed scale ckpt torch fio; all), RUNS (3), DURATION (s, default 10),
#   PUT64M_DURATION (30), CONNS (32), THREADS (2), N100K (10000), CKPT_MB
#   (1024), CKPT_COLD (set: also GETs after a restart of strata and a drop of the page cache, root
#   only: a checkpoint read back on restart), TORCH_SHARDS (64), TORCH_PER_SHARD (256), TORCH_SIZE (102400),
#   TORCH_WORKERS (8), TORCH_OBJECTS (1: also one object per sample), FIO_SIZE (256M per drive), LIST_KEYS (0), STRATA_BIN (default:
#   build build-bench/ as Release), STRATA_ARGS (extra server flags),
#   BENCH_DIR (default: new dir under /tmp), RESULTS (JSON lines, default
#   $BENCH_DIR/results.jsonl, copied to ./build-bench/s3-results.jsonl), KEEP=1,
#   RSS_HOOK (a command run with the daemon's PID and endpoint where the RSS
#   is taken, e.g. tests/bench/memdiag.sh for the breakdown of that RSS).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DURATION=${DURATION:-10}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
N100K=${N100K:-10000}
LIST_KEYS=${LIST_KEYS:-0}
PUT64M_DURATION=${PUT64M_DURATION:-30}
RUNS=${RUNS:-3}
CKPT_MB=${CKPT_MB:-1024}
FIO_SIZE=${FIO_SIZE:-256M}
CELLS=${CELLS:-get4k get100k get1m get64m put100k put64m mixed scale ckpt torch fio}
PY=/usr/bin/python3
HERE="$ROOT/tests/bench"

for tool in wrk nginx curl; do
    command -v "$tool" >/dev/null || { echo "s3.sh: $tool not installed (deploy/install-deps.sh)" >&2; exit 1; }
done

if [[ -z "${STRATA_BIN:-}" ]]; then
    echo "==> building strata (Release) in $ROOT/build-bench"
    cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=OFF >/dev/null
    cmake --build "$ROOT/build-bench" -j "$(nproc)" --target strata >/dev/null
    STRATA_BIN="$ROOT/build-bench/strata"
fi

if [[ -n "${BENCH_DIR:-}" ]]; then mkdir -p "$BENCH_DIR"; else BENCH_DIR=$(mktemp -d /tmp/strata-s3-bench.XXXXXX); fi
RESULTS=${RESULTS:-$BENCH_DIR/results.jsonl}
: >"$RESULTS"
STRATA_PID="" NGINX_PID=""

cleanup() {
    local pid
    [[ -n $STRATA_PID ]] && STRATA_PID=$(cat "$BENCH_DIR/strata.pid" 2>/dev/null || true)  # a restart's
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
# The daemon's (re)start, a script so the checkpoint cell can restart it
# for its read back on restart: stops the daemon of strata.pid if one
# runs, starts it again over the same drives, waits until it is ready.
cat >"$BENCH_DIR/strata-start.sh" <<EOF
#!/usr/bin/env bash
pid=\$(cat "$BENCH_DIR/strata.pid" 2>/dev/null || true)
if [[ -n \$pid ]] && kill -TERM "\$pid" 2>/dev/null; then
    while kill -0 "\$pid" 2>/dev/null; do sleep 0.05; done
fi
env -i PATH=/usr/bin:/bin HOME="$BENCH_DIR" STRATA_ROOT_USER="$AK" STRATA_ROOT_PASSWORD="$SK" \\
    "$STRATA_BIN" server --address "127.0.0.1:$SPORT" ${STRATA_ARGS:-} "$BENCH_DIR"/d1 "$BENCH_DIR"/d2 "$BENCH_DIR"/d3 "$BENCH_DIR"/d4 \\
    >>"$BENCH_DIR/strata.log" 2>&1 </dev/null &
echo \$! >"$BENCH_DIR/strata.pid"
for _ in \$(seq 300); do
    [[ \$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --noproxy '*' "http://127.0.0.1:$SPORT/health/ready" || true) == 200 ]] && exit 0
    sleep 0.1
done
exit 1
EOF
chmod +x "$BENCH_DIR/strata-start.sh"
STRATA_PID=started
"$BENCH_DIR/strata-start.sh" || { echo "strata did not start:"; tail -30 "$BENCH_DIR/strata.log"; exit 1; }
STRATA_PID=$(cat "$BENCH_DIR/strata.pid")
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
    # A minimal S3 shim, enough for boto3's transfer manager (the ckpt cell),
    # so boto3 runs against nginx too and the ratio compares like with like:
    # CreateMultipartUpload and CompleteMultipartUpload answer fixed XML,
    # UploadPart stores its body through WebDAV as <key>.part<N> under
    # /_parts, HeadObject and ranged GETs read the plain file.
    map "\$request_method:\$args" \$s3shim {
        default "";
        "~^POST:uploads(=|&|\$)" create;
        "~^POST:(.*&)?uploadId=" complete;
        "~^PUT:(.*&)?partNumber=" part;
    }
    server {
        listen 127.0.0.1:$NPORT;
        root $WWW;
        location = /health { return 200; }
        location / {
            if (\$s3shim = create) {
                return 200 '<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>shim</UploadId></InitiateMultipartUploadResult>';
            }
            if (\$s3shim = complete) {
                return 200 '<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"shim-8"</ETag></CompleteMultipartUploadResult>';
            }
            if (\$s3shim = part) {
                rewrite ^(.*)\$ /_parts\$1.part\$arg_partNumber last;
            }
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 0;
            client_body_buffer_size 1m;
        }
        location /_parts/ {
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 0;
            client_body_buffer_size 1m;
            add_header ETag '"shim-part"' always;
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
# PUT requests: benchlib.py's (args[1]: signed request lines, args[2]: body file).
{ cat "$BENCH_DIR/common.lua"
  $PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import benchlib; print(benchlib.PUT_REQUEST_LUA)' "$HERE"
} >"$BENCH_DIR/put.lua"

# run_wrk NAME SERVER URL SCRIPT ARGS...: one cell; appends a JSON line to $RESULTS.
run_wrk() {
    local name=$1 server=$2 url=$3 script=$4; shift 4
    local out cpu0 cpu1
    cpu0=$(cpu_ticks "$server")
    out=$(wrk -t "$THREADS" -c "$CONNS" -d "${CELL_DURATION:-$DURATION}s" --timeout 120s -s "$script" "$url" -- "$@" 2>&1 | grep '^{"requests"' || true)
    [[ -n "$out" ]] || out='{"requests":0,"bytes":0,"duration_us":1,"p50_us":0,"p99_us":0,"err_connect":0,"err_read":0,"err_write":0,"err_status":0,"err_timeout":0,"failed":true}'
    cpu1=$(cpu_ticks "$server")
    # The server's CPU time over the cell (user + system, all threads), µs.
    out="{\"cpu_us\":$(((cpu1 - cpu0) * 1000000 / $(getconf CLK_TCK))),${out#\{}"
    printf '{"name":"%s","server":"%s",%s\n' "$name" "$server" "${out#\{}" >>"$RESULTS"
    printf '  %-14s %-7s %s\n' "$name" "$server" "$out"
}
cpu_ticks() { # server -> utime + stime of its processes, clock ticks
    local pid sum=0 v
    for pid in $(server_pids "$1"); do
        v=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}

want() { [[ " $CELLS " == *" $1 "* ]]; }
# Every thread of a server: strata's, or nginx's master and workers.
server_pids() { if [[ $1 == strata ]]; then echo "$STRATA_PID"; else echo "$NGINX_PID" $(pgrep -P "$NGINX_PID" || true); fi; }
pin() { # server cpulist
    local pid
    for pid in $(server_pids "$1"); do taskset -a -p -c "$2" "$pid" >/dev/null; done
}
rss_kb() { # server -> summed VmRSS in KiB
    local pid sum=0 v
    for pid in $(server_pids "$1"); do
        v=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}
ALLCPUS="0-$(($(nproc) - 1))"

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

echo "==> PUT request files (signed payload)"
$PY "$HERE/s3_dataset.py" putsign --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" \
    --n 1000 --size $((100 * 1024)) --prefix put100k/ --body "$BENCH_DIR/body100k" --out "$BENCH_DIR/put100k.req"
$PY "$HERE/s3_dataset.py" putsign --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" \
    --n 8 --size $((64 << 20)) --prefix put64m/ --body "$BENCH_DIR/body64m" --out "$BENCH_DIR/put64m.req"
# nginx gets the same request lines (it ignores the S3 headers).

echo "==> GET (warm: page cache after the first pass): wrk -t$THREADS -c$CONNS -d${DURATION}s, $RUNS runs"
for cell in get4k get100k get1m get64m; do
    want "$cell" || continue
    for _ in $(seq "$RUNS"); do
        run_wrk "$cell" strata "$SEP" "$BENCH_DIR/get.lua" "$BENCH_DIR/$cell.strata"
        run_wrk "$cell" nginx "$NEP" "$BENCH_DIR/get.lua" "$BENCH_DIR/$cell.nginx"
    done
    if [[ $cell == get100k ]]; then
        for server in strata nginx; do
            printf '{"name":"rss","server":"%s","rss_kb":%s}\n' "$server" "$(rss_kb $server)" >>"$RESULTS"
        done
        if [[ -n ${RSS_HOOK:-} ]]; then $RSS_HOOK "$STRATA_PID" "$SEP" || true; fi
    fi
done

echo "==> PUT (signed payload), $RUNS runs"
for _ in $(seq "$RUNS"); do
    want put100k && run_wrk put100k strata "$SEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put100k.req" "$BENCH_DIR/body100k"
    want put100k && run_wrk put100k nginx "$NEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put100k.req" "$BENCH_DIR/body100k"
    # 32 concurrent 64 MiB uploads are 2 GiB in flight: give them PUT64M_DURATION
    # (default 30 s) so that whole requests complete several times over.
    want put64m && CELL_DURATION=$PUT64M_DURATION run_wrk put64m strata "$SEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put64m.req" "$BENCH_DIR/body64m"
    want put64m && CELL_DURATION=$PUT64M_DURATION run_wrk put64m nginx "$NEP" "$BENCH_DIR/put.lua" "$BENCH_DIR/put64m.req" "$BENCH_DIR/body64m"
done

if want mixed; then
    echo "==> GET 100 KiB with a 64 MiB PUT stream beside it, $RUNS runs"
    for _ in $(seq "$RUNS"); do
        for server in strata nginx; do
            ep=$SEP; [[ $server == nginx ]] && ep=$NEP
            paths="$BENCH_DIR/get100k.$server"
            wrk -t1 -c1 -d"$((DURATION + 2))s" --timeout 120s -s "$BENCH_DIR/put.lua" "$ep" -- \
                "$BENCH_DIR/put64m.req" "$BENCH_DIR/body64m" >/dev/null 2>&1 &
            bg=$!
            sleep 1
            run_wrk get100k+put64m "$server" "$ep" "$BENCH_DIR/get.lua" "$paths"
            wait "$bg" || true
        done
    done
fi

if want scale; then
    echo "==> GET 100 KiB, server on 1 core then on $ALLCPUS (taskset), $RUNS runs"
    for _ in $(seq "$RUNS"); do
        for server in strata nginx; do
            ep=$SEP; [[ $server == nginx ]] && ep=$NEP
            pin "$server" 0
            run_wrk get100k-1core "$server" "$ep" "$BENCH_DIR/get.lua" "$BENCH_DIR/get100k.$server"
            pin "$server" "$ALLCPUS"
            run_wrk get100k-allcores "$server" "$ep" "$BENCH_DIR/get.lua" "$BENCH_DIR/get100k.$server"
        done
    done
fi

if want ckpt; then
    echo "==> checkpoint: $CKPT_MB MiB, 8 parts in flight, boto3 vs the same transfer to nginx, $RUNS runs"
    C=$($PY "$HERE/s3_dataset.py" checkpoint --endpoint "$SEP" --ak "$AK" --sk "$SK" --bucket "$BUCKET" \
        --nginx "$NEP" --www "$WWW" --out "$BENCH_DIR" --size-mb "$CKPT_MB" --parts 8 --repeat "$RUNS" \
        ${CKPT_COLD:+--cold --restart "$BENCH_DIR/strata-start.sh"} || echo '{"failed":true}')
    STRATA_PID=$(cat "$BENCH_DIR/strata.pid")
    echo "  $C"
    printf '{"name":"ckpt","server":"both",%s\n' "${C#\{}" >>"$RESULTS"
fi

if want torch; then
    echo "==> PyTorch DataLoader: ${TORCH_SHARDS:-64} shards x ${TORCH_PER_SHARD:-256} samples x ${TORCH_SIZE:-102400} B, ${TORCH_WORKERS:-8} workers, $RUNS passes"
    T=$($PY "$HERE/torch_loader.py" --endpoint "$SEP" --ak "$AK" --sk "$SK" --nginx "$NEP" --www "$WWW" \
        --shards "${TORCH_SHARDS:-64}" --per-shard "${TORCH_PER_SHARD:-256}" --size "${TORCH_SIZE:-102400}" \
        --workers "${TORCH_WORKERS:-8}" --objects "${TORCH_OBJECTS:-1}" --runs "$RUNS" --tmp "$BENCH_DIR") || T='{"failed":true}' # wrong bytes, errors
    echo "  $T"
    printf '{"name":"torch","server":"both",%s\n' "${T#\{}" >>"$RESULTS"
fi

if want fio; then
    if command -v fio >/dev/null; then
        echo "==> fio write ceiling: $FIO_SIZE per drive directory, bs=1M, io_uring, O_DIRECT, iodepth 8"
        args=()
        for i in 1 2 3 4; do mkdir -p "$BENCH_DIR/fio$i"; args+=(--name="d$i" --filename="$BENCH_DIR/fio$i/fio.dat"); done
        fio --output-format=json --output="$BENCH_DIR/fio.json" --ioengine=io_uring --direct=1 --bs=1M \
            --rw=write --size="$FIO_SIZE" --iodepth=8 --numjobs=1 --group_reporting=1 --end_fsync=1 \
            "${args[@]}" >/dev/null
        bw=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["write"]["bw_bytes"])' "$BENCH_DIR/fio.json")
        rm -f "$BENCH_DIR"/fio*/fio.dat
        echo "  write $((bw / 1000000)) MB/s"
        printf '{"name":"fio","server":"fio","write_bps":%s}\n' "$bw" >>"$RESULTS"
    else
        echo "==> fio not installed: no write ceiling"
    fi
fi

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

$PY - "$RESULTS" "$DURATION" "$CONNS" "$THREADS" "$RUNS" <<'EOF'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs = {}
for r in rows:
    if "requests" in r:
        runs.setdefault((r["name"], r["server"]), []).append(r)
print(f"\n## S3 benchmark: {sys.argv[2]} s per cell (PUT 64 MiB longer), {sys.argv[3]} connections, "
      f"wrk -t{sys.argv[4]}, medians of {sys.argv[5]} runs, {os.cpu_count()} cores, everything on 127.0.0.1\n")
print("| workload | strata req/s | strata MB/s | p50 ms | p99 ms | nginx req/s | nginx MB/s | p50 ms | p99 ms | strata/nginx req/s | p99 strata/nginx |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
# Payload per request.  wrk's byte count includes responses still in flight
# when the clock stops (a big share for 64 MiB), and for PUT it counts only
# the response, so MB/s is completed requests x object size.
OBJ_BYTES = {"get4k": 4096, "get100k": 100 * 1024, "get1m": 1 << 20, "get64m": 64 << 20,
             "put100k": 100 * 1024, "put64m": 64 << 20, "get100k+put64m": 100 * 1024,
             "get100k-1core": 100 * 1024, "get100k-allcores": 100 * 1024}
LABELS = {"get4k": "GET 4 KiB (warm)", "get100k": "GET 100 KiB, N keys (warm, dataloader)",
          "get1m": "GET 1 MiB (warm)", "get64m": "GET 64 MiB (warm)", "put100k": "PUT 100 KiB",
          "put64m": "PUT 64 MiB", "get100k+put64m": "GET 100 KiB beside a 64 MiB PUT stream",
          "get100k-1core": "GET 100 KiB, server on 1 core",
          "get100k-allcores": "GET 100 KiB, server on all cores"}


def errs(r):
    return sum(r.get(k, 0) for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))


def med(name, server):
    rs = runs.get((name, server))
    if not rs:
        return None
    if any(r.get("failed") for r in rs):
        return {"failed": True}
    secs = [r["duration_us"] / 1e6 for r in rs]
    return {"rps": statistics.median(r["requests"] / s for r, s in zip(rs, secs)),
            "p50": statistics.median(r["p50_us"] for r in rs) / 1e3,
            "p99": statistics.median(r["p99_us"] for r in rs) / 1e3,
            "errs": sum(errs(r) for r in rs)}


def fmt(name, m):
    if not m:
        return ["-"] * 4  # cell not run (CELLS)
    if m.get("failed"):
        return ["failed"] * 4
    e = f" ({m['errs']} err)" if m["errs"] else ""
    return [f"{m['rps']:.0f}{e}", f"{m['rps'] * OBJ_BYTES[name] / 1e6:.1f}", f"{m['p50']:.2f}",
            f"{m['p99']:.2f}"]


meds = {}
for name in OBJ_BYTES:
    s, n = med(name, "strata"), med(name, "nginx")
    meds[name] = (s, n)
    if not s and not n:
        continue
    ok = s and n and not s.get("failed") and not n.get("failed") and n["rps"]
    ratio = f"{s['rps'] / n['rps']:.2f}" if ok else "-"
    p99r = f"{s['p99'] / n['p99']:.2f}" if ok and n["p99"] else "-"
    print("| " + " | ".join([LABELS[name]] + fmt(name, s) + fmt(name, n) + [ratio, p99r]) + " |")
cpu = []
for name in OBJ_BYTES:
    per = []
    for server in ("strata", "nginx"):
        rs = [r for r in runs.get((name, server), []) if "cpu_us" in r and r["requests"]]
        if rs:
            per.append(f"{server} {statistics.median(r['cpu_us'] / r['requests'] for r in rs):.0f}")
    if per:
        cpu.append(f"{LABELS[name]}: " + ", ".join(per))
if cpu:
    print("\nServer CPU per request (user + system, µs, medians): " + "; ".join(cpu))
one, allc = meds.get("get100k-1core", (None, None)), meds.get("get100k-allcores", (None, None))
for i, server in enumerate(("strata", "nginx")):
    a, b = one[i], allc[i]
    if a and b and not a.get("failed") and not b.get("failed") and a["rps"]:
        print(f"\nScaling ({server}, GET 100 KiB): 1 core {a['rps']:.0f} req/s -> all cores "
              f"{b['rps']:.0f} req/s = {b['rps'] / a['rps']:.2f}x")
fio = [r for r in rows if r["name"] == "fio"]
p64 = meds.get("put64m", (None, None))[0]
if fio:
    w = fio[-1]["write_bps"] / 1e6
    line = f"\nfio write ceiling (engine.sh shape): {w:.0f} MB/s"
    if p64 and not p64.get("failed"):
        mb = p64["rps"] * (64 << 20) / 1e6
        line += f"; PUT 64 MiB {mb:.0f} MB/s = {mb / w:.2f} of it"
    print(line)
for r in rows:
    if r["name"] == "rss":
        print(f"\nRSS after the dataloader cell ({r['server']}): {r['rss_kb'] / 1024:.0f} MiB")
    if r["name"] == "ckpt":
        if r.get("failed"):
            print("\nCheckpoint: failed")
        else:
            print(f"\nCheckpoint {r['size_mb']} MiB, {r['parts']} parts in flight, medians of {r['runs']}, "
                  f"MB/s (strata / nginx = ratio); boto3 against both (nginx: the S3 shim), and the "
                  f"lean client (http.client, presigned UploadPart / ranged GET URLs) against both:\n")
            print("| transfer | boto3 strata | boto3 nginx | ratio | lean strata | lean nginx | ratio "
                  "| boto3's own share of its strata time |")
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for what, label in (("put", "PUT"), ("get", "GET right back"),
                                ("cold_get", "GET on restart (strata restarted, page cache dropped)")):
                if f"strata_{what}_MBps" not in r:
                    continue
                print(f"| {label} | {r[f'strata_{what}_MBps']} | {r[f'nginx_{what}_MBps']} | "
                      f"{r[f'{what}_ratio']} | {r[f'strata_raw_{what}_MBps']} | "
                      f"{r[f'nginx_raw_{what}_MBps']} | {r[f'raw_{what}_ratio']} | "
                      f"{r[f'boto3_client_share_{what}']} |")
    if r["name"] == "torch":
        if r.get("failed"):
            print("\nPyTorch DataLoader: failed (wrong bytes or a failed read)")
            continue
        print(f"\nPyTorch DataLoader ({r['samples']} samples of {r['size']} B in {r['shards']} shards, "
              f"{r['workers']} workers, batches of {r['batch']}, medians of {r['runs']} passes):\n")
        print("| reader | samples/s | MB/s | p50 / p99 wait per batch, ms | disk read KiB/sample | / nginx | p99 / nginx |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for ds, what in (("strata", "strata: README's ShardDataset, boto3 ranged GETs"),
                         ("strata-http", "strata: same loader as nginx (urllib3, presigned)"),
                         ("strata-objects", "strata: one object per sample, boto3"),
                         ("nginx", "nginx: urllib3 ranged GETs of the shard files"),
                         ("files", "local files: pread, no server")):
            if f"{ds}_samples_per_s" not in r:
                continue
            ratio = (f"{r[ds + '_ratio']:.2f} | {r[ds + '_p99_ratio']:.2f}" if ds != "nginx" else "1 | 1")
            print(f"| {what} | {r[ds + '_samples_per_s']:.0f} | {r[ds + '_MBps']:.1f} | "
                  f"{r[ds + '_p50_wait_ms']:.2f} / {r[ds + '_p99_wait_ms']:.1f} | "
                  f"{r[ds + '_disk_KiB_per_sample']:.0f} | {ratio} |")
    if r["name"].startswith("list"):
        print(f"\nListObjectsV2 ({r['name']}, {r.get('client', '?')} client): {r.get('keys')} keys in "
              f"{r.get('pages')} pages, {r.get('seconds')} s, {r.get('keys_per_s')} keys/s")
    if r["name"] == "dataset-upload":
        print(f"\nDataset upload (boto3, 16 threads): {r.get('uploaded_objects')} objects, "
              f"{r.get('bytes', 0) / 1e6:.0f} MB in {r.get('seconds')} s ({r.get('MBps')} MB/s)")
print("\nRequests with errors (non-2xx, socket errors) are counted in '(N err)'; a cell with errors is not a valid result.")
print("GET cells are warm (the working set is in the page cache after the first pass); cold reads: tests/bench/engine.sh.")
bad = [f"{r['name']}/{r['server']}" for r in rows if r.get("failed") or errs(r)]
if bad:
    print(f"\nFAILED: requests failed in {', '.join(bad)}: the benchmark run is not valid")
    sys.exit(1)
EOF
