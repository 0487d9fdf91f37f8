#!/usr/bin/python3
"""test_transport.py - the HTTP transport through raw sockets, for what no
SDK sends: request framing (conflicting or duplicate Content-Length, a
Content-Length libmicrohttpd cannot parse answered with S3's XML error,
Transfer-Encoding with Content-Length, unknown transfer codings), SigV2
bound to the bucket the Host header names (a captured path-style request
replayed virtual-host style against another bucket), the SigV2 Expires cap,
the start-up refusal of default root credentials on a non-loopback address,
the per-client-address connection limit and the aggregate body-buffer
budget (503 SlowDown).

Every request is written byte by byte on a socket, so duplicate headers
and bad framing reach the daemon exactly as written; every answer is read
back together with whether the daemon closed the connection after it.
Run by CTest (integration label) with /usr/bin/python3.
"""

import base64
import datetime
import email.utils
import hashlib
import hmac
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import REGION, Strata, expect_error, free_port, log, run, test  # noqa: E402

DOMAIN = "s3.strata.test"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def sha256_hex(b):
    return hashlib.sha256(b).hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signing_key(sk, date):
    k = _hmac(("AWS4" + sk).encode(), date)
    return _hmac(_hmac(_hmac(k, REGION), "s3"), "aws4_request")


def amz_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def sigv4_headers(s, method, path, payload_hash, extra=None, host=None):
    """SigV4 headers (Host, x-amz-date, x-amz-content-sha256, Authorization)
    for a path already %-encoded and no query."""
    amzdate = amz_now()
    h = {"Host": host or f"{s.host}:{s.port}", "x-amz-date": amzdate,
         "x-amz-content-sha256": payload_hash}
    h.update(extra or {})
    names = sorted(k.lower() for k in h)
    lower = {k.lower(): " ".join(str(v).split()) for k, v in h.items()}
    creq = "\n".join([method, path, "", "".join(f"{n}:{lower[n]}\n" for n in names),
                      ";".join(names), payload_hash])
    scope = f"{amzdate[:8]}/{REGION}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, sha256_hex(creq.encode())])
    sig = hmac.new(signing_key(s.sk, amzdate[:8]), sts.encode(), hashlib.sha256).hexdigest()
    h["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={s.ak}/{scope}, "
                          f"SignedHeaders={';'.join(names)}, Signature={sig}")
    return h, sig


class Answer:
    def __init__(self, status, headers, body, closed):
        self.status, self.headers, self.body, self.closed = status, headers, body, closed

    def code(self):
        try:
            return ET.fromstring(self.body).findtext("Code")
        except ET.ParseError:
            return None

    def __repr__(self):
        return f"<HTTP {self.status} closed={self.closed} {self.headers} {self.body[:300]!r}>"


def read_answer(sock, head=False, timeout=10, close_wait=0):
    """One HTTP answer from sock; with close_wait, also whether the peer
    closed the connection right after it (EOF within close_wait s)."""
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before an answer; got {buf!r}")
        buf += chunk
    hdr, rest = buf.split(b"\r\n\r\n", 1)
    lines = hdr.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" not in headers and not head and status not in (204, 304):
        # libmicrohttpd's own refusals: the body runs to the close.
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return Answer(status, headers, rest, True)
            rest += chunk
    n = 0 if head or status in (204, 304) else int(headers["content-length"])
    while len(rest) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    body, extra = rest[:n], rest[n:]
    if extra:
        raise AssertionError(f"bytes after the answer: {extra[:200]!r}")
    closed = None
    if close_wait:
        sock.settimeout(close_wait)
        try:
            more = sock.recv(65536)
            closed = more == b""
            if more:
                raise AssertionError(f"bytes after the answer: {more[:200]!r}")
        except socket.timeout:
            closed = False
        except ConnectionResetError:
            closed = True
    return Answer(status, headers, body, closed)


