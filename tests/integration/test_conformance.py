#!/usr/bin/python3
"""test_conformance.py - the core S3 API probed the way outside conformance
suites (Ceph's s3-tests, MinIO's mint) probe it: every operation AWS
documents that Strata does not serve answers 501 NotImplemented and changes
nothing; request headers and query parameters that change semantics are
honoured or refused, never ignored; bucket, listing, DeleteObjects, GET
override, Range, conditional, copy, multipart, key and metadata edge cases
answer AWS's status, error code and headers; every error body has AWS's
shape.  boto3 for what its model sends, SigV4 requests signed by botocore
(and unsigned ones) for the rest.  Run by CTest with /usr/bin/python3.
"""

import base64
import hashlib
import http.client
import json
import socket
import os
import sys
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import REGION, Strata, expect_error, new_bucket, run, test  # noqa: E402

from botocore.auth import S3SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MIB = 1 << 20


class Resp:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def __repr__(self):
        return f"<{self.status} {self.body[:400]!r}>"


def req(s, method, path, query="", headers=None, body=b"", sign=True):
    """One request (SigV4 by botocore unless sign=False); path and query go
    on the wire as given (already %-encoded)."""
    target = path + ("?" + query if query else "")
    hdrs = dict(headers or {})
    if sign:
        ar = AWSRequest(method=method, url=s.endpoint + target, data=body, headers=hdrs)
        ar.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
        S3SigV4Auth(s.credentials(), "s3", REGION).add_auth(ar)
        hdrs = dict(ar.headers.items())
    conn = http.client.HTTPConnection(s.host, s.port, timeout=60)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", f"{s.host}:{s.port}")
        for k, v in hdrs.items():
            conn.putheader(k, v)
        if body or method in ("PUT", "POST"):
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        if body:
            conn.send(body)
        resp = conn.getresponse()
        r = Resp(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()
    assert r.headers.get("x-amz-request-id"), (method, target, r.headers)
    return r


def expect(r, status, code=None, resource=None):
    """r is the error (status, code) with AWS's shape: <Error> with Code,
    Message, Resource and RequestId equal to the x-amz-request-id header."""
    assert r.status == status, (status, code, r)
    if code is None:
        return r
    assert r.headers.get("content-type", "").startswith("application/xml"), r.headers
    root = ET.fromstring(r.body)
    assert root.tag == "Error", r
    assert root.findtext("Code") == code, (code, r)
    assert root.findtext("Message"), r
    assert root.findtext("RequestId") == r.headers["x-amz-request-id"], r
    assert root.findtext("Resource"), r
    if resource is not None:
        assert root.findtext("Resource") == resource, (resource, r)
    return r


def md5_b64(b):
    return base64.b64encode(hashlib.md5(b).digest()).decode()


def keys_of(c, b):
    return [o["Key"] for o in c.list_objects_v2(Bucket=b).get("Contents", [])]


# ---- 1: operations Strata does not serve ---------------------------------------

# (method, query) on a bucket.  CORS, public access block and ownership
# controls and intelligent tiering are left to their own tests; RestoreObject
# has restore_object_edges.
BUCKET_NOT_SERVED = [
    ("GET", "accelerate"), ("PUT", "accelerate"),
    ("GET", "analytics&id=a"), ("PUT", "analytics&id=a"), ("DELETE", "analytics&id=a"),
    ("GET", "analytics"),
    ("GET", "inventory&id=i"), ("PUT", "inventory&id=i"), ("DELETE", "inventory&id=i"),
    ("GET", "logging"), ("PUT", "logging"),
    ("GET", "metrics&id=m"), ("PUT", "metrics&id=m"), ("DELETE", "metrics&id=m"),
    ("POST", "replication"),
    ("GET", "requestPayment"), ("PUT", "requestPayment"),
    ("GET", "website"), ("PUT", "website"), ("DELETE", "website"),
    ("GET", "session"),
    ("POST", "metadataTable"), ("GET", "metadataTable"), ("DELETE", "metadataTable"),
    ("POST", "metadataConfiguration"), ("GET", "metadataConfiguration"),
    ("DELETE", "metadataConfiguration"),
    ("PUT", "metadataInventoryTable"), ("PUT", "metadataJournalTable"),
    ("GET", "abac"), ("PUT", "abac"),
]
OBJECT_NOT_SERVED = [
    ("GET", "torrent", {}),
    ("POST", "select&select-type=2", {}),
    ("PUT", "renameObject", {"x-amz-rename-source": "/src"}),
    ("PUT", "encryption", {}),
]


@test
def unserved_operations_answer_501(s):
    c, b = new_bucket(s, "n501")
    for method, q in BUCKET_NOT_SERVED:
        # DeleteBucket, CreateBucket, ListObjects must not run instead.
        body = b"<X/>" if method in ("PUT", "POST") else b""
        expect(req(s, method, f"/{b}", q, body=body), 501, "NotImplemented", f"/{b}")
    assert c.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 200
    c.put_object(Bucket=b, Key="src", Body=b"source")
    c.put_object(Bucket=b, Key="obj", Body=b"kept")
    for method, q, h in OBJECT_NOT_SERVED:
        body = b"<X/>" if method in ("PUT", "POST") else b""
        expect(req(s, method, f"/{b}/obj", q, headers=h, body=body), 501, "NotImplemented",
               f"/{b}/obj")
    # PutObject must not have run instead of RenameObject/UpdateObjectEncryption.
    assert c.get_object(Bucket=b, Key="obj")["Body"].read() == b"kept"
    assert keys_of(c, b) == ["obj", "src"]
    # boto3 names these operations; they fail with NotImplemented too.
    for call in (lambda: c.get_bucket_website(Bucket=b),
                 lambda: c.get_bucket_logging(Bucket=b),
                 lambda: c.get_bucket_request_payment(Bucket=b),
                 lambda: c.get_bucket_accelerate_configuration(Bucket=b),
                 lambda: c.list_bucket_metrics_configurations(Bucket=b),
                 lambda: c.get_object_torrent(Bucket=b, Key="obj")):
        expect_error(call, "NotImplemented", 501)


@test
def semantic_headers_refused_or_honoured(s):
    c, b = new_bucket(s, "hdrs")
    # x-amz-write-offset-bytes (append, directory buckets only) is refused,
    # nothing written.
    expect(req(s, "PUT", f"/{b}/app", headers={"x-amz-write-offset-bytes": "0"}, body=b"x"),
           501, "NotImplemented")
    c.put_object(Bucket=b, Key="app", Body=b"base")
    expect(req(s, "PUT", f"/{b}/app", headers={"x-amz-write-offset-bytes": "4"}, body=b"more"),
           501, "NotImplemented")
    assert c.get_object(Bucket=b, Key="app")["Body"].read() == b"base"
    # x-amz-website-redirect-location (website hosting) is refused.
    expect(req(s, "PUT", f"/{b}/web", headers={"x-amz-website-redirect-location": "/x"},
               body=b"x"), 501, "NotImplemented")
    assert keys_of(c, b) == ["app"]
    # x-amz-expected-bucket-owner: right owner served, another 403.
    owner = c.list_buckets()["Owner"]["ID"]
    r = req(s, "GET", f"/{b}/app", headers={"x-amz-expected-bucket-owner": owner})
    assert r.status == 200 and r.body == b"base", r
    expect(req(s, "GET", f"/{b}/app", headers={"x-amz-expected-bucket-owner": "111122223333"}),
           403, "AccessDenied")
    expect(req(s, "PUT", f"/{b}/other", headers={"x-amz-expected-bucket-owner": "111122223333"},
               body=b"x"), 403, "AccessDenied")
    assert keys_of(c, b) == ["app"]
    # x-amz-request-payer: requester-pays is off on every Strata bucket,
    # where AWS serves the request as usual (nothing is charged).
    r = req(s, "GET", f"/{b}/app", headers={"x-amz-request-payer": "requester"})
    assert r.status == 200 and r.body == b"base" and "x-amz-request-charged" not in r.headers, r
    # boto3's x-id query parameter names the operation and changes nothing.
    r = req(s, "GET", f"/{b}/app", "x-id=GetObject")
    assert r.status == 200 and r.body == b"base", r
    r = req(s, "PUT", f"/{b}/xid", "x-id=PutObject", body=b"xid")
    assert r.status == 200, r
    assert c.get_object(Bucket=b, Key="xid")["Body"].read() == b"xid"


# ---- 2: buckets ------------------------------------------------------------

@test
def bucket_create_delete_edges(s):
    c = s.client()
    b = s.bucket_name("bkt")
    expect(req(s, "DELETE", f"/{b}"), 404, "NoSuchBucket", f"/{b}")
    expect(req(s, "GET", f"/{b}"), 404, "NoSuchBucket")
    r = req(s, "HEAD", f"/{b}")
    assert r.status == 404 and r.body == b"", r
    c.create_bucket(Bucket=b)
    # Re-creating one's own bucket: 200 in us-east-1 (AWS's legacy rule).
    assert req(s, "PUT", f"/{b}").status == 200
    c.put_object(Bucket=b, Key="k", Body=b"x")
    expect(req(s, "DELETE", f"/{b}"), 409, "BucketNotEmpty", f"/{b}")
    c.delete_object(Bucket=b, Key="k")
    assert req(s, "DELETE", f"/{b}").status == 204
    expect(req(s, "DELETE", f"/{b}"), 404, "NoSuchBucket")
    # Names s3-tests probes (3..63 chars, lower case, digits, '.', '-').
    for bad in ("ab", "a" * 64, "Upper" + s.run_id, "under_score", "-lead", "trail-",
                "dot..dot", "192.168.5.4", "xn--bucket", "bucket-s3alias", "sthree-x",
                "bucket--ol-s3"):
        r = req(s, "PUT", "/" + bad)
        expect(r, 400, "InvalidBucketName")
    ok = ["a" * 63, "abc", "a-b.c", "0bucket"]
    for name in ok:
        name = (name + "-" + s.run_id)[:63] if len(name) < 40 else name
        r = req(s, "PUT", "/" + name)
        assert r.status == 200, (name, r)
        assert req(s, "DELETE", "/" + name).status == 204

    # CreateBucketConfiguration parts Strata does not act on (directory
    # bucket Location/Bucket, Tags) are refused and no bucket is made.
    for extra in (b"<Bucket><DataRedundancy>SingleAvailabilityZone</DataRedundancy>"
                  b"<Type>Directory</Type></Bucket>",
                  b"<Tags><Tag><Key>k</Key><Value>v</Value></Tag></Tags>"):
        body = (b'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                + extra + b"</CreateBucketConfiguration>")
        expect(req(s, "PUT", f"/{b}", body=body), 501, "NotImplemented")
        assert req(s, "HEAD", f"/{b}").status == 404

# ---- 3: listings -----------------------------------------------------------

def list_raw(s, b, q):
    r = req(s, "GET", f"/{b}", q)
    return r, (ET.fromstring(r.body) if r.status == 200 else None)


@test
def list_objects_edges(s):
    c, b = new_bucket(s, "lst")
    keys = ["a", "b/1", "b/2", "c d", "c+d", "e%f", "g&h", "k\u00fc", "z/y/x"]
    for k in keys:
        c.put_object(Bucket=b, Key=k, Body=k.encode())
    want = sorted(keys, key=lambda k: k.encode())
    # max-keys=0: empty, not truncated (AWS), V1 and V2.
    for q in ("list-type=2&max-keys=0", "max-keys=0"):
        r, root = list_raw(s, b, q)
        assert r.status == 200, r
        assert root.findtext(f"{NS}MaxKeys") == "0" and root.findall(f"{NS}Contents") == []
        assert root.findtext(f"{NS}IsTruncated") == "false", r
    # Bad max-keys, encoding-type, list-type.
    for q in ("max-keys=-1", "max-keys=abc", "list-type=2&max-keys=x", "encoding-type=base64",
              "list-type=2&encoding-type=URL2", "list-type=3", "versions&max-keys=-2",
              "versions&encoding-type=x", "uploads&encoding-type=x", "uploads&max-uploads=-1"):
        expect(req(s, "GET", f"/{b}", q), 400, "InvalidArgument")
    # encoding-type=url on every listing: keys, prefixes, markers encoded.
    for q, tag in (("list-type=2&encoding-type=url", "Contents"), ("encoding-type=url", "Contents"),
                   ("versions&encoding-type=url", "Version")):
        r, root = list_raw(s, b, q)
        assert root.findtext(f"{NS}EncodingType") == "url", r
        raw_keys = [e.findtext(f"{NS}Key") for e in root.findall(f"{NS}{tag}")]
        assert [urllib.parse.unquote(k) for k in raw_keys] == want, raw_keys
        assert "c%20d" in raw_keys and "c%2Bd" in raw_keys and "e%25f" in raw_keys, raw_keys
        assert "k%C3%BC" in raw_keys, raw_keys
        r, root = list_raw(s, b, q + "&delimiter=%2F&prefix=b%2F")
        assert root.findtext(f"{NS}Prefix") == "b/" and root.findtext(f"{NS}Delimiter") == "/"
        r, root = list_raw(s, b, q + "&delimiter=%2F")
        cps = [e.findtext(f"{NS}Prefix") for e in root.findall(f"{NS}CommonPrefixes")]
        assert cps == ["b/", "z/"], cps
    # start-after (V2) with an awkward key, echoed encoded; fetch-owner.
    r, root = list_raw(s, b, "list-type=2&encoding-type=url&start-after=c%20d")
    assert root.findtext(f"{NS}StartAfter") == "c%20d", r
    got = [urllib.parse.unquote(e.findtext(f"{NS}Key")) for e in root.findall(f"{NS}Contents")]
    assert got == want[want.index("c d") + 1:], got
    r, root = list_raw(s, b, "list-type=2")
    assert root.find(f"{NS}Contents/{NS}Owner") is None, r
    r, root = list_raw(s, b, "list-type=2&fetch-owner=true")
    assert root.findtext(f"{NS}Contents/{NS}Owner/{NS}ID"), r
    # V1 lists owners always.
    r, root = list_raw(s, b, "")
    assert root.findtext(f"{NS}Contents/{NS}Owner/{NS}ID"), r
    # Continuation tokens: paging by 2 gives every key once; a token that
    # is not one Strata made is refused.
    seen, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        page = c.list_objects_v2(Bucket=b, MaxKeys=2, **kw)
        seen += [o["Key"] for o in page.get("Contents", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert seen == want, seen
    for tok in ("", "%%%", "not-base64!"):
        expect(req(s, "GET", f"/{b}", "list-type=2&continuation-token=" +
                   urllib.parse.quote(tok, safe="")), 400, "InvalidArgument")
    # V1 marker paging.
    page = c.list_objects(Bucket=b, Marker="c+d", MaxKeys=2)
    assert [o["Key"] for o in page["Contents"]] == want[want.index("c+d") + 1:][:2]
    assert page["IsTruncated"] is True


@test
def list_versions_markers(s):
    c, b = new_bucket(s, "lv")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    vids = {}
    for k in ("a", "b", "c"):
        vids[k] = [c.put_object(Bucket=b, Key=k, Body=f"{k}{i}".encode())["VersionId"]
                   for i in range(3)][::-1]  # newest first
    history = [(k, v) for k in ("a", "b", "c") for v in vids[k]]
    got, km, vm = [], None, None
    while True:
        q = "versions&max-keys=2"
        if km:
            q += "&key-marker=" + km + ("&version-id-marker=" + vm if vm else "")
        r, root = list_raw(s, b, q)
        assert r.status == 200, r
        got += [(e.findtext(f"{NS}Key"), e.findtext(f"{NS}VersionId"))
                for e in root.findall(f"{NS}Version")]
        if root.findtext(f"{NS}IsTruncated") != "true":
            break
        km = root.findtext(f"{NS}NextKeyMarker")
        vm = root.findtext(f"{NS}NextVersionIdMarker")
    assert got == history, got
    # key-marker alone skips every version of that key.
    r, root = list_raw(s, b, "versions&key-marker=a")
    assert [e.findtext(f"{NS}Key") for e in root.findall(f"{NS}Version")] == ["b"] * 3 + ["c"] * 3
    # version-id-marker without key-marker -> InvalidArgument.
    expect(req(s, "GET", f"/{b}", "versions&version-id-marker=" + vids["a"][0]), 400,
           "InvalidArgument")


# ---- 4: DeleteObjects ------------------------------------------------------

def delete_xml(keys, quiet=False):
    body = "".join(f"<Object><Key>{k}</Key></Object>" for k in keys)
    q = "<Quiet>true</Quiet>" if quiet else ""
    return f'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{q}{body}</Delete>'.encode()


@test
def delete_objects_edges(s):
    c, b = new_bucket(s, "dob")
    for k in ("k1", "k2", "k3"):
        c.put_object(Bucket=b, Key=k, Body=b"x")
    # No Content-MD5 and no checksum: AWS's InvalidRequest, nothing deleted.
    body = delete_xml(["k1"])
    r = expect(req(s, "POST", f"/{b}", "delete", body=body), 400, "InvalidRequest")
    assert b"Content-MD5" in r.body, r
    assert keys_of(c, b) == ["k1", "k2", "k3"]
    # 1001 keys -> MalformedXML, nothing deleted; 1000 are fine.
    body = delete_xml(["k1"] + [f"m{i}" for i in range(1000)])
    expect(req(s, "POST", f"/{b}", "delete", {"Content-MD5": md5_b64(body)}, body), 400,
           "MalformedXML")
    assert keys_of(c, b) == ["k1", "k2", "k3"]
    body = delete_xml(["k1"] + [f"m{i}" for i in range(999)])
    r = req(s, "POST", f"/{b}", "delete", {"Content-MD5": md5_b64(body)}, body)
    assert r.status == 200, r
    assert len(ET.fromstring(r.body).findall(f"{NS}Deleted")) == 1000
    # Quiet: only errors listed; missing keys count as deleted.
    body = delete_xml(["k2", "missing"], quiet=True)
    r = req(s, "POST", f"/{b}", "delete", {"Content-MD5": md5_b64(body)}, body)
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    assert root.findall(f"{NS}Deleted") == [] and root.findall(f"{NS}Error") == [], r
    assert keys_of(c, b) == ["k3"]
    # Empty <Delete/> -> MalformedXML.
    body = b'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></Delete>'
    expect(req(s, "POST", f"/{b}", "delete", {"Content-MD5": md5_b64(body)}, body), 400,
           "MalformedXML")
    # Conditional deletes (ETag in an Object) are not evaluated: the whole
    # request is refused and nothing deleted.
    etag = c.head_object(Bucket=b, Key="k3")["ETag"]
    body = (b'<Delete><Object><Key>k3</Key><ETag>' + etag.encode() +
            b'</ETag></Object></Delete>')
    expect(req(s, "POST", f"/{b}", "delete", {"Content-MD5": md5_b64(body)}, body), 501,
           "NotImplemented")
    assert keys_of(c, b) == ["k3"]
    # Missing bucket.
    body = delete_xml(["x"])
    expect(req(s, "POST", f"/{b}-nope", "delete", {"Content-MD5": md5_b64(body)}, body), 404,
           "NoSuchBucket")


# ---- 5: GET overrides, ranges, conditionals ---------------------------------

def policy_public_read(b):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{b}/*"}]})


@test
def get_response_overrides(s):
    c, b = new_bucket(s, "ovr")
    c.put_object(Bucket=b, Key="o", Body=b"hello", ContentType="text/plain",
                 CacheControl="no-cache")
    g = c.get_object(Bucket=b, Key="o", ResponseContentType="application/x-test",
                     ResponseContentLanguage="fr", ResponseExpires="Thu, 01 Dec 1994 16:00:00 GMT",
                     ResponseCacheControl="max-age=7", ResponseContentDisposition="attachment",
                     ResponseContentEncoding="identity")
    h = g["ResponseMetadata"]["HTTPHeaders"]
    assert h["content-type"] == "application/x-test" and h["content-language"] == "fr", h
    assert h["cache-control"] == "max-age=7" and h["content-disposition"] == "attachment", h
    assert h["content-encoding"] == "identity", h
    assert h["expires"] == "Thu, 01 Dec 1994 16:00:00 GMT", h
    assert g["Body"].read() == b"hello"
    # The stored headers are unchanged.
    hd = c.head_object(Bucket=b, Key="o")
    assert hd["ContentType"] == "text/plain" and hd["CacheControl"] == "no-cache", hd
    # Anonymous requests may not use response-* (AWS: 400 InvalidRequest),
    # even where a policy lets them read.
    c.put_bucket_policy(Bucket=b, Policy=policy_public_read(b))
    r = req(s, "GET", f"/{b}/o", sign=False)
    assert r.status == 200 and r.body == b"hello", r
    for p in ("response-content-type=x%2Fy", "response-cache-control=no-store",
              "response-content-disposition=inline"):
        expect(req(s, "GET", f"/{b}/o", p, sign=False), 400, "InvalidRequest")
    r = req(s, "HEAD", f"/{b}/o", "response-content-type=x%2Fy", sign=False)
    assert r.status == 400 and r.body == b"", r
    # A presigned URL is signed: its overrides apply.
    url = c.generate_presigned_url("get_object", Params={
        "Bucket": b, "Key": "o", "ResponseContentType": "image/x-test",
        "ResponseContentDisposition": 'attachment; filename="a b.txt"'}, ExpiresIn=300)
    with urllib.request.urlopen(url, timeout=30) as u:
        assert u.status == 200 and u.read() == b"hello"
        assert u.headers["Content-Type"] == "image/x-test", u.headers
        assert u.headers["Content-Disposition"] == 'attachment; filename="a b.txt"', u.headers


@test
def range_edges(s):
    c, b = new_bucket(s, "rng")
    data = bytes(range(256)) * 4
    c.put_object(Bucket=b, Key="o", Body=data)
    c.put_object(Bucket=b, Key="empty", Body=b"")

    def get(rng, key="o"):
        return req(s, "GET", f"/{b}/{key}", headers={"Range": rng})
    r = get("bytes=0-0")
    assert r.status == 206 and r.body == data[:1] and r.headers["content-range"] == "bytes 0-0/1024"
    r = get("bytes=1023-")
    assert r.status == 206 and r.body == data[1023:], r
    r = get("bytes=-1")
    assert r.status == 206 and r.body == data[-1:], r
    r = get("bytes=1000-5000")
    assert r.status == 206 and r.body == data[1000:], r
    assert r.headers["content-range"] == "bytes 1000-1023/1024", r.headers
    r = expect(get("bytes=1024-"), 416, "InvalidRange")
    assert r.headers.get("content-range") == "bytes */1024", r.headers
    # Syntactically invalid ranges and multiple ranges are ignored (200,
    # whole object), as AWS does.
    for bad in ("bytes=5-2", "bytes=a-b", "items=0-1", "bytes=0-1,3-4", "bytes=--1"):
        r = get(bad)
        assert r.status == 200 and r.body == data, (bad, r)
    # An empty object has no satisfiable byte range.
    expect(get("bytes=40-50", "empty"), 416, "InvalidRange")


@test
def conditional_edges(s):
    c, b = new_bucket(s, "cnd")
    etag = c.put_object(Bucket=b, Key="o", Body=b"v1")["ETag"]
    r = req(s, "GET", f"/{b}/o", headers={"If-None-Match": etag})
    assert r.status == 304 and r.body == b"" and r.headers.get("etag") == etag, r
    expect(req(s, "GET", f"/{b}/o", headers={"If-Match": '"0000"'}), 412, "PreconditionFailed")
    r = req(s, "GET", f"/{b}/o", headers={"If-Match": "*"})
    assert r.status == 200, r
    # PUT If-Match / If-None-Match
    expect(req(s, "PUT", f"/{b}/o", headers={"If-Match": '"0000"'}, body=b"v2"), 412,
           "PreconditionFailed")
    expect(req(s, "PUT", f"/{b}/o", headers={"If-None-Match": "*"}, body=b"v2"), 412,
           "PreconditionFailed")
    assert c.get_object(Bucket=b, Key="o")["Body"].read() == b"v1"
    # If-None-Match on PUT takes only "*" (AWS: 501 NotImplemented for an ETag).
    expect(req(s, "PUT", f"/{b}/o", headers={"If-None-Match": etag}, body=b"v3"), 501,
           "NotImplemented")
    assert c.get_object(Bucket=b, Key="o")["Body"].read() == b"v1"
    r = req(s, "PUT", f"/{b}/o", headers={"If-Match": etag}, body=b"v2")
    assert r.status == 200, r
    assert c.get_object(Bucket=b, Key="o")["Body"].read() == b"v2"
    # Conditional DeleteObject (If-Match, and the directory-bucket
    # x-amz-if-match-*) is not evaluated: refused, the object stays.
    for h in ({"If-Match": '"0000"'}, {"If-Match": "*"}, {"x-amz-if-match-size": "2"},
              {"x-amz-if-match-last-modified-time": "Wed, 01 Jan 2025 00:00:00 GMT"}):
        expect(req(s, "DELETE", f"/{b}/o", headers=h), 501, "NotImplemented")
    assert c.get_object(Bucket=b, Key="o")["Body"].read() == b"v2"
    # CopyObject's destination conditions are not evaluated either.
    for h in ({"If-None-Match": "*"}, {"If-Match": '"0000"'}):
        h["x-amz-copy-source"] = f"/{b}/o"
        expect(req(s, "PUT", f"/{b}/o2", headers=h), 501, "NotImplemented")
    assert keys_of(c, b) == ["o"]
    # The copy-source conditions are evaluated (412).
    expect(req(s, "PUT", f"/{b}/o2", headers={"x-amz-copy-source": f"/{b}/o",
                                              "x-amz-copy-source-if-none-match": "*"}),
           412, "PreconditionFailed")


# ---- 6: CopyObject ---------------------------------------------------------

@test
def copy_edges(s):
    c, b = new_bucket(s, "cpy")
    c.put_object(Bucket=b, Key="src", Body=b"data", Metadata={"a": "1"}, ContentType="text/x")
    r = c.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src"},
                      MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="text/y")
    h = c.head_object(Bucket=b, Key="dst")
    assert h["Metadata"] == {"b": "2"} and h["ContentType"] == "text/y", h
    assert r["CopyObjectResult"]["ETag"] == c.head_object(Bucket=b, Key="src")["ETag"]
    # Bad copy sources.
    expect(req(s, "PUT", f"/{b}/x", headers={"x-amz-copy-source": f"/{b}/missing"}), 404,
           "NoSuchKey")
    expect(req(s, "PUT", f"/{b}/x", headers={"x-amz-copy-source": f"/{b}-nope/src"}), 404,
           "NoSuchBucket")
    expect(req(s, "PUT", f"/{b}/x", headers={"x-amz-copy-source": "nobucketnokey"}), 400,
           "InvalidArgument")
    expect(req(s, "PUT", f"/{b}/x", headers={"x-amz-copy-source": f"/{b}/src",
                                             "x-amz-metadata-directive": "MOVE"}),
           400, "InvalidArgument")
    for hn in ("x-amz-metadata-directive", "x-amz-tagging-directive"):
        for bad in ("FOO", "copy", ""):
            r = expect(req(s, "PUT", f"/{b}/x", headers={"x-amz-copy-source": f"/{b}/src",
                                                         hn: bad}), 400, "InvalidArgument")
            assert b"Unknown" in r.body and b"directive" in r.body, r
    assert keys_of(c, b) == ["dst", "src"]
    # A copy onto itself that changes nothing is InvalidRequest.
    expect(req(s, "PUT", f"/{b}/src", headers={"x-amz-copy-source": f"/{b}/src"}), 400,
           "InvalidRequest")
    # Conditional copy header failing -> 412, nothing created.
    expect(req(s, "PUT", f"/{b}/y", headers={"x-amz-copy-source": f"/{b}/src",
                                             "x-amz-copy-source-if-match": '"0000"'}),
           412, "PreconditionFailed")
    assert keys_of(c, b) == ["dst", "src"]
    # x-amz-copy-source-range belongs to UploadPartCopy; CopyObject would
    # copy the whole object.
    expect(req(s, "PUT", f"/{b}/y", headers={"x-amz-copy-source": f"/{b}/src",
                                             "x-amz-copy-source-range": "bytes=0-1"}),
           501, "NotImplemented")
    assert keys_of(c, b) == ["dst", "src"]
    # UploadPartCopy: a malformed or out-of-range source range is 400
    # InvalidArgument (AWS), no part stored; a valid one copies those bytes.
    uid = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    q = "partNumber=1&uploadId=" + urllib.parse.quote(uid, safe="")
    for rng in ("bytes=garbage", "bytes=-2", "bytes=1-", "", "bytes=0-1,2-3", "0-1",
                "bytes= 0-1", "bytes=+0-1"):
        r = expect(req(s, "PUT", f"/{b}/mp", q, headers={"x-amz-copy-source": f"/{b}/src",
                                                        "x-amz-copy-source-range": rng}),
                   400, "InvalidArgument")
        assert b"bytes=first-last" in r.body, (rng, r)
    for rng in ("bytes=2-1", "bytes=0-4", "bytes=4-4"):
        expect(req(s, "PUT", f"/{b}/mp", q, headers={"x-amz-copy-source": f"/{b}/src",
                                                    "x-amz-copy-source-range": rng}),
               400, "InvalidArgument")
    assert "Parts" not in c.list_parts(Bucket=b, Key="mp", UploadId=uid)
    r = req(s, "PUT", f"/{b}/mp", q, headers={"x-amz-copy-source": f"/{b}/src",
                                             "x-amz-copy-source-range": "bytes=1-2"})
    assert r.status == 200, r
    assert c.list_parts(Bucket=b, Key="mp", UploadId=uid)["Parts"][0]["Size"] == 2
    c.abort_multipart_upload(Bucket=b, Key="mp", UploadId=uid)
    # URL-encoded copy source with an awkward key, ?versionId=null on an
    # unversioned bucket.
    c.put_object(Bucket=b, Key="a b+c", Body=b"awk")
    r = req(s, "PUT", f"/{b}/z", headers={"x-amz-copy-source":
                                          urllib.parse.quote(f"/{b}/a b+c") + "?versionId=null"})
    assert r.status == 200, r
    assert c.get_object(Bucket=b, Key="z")["Body"].read() == b"awk"


# ---- 7: multipart ----------------------------------------------------------

def complete_xml(parts):
    body = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>" for n, e in parts)
    return f"<CompleteMultipartUpload>{body}</CompleteMultipartUpload>".encode()


@test
def multipart_edges(s):
    c, b = new_bucket(s, "mpu")
    k = "big"
    uid = c.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
    p1 = os.urandom(5 * MIB)
    p2 = os.urandom(1000)
    e1 = c.upload_part(Bucket=b, Key=k, UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    e2 = c.upload_part(Bucket=b, Key=k, UploadId=uid, PartNumber=2, Body=p2)["ETag"]
    small = c.upload_part(Bucket=b, Key=k, UploadId=uid, PartNumber=3, Body=b"tiny")["ETag"]
    q = "uploadId=" + urllib.parse.quote(uid, safe="")
    expect(req(s, "POST", f"/{b}/{k}", q, body=complete_xml([(1, e1), (3, small), (2, e2)])),
           400, "InvalidPartOrder")
    expect(req(s, "POST", f"/{b}/{k}", q, body=complete_xml([(2, e2), (3, small)])), 400,
           "EntityTooSmall")
    expect(req(s, "POST", f"/{b}/{k}", q, body=complete_xml([(1, e1), (4, e2)])), 400,
           "InvalidPart")
    expect(req(s, "POST", f"/{b}/{k}", q, body=complete_xml([(1, e1), (2, '"ffff"')])), 400,
           "InvalidPart")
    # ListParts paging and bad paging arguments.
    r, root = list_raw(s, b, "")  # nothing completed yet
    assert root.findall(f"{NS}Contents") == []
    lp = c.list_parts(Bucket=b, Key=k, UploadId=uid, MaxParts=2)
    assert [p["PartNumber"] for p in lp["Parts"]] == [1, 2] and lp["IsTruncated"]
    assert lp["NextPartNumberMarker"] == 2
    lp = c.list_parts(Bucket=b, Key=k, UploadId=uid, PartNumberMarker=2)
    assert [p["PartNumber"] for p in lp["Parts"]] == [3] and not lp["IsTruncated"]
    for bad in ("max-parts=-1", "max-parts=x", "part-number-marker=-3", "part-number-marker=y"):
        expect(req(s, "GET", f"/{b}/{k}", q + "&" + bad), 400, "InvalidArgument")
    # x-amz-mp-object-size: a wrong total is refused, nothing created; the
    # right one completes.
    total = len(p1) + len(p2)
    body = complete_xml([(1, e1), (2, e2)])
    expect(req(s, "POST", f"/{b}/{k}", q, {"x-amz-mp-object-size": str(total + 1)}, body), 400,
           "InvalidRequest")
    expect(req(s, "POST", f"/{b}/{k}", q, {"x-amz-mp-object-size": "abc"}, body), 400,
           "InvalidArgument")
    assert keys_of(c, b) == []
    # If-None-Match takes only "*", as on PutObject.
    expect(req(s, "POST", f"/{b}/{k}", q, {"If-None-Match": '"abc"'}, body), 501,
           "NotImplemented")
    assert keys_of(c, b) == []
    r = req(s, "POST", f"/{b}/{k}", q, {"x-amz-mp-object-size": str(total)}, body)
    assert r.status == 200 and b"<CompleteMultipartUploadResult" in r.body, r
    completed = r.body
    g = c.get_object(Bucket=b, Key=k)["Body"].read()
    assert g == p1 + p2
    # ListMultipartUploads with encoding-type=url encodes keys, prefixes
    # and markers (AWS), and boto3 decodes them back.
    awk = "up/c d+\u00fc"
    uid2 = c.create_multipart_upload(Bucket=b, Key=awk)["UploadId"]
    r, root = list_raw(s, b, "uploads&encoding-type=url&prefix=up%2F&key-marker=up%2Fa%20")
    assert root.findtext(f"{NS}EncodingType") == "url", r
    assert [e.findtext(f"{NS}Key") for e in root.findall(f"{NS}Upload")] == ["up/c%20d%2B%C3%BC"]
    assert root.findtext(f"{NS}Prefix") == "up/" and root.findtext(f"{NS}KeyMarker") == "up/a%20"
    r, root = list_raw(s, b, "uploads&encoding-type=url&delimiter=%20")
    assert [e.findtext(f"{NS}Prefix") for e in root.findall(f"{NS}CommonPrefixes")] == ["up/c%20"]
    assert root.findtext(f"{NS}Delimiter") == "%20", r
    r, root = list_raw(s, b, "uploads")
    assert [e.findtext(f"{NS}Key") for e in root.findall(f"{NS}Upload")] == [awk], r
    assert [u["Key"] for u in c.list_multipart_uploads(Bucket=b)["Uploads"]] == [awk]
    c.abort_multipart_upload(Bucket=b, Key=awk, UploadId=uid2)
    # GetObjectAttributes paging headers: bad values refused, good ones page.
    for hn, bad in (("x-amz-max-parts", "-1"), ("x-amz-max-parts", "x"),
                    ("x-amz-part-number-marker", "-2"), ("x-amz-part-number-marker", "")):
        expect(req(s, "GET", f"/{b}/{k}", "attributes",
                   {"x-amz-object-attributes": "ObjectParts", hn: bad}), 400, "InvalidArgument")
    at = c.get_object_attributes(Bucket=b, Key=k, ObjectAttributes=["ObjectParts"], MaxParts=1)
    assert at["ObjectParts"]["TotalPartsCount"] == 2 and at["ObjectParts"]["IsTruncated"], at
    assert [p["PartNumber"] for p in at["ObjectParts"]["Parts"]] == [1], at
    # After completion: the same Complete again (a client retrying a lost
    # answer) gets the same answer, a wrong x-amz-mp-object-size still
    # InvalidRequest; every other upload operation NoSuchUpload, as does
    # a Complete with another part list (test_mpu_retry.py has the rest).
    r2 = req(s, "POST", f"/{b}/{k}", q, body=body)
    assert r2.status == 200 and r2.body == completed, (completed, r2)
    expect(req(s, "POST", f"/{b}/{k}", q, {"x-amz-mp-object-size": str(total + 1)}, body), 400,
           "InvalidRequest")
    expect(req(s, "POST", f"/{b}/{k}", q, body=complete_xml([(1, e1), (3, small)])), 404,
           "NoSuchUpload")
    expect(req(s, "GET", f"/{b}/{k}", q), 404, "NoSuchUpload")
    expect(req(s, "PUT", f"/{b}/{k}", q + "&partNumber=1", body=b"x"), 404, "NoSuchUpload")
    expect(req(s, "DELETE", f"/{b}/{k}", q), 404, "NoSuchUpload")


# ---- 8: keys and metadata ----------------------------------------------------

@test
def key_and_metadata_limits(s):
    c, b = new_bucket(s, "kml")
    for k in ("sp ace", "\u65e5\u672c/\U0001F600", "x" * 1024, "a/../b", "%2F"):
        c.put_object(Bucket=b, Key=k, Body=k.encode())
        assert c.get_object(Bucket=b, Key=k)["Body"].read() == k.encode(), k
    expect(req(s, "PUT", f"/{b}/" + "y" * 1025, body=b"x"), 400, "KeyTooLongError")
    # 1,024 bytes of UTF-8 (341 three-byte characters + 1 byte) fit; 1,025 not.
    k = "\u65e5" * 341 + "z"
    c.put_object(Bucket=b, Key=k, Body=b"u")
    expect(req(s, "PUT", f"/{b}/" + urllib.parse.quote(k + "z"), body=b"x"), 400,
           "KeyTooLongError")
    # User metadata: 2 KB of names and values fit, one byte more does not.
    meta = {"k": "v" * (2048 - len("k"))}
    c.put_object(Bucket=b, Key="m", Body=b"x", Metadata=meta)
    assert c.head_object(Bucket=b, Key="m")["Metadata"] == meta
    meta2 = {"k": "v" * (2048 - len("k") + 1)}
    expect_error(lambda: c.put_object(Bucket=b, Key="m2", Body=b"x", Metadata=meta2),
                 "MetadataTooLarge", 400)
    uid_err = expect_error(lambda: c.create_multipart_upload(Bucket=b, Key="m3", Metadata=meta2),
                           "MetadataTooLarge", 400)
    assert uid_err
    assert "m2" not in keys_of(c, b)
    # A PUT replaces the metadata as a whole (nothing kept from before);
    # Expires round-trips as sent.
    import datetime
    exp = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    c.put_object(Bucket=b, Key="m", Body=b"y", Metadata={"new": "1"}, Expires=exp)
    h = c.head_object(Bucket=b, Key="m")
    assert h["Metadata"] == {"new": "1"}, h
    assert h["ResponseMetadata"]["HTTPHeaders"]["expires"] == "Wed, 02 Jan 2030 03:04:05 GMT", h



def head_only(s, method, path, hdrs):
    """A SigV4 request (UNSIGNED-PAYLOAD) sent as headers only, with the
    given Content-Length / Transfer-Encoding and no body: the answer must
    come before any body byte.  Returns the raw response head and body."""
    h = dict(hdrs)
    h["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD"
    ar = AWSRequest(method=method, url=s.endpoint + path, data=b"", headers=h)
    S3SigV4Auth(s.credentials(), "s3", REGION).add_auth(ar)
    lines = [f"{method} {path} HTTP/1.1", f"Host: {s.host}:{s.port}"]
    lines += [f"{k}: {v}" for k, v in ar.headers.items()]
    with socket.create_connection((s.host, s.port), timeout=30) as so:
        so.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"</Error>" not in data:
            chunk = so.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


@test
def size_limits_before_the_body(s):
    c, b = new_bucket(s, "lim")
    big = str(5 * 1024 ** 3 + 1)  # one byte over 5 GiB
    r = head_only(s, "PUT", f"/{b}/big", {"Content-Length": big})
    assert r.startswith(b"HTTP/1.1 400") and b"<Code>EntityTooLarge</Code>" in r, r
    uid = c.create_multipart_upload(Bucket=b, Key="m")["UploadId"]
    r = head_only(s, "PUT", f"/{b}/m?partNumber=1&uploadId=" + urllib.parse.quote(uid, safe=""),
                  {"Content-Length": big})
    assert r.startswith(b"HTTP/1.1 400") and b"<Code>EntityTooLarge</Code>" in r, r
    # No length at all: 411 MissingContentLength.
    r = head_only(s, "PUT", f"/{b}/nolen", {})
    assert r.startswith(b"HTTP/1.1 411") and b"<Code>MissingContentLength</Code>" in r, r
    assert keys_of(c, b) == []
    c.abort_multipart_upload(Bucket=b, Key="m", UploadId=uid)

# ---- 9: error shape ----------------------------------------------------------

@test
def error_shape(s):
    c, b = new_bucket(s, "err")
    r = expect(req(s, "GET", f"/{b}/no%20such"), 404, "NoSuchKey", f"/{b}/no such")
    root = ET.fromstring(r.body)
    assert root.findtext("Key") == "no such" and root.findtext("BucketName") == b, r
    assert r.headers.get("x-amz-id-2") == root.findtext("HostId"), r
    r = expect(req(s, "GET", f"/{b}-none"), 404, "NoSuchBucket", f"/{b}-none")
    assert ET.fromstring(r.body).findtext("BucketName") == f"{b}-none"
    # HEAD errors carry no body but the request id.
    r = req(s, "HEAD", f"/{b}/nope")
    assert r.status == 404 and r.body == b"" and r.headers["x-amz-request-id"], r
    # Anonymous and bad-signature errors have the same shape.
    expect(req(s, "GET", f"/{b}/x", sign=False), 403, "AccessDenied")
    ids = {req(s, "GET", f"/{b}/x", sign=False).headers["x-amz-request-id"] for _ in range(5)}
    assert len(ids) == 5


def restore_xml(inner):
    return b"<RestoreRequest>" + inner + b"</RestoreRequest>"


@test
def restore_object_edges(s):
    """RestoreObject (POST ?restore): the RestoreRequest is checked first
    (MalformedXML; a SELECT restore is 501), then the version (404), and a
    restore of an object whose class is readable is 403 InvalidObjectState;
    the object is untouched."""
    c, b = new_bucket(s, "rst")
    c.put_object(Bucket=b, Key="obj", Body=b"kept")
    path = f"/{b}/obj"
    for bad in (b"<RestoreRequest><Days>2</Days>", b"<Other/>",
                restore_xml(b"<Days>0</Days>"), restore_xml(b"<Days>-1</Days>"),
                restore_xml(b"<Days>x</Days>"),
                restore_xml(b"<Days>1</Days><GlacierJobParameters><Tier>Fast</Tier>"
                            b"</GlacierJobParameters>"),
                restore_xml(b"<Days>1</Days><GlacierJobParameters/>"),
                restore_xml(b"<Days>1</Days><Tier>Slow</Tier>"),
                restore_xml(b"<Days>1</Days><Type>OTHER</Type>"),
                restore_xml(b"<Days>1</Days><Unknown>1</Unknown>")):
        expect(req(s, "POST", path, "restore", body=bad), 400, "MalformedXML", path)
    for unserved in (restore_xml(b"<Type>SELECT</Type><Tier>Standard</Tier>"),
                     restore_xml(b"<OutputLocation><S3><BucketName>x</BucketName>"
                                 b"</S3></OutputLocation>"),
                     restore_xml(b"<SelectParameters/>")):
        expect(req(s, "POST", path, "restore", body=unserved), 501, "NotImplemented", path)
    for ok in (restore_xml(b"<Days>2</Days>"), b"",
               restore_xml(b"<Days>2</Days><Description>d</Description><GlacierJobParameters>"
                           b"<Tier>Bulk</Tier></GlacierJobParameters>"),
               restore_xml(b"<Days>2</Days><Tier>Expedited</Tier>")):
        expect(req(s, "POST", path, "restore", body=ok), 403, "InvalidObjectState", path)
    expect(req(s, "POST", f"/{b}/absent", "restore", body=restore_xml(b"<Days>1</Days>")),
           404, "NoSuchKey", f"/{b}/absent")
    expect_error(lambda: c.restore_object(Bucket=b, Key="obj", RestoreRequest={"Days": 1}),
                 "InvalidObjectState", 403)
    assert c.get_object(Bucket=b, Key="obj")["Body"].read() == b"kept"
    assert "Restore" not in c.head_object(Bucket=b, Key="obj")

if __name__ == "__main__":
    run(Strata())
