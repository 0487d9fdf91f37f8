#!/usr/bin/python3
"""test_object_lock.py - S3 Object Lock through boto3 against a live strata:
CreateBucket with ObjectLockEnabledForBucket (versioning on for good,
suspend -> InvalidBucketState), Put/GetObjectLockConfiguration (enable on a
versioned bucket, InvalidBucketState on an unversioned one,
ObjectLockConfigurationNotFoundError, MalformedXML for Days+Years,
InvalidRetentionPeriod for Days <= 0), lock headers on PutObject /
CreateMultipartUpload / CopyObject (InvalidRequest on a bucket without
lock, InvalidArgument for a past date or a lone mode, InvalidRequest without
Content-MD5 or a checksum), the lock headers on GET/HEAD,
Put/GetObjectRetention and Put/GetObjectLegalHold per version
(NoSuchObjectLockConfiguration, MalformedXML), GOVERNANCE with and without
x-amz-bypass-governance-retention, COMPLIANCE extend-only for the root user
too, legal hold on/off, default retention applied to PUT, multipart and
copy, a DeleteObjects batch that mixes locked and unlocked keys, delete
markers on a lock bucket, overwrites adding versions, and DeleteBucket
refused while locked versions remain.
Run by CTest (integration label) with /usr/bin/python3.
"""

import base64
import datetime
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, run, test  # noqa: E402

UTC = datetime.timezone.utc


def future(seconds):
    return datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(seconds=seconds)


def lock_bucket(s, prefix, default=None):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    if default:
        c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": default}})
    return c, b


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def put_locked(c, b, key, data=b"locked data", **kw):
    return c.put_object(Bucket=b, Key=key, Body=data, ContentMD5=md5_b64(data), **kw)


def strip_digests(request, **kw):
    """A before-sign hook: drop the body digests botocore adds by itself."""
    for h in list(request.headers.keys()):
        if h.lower() in ("content-md5", "x-amz-sdk-checksum-algorithm") or \
                h.lower().startswith("x-amz-checksum-"):
            del request.headers[h]


def hdrs(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"]


@test
def create_lock_bucket(s):
    c, b = lock_bucket(s, "olcreate")
    assert c.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    cfg = c.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    assert cfg == {"ObjectLockEnabled": "Enabled"}, cfg
    expect_error(lambda: c.put_bucket_versioning(
        Bucket=b, VersioningConfiguration={"Status": "Suspended"}), "InvalidBucketState", 409)
    assert c.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"


@test
def lock_configuration(s):
    c = s.client()
    b = s.bucket_name("olcfg")
    c.create_bucket(Bucket=b)
    expect_error(lambda: c.get_object_lock_configuration(Bucket=b),
                 "ObjectLockConfigurationNotFoundError", 404)
    enable = {"ObjectLockEnabled": "Enabled"}
    expect_error(lambda: c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=enable),
                 "InvalidBucketState", 409)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    # AWS now lets an existing versioned bucket turn Object Lock on.
    c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=enable)
    assert c.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == enable
    rule = {"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 3}}}
    c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=rule)
    assert c.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == rule
    rule = {"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 2}}}
    c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=rule)
    assert c.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == rule
    # Validation as AWS: Days and Years together, a period <= 0, a bad mode,
    # no ObjectLockEnabled.
    bad = {"ObjectLockEnabled": "Enabled",
           "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1, "Years": 1}}}
    expect_error(lambda: c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=bad),
                 "MalformedXML", 400)
    for days in (0, -5):
        bad = {"ObjectLockEnabled": "Enabled",
               "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": days}}}
        expect_error(lambda: c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=bad),
                     "InvalidRetentionPeriod", 400)
    bad = {"ObjectLockEnabled": "Enabled",
           "Rule": {"DefaultRetention": {"Mode": "FOREVER", "Days": 1}}}
    expect_error(lambda: c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=bad),
                 "MalformedXML", 400)
    bad = {"Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
    expect_error(lambda: c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=bad),
                 "MalformedXML", 400)
    # The failed calls left the configuration alone.
    assert c.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == rule
    # Clearing the default keeps the lock enabled.
    c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=enable)
    assert c.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == enable


