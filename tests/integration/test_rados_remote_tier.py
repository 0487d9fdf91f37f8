#!/usr/bin/python3
"""test_rados_remote_tier.py - a remote S3 tier of a RADOS-backed daemon:
the gateway on a one-OSD memstore cluster with --tier cold:s3:URL and
--tier vault:s3,lock:URL, the remote a second strata on local drives
(the vault bucket with Object Lock; --lc-day-seconds 1, a scanner pass
every second, a reclaim grace of 1 s, a lease of 5 s).

Checked: lifecycle transitions of a single-part, a multipart and a small
object to the remote (HEAD, GET and the listing say STANDARD_IA; GET
returns the same bytes, ranges across the read-ahead window, the part
boundary and the tail too; the remote bucket holds one object per data
object, byte for byte; the hot pool's stripes of the old copies are
reclaimed after the grace); a second gateway on the same pools reads the
moved objects and deletes one, which removes its remote object (every
record and reclaim entry of the tier is in the cluster); deletes through
the first reclaim the others; writes naming the remote class refused
(InvalidStorageClass); a version under Object Lock never moving to the
tier without lock (counted in lock_refused); to the lock tier, versions
under retention and legal hold moving locked alike on the remote; a
retention extension and a legal hold (through a second gateway) made
after the move reaching the remote object through the cluster's queue,
also a change pending across a kill -9 of the gateway while the remote is
down; the gateway killed (exit 137, as kill -9) at the copy, verify and
switch steps of a transition: after a restart the object is listed once,
its bytes intact, on the tier, with exactly one remote copy and nothing
left in the hot pool; start-up refusals on RADOS: a tier of local drives
and a remote without credentials.  The restore flag: test_rados_restore.py.

Skipped (77) when the Ceph daemons are missing.
"""

import datetime
import json
import os
import re
import subprocess
import sys
import time

from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rados_gw import flags, gateway, launch, rados_init, require_daemon_on_rados  # noqa: E402
from remote_tier_common import (MiB, body, bucket_keys, class_writes_refused,  # noqa: E402
                                lifecycle, lock_bucket, lock_change_survives_a_kill,
                                locked_pair, md5, metric, mpu, remote_info,
                                storage_class)
from strata_harness import Strata, expect_error, log, run, test, wait_until  # noqa: E402

BIN = os.environ.get("STRATA_BIN", "")
PREFIX = "rr" + os.urandom(3).hex()
HOT = PREFIX + ".data"
DATA_PREFIX = "strata-data"
CLUSTER = R = COLD = VAULT = CREDS = None


def pool_objects(pool):
    out = CLUSTER.rados("-p", pool, "ls").stdout
    out = out.decode() if isinstance(out, bytes) else out
    return set(ln.strip() for ln in out.splitlines() if ln.strip())


def remote_keys():
    return set(bucket_keys(R.client(), COLD))


def tier_args():
    """Flags of every gateway of the file: the tiers, and a 5 s lease, so
    a gateway started again after a kill takes the cluster's work over
    about 5 s later instead of the default 15."""
    return ["--lease-seconds", "5",
            "--tier", f"cold:s3:{R.endpoint}/{COLD}/{DATA_PREFIX}",
            "--tier", f"vault:s3,lock:{R.endpoint}/{VAULT}/{DATA_PREFIX}",
            "--tier-credentials", CREDS,
            "--storage-class", "STANDARD_IA:cold", "--storage-class", "GLACIER:vault"]


