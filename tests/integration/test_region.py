#!/usr/bin/python3
"""test_region.py - the region a daemon serves (--region, default
us-east-1), against two live daemons: the harness's (us-east-1) and one
started with --region eu-west-1 and used by boto3 and awscli clients
configured for eu-west-1.

Requests signed for another region, or for one that does not exist, are
refused before anything happens: SigV4 header 400
AuthorizationHeaderMalformed, presigned URL 400
AuthorizationQueryParametersError, POST form 400 InvalidArgument, each
with AWS's message, <Region> and x-amz-bucket-region naming the server's
region; boto3 clients set to another region receive that error and sign
again for the region it names (their region redirector), and awscli
reports it.  SigV2 has no region and is served by both.  CreateBucket
takes no LocationConstraint (us-east-1 only), the server's own, or "EU"
for eu-west-1; an explicit us-east-1 is InvalidLocationConstraint, any
other IllegalLocationConstraintException, and nothing is created.
GetBucketLocation, HeadBucket, ListBuckets' BucketRegion and every error
report the server's region; re-creating one's own bucket is 200 in
us-east-1 and BucketAlreadyOwnedByYou elsewhere.  Streaming uploads
(aws-chunked chunk signatures, multipart) verify against the eu-west-1
scope.  The "region" config file key and --print-config; a bad --region
stops the daemon at start.  Run by CTest.
"""

import hashlib
import hmac
import http.client
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, run, test  # noqa: E402

import boto3  # noqa: E402
import botocore  # noqa: E402
import requests  # noqa: E402
from botocore.auth import HmacV1Auth, S3SigV4Auth, SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.config import Config  # noqa: E402

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
EU = {}  # the --region eu-west-1 daemon, started by the first test that needs it


def eu_daemon():
    if "s" not in EU:
        EU["s"] = Strata(args=["--region", "eu-west-1"])
    return EU["s"]


def client(s, region, **cfg):
    """A boto3 client signing for region (path style, no retries)."""
    conf = Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                  retries={"max_attempts": 1, "mode": "standard"}, **cfg)
    return boto3.session.Session().client("s3", endpoint_url=s.endpoint, region_name=region,
                                          aws_access_key_id=s.ak, aws_secret_access_key=s.sk,
                                          config=conf)


