#!/usr/bin/python3
"""test_rados_rgw_replication.py - an S3 that is not a Strata as the other
end: Ceph's radosgw (one memstore OSD, one cluster for the whole file) as a
bucket replication target and as a remote tier (--tier NAME:s3:URL) of a
Strata on local drives.

Checked: plain, tagged, multipart and Object-Locked versions arrive on
radosgw with their bytes, metadata, tags, lock settings and ETag (the "-N"
of a multipart one too), each as a new version of radosgw's own (it does
not keep the source's version id nor say REPLICA: a Strata peer's
x-strata-replica-version-id means nothing to it), in the source's order,
COMPLETED on the source; a delete marker as a delete marker; one key's
versions and delete markers written at once by several clients (PUT,
copy, multipart, delete; PUT and POST) in the source's commit order; an SSE-C
version, single-part or multipart, is refused by radosgw (the SSE-C
algorithm without a customer key) and FAILED on the source, counted in
strata_replication_sse_c_refused_total, with nothing stored on radosgw, so
never its sealed bytes as plaintext; an SSE-KMS version whose
ReplicaKmsKeyID is its own key is refused sealed and then sent as
plaintext with aws:kms for radosgw to encrypt, which it refuses over plain
HTTP (rgw_crypt_require_ssl): FAILED, nothing stored; `strata admin
replicate` sends a key written before the rule in order, and marks FAILED
(never sends) entries older than one replicated since, which radosgw would
make its latest.  The remote tier: a lifecycle transition to a radosgw
bucket, reads (ranges too) through Strata, the remote object byte for
byte.

Skipped (77) when the Ceph daemons or radosgw are missing.
"""

import base64
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import key_writers  # noqa: E402
from rados_gw import metric_at, rgw_client, skip  # noqa: E402
from strata_harness import (Strata, expect_error, log, restart_with, run, test,  # noqa: E402
                            wait_until)

MiB = 1 << 20
ROLE = "arn:aws:iam::123456789012:role/strata-replication"
RGW = None  # (endpoint, access key, secret key)
RGW_PID = None  # radosgw's process (paused by a test)
SRC = None
COLD = "strata-cold"  # the remote tier's bucket on radosgw


def rgw():
    """A boto3 client of the radosgw user (explicit keys, path style)."""
    return rgw_client(*RGW)


def metric(name):
    return metric_at(SRC.endpoint, name)


def pair(prefix, lock=False, kms=None):
    """A source bucket and a radosgw bucket, both versioned (or with Object
    Lock), and a rule replicating everything (delete markers too) to it;
    with kms, SSE-KMS versions too, under ReplicaKmsKeyID kms."""
    s, r = SRC.client(), rgw()
    sb, rb = SRC.bucket_name(prefix + "s"), SRC.bucket_name(prefix + "r")
    for c, b in ((s, sb), (r, rb)):
        if lock:
            c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
        else:
            c.create_bucket(Bucket=b)
            c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    rl = {"ID": "r1", "Priority": 1, "Status": "Enabled", "Filter": {},
          "DeleteMarkerReplication": {"Status": "Enabled"},
          "Destination": {"Bucket": f"arn:aws:s3:::{rb}", "Account": "rgw"}}
    if kms:
        rl["SourceSelectionCriteria"] = {"SseKmsEncryptedObjects": {"Status": "Enabled"}}
        rl["Destination"]["EncryptionConfiguration"] = {"ReplicaKmsKeyID": kms}
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={"Role": ROLE, "Rules": [rl]})
    return s, r, sb, rb


def wait_status(c, b, k, vid, want, timeout=60, **kw):
    st = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = c.head_object(Bucket=b, Key=k, VersionId=vid, **kw).get("ReplicationStatus")
        if st == want:
            return
        time.sleep(0.2)
    raise AssertionError(f"{b}/{k} {vid}: replication status {st}, want {want}")


def versions(c, b, k):
    """(versions newest first, delete markers) of key k."""
    out = c.list_object_versions(Bucket=b, Prefix=k)
    return ([v for v in out.get("Versions", []) if v["Key"] == k],
            [m for m in out.get("DeleteMarkers", []) if m["Key"] == k])


