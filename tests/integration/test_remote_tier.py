#!/usr/bin/python3
"""test_remote_tier.py - a remote S3 tier: two strata daemons on loopback,
the second one the remote (its buckets made with boto3), the first one
with --tier cold:s3:URL (through a loopback fault proxy run by this test)
and --tier vault:s3,lock:URL (a bucket with Object Lock), --lc-day-seconds
1 and a scanner pass every second.

Checked: lifecycle transitions of single-part and multipart objects to the
remote (bytes identical on GET, ranged GETs across the read-ahead window,
HEAD's headers and storage class, each data object in the remote bucket at
PREFIX/<32 hex> with the same bytes, the hot tier's shards gone); an SSE-C
object stored as ciphertext and decrypted on GET; writes naming a remote
tier's class refused (InvalidStorageClass); a data
object deleted on the remote behind strata's back (GET answers 500
InternalError, HEAD still 200, strata_remote_tier_missing_total counts);
the remote answering 500 and 503 SlowDown or every answer late (transitions wait, the object
stays readable from hot, errors and the last error show in admin info and
/metrics, then complete when the remote recovers); the remote daemon
stopped (a transitioned object answers 503, a due one stays on hot and
moves once the remote is back); kill -9 of the source at the copy, verify
and switch steps (nothing lost, one version, no orphan on the remote); a
version under Object Lock never moving to a tier without the lock flag
(counted) and moving to the lock tier with the same retention and legal
hold on the remote object (which then refuses its delete); and start-up
refusals: a credentials file of mode 0644, a tier without credentials, a
lock tier whose bucket has no Object Lock, unknown or repeated s3 flags; RestoreObject refused with
403 InvalidObjectState on hot and transparent remote objects (boto3 and
awscli), 404 for a missing key or version.  The archive tier
(--tier arch:s3,restore:URL, DEEP_ARCHIVE): GET 403 until RestoreObject
(202, 409 while in progress, 200 on a ready copy with a new expiry),
x-amz-restore exactly as AWS, GET and ranges from the restored copy, its
expiry and its removal with the version (shards counted on the hot
drives), ObjectRestore events to a webhook, kill -9 mid-restore.
Run by CTest (integration label) with /usr/bin/python3.
"""

import base64
import datetime
import hashlib
import http.client
import http.server
import json
import os
import re
import signal
import socketserver
import subprocess
import sys
import threading
import time

from botocore.exceptions import ClientError
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remote_tier_common import (GLACIER_MSG, assert_archived,  # noqa: E402
                                body, bucket_keys, class_writes_refused, lifecycle,
                                lock_change_survives_a_kill, locked_pair, md5, metric, mpu,
                                move_to_archive, remote_info, restore_again, restore_hdr,
                                restored_reads,
                                storage_class, wait_restored)
from strata_harness import (Strata, data_files, expect_error, free_port, log, run,  # noqa: E402
                            test, wait_until)

MiB = 1 << 20
PREFIX = "strata-data"


# ---- loopback HTTP servers of the test ----------------------------------------
class Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass


def serve(handler):
    """handler's threaded server on a free loopback port: (server, port)."""
    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


# ---- the fault proxy --------------------------------------------------------
class Proxy:
    """Relays HTTP requests to the remote daemon unchanged (Host header
    included, so SigV4 still verifies), or answers them with a fault:
    mode "pass", "500" (InternalError), "slowdown" (503 SlowDown), "slow"
    (each answer 1.5 s late)."""

    def __init__(self, port):
        self.port_to = port
        self.mode = "pass"
        self.faults = 0
        self.data_puts = 0  # PUTs of data objects that reached the proxy
        self.data_gets = 0  # GETs of data objects that reached the proxy
        proxy = self

        class Handler(Quiet):
            def relay(self):
                n = int(self.headers.get("Content-Length") or 0)
                if self.command == "PUT" and f"/{PREFIX}/" in self.path:
                    proxy.data_puts += 1
                if self.command == "GET" and f"/{PREFIX}/" in self.path:
                    proxy.data_gets += 1
                if proxy.mode == "slow":
                    time.sleep(1.5)  # every request taken late, still complete
                body = self.rfile.read(n) if n else b""
                if len(body) < n:
                    # The client died mid-upload: as S3 does, keep nothing.
                    self.close_connection = True
                    return
                if proxy.mode not in ("pass", "slow"):
                    proxy.faults += 1
                    code, status = (("InternalError", 500) if proxy.mode == "500"
                                    else ("SlowDown", 503))
                    msg = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code>"
                           f"<Message>fault proxy</Message></Error>").encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(msg)
                    return
                c = http.client.HTTPConnection("127.0.0.1", proxy.port_to, timeout=60)
                try:
                    c.request(self.command, self.path, body=body, headers=dict(self.headers))
                    r = c.getresponse()
                    data = r.read()
                except OSError:
                    # The remote is down: so is the proxy's answer.
                    self.close_connection = True
                    return
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection",
                                         "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length",
                                 r.getheader("Content-Length") if self.command == "HEAD"
                                 else str(len(data)))
                try:
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                except OSError:
                    self.close_connection = True  # the client is gone
                c.close()

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = relay

        self.srv, self.port = serve(Handler)


# ---- helpers -----------------------------------------------------------------
def admin_info_text(s):
    """stdout of `strata admin info`."""
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "STRATA_ENDPOINT": s.endpoint,
           "STRATA_ACCESS_KEY": s.ak, "STRATA_SECRET_KEY": s.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", "info"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def remote_keys(bucket):
    """Keys in the remote bucket (under the tier's prefix)."""
    return bucket_keys(R.client(), bucket)


