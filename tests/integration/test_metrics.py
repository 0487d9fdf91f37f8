"""test_metrics.py - /metrics in the Prometheus text format, parsed by
python3-prometheus-client's own parser (a format error fails the parse).

Without --metrics-public, /metrics is an S3 path like any other (anonymous
-> an S3 error, never the metrics) and admins read the same text signed at
/strata/admin/v1/metrics (a --users user gets 403).  With
--metrics-public (a second daemon) it is anonymous.  The checks: latency
histograms per S3 operation (total and TTFB), with cumulative buckets that
end at _count, counts matching the requests the test made; bytes in/out
growing by at least the bytes sent and received; errors by S3 code; the
in-flight gauge; drive state and space per drive, set error counters, and
the heal state before and after a heal.
"""

import os
import time
import urllib.error
import urllib.request

import botocore.credentials
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from prometheus_client.parser import text_string_to_metric_families

from strata_harness import REGION, Strata, run, test

U2 = ("METRICSUSER2", "metrics-user-two-secret")
_users = os.path.join(os.environ.get("STRATA_TEST_TMPDIR") or "/tmp", f"metrics-users-{os.getpid()}")
with open(_users, "w") as f:
    f.write(f"{U2[0]} {U2[1]}\n")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url, keys=None, method="GET"):
    """(status, content-type, body text); signed with keys when given."""
    req = AWSRequest(method=method, url=url, data=b"")
    if keys:
        S3SigV4Auth(botocore.credentials.Credentials(*keys), "s3", REGION).add_auth(req)
    p = req.prepare()
    ureq = urllib.request.Request(p.url, headers=dict(p.headers), method=method)
    try:
        with OPENER.open(ureq, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def scrape(s, public=False):
    if public:
        st, ctype, text = get(s.endpoint + "/metrics")
    else:
        st, ctype, text = get(s.endpoint + "/strata/admin/v1/metrics", (s.ak, s.sk))
    assert st == 200 and ctype.startswith("text/plain; version=0.0.4"), (st, ctype, text[:300])
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    return fams, text


def sample(fams, fam, name, **labels):
    for smp in fams[fam].samples:
        if smp.name == name and all(smp.labels.get(k) == v for k, v in labels.items()):
            return smp.value
    return None


def check_histogram(fams, fam, op):
    """Buckets cumulative, ending at _count, with a sum; returns _count."""
    buckets = [(float(smp.labels["le"]), smp.value) for smp in fams[fam].samples
               if smp.name == fam + "_bucket" and smp.labels["op"] == op]
    assert buckets, f"no {fam} buckets for {op}"
    buckets.sort()
    assert buckets[-1][0] == float("inf"), buckets
    values = [v for _, v in buckets]
    assert values == sorted(values), f"{fam} {op}: buckets not cumulative: {buckets}"
    count = sample(fams, fam, fam + "_count", op=op)
    assert count == values[-1], (count, values[-1])
    total = sample(fams, fam, fam + "_sum", op=op)
    assert total is not None and total >= 0
    return count


@test
def metrics_need_an_admin_signature(s):
    # Not served: /metrics is an S3 path (a bucket "metrics"), and an
    # anonymous request there gets the S3 answer (NoSuchBucket, or
    # AccessDenied once such a bucket exists), never the metrics.
    st, ctype, body = get(s.endpoint + "/metrics")
    assert st in (403, 404) and "<Error><Code>" in body, (st, body[:300])
    assert "strata_http_requests_total" not in body
    st, ctype, body = get(s.endpoint + "/strata/admin/v1/metrics", U2)
    assert st == 403 and '"AccessDenied"' in body, (st, body)
    fams, _ = scrape(s)
    assert fams["strata_http_requests"].type == "counter"  # the parser drops _total


@test
def histograms_count_each_operation(s):
    c = s.client()
    b = s.bucket_name("metrics")
    before, _ = scrape(s)
    get0 = (sample(before, "strata_s3_request_duration_seconds",
                   "strata_s3_request_duration_seconds_count", op="GetObject") or 0)
    c.create_bucket(Bucket=b)
    body = os.urandom(300 * 1024)
    for i in range(5):
        c.put_object(Bucket=b, Key=f"k{i}", Body=body)
    for i in range(7):
        assert c.get_object(Bucket=b, Key=f"k{i % 5}")["Body"].read() == body
    try:
        c.get_object(Bucket=b, Key="missing")
    except c.exceptions.NoSuchKey:
        pass
    fams, text = scrape(s)
    for fam in ("strata_s3_request_duration_seconds", "strata_s3_ttfb_seconds"):
        assert fams[fam].type == "histogram", fams[fam].type
        n_put = check_histogram(fams, fam, "PutObject")
        n_get = check_histogram(fams, fam, "GetObject")
        check_histogram(fams, fam, "CreateBucket")
        assert n_put >= 5, n_put
        # 7 GETs and one NoSuchKey since the first scrape
        if fam == "strata_s3_request_duration_seconds":
            assert n_get - get0 == 8, (n_get, get0)
    # TTFB never exceeds total time, summed over the same requests.
    t_sum = sample(fams, "strata_s3_request_duration_seconds",
                   "strata_s3_request_duration_seconds_sum", op="GetObject")
    f_sum = sample(fams, "strata_s3_ttfb_seconds", "strata_s3_ttfb_seconds_sum", op="GetObject")
    assert 0 < f_sum <= t_sum, (f_sum, t_sum)
    sent = sample(fams, "strata_http_sent_bytes", "strata_http_sent_bytes_total")
    recv = sample(fams, "strata_http_received_bytes", "strata_http_received_bytes_total")
    assert sent >= 7 * len(body) and recv >= 5 * len(body), (sent, recv)
    assert sample(fams, "strata_s3_errors", "strata_s3_errors_total", code="NoSuchKey") >= 1
    assert sample(fams, "strata_http_inflight", "strata_http_inflight") >= 1  # the scrape itself


@test
def drive_set_and_heal_metrics(s):
    fams, _ = scrape(s)
    for fam in ("strata_drive_online", "strata_drive_fresh", "strata_drive_total_bytes",
                "strata_drive_free_bytes"):
        assert fams[fam].type == "gauge", fam
        got = {(x.labels["set"], x.labels["drive"]): (x.labels["path"], x.value)
               for x in fams[fam].samples}
        assert sorted(got) == [("0", str(d)) for d in range(4)], got
        for (st, d), (path, v) in got.items():
            assert path == os.path.join(s.tmp, f"d{int(d) + 1}"), path
            if fam == "strata_drive_online":
                assert v == 1
            elif fam == "strata_drive_fresh":
                assert v == 0
            else:
                assert v > 0
    for fam in ("strata_set_bitrot_detected", "strata_set_shards_missing",
                "strata_set_stripes_reconstructed", "strata_set_shards_healed"):
        assert fams[fam].type == "counter", fam
        assert [(x.labels, x.value) for x in fams[fam].samples if x.name.endswith("_total")] == \
            [({"set": "0"}, 0.0)], fams[fam].samples
    assert sample(fams, "strata_heal_running", "strata_heal_running") == 0
    runs0 = sample(fams, "strata_heal_runs", "strata_heal_runs_total")
    st, _, body = get(s.endpoint + "/strata/admin/v1/heal/start", (s.ak, s.sk), method="POST")
    assert st == 202, body
    deadline = time.monotonic() + 60
    while True:
        fams, _ = scrape(s)
        if sample(fams, "strata_heal_runs", "strata_heal_runs_total") == runs0 + 1:
            break
        assert time.monotonic() < deadline, "heal did not finish"
        time.sleep(0.1)
    assert sample(fams, "strata_heal_running", "strata_heal_running") == 0
    assert sample(fams, "strata_heal_last_success", "strata_heal_last_success") == 1
    assert sample(fams, "strata_heal_last_objects_scanned",
                  "strata_heal_last_objects_scanned") >= 5  # the histogram test's objects


@test
def metrics_public_serves_anonymous_scrapes(s):
    s2 = Strata(args=["--metrics-public"])
    try:
        s2.client().list_buckets()
        fams, _ = scrape(s2, public=True)
        assert check_histogram(fams, "strata_s3_request_duration_seconds", "ListBuckets") == 1
        assert sample(fams, "strata_http_requests", "strata_http_requests_total",
                      method="GET", status="200") >= 1
        assert sample(fams, "strata_drive_online", "strata_drive_online", drive="3") == 1
    finally:
        assert s2.stop()


if __name__ == "__main__":
    run(Strata(args=["--users", _users]))
