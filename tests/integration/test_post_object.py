#!/usr/bin/python3
"""test_post_object.py - POST Object (browser-based uploads with an HTML
form) against a live strata, with python3-requests building the
multipart/form-data bodies and boto3 checking what was stored.

Forms signed with SigV4 (x-amz-algorithm/credential/date/signature, also
as boto3's generate_presigned_post builds them) and SigV2
(AWSAccessKeyId/signature) are accepted; every POST policy condition kind
rejects what it should (eq, exact-match object, starts-with, "" any value,
content-length-range too big / too small, an expired policy, a bad
signature, an unknown key, a field no condition names, a bad policy
document), each with AWS's error, and stores nothing.  success_action_status
(200, 201 with PostResponse, default 204) and success_action_redirect (303
with bucket, key and etag), ${filename}, x-amz-meta-*, Content-Type,
tagging and x-amz-checksum-* round-trip through HEAD/GetObjectTagging, and
the bytes are compared.  An anonymous POST is refused unless the bucket
policy allows s3:PutObject, and the policy's condition keys see the form's
x-amz-* fields; a form signed by another user needs that user's
permission; x-amz-server-side-encryption as a field and the bucket's
default encryption both seal the object (daemon with --kms-key-file); the acl
field sets a canned ACL as x-amz-acl does (AccessControlListNotSupported
under BucketOwnerEnforced, anonymous reads of a public-read object under
ObjectWriter).  Run by CTest with /usr/bin/python3.
"""

import atexit
import base64
import datetime
import hashlib
import hmac
import json
import os
import secrets
import shutil
import sys
import tempfile
import types
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import REGION, Strata, expect_error, new_bucket, run, test  # noqa: E402

USER2 = ("STRATAPOSTU2" + secrets.token_hex(4).upper(), "post-user2/" + secrets.token_hex(8))

SESSION = requests.Session()
SESSION.trust_env = False  # no proxies from the environment


def iso(delta_s):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=delta_s)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def b64policy(conditions, expires_s=600):
    doc = {"expiration": iso(expires_s), "conditions": conditions}
    return base64.b64encode(json.dumps(doc).encode()).decode()


