#!/usr/bin/python3
"""test_rados_rgw_two_gateways.py - one key changed through two Strata
gateways on one RADOS cluster at once, replicated to Ceph's radosgw (which
keeps no source version ids: whatever arrives last is its latest).

Gateway A queues each change STRATA_DEBUG_REPL_QUEUE_DELAY_MS after it
committed (a slow gateway), so B's later changes of the key reach the
shared queue first.  Checked: radosgw's history of the key (versions and
delete markers, newest first; a version sent again whole after a tag
change counted once) is the source index's, its latest version has the
source's bytes and tags, every source version COMPLETED; also with
radosgw paused and gateway A killed (-9) with the changes queued.

Skipped (77) when the Ceph daemons, radosgw or a daemon built with RADOS
are missing.
"""

import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import key_writers  # noqa: E402
from rados_gw import (flags, metric_at, rados_init, require_daemon_on_rados,  # noqa: E402
                      rgw_client, skip)
from strata_harness import Strata, log, run, test, wait_until  # noqa: E402

ROLE = "arn:aws:iam::123456789012:role/strata-replication"
PREFIX = "rgw2gw"
DELAY_MS = 150  # gateway A's commit-to-queue delay
RGW = None  # (endpoint, access key, secret key)
RGW_PID = None
A = B = None


def rgw():
    return rgw_client(*RGW)


def metric(gw, name):
    return metric_at(gw.endpoint, name)


def pair(prefix):
    """A source bucket (made through A) and a radosgw bucket, both
    versioned, and a rule replicating everything, delete markers too."""
    s, r = A.client(), rgw()
    sb, rb = A.bucket_name(prefix + "s"), A.bucket_name(prefix + "r")
    for c, b in ((s, sb), (r, rb)):
        c.create_bucket(Bucket=b)
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    rl = {"ID": "r1", "Priority": 1, "Status": "Enabled", "Filter": {},
          "DeleteMarkerReplication": {"Status": "Enabled"},
          "Destination": {"Bucket": f"arn:aws:s3:::{rb}", "Account": "rgw"}}
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={"Role": ROLE, "Rules": [rl]})
    return s, r, sb, rb


def collapsed(hist):
    """A history (newest first) as radosgw keeps it apart from repeats: a
    run of delete markers is one (radosgw makes none over a marker), a
    version sent again right after itself (a tag change sent whole) once."""
    out = []
    for _, etag in hist:
        e = etag or "marker"
        if not out or out[-1] != e:
            out.append(e)
    return out


def converged(s, r, sb, rb, k):
    """Once both gateways have nothing pending: every source version
    COMPLETED, radosgw's history of k the source's, its latest the
    source's bytes and tags.  The source's history."""
    for gw in (A, B):
        wait_until("nothing pending", lambda: metric(gw, "strata_replication_pending") == 0, 180)
    src = key_writers.history(s, sb, k)

    def all_completed():
        return all(s.head_object(Bucket=sb, Key=k, VersionId=vid).get("ReplicationStatus")
                   == "COMPLETED" for vid, etag in src if etag)
    wait_until("every source version COMPLETED", all_completed, 60)
    want = collapsed(src)
    got = []

    def same():
        got[:] = collapsed(key_writers.history(r, rb, k))
        return got == want
    try:
        wait_until("radosgw's history", same, 30)
    except AssertionError:
        raise AssertionError("radosgw's history (newest first) against the source's: " + " ".join(
            str(want.index(e)) if e in want and e != "marker" else e for e in got)
            + f" ({len(got)} against {len(want)})")
    if src[0][1]:  # the latest a version: its bytes and tags there
        assert r.get_object(Bucket=rb, Key=k)["Body"].read() == \
            s.get_object(Bucket=sb, Key=k)["Body"].read()
        assert r.get_object_tagging(Bucket=rb, Key=k)["TagSet"] == \
            s.get_object_tagging(Bucket=sb, Key=k)["TagSet"]
    return src


@test
def changes_through_two_gateways_arrive_in_index_order(_):
    """8 clients, half through each gateway, PUT, copy, tag and delete
    one key at once: radosgw's history is the source's, in index order."""
    s, r, sb, rb = pair("mixed")
    key_writers.sources(s, sb, "hot", clients=8, each=10)
    key_writers.burst([A.client, B.client], sb, "hot", clients=8, each=10,
                      paths=("put", "tag", "copy", "delete", "put"))
    src = converged(s, r, sb, rb, "hot")
    assert len(src) >= 60, len(src)
    ahead = metric(A, "strata_replication_sent_ahead_total") + \
        metric(B, "strata_replication_sent_ahead_total")
    log(f"{len(src)} versions and markers; {ahead:.0f} sent ahead of their own message")


@test
def kill9_of_a_gateway_keeps_key_order(_):
    """radosgw paused while both gateways change one key; gateway A is
    killed (-9) with the changes queued and in flight, then radosgw
    resumed and A restarted: radosgw still ends with the source's history
    and latest."""
    s, r, sb, rb = pair("kill")

    def resume():
        os.kill(RGW_PID, signal.SIGCONT)

    os.kill(RGW_PID, signal.SIGSTOP)
    try:
        key_writers.burst([A.client, B.client], sb, "hot", clients=6, each=8,
                          paths=("put", "tag", "put", "delete"))
        time.sleep(1)  # the lease holder has some in flight
    finally:
        A.restart(kill=True, between=resume)
    converged(A.client(), r, sb, rb, "hot")


def main():
    global RGW, RGW_PID, A, B
    require_daemon_on_rados()
    for tool in ("radosgw", "radosgw-admin"):
        if not __import__("shutil").which(tool):
            skip(f"{tool} not installed (deploy/install-deps.sh)")
    from ceph_cluster import CephCluster
    t0 = time.monotonic()
    with CephCluster(osds=1, store="memstore", rgw=True) as cl:
        ak, sk = cl.rgw_user("strata")
        RGW = (cl.rgw_endpoint, ak, sk)
        RGW_PID = cl.pids["client.rgw.a"]
        log(f"cluster and radosgw ready in {time.monotonic() - t0:.1f} s")
        rados_init(cl, PREFIX)
        tmp = tempfile.mkdtemp(prefix="rgw2gw-", dir=os.environ.get("STRATA_TEST_TMPDIR"))
        creds = os.path.join(tmp, "remote-creds.json")
        with open(os.open(creds, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump({"rgw": {"access_key": ak, "secret_key": sk}}, f)
        args = flags(cl, PREFIX) + ["--metrics-public", "--tier-credentials", creds,
                                    "--replication-target", f"rgw:{cl.rgw_endpoint}"]
        A = Strata(args=args, drives=[],
                   extra_env={"STRATA_DEBUG_REPL_QUEUE_DELAY_MS": str(DELAY_MS)})
        B = Strata(args=args, drives=[], keys=(A.ak, A.sk))
        try:
            run(A)  # exits
        finally:
            A.stop()
            B.stop()


if __name__ == "__main__":
    main()
