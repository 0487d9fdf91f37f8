#!/usr/bin/env bash
# test_operations.sh - the daemon's operational surface: health endpoints
# answer without credentials, /metrics counts requests and S3 error codes in
# Prometheus text, S3 paths still demand a signature, and the access log
# carries one line per request with its status and S3 code.
source "$(dirname "$0")/harness.sh"
H_ARGS=(--metrics-public) # anonymous /metrics; without it see test_metrics.py
h_start
[[ -n "$H_PID" ]] || h_skip "needs its own daemon (its log), not STRATA_TEST_ENDPOINT"

code() { curl -s -o "$H_TMP/body" -w '%{http_code}' "$@"; }

h_eq "GET /health/live without credentials" 200 "$(code "$H_ENDPOINT/health/live")"
h_eq "GET /health/ready without credentials" 200 "$(code "$H_ENDPOINT/health/ready")"
h_eq "anonymous ListBuckets is refused" 403 "$(code "$H_ENDPOINT/")"
h_contains "anonymous refusal is an S3 error" "$(cat "$H_TMP/body")" "<Code>AccessDenied</Code>"

B=$(h_bucket ops)
h_run "create bucket" h_aws s3api create-bucket --bucket "$B"
h_runfail "GET of a missing key fails" NoSuchKey h_aws s3api get-object --bucket "$B" --key no-such-key "$H_TMP/x"

h_eq "GET /metrics without credentials" 200 "$(code -D "$H_TMP/mhdr" "$H_ENDPOINT/metrics")"
m=$(cat "$H_TMP/body")
h_contains "metrics are Prometheus text" "$(cat "$H_TMP/mhdr")" "text/plain"
h_contains "request counter has a TYPE line" "$m" "# TYPE strata_http_requests_total counter"
h_contains "the bucket PUT is counted" "$m" 'strata_http_requests_total{method="PUT",status="200"}'
nsk=$(printf '%s\n' "$m" | awk '/^strata_s3_errors_total\{code="NoSuchKey"\}/ {print $2}')
if [[ -n "$nsk" && "$nsk" -ge 1 ]]; then h_ok "NoSuchKey counted ($nsk)"; else h_fail "NoSuchKey not counted: ${m:0:800}"; fi
ad=$(printf '%s\n' "$m" | awk '/^strata_s3_errors_total\{code="AccessDenied"\}/ {print $2}')
if [[ -n "$ad" && "$ad" -ge 1 ]]; then h_ok "AccessDenied counted ($ad)"; else h_fail "AccessDenied not counted"; fi

# One access-log line per request, with method, bucket, status and S3 code.
sleep 0.2
h_contains "access log has the 404 NoSuchKey line" "$(grep " GET $B " "$H_LOG")" "404 NoSuchKey"
h_contains "access log has the anonymous 403" "$(cat "$H_LOG")" "403 AccessDenied"
h_done
