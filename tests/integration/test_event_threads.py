"""test_event_threads.py - state kept per event thread, under concurrent load.

Event threads gather access-log lines in per-thread buffers (server/http/
log.c), take request ids in per-thread blocks (http.c), count into
per-thread metric shards summed on scrape (metrics.c) and keep per-thread
copies of cached bucket state.  The daemon runs two event threads.

A change to a bucket is seen at once by every thread: eight keep-alive
connections (both threads) read the bucket; then, over another
connection, versioning is turned on (the next PUT on each of the eight
gets a version id), lifecycle rules are stored (the next GET on each
carries x-amz-expiration), a policy denies GetObject (403 on each) and is
deleted again (200 on each).  The bucket record, the lifecycle rules and
the policy are cached per thread (s3/bucket_cache.c,
s3/bucket_doc_cache.c, s3/authz.c).

Eight keep-alive connections sending GETs at once, then SIGTERM straight
after the last answer:
- every line is whole: the twelve space-separated fields, nothing torn or
  glued to another line;
- every answered request has exactly one line, found by the x-amz-request-id
  the client saw, including the requests answered just before SIGTERM (the
  lines still buffered are written at shutdown);
- request ids are unique across connections and threads;
- the lines of one connection are in the order its requests were answered;
- strata_http_requests_total{method="GET",status="200"} grew by exactly the
  number of GETs (plus the first scrape, counted once it completed).
"""

import http.client
import json
import os
import re
import shutil
import tempfile
import threading
import urllib.parse
import urllib.request

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest

from strata_harness import REGION, Strata, log, run, test

CONNS = 8
PER_CONN = 150
LOGDIR = tempfile.mkdtemp(prefix="access-log.", dir=os.environ.get("STRATA_TEST_TMPDIR") or None)
ACCESS_LOG = os.path.join(LOGDIR, "access.log")
BODY = os.urandom(4096)

# time id method bucket key access-key status s3-code bytes-in bytes-out ms flag
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ([0-9A-F]{16}) (GET|PUT|HEAD|POST|DELETE|OPTIONS) "
                  r"(\S+) (\S+) (\S+) (\d{3}) (\S+) (\d+) (\d+) \d+\.\d{3} [-CTSDI]$")


def requests_get_200(s):
    """strata_http_requests_total{method="GET",status="200"} now."""
    req = AWSRequest(method="GET", url=f"{s.endpoint}/strata/admin/v1/metrics")
    S3SigV4Auth(s.credentials(), "s3", REGION).add_auth(req)
    p = req.prepare()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(urllib.request.Request(p.url, headers=dict(p.headers)), timeout=30) as r:
        assert r.status == 200, r.status
        doc = r.read().decode()
    m = re.search(r'^strata_http_requests_total\{method="GET",status="200"\} (\d+)$', doc, re.M)
    return int(m.group(1)) if m else 0


def presigned(c, op, b, key):
    url = urllib.parse.urlsplit(c.generate_presigned_url(
        op, Params={"Bucket": b, "Key": key}, ExpiresIn=600))
    return url.path + "?" + url.query


@test
def bucket_changes_seen_by_every_thread(s):
    c = s.client()
    b = s.bucket_name("evth")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="warm", Body=BODY)
    get, put = presigned(c, "get_object", b, "warm"), presigned(c, "put_object", b, "v")
    conns = [http.client.HTTPConnection(s.host, s.port, timeout=60) for _ in range(CONNS)]
    try:
        for conn in conns:  # every thread now holds the bucket, versioning off
            for _ in range(3):
                conn.request("GET", get)
                r = conn.getresponse()
                assert r.status == 200 and r.read() == BODY, r.status
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        vids = []
        for i, conn in enumerate(conns):
            conn.request("PUT", put, body=b"x")
            r = conn.getresponse()
            r.read()
            vid = r.getheader("x-amz-version-id")
            assert r.status == 200 and vid and vid != "null", (i, r.status, vid)
            vids.append(vid)
        assert len(set(vids)) == CONNS, vids
        # Lifecycle rules (a per-thread document cache) and the bucket
        # policy (per-thread policy copies): the next GET on every
        # connection sees each change.
        c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            {"ID": "evth-exp", "Status": "Enabled", "Filter": {"Prefix": ""},
             "Expiration": {"Days": 3}}]})
        for i, conn in enumerate(conns):
            conn.request("GET", get)
            r = conn.getresponse()
            r.read()
            exp = r.getheader("x-amz-expiration") or ""
            assert r.status == 200 and 'rule-id="evth-exp"' in exp, (i, r.status, exp)
        c.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
             "Resource": f"arn:aws:s3:::{b}/*"}]}))
        for i, conn in enumerate(conns):
            conn.request("GET", get)
            r = conn.getresponse()
            data = r.read()
            assert r.status == 403 and b"<Code>AccessDenied</Code>" in data, (i, r.status, data[:300])
        c.delete_bucket_policy(Bucket=b)
        for i, conn in enumerate(conns):
            conn.request("GET", get)
            r = conn.getresponse()
            assert r.status == 200 and r.read() == BODY, (i, r.status)
    finally:
        for conn in conns:
            conn.close()
    listed = c.list_object_versions(Bucket=b, Prefix="v")["Versions"]
    assert sorted(v["VersionId"] for v in listed) == sorted(vids), (listed, vids)


