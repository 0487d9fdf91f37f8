#!/usr/bin/python3
"""test_rados_restore.py - RestoreObject on a RADOS-backed daemon: the
archive tier --tier arch:s3,restore:URL (the remote a strata on local
drives) of two gateways on a one-OSD memstore cluster (--lc-day-seconds 1,
a scanner pass every second, leases of 3 s, a reclaim grace of 5 s).

Checked, with the assertions the local tests share (remote_tier_common.py):
before a restore GET and ranged GET answer 403 InvalidObjectState and HEAD
has no x-amz-restore; RestoreObject 202, x-amz-restore ongoing then done
with AWS's expiry, GET and ranges from the copy in the hot pool, a second
restore 200 with a new expiry; the other gateway sees the same header and
reads the same bytes; the copy's record is an r/ key of the version's
index shard; Days=1 expires (403 again, ObjectRestore by header gone), the
copy's RADOS objects are reclaimed and no r/, w/ or g/ key is left; a
version deleted while restored takes its copy along; the gateway killed
(_exit 137, as kill -9) after the first piece of a copy: the other gateway
shows the restore ongoing and serves nothing of the half copy, takes the
copy over once the killed one's lease and sign of life are stale, and
after the reclaim grace the hot pool holds exactly the finished copy.
ObjectRestore events to a webhook served by the test: s3:ObjectRestore:Post
from the gateway asked, :Completed once the copy is made (restores through
either gateway; with AWS's glacierEventData: the copy's expiry and the
class restored from), :Delete when a copy expires, each once, with the
key, version id, size and ETag of the archived version.

Skipped (77) when the Ceph daemons are missing.
"""

import datetime
import json
import os
import sys
import time

from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rados_gw import gateway, launch, rados_init, require_daemon_on_rados  # noqa: E402
from remote_tier_common import (RESTORE_DONE, MiB, assert_archived, body,  # noqa: E402
                                expiry_of, md5, move_to_archive, restore_again, restore_hdr,
                                restored_reads, wait_restored)
from notify_hook import Receiver, put_conf, queue_conf  # noqa: E402
from strata_harness import Strata, expect_error, free_port, log, run, test, wait_until  # noqa: E402

PREFIX = "rs" + os.urandom(3).hex()
HOT, META = PREFIX + ".data", PREFIX + ".meta"
CLUSTER = RADOS = R = ARCH = CREDS = B = None
HOOK = Receiver(free_port())  # the webhook target of both gateways


def pool_objects(pool):
    io = RADOS.open_ioctx(pool)
    try:
        return set(o.key for o in io.list_objects())
    finally:
        io.close()


def index_keys(kind):
    """Every omap key of kind ("r/", "w/", "g/") of every index shard."""
    import rados
    keys = []
    io = RADOS.open_ioctx(META)
    try:
        for oid in sorted(o for o in pool_objects(META) if o.startswith("idx.")):
            with rados.ReadOpCtx() as op:
                it, _rc = io.get_omap_vals(op, "", kind, 10000)
                try:
                    io.operate_read_op(op, oid)
                except rados.ObjectNotFound:
                    continue
                keys += [(oid, k) for k, _v in it]
    finally:
        io.close()
    return keys


def settled():
    return not index_keys("w/") and not index_keys("g/")


def tier_args():
    return ["--tier", f"arch:s3,restore:{R.endpoint}/{ARCH}/data", "--tier-credentials", CREDS,
            "--storage-class", "DEEP_ARCHIVE:arch",
            "--lc-day-seconds", "1", "--ilm-interval-seconds", "1", "--lease-seconds", "3",
            "--orphan-grace-seconds", "5", "--ilm-move-mbps", "0",
            "--notify-target", f"hook:webhook:http://127.0.0.1:{HOOK.port}/events"]


