#!/usr/bin/python3
"""test_access.py - access control through boto3, curl and the AWS CLI
against a live strata started with --users (a second and a third user).

ACLs, object ownership and public access block: test_acl.py.

Bucket policies: Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus
(owner only; NoSuchBucketPolicy; a malformed, an oversized and an
unsupported policy each get AWS's error and leave the previous policy in
force), and their enforcement: a public-read bucket read by curl without
credentials (writes and listing still denied), a read-only user, a denied
prefix (GET, PUT, DeleteObjects per key, CopyObject source), deny unless
TLS, an IP allow-list, an explicit Deny beating the owner, conditions on
the x-amz-grant-* headers, bucket default encryption granted to another
user (s3:Get/PutEncryptionConfiguration; --kms-key-file).
Run by CTest with /usr/bin/python3.
"""

import atexit
import base64
import json
import os
import secrets
import subprocess
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


def kms_key_file():
    """One active key, so that PutBucketEncryption has something to apply."""
    base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="strata-kms.", dir=base)
    atexit.register(os.unlink, path)
    with os.fdopen(fd, "w") as f:  # mkstemp: mode 0600, as the daemon requires
        json.dump({"active": "k1", "keys": {"k1": {"key": base64.b64encode(secrets.token_bytes(32)).decode()}}}, f)
    return path


def new_bucket(s, prefix):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    return c, b


def no_such_key(c, b, k):
    expect_error(lambda: c.head_object(Bucket=b, Key=k), "404", 404)


@test
def expected_owner(s):
    c, b = new_bucket(s, "expown")
    c.put_object(Bucket=b, Key="k", Body=b"x")
    # x-amz-expected-bucket-owner: 403 when someone else owns the bucket.
    assert c.get_object(Bucket=b, Key="k", ExpectedBucketOwner=s.ak)["Body"].read() == b"x"
    expect_error(lambda: c.get_object(Bucket=b, Key="k", ExpectedBucketOwner=USER2[0]), "AccessDenied", 403)
    expect_error(lambda: c.put_object(Bucket=b, Key="k", Body=b"y", ExpectedBucketOwner=USER2[0]),
                 "AccessDenied", 403)
    expect_error(lambda: c.copy_object(Bucket=b, Key="k2", CopySource={"Bucket": b, "Key": "k"},
                                       ExpectedSourceBucketOwner=USER2[0]), "AccessDenied", 403)
    no_such_key(c, b, "k2")
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"x"


# ---- bucket policies ---------------------------------------------------------

def arn(b, k=None):
    return f"arn:aws:s3:::{b}" + (f"/{k}" if k is not None else "")


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(principal, actions, resources, **cond):
    st = {"Effect": "Allow", "Principal": principal, "Action": actions, "Resource": resources}
    if cond:
        st["Condition"] = cond
    return st


def deny(principal, actions, resources, **cond):
    st = allow(principal, actions, resources, **cond)
    st["Effect"] = "Deny"
    return st


def curl(s, method, path, data=None):
    """An unsigned request: (status, body bytes)."""
    how = ["-I"] if method == "HEAD" else ["-X", method]
    cmd = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", *how, s.endpoint + path]
    if data is not None:
        cmd += ["--data-binary", "@-", "-H", "Content-Type: application/octet-stream"]
    out = subprocess.run(cmd, input=data, capture_output=True, env={"PATH": "/usr/bin:/bin"},
                         timeout=60, check=True).stdout
    body, _, code = out.rpartition(b"\n")
    return int(code), body


def user(s, u):
    return s.client(u[0], u[1])