@test
def lines_whole_unique_and_ordered_under_load(s):
    c = s.client()
    b = s.bucket_name("alog")
    c.create_bucket(Bucket=b)
    key = "dir/a key"
    body = BODY
    c.put_object(Bucket=b, Key=key, Body=body)
    target = presigned(c, "get_object", b, key)

    before = requests_get_200(s)
    ids = [[] for _ in range(CONNS)]
    errors = []
    start = threading.Barrier(CONNS)

    def client(i):
        conn = http.client.HTTPConnection(s.host, s.port, timeout=60)
        try:
            start.wait()
            for _ in range(PER_CONN):
                conn.request("GET", target)
                r = conn.getresponse()
                data = r.read()
                if r.status != 200 or data != body:
                    errors.append((i, r.status, data[:200]))
                    return
                ids[i].append(r.getheader("x-amz-request-id"))
        except Exception as e:  # reported below, with the others
            errors.append((i, repr(e)))
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CONNS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    after = requests_get_200(s)
    assert after - before == CONNS * PER_CONN + 1, (before, after)

    # Straight to SIGTERM (a clean exit, checked by stop()): the last lines
    # are still in the threads' buffers.
    assert s.stop(), "the daemon did not stop cleanly"

    flat = [x for conn in ids for x in conn]
    answered = set(flat)
    assert len(flat) == CONNS * PER_CONN and all(flat), flat[:5]
    assert len(answered) == len(flat), "request ids repeat across connections"

    with open(ACCESS_LOG, "rb") as f:
        raw = f.read()
    assert raw.endswith(b"\n"), raw[-200:]
    pos = {}
    for n, line in enumerate(raw.decode().split("\n")[:-1]):
        m = LINE.match(line)
        assert m, f"line {n} is not one whole access-log line: {line!r}"
        assert m.group(1) not in pos, f"request id {m.group(1)} logged twice"
        pos[m.group(1)] = n
        if m.group(1) in answered:
            assert (m.group(3), m.group(4), m.group(6)) == (b, "dir/a%20key", "200"), line
    missing = [x for x in flat if x not in pos]
    assert not missing, f"{len(missing)} answered requests have no line, e.g. {missing[:3]}"
    for i, conn in enumerate(ids):
        lines = [pos[x] for x in conn]
        assert lines == sorted(lines), f"connection {i}: lines out of answer order"
    log(f"{len(flat)} GETs on {CONNS} connections: one whole line each, ids unique, in order")


@test
def stop_signals_blocked_in_every_thread(s):
    """SIGTERM, SIGINT, SIGHUP and SIGUSR1 are taken by the main thread's
    sigtimedwait only: a thread that leaves one unblocked (started before the
    mask was set) can take a SIGTERM's default action and kill the daemon
    without its clean stop."""
    if s.proc is None:
        log("external daemon: its threads are not ours to read")
        return
    stop = {1: "SIGHUP", 2: "SIGINT", 10: "SIGUSR1", 15: "SIGTERM"}
    tasks = os.listdir(f"/proc/{s.proc.pid}/task")
    assert len(tasks) > 4, tasks  # event threads, workers, drive probes, RocksDB ...
    open_to = []
    for tid in tasks:
        # The main thread waits in sigtimedwait(), which unblocks the set it
        # waits for while it waits: that is the one thread that takes them.
        if tid == str(s.proc.pid):
            continue
        with open(f"/proc/{s.proc.pid}/task/{tid}/status") as f:
            st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        blocked = int(st["SigBlk"], 16)
        missing = [name for num, name in stop.items() if not blocked >> (num - 1) & 1]
        if missing:
            open_to.append((tid, st.get("Name"), missing))
    assert not open_to, f"threads that would take a stop signal themselves: {open_to}"


if __name__ == "__main__":
    strata = Strata(args=["--access-log", ACCESS_LOG, "--threads", "2"])
    try:
        run(strata)
    finally:
        shutil.rmtree(LOGDIR, ignore_errors=True)