def archived(c, b, objs):
    """objs {key: bytes or [part bytes]} put into a new bucket b and moved
    to the archive tier: ({key: version id}, the hot pool's objects once
    their hot copies are reclaimed)."""
    c.create_bucket(Bucket=b)
    base = pool_objects(HOT)
    vids = move_to_archive(c, b, objs)
    wait_until("the hot copies reclaimed", lambda: pool_objects(HOT) == base, 30)
    return vids, base


@test
def archive_needs_restore(s):
    c, c2 = s.client(), B.client()
    b = s.bucket_name("arch")
    single = body(5 * MiB + 123, b + "s")
    parts = [body(5 * MiB, b + "p1"), body(2 * MiB + 7, b + "p2")]
    vids, base = archived(c, b, {"single": single, "multi": parts})
    for k in ("single", "multi"):
        for cl in (c, c2):
            assert_archived(cl, b, k)
            assert_archived(cl, b, k, vids[k])
            h = cl.head_object(Bucket=b, Key=k)
            assert h["StorageClass"] == "DEEP_ARCHIVE" and "Restore" not in h, h
    assert not index_keys("r/")
    r = c.restore_object(Bucket=b, Key="single", RestoreRequest={"Days": 30})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 202, r
    h = restore_hdr(c, b, "single")
    assert h == 'ongoing-request="true"' or RESTORE_DONE.fullmatch(h), h
    wait_restored(c, b, "single", "single restored")
    exp = restored_reads(c, b, "single", single, 30)
    copy1 = pool_objects(HOT) - base
    assert len(copy1) == 2, sorted(copy1)  # 5 MiB + 123 in 4 MiB stripes
    # The other gateway: the same state, the same bytes, from the cluster.
    assert restore_hdr(c2, b, "single") == restore_hdr(c, b, "single")
    assert restored_reads(c2, b, "single", single, 30) == exp
    rk = index_keys("r/")
    assert len(rk) == 1 and rk[0][1].startswith("r/single"), rk
    # The multipart version through the second gateway; parts from hot.
    r = c2.restore_object(Bucket=b, Key="multi", VersionId=vids["multi"],
                          RestoreRequest={"Days": 30})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 202, r
    wait_restored(c, b, "multi", "multi restored")
    multi = b"".join(parts)
    restored_reads(c, b, "multi", multi, 30)
    g = c2.get_object(Bucket=b, Key="multi", Range=f"bytes={5 * MiB - 3}-{5 * MiB + 3}")
    assert g["Body"].read() == multi[5 * MiB - 3:5 * MiB + 4]
    assert len(pool_objects(HOT) - base) == 2 + 2 + 1
    restore_again(c2, b, "single", vids["single"], exp)
    assert expiry_of(restore_hdr(c, b, "single")) == expiry_of(restore_hdr(c2, b, "single"))
    wait_until("no pending or reclaim entries", settled, 30)
    for k in ("single", "multi"):
        c.delete_object(Bucket=b, Key=k, VersionId=vids[k])
    wait_until("the copies reclaimed with their versions",
               lambda: pool_objects(HOT) == base and settled(), 30)
    assert not index_keys("r/")
    c.delete_bucket(Bucket=b)


