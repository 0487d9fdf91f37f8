#!/usr/bin/python3
"""test_acl.py - ACLs, S3 Object Ownership and public access block through
boto3, curl (anonymous, and --aws-sigv4 for raw bodies), /usr/bin/aws and
s3cmd against a live strata started with --users (a second and a third
user; the third has an e-mail address for emailAddress= grants).

Every canned ACL and every grant header is checked by what it lets an
anonymous caller, the second and the third user do (and not do); the
AccessControlPolicy XML round-trips; bad ACL XML, a wrong owner, an
unknown e-mail address and canned + grant headers together get AWS's
errors and leave the previous ACL in force; ownership controls
(BucketOwnerEnforced by default, ACLs disabled exactly as AWS does, who
owns an object written by another user under ObjectWriter and
BucketOwnerPreferred); public access block overriding ACLs and policies;
CreateBucket on a bucket you own in us-east-1 and elsewhere.
Run by CTest with /usr/bin/python3.
"""

import atexit
import hashlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, run, test  # noqa: E402

USER2 = ("STRATAACL2" + secrets.token_hex(4).upper(), "u2-secret/" + secrets.token_hex(8))
USER3 = ("STRATAACL3" + secrets.token_hex(4).upper(), "u3-secret/" + secrets.token_hex(8))
EMAIL3 = "carol@example.com"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
LOG_DELIVERY = "http://acs.amazonaws.com/groups/s3/LogDelivery"


def users_file():
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="strata-users.", dir=base)
    atexit.register(os.unlink, path)
    with os.fdopen(fd, "w") as f:
        f.write(f"{USER2[0]} {USER2[1]} Bob Reader\n{USER3[0]} {USER3[1]} carol <{EMAIL3}>\n")
    return path


def curl(s, method, path, data=None, sign=None, headers=()):
    """(status, body).  Unsigned with curl; sign=(ak, sk) signs the raw
    request with botocore's SigV4 signer (for bodies boto3 would not send)."""
    if sign:
        return signed(s, method, path, data, sign, headers)
    how = ["-I"] if method == "HEAD" else ["-X", method]
    cmd = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", *how]
    for h in headers:
        cmd += ["-H", h]
    if data is not None:
        cmd += ["--data-binary", "@-", "-H", "Content-Type: application/xml"]
    cmd.append(s.endpoint + path)
    out = subprocess.run(cmd, input=data, capture_output=True, env={"PATH": "/usr/bin:/bin"},
                         timeout=60, check=True).stdout
    body, _, code = out.rpartition(b"\n")
    return int(code), body


def signed(s, method, path, data, keys, headers):
    hdrs = dict(h.split(": ", 1) for h in headers)
    hdrs["x-amz-content-sha256"] = hashlib.sha256(data or b"").hexdigest()
    req = AWSRequest(method=method, url=s.endpoint + path, data=data or b"", headers=hdrs)
    SigV4Auth(Credentials(*keys), "s3", "us-east-1").add_auth(req)
    p = req.prepare()
    r = urllib.request.Request(p.url, data=data, method=method, headers=dict(p.headers))
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def users(s):
    return s.client(), s.client(*USER2), s.client(*USER3)


def writer_bucket(s, prefix, mode="ObjectWriter", **kw):
    """A bucket with ACLs enabled (AWS's default before 2023)."""
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b, ObjectOwnership=mode, **kw)
    return b


def grants(acl):
    out = set()
    for g in acl["Grants"]:
        ge = g["Grantee"]
        out.add((ge.get("ID") or ge.get("URI"), g["Permission"]))
    return out


def can_get(client, b, k):
    try:
        client.get_object(Bucket=b, Key=k)["Body"].read()
        return True
    except client.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "AccessDenied", e.response
        return False


