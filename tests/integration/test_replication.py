#!/usr/bin/python3
"""test_replication.py - bucket replication between two Strata daemons on
loopback: Put/Get/DeleteBucketReplication and their errors, and versions
(PUT, multipart, copy, tags, metadata, Object Lock settings) arriving on
the target byte for byte with the source's version id, REPLICA there and
COMPLETED on the source; delete markers; a target that is down; kill -9
of the source with replication pending (also with its first drive
replaced by an empty one); a prefix filter.

With STRATA_BACKEND=rados the source runs on a RADOS store (its queue in
the cluster, kill -9 then a new gateway taking the queue's lease over) and
the target stays on local drives; the test of the queue's copies on the
source's drives runs on local drives only."""

import atexit
import base64
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

import boto3
import botocore.config
import botocore.exceptions

from strata_harness import (BACKEND, REGION, Strata, expect_error, log, run, test,
                            wait_until)


# Both sites hold "same1" (the same key) and "diff1" (a key of that name,
# different bytes on each): SSE-KMS under "same1" may travel sealed.
SAME_KEY = base64.b64encode(os.urandom(32)).decode()


def key_file(path, name):
    """A key store (--kms-key-file): its own active master key, different
    per daemon, with same1 and diff1."""
    def k():
        return {"key": base64.b64encode(os.urandom(32)).decode()}
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump({"active": name, "keys": {name: k(), "same1": {"key": SAME_KEY},
                                            "diff1": k()}}, f)
    return path


KEYDIR = tempfile.mkdtemp(prefix="test_replication-keys.",
                          dir=os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir())
atexit.register(shutil.rmtree, KEYDIR, True)
# A site on local drives either way (drives the caller owns on RADOS).
DST_DRIVES = None
if BACKEND == "rados":
    DST_DRIVES = [os.path.join(KEYDIR, f"dst{i}") for i in range(1, 5)]
    for _d in DST_DRIVES:
        os.makedirs(_d)
DST = Strata(drives=DST_DRIVES, args=["--metrics-public", "--sse-c-allow-http", "--kms-key-file",
                   key_file(os.path.join(KEYDIR, "keys-dst.json"), "dst1")])
creds = os.path.join(DST.tmp, "remote-creds.json")
with open(os.open(creds, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
    json.dump({"site2": {"access_key": DST.ak, "secret_key": DST.sk}}, f)
# The second site has the same users (ACLs name them by canonical id).
SRC = Strata(keys=(DST.ak, DST.sk), args=["--metrics-public", "--sse-c-allow-http", "--kms-key-file",
                   key_file(os.path.join(KEYDIR, "keys-src.json"), "src1"),
                   "--replication-target", f"site2:{DST.endpoint}", "--tier-credentials", creds])

ROLE = "arn:aws:iam::123456789012:role/strata-replication"


def rule(dest, prefix=None, dm="Disabled", rid="r1", priority=1, account="site2"):
    r = {"ID": rid, "Priority": priority, "Status": "Enabled",
         "Filter": {"Prefix": prefix} if prefix is not None else {},
         "DeleteMarkerReplication": {"Status": dm},
         "Destination": {"Bucket": f"arn:aws:s3:::{dest}"}}
    if account:
        r["Destination"]["Account"] = account
    return r


def pair(prefix, lock=False, **create):
    """A versioned source bucket and target bucket: (src client, dst client, src, dst)."""
    s, d = SRC.client(), DST.client()
    sb, db = SRC.bucket_name(prefix + "s"), DST.bucket_name(prefix + "d")
    for c, b in ((s, sb), (d, db)):
        if lock:
            c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True, **create)
        else:
            c.create_bucket(Bucket=b, **create)
            c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return s, d, sb, db


def configure(s, sb, db, **kw):
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={
        "Role": ROLE, "Rules": [rule(db, **kw)]})


def wait_status(c, b, k, vid, want, timeout=30):
    deadline = time.monotonic() + timeout
    st = None
    while time.monotonic() < deadline:
        st = c.head_object(Bucket=b, Key=k, VersionId=vid).get("ReplicationStatus")
        if st == want:
            return
        time.sleep(0.1)
    raise AssertionError(f"{b}/{k} {vid}: replication status {st}, want {want}")


def same_version(s, d, sb, db, k, vid):
    """The target holds version vid of k with the source's bytes and headers."""
    a = s.get_object(Bucket=sb, Key=k, VersionId=vid)
    b = d.get_object(Bucket=db, Key=k, VersionId=vid)
    ab, bb = a["Body"].read(), b["Body"].read()
    assert ab == bb, "replica bytes differ"
    assert a["VersionId"] == b["VersionId"] == vid
    assert a["ReplicationStatus"] == "COMPLETED", a.get("ReplicationStatus")
    assert b["ReplicationStatus"] == "REPLICA", b.get("ReplicationStatus")
    for h in ("ContentType", "Metadata", "CacheControl", "ContentDisposition", "ContentLanguage",
              "ObjectLockMode", "ObjectLockLegalHoldStatus"):
        assert a.get(h) == b.get(h), f"{h}: {a.get(h)!r} != {b.get(h)!r}"
    if a.get("ObjectLockRetainUntilDate"):
        assert a["ObjectLockRetainUntilDate"] == b["ObjectLockRetainUntilDate"]
    assert a["LastModified"] == b["LastModified"], (a["LastModified"], b["LastModified"])
    return ab


@test
def config_round_trip_and_errors(_):
    s, d, sb, db = pair("cfg")
    expect_error(lambda: s.get_bucket_replication(Bucket=sb),
                 "ReplicationConfigurationNotFoundError", 404)
    conf = {"Role": ROLE, "Rules": [
        rule(db, prefix="logs/", dm="Enabled"),
        {"ID": "r2", "Priority": 2, "Status": "Disabled",
         "Filter": {"And": {"Prefix": "tmp/", "Tags": [{"Key": "k", "Value": "v"}]}},
         "DeleteMarkerReplication": {"Status": "Disabled"},
         "Destination": {"Bucket": f"arn:aws:s3:::{db}", "StorageClass": "STANDARD"}}]}
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration=conf)
    got = s.get_bucket_replication(Bucket=sb)["ReplicationConfiguration"]
    assert got["Role"] == ROLE
    assert [r["ID"] for r in got["Rules"]] == ["r1", "r2"]
    assert got["Rules"][0]["Filter"] == {"Prefix": "logs/"}
    assert got["Rules"][0]["DeleteMarkerReplication"] == {"Status": "Enabled"}
    assert got["Rules"][0]["Destination"] == {"Bucket": f"arn:aws:s3:::{db}", "Account": "site2"}
    assert got["Rules"][1]["Filter"] == {"And": {"Prefix": "tmp/",
                                                 "Tags": [{"Key": "k", "Value": "v"}]}}
    assert got["Rules"][1]["Status"] == "Disabled"
    assert got["Rules"][1]["Destination"]["StorageClass"] == "STANDARD"

    def bad(rules, code, status, role=ROLE, bucket=sb):
        return expect_error(lambda: s.put_bucket_replication(
            Bucket=bucket, ReplicationConfiguration={"Role": role, "Rules": rules}), code, status)

    # Versioning must be Enabled on the source (AWS's message).
    plain = SRC.bucket_name("cfgplain")
    s.create_bucket(Bucket=plain)
    e = bad([rule(db)], "InvalidRequest", 400, bucket=plain)
    assert e["Error"]["Message"] == ("Versioning must be 'Enabled' on the bucket to apply a "
                                     "replication configuration")
    bad([rule(db, account="nosuch")], "InvalidArgument", 400)
    r = rule(db)
    r["Destination"]["Bucket"] = "not-an-arn"
    bad([r], "InvalidArgument", 400)
    r = rule(db)
    del r["DeleteMarkerReplication"]
    bad([r], "InvalidRequest", 400)
    bad([rule(db), rule(db, rid="r1", priority=2)], "InvalidArgument", 400)  # same ID
    bad([rule(db), rule(db, rid="r2")], "InvalidRequest", 400)  # same priority
    r = rule(db)
    r["Status"] = "On"
    bad([r], "MalformedXML", 400)
    r = rule(db)
    r["Destination"]["StorageClass"] = "FAST"
    bad([r], "InvalidStorageClass", 400)
    # Features Strata does not implement: 501, never accepted and ignored.
    r = rule(db)
    r["Destination"]["ReplicationTime"] = {"Status": "Enabled", "Time": {"Minutes": 15}}
    r["Destination"]["Metrics"] = {"Status": "Enabled", "EventThreshold": {"Minutes": 15}}
    bad([r], "NotImplemented", 501)
    r = rule(db)
    r["SourceSelectionCriteria"] = {"ReplicaModifications": {"Status": "Enabled"}}
    bad([r], "NotImplemented", 501)
    # SSE-KMS selection and the replica's key come together, as on AWS.
    r = rule(db)
    r["SourceSelectionCriteria"] = {"SseKmsEncryptedObjects": {"Status": "Enabled"}}
    bad([r], "InvalidRequest", 400)
    r = rule(db)
    r["Destination"]["EncryptionConfiguration"] = {"ReplicaKmsKeyID": "dst1"}
    bad([r], "InvalidRequest", 400)
    r = rule(db)
    r["ExistingObjectReplication"] = {"Status": "Enabled"}
    bad([r], "NotImplemented", 501)
    # The refused documents left the stored one alone.
    assert s.get_bucket_replication(Bucket=sb)["ReplicationConfiguration"] == got
    s.delete_bucket_replication(Bucket=sb)
    expect_error(lambda: s.get_bucket_replication(Bucket=sb),
                 "ReplicationConfigurationNotFoundError", 404)


