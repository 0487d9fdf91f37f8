#!/usr/bin/python3
"""test_checksums.py - additional checksums through boto3 (and one raw
SigV4 request) against a live strata: PutObject with ChecksumAlgorithm
CRC32/CRC32C/SHA1/SHA256 and x-amz-checksum-crc64nvme (boto3 1.26 does not
know CRC64NVME, so that one is sent raw), HEAD/GET with ChecksumMode=ENABLED,
multipart uploads with per-part checksums (verified; a wrong one is
BadDigest and stores nothing), the COMPOSITE object checksum
"<b64 of H(part checksums)>-N", and GetObjectAttributes (ETag, Checksum,
ObjectParts, ObjectSize, StorageClass).  Expected values are computed
here, independently of the daemon.  Run by CTest with /usr/bin/python3.
"""

import base64
import hashlib
import http.client
import os
import sys
import urllib.parse
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import REGION, Strata, expect_error, md5_hex, run, test  # noqa: E402

from botocore.auth import S3SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402

MiB = 1024 * 1024
ALGOS = ("CRC32", "CRC32C", "SHA1", "SHA256")


def body_of(resp):
    return resp["Body"].read()


def new_bucket(s, prefix):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    return c, b


def _table(poly, bits):
    t = []
    for i in range(256):
        x = i
        for _ in range(8):
            x = (x >> 1) ^ poly if x & 1 else x >> 1
        t.append(x)
    mask = (1 << bits) - 1
    return t, mask


_CRC32C = _table(0x82F63B78, 32)
_CRC64NVME = _table(0x9A6C9329AC4BC9B5, 64)  # reflected 0xAD93D23594C93659


