#!/usr/bin/python3
"""test_rados_reclaim.py - data whose commit never happened, a complete
cut short, and once-per-cluster background work, with gateways killed -9
on one Ceph cluster (one monitor, one memstore OSD, started once for the
file; every gateway on the same pools):

- a PUT (64 MiB body, 24 MiB sent) and an UploadPart (16 MiB, 12 MiB
  sent) through a gateway killed -9 before their commits: their stripes
  stay in the data pool until the gc grace (--orphan-grace-seconds) has
  passed, never fewer before it, and the gc pass of another gateway
  removes them after it (the data pool back to its count before the
  writes); the live object written earlier reads back whole; the killed
  key is absent and the upload has no part;
- a gateway killed -9 at several moments of a CompleteMultipartUpload
  (3 parts: 5 + 5 + 1 MiB): through another gateway the object is either
  whole (bytes, the "-3" ETag, the upload gone) or absent with the upload
  still listed with its 3 parts and completable to the same bytes and
  ETag; never half visible;
- the gateway holding the `ilm` lease killed -9 while objects of a
  bucket with a lifecycle expiration are not yet due: the other gateway
  takes the lease within 30 s of the kill (its log says so) and the
  expirations happen (404) within 30 s of the kill as well; with
  `--lease-seconds 5` both within 12 s (and not before the lease lapsed).

Skips (77) as test_rados_two_gateways.py does, with rados_gw.py's printed
reasons.
"""

import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rados_gw import gateway, kill9, rados_init, require_daemon_on_rados, start_put  # noqa: E402
from strata_harness import expect_error, log, run, test, wait_until  # noqa: E402

MiB = 1 << 20
PREFIX = "tr" + os.urandom(3).hex()
GRACE = 10  # --orphan-grace-seconds of the gateway that runs the gc pass
LC_DAY = 4  # --lc-day-seconds: Expiration Days=1 falls due within 2 days
CLUSTER = None


def body(tag, size):
    return hashlib.sha256(tag.encode()).digest() * (size // 32)


def data_objects():
    return len(CLUSTER.rados("-p", f"{PREFIX}.data", "ls").stdout.split())


def gw(keys=None, args=()):
    return gateway(CLUSTER, PREFIX, keys=keys, args=args)


@test
def killed_writes_are_reclaimed_after_the_grace_and_not_before(first):
    g = gw(keys=(first.ak, first.sk),
           args=["--ilm-interval-seconds", "1", "--orphan-grace-seconds", str(GRACE)])
    k = gw(keys=(first.ak, first.sk), args=["--ilm-interval-seconds", "0"])
    try:
        cg = g.client()
        bucket = first.bucket_name("gc")
        cg.create_bucket(Bucket=bucket)
        live = body("live", 6 * MiB)
        cg.put_object(Bucket=bucket, Key="live", Body=live)
        uid = cg.create_multipart_upload(Bucket=bucket, Key="part")["UploadId"]
        before = data_objects()
        t_send = time.monotonic()
        conns = [start_put(k, bucket, "part", body("p", 16 * MiB), 12 * MiB,
                           query=f"partNumber=1&uploadId={uid}")]
        wait_until("the part's stripes", lambda: data_objects() > before, timeout=10)
        mid = data_objects()
        conns.append(start_put(k, bucket, "put", body("n", 64 * MiB), 24 * MiB))
        wait_until("the PUT's stripes", lambda: data_objects() > mid, timeout=10)
        time.sleep(0.5)  # the stripes received are written
        kill9(k)
        t_kill = time.monotonic()
        for conn in conns:
            conn.close()
        after = data_objects()
        log(f"data objects: {before} before, {mid} with the part's stripes, {after} at the kill")
        assert after > mid > before, (before, mid, after)
        # Before the grace (the w/ entries are younger than it): nothing goes.
        checks = 0
        while time.monotonic() < t_send + GRACE - 0.5:
            assert data_objects() == after, "data reclaimed before the grace"
            checks += 1
            time.sleep(0.5)
        assert checks >= 2, checks
        # After it: the next gc pass (every GRACE / 2 s) takes them.
        wait_until("the killed writes' stripes reclaimed", lambda: data_objects() == before,
                   timeout=GRACE + 20)
        log(f"reclaimed {time.monotonic() - t_kill:.1f} s after the kill "
            f"(grace {GRACE} s from the first byte, {checks} checks before it)")
        assert data_objects() == before
        assert cg.get_object(Bucket=bucket, Key="live")["Body"].read() == live
        expect_error(lambda: cg.head_object(Bucket=bucket, Key="put"), "404", 404)
        assert cg.list_parts(Bucket=bucket, Key="part", UploadId=uid).get("Parts", []) == []
        cg.abort_multipart_upload(Bucket=bucket, Key="part", UploadId=uid)
    finally:
        kill9(k)
        g.stop()


def upload_parts(c, bucket, key):
    """An upload of 3 parts (5, 5, 1 MiB): (upload id, parts, bytes, ETag)."""
    uid = c.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    datas = [body(f"{key}.{i}", n * MiB) for i, n in enumerate((5, 5, 1))]
    parts = []
    for i, d in enumerate(datas):
        e = c.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=i + 1, Body=d)["ETag"]
        parts.append({"PartNumber": i + 1, "ETag": e})
    digest = hashlib.md5(b"".join(hashlib.md5(d).digest() for d in datas)).hexdigest()
    return uid, parts, b"".join(datas), f'"{digest}-3"'


