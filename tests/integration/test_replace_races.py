#!/usr/bin/python3
"""test_replace_races.py - races between readers and writers against a
live strata:

- slow GETs of a 64 MiB object (single-part and multipart) while another
  client overwrites it 10 times and then deletes it: every GET that got a
  200 delivers the complete body of one of the written versions (MD5
  compared), never a truncated one; GETs sent after the delete get 404.

Run by CTest (integration label) with /usr/bin/python3.
"""

import concurrent.futures
import hashlib
import http.client
import os
import sys
import threading
import time
import urllib.parse

import botocore.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, log, run, test  # noqa: E402

MiB = 1024 * 1024
SIZE = 64 * MiB
PART = 8 * MiB
RATE = 24 * MiB  # bytes per second a slow reader takes


def slow_get(s, url, rate):
    """GET url reading at about rate bytes/s; returns (status, md5 hex or
    error text, bytes read, content-length)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request("GET", u.path + "?" + u.query)
        resp = conn.getresponse()
        if resp.status != 200:
            resp.read()
            return resp.status, None, 0, 0
        length = int(resp.getheader("Content-Length"))
        h = hashlib.md5()
        got = 0
        t0 = time.monotonic()
        try:
            while got < length:
                chunk = resp.read(min(256 * 1024, length - got))
                if not chunk:
                    break
                h.update(chunk)
                got += len(chunk)
                ahead = got / rate - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
        except (http.client.IncompleteRead, ConnectionError, OSError) as e:
            return 200, f"read error after {got} bytes: {e!r}", got, length
        return 200, h.hexdigest(), got, length
    finally:
        conn.close()


def put_version(c, b, key, multipart):
    """Write a fresh random 64 MiB body; returns its MD5 hex."""
    body = os.urandom(SIZE)
    digest = hashlib.md5(body).hexdigest()
    if not multipart:
        c.put_object(Bucket=b, Key=key, Body=body)
        return digest
    uid = c.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
    parts = []
    for i in range(SIZE // PART):
        r = c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i + 1,
                          Body=body[i * PART:(i + 1) * PART])
        parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
    c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid,
                                MultipartUpload={"Parts": parts})
    return digest


def get_while_replaced(s, multipart):
    c = s.client()
    b = s.bucket_name("mp" if multipart else "sp")
    c.create_bucket(Bucket=b)
    key = "big.bin"
    versions = {put_version(c, b, key, multipart)}
    url = c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": key},
                                   ExpiresIn=600)
    results = []  # (started after the delete?, future)
    deleted = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        def start_reader():
            results.append((deleted.is_set(), pool.submit(slow_get, s, url, RATE)))

        start_reader()
        time.sleep(1.0)  # the first reader is well into the body
        for _ in range(10):
            start_reader()
            time.sleep(0.2)
            versions.add(put_version(c, b, key, multipart))
        start_reader()
        time.sleep(0.2)
        c.delete_object(Bucket=b, Key=key)
        deleted.set()
        start_reader()
        outcome = [(after, f.result()) for after, f in results]
    full = 0
    for i, (after, (status, digest, got, length)) in enumerate(outcome):
        if after:
            assert status == 404, f"GET {i} sent after the delete answered {status}"
            continue
        if status == 404:
            continue  # raced the delete: not found is a correct answer
        assert status == 200, f"GET {i}: status {status}"
        assert length == SIZE and got == SIZE, \
            f"GET {i}: truncated 200: {got} of {length} bytes ({digest})"
        assert digest in versions, f"GET {i}: body matches no written version"
        full += 1
    log(f"{'multipart' if multipart else 'single-part'}: {full} complete GETs of "
        f"{len(outcome)}, {len(versions)} versions written")
    assert full >= 10, f"only {full} GETs completed"
    c.delete_bucket(Bucket=b)


@test
def get_during_overwrite_single_part(s):
    get_while_replaced(s, False)


@test
def get_during_overwrite_multipart(s):
    get_while_replaced(s, True)


if __name__ == "__main__":
    run(Strata())
