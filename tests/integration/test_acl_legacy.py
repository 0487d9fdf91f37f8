#!/usr/bin/python3
"""test_acl_legacy.py - a daemon started with --default-object-ownership
ObjectWriter and --root-display-name, for tools written before buckets
had ACLs disabled by default (s3cmd --acl-public, canned ACLs at
CreateBucket), and bucket policies on objects other users own.

Buckets created without x-amz-object-ownership get ObjectWriter, and
every ACL path behaves as AWS documents for buckets with ACLs enabled:
canned ACLs and grant headers at CreateBucket and PutObject,
Get/PutBucketAcl and Get/PutObjectAcl, anonymous reads and writes through
public-read and public-read-write (checked with plain http.client, no
credentials), the public access block over them, s3cmd --acl-public on
mb, put and setacl.  The root user's DisplayName is the configured one
wherever an owner is named.

A bucket policy Allow grants access to an object only when the bucket
owner owns it (AWS: objects another user wrote into an ObjectWriter
bucket need their own ACL); an explicit Deny still covers them, and
once ownership is enforced the bucket owner owns them all.
Run by CTest with /usr/bin/python3.
"""

import atexit
import http.client
import json
import os
import secrets
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, run, test  # noqa: E402

USER2 = ("STRATALEG2" + secrets.token_hex(4).upper(), "l2-secret/" + secrets.token_hex(8))
USER3 = ("STRATALEG3" + secrets.token_hex(4).upper(), "l3-secret/" + secrets.token_hex(8))
EMAIL3 = "dora@example.com"
ROOT_NAME = "Strata Ops Root"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def users_file():
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="strata-users.", dir=base)
    atexit.register(os.unlink, path)
    with os.fdopen(fd, "w") as f:
        f.write(f"{USER2[0]} {USER2[1]} Eve Writer\n{USER3[0]} {USER3[1]} dora <{EMAIL3}>\n")
    return path