def v4_fields(s, bucket, conditions, expires_s=600, sk=None, extra=None):
    """Form fields signed with SigV4; the auth fields are added to the
    conditions as AWS requires."""
    now = datetime.datetime.now(datetime.timezone.utc)
    date8 = now.strftime("%Y%m%d")
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    cred = f"{s.ak}/{date8}/{REGION}/s3/aws4_request"
    conds = list(conditions) + [{"bucket": bucket}, {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
                                {"x-amz-credential": cred}, {"x-amz-date": amz_date}]
    policy = b64policy(conds, expires_s)
    key = ("AWS4" + (sk or s.sk)).encode()
    for part in (date8, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(key, policy.encode(), hashlib.sha256).hexdigest()
    fields = {"x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": cred,
              "x-amz-date": amz_date, "policy": policy, "x-amz-signature": sig}
    fields.update(extra or {})
    return fields


def v2_fields(s, conditions, expires_s=600, extra=None):
    policy = b64policy(conditions, expires_s)
    sig = base64.b64encode(hmac.new(s.sk.encode(), policy.encode(), hashlib.sha1).digest()).decode()
    fields = {"AWSAccessKeyId": s.ak, "policy": policy, "signature": sig}
    fields.update(extra or {})
    return fields


def post(s, bucket, fields, data, filename="upload.bin", **kw):
    # A list keeps the order: the file goes last, as browsers send it.
    form = [(k, (None, v)) for k, v in fields.items()]
    form.append(("file", (filename, data, "application/octet-stream")))
    return SESSION.post(f"{s.endpoint}/{bucket}", files=form, allow_redirects=False, timeout=60,
                        **kw)


def err_code(resp):
    root = ET.fromstring(resp.content)
    return root.findtext("Code"), root.findtext("Message") or ""


def expect_post_error(s, bucket, fields, data, code, status, msg_part=None, key=None):
    r = post(s, bucket, fields, data)
    assert r.status_code == status, (r.status_code, r.text)
    got, msg = err_code(r)
    assert got == code, (got, msg, r.text)
    if msg_part:
        assert msg_part in msg, (msg_part, msg)
    if key:  # nothing was stored
        expect_error(lambda: s.client().head_object(Bucket=bucket, Key=key), "404", 404)
    return msg


@test
def v4_upload_roundtrip(s):
    c, b = new_bucket(s, "pv4")
    data = os.urandom(300 * 1024 + 7)
    fields = {"key": "dir/${filename}", "Content-Type": "image/png",
              "x-amz-meta-owner": "alice", "success_action_status": "201",
              "tagging": "<Tagging><TagSet><Tag><Key>team</Key><Value>ml</Value></Tag>"
                         "</TagSet></Tagging>"}
    conds = [["starts-with", "$key", "dir/"], {"Content-Type": "image/png"},
             ["eq", "$x-amz-meta-owner", "alice"], {"success_action_status": "201"},
             ["starts-with", "$tagging", ""], ["content-length-range", 1, 1 << 20]]
    r = post(s, b, v4_fields(s, b, conds, extra=fields), data, filename="photo.png")
    assert r.status_code == 201, (r.status_code, r.text)
    root = ET.fromstring(r.content)
    assert root.tag == "PostResponse", r.text
    assert root.findtext("Bucket") == b and root.findtext("Key") == "dir/photo.png", r.text
    etag = '"' + hashlib.md5(data).hexdigest() + '"'
    assert root.findtext("ETag") == etag and r.headers["ETag"] == etag, r.text
    assert root.findtext("Location").endswith(f"/{b}/dir/photo.png"), r.text
    h = c.head_object(Bucket=b, Key="dir/photo.png")
    assert h["ContentLength"] == len(data) and h["ContentType"] == "image/png", h
    assert h["Metadata"] == {"owner": "alice"}, h["Metadata"]
    assert c.get_object(Bucket=b, Key="dir/photo.png")["Body"].read() == data
    tags = c.get_object_tagging(Bucket=b, Key="dir/photo.png")["TagSet"]
    assert tags == [{"Key": "team", "Value": "ml"}], tags


@test
def boto3_presigned_post(s):
    """The form boto3 builds for browsers (generate_presigned_post)."""
    c, b = new_bucket(s, "pboto")
    data = b"from boto3's presigned post\n" * 100
    p = c.generate_presigned_post(b, "incoming/${filename}",
                                  Fields={"x-amz-meta-src": "form"},
                                  Conditions=[["starts-with", "$key", "incoming/"],
                                              {"x-amz-meta-src": "form"},
                                              ["content-length-range", 0, 10000]],
                                  ExpiresIn=300)
    assert p["url"].rstrip("/").endswith(b), p["url"]
    r = SESSION.post(p["url"], data=p["fields"], files={"file": ("a.txt", data)}, timeout=60)
    assert r.status_code == 204, (r.status_code, r.text)
    assert c.get_object(Bucket=b, Key="incoming/a.txt")["Body"].read() == data
    assert c.head_object(Bucket=b, Key="incoming/a.txt")["Metadata"] == {"src": "form"}


@test
def v2_upload_and_status(s):
    c, b = new_bucket(s, "pv2")
    data = os.urandom(5000)
    conds = [{"bucket": b}, ["starts-with", "$key", "v2/"], ["starts-with", "$success_action_status", ""]]
    r = post(s, b, v2_fields(s, conds, extra={"key": "v2/a", "success_action_status": "200"}), data)
    assert r.status_code == 200 and r.content == b"", (r.status_code, r.text)
    assert r.headers["ETag"] == '"' + hashlib.md5(data).hexdigest() + '"'
    r = post(s, b, v2_fields(s, conds, extra={"key": "v2/b", "success_action_status": "299"}), data)
    assert r.status_code == 204, (r.status_code, r.text)  # anything else is 204
    assert c.get_object(Bucket=b, Key="v2/a")["Body"].read() == data
    assert c.get_object(Bucket=b, Key="v2/b")["Body"].read() == data


@test
def redirect_303(s):
    c, b = new_bucket(s, "predir")
    data = b"redirected"
    target = "http://127.0.0.1:9/done?x=1"
    conds = [["starts-with", "$key", ""], {"success_action_redirect": target}]
    r = post(s, b, v4_fields(s, b, conds, extra={"key": "k r", "success_action_redirect": target}),
             data)
    assert r.status_code == 303, (r.status_code, r.text)
    loc = urllib.parse.urlsplit(r.headers["Location"])
    q = urllib.parse.parse_qs(loc.query)
    assert loc.netloc == "127.0.0.1:9" and loc.path == "/done", r.headers["Location"]
    assert q == {"x": ["1"], "bucket": [b], "key": ["k r"],
                 "etag": ['"' + hashlib.md5(data).hexdigest() + '"']}, q
    assert c.get_object(Bucket=b, Key="k r")["Body"].read() == data


@test
def checksum_field(s):
    c, b = new_bucket(s, "pck")
    data = b"checksummed form upload"
    good = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    conds = [["starts-with", "$key", ""], ["starts-with", "$x-amz-checksum-crc32", ""]]
    r = post(s, b, v4_fields(s, b, conds, extra={"key": "ck", "x-amz-checksum-crc32": good}), data)
    assert r.status_code == 204, (r.status_code, r.text)
    assert r.headers.get("x-amz-checksum-crc32") == good, r.headers
    h = c.head_object(Bucket=b, Key="ck", ChecksumMode="ENABLED")
    assert h.get("ChecksumCRC32") == good, h
    bad = base64.b64encode((zlib.crc32(data) ^ 1).to_bytes(4, "big")).decode()
    expect_post_error(s, b, v4_fields(s, b, conds, extra={"key": "ck2", "x-amz-checksum-crc32": bad}),
                      data, "BadDigest", 400, key="ck2")


@test
def policy_conditions_reject(s):
    c, b = new_bucket(s, "prej")
    data = b"x" * 100
    base = [["starts-with", "$key", "ok/"]]
    # eq and the exact-match object form
    expect_post_error(s, b, v4_fields(s, b, base + [["eq", "$x-amz-meta-a", "1"]],
                                      extra={"key": "ok/1", "x-amz-meta-a": "2"}),
                      data, "AccessDenied", 403, "Policy Condition failed", key="ok/1")
    expect_post_error(s, b, v4_fields(s, b, base + [{"Content-Type": "text/plain"}],
                                      extra={"key": "ok/2", "Content-Type": "text/html"}),
                      data, "AccessDenied", 403, "Policy Condition failed", key="ok/2")
    # starts-with
    expect_post_error(s, b, v4_fields(s, b, base, extra={"key": "bad/3"}),
                      data, "AccessDenied", 403, '["starts-with", "$key", "ok/"]', key="bad/3")
    # a field no condition names
    expect_post_error(s, b, v4_fields(s, b, base, extra={"key": "ok/4", "x-amz-meta-extra": "1"}),
                      data, "AccessDenied", 403, "Extra input fields: x-amz-meta-extra", key="ok/4")
    # x-ignore-* fields need no condition
    r = post(s, b, v4_fields(s, b, base, extra={"key": "ok/5", "x-ignore-me": "1"}), data)
    assert r.status_code == 204, r.text
    # a condition on a field the form lacks
    expect_post_error(s, b, v4_fields(s, b, base + [["eq", "$x-amz-meta-need", "v"]],
                                      extra={"key": "ok/6"}),
                      data, "AccessDenied", 403, "Policy Condition failed", key="ok/6")
    # the bucket condition names the bucket posted to
    expect_post_error(s, b, v2_fields(s, base + [{"bucket": "another-bucket"}], extra={"key": "ok/7"}),
                      data, "AccessDenied", 403, "Policy Condition failed", key="ok/7")


@test
def content_length_range(s):
    c, b = new_bucket(s, "prange")
    conds = [["starts-with", "$key", ""], ["content-length-range", 10, 1000]]
    expect_post_error(s, b, v4_fields(s, b, conds, extra={"key": "big"}), os.urandom(1001),
                      "EntityTooLarge", 400, key="big")
    expect_post_error(s, b, v4_fields(s, b, conds, extra={"key": "small"}), b"123456789",
                      "EntityTooSmall", 400, key="small")
    for n in (10, 1000):
        data = os.urandom(n)
        r = post(s, b, v4_fields(s, b, conds, extra={"key": f"n{n}"}), data)
        assert r.status_code == 204, (n, r.text)
        assert c.get_object(Bucket=b, Key=f"n{n}")["Body"].read() == data
    # a big file past the limit is refused without being stored whole
    expect_post_error(s, b, v4_fields(s, b, conds, extra={"key": "huge"}), os.urandom(3 << 20),
                      "EntityTooLarge", 400, key="huge")


@test
def expired_and_bad_signatures(s):
    c, b = new_bucket(s, "psig")
    data = b"signed"
    conds = [["starts-with", "$key", ""]]
    expect_post_error(s, b, v4_fields(s, b, conds, expires_s=-60, extra={"key": "e"}), data,
                      "AccessDenied", 403, "Policy expired", key="e")
    expect_post_error(s, b, v4_fields(s, b, conds, sk="wrong-secret", extra={"key": "w"}), data,
                      "SignatureDoesNotMatch", 403, key="w")
    f = v2_fields(s, conds, extra={"key": "w2"})
    f["signature"] = base64.b64encode(b"\0" * 20).decode()
    expect_post_error(s, b, f, data, "SignatureDoesNotMatch", 403, key="w2")
    f = v2_fields(s, conds, extra={"key": "w3"})
    f["AWSAccessKeyId"] = "NOSUCHKEY"
    expect_post_error(s, b, f, data, "InvalidAccessKeyId", 403, key="w3")
    # the signed policy cannot be swapped for another one
    f = v4_fields(s, b, conds, extra={"key": "w4"})
    f["policy"] = b64policy([["starts-with", "$key", ""]])
    expect_post_error(s, b, f, data, "SignatureDoesNotMatch", 403, key="w4")
    # a signature without a policy, a policy without a signature
    expect_post_error(s, b, {"key": "w5", "AWSAccessKeyId": s.ak, "signature": "x"}, data,
                      "InvalidArgument", 400, key="w5")
    expect_post_error(s, b, {"key": "w6", "policy": b64policy(conds)}, data,
                      "InvalidArgument", 400, key="w6")


@test
def bad_forms(s):
    c, b = new_bucket(s, "pform")
    c.put_object(Bucket=b, Key="keep", Body=b"old")

    def signed_with(doc, key="keep"):
        policy = base64.b64encode(doc).decode()
        sig = base64.b64encode(hmac.new(s.sk.encode(), policy.encode(), hashlib.sha1).digest()).decode()
        return {"key": key, "AWSAccessKeyId": s.ak, "policy": policy, "signature": sig}

    expect_post_error(s, b, signed_with(b"{not json"), b"new", "InvalidPolicyDocument", 400,
                      "Invalid JSON")
    expect_post_error(s, b, signed_with(b'{"conditions": []}'), b"new", "InvalidPolicyDocument",
                      400, "missing expiration")
    expect_post_error(s, b, signed_with(json.dumps({"expiration": iso(60)}).encode()), b"new",
                      "InvalidPolicyDocument", 400, "missing conditions")
    expect_post_error(s, b, signed_with(json.dumps(
        {"expiration": iso(60), "conditions": [["bogus", "$key", "x"]]}).encode()), b"new",
        "InvalidPolicyDocument", 400, "Invalid Condition")
    # no key field; no file field
    f = v4_fields(s, b, [])
    expect_post_error(s, b, f, b"new", "InvalidArgument", 400, "key")
    r = SESSION.post(f"{s.endpoint}/{b}", files=[("key", (None, "keep")), ("x-ignore-a", (None, "1"))],
                     timeout=30)
    assert r.status_code == 400 and err_code(r)[0] == "InvalidArgument", r.text
    # not multipart
    r = SESSION.post(f"{s.endpoint}/{b}", data={"key": "keep"}, timeout=30)
    assert r.status_code == 412 and err_code(r)[0] == "PreconditionFailed", r.text
    # a body cut before its closing boundary
    body = (b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nkeep\r\n"
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nnew")
    r = SESSION.post(f"{s.endpoint}/{b}", data=body, timeout=30,
                     headers={"Content-Type": "multipart/form-data; boundary=XyZ"})
    assert r.status_code in (400, 403), r.text
    # ACLs are disabled on new buckets (BucketOwnerEnforced), as for PutObject
    expect_post_error(s, b, v4_fields(s, b, [["starts-with", "$key", ""], {"acl": "public-read"}],
                                      extra={"key": "keep", "acl": "public-read"}),
                      b"new", "AccessControlListNotSupported", 400)
    # unsupported fields are refused, not ignored
    expect_post_error(s, b, v4_fields(s, b, [["starts-with", "$key", ""],
                                             {"x-amz-grant-read": "uri=x"}],
                                      extra={"key": "keep", "x-amz-grant-read": "uri=x"}),
                      b"new", "NotImplemented", 501)
    expect_post_error(s, b, v4_fields(s, b, [["starts-with", "$key", ""],
                                             {"x-amz-storage-class": "GLACIER"}],
                                      extra={"key": "keep", "x-amz-storage-class": "GLACIER"}),
                      b"new", "InvalidStorageClass", 400)
    # too much before the file
    expect_post_error(s, b, v4_fields(s, b, [["starts-with", "$key", ""],
                                             ["starts-with", "$x-amz-meta-big", ""]],
                                      extra={"key": "keep", "x-amz-meta-big": "b" * 30000}),
                      b"new", "MaxPostPreDataLengthExceededError", 400)
    assert c.get_object(Bucket=b, Key="keep")["Body"].read() == b"old"


@test
def anonymous_post(s):
    c, b = new_bucket(s, "panon")
    r = post(s, b, {"key": "anon"}, b"anon data")
    assert r.status_code == 403 and err_code(r)[0] == "AccessDenied", r.text
    expect_error(lambda: c.head_object(Bucket=b, Key="anon"), "404", 404)
    c.put_bucket_policy(Bucket=b, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
                       "Resource": f"arn:aws:s3:::{b}/drop/*"}]}))
    r = post(s, b, {"key": "drop/anon"}, b"anon data")
    assert r.status_code == 204, r.text
    assert c.get_object(Bucket=b, Key="drop/anon")["Body"].read() == b"anon data"
    r = post(s, b, {"key": "elsewhere"}, b"anon data")
    assert r.status_code == 403, r.text


