#!/usr/bin/python3
"""test_rados_gateways.py - the daemon on a RADOS store (--rados-conf), two
gateways on one cluster (one monitor, one memstore OSD, started once for
the file by strata_harness.rados_cluster).

- start refusals, each with its one line and exit code: a monitor nobody
  listens on (1, bounded by the 10 s connect timeout), pools never
  initialised (1, names `strata rados init`), a conf file that does not
  exist (2), and options that would keep part of the namespace on local
  drives (2), while --replication-target is taken (its queue is in the
  cluster);
- two daemons on the same pools: a bucket created on one is listed and
  deleted on the other; a versioning change, a bucket policy and its
  removal, and CORS rules made through one take effect on the other at
  once, although the other had them cached for a second (the cache
  invalidation across gateways: without it these fail); a lifecycle
  configuration is read back through the other;
- objects: one written on one gateway (inline and striped) is read
  (whole and by range), listed and deleted on the other; a multipart
  upload's parts go to both and complete on either; 8 writers split
  across both race If-None-Match: * on one key and exactly one wins;
- a replaced version's data stays in the data pool, then goes within
  --orphan-grace-seconds (3 s, shorter than the 15 min reclaim grace);
- `strata admin info` on a gateway (no drives): the cluster's health as
  the monitors report it, the store's two pools, and, as this cluster
  runs no ceph-mgr, its space said to be not reported rather than 0; no
  heal (status "not applicable", start 501 NotImplemented);
- `strata audit verify --rados-conf`: ok on the chain the daemons wrote
  (an Object Lock configuration change), BROKEN once an entry is edited in
  the cluster with the rados CLI; the admin API's audit/verify (`strata
  admin audit verify`) on either gateway says the same of the same chain; `strata admin audit tail` on either
  gateway shows the entries written through both, in order.

Skipped (77) when the Ceph daemons are missing.
"""

import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import botocore.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import (Strata, expect_error, log, rados_cluster, rados_flags,  # noqa: E402
                            rados_init, run, test, wait_until)
from stored_data import data_objects  # noqa: E402

BIN = os.environ.get("STRATA_BIN", "")
PREFIX = "gw" + os.urandom(3).hex()
B = None  # the second gateway


def start_fails(args, timeout=60):
    """Run the daemon with args; it must exit (not serve).  (rc, output, s)."""
    t = time.monotonic()
    r = subprocess.run([BIN, "server", "--address", "127.0.0.1:1"] + args,
                       capture_output=True, text=True, timeout=timeout,
                       env={"PATH": "/usr/bin:/bin"})
    return r.returncode, r.stdout + r.stderr, time.monotonic() - t


@test
def refuses_unreachable_monitor(a):
    c = rados_cluster()
    bad = c.path("unreachable.conf")
    with open(c.conf) as f:
        lines = [ln for ln in f.read().splitlines() if not ln.strip().startswith("mon_host")]
    lines.insert(lines.index("[global]") + 1, "mon_host = [v2:127.0.0.1:9,v1:127.0.0.1:10]")
    with open(bad, "w") as f:
        f.write("\n".join(lines) + "\n")
    rc, out, took = start_fails(["--rados-conf", bad])
    log(f"unreachable monitor: exit {rc} after {took:.1f} s")
    assert rc == 1, (rc, out)
    assert (f"cannot open the RADOS store: cannot reach the Ceph cluster of {bad} as "
            "client.admin: ") in out, out
    assert "Strata S3 endpoint" not in out, out
    assert took < 25, took


@test
def refuses_missing_pools(a):
    rc, out, _ = start_fails(rados_flags("nopools"))
    assert rc == 1, (rc, out)
    assert ("cannot open the RADOS store: missing pool(s) nopools.meta, nopools.data: "
            "run strata rados init") in out, out


