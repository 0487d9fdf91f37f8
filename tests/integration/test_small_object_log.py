#!/usr/bin/python3
"""test_small_object_log.py - inline objects with --small-object-log: each
drive's shard in that drive's log segments (DRIVE/slog/*.seg), the record
saying where (meta/README.md, "Small-object log").

- PUT/GET/overwrite/delete and versions read back byte for byte, the
  shard bytes are in the segment files;
- a drive whose segments are overwritten with garbage still serves (its
  shards count as corrupt), heal rewrites them, and the object then reads
  with only that drive and one more left intact;
- segments whose objects were all overwritten or deleted are unlinked
  (1 MiB segments), and after a restart new segments get higher numbers
  and old records still read;
- the option off again: the logged records still read.
Runs with /usr/bin/python3.
"""

import glob
import os
import time

from strata_harness import Strata, expect_error, log, run, test, wait_until

SIZE = 100 * 1024  # inline (below the default --inline-max)
ARGS = ["--small-object-log", "--small-object-log-segment-mb", "1",
        "--heal-interval-seconds", "0"]


def body(tag, size=SIZE):
    seed = (tag * (size // len(tag) + 1)).encode()[:size]
    return bytes(b ^ (i * 131 & 0xFF) for i, b in enumerate(seed))


def segs(drive):
    return sorted(glob.glob(os.path.join(drive, "slog", "*.seg")))


def seg_bytes(drive):
    return sum(os.path.getsize(p) for p in segs(drive))


def heal(s):
    st, doc = s.admin_get("heal/start", "POST")
    assert st in (202, 409), doc

    def idle():
        st, doc = s.admin_get("heal/status")
        return st == 200 and doc["state"] == "idle" and doc
    return wait_until("heal idle", idle, 60)


@test
def put_get_overwrite_delete(s):
    c = s.client()
    b = s.bucket_name("slog")
    c.create_bucket(Bucket=b)
    before = [seg_bytes(d) for d in s.drives]
    for i in range(5):
        c.put_object(Bucket=b, Key=f"k{i}", Body=body(f"k{i}"))
    grown = [seg_bytes(d) - x for d, x in zip(s.drives, before)]
    # Every drive holds a shard of each object in its log, not its records.
    assert all(g >= 5 * SIZE // 4 for g in grown), grown
    for i in range(5):
        assert c.get_object(Bucket=b, Key=f"k{i}")["Body"].read() == body(f"k{i}")
    c.put_object(Bucket=b, Key="k0", Body=body("k0 again", SIZE - 7))
    assert c.get_object(Bucket=b, Key="k0")["Body"].read() == body("k0 again", SIZE - 7)
    r = c.get_object(Bucket=b, Key="k1", Range="bytes=1000-1999")["Body"].read()
    assert r == body("k1")[1000:2000]
    c.delete_object(Bucket=b, Key="k2")
    expect_error(lambda: c.get_object(Bucket=b, Key="k2"), "NoSuchKey", 404)
    # An empty object has no shard to log.
    c.put_object(Bucket=b, Key="empty", Body=b"")
    assert c.get_object(Bucket=b, Key="empty")["Body"].read() == b""


@test
def versions(s):
    c = s.client()
    b = s.bucket_name("slogv")
    c.create_bucket(Bucket=b)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    vids = [c.put_object(Bucket=b, Key="v", Body=body(f"v{i}"))["VersionId"] for i in range(4)]
    for i, vid in enumerate(vids):
        assert c.get_object(Bucket=b, Key="v", VersionId=vid)["Body"].read() == body(f"v{i}")
    c.delete_object(Bucket=b, Key="v", VersionId=vids[1])
    expect_error(lambda: c.get_object(Bucket=b, Key="v", VersionId=vids[1]), "NoSuchVersion", 404)
    c.delete_object(Bucket=b, Key="v")  # a delete marker over the latest
    expect_error(lambda: c.get_object(Bucket=b, Key="v"), "NoSuchKey", 404)
    assert c.get_object(Bucket=b, Key="v", VersionId=vids[3])["Body"].read() == body("v3")
    c.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "v", "VersionId": vids[0]})
    assert c.get_object(Bucket=b, Key="copy")["Body"].read() == body("v0")


def garble(drive):
    for p in segs(drive):
        n = os.path.getsize(p)
        with open(p, "r+b") as f:
            f.write(b"\xa5" * n)


@test
def corrupt_segments_healed(s):
    c = s.client()
    b = s.bucket_name("slogh")
    c.create_bucket(Bucket=b)
    keys = [f"h{i}" for i in range(6)]
    for k in keys:
        c.put_object(Bucket=b, Key=k, Body=body(k))
    first, *others = s.drives
    garble(first)
    for k in keys:  # the other drives' shards make up for the bad ones
        assert c.get_object(Bucket=b, Key=k)["Body"].read() == body(k)
    doc = heal(s)
    assert doc["last"]["result"] == "ok", doc
    # Only the healed drive and one more left intact: their shards decode.
    log(f"heal: {doc['last']}")
    for d in others[1:]:
        garble(d)
    for k in keys:
        assert c.get_object(Bucket=b, Key=k)["Body"].read() == body(k), k


@test
def dead_segments_unlinked(s):
    c = s.client()
    b = s.bucket_name("slogr")
    c.create_bucket(Bucket=b)
    d0 = s.drives[0]
    start = [os.path.basename(p) for p in segs(d0)]
    for i in range(60):  # ~3 MiB of shards per drive, 1 MiB segments
        c.put_object(Bucket=b, Key="same", Body=body(f"same{i}"))
    for i in range(20):
        c.put_object(Bucket=b, Key=f"gone{i}", Body=body(f"gone{i}"))
    for i in range(20):
        c.delete_object(Bucket=b, Key=f"gone{i}")
    # Made, by their ids: the compaction may already have moved the live
    # shards out of some and unlinked them.
    top0 = int(max(start).split(".")[0], 16)
    made = int(max(os.path.basename(p) for p in segs(d0)).split(".")[0], 16) - top0
    log(f"segments on {d0}: {len(start)} before, {made} more made by the writes")
    assert made >= 4, made

    def reclaimed():
        now = [os.path.basename(p) for p in segs(d0) if os.path.basename(p) > max(start)]
        # Left: the one holding the last "same", the one appended to.
        return len(now) <= 2 and now
    now = wait_until("dead segments unlinked", reclaimed, 30)
    log(f"after the grace: {now}")
    assert c.get_object(Bucket=b, Key="same")["Body"].read() == body("same59")

    top = max(os.path.basename(p) for p in segs(d0))
    s.restart(kill=True)
    assert c.get_object(Bucket=b, Key="same")["Body"].read() == body("same59")
    c.put_object(Bucket=b, Key="after", Body=body("after"))
    assert min(os.path.basename(p) for p in segs(d0) if os.path.basename(p) > top)
    assert c.get_object(Bucket=b, Key="after")["Body"].read() == body("after")


@test
def option_off_still_reads(s):
    c = s.client()
    b = s.bucket_name("slogoff")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="logged", Body=body("logged"))
    saved = list(s.args)
    s.args = [a for a in s.args if a != "--small-object-log"]
    try:
        s.restart()
        c = s.client()
        assert c.get_object(Bucket=b, Key="logged")["Body"].read() == body("logged")
        c.put_object(Bucket=b, Key="inline", Body=body("inline"))
        assert c.get_object(Bucket=b, Key="inline")["Body"].read() == body("inline")
        c.put_object(Bucket=b, Key="logged", Body=body("replaced"))
        assert c.get_object(Bucket=b, Key="logged")["Body"].read() == body("replaced")
    finally:
        s.args = saved
        s.restart()


if __name__ == "__main__":
    run(Strata(args=ARGS))
