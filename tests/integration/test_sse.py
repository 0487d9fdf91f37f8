#!/usr/bin/python3
"""test_sse.py - server-side encryption at rest through boto3 and awscli
against a live strata started with --kms-key-file.  SSE-S3 (AES256):
PutObject/GET/HEAD answer x-amz-server-side-encryption, the ETag is the
MD5 of the plaintext and x-amz-checksum-* covers the plaintext; full and
ranged GETs (ranges across the 64 KiB chunk boundaries, inline and
erasure-coded objects); multipart uploads (parts, ListParts sizes,
ranges across parts, partNumber GET, UploadPartCopy, boto3's transfer
manager); SSE-C (keys never stored: missing key 400 InvalidRequest,
wrong key 403 AccessDenied, bad key MD5 400 InvalidArgument, ETag not
the MD5, copy with x-amz-copy-source-...-customer-*, parts with the
upload's key, refused over plain HTTP without --sse-c-allow-http);
CopyObject from and to encrypted objects and onto
itself; listing sizes; objects written under an older master key read
after the active key changes (restarts on other key files), and fail
with 400 KMS.NotFoundException naming the key when it is gone (counted in
strata_sse_key_missing_total).  No plaintext of an encrypted object is
stored anywhere (drive files: shards and RocksDB; on RADOS every object,
xattr and omap entry of the pools), while a control object stored as sent
is found in both the metadata and the data.  SSE-KMS with keys named in the key file (unknown
key KMS.NotFoundException, disabled key KMS.DisabledException, context
echoed, ETag not the MD5).  Bucket default encryption: Put/Get/
DeleteBucketEncryption (boto3 and awscli), applied to PUT, copy and
multipart create, the request's own choice winning, bad configurations
refused.  Object Lock on encrypted versions (retention rewrites keep the
key).  Rotation: `strata admin kms rotate` and the --kms-rewrap
pass (interrupted by a restart, then finished; a second pass has nothing
to do; afterwards every SSE-S3 version reads without the old key).  What is not built answers 501
(aws:kms:dsse) and a bad value 400; x-amz-server-side-encryption, -aws-kms-key-id
and -context on GET/HEAD 400 InvalidArgument; a key file
readable by others, or without an active key, stops the daemon at start;
a daemon without a key file answers 501.  Run by CTest.
"""

import base64
import datetime
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, free_port, md5_hex, run, test  # noqa: E402
from stored_data import store_args, stored_with  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
CHUNK = 64 * KiB
SECRET = b"SSE-SECRET-PLAINTEXT-7f3a9c|"   # never on disk in clear
CLEAR = b"CLEAR-CONTROL-PLAINTEXT-51e2|"   # stored as sent: must be found

TMPBASE = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
os.makedirs(TMPBASE, exist_ok=True)
KEYDIR = tempfile.mkdtemp(prefix="test_sse-keys.", dir=TMPBASE)


def key_file(path, active, names, mode=0o600, disabled=()):
    doc = {"active": active,
           "keys": {n: {"key": base64.b64encode(hashlib.sha256(n.encode()).digest()).decode(),
                        "disabled": n in disabled} for n in names}}
    with open(path, "w") as f:
        json.dump(doc, f)
    os.chmod(path, mode)
    return path


KEYS = key_file(os.path.join(KEYDIR, "keys.json"), "k1", ["k1", "k0", "kms-a", "kms-off"],
                disabled=("kms-off",))


