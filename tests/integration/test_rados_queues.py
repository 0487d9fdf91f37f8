#!/usr/bin/python3
"""test_rados_queues.py - event notification queues of gateways on one Ceph
cluster (one monitor, one memstore OSD; two daemons on the same pools, both
with the webhook target hook1, a receiver in this process):
- PUT and DELETE through a gateway on RADOS reach the webhook as AWS event
  JSON (eventName, bucket, key, size, ETag, version id, sequencer);
- events pushed through both gateways are delivered once each in steady
  state: by the gateway holding the queue's lease only (the other's
  delivered count stays 0), no key twice;
- kill -9 of the lease holder while events wait (receiver down, so the
  holder is retrying): the other gateway takes the lease over and
  delivers every event (at least once, none lost), including those the
  killed gateway had queued.
Replication from a RADOS store: test_replication.py with
STRATA_BACKEND=rados (integration_rados/test_replication).
SKIPPED (exit 77, the reason printed) when Ceph is not installed or the
daemon cannot run on RADOS.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from notify_hook import Receiver, keys_of, metrics, put_conf, queue_conf  # noqa: E402
from rados_gw import gateway, kill9, rados_init, require_daemon_on_rados  # noqa: E402
from strata_harness import free_port, log, new_bucket, run, test, wait_until  # noqa: E402

PREFIX = "tq" + os.urandom(3).hex()
HOOK = Receiver(free_port())
HOOK_ARN = "arn:strata:sqs::hook1:webhook"
ARGS = ["--metrics-public", "--notify-target",
        f"hook1:webhook:http://127.0.0.1:{HOOK.port}/events"]
CLUSTER = None
GW = []  # [first, second]: the gateways on PREFIX (run()'s argument is GW[0])


def delivered(g):
    return metrics(g)[("strata_notify_delivered_total", "hook1")]


def firsts(got):
    return [k for i, k in enumerate(got) if k not in got[:i]]


@test
def put_and_delete_events(s):
    c, b = new_bucket(s, "qev")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]))
    HOOK.clear()
    put = c.put_object(Bucket=b, Key="a/one.bin", Body=b"x" * 1234)
    etag, vid = put["ETag"].strip('"'), put["VersionId"]
    dm = c.delete_object(Bucket=b, Key="a/one.bin")["VersionId"]
    c.delete_object(Bucket=b, Key="a/one.bin", VersionId=vid)
    recs = HOOK.wait(lambda rs: len(keys_of(rs, b)) >= 3)
    time.sleep(0.5)  # nothing more may come
    recs = [x for x in HOOK.records() if x[2]["s3"]["bucket"]["name"] == b]
    names = [r["eventName"] for _, _, r in recs]
    assert names == ["ObjectCreated:Put", "ObjectRemoved:DeleteMarkerCreated",
                     "ObjectRemoved:Delete"], names
    for path, hdrs, r in recs:
        assert path == "/events" and hdrs.get("Content-Type") == "application/json", (path, hdrs)
        assert r["eventVersion"] == "2.1" and r["eventSource"] == "aws:s3", r
        assert r["s3"]["bucket"]["arn"] == f"arn:aws:s3:::{b}", r
        assert r["s3"]["object"]["key"] == "a/one.bin", r
        assert re.match(r"^[0-9A-F]{18}$", r["s3"]["object"]["sequencer"]), r
    o = recs[0][2]["s3"]["object"]
    assert (o["size"], o["eTag"], o["versionId"]) == (1234, etag, vid), o
    assert recs[1][2]["s3"]["object"]["versionId"] == dm, recs[1]
    assert recs[2][2]["s3"]["object"]["versionId"] == vid, recs[2]


@test
def two_gateways_deliver_once(s):
    a, b2 = GW
    c, b = new_bucket(a, "qonce")
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"]))
    time.sleep(1.2)  # the other gateway's bucket cache has seen the configuration
    HOOK.clear()
    before = [delivered(g) for g in GW]
    keys = [f"k{i:03d}" for i in range(40)]
    clients = [g.client() for g in GW]
    for i, k in enumerate(keys):
        clients[i % 2].put_object(Bucket=b, Key=k, Body=b"d")
    HOOK.wait(lambda rs: set(keys) <= set(keys_of(rs, b)))
    time.sleep(2)  # a second deliverer would have sent its copies by now
    got = keys_of(HOOK.records(), b)
    assert sorted(got) == keys, got  # each once
    # Those pushed through one gateway arrive in the order they were pushed.
    for g in (0, 1):
        mine = [k for k in got if int(k[1:]) % 2 == g]
        assert mine == keys[g::2], mine
    # A delivery is counted once its record is off the queue in RADOS,
    # after the receiver has it: waited for, bounded.
    wait_until("the deliveries counted", lambda: sum(delivered(g) - n for g, n in zip(GW, before))
               >= len(keys), timeout=30)
    gained = [delivered(g) - n for g, n in zip(GW, before)]
    assert sorted(gained) == [0, len(keys)], gained  # one gateway delivers


@test
def kill9_of_lease_holder(s):
    c, b = new_bucket(GW[0], "qkill")
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"]))
    time.sleep(1.2)
    HOOK.stop()
    keys = [f"x{i:03d}" for i in range(30)]
    try:
        clients = [g.client() for g in GW]
        for i, k in enumerate(keys):
            clients[i % 2].put_object(Bucket=b, Key=k, Body=b"k")
        # The holder is the gateway retrying the first event.
        deadline = time.monotonic() + 30
        holder = None
        while holder is None:
            assert time.monotonic() < deadline, "no gateway tried to deliver"
            for g in GW:
                if metrics(g)[("strata_notify_failed_total", "hook1")] > 0:
                    holder = g
            time.sleep(0.1)
        other = GW[1] if holder is GW[0] else GW[0]
        assert metrics(other)[("strata_notify_failed_total", "hook1")] == 0
        kill9(holder)
        GW[GW.index(holder)] = None
        HOOK.clear()
    finally:
        HOOK.start()
    t0 = time.monotonic()
    recs = HOOK.wait(lambda rs: set(keys) <= set(keys_of(rs, b)), timeout=60)
    log(f"the other gateway delivered after {time.monotonic() - t0:.1f} s")
    got = keys_of(recs, b)
    assert sorted(firsts(got)) == keys, got
    wait_until(f"{len(keys)} deliveries counted by the other gateway",
               lambda: delivered(other) >= len(keys), timeout=30)
    # The killed gateway back: nothing is delivered again in steady state.
    GW[GW.index(None)] = gateway(CLUSTER, PREFIX, keys=(other.ak, other.sk), args=ARGS)
    n = len(got)
    time.sleep(3)
    assert len(keys_of(HOOK.records(), b)) == n, keys_of(HOOK.records(), b)


if __name__ == "__main__":
    from ceph_cluster import CephCluster
    require_daemon_on_rados()
    HOOK.start()
    with CephCluster(osds=1, store="memstore") as cl:
        CLUSTER = cl
        rados_init(cl, PREFIX)
        first = gateway(cl, PREFIX, args=ARGS)
        GW[:] = [first, gateway(cl, PREFIX, keys=(first.ak, first.sk), args=ARGS)]
        try:
            run(first)  # exits
        finally:
            for g in GW:
                if g:
                    g.stop()
