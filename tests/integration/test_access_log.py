"""test_access_log.py - the access log and request ids under concurrent load.

Event threads gather access-log lines in per-thread buffers (server/http/
log.c) and take request ids in per-thread blocks (http.c); the counters
behind /metrics are per-thread shards summed on scrape (metrics.c).  With
two event threads and eight keep-alive connections sending GETs at once,
then SIGTERM straight after the last answer:
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


@test
def lines_whole_unique_and_ordered_under_load(s):
    c = s.client()
    b = s.bucket_name("alog")
    c.create_bucket(Bucket=b)
    key = "dir/a key"
    body = os.urandom(4096)
    c.put_object(Bucket=b, Key=key, Body=body)
    url = urllib.parse.urlsplit(c.generate_presigned_url(
        "get_object", Params={"Bucket": b, "Key": key}, ExpiresIn=600))
    target = url.path + "?" + url.query

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


if __name__ == "__main__":
    strata = Strata(args=["--access-log", ACCESS_LOG, "--threads", "2"])
    try:
        run(strata)
    finally:
        shutil.rmtree(LOGDIR, ignore_errors=True)
