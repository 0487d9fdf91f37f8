#!/usr/bin/env bash
# install-deps.sh - install every Debian 12 package Strata's build, tests and
# benchmarks need.  Idempotent and quiet: when everything is present it prints
# nothing and exits 0; otherwise it runs `apt-get update` once, then installs
# only the missing packages.  Runs as root (uses sudo only when not root).
set -euo pipefail

# STRATA_DEPS=build installs only what building strata needs (the
# container image, deploy/Containerfile).
BUILD_PKGS=(
    build-essential cmake pkg-config
    libisal-dev liburing-dev librocksdb-dev libmicrohttpd-dev libmsgpack-dev
    libcmocka-dev libjansson-dev libxml2-dev libssl-dev
    libcurl4-openssl-dev  # strata admin's HTTP client; the S3 client of remote tiers
    libgnutls28-dev  # libmicrohttpd's TLS sessions (server/http/http.c early_answer)
    libhiredis-dev  # the redis event notification target
    libnats-dev  # the nats event notification target
    librabbitmq-dev libmosquitto-dev libpq-dev  # the amqp, mqtt and postgres notification targets
    librados-dev  # the RADOS store backend (meta/rados/) and `strata rados`
)
PKGS=(
    "${BUILD_PKGS[@]}"
    # integration tests: real S3 clients
    awscli python3 python3-boto3 s3cmd rclone curl
    python3-prometheus-client  # parses /metrics in test_metrics.py
    redis-server nats-server  # the notification targets' tests (test_notify.py)
    # the amqp, mqtt and postgres targets' servers and clients (test_notify_brokers.py)
    rabbitmq-server python3-pika mosquitto python3-paho-mqtt postgresql-15 postgresql-client-15
    python3-torch  # the PyTorch DataLoader example, examples/pytorch (test_torch_example.py), tests/bench/torch_loader.py
    openssl  # a self-signed certificate in test_admin_cli.py
    # aws-sdk-js v3 test (tests/integration/test_js_sdk.py); npm below
    nodejs
    # web console and CORS tests in a real browser (tests/integration/test_console.py,
    # test_cors_browser.py)
    chromium chromium-driver python3-selenium
    logrotate  # deploy/strata.logrotate checked with logrotate -d
    # integration tests: a wall clock moved at run time (Object Lock clock)
    faketime
    # benchmarks
    nginx fio wrk
    # The RADOS backend's tests: a throw-away single-host cluster
    # (tests/integration/ceph_cluster.py: one monitor, memstore or bluestore
    # OSDs), also for the side-by-side benchmark against radosgw.  No
    # ceph-mgr: pools, I/O, omap, object classes, watch/notify and radosgw
    # run without it, and its Python stack is 34 more packages.
    ceph-common ceph-mon ceph-osd radosgw
    # tests/integration/stored_data.py reads a daemon's pools (ceph-common
    # pulls it in too; named because the tests import it)
    python3-rados
)
# Fuzzing (tests/fuzz) needs clang's libFuzzer; opt in, it is large.
# libFuzzer and the sanitizer runtimes are in libclang-rt-14-dev, which
# clang only recommends (and recommends are not installed below).
if [[ "${STRATA_WITH_FUZZ:-0}" == 1 ]]; then
    PKGS+=(clang libclang-rt-14-dev)
fi
BUILD_ONLY=0
if [[ "${STRATA_DEPS:-all}" == build ]]; then
    PKGS=("${BUILD_PKGS[@]}")
    BUILD_ONLY=1
fi

missing=()
for p in "${PKGS[@]}"; do
    # dpkg-query exits non-zero for unknown packages; "install ok installed"
    # is the only state that means the files are there.
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$st" == "install ok installed" ]] || missing+=("$p")
done
# Debian's npm package; a nodejs build that bundles its own npm (and
# conflicts with Debian's) already provides the command.
[[ $BUILD_ONLY == 1 ]] || command -v npm >/dev/null || missing+=(npm)

if [[ ${#missing[@]} -gt 0 ]]; then
    SUDO=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
        SUDO=(sudo)
    fi
    echo "install-deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # nginx's Debian package starts a system service on :80; the benchmarks run
    # their own instance on loopback, so leave the distro one alone but do not
    # fail if it could not start (e.g. in a container without systemd).
fi

# aws-sdk-js v3 for the JS integration test, exactly as pinned in its
# package-lock.json, into tests/integration/js/node_modules (git-ignored).
[[ $BUILD_ONLY == 0 ]] || exit 0
JS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/integration/js" && pwd)
if [[ ! -f "$JS_DIR/node_modules/@aws-sdk/client-s3/package.json" ]]; then
    echo "install-deps: npm ci in $JS_DIR" >&2
    (cd "$JS_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
exit 0