def send(s, method, url, headers, body=b""):
    """(status, lower-case headers, body) of exactly this request."""
    u = urllib.parse.urlsplit(url)
    headers = dict(headers)
    if not any(k.lower() == "host" for k in headers):
        headers["Host"] = u.netloc  # what the signers signed
    if body and not any(k.lower() == "content-length" for k in headers):
        headers["Content-Length"] = str(len(body))
    conn = http.client.HTTPConnection(s.host, s.port, timeout=60)
    try:
        conn.putrequest(method, u.path + ("?" + u.query if u.query else ""), skip_host=True,
                        skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        if body:
            conn.send(body)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def signed(s, method, path, region, body=b"", headers=None):
    """A SigV4 header-signed request for region, sent raw."""
    req = AWSRequest(method=method, url=s.endpoint + path, data=body, headers=headers or {})
    S3SigV4Auth(s.credentials(), "s3", region).add_auth(req)
    p = req.prepare()
    return send(s, method, p.url, dict(p.headers), body)


def error(body):
    root = ET.fromstring(body)
    return root.findtext("Code"), root.findtext("Message"), root.findtext("Region")


def wrong_region(st, hdrs, body, code, msg, server_region):
    assert st == 400, (st, hdrs, body)
    c, m, reg = error(body)
    assert (c, m, reg) == (code, msg, server_region), (c, m, reg, body)
    assert hdrs.get("x-amz-bucket-region") == server_region, hdrs


def head_msg(got, want):
    return f"The authorization header is malformed; the region '{got}' is wrong; expecting '{want}'"


def query_msg(got, want):
    return f"Error parsing the X-Amz-Credential parameter; the region '{got}' is wrong; expecting '{want}'"


def record_first_responses(c):
    """Every response before botocore decides on a retry or redirect."""
    seen = []

    def hook(response=None, **kw):
        if response is not None:
            http_resp, parsed = response
            seen.append((http_resp.status_code, parsed.get("Error", {}),
                         dict(http_resp.headers)))
    c.meta.events.register_first("needs-retry.s3.*", hook)
    return seen


@test
def header_signed_for_another_region(s):
    c = s.client()
    b = s.bucket_name("reg")
    c.create_bucket(Bucket=b)
    for region in ("eu-west-1", "xx-nowhere-9", "us-east-10"):
        for method, path, body in (("GET", "/", b""), ("GET", f"/{b}", b""),
                                   ("PUT", f"/{b}/k-{region}", b"never stored"),
                                   ("DELETE", f"/{b}", b"")):
            st, h, body = signed(s, method, path, region, body)
            wrong_region(st, h, body, "AuthorizationHeaderMalformed",
                         head_msg(region, "us-east-1"), "us-east-1")
        # An unknown access key signed for another region hears of the region first.
        req = AWSRequest(method="GET", url=f"{s.endpoint}/{b}")
        S3SigV4Auth(botocore.credentials.Credentials("NOSUCHKEY", "x"), "s3", region).add_auth(req)
        p = req.prepare()
        st, h, body = send(s, "GET", p.url, dict(p.headers))
        wrong_region(st, h, body, "AuthorizationHeaderMalformed", head_msg(region, "us-east-1"),
                     "us-east-1")
    assert c.list_objects_v2(Bucket=b)["KeyCount"] == 0
    c.head_bucket(Bucket=b)  # the DELETEs changed nothing
    # Signed for us-east-1: served.
    st, h, _ = signed(s, "PUT", f"/{b}/k", "us-east-1", b"stored")
    assert st == 200 and h.get("x-amz-bucket-region") is None, (st, h)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"stored"


@test
def boto3_set_to_another_region(s):
    c = s.client()
    b = s.bucket_name("regboto")
    c.create_bucket(Bucket=b)
    eu = client(s, "eu-west-1")
    seen = record_first_responses(eu)
    # No bucket to redirect for: the SDK raises what it got.
    e = expect_error(lambda: eu.list_buckets(), "AuthorizationHeaderMalformed", 400)
    assert e["Error"]["Region"] == "us-east-1", e["Error"]
    assert e["Error"]["Message"] == head_msg("eu-west-1", "us-east-1"), e["Error"]
    assert e["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "us-east-1"
    # On a bucket: the error names us-east-1, botocore signs again for it
    # and the call succeeds.
    del seen[:]
    eu.put_object(Bucket=b, Key="via-redirect", Body=b"redirected put")
    assert len(seen) == 2, seen
    st, err, hdrs = seen[0]
    assert st == 400 and err.get("Code") == "AuthorizationHeaderMalformed", seen[0]
    assert err.get("Region") == "us-east-1" and hdrs.get("x-amz-bucket-region") == "us-east-1", seen[0]
    assert seen[1][0] == 200, seen[1]
    assert c.get_object(Bucket=b, Key="via-redirect")["Body"].read() == b"redirected put"
    # The corrected region is remembered for the bucket: one request now.
    del seen[:]
    assert eu.get_object(Bucket=b, Key="via-redirect")["Body"].read() == b"redirected put"
    assert [x[0] for x in seen] == [200], seen


@test
def presigned_url_for_another_region(s):
    c = s.client()
    b = s.bucket_name("regpre")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="k", Body=b"presigned body")
    for region in ("eu-west-1", "xx-nowhere-9"):
        url = client(s, region).generate_presigned_url(
            "get_object", Params={"Bucket": b, "Key": "k"}, ExpiresIn=300)
        assert f"%2F{region}%2Fs3%2Faws4_request" in url, url
        st, h, body = send(s, "GET", url, {"Host": f"{s.host}:{s.port}"})
        wrong_region(st, h, body, "AuthorizationQueryParametersError",
                     query_msg(region, "us-east-1"), "us-east-1")
        put = client(s, region).generate_presigned_url(
            "put_object", Params={"Bucket": b, "Key": "pput"}, ExpiresIn=300)
        st, h, body = send(s, "PUT", put, {"Host": f"{s.host}:{s.port}",
                                           "Content-Length": "3"}, b"bad")
        wrong_region(st, h, body, "AuthorizationQueryParametersError",
                     query_msg(region, "us-east-1"), "us-east-1")
    expect_error(lambda: c.head_object(Bucket=b, Key="pput"), "404", 404)
    url = c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "k"}, ExpiresIn=300)
    st, _, body = send(s, "GET", url, {"Host": f"{s.host}:{s.port}"})
    assert (st, body) == (200, b"presigned body"), (st, body)


