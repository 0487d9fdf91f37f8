#!/usr/bin/python3
"""test_s3tests_findings.py - five behaviours Ceph's s3-tests probe, each
checked against what AWS documents (or, where the documentation is
silent, what AWS answers):

- POST Object with key "${filename}": the name of the file (without its
  directory part) replaces ${filename} in every field before the POST
  policy judges them (test_post_object_set_key_from_filename: 204).
- An expired presigned PUT: SigV2 (Expires in the past) is 403
  AccessDenied "Request has expired"; SigV4 with a negative X-Amz-Expires
  is 400 AuthorizationQueryParametersError "X-Amz-Expires must be
  non-negative", as AWS answers (s3-tests' test_object_raw_put_authenticated_expired
  expects 403 there; ceph/s3-tests issue 462 reports AWS's 400).
- Non-ASCII user metadata is answered RFC 2047 encoded
  (=?UTF-8?B?...?=), and an encoded UTF-8 value is stored decoded, as the
  AWS user guide documents.
- x-amz-version-id on PutObject, POST, CopyObject and
  CompleteMultipartUpload only on a versioning-enabled bucket: not for the
  "null" version a suspended bucket writes (AWS PutObject examples).
- UploadPartCopy with a range past the source's end: 400 InvalidArgument,
  what AWS answers (s3-tests expects InvalidRange).
Run by CTest with /usr/bin/python3.
"""

import base64
import datetime
import email.header
import hashlib
import hmac
import http.client
import json
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET

import boto3
import requests
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, new_bucket, run, test  # noqa: E402

SESSION = requests.Session()
SESSION.trust_env = False


def v2_form(s, bucket, conditions, fields):
    """A POST form signed with SigV2 (AWSAccessKeyId/signature), as s3-tests builds it."""
    exp = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=10))
    doc = {"expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ"),
           "conditions": [{"bucket": bucket}] + conditions}
    policy = base64.b64encode(json.dumps(doc).encode())
    sig = base64.b64encode(hmac.new(s.sk.encode(), policy, hashlib.sha1).digest())
    out = {"key": fields.pop("key"), "AWSAccessKeyId": s.ak}
    out.update(fields)
    out.update({"signature": sig.decode(), "policy": policy.decode()})
    return out


def post_form(s, bucket, form, filename, data):
    files = [(k, (None, v)) for k, v in form.items()] + [("file", (filename, data, "text/plain"))]
    return SESSION.post(f"{s.endpoint}/{bucket}", files=files, timeout=60)


