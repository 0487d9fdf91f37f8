"""remote_tier_common.py - what the remote S3 tier's tests share
(test_remote_tier.py on local drives, test_rados_remote_tier.py on a
RADOS store): object bodies, lifecycle rules, storage classes, multipart
uploads, /metrics and admin info readings, and the keys of a bucket on
the remote."""

import base64
import datetime
import hashlib
import urllib.request

from strata_harness import expect_error

MiB = 1 << 20


def metrics(s):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    out = {}
    with opener.open(f"{s.endpoint}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
    return out


def metric(s, name):
    return metrics(s).get(name, 0.0)


def remote_info(s, tier):
    st, doc = s.admin_get("info")
    assert st == 200, doc
    for t in doc["tiers"]:
        if t["name"] == tier:
            return t["remote"]
    raise AssertionError(f"no tier {tier} in admin info: {doc}")


def body(n, seed):
    return hashlib.sha256(seed.encode()).digest() * (n // 32) + b"r" * (n % 32)


def md5(b):
    return hashlib.md5(b).hexdigest()


def bucket_keys(client, bucket):
    """Every key of bucket, through client (of the remote)."""
    out = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out += [o["Key"] for o in page.get("Contents", [])]
    return out


def lifecycle(c, b, cls, days=0):
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "age-out", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": days, "StorageClass": cls}]}]})


def storage_class(c, b, k, vid=None):
    kw = {"VersionId": vid} if vid else {}
    return c.head_object(Bucket=b, Key=k, **kw).get("StorageClass", "STANDARD")


def mpu(c, b, k, parts):
    up = c.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
    done = [{"PartNumber": i, "ETag": c.upload_part(Bucket=b, Key=k, UploadId=up, PartNumber=i,
                                                    Body=p)["ETag"]}
            for i, p in enumerate(parts, 1)]
    return c.complete_multipart_upload(Bucket=b, Key=k, UploadId=up,
                                       MultipartUpload={"Parts": done})["ETag"]


def lock_bucket(s, name):
    """A client, a new bucket with Object Lock, a retain-until date two
    days ahead, a body and its Content-MD5 (which locked PUTs need)."""
    c = s.client()
    b = s.bucket_name(name)
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)).replace(
        microsecond=0)
    data = body(MiB + 3, b)
    return c, b, until, data, base64.b64encode(hashlib.md5(data).digest()).decode()


def class_writes_refused(c, b, cls):
    """A PUT and a CreateMultipartUpload naming a remote tier's class cls
    are refused (remote tiers take data by lifecycle transitions only)."""
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x" * 70000, StorageClass=cls),
                 "InvalidStorageClass", 400)
    expect_error(lambda: c.create_multipart_upload(Bucket=b, Key="m", StorageClass=cls),
                 "InvalidStorageClass", 400)
