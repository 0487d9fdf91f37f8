#!/usr/bin/env bash
# test_big_transfers.sh - large multipart transfers with real clients against
# a live strata: `aws s3 cp` (awscli v2, default 8 MiB multipart settings) of a
# STRATA_BIG_MB file (default 1024 MiB) up and down with cmp and the expected
# multipart ETag, and rclone copy with --s3-upload-cutoff 5M --s3-chunk-size 5M
# of a 64 MiB file, `rclone check`, download and cmp.  Times and MB/s are
# logged.  Run by CTest (integration label); see harness.sh for the environment.
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

[[ -x /usr/bin/aws ]] || h_skip "awscli v2 (/usr/bin/aws) not installed"
[[ -x /usr/bin/rclone ]] || h_skip "rclone not installed"
BIG_MB=${STRATA_BIG_MB:-1024}
[[ "$BIG_MB" =~ ^[0-9]+$ && "$BIG_MB" -ge 9 ]] || { echo "STRATA_BIG_MB must be an integer >= 9"; exit 1; }
h_start

W="$H_TMP/work"
mkdir -p "$W"
B=$(h_bucket big)

# Expected S3 multipart ETag of a file cut into CHUNK-byte parts.
mp_etag() {
    /usr/bin/python3 - "$1" "$2" <<'EOF'
import hashlib, sys
path, chunk = sys.argv[1], int(sys.argv[2])
md5s, n = b"", 0
with open(path, "rb") as f:
    while True:
        block = f.read(chunk)
        if not block:
            break
        md5s += hashlib.md5(block).digest()
        n += 1
print(f'"{hashlib.md5(md5s).hexdigest()}-{n}"')
EOF
}
# Seconds (with ms) since the epoch, and MB/s for a byte count over a span.
now() { date +%s.%N; }
rate() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN { d = t1 - t0; printf "%.1f s, %.1f MB/s", d, b / 1048576 / (d > 0 ? d : 1e-9) }'; }

# ---- awscli: STRATA_BIG_MB up and down ----------------------------------------
h_run "mb" h_aws s3 mb "s3://$B"
BIG="$W/big.bin"
head -c $((BIG_MB * 1024 * 1024)) /dev/urandom >"$BIG"
size=$(stat -c %s "$BIG")
want_etag=$(mp_etag "$BIG" $((8 * 1024 * 1024)))

t0=$(now)
h_run "aws s3 cp up (${BIG_MB} MiB, multipart)" h_aws s3 cp --only-show-errors "$BIG" "s3://$B/big.bin"
t1=$(now)
h_log "upload ${BIG_MB} MiB: $(rate "$size" "$t0" "$t1")"

head=$(h_aws s3api head-object --bucket "$B" --key big.bin --output json 2>&1)
h_contains "head-object size" "$head" "\"ContentLength\": $size"
h_contains "multipart ETag = md5 of 8 MiB part md5s" "$head" "\"ETag\": \"\\\"${want_etag//\"/}\\\"\""
ups=$(h_aws s3api list-multipart-uploads --bucket "$B" --output json 2>&1)
if [[ "$ups" == *'"UploadId"'* ]]; then h_fail "uploads left after aws s3 cp: ${ups:0:500}"; else h_ok "no upload left behind"; fi

t0=$(now)
h_run "aws s3 cp down (${BIG_MB} MiB, ranged GETs)" h_aws s3 cp --only-show-errors "s3://$B/big.bin" "$W/big.down"
t1=$(now)
h_log "download ${BIG_MB} MiB: $(rate "$size" "$t0" "$t1")"
h_cmp "downloaded ${BIG_MB} MiB file is byte-identical" "$BIG" "$W/big.down"
rm -f "$W/big.down"

# A ranged read in the middle of a part, compared with the source.
off=$((size / 2 + 12345))
h_run "get-object --range in the middle" h_aws s3api get-object --bucket "$B" --key big.bin \
    --range "bytes=$off-$((off + 999999))" "$W/range.got"
tail -c +$((off + 1)) "$BIG" | head -c 1000000 >"$W/range.want"
h_cmp "middle range bytes" "$W/range.want" "$W/range.got"
rm -f "$BIG" "$W/range.got" "$W/range.want"
h_run "aws s3 rm" h_aws s3 rm --only-show-errors "s3://$B/big.bin"

# ---- rclone: 64 MiB in 5 MiB chunks ---------------------------------------
: >"$H_TMP/home/rclone.conf"
rc() {
    h_env RCLONE_CONFIG="$H_TMP/home/rclone.conf" \
        RCLONE_CONFIG_STRATA_TYPE=s3 RCLONE_CONFIG_STRATA_PROVIDER=Other \
        RCLONE_CONFIG_STRATA_ENV_AUTH=false \
        RCLONE_CONFIG_STRATA_ACCESS_KEY_ID="$H_AK" RCLONE_CONFIG_STRATA_SECRET_ACCESS_KEY="$H_SK" \
        RCLONE_CONFIG_STRATA_ENDPOINT="$H_ENDPOINT" RCLONE_CONFIG_STRATA_REGION="$H_REGION" \
        RCLONE_CONFIG_STRATA_FORCE_PATH_STYLE=true \
        /usr/bin/rclone --retries 1 --low-level-retries 1 --contimeout 10s --timeout 120s \
        --s3-upload-cutoff 5M --s3-chunk-size 5M --s3-upload-concurrency 4 "$@"
}
mkdir -p "$W/rc/src" "$W/rc/dst"
head -c $((64 * 1024 * 1024)) /dev/urandom >"$W/rc/src/r64.bin"
head -c 3000000 /dev/urandom >"$W/rc/src/small.bin"   # under the cutoff: single PUT
rsize=$(stat -c %s "$W/rc/src/r64.bin")
t0=$(now)
h_run "rclone copy up (multipart, 5 MiB chunks)" rc copy "$W/rc/src" "strata:$B/rc"
t1=$(now)
h_log "rclone upload 64 MiB: $(rate "$rsize" "$t0" "$t1")"
head=$(h_aws s3api head-object --bucket "$B" --key rc/r64.bin --output json 2>&1)
h_contains "rclone object size" "$head" "\"ContentLength\": $rsize"
want_etag=$(mp_etag "$W/rc/src/r64.bin" $((5 * 1024 * 1024)))
h_contains "rclone multipart ETag (13 parts of 5 MiB)" "$head" "\"ETag\": \"\\\"${want_etag//\"/}\\\"\""
h_run "rclone check" rc check "$W/rc/src" "strata:$B/rc"
h_run "rclone copy down" rc copy "strata:$B/rc" "$W/rc/dst"
h_cmp "rclone 64 MiB round trip" "$W/rc/src/r64.bin" "$W/rc/dst/r64.bin"
h_cmp "rclone small file round trip" "$W/rc/src/small.bin" "$W/rc/dst/small.bin"
# check must be able to fail: change the local copy.
printf 'x' >>"$W/rc/src/r64.bin"
h_runfail "rclone check notices a difference" "differences found" rc check "$W/rc/src" "strata:$B/rc"
h_run "rclone purge" rc purge "strata:$B"

h_done
