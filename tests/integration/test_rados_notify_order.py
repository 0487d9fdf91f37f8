#!/usr/bin/python3
"""test_rados_notify_order.py - event sequencers of one key changed
through two Strata gateways on one Ceph cluster (one monitor, one memstore
OSD).  Each gateway has its own webhook target `hook` (a receiver of its
own in this process; the two share the cluster queue q.notify.hook, so
whichever holds its lease delivers to its own receiver).  One key is
written and deleted through the gateways in turn, another by clients of
both at once; the events of both receivers merged and sorted by their
sequencer (fixed-width hex, compared as strings, as AWS documents) must
name the key's versions and delete markers in the order ListObjectVersions
gives them, each with one sequencer whatever the redeliveries.
SKIPPED (exit 77, the reason printed) when Ceph is not installed or the
daemon cannot run on RADOS.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import key_writers  # noqa: E402
from notify_hook import Receiver, put_conf, queue_conf  # noqa: E402
from rados_gw import gateway, objects_missing, rados_init, require_daemon_on_rados, skip  # noqa: E402
from strata_harness import free_port, log, new_bucket, run, test, wait_until  # noqa: E402

PREFIX = "tn" + os.urandom(3).hex()
HOOKS = [Receiver(free_port()), Receiver(free_port())]  # gateway A's, B's
ARN = "arn:strata:sqs::hook:webhook"
GW = []  # [A, B]


def args_of(hook):
    return ["--notify-target", f"hook:webhook:http://127.0.0.1:{hook.port}/events"]


def sequencers(bucket, key):
    """version id -> the set of sequencers its events of key carried, from
    both receivers."""
    out = {}
    for h in HOOKS:
        for _, _, rec in h.records():
            o, b = rec["s3"]["object"], rec["s3"]["bucket"]["name"]
            if b == bucket and o["key"] == key:
                assert re.match(r"^[0-9A-F]{18}$", o["sequencer"]), o
                out.setdefault(o["versionId"], set()).add(o["sequencer"])
    return out


def check_order(c, bucket, key):
    """The key's history (oldest first) against its events sorted by
    sequencer."""
    committed = [vid for vid, _ in reversed(key_writers.history(c, bucket, key))]
    got = {}
    wait_until(f"an event of each of the {len(committed)} changes of {key}",
               lambda: got.update(sequencers(bucket, key)) or set(committed) <= set(got), 60)
    time.sleep(0.5)  # nothing more may come
    got = sequencers(bucket, key)
    assert set(got) == set(committed), (sorted(got), committed)
    twice = {v: s for v, s in got.items() if len(s) != 1}
    assert not twice, f"versions with more than one sequencer: {twice}"
    by_seq = [v for _, v in sorted((next(iter(s)), v) for v, s in got.items())]
    assert by_seq == committed, ("events sorted by sequencer against the key's history: " +
                                 " ".join(str(committed.index(v)) for v in by_seq))
    return len(committed)


@test
def alternate_gateways_one_key(_):
    """Gateways A and B in turn: A puts, B puts, A deletes (a marker), B
    deletes, ... 16 changes, each after the last answered."""
    a, b = GW
    c, bk = new_bucket(a, "alt")
    c.put_bucket_versioning(Bucket=bk, VersioningConfiguration={"Status": "Enabled"})
    put_conf(c, bk, queue_conf(ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]))
    time.sleep(1.2)  # B's bucket cache has seen the configuration
    clients = [a.client(), b.client()]
    for i in range(16):
        cl = clients[i % 2]
        if (i // 2) % 2 == 0:
            cl.put_object(Bucket=bk, Key="k", Body=f"body {i}\n".encode())
        else:
            cl.delete_object(Bucket=bk, Key="k")
    n = check_order(c, bk, "k")
    assert n == 16, n


@test
def both_gateways_at_once(_):
    """Four clients, two per gateway, put and delete one key at once."""
    a, b = GW
    c, bk = new_bucket(a, "burst")
    c.put_bucket_versioning(Bucket=bk, VersioningConfiguration={"Status": "Enabled"})
    put_conf(c, bk, queue_conf(ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]))
    time.sleep(1.2)
    key_writers.burst([a.client, b.client], bk, "hot", clients=4, each=8,
                      paths=("put", "delete"))
    n = check_order(c, bk, "hot")
    assert n == 32, n
    log(f"{n} changes through two gateways, events in the key's order")


if __name__ == "__main__":
    from ceph_cluster import CephCluster
    require_daemon_on_rados()
    for h in HOOKS:
        h.start()
    with CephCluster(osds=1, store="memstore") as cl:
        rados_init(cl, PREFIX)
        first = gateway(cl, PREFIX, args=args_of(HOOKS[0]))
        GW[:] = [first, gateway(cl, PREFIX, keys=(first.ak, first.sk), args=args_of(HOOKS[1]))]
        try:
            why = objects_missing(first)
            if why:
                skip(why)
            run(first)  # exits
        finally:
            for g in GW:
                g.stop()
