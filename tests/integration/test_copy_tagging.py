#!/usr/bin/python3
"""test_copy_tagging.py - CopyObject and tagging through boto3 against a
live strata.  CopyObject: metadata directive COPY and REPLACE, the four
x-amz-copy-source-if-* conditions (412 when they fail), copy onto itself
(REPLACE changes metadata; without it 400 InvalidRequest), across buckets,
of a given source VersionId, awkward source keys, tagging directive; bytes
compared every time.  Tagging: Put/Get/DeleteObjectTagging per version,
x-amz-tagging on PutObject and CreateMultipartUpload, TagCount on GET,
bucket tagging, and AWS's limits (10 tags per object, key 128 / value 256
characters, no duplicate keys).  Run by CTest with /usr/bin/python3.
"""

import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, md5_hex, run, test  # noqa: E402

MiB = 1024 * 1024


def body_of(resp):
    return resp["Body"].read()


def new_bucket(s, prefix, versioning=None):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    if versioning:
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": versioning})
    return c, b


def tags_of(c, b, key, **kw):
    return sorted((t["Key"], t["Value"]) for t in c.get_object_tagging(Bucket=b, Key=key, **kw)["TagSet"])


def expect_one_of(fn, codes, status):
    try:
        fn()
    except Exception as e:  # botocore ClientError
        resp = getattr(e, "response", None)
        if resp is None:
            raise
        code = resp["Error"]["Code"]
        st = resp["ResponseMetadata"]["HTTPStatusCode"]
        assert code in codes and status in (None, st), f"expected {codes} ({status}), got {code} ({st})"
        return resp
    raise AssertionError(f"expected one of {codes}, but the call succeeded")


# ---- CopyObject ------------------------------------------------------------

