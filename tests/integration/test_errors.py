#!/usr/bin/python3
"""test_errors.py - raw HTTP (http.client) with a hand-made SigV4 signer,
for the requests real SDKs never send: wrong secret, unknown key, skewed
clock, expired presign, tampered aws-chunked signatures, bad Content-MD5,
x-amz-content-sha256 mismatch (also on a body of several stripes, next to
its good ETag and checksum), malformed XML, bad ranges, missing
bucket/key, unimplemented subresources, STREAMING-UNSIGNED-PAYLOAD-TRAILER
with good and bad x-amz-checksum-crc32 trailers.

Every response must carry x-amz-request-id, and every error body must be
S3's <Error> with Code, a non-empty Message and the same RequestId; the
request helper checks that for every request, so each test checks it too.
The signer is cross-checked against botocore's before anything else runs.
Run by CTest (integration label).
"""

import base64
import datetime
import hashlib
import hmac
import http.client
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import REGION, Strata, run, test  # noqa: E402

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def sha256_hex(b):
    return hashlib.sha256(b).hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def quote(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def signing_key(sk, date):
    k = _hmac(("AWS4" + sk).encode(), date)
    k = _hmac(k, REGION)
    k = _hmac(k, "s3")
    return _hmac(k, "aws4_request")


def canonical_query(query):
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(query))


def sigv4(method, path, query, headers, payload_hash, ak, sk, amzdate):
    """Return (authorization, signature) for S3 SigV4 (path already %-encoded)."""
    date = amzdate[:8]
    names = sorted(k.lower() for k in headers)
    lower = {k.lower(): " ".join(str(v).strip().split()) for k, v in headers.items()}
    canon_headers = "".join(f"{n}:{lower[n]}\n" for n in names)
    signed = ";".join(names)
    creq = "\n".join([method, path, canonical_query(query), canon_headers, signed, payload_hash])
    scope = f"{date}/{REGION}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, sha256_hex(creq.encode())])
    sig = hmac.new(signing_key(sk, date), sts.encode(), hashlib.sha256).hexdigest()
    auth = f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, SignedHeaders={signed}, Signature={sig}"
    return auth, sig


def amz_now(delta_s=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=delta_s)
    return t.strftime("%Y%m%dT%H%M%SZ")


class Resp:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def code(self):
        try:
            return ET.fromstring(self.body).findtext("Code")
        except ET.ParseError:
            return None

    def __repr__(self):
        return f"<HTTP {self.status} {dict(self.headers)} {self.body[:400]!r}>"


class Client:
    def __init__(self, s):
        self.s = s
        self.host = f"{s.host}:{s.port}"

    def raw(self, method, target, headers, body=b""):
        """Send exactly this request; check the invariants every response must hold."""
        conn = http.client.HTTPConnection(self.s.host, self.s.port, timeout=60)
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            if body:
                conn.send(body)
            r = conn.getresponse()
            data = r.read()
            resp = Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        finally:
            conn.close()
        rid = resp.headers.get("x-amz-request-id")
        assert rid, f"{method} {target}: no x-amz-request-id in {resp}"
        if resp.status >= 400 and method != "HEAD":
            try:
                root = ET.fromstring(data)
            except ET.ParseError as e:
                raise AssertionError(f"{method} {target}: error body is not XML ({e}): {resp}")
            assert root.tag == "Error", f"error root is {root.tag}: {resp}"
            assert root.findtext("Code"), f"no Code: {resp}"
            assert (root.findtext("Message") or "").strip(), f"empty Message: {resp}"
            assert root.findtext("RequestId") == rid, f"RequestId {root.findtext('RequestId')} != header {rid}"
            ct = resp.headers.get("content-type", "")
            assert "xml" in ct, f"error Content-Type {ct!r}"
        return resp

    def req(self, method, path, query=(), headers=None, body=b"", ak=None, sk=None,
            amzdate=None, payload_hash=None, sign=True, raw_query=None):
        """A SigV4-signed request; path is %-encoded already.  raw_query, if
        given, is sent verbatim instead of the canonical form of query (which
        is still what gets signed), e.g. "acl" where SDKs omit the '='."""
        h = {"Host": self.host}
        h.update(headers or {})
        if body or method in ("PUT", "POST"):
            h.setdefault("Content-Length", str(len(body)))
        if sign:
            amzdate = amzdate or amz_now()
            ph = payload_hash or sha256_hex(body)
            h["x-amz-date"] = amzdate
            h["x-amz-content-sha256"] = ph
            h["Authorization"], _ = sigv4(method, path, list(query), h, ph, ak or self.s.ak,
                                          sk or self.s.sk, amzdate)
        target = path + ("?" + canonical_query(list(query)) if query else "")
        if raw_query is not None:
            target = path + "?" + raw_query
        return self.raw(method, target, h, body)