@test
def policy_crud(s):
    c, b = new_bucket(s, "polcrud")
    expect_error(lambda: c.get_bucket_policy(Bucket=b), "NoSuchBucketPolicy", 404)
    expect_error(lambda: c.delete_bucket_policy(Bucket=b), "NoSuchBucketPolicy", 404)
    expect_error(lambda: c.get_bucket_policy_status(Bucket=b), "NoSuchBucketPolicy", 404)
    doc = policy(allow("*", "s3:GetObject", arn(b, "*")))
    resp = c.put_bucket_policy(Bucket=b, Policy=doc)
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert c.get_bucket_policy(Bucket=b)["Policy"] == doc
    assert c.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is True
    c.put_bucket_policy(Bucket=b, Policy=policy(allow({"AWS": USER2[0]}, "s3:GetObject", arn(b, "*"))))
    assert c.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is False
    assert c.delete_bucket_policy(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 204
    expect_error(lambda: c.get_bucket_policy(Bucket=b), "NoSuchBucketPolicy", 404)
    expect_error(lambda: c.get_bucket_policy(Bucket=s.bucket_name("nosuch")), "NoSuchBucket", 404)


@test
def bad_policies_keep_previous(s):
    c, b = new_bucket(s, "polbad")
    good = policy(allow("*", "s3:GetObject", arn(b, "*")))
    c.put_bucket_policy(Bucket=b, Policy=good)
    c.put_object(Bucket=b, Key="k", Body=b"public bytes")
    bad = [
        ("{not json", "MalformedPolicy", "invalid Json"),
        ('{"Version":"2012-10-17"}', "MalformedPolicy", "Statement"),
        (policy(allow("*", "s3:GetObject", arn("some-other-bucket", "*"))), "MalformedPolicy", "resource"),
        (policy(allow("*", "s3:GetObjekt", arn(b, "*"))), "MalformedPolicy", "action"),
        (policy({"Effect": "Permit", "Principal": "*", "Action": "s3:GetObject", "Resource": arn(b, "*")}),
         "MalformedPolicy", "Effect"),
        (policy(allow("*", "s3:GetObject", arn(b, "*"), IpAddress={"aws:SourceIp": "1.2.3.4/99"})),
         "MalformedPolicy", "IP"),
        # Over 20 KiB: padded with statements that are each valid.
        (policy(*[allow({"AWS": USER3[0]}, "s3:GetObject", arn(b, f"pad/{i:04d}/*")) for i in range(300)]),
         "MalformedPolicy", "maximum allowed document size"),
        (policy(allow("*", "s3:GetObject", arn(b, "*"), StringEquals={"aws:PrincipalOrgID": "o-123"})),
         "NotImplemented", "aws:PrincipalOrgID"),
    ]
    for doc, code, msg in bad:
        status = 501 if code == "NotImplemented" else 400
        resp = expect_error(lambda: c.put_bucket_policy(Bucket=b, Policy=doc), code, status)
        assert msg in resp["Error"]["Message"], resp["Error"]
        assert c.get_bucket_policy(Bucket=b)["Policy"] == good
        assert curl(s, "GET", f"/{b}/k") == (200, b"public bytes")
    assert len(bad[6][0]) > 20480


@test
def only_owner_manages_policy(s):
    c, b = new_bucket(s, "polowner")
    u2 = user(s, USER2)
    doc = policy(allow({"AWS": USER3[0]}, "s3:GetObject", arn(b, "*")))
    expect_error(lambda: u2.put_bucket_policy(Bucket=b, Policy=doc), "AccessDenied", 403)
    expect_error(lambda: c.get_bucket_policy(Bucket=b), "NoSuchBucketPolicy", 404)
    # Even a policy that allows another account to manage it: AWS answers 405.
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": USER2[0]}, ["s3:GetBucketPolicy", "s3:PutBucketPolicy"], arn(b))))
    expect_error(lambda: u2.get_bucket_policy(Bucket=b), "MethodNotAllowed", 405)
    expect_error(lambda: u2.put_bucket_policy(Bucket=b, Policy=doc), "MethodNotAllowed", 405)
    expect_error(lambda: u2.delete_bucket_policy(Bucket=b), "AccessDenied", 403)
    # A policy denying the owner everything cannot lock it out of the policy.
    c.put_bucket_policy(Bucket=b, Policy=policy(deny("*", "s3:*", [arn(b), arn(b, "*")])))
    expect_error(lambda: c.list_objects_v2(Bucket=b), "AccessDenied", 403)
    assert "Deny" in c.get_bucket_policy(Bucket=b)["Policy"]
    c.delete_bucket_policy(Bucket=b)
    c.list_objects_v2(Bucket=b)


@test
def public_read_bucket(s):
    c, b = new_bucket(s, "pubread")
    data = os.urandom(70000)
    c.put_object(Bucket=b, Key="data/set.bin", Body=data)
    assert curl(s, "GET", f"/{b}/data/set.bin")[0] == 403  # no policy yet
    c.put_bucket_policy(Bucket=b, Policy=policy(allow("*", "s3:GetObject", arn(b, "*"))))
    assert curl(s, "GET", f"/{b}/data/set.bin") == (200, data)
    assert curl(s, "HEAD", f"/{b}/data/set.bin")[0] == 200
    # Without s3:ListBucket a missing key is AccessDenied, as on AWS.
    st, body = curl(s, "GET", f"/{b}/missing")
    assert st == 403 and b"AccessDenied" in body, (st, body)
    # Writes, deletes and listing are not granted.
    st, body = curl(s, "PUT", f"/{b}/data/evil", data=b"x")
    assert st == 403 and b"AccessDenied" in body, (st, body)
    no_such_key(c, b, "data/evil")
    assert curl(s, "DELETE", f"/{b}/data/set.bin")[0] == 403
    assert c.get_object(Bucket=b, Key="data/set.bin")["Body"].read() == data
    st, body = curl(s, "GET", f"/{b}")
    assert st == 403, (st, body)
    assert curl(s, "GET", "/")[0] == 403  # ListBuckets is never anonymous
    assert curl(s, "PUT", f"/{s.bucket_name('anon')}")[0] == 403
    # Listing by policy, restricted to a prefix.
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow("*", "s3:GetObject", arn(b, "*")),
        allow("*", "s3:ListBucket", arn(b), StringLike={"s3:prefix": "data/*"})))
    st, body = curl(s, "GET", f"/{b}?list-type=2&prefix=data/")
    assert st == 200 and b"<Key>data/set.bin</Key>" in body, (st, body)
    assert curl(s, "GET", f"/{b}?list-type=2")[0] == 403
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow("*", ["s3:GetObject", "s3:ListBucket"], [arn(b), arn(b, "*")])))
    st, body = curl(s, "GET", f"/{b}/missing")
    assert st == 404 and b"NoSuchKey" in body, (st, body)
    # Another bucket without a policy stays closed.
    c2, b2 = new_bucket(s, "closed")
    c2.put_object(Bucket=b2, Key="k", Body=b"x")
    assert curl(s, "GET", f"/{b2}/k")[0] == 403
    assert curl(s, "GET", f"/{s.bucket_name('nosuch')}/k")[0] == 404