@test
def empty_file(s):
    c, b = new_bucket(s, "pempty")
    r = post(s, b, v4_fields(s, b, [["starts-with", "$key", ""]], extra={"key": "empty"}), b"")
    assert r.status_code == 204, r.text
    assert c.head_object(Bucket=b, Key="empty")["ContentLength"] == 0


@test
def sse_fields_and_bucket_default(s):
    """x-amz-server-side-encryption is a form field like any x-amz-* one;
    without it the bucket's default encryption applies."""
    c, b = new_bucket(s, "psse")
    data = os.urandom(70000)
    conds = [["starts-with", "$key", ""], {"x-amz-server-side-encryption": "AES256"}]
    r = post(s, b, v4_fields(s, b, conds, extra={"key": "enc",
                                                 "x-amz-server-side-encryption": "AES256"}), data)
    assert r.status_code == 204, r.text
    assert r.headers.get("x-amz-server-side-encryption") == "AES256", r.headers
    h = c.head_object(Bucket=b, Key="enc")
    assert h.get("ServerSideEncryption") == "AES256", h
    assert c.get_object(Bucket=b, Key="enc")["Body"].read() == data
    expect_post_error(s, b, v4_fields(s, b, [["starts-with", "$key", ""],
                                             {"x-amz-server-side-encryption": "bogus"}],
                                      extra={"key": "enc2", "x-amz-server-side-encryption": "bogus"}),
                      data, "InvalidArgument", 400, key="enc2")
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    r = post(s, b, v4_fields(s, b, [["starts-with", "$key", ""]], extra={"key": "dflt"}), data)
    assert r.status_code == 204, r.text
    assert c.head_object(Bucket=b, Key="dflt").get("ServerSideEncryption") == "AES256"