def expect(resp, status, code=None):
    assert resp.status == status, f"expected {status} {code or ''}, got {resp}"
    if code is not None:
        assert resp.code() == code, f"expected {code}, got {resp.code()}: {resp}"


_STATE = {}


def bucket(s):
    """One bucket for this file, created with the hand-made signer."""
    if "b" not in _STATE:
        c = Client(s)
        b = s.bucket_name("err")
        expect(c.req("PUT", f"/{b}"), 200)
        _STATE.update(c=c, b=b)
    return _STATE["c"], _STATE["b"]


# ---- the signer itself ----------------------------------------------------------

@test
def signer_matches_botocore(s):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    amzdate = "20240102T030405Z"
    body = b"hello"
    url = f"http://{s.host}:{s.port}/bkt/some%20key/x%2By?uploads=&z=1%202&a=b"
    req = AWSRequest(method="PUT", url=url, data=body,
                     headers={"x-amz-meta-foo": "  bar   baz ", "Content-Type": "text/plain"})
    # What S3SigV4Auth.add_auth does, with a fixed timestamp.
    auth = S3SigV4Auth(s.credentials(), "s3", REGION)
    req.context["timestamp"] = amzdate
    auth._modify_request_before_signing(req)
    canonical = auth.canonical_request(req)
    theirs = auth.signature(auth.string_to_sign(req, canonical), req)
    hdrs = {"Host": f"{s.host}:{s.port}", "x-amz-meta-foo": "  bar   baz ", "Content-Type": "text/plain",
            "x-amz-date": amzdate, "x-amz-content-sha256": sha256_hex(body)}
    _, ours = sigv4("PUT", "/bkt/some%20key/x%2By", [("uploads", ""), ("z", "1 2"), ("a", "b")], hdrs,
                    sha256_hex(body), s.ak, s.sk, amzdate)
    assert ours == theirs, f"hand signer {ours} != botocore {theirs}\n{canonical}"


@test
def signer_matches_aws_examples(s):
    # AWS's published SigV4 examples (GET with Range; aws-chunked PUT of
    # 64 KiB + 1 KiB of 'a'), so a failure below is the daemon's, not ours.
    sk = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    d = "20130524T000000Z"
    h = {"Host": "examplebucket.s3.amazonaws.com", "Range": "bytes=0-9",
         "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": d}
    _, sig = sigv4("GET", "/test.txt", [], h, EMPTY_SHA256, "AKIAIOSFODNN7EXAMPLE", sk, d)
    assert sig == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41", sig
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    h = {"Host": "s3.amazonaws.com", "x-amz-date": d, "x-amz-storage-class": "REDUCED_REDUNDANCY",
         "x-amz-content-sha256": mode, "Content-Encoding": "aws-chunked",
         "x-amz-decoded-content-length": "66560", "Content-Length": "66824"}
    _, prev = sigv4("PUT", "/examplebucket/chunkObject.txt", [], h, mode, "AKIAIOSFODNN7EXAMPLE", sk, d)
    assert prev == "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", prev
    want = ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"]
    for p, w in zip((b"a" * 65536, b"a" * 1024, b""), want):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", d, f"{d[:8]}/us-east-1/s3/aws4_request", prev,
                         EMPTY_SHA256, sha256_hex(p)])
        prev = hmac.new(signing_key(sk, d[:8]), sts.encode(), hashlib.sha256).hexdigest()
        assert prev == w, (prev, w)


# ---- authentication failures ----------------------------------------------------

@test
def good_signature_and_unsigned_payload(s):
    c, b = bucket(s)
    expect(c.req("PUT", f"/{b}/plain", body=b"signed body"), 200)
    r = c.req("GET", f"/{b}/plain")
    expect(r, 200)
    assert r.body == b"signed body"
    expect(c.req("PUT", f"/{b}/unsigned", body=b"unsigned body", payload_hash="UNSIGNED-PAYLOAD"), 200)
    assert c.req("GET", f"/{b}/unsigned").body == b"unsigned body"