def wait_target(d, db, k, vid, ok, timeout=30):
    """HEAD of version vid on the target once ok(head) holds."""
    deadline = time.monotonic() + timeout
    while True:
        h = d.head_object(Bucket=db, Key=k, VersionId=vid)
        if ok(h) or time.monotonic() > deadline:
            assert ok(h), h
            return h
        time.sleep(0.1)


def counters():
    """(target's request body bytes received, source's replicated bytes,
    source's metadata changes sent alone)."""
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def get(ep, name):
        text = opener.open(f"{ep}/metrics", timeout=10).read().decode()
        return sum(float(x.split()[-1]) for x in text.splitlines()
                   if x.split("{")[0].split(" ")[0] == name)
    return (get(DST.endpoint, "strata_http_received_bytes_total"),
            get(SRC.endpoint, "strata_replication_bytes_total"),
            get(SRC.endpoint, "strata_replication_changes_total"))


def sent_alone(before, n):
    """Since before: n metadata changes were sent alone, no object bytes
    went to the target (only the small XML bodies of the changes)."""
    after = counters()
    assert after[1] == before[1], f"object bytes replicated again: {before} -> {after}"
    assert after[2] - before[2] >= n, f"changes sent alone: {before} -> {after}"
    assert after[0] - before[0] < 2048 * n, f"target received {after[0] - before[0]} bytes"


@test
def tag_change_sent_alone(_):
    s, d, sb, db = pair("tagc")
    configure(s, sb, db)
    data = os.urandom(256 * 1024)
    vid = s.put_object(Bucket=sb, Key="t", Body=data, Tagging="a=1")["VersionId"]
    wait_status(s, sb, "t", vid, "COMPLETED")
    before = counters()
    s.put_object_tagging(Bucket=sb, Key="t", VersionId=vid, Tagging={"TagSet": [
        {"Key": "stage", "Value": "clean & ready"}, {"Key": "b", "Value": "2"}]})
    deadline = time.monotonic() + 30
    while True:
        tags = d.get_object_tagging(Bucket=db, Key="t", VersionId=vid)["TagSet"]
        want = s.get_object_tagging(Bucket=sb, Key="t", VersionId=vid)["TagSet"]
        if sorted(map(str, tags)) == sorted(map(str, want)) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("b", "2"), ("stage", "clean & ready")]
    wait_status(s, sb, "t", vid, "COMPLETED")
    sent_alone(before, 1)
    # Tags removed: DeleteObjectTagging on the target's version.
    before = counters()
    s.delete_object_tagging(Bucket=sb, Key="t", VersionId=vid)
    deadline = time.monotonic() + 30
    while d.get_object_tagging(Bucket=db, Key="t", VersionId=vid)["TagSet"]:
        assert time.monotonic() < deadline, "tags still on the target"
        time.sleep(0.1)
    wait_status(s, sb, "t", vid, "COMPLETED")
    sent_alone(before, 1)
    assert same_version(s, d, sb, db, "t", vid) == data


@test
def lock_changes_sent_alone(_):
    s, d, sb, db = pair("lockc", lock=True)
    configure(s, sb, db)
    data = os.urandom(128 * 1024)
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).replace(
        microsecond=0)
    md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    vid = s.put_object(Bucket=sb, Key="l", Body=data, ObjectLockMode="COMPLIANCE",
                       ObjectLockRetainUntilDate=until, ContentMD5=md5)["VersionId"]
    wait_status(s, sb, "l", vid, "COMPLETED")
    for status in ("ON", "OFF", "ON"):
        before = counters()
        s.put_object_legal_hold(Bucket=sb, Key="l", VersionId=vid, LegalHold={"Status": status})
        wait_target(d, db, "l", vid, lambda h: h.get("ObjectLockLegalHoldStatus") == status)
        wait_status(s, sb, "l", vid, "COMPLETED")
        sent_alone(before, 1)
    later = until + datetime.timedelta(days=1)
    before = counters()
    s.put_object_retention(Bucket=sb, Key="l", VersionId=vid, Retention={
        "Mode": "COMPLIANCE", "RetainUntilDate": later})
    h = wait_target(d, db, "l", vid, lambda h: h["ObjectLockRetainUntilDate"] == later)
    assert h["ObjectLockMode"] == "COMPLIANCE" and h["ObjectLockLegalHoldStatus"] == "ON", h
    wait_status(s, sb, "l", vid, "COMPLETED")
    sent_alone(before, 1)
    assert same_version(s, d, sb, db, "l", vid) == data


def grants(acl):
    return sorted((g["Grantee"].get("ID") or g["Grantee"].get("URI"), g["Permission"])
                  for g in acl["Grants"])


@test
def acl_replicated(_):
    """A version's ACL arrives with it (its owner, the source's, kept), and
    a later PutObjectAcl on it is sent alone as PutObjectAcl."""
    s, d, sb, db = pair("acl", ObjectOwnership="ObjectWriter")
    configure(s, sb, db)
    data = os.urandom(64 * 1024)
    vid = s.put_object(Bucket=sb, Key="a", Body=data, ACL="public-read")["VersionId"]
    wait_status(s, sb, "a", vid, "COMPLETED")
    want = s.get_object_acl(Bucket=sb, Key="a", VersionId=vid)
    assert ("http://acs.amazonaws.com/groups/global/AllUsers", "READ") in grants(want), want
    got = d.get_object_acl(Bucket=db, Key="a", VersionId=vid)
    assert grants(got) == grants(want), (got, want)
    assert got["Owner"]["ID"] == want["Owner"]["ID"] == SRC.ak, got
    assert same_version(s, d, sb, db, "a", vid) == data
    # A change of the ACL goes alone, with the peer's version header.
    auth = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
    for change in ({"ACL": "authenticated-read"},
                   {"GrantRead": f'uri="{auth}"', "GrantFullControl": f"id={SRC.ak}"},
                   {"ACL": "private"}):
        before = counters()
        s.put_object_acl(Bucket=sb, Key="a", VersionId=vid, **change)
        want = grants(s.get_object_acl(Bucket=sb, Key="a", VersionId=vid))
        deadline = time.monotonic() + 30
        while grants(d.get_object_acl(Bucket=db, Key="a", VersionId=vid)) != want:
            assert time.monotonic() < deadline, (change, want)
            time.sleep(0.1)
        wait_status(s, sb, "a", vid, "COMPLETED")
        sent_alone(before, 1)
    assert want == [(SRC.ak, "FULL_CONTROL")], want
    # The replica's ACL is now private: no anonymous read (it was public).
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        opener.open(f"{DST.endpoint}/{db}/a?versionId={vid}", timeout=10)
        raise AssertionError("anonymous GET of a private replica answered")
    except urllib.error.HTTPError as e:
        assert e.code == 403, e.code


