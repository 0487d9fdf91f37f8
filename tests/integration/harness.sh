# shellcheck shell=bash
# harness.sh - sourced by tests/integration/test_*.sh.  Starts one strata
# daemon for the test (or reuses STRATA_TEST_ENDPOINT=host:port), gives each
# S3 client a clean environment of its own, and offers small assertion
# helpers.  The daemon is killed by its PID at exit (trap), and its log is
# checked for sanitizer reports, so an ASan/UBSan finding in the daemon fails
# the test that triggered it.
#
# Environment in:  STRATA_BIN (the daemon), STRATA_TEST_TMPDIR (scratch),
#                  STRATA_TEST_ENDPOINT (optional host:port of a running daemon;
#                  then STRATA_TEST_ACCESS_KEY / STRATA_TEST_SECRET_KEY or
#                  STRATA_ROOT_USER / STRATA_ROOT_PASSWORD give its keys).
# Variables in:    H_ARGS (optional array): extra daemon flags, set before h_start.
# Variables out:   H_TMP (private temp dir), H_HOST, H_PORT, H_ENDPOINT
#                  (http://host:port), H_AK, H_SK, H_REGION, H_PID (or empty).
# Functions:       h_env CMD...      run CMD with a clean client environment
#                  h_aws ARGS...     /usr/bin/aws (v2) against the daemon
#                  h_bucket NAME     a bucket name unique to this run
#                  h_ok / h_fail / h_eq / h_cmp / h_contains, h_done

set -uo pipefail

H_NAME=$(basename "${0%.*}")
H_FAILS=0
H_CHECKS=0
H_REGION=us-east-1
H_PID=""

# A dead daemon makes every later check fail with "connection refused";
# say once, at the first check after it died, where that happened.
h_alive_check() {
    if [[ -n "${H_PID:-}" && -z "${H_DEAD_REPORTED:-}" ]] && ! kill -0 "$H_PID" 2>/dev/null; then
        H_DEAD_REPORTED=1
        printf '[%s] FAIL: strata died; the previous command killed it\n' "$H_NAME"
        H_FAILS=$((H_FAILS + 1))
    fi
}
h_log() { printf '[%s] %s\n' "$H_NAME" "$*"; }
h_fail() { h_alive_check; H_FAILS=$((H_FAILS + 1)); H_CHECKS=$((H_CHECKS + 1)); printf '[%s] FAIL: %s\n' "$H_NAME" "$*"; }
h_ok() { h_alive_check; H_CHECKS=$((H_CHECKS + 1)); printf '[%s] ok: %s\n' "$H_NAME" "$*"; }
# h_skip MSG: exit 77 (CTest SKIP_RETURN_CODE) - only when a client is absent.
h_skip() { printf '[%s] SKIP: %s\n' "$H_NAME" "$*"; exit 77; }

# h_eq WHAT EXPECTED ACTUAL
h_eq() {
    if [[ "$2" == "$3" ]]; then h_ok "$1"; else h_fail "$1: expected [$2], got [$3]"; fi
}
# h_contains WHAT HAYSTACK NEEDLE
h_contains() {
    if [[ "$2" == *"$3"* ]]; then h_ok "$1"; else h_fail "$1: [$3] not in [${2:0:600}]"; fi
}
# h_cmp WHAT FILE1 FILE2: byte comparison.
h_cmp() {
    if cmp -s -- "$2" "$3"; then h_ok "$1"; else
        h_fail "$1: $2 and $3 differ ($(stat -c %s -- "$2" 2>/dev/null || echo '?') vs $(stat -c %s -- "$3" 2>/dev/null || echo '?') bytes)"
    fi
}
# h_run WHAT CMD...: the command must succeed; its output is shown on failure.
h_run() {
    local what=$1 out; shift
    if out=$("$@" 2>&1); then h_ok "$what"; else h_fail "$what (exit $?): ${out:0:2000}"; fi
}
# h_runfail WHAT NEEDLE CMD...: the command must fail and mention NEEDLE.
h_runfail() {
    local what=$1 needle=$2 out; shift 2
    if out=$("$@" 2>&1); then h_fail "$what: succeeded, expected failure with $needle"
    elif [[ "$out" == *"$needle"* ]]; then h_ok "$what"
    else h_fail "$what: failed without [$needle]: ${out:0:1000}"; fi
}