@test
def wrong_secret(s):
    c, b = bucket(s)
    expect(c.req("GET", "/", sk=s.sk + "x"), 403, "SignatureDoesNotMatch")
    expect(c.req("PUT", f"/{b}/ws", body=b"nope", sk="wrong"), 403, "SignatureDoesNotMatch")
    expect(c.req("GET", f"/{b}/ws"), 404, "NoSuchKey")


@test
def unknown_access_key(s):
    c, _ = bucket(s)
    expect(c.req("GET", "/", ak="AKIDOESNOTEXIST0000"), 403, "InvalidAccessKeyId")


@test
def anonymous_is_denied(s):
    c, b = bucket(s)
    expect(c.req("GET", "/", sign=False), 403, "AccessDenied")
    expect(c.req("GET", f"/{b}/plain", sign=False), 403, "AccessDenied")


@test
def clock_skew(s):
    c, _ = bucket(s)
    expect(c.req("GET", "/", amzdate=amz_now(-20 * 60)), 403, "RequestTimeTooSkewed")
    expect(c.req("GET", "/", amzdate=amz_now(+20 * 60)), 403, "RequestTimeTooSkewed")
    expect(c.req("GET", "/", amzdate=amz_now(-5 * 60)), 200)


def presign(s, method, path, amzdate, expires):
    scope = f"{amzdate[:8]}/{REGION}/s3/aws4_request"
    q = [("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", f"{s.ak}/{scope}"),
         ("X-Amz-Date", amzdate), ("X-Amz-Expires", str(expires)), ("X-Amz-SignedHeaders", "host")]
    creq = "\n".join([method, path, canonical_query(q), f"host:{s.host}:{s.port}\n", "host",
                      "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, sha256_hex(creq.encode())])
    sig = hmac.new(signing_key(s.sk, amzdate[:8]), sts.encode(), hashlib.sha256).hexdigest()
    return path + "?" + canonical_query(q + [("X-Amz-Signature", sig)])


@test
def presigned_expiry(s):
    c, b = bucket(s)
    expect(c.req("PUT", f"/{b}/pre", body=b"presigned"), 200)
    host = {"Host": c.host}
    r = c.raw("GET", presign(s, "GET", f"/{b}/pre", amz_now(-30), 300), host)
    expect(r, 200)
    assert r.body == b"presigned"
    # Signed 120 s ago, valid for 60 s: expired.
    expect(c.raw("GET", presign(s, "GET", f"/{b}/pre", amz_now(-120), 60), host), 403, "AccessDenied")
    # X-Amz-Expires over 7 days, or under AWS's minimum of 1 s, is refused.
    for bad in (604801, 0):
        r = c.raw("GET", presign(s, "GET", f"/{b}/pre", amz_now(), bad), host)
        expect(r, 400, "AuthorizationQueryParametersError")
    expect(c.raw("GET", presign(s, "GET", f"/{b}/pre", amz_now(), 1), host), 200)
    expect(c.raw("GET", presign(s, "GET", f"/{b}/pre", amz_now(), 604800), host), 200)


# ---- aws-chunked with chunk signatures -------------------------------------------

def aws_chunked(s, path, data, amzdate, chunk=65536, tamper=None):
    """Headers and body of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD PUT.
    tamper: None, "sig" (corrupt chunk 2's signature) or "data" (flip a byte of chunk 2)."""
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]

    def frame(n, sig, payload):
        return f"{n:x};chunk-signature={sig}\r\n".encode() + payload + b"\r\n"

    # Content-Length covers the framing; compute it from dummy signatures of the same length.
    length = sum(len(frame(len(p), "0" * 64, p)) for p in pieces)
    h = {"Host": f"{s.host}:{s.port}", "x-amz-date": amzdate, "x-amz-content-sha256": mode,
         "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
         "Content-Length": str(length)}
    auth, prev = sigv4("PUT", path, [], h, mode, s.ak, s.sk, amzdate)
    h["Authorization"] = auth
    key = signing_key(s.sk, amzdate[:8])
    scope = f"{amzdate[:8]}/{REGION}/s3/aws4_request"
    body = b""
    for i, p in enumerate(pieces):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amzdate, scope, prev, EMPTY_SHA256, sha256_hex(p)])
        sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        prev = sig
        if i == 1 and tamper == "sig":
            sig = ("0" if sig[0] != "0" else "1") + sig[1:]
        if i == 1 and tamper == "data":
            p = bytes([p[0] ^ 0xFF]) + p[1:]
        body += frame(len(p), sig, p)
    assert len(body) == length
    return h, body


