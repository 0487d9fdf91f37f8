#!/usr/bin/python3
"""test_access.py - access control through boto3, raw HTTP and curl against
a live strata started with --users (a second and a third user).

Access-control input Strata does not enforce is refused with 501
NotImplemented and stores nothing: x-amz-grant-* headers, canned ACLs other
than private, an AccessControlPolicy body granting more than the owner's
FULL_CONTROL.  Run by CTest with /usr/bin/python3.
"""

import atexit
import os
import secrets
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, run, test  # noqa: E402

USER2 = ("STRATAUSER2" + secrets.token_hex(4).upper(), "user2-secret/" + secrets.token_hex(8))
USER3 = ("STRATAUSER3" + secrets.token_hex(4).upper(), "user3-secret/" + secrets.token_hex(8))


def users_file():
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="strata-users.", dir=base)
    atexit.register(os.unlink, path)
    with os.fdopen(fd, "w") as f:
        f.write(f"{USER2[0]} {USER2[1]} reader\n{USER3[0]} {USER3[1]} other\n")
    return path


def new_bucket(s, prefix):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    return c, b


def no_such_key(c, b, k):
    expect_error(lambda: c.head_object(Bucket=b, Key=k), "404", 404)


# ---- no silent success: unenforced access-control input is 501 ------------

GRANTS = {"GrantRead": "x-amz-grant-read", "GrantWrite": "x-amz-grant-write",
          "GrantReadACP": "x-amz-grant-read-acp", "GrantWriteACP": "x-amz-grant-write-acp",
          "GrantFullControl": "x-amz-grant-full-control"}
GRANTEE = 'uri="http://acs.amazonaws.com/groups/global/AllUsers"'


@test
def grant_headers_refused(s):
    c, b = new_bucket(s, "grants")
    c.put_object(Bucket=b, Key="src", Body=b"source")
    for arg in GRANTS:
        if arg != "GrantWrite":  # objects take no WRITE grant in boto3's model
            kw = {arg: GRANTEE}
            expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x", **kw), "NotImplemented", 501)
            no_such_key(c, b, "k")
            expect_error(lambda: c.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "src"}, **kw),
                         "NotImplemented", 501)
            no_such_key(c, b, "k")
            expect_error(lambda: c.create_multipart_upload(Bucket=b, Key="k", **kw), "NotImplemented", 501)
            expect_error(lambda: c.put_object_acl(Bucket=b, Key="src", **kw), "NotImplemented", 501)
        kw = {arg: GRANTEE}
        nb = s.bucket_name("grantnew")
        expect_error(lambda: c.create_bucket(Bucket=nb, **kw), "NotImplemented", 501)
        expect_error(lambda: c.head_bucket(Bucket=nb), "404", 404)
        expect_error(lambda: c.put_bucket_acl(Bucket=b, **kw), "NotImplemented", 501)
    assert c.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    acl = c.get_bucket_acl(Bucket=b)
    assert [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"], acl


@test
def canned_acls_refused(s):
    c, b = new_bucket(s, "canned")
    c.put_object(Bucket=b, Key="src", Body=b"source")
    for acl in ("public-read", "public-read-write", "authenticated-read", "bucket-owner-read",
                "bucket-owner-full-control"):
        expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x", ACL=acl), "NotImplemented", 501)
        expect_error(lambda: c.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "src"}, ACL=acl),
                     "NotImplemented", 501)
        no_such_key(c, b, "k")
        expect_error(lambda: c.create_multipart_upload(Bucket=b, Key="k", ACL=acl), "NotImplemented", 501)
        expect_error(lambda: c.put_object_acl(Bucket=b, Key="src", ACL=acl), "NotImplemented", 501)
        expect_error(lambda: c.put_bucket_acl(Bucket=b, ACL=acl), "NotImplemented", 501)
        nb = s.bucket_name("cannednew")
        expect_error(lambda: c.create_bucket(Bucket=nb, ACL=acl), "NotImplemented", 501)
        expect_error(lambda: c.head_bucket(Bucket=nb), "404", 404)
    # private is what Strata does: accepted.
    c.put_object(Bucket=b, Key="p", Body=b"x", ACL="private")
    c.copy_object(Bucket=b, Key="p2", CopySource={"Bucket": b, "Key": "src"}, ACL="private")
    c.put_bucket_acl(Bucket=b, ACL="private")


@test
def acl_body_granting_more_refused(s):
    c, b = new_bucket(s, "aclbody")
    c.put_object(Bucket=b, Key="o", Body=b"x")
    owner = c.get_bucket_acl(Bucket=b)["Owner"]
    me = {"Grantee": {"Type": "CanonicalUser", "ID": owner["ID"]}, "Permission": "FULL_CONTROL"}
    extra = [
        {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
         "Permission": "READ"},
        {"Grantee": {"Type": "CanonicalUser", "ID": USER2[0]}, "Permission": "READ"},
        {"Grantee": {"Type": "CanonicalUser", "ID": owner["ID"]}, "Permission": "READ_ACP"},
    ]
    for g in extra:
        pol = {"Owner": owner, "Grants": [me, g]}
        expect_error(lambda: c.put_bucket_acl(Bucket=b, AccessControlPolicy=pol), "NotImplemented", 501)
        expect_error(lambda: c.put_object_acl(Bucket=b, Key="o", AccessControlPolicy=pol), "NotImplemented", 501)
    c.put_bucket_acl(Bucket=b, AccessControlPolicy={"Owner": owner, "Grants": [me]})
    c.put_object_acl(Bucket=b, Key="o", AccessControlPolicy={"Owner": owner, "Grants": [me]})


if __name__ == "__main__":
    run(Strata(["--users", users_file()]))