def pattern(n, marker=SECRET):
    return (marker * (n // len(marker) + 1))[:n]


def new_bucket(s, prefix):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    return c, b


@test
def put_get_head_ranges(s):
    c, b = new_bucket(s, "sse")
    for name, n in (("tiny", 1), ("inline", 5000), ("chunk", CHUNK), ("ec", 3 * MiB + 12345)):
        data = pattern(n)
        r = c.put_object(Bucket=b, Key=name, Body=data, ServerSideEncryption="AES256")
        assert r["ServerSideEncryption"] == "AES256", r
        assert r["ETag"] == f'"{md5_hex(data)}"', (r["ETag"], md5_hex(data))
        h = c.head_object(Bucket=b, Key=name)
        assert h["ServerSideEncryption"] == "AES256"
        assert h["ContentLength"] == n
        assert h["ETag"] == f'"{md5_hex(data)}"'
        g = c.get_object(Bucket=b, Key=name)
        assert g["ServerSideEncryption"] == "AES256"
        assert g["Body"].read() == data
        ranges = [(0, 0), (n - 1, n - 1), (0, n - 1)]
        if n > CHUNK + 10:
            ranges += [(CHUNK - 3, CHUNK + 2), (CHUNK, 2 * CHUNK - 1), (100, n - 100),
                       (2 * CHUNK + 7, 2 * CHUNK + 7), (n - CHUNK - 5, n - 1)]
        for a, z in ranges:
            g = c.get_object(Bucket=b, Key=name, Range=f"bytes={a}-{z}")
            assert g["ContentRange"] == f"bytes {a}-{z}/{n}", g["ContentRange"]
            assert g["Body"].read() == data[a:z + 1], (name, a, z)
        g = c.get_object(Bucket=b, Key=name, Range="bytes=-7")
        assert g["Body"].read() == data[-7:]
    # Listings report the plaintext size.
    sizes = {o["Key"]: o["Size"] for o in c.list_objects_v2(Bucket=b)["Contents"]}
    assert sizes == {"tiny": 1, "inline": 5000, "chunk": CHUNK, "ec": 3 * MiB + 12345}, sizes
    # An unencrypted object says nothing about encryption.
    c.put_object(Bucket=b, Key="plain", Body=b"plain")
    assert "ServerSideEncryption" not in c.head_object(Bucket=b, Key="plain")
    assert "ServerSideEncryption" not in c.get_object(Bucket=b, Key="plain")


@test
def checksums_cover_plaintext(s):
    c, b = new_bucket(s, "ssecksum")
    data = pattern(300 * KiB)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    r = c.put_object(Bucket=b, Key="k", Body=data, ServerSideEncryption="AES256",
                     ChecksumAlgorithm="CRC32")
    assert r["ChecksumCRC32"] == crc, (r.get("ChecksumCRC32"), crc)
    g = c.get_object(Bucket=b, Key="k", ChecksumMode="ENABLED")
    assert g["ChecksumCRC32"] == crc
    assert g["Body"].read() == data
    # A wrong Content-MD5 is refused and leaves nothing behind.
    expect_error(lambda: c.put_object(Bucket=b, Key="bad", Body=data, ServerSideEncryption="AES256",
                                      ContentMD5=base64.b64encode(b"0" * 16).decode()),
                 "BadDigest", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="bad"), "404", 404)


@test
def copy(s):
    c, b = new_bucket(s, "ssecopy")
    # Copies to plaintext store these bytes as sent: not the SECRET marker.
    data = pattern(2 * MiB + 3, b"COPY-TEST-DATA|")
    c.put_object(Bucket=b, Key="enc", Body=data, ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="plain", Body=data)
    # encrypted -> plain
    r = c.copy_object(Bucket=b, Key="e2p", CopySource={"Bucket": b, "Key": "enc"})
    assert "ServerSideEncryption" not in r
    g = c.get_object(Bucket=b, Key="e2p")
    assert "ServerSideEncryption" not in g and g["Body"].read() == data
    # plain -> encrypted, encrypted -> encrypted
    for src, dst in (("plain", "p2e"), ("enc", "e2e")):
        r = c.copy_object(Bucket=b, Key=dst, CopySource={"Bucket": b, "Key": src},
                          ServerSideEncryption="AES256")
        assert r["ServerSideEncryption"] == "AES256"
        assert r["CopyObjectResult"]["ETag"] == f'"{md5_hex(data)}"'
        g = c.get_object(Bucket=b, Key=dst, Range="bytes=65530-65541")
        assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == data[65530:65542]
    # Copy onto itself to encrypt it in place (AWS allows this change).
    r = c.copy_object(Bucket=b, Key="plain", CopySource={"Bucket": b, "Key": "plain"},
                      ServerSideEncryption="AES256")
    assert c.head_object(Bucket=b, Key="plain")["ServerSideEncryption"] == "AES256"
    assert c.get_object(Bucket=b, Key="plain")["Body"].read() == data
    expect_error(lambda: c.copy_object(Bucket=b, Key="x", CopySource={"Bucket": b, "Key": "enc"},
                                       ServerSideEncryption="AES128"), "InvalidArgument", 400)


@test
def not_built_yet_answers_501(s):
    c, b = new_bucket(s, "sse501")
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x",
                                      ServerSideEncryption="aws:kms:dsse"), "NotImplemented", 501)
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x", ServerSideEncryption="AES512"),
                 "InvalidArgument", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)


