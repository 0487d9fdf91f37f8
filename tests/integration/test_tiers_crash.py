#!/usr/bin/python3
"""test_tiers_crash.py - a transition killed at every one of its steps.

A two-tier strata (hot 2+2, warm 4+2; --lc-day-seconds 1) is started with
STRATA_DEBUG_TRANSITION_CRASH=K, which makes the daemon _exit(137) - no
cleanup, like kill -9 - when a transition reaches step K (1 intent written,
2 first MiB copied, 3 copies durable, 4 copies verified, 5 record switched,
6 unreferenced copy removed, 7 intent removed).  For each step and each of
three shapes (a single-part object, a multipart object, a noncurrent
version), 21 runs: put the object, set a rule that makes it due at once,
wait for the daemon to die at step K, start it again without the variable,
and check that the object is listed exactly once with its bytes intact
(MD5) on the warm tier, and that after the pass every shard file on the
drives belongs to a live object: none left on the hot tier, exactly six per
data id on the warm one (nothing orphaned, nothing missing).  The 21 runs
go in three lanes at once, each a daemon with drives of its own.
Run by CTest (integration label) with /usr/bin/python3.
"""

import atexit
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, in_lanes, log, run, test, wait_until  # noqa: E402

MiB = 1 << 20
STEPS = range(1, 8)
BASE = tempfile.mkdtemp(prefix="test_tiers_crash.", dir=os.environ.get("STRATA_TEST_TMPDIR"))
atexit.register(shutil.rmtree, BASE, True)


def shard_files(drives):
    n = 0
    for d in drives:
        for _root, _dirs, files in os.walk(os.path.join(d, "data")):
            n += len(files)
    return n


def wait_for(what, fn, timeout=60):
    return wait_until(what, fn, timeout)


def metric(s, name):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{s.endpoint}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def launch(s, crash_step):
    """Start our daemon again on the same drives and port."""
    s.extra_env = {"STRATA_DEBUG_TRANSITION_CRASH": str(crash_step)} if crash_step else {}
    with open(s.log_path, "ab") as logf:
        s.proc = subprocess.Popen(
            [os.environ["STRATA_BIN"], "server", "--address", f"127.0.0.1:{s.port}"]
            + s.args + s.drives, env=s._daemon_env(), stdin=subprocess.DEVNULL, stdout=logf,
            stderr=subprocess.STDOUT)
    assert s._wait_ready(30), "strata did not start"


def stop(s):
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(30) == 0, "strata did not stop cleanly"


def body(n, seed):
    return hashlib.sha256(seed.encode()).digest() * (n // 32) + b"z" * (n % 32)


class Lane:
    """A daemon with drives of its own: hot (2+2) and warm (4+2) drive
    directories under dir, and the data ids expected on its warm tier so
    far (each is 6 shard files there)."""

    def __init__(self, d):
        self.hot = [os.path.join(d, f"h{i}") for i in range(1, 5)]
        self.warm = [os.path.join(d, f"w{i}") for i in range(1, 7)]
        for x in self.hot:
            os.makedirs(x, exist_ok=True)
        self.warm_ids = 0
        self.s = None

    def start(self):
        self.s = Strata(args=ARGS + ["--tier", "warm:4+2:" + ",".join(self.warm)],
                        drives=self.hot)
        return self


ARGS = ["--lc-day-seconds", "1", "--ilm-interval-seconds", "1", "--metrics-public",
        "--ilm-move-mbps", "0"]
MAIN = Lane(BASE)
LANES = 3  # the runs mostly wait for scanner passes: three daemons at once


def one_run(lane, step, shape):
    s = lane.s
    stop(s)
    launch(s, step)
    c = s.client()
    b = s.bucket_name(f"c{step}{shape[0]}")
    c.create_bucket(Bucket=b)
    if shape == "single":
        data = body(2 * MiB + 5, b)
        c.put_object(Bucket=b, Key="k", Body=data)
        ids, nversions, vid = 1, 1, None
        rule = {"Transitions": [{"Days": 0, "StorageClass": "STANDARD_IA"}]}
    elif shape == "multi":
        parts = [body(5 * MiB, b + "1"), body(MiB + 3, b + "2")]
        up = c.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
        done = [{"PartNumber": i, "ETag": c.upload_part(Bucket=b, Key="k", UploadId=up,
                                                        PartNumber=i, Body=p)["ETag"]}
                for i, p in enumerate(parts, 1)]
        c.complete_multipart_upload(Bucket=b, Key="k", UploadId=up,
                                    MultipartUpload={"Parts": done})
        data = b"".join(parts)
        ids, nversions, vid = 2, 1, None
        rule = {"Transitions": [{"Days": 0, "StorageClass": "STANDARD_IA"}]}
    else:
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        data = body(MiB + 7, b)
        vid = c.put_object(Bucket=b, Key="k", Body=data)["VersionId"]
        c.put_object(Bucket=b, Key="k", Body=b"current, inline")
        ids, nversions = 1, 2
        rule = {"NoncurrentVersionTransitions": [{"NoncurrentDays": 0,
                                                  "StorageClass": "STANDARD_IA"}]}
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        dict({"ID": "now", "Filter": {}, "Status": "Enabled"}, **rule)]})
    try:
        rc = s.proc.wait(30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the daemon did not die at step {step} ({shape})")
    assert rc == 137, f"the daemon exited with {rc}, not at the crash hook"
    launch(s, 0)
    c = s.client()
    kw = {"VersionId": vid} if vid else {}

    def moved():
        return c.head_object(Bucket=b, Key="k", **kw).get("StorageClass") == "STANDARD_IA"
    wait_for(f"the transition done after the crash at step {step}", moved)
    got = c.get_object(Bucket=b, Key="k", **kw)["Body"].read()
    assert hashlib.md5(got).hexdigest() == hashlib.md5(data).hexdigest(), "bytes changed"
    vers = c.list_object_versions(Bucket=b).get("Versions", [])
    assert len(vers) == nversions, f"listed {len(vers)} versions, want {nversions}: {vers}"
    assert [o["Key"] for o in c.list_objects_v2(Bucket=b)["Contents"]] == ["k"]
    lane.warm_ids += ids
    want = 6 * lane.warm_ids
    wait_for("no orphan on either tier",
             lambda: shard_files(lane.hot) == 0 and shard_files(lane.warm) == want, timeout=15)
    if step < 7:
        # Counted when the pass that resolved it ends.
        wait_for("the interrupted transition counted as resumed",
                 lambda: metric(s, "strata_ilm_transitions_resumed_total") >= 1, timeout=15)


def make(step, shape):
    def fn(lane):
        one_run(lane, step, shape)
    fn.__name__ = f"crash_at_step_{step}_{shape}"
    return fn


def open_lane(s, i):
    """Lane 0 is the file's daemon; the others a daemon like it on drives
    of their own under BASE/lane-I."""
    return MAIN if i == 0 else Lane(os.path.join(BASE, f"lane-{i}")).start()


def close_lane(s, i, lane):
    return lane is MAIN or lane.s.stop()


test(in_lanes("crash_at_every_step",
              [make(step, shape) for shape in ("single", "multi", "noncurrent") for step in STEPS],
              LANES, open_lane, close_lane))


if __name__ == "__main__":
    MAIN.start()
    log(f"tiers under {BASE}")
    run(MAIN.s)