@test
def bucket_policy_sees_form_fields(s):
    """AWS's "deny uploads without encryption" policy, applied to an
    anonymous form: the condition key comes from the form's field."""
    c, b = new_bucket(s, "ppol")
    c.put_bucket_policy(Bucket=b, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
             "Resource": f"arn:aws:s3:::{b}/*"},
            {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
             "Resource": f"arn:aws:s3:::{b}/*",
             "Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption": "AES256"}}}]}))
    r = post(s, b, {"key": "plain"}, b"data")
    assert r.status_code == 403 and err_code(r)[0] == "AccessDenied", r.text
    expect_error(lambda: c.head_object(Bucket=b, Key="plain"), "404", 404)
    r = post(s, b, {"key": "sealed", "x-amz-server-side-encryption": "AES256"}, b"data")
    assert r.status_code == 204, r.text
    assert c.head_object(Bucket=b, Key="sealed").get("ServerSideEncryption") == "AES256"


@test
def request_tag_condition(s):
    """s3:RequestObjectTag/<key> sees the tags of the form's tagging field."""
    c, b = new_bucket(s, "ptag")
    c.put_bucket_policy(Bucket=b, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
                       "Resource": f"arn:aws:s3:::{b}/*",
                       "Condition": {"StringEquals": {"s3:RequestObjectTag/origin": "web"}}}]}))

    def tagging(v):
        return ("<Tagging><TagSet><Tag><Key>origin</Key><Value>" + v +
                "</Value></Tag></TagSet></Tagging>")

    r = post(s, b, {"key": "other", "tagging": tagging("cli")}, b"t")
    assert r.status_code == 403, r.text
    r = post(s, b, {"key": "none"}, b"t")
    assert r.status_code == 403, r.text
    r = post(s, b, {"key": "web", "tagging": tagging("web")}, b"t")
    assert r.status_code == 204, r.text
    assert c.get_object_tagging(Bucket=b, Key="web")["TagSet"] == [{"Key": "origin", "Value": "web"}]
    for k in ("other", "none"):
        expect_error(lambda: c.head_object(Bucket=b, Key=k), "404", 404)
    r = post(s, b, {"key": "bad", "tagging": "<Tagging><TagSet>"}, b"t")
    assert r.status_code == 400 and err_code(r)[0] == "MalformedXML", r.text