@test
def versions_arrive(_):
    """Two versions of a key (metadata, tags), a multipart one and a delete
    marker: on radosgw as versions of its own, bytes and headers as sent."""
    s, r, sb, rb = pair("plain")
    b1, b2 = os.urandom(300000), os.urandom(1000)
    v1 = s.put_object(Bucket=sb, Key="k", Body=b1, ContentType="application/x-one",
                      CacheControl="max-age=60", Metadata={"m": "1"},
                      Tagging="t=1&u=x")["VersionId"]
    wait_status(s, sb, "k", v1, "COMPLETED")
    v2 = s.put_object(Bucket=sb, Key="k", Body=b2, Metadata={"m": "2"})["VersionId"]
    wait_status(s, sb, "k", v2, "COMPLETED")
    vs, dms = versions(r, rb, "k")
    assert len(vs) == 2 and not dms, (vs, dms)
    # radosgw's own ids, newest first: the order the source wrote them.
    assert {v["VersionId"] for v in vs}.isdisjoint({v1, v2}), vs
    new, old = vs
    assert new["IsLatest"] and not old["IsLatest"], vs
    g1 = r.get_object(Bucket=rb, Key="k", VersionId=old["VersionId"])
    assert g1["Body"].read() == b1 and g1["ContentType"] == "application/x-one", g1
    assert g1["CacheControl"] == "max-age=60" and g1["Metadata"] == {"m": "1"}, g1
    assert g1["ETag"] == '"%s"' % hashlib.md5(b1).hexdigest()
    assert "ReplicationStatus" not in g1, g1  # a Strata peer says REPLICA; radosgw nothing
    tags = r.get_object_tagging(Bucket=rb, Key="k", VersionId=old["VersionId"])["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("t", "1"), ("u", "x")], tags
    g2 = r.get_object(Bucket=rb, Key="k")
    assert g2["Body"].read() == b2 and g2["Metadata"] == {"m": "2"}, g2
    assert r.get_object_tagging(Bucket=rb, Key="k")["TagSet"] == []

    up = s.create_multipart_upload(Bucket=sb, Key="m", Metadata={"k": "v"})["UploadId"]
    parts = [os.urandom(5 * MiB), os.urandom(12345)]
    done = [s.upload_part(Bucket=sb, Key="m", UploadId=up, PartNumber=i + 1, Body=p)
            for i, p in enumerate(parts)]
    mv = s.complete_multipart_upload(Bucket=sb, Key="m", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": x["ETag"]} for i, x in enumerate(done)]})
    wait_status(s, sb, "m", mv["VersionId"], "COMPLETED")
    g = r.get_object(Bucket=rb, Key="m")
    assert g["Body"].read() == b"".join(parts) and g["Metadata"] == {"k": "v"}, g
    assert g["ETag"] == mv["ETag"] and mv["ETag"].endswith('-2"'), (g["ETag"], mv["ETag"])
    # (radosgw answers HEAD/GET ?partNumber=1 with the whole object and no
    # PartsCount: the parts are not checked one by one here.)

    # A delete marker: radosgw's latest becomes a marker, the versions stay.
    dm = s.delete_object(Bucket=sb, Key="k")
    assert dm["DeleteMarker"], dm
    wait_until("the delete marker on radosgw", lambda: versions(r, rb, "k")[1], 30)
    vs, dms = versions(r, rb, "k")
    assert len(vs) == 2 and len(dms) == 1 and dms[0]["IsLatest"], (vs, dms)
    expect_error(lambda: r.get_object(Bucket=rb, Key="k"), "NoSuchKey", 404)


def burst(sb, k, clients=4, each=8):
    """each versions of k from each of clients writers at once (their own
    connections), the bodies all different."""
    errs = []

    def writer(ci):
        try:
            c = SRC.client()
            for i in range(each):
                c.put_object(Bucket=sb, Key=k, Body=f"{k} from {ci}, #{i}\n".encode() * 40)
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(e)

    ts = [threading.Thread(target=writer, args=(ci,)) for ci in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs, errs


def same_history(s, r, sb, rb, k, marker):
    """Once nothing is pending: every source version of k COMPLETED, and
    radosgw's versions of k (ETags, newest first, each at its last arrival:
    a kill -9 may send one again) the source's, in its order; with marker
    radosgw's latest is a delete marker, as the source's."""
    wait_until("nothing pending", lambda: metric("strata_replication_pending") == 0, 180)
    src, sdm = versions(s, sb, k)
    for v in src:
        wait_status(s, sb, k, v["VersionId"], "COMPLETED", timeout=5)
    dst, ddm = versions(r, rb, k)
    arrived = []
    for v in dst:
        if v["ETag"] not in arrived:
            arrived.append(v["ETag"])
    want = [v["ETag"] for v in src]
    assert len(set(want)) == len(want) == len(arrived), (len(want), len(arrived))
    assert arrived == want, ("radosgw's order (newest first) against the source's: "
                             + " ".join(str(want.index(e)) for e in arrived))
    assert dst[0]["IsLatest"] != marker and (not marker or ddm[0]["IsLatest"]), (dst[0], ddm)
    assert len(ddm) == len(sdm), (ddm, sdm)


@test
def versions_of_one_key_arrive_in_order(_):
    """Versions of one key written at once by several clients, then a
    delete marker, and many other keys meanwhile: radosgw (which keeps no
    source version ids, so the last to arrive is its latest) gets them in
    the source's order, its latest a delete marker as the source's."""
    s, r, sb, rb = pair("order")
    others = threading.Thread(target=lambda: [SRC.client().put_object(
        Bucket=sb, Key=f"other/{i}", Body=b"x" * 1000) for i in range(30)])
    others.start()
    burst(sb, "hot")
    others.join()
    s.delete_object(Bucket=sb, Key="hot")
    same_history(s, r, sb, rb, "hot", marker=True)
    assert len(r.list_objects_v2(Bucket=rb, Prefix="other/")["Contents"]) == 30


@test
def key_order_survives_kill9(_):
    """radosgw paused while versions of one key are written by several
    clients: the source is killed (-9) with them queued and in flight,
    radosgw resumed, the source restarted: radosgw's latest is the
    source's latest and its versions are in the source's order."""
    s, r, sb, rb = pair("okill")

    def resume():
        # Requests sent before the kill reach radosgw when it resumes (the
        # restarted source sends the key's versions again, in order): it
        # is given until its listing holds still for 2 s.
        os.kill(RGW_PID, signal.SIGCONT)
        seen, still = None, time.monotonic()
        while time.monotonic() - still < 2:
            now = len(versions(r, rb, "hot")[0])
            if now != seen:
                seen, still = now, time.monotonic()
            time.sleep(0.2)

    os.kill(RGW_PID, signal.SIGSTOP)
    try:
        burst(sb, "hot", clients=3, each=8)
        assert metric("strata_replication_pending") >= 24
    finally:
        SRC.restart(kill=True, between=resume)
    s = SRC.client()
    same_history(s, r, sb, rb, "hot", marker=False)
    assert r.get_object(Bucket=rb, Key="hot")["Body"].read() == s.get_object(
        Bucket=sb, Key="hot")["Body"].read()


def same_mixed_history(s, r, sb, rb, k):
    """Once nothing is pending: every source version of k COMPLETED and
    radosgw's history of k (versions and delete markers, newest first)
    the source's."""
    wait_until("nothing pending", lambda: metric("strata_replication_pending") == 0, 180)
    src = key_writers.history(s, sb, k)
    for vid, etag in src:
        if etag:
            wait_status(s, sb, k, vid, "COMPLETED", timeout=5)
    # radosgw makes no delete marker when the key's latest is one already:
    # a run of the source's markers is one there.
    want = [etag or "marker" for i, (_, etag) in enumerate(src)
            if etag or i == 0 or src[i - 1][1]]
    got = [etag or "marker" for _, etag in key_writers.history(r, rb, k)]
    assert got == want, ("radosgw's history (newest first) against the source's: " + " ".join(
        str(want.index(e)) if e in want and e != "marker" else e for e in got))
    return src


@test
def mixed_changes_of_one_key_arrive_in_order(_):
    """One key changed at once by several clients through PUT, copy,
    multipart upload and delete: radosgw gets the changes in the order
    they committed on the source, so its history of the key (versions and
    delete markers, newest first) is the source's."""
    s, r, sb, rb = pair("mixed")
    key_writers.sources(s, sb, "hot", clients=8, each=12)
    key_writers.burst(SRC.client, sb, "hot", clients=8, each=12,
                      paths=("put", "copy", "multipart", "delete"))
    assert len(same_mixed_history(s, r, sb, rb, "hot")) == 96


@test
def post_uploads_replicate_in_order(_):
    """POST uploads of a key racing PUTs of it: each POST version is
    PENDING, then COMPLETED, and on radosgw in the source's order."""
    s, r, sb, rb = pair("post")
    vid = s.put_object(Bucket=sb, Key="hot", Body=b"first")["VersionId"]
    post = s.generate_presigned_post(Bucket=sb, Key="hot", ExpiresIn=300)
    got = requests.post(post["url"], data=post["fields"],
                        files={"file": ("f", b"posted", "text/plain")}, timeout=60)
    assert got.status_code == 204, (got.status_code, got.text)
    head = s.head_object(Bucket=sb, Key="hot")
    assert head["VersionId"] != vid and head["ReplicationStatus"] in ("PENDING", "COMPLETED"), head
    key_writers.burst(SRC.client, sb, "hot", clients=4, each=8, paths=("put", "post"))
    src = same_mixed_history(s, r, sb, rb, "hot")
    assert len(src) == 34, len(src)
    assert r.get_object(Bucket=rb, Key="hot")["Body"].read() == s.get_object(
        Bucket=sb, Key="hot")["Body"].read()


@test
def locked_version_arrives_locked(_):
    """A version under GOVERNANCE retention with a legal hold arrives on a
    radosgw bucket with Object Lock with both: radosgw refuses to delete
    it."""
    s, r, sb, rb = pair("lock", lock=True)
    data = os.urandom(70000)
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).replace(
        microsecond=0)
    vid = s.put_object(Bucket=sb, Key="w", Body=data,
                       ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode(),
                       ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until,
                       ObjectLockLegalHoldStatus="ON")["VersionId"]
    wait_status(s, sb, "w", vid, "COMPLETED")
    h = r.head_object(Bucket=rb, Key="w")
    assert h["ObjectLockMode"] == "GOVERNANCE", h
    assert h["ObjectLockRetainUntilDate"] == until, (h["ObjectLockRetainUntilDate"], until)
    assert h["ObjectLockLegalHoldStatus"] == "ON", h
    assert r.get_object(Bucket=rb, Key="w")["Body"].read() == data
    expect_error(lambda: r.delete_object(Bucket=rb, Key="w", VersionId=h["VersionId"]),
                 "AccessDenied", 403)


def nothing_stored(r, rb, k):
    """No version, marker or upload of k on radosgw: never sealed bytes
    stored as if they were the plaintext."""
    assert versions(r, rb, k) == ([], []), versions(r, rb, k)
    expect_error(lambda: r.head_object(Bucket=rb, Key=k), "404", 404)
    ups = r.list_multipart_uploads(Bucket=rb).get("Uploads", [])
    assert [u for u in ups if u["Key"] == k] == [], ups


@test
def sse_c_refused(_):
    """SSE-C versions (single-part, multipart) go sealed with the SSE-C
    algorithm and no customer key: radosgw refuses them, the source marks
    them FAILED and counts them, and radosgw stores nothing."""
    s, r, sb, rb = pair("ssec")
    key = os.urandom(32)
    ssec = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    before = metric("strata_replication_sse_c_refused_total")
    vid = s.put_object(Bucket=sb, Key="c", Body=os.urandom(200000), **ssec)["VersionId"]
    wait_status(s, sb, "c", vid, "FAILED", **ssec)
    assert metric("strata_replication_sse_c_refused_total") == before + 1
    nothing_stored(r, rb, "c")
    up = s.create_multipart_upload(Bucket=sb, Key="mc", **ssec)["UploadId"]
    e1 = s.upload_part(Bucket=sb, Key="mc", UploadId=up, PartNumber=1, Body=b"x" * 1000,
                       **ssec)["ETag"]
    mv = s.complete_multipart_upload(Bucket=sb, Key="mc", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}]})["VersionId"]
    wait_status(s, sb, "mc", mv, "FAILED", **ssec)
    assert metric("strata_replication_sse_c_refused_total") == before + 2
    nothing_stored(r, rb, "mc")
    # The rule still replicates what radosgw can take.
    pv = s.put_object(Bucket=sb, Key="p", Body=b"plain")["VersionId"]
    wait_status(s, sb, "p", pv, "COMPLETED")
    assert r.get_object(Bucket=rb, Key="p")["Body"].read() == b"plain"