def complete_xml(parts):
    return ("<CompleteMultipartUpload>" + "".join(
        f"<Part><PartNumber>{p['PartNumber']}</PartNumber><ETag>{p['ETag']}</ETag></Part>"
        for p in parts) + "</CompleteMultipartUpload>").encode()


@test
def gateway_killed_mid_complete_leaves_it_whole_or_completable(first):
    ca = first.client()
    bucket = first.bucket_name("cmp")
    ca.create_bucket(Bucket=bucket)
    outcomes = []
    # The kill lands these many seconds after the whole request was sent.
    for rnd, delay in enumerate((0.0, 0.001, 0.003, 0.008, 0.3)):
        key = f"obj{rnd}"
        uid, parts, data, etag = upload_parts(ca, bucket, key)
        k = gw(keys=(first.ak, first.sk), args=["--ilm-interval-seconds", "0"])
        xml = complete_xml(parts)
        conn = start_put(k, bucket, key, xml, len(xml), query=f"uploadId={uid}", method="POST")
        time.sleep(delay)
        kill9(k)
        try:
            resp = conn.getresponse()
            payload = resp.read()
            acked = resp.status == 200 and b"<ETag>" in payload  # a 200 may carry an error
            seen = f"{resp.status}"
        except Exception as e:  # the kill cut the connection (reset, no status line)
            seen, acked = type(e).__name__, False
        conn.close()
        uploads = [u["UploadId"] for u in ca.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]
        try:
            h = ca.head_object(Bucket=bucket, Key=key)
        except ca.exceptions.ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
            h = None
        if h is not None:  # committed: whole, and the upload gone
            outcomes.append("whole")
            assert h["ETag"] == etag and h["ContentLength"] == len(data), h
            got = ca.get_object(Bucket=bucket, Key=key)
            assert got["ETag"] == etag and got["Body"].read() == data, key
            assert uid not in uploads, uploads
        else:  # not committed: the upload as it was, and it completes
            outcomes.append("completable")
            assert not acked, seen  # an acknowledged complete is never lost
            assert uid in uploads, uploads
            listed = ca.list_parts(Bucket=bucket, Key=key, UploadId=uid)["Parts"]
            assert [(p["PartNumber"], p["ETag"]) for p in listed] == [
                (p["PartNumber"], p["ETag"]) for p in parts], listed
            r = ca.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                             MultipartUpload={"Parts": parts})
            assert r["ETag"] == etag, r
            got = ca.get_object(Bucket=bucket, Key=key)
            assert got["ETag"] == etag and got["Body"].read() == data, key
        listed = {o["Key"]: (o["Size"], o["ETag"]) for o in
                  ca.list_objects_v2(Bucket=bucket).get("Contents", [])}
        assert listed[key] == (len(data), etag), listed
        log(f"round {rnd}: kill {delay * 1000:.0f} ms after the request: {outcomes[-1]} "
            f"(the client saw {seen})")


