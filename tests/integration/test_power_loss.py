#!/usr/bin/python3
"""test_power_loss.py - acknowledged objects survive a power loss, not only
the death of the process.

The daemon runs on four drive directories inside an ext4 file system on a
loop device, mounted with a 10-minute journal commit interval while the
kernel's periodic writeback is held off (vm.dirty_writeback_centisecs = 0,
vm.dirty_expire_centisecs = 1 hour; both restored afterwards).  Writer
threads PUT objects (inline, single-stripe and multi-stripe) and DELETE some
of them; the daemon is killed with SIGKILL in the middle, and the image
file is copied at once: the copy holds exactly what reached the loop device,
i.e. what was fsynced or written back, as after a power cut, and none of the
dirty pages still in the page cache.  A canary file proves that: synced
with content A before the daemon starts, overwritten in place with B
without fsync just before the kill, it must read A in the copy, or the
machine cannot drop unsynced data and the test says so loudly and exits 77
(skipped), never passing.  The copy is mounted (the journal replays) and a
new daemon started on it; every acknowledged PUT must read back byte for
byte, every acknowledged DELETE must stay deleted, and the listing must
show every acknowledged key.

Needs root, losetup, mkfs.ext4 and mount; without them it exits 77 with a
message.  Runs with /usr/bin/python3.
"""

import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import botocore.exceptions
from strata_harness import Strata, log

SYSCTLS = ("/proc/sys/vm/dirty_writeback_centisecs", "/proc/sys/vm/dirty_expire_centisecs")
IMG_MB = 1024
WRITE_SECONDS = 4.0
SIZES = (1024, 100 * 1024, 300 * 1024, 2 * 1024 * 1024 + 12345)
# PUTs per writer thread: 4 x 80 objects of ~0.6 MiB on average, doubled by
# the 2+2 erasure code (~400 MiB), plus each drive's RocksDB WAL, which
# RocksDB preallocates at 1.1 x the 64 MiB write buffer (~280 MiB for four
# drives), plus the SST files the restart flushes, stay below IMG_MB, so a
# fast machine never runs the image out of space (ENOSPC is a different
# test: meta/test_full_disk).
PUTS_PER_WRITER = 80


def skip(msg):
    bar = "!" * 78
    print(f"{bar}\n[test_power_loss] SKIPPED, NOT PASSED: {msg}\n"
          f"[test_power_loss] power-loss durability was NOT checked on this machine.\n{bar}",
          flush=True)
    sys.exit(77)


def sh(*cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stdout.strip()}")
    return r


class Disk:
    """An ext4 image on a loop device, mounted; undone by close()."""

    def __init__(self, img, mnt, mkfs):
        self.img, self.mnt, self.loop = img, mnt, None
        if mkfs:
            with open(img, "wb") as f:
                f.truncate(IMG_MB << 20)
            # No lazy init: no background writes into the image later.
            sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", img)
        self.loop = sh("losetup", "-f", "--show", img).stdout.strip()
        os.makedirs(mnt, exist_ok=True)
        try:
            sh("mount", "-t", "ext4", "-o", "commit=600", self.loop, mnt)
        except Exception:
            sh("losetup", "-d", self.loop, check=False)
            self.loop = None
            raise

    def close(self):
        if self.loop:
            sh("umount", self.mnt, check=False)
            sh("losetup", "-d", self.loop, check=False)
            self.loop = None


def hold_writeback(work, saved, disks):
    """The image mounted with writeback held off (saved: the sysctls to put
    back) and its canary: durable content A now, overwritten in place (no
    new blocks, so no journal commit forces it out) with B, never synced,
    just before the power goes.  Returns the canary's path."""
    try:
        disks.append(Disk(os.path.join(work, "disk.img"), os.path.join(work, "mnt"), True))
    except Exception as e:
        skip(f"cannot set up a loop-mounted ext4 image here: {e}")
    for p in SYSCTLS:
        with open(p) as f:
            saved[p] = f.read().strip()
    with open(SYSCTLS[0], "w") as f:
        f.write("0")          # no periodic writeback
    with open(SYSCTLS[1], "w") as f:
        f.write("360000")     # dirty data stays dirty for an hour
    canary = os.path.join(work, "mnt", "canary")
    with open(canary, "wb") as f:
        f.write(b"A" * 65536)
        f.flush()
        os.fsync(f.fileno())
    dfd = os.open(os.path.join(work, "mnt"), os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)
    return canary


def cut_power(daemon, canary):
    """The canary's unsynced overwrite, then SIGKILL: then copy_image at
    once, to keep what reached the loop device, as after a power cut."""
    with open(canary, "r+b") as f:
        f.write(b"B" * 65536)
    daemon.proc.kill()
    daemon.proc.wait()
    daemon.proc = None


def copy_image(img, copy):
    time.sleep(0.3)  # bios the dead process had in flight complete
    sh("cp", "--reflink=never", "--sparse=always", img, copy)


def restore_sysctls(saved):
    for p, v in saved.items():
        with open(p, "w") as f:
            f.write(v)
    saved.clear()