def _crc_ref(tbl, data):
    t, mask = tbl
    crc = mask
    for byte in data:
        crc = t[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ mask


def crc32c(data):
    try:  # awscrt (a botocore dependency here) is fast; checked against ours
        from awscrt import checksums
        return checksums.crc32c(data)
    except ImportError:
        return _crc_ref(_CRC32C, data)


def crc64nvme(data):
    return _crc_ref(_CRC64NVME, data)


def raw_digest(algo, data):
    if algo == "CRC32":
        return zlib.crc32(data).to_bytes(4, "big")
    if algo == "CRC32C":
        return crc32c(data).to_bytes(4, "big")
    if algo == "SHA1":
        return hashlib.sha1(data).digest()
    if algo == "SHA256":
        return hashlib.sha256(data).digest()
    if algo == "CRC64NVME":
        return crc64nvme(data).to_bytes(8, "big")
    raise ValueError(algo)


def b64(raw):
    return base64.b64encode(raw).decode()


def cks(algo, data):
    return b64(raw_digest(algo, data))


def composite(algo, parts):
    """AWS COMPOSITE multipart checksum: the algorithm over the concatenated
    raw part checksums, base64, then -<number of parts>."""
    joined = b"".join(raw_digest(algo, p) for p in parts)
    return f"{b64(raw_digest(algo, joined))}-{len(parts)}"


def raw_request(s, method, path, headers=None, body=b""):
    """One SigV4-signed request (signed payload) outside boto3's model;
    returns (status, lower-cased headers, body)."""
    url = s.endpoint + urllib.parse.quote(path)
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    req.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    S3SigV4Auth(s.credentials(), "s3", REGION).add_auth(req)
    conn = http.client.HTTPConnection(s.host, s.port, timeout=60)
    try:
        conn.request(method, urllib.parse.quote(path), body=body, headers=dict(req.headers.items()))
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@test
def reference_check_values(s):
    # The standard check values of each CRC ("123456789"), so the expected
    # values below are right before the daemon is judged by them.
    assert _crc_ref(_CRC32C, b"123456789") == 0xE3069283
    assert crc32c(b"123456789") == 0xE3069283
    assert crc64nvme(b"123456789") == 0xAE8B14860A799888
    assert zlib.crc32(b"123456789") == 0xCBF43926
    data = os.urandom(4096)
    assert crc32c(data) == _crc_ref(_CRC32C, data)


@test
def put_object_checksums(s):
    c, b = new_bucket(s, "ckput")
    data = os.urandom(1 * MiB + 333)
    for algo in ALGOS:
        key = f"obj-{algo}"
        r = c.put_object(Bucket=b, Key=key, Body=data, ChecksumAlgorithm=algo)
        assert r.get(f"Checksum{algo}") == cks(algo, data), (algo, r.get(f"Checksum{algo}"))
        assert r["ETag"] == f'"{md5_hex(data)}"'
        h = c.head_object(Bucket=b, Key=key, ChecksumMode="ENABLED")
        assert h.get(f"Checksum{algo}") == cks(algo, data), (algo, h.get(f"Checksum{algo}"))
        # Only the one algorithm that was stored.
        others = [a for a in ALGOS if a != algo and h.get(f"Checksum{a}")]
        assert not others, (algo, others)
        g = c.get_object(Bucket=b, Key=key, ChecksumMode="ENABLED")
        assert g.get(f"Checksum{algo}") == cks(algo, data)
        assert body_of(g) == data
        # A given (precomputed) value is checked, not just echoed.
        r = c.put_object(Bucket=b, Key=key + "-given", Body=data, **{f"Checksum{algo}": cks(algo, data)})
        assert r.get(f"Checksum{algo}") == cks(algo, data)
        wrong = cks(algo, data + b"!")
        expect_error(lambda: c.put_object(Bucket=b, Key=key + "-wrong", Body=data, **{f"Checksum{algo}": wrong}),
                     "BadDigest", 400)
        expect_error(lambda: c.head_object(Bucket=b, Key=key + "-wrong"), "404", 404)


@test
def put_object_crc64nvme_raw(s):
    c, b = new_bucket(s, "ck64")
    data = os.urandom(100_000)
    want = cks("CRC64NVME", data)
    st, hdrs, body = raw_request(s, "PUT", f"/{b}/crc64", {"x-amz-checksum-crc64nvme": want}, data)
    assert st == 200, (st, body[:500])
    assert hdrs.get("x-amz-checksum-crc64nvme") == want, hdrs
    st, hdrs, body = raw_request(s, "HEAD", f"/{b}/crc64", {"x-amz-checksum-mode": "ENABLED"})
    assert st == 200 and hdrs.get("x-amz-checksum-crc64nvme") == want, (st, hdrs)
    st, hdrs, body = raw_request(s, "GET", f"/{b}/crc64", {"x-amz-checksum-mode": "ENABLED"})
    assert st == 200 and body == data and hdrs.get("x-amz-checksum-crc64nvme") == want
    bad = cks("CRC64NVME", data[:-1])
    st, hdrs, body = raw_request(s, "PUT", f"/{b}/crc64-bad", {"x-amz-checksum-crc64nvme": bad}, data)
    assert st == 400 and b"<Code>BadDigest</Code>" in body, (st, body[:500])
    expect_error(lambda: c.head_object(Bucket=b, Key="crc64-bad"), "404", 404)


@test
def multipart_composite_checksums(s):
    c, b = new_bucket(s, "ckmpu")
    parts = [os.urandom(5 * MiB), os.urandom(123_457)]
    missing_hdr, no_suffix = [], []
    for algo in ALGOS:
        key = f"mp-{algo}"
        r = c.create_multipart_upload(Bucket=b, Key=key, ChecksumAlgorithm=algo)
        if r.get("ChecksumAlgorithm") != algo:
            missing_hdr.append(algo)
        uid = r["UploadId"]
        done = []
        for i, p in enumerate(parts, 1):
            u = c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i, Body=p, ChecksumAlgorithm=algo)
            assert u.get(f"Checksum{algo}") == cks(algo, p), (algo, i, u.get(f"Checksum{algo}"))
            done.append({"PartNumber": i, "ETag": u["ETag"], f"Checksum{algo}": cks(algo, p)})
        lp = c.list_parts(Bucket=b, Key=key, UploadId=uid)
        assert [p.get(f"Checksum{algo}") for p in lp["Parts"]] == [cks(algo, p) for p in parts], lp["Parts"]
        r = c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": done})
        want = composite(algo, parts)
        h = c.head_object(Bucket=b, Key=key, ChecksumMode="ENABLED")
        for what, got in (("Complete", r.get(f"Checksum{algo}")), ("HEAD", h.get(f"Checksum{algo}"))):
            # The checksum-of-checksums must be right; the "-N" suffix is
            # checked after the loop so every algorithm gets tested.
            assert got and got.split("-")[0] == want.split("-")[0], (algo, what, got, want)
            if got != want:
                no_suffix.append(f"{algo} {what}: {got!r}, want {want!r}")
        ctype = h["ResponseMetadata"]["HTTPHeaders"].get("x-amz-checksum-type")
        assert ctype in (None, "COMPOSITE"), ctype
        assert body_of(c.get_object(Bucket=b, Key=key)) == b"".join(parts)
        # GET of one part returns that part's checksum.
        g = c.get_object(Bucket=b, Key=key, PartNumber=2, ChecksumMode="ENABLED")
        assert body_of(g) == parts[1]
        got = g.get(f"Checksum{algo}")
        assert got in (None, cks(algo, parts[1])), (algo, got)
    # Checked last so the rest runs: AWS answers CreateMultipartUpload with
    # x-amz-checksum-algorithm when one was requested.
    assert not no_suffix, "COMPOSITE checksum without the -N part count: " + "; ".join(no_suffix)
    assert not missing_hdr, f"CreateMultipartUpload did not return x-amz-checksum-algorithm for {missing_hdr}"