def raw(s, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection(s.host, s.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.getheaders(), r.read()
    finally:
        conn.close()


@test
def post_object_key_from_filename(s):
    c, b = new_bucket(s, "postfn")
    conds = [["starts-with", "$key", "foo"], {"acl": "private"},
             ["starts-with", "$Content-Type", "text/plain"], ["content-length-range", 0, 1024]]
    form = v2_form(s, b, conds, {"key": "${filename}", "acl": "private", "Content-Type": "text/plain"})
    r = post_form(s, b, form, "foo.txt", b"bar")
    assert r.status_code == 204, (r.status_code, r.text)
    assert c.get_object(Bucket=b, Key="foo.txt")["Body"].read() == b"bar"
    # Only the name: a client's directory part (either slash) is dropped.
    for name, key in (("C:\\Users\\me\\foo-win.txt", "foo-win.txt"), ("up/dir/foo-unix.txt", "foo-unix.txt")):
        r = post_form(s, b, form, name, name.encode())
        assert r.status_code == 204, (name, r.status_code, r.text)
        assert c.get_object(Bucket=b, Key=key)["Body"].read() == name.encode()
    # Every field, judged as replaced.
    conds2 = conds + [["eq", "$x-amz-meta-src", "from foo-meta.txt"]]
    form = v2_form(s, b, conds2, {"key": "foo/${filename}", "acl": "private", "Content-Type": "text/plain",
                                  "x-amz-meta-src": "from ${filename}"})
    r = post_form(s, b, form, "foo-meta.txt", b"m")
    assert r.status_code == 204, (r.status_code, r.text)
    assert c.head_object(Bucket=b, Key="foo/foo-meta.txt")["Metadata"] == {"src": "from foo-meta.txt"}
    # A form signed for this bucket (and naming it in a "bucket" field)
    # posted to another bucket: 403, nothing stored there.
    other = s.bucket_name("postfn-other")
    c.create_bucket(Bucket=other)
    form = v2_form(s, b, conds, {"key": "${filename}", "bucket": b, "acl": "private",
                                 "Content-Type": "text/plain"})
    r = post_form(s, other, form, "foo-other.txt", b"elsewhere")
    assert r.status_code == 403 and ET.fromstring(r.content).findtext("Code") == "AccessDenied", r.text
    expect_error(lambda: c.head_object(Bucket=other, Key="foo-other.txt"), "404", 404)
    # A replaced key the policy does not allow: 403, nothing stored.
    form = v2_form(s, b, conds, {"key": "${filename}", "acl": "private", "Content-Type": "text/plain"})
    r = post_form(s, b, form, "bar.txt", b"no")
    assert r.status_code == 403 and ET.fromstring(r.content).findtext("Code") == "AccessDenied", r.text
    expect_error(lambda: c.head_object(Bucket=b, Key="bar.txt"), "404", 404)


@test
def expired_presigned_put(s):
    c, b = new_bucket(s, "expired")
    c.put_object(Bucket=b, Key="foo", Body=b"kept")
    # SigV4: X-Amz-Expires=-1000, what boto3 signs for ExpiresIn=-1000.
    req = AWSRequest(method="PUT", url=f"{s.endpoint}/{b}/foo")
    S3SigV4QueryAuth(Credentials(s.ak, s.sk), "s3", "us-east-1", expires=-1000).add_auth(req)
    assert "X-Amz-Expires=-1000" in req.url, req.url
    r = SESSION.put(req.url, data=b"foo", timeout=60)
    root = ET.fromstring(r.content)
    assert r.status_code == 400, (r.status_code, r.text)
    assert root.findtext("Code") == "AuthorizationQueryParametersError", r.text
    assert root.findtext("Message") == "X-Amz-Expires must be non-negative", r.text
    # SigV2: Expires in the past is an expired request.
    v2 = boto3.session.Session().client(
        "s3", endpoint_url=s.endpoint, region_name="us-east-1", aws_access_key_id=s.ak,
        aws_secret_access_key=s.sk, config=Config(signature_version="s3", s3={"addressing_style": "path"}))
    url = v2.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "foo"}, ExpiresIn=-1000)
    assert "Expires=" in url and "Signature=" in url, url
    r = SESSION.put(url, data=b"foo", timeout=60)
    root = ET.fromstring(r.content)
    assert r.status_code == 403 and root.findtext("Code") == "AccessDenied", (r.status_code, r.text)
    assert root.findtext("Message") == "Request has expired", r.text
    assert c.get_object(Bucket=b, Key="foo")["Body"].read() == b"kept"


@test
def non_ascii_metadata_rfc2047(s):
    c, b = new_bucket(s, "meta2047")

    def set_unicode(**kw):
        kw["params"]["headers"]["x-amz-meta-meta1"] = "Hello World\xe9"

    c.meta.events.register("before-call.s3.PutObject", set_unicode)
    c.put_object(Bucket=b, Key="foo", Body=b"bar", Metadata={"plain": "ascii only"})
    c.meta.events.unregister("before-call.s3.PutObject", set_unicode)
    want = "=?UTF-8?B?" + base64.b64encode("Hello World\xe9".encode()).decode() + "?="
    for meta in (c.get_object(Bucket=b, Key="foo")["Metadata"], c.head_object(Bucket=b, Key="foo")["Metadata"]):
        assert meta == {"meta1": want, "plain": "ascii only"}, meta
        (text, charset), = email.header.decode_header(meta["meta1"])
        assert text.decode(charset) == "Hello World\xe9"
    # The bytes on the wire are mail-safe ASCII.
    c2 = s.client()
    url = c2.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "foo"}, ExpiresIn=60)
    u = urllib.parse.urlsplit(url)
    st, hdrs, body = raw(s, "GET", u.path + "?" + u.query)
    got = [v for k, v in hdrs if k.lower() == "x-amz-meta-meta1"]
    assert st == 200 and body == b"bar" and got == [want], (st, hdrs)
    # An encoded value is stored decoded (AWS), so it comes back in the
    # canonical form: B for non-ASCII, plain for ASCII; other charsets as sent.
    cafe = "=?UTF-8?B?" + base64.b64encode("caf\xe9".encode()).decode() + "?="
    c.put_object(Bucket=b, Key="enc", Body=b"e", Metadata={
        "b": want, "q": "=?utf-8?Q?caf=C3=A9?=", "ascii": "=?UTF-8?B?aGVsbG8=?=",
        "latin1": "=?ISO-8859-1?B?6Q==?=", "bad": "=?UTF-8?Q?x=G1?="})
    meta = c.head_object(Bucket=b, Key="enc")["Metadata"]
    assert meta == {"b": want, "q": cafe, "ascii": "hello", "latin1": "=?ISO-8859-1?B?6Q==?=",
                    "bad": "=?UTF-8?Q?x=G1?="}, meta
    # Metadata copied (COPY directive) stays stored as sent and answered the same way.
    c.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "foo"})
    assert c.head_object(Bucket=b, Key="copy")["Metadata"]["meta1"] == want


