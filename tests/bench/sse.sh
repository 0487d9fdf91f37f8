#!/usr/bin/env bash
# sse.sh - cost of SSE-S3 on PUT and GET of one 64 MiB object (a program,
# never a timed test).  Starts a Release strata on 127.0.0.1 with a fresh
# --kms-key-file and four drive directories, then RUNS times each: PUT of
# the object plain and with x-amz-server-side-encryption: AES256, and a GET
# of each (curl with SigV4, one connection, body to /dev/null).  Prints the
# median seconds and MB/s per cell and the ratio encrypted/plain.  The GET
# of the encrypted object is checked against the source once.
# Environment: RUNS (default 5), STRATA_BIN (default build/strata from
#   `cmake --preset release`), BENCH_DIR (default a new dir under /tmp).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUNS=${RUNS:-5}
BIN=${STRATA_BIN:-$ROOT/build/strata}
[[ -x $BIN ]] || { echo "sse.sh: build the release preset first ($BIN)" >&2; exit 1; }
DIR=${BENCH_DIR:-$(mktemp -d /tmp/strata-sse-bench.XXXXXX)}
PID=""
cleanup() { [[ -n $PID ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
mkdir -p "$DIR"/d{1,2,3,4}
/usr/bin/python3 -c "import json,base64,os; json.dump({'active':'k1','keys':{'k1':{'key':base64.b64encode(os.urandom(32)).decode()}}}, open('$DIR/keys.json','w'))"
chmod 600 "$DIR/keys.json"
head -c $((64 << 20)) /dev/urandom >"$DIR/obj"
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
AK=benchak SK=benchsecret$RANDOM$RANDOM
STRATA_ROOT_USER=$AK STRATA_ROOT_PASSWORD=$SK "$BIN" server --address 127.0.0.1:$PORT \
    --kms-key-file "$DIR/keys.json" "$DIR"/d{1,2,3,4} >"$DIR/log" 2>&1 &
PID=$!
EP=http://127.0.0.1:$PORT
S=(--aws-sigv4 aws:amz:us-east-1:s3 --user "$AK:$SK" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -s -f)
for _ in $(seq 50); do curl -s -o /dev/null "$EP/" && break; sleep 0.2; done
curl "${S[@]}" -X PUT "$EP/ssebench" -o /dev/null
t() { curl "${S[@]}" -o /dev/null -w '%{time_total}\n' "$@"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A res
for i in $(seq "$RUNS"); do
    res[put_plain]+="$(t -T "$DIR/obj" "$EP/ssebench/plain") "
    res[put_sse]+="$(t -T "$DIR/obj" -H 'x-amz-server-side-encryption: AES256' "$EP/ssebench/enc") "
    res[get_plain]+="$(t "$EP/ssebench/plain") "
    res[get_sse]+="$(t "$EP/ssebench/enc") "
done
curl "${S[@]}" "$EP/ssebench/enc" -o "$DIR/back"
cmp -s "$DIR/obj" "$DIR/back" || { echo "sse.sh: GET of the encrypted object differs" >&2; exit 1; }
echo "64 MiB, $RUNS runs, medians ($(nproc) cores)"
for op in put get; do
    p=$(tr ' ' '\n' <<<"${res[${op}_plain]}" | grep . | median)
    e=$(tr ' ' '\n' <<<"${res[${op}_sse]}" | grep . | median)
    awk -v op="$op" -v p="$p" -v e="$e" 'BEGIN {
        printf "%s plain %.3f s (%.0f MB/s)  SSE-S3 %.3f s (%.0f MB/s)  ratio %.2f\n",
               op, p, 67.108864 / p, e, 67.108864 / e, e / p }'
done