@test
def acl_field(s):
    """The acl field is what x-amz-acl is to PutObject."""
    c, b = new_bucket(s, "pacl")
    c.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    conds = [["starts-with", "$key", ""], ["starts-with", "$acl", ""]]
    r = post(s, b, v4_fields(s, b, conds, extra={"key": "pub", "acl": "public-read"}), b"public")
    assert r.status_code == 204, r.text
    r = SESSION.get(f"{s.endpoint}/{b}/pub", timeout=30)  # anonymous
    assert r.status_code == 200 and r.content == b"public", (r.status_code, r.text)
    grants = c.get_object_acl(Bucket=b, Key="pub")["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("/AllUsers") and g["Permission"] == "READ"
               for g in grants), grants
    r = post(s, b, v4_fields(s, b, conds, extra={"key": "priv", "acl": "private"}), b"private")
    assert r.status_code == 204, r.text
    assert SESSION.get(f"{s.endpoint}/{b}/priv", timeout=30).status_code == 403
    expect_post_error(s, b, v4_fields(s, b, conds, extra={"key": "odd", "acl": "everyone"}),
                      b"x", "InvalidArgument", 400, key="odd")
    # a bucket ACL granting everyone WRITE lets an anonymous form in
    r = post(s, b, {"key": "anon"}, b"anon")
    assert r.status_code == 403, r.text
    c.put_bucket_acl(Bucket=b, ACL="public-read-write")
    r = post(s, b, {"key": "anon"}, b"anon")
    assert r.status_code == 204, r.text
    assert c.get_object(Bucket=b, Key="anon")["Body"].read() == b"anon"