@test
def post_form_for_another_region(s):
    c = s.client()
    b = s.bucket_name("regpost")
    c.create_bucket(Bucket=b)
    p = client(s, "eu-west-1").generate_presigned_post(b, "form/${filename}", ExpiresIn=300)
    assert "/eu-west-1/s3/aws4_request" in p["fields"]["x-amz-credential"], p
    r = requests.post(p["url"], data=p["fields"], files={"file": ("a.txt", b"form body")},
                      timeout=60)
    assert r.status_code == 400, (r.status_code, r.text)
    code, msg, reg = error(r.content)
    assert (code, msg, reg) == ("InvalidArgument",
                                "the region 'eu-west-1' is wrong; expecting 'us-east-1'",
                                "us-east-1"), r.text
    assert r.headers.get("x-amz-bucket-region") == "us-east-1", r.headers
    expect_error(lambda: c.head_object(Bucket=b, Key="form/a.txt"), "404", 404)
    p = c.generate_presigned_post(b, "form/${filename}", ExpiresIn=300)
    r = requests.post(p["url"], data=p["fields"], files={"file": ("a.txt", b"form body")},
                      timeout=60)
    assert r.status_code == 204, (r.status_code, r.text)
    assert c.get_object(Bucket=b, Key="form/a.txt")["Body"].read() == b"form body"


def sigv2(s, method, path, body=b""):
    req = AWSRequest(method=method, url=s.endpoint + path, data=body)
    HmacV1Auth(s.credentials()).add_auth(req)
    p = req.prepare()
    return send(s, method, p.url, dict(p.headers), body)