@test
def read_only_user(s):
    c, b = new_bucket(s, "readonly")
    c.put_object(Bucket=b, Key="a/1", Body=b"one")
    u2, u3 = user(s, USER2), user(s, USER3)
    expect_error(lambda: u2.get_object(Bucket=b, Key="a/1"), "AccessDenied", 403)
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": [f"arn:aws:iam::123456789012:user/{USER2[0]}"]}, ["s3:GetObject", "s3:ListBucket"],
              [arn(b), arn(b, "*")])))
    assert u2.get_object(Bucket=b, Key="a/1")["Body"].read() == b"one"
    # A URL the user presigns works for anyone, with the user's rights only.
    url = u2.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "a/1"}, ExpiresIn=300)
    assert curl(s, "GET", url[len(s.endpoint):]) == (200, b"one")
    url = u2.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "a/p"}, ExpiresIn=300)
    st, body = curl(s, "PUT", url[len(s.endpoint):], data=b"p")
    assert st == 403 and b"<Code>AccessDenied</Code>" in body, (st, body)
    no_such_key(c, b, "a/p")
    assert [o["Key"] for o in u2.list_objects_v2(Bucket=b)["Contents"]] == ["a/1"]
    u2.head_bucket(Bucket=b)
    expect_error(lambda: u2.put_object(Bucket=b, Key="a/2", Body=b"two"), "AccessDenied", 403)
    expect_error(lambda: u2.delete_object(Bucket=b, Key="a/1"), "AccessDenied", 403)
    expect_error(lambda: u2.put_object_tagging(Bucket=b, Key="a/1", Tagging={"TagSet": []}),
                 "AccessDenied", 403)
    expect_error(lambda: u2.get_bucket_versioning(Bucket=b), "AccessDenied", 403)
    r = u2.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "a/1"}]})
    assert [e["Code"] for e in r.get("Errors", [])] == ["AccessDenied"], r
    expect_error(lambda: u3.get_object(Bucket=b, Key="a/1"), "AccessDenied", 403)
    expect_error(lambda: u3.list_objects_v2(Bucket=b), "AccessDenied", 403)
    # Reading lets the user copy into a bucket of its own.
    b2 = s.bucket_name("u2own")
    u2.create_bucket(Bucket=b2)
    u2.copy_object(Bucket=b2, Key="copy", CopySource={"Bucket": b, "Key": "a/1"})
    assert u2.get_object(Bucket=b2, Key="copy")["Body"].read() == b"one"
    expect_error(lambda: u3.copy_object(Bucket=b2, Key="c3", CopySource={"Bucket": b, "Key": "a/1"}),
                 "AccessDenied", 403)
    c.head_object(Bucket=b, Key="a/1")