@test
def copy_metadata_directives(s):
    c, b = new_bucket(s, "copy")
    data = os.urandom(3 * MiB + 11)
    put = c.put_object(Bucket=b, Key="src", Body=data, ContentType="text/x-src",
                       Metadata={"alpha": "1", "beta": "two"}, CacheControl="max-age=5")
    # Default directive is COPY: bytes, ETag, content type and metadata come along.
    r = c.copy_object(Bucket=b, Key="dst-copy", CopySource={"Bucket": b, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == put["ETag"], r["CopyObjectResult"]
    assert isinstance(r["CopyObjectResult"]["LastModified"], datetime.datetime)
    g = c.get_object(Bucket=b, Key="dst-copy")
    assert body_of(g) == data, "copied bytes differ"
    assert g["ETag"] == put["ETag"]
    assert g["ContentType"] == "text/x-src" and g["Metadata"] == {"alpha": "1", "beta": "two"}, g["Metadata"]
    assert g["CacheControl"] == "max-age=5"
    # Explicit COPY ignores metadata given in the request.
    c.copy_object(Bucket=b, Key="dst-copy2", CopySource={"Bucket": b, "Key": "src"},
                  MetadataDirective="COPY", Metadata={"ignored": "yes"})
    assert c.head_object(Bucket=b, Key="dst-copy2")["Metadata"] == {"alpha": "1", "beta": "two"}
    # REPLACE: only the request's metadata and content type.
    c.copy_object(Bucket=b, Key="dst-repl", CopySource={"Bucket": b, "Key": "src"},
                  MetadataDirective="REPLACE", Metadata={"gamma": "3"}, ContentType="application/x-new")
    g = c.get_object(Bucket=b, Key="dst-repl")
    assert body_of(g) == data
    assert g["Metadata"] == {"gamma": "3"}, g["Metadata"]
    assert g["ContentType"] == "application/x-new"
    assert g.get("CacheControl") is None, g.get("CacheControl")
    # Source untouched.
    h = c.head_object(Bucket=b, Key="src")
    assert h["Metadata"] == {"alpha": "1", "beta": "two"} and h["ContentType"] == "text/x-src"
    # A bad directive.
    expect_error(lambda: c.copy_object(Bucket=b, Key="x", CopySource={"Bucket": b, "Key": "src"},
                                       MetadataDirective="MERGE"), "InvalidArgument", 400)
    # Missing source key and bucket.
    expect_error(lambda: c.copy_object(Bucket=b, Key="x", CopySource={"Bucket": b, "Key": "nope"}),
                 "NoSuchKey", 404)
    expect_error(lambda: c.copy_object(Bucket=b, Key="x", CopySource={"Bucket": b + "-nope", "Key": "src"}),
                 "NoSuchBucket", 404)
    expect_error(lambda: c.head_object(Bucket=b, Key="x"), "404", 404)


@test
def copy_onto_itself(s):
    c, b = new_bucket(s, "self")
    c.put_object(Bucket=b, Key="me", Body=b"same bytes", Metadata={"v": "1"})
    # Without REPLACE (and nothing else changing) AWS refuses: InvalidRequest.
    expect_error(lambda: c.copy_object(Bucket=b, Key="me", CopySource={"Bucket": b, "Key": "me"}),
                 "InvalidRequest", 400)
    assert c.head_object(Bucket=b, Key="me")["Metadata"] == {"v": "1"}
    lm0 = c.head_object(Bucket=b, Key="me")["LastModified"]
    time.sleep(1.1)
    r = c.copy_object(Bucket=b, Key="me", CopySource={"Bucket": b, "Key": "me"},
                      MetadataDirective="REPLACE", Metadata={"v": "2"}, ContentType="text/plain")
    assert r["CopyObjectResult"]["ETag"] == f'"{md5_hex(b"same bytes")}"'
    g = c.get_object(Bucket=b, Key="me")
    assert body_of(g) == b"same bytes"
    assert g["Metadata"] == {"v": "2"} and g["ContentType"] == "text/plain", (g["Metadata"], g["ContentType"])
    assert g["LastModified"] > lm0, "copy onto itself did not update Last-Modified"


@test
def copy_conditions(s):
    c, b = new_bucket(s, "copycond")
    put = c.put_object(Bucket=b, Key="src", Body=b"conditional source")
    etag = put["ETag"]
    lm = c.head_object(Bucket=b, Key="src")["LastModified"]
    past = lm - datetime.timedelta(days=1)
    future = lm + datetime.timedelta(days=1)
    src = {"Bucket": b, "Key": "src"}

    def cp(key, **kw):
        return c.copy_object(Bucket=b, Key=key, CopySource=src, **kw)

    ok_cases = [("m-ok", {"CopySourceIfMatch": etag}),
                ("nm-ok", {"CopySourceIfNoneMatch": '"00000000000000000000000000000000"'}),
                ("ms-ok", {"CopySourceIfModifiedSince": past}),
                ("us-ok", {"CopySourceIfUnmodifiedSince": future}),
                # AWS: If-Match true + If-Unmodified-Since false -> copied.
                ("m-us", {"CopySourceIfMatch": etag, "CopySourceIfUnmodifiedSince": past})]
    for key, kw in ok_cases:
        cp(key, **kw)
        assert body_of(c.get_object(Bucket=b, Key=key)) == b"conditional source", key
    bad_cases = [("m-bad", {"CopySourceIfMatch": '"00000000000000000000000000000000"'}),
                 ("nm-bad", {"CopySourceIfNoneMatch": etag}),
                 ("ms-bad", {"CopySourceIfModifiedSince": future}),
                 ("us-bad", {"CopySourceIfUnmodifiedSince": past}),
                 # AWS: If-None-Match false + If-Modified-Since true -> 412.
                 ("nm-ms", {"CopySourceIfNoneMatch": etag, "CopySourceIfModifiedSince": past})]
    for key, kw in bad_cases:
        expect_error(lambda: cp(key, **kw), "PreconditionFailed", 412)
        expect_error(lambda: c.head_object(Bucket=b, Key=key), "404", 404)


@test
def copy_across_buckets_and_keys(s):
    c, b1 = new_bucket(s, "xsrc")
    _, b2 = new_bucket(s, "xdst")
    data = os.urandom(200_000)
    key = "dir/a b+c%d=e&f~ü.bin"
    c.put_object(Bucket=b1, Key=key, Body=data)
    c.copy_object(Bucket=b2, Key=key, CopySource={"Bucket": b1, "Key": key})
    assert body_of(c.get_object(Bucket=b2, Key=key)) == data
    # The copy is independent of its source.
    c.delete_object(Bucket=b1, Key=key)
    assert body_of(c.get_object(Bucket=b2, Key=key)) == data
    # A multipart source copies into one object with the same bytes.
    parts = [os.urandom(5 * MiB), os.urandom(1000)]
    uid = c.create_multipart_upload(Bucket=b1, Key="mp")["UploadId"]
    done = [{"PartNumber": i, "ETag": c.upload_part(Bucket=b1, Key="mp", UploadId=uid, PartNumber=i,
                                                    Body=p)["ETag"]} for i, p in enumerate(parts, 1)]
    c.complete_multipart_upload(Bucket=b1, Key="mp", UploadId=uid, MultipartUpload={"Parts": done})
    c.copy_object(Bucket=b2, Key="mp-copy", CopySource={"Bucket": b1, "Key": "mp"})
    g = c.get_object(Bucket=b2, Key="mp-copy")
    assert body_of(g) == b"".join(parts) and g["ContentLength"] == 5 * MiB + 1000


@test
def copy_source_version(s):
    c, b = new_bucket(s, "copyver", "Enabled")
    v1 = c.put_object(Bucket=b, Key="src", Body=b"version one")["VersionId"]
    v2 = c.put_object(Bucket=b, Key="src", Body=b"version two")["VersionId"]
    r = c.copy_object(Bucket=b, Key="from-v1", CopySource={"Bucket": b, "Key": "src", "VersionId": v1})
    assert r.get("CopySourceVersionId") == v1, r
    assert r.get("VersionId") and r["VersionId"] not in (v1, v2), r
    assert body_of(c.get_object(Bucket=b, Key="from-v1")) == b"version one"
    r = c.copy_object(Bucket=b, Key="latest", CopySource={"Bucket": b, "Key": "src"})
    assert r.get("CopySourceVersionId") == v2, r
    assert body_of(c.get_object(Bucket=b, Key="latest")) == b"version two"
    # Copying an old version over the key restores it as a new version.
    r = c.copy_object(Bucket=b, Key="src", CopySource={"Bucket": b, "Key": "src", "VersionId": v1})
    v3 = r["VersionId"]
    g = c.get_object(Bucket=b, Key="src")
    assert body_of(g) == b"version one" and g["VersionId"] == v3
    vs = c.list_object_versions(Bucket=b, Prefix="src")["Versions"]
    assert [v["VersionId"] for v in vs] == [v3, v2, v1], vs
    # Latest is a delete marker: NoSuchKey; naming the marker: InvalidRequest (400).
    marker = c.delete_object(Bucket=b, Key="src")["VersionId"]
    expect_error(lambda: c.copy_object(Bucket=b, Key="y", CopySource={"Bucket": b, "Key": "src"}),
                 "NoSuchKey", 404)
    expect_error(lambda: c.copy_object(Bucket=b, Key="y",
                                       CopySource={"Bucket": b, "Key": "src", "VersionId": marker}),
                 "InvalidRequest", 400)
    # A version that never existed.
    c.delete_object(Bucket=b, Key="src", VersionId=v2)
    expect_error(lambda: c.copy_object(Bucket=b, Key="y",
                                       CopySource={"Bucket": b, "Key": "src", "VersionId": v2}),
                 "NoSuchVersion", 404)


@test
def copy_tagging_directive(s):
    c, b = new_bucket(s, "copytag")
    c.put_object(Bucket=b, Key="src", Body=b"tagged", Tagging="team=storage&tier=hot")
    c.copy_object(Bucket=b, Key="keep", CopySource={"Bucket": b, "Key": "src"})
    assert tags_of(c, b, "keep") == [("team", "storage"), ("tier", "hot")]
    c.copy_object(Bucket=b, Key="repl", CopySource={"Bucket": b, "Key": "src"},
                  TaggingDirective="REPLACE", Tagging="only=this")
    assert tags_of(c, b, "repl") == [("only", "this")]
    c.copy_object(Bucket=b, Key="none", CopySource={"Bucket": b, "Key": "src"}, TaggingDirective="REPLACE")
    assert tags_of(c, b, "none") == []


# ---- tagging ---------------------------------------------------------------

@test
def object_tagging_crud(s):
    c, b = new_bucket(s, "tags")
    c.put_object(Bucket=b, Key="k", Body=b"x")
    assert tags_of(c, b, "k") == []
    ts = [{"Key": "project", "Value": "strata"}, {"Key": "empty", "Value": ""},
          {"Key": "sp ace+plus", "Value": "ü/=&?"}]
    r = c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": ts})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert tags_of(c, b, "k") == sorted((t["Key"], t["Value"]) for t in ts)
    g = c.get_object(Bucket=b, Key="k")
    assert g.get("TagCount") == 3, g.get("TagCount")
    # Replacing is whole-set.
    c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    assert tags_of(c, b, "k") == [("a", "1")]
    # Tags do not change the object's bytes or ETag.
    g = c.get_object(Bucket=b, Key="k")
    assert body_of(g) == b"x" and g["ETag"] == f'"{md5_hex(b"x")}"'
    r = c.delete_object_tagging(Bucket=b, Key="k")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert tags_of(c, b, "k") == []
    assert c.get_object(Bucket=b, Key="k").get("TagCount") in (None, 0)
    # Missing key / bucket.
    expect_error(lambda: c.get_object_tagging(Bucket=b, Key="nope"), "NoSuchKey", 404)
    expect_error(lambda: c.put_object_tagging(Bucket=b, Key="nope", Tagging={"TagSet": []}), "NoSuchKey", 404)
    expect_error(lambda: c.get_object_tagging(Bucket=b + "-nope", Key="k"), "NoSuchBucket", 404)
    # Overwriting an object drops its tags (unversioned bucket).
    c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    c.put_object(Bucket=b, Key="k", Body=b"new")
    assert tags_of(c, b, "k") == []


@test
def tagging_per_version(s):
    c, b = new_bucket(s, "tagver", "Enabled")
    v1 = c.put_object(Bucket=b, Key="k", Body=b"1", Tagging="gen=1")["VersionId"]
    v2 = c.put_object(Bucket=b, Key="k", Body=b"2", Tagging="gen=2")["VersionId"]
    assert tags_of(c, b, "k") == [("gen", "2")]
    assert tags_of(c, b, "k", VersionId=v1) == [("gen", "1")]
    r = c.get_object_tagging(Bucket=b, Key="k", VersionId=v1)
    assert r.get("VersionId") == v1, r
    r = c.put_object_tagging(Bucket=b, Key="k", VersionId=v1, Tagging={"TagSet": [{"Key": "old", "Value": "yes"}]})
    assert r.get("VersionId") == v1, r
    assert tags_of(c, b, "k", VersionId=v1) == [("old", "yes")]
    assert tags_of(c, b, "k", VersionId=v2) == [("gen", "2")], "tagging v1 changed v2"
    r = c.delete_object_tagging(Bucket=b, Key="k", VersionId=v2)
    assert r.get("VersionId") == v2, r
    assert tags_of(c, b, "k") == [] and tags_of(c, b, "k", VersionId=v1) == [("old", "yes")]
    c.delete_object(Bucket=b, Key="k", VersionId=v2)
    expect_error(lambda: c.get_object_tagging(Bucket=b, Key="k", VersionId=v2), "NoSuchVersion", 404)
    # Latest is a delete marker: the key has no current object (AWS: 405 on
    # the marker by id, NoSuchKey without an id).
    c.delete_object(Bucket=b, Key="k")
    r = expect_one_of(lambda: c.get_object_tagging(Bucket=b, Key="k"), ("NoSuchKey", "MethodNotAllowed"), None)
    assert r["ResponseMetadata"]["HTTPStatusCode"] in (404, 405), r["ResponseMetadata"]
    assert tags_of(c, b, "k", VersionId=v1) == [("old", "yes")]


@test
def tagging_on_put_and_multipart(s):
    c, b = new_bucket(s, "tagput")
    c.put_object(Bucket=b, Key="p", Body=b"p", Tagging="a=1&b=x%20y&c=")
    assert tags_of(c, b, "p") == [("a", "1"), ("b", "x y"), ("c", "")]
    assert c.get_object(Bucket=b, Key="p")["TagCount"] == 3
    uid = c.create_multipart_upload(Bucket=b, Key="mp", Tagging="mp=yes&n=2")["UploadId"]
    e = c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=1, Body=b"part")["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=uid,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    assert tags_of(c, b, "mp") == [("mp", "yes"), ("n", "2")]
    assert body_of(c.get_object(Bucket=b, Key="mp")) == b"part"


@test
def tagging_limits(s):
    c, b = new_bucket(s, "taglim")
    c.put_object(Bucket=b, Key="k", Body=b"x", Tagging="keep=me")
    eleven = [{"Key": f"k{i}", "Value": "v"} for i in range(11)]
    ten = eleven[:10]
    bad = "BadRequest", "InvalidTag"
    expect_one_of(lambda: c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": eleven}), bad, 400)
    assert tags_of(c, b, "k") == [("keep", "me")], "a refused tag set changed the tags"
    c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": ten})
    assert len(tags_of(c, b, "k")) == 10
    expect_error(lambda: c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [
        {"Key": "k" * 129, "Value": "v"}]}), "InvalidTag", 400)
    c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "k" * 128, "Value": "v" * 256}]})
    assert tags_of(c, b, "k") == [("k" * 128, "v" * 256)]
    expect_error(lambda: c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [
        {"Key": "k", "Value": "v" * 257}]}), "InvalidTag", 400)
    expect_error(lambda: c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [
        {"Key": "dup", "Value": "1"}, {"Key": "dup", "Value": "2"}]}), "InvalidTag", 400)
    assert tags_of(c, b, "k") == [("k" * 128, "v" * 256)]
    # The same limits on x-amz-tagging: nothing is stored.
    many = "&".join(f"k{i}=v" for i in range(11))
    expect_one_of(lambda: c.put_object(Bucket=b, Key="t11", Body=b"x", Tagging=many), bad, 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="t11"), "404", 404)
    expect_error(lambda: c.put_object(Bucket=b, Key="tlong", Body=b"x", Tagging="k=" + "v" * 257),
                 "InvalidTag", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="tlong"), "404", 404)
    expect_one_of(lambda: c.create_multipart_upload(Bucket=b, Key="m11", Tagging=many), bad, 400)
    assert "Uploads" not in c.list_multipart_uploads(Bucket=b)
    # An empty tag key (botocore refuses one in XML, so via the header).
    expect_one_of(lambda: c.put_object(Bucket=b, Key="tempty", Body=b"x", Tagging="=v"),
                  ("InvalidTag", "InvalidArgument"), 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="tempty"), "404", 404)


