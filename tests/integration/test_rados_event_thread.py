#!/usr/bin/python3
"""test_rados_event_thread.py - a PUT whose data goes to data objects
(above --inline-max) does not hold the server's event thread on the
cluster: its data's pending record (w/ on the key's index shard) is written
when its first bytes are stored, by a storage worker, not when its headers
arrive.  Nor does an UploadPart: its upload record is read (and its SSE-C
key checked) with its first bytes.  One memstore OSD, one gateway with
--threads 1 (a single event thread serves every connection):

- after a warm PUT, the OSD is stopped (SIGSTOP); a PUT of 1 MiB sends its
  headers and no body; a request with a wrong signature, which needs no
  cluster, gets its 403 SignatureDoesNotMatch within 3 s (it waited for
  the OSD while the pending record was written by the event thread);
- the OSD resumes, the PUT's body is sent: 200, and the object reads back
  byte-exact with its ETag;
- the same with an UploadPart's headers (it waited for the OSD while the
  upload record was read by the event thread); the part's body then gets
  200 and its MD5 as ETag, and the completed object reads back byte-exact;
- an UploadPart naming no upload answers 404 NoSuchUpload, with a body and
  with an empty one (the upload is read with the first bytes, or at the
  commit).

Skips (77) as test_rados_two_gateways.py does, with rados_gw.py's printed
reasons.
"""

import hashlib
import http.client
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rados_gw import gateway, rados_init, require_daemon_on_rados, start_put  # noqa: E402
from strata_harness import log, run, test  # noqa: E402

MiB = 1 << 20
PREFIX = "te" + os.urandom(3).hex()
CLUSTER = None


def wrong_signature_probe(g, first, bucket):
    """A GET with a wrong signature (it needs no cluster): (status, body,
    seconds it took)."""
    t0 = time.monotonic()
    probe = http.client.HTTPConnection(g.host, g.port, timeout=3)
    now = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    probe.request("GET", f"/{bucket}/warm", headers={
        "Authorization": f"AWS4-HMAC-SHA256 Credential={first.ak}/{now[:8]}/us-east-1/"
                         "s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                         "Signature=" + "0" * 64,
        "x-amz-date": now, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    resp = probe.getresponse()
    answer = resp.read()
    waited = time.monotonic() - t0
    probe.close()
    return resp.status, answer, waited


def headers_then_body(g, first, bucket, key, data, what, query=""):
    """With the OSD stopped, a signed PUT of data to key (?query) sends its
    headers only; a wrongly signed request must get its 403 within 3 s.
    The OSD resumed, the body is sent: the 200 response."""
    osd = CLUSTER.osd_pid(0)
    os.kill(osd, signal.SIGSTOP)
    try:
        put = start_put(g, bucket, key, data, 0, query=query)  # headers only
        time.sleep(0.5)  # the event thread has run the request's begin
        status, answer, waited = wrong_signature_probe(g, first, bucket)
    finally:
        os.kill(osd, signal.SIGCONT)
    assert status == 403, (status, answer)
    assert b"<Code>SignatureDoesNotMatch</Code>" in answer, answer
    assert waited < 3, waited
    log(f"403 after {waited * 1e3:.0f} ms with the OSD stopped and {what} begun")
    put.send(data)
    r = put.getresponse()
    body = r.read()
    assert r.status == 200, (r.status, body)
    put.close()
    return r


@test
def put_headers_do_not_hold_the_event_thread_on_a_stopped_osd(first):
    g = gateway(CLUSTER, PREFIX, keys=(first.ak, first.sk),
                args=["--threads", "1", "--inline-max", "65536"])
    try:
        c = g.client()
        bucket = first.bucket_name("evt")
        c.create_bucket(Bucket=bucket)
        c.put_object(Bucket=bucket, Key="warm", Body=b"w" * (256 << 10))
        data = hashlib.sha256(b"evt").digest() * (MiB // 32)
        headers_then_body(g, first, bucket, "big", data, "a PUT")
        got = c.get_object(Bucket=bucket, Key="big")
        assert got["Body"].read() == data
        assert got["ETag"] == '"' + hashlib.md5(data).hexdigest() + '"', got["ETag"]
    finally:
        g.stop()


@test
def part_headers_do_not_hold_the_event_thread_on_a_stopped_osd(first):
    g = gateway(CLUSTER, PREFIX, keys=(first.ak, first.sk), args=["--threads", "1"])
    try:
        c = g.client()
        bucket = first.bucket_name("evtp")
        c.create_bucket(Bucket=bucket)
        c.put_object(Bucket=bucket, Key="warm", Body=b"w" * 1024)
        uid = c.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
        data = hashlib.sha256(b"evtp").digest() * (MiB // 32)
        r = headers_then_body(g, first, bucket, "mp", data, "an UploadPart",
                              query=f"partNumber=1&uploadId={uid}")
        etag = r.getheader("ETag")
        assert etag == '"' + hashlib.md5(data).hexdigest() + '"', etag
        c.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": etag}]})
        got = c.get_object(Bucket=bucket, Key="mp")
        assert got["Body"].read() == data
        # No such upload: the late read answers it, after a body or at the commit.
        bogus = "0" * 32
        for body in (b"part", b""):
            try:
                c.upload_part(Bucket=bucket, Key="mp", UploadId=bogus, PartNumber=1, Body=body)
                raise AssertionError(f"UploadPart of {len(body)} bytes to no upload succeeded")
            except c.exceptions.ClientError as e:
                err = e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
                assert err == ("NoSuchUpload", 404), (len(body), e.response)
    finally:
        g.stop()


def main():
    global CLUSTER
    from ceph_cluster import CephCluster
    require_daemon_on_rados()
    with CephCluster(osds=1, store="memstore") as c:
        CLUSTER = c
        log(f"cluster ({c.nosds} {c.store} OSD(s)) up in {c.start_seconds:.1f} s")
        rados_init(c, PREFIX)
        first = gateway(c, PREFIX, args=["--ilm-interval-seconds", "0"])
        try:
            run(first)  # exits
        finally:
            first.stop()


if __name__ == "__main__":
    main()
