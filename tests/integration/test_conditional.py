#!/usr/bin/python3
"""test_conditional.py - conditional writes against a live strata:
If-None-Match: * and If-Match on PutObject and CompleteMultipartUpload
(412 PreconditionFailed when they do not hold, nothing changed), a delete
marker counts as "no object", and a race of 8 threads putting the same new
key with If-None-Match: * (exactly one 200, the rest 412, the stored bytes
are the winner's).  boto3 1.26 has no parameters for these headers, so
they are added by a before-sign event hook.  Run by CTest with
/usr/bin/python3.
"""

import concurrent.futures
import hashlib
import os
import sys
import threading

import botocore.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, md5_hex, run, test  # noqa: E402

MiB = 1024 * 1024


def body_of(resp):
    return resp["Body"].read()


def cond_client(s, op, header, value):
    """A client whose every `op` call carries header: value (signed)."""
    c = s.client()
    c.meta.events.register(f"before-sign.s3.{op}",
                           lambda request, **kw: request.headers.__setitem__(header, value))
    return c


def missing_key_fails(fn):
    """If-Match on a key without a current version: 404 NoSuchKey, as AWS's
    conditional-writes guide says (not RFC 7232's 412)."""
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        got = (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
        assert got == (404, "NoSuchKey"), got
        return
    raise AssertionError("If-Match on a missing key succeeded")


def new_bucket(s, prefix, versioning=None):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    if versioning:
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": versioning})
    return c, b


@test
def put_if_none_match_star(s):
    c, b = new_bucket(s, "inm")
    cc = cond_client(s, "PutObject", "If-None-Match", "*")
    r = cc.put_object(Bucket=b, Key="k", Body=b"first")
    assert r["ETag"] == f'"{md5_hex(b"first")}"'
    e = expect_error(lambda: cc.put_object(Bucket=b, Key="k", Body=b"second"), "PreconditionFailed", 412)
    assert e["Error"].get("Message"), e
    g = c.get_object(Bucket=b, Key="k")
    assert body_of(g) == b"first", "a refused conditional PUT changed the object"
    # Bigger than the inline limit (stored as shard files) behaves the same.
    big = os.urandom(3 * MiB)
    cc.put_object(Bucket=b, Key="big", Body=big)
    expect_error(lambda: cc.put_object(Bucket=b, Key="big", Body=os.urandom(3 * MiB)), "PreconditionFailed", 412)
    assert body_of(c.get_object(Bucket=b, Key="big")) == big
    # After a delete the key is free again.
    c.delete_object(Bucket=b, Key="k")
    cc.put_object(Bucket=b, Key="k", Body=b"third")
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"third"
    # Unconditional PUTs still overwrite.
    c.put_object(Bucket=b, Key="k", Body=b"plain")
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"plain"


@test
def put_if_none_match_versioned(s):
    c, b = new_bucket(s, "inmver", "Enabled")
    cc = cond_client(s, "PutObject", "If-None-Match", "*")
    v1 = cc.put_object(Bucket=b, Key="k", Body=b"v1")["VersionId"]
    expect_error(lambda: cc.put_object(Bucket=b, Key="k", Body=b"v2"), "PreconditionFailed", 412)
    vs = c.list_object_versions(Bucket=b)["Versions"]
    assert [v["VersionId"] for v in vs] == [v1], "a refused conditional PUT added a version"
    # A delete marker as the latest version counts as no object (AWS).
    c.delete_object(Bucket=b, Key="k")
    r = cc.put_object(Bucket=b, Key="k", Body=b"v3")
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"v3"
    assert r["VersionId"] != v1


@test
def put_if_match(s):
    c, b = new_bucket(s, "im")
    e1 = c.put_object(Bucket=b, Key="k", Body=b"one")["ETag"]
    good = cond_client(s, "PutObject", "If-Match", e1)
    e2 = good.put_object(Bucket=b, Key="k", Body=b"two")["ETag"]
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"two"
    # e1 no longer matches.
    expect_error(lambda: good.put_object(Bucket=b, Key="k", Body=b"three"), "PreconditionFailed", 412)
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"two"
    # Unquoted ETag is the same entity tag.
    unq = cond_client(s, "PutObject", "If-Match", e2.strip('"'))
    unq.put_object(Bucket=b, Key="k", Body=b"four")
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"four"
    # If-Match on a missing key: 404 NoSuchKey, and nothing is created.
    missing_key_fails(lambda: good.put_object(Bucket=b, Key="missing", Body=b"x"))
    expect_error(lambda: c.head_object(Bucket=b, Key="missing"), "404", 404)


def _mpu(c, b, key, parts):
    uid = c.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
    done = [{"PartNumber": i, "ETag": c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i, Body=p)["ETag"]}
            for i, p in enumerate(parts, 1)]
    return uid, {"Parts": done}