@test
def multipart(s):
    c, b = new_bucket(s, "ssemp")
    parts = [pattern(5 * MiB + 3), pattern(5 * MiB), pattern(777)]
    data = b"".join(parts)
    up = c.create_multipart_upload(Bucket=b, Key="mp", ServerSideEncryption="AES256")
    assert up["ServerSideEncryption"] == "AES256", up
    uid = up["UploadId"]
    done = []
    for i, p in enumerate(parts, 1):
        r = c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=i, Body=p)
        assert r["ServerSideEncryption"] == "AES256", r
        assert r["ETag"] == f'"{md5_hex(p)}"'
        done.append({"PartNumber": i, "ETag": r["ETag"]})
    lp = c.list_parts(Bucket=b, Key="mp", UploadId=uid)
    assert [x["Size"] for x in lp["Parts"]] == [len(p) for p in parts]
    r = c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=uid,
                                    MultipartUpload={"Parts": done})
    assert r["ServerSideEncryption"] == "AES256", r
    assert r["ETag"].strip('"').endswith("-3")
    h = c.head_object(Bucket=b, Key="mp")
    assert h["ServerSideEncryption"] == "AES256" and h["ContentLength"] == len(data)
    g = c.get_object(Bucket=b, Key="mp")
    assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == data
    n0 = len(parts[0])
    for a, z in ((n0 - 5, n0 + 5), (0, 0), (len(data) - 800, len(data) - 1), (CHUNK, 3 * CHUNK),
                 (n0 + 5 * MiB - 1, n0 + 5 * MiB)):
        assert c.get_object(Bucket=b, Key="mp", Range=f"bytes={a}-{z}")["Body"].read() == data[a:z + 1]
    g = c.get_object(Bucket=b, Key="mp", PartNumber=2)
    assert g["Body"].read() == parts[1] and g["ContentLength"] == len(parts[1])
    # UploadPartCopy from an encrypted object into an encrypted upload.
    c.put_object(Bucket=b, Key="src", Body=parts[0], ServerSideEncryption="AES256")
    uid = c.create_multipart_upload(Bucket=b, Key="mp2", ServerSideEncryption="AES256")["UploadId"]
    pc = c.upload_part_copy(Bucket=b, Key="mp2", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": b, "Key": "src"})
    pr = c.upload_part(Bucket=b, Key="mp2", UploadId=uid, PartNumber=2, Body=parts[2])
    c.complete_multipart_upload(Bucket=b, Key="mp2", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": pc["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": pr["ETag"]}]})
    assert c.get_object(Bucket=b, Key="mp2")["Body"].read() == parts[0] + parts[2]
    # boto3's transfer manager (multipart above 8 MiB) with SSE.
    big = pattern(17 * MiB + 1)
    path = os.path.join(s.tmp, "big")
    with open(path, "wb") as f:
        f.write(big)
    c.upload_file(path, b, "tm", ExtraArgs={"ServerSideEncryption": "AES256"})
    h = c.head_object(Bucket=b, Key="tm")
    assert h["ServerSideEncryption"] == "AES256" and h["ContentLength"] == len(big)
    assert "-" in h["ETag"]
    c.download_file(b, "tm", path + ".back")
    assert open(path + ".back", "rb").read() == big
    os.unlink(path)
    os.unlink(path + ".back")


@test
def sse_headers_refused_on_reads(s):
    # AWS: x-amz-server-side-encryption (and the KMS key id / context) on a
    # GET or HEAD is 400 InvalidArgument, whatever the object; the SSE-C
    # customer key headers are the only encryption headers a read takes.
    c, b = new_bucket(s, "sseread")
    c.put_object(Bucket=b, Key="enc", Body=b"encrypted", ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="plain", Body=b"plain")
    c.put_object(Bucket=b, Key="kms", Body=b"kms", ServerSideEncryption="aws:kms",
                 SSEKMSKeyId="kms-a")
    cases = [{"x-amz-server-side-encryption": "AES256"},
             {"x-amz-server-side-encryption": "aws:kms"},
             {"x-amz-server-side-encryption-aws-kms-key-id": "kms-a"},
             {"x-amz-server-side-encryption": "aws:kms",
              "x-amz-server-side-encryption-aws-kms-key-id": "kms-a"},
             {"x-amz-server-side-encryption-context":
              base64.b64encode(b'{"a":"b"}').decode()}]
    for hdrs in cases:
        rc = s.client()

        def add(request, hdrs=hdrs, **kw):
            for k, v in hdrs.items():
                request.headers[k] = v
        rc.meta.events.register("before-sign.s3.*", add)
        for key in ("enc", "plain", "kms", "missing"):
            e = expect_error(lambda: rc.get_object(Bucket=b, Key=key), "InvalidArgument", 400)
            assert "x-amz-server-side-encryption" in e["Error"]["Message"], e["Error"]
            expect_error(lambda: rc.head_object(Bucket=b, Key=key), "400", 400)
            expect_error(lambda: rc.get_object(Bucket=b, Key=key, Range="bytes=0-1"),
                         "InvalidArgument", 400)
    # Without them the same reads succeed (the refusal is the header's).
    assert c.get_object(Bucket=b, Key="enc")["Body"].read() == b"encrypted"
    assert c.head_object(Bucket=b, Key="kms")["ServerSideEncryption"] == "aws:kms"


def ssec(key, copy=False):
    """boto3 arguments for an SSE-C key (boto3 adds the key MD5)."""
    p = "CopySourceSSECustomer" if copy else "SSECustomer"
    return {p + "Algorithm": "AES256", p + "Key": key}


@test
def sse_c(s):
    c, b = new_bucket(s, "ssec")
    k1, k2 = secrets.token_bytes(32), secrets.token_bytes(32)
    md5_k1 = base64.b64encode(hashlib.md5(k1).digest()).decode()
    for name, n in (("small", 3000), ("big", 2 * MiB + 9)):
        data = pattern(n)
        r = c.put_object(Bucket=b, Key=name, Body=data, **ssec(k1))
        assert r["SSECustomerAlgorithm"] == "AES256" and r["SSECustomerKeyMD5"] == md5_k1, r
        assert r["ETag"] != f'"{md5_hex(data)}"'  # not the MD5 of the plaintext
        h = c.head_object(Bucket=b, Key=name, **ssec(k1))
        assert h["ContentLength"] == n and h["SSECustomerKeyMD5"] == md5_k1
        assert "ServerSideEncryption" not in h
        g = c.get_object(Bucket=b, Key=name, **ssec(k1))
        assert g["Body"].read() == data and g["SSECustomerAlgorithm"] == "AES256"
        a = 65530 if n > CHUNK else 1000
        g = c.get_object(Bucket=b, Key=name, Range=f"bytes={a}-{a + 15}", **ssec(k1))
        assert g["Body"].read() == data[a:a + 16]
        # Missing key: 400 InvalidRequest; another key: 403 AccessDenied.
        expect_error(lambda: c.get_object(Bucket=b, Key=name), "InvalidRequest", 400)
        expect_error(lambda: c.head_object(Bucket=b, Key=name), "400", 400)
        expect_error(lambda: c.get_object(Bucket=b, Key=name, **ssec(k2)), "AccessDenied", 403)
        expect_error(lambda: c.head_object(Bucket=b, Key=name, **ssec(k2)), "403", 403)
    # GetObjectAttributes needs the key too.
    attrs = ["ETag", "ObjectSize"]
    expect_error(lambda: c.get_object_attributes(Bucket=b, Key="big", ObjectAttributes=attrs),
                 "InvalidRequest", 400)
    # (boto3 does not encode the key for this operation: send it as S3 wants it.)
    def raw(k):
        return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": base64.b64encode(k).decode(),
                "SSECustomerKeyMD5": base64.b64encode(hashlib.md5(k).digest()).decode()}
    expect_error(lambda: c.get_object_attributes(Bucket=b, Key="big", ObjectAttributes=attrs,
                                                 **raw(k2)), "AccessDenied", 403)
    ga = c.get_object_attributes(Bucket=b, Key="big", ObjectAttributes=attrs, **raw(k1))
    assert ga["ObjectSize"] == 2 * MiB + 9
    # A key MD5 that does not match the key: 400 InvalidArgument.
    # (boto3 computes the MD5 itself: a hook overwrites it before signing.)
    cb = s.client()

    def wrong_md5(request, **kw):
        name = "x-amz-server-side-encryption-customer-key-MD5"
        del request.headers[name]  # HTTPHeaders appends on assignment
        request.headers[name] = base64.b64encode(hashlib.md5(k2).digest()).decode()
    cb.meta.events.register("before-sign.s3.*", wrong_md5)
    expect_error(lambda: cb.get_object(Bucket=b, Key="small", **ssec(k1)), "InvalidArgument", 400)
    expect_error(lambda: cb.put_object(Bucket=b, Key="x", Body=b"x", **ssec(k1)),
                 "InvalidArgument", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="x", Body=b"x", SSECustomerAlgorithm="AES256",
                                      SSECustomerKey=b"short"), "InvalidArgument", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="AES256",
                                      **ssec(k1)), "InvalidArgument", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="x"), "404", 404)
    # A customer key for an object that has none: 400.
    c.put_object(Bucket=b, Key="plain", Body=b"plain")
    expect_error(lambda: c.get_object(Bucket=b, Key="plain", **ssec(k1)), "InvalidRequest", 400)
    # Copy: source key in x-amz-copy-source-..., destination key as for PUT.
    data = pattern(2 * MiB + 9)
    expect_error(lambda: c.copy_object(Bucket=b, Key="cp", CopySource={"Bucket": b, "Key": "big"}),
                 "InvalidRequest", 400)
    expect_error(lambda: c.copy_object(Bucket=b, Key="cp", CopySource={"Bucket": b, "Key": "big"},
                                       **ssec(k2, copy=True)), "AccessDenied", 403)
    r = c.copy_object(Bucket=b, Key="cp", CopySource={"Bucket": b, "Key": "big"},
                      **ssec(k1, copy=True), **ssec(k2))
    assert r["SSECustomerAlgorithm"] == "AES256"
    assert c.get_object(Bucket=b, Key="cp", **ssec(k2))["Body"].read() == data
    expect_error(lambda: c.get_object(Bucket=b, Key="cp", **ssec(k1)), "AccessDenied", 403)
    r = c.copy_object(Bucket=b, Key="cp-s3", CopySource={"Bucket": b, "Key": "big"},
                      ServerSideEncryption="AES256", **ssec(k1, copy=True))
    assert c.get_object(Bucket=b, Key="cp-s3")["Body"].read() == data
    # Rekey in place: copy onto itself with a new customer key.
    c.copy_object(Bucket=b, Key="cp", CopySource={"Bucket": b, "Key": "cp"},
                  **ssec(k2, copy=True), **ssec(k1))
    assert c.get_object(Bucket=b, Key="cp", **ssec(k1))["Body"].read() == data
    # Multipart: every part with the upload's key.
    parts = [pattern(5 * MiB), pattern(1000)]
    uid = c.create_multipart_upload(Bucket=b, Key="mp", **ssec(k1))["UploadId"]
    expect_error(lambda: c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=1,
                                       Body=parts[0]), "InvalidRequest", 400)
    expect_error(lambda: c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=1,
                                       Body=parts[0], **ssec(k2)), "AccessDenied", 403)
    e1 = c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=1, Body=parts[0], **ssec(k1))
    assert e1["SSECustomerKeyMD5"] == md5_k1
    e2 = c.upload_part_copy(Bucket=b, Key="mp", UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": b, "Key": "small"}, CopySourceRange="bytes=0-999",
                            **ssec(k1, copy=True), **ssec(k1))
    c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": e1["ETag"]},
        {"PartNumber": 2, "ETag": e2["CopyPartResult"]["ETag"]}]})
    assert c.get_object(Bucket=b, Key="mp", **ssec(k1))["Body"].read() == parts[0] + pattern(1000)
    expect_error(lambda: c.get_object(Bucket=b, Key="mp"), "InvalidRequest", 400)
    # A customer key on a part of an upload without SSE-C: 400.
    uid = c.create_multipart_upload(Bucket=b, Key="mp2")["UploadId"]
    expect_error(lambda: c.upload_part(Bucket=b, Key="mp2", UploadId=uid, PartNumber=1,
                                       Body=b"x", **ssec(k1)), "InvalidRequest", 400)


