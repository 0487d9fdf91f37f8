#!/usr/bin/python3
"""test_bucket_config.py - buckets and their configuration documents,
through boto3, on whichever store the daemon runs (local drives, or a RADOS
store with STRATA_BACKEND=rados: CMakeLists.txt registers this file for
both).

- create, head, list, delete; a missing bucket is 404 NoSuchBucket; a
  deleted and re-created bucket starts without the old configuration;
- versioning (Enabled, Suspended, a bad status MalformedXML);
- bucket policy (put, get byte-for-byte, delete; NoSuchBucketPolicy;
  MalformedPolicy for a policy that does not parse);
- lifecycle configuration (put, get, delete; NoSuchLifecycleConfiguration);
- bucket tagging and CORS rules (put, get, delete; NoSuchTagSet,
  NoSuchCORSConfiguration);
- an empty bucket lists no keys and no versions.

Object Lock configuration is test_object_lock.py's, which runs on both
stores too.
"""

import json

from strata_harness import Strata, expect_error, run, test


@test
def create_head_list_delete(s):
    c = s.client()
    name = s.bucket_name("life")
    expect_error(lambda: c.head_bucket(Bucket=name), "404", 404)
    c.create_bucket(Bucket=name)
    c.head_bucket(Bucket=name)
    assert name in [b["Name"] for b in c.list_buckets()["Buckets"]]
    assert c.get_bucket_location(Bucket=name).get("LocationConstraint") is None
    out = c.list_objects_v2(Bucket=name)
    assert out["KeyCount"] == 0 and "Contents" not in out, out
    out = c.list_object_versions(Bucket=name)
    assert "Versions" not in out and "DeleteMarkers" not in out, out
    c.delete_bucket(Bucket=name)
    expect_error(lambda: c.head_bucket(Bucket=name), "404", 404)
    expect_error(lambda: c.delete_bucket(Bucket=name), "NoSuchBucket", 404)
    expect_error(lambda: c.list_objects_v2(Bucket=name), "NoSuchBucket", 404)
    assert name not in [b["Name"] for b in c.list_buckets()["Buckets"]]


@test
def versioning(s):
    c = s.client()
    name = s.bucket_name("ver")
    c.create_bucket(Bucket=name)
    assert "Status" not in c.get_bucket_versioning(Bucket=name)
    c.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    assert c.get_bucket_versioning(Bucket=name)["Status"] == "Enabled"
    c.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Suspended"})
    assert c.get_bucket_versioning(Bucket=name)["Status"] == "Suspended"
    expect_error(lambda: c.put_bucket_versioning(
        Bucket=name, VersioningConfiguration={"Status": "Sometimes"}), "MalformedXML", 400)
    assert c.get_bucket_versioning(Bucket=name)["Status"] == "Suspended"


@test
def policy(s):
    c = s.client()
    name = s.bucket_name("pol")
    c.create_bucket(Bucket=name)
    expect_error(lambda: c.get_bucket_policy(Bucket=name), "NoSuchBucketPolicy", 404)
    doc = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "ro", "Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{name}/*"}]})
    c.delete_public_access_block(Bucket=name)
    c.put_bucket_policy(Bucket=name, Policy=doc)
    assert c.get_bucket_policy(Bucket=name)["Policy"] == doc
    expect_error(lambda: c.put_bucket_policy(Bucket=name, Policy="{not json"),
                 "MalformedPolicy", 400)
    assert c.get_bucket_policy(Bucket=name)["Policy"] == doc
    c.delete_bucket_policy(Bucket=name)
    expect_error(lambda: c.get_bucket_policy(Bucket=name), "NoSuchBucketPolicy", 404)


@test
def lifecycle(s):
    c = s.client()
    name = s.bucket_name("lc")
    c.create_bucket(Bucket=name)
    expect_error(lambda: c.get_bucket_lifecycle_configuration(Bucket=name),
                 "NoSuchLifecycleConfiguration", 404)
    rules = [{"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
              "Expiration": {"Days": 30}},
             {"ID": "mpu", "Status": "Disabled", "Filter": {"Prefix": ""},
              "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}]
    c.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": rules})
    got = c.get_bucket_lifecycle_configuration(Bucket=name)["Rules"]
    assert [r["ID"] for r in got] == ["logs", "mpu"], got
    assert got[0]["Expiration"] == {"Days": 30} and got[0]["Filter"] == {"Prefix": "logs/"}
    assert got[1]["Status"] == "Disabled"
    assert got[1]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2}
    c.delete_bucket_lifecycle(Bucket=name)
    expect_error(lambda: c.get_bucket_lifecycle_configuration(Bucket=name),
                 "NoSuchLifecycleConfiguration", 404)


@test
def tagging_and_cors(s):
    c = s.client()
    name = s.bucket_name("tag")
    c.create_bucket(Bucket=name)
    expect_error(lambda: c.get_bucket_tagging(Bucket=name), "NoSuchTagSet", 404)
    tags = [{"Key": "team", "Value": "data"}, {"Key": "env", "Value": "prod"}]
    c.put_bucket_tagging(Bucket=name, Tagging={"TagSet": tags})
    got = c.get_bucket_tagging(Bucket=name)["TagSet"]
    assert sorted(got, key=lambda t: t["Key"]) == sorted(tags, key=lambda t: t["Key"]), got
    c.delete_bucket_tagging(Bucket=name)
    expect_error(lambda: c.get_bucket_tagging(Bucket=name), "NoSuchTagSet", 404)
    expect_error(lambda: c.get_bucket_cors(Bucket=name), "NoSuchCORSConfiguration", 404)
    rule = {"AllowedOrigins": ["https://a.example.test"], "AllowedMethods": ["GET", "PUT"],
            "MaxAgeSeconds": 600}
    c.put_bucket_cors(Bucket=name, CORSConfiguration={"CORSRules": [rule]})
    got = c.get_bucket_cors(Bucket=name)["CORSRules"]
    assert len(got) == 1 and got[0]["AllowedOrigins"] == rule["AllowedOrigins"], got
    assert got[0]["AllowedMethods"] == ["GET", "PUT"] and got[0]["MaxAgeSeconds"] == 600, got
    c.delete_bucket_cors(Bucket=name)
    expect_error(lambda: c.get_bucket_cors(Bucket=name), "NoSuchCORSConfiguration", 404)


@test
def recreated_bucket_starts_clean(s):
    c = s.client()
    name = s.bucket_name("again")
    c.create_bucket(Bucket=name)
    c.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    c.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    c.delete_bucket(Bucket=name)
    c.create_bucket(Bucket=name)
    assert "Status" not in c.get_bucket_versioning(Bucket=name)
    expect_error(lambda: c.get_bucket_tagging(Bucket=name), "NoSuchTagSet", 404)
    c.delete_bucket(Bucket=name)


if __name__ == "__main__":
    run(Strata())