@test
def canned_object_acls(s):
    c, u2, u3 = users(s)
    b = writer_bucket(s, "cannedobj")
    # (canned ACL, anonymous may read, user2 may read, extra grants)
    table = [
        ("private", False, False, set()),
        ("public-read", True, True, {(ALL_USERS, "READ")}),
        ("authenticated-read", False, True, {(AUTH_USERS, "READ")}),
        ("bucket-owner-read", False, False, set()),  # the owner wrote it: nothing more
        ("bucket-owner-full-control", False, False, set()),
    ]
    for acl, anon, user2, extra in table:
        k = f"obj-{acl}"
        c.put_object(Bucket=b, Key=k, Body=acl.encode(), ACL=acl)
        got = curl(s, "GET", f"/{b}/{k}")
        assert (got == (200, acl.encode())) == anon, (acl, got)
        assert curl(s, "HEAD", f"/{b}/{k}")[0] == (200 if anon else 403), acl
        assert can_get(u2, b, k) == user2, acl
        assert can_get(u3, b, k) == user2, acl
        assert grants(c.get_object_acl(Bucket=b, Key=k)) == {(s.ak, "FULL_CONTROL")} | extra, acl
        # READ grants no ACL access and no writes.
        expect_error(lambda: u2.get_object_acl(Bucket=b, Key=k), "AccessDenied", 403)
        expect_error(lambda: u2.put_object(Bucket=b, Key=k, Body=b"x"), "AccessDenied", 403)
    assert curl(s, "PUT", f"/{b}/obj-public-read", data=b"over")[0] == 403
    assert c.get_object(Bucket=b, Key="obj-public-read")["Body"].read() == b"public-read"
    # PutObjectAcl changes it in place, CopyObject and multipart set it too.
    c.put_object_acl(Bucket=b, Key="obj-private", ACL="public-read")
    assert curl(s, "GET", f"/{b}/obj-private") == (200, b"private")
    c.put_object_acl(Bucket=b, Key="obj-private", ACL="private")
    assert curl(s, "GET", f"/{b}/obj-private")[0] == 403
    c.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "obj-private"}, ACL="public-read")
    assert curl(s, "GET", f"/{b}/copy") == (200, b"private")
    c.copy_object(Bucket=b, Key="copy2", CopySource={"Bucket": b, "Key": "obj-public-read"})
    assert curl(s, "GET", f"/{b}/copy2")[0] == 403  # a copy never takes the source's ACL
    up = c.create_multipart_upload(Bucket=b, Key="mp", ACL="authenticated-read")["UploadId"]
    e = c.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"parts")["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    assert u3.get_object(Bucket=b, Key="mp")["Body"].read() == b"parts"
    assert curl(s, "GET", f"/{b}/mp")[0] == 403
    expect_error(lambda: c.put_object(Bucket=b, Key="x", Body=b"x", ACL="no-such-acl"), "InvalidArgument", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="x"), "404", 404)


@test
def canned_bucket_acls(s):
    c, u2, u3 = users(s)
    b = writer_bucket(s, "prw", ACL="public-read-write")
    # Anonymous writers may create, overwrite, list and delete objects.
    assert curl(s, "PUT", f"/{b}/anon", data=b"by anon")[0] == 200
    st, body = curl(s, "GET", f"/{b}?list-type=2")
    assert st == 200 and b"<Key>anon</Key>" in body, (st, body)
    assert c.get_object(Bucket=b, Key="anon")["Body"].read() == b"by anon"
    u2.put_object(Bucket=b, Key="by-u2", Body=b"2")
    assert curl(s, "DELETE", f"/{b}/anon")[0] == 204
    expect_error(lambda: c.head_object(Bucket=b, Key="anon"), "404", 404)
    assert curl(s, "GET", f"/{b}?acl")[0] == 403  # no READ_ACP
    expect_error(lambda: u2.put_bucket_acl(Bucket=b, ACL="private"), "AccessDenied", 403)
    assert grants(c.get_bucket_acl(Bucket=b)) == {(s.ak, "FULL_CONTROL"), (ALL_USERS, "READ"),
                                                  (ALL_USERS, "WRITE")}
    c.put_bucket_acl(Bucket=b, ACL="public-read")
    assert curl(s, "GET", f"/{b}?list-type=2")[0] == 200
    assert curl(s, "PUT", f"/{b}/anon2", data=b"x")[0] == 403
    c.put_bucket_acl(Bucket=b, ACL="authenticated-read")
    assert curl(s, "GET", f"/{b}?list-type=2")[0] == 403
    assert u3.list_objects_v2(Bucket=b)["KeyCount"] == 1
    expect_error(lambda: u3.put_object(Bucket=b, Key="k", Body=b"x"), "AccessDenied", 403)
    c.put_bucket_acl(Bucket=b, ACL="log-delivery-write")
    assert grants(c.get_bucket_acl(Bucket=b)) == {(s.ak, "FULL_CONTROL"), (LOG_DELIVERY, "WRITE"),
                                                  (LOG_DELIVERY, "READ_ACP")}
    expect_error(lambda: u3.list_objects_v2(Bucket=b), "AccessDenied", 403)
    c.put_bucket_acl(Bucket=b, ACL="private")
    assert grants(c.get_bucket_acl(Bucket=b)) == {(s.ak, "FULL_CONTROL")}
    assert curl(s, "GET", f"/{b}?list-type=2")[0] == 403
    expect_error(lambda: u2.list_objects_v2(Bucket=b), "AccessDenied", 403)