@test
def change_needs_peer_version(_):
    """The peer header on a metadata change must name the version the
    request addresses."""
    _, d, _, db = pair("chv")
    vid = d.put_object(Bucket=db, Key="x", Body=b"x")["VersionId"]

    def with_hdr(value):
        def add(request, **_):
            request.headers["x-strata-replica-version-id"] = value
        return add
    h = with_hdr("0" * 20)
    d.meta.events.register("before-sign.s3.PutObjectTagging", h)
    try:
        expect_error(lambda: d.put_object_tagging(Bucket=db, Key="x", VersionId=vid, Tagging={
            "TagSet": [{"Key": "a", "Value": "b"}]}), "InvalidArgument", 400)
    finally:
        d.meta.events.unregister("before-sign.s3.PutObjectTagging", h)
    h = with_hdr(vid)
    d.meta.events.register("before-sign.s3.PutObjectTagging", h)
    try:
        d.put_object_tagging(Bucket=db, Key="x", VersionId=vid, Tagging={
            "TagSet": [{"Key": "a", "Value": "b"}]})
    finally:
        d.meta.events.unregister("before-sign.s3.PutObjectTagging", h)
    assert d.get_object_tagging(Bucket=db, Key="x", VersionId=vid)["TagSet"] == [
        {"Key": "a", "Value": "b"}]


@test
def multipart_keeps_parts(_):
    """A multipart version arrives as a multipart upload with the same part
    boundaries: the same "-N" ETag and parts on both sides."""
    s, d, sb, db = pair("mpk")
    configure(s, sb, db)
    up = s.create_multipart_upload(Bucket=sb, Key="m", Metadata={"k": "v"},
                                   ContentType="application/x-ckpt", Tagging="t=1",
                                   ChecksumAlgorithm="CRC32C")["UploadId"]
    parts = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(123457)]
    done = [s.upload_part(Bucket=sb, Key="m", UploadId=up, PartNumber=i + 1, Body=p,
                          ChecksumAlgorithm="CRC32C") for i, p in enumerate(parts)]
    vid = s.complete_multipart_upload(Bucket=sb, Key="m", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": x["ETag"], "ChecksumCRC32C": x["ChecksumCRC32C"]}
                  for i, x in enumerate(done)]})["VersionId"]
    wait_status(s, sb, "m", vid, "COMPLETED")
    a = s.head_object(Bucket=sb, Key="m", VersionId=vid)
    b = d.head_object(Bucket=db, Key="m", VersionId=vid)
    assert a["ETag"].endswith('-3"'), a["ETag"]
    assert a["ETag"] == b["ETag"], (a["ETag"], b["ETag"])
    ca = s.head_object(Bucket=sb, Key="m", VersionId=vid, ChecksumMode="ENABLED")
    cb = d.head_object(Bucket=db, Key="m", VersionId=vid, ChecksumMode="ENABLED")
    assert ca["ChecksumCRC32C"].endswith("-3"), ca.get("ChecksumCRC32C")
    assert ca["ChecksumCRC32C"] == cb.get("ChecksumCRC32C"), (ca, cb)
    assert b["ContentType"] == "application/x-ckpt" and b["Metadata"] == {"k": "v"}, b
    for i, p in enumerate(parts):
        pa = s.head_object(Bucket=sb, Key="m", VersionId=vid, PartNumber=i + 1)
        pb = d.head_object(Bucket=db, Key="m", VersionId=vid, PartNumber=i + 1)
        assert pa["ContentLength"] == pb["ContentLength"] == len(p), (pa, pb)
        assert pb["PartsCount"] == 3, pb
    assert same_version(s, d, sb, db, "m", vid) == b"".join(parts)
    assert d.get_object_tagging(Bucket=db, Key="m", VersionId=vid)["TagSet"] == [
        {"Key": "t", "Value": "1"}]
    assert d.list_multipart_uploads(Bucket=db).get("Uploads", []) == []