def exchange(s, raw, head=False, timeout=10, close_wait=0):
    with socket.create_connection((s.host, s.port), timeout=timeout) as sock:
        sock.sendall(raw)
        return read_answer(sock, head=head, timeout=timeout, close_wait=close_wait)


def request_bytes(method, target, headers, body=b""):
    """headers: list of (name, value) pairs, written as given (duplicates too)."""
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def signed(s, method, path, extra=None, host=None):
    h, _ = sigv4_headers(s, method, path, "UNSIGNED-PAYLOAD", extra, host)
    return list(h.items())


def head_status(s, path):
    a = exchange(s, request_bytes("HEAD", path, signed(s, "HEAD", path)), head=True)
    return a.status


_STATE = {}


def bucket(s):
    if "b" not in _STATE:
        b = s.bucket_name("tr")
        a = exchange(s, request_bytes("PUT", f"/{b}", signed(s, "PUT", f"/{b}") +
                                      [("Content-Length", "0")]))
        assert a.status == 200, a
        _STATE["b"] = b
    return _STATE["b"]


# ---- item 7: Content-Length framing ---------------------------------------------------

@test
def conflicting_content_length(s):
    b = bucket(s)
    path = f"/{b}/cl-conflict"
    # The tail of the body would be the next request if the first value won.
    smuggled = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"hello" + smuggled
    for first, second in ((5, len(body)), (len(body), 5)):
        raw = request_bytes("PUT", path, signed(s, "PUT", path) +
                            [("Content-Length", str(first)), ("Content-Length", str(second))], body)
        a = exchange(s, raw, close_wait=10)
        assert a.status == 400, f"conflicting Content-Length {first}/{second}: {a}"
        assert a.code() == "InvalidRequest", a
        assert a.closed, f"connection left open after conflicting Content-Length: {a}"
        assert head_status(s, path) == 404, "an object was stored from a request with two lengths"
    # A comma list of two different values is the same conflict (which
    # libmicrohttpd refuses by itself).
    raw = request_bytes("PUT", path, signed(s, "PUT", path) +
                        [("Content-Length", f"5, {len(body)}")], body)
    with socket.create_connection((s.host, s.port), timeout=10) as sock:
        sock.sendall(raw)
        got = b""
        while True:  # to the close (libmicrohttpd's own answer is not well-formed)
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    assert got.startswith(b"HTTP/1.1 400 "), got[:300]
    assert head_status(s, path) == 404


@test
def identical_content_length_accepted(s):
    b = bucket(s)
    path = f"/{b}/cl-same"
    raw = request_bytes("PUT", path, signed(s, "PUT", path) +
                        [("Content-Length", "5"), ("Content-Length", "5")], b"hello")
    a = exchange(s, raw)
    assert a.status == 200, a
    g = exchange(s, request_bytes("GET", path, signed(s, "GET", path)))
    assert g.status == 200 and g.body == b"hello", g


@test
def transfer_encoding_with_content_length(s):
    b = bucket(s)
    path = f"/{b}/te-cl"
    body = b"5\r\nhello\r\n0\r\n\r\n"
    raw = request_bytes("PUT", path, signed(s, "PUT", path) +
                        [("Transfer-Encoding", "chunked"), ("Content-Length", str(len(body)))], body)
    a = exchange(s, raw, close_wait=10)
    assert a.status == 400 and a.code() == "InvalidRequest", a
    assert a.closed, a
    assert head_status(s, path) == 404