def anon(s, method, path, body=None, headers=None):
    """An unsigned request: (status, headers, body)."""
    conn = http.client.HTTPConnection(s.host, s.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def code_of(body):
    return ET.fromstring(body).findtext("Code") if body else None


def grants(acl):
    return {(g["Grantee"].get("ID") or g["Grantee"].get("URI"), g["Permission"])
            for g in acl["Grants"]}


def users(s):
    return s.client(), s.client(*USER2), s.client(*USER3)


@test
def default_ownership_is_the_flag(s):
    c, _, _ = users(s)
    b = s.bucket_name("dflt")
    # No x-amz-object-ownership: the server's default, ACLs enabled.
    c.create_bucket(Bucket=b, ACL="public-read")
    oc = c.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]
    assert oc == {"Rules": [{"ObjectOwnership": "ObjectWriter"}]}, oc
    assert grants(c.get_bucket_acl(Bucket=b)) == {(s.ak, "FULL_CONTROL"), (ALL_USERS, "READ")}
    st, _, body = anon(s, "GET", f"/{b}?list-type=2")
    assert st == 200 and b"<KeyCount>0</KeyCount>" in body, (st, body)
    # The request's header still wins over the default.
    e = s.bucket_name("dflt-enf")
    expect_error(lambda: c.create_bucket(Bucket=e, ACL="public-read", ObjectOwnership="BucketOwnerEnforced"),
                 "InvalidBucketAclWithObjectOwnership", 400)
    expect_error(lambda: c.head_bucket(Bucket=e), "404", 404)
    c.create_bucket(Bucket=e, ObjectOwnership="BucketOwnerEnforced")
    expect_error(lambda: c.put_object(Bucket=e, Key="k", Body=b"x", ACL="public-read"),
                 "AccessControlListNotSupported", 400)
    p = s.bucket_name("dflt-pref")
    c.create_bucket(Bucket=p, ObjectOwnership="BucketOwnerPreferred")
    assert c.get_bucket_ownership_controls(Bucket=p)["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "BucketOwnerPreferred"}]


@test
def canned_acls_at_put_object(s):
    c, u2, u3 = users(s)
    b = s.bucket_name("cannedput")
    c.create_bucket(Bucket=b)
    for acl, anon_reads, users_read in (("private", False, False), ("public-read", True, True),
                                        ("authenticated-read", False, True)):
        c.put_object(Bucket=b, Key=acl, Body=acl.encode(), ACL=acl)
        st, hdrs, body = anon(s, "GET", f"/{b}/{acl}")
        if anon_reads:
            assert (st, body) == (200, acl.encode()), (acl, st, body)
        else:
            assert st == 403 and code_of(body) == "AccessDenied", (acl, st, body)
        assert anon(s, "HEAD", f"/{b}/{acl}")[0] == (200 if anon_reads else 403), acl
        for u in (u2, u3):
            if users_read:
                assert u.get_object(Bucket=b, Key=acl)["Body"].read() == acl.encode()
            else:
                expect_error(lambda: u.get_object(Bucket=b, Key=acl), "AccessDenied", 403)
    # Anonymous writes need WRITE on the bucket.
    st, _, body = anon(s, "PUT", f"/{b}/anon", body=b"no")
    assert st == 403 and code_of(body) == "AccessDenied", (st, body)
    expect_error(lambda: c.head_object(Bucket=b, Key="anon"), "404", 404)


@test
def public_read_write_bucket(s):
    c, u2, _ = users(s)
    b = s.bucket_name("prw")
    c.create_bucket(Bucket=b, ACL="public-read-write")
    st, _, body = anon(s, "PUT", f"/{b}/by-anon", body=b"anonymous bytes")
    assert st == 200, (st, body)
    st, _, body = anon(s, "GET", f"/{b}?list-type=2")
    assert st == 200 and b"<Key>by-anon</Key>" in body, (st, body)
    assert c.get_object(Bucket=b, Key="by-anon")["Body"].read() == b"anonymous bytes"
    u2.put_object(Bucket=b, Key="by-u2", Body=b"u2", ACL="public-read")
    assert anon(s, "GET", f"/{b}/by-u2")[::2] == (200, b"u2")
    assert anon(s, "DELETE", f"/{b}/by-anon")[0] == 204
    expect_error(lambda: c.head_object(Bucket=b, Key="by-anon"), "404", 404)
    # WRITE is not READ_ACP nor WRITE_ACP.
    assert anon(s, "GET", f"/{b}?acl")[0] == 403
    st, _, body = anon(s, "PUT", f"/{b}?acl", headers={"x-amz-acl": "private"})
    assert st == 403 and code_of(body) == "AccessDenied", (st, body)
    c.put_bucket_acl(Bucket=b, ACL="private")
    assert anon(s, "PUT", f"/{b}/again", body=b"x")[0] == 403
    assert anon(s, "GET", f"/{b}?list-type=2")[0] == 403


@test
def grant_headers_and_acl_documents(s):
    c, u2, u3 = users(s)
    b = s.bucket_name("grants")
    c.create_bucket(Bucket=b, GrantRead=f"id={USER2[0]}", GrantWrite=f'emailAddress="{EMAIL3}"',
                    GrantFullControl=f"id={s.ak}")
    assert grants(c.get_bucket_acl(Bucket=b)) == {(USER2[0], "READ"), (USER3[0], "WRITE"),
                                                  (s.ak, "FULL_CONTROL")}
    u3.put_object(Bucket=b, Key="from3", Body=b"3")
    assert u2.list_objects_v2(Bucket=b)["KeyCount"] == 1
    expect_error(lambda: u2.put_object(Bucket=b, Key="no", Body=b"x"), "AccessDenied", 403)
    expect_error(lambda: u3.list_objects_v2(Bucket=b), "AccessDenied", 403)
    # ObjectWriter: user3 owns what it wrote; the bucket owner needs a grant.
    acl = u3.get_object_acl(Bucket=b, Key="from3")
    assert acl["Owner"] == {"ID": USER3[0], "DisplayName": "dora"}, acl
    expect_error(lambda: c.get_object(Bucket=b, Key="from3"), "AccessDenied", 403)
    u3.put_object_acl(Bucket=b, Key="from3", GrantRead=f"id={s.ak}", GrantFullControl=f"id={USER3[0]}")
    assert c.get_object(Bucket=b, Key="from3")["Body"].read() == b"3"
    # The owner's DisplayName is the configured one, in every document.
    c.put_object(Bucket=b, Key="mine", Body=b"m", GrantRead=f"uri={AUTH_USERS}", GrantFullControl=f"id={s.ak}")
    oacl = c.get_object_acl(Bucket=b, Key="mine")
    assert oacl["Owner"] == {"ID": s.ak, "DisplayName": ROOT_NAME}, oacl
    assert grants(oacl) == {(AUTH_USERS, "READ"), (s.ak, "FULL_CONTROL")}, oacl
    assert c.get_bucket_acl(Bucket=b)["Owner"] == {"ID": s.ak, "DisplayName": ROOT_NAME}
    assert c.list_buckets()["Owner"] == {"ID": s.ak, "DisplayName": ROOT_NAME}
    owners = {o["Key"]: o["Owner"] for o in c.list_objects_v2(Bucket=b, FetchOwner=True)["Contents"]}
    assert owners == {"mine": {"ID": s.ak, "DisplayName": ROOT_NAME},
                      "from3": {"ID": USER3[0], "DisplayName": "dora"}}, owners
    # PutBucketAcl / PutObjectAcl with an AccessControlPolicy document.
    pol = {"Owner": {"ID": s.ak, "DisplayName": ROOT_NAME},
           "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": s.ak}, "Permission": "FULL_CONTROL"},
                      {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ"}]}
    c.put_object_acl(Bucket=b, Key="mine", AccessControlPolicy=pol)
    assert anon(s, "GET", f"/{b}/mine")[::2] == (200, b"m")
    c.put_bucket_acl(Bucket=b, AccessControlPolicy=pol)
    st, _, body = anon(s, "GET", f"/{b}?list-type=2")
    assert st == 200 and b"<Key>mine</Key>" in body, (st, body)
    bad = dict(pol, Owner={"ID": USER2[0]})
    expect_error(lambda: c.put_bucket_acl(Bucket=b, AccessControlPolicy=bad), "AccessDenied", 403)
    assert grants(c.get_bucket_acl(Bucket=b)) == {(s.ak, "FULL_CONTROL"), (ALL_USERS, "READ")}


@test
def public_access_block_over_acls(s):
    c, _, _ = users(s)
    b = s.bucket_name("pab")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="pub", Body=b"pub", ACL="public-read")
    assert anon(s, "GET", f"/{b}/pub")[::2] == (200, b"pub")

    def pab(**kw):
        c.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
            k: kw.get(k, False) for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                                          "RestrictPublicBuckets")})

    pab(BlockPublicAcls=True)
    expect_error(lambda: c.put_object(Bucket=b, Key="p2", Body=b"x", ACL="public-read"), "AccessDenied", 403)
    expect_error(lambda: c.put_bucket_acl(Bucket=b, ACL="public-read-write"), "AccessDenied", 403)
    expect_error(lambda: c.head_object(Bucket=b, Key="p2"), "404", 404)
    assert anon(s, "GET", f"/{b}/pub")[0] == 200  # what was granted stays
    pab(IgnorePublicAcls=True)
    st, _, body = anon(s, "GET", f"/{b}/pub")
    assert st == 403 and code_of(body) == "AccessDenied", (st, body)
    c.delete_public_access_block(Bucket=b)
    assert anon(s, "GET", f"/{b}/pub")[::2] == (200, b"pub")


