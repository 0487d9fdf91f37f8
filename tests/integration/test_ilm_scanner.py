#!/usr/bin/python3
"""test_ilm_scanner.py - the scanner's scale and repair work against a live
strata with 2-second lifecycle days (--lc-day-seconds 2) and full passes
only on request (--ilm-interval-seconds 600), so that what happens on its
own comes from the version-time index and the heal queue:

- expiration driven by the index: due objects go within a few lifecycle
  days while no full pass runs, the others stay readable, and the
  strata_ilm_due_scanned_total counter moved;
- a full pass killed with SIGKILL midway continues after the restart at the
  position it had saved (status says resumed; it scans what was left);
- a wiped drive is refilled by a pass after a restart (shard files on every
  drive, bytes compare);
- a drive that was offline while objects were written and deleted, plus
  another wiped, are both brought back to full redundancy: every live
  erasure-coded object has its shard file on all four drives, nothing else
  remains, and every object reads back;
- a drive offline during DeleteObject and DeleteObjectVersion: one pass
  after it is back leaves nothing listed and no shard of the deleted data;
- orphan files planted in data/ and tmp/ are removed once older than the
  grace period (--orphan-grace-seconds 2) while live objects stay readable;
- `strata admin ilm run --wait` and `ilm status` report the progress.
Background work is awaited by polling with generous deadlines.
Run by CTest (integration label) with /usr/bin/python3.
"""

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, log, run, test, wait_until  # noqa: E402

BIG = 300 * 1024  # above the inline limit: erasure-coded into shard files
WAIT_S = 120


def cli(s, *args):
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "STRATA_ENDPOINT": s.endpoint,
           "STRATA_ACCESS_KEY": s.ak, "STRATA_SECRET_KEY": s.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", *args], env=env,
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def status(s):
    rc, out, err = cli(s, "--json", "ilm", "status")
    assert rc == 0, err
    return json.loads(out)


def run_pass(s):
    """One full pass now, waited for (strata admin ilm run --wait)."""
    rc, out, err = cli(s, "ilm", "run", "--wait")
    assert rc == 0 and "last pass:" in out, (rc, out, err)
    return out


def wait_for(what, fn, timeout=WAIT_S):
    return wait_until(what, fn, timeout)


def body(i, n=BIG):
    seed = hashlib.sha256(str(i).encode()).digest()
    return (seed * (n // len(seed) + 1))[:n]


def exists(c, b, k):
    try:
        c.head_object(Bucket=b, Key=k)
        return True
    except c.exceptions.ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return False
        raise


def put_many(c, b, keys, data):
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: c.put_object(Bucket=b, Key=k, Body=data(k)), keys))


def shard_files(drive):
    """Data ids with a shard file on this drive."""
    out = set()
    root = os.path.join(drive, "data")
    for hh in os.listdir(root) if os.path.isdir(root) else []:
        for f in os.listdir(os.path.join(root, hh)):
            if len(f) == 32:
                out.add(f)
    return out


def metric(s, name):
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    # /metrics is public with --metrics-public
    with opener.open(f"{s.endpoint}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return int(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


@test
def expiration_driven_by_the_index(s):
    c = s.client()
    b = s.bucket_name("due")
    c.create_bucket(Bucket=b)
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "due", "Filter": {"Prefix": "due/"}, "Status": "Enabled",
         "Expiration": {"Days": 1}}]})
    passes = status(s)["total"]["passes"]
    scanned0 = metric(s, "strata_ilm_due_scanned_total")
    put_many(c, b, [f"due/{i}" for i in range(40)], lambda k: b"x" * 100)
    put_many(c, b, [f"keep/{i}" for i in range(40)], lambda k: k.encode())
    t0 = time.monotonic()
    wait_for("due objects expired", lambda: not any(exists(c, b, f"due/{i}") for i in range(40)))
    log(f"40 due objects expired {time.monotonic() - t0:.1f} s after their PUT (2 s days)")
    st = status(s)
    assert st["total"]["passes"] == passes, "a full pass ran: the index was not what acted"
    assert st["total"]["expired"] >= 40, st["total"]
    assert metric(s, "strata_ilm_due_scanned_total") >= scanned0 + 40
    for i in range(40):
        assert c.get_object(Bucket=b, Key=f"keep/{i}")["Body"].read() == f"keep/{i}".encode()


