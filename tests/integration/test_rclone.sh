#!/usr/bin/env bash
# test_rclone.sh - rclone with an environment-configured s3 remote
# (provider Other) against a live strata: copy a tree up and down,
# `rclone check` (sizes and MD5s), byte comparison, a changed file is
# re-copied, delete/purge.  Files stay under rclone's 200 MiB upload_cutoff,
# so no multipart (TODO(multipart): a 250 MiB file, --s3-upload-cutoff 5M).
# Run by CTest (integration label); see harness.sh for the environment.
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

[[ -x /usr/bin/rclone ]] || h_skip "rclone not installed"
h_start

: >"$H_TMP/home/rclone.conf"
rc() {
    h_env RCLONE_CONFIG="$H_TMP/home/rclone.conf" \
        RCLONE_CONFIG_STRATA_TYPE=s3 RCLONE_CONFIG_STRATA_PROVIDER=Other \
        RCLONE_CONFIG_STRATA_ENV_AUTH=false \
        RCLONE_CONFIG_STRATA_ACCESS_KEY_ID="$H_AK" RCLONE_CONFIG_STRATA_SECRET_ACCESS_KEY="$H_SK" \
        RCLONE_CONFIG_STRATA_ENDPOINT="$H_ENDPOINT" RCLONE_CONFIG_STRATA_REGION="$H_REGION" \
        RCLONE_CONFIG_STRATA_FORCE_PATH_STYLE=true \
        /usr/bin/rclone --retries 1 --low-level-retries 1 --contimeout 10s --timeout 60s "$@"
}

B=$(h_bucket rclone)
W="$H_TMP/work"
mkdir -p "$W/src/a/b/c" "$W/src/empty-dir-sibling" "$W/dst"
for i in $(seq 1 12); do head -c $((i * i * 997)) /dev/urandom >"$W/src/a/f$i.bin"; done
head -c $((9 * 1024 * 1024 + 1)) /dev/urandom >"$W/src/a/b/big.bin"
: >"$W/src/a/b/c/empty.txt"
printf 'unicode name\n' >"$W/src/a/b/c/caf\xc3\xa9 na\xc3\xafve.txt"
printf 'spaces & symbols\n' >"$W/src/empty-dir-sibling/x + y = z.txt"
nfiles=$(find "$W/src" -type f | wc -l)

h_run "mkdir bucket" rc mkdir "strata:$B"
h_run "copy tree up" rc copy "$W/src" "strata:$B/tree"
out=$(rc lsf -R --files-only "strata:$B/tree" 2>&1)
h_eq "remote has every file" "$nfiles" "$(grep -c . <<<"$out")"
h_run "rclone check (size + md5)" rc check "$W/src" "strata:$B/tree"
out=$(rc md5sum "strata:$B/tree/a/b/big.bin" 2>&1)
h_contains "remote md5 of big.bin" "$out" "$(md5sum <"$W/src/a/b/big.bin" | cut -d' ' -f1)"
out=$(rc size "strata:$B/tree" --json 2>&1)
h_contains "rclone size counts the bytes" "$out" "\"bytes\":$(find "$W/src" -type f -printf '%s\n' | awk '{s += $1} END {print s}')"

h_run "copy tree down" rc copy "strata:$B/tree" "$W/dst"
if diff -r "$W/src" "$W/dst" >/dev/null 2>&1; then h_ok "downloaded tree is byte-identical"
else h_fail "downloaded tree differs: $(diff -rq "$W/src" "$W/dst" 2>&1 | head -5)"; fi

# A second copy transfers nothing; a changed file is copied again.
out=$(rc copy -v "$W/src" "strata:$B/tree" 2>&1)
h_eq "second copy transfers nothing" 0 "$(grep -c ': Copied' <<<"$out")"
printf 'more\n' >>"$W/src/a/f3.bin"
out=$(rc copy -v "$W/src" "strata:$B/tree" 2>&1)
h_eq "changed file is copied again" 1 "$(grep -c ': Copied' <<<"$out")"
h_run "check after the change" rc check "$W/src" "strata:$B/tree"
out=$(rc cat "strata:$B/tree/a/f3.bin" | md5sum | cut -d' ' -f1)
h_eq "cat of the changed file" "$(md5sum <"$W/src/a/f3.bin" | cut -d' ' -f1)" "$out"

# check must notice a difference (so it can fail).
printf 'local only change\n' >>"$W/src/a/f4.bin"
h_runfail "check detects a differing file" "differences found" rc check "$W/src" "strata:$B/tree"

h_run "deletefile" rc deletefile "strata:$B/tree/a/f1.bin"
out=$(rc lsf -R --files-only "strata:$B/tree" 2>&1)
h_eq "one file fewer" "$((nfiles - 1))" "$(grep -c . <<<"$out")"
h_run "purge" rc purge "strata:$B"
out=$(rc lsd "strata:" 2>&1) || h_fail "lsd after purge: $out"
if [[ "$out" == *" $B"* ]]; then h_fail "purged bucket still listed"; else h_ok "purged bucket gone"; fi

h_done