@test
def sse_kms(s):
    c, b = new_bucket(s, "ssekms")
    data = pattern(3 * MiB + 7)
    ctx = base64.b64encode(json.dumps({"project": "x", "team": "ml"}).encode()).decode()
    r = c.put_object(Bucket=b, Key="k", Body=data, ServerSideEncryption="aws:kms",
                     SSEKMSKeyId="kms-a", SSEKMSEncryptionContext=ctx)
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "kms-a", r
    assert r["ETag"] != f'"{md5_hex(data)}"'  # not the MD5 of the plaintext
    for h in (c.head_object(Bucket=b, Key="k"), c.get_object(Bucket=b, Key="k", Range="bytes=10-99999")):
        assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == "kms-a", h
        assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-server-side-encryption-context"] == ctx
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == data
    # Without a key id: the active key.
    r = c.put_object(Bucket=b, Key="d", Body=b"default key", ServerSideEncryption="aws:kms")
    assert r["SSEKMSKeyId"] == "k1", r
    assert c.get_object(Bucket=b, Key="d")["Body"].read() == b"default key"
    # Unknown and disabled keys: AWS's errors; nothing stored.
    expect_error(lambda: c.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                                      SSEKMSKeyId="no-such-key"), "KMS.NotFoundException", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                                      SSEKMSKeyId="kms-off"), "KMS.DisabledException", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="AES256",
                                      SSEKMSKeyId="kms-a"), "InvalidArgument", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                                      SSEKMSEncryptionContext=base64.b64encode(b"[1]").decode()),
                 "InvalidArgument", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="x"), "404", 404)
    # Copy to SSE-KMS and multipart under a named key.
    r = c.copy_object(Bucket=b, Key="k2", CopySource={"Bucket": b, "Key": "k"},
                      ServerSideEncryption="aws:kms", SSEKMSKeyId="kms-a")
    assert r["ServerSideEncryption"] == "aws:kms"
    assert c.get_object(Bucket=b, Key="k2")["Body"].read() == data
    up = c.create_multipart_upload(Bucket=b, Key="mp", ServerSideEncryption="aws:kms",
                                   SSEKMSKeyId="kms-a")
    assert up["SSEKMSKeyId"] == "kms-a"
    e1 = c.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=data)
    assert e1["ServerSideEncryption"] == "aws:kms"
    c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"],
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1["ETag"]}]})
    g = c.get_object(Bucket=b, Key="mp", Range="bytes=65535-65536")
    assert g["SSEKMSKeyId"] == "kms-a" and g["Body"].read() == data[65535:65537]