@test
def transition_and_transparent_reads(s):
    c = s.client()
    b = s.bucket_name("move")
    c.create_bucket(Bucket=b)
    hot0, remote0 = pool_objects(HOT), remote_keys()
    single = body(5 * MiB + 123, b + "s")
    parts = [body(5 * MiB, b + "p1"), body(2 * MiB + 7, b + "p2")]
    small = body(300 * 1024, b + "small")
    etag1 = c.put_object(Bucket=b, Key="single", Body=single, ContentType="application/x-test",
                         Metadata={"owner": "tests"})["ETag"]
    etag2 = mpu(c, b, "multi", parts)
    c.put_object(Bucket=b, Key="small", Body=small)
    objs = {"single": single, "multi": b"".join(parts), "small": small}
    hot_new = pool_objects(HOT) - hot0
    assert len(hot_new) == 2 + 2 + 1 + 1, sorted(hot_new)  # 4 MiB stripes
    puts = metric(s, 'strata_remote_tier_puts_total{tier="cold"}')
    lifecycle(c, b, "STANDARD_IA")
    for k in objs:
        wait_until(f"{k} moved to the remote tier",
                   lambda k=k: storage_class(c, b, k) == "STANDARD_IA", 60)
    for k, data in objs.items():
        g = c.get_object(Bucket=b, Key=k)
        assert g["StorageClass"] == "STANDARD_IA", g
        assert md5(g["Body"].read()) == md5(data), f"{k}: bytes differ after the transition"
    for k in ("single", "multi"):
        data = objs[k]
        for lo, hi in ((0, 0), (10, 5000), (4 * MiB - 100, 4 * MiB + 100),
                       (len(data) - 17, len(data) - 1), (5 * MiB - 3, 5 * MiB + 3)):
            g = c.get_object(Bucket=b, Key=k, Range=f"bytes={lo}-{hi}")
            assert g["ContentRange"] == f"bytes {lo}-{hi}/{len(data)}", g["ContentRange"]
            assert g["Body"].read() == data[lo:hi + 1], f"{k} bytes {lo}-{hi} differ"
    h = c.head_object(Bucket=b, Key="single")
    assert h["ETag"] == etag1 and h["ContentLength"] == len(single), h
    assert h["ContentType"] == "application/x-test" and h["Metadata"] == {"owner": "tests"}, h
    assert c.head_object(Bucket=b, Key="multi")["ETag"] == etag2
    listed = {o["Key"]: o["StorageClass"] for o in c.list_objects_v2(Bucket=b)["Contents"]}
    assert listed == {k: "STANDARD_IA" for k in objs}, listed
    # One remote object per data object (single, 2 parts, small), byte for byte.
    new = sorted(remote_keys() - remote0)
    assert len(new) == 4, new
    assert all(re.fullmatch(DATA_PREFIX + "/[0-9a-f]{32}", k) for k in new), new
    rc = R.client()
    by_sum = {md5(rc.get_object(Bucket=COLD, Key=k)["Body"].read()): k for k in new}
    assert set(by_sum) == {md5(single), md5(parts[0]), md5(parts[1]), md5(small)}, \
        "remote bytes differ"
    assert metric(s, 'strata_remote_tier_puts_total{tier="cold"}') >= puts + 4
    info = remote_info(s, "cold")
    assert info["last_success_ms"] > 0 and info["url"].endswith(f"/{COLD}/{DATA_PREFIX}"), info
    # The hot copies are reclaimed from the pool after the grace.
    wait_until("the hot copies reclaimed", lambda: not (pool_objects(HOT) & hot_new), 30)
    # Another gateway on the same pools: it reads the moved objects from the
    # remote, and its delete removes the remote copy (the reclaim entry is
    # in the cluster; whichever gateway holds the gc lease runs it).
    g2 = gateway(CLUSTER, PREFIX, keys=(s.ak, s.sk),
                 args=tier_args() + ["--orphan-grace-seconds", "1"])
    try:
        c2 = g2.client()
        assert storage_class(c2, b, "single") == "STANDARD_IA"
        got = c2.get_object(Bucket=b, Key="multi", Range=f"bytes={5 * MiB - 3}-{5 * MiB + 3}")
        assert got["Body"].read() == objs["multi"][5 * MiB - 3:5 * MiB + 4]
        assert md5(c2.get_object(Bucket=b, Key="single")["Body"].read()) == md5(single)
        c2.delete_object(Bucket=b, Key="small")
        expect_error(lambda: c.get_object(Bucket=b, Key="small"), "NoSuchKey", 404)
        wait_until("the remote copy deleted with the object",
                   lambda: by_sum[md5(small)] not in remote_keys(), 30)
    finally:
        g2.stop()
    for k in ("single", "multi"):
        c.delete_object(Bucket=b, Key=k)
    wait_until("every remote copy deleted with its object",
               lambda: not (remote_keys() & set(new)), 30)
    assert pool_objects(HOT) == hot0
    c.delete_bucket(Bucket=b)


@test
def writes_never_name_the_remote_class(s):
    c = s.client()
    b = s.bucket_name("direct")
    c.create_bucket(Bucket=b)
    before = remote_keys()
    class_writes_refused(c, b, "STANDARD_IA")
    c.put_object(Bucket=b, Key="k", Body=b"y" * 70000)
    assert storage_class(c, b, "k") == "STANDARD"
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"y" * 70000
    assert remote_keys() == before
    c.delete_object(Bucket=b, Key="k")
    c.delete_bucket(Bucket=b)