@test
def restore_object_permission(s):
    """RestoreObject is authorized as s3:RestoreObject: a user who may only
    read is denied before the object is looked at; granted the action, the
    restore reaches the object (403 InvalidObjectState: its class is
    readable)."""
    c, b = new_bucket(s, "restoreperm")
    c.put_object(Bucket=b, Key="k", Body=b"v")
    u2 = user(s, USER2)
    who = {"AWS": [f"arn:aws:iam::123456789012:user/{USER2[0]}"]}
    c.put_bucket_policy(Bucket=b, Policy=policy(allow(who, "s3:GetObject", arn(b, "*"))))
    resp = expect_error(lambda: u2.restore_object(Bucket=b, Key="k", RestoreRequest={"Days": 1}),
                        "AccessDenied", 403)
    assert "storage class" not in resp["Error"].get("Message", ""), resp
    c.put_bucket_policy(Bucket=b, Policy=policy(allow(who, "s3:RestoreObject", arn(b, "*"))))
    expect_error(lambda: u2.restore_object(Bucket=b, Key="k", RestoreRequest={"Days": 1}),
                 "InvalidObjectState", 403)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"v"


@test
def deny_prefix(s):
    c, b = new_bucket(s, "denypfx")
    c.put_object(Bucket=b, Key="private/secret", Body=b"s")
    c.put_object(Bucket=b, Key="open/file", Body=b"o")
    c.put_bucket_policy(Bucket=b, Policy=policy(
        deny("*", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], arn(b, "private/*"))))
    expect_error(lambda: c.get_object(Bucket=b, Key="private/secret"), "AccessDenied", 403)
    expect_error(lambda: c.put_object(Bucket=b, Key="private/new", Body=b"n"), "AccessDenied", 403)
    expect_error(lambda: c.copy_object(Bucket=b, Key="open/copy",
                                       CopySource={"Bucket": b, "Key": "private/secret"}),
                 "AccessDenied", 403)
    no_such_key(c, b, "open/copy")
    r = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "private/secret"}, {"Key": "open/file"}]})
    assert [e["Key"] for e in r.get("Errors", [])] == ["private/secret"], r
    assert [d["Key"] for d in r.get("Deleted", [])] == ["open/file"], r
    c.put_bucket_policy(Bucket=b, Policy=policy(deny("*", "s3:GetObject", arn(b, "open/*"))))
    assert c.get_object(Bucket=b, Key="private/secret")["Body"].read() == b"s"
    c.put_object(Bucket=b, Key="private/new", Body=b"n")


@test
def explicit_deny_beats_owner(s):
    c, b = new_bucket(s, "denyown")
    c.put_object(Bucket=b, Key="keep", Body=b"k")
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": s.ak}, "s3:*", [arn(b), arn(b, "*")]),
        deny({"AWS": f"arn:aws:iam::{s.ak}:root"}, ["s3:DeleteObject", "s3:DeleteBucket"], [arn(b), arn(b, "*")])))
    expect_error(lambda: c.delete_object(Bucket=b, Key="keep"), "AccessDenied", 403)
    c.delete_bucket_policy(Bucket=b)
    c.delete_object(Bucket=b, Key="keep")


def encryption_body(c, b):
    """GetBucketEncryption through client c: (HTTP status, raw body)."""
    got = []
    hook = lambda http_response, **kw: got.append(http_response)  # noqa: E731
    c.meta.events.register("after-call.s3.GetBucketEncryption", hook)
    try:
        c.get_bucket_encryption(Bucket=b)
    finally:
        c.meta.events.unregister("after-call.s3.GetBucketEncryption", hook)
    return got[0].status_code, got[0].content


def sse_conf(algo, key_id=None, bucket_key=False):
    d = {"SSEAlgorithm": algo}
    if key_id:
        d["KMSMasterKeyID"] = key_id
    return {"Rules": [{"ApplyServerSideEncryptionByDefault": d, "BucketKeyEnabled": bucket_key}]}


ENC_HEAD = (b'<?xml version="1.0" encoding="UTF-8"?>\n<ServerSideEncryptionConfiguration '
            b'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ApplyServerSideEncryptionByDefault>')
