#!/usr/bin/python3
"""test_lock_kill.py - kill -9 of the daemon while Object Lock state changes.

PutObjectRetention: one client extends a COMPLIANCE retention again and
again (each request one second later than the last acknowledged one); the
daemon gets SIGKILL at a random moment and is restarted on the same drives.
The version then holds the last acknowledged retention or the one in
flight - never none, never an older one - and still refuses deletion.

Locked multipart complete: one client completes multipart uploads created
with COMPLIANCE retention and a legal hold; after SIGKILL and restart,
every version of the key has that lock and its bytes, there are as many
versions as were acknowledged or one more, and none can be deleted.
Run by CTest (integration label) with /usr/bin/python3.
"""

import base64
import datetime
import hashlib
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, log, run, test  # noqa: E402
import botocore  # noqa: E402

RUNS = int(os.environ.get("STRATA_LOCK_KILL_RUNS", "5"))
UTC = datetime.timezone.utc
PART = b"locked multipart bytes\n" * 10


def restart(s):
    """SIGKILL our daemon and start it again on the same drives and port."""
    s.proc.kill()
    s.proc.wait()
    drives = [os.path.join(s.tmp, f"d{i}") for i in range(1, 5)]
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home,
           "STRATA_ROOT_USER": s.ak, "STRATA_ROOT_PASSWORD": s.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    with open(s.log_path, "ab") as logf:
        s.proc = subprocess.Popen(
            [os.environ["STRATA_BIN"], "server", "--address", f"127.0.0.1:{s.port}"] + drives,
            env=env, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    assert s._wait_ready(30), "strata did not come back after SIGKILL"


def hammer(fn, acked, stop):
    """Call fn(n) for n = 1, 2, ... until it fails; record (n, fn's answer)
    of each acknowledged call."""
    n = 1
    while not stop.is_set():
        try:
            got = fn(n)
        except Exception as e:  # the daemon died under us
            log(f"call {n} failed: {type(e).__name__}: {e}")
            return
        acked.append((n, got))
        n += 1


def kill_during(s, fn):
    """Run fn in a thread, SIGKILL the daemon after a random delay, restart.
    Returns the acknowledged calls."""
    acked, stop = [], threading.Event()
    t = threading.Thread(target=hammer, args=(fn, acked, stop))
    t.start()
    time.sleep(random.uniform(0.05, 0.6))
    restart(s)
    stop.set()
    t.join(60)
    assert not t.is_alive()
    return list(acked)


@test
def kill_during_put_object_retention(s):
    if s.proc is None:
        log("external daemon: cannot kill it; skipped")
        return
    c = s.client()
    b = s.bucket_name("killret")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    base = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(hours=1)
    data = b"retained"
    vid = c.put_object(Bucket=b, Key="r", Body=data, ObjectLockMode="COMPLIANCE",
                       ObjectLockRetainUntilDate=base,
                       ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode())["VersionId"]
    cur = 0  # retain-until = base + cur seconds
    for run_no in range(RUNS):
        start = cur

        def extend(n, start=start):
            c.put_object_retention(Bucket=b, Key="r", VersionId=vid, Retention={
                "Mode": "COMPLIANCE", "RetainUntilDate": base + datetime.timedelta(seconds=start + n)})

        acked = [n for n, _ in kill_during(s, extend)]
        last = start + (acked[-1] if acked else 0)
        c = s.client()
        r = c.get_object_retention(Bucket=b, Key="r", VersionId=vid)["Retention"]
        assert r["Mode"] == "COMPLIANCE", r
        got = int((r["RetainUntilDate"] - base).total_seconds())
        assert got in (last, last + 1), (run_no, got, last)
        expect_error(lambda: c.delete_object(Bucket=b, Key="r", VersionId=vid,
                                             BypassGovernanceRetention=True), "AccessDenied", 403)
        assert c.get_object(Bucket=b, Key="r", VersionId=vid)["Body"].read() == data
        log(f"run {run_no}: {len(acked)} acknowledged, retention at +{got} s")
        cur = got


def head_says(c, b, vid):
    """What HEAD of version vid of "mp" answers, for the log."""
    try:
        h = c.head_object(Bucket=b, Key="mp", VersionId=vid)
        return {k: h.get(k) for k in ("ContentLength", "ObjectLockMode", "LastModified")}
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]


@test
def kill_during_locked_multipart_complete(s):
    if s.proc is None:
        log("external daemon: cannot kill it; skipped")
        return
    c = s.client()
    b = s.bucket_name("killmpu")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    until = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(hours=1)
    holder = {"c": c}

    def complete(n):
        cl = holder["c"]
        up = cl.create_multipart_upload(Bucket=b, Key="mp", ObjectLockMode="COMPLIANCE",
                                        ObjectLockRetainUntilDate=until,
                                        ObjectLockLegalHoldStatus="ON")
        p = cl.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=PART)
        r = cl.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"],
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
        return r["VersionId"]

    total, seen = 0, set()
    for run_no in range(RUNS):
        acked = kill_during(s, complete)
        c = s.client()
        holder["c"] = c
        vers = c.list_object_versions(Bucket=b, Prefix="mp").get("Versions", [])
        listed = {v["VersionId"] for v in vers}
        for n, vid in acked:  # every acknowledged version is listed, by its id
            if vid not in listed:
                log(f"run {run_no}: acknowledged call {n} version {vid} not listed; "
                    f"HEAD: {head_says(c, b, vid)}")
        assert all(vid in listed for _, vid in acked), (run_no, sorted(listed), acked)
        for vid in sorted(seen - listed):  # listed after an earlier restart, gone now
            log(f"run {run_no}: version {vid} listed before is not listed now; "
                f"HEAD: {head_says(c, b, vid)}")
        assert seen <= listed, (run_no, sorted(seen - listed))
        seen = listed
        assert len(vers) in (total + len(acked), total + len(acked) + 1), (run_no, len(vers), total, acked)
        for v in vers:
            h = c.head_object(Bucket=b, Key="mp", VersionId=v["VersionId"])
            assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"], h["ObjectLockLegalHoldStatus"]) == (
                "COMPLIANCE", until, "ON"), h
            assert c.get_object(Bucket=b, Key="mp", VersionId=v["VersionId"])["Body"].read() == PART
            expect_error(lambda: c.delete_object(Bucket=b, Key="mp", VersionId=v["VersionId"],
                                                 BypassGovernanceRetention=True), "AccessDenied", 403)
        total = len(vers)
        log(f"run {run_no}: {len(acked)} acknowledged, {total} locked versions")
    assert total > 0


if __name__ == "__main__":
    run(Strata())