@test
def create_bucket_location_constraints(s):
    c = s.client()
    cfg = lambda lc: {"CreateBucketConfiguration": {"LocationConstraint": lc}}  # noqa: E731
    for lc, code, msg in (
            ("us-east-1", "InvalidLocationConstraint", "The specified location-constraint is not valid"),
            ("eu-west-1", "IllegalLocationConstraintException",
             "The eu-west-1 location constraint is incompatible for the region specific endpoint "
             "this request was sent to."),
            ("moon-base-1", "IllegalLocationConstraintException",
             "The moon-base-1 location constraint is incompatible for the region specific "
             "endpoint this request was sent to."),
            ("EU", "IllegalLocationConstraintException",
             "The EU location constraint is incompatible for the region specific endpoint this "
             "request was sent to.")):
        b = s.bucket_name("lc-" + lc.lower())
        e = expect_error(lambda: c.create_bucket(Bucket=b, **cfg(lc)), code, 400)
        assert e["Error"]["Message"] == msg, e["Error"]
        assert e["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "us-east-1"
        expect_error(lambda: c.head_bucket(Bucket=b), "404", 404)
    b = s.bucket_name("lc-none")
    assert c.create_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert c.get_bucket_location(Bucket=b)["LocationConstraint"] is None  # AWS: null for us-east-1
    assert c.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "us-east-1"
    # The legacy answer of us-east-1: re-creating one's own bucket is 200.
    assert c.create_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 200
    # Every error carries the server's region, about a bucket or not.
    for fn in (lambda: c.get_object(Bucket=b, Key="missing"),
               lambda: c.get_object(Bucket=s.bucket_name("nosuch"), Key="k"),
               lambda: c.get_bucket_policy(Bucket=b)):
        try:
            fn()
            raise AssertionError("no error")
        except botocore.exceptions.ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "us-east-1"
            assert "Region" not in e.response["Error"], e.response["Error"]
    # A 304 is no error: no region header.
    etag = c.put_object(Bucket=b, Key="cond", Body=b"x")["ETag"]
    e = expect_error(lambda: c.get_object(Bucket=b, Key="cond", IfNoneMatch=etag), "304", 304)
    assert "x-amz-bucket-region" not in e["ResponseMetadata"]["HTTPHeaders"], e
    st, h, _ = signed(s, "HEAD", f"/{s.bucket_name('nosuch')}", "us-east-1")
    assert st == 404 and h.get("x-amz-bucket-region") == "us-east-1", (st, h)
    # SigV2 carries no region: served.
    st, _, body = sigv2(s, "PUT", f"/{b}/v2", b"sigv2 body")
    assert st == 200, (st, body)
    assert c.get_object(Bucket=b, Key="v2")["Body"].read() == b"sigv2 body"
    # ListBuckets names the region of each bucket, and filters by it.
    st, _, body = signed(s, "GET", "/?bucket-region=us-east-1&prefix=" + b, "us-east-1")
    root = ET.fromstring(body)
    assert [x.findtext(f"{NS}BucketRegion") for x in root.iter(f"{NS}Bucket")] == ["us-east-1"], body
    st, _, body = signed(s, "GET", "/?bucket-region=eu-west-1&prefix=" + b, "us-east-1")
    assert list(ET.fromstring(body).iter(f"{NS}Bucket")) == [], body


# ---- a daemon started with --region eu-west-1 --------------------------------------------------

def chunked_put(s, region, path, data, chunk=65536):
    """A STREAMING-AWS4-HMAC-SHA256-PAYLOAD PUT whose seed and chunk
    signatures use the scope of region."""
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    frame = lambda n, sig, p: f"{n:x};chunk-signature={sig}\r\n".encode() + p + b"\r\n"  # noqa: E731
    length = sum(len(frame(len(p), "0" * 64, p)) for p in pieces)
    req = AWSRequest(method="PUT", url=s.endpoint + path, headers={
        "X-Amz-Content-SHA256": mode, "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": str(len(data)), "Content-Length": str(length)})
    # SigV4Auth (not S3SigV4Auth) keeps the streaming x-amz-content-sha256.
    SigV4Auth(s.credentials(), "s3", region).add_auth(req)
    headers = dict(req.headers)
    amzdate = headers["X-Amz-Date"]
    seed = headers["Authorization"].rsplit("Signature=", 1)[1]
    date = amzdate[:8]
    k = ("AWS4" + s.sk).encode()
    for part in (date, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    scope = f"{date}/{region}/s3/aws4_request"
    empty = hashlib.sha256(b"").hexdigest()
    body, prev = b"", seed
    for p in pieces:
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amzdate, scope, prev, empty,
                         hashlib.sha256(p).hexdigest()])
        prev = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        body += frame(len(p), prev, p)
    return send(s, "PUT", s.endpoint + path, headers, body)