h_free_port() {
    # below the ephemeral range: see ports.py
    /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/ports.py"
}

# Unique, valid bucket name (lowercase, 3-63 chars) for this test run.
h_bucket() {
    printf '%s-%s-%s' "$1" "$(printf '%s' "$H_NAME" | tr -c 'a-z0-9' '-' | cut -c1-16)" "$H_RUN_ID" | cut -c1-63 | sed 's/-*$//'
}

# h_env CMD...: a clean environment - nothing inherited (no AWS_CA_BUNDLE,
# proxies, profiles or sanitizer options), its own HOME.
h_env() {
    env -i PATH=/usr/bin:/bin HOME="$H_TMP/home" LANG=C.UTF-8 \
        AWS_ACCESS_KEY_ID="$H_AK" AWS_SECRET_ACCESS_KEY="$H_SK" \
        AWS_DEFAULT_REGION="$H_REGION" AWS_REGION="$H_REGION" \
        AWS_CONFIG_FILE="$H_TMP/home/.aws/config" \
        AWS_SHARED_CREDENTIALS_FILE="$H_TMP/home/.aws/credentials" \
        AWS_PAGER="" AWS_EC2_METADATA_DISABLED=true NO_PROXY="127.0.0.1,localhost" \
        "$@"
}
h_aws() { h_env /usr/bin/aws --endpoint-url "$H_ENDPOINT" --no-cli-pager "$@"; }

# Dump what the daemon said, for a failure report.
h_server_log() {
    [[ -n "${H_LOG:-}" && -f "$H_LOG" ]] || return 0
    echo "----- strata log (last 60 lines): $H_LOG -----"
    tail -n 60 "$H_LOG"
    echo "-----"
}

h_cleanup() {
    local rc=$? st=0
    if [[ -n "$H_PID" ]]; then
        if kill -0 "$H_PID" 2>/dev/null; then
            kill -TERM "$H_PID" 2>/dev/null
            # Graceful shutdown must be quick; after 15 s it is a bug.
            for _ in $(seq 150); do kill -0 "$H_PID" 2>/dev/null || break; sleep 0.1; done
            if kill -0 "$H_PID" 2>/dev/null; then
                echo "[$H_NAME] FAIL: strata (pid $H_PID) ignored SIGTERM for 15 s; killing it"
                kill -KILL "$H_PID" 2>/dev/null; rc=1
            fi
            wait "$H_PID" 2>/dev/null; st=$?
        else
            wait "$H_PID" 2>/dev/null; st=$?
            echo "[$H_NAME] FAIL: strata (pid $H_PID) died during the test (status $st)"; rc=1; st=0
        fi
        # 143 = died of SIGTERM without a handler: not graceful, but not a
        # memory error either; anything else non-zero (LSan's 1, abort's 134)
        # is a failure.
        if [[ $st -eq 143 ]]; then
            echo "[$H_NAME] NOTE: strata has no SIGTERM handler (exit 143): shutdown is not graceful"
        elif [[ $st -ne 0 ]]; then
            echo "[$H_NAME] FAIL: strata exited with status $st after SIGTERM"; rc=1
        fi
        if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|ThreadSanitizer' "$H_LOG" 2>/dev/null; then
            echo "[$H_NAME] FAIL: sanitizer report in the daemon log"; rc=1
        fi
        [[ $rc -ne 0 && $rc -ne 77 ]] && h_server_log
    fi
    if [[ $rc -eq 0 && "${STRATA_TEST_KEEP:-0}" != 1 && -n "${H_TMP:-}" ]]; then
        rm -rf -- "$H_TMP"
    elif [[ -n "${H_TMP:-}" ]]; then
        echo "[$H_NAME] kept $H_TMP"
    fi
    exit "$rc"
}

