"""remote_tier_common.py - what the remote S3 tier's tests share
(test_remote_tier.py on local drives, test_rados_remote_tier.py on a
RADOS store): object bodies, lifecycle rules, storage classes, multipart
uploads, /metrics and admin info readings, the keys of a bucket on
the remote, and what RestoreObject's tests of an archive tier check
(test_rados_restore.py on RADOS): the x-amz-restore header and the 403 of
a GET before a restore."""

import base64
import datetime
import hashlib
import re
import time
import urllib.request

from strata_harness import expect_error, wait_until

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


def locked_pair(s, name):
    """lock_bucket(s, name) with two versions in it: "retained" (COMPLIANCE
    until the date) and "held" (legal hold ON); c, b, until, data and the
    two version ids."""
    c, b, until, data, cmd5 = lock_bucket(s, name)
    v_ret = c.put_object(Bucket=b, Key="retained", Body=data, ContentMD5=cmd5,
                         ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    v_hold = c.put_object(Bucket=b, Key="held", Body=data, ContentMD5=cmd5,
                          ObjectLockLegalHoldStatus="ON")["VersionId"]
    return c, b, until, data, v_ret, v_hold


def class_writes_refused(c, b, cls):
    """A PUT and a CreateMultipartUpload naming a remote tier's class cls
    are refused (remote tiers take data by lifecycle transitions only)."""
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x" * 70000, StorageClass=cls),
                 "InvalidStorageClass", 400)
    expect_error(lambda: c.create_multipart_upload(Bucket=b, Key="m", StorageClass=cls),
                 "InvalidStorageClass", 400)


def lock_change_survives_a_kill(s, remote, c, b, vid, latest, remote_lock, tier="vault",
                                check=None):
    """With the remote strata down: a retention of version vid of b/k
    changed to COMPLIANCE until latest is applied by s at once and queued,
    s is killed (kill -9) and started again with it still pending (and
    check(s) true, when given), and once the remote is back the change reaches the remote
    object (remote_lock() == (COMPLIANCE, latest, ON): a legal hold was set
    before), nothing pending and nothing failed."""
    def while_down():
        c.put_object_retention(Bucket=b, Key="k", VersionId=vid, Retention={
            "Mode": "COMPLIANCE", "RetainUntilDate": latest})
        assert c.get_object_retention(Bucket=b, Key="k", VersionId=vid)["Retention"][
            "RetainUntilDate"] == latest
        wait_until("the change queued",
                   lambda: metric(s, "strata_remote_tier_lock_updates_pending") >= 1)
        s.restart(kill=True)
        assert remote_info(s, tier)["lock_updates"]["pending"] >= 1
        assert check is None or check(s), "the restarted source does not say it is pending"
    remote.restart(between=while_down)
    wait_until("the extension on the remote after its return",
               lambda: remote_lock()[1] == latest, timeout=120)
    assert remote_lock() == ("COMPLIANCE", latest, "ON"), remote_lock()
    wait_until("nothing pending", lambda: remote_info(s, tier)["lock_updates"]["pending"] == 0)
    assert remote_info(s, tier)["lock_updates"]["failed"] == 0


# ---- the archive tier (--tier NAME:s3,restore:URL) -------------------------------------
GLACIER_MSG = "The operation is not valid for the object's storage class"
RESTORE_DONE = re.compile(r'ongoing-request="false", expiry-date="([A-Z][a-z]{2}, \d{2} '
                          r'[A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)"')


def restore_hdr(c, b, k, vid=None):
    kw = {"VersionId": vid} if vid else {}
    return c.head_object(Bucket=b, Key=k, **kw).get("Restore")


def wait_restored(c, b, k, what):
    wait_until(what, lambda: (restore_hdr(c, b, k) or "").startswith('ongoing-request="false"'))


def expiry_of(hdr):
    m = RESTORE_DONE.fullmatch(hdr or "")
    assert m, f"x-amz-restore {hdr!r}"
    return datetime.datetime.strptime(m.group(1), "%a, %d %b %Y %H:%M:%S GMT").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def assert_archived(c, b, k, vid=None):
    kw = {"VersionId": vid} if vid else {}
    for extra in ({}, {"Range": "bytes=0-9"}):
        e = expect_error(lambda: c.get_object(Bucket=b, Key=k, **kw, **extra),
                         "InvalidObjectState", 403)
        assert e["Error"]["Message"] == GLACIER_MSG, e


def restored_reads(c, b, k, data, days):
    """b/k restored for days (test days of 1 s): its x-amz-restore says
    done with an expiry days after now, rounded up to a whole day; GET and
    ranges (across the 4 MiB read-ahead window and the tail) serve data,
    with the header and the archive class.  The expiry (Unix s)."""
    exp = expiry_of(restore_hdr(c, b, k))
    assert time.time() + days - 3 <= exp <= time.time() + days + 2, (exp, time.time())
    assert md5(c.get_object(Bucket=b, Key=k)["Body"].read()) == md5(data)
    for lo, hi in ((0, 0), (10, 5000), (4 * MiB - 100, 4 * MiB + 100),
                   (len(data) - 17, len(data) - 1)):
        if hi >= len(data):
            continue
        g = c.get_object(Bucket=b, Key=k, Range=f"bytes={lo}-{hi}")
        assert g["ContentRange"] == f"bytes {lo}-{hi}/{len(data)}", g["ContentRange"]
        assert g["Body"].read() == data[lo:hi + 1], f"bytes {lo}-{hi} differ"
    g = c.get_object(Bucket=b, Key=k)
    assert RESTORE_DONE.fullmatch(g["ResponseMetadata"]["HTTPHeaders"]["x-amz-restore"])
    assert g["StorageClass"] == "DEEP_ARCHIVE"
    return exp


def restore_again(c, b, k, vid, exp):
    """A restore of b/k's ready copy (version vid, expiry exp) for 60 days:
    200 and the new expiry."""
    r = c.restore_object(Bucket=b, Key=k, VersionId=vid, RestoreRequest={"Days": 60})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200, r
    exp2 = expiry_of(restore_hdr(c, b, k))
    assert exp2 >= exp + 25 and exp2 <= time.time() + 62, (exp, exp2)


def move_to_archive(c, b, objs):
    """objs {key: bytes or [part bytes]} put into versioned bucket b and
    moved to the archive class DEEP_ARCHIVE by a lifecycle rule (removed
    after): {key: version id}."""
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    vids = {}
    for k, v in objs.items():
        if isinstance(v, list):
            mpu(c, b, k, v)
            vids[k] = c.head_object(Bucket=b, Key=k)["VersionId"]
        else:
            vids[k] = c.put_object(Bucket=b, Key=k, Body=v)["VersionId"]
    lifecycle(c, b, "DEEP_ARCHIVE")
    for k in objs:
        wait_until(f"{k} archived", lambda k=k: storage_class(c, b, k) == "DEEP_ARCHIVE", 60)
    c.delete_bucket_lifecycle(Bucket=b)
    return vids