# ---- tests ---------------------------------------------------------------------
@test
def transition_and_transparent_reads(s):
    c = s.client()
    b = s.bucket_name("move")
    c.create_bucket(Bucket=b)
    single = body(5 * MiB + 123, b + "s")
    parts = [body(5 * MiB, b + "p1"), body(2 * MiB + 7, b + "p2")]
    small = body(300 * 1024, b + "small")
    etag1 = c.put_object(Bucket=b, Key="single", Body=single, ContentType="application/x-test",
                         Metadata={"owner": "tests"})["ETag"]
    etag2 = mpu(c, b, "multi", parts)
    c.put_object(Bucket=b, Key="small", Body=small)
    multi = b"".join(parts)
    keys_before = set(remote_keys(COLD_BUCKET))
    hot_before = data_files(S.drives)
    puts_before = metric(s, 'strata_remote_tier_puts_total{tier="cold"}')
    lifecycle(c, b, "STANDARD_IA")
    for k in ("single", "multi", "small"):
        wait_until(f"{k} moved to the remote tier",
                 lambda k=k: storage_class(c, b, k) == "STANDARD_IA")
    # GET: the same bytes, streamed from the remote.
    assert md5(c.get_object(Bucket=b, Key="single")["Body"].read()) == md5(single)
    assert md5(c.get_object(Bucket=b, Key="multi")["Body"].read()) == md5(multi)
    assert c.get_object(Bucket=b, Key="small")["Body"].read() == small
    # Ranged GETs: inside one window, across the 4 MiB read-ahead edge, the
    # tail, across the part boundary of the multipart object.
    for k, data in (("single", single), ("multi", multi)):
        for lo, hi in ((0, 0), (10, 5000), (4 * MiB - 100, 4 * MiB + 100),
                       (len(data) - 17, len(data) - 1), (5 * MiB - 3, 5 * MiB + 3)):
            g = c.get_object(Bucket=b, Key=k, Range=f"bytes={lo}-{hi}")
            assert g["ContentRange"] == f"bytes {lo}-{hi}/{len(data)}", g["ContentRange"]
            assert g["Body"].read() == data[lo:hi + 1], f"{k} bytes {lo}-{hi} differ"
    h = c.head_object(Bucket=b, Key="single")
    assert h["ETag"] == etag1 and h["ContentLength"] == len(single)
    assert h["ContentType"] == "application/x-test" and h["Metadata"] == {"owner": "tests"}
    assert h["StorageClass"] == "STANDARD_IA"
    assert c.head_object(Bucket=b, Key="multi")["ETag"] == etag2
    listed = {o["Key"]: o["StorageClass"] for o in c.list_objects_v2(Bucket=b)["Contents"]}
    assert listed == {"single": "STANDARD_IA", "multi": "STANDARD_IA", "small": "STANDARD_IA"}
    # The remote holds one object per data object (single, 2 parts, small)
    # at PREFIX/<data id hex>, byte for byte.
    new = sorted(set(remote_keys(COLD_BUCKET)) - keys_before)
    assert len(new) == 4, new
    for k in new:
        assert re.fullmatch(PREFIX + "/[0-9a-f]{32}", k), k
    rc = R.client()
    sums = {md5(rc.get_object(Bucket=COLD_BUCKET, Key=k)["Body"].read()) for k in new}
    assert sums == {md5(single), md5(parts[0]), md5(parts[1]), md5(small)}, "remote bytes differ"
    meta = rc.head_object(Bucket=COLD_BUCKET, Key=new[0])["Metadata"]
    assert re.fullmatch("[0-9a-f]{8}", meta.get("strata-crc32c", "")), meta
    # The hot tier's shards of these objects are gone (4 data objects of
    # 2+2 shards each).
    wait_until("the hot copies removed", lambda: data_files(S.drives) == hot_before - 16,
             timeout=15)
    assert metric(s, 'strata_remote_tier_puts_total{tier="cold"}') >= puts_before + 4
    info = remote_info(s, "cold")
    assert info["last_success_ms"] > 0 and info["lock"] is False, info
    assert info["url"].endswith(f"/{COLD_BUCKET}/{PREFIX}"), info
    # Deleting a transitioned object deletes its remote copy.
    small_key = [k for k in new if md5(rc.get_object(Bucket=COLD_BUCKET, Key=k)["Body"].read())
                 == md5(small)]
    c.delete_object(Bucket=b, Key="small")
    wait_until("the remote copy deleted with the object",
             lambda: small_key[0] not in remote_keys(COLD_BUCKET), timeout=15)
    expect_error(lambda: c.get_object(Bucket=b, Key="small"), "NoSuchKey", 404)


@test
def encrypted_objects_move_as_ciphertext(s):
    # SSE-C: the remote holds ciphertext only; GET with the key decrypts
    # what streams back, ranges included.
    c = s.client()
    b = s.bucket_name("ssec")
    c.create_bucket(Bucket=b)
    key = os.urandom(32)
    sse = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    data = body(2 * MiB + 77, b)
    before = set(remote_keys(COLD_BUCKET))
    c.put_object(Bucket=b, Key="secret", Body=data, **sse)
    lifecycle(c, b, "STANDARD_IA")
    wait_until("moved", lambda: c.head_object(Bucket=b, Key="secret", **sse).get("StorageClass")
               == "STANDARD_IA")
    assert md5(c.get_object(Bucket=b, Key="secret", **sse)["Body"].read()) == md5(data)
    g = c.get_object(Bucket=b, Key="secret", Range="bytes=1000000-1000099", **sse)
    assert g["Body"].read() == data[1000000:1000100]
    expect_error(lambda: c.get_object(Bucket=b, Key="secret"), "InvalidRequest", 400)
    new = set(remote_keys(COLD_BUCKET)) - before
    assert len(new) == 1, new
    stored = R.client().get_object(Bucket=COLD_BUCKET, Key=new.pop())["Body"].read()
    assert data[:4096] not in stored and md5(stored) != md5(data), "plaintext on the remote"


@test
def writes_never_name_a_remote_class(s):
    # Remote tiers take data by lifecycle transitions only (where Object
    # Lock is carried over or the move refused).
    c = s.client()
    b = s.bucket_name("direct")
    c.create_bucket(Bucket=b)
    before = set(remote_keys(COLD_BUCKET))
    for cls in ("STANDARD_IA", "GLACIER"):
        class_writes_refused(c, b, cls)
    c.put_object(Bucket=b, Key="k", Body=b"y" * 70000)
    expect_error(lambda: c.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "k"},
                                       StorageClass="STANDARD_IA"), "InvalidStorageClass", 400)
    assert storage_class(c, b, "k") == "STANDARD"
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"y" * 70000
    assert set(remote_keys(COLD_BUCKET)) == before