ENC_AES = ENC_HEAD + (b"<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault>"
                      b"<BucketKeyEnabled>false</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>")
ENC_KMS = ENC_HEAD + (b"<SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>k1</KMSMasterKeyID>"
                      b"</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled>"
                      b"</Rule></ServerSideEncryptionConfiguration>")


@test
def encryption_granted_by_policy(s):
    """Default encryption is bucket configuration the owner can grant (AWS):
    s3:GetEncryptionConfiguration reads it, s3:PutEncryptionConfiguration
    sets and deletes it; another user is denied without a grant, and an
    explicit Deny beats an Allow."""
    c, b = new_bucket(s, "encpol")
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf("AES256"))
    u2, u3 = user(s, USER2), user(s, USER3)
    enc_ops = {
        "get": lambda u: u.get_bucket_encryption(Bucket=b),
        "put": lambda u: u.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf(
            "aws:kms", "k1", True)),
        "delete": lambda u: u.delete_bucket_encryption(Bucket=b),
    }
    for op in enc_ops.values():
        expect_error(lambda: op(u2), "AccessDenied", 403)
    assert encryption_body(c, b) == (200, ENC_AES)
    who = {"AWS": [f"arn:aws:iam::123456789012:user/{USER2[0]}"]}
    # Reading granted: writing still denied.
    c.put_bucket_policy(Bucket=b, Policy=policy(allow(who, "s3:GetEncryptionConfiguration", arn(b))))
    assert encryption_body(u2, b) == (200, ENC_AES)
    expect_error(lambda: enc_ops["put"](u2), "AccessDenied", 403)
    expect_error(lambda: enc_ops["delete"](u2), "AccessDenied", 403)
    expect_error(lambda: enc_ops["get"](u3), "AccessDenied", 403)
    assert encryption_body(c, b) == (200, ENC_AES)
    # Writing granted: the user's configuration is the bucket's, read back by both.
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow(who, ["s3:GetEncryptionConfiguration", "s3:PutEncryptionConfiguration"], arn(b))))
    assert enc_ops["put"](u2)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert encryption_body(u2, b) == (200, ENC_KMS)
    assert encryption_body(c, b) == (200, ENC_KMS)
    for op in enc_ops.values():
        expect_error(lambda: op(u3), "AccessDenied", 403)
    # DeleteBucketEncryption is s3:PutEncryptionConfiguration.
    c.put_bucket_policy(Bucket=b, Policy=policy(allow(who, "s3:PutEncryptionConfiguration", arn(b))))
    expect_error(lambda: enc_ops["get"](u2), "AccessDenied", 403)
    assert enc_ops["delete"](u2)["ResponseMetadata"]["HTTPStatusCode"] == 204
    expect_error(lambda: c.get_bucket_encryption(Bucket=b),
                 "ServerSideEncryptionConfigurationNotFoundError", 404)
    # An explicit Deny wins over an Allow of everything.
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=sse_conf("AES256"))
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow(who, "s3:*", arn(b)),
        deny(who, "s3:PutEncryptionConfiguration", arn(b))))
    assert encryption_body(u2, b) == (200, ENC_AES)
    expect_error(lambda: enc_ops["put"](u2), "AccessDenied", 403)
    expect_error(lambda: enc_ops["delete"](u2), "AccessDenied", 403)
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow(who, "s3:*", arn(b)),
        deny(who, "s3:GetEncryptionConfiguration", arn(b))))
    expect_error(lambda: enc_ops["get"](u2), "AccessDenied", 403)
    assert encryption_body(c, b) == (200, ENC_AES)
    # ... and over the owner's own right.
    c.put_bucket_policy(Bucket=b, Policy=policy(deny("*", "s3:PutEncryptionConfiguration", arn(b))))
    expect_error(lambda: c.delete_bucket_encryption(Bucket=b), "AccessDenied", 403)
    assert encryption_body(c, b) == (200, ENC_AES)


