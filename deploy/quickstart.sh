#!/usr/bin/env bash
# quickstart.sh - from a fresh Debian 12 checkout to a running strata:
# install what is missing, build (build/, RelWithDebInfo), start
# `strata server` on 127.0.0.1:9000 in the background with four drive
# directories under ./data, wait for /health/ready, and print the endpoint,
# the root keys and a ready-to-paste aws command.
#
#   ./deploy/quickstart.sh          start (or show the one already running)
#   ./deploy/quickstart.sh stop     stop it (SIGTERM to the PID in data/strata.pid)
#   ./deploy/quickstart.sh status
#
# Environment: STRATA_DATA_DIR (default ./data), STRATA_ADDRESS (default
# 127.0.0.1:9000), STRATA_ROOT_USER / STRATA_ROOT_PASSWORD (default: generated
# once and kept in $STRATA_DATA_DIR/root.env, mode 0600).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA=${STRATA_DATA_DIR:-$ROOT/data}
ADDR=${STRATA_ADDRESS:-127.0.0.1:9000}
PIDFILE="$DATA/strata.pid"
LOG="$DATA/strata.log"
KEYS="$DATA/root.env"
BIN="$ROOT/build/strata"

running_pid() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid=$(cat "$PIDFILE")
    # Only our strata: the PID must still be a strata process, not a reused PID.
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
        [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == strata* ]] && echo "$pid"
}

load_keys() {
    if [[ -n "${STRATA_ROOT_USER:-}" && -n "${STRATA_ROOT_PASSWORD:-}" ]]; then
        return
    fi
    if [[ ! -f "$KEYS" ]]; then
        local ak sk
        ak=$(od -An -N10 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
        sk=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
        (umask 077 && printf 'STRATA_ROOT_USER=%s\nSTRATA_ROOT_PASSWORD=%s\n' "$ak" "$sk" >"$KEYS")
    fi
    # shellcheck disable=SC1090
    source "$KEYS"
}

show() {
    local pid=$1
    cat <<EOF

Strata is running (pid $pid).
  endpoint:   http://$ADDR
  access key: $STRATA_ROOT_USER
  secret key: $STRATA_ROOT_PASSWORD
  data:       $DATA   (log: $LOG)

  console:    http://$ADDR/strata/console/   (log in with the keys above)

Try it:
  AWS_ACCESS_KEY_ID=$STRATA_ROOT_USER AWS_SECRET_ACCESS_KEY=$STRATA_ROOT_PASSWORD AWS_DEFAULT_REGION=us-east-1 /usr/bin/aws --endpoint-url http://$ADDR s3 ls
  STRATA_ENDPOINT=http://$ADDR STRATA_ACCESS_KEY=$STRATA_ROOT_USER STRATA_SECRET_KEY=$STRATA_ROOT_PASSWORD $BIN admin info

Stop it:
  kill \$(cat $PIDFILE)      # or: $ROOT/deploy/quickstart.sh stop
EOF
}

case "${1:-start}" in
stop)
    if pid=$(running_pid); then
        kill -TERM "$pid"
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then echo "strata (pid $pid) still running after 10 s" >&2; exit 1; fi
        rm -f "$PIDFILE"
        echo "strata (pid $pid) stopped"
    else
        echo "strata is not running"
    fi
    exit 0
    ;;
status)
    if pid=$(running_pid); then load_keys; show "$pid"; else echo "strata is not running"; exit 3; fi
    exit 0
    ;;
start) ;;
*) echo "usage: $0 [start|stop|status]" >&2; exit 2 ;;
esac

mkdir -p "$DATA"
load_keys
if pid=$(running_pid); then
    show "$pid"
    exit 0
fi

echo "==> installing missing Debian packages (if any)"
"$ROOT/deploy/install-deps.sh"
echo "==> building strata in $ROOT/build"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$ROOT/build" -j "$(nproc)" --target strata

mkdir -p "$DATA/drive1" "$DATA/drive2" "$DATA/drive3" "$DATA/drive4"
# Users added with `strata admin user add` (or the console) are kept here.
[[ -f "$DATA/users" ]] || (umask 077 && : >"$DATA/users")
echo "==> starting strata on $ADDR"
STRATA_ROOT_USER=$STRATA_ROOT_USER STRATA_ROOT_PASSWORD=$STRATA_ROOT_PASSWORD \
    setsid "$BIN" server --address "$ADDR" --users "$DATA/users" \
    "$DATA/drive1" "$DATA/drive2" "$DATA/drive3" "$DATA/drive4" \
    >>"$LOG" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$PIDFILE"

for _ in $(seq 300); do
    if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$PIDFILE"
        echo "strata exited during start-up; last lines of $LOG:" >&2
        tail -n 30 "$LOG" >&2
        exit 1
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --noproxy '*' "http://$ADDR/health/ready" || true)
    if [[ "$code" == 200 ]]; then
        show "$pid"
        exit 0
    fi
    sleep 0.1
done
echo "strata (pid $pid) did not become ready in 30 s; see $LOG. Stop it with: kill $pid" >&2
exit 1
