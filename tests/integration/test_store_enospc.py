#!/usr/bin/python3
"""test_store_enospc.py - a full metadata drive does not take the daemon down.

Debian's RocksDB 7.8 keeps its assertions and aborted the daemon (SIGABRT)
once a drive's RocksDB failed a WAL append for lack of space: RocksDB's own
info LOG on that drive, and the WAL sync of the heal queue, reused a file
writer that had failed.  Small (inline) objects fill the stores, so the WAL
append is what fails; each drive filesystem is a tmpfs filled by a ballast
file before the daemon starts (RocksDB preallocates its WAL at open).

one drive full: drive 1 fills; every PUT still succeeds (write quorum 3 of
  2+2), GETs return the bytes, the daemon keeps running through its heal
  ticks; when the ballast goes, the drive takes writes again without a
  restart; SIGTERM exits 0; after the restart every object reads back.
all drives full: PUTs answer 503 ServiceUnavailable with the "storage is
  full" message, again on a second try, the failed key is absent, SIGTERM
  exits 0; restarted with room, acknowledged objects read back and PUTs
  succeed.

Needs root to mount tmpfs; exits 77 otherwise.  Runs with /usr/bin/python3.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import botocore.exceptions
from strata_harness import Strata, expect_error, log

OBJ = 64 * 1024


def skip(msg):
    log(f"SKIP: {msg}")
    sys.exit(77)


def body(i):
    seed = (i * 2654435761) & 0xFFFFFFFF
    return seed.to_bytes(4, "little") * (OBJ // 4)


def ballast(mnt, leave, name="ballast"):
    st = os.statvfs(mnt)
    left = st.f_bavail * st.f_frsize - leave
    chunk = b"\x5a" * (1 << 20)
    with open(os.path.join(mnt, name), "wb") as f:
        while left > 0:
            n = min(left, len(chunk))
            try:
                f.write(chunk[:n])
                f.flush()
            except OSError:
                break
            left -= n


def mount_tmpfs(mnt, size):
    os.makedirs(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        skip(f"cannot mount tmpfs: {r.stdout.strip()}")


def start(mnt, size, drives, leave, args=()):
    """tmpfs on mnt, the drive directories, the ballast (before RocksDB
    opens), then the daemon."""
    mount_tmpfs(mnt, size)
    for d in drives:
        os.makedirs(d)
    ballast(mnt, leave)
    return Strata(drives=drives, args=["--heal-interval-seconds", "1", *args])


def daemon_log(strata):
    with open(strata.log_path, errors="replace") as f:
        return f.read()


def check_all(s3, bucket, keys):
    for i in keys:
        got = s3.get_object(Bucket=bucket, Key=f"k{i}")["Body"].read()
        assert got == body(i), f"k{i}: {len(got)} bytes differ from what was put"


def one_drive_full(work):
    mnt = os.path.join(work, "m1")
    drives = [os.path.join(mnt, "d1")] + [os.path.join(work, f"d{i}") for i in range(2, 5)]
    # 8 MiB memtables: RocksDB resumes once their size is free again.
    strata = start(mnt, "256m", drives, 1 << 20, ["--memtable-mb", "64"])
    try:
        s3 = strata.client()
        bucket = strata.bucket_name("full1")
        s3.create_bucket(Bucket=bucket)
        n = 300
        for i in range(n):
            s3.put_object(Bucket=bucket, Key=f"k{i}", Body=body(i))
        assert "write failed" in daemon_log(strata), "drive 1 never filled up"
        time.sleep(2)  # heal ticks run against the full drive
        assert strata.proc.poll() is None, f"daemon died: status {strata.proc.returncode}"
        check_all(s3, bucket, range(n))
        log(f"one drive full: {n} PUTs acknowledged, all read back")

        os.unlink(os.path.join(mnt, "ballast"))
        deadline = time.monotonic() + 60
        i = n
        while "metadata writes resumed" not in daemon_log(strata):
            assert time.monotonic() < deadline, "drive 1 did not take writes again in 60 s"
            s3.put_object(Bucket=bucket, Key=f"k{i}", Body=body(i))
            i += 1
            time.sleep(0.2)
        log(f"drive 1 takes writes again ({i - n} PUTs after the space returned)")
        strata.restart()  # SIGTERM must exit 0 (asserted by restart)
        check_all(strata.client(), bucket, range(i))
        ok = strata.stop()
        assert ok, "daemon shutdown failed"
    finally:
        strata.stop()
        subprocess.run(["umount", "-l", mnt])


def all_drives_full(work):
    mnt = os.path.join(work, "m")
    drives = [os.path.join(mnt, f"d{i}") for i in range(1, 5)]
    # RocksDB fallocates ~1.1 memtables for a WAL on its first write; on a
    # tmpfs larger than that the call takes pages until the disk is full and
    # only then gives them back, failing the other drives' writes of that
    # moment.  Memtables larger than this tmpfs make the call fail at once.
    strata = start(mnt, "48m", drives, 2 << 20, ["--memtable-mb", "512"])
    try:
        s3 = strata.client()
        bucket = strata.bucket_name("full4")
        s3.create_bucket(Bucket=bucket)
        acked = []
        failed = None
        for i in range(400):
            try:
                s3.put_object(Bucket=bucket, Key=f"k{i}", Body=body(i))
                acked.append(i)
            except botocore.exceptions.ClientError as e:
                failed = (i, e.response)
                break
        assert failed, "400 PUTs fitted: the drives never filled up"
        i, resp = failed
        err = resp["Error"]
        assert resp["ResponseMetadata"]["HTTPStatusCode"] == 503, resp
        assert err["Code"] == "ServiceUnavailable", err
        assert "full" in err.get("Message", ""), err
        log(f"all drives full after {len(acked)} PUTs: 503 {err['Code']}: {err['Message']}")
        expect_error(lambda: s3.put_object(Bucket=bucket, Key="again", Body=body(9999)),
                     "ServiceUnavailable", 503)
        expect_error(lambda: s3.get_object(Bucket=bucket, Key=f"k{i}"), "NoSuchKey", 404)
        time.sleep(2)  # heal ticks
        assert strata.proc.poll() is None, f"daemon died: status {strata.proc.returncode}"
        check_all(s3, bucket, acked)
        strata.restart(between=lambda: os.unlink(os.path.join(mnt, "ballast")))
        s3 = strata.client()
        check_all(s3, bucket, acked)
        expect_error(lambda: s3.get_object(Bucket=bucket, Key=f"k{i}"), "NoSuchKey", 404)
        s3.put_object(Bucket=bucket, Key=f"k{i}", Body=body(i))
        check_all(s3, bucket, [i])
        ok = strata.stop()
        assert ok, "daemon shutdown failed"
    finally:
        strata.stop()
        subprocess.run(["umount", "-l", mnt])


def wal_failed_empty_memtable(work):
    """RocksDB 7.8 resumes a store whose WAL write failed while its memtable
    was empty without switching to a new WAL, so the next write reused the
    failed file writer and the daemon aborted (SIGABRT,
    sync_without_flush_called_).  A restart leaves the memtable empty (the
    WAL is replayed into an SST), and with less room than a memtable the new
    WAL gets no preallocation: filling the drive then makes the very next
    write fail in the WAL.  16 MiB memtables: RocksDB resumes the store once
    their size is free again."""
    mnt = os.path.join(work, "m1")
    mount_tmpfs(mnt, "64m")
    drives = [os.path.join(mnt, "d1")] + [os.path.join(work, f"d{i}") for i in range(2, 5)]
    for d in drives:
        os.makedirs(d)
    # No scanner: its pass position is the one record written at start-up.
    strata = Strata(drives=drives, args=["--ilm-interval-seconds", "0", "--memtable-mb", "128"])
    try:
        s3 = strata.client()
        bucket = strata.bucket_name("walfail")
        s3.create_bucket(Bucket=bucket)
        for i in range(3):
            s3.put_object(Bucket=bucket, Key=f"k{i}", Body=body(i))
        strata.restart(between=lambda: ballast(mnt, 8 << 20))
        s3 = strata.client()
        ballast(mnt, 0, "ballast2")
        s3.put_object(Bucket=bucket, Key="k3", Body=body(3))
        text = daemon_log(strata)
        assert "write failed" in text and ".log: No space left" in text, \
            "drive 1's WAL write did not fail"
        os.unlink(os.path.join(mnt, "ballast"))
        os.unlink(os.path.join(mnt, "ballast2"))
        # RocksDB's own recovery polls the free space every few seconds;
        # writes keep coming (the store would be probed once a second).
        n = 4
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            s3.put_object(Bucket=bucket, Key=f"k{n}", Body=body(n))
            n += 1
            time.sleep(0.2)
            assert strata.proc.poll() is None, f"daemon died: status {strata.proc.returncode}"
        check_all(s3, bucket, range(n))
        assert "takes no writes until a restart" in daemon_log(strata)
        log(f"WAL failed with an empty memtable: {n} PUTs acknowledged, all read back")
        strata.restart()  # SIGTERM must exit 0 (asserted by restart)
        s3 = strata.client()
        check_all(s3, bucket, range(n))
        s3.put_object(Bucket=bucket, Key=f"k{n}", Body=body(n))
        assert "Assertion" not in daemon_log(strata), "RocksDB assertion in the log"
        ok = strata.stop()
        assert ok, "daemon shutdown failed"
    finally:
        strata.stop()
        subprocess.run(["umount", "-l", mnt])


def main():
    if os.geteuid() != 0:
        skip("needs root to mount tmpfs")
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    failed = []
    only = os.environ.get("STRATA_TEST_ONLY")
    tests = [fn for fn in (one_drive_full, all_drives_full, wal_failed_empty_memtable)
             if not only or only in fn.__name__]
    for fn in tests:
        work = tempfile.mkdtemp(prefix=f"store-enospc-{fn.__name__}.", dir=base)
        t = time.monotonic()
        try:
            fn(work)
            log(f"ok: {fn.__name__} ({time.monotonic() - t:.1f} s)")
        except Exception as e:  # noqa: BLE001 - report and go on
            failed.append(fn.__name__)
            log(f"FAIL: {fn.__name__}: {e!r}")
            import traceback
            traceback.print_exc(file=sys.stdout)
        shutil.rmtree(work, ignore_errors=True)
    log(f"{len(tests)} tests, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