@test
def daemon_in_eu_west_1(_s):
    s = eu_daemon()
    c = client(s, "eu-west-1")
    b = s.bucket_name("eu")
    e = expect_error(lambda: c.create_bucket(Bucket=b), "IllegalLocationConstraintException", 400)
    assert e["Error"]["Message"] == ("The unspecified location constraint is incompatible for the "
                                     "region specific endpoint this request was sent to."), e
    for lc, code in (("us-east-1", "InvalidLocationConstraint"),
                     ("us-west-2", "IllegalLocationConstraintException")):
        expect_error(lambda: c.create_bucket(Bucket=b, CreateBucketConfiguration={
            "LocationConstraint": lc}), code, 400)
    expect_error(lambda: c.head_bucket(Bucket=b), "404", 404)
    c.create_bucket(Bucket=b, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    expect_error(lambda: c.create_bucket(Bucket=b, CreateBucketConfiguration={
        "LocationConstraint": "eu-west-1"}), "BucketAlreadyOwnedByYou", 409)
    legacy = s.bucket_name("eu-legacy")
    c.create_bucket(Bucket=legacy, CreateBucketConfiguration={"LocationConstraint": "EU"})
    for name in (b, legacy):
        assert c.get_bucket_location(Bucket=name)["LocationConstraint"] == "eu-west-1"
        h = c.head_bucket(Bucket=name)["ResponseMetadata"]["HTTPHeaders"]
        assert h["x-amz-bucket-region"] == "eu-west-1", h
    buckets = {x["Name"]: x for x in c.list_buckets()["Buckets"]}
    assert b in buckets and legacy in buckets, buckets
    st, _, body = signed(s, "GET", "/?bucket-region=eu-west-1&prefix=eu-", "eu-west-1")
    got = {x.findtext(f"{NS}Name"): x.findtext(f"{NS}BucketRegion")
           for x in ET.fromstring(body).iter(f"{NS}Bucket")}
    assert got == {b: "eu-west-1", legacy: "eu-west-1"}, body
    st, _, body = signed(s, "GET", "/?bucket-region=us-east-1", "eu-west-1")
    assert st == 200 and list(ET.fromstring(body).iter(f"{NS}Bucket")) == [], body
    # Objects: single PUT, ranged GET, multipart through the transfer manager.
    data = os.urandom(300_000)
    c.put_object(Bucket=b, Key="small", Body=data)
    g = c.get_object(Bucket=b, Key="small", Range="bytes=10-19")
    assert g["Body"].read() == data[10:20]
    big = os.urandom(11 * 1024 * 1024)
    path = os.path.join(s.tmp, "big.bin")
    with open(path, "wb") as f:
        f.write(big)
    tc = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * 1024 * 1024,
                                          multipart_chunksize=5 * 1024 * 1024)
    c.upload_file(path, b, "big", Config=tc)
    assert c.head_object(Bucket=b, Key="big")["ETag"].endswith('-3"')
    assert c.get_object(Bucket=b, Key="big")["Body"].read() == big
    # aws-chunked with chunk signatures in the eu-west-1 scope; the same
    # body signed for us-east-1 is refused before a byte is stored.
    st, h, body = chunked_put(s, "eu-west-1", f"/{b}/chunked", data)
    assert st == 200, (st, body)
    assert c.get_object(Bucket=b, Key="chunked")["Body"].read() == data
    st, h, body = chunked_put(s, "us-east-1", f"/{b}/chunked-east", data)
    wrong_region(st, h, body, "AuthorizationHeaderMalformed", head_msg("us-east-1", "eu-west-1"),
                 "eu-west-1")
    expect_error(lambda: c.head_object(Bucket=b, Key="chunked-east"), "404", 404)
    # Presigned URLs and POST forms signed for eu-west-1 work.
    url = c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "small"},
                                   ExpiresIn=300)
    st, _, got = send(s, "GET", url, {"Host": f"{s.host}:{s.port}"})
    assert (st, got) == (200, data), st
    p = c.generate_presigned_post(b, "form/${filename}", ExpiresIn=300)
    r = requests.post(p["url"], data=p["fields"], files={"file": ("f.txt", b"eu form")},
                      timeout=60)
    assert r.status_code == 204, (r.status_code, r.text)
    assert c.get_object(Bucket=b, Key="form/f.txt")["Body"].read() == b"eu form"
    # A client left at us-east-1: told eu-west-1, and redirected on a bucket.
    east = client(s, "us-east-1")
    seen = record_first_responses(east)
    e = expect_error(lambda: east.list_buckets(), "AuthorizationHeaderMalformed", 400)
    assert e["Error"]["Region"] == "eu-west-1", e["Error"]
    assert e["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "eu-west-1"
    del seen[:]
    assert east.get_object(Bucket=b, Key="small")["Body"].read() == data
    assert [x[0] for x in seen] == [400, 200], seen
    assert seen[0][1].get("Region") == "eu-west-1", seen[0]
    url = east.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "small"},
                                      ExpiresIn=300)
    st, h, body = send(s, "GET", url, {"Host": f"{s.host}:{s.port}"})
    wrong_region(st, h, body, "AuthorizationQueryParametersError",
                 query_msg("us-east-1", "eu-west-1"), "eu-west-1")
    # SigV2 has no region.
    st, _, body = sigv2(s, "GET", f"/{b}/small")
    assert (st, body) == (200, data), st


def aws(s, region, *args):
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "AWS_ACCESS_KEY_ID": s.ak,
           "AWS_SECRET_ACCESS_KEY": s.sk, "AWS_DEFAULT_REGION": region,
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent",
           "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "NO_PROXY": "127.0.0.1"}
    return subprocess.run(["/usr/bin/aws", "--endpoint-url", s.endpoint, *args], env=env,
                          capture_output=True, text=True, timeout=120)