@test
def multipart_wrong_part_checksum(s):
    c, b = new_bucket(s, "ckbad")
    uid = c.create_multipart_upload(Bucket=b, Key="k", ChecksumAlgorithm="CRC32")["UploadId"]
    p = os.urandom(300_000)
    expect_error(lambda: c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=p,
                                       ChecksumCRC32=cks("CRC32", p + b"x")), "BadDigest", 400)
    # Nothing was stored for that part.
    assert "Parts" not in c.list_parts(Bucket=b, Key="k", UploadId=uid) or \
        c.list_parts(Bucket=b, Key="k", UploadId=uid)["Parts"] == []
    # A checksum of another algorithm than the upload's is refused (AWS:
    # 400 InvalidRequest "Checksum Type mismatch"), even a correct one.
    for kw in ({"ChecksumSHA256": cks("SHA256", b"other")}, {"ChecksumSHA256": cks("SHA256", p)}):
        try:
            c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=p, **kw)
            raise AssertionError("a SHA256 part checksum was accepted for a CRC32 upload")
        except c.exceptions.ClientError as e:
            st = e.response["ResponseMetadata"]["HTTPStatusCode"]
            assert st == 400 and e.response["Error"]["Code"] in ("InvalidRequest", "InvalidArgument", "BadDigest"), \
                e.response["Error"]
    assert c.list_parts(Bucket=b, Key="k", UploadId=uid).get("Parts", []) == []
    u = c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=p, ChecksumAlgorithm="CRC32")
    assert u["ChecksumCRC32"] == cks("CRC32", p)
    # Completing with a checksum that is not the part's: InvalidPart.
    expect_error(lambda: c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": u["ETag"], "ChecksumCRC32": cks("CRC32", b"nope")}]}),
        "InvalidPart", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)
    r = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": u["ETag"], "ChecksumCRC32": u["ChecksumCRC32"]}]})
    assert r.get("ChecksumCRC32") == composite("CRC32", [p]), (r.get("ChecksumCRC32"), composite("CRC32", [p]))
    assert body_of(c.get_object(Bucket=b, Key="k")) == p


@test
def get_object_attributes(s):
    c, b = new_bucket(s, "ckattr")
    data = os.urandom(1024)
    c.put_object(Bucket=b, Key="single", Body=data, ChecksumAlgorithm="SHA256")
    attrs = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
    r = c.get_object_attributes(Bucket=b, Key="single", ObjectAttributes=attrs)
    assert r["ETag"] == md5_hex(data), r.get("ETag")  # unquoted here, as AWS does
    assert r["ObjectSize"] == 1024
    assert r.get("StorageClass") == "STANDARD", r.get("StorageClass")
    assert r["Checksum"].get("ChecksumSHA256") == cks("SHA256", data), r.get("Checksum")
    assert "ObjectParts" not in r, r.get("ObjectParts")
    assert r.get("LastModified") is not None
    # Only what was asked for.
    r = c.get_object_attributes(Bucket=b, Key="single", ObjectAttributes=["ObjectSize"])
    assert r["ObjectSize"] == 1024 and "ETag" not in r and "Checksum" not in r, r
    # Multipart with per-part SHA256.
    parts = [os.urandom(5 * MiB), os.urandom(2000)]
    uid = c.create_multipart_upload(Bucket=b, Key="multi", ChecksumAlgorithm="SHA256")["UploadId"]
    done = []
    for i, p in enumerate(parts, 1):
        u = c.upload_part(Bucket=b, Key="multi", UploadId=uid, PartNumber=i, Body=p, ChecksumAlgorithm="SHA256")
        done.append({"PartNumber": i, "ETag": u["ETag"], "ChecksumSHA256": u["ChecksumSHA256"]})
    c.complete_multipart_upload(Bucket=b, Key="multi", UploadId=uid, MultipartUpload={"Parts": done})
    r = c.get_object_attributes(Bucket=b, Key="multi", ObjectAttributes=attrs)
    md5s = b"".join(hashlib.md5(p).digest() for p in parts)
    assert r["ETag"] == f"{hashlib.md5(md5s).hexdigest()}-2", r["ETag"]
    assert r["ObjectSize"] == 5 * MiB + 2000
    want = composite("SHA256", parts)
    got = r["Checksum"].get("ChecksumSHA256")
    # AWS reports the composite value here with or without the -N suffix.
    assert got in (want, want.rsplit("-", 1)[0]), (got, want)
    op = r["ObjectParts"]
    assert op["TotalPartsCount"] == 2, op
    assert [(p["PartNumber"], p["Size"], p.get("ChecksumSHA256")) for p in op.get("Parts", [])] == \
        [(1, 5 * MiB, cks("SHA256", parts[0])), (2, 2000, cks("SHA256", parts[1]))], op
    # Paging the parts.
    r = c.get_object_attributes(Bucket=b, Key="multi", ObjectAttributes=["ObjectParts"], MaxParts=1)
    op = r["ObjectParts"]
    assert op.get("IsTruncated") is True and [p["PartNumber"] for p in op["Parts"]] == [1], op
    r = c.get_object_attributes(Bucket=b, Key="multi", ObjectAttributes=["ObjectParts"], MaxParts=1,
                                PartNumberMarker=int(op["NextPartNumberMarker"]))
    assert [p["PartNumber"] for p in r["ObjectParts"]["Parts"]] == [2], r["ObjectParts"]
    expect_error(lambda: c.get_object_attributes(Bucket=b, Key="missing", ObjectAttributes=attrs), "NoSuchKey", 404)


if __name__ == "__main__":
    run(Strata())