@test
def lone_markers_expired_by_the_index(s):
    """Expiration Days removes an expired object delete marker through the
    version-time index, no full pass: one alone at once when Days old; one
    over a noncurrent version when NoncurrentVersionExpiration removed it."""
    c = s.client()
    b = s.bucket_name("duedm")
    c.create_bucket(Bucket=b)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "dm", "Filter": {"Prefix": "dm/"}, "Status": "Enabled",
         "Expiration": {"Days": 1}, "NoncurrentVersionExpiration": {"NoncurrentDays": 5}}]})
    passes = status(s)["total"]["passes"]
    c.put_object(Bucket=b, Key="dm/behind", Body=b"x")
    t0 = time.monotonic()
    c.delete_object(Bucket=b, Key="dm/behind")
    c.delete_object(Bucket=b, Key="dm/alone")
    c.delete_object(Bucket=b, Key="keep/alone")

    def listed(prefix):
        r = c.list_object_versions(Bucket=b, Prefix=prefix)
        return ([v["Key"] for v in r.get("Versions", [])],
                [m["Key"] for m in r.get("DeleteMarkers", [])])
    wait_for("dm/alone's marker to go", lambda: listed("dm/alone") == ([], []))
    assert time.monotonic() - t0 >= 2, "removed before it was one day (2 s) old"
    # dm/behind's marker is as old, but its version (5 days) is behind it.
    assert listed("dm/behind") == (["dm/behind"], ["dm/behind"]), listed("dm/behind")
    wait_for("dm/behind's version and marker to go", lambda: listed("dm/behind") == ([], []))
    assert time.monotonic() - t0 >= 10, "the version went before it was noncurrent 5 days"
    assert listed("keep/") == ([], ["keep/alone"])
    st = status(s)
    assert st["total"]["passes"] == passes, "a full pass ran: the index was not what acted"
    assert st["total"]["delete_markers_removed"] >= 2, st["total"]


@test
def pass_position_survives_kill(s):
    c = s.client()
    b = s.bucket_name("pos")
    c.create_bucket(Bucket=b)
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "later", "Filter": {"Prefix": "never/"}, "Status": "Enabled",
         "Expiration": {"Days": 1000}}]})
    n = 1200
    put_many(c, b, [f"k{i:05d}" for i in range(n)], lambda k: b"p")
    # --ilm-rate 150: this bucket alone takes 8 s.
    rc, out, err = cli(s, "ilm", "run")
    assert rc == 0, err
    wait_for("the pass to reach the middle of the bucket",
             lambda: status(s)["progress"]["running"]
             and status(s)["progress"]["bucket"] == b
             and status(s)["progress"]["counters"]["scanned"] >= 300)
    at = status(s)["progress"]["key"]
    s.restart(kill=True)
    log(f"killed at {at!r}; restarted")
    # The pass at start-up continues the interrupted one.
    wait_for("the resumed pass to finish", lambda: status(s)["total"]["passes"] >= 1)
    st = status(s)
    assert st["last"]["scanned"] < n, st["last"]  # not from the first key
    assert st["last"]["scanned"] > 0, st["last"]
    text = open(s.log_path, errors="replace").read()
    assert f"pass resumes at /{b}/" in text, "no resume in the log"
    # A complete pass forgets the position: the next one starts over.
    run_pass(s)
    assert status(s)["last"]["scanned"] >= n, status(s)["last"]
    c.delete_bucket_lifecycle(Bucket=b)  # later passes need not walk it


def load_objects(c, b, prefix, n):
    put_many(c, b, [f"{prefix}{i}" for i in range(n)], lambda k: body(k))
    put_many(c, b, [f"{prefix}small{i}" for i in range(n)], lambda k: k.encode())


def check_objects(c, b, prefix, n, gone=()):
    for i in range(n):
        k = f"{prefix}{i}"
        if k in gone:
            assert not exists(c, b, k), k
            continue
        got = c.get_object(Bucket=b, Key=k)["Body"].read()
        assert got == body(k), f"{k}: bytes differ"
        assert c.get_object(Bucket=b, Key=f"{prefix}small{i}")["Body"].read() == \
            f"{prefix}small{i}".encode()


def full_redundancy(s):
    """Every drive holds a shard file of exactly the same data ids."""
    sets = [shard_files(d) for d in s.drives]
    return all(x == sets[0] for x in sets)


