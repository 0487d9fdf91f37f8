#!/usr/bin/python3
"""test_lock_clock.py - setting the system clock does not release Object
Lock retention.  The daemon and this test's boto3 client both run under
libfaketime (Debian's faketime) with FAKETIME_TIMESTAMP_FILE, which the test
rewrites at run time (FAKETIME_NO_CACHE=1), and FAKETIME_DONT_FAKE_MONOTONIC=1
so that only the wall clock moves: CLOCK_BOOTTIME, which the lock clock
advances by, stays real (checked first).  Then:
 (a) a version is locked (COMPLIANCE) until one hour ahead; deleting it by
     version id is refused (AccessDenied) and the denial is in the audit log;
 (b) the wall clock moves two hours forward: the delete is still refused,
     and a ClockJump entry in the audit log shows lock_ms still on real time
     while wall_ms is two hours ahead;
 (c) the wall clock moves back: the delete is still refused, and the step
     back is recorded;
 (d) a restart with the wall clock two hours ahead of the persisted lock
     clock is recorded as a ClockJump at open (a version locked for a day
     stays locked);
and `strata audit verify` passes on all four drives and fails, naming the
entry, on a copy with one byte changed.
Run by CTest (integration label) with /usr/bin/python3; exits 77 (skip)
when libfaketime is not installed.
"""

import base64
import datetime
import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import glob  # noqa: E402

LIBFAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))), "")

# Re-run this script under libfaketime before anything else, so that boto3
# signs requests with the same (fake) time the daemon checks them against.
if os.environ.get("STRATA_FAKETIME_FILE") is None:
    if not LIBFAKETIME:
        print("test_lock_clock: libfaketime not installed (Debian package faketime); skipping")
        sys.exit(77)
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    fd, tsfile = tempfile.mkstemp(prefix="faketime.", dir=base)
    os.write(fd, b"+0\n")
    os.close(fd)
    env = dict(os.environ, STRATA_FAKETIME_FILE=tsfile, LD_PRELOAD=LIBFAKETIME,
               FAKETIME_TIMESTAMP_FILE=tsfile, FAKETIME_NO_CACHE="1",
               FAKETIME_DONT_FAKE_MONOTONIC="1")
    rc = subprocess.call([sys.executable] + sys.argv, env=env)
    os.unlink(tsfile)
    sys.exit(rc)

# libfaketime 0.9.10 fails Python's time.sleep (clock_nanosleep on
# CLOCK_MONOTONIC with TIMER_ABSTIME) with EINVAL; select() sleeps fine.
time.sleep = lambda secs: select.select([], [], [], secs)

TSFILE = os.environ["STRATA_FAKETIME_FILE"]
FAKE_ENV = {k: os.environ[k] for k in ("LD_PRELOAD", "FAKETIME_TIMESTAMP_FILE",
                                       "FAKETIME_NO_CACHE", "FAKETIME_DONT_FAKE_MONOTONIC")}
