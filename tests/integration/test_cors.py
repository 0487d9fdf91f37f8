#!/usr/bin/python3
"""test_cors.py - bucket CORS against a live strata.

Put/Get/DeleteBucketCors with boto3 and awscli v2: the configuration round-trips,
NoSuchCORSConfiguration without one, AWS's errors for a bad document
(MalformedXML: no rule, a rule without origin or method, over 100 rules,
bad XML; InvalidRequest: an unsupported method, two wildcards in an origin
or header, a wildcard ExposeHeader; a missing Content-MD5) each leaving the
previous configuration in force, and only the owner may read or change it.

OPTIONS preflight with curl (unauthenticated): allowed per the first
matching rule (origin with one wildcard, method, every requested header
against AllowedHeader wildcards case-insensitively) with the
Access-Control-* answer headers; denied with 403 CORSResponse when no rule
matches or the bucket has no configuration; 400 without Origin or with a
bad Access-Control-Request-Method.  Actual requests with an Origin get
Access-Control-Allow-Origin / -Expose-Headers / Vary, error answers too.
Run by CTest with /usr/bin/python3.
"""

import base64
import hashlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import REGION, Strata, expect_error, new_bucket, run, test  # noqa: E402

SESSION = requests.Session()
SESSION.trust_env = False

RULES = [
    {"ID": "web", "AllowedHeaders": ["x-amz-*", "Content-Type"],
     "AllowedMethods": ["GET", "PUT", "POST"],
     "AllowedOrigins": ["https://*.example.com", "http://app.test"],
     "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 600},
    {"AllowedMethods": ["GET", "HEAD"], "AllowedOrigins": ["*"]},
]


def cors_bucket(s, prefix, rules=None):
    c, b = new_bucket(s, prefix)
    if rules:
        c.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": rules})
    return c, b


def raw_put_cors(s, bucket, body, md5=True):
    """PutBucketCors with a body boto3 would refuse to build."""
    headers = {"Content-Type": "application/xml"}
    if md5:
        headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
    req = AWSRequest(method="PUT", url=f"{s.endpoint}/{bucket}?cors", data=body, headers=headers)
    S3SigV4Auth(s.credentials(), "s3", REGION).add_auth(req)
    p = req.prepare()
    return SESSION.put(p.url, data=body, headers=dict(p.headers), timeout=30)


def code_of(resp):
    return ET.fromstring(resp.content).findtext("Code")


def curl(*args):
    """curl -si; returns (status, {lower-case header: [values]}, body)."""
    out = subprocess.run(["curl", "-s", "-i", "--noproxy", "*", "--max-time", "30", *args],
                         capture_output=True, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs.setdefault(k.strip().lower(), []).append(v.strip())
    return status, hdrs, body


def preflight(s, bucket, origin, method, req_headers=None, key="obj"):
    args = ["-X", "OPTIONS", f"{s.endpoint}/{bucket}/{key}"]
    if origin is not None:
        args += ["-H", f"Origin: {origin}"]
    if method is not None:
        args += ["-H", f"Access-Control-Request-Method: {method}"]
    if req_headers:
        args += ["-H", f"Access-Control-Request-Headers: {req_headers}"]
    return curl(*args)


@test
def config_roundtrip(s):
    c, b = cors_bucket(s, "cfg")
    expect_error(lambda: c.get_bucket_cors(Bucket=b), "NoSuchCORSConfiguration", 404)
    c.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": RULES})
    got = c.get_bucket_cors(Bucket=b)["CORSRules"]
    assert got == RULES, got
    c.delete_bucket_cors(Bucket=b)
    expect_error(lambda: c.get_bucket_cors(Bucket=b), "NoSuchCORSConfiguration", 404)
    c.delete_bucket_cors(Bucket=b)  # 204 again, as AWS


@test
def config_errors_keep_previous(s):
    c, b = cors_bucket(s, "cerr", RULES)
    rule = ("<CORSRule><AllowedMethod>GET</AllowedMethod>"
            "<AllowedOrigin>http://a.test</AllowedOrigin></CORSRule>")
    cases = [
        (b"<CORSConfiguration></CORSConfiguration>", "MalformedXML"),
        (b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"
         b"</CORSConfiguration>", "MalformedXML"),
        (b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>"
         b"</CORSConfiguration>", "MalformedXML"),
        (("<CORSConfiguration>" + rule * 101 + "</CORSConfiguration>").encode(), "MalformedXML"),
        (b"<CORSConfiguration><CORSRule>", "MalformedXML"),
        (b"<CORSConfiguration><CORSRule><AllowedMethod>PATCH</AllowedMethod>"
         b"<AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>", "InvalidRequest"),
        (b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>"
         b"<AllowedOrigin>http://*.*.test</AllowedOrigin></CORSRule></CORSConfiguration>",
         "InvalidRequest"),
        (b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>"
         b"<AllowedOrigin>*</AllowedOrigin><AllowedHeader>x-*-*</AllowedHeader></CORSRule>"
         b"</CORSConfiguration>", "InvalidRequest"),
        (b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>"
         b"<AllowedOrigin>*</AllowedOrigin><ExposeHeader>*</ExposeHeader></CORSRule>"
         b"</CORSConfiguration>", "InvalidRequest"),
        (b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>"
         b"<AllowedOrigin>*</AllowedOrigin><MaxAgeSeconds>soon</MaxAgeSeconds></CORSRule>"
         b"</CORSConfiguration>", "MalformedXML"),
    ]
    for body, code in cases:
        r = raw_put_cors(s, b, body)
        assert r.status_code == 400 and code_of(r) == code, (body[:80], r.status_code, r.text)
    r = raw_put_cors(s, b, ("<CORSConfiguration>" + rule * 100 + "</CORSConfiguration>").encode(),
                     md5=False)
    assert r.status_code == 400 and code_of(r) == "InvalidRequest", r.text
    assert c.get_bucket_cors(Bucket=b)["CORSRules"] == RULES
    r = raw_put_cors(s, b, ("<CORSConfiguration>" + rule * 100 + "</CORSConfiguration>").encode())
    assert r.status_code == 200, r.text
    assert len(c.get_bucket_cors(Bucket=b)["CORSRules"]) == 100


@test
def only_owner(s):
    c, b = cors_bucket(s, "cown", RULES)
    for method in ("GET", "DELETE"):
        r = SESSION.request(method, f"{s.endpoint}/{b}?cors", timeout=30)
        assert r.status_code == 403 and code_of(r) == "AccessDenied", r.text
    assert c.get_bucket_cors(Bucket=b)["CORSRules"] == RULES


@test
def preflight_allowed(s):
    c, b = cors_bucket(s, "cpre", RULES)
    st, h, _ = preflight(s, b, "https://www.example.com", "PUT",
                         "X-Amz-Meta-Owner, content-type")
    assert st == 200, (st, h)
    assert h["access-control-allow-origin"] == ["https://www.example.com"], h
    assert h["access-control-allow-methods"] == ["GET, PUT, POST"], h
    assert h["access-control-allow-headers"] == ["x-amz-meta-owner, content-type"], h
    assert h["access-control-max-age"] == ["600"], h
    assert h["access-control-allow-credentials"] == ["true"], h
    assert "Origin" in h["vary"][0], h
    assert sorted(h["access-control-expose-headers"]) == ["ETag", "x-amz-request-id"], h
    # the second rule: any origin, GET/HEAD, no headers
    st, h, _ = preflight(s, b, "http://other.test", "GET")
    assert st == 200 and h["access-control-allow-origin"] == ["*"], (st, h)
    assert "access-control-allow-credentials" not in h, h
    assert h["access-control-allow-methods"] == ["GET, HEAD"], h
    # browsers send the preflight to the presigned URL itself: its query
    # signature is not the preflight's and must not be checked
    url = c.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "obj"})
    st, h, body = curl("-X", "OPTIONS", "-H", "Origin: http://app.test",
                       "-H", "Access-Control-Request-Method: PUT", url)
    assert st == 200 and h["access-control-allow-origin"] == ["http://app.test"], (st, body)
    # a preflight for a subresource request (multipart upload) matches too
    st, h, _ = preflight(s, b, "http://app.test", "POST", key="obj?uploads")
    assert st == 200 and h["access-control-allow-origin"] == ["http://app.test"], (st, h)


