#!/usr/bin/env bash
# multipart.sh - checkpoint-shaped benchmark (a program, never a timed test):
# in one run against one daemon, the single-stream PUT and GET of a 64 MiB
# object (signed payload) next to a 1 GiB upload by multipart with 8 parts
# of 128 MiB in flight at once, and its download, with boto3 (Debian's).
# Prints the median of RUNS runs of each and checks the bytes once.
#
# Environment: BUILD (default ./build, needs the strata binary), RUNS (3),
# BIG_MB (1024), STRATA_TEST_TMPDIR (scratch, default /tmp).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
RUNS=${RUNS:-3}
BIG_MB=${BIG_MB:-1024}
export STRATA_BIN=${STRATA_BIN:-$BUILD/strata}
export STRATA_TEST_TMPDIR=${STRATA_TEST_TMPDIR:-/tmp}
[[ -x $STRATA_BIN ]] || { echo "multipart.sh: no $STRATA_BIN (build first)" >&2; exit 1; }

# The integration harness starts the daemon on a free loopback port, gives
# the client a clean environment and kills the daemon by PID at exit.
# shellcheck source=../integration/harness.sh
source "$ROOT/tests/integration/harness.sh"
h_start

B=$(h_bucket ckpt)
head -c $((64 << 20)) /dev/urandom >"$H_TMP/obj64"
head -c $((BIG_MB << 20)) /dev/urandom >"$H_TMP/big"

# One python process does every transfer, so client start-up is not timed:
# put_object/get_object for the single stream, the transfer manager with
# 128 MiB parts and 8 threads for the multipart upload and its download.
h_env /usr/bin/python3 - "$H_ENDPOINT" "$B" "$H_TMP" "$RUNS" "$BIG_MB" <<'PY'
import filecmp, statistics, sys, time
import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

ep, bucket, tmp, runs, big_mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
s3 = boto3.client("s3", endpoint_url=ep, config=Config(s3={"addressing_style": "path"},
                  max_pool_connections=16, retries={"max_attempts": 1}))
s3.create_bucket(Bucket=bucket)
tc = TransferConfig(multipart_threshold=64 << 20, multipart_chunksize=128 << 20, max_concurrency=8)
obj64 = open(f"{tmp}/obj64", "rb").read()

def timed(fn):
    t0 = time.perf_counter(); fn(); return time.perf_counter() - t0

def get64():
    assert s3.get_object(Bucket=bucket, Key="obj64")["Body"].read() == obj64

rows = {"p64": [], "g64": [], "pbig": [], "gbig": []}
for _ in range(runs):
    rows["p64"].append(timed(lambda: s3.put_object(Bucket=bucket, Key="obj64", Body=obj64)))
    rows["g64"].append(timed(get64))
    rows["pbig"].append(timed(lambda: s3.upload_file(f"{tmp}/big", bucket, "big", Config=tc)))
    rows["gbig"].append(timed(lambda: s3.download_file(bucket, "big", f"{tmp}/big.back", Config=tc)))
same = filecmp.cmp(f"{tmp}/big", f"{tmp}/big.back", shallow=False)
head = s3.head_object(Bucket=bucket, Key="big")
nparts = -(-(big_mb << 20) // (128 << 20))
assert head["ETag"].endswith(f'-{nparts}"'), head["ETag"]

print(f"## Checkpoint benchmark ({time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, median of {runs})\n")
print("| transfer | seconds | MB/s (10^6 B/s) | bytes back |")
print("| --- | ---: | ---: | --- |")
def row(name, key, mib, back=""):
    t = statistics.median(rows[key])
    print(f"| {name} | {t:.2f} | {mib * 1.048576 / t:.0f} | {back} |")
row("PUT 64 MiB, one stream (put_object, signed payload)", "p64", 64)
row("GET 64 MiB, one stream", "g64", 64, "identical")
row(f"PUT {big_mb} MiB multipart, {nparts} x 128 MiB parts, 8 in flight", "pbig", big_mb)
row(f"GET {big_mb} MiB (transfer manager, 8 ranged streams)", "gbig", big_mb,
    "identical" if same else "DIFFERENT")
print(f"\nmultipart ETag {head['ETag']}")
sys.exit(0 if same else 1)
PY
rm -f "$H_TMP/big" "$H_TMP/big.back" "$H_TMP/obj64" "$H_TMP/obj64.back"