@test
def chunked_signed_upload(s):
    c, b = bucket(s)
    data = os.urandom(150_000)
    path = f"/{b}/chunked-good"
    h, body = aws_chunked(s, path, data, amz_now())
    r = c.raw("PUT", path, h, body)
    expect(r, 200)
    assert r.headers.get("etag") == f'"{hashlib.md5(data).hexdigest()}"', r
    g = c.req("GET", path)
    assert g.body == data, "aws-chunked upload stored different bytes"
    assert g.headers.get("content-encoding", "") in ("", "identity"), "aws-chunked leaked into Content-Encoding"


@test
def chunked_tampered_signature(s):
    c, b = bucket(s)
    data = os.urandom(150_000)
    for how in ("sig", "data"):
        path = f"/{b}/chunked-bad-{how}"
        h, body = aws_chunked(s, path, data, amz_now(), tamper=how)
        expect(c.raw("PUT", path, h, body), 403, "SignatureDoesNotMatch")
        expect(c.req("HEAD", path), 404)
    # A tampered upload over an existing object leaves the old one.
    path = f"/{b}/chunked-keep"
    expect(c.req("PUT", path, body=b"original"), 200)
    h, body = aws_chunked(s, path, data, amz_now(), tamper="sig")
    expect(c.raw("PUT", path, h, body), 403, "SignatureDoesNotMatch")
    assert c.req("GET", path).body == b"original"


# ---- streaming unsigned payload with a checksum trailer ----------------------------

def unsigned_trailer(s, path, data, crc_b64, chunk=65536):
    mode = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    body = b""
    for i in range(0, len(data), chunk):
        p = data[i:i + chunk]
        body += f"{len(p):x}\r\n".encode() + p + b"\r\n"
    body += b"0\r\n" + f"x-amz-checksum-crc32:{crc_b64}\r\n".encode() + b"\r\n"
    amzdate = amz_now()
    h = {"Host": f"{s.host}:{s.port}", "x-amz-date": amzdate, "x-amz-content-sha256": mode,
         "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
         "x-amz-trailer": "x-amz-checksum-crc32", "x-amz-sdk-checksum-algorithm": "CRC32",
         "Content-Length": str(len(body))}
    h["Authorization"], _ = sigv4("PUT", path, [], h, mode, s.ak, s.sk, amzdate)
    return h, body


@test
def streaming_unsigned_trailer(s):
    c, b = bucket(s)
    data = os.urandom(200_000)
    good = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    path = f"/{b}/trailer-good"
    h, body = unsigned_trailer(s, path, data, good)
    r = c.raw("PUT", path, h, body)
    expect(r, 200)
    assert r.headers.get("x-amz-checksum-crc32") == good, f"PUT answer checksum: {r}"
    g = c.req("GET", path)
    assert g.body == data, "trailer upload stored different bytes"
    hd = c.req("HEAD", path, headers={"x-amz-checksum-mode": "ENABLED"})
    assert hd.headers.get("x-amz-checksum-crc32") == good, f"HEAD checksum: {hd}"
    bad = base64.b64encode((zlib.crc32(data) ^ 1).to_bytes(4, "big")).decode()
    path = f"/{b}/trailer-bad"
    h, body = unsigned_trailer(s, path, data, bad)
    expect(c.raw("PUT", path, h, body), 400, "BadDigest")
    expect(c.req("HEAD", path), 404)


# ---- body digests ---------------------------------------------------------------------

@test
def bad_content_md5(s):
    c, b = bucket(s)
    path = f"/{b}/md5"
    orig = b"the original bytes"
    md5 = base64.b64encode(hashlib.md5(orig).digest()).decode()
    expect(c.req("PUT", path, body=orig, headers={"Content-MD5": md5}), 200)
    expect(c.req("PUT", path, body=b"replacement", headers={"Content-MD5": md5}), 400, "BadDigest")
    assert c.req("GET", path).body == orig, "object changed after BadDigest"
    expect(c.req("PUT", path, body=b"replacement", headers={"Content-MD5": "not-base64!"}), 400, "InvalidDigest")
    assert c.req("GET", path).body == orig, "object changed after InvalidDigest"