@test
def deny_unless_tls(s):
    c, b = new_bucket(s, "tlsonly")
    c.put_object(Bucket=b, Key="k", Body=b"x")
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow("*", "s3:GetObject", arn(b, "*")),
        deny("*", "s3:*", [arn(b), arn(b, "*")], Bool={"aws:SecureTransport": "false"})))
    # This daemon serves plain http: every request is insecure.
    expect_error(lambda: c.get_object(Bucket=b, Key="k"), "AccessDenied", 403)
    expect_error(lambda: c.put_object(Bucket=b, Key="k2", Body=b"y"), "AccessDenied", 403)
    assert curl(s, "GET", f"/{b}/k")[0] == 403
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow("*", "s3:GetObject", arn(b, "*")),
        deny("*", "s3:*", [arn(b), arn(b, "*")], Bool={"aws:SecureTransport": "true"})))
    assert curl(s, "GET", f"/{b}/k") == (200, b"x")


@test
def ip_allow_list(s):
    c, b = new_bucket(s, "iplist")
    c.put_object(Bucket=b, Key="k", Body=b"ip")
    u2 = user(s, USER2)
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": USER2[0]}, "s3:GetObject", arn(b, "*"), IpAddress={"aws:SourceIp": "127.0.0.1/32"})))
    assert u2.get_object(Bucket=b, Key="k")["Body"].read() == b"ip"
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": USER2[0]}, "s3:GetObject", arn(b, "*"), IpAddress={"aws:SourceIp": "10.0.0.0/8"})))
    expect_error(lambda: u2.get_object(Bucket=b, Key="k"), "AccessDenied", 403)
    # Deny everyone, the owner included, outside 10.0.0.0/8.
    c.put_bucket_policy(Bucket=b, Policy=policy(
        deny("*", "s3:*", [arn(b), arn(b, "*")], NotIpAddress={"aws:SourceIp": ["10.0.0.0/8", "::1/128"]})))
    expect_error(lambda: c.get_object(Bucket=b, Key="k"), "AccessDenied", 403)
    c.put_bucket_policy(Bucket=b, Policy=policy(
        deny("*", "s3:*", [arn(b), arn(b, "*")], NotIpAddress={"aws:SourceIp": "127.0.0.0/8"})))
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"ip"


@test
def tag_and_anonymous_write_conditions(s):
    c, b = new_bucket(s, "tagcond")
    c.put_object(Bucket=b, Key="shared", Body=b"yes", Tagging="share=yes")
    c.put_object(Bucket=b, Key="kept", Body=b"no", Tagging="share=no")
    u2 = user(s, USER2)
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": USER2[0]}, "s3:GetObject", arn(b, "*"),
              StringEquals={"s3:ExistingObjectTag/share": "yes"}),
        # Anonymous uploads into inbox/ only, and only tagged origin=web.
        allow("*", "s3:PutObject", arn(b, "inbox/*"),
              StringEquals={"s3:RequestObjectTag/origin": "web"})))
    assert u2.get_object(Bucket=b, Key="shared")["Body"].read() == b"yes"
    expect_error(lambda: u2.get_object(Bucket=b, Key="kept"), "AccessDenied", 403)
    c.put_object_tagging(Bucket=b, Key="kept", Tagging={"TagSet": [{"Key": "share", "Value": "yes"}]})
    assert u2.get_object(Bucket=b, Key="kept")["Body"].read() == b"no"
    st, body = curl(s, "PUT", f"/{b}/inbox/a", data=b"anon")
    assert st == 403, (st, body)
    cmd = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "anon",
           "-H", "x-amz-tagging: origin=web", f"{s.endpoint}/{b}/inbox/a"]
    out = subprocess.run(cmd, capture_output=True, env={"PATH": "/usr/bin:/bin"}, timeout=60, check=True)
    assert out.stdout == b"200", out.stdout
    assert c.get_object(Bucket=b, Key="inbox/a")["Body"].read() == b"anon"
    assert c.get_object_tagging(Bucket=b, Key="inbox/a")["TagSet"] == [{"Key": "origin", "Value": "web"}]
    cmd[-1] = f"{s.endpoint}/{b}/elsewhere"
    out = subprocess.run(cmd, capture_output=True, env={"PATH": "/usr/bin:/bin"}, timeout=60, check=True)
    assert out.stdout == b"403", out.stdout
    no_such_key(c, b, "elsewhere")