@test
def grant_headers(s):
    c, u2, u3 = users(s)
    b = writer_bucket(s, "granthdr", GrantWrite=f"id={USER3[0]}", GrantReadACP=f'id="{USER2[0]}"')
    assert grants(c.get_bucket_acl(Bucket=b)) == {(USER3[0], "WRITE"), (USER2[0], "READ_ACP")}
    # Grant headers are the whole ACL: the owner kept only READ_ACP/WRITE_ACP
    # and, as bucket owner, every bucket permission.
    c.put_object(Bucket=b, Key="o", Body=b"o")
    u3.put_object(Bucket=b, Key="by3", Body=b"3")
    assert grants(u2.get_bucket_acl(Bucket=b))
    expect_error(lambda: u2.list_objects_v2(Bucket=b), "AccessDenied", 403)
    expect_error(lambda: u2.put_object(Bucket=b, Key="no", Body=b"x"), "AccessDenied", 403)
    # Object grants by id, by e-mail address and to a group.
    c.put_object(Bucket=b, Key="g", Body=b"granted", GrantRead=f"id={USER2[0]}, emailAddress=\"{EMAIL3}\"",
                 GrantReadACP=f"uri=\"{AUTH_USERS}\"", GrantFullControl=f"id={s.ak}")
    assert u2.get_object(Bucket=b, Key="g")["Body"].read() == b"granted"
    assert u3.get_object(Bucket=b, Key="g")["Body"].read() == b"granted"
    assert curl(s, "GET", f"/{b}/g")[0] == 403
    acl = u3.get_object_acl(Bucket=b, Key="g")  # READ_ACP to AuthenticatedUsers
    assert grants(acl) == {(USER2[0], "READ"), (USER3[0], "READ"), (AUTH_USERS, "READ_ACP"),
                           (s.ak, "FULL_CONTROL")}, acl
    names = {g["Grantee"].get("ID"): g["Grantee"].get("DisplayName") for g in acl["Grants"]}
    assert names[USER2[0]] == "Bob Reader" and names[USER3[0]] == "carol", names
    expect_error(lambda: u3.put_object_acl(Bucket=b, Key="g", ACL="public-read"), "AccessDenied", 403)
    c.put_object_acl(Bucket=b, Key="g", GrantWriteACP=f"id={USER3[0]}", GrantRead=f"id={USER3[0]}")
    u3.put_object_acl(Bucket=b, Key="g", GrantRead=f"uri={ALL_USERS}", GrantWriteACP=f"id={USER3[0]}")
    assert curl(s, "GET", f"/{b}/g") == (200, b"granted")
    # Errors: nothing is stored.
    expect_error(lambda: c.put_object(Bucket=b, Key="bad", Body=b"x", GrantRead="emailAddress=nobody@example.com"),
                 "UnresolvableGrantByEmailAddress", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="bad", Body=b"x", GrantRead="id=NOSUCHUSER"),
                 "InvalidArgument", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="bad", Body=b"x", GrantRead="uri=http://example.com/x"),
                 "InvalidArgument", 400)
    r = expect_error(lambda: c.put_object(Bucket=b, Key="bad", Body=b"x", ACL="public-read",
                                          GrantRead=f"id={USER2[0]}"), "InvalidRequest", 400)
    assert "Canned ACLs and Header Grants" in r["Error"]["Message"], r
    expect_error(lambda: c.head_object(Bucket=b, Key="bad"), "404", 404)
    expect_error(lambda: c.put_bucket_acl(Bucket=b, GrantRead="emailAddress=nobody@example.com"),
                 "UnresolvableGrantByEmailAddress", 400)
    assert grants(c.get_bucket_acl(Bucket=b)) == {(USER3[0], "WRITE"), (USER2[0], "READ_ACP")}


