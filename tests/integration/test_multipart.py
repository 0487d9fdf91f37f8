#!/usr/bin/python3
"""test_multipart.py - multipart uploads through boto3 against a live
strata: the transfer manager (upload_file/download_file above an 8 MiB
threshold, 4 threads), Create/UploadPart/Complete with ETag = md5 of the
part md5s + "-N", EntityTooSmall, InvalidPart, InvalidPartOrder,
NoSuchUpload (bad id, after abort), AbortMultipartUpload reclaiming the
stored data (drive files, or the RADOS data pool), ListParts and ListMultipartUploads with paging,
UploadPartCopy with x-amz-copy-source-range, GET/HEAD ?partNumber
(Content-Range, x-amz-mp-parts-count) and parts uploaded in parallel.
Run by CTest (integration label) with /usr/bin/python3.
"""

import concurrent.futures
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, log, md5_hex, run, test  # noqa: E402
from stored_data import RECLAIM_ARGS, data_bytes, wait_reclaimed  # noqa: E402

from boto3.s3.transfer import TransferConfig  # noqa: E402

MiB = 1024 * 1024


def body_of(resp):
    return resp["Body"].read()


def new_bucket(s, prefix):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    return c, b


def mp_etag(parts):
    """S3's multipart ETag: md5 of the concatenated binary part md5s, -N."""
    cat = b"".join(hashlib.md5(p).digest() for p in parts)
    return f'"{hashlib.md5(cat).hexdigest()}-{len(parts)}"'


def upload(c, b, key, parts, **create_kw):
    """Create, upload every part (1..N) and complete; returns (complete
    response, upload id)."""
    uid = c.create_multipart_upload(Bucket=b, Key=key, **create_kw)["UploadId"]
    done = []
    for i, p in enumerate(parts, 1):
        r = c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i, Body=p)
        assert r["ETag"] == f'"{md5_hex(p)}"', (i, r["ETag"])
        done.append({"PartNumber": i, "ETag": r["ETag"]})
    r = c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": done})
    return r, uid


def wait_bytes_at_most(s, limit, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        now = data_bytes(s)
        if now <= limit or time.monotonic() > deadline:
            return now
        time.sleep(0.2)


@test
def transfer_manager_roundtrip(s):
    c, b = new_bucket(s, "xfer")
    cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4)
    data = os.urandom(37 * MiB + 123)
    src = os.path.join(s.tmp, "xfer.src")
    dst = os.path.join(s.tmp, "xfer.dst")
    with open(src, "wb") as f:
        f.write(data)
    c.upload_file(src, b, "big/file.bin", Config=cfg)
    parts = [data[i:i + 8 * MiB] for i in range(0, len(data), 8 * MiB)]
    assert len(parts) == 5
    h = c.head_object(Bucket=b, Key="big/file.bin")
    assert h["ContentLength"] == len(data)
    assert h["ETag"] == mp_etag(parts), (h["ETag"], mp_etag(parts))
    lst = c.list_objects_v2(Bucket=b)["Contents"]
    assert [(o["Key"], o["Size"], o["ETag"]) for o in lst] == [("big/file.bin", len(data), mp_etag(parts))], lst
    c.download_file(b, "big/file.bin", dst, Config=cfg)
    with open(dst, "rb") as f:
        got = f.read()
    assert len(got) == len(data) and hashlib.sha256(got).digest() == hashlib.sha256(data).digest(), \
        "download_file bytes differ"
    # No upload is left behind after a completed transfer.
    assert "Uploads" not in c.list_multipart_uploads(Bucket=b)
    os.unlink(src)
    os.unlink(dst)