def sealed_refusals():
    """The sealed SSE-KMS offers the source logged as refused."""
    with open(SRC.log_path, errors="replace") as f:
        return sum("sealed SSE-KMS refused" in ln for ln in f)


@test
def sse_kms_own_key_not_sealed_to_radosgw(_):
    """An SSE-KMS version whose ReplicaKmsKeyID is its own key is offered
    sealed first: radosgw refuses that, then the plaintext with aws:kms
    (over plain HTTP, which radosgw refuses for any server-side encryption
    by default): FAILED, nothing stored, not counted as sent sealed.  The
    refusal is remembered for the target and key id: the next versions go
    as plaintext at once (one sealed offer, one refusal counted), until a
    restart, after which the sealed form is offered once again; with
    --replication-sealed-retry-seconds 0 each version is offered sealed."""
    s, r, sb, rb = pair("kms", kms="src1")
    sealed = metric("strata_replication_sse_kms_sealed_total")
    refused, logged = metric("strata_replication_sse_kms_sealed_refused_total"), sealed_refusals()

    def one(k):
        vid = s.put_object(Bucket=sb, Key=k, Body=os.urandom(100000),
                           ServerSideEncryption="aws:kms", SSEKMSKeyId="src1")["VersionId"]
        wait_status(s, sb, k, vid, "FAILED")
        nothing_stored(r, rb, k)

    for k in ("k", "k", "k2", "k3"):
        one(k)
    assert metric("strata_replication_sse_kms_sealed_total") == sealed
    assert sealed_refusals() == logged + 1, sealed_refusals() - logged
    assert metric("strata_replication_sse_kms_sealed_refused_total") == refused + 1
    SRC.restart()
    s = SRC.client()
    one("k4")
    assert metric("strata_replication_sse_kms_sealed_refused_total") == 1
    assert sealed_refusals() == logged + 2
    # --replication-sealed-retry-seconds 0: nothing remembered, each
    # version offered sealed (and refused) first.
    restart_with(SRC, "replication-sealed-retry-seconds", "0")
    try:
        s = SRC.client()
        for k in ("k5", "k6"):
            one(k)
        assert metric("strata_replication_sse_kms_sealed_refused_total") == 2
        assert sealed_refusals() == logged + 4
    finally:
        restart_with(SRC, "replication-sealed-retry-seconds", None)