@test
def wiped_drive_healed_by_a_pass(s):
    c = s.client()
    b = s.bucket_name("wipe")
    c.create_bucket(Bucket=b)
    load_objects(c, b, "w", 12)
    wait_for("shards on every drive", lambda: full_redundancy(s))
    want = shard_files(s.drives[0])

    def wipe():
        for e in os.listdir(s.drives[1]):
            p = os.path.join(s.drives[1], e)
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
    s.restart(between=wipe)
    assert shard_files(s.drives[1]) == set()
    run_pass(s)
    wait_for("the wiped drive refilled", lambda: shard_files(s.drives[1]) >= want)
    assert full_redundancy(s)
    check_objects(c, b, "w", 12)


@test
def offline_and_wiped_drives_back_to_full_redundancy(s):
    c = s.client()
    b = s.bucket_name("miss")
    c.create_bucket(Bucket=b)
    wait_for("shards on every drive", lambda: full_redundancy(s))
    base = len(shard_files(s.drives[0]))
    load_objects(c, b, "a", 10)
    wait_for("shards on every drive", lambda: full_redundancy(s))
    d2, d3 = s.drives[1], s.drives[2]
    away = d3 + ".away"

    def take_d3_offline():
        os.rename(d3, away)
        open(d3, "w").close()  # a file where the drive was: offline
    s.restart(between=take_d3_offline)
    queued0 = status(s)["total"]["heal_queued"]
    load_objects(c, b, "b", 10)  # d3 misses these writes ...
    gone = {"a0", "a1", "a2"}
    for k in gone:  # ... and these deletes
        c.delete_object(Bucket=b, Key=k)
    wait_for("writes that missed a drive queued for heal",
             lambda: status(s)["total"]["heal_queued"] > queued0)

    def d3_back_d2_wiped():
        os.unlink(d3)
        os.rename(away, d3)
        for e in os.listdir(d2):
            p = os.path.join(d2, e)
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
    s.restart(between=d3_back_d2_wiped)
    run_pass(s)  # heal refills d2 and d3; d3's shards of deleted objects are orphans

    def healed():
        sets = [shard_files(d) for d in s.drives]
        if not all(x == sets[0] for x in sets):
            log("shard files per drive: " + ", ".join(str(len(x)) for x in sets))
            run_pass(s)  # orphan reclaim needs two rounds a grace period apart
            return False
        return len(sets[0]) == base + 17  # 10 + 10 objects, 3 deleted
    wait_for("full redundancy on every drive", healed)
    check_objects(c, b, "a", 10, gone=gone)
    check_objects(c, b, "b", 10)


@test
def missed_deletes_gone_after_one_pass(s):
    """A drive offline during a DeleteObject (unversioned) and a
    DeleteObjectVersion keeps those versions and their shards; after it is
    back, one pass (the daemon may run one at start) leaves nothing listed
    and no shard of the deleted data on any drive."""
    c = s.client()
    bu, bv = s.bucket_name("mdu"), s.bucket_name("mdv")
    c.create_bucket(Bucket=bu)
    c.create_bucket(Bucket=bv)
    c.put_bucket_versioning(Bucket=bv, VersioningConfiguration={"Status": "Enabled"})
    wait_for("shards on every drive", lambda: full_redundancy(s))
    before = shard_files(s.drives[0])
    c.put_object(Bucket=bu, Key="x", Body=body("ux"))
    v1 = c.put_object(Bucket=bv, Key="x", Body=body("v1"))["VersionId"]
    v2 = c.put_object(Bucket=bv, Key="x", Body=body("v2"))["VersionId"]
    wait_for("shards on every drive", lambda: full_redundancy(s))
    ids = shard_files(s.drives[0]) - before
    assert len(ids) == 3, ids
    d3 = s.drives[2]
    away = d3 + ".away"

    def take_d3_offline():
        os.rename(d3, away)
        open(d3, "w").close()
    s.restart(between=take_d3_offline)
    c.delete_object(Bucket=bu, Key="x")
    c.delete_object(Bucket=bv, Key="x", VersionId=v2)

    def d3_back():
        os.unlink(d3)
        os.rename(away, d3)
        assert len(shard_files(d3) - before) == 3  # it kept the deleted data
    s.restart(between=d3_back)
    run_pass(s)
    assert c.list_objects_v2(Bucket=bu).get("KeyCount") == 0
    vers = c.list_object_versions(Bucket=bv)
    assert [v["VersionId"] for v in vers.get("Versions", [])] == [v1], vers
    assert not vers.get("DeleteMarkers"), vers
    left = [shard_files(d) - before for d in s.drives]
    assert all(len(x) == 1 and x == left[0] for x in left), left
    assert c.get_object(Bucket=bv, Key="x")["Body"].read() == body("v1")