@test
def low_level_complete_and_etag(s):
    c, b = new_bucket(s, "mpu")
    parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(1024)]
    r, _uid = upload(c, b, "obj", parts, ContentType="text/x-mpu", Metadata={"who": "itest2"})
    assert r["ETag"] == mp_etag(parts), (r["ETag"], mp_etag(parts))
    assert r["Key"] == "obj" and r["Bucket"] == b, r
    g = c.get_object(Bucket=b, Key="obj")
    assert body_of(g) == b"".join(parts), "completed object bytes differ"
    assert g["ETag"] == mp_etag(parts) and g["ContentLength"] == 10 * MiB + 1024
    assert g["ContentType"] == "text/x-mpu" and g["Metadata"] == {"who": "itest2"}, (g["ContentType"], g["Metadata"])
    # A range across the part 1/part 2 boundary.
    g = c.get_object(Bucket=b, Key="obj", Range=f"bytes={5 * MiB - 10}-{5 * MiB + 9}")
    assert body_of(g) == (parts[0] + parts[1])[5 * MiB - 10:5 * MiB + 10]
    # Re-uploading a part number replaces it; completing with a subset of the
    # parts (1 and 3) is allowed and makes an object of just those.
    uid = c.create_multipart_upload(Bucket=b, Key="subset")["UploadId"]
    p1, p1b, p2, p3 = os.urandom(5 * MiB), os.urandom(5 * MiB + 1), os.urandom(5 * MiB), b"tail"
    c.upload_part(Bucket=b, Key="subset", UploadId=uid, PartNumber=1, Body=p1)
    e1 = c.upload_part(Bucket=b, Key="subset", UploadId=uid, PartNumber=1, Body=p1b)["ETag"]
    c.upload_part(Bucket=b, Key="subset", UploadId=uid, PartNumber=2, Body=p2)
    e3 = c.upload_part(Bucket=b, Key="subset", UploadId=uid, PartNumber=3, Body=p3)["ETag"]
    lp = c.list_parts(Bucket=b, Key="subset", UploadId=uid)
    assert [(p["PartNumber"], p["Size"]) for p in lp["Parts"]] == [(1, 5 * MiB + 1), (2, 5 * MiB), (3, 4)], lp["Parts"]
    r = c.complete_multipart_upload(Bucket=b, Key="subset", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 3, "ETag": e3}]})
    assert r["ETag"] == mp_etag([p1b, p3])
    assert body_of(c.get_object(Bucket=b, Key="subset")) == p1b + p3
    # ETags are accepted without quotes too (clients differ).
    uid = c.create_multipart_upload(Bucket=b, Key="noquote")["UploadId"]
    e = c.upload_part(Bucket=b, Key="noquote", UploadId=uid, PartNumber=1, Body=b"q")["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="noquote", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e.strip('"')}]})
    assert body_of(c.get_object(Bucket=b, Key="noquote")) == b"q"
    # A single-part (small) upload is fine: the last part may be tiny.
    r, _ = upload(c, b, "one", [b"x" * 10])
    assert r["ETag"] == mp_etag([b"x" * 10])
    assert body_of(c.get_object(Bucket=b, Key="one")) == b"x" * 10


@test
def complete_errors(s):
    c, b = new_bucket(s, "mpuerr")
    key = "e"
    uid = c.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
    small = [os.urandom(1 * MiB), os.urandom(1024)]
    etags = [c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i, Body=p)["ETag"]
             for i, p in enumerate(small, 1)]
    parts = [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]
    # A non-last part under 5 MiB.
    expect_error(lambda: c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid,
                                                     MultipartUpload={"Parts": parts}),
                 "EntityTooSmall", 400)
    # Wrong ETag, and a part never uploaded.
    bad = [{"PartNumber": 1, "ETag": '"0123456789abcdef0123456789abcdef"'}]
    expect_error(lambda: c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid,
                                                     MultipartUpload={"Parts": bad}), "InvalidPart", 400)
    missing = [{"PartNumber": 7, "ETag": etags[0]}]
    expect_error(lambda: c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid,
                                                     MultipartUpload={"Parts": missing}), "InvalidPart", 400)
    # Out of order.
    big = os.urandom(5 * MiB)
    e1 = c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=1, Body=big)["ETag"]
    rev = [{"PartNumber": 2, "ETag": etags[1]}, {"PartNumber": 1, "ETag": e1}]
    expect_error(lambda: c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid,
                                                     MultipartUpload={"Parts": rev}), "InvalidPartOrder", 400)
    # No parts at all: MalformedXML.
    expect_error(lambda: c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid,
                                                     MultipartUpload={"Parts": []}), "MalformedXML", 400)
    # Part number outside 1..10000.
    expect_error(lambda: c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=10001, Body=b"x"),
                 "InvalidArgument", 400)
    expect_error(lambda: c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=0, Body=b"x"),
                 "InvalidArgument", 400)
    # Nothing was created by the failed completions.
    expect_error(lambda: c.head_object(Bucket=b, Key=key), "404", 404)
    # The upload survives failed completions: a correct one now succeeds.
    ok = [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": etags[1]}]
    r = c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": ok})
    assert r["ETag"] == mp_etag([big, small[1]])
    assert body_of(c.get_object(Bucket=b, Key=key)) == big + small[1]
    # The completed upload is gone.
    expect_error(lambda: c.list_parts(Bucket=b, Key=key, UploadId=uid), "NoSuchUpload", 404)
    expect_error(lambda: c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=3, Body=b"x"),
                 "NoSuchUpload", 404)