@test
def refuses_bad_conf(a):
    rc, out, _ = start_fails(["--rados-conf", "/nonexistent/ceph.conf"])
    assert rc == 2, (rc, out)
    assert ("cannot open the RADOS store: cannot read the Ceph configuration "
            "/nonexistent/ceph.conf: No such file or directory") in out, out
    rc, out, _ = start_fails(["--rados-conf", ""])
    assert rc == 2 and "--rados-conf must not be empty" in out, (rc, out)


@test
def refuses_local_storage_with_rados(a):
    f = rados_flags(PREFIX)
    cases = [
        (f + ["/tmp/never-used-drive{1...4}"],
         "--rados-conf cannot be combined with drives: objects and metadata are all in the "
         "cluster"),
        (f + ["--tier", "warm:/tmp/never-used-w{1...4}"],
         "--rados-conf cannot be combined with --tier NAME:DRIVES: tiers of a RADOS store are "
         "pools of its cluster (--tier NAME:rados:POOL) or remote S3 endpoints (NAME:s3:URL)"),
    ]
    for args, want in cases:
        rc, out, _ = start_fails(args)
        assert rc == 2 and want in out, (args, rc, out)
    assert not os.path.exists("/tmp/never-used-drive1")
    # Event and replication queues live in the cluster: those options are
    # taken (a replication target then needs its credentials, as on drives).
    rc, out, _ = start_fails(f + ["--replication-target", "r:http://127.0.0.1:9"])
    assert rc != 0 and "cannot be combined" not in out, (rc, out)
    assert "--replication-target needs --tier-credentials FILE" in out, out


@test
def bucket_created_on_one_is_listed_and_deleted_on_the_other(a):
    ca, cb = a.client(), B.client()
    name = a.bucket_name("two")
    ca.create_bucket(Bucket=name)
    assert name in [x["Name"] for x in cb.list_buckets()["Buckets"]]
    cb.head_bucket(Bucket=name)
    assert cb.list_objects_v2(Bucket=name)["KeyCount"] == 0
    cb.delete_bucket(Bucket=name)
    expect_error(lambda: ca.head_bucket(Bucket=name), "404", 404)
    assert name not in [x["Name"] for x in ca.list_buckets()["Buckets"]]


@test
def versioning_change_takes_effect_on_the_other_at_once(a):
    ca, cb = a.client(), B.client()
    name = a.bucket_name("ver")
    ca.create_bucket(Bucket=name)
    for _ in range(3):  # B's bucket record cache holds the old state now
        assert "Status" not in cb.get_bucket_versioning(Bucket=name)
    t = time.monotonic()
    ca.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    assert cb.get_bucket_versioning(Bucket=name)["Status"] == "Enabled"
    ca.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Suspended"})
    assert cb.get_bucket_versioning(Bucket=name)["Status"] == "Suspended"
    took = time.monotonic() - t
    log(f"two versioning changes seen by the other gateway within {took * 1000:.0f} ms")
    assert took < 1.0, took


def anonymous_list(srv, bucket):
    """Status of an unsigned ListObjects on srv."""
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"{srv.endpoint}/{bucket}?list-type=2", timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@test
def bucket_policy_change_takes_effect_on_the_other_at_once(a):
    ca = a.client()
    name = a.bucket_name("pol")
    ca.create_bucket(Bucket=name)
    ca.delete_public_access_block(Bucket=name)
    for _ in range(3):  # B caches "no policy"
        assert anonymous_list(B, name) == 403
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
        "Resource": f"arn:aws:s3:::{name}"}]}
    ca.put_bucket_policy(Bucket=name, Policy=json.dumps(policy))
    assert anonymous_list(B, name) == 200
    assert json.loads(B.client().get_bucket_policy(Bucket=name)["Policy"]) == policy
    ca.delete_bucket_policy(Bucket=name)
    assert anonymous_list(B, name) == 403
    expect_error(lambda: B.client().get_bucket_policy(Bucket=name), "NoSuchBucketPolicy", 404)


def preflight(srv, bucket):
    """(status, Access-Control-Allow-Origin) of a CORS preflight on srv."""
    req = urllib.request.Request(f"{srv.endpoint}/{bucket}/k", method="OPTIONS", headers={
        "Origin": "https://app.example.test", "Access-Control-Request-Method": "GET"})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                req, timeout=30) as r:
            return r.status, r.headers.get("Access-Control-Allow-Origin")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Access-Control-Allow-Origin")


