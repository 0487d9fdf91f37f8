#!/usr/bin/python3
"""test_drive_health.py - a drive that fails writes shows its state, and
comes back by itself once it works again.

read_only: drive 1's directory is a bind mount of itself (its meta/ and
  audit.log bind mounts of their own, so the files RocksDB and the audit
  log keep open for writing do not keep the drive from being remounted
  read-only), remounted read-only while the daemon runs.
  PUTs of erasure-coded objects still succeed (write quorum 3 of 2+2);
  `admin info` (JSON and the CLI table), /metrics (strata_drive_state,
  strata_drive_online, strata_drive_io_errors_total{op="open"}) and the
  console's health page show it read-only; none of those objects has a
  shard file on it.  Remounted read-write, the probe returns it to online
  within seconds, heal refills its shard files, and after a restart with
  two other drives unavailable (so drive 1's shards are needed) every
  object reads back byte for byte.
full: drive 1 on a small tmpfs filled by a ballast file; large PUTs still
  succeed, the drive shows "full" (admin info, metrics, a failed write
  counted); when the ballast goes it is online again by itself.

Needs root (mounts); exits 77 otherwise.  Every mount is undone on exit,
also on a failed assert or SIGTERM/SIGINT.  Runs with /usr/bin/python3.
"""

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import strata_harness
from strata_harness import Strata, log

OBJ = 1 << 20  # above the inline limit: shard files on every drive
MOUNTS = []  # innermost last


def skip(msg):
    log(f"SKIP: {msg}")
    sys.exit(77)


def sh(*cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}: {r.stdout.strip()}"


def mount(*args):
    """mount ARGS... (the last one is the mount point), remembered for undo."""
    sh("mount", *args)
    MOUNTS.append(args[-1])