@test
def content_sha256_mismatch(s):
    c, b = bucket(s)
    path = f"/{b}/sha"
    expect(c.req("PUT", path, body=b"kept"), 200)
    r = c.req("PUT", path, body=b"sent body", payload_hash=sha256_hex(b"another body"))
    expect(r, 400, "XAmzContentSHA256Mismatch")
    assert c.req("GET", path).body == b"kept", "object changed after XAmzContentSHA256Mismatch"
    expect(c.req("PUT", f"/{b}/sha-new", body=b"x", payload_hash=sha256_hex(b"y")), 400,
           "XAmzContentSHA256Mismatch")
    expect(c.req("HEAD", f"/{b}/sha-new"), 404)


@test
def large_signed_put_digests(s):
    # Several erasure stripes and body blocks: the digests see every byte,
    # the last one included (a body that differs only there is refused).
    c, b = bucket(s)
    path = f"/{b}/big"
    body = os.urandom((5 << 20) + 123)
    other = body[:-1] + bytes([body[-1] ^ 1])
    expect(c.req("PUT", path, body=b"kept"), 200)
    expect(c.req("PUT", path, body=body, payload_hash=sha256_hex(other)), 400,
           "XAmzContentSHA256Mismatch")
    assert c.req("GET", path).body == b"kept", "object changed after XAmzContentSHA256Mismatch"
    expect(c.req("PUT", f"/{b}/big-new", body=body, payload_hash=sha256_hex(other)), 400,
           "XAmzContentSHA256Mismatch")
    expect(c.req("HEAD", f"/{b}/big-new"), 404)
    md5 = hashlib.md5(body).digest()
    # A Content-MD5 of other bytes (the last one differs): BadDigest, also
    # for a body that ends one byte past two full body blocks and stripes.
    for p, data in ((path, body), (f"/{b}/big-md5", os.urandom((4 << 20) + 1))):
        bad = base64.b64encode(hashlib.md5(data[:-1] + bytes([data[-1] ^ 1])).digest()).decode()
        expect(c.req("PUT", p, body=data, headers={"Content-MD5": bad}), 400, "BadDigest")
    assert c.req("GET", path).body == b"kept", "object changed after BadDigest"
    expect(c.req("HEAD", f"/{b}/big-md5"), 404)
    crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    r = c.req("PUT", path, body=body, headers={"Content-MD5": base64.b64encode(md5).decode(),
                                               "x-amz-checksum-crc32": crc})
    expect(r, 200)
    assert r.headers["etag"] == f'"{md5.hex()}"', r.headers
    assert r.headers["x-amz-checksum-crc32"] == crc, r.headers
    g = c.req("GET", path)
    expect(g, 200)
    assert g.body == body, "bytes differ"
    assert g.headers["etag"] == f'"{md5.hex()}"', g.headers


# ---- request errors ---------------------------------------------------------------------

@test
def malformed_delete_xml(s):
    c, b = bucket(s)
    expect(c.req("PUT", f"/{b}/survivor", body=b"s"), 200)
    for xml in (b"<Delete><Object><Key>survivor</Key></Object>",  # truncated
                b"this is not xml", b"<Delete></Wrong>"):
        md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
        r = c.req("POST", f"/{b}", query=[("delete", "")], body=xml, headers={"Content-MD5": md5})
        expect(r, 400, "MalformedXML")
    assert c.req("GET", f"/{b}/survivor").body == b"s"
    xml = b"<Delete><Object><Key>survivor</Key></Object></Delete>"
    md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
    r = c.req("POST", f"/{b}", query=[("delete", "")], body=xml, headers={"Content-MD5": md5})
    expect(r, 200)
    assert b"<Key>survivor</Key>" in r.body, r
    expect(c.req("GET", f"/{b}/survivor"), 404, "NoSuchKey")