@test
def no_lock_bucket_refuses_lock_parameters(s):
    c = s.client()
    b = s.bucket_name("olnone")
    c.create_bucket(Bucket=b)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    r = expect_error(lambda: put_locked(c, b, "k", ObjectLockMode="GOVERNANCE",
                                        ObjectLockRetainUntilDate=future(60)),
                     "InvalidRequest", 400)
    assert "Object Lock" in r["Error"]["Message"], r
    expect_error(lambda: put_locked(c, b, "k", ObjectLockLegalHoldStatus="ON"), "InvalidRequest", 400)
    expect_error(lambda: c.create_multipart_upload(Bucket=b, Key="k", ObjectLockLegalHoldStatus="ON"),
                 "InvalidRequest", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404")  # nothing was stored
    c.put_object(Bucket=b, Key="k", Body=b"x")
    expect_error(lambda: c.put_object_retention(
        Bucket=b, Key="k", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(60)}),
        "InvalidRequest", 400)
    expect_error(lambda: c.get_object_retention(Bucket=b, Key="k"), "InvalidRequest", 400)
    expect_error(lambda: c.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"}),
                 "InvalidRequest", 400)
    expect_error(lambda: c.get_object_legal_hold(Bucket=b, Key="k"), "InvalidRequest", 400)
    expect_error(lambda: c.copy_object(Bucket=b, Key="k2", CopySource={"Bucket": b, "Key": "k"},
                                       ObjectLockLegalHoldStatus="ON"), "InvalidRequest", 400)


@test
def put_headers_and_validation(s):
    c, b = lock_bucket(s, "olput")
    until = future(3600)
    r = put_locked(c, b, "k", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until,
                   ObjectLockLegalHoldStatus="ON")
    vid = r["VersionId"]
    for call in (c.head_object, c.get_object):
        h = call(Bucket=b, Key="k", VersionId=vid)
        assert h["ObjectLockMode"] == "COMPLIANCE", h
        assert h["ObjectLockRetainUntilDate"] == until, (h["ObjectLockRetainUntilDate"], until)
        assert h["ObjectLockLegalHoldStatus"] == "ON", h
        assert hdrs(h)["x-amz-object-lock-retain-until-date"].endswith(".000Z"), hdrs(h)
    # Bad requests store nothing.
    expect_error(lambda: put_locked(c, b, "bad", ObjectLockMode="GOVERNANCE",
                                    ObjectLockRetainUntilDate=future(-60)), "InvalidArgument", 400)
    expect_error(lambda: put_locked(c, b, "bad", ObjectLockMode="GOVERNANCE"), "InvalidArgument", 400)
    expect_error(lambda: put_locked(c, b, "bad", ObjectLockRetainUntilDate=future(60)),
                 "InvalidArgument", 400)
    expect_error(lambda: put_locked(c, b, "bad", ObjectLockMode="WORM",
                                    ObjectLockRetainUntilDate=future(60)), "InvalidArgument", 400)
    expect_error(lambda: put_locked(c, b, "bad", ObjectLockLegalHoldStatus="MAYBE"),
                 "InvalidArgument", 400)
    # Lock parameters need Content-MD5 or a checksum: strip what botocore
    # adds by itself before it signs.
    bare = s.client()
    bare.meta.events.register("before-sign.s3.PutObject", strip_digests)
    r = expect_error(lambda: bare.put_object(Bucket=b, Key="bad", Body=b"x", ObjectLockMode="GOVERNANCE",
                                             ObjectLockRetainUntilDate=future(60)), "InvalidRequest", 400)
    assert "Content-MD5" in r["Error"]["Message"], r
    bare.put_object(Bucket=b, Key="nolock", Body=b"x")  # without lock parameters it is fine
    r = c.put_object(Bucket=b, Key="ck", Body=b"x", ChecksumAlgorithm="CRC32",
                     ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=future(60))
    assert c.head_object(Bucket=b, Key="ck")["ObjectLockMode"] == "GOVERNANCE"
    expect_error(lambda: c.head_object(Bucket=b, Key="bad"), "404")
    # An object without a lock has no lock headers and no retention.
    c.put_object(Bucket=b, Key="plain", Body=b"x")
    h = c.head_object(Bucket=b, Key="plain")
    assert "ObjectLockMode" not in h and "ObjectLockLegalHoldStatus" not in h, h
    expect_error(lambda: c.get_object_retention(Bucket=b, Key="plain"),
                 "NoSuchObjectLockConfiguration", 404)
    expect_error(lambda: c.get_object_legal_hold(Bucket=b, Key="plain"),
                 "NoSuchObjectLockConfiguration", 404)
    expect_error(lambda: c.get_object_retention(Bucket=b, Key="absent"), "NoSuchKey", 404)