def mpu_put(s, b, k, parts, **create):
    """A multipart version of parts (numbered from 1) through client s: its version id."""
    up = s.create_multipart_upload(Bucket=b, Key=k, **create)["UploadId"]
    done = [s.upload_part(Bucket=b, Key=k, UploadId=up, PartNumber=i + 1, Body=p)
            for i, p in enumerate(parts)]
    return s.complete_multipart_upload(Bucket=b, Key=k, UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": x["ETag"]} for i, x in enumerate(done)]})["VersionId"]


def metric(ep, name):
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    text = opener.open(f"{ep}/metrics", timeout=10).read().decode()
    return sum(float(x.split()[-1]) for x in text.splitlines()
               if x.split("{")[0].split(" ")[0] == name)


@test
def sse_s3_replicated(_):
    """An SSE-S3 version arrives as its plaintext sealed under the target's
    own master key: AES256 on the target, same bytes and ETag (the MD5 of
    the plaintext on both); a multipart one too."""
    s, d, sb, db = pair("sse3")
    configure(s, sb, db)
    body = os.urandom(300000)
    vid = s.put_object(Bucket=sb, Key="e", Body=body, ServerSideEncryption="AES256",
                       Metadata={"m": "1"})["VersionId"]
    wait_status(s, sb, "e", vid, "COMPLETED")
    assert same_version(s, d, sb, db, "e", vid) == body
    b = d.head_object(Bucket=db, Key="e", VersionId=vid)
    assert b["ServerSideEncryption"] == "AES256", b
    assert b["ETag"] == s.head_object(Bucket=sb, Key="e", VersionId=vid)["ETag"] == \
        '"%s"' % hashlib.md5(body).hexdigest(), b["ETag"]
    # The AWS CLI reads the same replica.
    out = os.path.join(KEYDIR, "sse3.out")
    env = {"PATH": "/usr/bin:/bin", "HOME": DST.home, "AWS_ACCESS_KEY_ID": DST.ak,
           "AWS_SECRET_ACCESS_KEY": DST.sk, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    r = subprocess.run(["/usr/bin/aws", "--endpoint-url", DST.endpoint, "s3api", "get-object",
                        "--bucket", db, "--key", "e", "--version-id", vid, out],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["ServerSideEncryption"] == "AES256", r
    with open(out, "rb") as f:
        assert f.read() == body
    os.unlink(out)
    parts = [os.urandom(5 << 20), os.urandom(1000)]
    mv = mpu_put(s, sb, "m", parts, ServerSideEncryption="AES256")
    wait_status(s, sb, "m", mv, "COMPLETED")
    assert same_version(s, d, sb, db, "m", mv) == b"".join(parts)
    b = d.head_object(Bucket=db, Key="m", VersionId=mv)
    assert b["ServerSideEncryption"] == "AES256" and b["ETag"].endswith('-2"'), b


def wait_ssec_status(s, sb, k, vid, key, want, timeout=30):
    """wait_status for an SSE-C version (its HEAD needs the customer key)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = s.head_object(Bucket=sb, Key=k, VersionId=vid, SSECustomerAlgorithm="AES256",
                           SSECustomerKey=key).get("ReplicationStatus")
        if st == want:
            return
        time.sleep(0.1)
    raise AssertionError(f"{sb}/{k} {vid}: replication status {st}, want {want}")


@test
def sse_c_replicated(_):
    """An SSE-C version is sent as it is stored, sealed, with its descriptor:
    the replica reads with the same customer key only (400 without it, 403
    with another), with the source's bytes, ETag, size and checksum."""
    s, d, sb, db = pair("ssec")
    configure(s, sb, db)
    key, other = os.urandom(32), os.urandom(32)
    body = os.urandom(200000)  # several 64 KiB chunks
    before = metric(SRC.endpoint, "strata_replication_sse_c_refused_total")
    vid = s.put_object(Bucket=sb, Key="c", Body=body, SSECustomerAlgorithm="AES256",
                       SSECustomerKey=key, Metadata={"m": "1"},
                       ChecksumAlgorithm="CRC32")["VersionId"]
    wait_ssec_status(s, sb, "c", vid, key, "COMPLETED")
    a = s.head_object(Bucket=sb, Key="c", VersionId=vid, SSECustomerAlgorithm="AES256",
                      SSECustomerKey=key, ChecksumMode="ENABLED")
    b = d.get_object(Bucket=db, Key="c", VersionId=vid, SSECustomerAlgorithm="AES256",
                     SSECustomerKey=key, ChecksumMode="ENABLED")
    assert b["Body"].read() == body
    assert b["ReplicationStatus"] == "REPLICA" and b["VersionId"] == vid, b
    assert b["SSECustomerAlgorithm"] == "AES256", b
    assert b["SSECustomerKeyMD5"] == base64.b64encode(hashlib.md5(key).digest()).decode()
    assert b["ETag"] == a["ETag"] and b["ContentLength"] == a["ContentLength"] == len(body)
    assert b["ChecksumCRC32"] == a["ChecksumCRC32"], (a, b)
    assert b["Metadata"] == {"m": "1"} and b["LastModified"] == a["LastModified"]
    rg = d.get_object(Bucket=db, Key="c", VersionId=vid, Range="bytes=65530-131080",
                      SSECustomerAlgorithm="AES256", SSECustomerKey=key)["Body"].read()
    assert rg == body[65530:131081]
    expect_error(lambda: d.get_object(Bucket=db, Key="c", VersionId=vid), "InvalidRequest", 400)
    expect_error(lambda: d.head_object(Bucket=db, Key="c", VersionId=vid), "400", 400)
    expect_error(lambda: d.get_object(Bucket=db, Key="c", VersionId=vid,
                                      SSECustomerAlgorithm="AES256", SSECustomerKey=other),
                 "AccessDenied", 403)
    assert metric(SRC.endpoint, "strata_replication_sse_c_refused_total") == before



@test
def sse_c_multipart_replicated(_):
    """A multipart SSE-C version goes sealed too, each part as its own sealed
    stream under the source's part number: on the target the same bytes, the
    same "-N" ETag and checksum of the parts, parts as on the source, a range
    across a part boundary read with the customer key; without the key 400,
    with another 403; nothing counted as refused."""
    s, d, sb, db = pair("ssecm")
    configure(s, sb, db)
    key, other = os.urandom(32), os.urandom(32)
    ssec = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    before = metric(SRC.endpoint, "strata_replication_sse_c_refused_total")
    up = s.create_multipart_upload(Bucket=sb, Key="mc", Metadata={"m": "2"},
                                   ChecksumAlgorithm="CRC32", **ssec)["UploadId"]
    # Part numbers with gaps: each part's stream is sealed under its number.
    parts = {2: os.urandom((5 << 20) + 1000), 5: os.urandom(5 << 20), 9: os.urandom(70000)}
    done = {n: s.upload_part(Bucket=sb, Key="mc", UploadId=up, PartNumber=n, Body=p,
                             ChecksumAlgorithm="CRC32", **ssec) for n, p in parts.items()}
    mv = s.complete_multipart_upload(Bucket=sb, Key="mc", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": n, "ETag": x["ETag"], "ChecksumCRC32": x["ChecksumCRC32"]}
                  for n, x in done.items()]})["VersionId"]
    wait_ssec_status(s, sb, "mc", mv, key, "COMPLETED")
    body = b"".join(parts.values())
    a = s.head_object(Bucket=sb, Key="mc", VersionId=mv, ChecksumMode="ENABLED", **ssec)
    b = d.get_object(Bucket=db, Key="mc", VersionId=mv, ChecksumMode="ENABLED", **ssec)
    assert b["Body"].read() == body
    assert b["ReplicationStatus"] == "REPLICA" and b["VersionId"] == mv, b
    assert a["ETag"].endswith('-3"') and b["ETag"] == a["ETag"], (a["ETag"], b["ETag"])
    assert b["ContentLength"] == a["ContentLength"] == len(body)
    assert b["ChecksumCRC32"] == a["ChecksumCRC32"] and a["ChecksumCRC32"].endswith("-3"), (a, b)
    assert b["SSECustomerKeyMD5"] == base64.b64encode(hashlib.md5(key).digest()).decode()
    assert b["Metadata"] == {"m": "2"} and b["LastModified"] == a["LastModified"]
    for i, n in enumerate(parts):
        pb = d.head_object(Bucket=db, Key="mc", VersionId=mv, PartNumber=i + 1, **ssec)
        assert pb["ContentLength"] == len(parts[n]) and pb["PartsCount"] == 3, pb
    # Across the boundary of the first and second part, and of the second
    # and third (the second's last chunk is a short one).
    for lo, hi in ((len(parts[2]) - 70000, len(parts[2]) + 70000),
                   (len(body) - 70000 - 10, len(body) - 1)):
        rg = d.get_object(Bucket=db, Key="mc", VersionId=mv, Range=f"bytes={lo}-{hi}",
                          **ssec)["Body"].read()
        assert rg == body[lo:hi + 1], (lo, hi)
    expect_error(lambda: d.get_object(Bucket=db, Key="mc", VersionId=mv), "InvalidRequest", 400)
    expect_error(lambda: d.get_object(Bucket=db, Key="mc", VersionId=mv, Range="bytes=0-9"),
                 "InvalidRequest", 400)
    expect_error(lambda: d.get_object(Bucket=db, Key="mc", VersionId=mv,
                                      SSECustomerAlgorithm="AES256", SSECustomerKey=other),
                 "AccessDenied", 403)
    assert metric(SRC.endpoint, "strata_replication_sse_c_refused_total") == before
    assert d.list_multipart_uploads(Bucket=db).get("Uploads", []) == []


def kms_rule(db, status="Enabled", replica_key="dst1"):
    r = rule(db)
    r["SourceSelectionCriteria"] = {"SseKmsEncryptedObjects": {"Status": status}}
    if replica_key:
        r["Destination"]["EncryptionConfiguration"] = {"ReplicaKmsKeyID": replica_key}
    return r


@test
def sse_kms_replicated_when_selected(_):
    """With SseKmsEncryptedObjects Enabled an SSE-KMS version is encrypted on
    the target under ReplicaKmsKeyID (the source's key is not there), with
    its context, bytes, ETag and size; the rule round-trips."""
    s, d, sb, db = pair("kmsy")
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={
        "Role": ROLE, "Rules": [kms_rule(db)]})
    got = s.get_bucket_replication(Bucket=sb)["ReplicationConfiguration"]["Rules"][0]
    assert got["SourceSelectionCriteria"] == {"SseKmsEncryptedObjects": {"Status": "Enabled"}}
    assert got["Destination"]["EncryptionConfiguration"] == {"ReplicaKmsKeyID": "dst1"}
    body = os.urandom(150000)
    ctx = base64.b64encode(json.dumps({"project": "p1"}).encode()).decode()
    vid = s.put_object(Bucket=sb, Key="k", Body=body, ServerSideEncryption="aws:kms",
                       SSEKMSKeyId="src1", SSEKMSEncryptionContext=ctx)["VersionId"]
    wait_status(s, sb, "k", vid, "COMPLETED")
    a = s.head_object(Bucket=sb, Key="k", VersionId=vid)
    b = d.get_object(Bucket=db, Key="k", VersionId=vid)
    assert b["Body"].read() == body
    assert b["ReplicationStatus"] == "REPLICA" and b["VersionId"] == vid
    assert b["ServerSideEncryption"] == "aws:kms" and b["SSEKMSKeyId"] == "dst1", b
    assert a["SSEKMSKeyId"] == "src1"
    assert b["ResponseMetadata"]["HTTPHeaders"]["x-amz-server-side-encryption-context"] == ctx
    assert b["ETag"] == a["ETag"] != '"%s"' % hashlib.md5(body).hexdigest(), (a, b)
    assert b["ContentLength"] == a["ContentLength"] == len(body)