@test
def complete_multipart_conditions(s):
    c, b = new_bucket(s, "cmpu")
    inm = cond_client(s, "CompleteMultipartUpload", "If-None-Match", "*")
    # New key: If-None-Match: * holds.
    parts = [os.urandom(5 * MiB), b"end"]
    uid, mp = _mpu(c, b, "k", parts)
    r = inm.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid, MultipartUpload=mp)
    etag = r["ETag"]
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"".join(parts)
    # Existing key: 412, and the object is unchanged.
    uid2, mp2 = _mpu(c, b, "k", [b"replacement"])
    expect_error(lambda: inm.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid2, MultipartUpload=mp2),
                 "PreconditionFailed", 412)
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"".join(parts)
    # If-Match with a wrong ETag: 412; with the current ETag: completes.
    bad = cond_client(s, "CompleteMultipartUpload", "If-Match", '"00000000000000000000000000000000"')
    expect_error(lambda: bad.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid2, MultipartUpload=mp2),
                 "PreconditionFailed", 412)
    assert c.head_object(Bucket=b, Key="k")["ETag"] == etag
    good = cond_client(s, "CompleteMultipartUpload", "If-Match", etag)
    good.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid2, MultipartUpload=mp2)
    assert body_of(c.get_object(Bucket=b, Key="k")) == b"replacement"
    # If-Match on a missing key: 404 NoSuchKey (not NoSuchUpload), nothing created.
    uid3, mp3 = _mpu(c, b, "absent", [b"x"])
    missing_key_fails(lambda: good.complete_multipart_upload(Bucket=b, Key="absent", UploadId=uid3,
                                                             MultipartUpload=mp3))
    expect_error(lambda: c.head_object(Bucket=b, Key="absent"), "404", 404)
    # The refused complete left the upload as it was.
    assert [p["PartNumber"] for p in c.list_parts(Bucket=b, Key="absent", UploadId=uid3)["Parts"]] == [1]


_RACERS = []


def _race(s, b, key, size, n=8):
    bodies = [hashlib.sha256(f"{key}-{i}".encode()).digest() * (size // 32) for i in range(n)]
    if len(_RACERS) < n:  # client creation is slow: reuse them across races
        _RACERS.extend(cond_client(s, "PutObject", "If-None-Match", "*") for _ in range(n - len(_RACERS)))
    clients = _RACERS[:n]
    gate = threading.Barrier(n)

    def one(i):
        gate.wait()
        try:
            clients[i].put_object(Bucket=b, Key=key, Body=bodies[i])
            return i, 200, None
        except clients[i].exceptions.ClientError as e:
            return i, e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]

    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        results = list(ex.map(one, range(n)))
    wins = [i for i, st, _ in results if st == 200]
    losers = [(st, code) for _i, st, code in results if st != 200]
    assert len(wins) == 1, f"{key}: {len(wins)} winners: {results}"
    assert all(x == (412, "PreconditionFailed") for x in losers), f"{key}: losers answered {losers}"
    got = body_of(s.client().get_object(Bucket=b, Key=key))
    assert got == bodies[wins[0]], f"{key}: stored bytes are not the winner's"


@test
def if_none_match_race(s):
    c, b = new_bucket(s, "race")
    for round_ in range(3):
        _race(s, b, f"small-{round_}", 4096)
    _race(s, b, "big", 2 * MiB)
    # In a versioned bucket the race leaves exactly one version.
    c2, b2 = new_bucket(s, "racever", "Enabled")
    _race(s, b2, "v", 4096)
    assert len(c2.list_object_versions(Bucket=b2)["Versions"]) == 1


if __name__ == "__main__":
    run(Strata())