@test
def cors_change_takes_effect_on_the_other_at_once(a):
    ca = a.client()
    name = a.bucket_name("cors")
    ca.create_bucket(Bucket=name)
    for _ in range(3):  # B's CORS document cache holds "no rules"
        assert preflight(B, name) == (403, None)
    ca.put_bucket_cors(Bucket=name, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": ["https://app.example.test"], "AllowedMethods": ["GET"]}]})
    assert preflight(B, name) == (200, "https://app.example.test")
    ca.delete_bucket_cors(Bucket=name)
    assert preflight(B, name) == (403, None)


@test
def lifecycle_change_takes_effect_on_the_other_at_once(a):
    ca, cb = a.client(), B.client()
    name = a.bucket_name("lc")
    ca.create_bucket(Bucket=name)
    expect_error(lambda: cb.get_bucket_lifecycle_configuration(Bucket=name),
                 "NoSuchLifecycleConfiguration", 404)
    rules = [{"ID": "old", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
              "Expiration": {"Days": 7}}]
    ca.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": rules})
    got = cb.get_bucket_lifecycle_configuration(Bucket=name)["Rules"]
    assert [r["ID"] for r in got] == ["old"] and got[0]["Expiration"]["Days"] == 7, got
    ca.delete_bucket_lifecycle(Bucket=name)
    expect_error(lambda: cb.get_bucket_lifecycle_configuration(Bucket=name),
                 "NoSuchLifecycleConfiguration", 404)


@test
def objects_written_on_one_are_read_listed_and_deleted_on_the_other(a):
    ca, cb = a.client(), B.client()
    name = a.bucket_name("obj")
    ca.create_bucket(Bucket=name)
    small, big = b"s" * 10, os.urandom(5 * 1024 * 1024 + 7)  # inline; striped data
    ca.put_object(Bucket=name, Key="small", Body=small)
    ca.put_object(Bucket=name, Key="big", Body=big)
    assert cb.get_object(Bucket=name, Key="small")["Body"].read() == small
    assert cb.get_object(Bucket=name, Key="big")["Body"].read() == big
    r = cb.get_object(Bucket=name, Key="big", Range="bytes=4194300-4194309")
    assert r["Body"].read() == big[4194300:4194310]
    assert [o["Key"] for o in cb.list_objects_v2(Bucket=name)["Contents"]] == ["big", "small"]
    cb.delete_object(Bucket=name, Key="big")
    expect_error(lambda: ca.head_object(Bucket=name, Key="big"), "404", 404)
    ca.delete_object(Bucket=name, Key="small")
    assert cb.list_objects_v2(Bucket=name)["KeyCount"] == 0
    cb.delete_bucket(Bucket=name)


def admin(srv, *args, rc=0):
    env = {"PATH": "/usr/bin:/bin", "HOME": srv.home, "STRATA_ENDPOINT": srv.endpoint,
           "STRATA_ACCESS_KEY": srv.ak, "STRATA_SECRET_KEY": srv.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    p = subprocess.run([BIN, "admin", *args], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == rc, (args, p.returncode, p.stdout, p.stderr)
    return p.stdout + p.stderr


@test
def admin_info_shows_the_cluster(a):
    health = rados_cluster().ceph("health", json_out=True)["status"]
    doc = json.loads(admin(a, "--json", "info"))
    assert doc["drives_total"] == 0 and doc["sets"] == [], doc
    st = doc["store"]
    assert st["backend"] == "rados" and st["health"] == health, (st, health)
    assert [(p["name"], p["role"]) for p in st["pools"]] == \
        [(PREFIX + ".meta", "meta"), (PREFIX + ".data", "data")], st
    # No ceph-mgr in this cluster: no usage figures, rather than zeros.
    assert st["usage_reported"] is False and "cluster" not in st, st
    assert all("bytes" not in p and "objects" not in p for p in st["pools"]), st
    out = admin(a, "info")
    assert f"store: rados cluster, health {health}" in out, out
    assert "not reported by the cluster (no ceph-mgr running)" in out, out
    for kind in ("meta", "data"):
        assert any(ln.split() == [kind, "-", "-", f"{PREFIX}.{kind}"] for ln in out.splitlines()), out
    # No heal to run: the cluster scrubs and recovers its own objects.
    h = json.loads(admin(a, "--json", "heal", "status"))
    assert h["state"] == "not applicable" and "scrubs and recovers" in h["reason"], h
    out = admin(a, "heal", "start", rc=1)
    assert "NotImplemented" in out and "scrubs and recovers" in out, out


@test
def replaced_data_reclaimed_after_the_orphan_grace(a):
    # A gateway of its own with --orphan-grace-seconds 3 (the reclaim
    # grace is 15 min, or that when shorter) and a gc pass every second.
    prefix = "rg" + os.urandom(3).hex()
    rados_init(prefix)
    g = Strata(args=rados_flags(prefix) + ["--ilm-interval-seconds", "1",
                                           "--orphan-grace-seconds", "3"], drives=[])
    try:
        c = g.client()
        name = g.bucket_name("grace")
        c.create_bucket(Bucket=name)
        c.put_object(Bucket=name, Key="k", Body=os.urandom(5 * 1024 * 1024))
        old = data_objects(g)
        assert len(old) == 2, old  # two 4 MiB stripes
        new_body = os.urandom(5 * 1024 * 1024)
        c.put_object(Bucket=name, Key="k", Body=new_body)
        both = data_objects(g)
        assert len(both) == 4 and set(old) < set(both), both  # kept for readers first
        left = wait_until("the replaced version's data reclaimed",
                          lambda: (lambda d: d if len(d) == 2 else None)(data_objects(g)), 30)
        assert set(left) == set(both) - set(old), (left, old)
        assert c.get_object(Bucket=name, Key="k")["Body"].read() == new_body
    finally:
        g.stop()


@test
def multipart_parts_on_both_complete_on_either(a):
    ca, cb = a.client(), B.client()
    name = a.bucket_name("mpu")
    ca.create_bucket(Bucket=name)
    p1, p2 = os.urandom(5 * 1024 * 1024), os.urandom(1000)
    for done_on in (cb, ca):
        up = ca.create_multipart_upload(Bucket=name, Key="m")["UploadId"]
        e1 = ca.upload_part(Bucket=name, Key="m", UploadId=up, PartNumber=1, Body=p1)["ETag"]
        e2 = cb.upload_part(Bucket=name, Key="m", UploadId=up, PartNumber=2, Body=p2)["ETag"]
        done_on.complete_multipart_upload(Bucket=name, Key="m", UploadId=up, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
        for cl in (ca, cb):
            r = cl.get_object(Bucket=name, Key="m")
            assert r["Body"].read() == p1 + p2
            assert r["ETag"].endswith('-2"'), r["ETag"]
    ca.delete_object(Bucket=name, Key="m")
    cb.delete_bucket(Bucket=name)


@test
def if_none_match_race_across_gateways_has_one_winner(a):
    ca = a.client()
    name = a.bucket_name("race")
    ca.create_bucket(Bucket=name)
    gws = [a, B]

    def put(i):
        cl = gws[i % 2].client()  # If-None-Match: * on every PutObject (signed)
        cl.meta.events.register("before-sign.s3.PutObject", lambda request, **kw:
                                request.headers.__setitem__("If-None-Match", "*"))
        try:
            cl.put_object(Bucket=name, Key="k", Body=b"writer %d" % i)
            return i
        except botocore.exceptions.ClientError as e:
            code = e.response["ResponseMetadata"]["HTTPStatusCode"]
            assert code in (409, 412), e.response
            return None

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        won = [i for i in ex.map(put, range(8)) if i is not None]
    assert len(won) == 1, won
    for g in gws:
        assert g.client().get_object(Bucket=name, Key="k")["Body"].read() == b"writer %d" % won[0]
    ca.delete_object(Bucket=name, Key="k")
    ca.delete_bucket(Bucket=name)


def audit_verify(*extra):
    c = rados_cluster()
    r = subprocess.run([BIN, "audit", "verify", "--rados-conf", c.conf, "--rados-id",
                        c.client_id, "--rados-pool-prefix", PREFIX, *extra],
                       capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    return r.returncode, r.stdout, r.stderr


def admin_verify(g, rc):
    """`strata admin audit verify` on gateway g: exit rc (0 ok, 4 broken),
    its text and the API's JSON (GET audit/verify: the cluster's chain)."""
    text = admin(g, "audit", "verify", rc=rc)
    return text, json.loads(admin(g, "--json", "audit", "verify", rc=rc))


@test
def audit_verify_in_the_cluster(a):
    ca, cb = a.client(), B.client()
    name = a.bucket_name("audit")
    ca.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    for cl, days in ((ca, 1), (cb, 2)):  # one entry through each gateway
        cl.put_object_lock_configuration(Bucket=name, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": days}}})
    got = cb.get_object_lock_configuration(Bucket=name)["ObjectLockConfiguration"]
    assert got["Rule"]["DefaultRetention"]["Days"] == 2, got
    rc, out, err = audit_verify()
    log(out.strip())
    assert rc == 0, (rc, out, err)
    assert out.startswith(f"{PREFIX}.meta: ok, ") and " entries, last seq " in out, out
    n = int(out.split("ok, ")[1].split(" ")[0])
    assert n >= 2, out
    last = int(out.split("last seq ")[1].split()[0])
    # The admin API checks the same chain, through either gateway.
    for g in (a, B):
        text, doc = admin_verify(g, 0)
        assert doc == {"ok": True, "sets": [], "chain": {
            "name": f"{PREFIX}.meta", "entries": n, "broken": False, "last_seq": last}}, doc
        assert text.splitlines() == [out.strip(), "audit log: ok"], text
    # Edit the first entry in the cluster: the chain no longer verifies.
    c = rados_cluster()
    pool, oid, key = f"{PREFIX}.meta", "audit.0", "e/" + "%016x" % 1
    path = c.path("entry1")
    c.rados("-p", pool, "getomapval", oid, key, path)
    with open(path, "rb") as f:
        line = f.read()
    assert b'"action":"PutObjectLockConfiguration"' in line, line
    forged = line.replace(b'"outcome":"allowed"', b'"outcome":"denied!"')
    assert forged != line and len(forged) == len(line)
    with open(path, "wb") as f:
        f.write(forged)
    c.rados("-p", pool, "setomapval", oid, key, "--input-file", path)
    rc, out, err = audit_verify()
    log(out.strip())
    assert rc == 1, (rc, out, err)
    assert out.startswith(f"{PREFIX}.meta: BROKEN at entry 0: "), out
    for g in (a, B):
        text, doc = admin_verify(g, 4)
        ch = doc["chain"]
        assert doc["ok"] is False and ch["broken"] is True and ch["broken_at"] == 0, doc
        want = f"{PREFIX}.meta: BROKEN at entry 0: {ch['reason']}"
        assert out.startswith(want), (out, doc)
        assert text.splitlines() == [want, "audit log: BROKEN"], text
    with open(path, "wb") as f:  # put it back: the chain verifies again
        f.write(line)
    c.rados("-p", pool, "setomapval", oid, key, "--input-file", path)
    rc, out, err = audit_verify()
    assert rc == 0 and f"ok, {n} entries" in out, (rc, out, err)
    assert admin_verify(B, 0)[1]["chain"]["entries"] == n
    rc, out, err = audit_verify("--rados-pool-prefix", "nopools")
    assert rc == 2 and out == "", (rc, out, err)
    assert err == ("strata audit verify: missing pool(s) nopools.meta, nopools.data: "
                   "run strata rados init\n"), err


@test
def admin_audit_tail_shows_every_gateways_entries(a):
    # Entries appended through both gateways are in the one chain in the
    # cluster: `strata admin audit tail` on either shows them, in order, as
    # `strata audit verify` counts them.
    ca, cb = a.client(), B.client()
    name = a.bucket_name("atail")
    ca.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    for cl, days in ((ca, 3), (cb, 4), (ca, 5)):
        cl.put_object_lock_configuration(Bucket=name, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": days}}})
    v = cb.put_object(Bucket=name, Key="held", Body=b"x")["VersionId"]
    expect_error(lambda: ca.delete_object(Bucket=name, Key="held", VersionId=v),
                 "AccessDenied", 403)
    rc, out, err = audit_verify()
    assert rc == 0, (rc, out, err)
    last = int(out.split("last seq ")[1].split()[0])
    docs = [json.loads(admin(g, "--json", "audit", "tail", "4")) for g in (a, B)]
    assert docs[0] == docs[1], docs  # one chain, whichever gateway answers
    doc = docs[0]
    assert doc["drive"] == f"{PREFIX}.meta", doc
    es = doc["entries"]
    assert [e["seq"] for e in es] == list(range(last - 3, last + 1)), es
    for e, days in zip(es[:3], (3, 4, 5)):
        assert e["action"] == "PutObjectLockConfiguration" and e["bucket"] == name, e
        assert e["outcome"] == "allowed" and f"days={days}" in e.get("detail", ""), e
    assert es[3]["action"] == "DeleteObject" and es[3]["outcome"] == "denied", es[3]
    assert es[3]["key"] == "held" and es[3]["version_id"] == v, es[3]
    for prev, e in zip(es, es[1:]):  # chained: each names the hash before it
        assert e["prev"] == prev["hash"], (prev, e)
    one = json.loads(admin(B, "--json", "audit", "tail", "1"))["entries"]
    assert one == es[3:], one
    text = admin(a, "audit", "tail", "2")
    rows = text.splitlines()
    assert rows[0].split()[:2] == ["TIME", "SEQ"] and len(rows) == 3, text
    assert rows[1].split()[1] == str(last - 1) and "PutObjectLockConfiguration" in rows[1], text
    assert rows[2].split()[1] == str(last) and f"{name}/held" in rows[2], text


LIBFAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))), "")


@test
def gateway_with_clock_ahead_takes_the_running_gateways_clock(a):
    # C's wall clock is 10 minutes ahead (libfaketime; monotonic and boot
    # clocks untouched).  A and B run: C asks them ("clock?" on ctl) and
    # starts its retention clock from theirs, and audits the difference.
    assert LIBFAKETIME, "libfaketime not installed (Debian package faketime)"
    env = {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": "+10m", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    if "asan" in BIN:  # the preloaded library comes before ASan's runtime
        opts = os.environ.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "verify_asan_link_order=0"
    c = Strata(args=rados_flags(PREFIX), drives=[], keys=(a.ak, a.sk), extra_env=env)
    try:
        c.client().list_buckets()
        with open(c.log_path) as f:
            text = f.read()
        assert "differs from the lock clock of the gateways running on the store" in text, text
        line = [ln for ln in text.splitlines() if "ClockJump" in ln][0]
        log(line)
        off = float(line.split("wall - lock = ")[1].split(" s)")[0])
        assert 590 < off < 610, line  # lock clock = the others' (real time), wall = +10 min
        rc, out, err = audit_verify()
        assert rc == 0, (rc, out, err)
    finally:
        assert c.stop()


def main():
    global B
    if not BIN or not os.path.exists(BIN):
        log("SKIP: STRATA_BIN not set")
        sys.exit(77)
    rados_init(PREFIX)
    a = Strata(args=rados_flags(PREFIX), drives=[])
    B = Strata(args=rados_flags(PREFIX), drives=[], keys=(a.ak, a.sk))
    try:
        run(a)  # exits
    finally:
        B.stop()


if __name__ == "__main__":
    main()