@test
def no_such_upload(s):
    c, b = new_bucket(s, "nsu")
    bogus = "this-upload-id-does-not-exist"
    expect_error(lambda: c.upload_part(Bucket=b, Key="k", UploadId=bogus, PartNumber=1, Body=b"x"),
                 "NoSuchUpload", 404)
    expect_error(lambda: c.list_parts(Bucket=b, Key="k", UploadId=bogus), "NoSuchUpload", 404)
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="k", UploadId=bogus,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"' + md5_hex(b"x") + '"'}]}), "NoSuchUpload", 404)
    expect_error(lambda: c.abort_multipart_upload(Bucket=b, Key="k", UploadId=bogus), "NoSuchUpload", 404)
    # An upload id is bound to its key.
    uid = c.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    expect_error(lambda: c.upload_part(Bucket=b, Key="other", UploadId=uid, PartNumber=1, Body=b"x"),
                 "NoSuchUpload", 404)
    e = c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=b"x")["ETag"]
    r = c.abort_multipart_upload(Bucket=b, Key="k", UploadId=uid)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r["ResponseMetadata"]
    # After abort, every operation on the upload is NoSuchUpload.
    expect_error(lambda: c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=2, Body=b"x"),
                 "NoSuchUpload", 404)
    expect_error(lambda: c.list_parts(Bucket=b, Key="k", UploadId=uid), "NoSuchUpload", 404)
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]}),
        "NoSuchUpload", 404)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)
    assert "Uploads" not in c.list_multipart_uploads(Bucket=b)
    # Multipart on a missing bucket.
    expect_error(lambda: c.create_multipart_upload(Bucket=b + "-missing", Key="k"), "NoSuchBucket", 404)


