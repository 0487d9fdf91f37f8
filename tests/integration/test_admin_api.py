"""test_admin_api.py - the admin REST API under /strata/admin/v1/.

Every endpoint is called with SigV4-signed requests (botocore's signer):
info (sets, drives, space), usage (counted objects, versions, delete
markers, incomplete uploads, checked against what the test wrote), heal
start/status (a real run), config (secrets masked), and the 501 answers of
audit, ilm and users.  Errors: a second user from --users is refused 403
AccessDenied, a bad signature and an anonymous call are refused, unknown
endpoints are 404, a wrong method 405, query parameters 400; all as JSON.
A second daemon shows a drive offline (its directory is a regular file),
then fresh (an empty replacement), which a heal refills.
"""

import json
import os
import shutil
import time
import urllib.error
import urllib.request

import botocore.credentials
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest

from strata_harness import REGION, Strata, expect_error, lock_denial, log, run, test

USER2 = ("STRATATESTUSER2", "second-user-secret/abc")
USER3 = ("STRATATESTUSER3", "third-user-secret")  # in --admin-users
_tmp_users = os.path.join(os.environ.get("STRATA_TEST_TMPDIR") or "/tmp",
                          f"admin-users-{os.getpid()}")
with open(_tmp_users, "w") as f:
    f.write(f"{USER2[0]} {USER2[1]} Second User\n{USER3[0]} {USER3[1]}\n")

# The lifecycle scanner heals at its first pass: off where a test needs the
# fresh drive left for the admin API's heal.
NO_SCANNER = ["--ilm-interval-seconds", "0"]
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def admin(s, method, path, keys=None, sign=True, raw_path=None):
    """(status, content-type, parsed JSON body) of one admin request."""
    url = s.endpoint + (raw_path or "/strata/admin/v1/" + path)
    ak, sk = keys or (s.ak, s.sk)
    req = AWSRequest(method=method, url=url, data=b"")
    if sign:
        S3SigV4Auth(botocore.credentials.Credentials(ak, sk), "s3", REGION).add_auth(req)
    p = req.prepare()
    ureq = urllib.request.Request(p.url, method=method, headers=dict(p.headers))
    try:
        with OPENER.open(ureq, timeout=60) as r:
            body, status, ctype = r.read(), r.status, r.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        body, status, ctype = e.read(), e.code, e.headers.get("Content-Type")
    return status, ctype, json.loads(body) if body else None


def expect_json_error(s, method, path, status, code, **kw):
    st, ctype, doc = admin(s, method, path, **kw)
    assert st == status, f"{method} {path}: status {st}, want {status}: {doc}"
    assert ctype == "application/json", f"{method} {path}: content-type {ctype}"
    assert doc["Code"] == code, f"{method} {path}: code {doc['Code']}, want {code}"
    assert doc["Message"] and doc["RequestId"], doc
    return doc