def ilm_gateway(first, extra=()):
    return gw(keys=(first.ak, first.sk),
              args=["--ilm-interval-seconds", "1", "--lc-day-seconds", str(LC_DAY)] + list(extra))


def holds_lease(g):
    with open(g.log_path, errors="replace") as f:
        return "holds the ilm lease" in f.read()


def lease_takeover(first, extra, bound):
    """The gateway holding the ilm lease is killed -9 before its objects are
    due; the other takes the lease within bound s and expires them."""
    h = ilm_gateway(first, extra)
    o = None
    try:
        wait_until("the first gateway holding the ilm lease", lambda: holds_lease(h), timeout=20)
        o = ilm_gateway(first, extra)
        co = o.client()
        bucket = first.bucket_name("lease")
        co.create_bucket(Bucket=bucket)
        co.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
            {"ID": "exp", "Status": "Enabled", "Filter": {"Prefix": ""},
             "Expiration": {"Days": 1}}]})
        keys = [f"e{i}" for i in range(4)]
        for key in keys:
            co.put_object(Bucket=bucket, Key=key, Body=b"x" * (100 + len(key)))
        # Not due yet (a day is LC_DAY s): the holder dies before any is.
        for key in keys:
            assert co.head_object(Bucket=bucket, Key=key)["ContentLength"] == 100 + len(key)
        assert not holds_lease(o), "the second gateway took a held lease"
        kill9(h)
        t_kill = time.monotonic()
        wait_until("the other gateway taking the ilm lease", lambda: holds_lease(o), timeout=bound)
        took = time.monotonic() - t_kill

        def expired():
            for key in keys:
                try:
                    co.head_object(Bucket=bucket, Key=key)
                    return False
                except co.exceptions.ClientError as e:
                    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
            return True
        wait_until("the expirations", expired,
                   timeout=max(1.0, bound - (time.monotonic() - t_kill)))
        done = time.monotonic() - t_kill
        log(f"lease taken over {took:.1f} s after the kill, expirations done after {done:.1f} s")
        assert took <= bound and done <= bound, (took, done)
        assert co.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
        return took
    finally:
        kill9(h)
        if o is not None:
            o.stop()


@test
def ilm_lease_holder_killed_the_other_takes_over_within_30s(first):
    lease_takeover(first, (), 30)


@test
def shorter_lease_seconds_take_over_sooner(first):
    # --lease-seconds 5: the lease lapses 5 s after the holder's last
    # renewal (every 1.7 s), so the other gateway has it within about 7 s
    # instead of the default's 15-20.
    took = lease_takeover(first, ("--lease-seconds", "5"), 12)
    assert took >= 1.0, f"the lease was taken {took:.1f} s after the kill, before it lapsed"


def main():
    global CLUSTER
    from ceph_cluster import CephCluster
    require_daemon_on_rados()
    with CephCluster(osds=1, store="memstore") as c:
        CLUSTER = c
        log(f"cluster ({c.nosds} {c.store} OSD(s)) up in {c.start_seconds:.1f} s")
        rados_init(c, PREFIX)
        first = gw(args=["--ilm-interval-seconds", "0"])
        try:
            run(first)  # exits
        finally:
            first.stop()


if __name__ == "__main__":
    main()