@test
def remote_copy_lost(s):
    c = s.client()
    b = s.bucket_name("lost")
    c.create_bucket(Bucket=b)
    data = body(2 * MiB + 1, b)
    before = set(remote_keys(COLD_BUCKET))
    c.put_object(Bucket=b, Key="k", Body=data)
    lifecycle(c, b, "STANDARD_IA")
    wait_until("moved", lambda: storage_class(c, b, "k") == "STANDARD_IA")
    new = set(remote_keys(COLD_BUCKET)) - before
    assert len(new) == 1, new
    missing = metric(s, 'strata_remote_tier_missing_total{tier="cold"}')
    R.client().delete_object(Bucket=COLD_BUCKET, Key=new.pop())
    r = expect_error(lambda: c.get_object(Bucket=b, Key="k"), "InternalError", 500)
    assert r["Error"].get("Message"), r
    expect_error(lambda: c.get_object(Bucket=b, Key="k", Range="bytes=0-9"), "InternalError", 500)
    # The record is intact: HEAD and listings still show the object.
    assert c.head_object(Bucket=b, Key="k")["ContentLength"] == len(data)
    assert metric(s, 'strata_remote_tier_missing_total{tier="cold"}') >= missing + 2
    assert remote_info(s, "cold")["missing"] >= 2


def fault_run(s, mode, status):
    c = s.client()
    b = s.bucket_name("f" + mode)
    c.create_bucket(Bucket=b)
    data = body(3 * MiB + 9, b)
    c.put_object(Bucket=b, Key="k", Body=data)
    errors = metric(s, 'strata_remote_tier_errors_total{tier="cold"}')
    PROXY.mode = mode
    try:
        lifecycle(c, b, "STANDARD_IA")
        wait_until("failed attempts against the faulty remote",
                 lambda: metric(s, 'strata_remote_tier_errors_total{tier="cold"}') >= errors + 2)
        time.sleep(2)
        # Nothing moved, nothing lost: served from hot meanwhile.
        assert storage_class(c, b, "k") == "STANDARD"
        assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
        info = remote_info(s, "cold")
        assert f"retry {status}" in info["last_error"] and info["last_error_ms"] > 0, info
    finally:
        PROXY.mode = "pass"
    wait_until("moved once the remote recovered",
             lambda: storage_class(c, b, "k") == "STANDARD_IA", timeout=200)
    assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)


@test
def remote_answers_500(s):
    fault_run(s, "500", 500)


@test
def remote_answers_slowdown(s):
    fault_run(s, "slowdown", 503)


@test
def remote_slow(s):
    # Every answer of the remote 1.5 s late: moves and reads take longer,
    # nothing fails.
    c = s.client()
    b = s.bucket_name("slow")
    c.create_bucket(Bucket=b)
    data = body(MiB + 5, b)
    c.put_object(Bucket=b, Key="k", Body=data)
    errors = metric(s, 'strata_remote_tier_errors_total{tier="cold"}')
    PROXY.mode = "slow"
    try:
        lifecycle(c, b, "STANDARD_IA")
        wait_until("moved through the slow remote",
                   lambda: storage_class(c, b, "k") == "STANDARD_IA")
        t = time.monotonic()
        assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
        assert time.monotonic() - t >= 3.0  # a HEAD and a GET, each late
    finally:
        PROXY.mode = "pass"
    assert metric(s, 'strata_remote_tier_errors_total{tier="cold"}') == errors


@test
def remote_down(s):
    c = s.client()
    b = s.bucket_name("down")
    c.create_bucket(Bucket=b)
    moved = body(MiB + 11, b + "m")
    due = body(2 * MiB + 5, b + "d")
    c.put_object(Bucket=b, Key="moved", Body=moved)
    lifecycle(c, b, "STANDARD_IA")
    wait_until("moved", lambda: storage_class(c, b, "moved") == "STANDARD_IA")

    def while_down():
        # A transitioned object cannot be read: 503, retryable.
        expect_error(lambda: c.get_object(Bucket=b, Key="moved"), "ServiceUnavailable", 503)
        assert c.head_object(Bucket=b, Key="moved")["ContentLength"] == len(moved)
        # A due object stays on hot, readable, while its move fails.
        c.put_object(Bucket=b, Key="due", Body=due)
        errors = metric(s, 'strata_remote_tier_errors_total{tier="cold"}')
        wait_until("failed attempts while the remote is down",
                 lambda: metric(s, 'strata_remote_tier_errors_total{tier="cold"}') >= errors + 2)
        assert storage_class(c, b, "due") == "STANDARD"
        assert md5(c.get_object(Bucket=b, Key="due")["Body"].read()) == md5(due)
        assert "retry 0" in remote_info(s, "cold")["last_error"]
        text = admin_info_text(s)
        row = re.search(r"^cold\s+-\s+remote\s+STANDARD_IA$", text, re.M)
        assert row, text
        assert f"/{COLD_BUCKET}/{PREFIX}" in text and "last success " in text, text
        assert re.search(r"last error \d+s ago: (PUT|HEAD|DELETE) .*retry 0", text), text
    R.restart(between=while_down)
    wait_until("moved once the remote is back",
             lambda: storage_class(c, b, "due") == "STANDARD_IA", timeout=200)
    assert md5(c.get_object(Bucket=b, Key="due")["Body"].read()) == md5(due)
    assert md5(c.get_object(Bucket=b, Key="moved")["Body"].read()) == md5(moved)