@test
def grant_header_conditions(s):
    # AWS's "grant the bucket owner full control" policy: another user may
    # upload only with x-amz-grant-full-control naming the owner, and a
    # Deny keeps any x-amz-grant-read off.  Accepted at PutBucketPolicy
    # (was 501) and evaluated on the header's text.
    c = s.client()
    b = s.bucket_name("grantcond")
    c.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    owner = f"id={s.ak}"
    doc = policy(
        allow({"AWS": USER2[0]}, "s3:PutObject", arn(b, "*"),
              StringEquals={"s3:x-amz-grant-full-control": owner}),
        deny("*", "s3:PutObject", arn(b, "*"), Null={"s3:x-amz-grant-read": "false"}),
        deny("*", "s3:PutObjectAcl", arn(b, "*"),
             StringLike={"s3:x-amz-grant-write-acp": "*", "s3:x-amz-grant-read-acp": "*"}),
        deny("*", "s3:PutBucketAcl", arn(b),
             StringEquals={"s3:x-amz-grant-write": f"id={USER3[0]}"}))
    assert c.put_bucket_policy(Bucket=b, Policy=doc)["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert json.loads(c.get_bucket_policy(Bucket=b)["Policy"]) == json.loads(doc)
    u2 = user(s, USER2)
    expect_error(lambda: u2.put_object(Bucket=b, Key="k", Body=b"no grant"), "AccessDenied", 403)
    expect_error(lambda: u2.put_object(Bucket=b, Key="k", Body=b"other",
                                       GrantFullControl=f"id={USER3[0]}"), "AccessDenied", 403)
    no_such_key(c, b, "k")
    u2.put_object(Bucket=b, Key="k", Body=b"granted", GrantFullControl=owner)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"granted"
    grants = c.get_object_acl(Bucket=b, Key="k")["Grants"]
    assert any(g["Grantee"].get("ID") == s.ak and g["Permission"] == "FULL_CONTROL"
               for g in grants), grants
    # The Deny on x-amz-grant-read wins over the Allow and over the owner.
    expect_error(lambda: u2.put_object(Bucket=b, Key="r", Body=b"x", GrantFullControl=owner,
                                       GrantRead=f"id={USER3[0]}"), "AccessDenied", 403)
    expect_error(lambda: c.put_object(Bucket=b, Key="r", Body=b"x", GrantRead=f"id={USER3[0]}"),
                 "AccessDenied", 403)
    no_such_key(c, b, "r")
    # Both keys of one condition block must match (AND); one alone passes.
    expect_error(lambda: c.put_object_acl(Bucket=b, Key="k", GrantWriteACP=owner,
                                          GrantReadACP=owner), "AccessDenied", 403)
    c.put_object_acl(Bucket=b, Key="k", GrantFullControl=owner, GrantReadACP=f"id={USER3[0]}")
    expect_error(lambda: c.put_bucket_acl(Bucket=b, GrantWrite=f"id={USER3[0]}",
                                          GrantFullControl=owner), "AccessDenied", 403)
    c.put_bucket_acl(Bucket=b, GrantWrite=f"id={USER2[0]}", GrantFullControl=owner)


@test
def home_directories_by_variable(s):
    # AWS's example: each user reads and writes under home/${aws:username}/
    # (the display name of the --users line) and lists only there.
    c, b = new_bucket(s, "homes")
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": [USER2[0], USER3[0]]}, ["s3:GetObject", "s3:PutObject"], arn(b, "home/${aws:username}/*")),
        allow({"AWS": [USER2[0], USER3[0]]}, "s3:ListBucket", arn(b),
              StringLike={"s3:prefix": "home/${aws:username}/*"})))
    u2, u3 = user(s, USER2), user(s, USER3)
    u2.put_object(Bucket=b, Key="home/reader/a", Body=b"2")
    u3.put_object(Bucket=b, Key="home/other/a", Body=b"3")
    expect_error(lambda: u2.put_object(Bucket=b, Key="home/other/b", Body=b"x"), "AccessDenied", 403)
    expect_error(lambda: u3.get_object(Bucket=b, Key="home/reader/a"), "AccessDenied", 403)
    assert u2.get_object(Bucket=b, Key="home/reader/a")["Body"].read() == b"2"
    keys = [o["Key"] for o in u2.list_objects_v2(Bucket=b, Prefix="home/reader/")["Contents"]]
    assert keys == ["home/reader/a"], keys
    expect_error(lambda: u2.list_objects_v2(Bucket=b, Prefix="home/other/"), "AccessDenied", 403)
    no_such_key(c, b, "home/other/b")


@test
def bypass_governance_is_a_permission(s):
    import datetime
    c = s.client()
    b = s.bucket_name("bypass")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)

    def locked(key):
        return c.put_object(Bucket=b, Key=key, Body=b"g", ObjectLockMode="GOVERNANCE",
                            ObjectLockRetainUntilDate=until, ChecksumAlgorithm="CRC32")["VersionId"]

    # The owner holds s3:BypassGovernanceRetention unless the policy denies it.
    v1 = locked("o1")
    c.put_bucket_policy(Bucket=b, Policy=policy(deny("*", "s3:BypassGovernanceRetention", arn(b, "o1"))))
    expect_error(lambda: c.delete_object(Bucket=b, Key="o1", VersionId=v1, BypassGovernanceRetention=True),
                 "AccessDenied", 403)
    r = c.delete_objects(Bucket=b, BypassGovernanceRetention=True,
                         Delete={"Objects": [{"Key": "o1", "VersionId": v1}]})
    assert [e["Code"] for e in r.get("Errors", [])] == ["AccessDenied"], r
    c.head_object(Bucket=b, Key="o1", VersionId=v1)
    c.delete_bucket_policy(Bucket=b)
    c.delete_object(Bucket=b, Key="o1", VersionId=v1, BypassGovernanceRetention=True)
    expect_error(lambda: c.head_object(Bucket=b, Key="o1", VersionId=v1), "404", 404)
    # Another user needs an explicit Allow, on top of s3:DeleteObjectVersion.
    u2 = user(s, USER2)
    v2, v3 = locked("u2a"), locked("u2b")
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": USER2[0]}, ["s3:DeleteObjectVersion", "s3:PutObjectRetention"], arn(b, "*"))))
    expect_error(lambda: u2.delete_object(Bucket=b, Key="u2a", VersionId=v2, BypassGovernanceRetention=True),
                 "AccessDenied", 403)
    c.head_object(Bucket=b, Key="u2a", VersionId=v2)
    c.put_bucket_policy(Bucket=b, Policy=policy(
        allow({"AWS": USER2[0]}, ["s3:DeleteObjectVersion", "s3:BypassGovernanceRetention"], arn(b, "u2a"))))
    u2.delete_object(Bucket=b, Key="u2a", VersionId=v2, BypassGovernanceRetention=True)
    expect_error(lambda: c.head_object(Bucket=b, Key="u2a", VersionId=v2), "404", 404)
    # The permission is per object: not granted on u2b.
    expect_error(lambda: u2.delete_object(Bucket=b, Key="u2b", VersionId=v3, BypassGovernanceRetention=True),
                 "AccessDenied", 403)
    c.head_object(Bucket=b, Key="u2b", VersionId=v3)
    c.delete_object(Bucket=b, Key="u2b", VersionId=v3, BypassGovernanceRetention=True)


@test
def awscli_policy(s):
    if not os.access("/usr/bin/aws", os.X_OK):
        print("skip: /usr/bin/aws not installed")
        return
    c, b = new_bucket(s, "cli")
    doc = policy(allow("*", "s3:GetObject", arn(b, "*")))
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "AWS_ACCESS_KEY_ID": s.ak,
           "AWS_SECRET_ACCESS_KEY": s.sk, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}

    def aws(*args):
        return subprocess.run(["/usr/bin/aws", "--endpoint-url", s.endpoint, "s3api", *args],
                              env=env, capture_output=True, text=True, timeout=120)

    r = aws("put-bucket-policy", "--bucket", b, "--policy", doc)
    assert r.returncode == 0, r.stderr
    r = aws("get-bucket-policy", "--bucket", b, "--query", "Policy", "--output", "text")
    assert r.returncode == 0 and json.loads(r.stdout) == json.loads(doc), (r.stdout, r.stderr)
    r = aws("get-bucket-policy-status", "--bucket", b, "--query", "PolicyStatus.IsPublic", "--output", "text")
    assert r.returncode == 0 and r.stdout.strip() == "True", (r.stdout, r.stderr)
    r = aws("put-bucket-policy", "--bucket", b, "--policy", "{}")
    assert r.returncode != 0 and "MalformedPolicy" in r.stderr, r.stderr
    r = aws("delete-bucket-policy", "--bucket", b)
    assert r.returncode == 0, r.stderr
    r = aws("get-bucket-policy", "--bucket", b)
    assert r.returncode != 0 and "NoSuchBucketPolicy" in r.stderr, r.stderr


if __name__ == "__main__":
    run(Strata(["--users", users_file(), "--kms-key-file", kms_key_file()]))
