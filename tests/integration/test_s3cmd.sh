#!/usr/bin/env bash
# test_s3cmd.sh - s3cmd (SigV4, path style, plain HTTP) against a live strata:
# mb, put, get, ls, la, info, del, rb, with byte comparison; setpolicy,
# delpolicy and a public-read policy read by curl without credentials.  Multipart is
# not implemented yet, so enable_multipart = False (TODO(multipart): drop it
# and put a 40 MiB file with multipart_chunk_size_mb = 5).
# Run by CTest (integration label); see harness.sh for the environment.
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

[[ -x /usr/bin/s3cmd ]] || h_skip "s3cmd not installed"
h_start

CFG="$H_TMP/home/.s3cfg"
{
    echo "[default]"
    echo "access_key = $H_AK"
    echo "secret_key = $H_SK"
    echo "host_base = $H_HOST:$H_PORT"
    echo "host_bucket = $H_HOST:$H_PORT"
    echo "use_https = False"
    echo "signature_v2 = False"
    echo "bucket_location = $H_REGION"
    echo "check_ssl_certificate = False"
    echo "proxy_host ="
    echo "enable_multipart = False"
    echo "guess_mime_type = False"
    echo "progress_meter = False"
} >"$CFG"
s3c() { h_env /usr/bin/s3cmd -c "$CFG" --no-progress "$@"; }

B=$(h_bucket s3cmd)
W="$H_TMP/work"
mkdir -p "$W/down"
head -c 777777 /dev/urandom >"$W/a.bin"
head -c 1 /dev/urandom >"$W/one.bin"
: >"$W/zero.bin"
head -c $((6 * 1024 * 1024 + 3)) /dev/urandom >"$W/six.bin"

h_run "mb" s3c mb "s3://$B"
out=$(s3c ls 2>&1); h_contains "ls shows the bucket" "$out" "s3://$B"
h_run "put a.bin" s3c put "$W/a.bin" "s3://$B/a.bin"
h_run "put one.bin" s3c put "$W/one.bin" "s3://$B/dir/one.bin"
h_run "put zero.bin" s3c put "$W/zero.bin" "s3://$B/dir/zero.bin"
h_run "put six.bin" s3c put "$W/six.bin" "s3://$B/six.bin"
h_run "put with a space in the key" s3c put "$W/one.bin" "s3://$B/with space/one + two.bin"

out=$(s3c ls "s3://$B" 2>&1)
h_contains "ls shows a.bin" "$out" "s3://$B/a.bin"
h_contains "ls shows the dir/ prefix" "$out" "DIR"
out=$(s3c ls --recursive "s3://$B" 2>&1)
h_contains "ls -r shows dir/one.bin" "$out" "s3://$B/dir/one.bin"
h_contains "ls -r shows the spaced key" "$out" "s3://$B/with space/one + two.bin"
h_eq "ls -r lists 5 objects" 5 "$(grep -c "s3://$B/" <<<"$out")"
out=$(s3c la 2>&1)
h_contains "la lists objects of all buckets" "$out" "s3://$B/six.bin"

for f in a.bin six.bin; do
    h_run "get $f" s3c get --force "s3://$B/$f" "$W/down/$f"
    h_cmp "$f round trip" "$W/$f" "$W/down/$f"
done
h_run "get dir/one.bin" s3c get --force "s3://$B/dir/one.bin" "$W/down/one.bin"
h_cmp "one byte round trip" "$W/one.bin" "$W/down/one.bin"
h_run "get dir/zero.bin" s3c get --force "s3://$B/dir/zero.bin" "$W/down/zero.bin"
h_cmp "empty round trip" "$W/zero.bin" "$W/down/zero.bin"
h_run "get the spaced key" s3c get --force "s3://$B/with space/one + two.bin" "$W/down/spaced"
h_cmp "spaced key round trip" "$W/one.bin" "$W/down/spaced"

out=$(s3c info "s3://$B/a.bin" 2>&1)
h_contains "info: size" "$out" "777777"
h_contains "info: MD5" "$out" "$(md5sum <"$W/a.bin" | cut -d' ' -f1)"

h_runfail "get of a missing key fails" "does not exist" s3c get --force "s3://$B/nope" "$W/down/nope"

# ---- bucket policy: setpolicy / info / delpolicy, read without credentials --
anon() { env -i PATH=/usr/bin:/bin curl -s -o "$W/down/anon" -w '%{http_code}' "$H_ENDPOINT/$B/a.bin"; }
h_eq "anonymous GET without a policy" "403" "$(anon)"
printf '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::%s/*"}]}' "$B" >"$W/policy.json"
h_run "setpolicy" s3c setpolicy "$W/policy.json" "s3://$B"
out=$(s3c info "s3://$B" 2>&1)
h_contains "info shows the policy" "$out" "arn:aws:s3:::$B/*"
h_eq "anonymous GET with a public-read policy" "200" "$(anon)"
h_cmp "anonymous GET bytes" "$W/a.bin" "$W/down/anon"
printf '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}' >"$W/bad.json"
h_runfail "setpolicy of another bucket's resource" "MalformedPolicy" s3c setpolicy "$W/bad.json" "s3://$B"
h_eq "the previous policy still applies" "200" "$(anon)"
h_run "delpolicy" s3c delpolicy "s3://$B"
h_eq "anonymous GET after delpolicy" "403" "$(anon)"
h_runfail "rb of a non-empty bucket fails" "BucketNotEmpty" s3c rb "s3://$B"
h_run "del a.bin" s3c del "s3://$B/a.bin"
out=$(s3c ls "s3://$B" 2>&1) || h_fail "ls after del: $out"
if [[ "$out" == *"s3://$B/a.bin"* ]]; then h_fail "deleted key still listed"; else h_ok "deleted key gone from ls"; fi
h_run "del --recursive --force" s3c del --recursive --force "s3://$B"
h_eq "bucket empty" "" "$(s3c ls --recursive "s3://$B" 2>&1)"
h_run "rb" s3c rb "s3://$B"
out=$(s3c ls 2>&1) || h_fail "ls after rb: $out"
if [[ "$out" == *"s3://$B"* ]]; then h_fail "removed bucket still listed"; else h_ok "removed bucket gone"; fi

h_done