def crash_run(s, step):
    """The source dies (as kill -9) when a transition reaches step."""
    s.extra_env = {"STRATA_DEBUG_TRANSITION_CRASH": str(step)}
    s.restart()
    c = s.client()
    b = s.bucket_name(f"crash{step}")
    c.create_bucket(Bucket=b)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    data = body(3 * MiB + step, b)
    hot_before = data_files(s.drives)
    vid = c.put_object(Bucket=b, Key="k", Body=data)["VersionId"]
    before = set(remote_keys(COLD_BUCKET))
    lifecycle(c, b, "STANDARD_IA")
    try:
        rc = s.proc.wait(60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the source did not die at step {step}")
    assert rc == 137, f"the source exited with {rc}, not at the crash hook"
    s.extra_env = {}
    s.restart(kill=True)
    c = s.client()
    wait_until(f"the transition done after the crash at step {step}",
             lambda: storage_class(c, b, "k", vid) == "STANDARD_IA")
    assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
    vers = c.list_object_versions(Bucket=b)
    assert [(v["Key"], v["VersionId"]) for v in vers.get("Versions", [])] == [("k", vid)], vers
    assert not vers.get("DeleteMarkers")
    # Exactly one copy on the remote: the crashed attempt's is removed.
    wait_until("one remote copy, no orphan",
             lambda: len(set(remote_keys(COLD_BUCKET)) - before) == 1, timeout=20)
    wait_until("the hot copy removed", lambda: data_files(s.drives) == hot_before, timeout=20)


def kill9_slowed(s, start, what, caught):
    """With the remote slowed down: start(), then kill -9 of the source once
    caught() (the request to the remote in flight); restarted."""
    PROXY.mode = "slow"
    try:
        start()
        wait_until(what, caught, timeout=60)
        s.proc.send_signal(signal.SIGKILL)
        assert s.proc.wait(15) == -signal.SIGKILL
    finally:
        PROXY.mode = "pass"
    s.restart(kill=True)


@test
def sigkill_while_the_remote_receives(s):
    # A real kill -9 of the source while its PutObject is in flight (the
    # remote slowed down so the PUT is caught in the middle).
    c = s.client()
    b = s.bucket_name("sigkill")
    c.create_bucket(Bucket=b)
    data = body(12 * MiB + 1, b)
    c.put_object(Bucket=b, Key="k", Body=data)
    before = set(remote_keys(COLD_BUCKET))
    hot_before = data_files(s.drives)
    puts = PROXY.data_puts
    kill9_slowed(s, lambda: lifecycle(c, b, "STANDARD_IA"),
                 "the data PUT in flight", lambda: PROXY.data_puts > puts)
    c = s.client()
    wait_until("the transition done after kill -9",
               lambda: storage_class(c, b, "k") == "STANDARD_IA")
    assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
    assert [o["Key"] for o in c.list_objects_v2(Bucket=b)["Contents"]] == ["k"]
    wait_until("one remote copy, no orphan",
               lambda: len(set(remote_keys(COLD_BUCKET)) - before) == 1, timeout=30)
    wait_until("the hot copy removed",
               lambda: data_files(s.drives) == hot_before - 4, timeout=30)


@test
def kill9_during_copy(s):
    crash_run(s, 2)  # the bytes are still spooling: nothing on the remote yet


@test
def kill9_after_copy(s):
    crash_run(s, 3)  # the remote holds a copy no record names


@test
def kill9_after_verify(s):
    crash_run(s, 4)


@test
def kill9_after_switch(s):
    crash_run(s, 5)


@test
def locked_versions(s):
    c, b, until, data, v_ret, v_hold = locked_pair(s, "lock")
    c.put_object(Bucket=b, Key="free", Body=data)
    refused = metric(s, 'strata_remote_tier_lock_refused_total{tier="cold"}')
    skipped = metric(s, "strata_ilm_skipped_locked_total")
    # The cold tier has no lock flag: the locked versions stay on hot.
    lifecycle(c, b, "STANDARD_IA")
    wait_until("the unlocked version moved", lambda: storage_class(c, b, "free") == "STANDARD_IA")
    wait_until("both locked versions refused",
             lambda: metric(s, 'strata_remote_tier_lock_refused_total{tier="cold"}')
             >= refused + 2)
    time.sleep(2)
    assert storage_class(c, b, "retained") == "STANDARD"
    assert storage_class(c, b, "held") == "STANDARD"
    assert metric(s, "strata_ilm_skipped_locked_total") >= skipped + 2
    assert remote_info(s, "cold")["lock_refused"] >= 2
    # The vault tier keeps Object Lock: the versions move, locked alike.
    before = set(remote_keys(VAULT_BUCKET))
    lifecycle(c, b, "GLACIER")
    for k, vid in (("retained", v_ret), ("held", v_hold)):
        wait_until(f"{k} moved to the lock tier",
                 lambda k=k, vid=vid: storage_class(c, b, k, vid) == "GLACIER")
        assert md5(c.get_object(Bucket=b, Key=k)["Body"].read()) == md5(data)
    new = set(remote_keys(VAULT_BUCKET)) - before
    rc = R.client()
    seen = {}
    for k in new:
        h = rc.head_object(Bucket=VAULT_BUCKET, Key=k)
        seen[(h.get("ObjectLockMode"), h.get("ObjectLockLegalHoldStatus"))] = (k, h)
    k_ret, h_ret = seen[("COMPLIANCE", None)] if ("COMPLIANCE", None) in seen else \
        seen[("COMPLIANCE", "OFF")]
    assert h_ret["ObjectLockRetainUntilDate"] == until, (h_ret["ObjectLockRetainUntilDate"], until)
    k_hold = [v[0] for m, v in seen.items() if m[1] == "ON"]
    assert len(k_hold) == 1, seen
    # The remote refuses to delete either version.
    for k in (k_ret, k_hold[0]):
        rvid = rc.head_object(Bucket=VAULT_BUCKET, Key=k)["VersionId"]
        expect_error(lambda k=k, rvid=rvid: rc.delete_object(Bucket=VAULT_BUCKET, Key=k,
                                                             VersionId=rvid), "AccessDenied", 403)
    # And strata still refuses to delete the locked versions.
    expect_error(lambda: c.delete_object(Bucket=b, Key="retained", VersionId=v_ret),
                 "AccessDenied", 403)
    # A version locked after it moved to the tier without lock: its remote
    # copy cannot follow, which is counted, never passed over.
    c.put_object(Bucket=b, Key="late", Body=data)
    lifecycle(c, b, "STANDARD_IA")
    wait_until("late moved", lambda: storage_class(c, b, "late") == "STANDARD_IA")
    refused = remote_info(s, "cold")["lock_refused"]
    failed = metric(s, "strata_remote_tier_lock_updates_failed_total")
    c.put_object_retention(Bucket=b, Key="late", Retention={"Mode": "GOVERNANCE",
                                                           "RetainUntilDate": until})
    wait_until("the unlockable copy counted",
               lambda: metric(s, "strata_remote_tier_lock_updates_failed_total") == failed + 1)
    assert remote_info(s, "cold")["lock_refused"] >= refused + 1


@test
def lock_changes_reach_the_remote(s):
    """A retention extended and a legal hold set after the move to the lock
    tier reach the remote object; with the remote down the local change is
    applied, stays queued across a kill -9 of the source, and reaches the
    remote once it is back."""
    c = s.client()
    b = s.bucket_name("lockext")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    until = now + datetime.timedelta(days=2)
    data = body(MiB + 7, b)
    cmd5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    before = set(remote_keys(VAULT_BUCKET))
    vid = c.put_object(Bucket=b, Key="k", Body=data, ContentMD5=cmd5,
                       ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    lifecycle(c, b, "GLACIER")
    wait_until("moved to the lock tier", lambda: storage_class(c, b, "k", vid) == "GLACIER")
    new = set(remote_keys(VAULT_BUCKET)) - before
    assert len(new) == 1, new
    rk = new.pop()
    rc = R.client()

    def remote_lock():
        h = rc.head_object(Bucket=VAULT_BUCKET, Key=rk)
        return h.get("ObjectLockMode"), h.get("ObjectLockRetainUntilDate"), \
            h.get("ObjectLockLegalHoldStatus")
    assert remote_lock()[:2] == ("GOVERNANCE", until), remote_lock()
    applied = metric(s, "strata_remote_tier_lock_updates_applied_total")
    later = now + datetime.timedelta(days=5)
    c.put_object_retention(Bucket=b, Key="k", VersionId=vid, Retention={
        "Mode": "COMPLIANCE", "RetainUntilDate": later})
    wait_until("the extension on the remote", lambda: remote_lock()[:2] == ("COMPLIANCE", later))
    c.put_object_legal_hold(Bucket=b, Key="k", VersionId=vid, LegalHold={"Status": "ON"})
    wait_until("the legal hold on the remote", lambda: remote_lock()[2] == "ON")
    # Counted once the remote answered, so just after the change shows there.
    wait_until("the two lock updates counted", lambda: metric(
        s, "strata_remote_tier_lock_updates_applied_total") >= applied + 2, 10)
    # The remote refuses the delete the extension now forbids.
    rvid = rc.head_object(Bucket=VAULT_BUCKET, Key=rk)["VersionId"]
    expect_error(lambda: rc.delete_object(Bucket=VAULT_BUCKET, Key=rk, VersionId=rvid,
                                          BypassGovernanceRetention=True), "AccessDenied", 403)
    lock_change_survives_a_kill(
        s, R, c, b, vid, now + datetime.timedelta(days=9), remote_lock,
        check=lambda s: re.search(r"lock changes to carry: pending [1-9]", admin_info_text(s)))


@test
def lock_change_during_a_move(s):
    """A retention extended and a legal hold set while a move to the lock
    tier is between copy and switch (the remote slowed down): the version
    keeps the new settings, its data moves, and the remote object holds
    them too.  A legal hold set while an unlocked version is being copied
    to the tier without lock refuses that move (counted); the version stays
    on hot, held."""
    s2 = Strata(args=["--lc-day-seconds", "1", "--ilm-interval-seconds", "1", "--metrics-public",
                      "--ilm-move-mbps", "0",
                      "--tier", f"vault:s3,lock:http://127.0.0.1:{PROXY.port}/{VAULT_BUCKET}/{PREFIX}",
                      "--tier", f"cold:s3:http://127.0.0.1:{PROXY.port}/{COLD_BUCKET}/{PREFIX}",
                      "--tier-credentials", CREDS, "--storage-class", "GLACIER:vault",
                      "--storage-class", "STANDARD_IA:cold"])
    try:
        c = s2.client()
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        until, later = now + datetime.timedelta(days=2), now + datetime.timedelta(days=6)
        b = s2.bucket_name("mvlock")
        c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
        data = body(2 * MiB + 9, b)
        cmd5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        vid = c.put_object(Bucket=b, Key="k", Body=data, ContentMD5=cmd5,
                           ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)["VersionId"]
        before = set(remote_keys(VAULT_BUCKET))
        puts = PROXY.data_puts
        PROXY.mode = "slow"
        try:
            lifecycle(c, b, "GLACIER")
            wait_until("the copy reaching the remote", lambda: PROXY.data_puts > puts)
            assert storage_class(c, b, "k", vid) == "STANDARD"  # not switched yet
            c.put_object_retention(Bucket=b, Key="k", VersionId=vid, Retention={
                "Mode": "COMPLIANCE", "RetainUntilDate": later})
            c.put_object_legal_hold(Bucket=b, Key="k", VersionId=vid, LegalHold={"Status": "ON"})
            wait_until("moved to the lock tier", lambda: storage_class(c, b, "k", vid) == "GLACIER")
        finally:
            PROXY.mode = "pass"
        assert c.get_object_retention(Bucket=b, Key="k", VersionId=vid)["Retention"] == {
            "Mode": "COMPLIANCE", "RetainUntilDate": later}
        assert c.get_object_legal_hold(Bucket=b, Key="k", VersionId=vid)["LegalHold"] == {
            "Status": "ON"}
        assert md5(c.get_object(Bucket=b, Key="k", VersionId=vid)["Body"].read()) == md5(data)
        new = [k for k in set(remote_keys(VAULT_BUCKET)) - before if k.startswith(PREFIX + "/")]
        assert len(new) == 1, new
        h = R.client().head_object(Bucket=VAULT_BUCKET, Key=new[0])
        assert (h.get("ObjectLockMode"), h.get("ObjectLockRetainUntilDate"),
                h.get("ObjectLockLegalHoldStatus")) == ("COMPLIANCE", later, "ON"), h
        expect_error(lambda: c.delete_object(Bucket=b, Key="k", VersionId=vid),
                     "AccessDenied", 403)

        b2 = s2.bucket_name("mvhold")
        c.create_bucket(Bucket=b2, ObjectLockEnabledForBucket=True)
        c.put_object(Bucket=b2, Key="u", Body=data)
        refused = metric(s2, 'strata_remote_tier_lock_refused_total{tier="cold"}')
        puts = PROXY.data_puts
        PROXY.mode = "slow"
        try:
            lifecycle(c, b2, "STANDARD_IA")
            wait_until("the copy reaching the remote", lambda: PROXY.data_puts > puts)
            c.put_object_legal_hold(Bucket=b2, Key="u", LegalHold={"Status": "ON"})
            wait_until("the move refused", lambda: metric(
                s2, 'strata_remote_tier_lock_refused_total{tier="cold"}') >= refused + 1)
        finally:
            PROXY.mode = "pass"
        time.sleep(3)  # passes after the refusal leave it on hot too
        assert storage_class(c, b2, "u") == "STANDARD"
        assert c.get_object_legal_hold(Bucket=b2, Key="u")["LegalHold"] == {"Status": "ON"}
        assert md5(c.get_object(Bucket=b2, Key="u")["Body"].read()) == md5(data)
    finally:
        PROXY.mode = "pass"
        assert s2.stop()


@test
def restore_errors(s):
    """RestoreObject: every tier serves reads, so a restore is refused as
    AWS refuses it for a readable class (403 InvalidObjectState), on the
    hot tier and on the remote one, by boto3 and by awscli; a missing key
    or version is 404; the object stays as it was."""
    c = s.client()
    b = s.bucket_name("restore")
    c.create_bucket(Bucket=b)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    data = body(300 * 1024, b + "r")
    vid = c.put_object(Bucket=b, Key="cold", Body=data)["VersionId"]
    c.put_object(Bucket=b, Key="hot", Body=b"hot bytes")
    lifecycle(c, b, "STANDARD_IA")
    wait_until("cold moved to the remote tier",
               lambda: storage_class(c, b, "cold") == "STANDARD_IA")
    c.delete_bucket_lifecycle(Bucket=b)
    req = {"Days": 2, "GlacierJobParameters": {"Tier": "Standard"}}
    for k, kw in (("hot", {}), ("cold", {}), ("cold", {"VersionId": vid})):
        e = expect_error(lambda: c.restore_object(Bucket=b, Key=k, RestoreRequest=req, **kw),
                         "InvalidObjectState", 403)
        assert "storage class" in e["Error"]["Message"], e
    expect_error(lambda: c.restore_object(Bucket=b, Key="absent", RestoreRequest=req),
                 "NoSuchKey", 404)
    expect_error(lambda: c.restore_object(Bucket=b, Key="cold", VersionId="0" * 32,
                                          RestoreRequest=req), "NoSuchVersion", 404)
    h = c.head_object(Bucket=b, Key="cold")
    assert "Restore" not in h and h["StorageClass"] == "STANDARD_IA", h
    assert c.get_object(Bucket=b, Key="cold")["Body"].read() == data
    assert c.get_object(Bucket=b, Key="hot")["Body"].read() == b"hot bytes"
    # awscli v2, clean environment.
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "AWS_ACCESS_KEY_ID": s.ak,
           "AWS_SECRET_ACCESS_KEY": s.sk, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    r = subprocess.run(["/usr/bin/aws", "--endpoint-url", s.endpoint, "s3api", "restore-object",
                        "--bucket", b, "--key", "cold", "--restore-request", "Days=1"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "InvalidObjectState" in r.stderr, (r.returncode, r.stderr)
    assert c.get_object(Bucket=b, Key="cold")["Body"].read() == data


# ---- the archive tier (--tier arch:s3,restore:URL) ---------------------------------
class Hook:
    """A webhook target: keeps the event records POSTed to it."""

    def __init__(self):
        self.records = []
        hook = self

        class Handler(Quiet):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                hook.records += json.loads(self.rfile.read(n)).get("Records", [])  # not the TestEvent
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.srv, self.port = serve(Handler)

    def events(self, bucket, key):
        return [r["eventName"] for r in self.records
                if r["s3"]["bucket"]["name"] == bucket and r["s3"]["object"]["key"] == key]


def archived(s, c, b, objs, create=True):
    """Put objs {key: bytes or [part bytes]} into bucket b (made unless
    create is false), made versioned, and move them to the archive tier:
    ({key: version id}, the drives' shard files before); hot copies gone."""
    if create:
        c.create_bucket(Bucket=b)
    base = data_files(s.drives)
    vids = move_to_archive(c, b, objs)
    wait_until("the hot copies removed", lambda: data_files(s.drives) == base, timeout=20)
    return vids, base


def aws(s, *args):
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "AWS_ACCESS_KEY_ID": s.ak,
           "AWS_SECRET_ACCESS_KEY": s.sk, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    return subprocess.run(["/usr/bin/aws", "--endpoint-url", s.endpoint, "s3api"] + list(args),
                          env=env, capture_output=True, text=True, timeout=120)


@test
def archive_needs_restore(s):
    """The archive tier: 403 InvalidObjectState before a restore, HEAD
    without x-amz-restore; RestoreObject 202, then 409 while the copy is
    made (the remote slowed down), ongoing-request="true"; then
    ongoing-request="false" with the expiry date, GET and ranged GETs
    serve the bytes from the hot copy; a second restore 200 with a new
    expiry; the events; the hot copies counted on the drives."""
    c = s.client()
    b = s.bucket_name("arch")
    single = body(5 * MiB + 123, b + "s")
    parts = [body(5 * MiB, b + "p1"), body(2 * MiB + 7, b + "p2")]
    multi = b"".join(parts)
    c.create_bucket(Bucket=b)
    c.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={
        "QueueConfigurations": [{"QueueArn": "arn:strata:sqs::hook:webhook",
                                 "Events": ["s3:ObjectRestore:*"]}]})
    vids, base = archived(s, c, b, {"single": single, "multi": parts}, create=False)
    for k in ("single", "multi"):
        assert_archived(c, b, k)
        assert_archived(c, b, k, vids[k])
        h = c.head_object(Bucket=b, Key=k)
        assert h["StorageClass"] == "DEEP_ARCHIVE" and "Restore" not in h, h
    r = aws(s, "get-object", "--bucket", b, "--key", "single", os.path.join(s.tmp, "out"))
    assert r.returncode != 0 and "InvalidObjectState" in r.stderr, r.stderr
    # 202, then 409 while the remote is slow.
    PROXY.mode = "slow"
    try:
        r = c.restore_object(Bucket=b, Key="single", RestoreRequest={"Days": 30})
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 202, r
        assert restore_hdr(c, b, "single") == 'ongoing-request="true"'
        expect_error(lambda: c.restore_object(Bucket=b, Key="single",
                                              RestoreRequest={"Days": 30}),
                     "RestoreAlreadyInProgress", 409)
        assert_archived(c, b, "single")  # no half copy is read
    finally:
        PROXY.mode = "pass"
    wait_restored(c, b, "single", "single restored")
    exp = restored_reads(c, b, "single", single, 30)
    assert data_files(s.drives) == base + 4, "the restored copy: one data object of 2+2 shards"
    # awscli restores the multipart object; its parts are served from hot.
    r = aws(s, "restore-object", "--bucket", b, "--key", "multi", "--restore-request", "Days=30")
    assert r.returncode == 0, r.stderr
    wait_restored(c, b, "multi", "multi restored")
    assert md5(c.get_object(Bucket=b, Key="multi")["Body"].read()) == md5(multi)
    g = c.get_object(Bucket=b, Key="multi", Range=f"bytes={5 * MiB - 3}-{5 * MiB + 3}")
    assert g["Body"].read() == multi[5 * MiB - 3:5 * MiB + 4]
    assert data_files(s.drives) == base + 12
    restore_again(c, b, "single", vids["single"], exp)
    # Hot objects and the transparent remote tier keep their answer.
    c.put_object(Bucket=b, Key="hot", Body=b"hot bytes")
    e = expect_error(lambda: c.restore_object(Bucket=b, Key="hot", RestoreRequest={"Days": 1}),
                     "InvalidObjectState", 403)
    assert "storage class" in e["Error"]["Message"]
    wait_until("the restore events", lambda: HOOK.events(b, "single") ==
               ["ObjectRestore:Post", "ObjectRestore:Completed"]
               and HOOK.events(b, "multi") == ["ObjectRestore:Post", "ObjectRestore:Completed"],
               timeout=20)


@test
def restored_copy_expires_and_goes_with_its_version(s):
    """Days=1 (a test day of 1 s): the copy expires, GET answers 403
    again, its hot shards are removed and ObjectRestore:Delete is sent; a
    version deleted while restored takes its copy along."""
    c = s.client()
    b = s.bucket_name("expire")
    c.create_bucket(Bucket=b)
    c.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={
        "QueueConfigurations": [{"QueueArn": "arn:strata:sqs::hook:webhook",
                                 "Events": ["s3:ObjectRestore:*"]}]})
    short, gone = body(1 * MiB + 5, b + "a"), body(2 * MiB + 9, b + "b")
    vids, base = archived(s, c, b, {"short": short, "gone": gone}, create=False)
    c.restore_object(Bucket=b, Key="gone", RestoreRequest={"Days": 30})
    wait_restored(c, b, "gone", "gone restored")
    assert data_files(s.drives) == base + 4
    c.restore_object(Bucket=b, Key="short", RestoreRequest={"Days": 1})
    wait_restored(c, b, "short", "short restored")
    assert c.get_object(Bucket=b, Key="short")["Body"].read() == short
    wait_until("the copy expired", lambda: restore_hdr(c, b, "short") is None, timeout=10)
    assert_archived(c, b, "short")
    wait_until("its hot shards removed", lambda: data_files(s.drives) == base + 4, timeout=10)
    wait_until("ObjectRestore:Delete", lambda: HOOK.events(b, "short")[-1:] ==
               ["ObjectRestore:Delete"], timeout=20)
    # Restored again after the expiry: a new copy.
    r = c.restore_object(Bucket=b, Key="short", RestoreRequest={"Days": 30})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 202
    wait_restored(c, b, "short", "short restored again")
    assert data_files(s.drives) == base + 8
    # The version deleted: its restored copy goes with it.
    c.delete_object(Bucket=b, Key="gone", VersionId=vids["gone"])
    wait_until("the deleted version's copy removed", lambda: data_files(s.drives) == base + 4,
               timeout=10)
    expect_error(lambda: c.restore_object(Bucket=b, Key="gone", VersionId=vids["gone"],
                                          RestoreRequest={"Days": 1}), "NoSuchVersion", 404)
    c.delete_object(Bucket=b, Key="short", VersionId=vids["short"])
    wait_until("every copy removed", lambda: data_files(s.drives) == base, timeout=10)


@test
def kill9_mid_restore(s):
    """kill -9 while the copy is read from the slowed remote: after the
    restart no half copy is served, the copy is made again, and exactly
    one copy's shards are on the hot drives; a new request then works."""
    c = s.client()
    b = s.bucket_name("rkill")
    data = body(12 * MiB + 1, b)
    base = archived(s, c, b, {"k": data})[1]
    gets = PROXY.data_gets

    def restore():
        r = c.restore_object(Bucket=b, Key="k", RestoreRequest={"Days": 30})
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 202
    kill9_slowed(s, restore, "the copy reading the remote", lambda: PROXY.data_gets > gets)
    c = s.client()
    h = restore_hdr(c, b, "k")
    if h == 'ongoing-request="true"':
        # The interrupted copy is not read: a GET fails until the copy made
        # again is complete (the restarted daemon may finish it between the
        # HEAD above and this GET: then the whole bytes, restore done).
        try:
            got = c.get_object(Bucket=b, Key="k")["Body"].read()
        except ClientError as e:
            assert e.response["Error"]["Code"] == "InvalidObjectState", e.response
            assert e.response["Error"]["Message"] == GLACIER_MSG, e.response
        else:
            assert md5(got) == md5(data), "a half copy was served"
            assert (restore_hdr(c, b, "k") or "").startswith('ongoing-request="false"')
    wait_restored(c, b, "k", "the copy made again after the restart")
    assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
    assert data_files(s.drives) == base + 4, ("a half copy left on the drives", data_files(s.drives), base)
    with open(s.log_path, errors="replace") as f:
        assert f"restore of {b}/k (" in f.read(), "the copy was not resumed at the start"
    r = c.restore_object(Bucket=b, Key="k", RestoreRequest={"Days": 40})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200


@test
def restored_copy_kept_by_orphan_reclaim_and_heal(s):
    """A daemon whose scanner reclaims orphans after 1 s and heals every
    pass: the restored copy's shards are referenced (not reclaimed), a
    shard of it removed from a drive is healed back."""
    s2 = Strata(args=["--lc-day-seconds", "1", "--ilm-interval-seconds", "1",
                      "--orphan-grace-seconds", "1", "--heal-interval-seconds", "1",
                      "--tier", f"arch:s3,restore:{R.endpoint}/{ARCH_BUCKET}/reclaim",
                      "--tier-credentials", CREDS, "--storage-class", "DEEP_ARCHIVE:arch"])
    try:
        c = s2.client()
        b = s2.bucket_name("reclaim")
        data = body(3 * MiB + 11, b)
        base = archived(s2, c, b, {"k": data})[1]
        c.restore_object(Bucket=b, Key="k", RestoreRequest={"Days": 60})
        wait_restored(c, b, "k", "restored")
        assert data_files(s2.drives) == base + 4
        # Orphan rounds at most every second, a data id removed when
        # unreferenced in two of them: five passes see at least two.
        passes = lambda: s2.admin_get("ilm/status")[1]["total"]["passes"]  # noqa: E731
        p0 = passes()
        wait_until("five scanner passes", lambda: passes() >= p0 + 5, timeout=30)
        assert data_files(s2.drives) == base + 4, "the restored copy was reclaimed"
        assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
        shard = [os.path.join(r, f) for r, _d, fs in os.walk(os.path.join(s2.drives[0], "data"))
                 for f in fs]
        assert len(shard) == 1, shard
        os.unlink(shard[0])
        wait_until("the removed shard healed", lambda: data_files(s2.drives) == base + 4,
                   timeout=20)
        assert md5(c.get_object(Bucket=b, Key="k")["Body"].read()) == md5(data)
    finally:
        assert s2.stop()


@test
def starts_while_the_remote_is_down(s):
    # An unreachable remote does not keep the hot tier from serving: the
    # daemon starts, says so in its log and in admin info.
    dead = free_port()
    creds2 = os.path.join(s.tmp, "creds-down.json")
    with open(os.open(creds2, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump({"cold": {"access_key": "AK", "secret_key": "SK"}}, f)
    s2 = Strata(args=["--tier", f"cold:s3:http://127.0.0.1:{dead}/bkt", "--tier-credentials",
                      creds2, "--storage-class", "STANDARD_IA:cold"])
    try:
        c = s2.client()
        b = s2.bucket_name("up")
        c.create_bucket(Bucket=b)
        c.put_object(Bucket=b, Key="k", Body=b"served from hot")
        assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"served from hot"
        info = remote_info(s2, "cold")
        assert info["last_success_ms"] == 0 and "retry 0" in info["last_error"], info
        with open(s2.log_path, errors="replace") as f:
            text = f.read()
        assert "tier cold: bucket bkt at http://127.0.0.1:" in text and "unreachable now" in text
    finally:
        assert s2.stop()


def start_fails(args, want):
    """The daemon refuses to start with args; its message holds want."""
    d = [os.path.join(S.tmp, f"refuse{i}") for i in range(4)]
    for x in d:
        os.makedirs(x, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": S.home, "STRATA_ROOT_USER": "AKREFUSE",
           "STRATA_ROOT_PASSWORD": "refuse-secret-1234"}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    p = subprocess.run([os.environ["STRATA_BIN"], "server", "--address", f"127.0.0.1:{free_port()}"] + args + d,
                       env=env, capture_output=True, timeout=60)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0, f"started with {args}: {out}"
    assert want in out, f"message lacks {want!r}: {out}"


@test
def start_refusals(s):
    loose = os.path.join(s.tmp, "loose.json")
    with open(loose, "w") as f:
        json.dump({"cold": {"access_key": R.ak, "secret_key": R.sk}}, f)
    os.chmod(loose, 0o644)
    start_fails(["--tier", f"cold:s3:{R.endpoint}/{COLD_BUCKET}", "--tier-credentials", loose],
                "mode 0644 lets others read the secret keys: refused")
    os.chmod(loose, 0o600)
    start_fails(["--tier", f"other:s3:{R.endpoint}/{COLD_BUCKET}", "--tier-credentials", loose],
                "tier other: no credentials")
    with open(loose, "w") as f:
        json.dump({"cold": {"access_key": R.ak, "secret_key": R.sk}}, f)
    start_fails(["--tier", f"cold:s3,lock:{R.endpoint}/{COLD_BUCKET}", "--tier-credentials", loose],
                "has no Object Lock")
    with open(loose, "w") as f:
        json.dump({"cold": {"access_key": R.ak, "secret_key": "wrong-secret"}}, f)
    start_fails(["--tier", f"cold:s3:{R.endpoint}/{COLD_BUCKET}", "--tier-credentials", loose],
                "the credentials are refused")
    start_fails(["--tier", "cold:s3:ftp://x/y"], "want http[s]://HOST:PORT/BUCKET[/PREFIX]")
    start_fails(["--tier", "cold:s3,glacier:http://127.0.0.1:1/b"],
                "flags of s3 are lock and restore")
    start_fails(["--tier", "cold:s3,restore,restore:http://127.0.0.1:1/b"],
                "flags of s3 are lock and restore")
    with open(loose, "w") as f:
        json.dump({"cold": {"access_key": R.ak, "secret_key": R.sk}}, f)
    start_fails(["--tier", f"cold:s3:{R.endpoint}/{COLD_BUCKET}", "--tier-credentials", loose,
                 "--storage-class", "STANDARD:cold"], "STANDARD (the class of writes")


if __name__ == "__main__":
    # The remote: a plain strata with a bucket for each tier.
    R = Strata()
    COLD_BUCKET = R.bucket_name("cold")
    VAULT_BUCKET = R.bucket_name("vault")
    ARCH_BUCKET = R.bucket_name("arch")
    R.client().create_bucket(Bucket=ARCH_BUCKET)
    HOOK = Hook()
    R.client().create_bucket(Bucket=COLD_BUCKET)
    R.client().create_bucket(Bucket=VAULT_BUCKET, ObjectLockEnabledForBucket=True)
    PROXY = Proxy(R.port)
    creds_dir = os.path.join(R.tmp, "creds")
    os.makedirs(creds_dir)
    creds = CREDS = os.path.join(creds_dir, "tiers.json")
    with open(os.open(creds, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump({"cold": {"access_key": R.ak, "secret_key": R.sk, "region": "us-east-1"},
                   "vault": {"access_key": R.ak, "secret_key": R.sk},
                   "arch": {"access_key": R.ak, "secret_key": R.sk}}, f)
    S = Strata(args=["--lc-day-seconds", "1", "--ilm-interval-seconds", "1", "--metrics-public",
                     "--ilm-move-mbps", "0", "--sse-c-allow-http",
                     "--tier", f"cold:s3:http://127.0.0.1:{PROXY.port}/{COLD_BUCKET}/{PREFIX}",
                     "--tier", f"vault:s3,lock:{R.endpoint}/{VAULT_BUCKET}",
                     "--tier", f"arch:s3,restore:http://127.0.0.1:{PROXY.port}/{ARCH_BUCKET}/{PREFIX}",
                     "--notify-target", f"hook:webhook:http://127.0.0.1:{HOOK.port}/events",
                     "--tier-credentials", creds,
                     "--storage-class", "STANDARD_IA:cold", "--storage-class", "GLACIER:vault",
                     "--storage-class", "DEEP_ARCHIVE:arch"])
    log(f"remote {R.endpoint}, proxy 127.0.0.1:{PROXY.port}")
    try:
        run(S)
    finally:
        R.stop()
