#!/usr/bin/python3
"""test_mpu_retry.py - CompleteMultipartUpload retries and the SSE headers
of the multipart operations, through boto3 against a live strata.

Retries (issue 20, item 1): a loopback proxy between boto3 and the daemon
forwards every request but closes the client's connection instead of
relaying the answer to the first Complete, so boto3 retries the Complete
by itself (as when a response is lost): the call must succeed with the
multipart ETag and version id of the object the first attempt made, and
the object must hold the uploaded bytes - for the low-level
complete_multipart_upload and for the transfer manager (upload_fileobj).
A plain repeat of the Complete answers the same ETag, version id and
checksum; another part list, an abort, UploadPart and ListParts answer
404 NoSuchUpload (AWS: "The upload ID might be invalid, or the multipart
upload might have been aborted or completed"); no version is added.  With
--mpu-retry-seconds 2 the repeat answers NoSuchUpload after the window.

SSE (item 2): CompleteMultipartUpload takes the SSE-C customer key headers
(boto3's transfer manager sends them since s3transfer 0.7): the upload's
key completes (also through a retry), another key is 403 AccessDenied, a
key on an upload without SSE-C 400 InvalidRequest, a bad key MD5 400
InvalidArgument, no key at all still completes.  x-amz-server-side-
encryption(-aws-kms-key-id, -context) on UploadPart, UploadPartCopy and
CompleteMultipartUpload answer AWS's 400 InvalidArgument "... header is not
supported for this operation." with ArgumentName/ArgumentValue.
Run by CTest (integration label) with /usr/bin/python3.
"""

import base64
import hashlib
import io
import os
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import (Strata, expect_error, log, md5_hex, new_bucket, run,  # noqa: E402
                            test)

import boto3  # noqa: E402
from boto3.s3.transfer import TransferConfig  # noqa: E402
from botocore.config import Config  # noqa: E402

MiB = 1024 * 1024
# The daemon's part minimum is AWS's 5 MiB.
PART = 5 * MiB


def mp_etag(parts):
    cat = b"".join(hashlib.md5(p).digest() for p in parts)
    return f'"{hashlib.md5(cat).hexdigest()}-{len(parts)}"'


def blob(n, seed):
    out = bytearray()
    x = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        x = hashlib.sha256(x).digest()
        out += x * 64
    return bytes(out[:n])


# ---- the dropping proxy ------------------------------------------------------

def recv_until(sock, buf, marker):
    while marker not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return buf, False
        buf += chunk
    return buf, True


class DropProxy:
    """127.0.0.1 proxy to the daemon, one request per client connection
    (answers carry "Connection: close").  The first `drops` requests for
    which want(method, target) is true reach the daemon, but their answer is
    read and thrown away and the client's connection closed without a byte:
    a lost response."""

    def __init__(self, upstream_port, want, drops=1):
        self.upstream = ("127.0.0.1", upstream_port)
        self.want = want
        self.drops = drops
        self.seen = []  # (method, target, status, dropped)
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self):
        self.stopping = True
        self.sock.close()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            self._one(c)
        except OSError:
            pass
        finally:
            c.close()

    def _one(self, c):
        buf, ok = recv_until(c, b"", b"\r\n\r\n")
        if not ok:
            return
        head, body = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        hdrs = []
        length = 0
        expect = False
        for ln in lines[1:]:
            name, value = ln.split(":", 1)
            n = name.strip().lower()
            if n == "content-length":
                length = int(value.strip())
            if n == "transfer-encoding":
                raise AssertionError("the proxy handles Content-Length bodies only")
            if n == "expect":
                expect = True
                continue  # answered here: the daemon gets the whole request at once
            if n == "connection":
                continue
            hdrs.append(ln)
        if expect:
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        while len(body) < length:
            chunk = c.recv(min(1 << 20, length - len(body)))
            if not chunk:
                return
            body += chunk
        up = socket.create_connection(self.upstream, timeout=120)
        try:
            req = "\r\n".join([lines[0]] + hdrs + ["Connection: close", "", ""]).encode("latin-1")
            up.sendall(req + body)
            resp = b""
            while True:
                chunk = up.recv(1 << 20)
                if not chunk:
                    break
                resp += chunk
        finally:
            up.close()
        rhead, _, rbody = resp.partition(b"\r\n\r\n")
        status = int(rhead.split(b" ", 2)[1]) if rhead else 0
        with self.lock:
            drop = self.drops > 0 and self.want(method, target)
            if drop:
                self.drops -= 1
            self.seen.append((method, target, status, drop))
        if drop:
            # Answered by the daemon, lost on the way: close without a byte.
            c.shutdown(socket.SHUT_RDWR)
            return
        rlines = [ln for ln in rhead.decode("latin-1").split("\r\n")
                  if not ln.lower().startswith("connection:")]
        c.sendall("\r\n".join(rlines + ["Connection: close", "", ""]).encode("latin-1") + rbody)


