#!/usr/bin/python3
"""test_versioning.py - bucket versioning through boto3 against a live
strata: Put/GetBucketVersioning (Enabled, Suspended, bad status), unique
version ids newest first, GET/HEAD/DELETE with VersionId, delete markers
(x-amz-delete-marker, 404 NoSuchKey, 405 MethodNotAllowed on a marker by id,
removing a marker restores the object), NoSuchVersion, the "null" version of
objects written before versioning and while suspended, and
ListObjectVersions with prefix, delimiter, key-marker/version-id-marker,
max-keys and a paginator over 300+ versions compared with the expected list.
Run by CTest (integration label) with /usr/bin/python3.
"""

import concurrent.futures
import os
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, md5_hex, run, test  # noqa: E402
from stored_data import RECLAIM_ARGS, data_bytes, wait_reclaimed  # noqa: E402


def body_of(resp):
    return resp["Body"].read()


def new_bucket(s, prefix, versioning=None):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    if versioning:
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": versioning})
    return c, b


def headers(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"]


def all_versions(c, b, **kw):
    """Every version and marker of the bucket as (key, version_id, is_marker,
    is_latest), in listing order per kind (versions, then markers)."""
    vers, marks = [], []
    for page in c.get_paginator("list_object_versions").paginate(Bucket=b, **kw):
        vers += [(v["Key"], v["VersionId"], False, v["IsLatest"]) for v in page.get("Versions", [])]
        marks += [(m["Key"], m["VersionId"], True, m["IsLatest"]) for m in page.get("DeleteMarkers", [])]
    return vers, marks


@test
def bucket_versioning_config(s):
    c, b = new_bucket(s, "vcfg")
    r = c.get_bucket_versioning(Bucket=b)
    # A bucket that never had versioning has no Status element.
    assert "Status" not in r, r
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert c.get_bucket_versioning(Bucket=b).get("Status") == "Enabled"
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert c.get_bucket_versioning(Bucket=b).get("Status") == "Suspended"
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert c.get_bucket_versioning(Bucket=b).get("Status") == "Enabled"
    # An invalid status is MalformedXML (AWS), and the setting is unchanged.
    expect_error(lambda: c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Sometimes"}),
                 "MalformedXML", 400)
    assert c.get_bucket_versioning(Bucket=b).get("Status") == "Enabled"
    # Versioning on a missing bucket.
    expect_error(lambda: c.get_bucket_versioning(Bucket=b + "-missing"), "NoSuchBucket", 404)
    expect_error(lambda: c.put_bucket_versioning(Bucket=b + "-missing",
                                                 VersioningConfiguration={"Status": "Enabled"}),
                 "NoSuchBucket", 404)


@test
def versions_get_head_delete(s):
    c, b = new_bucket(s, "vobj", "Enabled")
    datas = [os.urandom(n) for n in (10, 200_000, 5)]
    ids = []
    for d in datas:
        r = c.put_object(Bucket=b, Key="k", Body=d)
        assert r.get("VersionId") and r["VersionId"] != "null", r
        assert r["ETag"] == f'"{md5_hex(d)}"'
        ids.append(r["VersionId"])
    assert len(set(ids)) == 3, f"version ids not unique: {ids}"
    # Latest is the last put; each version is readable by id.
    g = c.get_object(Bucket=b, Key="k")
    assert body_of(g) == datas[2] and g.get("VersionId") == ids[2], g.get("VersionId")
    for d, vid in zip(datas, ids):
        g = c.get_object(Bucket=b, Key="k", VersionId=vid)
        assert body_of(g) == d, f"version {vid}: bytes differ"
        assert g["VersionId"] == vid and g["ContentLength"] == len(d)
        h = c.head_object(Bucket=b, Key="k", VersionId=vid)
        assert h["VersionId"] == vid and h["ContentLength"] == len(d) and h["ETag"] == f'"{md5_hex(d)}"'
    # Range on an old version.
    g = c.get_object(Bucket=b, Key="k", VersionId=ids[1], Range="bytes=100-199")
    assert body_of(g) == datas[1][100:200] and g["ContentRange"] == "bytes 100-199/200000"
    # ListObjectVersions: newest first, IsLatest only on the newest.
    r = c.list_object_versions(Bucket=b, Prefix="k")
    got = [(v["VersionId"], v["IsLatest"], v["Size"]) for v in r["Versions"]]
    assert got == [(ids[2], True, 5), (ids[1], False, 200_000), (ids[0], False, 10)], got
    assert r["Versions"][0]["ETag"] == f'"{md5_hex(datas[2])}"'
    assert "DeleteMarkers" not in r, r.get("DeleteMarkers")

    # DELETE without a version id adds a delete marker.
    d = c.delete_object(Bucket=b, Key="k")
    assert d["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert d.get("DeleteMarker") is True, d
    marker = d.get("VersionId")
    assert marker and marker not in ids, d
    e = expect_error(lambda: c.get_object(Bucket=b, Key="k"), "NoSuchKey", 404)
    assert headers(e).get("x-amz-delete-marker") == "true", headers(e)
    assert headers(e).get("x-amz-version-id") == marker, headers(e)
    e = expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)
    assert headers(e).get("x-amz-delete-marker") == "true", headers(e)
    # GET/HEAD of the marker itself by version id: 405 MethodNotAllowed.
    e = expect_error(lambda: c.get_object(Bucket=b, Key="k", VersionId=marker), "MethodNotAllowed", 405)
    assert headers(e).get("x-amz-delete-marker") == "true", headers(e)
    expect_error(lambda: c.head_object(Bucket=b, Key="k", VersionId=marker), "405", 405)
    # Old versions are still readable by id.
    assert body_of(c.get_object(Bucket=b, Key="k", VersionId=ids[0])) == datas[0]
    # The key is gone from ListObjectsV2, present in ListObjectVersions.
    assert c.list_objects_v2(Bucket=b).get("KeyCount") == 0
    r = c.list_object_versions(Bucket=b)
    assert [(m["VersionId"], m["IsLatest"]) for m in r["DeleteMarkers"]] == [(marker, True)], r
    assert [v["IsLatest"] for v in r["Versions"]] == [False, False, False], r["Versions"]
    # A second delete adds a second marker.
    marker2 = c.delete_object(Bucket=b, Key="k")["VersionId"]
    assert marker2 not in (marker, *ids)
    # Deleting a marker by version id removes it (response says so).
    d = c.delete_object(Bucket=b, Key="k", VersionId=marker2)
    assert d.get("DeleteMarker") is True and d.get("VersionId") == marker2, d
    d = c.delete_object(Bucket=b, Key="k", VersionId=marker)
    assert d.get("DeleteMarker") is True and d.get("VersionId") == marker, d
    # With the markers gone the newest version is current again.
    g = c.get_object(Bucket=b, Key="k")
    assert body_of(g) == datas[2] and g["VersionId"] == ids[2]
    # Permanently deleting the newest version makes the previous one current.
    d = c.delete_object(Bucket=b, Key="k", VersionId=ids[2])
    assert d.get("VersionId") == ids[2] and not d.get("DeleteMarker"), d
    g = c.get_object(Bucket=b, Key="k")
    assert body_of(g) == datas[1] and g["VersionId"] == ids[1]
    expect_error(lambda: c.get_object(Bucket=b, Key="k", VersionId=ids[2]), "NoSuchVersion", 404)
    expect_error(lambda: c.head_object(Bucket=b, Key="k", VersionId=ids[2]), "404", 404)
    # A version id of another key does not name a version of this one.
    other = c.put_object(Bucket=b, Key="other", Body=b"o")["VersionId"]
    expect_error(lambda: c.get_object(Bucket=b, Key="k", VersionId=other), "NoSuchVersion", 404)
    # An id of a form this store never hands out is a bad request (AWS:
    # 400 InvalidArgument), not a missing version, and deletes nothing.
    for bad in ("garbage-id", ids[1].upper(), ids[1][:-1], ids[1] + "0", "NULL"):
        expect_error(lambda: c.get_object(Bucket=b, Key="k", VersionId=bad), "InvalidArgument", 400)
        expect_error(lambda: c.head_object(Bucket=b, Key="k", VersionId=bad), "400", 400)
        expect_error(lambda: c.delete_object(Bucket=b, Key="k", VersionId=bad), "InvalidArgument", 400)
        expect_error(lambda: c.get_object_tagging(Bucket=b, Key="k", VersionId=bad),
                     "InvalidArgument", 400)
        expect_error(lambda: c.list_object_versions(Bucket=b, KeyMarker="k", VersionIdMarker=bad),
                     "InvalidArgument", 400)
    assert body_of(c.get_object(Bucket=b, Key="k", VersionId=ids[1])) == datas[1]
    r = c.list_object_versions(Bucket=b, Prefix="k")
    assert [v["VersionId"] for v in r["Versions"]] == [ids[1], ids[0]], r["Versions"]
    assert "DeleteMarkers" not in r


@test
def null_version_and_suspended(s):
    c, b = new_bucket(s, "vnull")
    # Written before versioning: the "null" version.
    c.put_object(Bucket=b, Key="n", Body=b"before")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    h = c.head_object(Bucket=b, Key="n")
    assert h.get("VersionId") in (None, "null"), h.get("VersionId")
    assert body_of(c.get_object(Bucket=b, Key="n", VersionId="null")) == b"before"
    v1 = c.put_object(Bucket=b, Key="n", Body=b"enabled-1")["VersionId"]
    assert v1 != "null"
    r = c.list_object_versions(Bucket=b, Prefix="n")
    assert [(v["VersionId"], v["IsLatest"]) for v in r["Versions"]] == [(v1, True), ("null", False)], r
    # Suspended: a PUT writes the "null" version, replacing the old null one,
    # and keeps the enabled-era version.
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    r = c.put_object(Bucket=b, Key="n", Body=b"suspended-1")
    assert r.get("VersionId") in (None, "null"), r.get("VersionId")
    r = c.list_object_versions(Bucket=b, Prefix="n")
    assert [(v["VersionId"], v["IsLatest"]) for v in r["Versions"]] == [("null", True), (v1, False)], r
    assert body_of(c.get_object(Bucket=b, Key="n", VersionId="null")) == b"suspended-1"
    c.put_object(Bucket=b, Key="n", Body=b"suspended-2")
    r = c.list_object_versions(Bucket=b, Prefix="n")
    assert [(v["VersionId"], v["Size"]) for v in r["Versions"]] == [("null", 11), (v1, 9)], r["Versions"]
    assert body_of(c.get_object(Bucket=b, Key="n")) == b"suspended-2"
    assert body_of(c.get_object(Bucket=b, Key="n", VersionId=v1)) == b"enabled-1"
    # Delete while suspended: a delete marker with version id "null"
    # replaces the null version; v1 survives.
    d = c.delete_object(Bucket=b, Key="n")
    assert d.get("DeleteMarker") is True and d.get("VersionId") in (None, "null"), d
    r = c.list_object_versions(Bucket=b, Prefix="n")
    assert [v["VersionId"] for v in r.get("Versions", [])] == [v1], r
    assert [(m["VersionId"], m["IsLatest"]) for m in r.get("DeleteMarkers", [])] == [("null", True)], r
    expect_error(lambda: c.get_object(Bucket=b, Key="n"), "NoSuchKey", 404)
    # Re-enabled: new versions stack on top, the null marker stays.
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v2 = c.put_object(Bucket=b, Key="n", Body=b"enabled-2")["VersionId"]
    assert v2 not in ("null", v1)
    r = c.list_object_versions(Bucket=b, Prefix="n")
    assert [v["VersionId"] for v in r["Versions"]] == [v2, v1], r
    assert [m["VersionId"] for m in r["DeleteMarkers"]] == ["null"], r
    # Deleting version "null" explicitly removes the marker.
    c.delete_object(Bucket=b, Key="n", VersionId="null")
    r = c.list_object_versions(Bucket=b, Prefix="n")
    assert "DeleteMarkers" not in r, r
    # An unversioned (never enabled) bucket: a PUT replaces the null version.
    c2, b2 = new_bucket(s, "vnone")
    c2.put_object(Bucket=b2, Key="x", Body=b"1")
    c2.put_object(Bucket=b2, Key="x", Body=b"22")
    r = c2.list_object_versions(Bucket=b2)
    assert [(v["VersionId"], v["Size"], v["IsLatest"]) for v in r["Versions"]] == [("null", 2, True)], r


def _build_history(c, b):
    """Writes the version history used by the listing tests; returns the
    expected ListObjectVersions order as a list of (key, vid, is_marker)."""
    keys = [f"dir{d}/sub{s_}/obj{i}" for d in range(3) for s_ in range(2) for i in range(2)]
    keys += ["top0", "top1", "dir1/x"]  # 15 keys
    hist = {}

    def writer(key):
        out = []
        n = 21 + (len(key) % 3)
        for i in range(n):
            if i % 9 == 8:
                out.append((c.delete_object(Bucket=b, Key=key)["VersionId"], True))
            else:
                out.append((c.put_object(Bucket=b, Key=key, Body=f"{key}#{i}".encode())["VersionId"],
                            False))
        return key, out

    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        for key, out in ex.map(writer, keys):
            hist[key] = out
    expected = []
    for key in sorted(keys, key=lambda k: k.encode()):
        for vid, is_marker in reversed(hist[key]):
            expected.append((key, vid, is_marker))
    return expected


_HIST = {}


def history(s):
    if not _HIST:
        c, b = new_bucket(s, "vlist", "Enabled")
        _HIST.update(c=c, b=b, exp=_build_history(c, b))
    return _HIST["c"], _HIST["b"], _HIST["exp"]


def split(expected):
    latest = {}
    for key, vid, _m in expected:
        latest.setdefault(key, vid)
    vers = [(k, v, False, latest[k] == v) for k, v, m in expected if not m]
    marks = [(k, v, True, latest[k] == v) for k, v, m in expected if m]
    return vers, marks


@test
def list_versions_paginator(s):
    c, b, exp = history(s)
    assert len(exp) >= 300, len(exp)
    assert len({v for _k, v, _m in exp}) == len(exp), "version ids are not unique"
    want_v, want_m = split(exp)
    # Default page size (1,000): one page.
    got_v, got_m = all_versions(c, b)
    assert got_v == want_v, f"versions differ: {len(got_v)} vs {len(want_v)}; first diff " \
        f"{next(((g, w) for g, w in zip(got_v, want_v) if g != w), None)}"
    assert got_m == want_m, f"markers differ: {len(got_m)} vs {len(want_m)}"
    # Pages of 37: the union of every page equals the whole listing, and
    # each page holds at most 37 entries.
    pages = list(c.get_paginator("list_object_versions").paginate(
        Bucket=b, PaginationConfig={"PageSize": 37}))
    assert len(pages) == -(-len(exp) // 37), f"{len(pages)} pages for {len(exp)} entries"
    seen = []
    for i, p in enumerate(pages):
        n = len(p.get("Versions", [])) + len(p.get("DeleteMarkers", []))
        assert p["MaxKeys"] == 37
        assert n == 37 or i == len(pages) - 1, f"page {i} has {n} entries"
        assert p["IsTruncated"] == (i < len(pages) - 1)
        if p["IsTruncated"]:
            assert p.get("NextKeyMarker") and p.get("NextVersionIdMarker"), p.keys()
        # Within a page, versions and markers interleave in listing order;
        # rebuild the order from the expected list.
        ids = {v["VersionId"] for v in p.get("Versions", [])} | {m["VersionId"] for m in p.get("DeleteMarkers", [])}
        seen.append(ids)
    pos = 0
    for i, ids in enumerate(seen):
        chunk = {v for _k, v, _m in exp[pos:pos + len(ids)]}
        assert chunk == ids, f"page {i} holds the wrong entries"
        pos += len(ids)
    assert pos == len(exp)
    # boto3 splits Versions and DeleteMarkers; the XML interleaves them in
    # listing order.  Read the raw bodies to check that order exactly.
    bodies = []
    c2 = s.client()
    c2.meta.events.register("after-call.s3.ListObjectVersions",
                            lambda http_response, **kw: bodies.append(http_response.content))
    list(c2.get_paginator("list_object_versions").paginate(Bucket=b, PaginationConfig={"PageSize": 100}))
    order = []
    for body in bodies:
        for el in ET.fromstring(body):
            tag = el.tag.rsplit("}", 1)[-1]
            if tag in ("Version", "DeleteMarker"):
                ns = el.tag[:-len(tag)]
                order.append((el.find(ns + "Key").text, el.find(ns + "VersionId").text, tag == "DeleteMarker"))
    assert order == exp, "ListObjectVersions XML order differs from key order / newest first: first diff " \
        f"{next(((i, g, w) for i, (g, w) in enumerate(zip(order, exp)) if g != w), (len(order), len(exp)))}"


@test
def list_versions_markers_prefix_delimiter(s):
    c, b, exp = history(s)
    # key-marker alone: everything after that key (all its versions skipped).
    km = "dir1/sub0/obj1"
    r = c.list_object_versions(Bucket=b, KeyMarker=km)
    got = [(v["Key"], v["VersionId"]) for v in r.get("Versions", [])]
    want = [(k, v) for k, v, m in exp if not m and k.encode() > km.encode()]
    assert got == want, f"KeyMarker: {len(got)} vs {len(want)}"
    # key-marker + version-id-marker: the versions of that key after the
    # given one, then the following keys.
    entries_km = [(k, v, m) for k, v, m in exp if k == km]
    vm = entries_km[5][1]
    r = c.list_object_versions(Bucket=b, KeyMarker=km, VersionIdMarker=vm, MaxKeys=12)
    got = sorted([v["VersionId"] for v in r.get("Versions", [])] +
                 [m["VersionId"] for m in r.get("DeleteMarkers", [])])
    i = exp.index((km, vm, entries_km[5][2]))
    want = sorted(v for _k, v, _m in exp[i + 1:i + 13])
    assert got == want, "KeyMarker+VersionIdMarker page differs"
    assert r["IsTruncated"] is True and r["KeyMarker"] == km and r["VersionIdMarker"] == vm
    # Manual paging with MaxKeys and the Next* markers reproduces the list.
    got_ids, kw, pages = [], {}, 0
    while True:
        r = c.list_object_versions(Bucket=b, MaxKeys=50, **kw)
        pages += 1
        entries = [(v["Key"], v["VersionId"]) for v in r.get("Versions", [])] + \
                  [(m["Key"], m["VersionId"]) for m in r.get("DeleteMarkers", [])]
        assert len(entries) <= 50
        got_ids += entries
        if not r["IsTruncated"]:
            break
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}
        assert pages < 100, "paging does not end"
    assert sorted(got_ids) == sorted((k, v) for k, v, _m in exp) and len(got_ids) == len(exp)
    # Prefix.
    r = c.list_object_versions(Bucket=b, Prefix="dir2/")
    got = [(v["Key"], v["VersionId"]) for v in r.get("Versions", [])]
    want = [(k, v) for k, v, m in exp if not m and k.startswith("dir2/")]
    assert got == want and r["Prefix"] == "dir2/", (len(got), len(want))
    # Delimiter: top-level common prefixes plus the top-level keys.
    r = c.list_object_versions(Bucket=b, Delimiter="/")
    cps = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
    assert cps == ["dir0/", "dir1/", "dir2/"], cps
    keys = sorted({v["Key"] for v in r.get("Versions", [])} | {m["Key"] for m in r.get("DeleteMarkers", [])})
    assert keys == ["top0", "top1"], keys
    # Prefix + delimiter.
    r = c.list_object_versions(Bucket=b, Prefix="dir1/", Delimiter="/")
    cps = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
    assert cps == ["dir1/sub0/", "dir1/sub1/"], cps
    got = [(v["Key"], v["VersionId"]) for v in r.get("Versions", [])]
    want = [(k, v) for k, v, m in exp if not m and k == "dir1/x"]
    assert got == want, got
    # Delimiter with small MaxKeys: common prefixes count toward MaxKeys
    # and paging still visits each prefix once.
    cps, kw = [], {}
    for _ in range(50):
        r = c.list_object_versions(Bucket=b, Delimiter="/", MaxKeys=2, **kw)
        cps += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        n = len(r.get("CommonPrefixes", [])) + len(r.get("Versions", [])) + len(r.get("DeleteMarkers", []))
        assert n <= 2, n
        if not r["IsTruncated"]:
            break
        kw = {"KeyMarker": r["NextKeyMarker"]}
        if r.get("NextVersionIdMarker"):
            kw["VersionIdMarker"] = r["NextVersionIdMarker"]
    assert cps == ["dir0/", "dir1/", "dir2/"], cps
    # Missing bucket.
    expect_error(lambda: c.list_object_versions(Bucket=b + "-nope"), "NoSuchBucket", 404)


@test
def delete_objects_with_versions(s):
    c, b = new_bucket(s, "vmulti", "Enabled")
    v1 = c.put_object(Bucket=b, Key="a", Body=b"a1")["VersionId"]
    v2 = c.put_object(Bucket=b, Key="a", Body=b"a2")["VersionId"]
    c.put_object(Bucket=b, Key="b", Body=b"b1")
    r = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "a", "VersionId": v1}, {"Key": "b"}]})
    dele = {d["Key"]: d for d in r.get("Deleted", [])}
    assert dele["a"].get("VersionId") == v1, dele
    assert dele["b"].get("DeleteMarker") is True and dele["b"].get("DeleteMarkerVersionId"), dele
    r = c.list_object_versions(Bucket=b)
    assert [(v["Key"], v["VersionId"]) for v in r["Versions"]][0] == ("a", v2), r["Versions"]
    assert [m["Key"] for m in r["DeleteMarkers"]] == ["b"]
    expect_error(lambda: c.get_object(Bucket=b, Key="a", VersionId=v1), "NoSuchVersion", 404)
    # A non-empty versioned bucket cannot be removed: versions count.
    for v in c.list_object_versions(Bucket=b).get("Versions", []):
        if v["Key"] == "a":
            c.delete_object(Bucket=b, Key="a", VersionId=v["VersionId"])
    expect_error(lambda: c.delete_bucket(Bucket=b), "BucketNotEmpty", 409)