@test
def awscli_in_eu_west_1(_s):
    s = eu_daemon()
    b = s.bucket_name("eucli")
    p = aws(s, "eu-west-1", "s3", "mb", f"s3://{b}")  # sends LocationConstraint=eu-west-1
    assert p.returncode == 0, p.stderr
    src = os.path.join(s.tmp, "cli.bin")
    data = os.urandom(9 * 1024 * 1024 + 17)
    with open(src, "wb") as f:
        f.write(data)
    p = aws(s, "eu-west-1", "s3", "cp", src, f"s3://{b}/cli.bin")
    assert p.returncode == 0, p.stderr
    p = aws(s, "eu-west-1", "s3api", "get-bucket-location", "--bucket", b)
    assert p.returncode == 0 and json.loads(p.stdout)["LocationConstraint"] == "eu-west-1", p
    dst = os.path.join(s.tmp, "cli.out")
    p = aws(s, "eu-west-1", "s3", "cp", f"s3://{b}/cli.bin", dst)
    assert p.returncode == 0, p.stderr
    assert open(dst, "rb").read() == data
    p = aws(s, "us-east-1", "s3api", "list-buckets")
    assert p.returncode != 0 and "AuthorizationHeaderMalformed" in p.stderr, p
    assert "expecting 'eu-west-1'" in p.stderr, p.stderr


@test
def region_option_and_config_file(s):
    binary = os.environ["STRATA_BIN"]
    d = tempfile.mkdtemp(prefix="region-conf.", dir=s.tmp)
    conf = os.path.join(d, "strata.json")
    with open(conf, "w") as f:
        json.dump({"region": "eu-central-1"}, f)
    env = {"PATH": "/usr/bin:/bin", "STRATA_ROOT_USER": "AKREGION", "STRATA_ROOT_PASSWORD":
           "region-secret-1234"}
    drives = [os.path.join(d, f"d{i}") for i in range(4)]
    out = subprocess.run([binary, "server", "--print-config"] + drives, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["region"] == "us-east-1", out
    out = subprocess.run([binary, "server", "--config", conf, "--print-config"] + drives, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["region"] == "eu-central-1", out
    out = subprocess.run([binary, "server", "--config", conf, "--region", "ap-south-1",
                          "--print-config"] + drives, env=env, capture_output=True, text=True,
                         timeout=60)
    assert json.loads(out.stdout)["region"] == "ap-south-1", out  # the flag wins
    for bad in ("us_east_1", "", "-x", "a" * 32, "eu west"):
        out = subprocess.run([binary, "server", "--region", bad, "--print-config"] + drives,
                             env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "--region" in out.stderr, (bad, out)
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    assert "--region NAME" in out.stdout, out.stdout
    st, admin = s.admin_get("config")
    assert st == 200 and admin["region"] == "us-east-1", admin


@test
def admin_cli_region(_s):
    # strata admin signs for --region / $STRATA_REGION; the default
    # us-east-1 is refused by an eu-west-1 server with AWS's message.
    s = eu_daemon()
    env = {"PATH": "/usr/bin:/bin", "STRATA_ENDPOINT": s.endpoint, "STRATA_ACCESS_KEY": s.ak,
           "STRATA_SECRET_KEY": s.sk}
    cmd = [os.environ["STRATA_BIN"], "admin", "--json", "config"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p
    assert "the region 'us-east-1' is wrong; expecting 'eu-west-1'" in p.stdout + p.stderr, p
    p = subprocess.run(cmd[:2] + ["--region", "eu-west-1"] + cmd[2:], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["region"] == "eu-west-1", p
    p = subprocess.run(cmd, env=dict(env, STRATA_REGION="eu-west-1"), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["region"] == "eu-west-1", p


@test
def eu_daemon_stops_cleanly(_s):
    # SIGTERM, exit 0, no sanitizer report in its log.
    assert "s" in EU and EU["s"].stop(), "the eu-west-1 daemon did not stop cleanly"


if __name__ == "__main__":
    run(Strata())