def is_complete(method, target):
    q = urllib.parse.urlsplit(target).query
    return method == "POST" and "uploadId=" in q


def retrying_client(s, port):
    """boto3 with its own retries on, talking to the proxy."""
    conf = Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                  retries={"max_attempts": 3, "mode": "standard"},
                  connect_timeout=10, read_timeout=120)
    return boto3.session.Session().client(
        "s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
        aws_access_key_id=s.ak, aws_secret_access_key=s.sk, config=conf)


def completes(proxy):
    return [x for x in proxy.seen if is_complete(x[0], x[1])]


def versions_of(c, b, key):
    r = c.list_object_versions(Bucket=b, Prefix=key)
    return [v for v in r.get("Versions", []) if v["Key"] == key]


# ---- item 1: retries -----------------------------------------------------------

@test
def complete_retry_through_boto3(s):
    """The first Complete's answer is lost; boto3's retry gets the same result."""
    c, b = new_bucket(s, "mpretry")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    parts = [blob(PART, "p1"), blob(PART, "p2"), blob(1234, "p3")]
    proxy = DropProxy(s.port, is_complete)
    try:
        rc = retrying_client(s, proxy.port)
        uid = rc.create_multipart_upload(Bucket=b, Key="ckpt", ChecksumAlgorithm="CRC32C")["UploadId"]
        done = []
        for i, p in enumerate(parts, 1):
            r = rc.upload_part(Bucket=b, Key="ckpt", UploadId=uid, PartNumber=i, Body=p,
                               ChecksumAlgorithm="CRC32C")
            done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32C": r["ChecksumCRC32C"]})
        r = rc.complete_multipart_upload(Bucket=b, Key="ckpt", UploadId=uid,
                                         MultipartUpload={"Parts": done})
        assert r["ResponseMetadata"]["RetryAttempts"] == 1, r["ResponseMetadata"]
        seen = completes(proxy)
        assert [x[2:] for x in seen] == [(200, True), (200, False)], seen
    finally:
        proxy.close()
    assert r["ETag"] == mp_etag(parts), (r["ETag"], mp_etag(parts))
    vs = versions_of(c, b, "ckpt")
    assert len(vs) == 1, vs  # the retry added no version
    assert r["VersionId"] == vs[0]["VersionId"], (r["VersionId"], vs)
    h = c.head_object(Bucket=b, Key="ckpt", ChecksumMode="ENABLED")
    assert h["ETag"] == r["ETag"] and h["ContentLength"] == sum(map(len, parts))
    assert r.get("ChecksumCRC32C") == h.get("ChecksumCRC32C"), (r, h)
    assert c.get_object(Bucket=b, Key="ckpt")["Body"].read() == b"".join(parts)