def sse_conf(algo, key=None, bucket_key=None):
    d = {"SSEAlgorithm": algo}
    if key:
        d["KMSMasterKeyID"] = key
    rule = {"ApplyServerSideEncryptionByDefault": d}
    if bucket_key is not None:
        rule["BucketKeyEnabled"] = bucket_key
    return {"Rules": [rule]}


@test
def bucket_default_encryption(s):
    c, b = new_bucket(s, "ssedef")
    expect_error(lambda: c.get_bucket_encryption(Bucket=b),
                 "ServerSideEncryptionConfigurationNotFoundError", 404)
    c.put_object(Bucket=b, Key="before", Body=b"before")
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf("AES256"))
    got = c.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert got["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}, got
    # New objects (PUT, copy, multipart) are encrypted and say so; old ones stay as they were.
    data = pattern(300 * KiB)
    r = c.put_object(Bucket=b, Key="new", Body=data)
    assert r["ServerSideEncryption"] == "AES256", r
    assert c.get_object(Bucket=b, Key="new")["Body"].read() == data
    assert "ServerSideEncryption" not in c.head_object(Bucket=b, Key="before")
    r = c.copy_object(Bucket=b, Key="copied", CopySource={"Bucket": b, "Key": "before"})
    assert r["ServerSideEncryption"] == "AES256"
    up = c.create_multipart_upload(Bucket=b, Key="mp")
    assert up["ServerSideEncryption"] == "AES256"
    c.abort_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"])
    # The request's own choice wins: SSE-C and SSE-KMS.
    k = secrets.token_bytes(32)
    r = c.put_object(Bucket=b, Key="c", Body=b"c", **ssec(k))
    assert "ServerSideEncryption" not in r and r["SSECustomerAlgorithm"] == "AES256"
    # An aws:kms default with a named key.
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf("aws:kms", "kms-a", True))
    got = c.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert got["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "kms-a"}
    assert got["BucketKeyEnabled"] is True
    r = c.put_object(Bucket=b, Key="kms", Body=data)
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "kms-a", r
    assert c.get_object(Bucket=b, Key="kms")["Body"].read() == data
    # Bad configurations leave the stored one alone.
    expect_error(lambda: c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf(
        "aws:kms", "no-such-key")), "KMS.NotFoundException", 400)
    expect_error(lambda: c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf(
        "aws:kms", "kms-off")), "KMS.DisabledException", 400)
    expect_error(lambda: c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf(
        "AES256", "kms-a")), "InvalidArgument", 400)
    expect_error(lambda: c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf(
        "DES")), "InvalidArgument", 400)
    got = c.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert got["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    r = c.delete_bucket_encryption(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    expect_error(lambda: c.get_bucket_encryption(Bucket=b),
                 "ServerSideEncryptionConfigurationNotFoundError", 404)
    assert "ServerSideEncryption" not in c.put_object(Bucket=b, Key="after", Body=b"x")
    # Through awscli as well.
    if os.access("/usr/bin/aws", os.X_OK):
        aws(s, "s3api", "put-bucket-encryption", "--bucket", b, "--server-side-encryption-configuration",
            json.dumps(sse_conf("AES256")))
        out = json.loads(aws(s, "s3api", "get-bucket-encryption", "--bucket", b))
        assert out["ServerSideEncryptionConfiguration"]["Rules"][0][
            "ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
        src = os.path.join(s.tmp, "cli-def")
        with open(src, "wb") as f:
            f.write(data)
        aws(s, "s3", "cp", src, f"s3://{b}/cli")
        h = json.loads(aws(s, "s3api", "head-object", "--bucket", b, "--key", "cli"))
        assert h["ServerSideEncryption"] == "AES256", h


@test
def with_object_lock(s):
    c = s.client()
    b = s.bucket_name("sselock")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    data = pattern(400 * KiB)
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    r = c.put_object(Bucket=b, Key="k", Body=data, ServerSideEncryption="AES256",
                     ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)
    assert r["ServerSideEncryption"] == "AES256"
    h = c.head_object(Bucket=b, Key="k")
    assert h["ServerSideEncryption"] == "AES256" and h["ObjectLockMode"] == "GOVERNANCE", h
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == data
    expect_error(lambda: c.delete_object(Bucket=b, Key="k", VersionId=r["VersionId"]),
                 "AccessDenied", 403)
    # A retention change rewrites the record: the object key stays readable.
    c.put_object_retention(Bucket=b, Key="k", VersionId=r["VersionId"], Retention={
        "Mode": "GOVERNANCE", "RetainUntilDate": until + datetime.timedelta(hours=1)})
    assert c.get_object(Bucket=b, Key="k", Range="bytes=65530-65600")["Body"].read() == data[65530:65601]


def aws(s, *args):
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "LANG": "C.UTF-8",
           "AWS_ACCESS_KEY_ID": s.ak, "AWS_SECRET_ACCESS_KEY": s.sk,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
           "AWS_CONFIG_FILE": os.path.join(s.home, ".aws", "config"),
           "AWS_SHARED_CREDENTIALS_FILE": os.path.join(s.home, ".aws", "credentials"),
           "AWS_PAGER": "", "AWS_EC2_METADATA_DISABLED": "true", "NO_PROXY": "127.0.0.1,localhost"}
    p = subprocess.run(["/usr/bin/aws", "--endpoint-url", s.endpoint, "--no-cli-pager"] + list(args),
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout


@test
def awscli_sse(s):
    if not os.access("/usr/bin/aws", os.X_OK):
        print("skip: /usr/bin/aws not installed")
        return
    c, b = new_bucket(s, "ssecli")
    data = pattern(1 * MiB + 77)
    src = os.path.join(s.tmp, "cli-src")
    dst = os.path.join(s.tmp, "cli-dst")
    with open(src, "wb") as f:
        f.write(data)
    aws(s, "s3", "cp", "--sse", "AES256", src, f"s3://{b}/cli")
    h = json.loads(aws(s, "s3api", "head-object", "--bucket", b, "--key", "cli"))
    assert h["ServerSideEncryption"] == "AES256", h
    aws(s, "s3", "cp", f"s3://{b}/cli", dst)
    assert open(dst, "rb").read() == data
    out = json.loads(aws(s, "s3api", "get-object", "--bucket", b, "--key", "cli",
                         "--range", "bytes=65535-65600", dst))
    assert out["ServerSideEncryption"] == "AES256"
    assert open(dst, "rb").read() == data[65535:65601]
    # Above 8 MiB the CLI uploads in parts.
    big = pattern(9 * MiB + 5)
    with open(src, "wb") as f:
        f.write(big)
    aws(s, "s3", "cp", "--sse", "AES256", src, f"s3://{b}/cli-mp")
    h = json.loads(aws(s, "s3api", "head-object", "--bucket", b, "--key", "cli-mp"))
    assert h["ServerSideEncryption"] == "AES256" and "-" in h["ETag"], h
    aws(s, "s3", "cp", f"s3://{b}/cli-mp", dst)
    assert open(dst, "rb").read() == big


@test
def no_plaintext_on_drives(s):
    # Runs last: every encrypted object above used SECRET; inline ones live
    # in the metadata records (RocksDB's WAL and memtable flushes, omap
    # values in the RADOS meta pool), big ones in shards or data objects.
    c, b = new_bucket(s, "sseraw")
    c.put_object(Bucket=b, Key="inline", Body=pattern(3000), ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="big", Body=pattern(1 * MiB), ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="clear", Body=pattern(3000, CLEAR))
    c.put_object(Bucket=b, Key="clear-big", Body=pattern(1 * MiB, CLEAR))
    hits = stored_with(s, SECRET[:20])
    assert hits == [], f"plaintext of encrypted objects found in {hits}"
    clear = stored_with(s, CLEAR[:20])
    assert any(kind == "meta" for kind, _ in clear), clear  # inline record, stored as sent
    assert any(kind == "data" for kind, _ in clear), clear  # shard files, stored as sent


def restart(s, args):
    """Stop our daemon (SIGTERM, clean exit) and start it again on the same
    store with other flags."""
    assert s.proc is not None, "needs a daemon this test started"
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(30) == 0
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home,
           "STRATA_ROOT_USER": s.ak, "STRATA_ROOT_PASSWORD": s.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    s.port = free_port()
    s.endpoint = f"http://{s.host}:{s.port}"
    with open(s.log_path, "ab") as logf:
        s.proc = subprocess.Popen([os.environ["STRATA_BIN"], "server", "--address",
                                   f"127.0.0.1:{s.port}"] + args + store_args(s) + s.drives,
                                  env=env, stdin=subprocess.DEVNULL, stdout=logf,
                                  stderr=subprocess.STDOUT)
    assert s._wait_ready(30), "daemon did not come back"


def wait_log(s, text, count=1, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(s.log_path, errors="replace") as f:
            lines = [ln for ln in f if text in ln]
        if len(lines) >= count:
            return lines[count - 1]
        time.sleep(0.2)
    raise AssertionError(f"no {text!r} in the daemon log after {timeout} s")


@test
def rotation_rewrap(s):
    if s.proc is None:
        print("skip: needs a daemon this test starts")
        return
    c, b = new_bucket(s, "sserw")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    objs = {}
    for i in range(5):
        v = pattern(1000 + i * 70000)
        r = c.put_object(Bucket=b, Key=f"k{i % 3}", Body=v, ServerSideEncryption="AES256")
        objs[(f"k{i % 3}", r["VersionId"])] = v
    up = c.create_multipart_upload(Bucket=b, Key="mp", ServerSideEncryption="AES256")
    p1 = c.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=pattern(6 * MiB))
    r = c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"],
                                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}]})
    objs[("mp", r["VersionId"])] = pattern(6 * MiB)
    c.put_object(Bucket=b, Key="kms", Body=b"kms object", ServerSideEncryption="aws:kms",
                 SSEKMSKeyId="kms-a")
    # strata admin kms rotate: a new active key, written atomically, 0600.
    rot = os.path.join(KEYDIR, "rotated.json")
    with open(KEYS) as f, open(rot, "w") as g:
        g.write(f.read())
    os.chmod(rot, 0o600)
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", "kms", "rotate", "--kms-key-file", rot,
                        "--name", "k9"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    doc = json.load(open(rot))
    assert doc["active"] == "k9" and "k1" in doc["keys"] and len(base64.b64decode(doc["keys"]["k9"]["key"])) == 32
    assert os.stat(rot).st_mode & 0o777 == 0o600
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", "kms", "rotate", "--kms-key-file", rot,
                        "--name", "k9"], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "already" in p.stderr, p.stderr
    # The pass, stopped right away by a restart, then run to the end.
    restart(s, ["--kms-key-file", rot, "--kms-rewrap", "--sse-c-allow-http"])
    restart(s, ["--kms-key-file", rot, "--kms-rewrap", "--sse-c-allow-http"])
    done = wait_log(s, "kms rewrap: finished")
    assert " 0 failed" in done, done
    # A second pass finds nothing left to do.
    restart(s, ["--kms-key-file", rot, "--kms-rewrap", "--sse-c-allow-http"])
    done2 = wait_log(s, "kms rewrap: finished", count=2)
    assert " 0 re-wrapped" in done2, done2
    # Every SSE-S3 version now reads with k9 alone (k1 gone); the SSE-KMS
    # object kept its named key.
    only = key_file(os.path.join(KEYDIR, "only9.json"), "k9", ["k9", "kms-a"])
    d = json.load(open(only))
    d["keys"]["k9"] = doc["keys"]["k9"]
    with open(only, "w") as f:
        json.dump(d, f)
    restart(s, ["--kms-key-file", only, "--sse-c-allow-http"])
    c = s.client()
    for (k, vid), v in objs.items():
        g = c.get_object(Bucket=b, Key=k, VersionId=vid)
        assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == v, (k, vid)
    assert c.get_object(Bucket=b, Key="kms")["Body"].read() == b"kms object"
    restart(s, ["--kms-key-file", KEYS, "--sse-c-allow-http"])