@test
def locked_versions_stay(s):
    # The tier has no lock flag: a version under Object Lock never moves.
    c, b, until, data, cmd5 = lock_bucket(s, "lock")
    c.put_object(Bucket=b, Key="retained", Body=data, ContentMD5=cmd5,
                 ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)
    c.put_object(Bucket=b, Key="free", Body=data, ContentMD5=cmd5)
    refused = metric(s, 'strata_remote_tier_lock_refused_total{tier="cold"}')
    before = remote_keys()
    lifecycle(c, b, "STANDARD_IA")
    wait_until("the unlocked version moved", lambda: storage_class(c, b, "free") == "STANDARD_IA",
               60)
    wait_until("the locked version refused",
               lambda: metric(s, 'strata_remote_tier_lock_refused_total{tier="cold"}')
               >= refused + 1, 60)
    assert storage_class(c, b, "retained") == "STANDARD"
    assert md5(c.get_object(Bucket=b, Key="retained")["Body"].read()) == md5(data)
    assert len(remote_keys() - before) == 1


def vault_keys():
    return set(bucket_keys(R.client(), VAULT))


def remote_lock(rk):
    h = R.client().head_object(Bucket=VAULT, Key=rk)
    return (h.get("ObjectLockMode"), h.get("ObjectLockRetainUntilDate"),
            h.get("ObjectLockLegalHoldStatus"))


@test
def locked_versions_move_to_the_lock_tier(s):
    # The vault tier keeps Object Lock: a version under retention and one
    # under legal hold move, and their remote objects are locked alike.
    c, b, until, data, v_ret, v_hold = locked_pair(s, "vlock")
    before = vault_keys()
    lifecycle(c, b, "GLACIER")
    for k, vid in (("retained", v_ret), ("held", v_hold)):
        wait_until(f"{k} moved to the lock tier",
                   lambda k=k, vid=vid: storage_class(c, b, k, vid) == "GLACIER", 60)
        assert md5(c.get_object(Bucket=b, Key=k)["Body"].read()) == md5(data)
    new = vault_keys() - before
    assert len(new) == 2, new
    by_mode = {remote_lock(k)[0]: (remote_lock(k), k) for k in new}
    assert set(by_mode) == {"COMPLIANCE", None}, by_mode
    ret, k_ret = by_mode["COMPLIANCE"]
    hold, k_hold = by_mode[None]
    assert ret[:2] == ("COMPLIANCE", until) and ret[2] in (None, "OFF"), ret
    assert hold == (None, None, "ON"), hold
    rc = R.client()
    for k in (k_ret, k_hold):
        rvid = rc.head_object(Bucket=VAULT, Key=k)["VersionId"]
        expect_error(lambda k=k, rvid=rvid: rc.delete_object(Bucket=VAULT, Key=k, VersionId=rvid),
                     "AccessDenied", 403)
    expect_error(lambda: c.delete_object(Bucket=b, Key="retained", VersionId=v_ret),
                 "AccessDenied", 403)
    assert remote_info(s, "vault")["lock"] is True