# h_start: start (or attach to) the daemon.  Call once, at the top of a test.
h_start() {
    local base=${STRATA_TEST_TMPDIR:-${TMPDIR:-/tmp}}
    mkdir -p "$base"
    H_TMP=$(mktemp -d "$base/$H_NAME.XXXXXX")
    H_RUN_ID=$(od -An -N4 -tx4 /dev/urandom | tr -d ' \n')
    mkdir -p "$H_TMP/home/.aws"
    trap h_cleanup EXIT
    trap 'exit 130' INT TERM

    if [[ -n "${STRATA_TEST_ENDPOINT:-}" ]]; then
        H_HOST=${STRATA_TEST_ENDPOINT%:*}
        H_PORT=${STRATA_TEST_ENDPOINT##*:}
        H_AK=${STRATA_TEST_ACCESS_KEY:-${STRATA_ROOT_USER:-}}
        H_SK=${STRATA_TEST_SECRET_KEY:-${STRATA_ROOT_PASSWORD:-}}
        [[ -n "$H_AK" && -n "$H_SK" ]] || { echo "STRATA_TEST_ENDPOINT needs STRATA_TEST_ACCESS_KEY/STRATA_TEST_SECRET_KEY"; exit 1; }
    else
        [[ -n "${STRATA_BIN:-}" && -x "$STRATA_BIN" ]] || { echo "[$H_NAME] STRATA_BIN not set or not executable: ${STRATA_BIN:-}"; exit 1; }
        H_HOST=127.0.0.1
        H_AK=STRATATESTKEY$(od -An -N4 -tx4 /dev/urandom | tr -d ' \n' | tr a-f A-F)
        H_SK=strata-test-secret/$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
        H_LOG="$H_TMP/strata.log"
        mkdir -p "$H_TMP"/d1 "$H_TMP"/d2 "$H_TMP"/d3 "$H_TMP"/d4
        local try
        for try in 1 2 3; do
            H_PORT=$(h_free_port)
            env -i PATH=/usr/bin:/bin HOME="$H_TMP/home" \
                ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} ${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} \
                STRATA_ROOT_USER="$H_AK" STRATA_ROOT_PASSWORD="$H_SK" \
                "$STRATA_BIN" server --address "127.0.0.1:$H_PORT" ${H_ARGS[@]+"${H_ARGS[@]}"} \
                "$H_TMP/d1" "$H_TMP/d2" "$H_TMP/d3" "$H_TMP/d4" >"$H_LOG" 2>&1 </dev/null &
            H_PID=$!
            if h_wait_ready 30; then break; fi
            if kill -0 "$H_PID" 2>/dev/null; then
                echo "[$H_NAME] strata did not become ready in 30 s"; h_server_log; exit 1
            fi
            # Died: maybe somebody took the port between our probe and bind.
            wait "$H_PID" 2>/dev/null; H_PID=""
            if [[ $try -eq 3 ]] || ! grep -qi 'address already in use' "$H_LOG"; then
                echo "[$H_NAME] strata exited at start-up"; cat "$H_LOG"; exit 1
            fi
        done
    fi
    H_ENDPOINT="http://$H_HOST:$H_PORT"
    # awscli config: path-style addressing (no wildcard DNS on loopback).
    cat >"$H_TMP/home/.aws/config" <<EOF
[default]
region = $H_REGION
s3 =
    addressing_style = path
EOF
    : >"$H_TMP/home/.aws/credentials"
    h_log "daemon at $H_ENDPOINT (pid ${H_PID:-external}), scratch $H_TMP"
}

# h_wait_ready SECONDS: poll GET /health/ready until 200.
h_wait_ready() {
    local deadline=$((SECONDS + $1))
    while ((SECONDS < deadline)); do
        [[ -n "$H_PID" ]] && ! kill -0 "$H_PID" 2>/dev/null && return 1
        if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --noproxy '*' \
              "http://127.0.0.1:$H_PORT/health/ready" 2>/dev/null) == 200 ]]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# h_done: last line of every test.
h_done() {
    h_log "$H_CHECKS checks, $H_FAILS failed"
    if [[ $H_FAILS -ne 0 ]]; then exit 1; fi
    if [[ $H_CHECKS -eq 0 ]]; then echo "[$H_NAME] FAIL: no checks ran"; exit 1; fi
    exit 0
}
