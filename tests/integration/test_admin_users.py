"""test_admin_users.py - the users endpoints of the admin API
(/strata/admin/v1/users...) and `strata admin user ...`.

Users live in the --users file: each edit must rewrite it (comments and
other lines kept) and take effect at once.  Checks: list (no secrets),
add (201, the new user can sign S3 requests at once, the line is in the
file), a second add (409), disable (its S3 requests get 403
InvalidAccessKeyId "disabled", the file has the #strata:disabled line),
enable (works again), remove (InvalidAccessKeyId, line gone), SIGHUP
keeps the edits, root cannot be removed or disabled, errors: non-admin
403, bad body / bad key 400, unknown user 404; the CLI's tables, --json
and exit codes (0 ok, 1 refused, 2 usage).
"""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

import botocore.credentials
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest

from strata_harness import REGION, Strata, expect_error, run, test

BOB = ("STRATABOB01", "bob-secret-0001")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
USERS = os.path.join(os.environ.get("STRATA_TEST_TMPDIR") or "/tmp", f"admin-users-{os.getpid()}")
HEADER = "# team users\n"
with open(USERS, "w") as f:
    f.write(HEADER + f"{BOB[0]} {BOB[1]} Bob Builder\n")
os.chmod(USERS, 0o600)


def admin(s, method, path, body=None, keys=None):
    url = s.endpoint + "/strata/admin/v1/" + path
    data = json.dumps(body).encode() if isinstance(body, dict) else (body or b"")
    req = AWSRequest(method=method, url=url, data=data)
    ak, sk = keys or (s.ak, s.sk)
    S3SigV4Auth(botocore.credentials.Credentials(ak, sk), "s3", REGION).add_auth(req)
    p = req.prepare()
    ureq = urllib.request.Request(p.url, data=data or None, method=method, headers=dict(p.headers))
    try:
        with OPENER.open(ureq, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), json.loads(e.read())


def expect(s, method, path, status, code=None, **kw):
    st, ctype, doc = admin(s, method, path, **kw)
    assert st == status and ctype == "application/json", (method, path, st, doc)
    if code:
        assert doc["Code"] == code and doc["Message"], (method, path, doc)
    return doc


def users_file():
    with open(USERS) as f:
        return f.read()


def cli(s, *args, keys=None, stdin=None):
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "STRATA_ENDPOINT": s.endpoint,
           "STRATA_ACCESS_KEY": (keys or (s.ak, s.sk))[0],
           "STRATA_SECRET_KEY": (keys or (s.ak, s.sk))[1]}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", *args], env=env, input=stdin,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


@test
def list_users_without_secrets(s):
    doc = expect(s, "GET", "users", 200)
    by = {u["access_key"]: u for u in doc["users"]}
    assert by[s.ak] == {"access_key": s.ak, "name": "root", "status": "enabled", "root": True,
                        "admin": True}, by
    assert by[BOB[0]] == {"access_key": BOB[0], "name": "Bob Builder", "status": "enabled",
                          "root": False, "admin": False}, by
    assert BOB[1] not in json.dumps(doc) and s.sk not in json.dumps(doc)
    assert expect(s, "GET", "users/" + BOB[0], 200)["name"] == "Bob Builder"


@test
def add_disable_enable_remove(s):
    carol = ("STRATACAROL1", "carol-secret-01")
    expect_error(lambda: s.client(*carol).list_buckets(), "InvalidAccessKeyId", 403)
    doc = expect(s, "PUT", "users/" + carol[0], 201, body={"secret": carol[1], "name": "Carol"})
    assert doc == {"access_key": carol[0], "name": "Carol", "status": "enabled", "root": False,
                   "admin": False}, doc
    assert f"\n{carol[0]} {carol[1]} Carol\n" in users_file()
    assert users_file().startswith(HEADER)
    assert oct(os.stat(USERS).st_mode & 0o777) == "0o600"
    c = s.client(*carol)
    b = s.bucket_name("carol")
    c.create_bucket(Bucket=b)  # works at once
    expect(s, "PUT", "users/" + carol[0], 409, "UserAlreadyExists",
           body={"secret": "another-secret", "name": "x"})
    # Disable: refused as AWS refuses an inactive key.
    assert expect(s, "POST", f"users/{carol[0]}/disable", 200)["status"] == "disabled"
    assert f"\n#strata:disabled {carol[0]} {carol[1]} Carol\n" in users_file()
    r = expect_error(lambda: c.list_objects_v2(Bucket=b), "InvalidAccessKeyId", 403)
    assert "disabled" in r["Error"]["Message"], r
    assert expect(s, "GET", "users/" + carol[0], 200)["status"] == "disabled"
    # A disabled admin is no admin either.
    expect(s, "GET", "info", 403, "InvalidAccessKeyId", keys=carol)
    assert expect(s, "POST", f"users/{carol[0]}/enable", 200)["status"] == "enabled"
    assert f"\n{carol[0]} {carol[1]} Carol\n" in users_file()
    assert c.list_objects_v2(Bucket=b)["KeyCount"] == 0
    # SIGHUP reloads the file as written.
    s.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    assert c.list_objects_v2(Bucket=b)["KeyCount"] == 0
    c.delete_bucket(Bucket=b)
    assert expect(s, "DELETE", "users/" + carol[0], 200) == {"access_key": carol[0], "removed": True}
    assert carol[0] not in users_file() and BOB[0] in users_file()
    expect_error(lambda: c.list_buckets(), "InvalidAccessKeyId", 403)
    expect(s, "DELETE", "users/" + carol[0], 404, "NoSuchUser")
    expect(s, "POST", f"users/{carol[0]}/enable", 404, "NoSuchUser")


