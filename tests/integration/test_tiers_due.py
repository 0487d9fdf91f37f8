#!/usr/bin/python3
"""test_tiers_due.py - transitions driven by the due-time index, not by the
full pass: a three-tier strata (hot 2+2 on 4 drives, warm 4+2 on 6,
compliance 4+4 on 8) with --lc-day-seconds 2 and a pass only every hour
(the start-up pass runs before the objects exist, and no other pass runs).
Transition (two stages, hot -> warm -> compliance) and
NoncurrentVersionTransition (the noncurrent version only) move the versions
within seconds of their due time, bytes identical (MD5), the class in HEAD;
a GLACIER object stays (the waterfall); a version under Object Lock moves
and stays undeletable.  The full pass count stays at 1 throughout, so the
index did it; the lag from the due time is logged and checked against a
bound far below the pass interval.
Run by CTest (integration label) with /usr/bin/python3.
"""

import atexit
import datetime
import hashlib
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, log, run, test  # noqa: E402

DAY_S = 2
WAIT_S = 90
# The settle time of the index (one day here) + the drain tick + the move:
# a few seconds; the bound is generous for a loaded machine and still far
# below the pass interval (3600 s), which is what a pass-driven move waits.
LAG_MAX_S = 40
MiB = 1 << 20

BASE = tempfile.mkdtemp(prefix="test_tiers_due.", dir=os.environ.get("STRATA_TEST_TMPDIR"))
HOT = [os.path.join(BASE, f"h{i}") for i in range(1, 5)]
WARM = [os.path.join(BASE, f"w{i}") for i in range(1, 7)]
COLD = [os.path.join(BASE, f"c{i}") for i in range(1, 9)]
for d in HOT:
    os.makedirs(d)
atexit.register(shutil.rmtree, BASE, True)


def body(n, seed):
    return hashlib.sha256(seed.encode()).digest() * (n // 32) + b"x" * (n % 32)


def md5(b):
    return hashlib.md5(b).hexdigest()


def get_md5(c, b, k, vid=None):
    kw = {"VersionId": vid} if vid else {}
    return md5(c.get_object(Bucket=b, Key=k, **kw)["Body"].read())


def head_class(c, b, k, vid=None):
    kw = {"VersionId": vid} if vid else {}
    return c.head_object(Bucket=b, Key=k, **kw).get("StorageClass", "STANDARD")


def due_time(mtime, days):
    """A due date as x-amz-expiration shows it: mtime + days, rounded up to
    the next multiple of the day length."""
    t = mtime + days * DAY_S
    return (int(t) // DAY_S + 1) * DAY_S if t % DAY_S else t


def passes(s):
    st, doc = s.admin_get("ilm/status")
    assert st == 200, (st, doc)
    return doc["total"]["passes"]


def wait_class(c, b, k, cls, vid=None):
    """Poll until the version is in cls (a class or a tuple of classes);
    the time it got there."""
    want = (cls,) if isinstance(cls, str) else cls
    deadline = time.monotonic() + WAIT_S
    while head_class(c, b, k, vid) not in want:
        assert time.monotonic() < deadline, f"{k} not {cls} after {WAIT_S} s"
        time.sleep(0.2)
    return time.time()


def check_lag(what, mtime, days, seen):
    due = due_time(mtime, days)
    lag = seen - due
    log(f"{what}: due {days} days after its mtime, moved {lag:+.1f} s from its due time")
    assert lag >= -0.5, f"{what} moved before its due time ({lag:.1f} s)"
    assert lag < LAG_MAX_S, f"{what} moved {lag:.1f} s after its due time"


@test
def first_pass_done(s):
    deadline = time.monotonic() + WAIT_S
    while passes(s) < 1:
        assert time.monotonic() < deadline, "the start-up pass did not finish"
        time.sleep(0.2)


@test
def transition_stages_by_index(s):
    c = s.client()
    b = s.bucket_name("dtr")
    c.create_bucket(Bucket=b)
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "chain", "Filter": {"Prefix": "a/"}, "Status": "Enabled",
         "Transitions": [{"Days": 2, "StorageClass": "STANDARD_IA"},
                         {"Days": 5, "StorageClass": "GLACIER"}]}]})
    data = body(2 * MiB + 5, "stage")
    c.put_object(Bucket=b, Key="a/k", Body=data)
    cold = body(MiB, "cold")
    c.put_object(Bucket=b, Key="a/g", Body=cold, StorageClass="GLACIER")
    mtime = c.head_object(Bucket=b, Key="a/k")["LastModified"].timestamp()
    assert head_class(c, b, "a/k") == "STANDARD"
    # A machine slow enough to see stage two due first moves it there at
    # once (the coldest stage due wins, as on AWS).
    check_lag("stage 1", mtime, 2, wait_class(c, b, "a/k", ("STANDARD_IA", "GLACIER")))
    assert get_md5(c, b, "a/k") == md5(data)
    check_lag("stage 2", mtime, 5, wait_class(c, b, "a/k", "GLACIER"))
    assert get_md5(c, b, "a/k") == md5(data)
    assert head_class(c, b, "a/g") == "GLACIER"
    assert get_md5(c, b, "a/g") == md5(cold)
    assert passes(s) == 1, "a full pass ran: the index did not drive the moves"


@test
def noncurrent_transition_by_index(s):
    c = s.client()
    b = s.bucket_name("dnc")
    c.create_bucket(Bucket=b)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "nc", "Filter": {}, "Status": "Enabled",
         "NoncurrentVersionTransitions": [{"NoncurrentDays": 1,
                                           "StorageClass": "STANDARD_IA"}]}]})
    v1 = body(MiB + 3, "v1")
    vid1 = c.put_object(Bucket=b, Key="k", Body=v1)["VersionId"]
    vid2 = c.put_object(Bucket=b, Key="k", Body=b"current")["VersionId"]
    since = c.head_object(Bucket=b, Key="k", VersionId=vid2)["LastModified"].timestamp()
    check_lag("noncurrent", since, 1, wait_class(c, b, "k", "STANDARD_IA", vid1))
    assert head_class(c, b, "k", vid2) == "STANDARD"
    assert get_md5(c, b, "k", vid1) == md5(v1)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"current"
    assert passes(s) == 1


@test
def locked_version_moves_by_index(s):
    c = s.client()
    b = s.bucket_name("dlock")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "t", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": 1, "StorageClass": "COMPLIANCE"}]}]})
    data = body(MiB + 1, "lock")
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    vid = c.put_object(Bucket=b, Key="worm", Body=data, ObjectLockMode="COMPLIANCE",
                       ObjectLockRetainUntilDate=until)["VersionId"]
    mtime = c.head_object(Bucket=b, Key="worm")["LastModified"].timestamp()
    check_lag("locked", mtime, 1, wait_class(c, b, "worm", "COMPLIANCE", vid))
    h = c.head_object(Bucket=b, Key="worm", VersionId=vid)
    assert h["ObjectLockMode"] == "COMPLIANCE", h
    assert get_md5(c, b, "worm", vid) == md5(data)
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm", VersionId=vid), "AccessDenied", 403)
    assert passes(s) == 1


if __name__ == "__main__":
    strata = Strata(args=["--lc-day-seconds", str(DAY_S), "--ilm-interval-seconds", "3600",
                          "--ilm-move-mbps", "0",
                          "--tier", "warm:4+2:" + ",".join(WARM),
                          "--tier", "compliance:4+4:" + ",".join(COLD)],
                    drives=HOT)
    log(f"tiers under {BASE}")
    run(strata)
