#!/usr/bin/python3
"""test_get_latest_cache.py - GETs and HEADs of a key answered from the
local store's latest-version cache (meta/local/rcache.c) never show a
version older than the last acknowledged change, through boto3 against a
live strata: every case reads the key twice first (the second read is the
cache's), then changes it and reads again.  Changes: PutObject, CopyObject
and CompleteMultipartUpload over it, DeleteObject (unversioned: 404
NoSuchKey; versioned: a delete marker, then the marker deleted by version
id brings the version back), tagging (TagCount), the object ACL (an
anonymous GET allowed, then refused), legal hold and retention (HEAD's
Object Lock headers); and readers racing a writer: once a PUT returned,
no GET sent after it shows an older body, and none answers 404 (on the
2+2 set and on a 3+1 set of its own).  After a restart (records only in
the drives' files, RocksDB's block cache empty) the lookups an event
thread cannot answer from memory continue on a storage worker: latest,
by version id, HEAD, Range, If-None-Match, a delete marker, a missing
key, and 100 KiB objects read by parallel clients all answer as before.
100 KiB inline objects (kept whole) never show old bytes after PutObject,
CopyObject or DeleteObject, also with a small --object-cache-mb that a
working set of 60 of them overflows.
Run by CTest with /usr/bin/python3.
"""

import datetime
import os
import shutil
import sys
import tempfile
import threading
import urllib.request

import botocore.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, run, test  # noqa: E402


def new_bucket(s, prefix, **kw):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b, **kw)
    return c, b


def body(c, b, k, **kw):
    return c.get_object(Bucket=b, Key=k, **kw)["Body"].read()


def warm(c, b, k, want):
    """Two GETs and a HEAD of the key: the later ones from the cache."""
    for _ in range(2):
        assert body(c, b, k) == want
    assert c.head_object(Bucket=b, Key=k)["ContentLength"] == len(want)


@test
def overwrite_copy_multipart(s):
    c, b = new_bucket(s, "rcw")
    v1, v2, v3, v4 = (os.urandom(4096), os.urandom(3000), os.urandom(5000), os.urandom(4100))
    c.put_object(Bucket=b, Key="k", Body=v1)
    warm(c, b, "k", v1)
    c.put_object(Bucket=b, Key="k", Body=v2)
    assert body(c, b, "k") == v2
    assert c.head_object(Bucket=b, Key="k")["ContentLength"] == len(v2)
    c.put_object(Bucket=b, Key="src", Body=v3, ContentType="text/x-src")
    warm(c, b, "k", v2)
    c.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "src"})
    g = c.get_object(Bucket=b, Key="k")
    assert g["Body"].read() == v3 and g["ContentType"] == "text/x-src", g["ContentType"]
    warm(c, b, "k", v3)
    up = c.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    e = c.upload_part(Bucket=b, Key="k", UploadId=up, PartNumber=1, Body=v4)["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="k", UploadId=up,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    g = c.get_object(Bucket=b, Key="k")
    assert g["Body"].read() == v4 and g["ETag"].endswith('-1"'), g["ETag"]


@test
def deletes(s):
    c, b = new_bucket(s, "rcd")
    data = os.urandom(2048)
    c.put_object(Bucket=b, Key="k", Body=data)
    warm(c, b, "k", data)
    c.delete_object(Bucket=b, Key="k")
    expect_error(lambda: c.get_object(Bucket=b, Key="k"), "NoSuchKey", 404)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)

    c, v = new_bucket(s, "rcv")
    c.put_bucket_versioning(Bucket=v, VersioningConfiguration={"Status": "Enabled"})
    old, new = os.urandom(1000), os.urandom(1200)
    c.put_object(Bucket=v, Key="k", Body=old)
    new_vid = c.put_object(Bucket=v, Key="k", Body=new)["VersionId"]
    warm(c, v, "k", new)
    marker = c.delete_object(Bucket=v, Key="k")
    assert marker["DeleteMarker"] is True
    r = expect_error(lambda: c.get_object(Bucket=v, Key="k"), "NoSuchKey", 404)
    assert r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker") == "true", r
    c.delete_object(Bucket=v, Key="k", VersionId=marker["VersionId"])
    assert body(c, v, "k") == new
    warm(c, v, "k", new)
    c.delete_object(Bucket=v, Key="k", VersionId=new_vid)
    assert body(c, v, "k") == old