@test
def orphans_reclaimed_after_grace(s):
    c = s.client()
    b = s.bucket_name("orph")
    c.create_bucket(Bucket=b)
    load_objects(c, b, "o", 4)
    wait_for("shards on every drive", lambda: full_redundancy(s))
    live = shard_files(s.drives[0])
    old = time.time() - 3600
    planted = []
    for i, d in enumerate(s.drives):
        orphan_id = hashlib.md5(f"orphan{i}".encode()).hexdigest()
        p = os.path.join(d, "data", orphan_id[:2])
        os.makedirs(p, exist_ok=True)
        p = os.path.join(p, orphan_id)
        open(p, "wb").write(b"left by a crash")
        os.utime(p, (old, old))
        t = os.path.join(d, "tmp", f"{orphan_id}.s0.deadbeef")
        open(t, "wb").write(b"interrupted write")
        os.utime(t, (old, old))
        planted += [p, t]
    before = status(s)["total"]["orphans_reclaimed"]

    def reclaimed():
        run_pass(s)
        return not any(os.path.exists(p) for p in planted)
    wait_for("planted orphans removed", reclaimed)
    assert status(s)["total"]["orphans_reclaimed"] >= before + 4
    for d in s.drives:
        assert shard_files(d) == live, d
    check_objects(c, b, "o", 4)


@test
def cli_status_shows_progress(s):
    rc, out, err = cli(s, "ilm", "status")
    assert rc == 0, err
    assert "lifecycle scanner: on" in out and "due index backlog" in out, out
    assert "reclaimed: orphans" in out, out
    st = status(s)
    assert "moves (0 refused, to retry)" in out, out
    for k in ("due_backlog", "move_backlog", "move_retries", "heal_pending", "buckets_done",
              "buckets_total", "counters"):
        assert k in st["progress"], st["progress"]
    for k in ("due_scanned", "heal_queued", "orphans_reclaimed"):
        assert k in st["total"], st["total"]
    assert metric(s, "strata_ilm_orphans_reclaimed_total") >= 4
    metric(s, "strata_ilm_due_backlog")
    assert metric(s, "strata_ilm_move_backlog") == 0
    assert metric(s, "strata_ilm_move_retries") == 0
    metric(s, "strata_ilm_heal_pending")


@test
def run_wait_draws_a_progress_bar_on_a_terminal(s):
    c = s.client()
    b = s.bucket_name("bar")
    c.create_bucket(Bucket=b)
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "later", "Filter": {"Prefix": "never/"}, "Status": "Enabled",
         "Expiration": {"Days": 1000}}]})
    put_many(c, b, [f"k{i:04d}" for i in range(450)], lambda k: b"b")  # 3 s at 150/s
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "STRATA_ENDPOINT": s.endpoint,
           "STRATA_ACCESS_KEY": s.ak, "STRATA_SECRET_KEY": s.sk, "TERM": "dumb"}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    # script(1) gives the CLI a terminal as stdout.
    p = subprocess.run(["/usr/bin/script", "-qec", f"{os.environ['STRATA_BIN']} admin ilm run --wait",
                        "/dev/null"], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "] " in p.stdout and "buckets  scanned" in p.stdout, p.stdout
    assert "last pass:" in p.stdout, p.stdout
    # Not a terminal: no bar, only the final status.
    rc, out, err = cli(s, "ilm", "run", "--wait")
    assert rc == 0 and "buckets  scanned" not in out and "last pass:" in out, (out, err)
    c.delete_bucket_lifecycle(Bucket=b)


if __name__ == "__main__":
    run(Strata(args=["--lc-day-seconds", "2", "--ilm-interval-seconds", "600",
                     "--ilm-rate", "150", "--heal-interval-seconds", "1",
                     "--orphan-grace-seconds", "2", "--metrics-public"]))