def canary_dropped(mnt):
    """Skip (77) unless the canary's unsynced overwrite is missing in mnt."""
    with open(os.path.join(mnt, "canary"), "rb") as f:
        seen = f.read()
    if seen != b"A" * 65536:
        skip("data written without fsync reached the image copy (canary reads "
             f"{seen[:8]!r}...): this machine does not drop unsynced data, so the copy "
             "is no power loss")
    log("the canary's unsynced overwrite is not in the copy: unsynced data was dropped")


def teardown(saved, daemons, disks, ok, work):
    restore_sysctls(saved)
    for d in daemons:
        if d.proc is not None:
            d.proc.kill()
            d.proc.wait()
            d.proc = None
    for d in disks:
        d.close()
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        log(f"kept {work}")


def body(key, size):
    """Deterministic bytes of a key (so the check needs only the key)."""
    seed = hashlib.sha256(key.encode()).digest()
    out = bytearray()
    block = seed
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:size])


def writer(s3, bucket, tid, stop, acked_put, acked_del, lock):
    rnd = random.Random(tid)
    n = 0
    mine = []
    while not stop.is_set():
        try:
            if mine and rnd.random() < 0.2:
                key = mine.pop(rnd.randrange(len(mine)))
                with lock:
                    del acked_put[key]  # either state is right until acknowledged
                s3.delete_object(Bucket=bucket, Key=key)
                with lock:
                    acked_del.add(key)
                continue
            if n >= PUTS_PER_WRITER:
                stop.wait()
                return
            size = SIZES[n % len(SIZES)]
            key = f"t{tid}/o{n:05d}-{size}"
            n += 1
            s3.put_object(Bucket=bucket, Key=key, Body=body(key, size))
            with lock:
                acked_put[key] = size
            mine.append(key)
        except Exception:
            return  # the daemon was killed: this request is not acknowledged


def main():
    if os.geteuid() != 0:
        skip("needs root (losetup and mount of an ext4 image)")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed")
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    work = tempfile.mkdtemp(prefix="power-loss.", dir=base)
    saved = {}
    disks = []
    daemons = []
    ok = False
    try:
        canary = hold_writeback(work, saved, disks)
        drives = [os.path.join(work, "mnt", f"d{i}") for i in range(1, 5)]
        for d in drives:
            os.makedirs(d)
        first = Strata(drives=drives)
        daemons.append(first)
        s3 = first.client()
        bucket = first.bucket_name("pl")
        s3.create_bucket(Bucket=bucket)
        acked_put, acked_del, lock = {}, set(), threading.Lock()
        stop = threading.Event()
        threads = [threading.Thread(target=writer,
                                    args=(first.client(), bucket, t, stop, acked_put, acked_del,
                                          lock))
                   for t in range(4)]
        for t in threads:
            t.start()
        time.sleep(WRITE_SECONDS)
        cut_power(first, canary)  # SIGKILL in the middle of the writes
        stop.set()
        for t in threads:
            t.join()
        copy = os.path.join(work, "copy.img")
        copy_image(disks[0].img, copy)
        with lock:
            puts, dels = dict(acked_put), set(acked_del)
        log(f"{len(puts)} PUTs and {len(dels)} DELETEs acknowledged before the kill")
        disks[0].close()
        first.stop()
        restore_sysctls(saved)
        if len(puts) < 8:
            raise AssertionError(f"only {len(puts)} PUTs acknowledged in {WRITE_SECONDS} s")

        disks.append(Disk(copy, os.path.join(work, "mnt2"), False))
        canary_dropped(os.path.join(work, "mnt2"))
        second = Strata(drives=[os.path.join(work, "mnt2", f"d{i}") for i in range(1, 5)],
                        keys=(first.ak, first.sk))
        daemons.append(second)
        s3 = second.client()
        bad = []
        for key, size in sorted(puts.items()):
            try:
                got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            except Exception as e:
                bad.append(f"{key}: {e}")
                continue
            if got != body(key, size):
                bad.append(f"{key}: {len(got)} bytes, not the {size} acknowledged")
        for key in sorted(dels):
            try:
                s3.head_object(Bucket=bucket, Key=key)
                bad.append(f"{key}: deleted (acknowledged) but back after the power loss")
            except botocore.exceptions.ClientError as e:
                if e.response["ResponseMetadata"]["HTTPStatusCode"] != 404:
                    bad.append(f"{key}: HEAD after delete: {e}")
        listed = set()
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            listed.update(o["Key"] for o in page.get("Contents", []))
        bad += [f"{k}: acknowledged but not listed" for k in sorted(set(puts) - listed)]
        bad += [f"{k}: deleted but listed" for k in sorted(dels & listed)]
        if bad:
            second.failed = True
            for b in bad[:40]:
                log(f"FAIL: {b}")
            raise AssertionError(f"{len(bad)} acknowledged operations lost in the power loss")
        log(f"all {len(puts)} acknowledged objects read back identical, "
            f"{len(dels)} deletes held, {len(listed)} keys listed")
        ok = second.stop()
    finally:
        teardown(saved, daemons, disks, ok, work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