@test
def preflight_denied(s):
    c, b = cors_bucket(s, "cden", RULES)
    for origin, method, hdrs in [("http://evil.test", "PUT", None),        # origin
                                 ("https://example.com", "PUT", None),     # *. needs a label
                                 ("http://app.test", "DELETE", None),      # method
                                 ("http://other.test", "GET", "x-custom"),  # header
                                 ("https://a.example.com", "PUT", "authorization")]:
        st, h, body = preflight(s, b, origin, method, hdrs)
        assert st == 403, (origin, method, st, body)
        root = ET.fromstring(body)
        assert root.findtext("Code") == "CORSResponse", body
        assert "This CORS request is not allowed" in root.findtext("Message"), body
        assert "access-control-allow-origin" not in h, h
    st, _, body = preflight(s, b, None, "GET")
    assert st == 400 and ET.fromstring(body).findtext("Code") == "BadRequest", body
    st, _, body = preflight(s, b, "http://app.test", "PATCH")
    assert st == 400, body
    _, b2 = cors_bucket(s, "cnone")
    st, _, body = preflight(s, b2, "http://app.test", "GET")
    assert st == 403 and b"CORS is not enabled" in body, body


@test
def actual_response_headers(s):
    c, b = cors_bucket(s, "cact", RULES)
    c.put_object(Bucket=b, Key="obj", Body=b"hello")
    url = c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "obj"})
    st, h, body = curl("-H", "Origin: https://x.example.com", url)
    assert st == 200 and body == b"hello", (st, body)
    assert h["access-control-allow-origin"] == ["https://x.example.com"], h
    assert sorted(h["access-control-expose-headers"]) == ["ETag", "x-amz-request-id"], h
    assert "Origin" in h["vary"][0], h
    # no rule matches: no Allow-Origin, still Vary
    st, h, _ = curl("-H", "Origin: http://evil.test", "-X", "DELETE",
                    c.generate_presigned_url("delete_object", Params={"Bucket": b, "Key": "nope"}))
    assert st == 204 and "access-control-allow-origin" not in h and "vary" in h, (st, h)
    # error answers carry them too
    url = c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "missing"})
    st, h, body = curl("-H", "Origin: http://app.test", url)
    assert st == 404 and h["access-control-allow-origin"] == ["http://app.test"], (st, h)
    # no Origin, no CORS headers
    st, h, _ = curl(c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "obj"}))
    assert st == 200 and not any(k.startswith("access-control-") for k in h), h