@test
def tags_and_acl(s):
    c, b = new_bucket(s, "rct", ObjectOwnership="ObjectWriter")  # ACLs enabled
    data = os.urandom(4096)
    c.put_object(Bucket=b, Key="k", Body=data)
    warm(c, b, "k", data)
    assert "TagCount" not in c.get_object(Bucket=b, Key="k")
    c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "a", "Value": "1"},
                                                                {"Key": "b", "Value": "2"}]})
    assert c.get_object(Bucket=b, Key="k")["TagCount"] == 2
    warm(c, b, "k", data)
    c.delete_object_tagging(Bucket=b, Key="k")
    assert "TagCount" not in c.get_object(Bucket=b, Key="k")

    url = f"{s.endpoint}/{b}/k"

    def anonymous():
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, b""

    assert anonymous()[0] == 403
    warm(c, b, "k", data)
    c.put_object_acl(Bucket=b, Key="k", ACL="public-read")
    assert anonymous() == (200, data)
    c.put_object_acl(Bucket=b, Key="k", ACL="private")
    assert anonymous()[0] == 403


@test
def object_lock(s):
    c, b = new_bucket(s, "rcl", ObjectLockEnabledForBucket=True)
    data = os.urandom(3000)
    c.put_object(Bucket=b, Key="k", Body=data)
    warm(c, b, "k", data)
    h = c.head_object(Bucket=b, Key="k")
    assert "ObjectLockLegalHoldStatus" not in h and "ObjectLockMode" not in h, h
    c.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})
    assert c.head_object(Bucket=b, Key="k")["ObjectLockLegalHoldStatus"] == "ON"
    warm(c, b, "k", data)
    now = datetime.datetime.now(datetime.timezone.utc)
    until = (now + datetime.timedelta(days=1)).replace(microsecond=0)
    c.put_object_retention(Bucket=b, Key="k",
                           Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
    h = c.head_object(Bucket=b, Key="k")
    assert h["ObjectLockMode"] == "GOVERNANCE" and h["ObjectLockRetainUntilDate"] == until, h
    c.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    assert c.head_object(Bucket=b, Key="k")["ObjectLockLegalHoldStatus"] == "OFF"


def race(s):
    """Three readers GET a key while a writer overwrites it 120 times."""
    c, b = new_bucket(s, "rcr")
    c.put_object(Bucket=b, Key="k", Body=(0).to_bytes(4, "big") + os.urandom(2000))
    committed = [0]
    stop = threading.Event()
    bad = []

    absent = []

    def reader():
        rc = s.client()
        while not stop.is_set():
            before = committed[0]
            try:
                got = int.from_bytes(body(rc, b, "k")[:4], "big")
            except botocore.exceptions.ClientError as e:
                # The key exists throughout: an overwrite half applied on
                # the drives reads as the old or the new version, never 404.
                if e.response["Error"]["Code"] == "NoSuchKey":
                    absent.append(before)
                else:
                    bad.append((before, e.response["Error"]["Code"]))
                continue
            except Exception as e:  # noqa: BLE001 - any other failure is a finding
                bad.append((before, repr(e)))
                continue
            if got < before:
                bad.append((before, got))

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for n in range(1, 121):
            c.put_object(Bucket=b, Key="k", Body=n.to_bytes(4, "big") + os.urandom(2000))
            committed[0] = n
            assert int.from_bytes(body(c, b, "k")[:4], "big") == n
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not bad, f"GETs older than the last acknowledged PUT: {bad[:5]}"
    assert not absent, f"{len(absent)} GETs racing an overwrite answered 404 NoSuchKey"


@test
def readers_race_writer(s):
    race(s)


@test
def readers_race_writer_3p1(s):
    """A daemon of its own on a 3+1 set (read quorum 3 of 4): an overwrite
    applied on 2 drives has no quorum for either version, the old one
    tombstoned there."""
    if os.environ.get("STRATA_TEST_ENDPOINT"):
        return  # needs a daemon of its own
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    root = tempfile.mkdtemp(prefix="rc31.", dir=base)
    try:
        drives = ",".join(os.path.join(root, f"d{i}") for i in range(1, 5))
        s31 = Strata(args=["--tier", f"hot:3+1:{drives}"], drives=[])
        try:
            race(s31)
        finally:
            assert s31.stop(), "the 3+1 daemon's shutdown failed"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@test
def cold_lookups_after_restart(s):
    if os.environ.get("STRATA_TEST_ENDPOINT"):
        return  # needs a daemon of its own to restart
    c, b = new_bucket(s, "rcc")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1, v2, small = os.urandom(100 << 10), os.urandom(100 << 10), os.urandom(4096)
    vid1 = c.put_object(Bucket=b, Key="k", Body=v1)["VersionId"]
    etag2 = c.put_object(Bucket=b, Key="k", Body=v2)["ETag"]
    c.put_object(Bucket=b, Key="small", Body=small)
    c.put_object(Bucket=b, Key="gone", Body=small)
    c.delete_object(Bucket=b, Key="gone")
    many = {f"m{i:03d}": os.urandom(100 << 10) for i in range(48)}
    for k, v in many.items():
        c.put_object(Bucket=b, Key=k, Body=v)
    s.restart()
    c = s.client()
    g = c.get_object(Bucket=b, Key="k")
    assert g["Body"].read() == v2 and g["ETag"] == etag2 and g["ContentLength"] == len(v2)
    assert body(c, b, "k", VersionId=vid1) == v1
    h = c.head_object(Bucket=b, Key="small")
    assert h["ContentLength"] == len(small), h
    r = c.get_object(Bucket=b, Key="k", Range="bytes=100-199")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert r["Body"].read() == v2[100:200]
    assert r["ContentRange"] == f"bytes 100-199/{len(v2)}", r["ContentRange"]
    e = expect_error(lambda: c.get_object(Bucket=b, Key="k", IfNoneMatch=etag2), "304", 304)
    assert e["ResponseMetadata"]["HTTPHeaders"]["etag"] == etag2
    e = expect_error(lambda: c.get_object(Bucket=b, Key="gone"), "NoSuchKey", 404)
    assert e["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker") == "true", e
    expect_error(lambda: c.get_object(Bucket=b, Key="absent"), "NoSuchKey", 404)
    expect_error(lambda: c.head_object(Bucket=b, Key="absent"), "404", 404)
    # Parallel readers of cold keys: every body is its object's.
    bad = []

    def reader(keys):
        cl = s.client()
        for k in keys:
            if body(cl, b, k) != many[k]:
                bad.append(k)

    keys = sorted(many)
    ts = [threading.Thread(target=reader, args=(keys[i::4],)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad, f"wrong bodies for {bad}"


def large_objects(s):
    """100 KiB inline objects (kept whole by the cache): warm, then changed
    by PutObject, CopyObject and DeleteObject; a working set of 60 such
    keys read twice, each GET with its own key's bytes."""
    c, b = new_bucket(s, "rcl")
    v1, v2, v3 = (os.urandom(100 << 10) for _ in range(3))
    c.put_object(Bucket=b, Key="k", Body=v1)
    warm(c, b, "k", v1)
    c.put_object(Bucket=b, Key="k", Body=v2)
    assert body(c, b, "k") == v2
    warm(c, b, "k", v2)
    c.put_object(Bucket=b, Key="src", Body=v3)
    warm(c, b, "src", v3)
    c.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "src"})
    assert body(c, b, "k") == v3
    assert body(c, b, "k", Range="bytes=1000-1999") == v3[1000:2000]
    c.delete_object(Bucket=b, Key="k")
    expect_error(lambda: c.get_object(Bucket=b, Key="k"), "NoSuchKey", 404)
    many = {f"s/{i:05d}": os.urandom(100 << 10) for i in range(60)}
    for k, v in many.items():
        c.put_object(Bucket=b, Key=k, Body=v)
    for _ in range(2):
        for k, v in many.items():
            assert body(c, b, k) == v, k
    c.put_object(Bucket=b, Key="s/00059", Body=v1)
    assert body(c, b, "s/00059") == v1


@test
def large_inline_objects(s):
    large_objects(s)


@test
def large_inline_objects_small_cache(s):
    """A daemon of its own whose --object-cache-mb (4) holds a few dozen
    100 KiB objects: a working set over it turns over, never stale."""
    if os.environ.get("STRATA_TEST_ENDPOINT"):
        return  # needs a daemon of its own
    small = Strata(args=["--object-cache-mb", "4"])
    try:
        large_objects(small)
    finally:
        assert small.stop(), "the daemon's shutdown failed"


if __name__ == "__main__":
    run(Strata())
