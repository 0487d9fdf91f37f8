"""key_writers.py - what the tests of one key's change order share
(test_notify.py, test_rados_rgw_replication.py): several clients changing
one key at once by every path that makes a version or a delete marker
(PutObject, CopyObject, CompleteMultipartUpload, a POST upload,
DeleteObject), and a key's history as a bucket lists it, versions and
delete markers interleaved, newest first."""

import html
import multiprocessing
import re

import botocore.exceptions
import requests


def sources(c, bucket, key, clients, each):
    """The objects the burst copies from: one of its own per copy (its
    body, so the copy's ETag, different from any other)."""
    for ci in range(clients):
        for i in range(each):
            c.put_object(Bucket=bucket, Key=f"src/{key}/{ci}/{i}",
                         Body=f"copy source {key} {ci} {i}\n".encode() * 30)


PATHS = ("put", "copy", "multipart", "post", "delete")


def _writer(make_client, bucket, key, ci, each, paths, errs):
    try:
        c = make_client[ci % len(make_client)]() if isinstance(make_client, (list, tuple)) \
            else make_client()
        for i in range(each):
            body = f"{key} from {ci}, #{i}\n".encode() * 40
            step = paths[(ci + i) % len(paths)]
            if step == "put":
                c.put_object(Bucket=bucket, Key=key, Body=body)
            elif step == "copy":
                c.copy_object(Bucket=bucket, Key=key,
                              CopySource={"Bucket": bucket, "Key": f"src/{key}/{ci}/{i}"})
            elif step == "multipart":
                up = c.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
                et = c.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1,
                                   Body=body)["ETag"]
                c.complete_multipart_upload(
                    Bucket=bucket, Key=key, UploadId=up,
                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": et}]})
            elif step == "post":
                post = c.generate_presigned_post(Bucket=bucket, Key=key, ExpiresIn=300)
                r = requests.post(post["url"], data=post["fields"],
                                  files={"file": ("f", body, "text/plain")}, timeout=60)
                assert r.status_code == 204, (r.status_code, r.text)
            elif step == "tag":
                try:
                    c.put_object_tagging(Bucket=bucket, Key=key, Tagging={"TagSet": [
                        {"Key": "by", "Value": f"{ci}-{i}"}]})
                except botocore.exceptions.ClientError as e:  # the latest a marker: 404
                    if e.response["Error"]["Code"] != "NoSuchKey":
                        raise
            else:
                c.delete_object(Bucket=bucket, Key=key)
    except Exception as e:  # noqa: BLE001 - reported by burst
        errs.put(f"writer {ci}: {e!r}")


def burst(make_client, bucket, key, clients=4, each=10, paths=PATHS):
    """each changes of key from each of clients writers at once (processes
    of their own, so their requests really overlap), by the paths in turn:
    "put", "copy", "multipart" (one part), "post" (a POST upload),
    "tag" (PutObjectTagging of the latest, unless it is a delete marker)
    and "delete" (a delete marker: the bucket is versioned); every body
    different.  A copy needs sources(...) written first.  make_client: a
    function, or a list of them that writer ci takes ci % len of (clients
    of several gateways)."""
    ctx = multiprocessing.get_context("fork")
    errs = ctx.Queue()
    ps = [ctx.Process(target=_writer, args=(make_client, bucket, key, ci, each, paths, errs))
          for ci in range(clients)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    got = []
    while not errs.empty():
        got.append(errs.get())
    assert not got and all(p.exitcode == 0 for p in ps), (got, [p.exitcode for p in ps])


def history(c, bucket, key):
    """key's versions and delete markers, newest first, in the order the
    ListObjectVersions answer interleaves them: (version id, ETag without
    quotes, or None for a delete marker).  Up to 1000."""
    raw = []

    def grab(http_response, **_):
        raw.append(http_response.content)

    c.meta.events.register("after-call.s3.ListObjectVersions", grab)
    try:
        out = c.list_object_versions(Bucket=bucket, Prefix=key, MaxKeys=1000)
    finally:
        c.meta.events.unregister("after-call.s3.ListObjectVersions", grab)
    assert not out.get("IsTruncated"), "more than 1000 versions"
    got = []
    for m in re.finditer(r"<(Version|DeleteMarker)>(.*?)</\1>", raw[-1].decode(), re.S):
        part = m.group(2)
        if html.unescape(re.search(r"<Key>(.*?)</Key>", part, re.S).group(1)) != key:
            continue
        vid = re.search(r"<VersionId>(.*?)</VersionId>", part).group(1)
        etag = re.search(r"<ETag>(.*?)</ETag>", part)
        got.append((vid, html.unescape(etag.group(1)).strip('"') if etag else None))
    return got