@test
def s3cmd_acl_public(s):
    if not os.access("/usr/bin/s3cmd", os.X_OK):
        print("skip: /usr/bin/s3cmd not installed")
        return
    cfg = os.path.join(s.tmp, "s3cfg-legacy")
    with open(cfg, "w") as f:
        f.write(f"[default]\naccess_key = {s.ak}\nsecret_key = {s.sk}\nhost_base = {s.host}:{s.port}\n"
                f"host_bucket = {s.host}:{s.port}\nuse_https = False\nsignature_v2 = False\n"
                "bucket_location = us-east-1\nproxy_host =\nenable_multipart = False\n"
                "guess_mime_type = False\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home}

    def s3cmd(*args):
        r = subprocess.run(["/usr/bin/s3cmd", "-c", cfg, "--no-progress", *args], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    b = s.bucket_name("s3cmd")
    s3cmd("mb", "--acl-public", f"s3://{b}")  # x-amz-acl: public-read at CreateBucket
    st, _, body = anon(s, "GET", f"/{b}?list-type=2")
    assert st == 200 and b"<KeyCount>0</KeyCount>" in body, (st, body)
    src = os.path.join(s.tmp, "pub.txt")
    with open(src, "wb") as f:
        f.write(b"published by s3cmd\n")
    s3cmd("put", "--acl-public", src, f"s3://{b}/pub.txt")
    s3cmd("put", src, f"s3://{b}/priv.txt")
    assert anon(s, "GET", f"/{b}/pub.txt")[::2] == (200, b"published by s3cmd\n")
    assert anon(s, "GET", f"/{b}/priv.txt")[0] == 403
    out = s3cmd("info", f"s3://{b}/pub.txt")
    assert "*anon*: READ" in out and ROOT_NAME in out, out
    s3cmd("setacl", "--acl-public", f"s3://{b}/priv.txt")
    assert anon(s, "GET", f"/{b}/priv.txt")[0] == 200
    s3cmd("setacl", "--acl-private", f"s3://{b}")
    assert anon(s, "GET", f"/{b}?list-type=2")[0] == 403


@test
def grant_order_and_empty_acls(s):
    c, u2, _ = users(s)
    b = s.bucket_name("order")
    c.create_bucket(Bucket=b, ACL="public-read-write")
    # Group grants first (Ceph's s3-tests read the owner at index 2).
    g = c.get_bucket_acl(Bucket=b)["Grants"]
    assert [x["Grantee"].get("URI") or x["Grantee"]["ID"] for x in g] == [ALL_USERS, ALL_USERS, s.ak], g
    assert [x["Permission"] for x in g] == ["READ", "WRITE", "FULL_CONTROL"], g
    pol = {"Owner": {"ID": s.ak},
           "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": s.ak}, "Permission": "FULL_CONTROL"},
                      {"Grantee": {"Type": "Group", "URI": AUTH_USERS}, "Permission": "READ"}]}
    c.put_bucket_acl(Bucket=b, AccessControlPolicy=pol)
    g = c.get_bucket_acl(Bucket=b)["Grants"]
    assert [x["Grantee"].get("URI") or x["Grantee"]["ID"] for x in g] == [AUTH_USERS, s.ak], g
    # An ACL without grants stays without grants (not the default): the
    # owner keeps its bucket permissions and READ_ACP/WRITE_ACP.
    c.put_object(Bucket=b, Key="o", Body=b"o")
    c.put_bucket_acl(Bucket=b, AccessControlPolicy={"Owner": {"ID": s.ak}, "Grants": []})
    assert c.get_bucket_acl(Bucket=b)["Grants"] == []
    expect_error(lambda: u2.list_objects_v2(Bucket=b), "AccessDenied", 403)
    c.put_object_acl(Bucket=b, Key="o", AccessControlPolicy={"Owner": {"ID": s.ak}, "Grants": []})
    assert c.get_object_acl(Bucket=b, Key="o")["Grants"] == []
    expect_error(lambda: c.get_object(Bucket=b, Key="o"), "AccessDenied", 403)
    c.put_object_acl(Bucket=b, Key="o", ACL="private")
    assert c.get_object(Bucket=b, Key="o")["Body"].read() == b"o"
    c.put_bucket_acl(Bucket=b, ACL="private")
    assert grants(c.get_bucket_acl(Bucket=b)) == {(s.ak, "FULL_CONTROL")}


