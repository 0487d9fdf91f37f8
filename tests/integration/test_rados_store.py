#!/usr/bin/python3
"""test_rados_store.py - the RADOS store's tools and backend on a real Ceph
cluster (one monitor, one memstore OSD, started once for the whole file).

- `strata rados check` before init: exit 1, names the missing pools and
  says to run init; a conf file that does not exist and a monitor nobody
  listens on: a clear error within a bounded time, non-zero exit;
- `strata rados init`: creates the pools and control objects (checked with
  the rados CLI), a second run keeps them; `check` then exits 0;
- the backend's cmocka test (tests/unit/meta/test_store_rados.c) against
  the initialised cluster, two connections: its exit code must be 0;
- the same for object data in RADOS and its reclaim
  (tests/unit/meta/test_rados_data.c: stripes, w/ and g/, the gc pass);
  the message queues q.NAME and their lease (tests/unit/meta/test_rados_queue.c),
  and a server queue kept there: its pending figure exact once a message is
  done (tests/unit/server/util/test_pqueue_rados.c).

Skipped (77) when the Ceph daemons or the unit test binary are missing.
"""

import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ceph_cluster import CephCluster  # noqa: E402
from strata_harness import log, run, test  # noqa: E402

STRATA = os.environ.get("STRATA_BIN", "")
UNIT = os.path.join(os.path.dirname(STRATA), "unit_meta_test_store_rados") if STRATA else ""
UNIT_DATA = os.path.join(os.path.dirname(STRATA), "unit_meta_test_rados_data") if STRATA else ""
UNIT_QUEUE = os.path.join(os.path.dirname(STRATA), "unit_meta_test_rados_queue") if STRATA else ""
UNIT_PQUEUE = (os.path.join(os.path.dirname(STRATA), "unit_server_util_test_pqueue_rados")
               if STRATA else "")
PREFIX = "stt"
def strata(*args, timeout=60):
    t = time.monotonic()
    r = subprocess.run([STRATA, "rados", *args], capture_output=True, text=True,
                       timeout=timeout, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    return r, time.monotonic() - t


def flags(c, prefix=PREFIX):
    return ["--rados-conf", c.conf, "--rados-id", c.client_id, "--rados-pool-prefix", prefix]


@test
def test_check_before_init(c):
    r, _ = strata("check", *flags(c))
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert f"missing pool(s) {PREFIX}.meta, {PREFIX}.data" in r.stderr, r.stderr
    assert "run strata rados init" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout


@test
def test_bad_conf(c):
    r, _ = strata("check", "--rados-conf", "/nonexistent/ceph.conf")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot read the Ceph configuration /nonexistent/ceph.conf" in r.stderr, r.stderr
    r, _ = strata("init", "--rados-conf", "/nonexistent/ceph.conf")
    assert r.returncode == 2 and "cannot read the Ceph configuration" in r.stderr, r.stderr
    r, _ = strata("check")
    assert r.returncode == 2 and "--rados-conf FILE is required" in r.stderr, r.stderr
    r, _ = strata("frob", "--rados-conf", c.conf)
    assert r.returncode == 2 and "unknown command frob" in r.stderr, r.stderr


@test
def test_unreachable_monitor(c):
    # The same cluster's conf with a monitor address nobody listens on.
    bad = c.path("unreachable.conf")
    with open(c.conf) as f:
        text = f.read()
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("mon_host")]
    lines.insert(lines.index("[global]") + 1, "mon_host = [v2:127.0.0.1:9,v1:127.0.0.1:10]")
    with open(bad, "w") as f:
        f.write("\n".join(lines) + "\n")
    r, took = strata("check", "--rados-conf", bad, "--rados-timeout", "3", timeout=30)
    log(f"unreachable monitor: exit {r.returncode} after {took:.1f} s")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"cannot reach the Ceph cluster of {bad} as client.admin" in r.stderr, r.stderr
    assert took < 15, took


@test
def test_init_then_check(c):
    r, took = strata("init", *flags(c))
    log(f"init: {took:.1f} s: {r.stdout.strip()}")
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert f"created pool(s) {PREFIX}.meta, {PREFIX}.data" in r.stdout, r.stdout
    pools = c.rados("lspools").stdout.split()
    assert f"{PREFIX}.meta" in pools and f"{PREFIX}.data" in pools, pools
    objs = set(c.rados("-p", f"{PREFIX}.meta", "ls").stdout.split())
    assert {"root", "buckets", "state", "clock", "audit", "ctl"} <= objs, objs
    fmt = c.rados("-p", f"{PREFIX}.meta", "getomapval", "root", "format").stdout
    assert "31" in fmt, fmt  # the byte "1"
    # Idempotent: a second run keeps everything and says so.
    r, _ = strata("init", *flags(c))
    assert r.returncode == 0, r.stderr
    assert "already exist" in r.stdout, r.stdout
    r, _ = strata("check", *flags(c))
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert f"pools {PREFIX}.meta and {PREFIX}.data ready" in r.stdout, r.stdout
    # Another prefix on the same cluster is still missing.
    r, _ = strata("check", *flags(c, "other"))
    assert r.returncode == 1 and "missing pool(s) other.meta, other.data" in r.stderr, r.stderr


def run_unit(c, path, passed):
    """Run a cmocka test binary against the initialised cluster: exit 0 and
    `passed` tests passed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "STRATA_TEST_RADOS_CONF": c.conf, "STRATA_TEST_RADOS_ID": c.client_id,
           "STRATA_TEST_RADOS_PREFIX": PREFIX}
    if os.environ.get("STRATA_TEST_RADOS_MPU_10K"):  # the 10,000-part complete figure
        env["STRATA_TEST_RADOS_MPU_10K"] = "1"
    r, _ = strata("init", *flags(c))  # idempotent: also when run alone
    assert r.returncode == 0, r.stderr
    t = time.monotonic()
    r = subprocess.run([path], capture_output=True, text=True, timeout=300, env=env)
    took = time.monotonic() - t
    sys.stdout.write(r.stdout + r.stderr)
    log(f"{os.path.basename(path)}: exit {r.returncode} in {took:.1f} s")
    assert r.returncode == 0, r.returncode
    assert f"[  PASSED  ] {passed} test(s)." in r.stdout + r.stderr


@test
def test_backend_unit(c):
    run_unit(c, UNIT, 39)


@test
def test_data_unit(c):
    run_unit(c, UNIT_DATA, 12)


@test
def test_queue_unit(c):
    run_unit(c, UNIT_QUEUE, 3)


@test
def test_pqueue_unit(c):
    run_unit(c, UNIT_PQUEUE, 1)


class ClusterRun:
    """What strata_harness.run needs of its argument, around a cluster and
    without a daemon: the tests get the cluster's attributes through it."""
    proc = None

    def __init__(self, cluster):
        self.cluster = cluster

    def __getattr__(self, name):
        return getattr(self.cluster, name)

    def stop(self):
        return True


def main():
    if not STRATA or not os.path.exists(STRATA):
        log("SKIP: STRATA_BIN not set")
        sys.exit(77)
    if not os.path.exists(UNIT):
        log(f"SKIP: {UNIT} not built (no librados)")
        sys.exit(77)
    if not shutil.which("ceph-mon") or not shutil.which("ceph-osd"):
        log("SKIP: ceph-mon / ceph-osd not installed (deploy/install-deps.sh)")
        sys.exit(77)
    with CephCluster(osds=1, store="memstore") as c:
        log(f"cluster up in {c.start_seconds:.1f} s")
        run(ClusterRun(c))  # exits; the cluster stops on the way out


if __name__ == "__main__":
    main()