@test
def awscli_cors(s):
    """The CORS example of server/auth/README.md with awscli v2 (installed by install-deps)."""
    _, b = new_bucket(s, "ccli")
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "AWS_ACCESS_KEY_ID": s.ak,
           "AWS_SECRET_ACCESS_KEY": s.sk, "AWS_DEFAULT_REGION": REGION,
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}

    def aws(*args):
        return subprocess.run(["/usr/bin/aws", "--endpoint-url", s.endpoint, "s3api", *args],
                              env=env, capture_output=True, text=True, timeout=120)

    cfg = {"CORSRules": [{"AllowedOrigins": ["https://app.example.com"],
                          "AllowedMethods": ["GET", "PUT", "POST"], "AllowedHeaders": ["*"],
                          "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 3000}]}
    r = aws("get-bucket-cors", "--bucket", b)
    assert r.returncode != 0 and "NoSuchCORSConfiguration" in r.stderr, r.stderr
    r = aws("put-bucket-cors", "--bucket", b, "--cors-configuration", json.dumps(cfg))
    assert r.returncode == 0, r.stderr
    r = aws("get-bucket-cors", "--bucket", b)
    assert r.returncode == 0 and json.loads(r.stdout) == cfg, (r.stdout, r.stderr)
    bad = {"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]}
    r = aws("put-bucket-cors", "--bucket", b, "--cors-configuration", json.dumps(bad))
    assert r.returncode != 0 and "InvalidRequest" in r.stderr, r.stderr
    st, h, _ = preflight(s, b, "https://app.example.com", "PUT", "content-type")
    assert st == 200 and h["access-control-max-age"] == ["3000"], (st, h)
    r = aws("delete-bucket-cors", "--bucket", b)
    assert r.returncode == 0, r.stderr
    st, _, body = preflight(s, b, "https://app.example.com", "PUT")
    assert st == 403 and b"CORS is not enabled" in body, body


if __name__ == "__main__":
    run(Strata())