def assert_no_version_hdr(resp, what):
    hdrs = resp["ResponseMetadata"]["HTTPHeaders"]
    assert "x-amz-version-id" not in hdrs and "VersionId" not in resp, (what, hdrs)


@test
def version_id_only_when_enabled(s):
    c = s.client()
    for status in (None, "Suspended", "Enabled"):
        b = s.bucket_name(f"vid-{(status or 'off').lower()}")
        c.create_bucket(Bucket=b)
        if status:
            c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": status})
        answers = {"put": c.put_object(Bucket=b, Key="k", Body=b"1")}
        answers["copy"] = c.copy_object(Bucket=b, Key="k2", CopySource={"Bucket": b, "Key": "k"})
        up = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
        e = c.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"part")["ETag"]
        answers["complete"] = c.complete_multipart_upload(
            Bucket=b, Key="mp", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        form = v2_form(s, b, [["starts-with", "$key", "p"]], {"key": "post"})
        r = post_form(s, b, form, "x", b"posted")
        assert r.status_code == 204, (r.status_code, r.text)
        if status != "Enabled":
            for what, resp in answers.items():
                assert_no_version_hdr(resp, (status, what))
            assert "x-amz-version-id" not in r.headers, (status, dict(r.headers))
        else:
            ids = {what: resp["VersionId"] for what, resp in answers.items()}
            ids["post"] = r.headers["x-amz-version-id"]
            listed = {v["Key"]: v["VersionId"] for v in c.list_object_versions(Bucket=b)["Versions"]}
            assert listed == {"k": ids["put"], "k2": ids["copy"], "mp": ids["complete"],
                              "post": ids["post"]}, (listed, ids)
            assert "null" not in listed.values(), listed
        if status == "Suspended":
            # The version exists, as "null": listed and answered on reads.
            listed = {v["Key"]: v["VersionId"] for v in c.list_object_versions(Bucket=b)["Versions"]}
            assert listed == {"k": "null", "k2": "null", "mp": "null", "post": "null"}, listed
            assert c.head_object(Bucket=b, Key="k")["VersionId"] == "null"


@test
def upload_part_copy_range_past_the_end(s):
    c, b = new_bucket(s, "cprange")
    c.put_object(Bucket=b, Key="source", Body=b"12345")
    up = c.create_multipart_upload(Bucket=b, Key="dest")["UploadId"]
    src = {"Bucket": b, "Key": "source"}
    for rng in ("bytes=0-21", "bytes=5-5", "bytes=3-2"):
        r = expect_error(lambda: c.upload_part_copy(Bucket=b, Key="dest", UploadId=up, CopySource=src,
                                                    CopySourceRange=rng, PartNumber=1),
                         "InvalidArgument", 400)
        assert "Range specified is not valid" in r["Error"]["Message"], (rng, r)
    r = expect_error(lambda: c.upload_part_copy(Bucket=b, Key="dest", UploadId=up, CopySource=src,
                                                CopySourceRange="0-2", PartNumber=1),
                     "InvalidArgument", 400)
    assert "must be of the form bytes=first-last" in r["Error"]["Message"], r
    assert c.list_parts(Bucket=b, Key="dest", UploadId=up).get("Parts", []) == []
    ok = c.upload_part_copy(Bucket=b, Key="dest", UploadId=up, CopySource=src,
                            CopySourceRange="bytes=1-3", PartNumber=1)["CopyPartResult"]["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="dest", UploadId=up,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": ok}]})
    assert c.get_object(Bucket=b, Key="dest")["Body"].read() == b"234"


if __name__ == "__main__":
    run(Strata())