def settle(s, pred, timeout=15.0):
    """Drive byte count once pred(count) holds (data is reclaimed after the
    metadata commit, maybe asynchronously), or the last count seen."""
    deadline = time.monotonic() + timeout
    while True:
        n = data_bytes(s)
        if pred(n) or time.monotonic() > deadline:
            return n
        time.sleep(0.2)


@test
def multipart_and_space_with_versions(s):
    c, b = new_bucket(s, "vspace", "Enabled")
    MiB = 1024 * 1024
    wait_reclaimed(s)  # earlier tests' data gone first
    base = data_bytes(s)
    # Multipart completes make versions too.
    ids, datas = [], []
    for i in range(2):
        parts = [os.urandom(5 * MiB), os.urandom(1000 + i)]
        uid = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
        done = [{"PartNumber": n, "ETag": c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=n,
                                                        Body=p)["ETag"]} for n, p in enumerate(parts, 1)]
        r = c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=uid, MultipartUpload={"Parts": done})
        assert r.get("VersionId") and r["VersionId"] not in ids, r
        ids.append(r["VersionId"])
        datas.append(b"".join(parts))
    for vid, d in zip(ids, datas):
        g = c.get_object(Bucket=b, Key="mp", VersionId=vid)
        assert body_of(g) == d and g["VersionId"] == vid
    r = c.list_object_versions(Bucket=b, Prefix="mp")
    assert [v["VersionId"] for v in r["Versions"]] == ids[::-1]
    assert all(v["ETag"].endswith('-2"') for v in r["Versions"]), r["Versions"]
    both = settle(s, lambda n: False, 0)
    per_version = (both - base) / 2
    assert per_version >= 5 * MiB, f"versions not on the drives? {base} -> {both}"
    # A delete marker keeps every byte of the old versions.
    marker = c.delete_object(Bucket=b, Key="mp")["VersionId"]
    time.sleep(0.5)
    assert data_bytes(s) >= both, "a delete marker removed version data"
    assert body_of(c.get_object(Bucket=b, Key="mp", VersionId=ids[0])) == datas[0]
    # Deleting one version by id frees that version's data only.
    c.delete_object(Bucket=b, Key="mp", VersionId=ids[0])
    one = settle(s, lambda n: n <= both - per_version * 0.9)
    assert both - per_version * 1.1 <= one <= both - per_version * 0.9, \
        f"deleting one version: {both} -> {one} bytes (one version is about {per_version:.0f})"
    assert body_of(c.get_object(Bucket=b, Key="mp", VersionId=ids[1])) == datas[1]
    c.delete_object(Bucket=b, Key="mp", VersionId=ids[1])
    c.delete_object(Bucket=b, Key="mp", VersionId=marker)
    end = settle(s, lambda n: n <= base)
    assert end <= base, f"{end - base} bytes left after deleting every version"
    assert "Versions" not in c.list_object_versions(Bucket=b)


if __name__ == "__main__":
    run(Strata(args=RECLAIM_ARGS))