@test
def governance_with_and_without_bypass(s):
    c, b = lock_bucket(s, "olgov")
    until = future(3600)
    vid = put_locked(c, b, "g", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    r = c.get_object_retention(Bucket=b, Key="g", VersionId=vid)["Retention"]
    assert r == {"Mode": "GOVERNANCE", "RetainUntilDate": until}, r
    r = expect_error(lambda: c.delete_object(Bucket=b, Key="g", VersionId=vid), "AccessDenied", 403)
    assert "object lock" in r["Error"]["Message"].lower(), r
    # Shortening and removing need the bypass; extending does not.
    shorter = future(600)
    expect_error(lambda: c.put_object_retention(
        Bucket=b, Key="g", VersionId=vid, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": shorter}),
        "AccessDenied", 403)
    c.put_object_retention(Bucket=b, Key="g", VersionId=vid, BypassGovernanceRetention=True,
                           Retention={"Mode": "GOVERNANCE", "RetainUntilDate": shorter})
    longer = future(7200)
    c.put_object_retention(Bucket=b, Key="g", VersionId=vid,
                           Retention={"Mode": "GOVERNANCE", "RetainUntilDate": longer})
    assert c.get_object_retention(Bucket=b, Key="g", VersionId=vid)["Retention"]["RetainUntilDate"] == longer
    expect_error(lambda: c.put_object_retention(Bucket=b, Key="g", VersionId=vid, Retention={}),
                 "AccessDenied", 403)
    c.put_object_retention(Bucket=b, Key="g", VersionId=vid, Retention={},
                           BypassGovernanceRetention=True)
    expect_error(lambda: c.get_object_retention(Bucket=b, Key="g", VersionId=vid),
                 "NoSuchObjectLockConfiguration", 404)
    # A new governance lock, deleted with the bypass.
    c.put_object_retention(Bucket=b, Key="g", VersionId=vid,
                           Retention={"Mode": "GOVERNANCE", "RetainUntilDate": longer})
    expect_error(lambda: c.delete_object(Bucket=b, Key="g", VersionId=vid,
                                         BypassGovernanceRetention=False), "AccessDenied", 403)
    c.delete_object(Bucket=b, Key="g", VersionId=vid, BypassGovernanceRetention=True)
    expect_error(lambda: c.head_object(Bucket=b, Key="g", VersionId=vid), "404")
    # Another user cannot bypass (it is not even the bucket owner).
    # GOVERNANCE may be turned into COMPLIANCE without the bypass.
    vid = put_locked(c, b, "g2", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    c.put_object_retention(Bucket=b, Key="g2", VersionId=vid,
                           Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until})
    expect_error(lambda: c.delete_object(Bucket=b, Key="g2", VersionId=vid,
                                         BypassGovernanceRetention=True), "AccessDenied", 403)


@test
def compliance_extend_only(s):
    c, b = lock_bucket(s, "olcomp")
    until = future(3600)
    vid = put_locked(c, b, "c", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    for kw in ({}, {"BypassGovernanceRetention": True}):
        expect_error(lambda: c.delete_object(Bucket=b, Key="c", VersionId=vid, **kw), "AccessDenied", 403)
        expect_error(lambda: c.put_object_retention(
            Bucket=b, Key="c", VersionId=vid, **kw,
            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": future(60)}), "AccessDenied", 403)
        expect_error(lambda: c.put_object_retention(
            Bucket=b, Key="c", VersionId=vid, **kw,
            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(7200)}), "AccessDenied", 403)
        expect_error(lambda: c.put_object_retention(Bucket=b, Key="c", VersionId=vid, Retention={}, **kw),
                     "AccessDenied", 403)
    assert c.get_object_retention(Bucket=b, Key="c", VersionId=vid)["Retention"] == {
        "Mode": "COMPLIANCE", "RetainUntilDate": until}
    later = future(7200)
    r = c.put_object_retention(Bucket=b, Key="c", Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later})
    assert hdrs(r).get("x-amz-version-id") == vid, hdrs(r)
    assert c.get_object_retention(Bucket=b, Key="c")["Retention"]["RetainUntilDate"] == later
    assert c.get_object(Bucket=b, Key="c", VersionId=vid)["Body"].read() == b"locked data"
    # Malformed retention bodies.
    expect_error(lambda: c.put_object_retention(Bucket=b, Key="c", Retention={"Mode": "COMPLIANCE"}),
                 "MalformedXML", 400)
    expect_error(lambda: c.put_object_retention(
        Bucket=b, Key="c", Retention={"Mode": "COMPLIANCE", "RetainUntilDate": future(-60)}),
        "InvalidArgument", 400)


@test
def legal_hold_on_and_off(s):
    c, b = lock_bucket(s, "olhold")
    vid = put_locked(c, b, "h")["VersionId"]
    # Never set: AWS has no legal hold to report.
    expect_error(lambda: c.get_object_legal_hold(Bucket=b, Key="h"), "NoSuchObjectLockConfiguration", 404)
    assert "ObjectLockLegalHoldStatus" not in c.head_object(Bucket=b, Key="h")
    c.put_object_legal_hold(Bucket=b, Key="h", VersionId=vid, LegalHold={"Status": "ON"})
    assert c.get_object_legal_hold(Bucket=b, Key="h", VersionId=vid)["LegalHold"]["Status"] == "ON"
    assert c.head_object(Bucket=b, Key="h")["ObjectLockLegalHoldStatus"] == "ON"
    # A legal hold does not yield to the governance bypass.
    expect_error(lambda: c.delete_object(Bucket=b, Key="h", VersionId=vid, BypassGovernanceRetention=True),
                 "AccessDenied", 403)
    expect_error(lambda: c.put_object_legal_hold(Bucket=b, Key="h", LegalHold={"Status": "MAYBE"}),
                 "MalformedXML", 400)
    c.put_object_legal_hold(Bucket=b, Key="h", VersionId=vid, LegalHold={"Status": "OFF"})
    assert c.get_object_legal_hold(Bucket=b, Key="h", VersionId=vid)["LegalHold"]["Status"] == "OFF"
    assert c.head_object(Bucket=b, Key="h", VersionId=vid)["ObjectLockLegalHoldStatus"] == "OFF"
    c.delete_object(Bucket=b, Key="h", VersionId=vid)
    expect_error(lambda: c.get_object_legal_hold(Bucket=b, Key="h", VersionId=vid), "NoSuchVersion", 404)


@test
def default_retention_put_multipart_copy(s):
    c, b = lock_bucket(s, "oldef", {"Mode": "GOVERNANCE", "Days": 1})
    lo = datetime.datetime.now(UTC) + datetime.timedelta(days=1, seconds=-5)
    c.put_object(Bucket=b, Key="p", Body=b"plain put")
    mpu = c.create_multipart_upload(Bucket=b, Key="m")
    part = c.upload_part(Bucket=b, Key="m", UploadId=mpu["UploadId"], PartNumber=1, Body=b"part one")
    c.complete_multipart_upload(Bucket=b, Key="m", UploadId=mpu["UploadId"],
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    c.copy_object(Bucket=b, Key="cp", CopySource={"Bucket": b, "Key": "p"})
    hi = datetime.datetime.now(UTC) + datetime.timedelta(days=1, seconds=5)
    for key in ("p", "m", "cp"):
        h = c.head_object(Bucket=b, Key=key)
        assert h["ObjectLockMode"] == "GOVERNANCE", (key, h)
        assert lo <= h["ObjectLockRetainUntilDate"] <= hi, (key, h["ObjectLockRetainUntilDate"])
        vid = h["VersionId"]
        expect_error(lambda: c.delete_object(Bucket=b, Key=key, VersionId=vid), "AccessDenied", 403)
    # Explicit headers win over the default, on multipart and copy as well.
    until = future(900)
    mpu = c.create_multipart_upload(Bucket=b, Key="m2", ObjectLockMode="COMPLIANCE",
                                    ObjectLockRetainUntilDate=until, ObjectLockLegalHoldStatus="ON")
    part = c.upload_part(Bucket=b, Key="m2", UploadId=mpu["UploadId"], PartNumber=1, Body=b"p")
    c.complete_multipart_upload(Bucket=b, Key="m2", UploadId=mpu["UploadId"],
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    h = c.head_object(Bucket=b, Key="m2")
    assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"], h["ObjectLockLegalHoldStatus"]) == (
        "COMPLIANCE", until, "ON"), h
    c.copy_object(Bucket=b, Key="cp2", CopySource={"Bucket": b, "Key": "m2"},
                  ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)
    h = c.head_object(Bucket=b, Key="cp2")
    # The copy takes the lock it names, not the source's legal hold.
    assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"]) == ("COMPLIANCE", until), h
    assert "ObjectLockLegalHoldStatus" not in h, h
    expect_error(lambda: c.copy_object(Bucket=b, Key="cp3", CopySource={"Bucket": b, "Key": "p"},
                                       ObjectLockMode="COMPLIANCE",
                                       ObjectLockRetainUntilDate=future(-10)), "InvalidArgument", 400)


@test
def delete_objects_mixed_batch(s):
    c, b = lock_bucket(s, "olbatch")
    until = future(3600)
    v = {}
    v["free"] = c.put_object(Bucket=b, Key="free", Body=b"x")["VersionId"]
    v["gov"] = put_locked(c, b, "gov", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    v["comp"] = put_locked(c, b, "comp", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    v["hold"] = put_locked(c, b, "hold", ObjectLockLegalHoldStatus="ON")["VersionId"]
    objs = [{"Key": k, "VersionId": vid} for k, vid in v.items()] + [{"Key": "gov"}]
    r = c.delete_objects(Bucket=b, Delete={"Objects": objs})
    deleted = {(d["Key"], d.get("VersionId")) for d in r.get("Deleted", [])}
    errors = {(e["Key"], e.get("VersionId")): e["Code"] for e in r.get("Errors", [])}
    assert deleted == {("free", v["free"]), ("gov", None)}, r
    assert errors == {(k, v[k]): "AccessDenied" for k in ("gov", "comp", "hold")}, r
    # With the bypass, GOVERNANCE goes; COMPLIANCE and the legal hold stay.
    objs = [{"Key": k, "VersionId": v[k]} for k in ("gov", "comp", "hold")]
    r = c.delete_objects(Bucket=b, Delete={"Objects": objs}, BypassGovernanceRetention=True)
    assert {d["Key"] for d in r.get("Deleted", [])} == {"gov"}, r
    assert {e["Key"]: e["Code"] for e in r.get("Errors", [])} == {
        "comp": "AccessDenied", "hold": "AccessDenied"}, r
    for k in ("comp", "hold"):
        assert c.get_object(Bucket=b, Key=k, VersionId=v[k])["Body"].read() == b"locked data"


@test
def delete_markers_and_overwrites(s):
    c, b = lock_bucket(s, "olmark")
    until = future(3600)
    vid = put_locked(c, b, "k", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    # DELETE without a version id adds a marker; the marker is never locked.
    r = c.delete_object(Bucket=b, Key="k")
    assert r["DeleteMarker"] is True, r
    mvid = r["VersionId"]
    expect_error(lambda: c.get_object(Bucket=b, Key="k"), "NoSuchKey", 404)
    expect_error(lambda: c.put_object_retention(
        Bucket=b, Key="k", VersionId=mvid, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until}),
        "MethodNotAllowed", 405)
    c.delete_object(Bucket=b, Key="k", VersionId=mvid)
    assert c.get_object(Bucket=b, Key="k")["VersionId"] == vid
    # Overwriting adds a version; the locked one stays.
    v2 = c.put_object(Bucket=b, Key="k", Body=b"newer")["VersionId"]
    assert v2 != vid
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"newer"
    assert c.get_object(Bucket=b, Key="k", VersionId=vid)["Body"].read() == b"locked data"
    c.delete_object(Bucket=b, Key="k", VersionId=v2)  # unlocked: goes
    # The bucket cannot be deleted while a locked version remains.
    expect_error(lambda: c.delete_bucket(Bucket=b), "BucketNotEmpty", 409)
    assert c.get_object(Bucket=b, Key="k", VersionId=vid)["Body"].read() == b"locked data"


@test
def lock_calls_need_content_md5(s):
    """AWS refuses the lock-changing calls without Content-MD5 (or a checksum)."""
    c, b = lock_bucket(s, "olmd5")
    vid = c.put_object(Bucket=b, Key="k", Body=b"x")["VersionId"]
    bare = s.client()
    bare.meta.events.register("before-sign.s3.*", strip_digests)
    expect_error(lambda: bare.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"}),
                 "InvalidRequest", 400)
    expect_error(lambda: bare.put_object_retention(
        Bucket=b, Key="k", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(60)}),
        "InvalidRequest", 400)
    expect_error(lambda: bare.put_object_lock_configuration(
        Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}), "InvalidRequest", 400)
    h = c.head_object(Bucket=b, Key="k", VersionId=vid)
    assert "ObjectLockMode" not in h and "ObjectLockLegalHoldStatus" not in h, h


if __name__ == "__main__":
    run(Strata())