@test
def lock_changes_reach_the_remote(s):
    """A retention extended (through this gateway) and a legal hold set
    (through a second one) after the move reach the remote object through
    the cluster's queue; with the remote down the change is applied
    locally, stays queued in the cluster across a kill -9 of the gateway,
    and reaches the remote once both are back."""
    c, b, until, data, cmd5 = lock_bucket(s, "vext")
    now = until - datetime.timedelta(days=2)
    before = vault_keys()
    vid = c.put_object(Bucket=b, Key="k", Body=data, ContentMD5=cmd5,
                       ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    lifecycle(c, b, "GLACIER")
    wait_until("moved to the lock tier", lambda: storage_class(c, b, "k", vid) == "GLACIER", 60)
    new = vault_keys() - before
    assert len(new) == 1, new
    rk = new.pop()
    assert remote_lock(rk)[:2] == ("GOVERNANCE", until), remote_lock(rk)
    applied = metric(s, "strata_remote_tier_lock_updates_applied_total")
    later = now + datetime.timedelta(days=5)
    c.put_object_retention(Bucket=b, Key="k", VersionId=vid, Retention={
        "Mode": "COMPLIANCE", "RetainUntilDate": later})
    wait_until("the extension on the remote",
               lambda: remote_lock(rk)[:2] == ("COMPLIANCE", later), 60)
    g2 = gateway(CLUSTER, PREFIX, keys=(s.ak, s.sk), args=tier_args())
    try:
        g2.client().put_object_legal_hold(Bucket=b, Key="k", VersionId=vid,
                                          LegalHold={"Status": "ON"})
        wait_until("the legal hold set through the other gateway on the remote",
                   lambda: remote_lock(rk)[2] == "ON", 60)
    finally:
        g2.stop()
    assert metric(s, "strata_remote_tier_lock_updates_applied_total") >= applied + 1
    rc = R.client()
    rvid = rc.head_object(Bucket=VAULT, Key=rk)["VersionId"]
    expect_error(lambda: rc.delete_object(Bucket=VAULT, Key=rk, VersionId=rvid,
                                          BypassGovernanceRetention=True), "AccessDenied", 403)
    # Nothing of the queue is on the gateway: the change stays in the
    # cluster across the kill.
    lock_change_survives_a_kill(s, R, c, b, vid, now + datetime.timedelta(days=9),
                                lambda: remote_lock(rk))


def crash_run(s, step):
    """The gateway dies (_exit 137, as kill -9) when a transition to the
    remote reaches step, and is started again without the hook."""
    s.proc.terminate()
    assert s.proc.wait(30) == 0
    launch(s, step)
    c = s.client()
    b = s.bucket_name(f"crash{step}")
    c.create_bucket(Bucket=b)
    hot0, remote0 = pool_objects(HOT), remote_keys()
    data = body(5 * MiB + step, b)
    c.put_object(Bucket=b, Key="k", Body=data)
    hot_new = pool_objects(HOT) - hot0
    try:
        lifecycle(c, b, "STANDARD_IA")
    except (ConnectionClosedError, EndpointConnectionError):
        pass  # the transition reached the step and the daemon died before the answer
    rc = s.proc.wait(60)
    assert rc == 137, f"the gateway exited with {rc}, not at transition step {step}"
    launch(s, 0)
    c = s.client()
    wait_until(f"the transition done after the kill at step {step}",
               lambda: storage_class(c, b, "k") == "STANDARD_IA", 90)
    assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data), "bytes changed"
    assert [v["Key"] for v in c.list_object_versions(Bucket=b).get("Versions", [])] == ["k"]
    wait_until("one remote copy, none in the hot pool",
               lambda: len(remote_keys() - remote0) == 1 and not (pool_objects(HOT) & hot_new),
               30)
    c.delete_object(Bucket=b, Key="k")
    wait_until("the remote copy deleted", lambda: remote_keys() == remote0, 30)
    c.delete_bucket(Bucket=b)


@test
def kill_at_copy(s):
    crash_run(s, 3)  # the remote holds a copy no record names


@test
def kill_at_verify(s):
    crash_run(s, 4)


@test
def kill_at_switch(s):
    crash_run(s, 5)  # the record names the remote copy; the hot one is left over


@test
def start_refusals(s):
    f = flags(CLUSTER, PREFIX)
    env = {"PATH": "/usr/bin:/bin"}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    cases = [
        (["--tier", "warm:/tmp/never-used-w{1...4}"], 2,
         "--rados-conf cannot be combined with --tier NAME:DRIVES: tiers of a RADOS store are "
         "pools of its cluster (--tier NAME:rados:POOL) or remote S3 endpoints (NAME:s3:URL)"),
        (["--tier", f"cold:s3:{R.endpoint}/{COLD}"], 1,
         "tier cold: no credentials: give --tier-credentials FILE"),
    ]
    for args, want_rc, want in cases:
        r = subprocess.run([BIN, "server", "--address", "127.0.0.1:1"] + f + args,
                           capture_output=True, text=True, timeout=60, env=env)
        out = r.stdout + r.stderr
        assert r.returncode == want_rc and want in out, (args, r.returncode, out)
        assert "Strata S3 endpoint" not in out, out


def main():
    global CLUSTER, R, COLD, VAULT, CREDS
    require_daemon_on_rados()
    from ceph_cluster import CephCluster
    t0 = time.monotonic()
    R = Strata()  # the remote: a strata on local drives
    try:
        COLD = R.bucket_name("cold")
        R.client().create_bucket(Bucket=COLD)
        VAULT = R.bucket_name("vault")
        R.client().create_bucket(Bucket=VAULT, ObjectLockEnabledForBucket=True)
        CREDS = os.path.join(R.tmp, "tiers.json")
        with open(os.open(CREDS, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            json.dump({t: {"access_key": R.ak, "secret_key": R.sk} for t in ("cold", "vault")},
                      f)
        with CephCluster(osds=1, store="memstore") as c:
            CLUSTER = c
            rados_init(c, PREFIX)
            log(f"cluster and pools ready in {time.monotonic() - t0:.1f} s; remote {R.endpoint}")
            s = gateway(c, PREFIX, args=tier_args() + [
                "--lc-day-seconds", "1", "--ilm-interval-seconds", "1",
                "--orphan-grace-seconds", "1", "--ilm-move-mbps", "0", "--metrics-public"])
            try:
                run(s)  # exits
            finally:
                s.stop()
    finally:
        R.stop()


if __name__ == "__main__":
    main()