@test
def new_active_key_and_missing_keys(s):
    if s.proc is None:
        print("skip: needs a daemon this test starts")
        return
    c, b = new_bucket(s, "sserot")
    old = {"old-inline": pattern(2000), "old-ec": pattern(700 * KiB + 1)}
    for k, v in old.items():
        c.put_object(Bucket=b, Key=k, Body=v, ServerSideEncryption="AES256")
    # k2 becomes active; k1 stays listed: old objects read, new ones use k2.
    restart(s, ["--kms-key-file", key_file(os.path.join(KEYDIR, "k2.json"), "k2", ["k1", "k2"])])
    c = s.client()
    for k, v in old.items():
        assert c.get_object(Bucket=b, Key=k, Range="bytes=1-1500")["Body"].read() == v[1:1501]
    new = pattern(200 * KiB)
    c.put_object(Bucket=b, Key="new", Body=new, ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="kms", Body=new, ServerSideEncryption="aws:kms", SSEKMSKeyId="k1")
    # Without k1 the old objects cannot be read: 400 KMS.NotFoundException
    # naming the missing key (not a 500 the SDKs would retry), counted in
    # /metrics; the new one reads.  An SSE-KMS object of a missing key
    # answers the same, of a disabled key KMS.DisabledException.
    restart(s, ["--kms-key-file", key_file(os.path.join(KEYDIR, "only2.json"), "k2", ["k2"])])
    c = s.client()
    assert c.get_object(Bucket=b, Key="new")["Body"].read() == new
    missing0 = sse_key_missing(s)
    e = expect_error(lambda: c.get_object(Bucket=b, Key="old-ec"), "KMS.NotFoundException", 400)
    assert "'k1'" in e["Error"]["Message"], e["Error"]
    e = expect_error(lambda: c.get_object(Bucket=b, Key="old-inline", Range="bytes=0-9"),
                     "KMS.NotFoundException", 400)
    assert "'k1'" in e["Error"]["Message"], e["Error"]
    e = expect_error(lambda: c.get_object(Bucket=b, Key="kms"), "KMS.NotFoundException", 400)
    assert "'k1'" in e["Error"]["Message"], e["Error"]
    # A copy from it names the key too, and writes nothing.
    e = expect_error(lambda: c.copy_object(Bucket=b, Key="cp", CopySource={"Bucket": b,
                                                                           "Key": "old-ec"}),
                     "KMS.NotFoundException", 400)
    assert "'k1'" in e["Error"]["Message"], e["Error"]
    expect_error(lambda: c.head_object(Bucket=b, Key="cp"), "404", 404)
    assert sse_key_missing(s) == missing0 + 4, (missing0, sse_key_missing(s))
    # (HEAD after the count: boto3 follows a 400 on HEAD with a HEAD bucket
    # and a second try.)
    expect_error(lambda: c.head_object(Bucket=b, Key="old-ec"), "400", 400)
    assert "master key k1 not in the key store" in open(s.log_path, errors="replace").read()
    restart(s, ["--kms-key-file", key_file(os.path.join(KEYDIR, "k1off.json"), "k2", ["k1", "k2"],
                                           disabled=("k1",))])
    c = s.client()
    expect_error(lambda: c.get_object(Bucket=b, Key="kms"), "KMS.DisabledException", 400)
    assert c.get_object(Bucket=b, Key="old-ec")["Body"].read() == old["old-ec"]  # retired SSE-S3 key
    # Without any key file SSE is not available: 501, and nothing is stored.
    restart(s, [])
    c = s.client()
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x", ServerSideEncryption="AES256"),
                 "NotImplemented", 501)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)
    e = expect_error(lambda: c.get_object(Bucket=b, Key="new"), "KMS.NotFoundException", 400)
    assert "'k2'" in e["Error"]["Message"], e["Error"]
    expect_error(lambda: c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf(
        "AES256")), "NotImplemented", 501)
    # SSE-C over plain HTTP without --sse-c-allow-http: 400 InvalidRequest.
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x", **ssec(secrets.token_bytes(32))),
                 "InvalidRequest", 400)
    restart(s, ["--kms-key-file", KEYS, "--sse-c-allow-http"])