@test
def remote_tier_on_radosgw(_):
    """A lifecycle transition moves a version's data to the radosgw bucket
    of the cold tier; Strata reads it back from there (ranges too), and the
    remote object is the data byte for byte."""
    c = SRC.client()
    b = SRC.bucket_name("tier")
    c.create_bucket(Bucket=b)
    data = os.urandom(3 * MiB + 17)
    etag = c.put_object(Bucket=b, Key="cold", Body=data, Metadata={"o": "t"})["ETag"]
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "age-out", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": 0, "StorageClass": "STANDARD_IA"}]}]})
    wait_until("the transition to radosgw", lambda: c.head_object(Bucket=b, Key="cold").get(
        "StorageClass") == "STANDARD_IA", 90)
    g = c.get_object(Bucket=b, Key="cold")
    assert g["Body"].read() == data and g["ETag"] == etag and g["Metadata"] == {"o": "t"}, g
    for lo, hi in ((0, 0), (MiB - 5, MiB + 5), (len(data) - 17, len(data) - 1)):
        got = c.get_object(Bucket=b, Key="cold", Range=f"bytes={lo}-{hi}")["Body"].read()
        assert got == data[lo:hi + 1], (lo, hi)
    r = rgw()
    keys = [o["Key"] for o in r.list_objects_v2(Bucket=COLD).get("Contents", [])]
    assert len(keys) == 1 and re.fullmatch("strata-data/[0-9a-f]{32}", keys[0]), keys
    assert r.get_object(Bucket=COLD, Key=keys[0])["Body"].read() == data