@test
def unparsable_content_length(s):
    # libmicrohttpd refuses these before Strata sees the request; the
    # answer is still S3's XML error (not MHD's HTML page), and the
    # connection closes: its remaining bytes cannot be framed.
    b = bucket(s)
    path = f"/{b}/cl-bad"
    for cl, code in (("-1", "InvalidArgument"), ("abc", "InvalidArgument"),
                     ("12abc", "InvalidArgument"), ("", "InvalidArgument"),
                     ("+5", "InvalidArgument"), ("0x10", "InvalidArgument"),
                     ("99999999999999999999999", "EntityTooLarge")):
        for method in ("PUT", "GET"):
            raw = request_bytes(method, path, signed(s, method, path) + [("Content-Length", cl)])
            a = exchange(s, raw, close_wait=10)
            assert a.status == 400, f"Content-Length {cl!r} on {method}: {a}"
            assert a.headers.get("content-type") == "application/xml", a
            root = ET.fromstring(a.body)
            assert root.tag == "Error" and root.findtext("Code") == code, a
            assert "Content-Length" in root.findtext("Message") or code == "EntityTooLarge", a
            rid = a.headers.get("x-amz-request-id")
            assert rid and root.findtext("RequestId") == rid, a
            assert root.findtext("Resource") == path and root.findtext("BucketName") == b, a
            assert a.headers.get("connection") == "close" and a.closed, a
    assert head_status(s, path) == 404
    # On a kept-alive connection, after a good request: the good answer
    # whole, then the XML refusal, then the close.
    good = request_bytes("HEAD", f"/{b}", signed(s, "HEAD", f"/{b}"))
    bad = request_bytes("PUT", path, signed(s, "PUT", path) + [("Content-Length", "-7")])
    with socket.create_connection((s.host, s.port), timeout=10) as sock:
        sock.sendall(good)
        a1 = read_answer(sock, head=True)
        sock.sendall(bad)
        a2 = read_answer(sock, close_wait=10)
    assert a1.status == 200, a1
    assert a2.status == 400 and a2.code() == "InvalidArgument" and a2.closed, a2
    # boto3 sends the length it is given (s3-tests' ContentLength=-1).
    c = s.client()
    e = expect_error(lambda: c.put_object(Bucket=b, Key="cl-bad", ContentLength=-1),
                     "InvalidArgument", 400)
    assert e["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "application/xml", e
    # The daemon goes on serving, and each refusal has its access-log line.
    assert head_status(s, f"/{b}") == 200
    if s.log_path:  # a daemon this test started
        want = f" - {b} cl-bad - 400 InvalidArgument "
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            n = open(s.log_path, errors="replace").read().count(want)
            if n >= 14:
                break
            time.sleep(0.1)
        assert n == 14, f"{n} access-log lines with {want!r}"


@test
def unparsable_content_length_tls(s):
    """The same refusal through a TLS daemon: S3's XML error inside the
    TLS session (then its close_notify), not MHD's HTML page."""
    import ssl
    d = tempfile.mkdtemp(prefix="tls.", dir=s.tmp)
    cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    subprocess.run(["/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    drives = [os.path.join(d, f"d{i}") for i in range(1, 5)]
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "STRATA_ROOT_USER": s.ak, "STRATA_ROOT_PASSWORD": s.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    logp = os.path.join(d, "log")
    with open(logp, "wb") as logf:
        p = subprocess.Popen([os.environ["STRATA_BIN"], "server", "--address", f"127.0.0.1:{port}",
                              "--tls-cert", cert, "--tls-key", key, *drives],
                             env=env, stdout=logf, stderr=subprocess.STDOUT)
    ctx = ssl.create_default_context(cafile=cert)

    def tls_exchange(raw):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw_sock:
            with ctx.wrap_socket(raw_sock, server_hostname="127.0.0.1") as t:
                t.sendall(raw)
                return read_answer(t, close_wait=10)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                a = tls_exchange(b"GET /health/ready HTTP/1.1\r\nHost: x\r\n"
                                 b"Connection: close\r\n\r\n")
                if a.status == 200:
                    break
            except (OSError, AssertionError):
                pass
            assert time.monotonic() < deadline, "the TLS daemon did not become ready"
            time.sleep(0.2)
        for cl, code in (("-1", "InvalidArgument"), ("abc", "InvalidArgument"),
                         ("99999999999999999999999", "EntityTooLarge")):
            a = tls_exchange(f"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: {cl}\r\n\r\n"
                             .encode())
            assert a.status == 400 and a.code() == code, (cl, a)
            assert a.headers.get("content-type") == "application/xml" and a.closed, a
            assert ET.fromstring(a.body).findtext("RequestId") == a.headers["x-amz-request-id"]
        a = tls_exchange(b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert a.status == 200, a  # still serving
    finally:
        p.terminate()
        assert p.wait(15) == 0
        text = open(logp, errors="replace").read()
        assert "runtime error:" not in text and "AddressSanitizer" not in text, text[-3000:]


# ---- item 8: unknown transfer codings -----------------------------------------------------

@test
def unknown_transfer_encoding(s):
    b = bucket(s)
    path = f"/{b}/te-unknown"
    for te in ("gzip", "gzip, chunked", "chunked, gzip", "identity", "xchunked"):
        t0 = time.monotonic()
        raw = request_bytes("PUT", path, signed(s, "PUT", path) + [("Transfer-Encoding", te)],
                            b"5\r\nhello\r\n")
        # The body is left unfinished: the answer must not wait for it.
        a = exchange(s, raw, timeout=5, close_wait=5)
        took = time.monotonic() - t0
        assert a.status == 501 and a.code() == "NotImplemented", f"Transfer-Encoding {te}: {a}"
        assert a.closed, f"Transfer-Encoding {te}: connection left open: {a}"
        assert took < 4, f"Transfer-Encoding {te}: answered after {took:.1f} s"
        assert head_status(s, path) == 404
    # A GET with a body of unknown coding: answered at once, not when the
    # client gives up.
    raw = request_bytes("GET", path, signed(s, "GET", path) + [("Transfer-Encoding", "gzip")],
                        b"\x1f\x8b")
    t0 = time.monotonic()
    a = exchange(s, raw, timeout=5, close_wait=5)
    assert a.status == 501 and a.closed and time.monotonic() - t0 < 4, a
    # Two Transfer-Encoding fields are refused the same way.
    raw = request_bytes("PUT", path, signed(s, "PUT", path) +
                        [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")],
                        b"0\r\n\r\n")
    a = exchange(s, raw, timeout=5, close_wait=5)
    assert a.status in (400, 501) and a.closed, a


# ---- item 14: SigV2 bound to the bucket of the Host header ---------------------------------

def v2_sig(s, string_to_sign):
    mac = hmac.new(s.sk.encode(), string_to_sign.encode(), hashlib.sha1).digest()
    return base64.b64encode(mac).decode()


def v2_get(s, resource):
    """A SigV2 header-signed GET of resource ("/bucket/key")."""
    date = email.utils.formatdate(usegmt=True)
    sig = v2_sig(s, f"GET\n\n\n{date}\n{resource}")
    return [("Date", date), ("Authorization", f"AWS {s.ak}:{sig}")]


def put_object(s, bkt, key, data, host=None):
    path = f"/{bkt}/{urllib.parse.quote(key)}"
    a = exchange(s, request_bytes("PUT", path, signed(s, "PUT", path) +
                                  [("Content-Length", str(len(data)))], data))
    assert a.status == 200, a


@test
def sigv2_host_binding(s):
    victim = bucket(s)
    other = s.bucket_name("tr2")
    a = exchange(s, request_bytes("PUT", f"/{other}", signed(s, "PUT", f"/{other}") +
                                  [("Content-Length", "0")]))
    assert a.status == 200, a
    put_object(s, victim, "k", b"victim data")
    put_object(s, other, f"{victim}/k", b"other bucket's data")
    hp = f"{s.host}:{s.port}"
    # The captured path-style request works where it was meant to.
    auth = v2_get(s, f"/{victim}/k")
    a = exchange(s, request_bytes("GET", f"/{victim}/k", [("Host", hp)] + auth))
    assert a.status == 200 and a.body == b"victim data", a
    # Replayed with another bucket in Host: /victim/k becomes key
    # "victim/k" of bucket "other", and the signature must not cover that.
    a = exchange(s, request_bytes("GET", f"/{victim}/k", [("Host", f"{other}.{DOMAIN}")] + auth))
    assert a.status == 403 and a.code() == "SignatureDoesNotMatch", f"replay accepted: {a}"
    # A genuine virtual-host SigV2 request signs /bucket/key and is served.
    auth = v2_get(s, f"/{other}/{victim}/k")
    a = exchange(s, request_bytes("GET", f"/{victim}/k", [("Host", f"{other}.{DOMAIN}")] + auth))
    assert a.status == 200 and a.body == b"other bucket's data", a
    # ... and it cannot be replayed path-style (a different resource).
    a = exchange(s, request_bytes("GET", f"/{victim}/k", [("Host", hp)] + auth))
    assert a.status == 403 and a.code() == "SignatureDoesNotMatch", a


def v2_query(s, resource, expires):
    sig = v2_sig(s, f"GET\n\n\n{expires}\n{resource}")
    return (f"{resource}?AWSAccessKeyId={urllib.parse.quote(s.ak, safe='')}&Expires={expires}"
            f"&Signature={urllib.parse.quote(sig, safe='')}")


@test
def sigv2_query_expires_cap(s):
    b = bucket(s)
    put_object(s, b, "exp", b"expires")
    hp = [("Host", f"{s.host}:{s.port}")]
    now = int(time.time())
    a = exchange(s, request_bytes("GET", v2_query(s, f"/{b}/exp", now + 3600), hp))
    assert a.status == 200 and a.body == b"expires", a
    a = exchange(s, request_bytes("GET", v2_query(s, f"/{b}/exp", now + 7 * 86400 - 60), hp))
    assert a.status == 200, a
    for ahead in (7 * 86400 + 120, 365 * 86400, 10 ** 11):
        a = exchange(s, request_bytes("GET", v2_query(s, f"/{b}/exp", now + ahead), hp))
        assert a.status == 403 and a.code() == "AccessDenied", f"Expires now+{ahead}: {a}"
    a = exchange(s, request_bytes("GET", v2_query(s, f"/{b}/exp", now - 10), hp))
    assert a.status == 403 and a.code() == "AccessDenied", a


# ---- item 13: default root credentials ------------------------------------------------------

def start_bare(addr, env_extra):
    """Start the daemon with no root keys (plus env_extra) on addr; returns
    (process, output file, drive directories)."""
    tmp = tempfile.mkdtemp(prefix="creds.", dir=os.environ.get("STRATA_TEST_TMPDIR"))
    drives = [os.path.join(tmp, f"d{i}") for i in range(1, 5)]
    for d in drives:
        os.makedirs(d)
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp}
    env.update(env_extra)
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    out = os.path.join(tmp, "out.log")
    with open(out, "wb") as f:
        p = subprocess.Popen([os.environ["STRATA_BIN"], "server", "--address", addr] + drives,
                             env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    return p, out, drives


@test
def default_credentials_refused_off_loopback(s):
    for extra in ({}, {"STRATA_ROOT_USER": "strataadmin", "STRATA_ROOT_PASSWORD": "strataadmin"}):
        port = free_port()
        p, out, drives = start_bare(f"0.0.0.0:{port}", extra)
        # It must never listen: poll the port on loopback until it exits.
        listened = False
        deadline = time.monotonic() + 20
        while p.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                listened = True
                break  # refused too late (or not at all): stop it at once
            except OSError:
                pass
            time.sleep(0.02)
        if p.poll() is None:
            p.kill()
            p.wait()
            raise AssertionError(f"the daemon ran on 0.0.0.0 with default keys ({extra}; "
                                 f"listened: {listened})")
        text = open(out, errors="replace").read()
        assert p.returncode != 0, f"exit status 0 with default keys on 0.0.0.0: {text}"
        assert not listened, "the daemon listened before refusing"
        assert "STRATA_ROOT_USER" in text and "STRATA_ROOT_PASSWORD" in text, text
        assert "Strata S3 endpoint" not in text, text
        assert all(not os.listdir(d) for d in drives), "drives were formatted before the refusal"
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in text, text


@test
def default_credentials_warn_on_loopback(s):
    port = free_port()
    p, out, _ = start_bare(f"127.0.0.1:{port}", {})
    try:
        deadline = time.monotonic() + 30
        ready = False
        while time.monotonic() < deadline and p.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                    c.sendall(b"GET /health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
                    ready = read_answer(c).status == 200
            except (OSError, AssertionError):
                pass
            if ready:
                break
            time.sleep(0.1)
        text = open(out, errors="replace").read()
        assert ready, f"daemon with default keys on loopback did not start: {text}"
        assert "default" in text and "STRATA_ROOT_USER" in text, f"no warning: {text}"
    finally:
        if p.poll() is None:
            p.terminate()
            p.wait(15)
    assert p.returncode == 0, p.returncode
    text = open(out, errors="replace").read()
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert marker not in text, text


# ---- item 16: per-address connection limit and the body budget ---------------------------

def chunked_body(s, path, pieces, extra=None):
    """Headers and body of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD PUT of pieces."""
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    total = sum(len(p) for p in pieces)
    frames = [p for p in pieces] + [b""]
    length = sum(len(f"{len(p):x};chunk-signature=".encode()) + 64 + 4 + len(p) for p in frames)
    hdr = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(total),
           "Content-Length": str(length)}
    hdr.update(extra or {})
    h, prev = sigv4_headers(s, "PUT", path, mode, hdr)
    amzdate = h["x-amz-date"]
    key = signing_key(s.sk, amzdate[:8])
    scope = f"{amzdate[:8]}/{REGION}/s3/aws4_request"
    body = b""
    for p in frames:
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amzdate, scope, prev, EMPTY_SHA256,
                         sha256_hex(p)])
        prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        body += f"{len(p):x};chunk-signature={prev}\r\n".encode() + p + b"\r\n"
    assert len(body) == length
    return list(h.items()), body


def served_connection(srv, timeout=30):
    """A connection on which the daemon answered GET /health/live.  The
    daemon counts a connection the client closed until it has seen the
    close, so a slot the test just gave back is retried until it is free
    (bounded by timeout); the limit itself is asserted by the caller."""
    deadline = time.monotonic() + timeout
    while True:
        c = socket.create_connection((srv.host, srv.port), timeout=5)
        try:
            c.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            a = read_answer(c)
            assert a.status == 200, a
            return c
        except (AssertionError, ConnectionResetError, BrokenPipeError):
            c.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# ---- serving model: suspended connections, abandoned streams, shutdown ----------------

def _recv_at_least(c, n):
    got = b""
    while len(got) < n:
        chunk = c.recv(65536)
        assert chunk, f"connection closed after {len(got)} bytes"
        got += chunk
    return got


@test
def abandoned_streams_and_sigterm_in_flight(s):
    """Erasure-coded GET bodies are read a block ahead on the storage
    workers and PUT bodies are stored in blocks while their connection is
    suspended (server/README.md, Threads).  A client that goes away
    mid-body neither crashes the daemon (the job outlives the connection)
    nor leaves a half object; other connections stay served; SIGTERM with
    a GET and a PUT in mid-body lets both finish, then exits 0."""
    b = bucket(s)
    data = os.urandom(6 << 20)
    put_object(s, b, "big", data)
    path = f"/{b}/big"
    for _ in range(4):  # leave while the next block is being read ahead
        with socket.create_connection((s.host, s.port), timeout=10) as c:
            c.sendall(request_bytes("GET", path, signed(s, "GET", path)))
            _recv_at_least(c, 1 << 20)
    cut = f"/{b}/cut"
    with socket.create_connection((s.host, s.port), timeout=10) as c:
        c.sendall(request_bytes("PUT", cut, signed(s, "PUT", cut) +
                                [("Content-Length", str(len(data)))], data[:3 << 20]))
        time.sleep(0.3)
    a = exchange(s, request_bytes("GET", path, signed(s, "GET", path)), timeout=30)
    assert a.status == 200 and a.body == data, a
    assert head_status(s, cut) == 404, "an upload cut mid-body became visible"

    inflight = f"/{b}/inflight"
    g = socket.create_connection((s.host, s.port), timeout=30)
    p = socket.create_connection((s.host, s.port), timeout=30)
    try:
        g.sendall(request_bytes("GET", path, signed(s, "GET", path)))
        first = _recv_at_least(g, 256 << 10)
        p.sendall(request_bytes("PUT", inflight, signed(s, "PUT", inflight) +
                                [("Content-Length", str(len(data)))], data[:2 << 20]))
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        p.sendall(data[2 << 20:])
        put_answer = read_answer(p, timeout=30)
        rest = first
        while b"\r\n\r\n" not in rest:
            rest += _recv_at_least(g, 1)
        hdr, body = rest.split(b"\r\n\r\n", 1)
        while len(body) < len(data):
            chunk = g.recv(1 << 20)
            if not chunk:
                break
            body += chunk
        assert hdr.startswith(b"HTTP/1.1 200"), hdr[:200]
        assert body == data, f"GET in flight at SIGTERM: {len(body)} of {len(data)} bytes, or other bytes"
        assert put_answer.status == 200, put_answer
    finally:
        g.close()
        p.close()
    rc = s.proc.wait(15)
    assert rc == 0, f"strata exited with status {rc} after SIGTERM"
    s.restart()  # the daemon is gone: this starts it again on the same drives
    a = exchange(s, request_bytes("GET", inflight, signed(s, "GET", inflight)), timeout=30)
    assert a.status == 200 and a.body == data, "the PUT in flight at SIGTERM was not stored whole"


@test
def limits(s):
    lim = Strata(args=["--max-conns-per-ip", "3", "--body-memory-mb", "1"])
    try:
        b = lim.bucket_name("lim")
        a = exchange(lim, request_bytes("PUT", f"/{b}", signed(lim, "PUT", f"/{b}") +
                                        [("Content-Length", "0")]))
        assert a.status == 200, a
        # Budget: a 2 MiB signed chunk cannot be buffered within 1 MiB.
        path = f"/{b}/big-chunk"
        data = os.urandom(2 << 20)
        h, body = chunked_body(lim, path, [data])
        a = exchange(lim, request_bytes("PUT", path, h, body), timeout=60)
        assert a.status == 503 and a.code() == "SlowDown", a
        assert a.headers.get("retry-after"), a
        assert head_status(lim, path) == 404, "object stored although the budget refused it"
        # Chunks that fit are stored, one after the other (the budget is
        # given back when a request ends).
        for i in range(3):
            path = f"/{b}/small-{i}"
            piece = os.urandom(256 << 10)
            h, body = chunked_body(lim, path, [piece, piece])
            a = exchange(lim, request_bytes("PUT", path, h, body), timeout=60)
            assert a.status == 200, a
            g = exchange(lim, request_bytes("GET", path, signed(lim, "GET", path)), timeout=60)
            assert g.status == 200 and g.body == piece + piece
        # Connections per client address: three are served, a fourth is
        # closed at once, and a slot freed is usable again.
        held = []
        try:
            for _ in range(3):
                held.append(served_connection(lim))
            extra = socket.create_connection((lim.host, lim.port), timeout=5)
            try:
                extra.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
                extra.settimeout(5)
                got = extra.recv(1024)
            except (ConnectionResetError, BrokenPipeError):
                got = b""
            finally:
                extra.close()
            assert got == b"", f"a 4th connection from one address was served: {got[:100]!r}"
            held.pop().close()
            served_connection(lim).close()
        finally:
            for c in held:
                c.close()
    finally:
        assert lim.stop(), "the limited daemon did not stop cleanly"


if __name__ == "__main__":
    run(Strata(args=["--domain", DOMAIN]))