@test
def abort_reclaims_space(s):
    c, b = new_bucket(s, "abort")
    wait_reclaimed(s)  # earlier tests' data gone first
    base = data_bytes(s)
    uid = c.create_multipart_upload(Bucket=b, Key="big")["UploadId"]
    for i in (1, 2):
        c.upload_part(Bucket=b, Key="big", UploadId=uid, PartNumber=i, Body=os.urandom(6 * MiB))
    during = data_bytes(s)
    assert during >= base + 12 * MiB, f"parts not on the drives? {base} -> {during} bytes"
    c.abort_multipart_upload(Bucket=b, Key="big", UploadId=uid)
    after = wait_bytes_at_most(s, base)
    log(f"abort: drive data {base} -> {during} -> {after} bytes")
    assert after <= base, f"abort left {after - base} bytes of part data on the drives"
    # Parts left out of a completed upload are reclaimed too, and deleting
    # the object returns every byte.
    uid = c.create_multipart_upload(Bucket=b, Key="pick")["UploadId"]
    keep = []
    for i in (1, 2, 3):
        e = c.upload_part(Bucket=b, Key="pick", UploadId=uid, PartNumber=i, Body=os.urandom(5 * MiB))["ETag"]
        if i != 2:
            keep.append({"PartNumber": i, "ETag": e})
    c.complete_multipart_upload(Bucket=b, Key="pick", UploadId=uid, MultipartUpload={"Parts": keep})
    # Bytes on the drives per byte of data (erasure-code overhead), measured
    # with the two 6 MiB parts above: the object keeps 10 MiB of parts, the
    # dropped third 5 MiB part must go.
    ratio = (during - base) / (12 * MiB)
    full = wait_bytes_at_most(s, base + int(ratio * 12.5 * MiB))
    assert full - base < ratio * 12.5 * MiB, \
        f"the part left out of the completed upload was not reclaimed: {full - base} bytes for 10 MiB"
    c.delete_object(Bucket=b, Key="pick")
    after = wait_bytes_at_most(s, base)
    log(f"complete+delete: drive data {base} -> {full} -> {after} bytes")
    assert after <= base, f"{after - base} bytes of an unused part or deleted object remain"


@test
def list_parts_paging(s):
    c, b = new_bucket(s, "lparts")
    uid = c.create_multipart_upload(Bucket=b, Key="p")["UploadId"]
    bodies = {i: os.urandom(100 + i) for i in range(1, 12)}
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda i: c.upload_part(Bucket=b, Key="p", UploadId=uid, PartNumber=i, Body=bodies[i]),
                    bodies))
    r = c.list_parts(Bucket=b, Key="p", UploadId=uid)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in r["Parts"]] == \
        [(i, len(bodies[i]), f'"{md5_hex(bodies[i])}"') for i in range(1, 12)], r["Parts"]
    assert r["IsTruncated"] is False and r["UploadId"] == uid and r["Key"] == "p"
    assert all("LastModified" in p for p in r["Parts"])
    # MaxParts=4: pages 1-4, 5-8, 9-11 via NextPartNumberMarker.
    got, marker, pages = [], 0, 0
    while True:
        r = c.list_parts(Bucket=b, Key="p", UploadId=uid, MaxParts=4, PartNumberMarker=marker)
        pages += 1
        nums = [p["PartNumber"] for p in r.get("Parts", [])]
        assert len(nums) <= 4 and r["MaxParts"] == 4
        got += nums
        if not r["IsTruncated"]:
            break
        assert r["NextPartNumberMarker"] == nums[-1], (r["NextPartNumberMarker"], nums)
        marker = r["NextPartNumberMarker"]
    assert got == list(range(1, 12)) and pages == 3, (got, pages)
    # The paginator does the same.
    pp = list(c.get_paginator("list_parts").paginate(Bucket=b, Key="p", UploadId=uid,
                                                     PaginationConfig={"PageSize": 5}))
    assert [p["PartNumber"] for page in pp for p in page.get("Parts", [])] == list(range(1, 12))
    assert len(pp) == 3
    c.abort_multipart_upload(Bucket=b, Key="p", UploadId=uid)