def wait_heal_idle(s, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st, _, doc = admin(s, "GET", "heal/status")
        assert st == 200, doc
        if doc["state"] == "idle":
            return doc
        time.sleep(0.1)
    raise AssertionError("heal still running after %d s" % timeout)


@test
def info_lists_sets_and_drives(s):
    st, ctype, doc = admin(s, "GET", "info")
    assert st == 200 and ctype == "application/json", (st, ctype, doc)
    assert doc["version"] == "0.1.0", doc["version"]
    assert doc["uptime_s"] > 0
    assert doc["sets_total"] == 1 and doc["drives_total"] == 4 and doc["drives_online"] == 4
    (st0,) = doc["sets"]
    (hot,) = doc["tiers"]  # a plain drive list is one tier, the hot one
    assert hot["name"] == "hot" and "STANDARD" in hot["classes"], hot
    assert hot["sets_total"] == 1 and hot["drives_total"] == 4 and hot["drives_online"] == 4, hot
    assert hot["sets"] == doc["sets"], hot
    assert st0["data"] + st0["parity"] == 4 and st0["data"] == 2, st0
    assert st0["write_quorum"] == 3 and st0["read_quorum"] == 2, st0
    assert st0["format_version"] == 2, st0
    assert len(st0["deployment_id"]) > 8
    paths = [d["path"] for d in st0["drives"]]
    assert paths == [os.path.join(s.tmp, f"d{i}") for i in range(1, 5)], paths
    for d in st0["drives"]:
        assert d["state"] == "online", d
        assert 0 < d["free_bytes"] <= d["total_bytes"] and d["used_bytes"] <= d["total_bytes"], d
    assert set(st0["errors"]) == {"bitrot_detected", "shards_missing", "stripes_reconstructed",
                                  "shards_healed"}


@test
def config_masks_secrets(s):
    st, _, doc = admin(s, "GET", "config")
    assert st == 200, doc
    assert doc["root-user"] == s.ak
    assert doc["root-password"] == "********"
    assert s.sk not in json.dumps(doc)
    assert doc["users"] == _tmp_users
    assert doc["max-inflight"] == 256 and doc["log-level"] == "info" and doc["config"] is None
    assert doc["address"] == f"127.0.0.1:{s.port}"
    assert doc["drives"] == [os.path.join(s.tmp, f"d{i}") for i in range(1, 5)]
    assert USER2[1] not in json.dumps(doc)
    assert doc["admin-users"] == f"NOSUCHKEY,{USER3[0]},STRATATESTUSER"


@test
def usage_counts_what_was_written(s):
    c = s.client()
    b = s.bucket_name("usage")
    c.create_bucket(Bucket=b)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    c.put_object(Bucket=b, Key="a", Body=b"x" * 10)
    c.put_object(Bucket=b, Key="a", Body=b"x" * 15)
    c.put_object(Bucket=b, Key="b", Body=b"x" * 20)
    c.put_object(Bucket=b, Key="dir/c", Body=b"x" * 30)
    c.delete_object(Bucket=b, Key="b")
    c.create_multipart_upload(Bucket=b, Key="mpu")
    empty = s.bucket_name("usage-empty")
    c.create_bucket(Bucket=empty)

    st, _, doc = admin(s, "GET", "usage/" + b)
    assert st == 200, doc
    (u,) = doc["buckets"]
    want = {"name": b, "objects": 2, "bytes": 45, "versions": 4, "versions_bytes": 75,
            "delete_markers": 1, "incomplete_uploads": 1, "complete": True}
    assert u == want, f"{u} != {want}"

    st, _, doc = admin(s, "GET", "usage")
    assert st == 200, doc
    by = {x["name"]: x for x in doc["buckets"]}
    assert by[b] == want
    assert by[empty]["objects"] == 0 and by[empty]["versions"] == 0
    assert doc["complete"] is True
    assert doc["total"]["objects"] == sum(x["objects"] for x in doc["buckets"])
    assert doc["total"]["bytes"] == sum(x["bytes"] for x in doc["buckets"])

    expect_json_error(s, "GET", "usage/no-such-bucket-here", 404, "NoSuchBucket")


@test
def heal_start_and_status(s):
    st, _, doc = admin(s, "GET", "heal/status")
    assert st == 200 and doc["state"] == "idle" and doc["runs_finished"] == 0, doc
    assert "last" not in doc
    st, _, doc = admin(s, "POST", "heal/start")
    assert st in (202, 409), doc
    doc = wait_heal_idle(s)
    assert doc["runs_finished"] == 1, doc
    assert doc["last"]["result"] == "ok", doc
    assert doc["last"]["objects_scanned"] >= 3, doc  # the usage test's objects
    assert doc["last"]["shards_healed"] == 0, doc  # nothing was missing
    # A second run, to see the count move and the thread reaped.
    st, _, doc = admin(s, "POST", "heal/start")
    assert st == 202 and doc["state"] == "running", doc
    doc = wait_heal_idle(s)
    assert doc["runs_finished"] == 2, doc
    expect_json_error(s, "GET", "heal/start", 405, "MethodNotAllowed")
    expect_json_error(s, "POST", "heal/status", 405, "MethodNotAllowed")


@test
def not_built_endpoints_answer_501(s):
    for method, path in (("GET", "audit/show"),):
        doc = expect_json_error(s, method, path, 501, "NotImplemented")
        assert "not implemented" in doc["Message"], doc


@test
def non_admin_and_bad_credentials_are_refused(s):
    # The second user is a valid S3 user ...
    c = s.client(*USER2)
    c.list_buckets()
    # ... but not an admin.
    for method, path in (("GET", "info"), ("GET", "usage"), ("POST", "heal/start"),
                         ("GET", "config"), ("GET", "nonexistent")):
        expect_json_error(s, method, path, 403, "AccessDenied", keys=USER2)
    # A user named by --admin-users is an admin (and a prefix of it is not).
    st, _, doc = admin(s, "GET", "info", keys=USER3)
    assert st == 200 and doc["drives_total"] == 4, doc
    expect_json_error(s, "GET", "info", 403, "SignatureDoesNotMatch", keys=(s.ak, "wrong"))
    expect_json_error(s, "GET", "info", 403, "InvalidAccessKeyId", keys=("NOSUCHKEY", "x"))
    expect_json_error(s, "GET", "info", 403, "AccessDenied", sign=False)
    st, _, doc = admin(s, "GET", "heal/status")
    assert doc["runs_finished"] == 2, "a refused heal/start must not start a heal"


@test
def bad_requests(s):
    expect_json_error(s, "GET", "nonexistent", 404, "NotFound")
    expect_json_error(s, "GET", "info/extra", 404, "NotFound")
    expect_json_error(s, "GET", "", 404, "NotFound")
    expect_json_error(s, "GET", None, 404, "NotFound", raw_path="/strata/admin/v2/info")
    expect_json_error(s, "POST", "info", 405, "MethodNotAllowed")
    expect_json_error(s, "DELETE", "config", 405, "MethodNotAllowed")
    expect_json_error(s, "GET", "info?verbose=1", 400, "InvalidArgument")


def tamper(drive):
    """Rewrite a denial as allowed in drive's audit log; returns the undo."""
    path = os.path.join(drive, "audit.log")
    orig = open(path, "rb").read()
    lines = orig.split(b"\n")
    idx = max(i for i, line in enumerate(lines) if b'"outcome":"denied"' in line)
    lines[idx] = lines[idx].replace(b'"outcome":"denied"', b'"outcome":"allowd"')
    open(path, "wb").write(b"\n".join(lines))
    return idx, lambda: open(path, "wb").write(orig)


@test
def audit_verify_and_tail(s):
    st, _, doc = admin(s, "GET", "audit/verify")
    assert st == 200 and doc["ok"] is True, doc
    b, vid = lock_denial(s, "audit")
    st, _, doc = admin(s, "GET", "audit/tail")
    assert st == 200 and doc["drive"] == os.path.join(s.tmp, "d1"), doc
    denied = [e for e in doc["entries"] if e.get("version_id") == vid and e["outcome"] == "denied"]
    assert len(denied) == 1 and denied[0]["bucket"] == b, doc["entries"]
    seqs = [e["seq"] for e in doc["entries"]]
    assert seqs == sorted(seqs) and len(seqs) <= 20, seqs
    st, _, one = admin(s, "GET", "audit/tail/1")
    assert st == 200 and [e["seq"] for e in one["entries"]] == seqs[-1:], one
    for bad in ("0", "1001", "abc", "5x"):
        expect_json_error(s, "GET", "audit/tail/" + bad, 400, "InvalidArgument")
    expect_json_error(s, "POST", "audit/verify", 405, "MethodNotAllowed")

    st, _, doc = admin(s, "GET", "audit/verify")
    assert st == 200 and doc["ok"] is True, doc
    (vs,) = doc["sets"]
    assert len(vs["drives"]) == 4
    for d in vs["drives"]:
        assert d["state"] == "online" and not d["broken"] and d["entries"] >= 1, d
        assert d["last_seq"] == seqs[-1], (d, seqs)
    assert vs["compare"]["differ"] is False and vs["compare"]["events"] >= 1, vs["compare"]

    idx, undo = tamper(os.path.join(s.tmp, "d2"))
    try:
        st, _, doc = admin(s, "GET", "audit/verify")
        assert st == 200 and doc["ok"] is False, doc
        d2 = doc["sets"][0]["drives"][1]
        assert d2["broken"] is True and d2["broken_at"] == idx and "hash" in d2["reason"], d2
        assert [d["broken"] for d in doc["sets"][0]["drives"]] == [False, True, False, False]
    finally:
        undo()
    st, _, doc = admin(s, "GET", "audit/verify")
    assert doc["ok"] is True, doc


@test
def ilm_run_and_status(s):
    st, _, doc = admin(s, "GET", "ilm/status")
    assert st == 200 and doc["enabled"] is True, doc
    deadline = time.monotonic() + 60
    while doc["total"]["passes"] < 1:  # the start-up pass
        assert time.monotonic() < deadline, doc
        time.sleep(0.1)
        doc = admin(s, "GET", "ilm/status")[2]
    before = doc["total"]["passes"]
    st, _, doc = admin(s, "POST", "ilm/run")
    assert st == 202 and doc["enabled"] is True, doc
    while doc["total"]["passes"] < before + 1:
        assert time.monotonic() < deadline, doc
        time.sleep(0.1)
        doc = admin(s, "GET", "ilm/status")[2]
    last = doc["last"]
    assert last["finished_ms"] >= last["started_ms"] > 0 and last["errors"] == 0, last
    assert doc["total"]["scanned"] >= last["scanned"], doc
    expect_json_error(s, "GET", "ilm/run", 405, "MethodNotAllowed")
    expect_json_error(s, "POST", "ilm/run", 403, "AccessDenied", keys=USER2)


@test
def drive_offline_then_fresh_then_healed(s):
    base = os.path.join(s.tmp, "second")
    drives = [os.path.join(base, f"d{i}") for i in range(1, 5)]
    for d in drives:
        os.makedirs(d)
    keys = ("STRATAADMIN2", "second-daemon-secret")
    body = os.urandom(600 * 1024)  # erasure coded: shards on every drive
    s2 = Strata(drives=drives, keys=keys, args=NO_SCANNER)
    try:
        c = s2.client()
        c.create_bucket(Bucket="heal")
        for i in range(3):
            c.put_object(Bucket="heal", Key=f"k{i}", Body=body)
    finally:
        assert s2.stop()

    # Drive 4 is a regular file: it cannot be formatted, so it is offline.
    shutil.rmtree(drives[3])
    with open(drives[3], "w") as f:
        f.write("not a drive\n")
    s3 = Strata(drives=drives, keys=keys, args=NO_SCANNER)
    try:
        st, _, doc = admin(s3, "GET", "info")
        assert st == 200, doc
        states = [d["state"] for d in doc["sets"][0]["drives"]]
        assert states == ["online", "online", "online", "offline"], states
        assert doc["drives_online"] == 3 and doc["sets"][0]["drives_online"] == 3
        st, _, doc = admin(s3, "GET", "usage/heal")
        assert st == 200 and doc["buckets"][0]["objects"] == 3, doc
        # The scanner is off on this daemon: a run is refused, status says so.
        expect_json_error(s3, "POST", "ilm/run", 409, "ScannerOff")
        st, _, doc = admin(s3, "GET", "ilm/status")
        assert st == 200 and doc == {"enabled": False}, doc
    finally:
        assert s3.stop()

    # An empty replacement: formatted as fresh, refilled by a heal.
    os.unlink(drives[3])
    os.makedirs(drives[3])
    s4 = Strata(drives=drives, keys=keys, args=NO_SCANNER)
    try:
        st, _, doc = admin(s4, "GET", "info")
        states = [d["state"] for d in doc["sets"][0]["drives"]]
        assert states == ["online", "online", "online", "fresh"], states
        st, _, doc = admin(s4, "POST", "heal/start")
        assert st == 202, doc
        doc = wait_heal_idle(s4)
        last = doc["last"]
        assert last["result"] == "ok" and last["shards_healed"] >= 3, doc
        assert last["records_healed"] >= 4, doc  # the bucket and three versions
        assert last["minority_removed"] == 0 and last["minority_healed"] == 0, doc
        st, _, doc = admin(s4, "GET", "info")
        states = [d["state"] for d in doc["sets"][0]["drives"]]
        assert states == ["online"] * 4, states
        assert doc["sets"][0]["errors"]["shards_healed"] >= 3, doc["sets"][0]["errors"]
        got = s4.client().get_object(Bucket="heal", Key="k1")["Body"].read()
        assert got == body
    finally:
        assert s4.stop()
    log("drive states: offline -> fresh -> online after heal")


if __name__ == "__main__":
    run(Strata(args=["--users", _tmp_users, "--admin-users", f"NOSUCHKEY,{USER3[0]},STRATATESTUSER"]))
