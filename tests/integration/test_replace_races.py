#!/usr/bin/python3
"""test_replace_races.py - races between readers, writers and bucket
deletion against a live strata:

- slow GETs of a 64 MiB object (single-part and multipart) while another
  client overwrites it 10 times and then deletes it: every GET that got a
  200 delivers the complete body of one of the written versions (MD5
  compared), never a truncated one; GETs sent after the delete get 404;
- a multipart object's data removed behind the daemon's back mid-body:
  the 200 is cut short with a closed connection (never a clean short
  body) and the log says NOTFOUND, not CORRUPT;
- DeleteBucket on a bucket holding only incomplete multipart uploads
  succeeds and aborts them (AWS behaviour), while a bucket with an object
  still answers BucketNotEmpty and keeps its uploads;
- rounds of PUT and CompleteMultipartUpload racing DeleteBucket +
  CreateBucket of the same name: every write either failed (NoSuchBucket /
  NoSuchUpload) or its object is in the bucket as it stood at the commit;
  a re-created bucket never holds an object committed before it existed
  (LastModified before the bucket's CreationDate, or a 200 received before
  CreateBucket was sent).

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
    # The first GET started a second before any write, and the next ones
    # before each overwrite: they overlap the commits (a slow machine may
    # turn the last few into 404s, which is fine).
    assert outcome[0][1][0] == 200 and full >= 2, f"only {full} GETs completed"
    c.delete_bucket(Bucket=b)


@test
def get_during_overwrite_single_part(s):
    get_while_replaced(s, False)


@test
def get_during_overwrite_multipart(s):
    get_while_replaced(s, True)


def data_files(s):
    """Shard files under every drive's data/ of our daemon."""
    out = set()
    for d in range(1, 5):
        for root, _, files in os.walk(os.path.join(s.tmp, f"d{d}", "data")):
            out.update(os.path.join(root, f) for f in files)
    return out


@test
def vanished_data_aborts_the_connection(s):
    """Data that is really gone mid-body (here removed behind the daemon's
    back) is never a clean, silently short 200: the connection is cut
    before Content-Length bytes, and the log says not found, not corrupt."""
    if not s.log_path:
        return  # an external daemon: its drives are not ours to touch
    c = s.client()
    b = s.bucket_name("gone")
    c.create_bucket(Bucket=b)
    before = data_files(s)
    part = 16 * MiB  # more than the socket buffers hold: part 2 is opened late
    body = os.urandom(2 * part)
    uid = c.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    parts = []
    for i in range(2):
        r = c.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=i + 1,
                          Body=body[i * part:(i + 1) * part])
        parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
    c.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": parts})
    ours = data_files(s) - before
    assert len(ours) == 8, ours  # 2 parts x 4 drives
    url = urllib.parse.urlsplit(c.generate_presigned_url(
        "get_object", Params={"Bucket": b, "Key": "k"}, ExpiresIn=600))
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    conn.request("GET", url.path + "?" + url.query)
    resp = conn.getresponse()
    assert resp.status == 200
    length = int(resp.getheader("Content-Length"))
    got = len(resp.read(MiB))
    for f in ours:
        os.unlink(f)
    timed_out = False
    try:
        while got < length:
            chunk = resp.read(min(MiB, length - got))
            if not chunk:
                break
            got += len(chunk)
    except TimeoutError:
        timed_out = True
    except (http.client.IncompleteRead, ConnectionError, OSError):
        pass
    conn.close()
    assert part <= got < length, f"{got} of {length} bytes: not cut where the data vanished"
    assert not timed_out, "the connection stayed open: the client waited for its own timeout"
    time.sleep(0.2)
    lines = [ln for ln in open(s.log_path, errors="replace") if "read at" in ln and b in ln]
    assert lines and all("NOTFOUND" in ln and "CORRUPT" not in ln for ln in lines), lines[:5]
    # The failed read ends the body once; it is not asked for again and again.
    assert len(lines) <= 4, f"{len(lines)} failed reads logged for one GET"
    c.delete_object(Bucket=b, Key="k")
    c.delete_bucket(Bucket=b)