@test
def transfer_manager_retry(s):
    """boto3's transfer manager (upload_fileobj, multipart above the
    threshold) with the Complete's answer lost: the transfer succeeds."""
    c, b = new_bucket(s, "mptm")
    data = blob(3 * PART + 4321, "tm")
    proxy = DropProxy(s.port, is_complete)
    try:
        rc = retrying_client(s, proxy.port)
        cfg = TransferConfig(multipart_threshold=PART, multipart_chunksize=PART, max_concurrency=2)
        rc.upload_fileobj(io.BytesIO(data), b, "model.bin", Config=cfg)
        seen = completes(proxy)
        assert [x[2:] for x in seen] == [(200, True), (200, False)], seen
    finally:
        proxy.close()
    chunks = [data[i:i + PART] for i in range(0, len(data), PART)]
    h = c.head_object(Bucket=b, Key="model.bin")
    assert h["ETag"] == mp_etag(chunks), (h["ETag"], mp_etag(chunks))
    assert c.get_object(Bucket=b, Key="model.bin")["Body"].read() == data
    assert c.list_multipart_uploads(Bucket=b).get("Uploads", []) == []


def upload(c, b, key, parts, **kw):
    uid = c.create_multipart_upload(Bucket=b, Key=key, **kw)["UploadId"]
    done = []
    for i, p in enumerate(parts, 1):
        extra = {k: v for k, v in kw.items() if k.startswith("SSECustomer")}
        r = c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i, Body=p, **extra)
        done.append({"PartNumber": i, "ETag": r["ETag"]})
    return uid, done