@test
def another_users_form(s):
    """The form's signer is who uploads: another user needs the bucket
    policy's permission."""
    c, b = new_bucket(s, "puser")
    signer = types.SimpleNamespace(ak=USER2[0], sk=USER2[1])  # what the signers read
    conds = [["starts-with", "$key", ""]]
    expect_post_error(s, b, v4_fields(signer, b, conds, extra={"key": "u2"}), b"u2",
                      "AccessDenied", 403, key="u2")
    c.put_bucket_policy(Bucket=b, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": USER2[0]},
                       "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{b}/*"}]}))
    r = post(s, b, v2_fields(signer, conds, extra={"key": "u2"}), b"u2")
    assert r.status_code == 204, r.text
    assert c.get_object(Bucket=b, Key="u2")["Body"].read() == b"u2"


def daemon_files():
    """A master key file (SSE-S3) and a users file with a second user."""
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    d = tempfile.mkdtemp(prefix="test_post_object-files.", dir=base)
    atexit.register(shutil.rmtree, d, True)
    keys = os.path.join(d, "keys.json")
    with open(keys, "w") as f:
        json.dump({"active": "k1", "keys": {"k1": {"key": base64.b64encode(os.urandom(32)).decode()}}}, f)
    os.chmod(keys, 0o600)
    users = os.path.join(d, "users")
    with open(users, "w") as f:
        f.write(f"{USER2[0]} {USER2[1]} second\n")
    return ["--kms-key-file", keys, "--users", users]


if __name__ == "__main__":
    run(Strata(args=daemon_files()))