if "asan" in os.environ.get("STRATA_BIN", "") or os.environ.get("ASAN_OPTIONS"):
    # ASan wants its runtime first in the library list; libfaketime is preloaded.
    opts = os.environ.get("ASAN_OPTIONS", "")
    FAKE_ENV["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "verify_asan_link_order=0"
    os.environ["ASAN_OPTIONS"] = FAKE_ENV["ASAN_OPTIONS"]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, log, run, test  # noqa: E402

UTC = datetime.timezone.utc
HOUR = 3600


def set_offset(seconds):
    """Move the fake wall clock of this process and the daemon."""
    with open(TSFILE + ".new", "w") as f:
        f.write(f"{seconds:+d}\n")
    os.replace(TSFILE + ".new", TSFILE)


def real_ms():
    """The true wall clock, from a process without libfaketime."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    out = subprocess.check_output(["/bin/date", "+%s%3N"], env=env)
    return int(out)


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def audit_entries(s, drive=0):
    with open(os.path.join(s.drives[drive], "audit.log")) as f:
        return [json.loads(line) for line in f]


def wait_for_entry(s, pred, what, timeout=20):
    """The clock thread checks every 2 s; wait for an entry matching pred."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in audit_entries(s):
            if pred(e):
                return e
        time.sleep(0.2)
    raise AssertionError(f"no audit entry for {what} after {timeout} s: {audit_entries(s)}")


STATE = {}


@test
def clocks_under_faketime(s):
    # Only the wall clock is faked: BOOTTIME stays real.  Checked in a child
    # with its own timestamp file, so the daemon's clock does not move.
    own = os.path.join(s.tmp, "faketime.check")
    with open(own, "w") as f:
        f.write(f"+{3 * HOUR}\n")
    prog = ("import time; print(time.time(), time.clock_gettime(time.CLOCK_BOOTTIME), "
            "open('/proc/uptime').read().split()[0])")
    env = dict(os.environ, FAKETIME_TIMESTAMP_FILE=own)
    out = subprocess.check_output([sys.executable, "-c", prog], env=env, text=True).split()
    wall, boot, up = (float(x) for x in out)
    r = real_ms()
    assert abs(wall * 1000 - r - 3 * HOUR * 1000) < 5000, (wall, r)
    assert abs(up - boot) < 5, (up, boot)  # BOOTTIME is the real uptime
    # The daemon came up at offset 0 on fresh drives: no jump yet.
    assert not [e for e in audit_entries(s) if e["action"] == "ClockJump"], audit_entries(s)


@test
def a_lock_one_hour(s):
    c = s.client()
    b = s.bucket_name("clock")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    data = b"retained for an hour"
    until = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(hours=1)
    r = c.put_object(Bucket=b, Key="worm", Body=data, ContentMD5=md5_b64(data),
                     ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)
    vid = r["VersionId"]
    STATE.update(c=c, b=b, vid=vid, until=until)
    h = c.head_object(Bucket=b, Key="worm", VersionId=vid)
    assert h["ObjectLockMode"] == "COMPLIANCE" and h["ObjectLockRetainUntilDate"] == until, h
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm", VersionId=vid), "AccessDenied", 403)
    denied = [e for e in audit_entries(s) if e.get("version_id") == vid
              and e["outcome"] == "denied"]
    assert denied, audit_entries(s)


@test
def b_clock_forward_two_hours(s):
    c, b, vid = STATE["c"], STATE["b"], STATE["vid"]
    set_offset(2 * HOUR)
    # Past the retain-until date by the wall clock, yet still locked, before
    # and after the daemon noticed the step.
    assert time.time() > STATE["until"].timestamp() + HOUR - 60
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm", VersionId=vid), "AccessDenied", 403)
    jump = wait_for_entry(s, lambda e: e["action"] == "ClockJump" and "forward" in e["detail"],
                          "the step forward")
    now = real_ms()
    # The entry was written by the daemon's lock clock: still real time,
    # while its wall clock read two hours ahead.
    assert abs(jump["lock_ms"] - now) < 10000, (jump, now)
    assert abs(jump["wall_ms"] - jump["lock_ms"] - 2 * HOUR * 1000) < 10000, jump
    assert "(wall - lock = +72" in jump["detail"], jump
    for d in range(4):
        assert [e for e in audit_entries(s, d) if e["action"] == "ClockJump"], d
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm", VersionId=vid), "AccessDenied", 403)
    expect_error(lambda: c.put_object_retention(
        Bucket=b, Key="worm", VersionId=vid,
        Retention={"Mode": "COMPLIANCE",
                   "RetainUntilDate": STATE["until"] - datetime.timedelta(minutes=30)}),
        "AccessDenied", 403)
    got = c.get_object(Bucket=b, Key="worm", VersionId=vid)["Body"].read()
    assert got == b"retained for an hour"


@test
def c_clock_back(s):
    c, b, vid = STATE["c"], STATE["b"], STATE["vid"]
    set_offset(0)
    jump = wait_for_entry(s, lambda e: e["action"] == "ClockJump" and "back" in e["detail"],
                          "the step back")
    assert abs(jump["lock_ms"] - real_ms()) < 10000, jump
    assert abs(jump["wall_ms"] - jump["lock_ms"]) < 10000, jump
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm", VersionId=vid), "AccessDenied", 403)
    h = c.head_object(Bucket=b, Key="worm", VersionId=vid)
    assert h["ObjectLockRetainUntilDate"] == STATE["until"], h


@test
def d_restart_with_clock_ahead(s):
    c, b = STATE["c"], STATE["b"]
    data = b"retained for a day"
    until = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(days=1)
    vid = c.put_object(Bucket=b, Key="worm-day", Body=data, ContentMD5=md5_b64(data),
                       ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    set_offset(2 * HOUR)
    s.restart()
    c = s.client()
    opened = [e for e in audit_entries(s) if e["action"] == "ClockJump" and "at open" in e["detail"]]
    assert len(opened) == 1, audit_entries(s)
    assert "past the last persisted lock clock" in opened[0]["detail"], opened
    assert "(wall - lock = +72" in opened[0]["detail"], opened
    with open(s.log_path, errors="replace") as f:
        assert "ClockJump at open" in f.read()
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm-day", VersionId=vid),
                 "AccessDenied", 403)
    set_offset(0)
    s.restart()
    # Back at real time, the lock clock does not follow the wall clock back:
    # it continues from the mark persisted two hours ahead (recorded too).
    back = [e for e in audit_entries(s) if e["action"] == "ClockJump" and "behind" in e["detail"]]
    assert len(back) == 1, audit_entries(s)


@test
def e_audit_verify_cli(s):
    binary = os.environ["STRATA_BIN"]
    env = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run([binary, "audit", "verify"] + s.drives, env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": ok, ") == 4, r.stdout
    assert "4 drives agree on every event they share" in r.stdout, r.stdout
    r = subprocess.run([binary, "audit", "show", s.drives[0]], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0 and "\tClockJump\tdetected\t" in r.stdout, r.stdout
    r = subprocess.run([binary, "audit", "verify", s.drives[0] + "-typo"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "not a drive directory" in r.stderr, r.stdout + r.stderr
    # One changed byte in a copy of a drive's log is found at its entry.
    bad = os.path.join(s.tmp, "tampered")
    os.makedirs(bad)
    shutil.copy(os.path.join(s.drives[1], "audit.log"), bad)
    lines = open(os.path.join(bad, "audit.log"), "rb").read().split(b"\n")
    idx = next(i for i, line in enumerate(lines) if b'"outcome":"denied"' in line)
    lines[idx] = lines[idx].replace(b'"outcome":"denied"', b'"outcome":"allowd"')
    open(os.path.join(bad, "audit.log"), "wb").write(b"\n".join(lines))
    r = subprocess.run([binary, "audit", "verify", bad], env=env, capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"BROKEN at entry {idx} (line {idx + 1}): hash mismatch" in r.stdout, r.stdout
    log(r.stdout.strip())


if __name__ == "__main__":
    run(Strata(extra_env=FAKE_ENV))