@test
def admin_replicate_older_than_replicated(_):
    """`strata admin replicate` to radosgw (which keeps no source version
    ids): a key's entries written before the rule go in order when none of
    the key is replicated yet; those older than a version replicated since
    would become radosgw's latest, so they go FAILED and radosgw keeps the
    newer one as its latest."""
    s, r, sb, rb = pair("old")
    conf = s.get_bucket_replication(Bucket=sb)["ReplicationConfiguration"]
    s.delete_bucket_replication(Bucket=sb)
    old = [s.put_object(Bucket=sb, Key="k", Body=b"k1")["VersionId"],
           s.delete_object(Bucket=sb, Key="k")["VersionId"],
           s.put_object(Bucket=sb, Key="k", Body=b"k2")["VersionId"]]
    fresh = [s.put_object(Bucket=sb, Key="n", Body=f"n{i}".encode())["VersionId"]
             for i in range(2)]
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration=conf)
    v3 = s.put_object(Bucket=sb, Key="k", Body=b"k3")["VersionId"]
    wait_status(s, sb, "k", v3, "COMPLETED")
    env = {"PATH": "/usr/bin:/bin", "HOME": SRC.home, "STRATA_ENDPOINT": SRC.endpoint,
           "STRATA_ACCESS_KEY": SRC.ak, "STRATA_SECRET_KEY": SRC.sk}
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", "replicate", sb], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p
    lines = p.stdout.splitlines()
    assert lines[0] == f"{sb}: 6 versions and delete markers, 5 queued for replication", p.stdout
    assert lines[-1] == f"{sb}: 5 of 5 replicated or failed", p.stdout
    for vid in old[::2]:
        wait_status(s, sb, "k", vid, "FAILED")
    vs, dms = versions(r, rb, "k")
    assert len(vs) == 1 and not dms, (vs, dms)
    assert r.get_object(Bucket=rb, Key="k")["Body"].read() == b"k3"
    for vid in fresh:
        wait_status(s, sb, "n", vid, "COMPLETED")
    vs, _ = versions(r, rb, "n")
    assert len(vs) == 2, vs
    assert r.get_object(Bucket=rb, Key="n")["Body"].read() == b"n1"