DOCTYPE = (b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE x [<!ENTITY a "aaaaaaaa">'
           b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>')


@test
def doctype_bodies_refused(s):
    # S3 never sends a DOCTYPE; every XML body parser refuses one
    # (MalformedXML) and nothing changes.  The same bodies without it work.
    c, b = bucket(s)
    expect(c.req("PUT", f"/{b}/dt", body=b"kept"), 200)

    def post_delete(xml):
        md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
        return c.req("POST", f"/{b}", query=[("delete", "")], body=xml, headers={"Content-MD5": md5})

    expect(post_delete(DOCTYPE + b"<Delete><Object><Key>&b;</Key></Object><Object><Key>dt</Key></Object></Delete>"),
           400, "MalformedXML")
    expect(post_delete(b'<!DOCTYPE Delete SYSTEM "file:///etc/passwd"><Delete><Object><Key>dt</Key></Object></Delete>'),
           400, "MalformedXML")
    assert c.req("GET", f"/{b}/dt").body == b"kept"
    vers = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"
    vb = s.bucket_name("errdt")
    expect(c.req("PUT", f"/{vb}"), 200)
    expect(c.req("PUT", f"/{vb}", query=[("versioning", "")], body=DOCTYPE + vers), 400, "MalformedXML")
    r = c.req("GET", f"/{vb}", query=[("versioning", "")])
    assert b"<Status>" not in r.body, r
    tags = b"<Tagging><TagSet><Tag><Key>k</Key><Value>&b;</Value></Tag></TagSet></Tagging>"
    expect(c.req("PUT", f"/{b}/dt", query=[("tagging", "")], body=DOCTYPE + tags), 400, "MalformedXML")
    cfg = b"<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>"
    nb = s.bucket_name("errdt2")
    expect(c.req("PUT", f"/{nb}", body=DOCTYPE + cfg), 400, "MalformedXML")
    expect(c.req("HEAD", f"/{nb}"), 404)
    r = c.req("POST", f"/{b}/mp", query=[("uploads", "")])
    expect(r, 200)
    uid = ET.fromstring(r.body).findtext("{http://s3.amazonaws.com/doc/2006-03-01/}UploadId")
    r = c.req("PUT", f"/{b}/mp", query=[("partNumber", "1"), ("uploadId", uid)], body=b"part")
    etag = r.headers["etag"]
    done = f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part>" \
           "</CompleteMultipartUpload>"
    expect(c.req("POST", f"/{b}/mp", query=[("uploadId", uid)], body=DOCTYPE + done.encode()), 400, "MalformedXML")
    expect(c.req("HEAD", f"/{b}/mp"), 404)
    # The same documents without the DOCTYPE are fine.
    expect(c.req("PUT", f"/{vb}", query=[("versioning", "")], body=vers), 200)
    expect(c.req("POST", f"/{b}/mp", query=[("uploadId", uid)], body=done.encode()), 200)
    assert c.req("GET", f"/{b}/mp").body == b"part"
    expect(post_delete(b"<Delete><Object><Key>dt</Key></Object></Delete>"), 200)
    expect(c.req("GET", f"/{b}/dt"), 404, "NoSuchKey")


@test
def host_id_is_opaque(s):
    # x-amz-id-2 and the error body's HostId: one opaque token, never
    # host facts such as the daemon's PID.
    c, b = bucket(s)
    ok = c.req("GET", "/")
    err = c.req("GET", f"/{b}/no-such-key-for-host-id")
    expect(err, 404, "NoSuchKey")
    hid = ok.headers.get("x-amz-id-2")
    assert hid and err.headers.get("x-amz-id-2") == hid, (ok, err)
    assert ET.fromstring(err.body).findtext("HostId") == hid, err
    assert "strata" not in hid.lower(), hid
    if s.proc is not None:
        assert str(s.proc.pid) not in hid, f"x-amz-id-2 {hid} carries the PID {s.proc.pid}"
    raw = base64.b64decode(hid, validate=True)
    assert len(raw) >= 16, hid


@test
def invalid_range(s):
    c, b = bucket(s)
    expect(c.req("PUT", f"/{b}/ten", body=b"0123456789"), 200)
    expect(c.req("GET", f"/{b}/ten", headers={"Range": "bytes=10-20"}), 416, "InvalidRange")
    expect(c.req("GET", f"/{b}/ten", headers={"Range": "bytes=100-"}), 416, "InvalidRange")
    r = c.req("GET", f"/{b}/ten", headers={"Range": "bytes=2-4"})
    expect(r, 206)
    assert r.body == b"234" and r.headers.get("content-range") == "bytes 2-4/10", r
    # Syntactically invalid ranges are ignored by S3 (whole object, 200).
    r = c.req("GET", f"/{b}/ten", headers={"Range": "bytes=abc"})
    expect(r, 200)
    assert r.body == b"0123456789"


@test
def missing_bucket_and_key(s):
    c, b = bucket(s)
    nb = f"/{b}-nope"
    for method, path in (("GET", nb), ("GET", nb + "/k"), ("PUT", nb + "/k"), ("DELETE", nb)):
        r = c.req(method, path, body=b"x" if method == "PUT" else b"")
        expect(r, 404, "NoSuchBucket")
    r = c.req("GET", f"/{b}/no/such/key")
    expect(r, 404, "NoSuchKey")
    root = ET.fromstring(r.body)
    assert root.findtext("Key") in (None, "no/such/key"), r
    r = c.req("HEAD", f"/{b}/no/such/key")
    expect(r, 404)
    assert r.body == b"", "HEAD answered with a body"


@test
def unimplemented_subresources(s):
    c, b = bucket(s)
    expect(c.req("PUT", f"/{b}/obj", body=b"o"), 200)
    for path, sub in ((f"/{b}", "inventory"), (f"/{b}", "analytics"), (f"/{b}/obj", "torrent")):
        r = c.req("GET", path, query=[(sub, "")])
        expect(r, 501, "NotImplemented")


@test
def subresource_without_equals(s):
    # SDKs and s3cmd send "?delete", "?acl", "?policy" without '='; the
    # canonical query still has "acl=".  The daemon must parse both forms.
    c, b = bucket(s)
    expect(c.req("PUT", f"/{b}/sub", body=b"s"), 200)
    xml = b"<Delete><Object><Key>sub</Key></Object></Delete>"
    md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
    r = c.req("POST", f"/{b}", query=[("delete", "")], raw_query="delete", body=xml,
              headers={"Content-MD5": md5})
    expect(r, 200)
    expect(c.req("GET", f"/{b}/sub"), 404, "NoSuchKey")
    # Each bare subresource is that operation, exactly as with '=': the
    # same status and the same document, never the ListObjects a lost
    # subresource would fall through to.  ?policy of a bucket without one
    # is AWS's NoSuchBucketPolicy.
    ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
    for sub in ("acl", "location", "versioning", "policy"):
        bare = c.req("GET", f"/{b}", query=[(sub, "")], raw_query=sub)
        full = c.req("GET", f"/{b}", query=[(sub, "")], raw_query=sub + "=")
        if sub == "policy":
            expect(bare, 404, "NoSuchBucketPolicy")
            expect(full, 404, "NoSuchBucketPolicy")
            continue
        expect(bare, 200)
        expect(full, 200)
        assert bare.body == full.body, f"?{sub} and ?{sub}= differ: {bare} {full}"
        root = ET.fromstring(bare.body)
        if sub == "acl":
            assert root.tag == ns + "AccessControlPolicy", bare
            assert root.findtext(f"{ns}Owner/{ns}ID") == s.ak, bare
            grants = root.findall(f"{ns}AccessControlList/{ns}Grant")
            assert [g.findtext(f"{ns}Permission") for g in grants] == ["FULL_CONTROL"], bare
        elif sub == "location":
            # us-east-1 is the empty constraint, as AWS answers.
            assert root.tag == ns + "LocationConstraint" and not (root.text or ""), bare
        else:
            # Never versioned: no Status at all.
            assert root.tag == ns + "VersioningConfiguration" and len(root) == 0, bare
    # Several valueless keys and an empty value together.
    r = c.req("GET", f"/{b}", query=[("list-type", "2"), ("prefix", ""), ("fetch-owner", "")],
              raw_query="list-type=2&prefix&fetch-owner")
    expect(r, 200)


@test
def request_id_everywhere(s):
    # The raw() helper asserts the header on every response; here also on
    # the health endpoint and a few successful shapes.
    c, b = bucket(s)
    for r in (c.req("GET", "/"), c.req("HEAD", f"/{b}"), c.req("GET", f"/{b}", query=[("list-type", "2")]),
              c.raw("GET", "/health/ready", {"Host": c.host})):
        assert r.status in (200,), r
    ids = {c.req("GET", "/").headers["x-amz-request-id"] for _ in range(5)}
    assert len(ids) == 5, f"request ids repeat: {ids}"


if __name__ == "__main__":
    run(Strata())
