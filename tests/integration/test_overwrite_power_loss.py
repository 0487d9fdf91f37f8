#!/usr/bin/python3
"""test_overwrite_power_loss.py - overwrites and version deletes of small
(inline) objects, many at once so that they share group commits, survive a
power loss in the middle of a group: every acknowledged write reads back
byte for byte, nothing older or half-written shows.

Concurrent PUTs of 100 KiB objects (stored inline in the records) share
each drive's synced RocksDB writes, and the tombstone drops of a commit
ride with the next group instead of a write of their own.  Sixteen writer
threads overwrite their own keys of an unversioned bucket and, in a
versioned bucket, add versions and delete older ones by version id; the
daemon is killed with SIGKILL in the middle and the image copied at once,
as tests/integration/test_power_loss.py does (loop-mounted ext4, writeback
held off, a canary proving unsynced data is dropped).  On the copy:
- each unversioned key holds the body of its last acknowledged PUT, or of
  the one in flight at the kill (begun after it), and exactly one version
  of it is listed: no replaced version comes back;
- every acknowledged version of the versioned bucket reads back identical,
  every version whose delete was acknowledged stays gone, and a version
  whose delete was in flight is either intact or gone;
- the listings show every acknowledged key.

Needs root, losetup, mkfs.ext4 and mount; without them it exits 77.
Runs with /usr/bin/python3.
"""

import os
import random
import shutil
import sys
import tempfile
import threading
import time

import botocore.exceptions
from strata_harness import Strata, log
from test_power_loss import (Disk, body, canary_dropped, copy_image, cut_power, hold_writeback,
                             restore_sysctls, skip, teardown)

WRITE_SECONDS = 4.0
WRITERS = 16
KEYS_PER_WRITER = 4
SIZE = 100 * 1024  # inline (below --inline-max): the records carry the shards


def gen_body(key, gen):
    return body(f"{key}#{gen}", SIZE)