@test
def sse_kms_same_key_sent_sealed(_):
    """When ReplicaKmsKeyID is the key an SSE-KMS version is sealed under and
    the target holds that same key, the version goes as stored (counted in
    strata_replication_sse_kms_sealed_total): the target reads it with that
    key, same bytes, ETag, context and size; a multipart one too.  A key of
    the same name but other bytes there does not unwrap it: the source then
    sends the plaintext, encrypted again under the target's key."""
    s, d, sb, db = pair("kmss")
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={
        "Role": ROLE, "Rules": [kms_rule(db, replica_key="same1")]})
    before = metric(SRC.endpoint, "strata_replication_sse_kms_sealed_total")
    body = os.urandom(150000)
    ctx = base64.b64encode(json.dumps({"project": "p2"}).encode()).decode()
    vid = s.put_object(Bucket=sb, Key="k", Body=body, ServerSideEncryption="aws:kms",
                       SSEKMSKeyId="same1", SSEKMSEncryptionContext=ctx)["VersionId"]
    wait_status(s, sb, "k", vid, "COMPLETED")
    assert metric(SRC.endpoint, "strata_replication_sse_kms_sealed_total") == before + 1
    a = s.head_object(Bucket=sb, Key="k", VersionId=vid)
    b = d.get_object(Bucket=db, Key="k", VersionId=vid)
    assert b["Body"].read() == body
    assert b["ReplicationStatus"] == "REPLICA" and b["SSEKMSKeyId"] == "same1", b
    assert b["ResponseMetadata"]["HTTPHeaders"]["x-amz-server-side-encryption-context"] == ctx
    assert b["ETag"] == a["ETag"] and b["ContentLength"] == a["ContentLength"] == len(body)
    rg = d.get_object(Bucket=db, Key="k", VersionId=vid, Range="bytes=65000-70000")
    assert rg["Body"].read() == body[65000:70001]

    parts = [os.urandom(5 << 20), os.urandom(3000)]
    mv = mpu_put(s, sb, "m", parts, ServerSideEncryption="aws:kms", SSEKMSKeyId="same1")
    wait_status(s, sb, "m", mv, "COMPLETED")
    assert metric(SRC.endpoint, "strata_replication_sse_kms_sealed_total") == before + 2
    b = d.get_object(Bucket=db, Key="m", VersionId=mv)
    assert b["Body"].read() == b"".join(parts) and b["SSEKMSKeyId"] == "same1", b
    assert b["ETag"] == s.head_object(Bucket=sb, Key="m", VersionId=mv)["ETag"]
    lo = len(parts[0]) - 100
    rg = d.get_object(Bucket=db, Key="m", VersionId=mv, Range=f"bytes={lo}-{lo + 199}")
    assert rg["Body"].read() == b"".join(parts)[lo:lo + 200]

    # The same name, another key on the target: encrypted again there.
    s2, d2, sb2, db2 = pair("kmsd")
    s2.put_bucket_replication(Bucket=sb2, ReplicationConfiguration={
        "Role": ROLE, "Rules": [kms_rule(db2, replica_key="diff1")]})
    vid = s2.put_object(Bucket=sb2, Key="k", Body=body, ServerSideEncryption="aws:kms",
                        SSEKMSKeyId="diff1")["VersionId"]
    wait_status(s2, sb2, "k", vid, "COMPLETED")
    assert metric(SRC.endpoint, "strata_replication_sse_kms_sealed_total") == before + 2
    b = d2.get_object(Bucket=db2, Key="k", VersionId=vid)
    assert b["Body"].read() == body and b["SSEKMSKeyId"] == "diff1", b
    assert b["ETag"] == s2.head_object(Bucket=sb2, Key="k", VersionId=vid)["ETag"]


@test
def sse_kms_not_replicated_unless_selected(_):
    """A rule without SseKmsEncryptedObjects, or with it Disabled, does not
    replicate SSE-KMS versions (AWS's rule): FAILED, counted, nothing on the
    target; an unencrypted version of the same rule still goes."""
    for status in (None, "Disabled"):
        s, d, sb, db = pair("kmsn")
        r = kms_rule(db, status, None) if status else rule(db)
        s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={"Role": ROLE, "Rules": [r]})
        before = metric(SRC.endpoint, "strata_replication_sse_kms_refused_total")
        vid = s.put_object(Bucket=sb, Key="k", Body=b"kms", ServerSideEncryption="aws:kms",
                           SSEKMSKeyId="src1")["VersionId"]
        wait_status(s, sb, "k", vid, "FAILED")
        assert metric(SRC.endpoint, "strata_replication_sse_kms_refused_total") == before + 1
        expect_error(lambda: d.head_object(Bucket=db, Key="k", VersionId=vid), "404", 404)
        pv = s.put_object(Bucket=sb, Key="p", Body=b"plain")["VersionId"]
        wait_status(s, sb, "p", pv, "COMPLETED")
        assert same_version(s, d, sb, db, "p", pv) == b"plain"


@test
def put_multipart_copy_replicated(_):
    s, d, sb, db = pair("obj")
    configure(s, sb, db)
    data = os.urandom(100 * 1024)
    vid = s.put_object(Bucket=sb, Key="a/one", Body=data, ContentType="text/x-test",
                       Metadata={"colour": "blue"}, CacheControl="max-age=60",
                       ContentDisposition="attachment", ContentLanguage="fr",
                       Tagging="team=ml&stage=raw", ChecksumAlgorithm="SHA256")["VersionId"]
    st = s.head_object(Bucket=sb, Key="a/one", VersionId=vid)["ReplicationStatus"]
    assert st in ("PENDING", "COMPLETED"), st
    wait_status(s, sb, "a/one", vid, "COMPLETED")
    assert same_version(s, d, sb, db, "a/one", vid) == data
    tags = d.get_object_tagging(Bucket=db, Key="a/one", VersionId=vid)["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("stage", "raw"), ("team", "ml")]
    ck = d.head_object(Bucket=db, Key="a/one", VersionId=vid, ChecksumMode="ENABLED")
    assert ck["ChecksumSHA256"] == base64.b64encode(hashlib.sha256(data).digest()).decode()
    # A later tag change goes again.
    s.put_object_tagging(Bucket=sb, Key="a/one", VersionId=vid,
                         Tagging={"TagSet": [{"Key": "stage", "Value": "clean"}]})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        tags = d.get_object_tagging(Bucket=db, Key="a/one", VersionId=vid)["TagSet"]
        if tags == [{"Key": "stage", "Value": "clean"}]:
            break
        time.sleep(0.1)
    assert tags == [{"Key": "stage", "Value": "clean"}], tags
    wait_status(s, sb, "a/one", vid, "COMPLETED")
    assert same_version(s, d, sb, db, "a/one", vid) == data

    up = s.create_multipart_upload(Bucket=sb, Key="big", Metadata={"m": "1"})["UploadId"]
    parts = [os.urandom(5 << 20), os.urandom(1 << 20)]
    etags = [s.upload_part(Bucket=sb, Key="big", UploadId=up, PartNumber=i + 1,
                           Body=p)["ETag"] for i, p in enumerate(parts)]
    mvid = s.complete_multipart_upload(Bucket=sb, Key="big", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})["VersionId"]
    wait_status(s, sb, "big", mvid, "COMPLETED")
    assert same_version(s, d, sb, db, "big", mvid) == b"".join(parts)

    cvid = s.copy_object(Bucket=sb, Key="copy", CopySource={"Bucket": sb, "Key": "a/one"})[
        "VersionId"]
    wait_status(s, sb, "copy", cvid, "COMPLETED")
    assert same_version(s, d, sb, db, "copy", cvid) == data
    # A second version keeps the history in order on the target.
    v2 = s.put_object(Bucket=sb, Key="a/one", Body=b"second")["VersionId"]
    wait_status(s, sb, "a/one", v2, "COMPLETED")
    assert d.get_object(Bucket=db, Key="a/one")["VersionId"] == v2
    vs = [v["VersionId"] for v in d.list_object_versions(Bucket=db, Prefix="a/one")["Versions"]]
    assert vs == [v2, vid], vs