@test
def enforced_accepts_only_bucket_owner_full_control(s):
    c, u2, _ = users(s)
    b = s.bucket_name("enfwriter")
    c.create_bucket(Bucket=b, ObjectOwnership="BucketOwnerEnforced")
    c.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": USER2[0]}, "Action": ["s3:PutObject", "s3:GetObject"],
         "Resource": f"arn:aws:s3:::{b}/*"}]}))
    # From another user, private grants only that user: not accepted.
    for acl in ("private", "bucket-owner-read", "public-read"):
        expect_error(lambda: u2.put_object(Bucket=b, Key="k", Body=b"x", ACL=acl),
                     "AccessControlListNotSupported", 400)
        expect_error(lambda: u2.create_multipart_upload(Bucket=b, Key="k", ACL=acl),
                     "AccessControlListNotSupported", 400)
    expect_error(lambda: u2.put_object(Bucket=b, Key="k", Body=b"x", GrantFullControl=f"id={USER2[0]}"),
                 "AccessControlListNotSupported", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)
    u2.put_object(Bucket=b, Key="k", Body=b"bofc", ACL="bucket-owner-full-control")
    u2.put_object(Bucket=b, Key="k2", Body=b"both", GrantFullControl=f"id={s.ak},id={USER2[0]}")
    assert c.get_object_acl(Bucket=b, Key="k")["Owner"] == {"ID": s.ak, "DisplayName": ROOT_NAME}
    assert c.get_object(Bucket=b, Key="k2")["Body"].read() == b"both"
    # From the bucket owner, private is bucket-owner-full-control.
    c.put_object(Bucket=b, Key="own", Body=b"own", ACL="private")
    c.put_object_acl(Bucket=b, Key="own", ACL="private")
    up = u2.create_multipart_upload(Bucket=b, Key="mp", ACL="bucket-owner-full-control")["UploadId"]
    lp = c.list_parts(Bucket=b, Key="mp", UploadId=up)
    assert lp["Owner"] == {"ID": s.ak, "DisplayName": ROOT_NAME}, lp["Owner"]
    ups = c.list_multipart_uploads(Bucket=b)["Uploads"]
    assert [u["Owner"] for u in ups] == [{"ID": s.ak, "DisplayName": ROOT_NAME}], ups
    c.abort_multipart_upload(Bucket=b, Key="mp", UploadId=up)