def main():
    global RGW, RGW_PID, SRC
    for tool in ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin"):
        if not shutil.which(tool):
            skip(f"{tool} not installed (deploy/install-deps.sh)")
    if not os.environ.get("STRATA_BIN"):
        skip("STRATA_BIN not set")
    from ceph_cluster import CephCluster
    t0 = time.monotonic()
    with CephCluster(osds=1, store="memstore", rgw=True) as cl:
        ak, sk = cl.rgw_user("strata")
        RGW = (cl.rgw_endpoint, ak, sk)
        RGW_PID = cl.pids["client.rgw.a"]
        log(f"cluster and radosgw ready in {time.monotonic() - t0:.1f} s: {cl.rgw_endpoint}")
        rgw().create_bucket(Bucket=COLD)
        SRC = Strata(args=["--metrics-public", "--sse-c-allow-http"])
        try:
            creds = os.path.join(SRC.tmp, "remote-creds.json")
            with open(os.open(creds, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                json.dump({n: {"access_key": ak, "secret_key": sk} for n in ("rgw", "cold")}, f)
            keys = os.path.join(SRC.tmp, "kms.json")
            with open(os.open(keys, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                json.dump({"active": "src1", "keys": {"src1": {
                    "key": base64.b64encode(os.urandom(32)).decode()}}}, f)
            SRC.args += ["--kms-key-file", keys, "--tier-credentials", creds,
                         "--replication-target", f"rgw:{cl.rgw_endpoint}",
                         "--tier", f"cold:s3:{cl.rgw_endpoint}/{COLD}/strata-data",
                         "--storage-class", "STANDARD_IA:cold", "--lc-day-seconds", "1",
                         "--ilm-interval-seconds", "1", "--ilm-move-mbps", "0"]
            SRC.restart()
            run(SRC)  # exits
        finally:
            SRC.stop()


if __name__ == "__main__":
    main()