@test
def complete_plain_repeat(s):
    """A repeated Complete answers the first one's result; anything else
    about the completed upload is NoSuchUpload; the object is untouched."""
    c, b = new_bucket(s, "mprep")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    parts = [blob(PART, "a"), blob(PART, "b"), blob(10, "c")]
    uid, done = upload(c, b, "k", parts)
    first = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                        MultipartUpload={"Parts": done})
    again = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                        MultipartUpload={"Parts": done})
    for f in ("ETag", "VersionId", "Bucket", "Key", "Location"):
        assert again.get(f) == first.get(f), (f, first, again)
    assert first["ETag"] == mp_etag(parts)
    # Another part list: the upload is over (AWS's NoSuchUpload).
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": done[:2]}), "NoSuchUpload", 404)
    swapped = [done[0], {"PartNumber": 2, "ETag": done[2]["ETag"]}]
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": swapped}), "NoSuchUpload", 404)
    # Abort after Complete: NoSuchUpload, and the completion still answers.
    expect_error(lambda: c.abort_multipart_upload(Bucket=b, Key="k", UploadId=uid),
                 "NoSuchUpload", 404)
    expect_error(lambda: c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=4, Body=b"x"),
                 "NoSuchUpload", 404)
    expect_error(lambda: c.list_parts(Bucket=b, Key="k", UploadId=uid), "NoSuchUpload", 404)
    assert c.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    again = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                        MultipartUpload={"Parts": done})
    assert again["VersionId"] == first["VersionId"]
    vs = versions_of(c, b, "k")
    assert [v["VersionId"] for v in vs] == [first["VersionId"]], vs
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"".join(parts)
    # A newer version meanwhile: the retry still answers what the
    # complete made (its version id), and changes nothing.
    c.put_object(Bucket=b, Key="k", Body=b"newer")
    again = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                        MultipartUpload={"Parts": done})
    assert again["VersionId"] == first["VersionId"] and again["ETag"] == first["ETag"]
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"newer"
    assert len(versions_of(c, b, "k")) == 2
    # An upload id that never existed stays NoSuchUpload.
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="k", UploadId="0" * 32, MultipartUpload={"Parts": done}), "NoSuchUpload", 404)
    # Unversioned bucket: no version id either time.
    c2, b2 = new_bucket(s, "mprepu")
    uid, done = upload(c2, b2, "k", [b"tiny"])
    first = c2.complete_multipart_upload(Bucket=b2, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": done})
    again = c2.complete_multipart_upload(Bucket=b2, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": done})
    assert "VersionId" not in first and "VersionId" not in again
    assert again["ETag"] == first["ETag"] == mp_etag([b"tiny"])


@test
def complete_retry_window(s):
    """--mpu-retry-seconds bounds how long a completion answers retries."""
    s.args += ["--mpu-retry-seconds", "2"]
    s.restart()
    try:
        c, b = new_bucket(s, "mpwin")
        uid, done = upload(c, b, "k", [b"short"])
        first = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                            MultipartUpload={"Parts": done})
        again = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                            MultipartUpload={"Parts": done})
        assert again["ETag"] == first["ETag"]
        time.sleep(3)
        expect_error(lambda: c.complete_multipart_upload(
            Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": done}), "NoSuchUpload", 404)
        assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"short"
    finally:
        s.args = s.args[:-2]
        s.restart()


# ---- item 2: SSE headers on the multipart operations ---------------------------

def ssec(key):
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def ssec_b64(key, md5_of=None):
    """The SSE-C parameters already encoded, with the key's MD5: Debian's
    botocore (1.29) does not encode them for CompleteMultipartUpload, and
    with the MD5 given newer ones send them as they are."""
    return {"SSECustomerAlgorithm": "AES256",
            "SSECustomerKey": base64.b64encode(key).decode(),
            "SSECustomerKeyMD5": base64.b64encode(hashlib.md5(md5_of or key).digest()).decode()}


@test
def complete_takes_ssec(s):
    c, b = new_bucket(s, "mpssec")
    k1, k2 = os.urandom(32), os.urandom(32)
    parts = [blob(PART, "s1"), blob(77, "s2")]
    uid, done = upload(c, b, "enc", parts, **ssec(k1))
    # Another key: refused, the upload stays.
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="enc", UploadId=uid, MultipartUpload={"Parts": done}, **ssec_b64(k2)),
        "AccessDenied", 403)
    r = c.complete_multipart_upload(Bucket=b, Key="enc", UploadId=uid,
                                    MultipartUpload={"Parts": done}, **ssec_b64(k1))
    assert r["ETag"].endswith('-2"'), r
    # (Raw headers: Debian's botocore does not parse them for this call.)
    hdrs = r["ResponseMetadata"]["HTTPHeaders"]
    assert hdrs.get("x-amz-server-side-encryption-customer-algorithm") == "AES256", hdrs
    md5 = base64.b64encode(hashlib.md5(k1).digest()).decode()
    assert hdrs.get("x-amz-server-side-encryption-customer-key-md5") == md5, hdrs
    # The retry with the key answers the same; with another key it is refused.
    again = c.complete_multipart_upload(Bucket=b, Key="enc", UploadId=uid,
                                        MultipartUpload={"Parts": done}, **ssec_b64(k1))
    assert again["ETag"] == r["ETag"]
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="enc", UploadId=uid, MultipartUpload={"Parts": done}, **ssec_b64(k2)),
        "AccessDenied", 403)
    g = c.get_object(Bucket=b, Key="enc", **ssec(k1))
    assert g["Body"].read() == b"".join(parts)
    # Without the key headers an SSE-C upload still completes (AWS needs
    # them only for checksums); with a key, an upload stored as sent is refused.
    uid, done = upload(c, b, "enc2", [b"x" * 10], **ssec(k1))
    c.complete_multipart_upload(Bucket=b, Key="enc2", UploadId=uid, MultipartUpload={"Parts": done})
    assert c.get_object(Bucket=b, Key="enc2", **ssec(k1))["Body"].read() == b"x" * 10
    uid, done = upload(c, b, "plain", [b"y" * 10])
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="plain", UploadId=uid, MultipartUpload={"Parts": done}, **ssec_b64(k1)),
        "InvalidRequest", 400)
    expect_error(lambda: c.complete_multipart_upload(
        Bucket=b, Key="plain", UploadId=uid, MultipartUpload={"Parts": done},
        **ssec_b64(k1, md5_of=k2)), "InvalidArgument", 400)
    c.complete_multipart_upload(Bucket=b, Key="plain", UploadId=uid, MultipartUpload={"Parts": done})