@test
def errors(s):
    # Not an admin.
    expect(s, "GET", "users", 403, "AccessDenied", keys=BOB)
    expect(s, "PUT", "users/STRATAEVE01", 403, "AccessDenied", keys=BOB,
           body={"secret": "eve-secret-01"})
    assert "STRATAEVE01" not in users_file()
    # Bad requests.
    for body in (b"not json", {"name": "no secret"}, {"secret": "short"},
                 {"secret": "has space inside"}, {"secret": "long-enough-1", "name": "x\ny"},
                 {"secret": "long-enough-1", "policy": "readwrite"}):
        expect(s, "PUT", "users/STRATADAVE01", 400, "InvalidArgument", body=body)
    expect(s, "PUT", "users/%23hash", 400, "InvalidArgument", body={"secret": "long-enough-1"})
    expect(s, "PUT", "users/ab", 400, "InvalidArgument", body={"secret": "long-enough-1"})
    assert "STRATADAVE01" not in users_file()
    # Unknown user; root; methods.
    expect(s, "GET", "users/STRATANOBODY", 404, "NoSuchUser")
    expect(s, "POST", f"users/{BOB[0]}/frobnicate", 404, "NotFound")
    expect(s, "GET", f"users/{BOB[0]}/enable", 405, "MethodNotAllowed")
    expect(s, "POST", "users", 405, "MethodNotAllowed")
    expect(s, "DELETE", "users/" + s.ak, 400, "InvalidArgument")
    expect(s, "POST", f"users/{s.ak}/disable", 400, "InvalidArgument")
    s.client().list_buckets()  # root untouched


@test
def cli_user_commands(s):
    rc, out, err = cli(s, "user", "list")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["ACCESS", "KEY", "STATUS", "ROLE", "NAME"], out
    assert any(l.split()[:3] == [s.ak, "enabled", "root"] for l in lines), out
    assert any(l.split() == [BOB[0], "enabled", "user", "Bob", "Builder"] for l in lines), out
    rc, out, err = cli(s, "--json", "user", "list")
    assert rc == 0 and {u["access_key"] for u in json.loads(out)["users"]} >= {s.ak, BOB[0]}
    # add with the secret on stdin, then use it.
    rc, out, err = cli(s, "user", "add", "STRATADAN001", "--name", "Dan D", stdin="dan-secret-001\n")
    assert rc == 0 and out.splitlines()[1].split() == ["STRATADAN001", "enabled", "user", "Dan", "D"], \
        (rc, out, err)
    s.client("STRATADAN001", "dan-secret-001").list_buckets()
    rc, out, err = cli(s, "user", "add", "STRATADAN001", "dan-secret-002")
    assert rc == 1 and "UserAlreadyExists (HTTP 409)" in err, (rc, err)
    rc, out, err = cli(s, "--json", "user", "disable", "STRATADAN001")
    assert rc == 0 and json.loads(out)["status"] == "disabled", (rc, out, err)
    rc, out, err = cli(s, "user", "enable", "STRATADAN001")
    assert rc == 0 and " enabled " in out, (rc, out)
    rc, out, err = cli(s, "user", "remove", "STRATADAN001")
    assert rc == 0 and out.strip() == "removed STRATADAN001", (rc, out)
    rc, out, err = cli(s, "user", "remove", "STRATADAN001")
    assert rc == 1 and "NoSuchUser (HTTP 404)" in err, (rc, err)
    rc, out, err = cli(s, "user", "list", keys=BOB)
    assert rc == 1 and "AccessDenied (HTTP 403)" in err, (rc, err)
    rc, out, err = cli(s, "user", "add", "bad key")
    assert rc == 2, (rc, err)
    rc, out, err = cli(s, "user", "frob", "STRATADAN001")
    assert rc == 2, (rc, err)


if __name__ == "__main__":
    try:
        run(Strata(args=["--users", USERS]))
    finally:
        os.unlink(USERS)