@test
def bucket_tagging(s):
    c, b = new_bucket(s, "btag")
    expect_error(lambda: c.get_bucket_tagging(Bucket=b), "NoSuchTagSet", 404)
    ts = [{"Key": "cost-center", "Value": "42"}, {"Key": "env", "Value": "test"}]
    c.put_bucket_tagging(Bucket=b, Tagging={"TagSet": ts})
    got = sorted((t["Key"], t["Value"]) for t in c.get_bucket_tagging(Bucket=b)["TagSet"])
    assert got == [("cost-center", "42"), ("env", "test")], got
    # Bucket tags are not object tags.
    c.put_object(Bucket=b, Key="o", Body=b"o")
    assert tags_of(c, b, "o") == []
    # Up to 50 tags on a bucket; 51 is refused.
    fifty = [{"Key": f"k{i}", "Value": str(i)} for i in range(50)]
    c.put_bucket_tagging(Bucket=b, Tagging={"TagSet": fifty})
    assert len(c.get_bucket_tagging(Bucket=b)["TagSet"]) == 50
    expect_one_of(lambda: c.put_bucket_tagging(Bucket=b, Tagging={"TagSet": fifty + [{"Key": "x", "Value": "y"}]}),
                  ("BadRequest", "InvalidTag"), 400)
    expect_error(lambda: c.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "k" * 129, "Value": "v"}]}),
                 "InvalidTag", 400)
    assert len(c.get_bucket_tagging(Bucket=b)["TagSet"]) == 50
    r = c.delete_bucket_tagging(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    expect_error(lambda: c.get_bucket_tagging(Bucket=b), "NoSuchTagSet", 404)
    expect_error(lambda: c.get_bucket_tagging(Bucket=b + "-nope"), "NoSuchBucket", 404)


if __name__ == "__main__":
    run(Strata())