@test
def lock_settings_replicated(_):
    s, d, sb, db = pair("lock", lock=True)
    configure(s, sb, db)
    data = b"locked bytes"
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).replace(
        microsecond=0)
    vid = s.put_object(Bucket=sb, Key="w", Body=data, ObjectLockMode="GOVERNANCE",
                       ObjectLockRetainUntilDate=until, ObjectLockLegalHoldStatus="ON",
                       ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode())[
        "VersionId"]
    wait_status(s, sb, "w", vid, "COMPLETED")
    same_version(s, d, sb, db, "w", vid)
    h = d.head_object(Bucket=db, Key="w", VersionId=vid)
    assert h["ObjectLockMode"] == "GOVERNANCE" and h["ObjectLockLegalHoldStatus"] == "ON"
    assert h["ObjectLockRetainUntilDate"] == until
    # Later changes of the lock go again: a longer retention is taken.
    later = until + datetime.timedelta(hours=1)
    s.put_object_retention(Bucket=sb, Key="w", VersionId=vid, Retention={
        "Mode": "GOVERNANCE", "RetainUntilDate": later})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        h = d.head_object(Bucket=db, Key="w", VersionId=vid)
        if h["ObjectLockRetainUntilDate"] == later:
            break
        time.sleep(0.1)
    assert h["ObjectLockRetainUntilDate"] == later and h["ObjectLockLegalHoldStatus"] == "ON", h
    wait_status(s, sb, "w", vid, "COMPLETED")
    # A released legal hold is a PutObjectLegalHold on the target too.
    s.put_object_legal_hold(Bucket=sb, Key="w", VersionId=vid, LegalHold={"Status": "OFF"})
    h = wait_target(d, db, "w", vid, lambda h: h.get("ObjectLockLegalHoldStatus") == "OFF")
    assert h["ObjectLockRetainUntilDate"] == later, h
    wait_status(s, sb, "w", vid, "COMPLETED")
    # A shorter retention is not taken there: the source reports FAILED.
    s.put_object_retention(Bucket=sb, Key="w", VersionId=vid, BypassGovernanceRetention=True,
                           Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
    wait_status(s, sb, "w", vid, "FAILED")
    h = d.head_object(Bucket=db, Key="w", VersionId=vid)
    assert h["ObjectLockRetainUntilDate"] == later, h
    # A locked replica keeps its bytes: other bytes under its id are refused.
    def add_hdr(request, **_):
        request.headers["x-strata-replica-version-id"] = vid
    d.meta.events.register("before-sign.s3.PutObject", add_hdr)
    try:
        other = b"other bytes!"
        expect_error(lambda: d.put_object(
            Bucket=db, Key="w", Body=other,
            ContentMD5=base64.b64encode(hashlib.md5(other).digest()).decode()),
            "AccessDenied", 403)
    finally:
        d.meta.events.unregister("before-sign.s3.PutObject", add_hdr)
    assert d.get_object(Bucket=db, Key="w", VersionId=vid)["Body"].read() == data


@test
def delete_markers(_):
    s, d, sb, db = pair("dm")
    configure(s, sb, db, dm="Enabled")
    vid = s.put_object(Bucket=sb, Key="k", Body=b"x")["VersionId"]
    wait_status(s, sb, "k", vid, "COMPLETED")
    dm = s.delete_object(Bucket=sb, Key="k")["VersionId"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        markers = d.list_object_versions(Bucket=db, Prefix="k").get("DeleteMarkers", [])
        if markers:
            break
        time.sleep(0.1)
    assert [m["VersionId"] for m in markers] == [dm], markers
    expect_error(lambda: d.get_object(Bucket=db, Key="k"), "NoSuchKey", 404)
    # A delete of a version is not replicated (AWS).
    s.delete_object(Bucket=sb, Key="k", VersionId=vid)
    time.sleep(1.5)
    assert d.get_object(Bucket=db, Key="k", VersionId=vid)["Body"].read() == b"x"

    s2, d2, sb2, db2 = pair("nodm")
    configure(s2, sb2, db2, dm="Disabled")
    vid = s2.put_object(Bucket=sb2, Key="k", Body=b"y")["VersionId"]
    wait_status(s2, sb2, "k", vid, "COMPLETED")
    s2.delete_object(Bucket=sb2, Key="k")
    time.sleep(1.5)
    assert not d2.list_object_versions(Bucket=db2, Prefix="k").get("DeleteMarkers")
    assert d2.get_object(Bucket=db2, Key="k")["Body"].read() == b"y"


@test
def prefix_filter(_):
    s, d, sb, db = pair("pfx")
    configure(s, sb, db, prefix="keep/")
    v1 = s.put_object(Bucket=sb, Key="keep/a", Body=b"1")["VersionId"]
    v2 = s.put_object(Bucket=sb, Key="skip/a", Body=b"2")["VersionId"]
    wait_status(s, sb, "keep/a", v1, "COMPLETED")
    assert "ReplicationStatus" not in s.head_object(Bucket=sb, Key="skip/a", VersionId=v2)
    time.sleep(1)
    keys = [o["Key"] for o in d.list_objects_v2(Bucket=db).get("Contents", [])]
    assert keys == ["keep/a"], keys


@test
def peer_header_needs_permission(_):
    """The version-id header is a peer's: a caller without
    s3:ReplicateObject on the bucket is refused and nothing is stored."""
    d = DST.client()
    db = DST.bucket_name("peer")
    d.create_bucket(Bucket=db)
    d.put_bucket_versioning(Bucket=db, VersioningConfiguration={"Status": "Enabled"})
    # Root owns the bucket and may; an anonymous caller may not.
    import urllib.request
    req = urllib.request.Request(f"{DST.endpoint}/{db}/k", data=b"x", method="PUT",
                                 headers={"x-strata-replica-version-id": "0" * 32})
    try:
        urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=10)
        raise AssertionError("an anonymous replica was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 403, e.code
    assert "Contents" not in d.list_objects_v2(Bucket=db)
    # Only PutObject, DeleteObject (without versionId), a multipart upload's
    # create and complete, and the tag, retention, legal hold and ACL
    # changes of a version take it: elsewhere it would be dropped, so it is refused.
    vid = d.put_object(Bucket=db, Key="plain", Body=b"p")["VersionId"]

    def with_hdr(event, fn):
        def add(request, **_):
            request.headers["x-strata-replica-version-id"] = vid
        d.meta.events.register(event, add)
        try:
            return fn()
        finally:
            d.meta.events.unregister(event, add)
    expect_error(lambda: with_hdr("before-sign.s3.CopyObject", lambda: d.copy_object(
        Bucket=db, Key="c", CopySource={"Bucket": db, "Key": "plain"})), "NotImplemented", 501)
    expect_error(lambda: with_hdr("before-sign.s3.PutBucketAcl", lambda:
                                  d.put_bucket_acl(Bucket=db, ACL="private")),
                 "NotImplemented", 501)
    expect_error(lambda: with_hdr("before-sign.s3.DeleteObject", lambda: d.delete_object(
        Bucket=db, Key="plain", VersionId=vid)), "InvalidRequest", 400)
    assert d.get_object(Bucket=db, Key="plain", VersionId=vid)["Body"].read() == b"p"
    assert [o["Key"] for o in d.list_objects_v2(Bucket=db)["Contents"]] == ["plain"]


@test
def target_down_then_back(_):
    s, d, sb, db = pair("down")
    configure(s, sb, db)
    DST.proc.send_signal(19)  # SIGSTOP: the target answers nothing
    try:
        vid = s.put_object(Bucket=sb, Key="k", Body=b"while down")["VersionId"]
        time.sleep(2)
        assert s.head_object(Bucket=sb, Key="k", VersionId=vid)["ReplicationStatus"] == "PENDING"
    finally:
        DST.proc.send_signal(18)  # SIGCONT
    wait_status(s, sb, "k", vid, "COMPLETED", timeout=60)
    assert same_version(s, d, sb, db, "k", vid) == b"while down"


def killed_with_pending(prefix, between=None, after=None):
    """Target stopped, 20 PUTs queued, kill -9 of the source and a restart
    (between() while it is down, after() once it is up), target back: all
    20 COMPLETED and on the target with their bytes and version ids."""
    s, d, sb, db = pair(prefix)
    configure(s, sb, db)
    DST.proc.send_signal(19)
    try:
        vids = {f"k{i}": s.put_object(Bucket=sb, Key=f"k{i}", Body=f"v{i}".encode())["VersionId"]
                for i in range(20)}
        SRC.restart(kill=True, between=between)
        if after:
            after()
    finally:
        DST.proc.send_signal(18)
    s = SRC.client()
    for k, vid in vids.items():
        wait_status(s, sb, k, vid, "COMPLETED", timeout=60)
        assert same_version(s, d, sb, db, k, vid) == f"v{k[1:]}".encode()
    assert len(d.list_object_versions(Bucket=db)["Versions"]) == 20


@test
def kill9_with_pending(_):
    killed_with_pending("kill")


def local_only(fn):
    """A test of the queue's files on the source's drives: not run when
    the source is on RADOS (its queue is in the cluster)."""
    return test(fn) if BACKEND == "local" else fn


@local_only
def pending_survives_first_drive_loss(_):
    """The source's first drive replaced by an empty directory while
    versions wait: the queue's copy on the second drive is copied back to
    the first at the restart, and every version arrives."""
    import shutil
    q0 = os.path.join(SRC.drives[0], "replication", "site2.q")
    q1 = os.path.join(SRC.drives[1], "replication", "site2.q")

    def replace_drive0():
        assert os.path.getsize(q1) == os.path.getsize(q0) > 0, "a copy on each drive"
        shutil.rmtree(SRC.drives[0])
        os.mkdir(SRC.drives[0])

    def rebuilt():
        assert os.path.getsize(q0) == os.path.getsize(q1) > 0, "drive 0's copy rebuilt"
    killed_with_pending("dloss", between=replace_drive0, after=rebuilt)


@test
def options_checked(_):
    def strata(*args):
        p = subprocess.run([os.environ["STRATA_BIN"], *args], capture_output=True, text=True,
                           timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": SRC.home})
        return p.returncode, p.stdout, p.stderr
    rc, out, err = strata("--print-config", "--replication-target", "a:http://h:1",
                          "--replication-target", "b_2:https://h.example:443",
                          "--tier-credentials", creds)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["replication-targets"] == ["a:http://h:1", "b_2:https://h.example:443"], doc
    assert doc["tier-credentials"] == creds
    for bad in ("noport:http://h", "x:ftp://h:1", ":http://h:1", "a b:http://h:1",
                "p:http://h:1/bucket", "nourl"):
        rc, out, err = strata("--print-config", "--replication-target", bad)
        assert rc == 2 and "--replication-target" in err and not out, (bad, rc, out, err)
    # Credentials: required, and NAME must be in the file.
    d = [os.path.join(DST.tmp, f"optdrive{i}") for i in range(4)]
    for x in d:
        os.makedirs(x, exist_ok=True)
    rc, out, err = strata("server", "--address", "127.0.0.1:1", "--replication-target",
                          "site2:http://127.0.0.1:2", *d)
    assert rc != 0 and "--tier-credentials" in out + err, (rc, out, err)
    rc, out, err = strata("server", "--address", "127.0.0.1:1", "--replication-target",
                          "site3:http://127.0.0.1:2", "--tier-credentials", creds, *d)
    assert rc != 0 and "no credentials for site3" in out + err, (rc, out, err)


def admin_cli(*args):
    env = {"PATH": "/usr/bin:/bin", "HOME": SRC.home, "STRATA_ENDPOINT": SRC.endpoint,
           "STRATA_ACCESS_KEY": SRC.ak, "STRATA_SECRET_KEY": SRC.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", *args], env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@test
def admin_replicate_existing(_):
    s, d, sb, db = pair("old")
    before = {f"old/{i}": s.put_object(Bucket=sb, Key=f"old/{i}", Body=f"o{i}".encode())[
        "VersionId"] for i in range(30)}
    s.put_object(Bucket=sb, Key="other/x", Body=b"not selected")
    configure(s, sb, db, prefix="old/")
    assert "Contents" not in d.list_objects_v2(Bucket=db)
    rc, out, err = admin_cli("replicate", sb)
    assert rc == 0, (rc, out, err)
    lines = out.splitlines()
    assert lines[0] == f"{sb}: 31 versions and delete markers, 30 queued for replication", out
    assert lines[-1] == f"{sb}: 30 of 30 replicated or failed", out
    for k, vid in before.items():
        assert s.head_object(Bucket=sb, Key=k)["ReplicationStatus"] == "COMPLETED"
        assert same_version(s, d, sb, db, k, vid) == f"o{k[4:]}".encode()
    assert "ReplicationStatus" not in s.head_object(Bucket=sb, Key="other/x")
    # Done once: a second run finds nothing left to replicate.
    rc, out, err = admin_cli("replicate", sb)
    assert rc == 0 and out.splitlines()[0] == \
        f"{sb}: 31 versions and delete markers, 0 queued for replication", out
    rc, out, err = admin_cli("replication", "status")
    assert rc == 0 and out.splitlines()[1].split()[:2] == ["site2", DST.endpoint], out
    # A bucket without a replication configuration: 404 from the API, exit 1.
    plain = SRC.bucket_name("oldplain")
    s.create_bucket(Bucket=plain)
    rc, out, err = admin_cli("replicate", plain)
    assert rc == 1 and "no replication configuration" in err, (rc, out, err)


def history(c, b, k):
    """k's versions and delete markers, newest first: (id, marker, latest)."""
    es = []
    for r in c.get_paginator("list_object_versions").paginate(Bucket=b, Prefix=k):
        es += [(v["LastModified"], v["VersionId"], False, v["IsLatest"])
               for v in r.get("Versions", []) if v["Key"] == k]
        es += [(m["LastModified"], m["VersionId"], True, m["IsLatest"])
               for m in r.get("DeleteMarkers", []) if m["Key"] == k]
    es.sort(reverse=True)
    return [e[1:] for e in es]


def entry_status(c, b, k, vid):
    """The replication status of version vid (None: a delete marker, whose
    HEAD by id answers 405 without it)."""
    try:
        return c.head_object(Bucket=b, Key=k, VersionId=vid).get("ReplicationStatus")
    except botocore.exceptions.ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 405, e.response
        return None


def same_history(s, d, sb, db, k):
    """The target's history of k is the source's (ids, markers, which is
    latest), each version with the source's bytes and headers, every entry
    COMPLETED on the source."""
    hs = history(s, sb, k)
    assert history(d, db, k) == hs, (k, history(d, db, k), hs)
    for vid, marker, _ in hs:
        if not marker:
            same_version(s, d, sb, db, k, vid)  # COMPLETED there, REPLICA here
    return hs


@test
def admin_replicate_history(_):
    """`strata admin replicate` with DeleteMarkerReplication Enabled sends
    every version and delete marker not replicated yet: those written
    before the rule (no status), older than a version replicated since,
    and FAILED ones; the target's history of each key is the source's."""
    s, d, sb, db = pair("hist")
    db2 = DST.bucket_name("hist2d")  # f/'s destination, made later
    pre = {}
    for k, ops in (("a", "PDPD"), ("b", "PD"), ("c", "PP"), ("m", "D")):
        for i, op in enumerate(ops):
            if op == "P":
                s.put_object(Bucket=sb, Key=k, Body=f"{k}{i}".encode())
            else:
                s.delete_object(Bucket=sb, Key=k)
        pre[k] = history(s, sb, k)
    s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={"Role": ROLE, "Rules": [
        rule(db, dm="Enabled"), rule(db2, prefix="f/", dm="Enabled", rid="r2", priority=2)]})
    # Replicated since the rule: a's older entries come after it.
    v3 = s.put_object(Bucket=sb, Key="a", Body=b"a-new")["VersionId"]
    wait_status(s, sb, "a", v3, "COMPLETED")
    # f/'s target bucket is missing: FAILED, the delete marker between
    # them too (a key's changes go in order).
    fv = [s.put_object(Bucket=sb, Key="f/k", Body=b"f0")["VersionId"],
          s.delete_object(Bucket=sb, Key="f/k")["VersionId"],
          s.put_object(Bucket=sb, Key="f/k", Body=b"f2")["VersionId"]]
    for vid in fv[::2]:
        wait_status(s, sb, "f/k", vid, "FAILED")
    d.create_bucket(Bucket=db2)
    d.put_bucket_versioning(Bucket=db2, VersioningConfiguration={"Status": "Enabled"})
    rc, out, err = admin_cli("replicate", sb)
    assert rc == 0, (rc, out, err)
    lines = out.splitlines()
    # 4 + 2 + 2 + 1 written before the rule, 3 FAILED; a's new one done.
    assert lines[0] == f"{sb}: 13 versions and delete markers, 12 queued for replication", out
    assert lines[-1] == f"{sb}: 12 of 12 replicated or failed", out
    for k in pre:
        hs = [e[:2] for e in same_history(s, d, sb, db, k)]
        assert hs[len(hs) - len(pre[k]):] == [e[:2] for e in pre[k]], (k, hs, pre[k])
    assert same_history(s, d, sb, db, "a")[0] == (v3, False, True)
    assert [e[0] for e in same_history(s, d, sb, db2, "f/k")] == fv[::-1]
    expect_error(lambda: d.get_object(Bucket=db, Key="m"), "NoSuchKey", 404)
    rc, out, err = admin_cli("replicate", sb)
    assert rc == 0 and out.splitlines()[0] == \
        f"{sb}: 13 versions and delete markers, 0 queued for replication", out


@test
def turn_reads_past_a_page(_):
    """A version committed PENDING but never queued (the source killed -9
    between its commit and its push), then 1001 versions no rule selected
    (written while the bucket had no replication configuration), then one
    replicated: its turn sends the first one ahead although it is past the
    key's newest 1000 entries."""
    s, d, sb, db = pair("page")
    configure(s, sb, db)
    SRC.extra_env["STRATA_DEBUG_REPL_QUEUE_DELAY_MS"] = "60000"
    SRC.restart()
    import threading
    # One attempt only: a retry would reach the restarted daemon.
    once = boto3.session.Session().client(
        "s3", endpoint_url=SRC.endpoint, region_name=REGION, aws_access_key_id=SRC.ak,
        aws_secret_access_key=SRC.sk, config=botocore.config.Config(
            s3={"addressing_style": "path"}, retries={"total_max_attempts": 1},
            read_timeout=120))

    def put_v0():
        try:
            once.put_object(Bucket=sb, Key="k", Body=b"v0")
        except Exception:
            pass  # the daemon is killed before it answers
    threading.Thread(target=put_v0, daemon=True).start()
    v0 = wait_until("v0 committed", lambda: s.list_object_versions(Bucket=sb, Prefix="k").get(
        "Versions"), timeout=30)[0]["VersionId"]
    del SRC.extra_env["STRATA_DEBUG_REPL_QUEUE_DELAY_MS"]
    SRC.restart(kill=True)
    assert entry_status(s, sb, "k", v0) == "PENDING"
    s.delete_bucket_replication(Bucket=sb)

    def put(i):
        return s.put_object(Bucket=sb, Key="k", Body=f"v{i}".encode())["VersionId"]
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        between = list(ex.map(put, range(1, 1002)))
    configure(s, sb, db)
    last = put(1002)
    wait_status(s, sb, "k", last, "COMPLETED")
    assert entry_status(s, sb, "k", v0) == "COMPLETED"
    assert same_version(s, d, sb, db, "k", v0) == b"v0"
    assert same_version(s, d, sb, db, "k", last) == b"v1002"
    assert [e[0] for e in history(d, db, "k")] == [last, v0]
    assert entry_status(s, sb, "k", between[0]) is None


@test
def two_targets_status(_):
    """Two targets, a rule each (AWS's multi-destination replication): a
    version goes to both with its id; the source says PENDING until both
    have it, then COMPLETED, or FAILED when one refused it; each target's
    own state is not shown; a delete marker goes to both."""
    import signal
    dst2 = Strata(keys=(DST.ak, DST.sk))
    with open(creds) as f:
        c = json.load(f)
    c["site3"] = {"access_key": dst2.ak, "secret_key": dst2.sk}
    with open(os.open(creds, os.O_WRONLY | os.O_TRUNC), "w") as f:
        json.dump(c, f)
    saved = list(SRC.args)
    i = SRC.args.index("--replication-target")
    SRC.args[i + 2:i + 2] = ["--replication-target", f"site3:{dst2.endpoint}"]
    try:
        SRC.restart()
        d2 = dst2.client()
        for prefix, make in (("two", True), ("twof", False)):
            s, d, sb, db = pair(prefix)
            db2 = dst2.bucket_name(prefix + "d")
            if make:
                d2.create_bucket(Bucket=db2)
                d2.put_bucket_versioning(Bucket=db2,
                                         VersioningConfiguration={"Status": "Enabled"})
            s.put_bucket_replication(Bucket=sb, ReplicationConfiguration={
                "Role": ROLE, "Rules": [rule(db, dm="Enabled"),
                                        rule(db2, dm="Enabled", rid="r2", priority=2,
                                             account="site3")]})
            dst2.proc.send_signal(signal.SIGSTOP)
            try:
                vid = s.put_object(Bucket=sb, Key="k", Body=prefix.encode())["VersionId"]
                wait_until("site2's copy", lambda: d.list_object_versions(
                    Bucket=db, Prefix="k").get("Versions"), timeout=30)
                time.sleep(1)
                h = s.head_object(Bucket=sb, Key="k", VersionId=vid)
                assert h.get("ReplicationStatus") == "PENDING", h
            finally:
                dst2.proc.send_signal(signal.SIGCONT)
            want = "COMPLETED" if make else "FAILED"
            wait_status(s, sb, "k", vid, want, timeout=60)
            h = s.head_object(Bucket=sb, Key="k", VersionId=vid)
            assert not [x for x in h["ResponseMetadata"]["HTTPHeaders"] if "targets" in x], h
            b = d.get_object(Bucket=db, Key="k", VersionId=vid)
            assert b["Body"].read() == prefix.encode() and b["ReplicationStatus"] == "REPLICA"
            assert not [x for x in b["ResponseMetadata"]["HTTPHeaders"] if "targets" in x]
            if make:
                assert same_version(s, d2, sb, db2, "k", vid) == prefix.encode()
                # A delete marker too, with its id on both.
                dm = s.delete_object(Bucket=sb, Key="k")["VersionId"]
                for c, b in ((d, db), (d2, db2)):
                    wait_until("the marker", lambda: history(c, b, "k")[0] == (dm, True, True),
                               timeout=30)
    finally:
        SRC.args[:] = saved
        SRC.restart()
        dst2.stop()


@test
def replayed_replica_is_one_version(_):
    """A replica sent twice (the source killed between the target's answer
    and its own acknowledgement) leaves one version with the last bytes."""
    d = DST.client()
    db = DST.bucket_name("replay")
    d.create_bucket(Bucket=db)
    d.put_bucket_versioning(Bucket=db, VersioningConfiguration={"Status": "Enabled"})
    vid = SRC.client().put_object(Bucket=pair("replaysrc")[2], Key="v", Body=b"-")["VersionId"]

    def add_hdr(request, **_):
        request.headers["x-strata-replica-version-id"] = vid
    d.meta.events.register("before-sign.s3.PutObject", add_hdr)
    try:
        for body in (b"first", b"second"):
            assert d.put_object(Bucket=db, Key="k", Body=body)["VersionId"] == vid
    finally:
        d.meta.events.unregister("before-sign.s3.PutObject", add_hdr)
    vs = d.list_object_versions(Bucket=db, Prefix="k")["Versions"]
    assert [v["VersionId"] for v in vs] == [vid], vs
    got = d.get_object(Bucket=db, Key="k")
    assert got["Body"].read() == b"second" and got["ReplicationStatus"] == "REPLICA"


@test
def metrics(_):
    import urllib.request
    s, d, sb, db = pair("met")
    configure(s, sb, db)
    vid = s.put_object(Bucket=sb, Key="m", Body=os.urandom(200 * 1024))["VersionId"]
    wait_status(s, sb, "m", vid, "COMPLETED")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def scrape():
        text = opener.open(f"{SRC.endpoint}/metrics", timeout=10).read().decode()
        for m in ("strata_replication_pending", "strata_replication_bytes_total",
                  "strata_replication_failed_total", "strata_replication_lag_seconds"):
            assert f'{m}{{target="site2"}}' in text, m
        return {x.split("{")[0]: float(x.split()[-1]) for x in text.splitlines()
                if x.startswith("strata_replication_")}
    # The version reads COMPLETED once the copy is stored there; the queue
    # counts it done a moment later (its record is acknowledged after the
    # send returns), so the gauge is polled until it drains.
    deadline = time.monotonic() + 30
    val = scrape()
    while val["strata_replication_pending"] != 0 and time.monotonic() < deadline:
        time.sleep(0.1)
        val = scrape()
    assert val["strata_replication_bytes_total"] >= 200 * 1024, val
    assert val["strata_replication_pending"] == 0, val
    assert 0 <= val["strata_replication_lag_seconds"] < 30, val


@test
def unknown_target_marked_failed(_):
    """A stored rule whose target the daemon no longer has (the option
    removed at a restart): new versions say FAILED and are counted, not
    skipped in silence."""
    import urllib.request
    s, d, sb, db = pair("gone")
    configure(s, sb, db)
    saved = list(SRC.args)
    i = SRC.args.index("--replication-target")
    del SRC.args[i:i + 2]
    try:
        SRC.restart()
        s = SRC.client()
        vid = s.put_object(Bucket=sb, Key="g", Body=b"gone")["VersionId"]
        h = s.head_object(Bucket=sb, Key="g", VersionId=vid)
        assert h.get("ReplicationStatus") == "FAILED", h
        text = urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"{SRC.endpoint}/metrics", timeout=10).read().decode()
        assert "strata_replication_unknown_target_total 1" in text.splitlines(), \
            [x for x in text.splitlines() if "unknown_target" in x]
        assert s.get_object(Bucket=sb, Key="g")["Body"].read() == b"gone"
    finally:
        SRC.args[:] = saved
        SRC.restart()
    expect_error(lambda: d.head_object(Bucket=db, Key="g"), "404", 404)


if __name__ == "__main__":
    try:
        run(SRC)
    except SystemExit as e:
        # The target's shutdown and sanitizer log count too.
        raise SystemExit(e.code if DST.stop() else 1)