@test
def list_uploads_paging(s):
    c, b = new_bucket(s, "luploads")
    made = []
    for key in ("u/a", "u/b", "u/b", "v/c", "w", "u/d/e"):
        made.append((key, c.create_multipart_upload(Bucket=b, Key=key)["UploadId"]))
    ids = [u for _k, u in made]
    assert len(set(ids)) == len(ids), "upload ids are not unique"
    r = c.list_multipart_uploads(Bucket=b)
    got = [(u["Key"], u["UploadId"]) for u in r["Uploads"]]
    # Sorted by key; uploads of one key by initiation time.
    want = sorted(made, key=lambda m: (m[0].encode(), made.index(m)))
    assert got == want, (got, want)
    assert all("Initiated" in u for u in r["Uploads"])
    # Paging with MaxUploads=2 and KeyMarker/UploadIdMarker.
    got, kw, pages = [], {}, 0
    while True:
        r = c.list_multipart_uploads(Bucket=b, MaxUploads=2, **kw)
        pages += 1
        assert len(r.get("Uploads", [])) <= 2 and r["MaxUploads"] == 2
        got += [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        if not r["IsTruncated"]:
            break
        kw = {"KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}
        assert pages < 10
    assert got == want and pages == 3, (got, pages)
    pp = list(c.get_paginator("list_multipart_uploads").paginate(Bucket=b, PaginationConfig={"PageSize": 4}))
    assert [(u["Key"], u["UploadId"]) for p in pp for u in p.get("Uploads", [])] == want
    # Prefix and delimiter.
    r = c.list_multipart_uploads(Bucket=b, Prefix="u/")
    assert [u["Key"] for u in r["Uploads"]] == ["u/a", "u/b", "u/b", "u/d/e"], r["Uploads"]
    r = c.list_multipart_uploads(Bucket=b, Delimiter="/")
    assert [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["u/", "v/"], r.get("CommonPrefixes")
    assert [u["Key"] for u in r.get("Uploads", [])] == ["w"], r.get("Uploads")
    r = c.list_multipart_uploads(Bucket=b, Prefix="u/", Delimiter="/")
    assert [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["u/d/"]
    assert [u["Key"] for u in r.get("Uploads", [])] == ["u/a", "u/b", "u/b"]
    # KeyMarker alone skips every upload of that key.
    r = c.list_multipart_uploads(Bucket=b, KeyMarker="u/b")
    assert [u["Key"] for u in r["Uploads"]] == ["u/d/e", "v/c", "w"], r["Uploads"]
    for key, uid in made:
        c.abort_multipart_upload(Bucket=b, Key=key, UploadId=uid)
    assert "Uploads" not in c.list_multipart_uploads(Bucket=b)


@test
def upload_part_copy(s):
    c, b = new_bucket(s, "upcopy")
    src = os.urandom(12 * MiB + 7)
    c.put_object(Bucket=b, Key="src", Body=src)
    uid = c.create_multipart_upload(Bucket=b, Key="dst")["UploadId"]
    r1 = c.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": b, "Key": "src"}, CopySourceRange=f"bytes=0-{5 * MiB - 1}")
    assert r1["CopyPartResult"]["ETag"] == f'"{md5_hex(src[:5 * MiB])}"', r1["CopyPartResult"]
    r2 = c.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": b, "Key": "src"},
                            CopySourceRange=f"bytes={5 * MiB}-{len(src) - 1}")
    tail = b"plain part"
    e3 = c.upload_part(Bucket=b, Key="dst", UploadId=uid, PartNumber=3, Body=tail)["ETag"]
    # Range past the end of the source is refused.
    try:
        c.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=4,
                           CopySource={"Bucket": b, "Key": "src"}, CopySourceRange=f"bytes=0-{len(src)}")
        raise AssertionError("copy-source-range past the end was accepted")
    except c.exceptions.ClientError as e:
        code = e.response["Error"]["Code"]
        assert code in ("InvalidArgument", "InvalidRange"), e.response
    # Missing source.
    expect_error(lambda: c.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=4,
                                            CopySource={"Bucket": b, "Key": "nope"}), "NoSuchKey", 404)
    parts = [{"PartNumber": 1, "ETag": r1["CopyPartResult"]["ETag"]},
             {"PartNumber": 2, "ETag": r2["CopyPartResult"]["ETag"]},
             {"PartNumber": 3, "ETag": e3}]
    r = c.complete_multipart_upload(Bucket=b, Key="dst", UploadId=uid, MultipartUpload={"Parts": parts})
    want = src + tail
    assert r["ETag"] == mp_etag([src[:5 * MiB], src[5 * MiB:], tail])
    assert body_of(c.get_object(Bucket=b, Key="dst")) == want, "UploadPartCopy object bytes differ"
    # A whole-object part copy (no range) from another bucket.
    c2, b2 = new_bucket(s, "upcopy2")
    uid = c2.create_multipart_upload(Bucket=b2, Key="whole")["UploadId"]
    r = c2.upload_part_copy(Bucket=b2, Key="whole", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": b, "Key": "src"})
    c2.complete_multipart_upload(Bucket=b2, Key="whole", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": r["CopyPartResult"]["ETag"]}]})
    assert body_of(c2.get_object(Bucket=b2, Key="whole")) == src


@test
def get_head_part_number(s):
    c, b = new_bucket(s, "partnum")
    parts = [os.urandom(5 * MiB), os.urandom(5 * MiB + 3), os.urandom(1000)]
    upload(c, b, "mp", parts)
    total = sum(len(p) for p in parts)
    etag = mp_etag(parts)
    off = 0
    for n, p in enumerate(parts, 1):
        g = c.get_object(Bucket=b, Key="mp", PartNumber=n)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206, g["ResponseMetadata"]
        assert body_of(g) == p, f"part {n} bytes differ"
        assert g["ContentLength"] == len(p)
        assert g["ContentRange"] == f"bytes {off}-{off + len(p) - 1}/{total}", g["ContentRange"]
        assert g["PartsCount"] == 3, g.get("PartsCount")
        assert g["ETag"] == etag
        h = c.head_object(Bucket=b, Key="mp", PartNumber=n)
        assert h["ContentLength"] == len(p) and h["PartsCount"] == 3, h
        assert h["ResponseMetadata"]["HTTPHeaders"].get("content-range") == g["ContentRange"]
        off += len(p)
    expect_error(lambda: c.get_object(Bucket=b, Key="mp", PartNumber=4), "InvalidPartNumber", 416)
    expect_error(lambda: c.head_object(Bucket=b, Key="mp", PartNumber=4), "416", 416)
    # A plain object is one part.
    c.put_object(Bucket=b, Key="plain", Body=b"0123456789")
    g = c.get_object(Bucket=b, Key="plain", PartNumber=1)
    assert body_of(g) == b"0123456789" and g["ContentLength"] == 10
    expect_error(lambda: c.get_object(Bucket=b, Key="plain", PartNumber=2), "InvalidPartNumber", 416)


@test
def parallel_parts(s):
    c, b = new_bucket(s, "parallel")
    parts = [os.urandom(5 * MiB + i) for i in range(6)]
    uid = c.create_multipart_upload(Bucket=b, Key="par")["UploadId"]

    def send(i):
        cl = s.client()  # one client per thread, as boto3 recommends
        return i, cl.upload_part(Bucket=b, Key="par", UploadId=uid, PartNumber=i, Body=parts[i - 1])["ETag"]

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        done = dict(ex.map(send, reversed(range(1, 7))))
    for i in range(1, 7):
        assert done[i] == f'"{md5_hex(parts[i - 1])}"', i
    lp = c.list_parts(Bucket=b, Key="par", UploadId=uid)
    assert [p["PartNumber"] for p in lp["Parts"]] == list(range(1, 7))
    r = c.complete_multipart_upload(Bucket=b, Key="par", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i, "ETag": done[i]} for i in range(1, 7)]})
    assert r["ETag"] == mp_etag(parts)
    assert body_of(c.get_object(Bucket=b, Key="par")) == b"".join(parts)


if __name__ == "__main__":
    run(Strata(args=RECLAIM_ARGS))