def public_get_policy(b, effect="Allow", key="*"):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": effect, "Principal": "*", "Action": ["s3:GetObject", "s3:GetObjectTagging"],
         "Resource": f"arn:aws:s3:::{b}/{key}"}]})


@test
def bucket_policy_covers_only_the_bucket_owners_objects(s):
    c, u2, u3 = users(s)
    b = s.bucket_name("polown")
    c.create_bucket(Bucket=b, GrantWrite=f"id={USER2[0]}", GrantFullControl=f"id={s.ak}")
    c.put_object(Bucket=b, Key="root-obj", Body=b"root's", Tagging="t=1")
    u2.put_object(Bucket=b, Key="u2-obj", Body=b"u2's", Tagging="t=2")
    u2.put_object(Bucket=b, Key="u2-bofc", Body=b"u2 bofc", ACL="bucket-owner-full-control")
    c.put_bucket_policy(Bucket=b, Policy=public_get_policy(b))
    assert anon(s, "GET", f"/{b}/root-obj")[::2] == (200, b"root's")
    assert u3.get_object_tagging(Bucket=b, Key="root-obj")["TagSet"] == [{"Key": "t", "Value": "1"}]
    # Objects user2 owns: the bucket owner's policy grants nothing on them.
    for k in ("u2-obj", "u2-bofc"):
        st, _, body = anon(s, "GET", f"/{b}/{k}")
        assert st == 403 and code_of(body) == "AccessDenied", (k, st, body)
        assert anon(s, "HEAD", f"/{b}/{k}")[0] == 403, k
        expect_error(lambda: u3.get_object(Bucket=b, Key=k), "AccessDenied", 403)
    expect_error(lambda: u3.get_object_tagging(Bucket=b, Key="u2-obj"), "AccessDenied", 403)
    # Nor through a copy: the source needs s3:GetObject on an owned object.
    expect_error(lambda: c.copy_object(Bucket=b, Key="stolen", CopySource={"Bucket": b, "Key": "u2-obj"}),
                 "AccessDenied", 403)
    # The object's own ACL still grants (bucket-owner-full-control did).
    assert c.get_object(Bucket=b, Key="u2-bofc")["Body"].read() == b"u2 bofc"
    assert u2.get_object(Bucket=b, Key="u2-obj")["Body"].read() == b"u2's"
    u2.put_object_acl(Bucket=b, Key="u2-obj", ACL="public-read")
    assert anon(s, "GET", f"/{b}/u2-obj")[::2] == (200, b"u2's")
    # An explicit Deny covers every object in the bucket, whoever owns it.
    c.put_bucket_policy(Bucket=b, Policy=public_get_policy(b, "Deny", "u2-obj"))
    assert anon(s, "GET", f"/{b}/u2-obj")[0] == 403
    expect_error(lambda: u2.get_object(Bucket=b, Key="u2-obj"), "AccessDenied", 403)
    c.put_bucket_policy(Bucket=b, Policy=public_get_policy(b))
    # BucketOwnerPreferred: bucket-owner-full-control hands the object over.
    p = s.bucket_name("polpref")
    c.create_bucket(Bucket=p, ObjectOwnership="BucketOwnerPreferred", GrantWrite=f"id={USER2[0]}",
                    GrantFullControl=f"id={s.ak}")
    c.put_bucket_policy(Bucket=p, Policy=public_get_policy(p))
    u2.put_object(Bucket=p, Key="given", Body=b"given", ACL="bucket-owner-full-control")
    u2.put_object(Bucket=p, Key="kept", Body=b"kept")
    assert anon(s, "GET", f"/{p}/given")[::2] == (200, b"given")
    assert anon(s, "GET", f"/{p}/kept")[0] == 403
    # BucketOwnerEnforced: the bucket owner owns everything; the policy covers it.
    c.put_bucket_acl(Bucket=b, ACL="private")
    c.put_bucket_ownership_controls(Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    assert anon(s, "GET", f"/{b}/u2-bofc")[::2] == (200, b"u2 bofc")
    assert u3.get_object_tagging(Bucket=b, Key="u2-obj")["TagSet"] == [{"Key": "t", "Value": "2"}]


if __name__ == "__main__":
    run(Strata(["--users", users_file(), "--default-object-ownership", "ObjectWriter",
                "--root-display-name", ROOT_NAME]))