@test
def acl_xml_round_trip_and_errors(s):
    c, u2, u3 = users(s)
    b = writer_bucket(s, "aclxml")
    c.put_object(Bucket=b, Key="o", Body=b"xml")
    owner = c.get_bucket_acl(Bucket=b)["Owner"]
    assert owner == {"ID": s.ak, "DisplayName": "root"}, owner
    pol = {"Owner": {"ID": s.ak},
           "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": s.ak}, "Permission": "FULL_CONTROL"},
                      {"Grantee": {"Type": "CanonicalUser", "ID": USER2[0]}, "Permission": "WRITE"},
                      {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": EMAIL3},
                       "Permission": "READ"},
                      {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ_ACP"}]}
    c.put_bucket_acl(Bucket=b, AccessControlPolicy=pol)
    want = {(s.ak, "FULL_CONTROL"), (USER2[0], "WRITE"), (USER3[0], "READ"), (ALL_USERS, "READ_ACP")}
    assert grants(c.get_bucket_acl(Bucket=b)) == want
    u2.put_object(Bucket=b, Key="w2", Body=b"w")
    assert u3.list_objects_v2(Bucket=b)["KeyCount"] == 2
    st, body = curl(s, "GET", f"/{b}?acl")
    assert st == 200 and USER3[0].encode() in body and b"xsi:type=\"Group\"" in body, (st, body)
    # The document GET returns goes back in unchanged.
    st, doc = curl(s, "GET", f"/{b}?acl", sign=(s.ak, s.sk))
    assert st == 200
    assert curl(s, "PUT", f"/{b}?acl", data=doc, sign=(s.ak, s.sk))[0] == 200
    assert grants(c.get_bucket_acl(Bucket=b)) == want
    # Bad bodies: AWS's error, the ACL untouched.
    bad = [
        (b"<AccessControlPolicy><Owner><ID>" + s.ak.encode() + b"</ID></Owner>", "MalformedACLError", 400),
        (b"<AccessControlPolicy><AccessControlList/></AccessControlPolicy>", "MalformedACLError", 400),
        (doc.replace(b"READ_ACP", b"READ_EVERYTHING"), "MalformedACLError", 400),
        (doc.replace(s.ak.encode() + b"</ID><DisplayName>root</DisplayName></Owner>",
                     USER2[0].encode() + b"</ID></Owner>"), "AccessDenied", 403),
        (doc.replace(USER2[0].encode(), b"NOSUCHUSER"), "InvalidArgument", 400),
    ]
    for body, code, status in bad:
        assert body != doc
        st, out = curl(s, "PUT", f"/{b}?acl", data=body, sign=(s.ak, s.sk))
        assert st == status and f"<Code>{code}</Code>".encode() in out, (code, st, out)
        assert grants(c.get_bucket_acl(Bucket=b)) == want, code
        st, out = curl(s, "PUT", f"/{b}/o?acl", data=body.replace(b"READ_ACP", b"READ"), sign=(s.ak, s.sk))
        assert st == status and f"<Code>{code}</Code>".encode() in out, (code, st, out)
    assert grants(c.get_object_acl(Bucket=b, Key="o")) == {(s.ak, "FULL_CONTROL")}
    # Headers and a body together; neither.
    st, out = curl(s, "PUT", f"/{b}?acl", data=doc, sign=(s.ak, s.sk), headers=["x-amz-acl: private"])
    assert st == 400 and b"UnexpectedContent" in out, (st, out)
    st, out = curl(s, "PUT", f"/{b}?acl", sign=(s.ak, s.sk))
    assert st == 400 and b"MissingSecurityHeader" in out, (st, out)
    assert grants(c.get_bucket_acl(Bucket=b)) == want


@test
def object_ownership(s):
    c, u2, u3 = users(s)
    # New buckets: BucketOwnerEnforced, ACLs disabled.
    b = s.bucket_name("enforced")
    c.create_bucket(Bucket=b)
    oc = c.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]
    assert oc == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}, oc
    for acl in ("public-read", "authenticated-read", "public-read-write"):
        expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x", ACL=acl),
                     "AccessControlListNotSupported", 400)
        expect_error(lambda: c.put_bucket_acl(Bucket=b, ACL=acl), "AccessControlListNotSupported", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"x", GrantRead=f"id={USER2[0]}"),
                 "AccessControlListNotSupported", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="k"), "404", 404)
    c.put_object(Bucket=b, Key="k", Body=b"x", ACL="bucket-owner-full-control")
    c.put_object(Bucket=b, Key="k2", Body=b"x", ACL="private")
    c.put_object_acl(Bucket=b, Key="k", ACL="bucket-owner-full-control")
    expect_error(lambda: c.put_object_acl(Bucket=b, Key="k", ACL="public-read"),
                 "AccessControlListNotSupported", 400)
    c.put_bucket_acl(Bucket=b, ACL="private")
    assert grants(c.get_object_acl(Bucket=b, Key="k")) == {(s.ak, "FULL_CONTROL")}
    nb = s.bucket_name("enfacl")
    expect_error(lambda: c.create_bucket(Bucket=nb, ACL="public-read"), "InvalidBucketAclWithObjectOwnership", 400)
    expect_error(lambda: c.head_bucket(Bucket=nb), "404", 404)
    expect_error(lambda: c.create_bucket(Bucket=nb, ObjectOwnership="Nobody"), "InvalidArgument", 400)
    # ObjectWriter: another user's object is theirs; the bucket owner reads
    # it only when granted.
    w = writer_bucket(s, "writer", GrantWrite=f"id={USER2[0]}")
    u2.put_object(Bucket=w, Key="theirs", Body=b"u2")
    acl = u2.get_object_acl(Bucket=w, Key="theirs")
    assert acl["Owner"]["ID"] == USER2[0] and grants(acl) == {(USER2[0], "FULL_CONTROL")}, acl
    expect_error(lambda: c.get_object(Bucket=w, Key="theirs"), "AccessDenied", 403)
    owners = {o["Key"]: o["Owner"] for o in c.list_objects_v2(Bucket=w, FetchOwner=True)["Contents"]}
    assert owners["theirs"] == {"ID": USER2[0], "DisplayName": "Bob Reader"}, owners
    u2.put_object(Bucket=w, Key="shared", Body=b"u2", ACL="bucket-owner-full-control")
    assert c.get_object(Bucket=w, Key="shared")["Body"].read() == b"u2"
    u2.put_object(Bucket=w, Key="ro", Body=b"u2", ACL="bucket-owner-read")
    assert c.get_object(Bucket=w, Key="ro")["Body"].read() == b"u2"
    expect_error(lambda: c.put_object_acl(Bucket=w, Key="ro", ACL="public-read"), "AccessDenied", 403)
    # Disabling ACLs needs a private bucket ACL; then the owner owns everything.
    expect_error(lambda: c.put_bucket_ownership_controls(
        Bucket=w, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}),
        "InvalidBucketAclWithObjectOwnership", 400)
    c.put_bucket_acl(Bucket=w, ACL="private")
    c.put_bucket_ownership_controls(Bucket=w, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    assert c.get_object(Bucket=w, Key="theirs")["Body"].read() == b"u2"
    assert c.get_object_acl(Bucket=w, Key="theirs")["Owner"]["ID"] == s.ak
    owners = {o["Key"]: o["Owner"]["ID"] for o in c.list_object_versions(Bucket=w)["Versions"]}
    assert owners["theirs"] == s.ak, owners
    expect_error(lambda: u2.get_object(Bucket=w, Key="theirs"), "AccessDenied", 403)
    c.delete_bucket_ownership_controls(Bucket=w)
    expect_error(lambda: c.get_bucket_ownership_controls(Bucket=w), "OwnershipControlsNotFoundError", 404)
    # BucketOwnerPreferred: bucket-owner-full-control hands the object over.
    p = writer_bucket(s, "preferred", "BucketOwnerPreferred", GrantWrite=f"id={USER2[0]}")
    u2.put_object(Bucket=p, Key="given", Body=b"g", ACL="bucket-owner-full-control")
    u2.put_object(Bucket=p, Key="kept", Body=b"k")
    assert c.get_object_acl(Bucket=p, Key="given")["Owner"]["ID"] == s.ak
    assert u2.get_object_acl(Bucket=p, Key="kept")["Owner"]["ID"] == USER2[0]
    expect_error(lambda: u2.get_object(Bucket=p, Key="given"), "AccessDenied", 403)
    expect_error(lambda: c.put_bucket_ownership_controls(
        Bucket=p, OwnershipControls={"Rules": [{"ObjectOwnership": "Whatever"}]}), "MalformedXML", 400)
    assert c.get_bucket_ownership_controls(Bucket=p)["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "BucketOwnerPreferred"}]
    expect_error(lambda: u2.get_bucket_ownership_controls(Bucket=p), "AccessDenied", 403)


@test
def public_access_block(s):
    c, u2, u3 = users(s)
    b = writer_bucket(s, "pab")
    c.put_object(Bucket=b, Key="pub", Body=b"pub", ACL="public-read")
    expect_error(lambda: c.get_public_access_block(Bucket=b), "NoSuchPublicAccessBlockConfiguration", 404)

    def pab(**kw):
        cfg = {k: kw.get(k, False) for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                                              "RestrictPublicBuckets")}
        c.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=cfg)
        assert c.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"] == cfg

    pab(BlockPublicAcls=True)
    expect_error(lambda: c.put_object(Bucket=b, Key="p2", Body=b"x", ACL="public-read"), "AccessDenied", 403)
    expect_error(lambda: c.put_object(Bucket=b, Key="p2", Body=b"x", GrantRead=f"uri={AUTH_USERS}"),
                 "AccessDenied", 403)
    expect_error(lambda: c.put_bucket_acl(Bucket=b, ACL="public-read"), "AccessDenied", 403)
    expect_error(lambda: c.put_object_acl(Bucket=b, Key="pub", ACL="public-read-write"), "AccessDenied", 403)
    expect_error(lambda: c.head_object(Bucket=b, Key="p2"), "404", 404)
    c.put_object(Bucket=b, Key="p3", Body=b"x", GrantRead=f"id={USER2[0]}")  # not public
    assert curl(s, "GET", f"/{b}/pub") == (200, b"pub")  # existing ACLs still count
    pab(IgnorePublicAcls=True)
    assert curl(s, "GET", f"/{b}/pub")[0] == 403
    assert u2.get_object(Bucket=b, Key="p3")["Body"].read() == b"x"
    c.put_object(Bucket=b, Key="p4", Body=b"x", ACL="public-read")  # allowed, ignored
    assert curl(s, "GET", f"/{b}/p4")[0] == 403
    # Policies.
    public = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{b}/*"}]})
    pab(BlockPublicPolicy=True)
    expect_error(lambda: c.put_bucket_policy(Bucket=b, Policy=public), "AccessDenied", 403)
    expect_error(lambda: c.get_bucket_policy(Bucket=b), "NoSuchBucketPolicy", 404)
    c.put_bucket_policy(Bucket=b, Policy=public.replace('"*"', json.dumps({"AWS": USER3[0]})))
    assert u3.get_object(Bucket=b, Key="p3")["Body"].read() == b"x"
    pab()
    c.put_bucket_policy(Bucket=b, Policy=public)
    assert curl(s, "GET", f"/{b}/p3") == (200, b"x")
    assert c.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is True
    pab(RestrictPublicBuckets=True)
    assert curl(s, "GET", f"/{b}/p3")[0] == 403
    expect_error(lambda: u3.get_object(Bucket=b, Key="p3"), "AccessDenied", 403)
    assert c.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is False
    assert c.get_object(Bucket=b, Key="p3")["Body"].read() == b"x"  # the owner is not blocked
    expect_error(lambda: u2.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={}),
                 "AccessDenied", 403)
    st, out = curl(s, "PUT", f"/{b}?publicAccessBlock", data=b"<PublicAccessBlockConfiguration>"
                   b"<BlockPublicAcls>yes</BlockPublicAcls></PublicAccessBlockConfiguration>", sign=(s.ak, s.sk))
    assert st == 400 and b"MalformedXML" in out, (st, out)
    assert c.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"]
    assert c.delete_public_access_block(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 204
    expect_error(lambda: c.get_public_access_block(Bucket=b), "NoSuchPublicAccessBlockConfiguration", 404)
    assert curl(s, "GET", f"/{b}/pub") == (200, b"pub")
    assert curl(s, "GET", f"/{b}/p3") == (200, b"x")


@test
def recreate_own_bucket(s):
    c, u2, _ = users(s)
    b = writer_bucket(s, "again", ACL="public-read")
    assert curl(s, "GET", f"/{b}?list-type=2")[0] == 200
    # us-east-1 (the default): 200, and the ACL is reset to the request's.
    assert c.create_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert grants(c.get_bucket_acl(Bucket=b)) == {(s.ak, "FULL_CONTROL")}
    assert curl(s, "GET", f"/{b}?list-type=2")[0] == 403
    expect_error(lambda: u2.create_bucket(Bucket=b), "BucketAlreadyExists", 409)
    # Other regions (BucketAlreadyOwnedByYou): test_region.py.


@test
def no_header_silently_dropped(s):
    c, _, _ = users(s)
    b = s.bucket_name("dropped")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="k", Body=b"x")
    for h in ("x-amz-acl: public-read", f"x-amz-grant-read: id={USER2[0]}", "x-amz-object-ownership: ObjectWriter"):
        st, out = curl(s, "PUT", f"/{b}/k?tagging", sign=(s.ak, s.sk), headers=[h],
                       data=b"<Tagging><TagSet/></Tagging>")
        assert st == 501 and b"NotImplemented" in out, (h, st, out)


@test
def awscli_and_s3cmd(s):
    b = writer_bucket(s, "clis")
    c = s.client()
    c.put_object(Bucket=b, Key="cli", Body=b"cli bytes")
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "AWS_ACCESS_KEY_ID": s.ak,
           "AWS_SECRET_ACCESS_KEY": s.sk, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    if os.access("/usr/bin/aws", os.X_OK):
        def aws(*args):
            return subprocess.run(["/usr/bin/aws", "--endpoint-url", s.endpoint, "s3api", *args],
                                  env=env, capture_output=True, text=True, timeout=120)
        r = aws("put-object-acl", "--bucket", b, "--key", "cli", "--acl", "public-read")
        assert r.returncode == 0, r.stderr
        assert curl(s, "GET", f"/{b}/cli") == (200, b"cli bytes")
        r = aws("get-object-acl", "--bucket", b, "--key", "cli", "--output", "json")
        assert r.returncode == 0 and ALL_USERS in r.stdout, (r.stdout, r.stderr)
        r = aws("put-object-acl", "--bucket", b, "--key", "cli", "--grant-read", "emailaddress=nobody@x.org")
        assert r.returncode != 0 and "UnresolvableGrantByEmailAddress" in r.stderr, r.stderr
        r = aws("get-bucket-ownership-controls", "--bucket", b, "--output", "json")
        assert r.returncode == 0 and "ObjectWriter" in r.stdout, (r.stdout, r.stderr)
        r = aws("put-public-access-block", "--bucket", b, "--public-access-block-configuration",
                "IgnorePublicAcls=true")
        assert r.returncode == 0, r.stderr
        assert curl(s, "GET", f"/{b}/cli")[0] == 403
        r = aws("delete-public-access-block", "--bucket", b)
        assert r.returncode == 0, r.stderr
        c.put_object_acl(Bucket=b, Key="cli", ACL="private")
    else:
        print("skip awscli part: /usr/bin/aws not installed")
    if not os.access("/usr/bin/s3cmd", os.X_OK):
        print("skip s3cmd part: /usr/bin/s3cmd not installed")
        return
    cfg = os.path.join(s.tmp, "s3cfg-acl")
    with open(cfg, "w") as f:
        f.write(f"[default]\naccess_key = {s.ak}\nsecret_key = {s.sk}\nhost_base = {s.host}:{s.port}\n"
                f"host_bucket = {s.host}:{s.port}\nuse_https = False\nsignature_v2 = False\n"
                "bucket_location = us-east-1\nproxy_host =\n")

    def s3cmd(*args):
        return subprocess.run(["/usr/bin/s3cmd", "-c", cfg, "--no-progress", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    assert curl(s, "GET", f"/{b}/cli")[0] == 403
    r = s3cmd("setacl", "--acl-public", f"s3://{b}/cli")
    assert r.returncode == 0, r.stderr
    assert curl(s, "GET", f"/{b}/cli") == (200, b"cli bytes")
    r = s3cmd("info", f"s3://{b}/cli")
    assert r.returncode == 0 and "*anon*: READ" in r.stdout, (r.stdout, r.stderr)
    r = s3cmd("setacl", "--acl-private", f"s3://{b}/cli")
    assert r.returncode == 0, r.stderr
    assert curl(s, "GET", f"/{b}/cli")[0] == 403
    r = s3cmd("setacl", f"--acl-grant=read:{EMAIL3}", f"s3://{b}/cli")
    assert r.returncode == 0, r.stderr
    assert s.client(*USER3).get_object(Bucket=b, Key="cli")["Body"].read() == b"cli bytes"


if __name__ == "__main__":
    run(Strata(["--users", users_file()]))