@test
def restored_copy_expires_and_goes_with_its_version(s):
    c, c2 = s.client(), B.client()
    b = s.bucket_name("expire")
    short, gone = body(1 * MiB + 5, b + "a"), body(2 * MiB + 9, b + "b")
    vids, base = archived(c, b, {"short": short, "gone": gone})
    c.restore_object(Bucket=b, Key="gone", RestoreRequest={"Days": 30})
    wait_restored(c, b, "gone", "gone restored")
    with_gone = pool_objects(HOT)
    assert len(with_gone - base) == 1
    c2.restore_object(Bucket=b, Key="short", RestoreRequest={"Days": 1})
    wait_restored(c, b, "short", "short restored")
    assert c2.get_object(Bucket=b, Key="short")["Body"].read() == short
    wait_until("the copy expired", lambda: restore_hdr(c, b, "short") is None, timeout=10)
    for cl in (c, c2):
        assert_archived(cl, b, "short")
    wait_until("its RADOS objects reclaimed, nothing pending",
               lambda: pool_objects(HOT) == with_gone and settled(), 30)
    assert [k for _o, k in index_keys("r/")] and all(
        k.startswith("r/gone") for _o, k in index_keys("r/")), index_keys("r/")
    # Restored again after the expiry: a new copy.
    r = c.restore_object(Bucket=b, Key="short", RestoreRequest={"Days": 30})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 202
    wait_restored(c2, b, "short", "short restored again")
    assert len(pool_objects(HOT) - base) == 2
    # The version deleted (through the other gateway): its copy goes with it.
    c2.delete_object(Bucket=b, Key="gone", VersionId=vids["gone"])
    expect_error(lambda: c.restore_object(Bucket=b, Key="gone", VersionId=vids["gone"],
                                          RestoreRequest={"Days": 1}), "NoSuchVersion", 404)
    wait_until("the deleted version's copy reclaimed",
               lambda: len(pool_objects(HOT) - base) == 1 and settled(), 30)
    c.delete_object(Bucket=b, Key="short", VersionId=vids["short"])
    wait_until("every copy reclaimed", lambda: pool_objects(HOT) == base and settled(), 30)
    assert not index_keys("r/")
    c.delete_bucket(Bucket=b)


def restore_events(b, k):
    """The ObjectRestore records the webhook received for b/k, in order."""
    return [r for _p, _h, r in HOOK.records()
            if r["s3"]["bucket"]["name"] == b and r["s3"]["object"]["key"] == k]