def umount_all():
    while MOUNTS:
        subprocess.run(["umount", "-l", MOUNTS.pop()], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def on_signal(sig, frame):
    umount_all()
    sys.exit(128 + sig)


def body(i, n=OBJ):
    seed = (i * 2654435761) & 0xFFFFFFFF
    return seed.to_bytes(4, "little") * (n // 4)


def metrics(s):
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{s.endpoint}/metrics", timeout=30) as r:
        return r.read().decode()


def sample(text, name, **labels):
    """Value of the one series of name whose labels include these."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    hits = [line for line in text.splitlines()
            if line.startswith(name + "{") and all(w in line for w in want)]
    assert len(hits) == 1, f"{name} {labels}: {hits}"
    return float(hits[0].rsplit(" ", 1)[1])


def drive0(s):
    st, doc = s.admin_get("info")
    assert st == 200, doc
    return doc, doc["sets"][0]["drives"][0]


def wait_state(s, want, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        doc, d = drive0(s)
        if d["state"] == want:
            return doc, d
        assert time.monotonic() < deadline, f"drive 0 still {d['state']}, not {want}: {d}"
        time.sleep(0.2)


def cli_info(s):
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "STRATA_ENDPOINT": s.endpoint,
           "STRATA_ACCESS_KEY": s.ak, "STRATA_SECRET_KEY": s.sk}
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", "info"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def shard_files(drive):
    n = 0
    for _root, _dirs, files in os.walk(os.path.join(drive, "data")):
        n += len(files)
    return n


def daemon_log(s):
    with open(s.log_path, errors="replace") as f:
        return f.read()


def console_state(s, path):
    """The health page's drive row for path, as the browser renders it."""
    n = len(strata_harness._TESTS)
    import test_console  # its Browser; its @tests are not ours to run
    del strata_harness._TESTS[n:]
    from selenium.webdriver.common.by import By
    b = test_console.Browser(s)
    try:
        b.login(s.ak, s.sk)
        b.css("#bucket-name")
        b.d.get(b.base + "#/health")
        b.css("#drives")
        rows = [r.text for r in b.d.find_elements(By.CSS_SELECTOR, "#drives tr.drive")]
        row = [r for r in rows if path in r]
        assert len(row) == 1, rows
        return row[0]
    finally:
        b.quit()


def read_only(work):
    drives = [os.path.join(work, f"d{i}") for i in range(1, 5)]
    for d in drives:
        os.makedirs(d)
    d1 = drives[0]
    s = Strata(drives=drives, args=["--ilm-interval-seconds", "1", "--heal-interval-seconds", "1",
                                    "--metrics-public"])
    try:
        c = s.client()
        bucket = s.bucket_name("ro")
        c.create_bucket(Bucket=bucket)
        c.put_object(Bucket=bucket, Key="before", Body=body(0))

        def binds():
            mount("--bind", d1, d1)
            for held in ("meta", "audit.log"):  # kept open for writing
                mount("--bind", os.path.join(d1, held), os.path.join(d1, held))
        s.restart(between=binds)
        c = s.client()
        doc, d = drive0(s)
        assert d["state"] == "online" and doc["drives_online"] == 4, doc
        m = metrics(s)
        open0 = sample(m, "strata_drive_io_errors_total", drive="0", op="open")

        sh("mount", "-o", "remount,bind,ro", d1)
        before = shard_files(d1)
        keys = [f"ro{i}" for i in range(1, 9)]
        for i, k in enumerate(keys, 1):
            c.put_object(Bucket=bucket, Key=k, Body=body(i))
        assert shard_files(d1) == before, "a shard file landed on the read-only drive"

        doc, d = drive0(s)
        assert d["state"] == "read-only", d
        assert doc["drives_online"] == 3 and doc["sets"][0]["drives_online"] == 3, doc
        assert d["io_errors"]["open"] >= 1, d
        m = metrics(s)
        assert sample(m, "strata_drive_state", drive="0", state="read-only") == 1
        assert sample(m, "strata_drive_state", drive="0", state="online") == 0
        assert sample(m, "strata_drive_state", drive="1", state="online") == 1
        assert sample(m, "strata_drive_online", drive="0") == 0
        assert sample(m, "strata_drive_online", drive="1") == 1
        assert sample(m, "strata_drive_io_errors_total", drive="0", op="open") > open0
        assert sample(m, "strata_drive_io_errors_total", drive="1", op="open") == 0
        line = [x for x in cli_info(s).splitlines() if x.rstrip().endswith(d1)]
        assert len(line) == 1 and " read-only " in line[0], line
        row = console_state(s, d1)
        assert "read-only" in row, row
        log(f"read-only: {d['io_errors']}; console row {row!r}")

        # The probe keeps failing (and counting) while the drive is read-only.
        deadline = time.monotonic() + 10
        while drive0(s)[1]["io_errors"]["probe"] < 1:
            assert time.monotonic() < deadline, "no failed probe counted in 10 s"
            time.sleep(0.2)
        assert drive0(s)[1]["state"] == "read-only"
        sh("mount", "-o", "remount,bind,rw", d1)
        t = time.monotonic()
        wait_state(s, "online", timeout=15)
        log(f"online again after {time.monotonic() - t:.1f} s")
        assert "writes work again (was read-only)" in daemon_log(s)
        assert sample(metrics(s), "strata_drive_state", drive="0", state="online") == 1
        deadline = time.monotonic() + 60
        while shard_files(d1) < before + len(keys):
            assert time.monotonic() < deadline, \
                f"heal refilled {shard_files(d1) - before} of {len(keys)} shard files"
            time.sleep(0.5)

        # Drive 1's shards are needed now: two of four drives away (paths
        # that are files are offline), K = 2.
        def away():
            for d in drives[1:3]:
                os.rename(d, d + ".away")
                open(d, "w").close()
        s.restart(between=away)
        c = s.client()
        for i, k in enumerate(keys, 1):
            got = c.get_object(Bucket=bucket, Key=k)["Body"].read()
            assert got == body(i), f"{k}: wrong bytes from drives 1 and 4"
        st, doc = s.admin_get("info")
        assert [x["state"] for x in doc["sets"][0]["drives"]] == \
            ["online", "offline", "offline", "online"], doc

        def back():
            for d in drives[1:3]:
                os.unlink(d)
                os.rename(d + ".away", d)
        s.restart(between=back)
        assert s.stop(), "daemon shutdown failed"
    finally:
        s.stop()
        umount_all()


def ballast(mnt, leave):
    st = os.statvfs(mnt)
    left = st.f_bavail * st.f_frsize - leave
    with open(os.path.join(mnt, "ballast"), "wb") as f:
        while left > 0:
            n = min(left, 1 << 20)
            try:
                f.write(b"\x5a" * n)
                f.flush()
            except OSError:
                break
            left -= n


def full(work):
    mnt = os.path.join(work, "m1")
    os.makedirs(mnt)
    mount("-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt)
    drives = [os.path.join(mnt, "d1")] + [os.path.join(work, f"d{i}") for i in range(2, 5)]
    for d in drives:
        os.makedirs(d)
    s = Strata(drives=drives, args=["--memtable-mb", "16", "--metrics-public"])
    try:
        c = s.client()
        bucket = s.bucket_name("full")
        c.create_bucket(Bucket=bucket)
        c.put_object(Bucket=bucket, Key="first", Body=body(0))
        ballast(mnt, 3 << 20)  # RocksDB's WAL was preallocated at open
        for i in range(1, 9):  # 2 MiB of shards per drive each
            c.put_object(Bucket=bucket, Key=f"k{i}", Body=body(i, 4 * OBJ))
        doc, d = drive0(s)
        assert d["state"] == "full", d
        errs = d["io_errors"]
        assert errs["write"] + errs["sync"] + errs["open"] >= 1, errs
        m = metrics(s)
        assert sample(m, "strata_drive_state", drive="0", state="full") == 1
        assert sample(m, "strata_drive_online", drive="0") == 0
        line = [x for x in cli_info(s).splitlines() if x.rstrip().endswith(drives[0])]
        assert len(line) == 1 and " full " in line[0], line
        for i in range(1, 9):
            got = c.get_object(Bucket=bucket, Key=f"k{i}")["Body"].read()
            assert got == body(i, 4 * OBJ), f"k{i}: wrong bytes"
        log(f"full: {errs}")
        os.unlink(os.path.join(mnt, "ballast"))
        wait_state(s, "online", timeout=15)
        assert "writes work again (was full)" in daemon_log(s)
        assert s.stop(), "daemon shutdown failed"
    finally:
        s.stop()
        umount_all()


def main():
    if os.geteuid() != 0:
        skip("needs root to mount")
    atexit.register(umount_all)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    only = os.environ.get("STRATA_TEST_ONLY")
    failed = []
    tests = [t for t in (read_only, full) if not only or only in t.__name__]
    for fn in tests:
        work = tempfile.mkdtemp(prefix=f"drive-health-{fn.__name__}.", dir=base)
        t = time.monotonic()
        try:
            fn(work)
            log(f"ok: {fn.__name__} ({time.monotonic() - t:.1f} s)")
        except Exception as e:  # noqa: BLE001 - report and go on
            failed.append(fn.__name__)
            log(f"FAIL: {fn.__name__}: {e!r}")
            import traceback
            traceback.print_exc(file=sys.stdout)
        umount_all()
        shutil.rmtree(work, ignore_errors=True)
    log(f"{len(tests)} tests, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