def sse_key_missing(s):
    """strata_sse_key_missing_total from the admin API's /metrics text."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    import urllib.request
    req = AWSRequest(method="GET", url=f"{s.endpoint}/strata/admin/v1/metrics")
    S3SigV4Auth(s.credentials(), "s3", "us-east-1").add_auth(req)
    p = req.prepare()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(urllib.request.Request(p.url, headers=dict(p.headers)), timeout=60) as r:
        text = r.read().decode()
    vals = [ln.split()[1] for ln in text.splitlines()
            if ln.startswith("strata_sse_key_missing_total ")]
    assert len(vals) == 1, "no strata_sse_key_missing_total in /metrics"
    return int(vals[0])


def start_fails(args):
    binary = os.environ["STRATA_BIN"]
    d = tempfile.mkdtemp(prefix="sse-bad.", dir=TMPBASE)
    drives = [os.path.join(d, f"d{i}") for i in range(4)]
    for x in drives:
        os.makedirs(x)
    p = subprocess.run([binary, "server", "--address", "127.0.0.1:1"] + args + drives,
                       env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


@test
def key_file_checks(s):
    bad = key_file(os.path.join(KEYDIR, "open.json"), "k1", ["k1"], mode=0o644)
    rc, out = start_fails(["--kms-key-file", bad])
    assert rc != 0 and "chmod 600" in out, (rc, out)
    dis = key_file(os.path.join(KEYDIR, "dis.json"), "k1", ["k1"], disabled=("k1",))
    rc, out = start_fails(["--kms-key-file", dis])
    assert rc != 0 and "active key" in out, (rc, out)
    short = os.path.join(KEYDIR, "short.json")
    with open(short, "w") as f:
        json.dump({"active": "a", "keys": {"a": {"key": base64.b64encode(b"x" * 16).decode()}}}, f)
    os.chmod(short, 0o600)
    rc, out = start_fails(["--kms-key-file", short])
    assert rc != 0 and "32 bytes" in out, (rc, out)


if __name__ == "__main__":
    run(Strata(args=["--kms-key-file", KEYS, "--sse-c-allow-http"]))