class Log:
    """What the writers were told, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.puts = 0         # acknowledged PUTs to the unversioned bucket
        self.acked = {}       # unversioned key -> last acknowledged generation
        self.inflight = {}    # unversioned key -> generation sent, not yet answered
        self.versions = {}    # (key, version id) -> generation: acknowledged versions
        self.deleted = set()  # (key, version id): acknowledged version deletes
        self.del_inflight = set()


def writer(s3, plain, versioned, tid, stop, lg):
    rnd = random.Random(tid)
    keys = [f"w{tid:02d}/k{i}" for i in range(KEYS_PER_WRITER)]
    gen = 0
    mine = []  # (key, version id) of acknowledged versions not deleted
    while not stop.is_set():
        gen += 1
        try:
            key = keys[gen % KEYS_PER_WRITER]
            with lg.lock:
                lg.inflight[key] = gen
            s3.put_object(Bucket=plain, Key=key, Body=gen_body(key, gen))
            with lg.lock:
                lg.acked[key] = gen
                lg.puts += 1
                del lg.inflight[key]
            if mine and rnd.random() < 0.4:
                k, vid = mine.pop(rnd.randrange(len(mine)))
                with lg.lock:
                    lg.del_inflight.add((k, vid))
                s3.delete_object(Bucket=versioned, Key=k, VersionId=vid)
                with lg.lock:
                    lg.del_inflight.discard((k, vid))
                    lg.deleted.add((k, vid))
            else:
                vid = s3.put_object(Bucket=versioned, Key=key, Body=gen_body(key, gen))["VersionId"]
                with lg.lock:
                    lg.versions[(key, vid)] = gen
                mine.append((key, vid))
        except Exception:
            return  # the daemon was killed: this request is not acknowledged


def versions_of(s3, bucket, bad):
    """ListObjectVersions pages of bucket (a failure is a finding)."""
    try:
        return list(s3.get_paginator("list_object_versions").paginate(Bucket=bucket))
    except botocore.exceptions.ClientError as e:
        bad.append(f"{bucket}: ListObjectVersions: {e}")
        return []


def check(s3, plain, versioned, lg):
    bad = []
    for key in sorted(set(lg.acked) | set(lg.inflight)):
        allowed = {g for g in (lg.acked.get(key), lg.inflight.get(key)) if g is not None}
        try:
            got = s3.get_object(Bucket=plain, Key=key)["Body"].read()
        except botocore.exceptions.ClientError as e:
            if key in lg.acked:
                bad.append(f"{plain}/{key}: {e}")
            continue
        if not any(got == gen_body(key, g) for g in allowed):
            bad.append(f"{plain}/{key}: {len(got)} bytes, not generation {sorted(allowed)}")
    shown = {}
    for page in versions_of(s3, plain, bad):
        for v in page.get("Versions", []):
            shown[v["Key"]] = shown.get(v["Key"], 0) + 1
        bad += [f"{plain}/{m['Key']}: a delete marker nobody wrote"
                for m in page.get("DeleteMarkers", [])]
    bad += [f"{plain}/{k}: {n} versions listed in an unversioned bucket"
            for k, n in sorted(shown.items()) if n != 1]
    bad += [f"{plain}/{k}: acknowledged but not listed" for k in sorted(set(lg.acked) - set(shown))]

    listed = set()
    for page in versions_of(s3, versioned, bad):
        listed.update((v["Key"], v["VersionId"]) for v in page.get("Versions", []))
    for (key, vid), gen in sorted(lg.versions.items()):
        if (key, vid) in lg.deleted:
            continue
        try:
            got = s3.get_object(Bucket=versioned, Key=key, VersionId=vid)["Body"].read()
        except botocore.exceptions.ClientError as e:
            if (key, vid) not in lg.del_inflight:
                bad.append(f"{versioned}/{key}?versionId={vid}: {e}")
            continue
        if got != gen_body(key, gen):
            bad.append(f"{versioned}/{key}?versionId={vid}: {len(got)} bytes, not generation {gen}")
        if (key, vid) not in listed:
            bad.append(f"{versioned}/{key}?versionId={vid}: readable but not listed")
    for key, vid in sorted(lg.deleted):
        try:
            s3.head_object(Bucket=versioned, Key=key, VersionId=vid)
            bad.append(f"{versioned}/{key}?versionId={vid}: deleted (acknowledged) but back")
        except botocore.exceptions.ClientError as e:
            if e.response["ResponseMetadata"]["HTTPStatusCode"] != 404:
                bad.append(f"{versioned}/{key}?versionId={vid}: HEAD after delete: {e}")
        if (key, vid) in listed:
            bad.append(f"{versioned}/{key}?versionId={vid}: deleted (acknowledged) but listed")
    return bad


def main(args=()):
    """args: daemon flags of both daemons (test_overwrite_power_loss_slog.py)."""
    if os.geteuid() != 0:
        skip("needs root (losetup and mount of an ext4 image)")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed")
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    work = tempfile.mkdtemp(prefix="overwrite-power-loss.", dir=base)
    saved, disks, daemons = {}, [], []
    ok = False
    try:
        canary = hold_writeback(work, saved, disks)
        drives = [os.path.join(work, "mnt", f"d{i}") for i in range(1, 5)]
        for d in drives:
            os.makedirs(d)
        first = Strata(args=args, drives=drives)
        daemons.append(first)
        s3 = first.client()
        plain, versioned = first.bucket_name("ow"), first.bucket_name("owv")
        s3.create_bucket(Bucket=plain)
        s3.create_bucket(Bucket=versioned)
        s3.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Enabled"})
        lg, stop = Log(), threading.Event()
        threads = [threading.Thread(target=writer,
                                    args=(first.client(), plain, versioned, t, stop, lg))
                   for t in range(WRITERS)]
        for t in threads:
            t.start()
        time.sleep(WRITE_SECONDS)
        cut_power(first, canary)  # SIGKILL in the middle of the group commits
        stop.set()
        for t in threads:
            t.join()
        copy = os.path.join(work, "copy.img")
        copy_image(disks[0].img, copy)
        overwrites = lg.puts - len(lg.acked)
        log(f"{lg.puts} PUTs ({overwrites} of them overwrites) of "
            f"{len(lg.acked)} keys, {len(lg.versions)} versions and {len(lg.deleted)} "
            f"version deletes acknowledged before the kill; {len(lg.inflight)} PUTs and "
            f"{len(lg.del_inflight)} deletes in flight")
        disks[0].close()
        first.stop()
        restore_sysctls(saved)
        if overwrites < WRITERS or len(lg.deleted) < 4:
            raise AssertionError(f"only {overwrites} overwrites and {len(lg.deleted)} version "
                                 f"deletes acknowledged in {WRITE_SECONDS} s")

        disks.append(Disk(copy, os.path.join(work, "mnt2"), False))
        canary_dropped(os.path.join(work, "mnt2"))
        second = Strata(args=args,
                        drives=[os.path.join(work, "mnt2", f"d{i}") for i in range(1, 5)],
                        keys=(first.ak, first.sk))
        daemons.append(second)
        bad = check(second.client(), plain, versioned, lg)
        if bad:
            second.failed = True
            for b in bad[:40]:
                log(f"FAIL: {b}")
            raise AssertionError(f"{len(bad)} acknowledged writes lost or wrong after the power loss")
        log(f"all {len(lg.acked)} keys at an acknowledged (or in-flight) generation with one "
            f"version each, {len(lg.versions) - len(lg.deleted)} versions identical, "
            f"{len(lg.deleted)} deletes held")
        ok = second.stop()
    finally:
        teardown(saved, daemons, disks, ok, work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