@test
def restore_events_delivered(s):
    """s3:ObjectRestore:* to a webhook: Post when asked (through either
    gateway), Completed when the copy is ready, Delete when it expires;
    each names the archived version (id, size, ETag)."""
    c, c2 = s.client(), B.client()
    b = s.bucket_name("events")
    c.create_bucket(Bucket=b)
    put_conf(c, b, queue_conf("arn:strata:sqs::hook:webhook", ["s3:ObjectRestore:*"],
                              cid="restores"))
    one, two = body(1 * MiB + 11, b + "1"), body(2 * MiB + 3, b + "2")
    vids = move_to_archive(c, b, {"one": one, "two": two})
    assert restore_events(b, "one") == [] and restore_events(b, "two") == []
    r = c.restore_object(Bucket=b, Key="one", RestoreRequest={"Days": 30})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 202, r
    r = c2.restore_object(Bucket=b, Key="two", VersionId=vids["two"], RestoreRequest={"Days": 1})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 202, r
    wait_restored(c, b, "one", "one restored")
    names = ["ObjectRestore:Post", "ObjectRestore:Completed"]
    wait_until("Post and Completed of one", lambda: [
        e["eventName"] for e in restore_events(b, "one")] == names, 30)
    # Completed says when the copy expires (as x-amz-restore) and the class
    # it was restored from (AWS's glacierEventData); Post says neither.
    post, done = restore_events(b, "one")
    assert "glacierEventData" not in post, post
    rd = done["glacierEventData"]["restoreEventData"]
    assert rd["lifecycleRestoreStorageClass"] == "DEEP_ARCHIVE", rd
    exp = datetime.datetime.strptime(rd["lifecycleRestorationExpiryTime"],
                                     "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    assert int(exp) == expiry_of(restore_hdr(c, b, "one")), (rd, restore_hdr(c, b, "one"))
    # two: a copy of one day (1 s here) expires after it is made.
    wait_until("Post, Completed and Delete of two", lambda: [
        e["eventName"] for e in restore_events(b, "two")] == names + ["ObjectRestore:Delete"], 60)
    assert restore_hdr(c, b, "two") is None
    for k, data in (("one", one), ("two", two)):
        for e in restore_events(b, k):
            o = e["s3"]["object"]
            assert e["eventSource"] == "aws:s3" and e["s3"]["configurationId"] == "restores", e
            assert o["versionId"] == vids[k] and o["size"] == len(data), (k, e)
            assert o["eTag"] == md5(data), (k, e)
            assert e["s3"]["bucket"]["arn"] == f"arn:aws:s3:::{b}", e
    time.sleep(2)  # nothing more comes: no second Completed from the other gateway
    assert len(restore_events(b, "one")) == 2 and len(restore_events(b, "two")) == 3
    for k in ("one", "two"):
        c.delete_object(Bucket=b, Key=k, VersionId=vids[k])
    wait_until("the copies reclaimed", settled, 30)


@test
def kill9_mid_restore(s):
    # The gateway dies after the first piece (part) of the copy.
    s.proc.terminate()
    assert s.proc.wait(30) == 0
    launch(s, 0, env={"STRATA_DEBUG_RESTORE_CRASH": "1"})
    c, c2 = s.client(), B.client()
    b = s.bucket_name("rkill")
    parts = [body(5 * MiB, b + "p1"), body(1 * MiB + 3, b + "p2")]
    data = b"".join(parts)
    base = archived(c, b, {"k": parts})[1]
    try:
        r = c.restore_object(Bucket=b, Key="k", RestoreRequest={"Days": 30})
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 202, r
    except (ConnectionClosedError, EndpointConnectionError):
        pass  # the copy reached the hook before the answer left
    assert s.proc.wait(60) == 137, "the gateway did not die after the first piece"
    half = pool_objects(HOT) - base
    assert len(half) == 2, sorted(half)  # the first part's two stripes
    # Nothing of the half copy is served by the other gateway.
    assert restore_hdr(c2, b, "k") == 'ongoing-request="true"'
    assert_archived(c2, b, "k")
    # It takes the copy over once the lease and the copy's sign of life are
    # stale, and the half copy is reclaimed after the grace.
    t = time.monotonic()
    wait_restored(c2, b, "k", "the copy made again by the other gateway")
    log(f"copy taken over {time.monotonic() - t:.1f} s after the kill")
    restored_reads(c2, b, "k", data, 30)
    wait_until("the half copy reclaimed",
               lambda: not (pool_objects(HOT) & half) and settled(), 30)
    assert len(pool_objects(HOT) - base) == 2 + 1, sorted(pool_objects(HOT) - base)
    launch(s, 0, env={})
    c = s.client()
    assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
    c.delete_object(Bucket=b, Key="k", VersionId=c.head_object(Bucket=b, Key="k")["VersionId"])
    wait_until("the copy reclaimed", lambda: pool_objects(HOT) == base and settled(), 30)


def main():
    global CLUSTER, RADOS, R, ARCH, CREDS, B
    require_daemon_on_rados()
    HOOK.start()
    from ceph_cluster import CephCluster
    t0 = time.monotonic()
    R = Strata()  # the remote: a strata on local drives
    try:
        ARCH = R.bucket_name("arch")
        R.client().create_bucket(Bucket=ARCH)
        CREDS = os.path.join(R.tmp, "tiers.json")
        with open(os.open(CREDS, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            json.dump({"arch": {"access_key": R.ak, "secret_key": R.sk}}, f)
        with CephCluster(osds=1, store="memstore") as c:
            CLUSTER = c
            rados_init(c, PREFIX)
            import rados  # python3-rados, with the Ceph packages
            RADOS = rados.Rados(conffile=c.conf, rados_id=c.client_id)
            RADOS.connect(timeout=30)
            log(f"cluster and pools ready in {time.monotonic() - t0:.1f} s; remote {R.endpoint}")
            s = gateway(c, PREFIX, args=tier_args())
            B = gateway(c, PREFIX, keys=(s.ak, s.sk), args=tier_args())
            try:
                run(s)  # exits
            finally:
                B.stop()
                s.stop()
                RADOS.shutdown()
    finally:
        R.stop()


if __name__ == "__main__":
    main()