@test
def delete_bucket_aborts_uploads(s):
    c = s.client()
    b = s.bucket_name("uploads")
    c.create_bucket(Bucket=b)
    ids = []
    for i in range(3):
        key = f"dir/k{i}"
        uid = c.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
        c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=1, Body=b"x" * 1000)
        ids.append((key, uid))
    # An object makes it non-empty: the uploads stay.
    c.put_object(Bucket=b, Key="obj", Body=b"o")
    expect_error(lambda: c.delete_bucket(Bucket=b), "BucketNotEmpty", 409)
    ups = c.list_multipart_uploads(Bucket=b).get("Uploads", [])
    assert sorted((u["Key"], u["UploadId"]) for u in ups) == sorted(ids), ups
    c.delete_object(Bucket=b, Key="obj")
    # Only uploads left: the bucket goes and takes them along.
    r = c.delete_bucket(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    expect_error(lambda: c.head_bucket(Bucket=b), "404", 404)
    c.create_bucket(Bucket=b)
    assert c.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    key, uid = ids[0]
    expect_error(lambda: c.list_parts(Bucket=b, Key=key, UploadId=uid), "NoSuchUpload", 404)
    c.delete_bucket(Bucket=b)


def racer_put(c, b, key):
    try:
        c.put_object(Bucket=b, Key=key, Body=b"p" * 300_000)  # not inline: data + record
        return "ok", time.monotonic()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], time.monotonic()


def racer_mpu(c, b, key):
    try:
        uid = c.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
        r = c.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=1, Body=b"m" * 1000)
        c.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": r["ETag"]}]})
        return "ok", time.monotonic()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], time.monotonic()


def racer_drop(c, b):
    """Delete the bucket (emptying it first when DeleteBucket says it is not
    empty) and create it again; returns (keys removed by the emptying, the
    monotonic time just before CreateBucket was sent)."""
    removed = set()
    for _ in range(50):
        try:
            c.delete_bucket(Bucket=b)
            break
        except botocore.exceptions.ClientError as e:
            if e.response["Error"]["Code"] != "BucketNotEmpty":
                raise
            for o in c.list_objects_v2(Bucket=b).get("Contents", []):
                c.delete_object(Bucket=b, Key=o["Key"])
                removed.add(o["Key"])
    else:
        raise AssertionError("bucket never became deletable")
    t = time.monotonic()
    c.create_bucket(Bucket=b)
    return removed, t


@test
def writes_racing_delete_bucket(s):
    c = s.client()
    b = s.bucket_name("race")
    c.create_bucket(Bucket=b)
    allowed_fail = {"NoSuchBucket", "NoSuchUpload"}
    rounds, landed, gone, refused = 40, 0, 0, 0
    clients = [s.client() for _ in range(5)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        for rnd in range(rounds):
            keys = [f"r{rnd}/put{i}" for i in range(3)]
            futs = {k: pool.submit(racer_put, clients[i], b, k) for i, k in enumerate(keys)}
            futs[f"r{rnd}/mpu"] = pool.submit(racer_mpu, clients[3], b, f"r{rnd}/mpu")
            time.sleep(0.004 * (rnd % 6))
            removed, created_at = pool.submit(racer_drop, clients[4], b).result()
            res = {k: f.result() for k, f in futs.items()}
            objs = c.list_objects_v2(Bucket=b).get("Contents", [])
            listed = {o["Key"] for o in objs}
            created = next(x["CreationDate"] for x in c.list_buckets()["Buckets"]
                           if x["Name"] == b)
            for o in objs:
                # Committed (mtime) before this bucket was created: it was
                # written into the deleted one and resurfaced here.
                assert o["LastModified"] >= created, \
                    f"round {rnd}: {o['Key']} ({o['LastModified']}) predates its bucket ({created})"
            for k, (r, done_at) in res.items():
                ok_fail = allowed_fail if k.endswith("/mpu") else {"NoSuchBucket"}
                assert r == "ok" or r in ok_fail, f"round {rnd} {k}: {r}"
                if r != "ok":
                    assert k not in listed, f"round {rnd}: failed write {k} is in the bucket"
                    refused += 1
                elif k in listed:
                    # In the re-created bucket: it must have committed after
                    # the bucket was created, so it cannot have answered
                    # before CreateBucket was even sent.
                    assert done_at > created_at, \
                        f"round {rnd}: {k} answered before the bucket existed, yet is in it"
                    landed += 1
                else:
                    # Not in the new bucket: it was in the old one, which
                    # was emptied and deleted.
                    assert k in removed, f"round {rnd}: {k} answered 200 but is lost"
                    gone += 1
            for k in listed:
                assert k in res, f"round {rnd}: unexpected {k}"
                c.delete_object(Bucket=b, Key=k)
            for u in c.list_multipart_uploads(Bucket=b).get("Uploads", []):
                c.abort_multipart_upload(Bucket=b, Key=u["Key"], UploadId=u["UploadId"])
    log(f"{rounds} rounds: {landed} writes in the re-created bucket, {gone} in the deleted "
        f"one, {refused} refused")
    c.delete_bucket(Bucket=b)


if __name__ == "__main__":
    run(Strata())