@test
def ssec_complete_retry_through_boto3(s):
    """An SSE-C multipart upload whose Complete answer is lost, as boto3's
    transfer manager (s3transfer >= 0.7) sends it: key headers on every
    call, the retry included."""
    c, b = new_bucket(s, "mpssecr")
    key = os.urandom(32)
    parts = [blob(PART, "r1"), blob(999, "r2")]
    proxy = DropProxy(s.port, is_complete)
    try:
        rc = retrying_client(s, proxy.port)
        uid, done = upload(rc, b, "ckpt", parts, **ssec(key))
        r = rc.complete_multipart_upload(Bucket=b, Key="ckpt", UploadId=uid,
                                         MultipartUpload={"Parts": done}, **ssec_b64(key))
        assert r["ResponseMetadata"]["RetryAttempts"] == 1
        assert [x[2:] for x in completes(proxy)] == [(200, True), (200, False)], proxy.seen
    finally:
        proxy.close()
    assert r["ETag"] == c.head_object(Bucket=b, Key="ckpt", **ssec(key))["ETag"]
    assert c.get_object(Bucket=b, Key="ckpt", **ssec(key))["Body"].read() == b"".join(parts)


def add_headers(c, op, hdrs):
    def hook(request, **_):
        for k, v in hdrs.items():
            request.headers[k] = v
    c.meta.events.register(f"before-sign.s3.{op}", hook)


def raw_error(e):
    """Code, message, ArgumentName, ArgumentValue of a ClientError's body."""
    err = e["Error"]
    return err.get("Code"), err.get("Message"), err.get("ArgumentName"), err.get("ArgumentValue")


@test
def sse_headers_on_part_operations(s):
    """What AWS answers for x-amz-server-side-encryption* on the operations
    after CreateMultipartUpload (their encryption is the upload's)."""
    c0, b = new_bucket(s, "mpssekms")
    c0.put_object(Bucket=b, Key="src", Body=b"z" * 100)
    uid = c0.create_multipart_upload(Bucket=b, Key="k", ServerSideEncryption="aws:kms")["UploadId"]
    cases = [("x-amz-server-side-encryption", "aws:kms"),
             ("x-amz-server-side-encryption", "AES256"),
             ("x-amz-server-side-encryption-aws-kms-key-id", "kms-a"),
             ("x-amz-server-side-encryption-context",
              base64.b64encode(b'{"a":"b"}').decode())]
    for name, value in cases:
        msg = f"{name} header is not supported for this operation."
        for op in ("UploadPart", "UploadPartCopy", "CompleteMultipartUpload"):
            c = s.client()
            add_headers(c, op, {name: value})
            if op == "UploadPart":
                call = lambda: c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1,  # noqa: E731
                                             Body=b"part")
            elif op == "UploadPartCopy":
                call = lambda: c.upload_part_copy(Bucket=b, Key="k", UploadId=uid,  # noqa: E731
                                                  PartNumber=1, CopySource={"Bucket": b, "Key": "src"})
            else:
                call = lambda: c.complete_multipart_upload(  # noqa: E731
                    Bucket=b, Key="k", UploadId=uid,
                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"x"'}]})
            resp = expect_error(call, "InvalidArgument", 400)
            code, m, an, av = raw_error(resp)
            assert (m, an, av) == (msg, name, value), (op, resp["Error"])
    # None of that touched the upload: it completes with its own encryption.
    c = s.client()
    e1 = c0.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=b"part")["ETag"]
    r = c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]})
    assert r.get("ServerSideEncryption") == "aws:kms", r
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"part"


if __name__ == "__main__":
    tmp = os.environ.get("STRATA_TEST_TMPDIR") or "/tmp"
    os.makedirs(tmp, exist_ok=True)
    import json
    import secrets
    import tempfile
    kdir = tempfile.mkdtemp(prefix="test_mpu_retry-keys.", dir=tmp)
    kfile = os.path.join(kdir, "keys.json")
    with open(kfile, "w") as f:
        json.dump({"active": "k1", "keys": {
            "k1": {"key": base64.b64encode(secrets.token_bytes(32)).decode()},
            "kms-a": {"key": base64.b64encode(secrets.token_bytes(32)).decode()}}}, f)
    os.chmod(kfile, 0o600)
    log(f"key file {kfile}")
    run(Strata(args=["--kms-key-file", kfile, "--sse-c-allow-http"]))
