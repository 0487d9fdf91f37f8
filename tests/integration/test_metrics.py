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
import subprocess
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
        assert all(x.labels["tier"] == "hot" for x in fams[fam].samples), fams[fam].samples
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
            [({"tier": "hot", "set": "0"}, 0.0)], fams[fam].samples
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


def drive_hist(fams, drive, op):
    """(cumulative buckets, _count, _sum) of strata_drive_io_seconds."""
    fam = "strata_drive_io_seconds"
    lab = {"set": "0", "drive": str(drive), "op": op}
    buckets = sorted((float(x.labels["le"]), x.value) for x in fams[fam].samples
                     if x.name == fam + "_bucket" and all(x.labels[k] == v for k, v in lab.items()))
    return buckets, sample(fams, fam, fam + "_count", **lab), sample(fams, fam, fam + "_sum", **lab)


@test
def drive_io_latency_and_store_figures(s):
    c = s.client()
    b = s.bucket_name("drive-io")
    c.create_bucket(Bucket=b)
    before, _ = scrape(s)
    body = os.urandom(4 << 20)
    c.put_object(Bucket=b, Key="big", Body=body)
    assert c.get_object(Bucket=b, Key="big")["Body"].read() == body
    fams, _ = scrape(s)
    assert fams["strata_drive_io_seconds"].type == "histogram"
    for d in range(4):
        for op in ("read", "write"):
            buckets, count, total = drive_hist(fams, d, op)
            assert len(buckets) == 15 and buckets[-1][0] == float("inf"), buckets
            values = [v for _, v in buckets]
            assert values == sorted(values) and values[-1] == count, (d, op, buckets, count)
            _, count0, _ = drive_hist(before, d, op)
            # 4 MiB over 2 data shards: several stripes per drive; a read
            # touches at least the data shards' drives.
            if op == "write":
                assert count > count0 and total > 0, (d, op, count0, count)
        assert sample(fams, "strata_drive_io_errors", "strata_drive_io_errors_total",
                      drive=str(d), op="write") == 0
    reads = sum(drive_hist(fams, d, "read")[1] - drive_hist(before, d, "read")[1] for d in range(4))
    assert reads >= 2, reads
    # RocksDB figures: one gauge sample per drive.
    for fam in ("strata_rocksdb_delayed_write_rate_bytes", "strata_rocksdb_write_stopped",
                "strata_rocksdb_running_compactions", "strata_rocksdb_compaction_pending",
                "strata_rocksdb_pending_compaction_bytes", "strata_rocksdb_running_flushes",
                "strata_rocksdb_memtable_bytes", "strata_rocksdb_live_sst_bytes",
                "strata_rocksdb_table_readers_bytes"):
        assert fams[fam].type == "gauge", fam
        got = {x.labels["drive"]: x.value for x in fams[fam].samples}
        assert sorted(got) == ["0", "1", "2", "3"], (fam, got)
        if fam == "strata_rocksdb_write_stopped":
            assert set(got.values()) == {0}, got
        if fam == "strata_rocksdb_memtable_bytes":
            assert min(got.values()) > 0, got  # the writes above are in memtables
            # --memtable-mb (default 512) over 4 stores, two memtables each.
            assert max(got.values()) <= 2 * (64 << 20) + (2 << 20), got
    # The memtable size of --memtable-mb and the shared block cache: one
    # sample each, without drive labels.
    assert [x.value for x in fams["strata_rocksdb_memtable_size_bytes"].samples] == [64 << 20]
    cache = fams["strata_rocksdb_block_cache_bytes"]
    assert cache.type == "gauge" and len(cache.samples) == 1 and cache.samples[0].labels == {}
    assert 0 <= cache.samples[0].value <= 1024 << 20, cache.samples  # --cache-mb


@test
def ranged_get_reads_only_the_stripes_of_the_range(s):
    """A Range GET at the start of an 8 MiB object (2+2, 1 MiB stripes)
    reads the two data shards' header and CRC table and the one stripe
    holding the range: 4 shard reads, no read-ahead of the next stripes
    (there were 10: stripes 1-3 were read ahead past the range)."""
    c = s.client()
    b = s.bucket_name("ranged-reads")
    c.create_bucket(Bucket=b)
    body = os.urandom(8 << 20)
    c.put_object(Bucket=b, Key="big", Body=body)

    def reads():
        fams, _ = scrape(s)
        return sum(drive_hist(fams, d, "read")[1] for d in range(4))

    for rng, lo, hi in (("bytes=0-99", 0, 99), ("bytes=1048476-1048675", 1048476, 1048675)):
        before = reads()
        got = c.get_object(Bucket=b, Key="big", Range=rng)["Body"].read()
        assert got == body[lo:hi + 1]
        # The second range spans stripes 0 and 1: two block reads each.
        want = 2 + 2 * (hi // (1 << 20) - lo // (1 << 20) + 1)
        assert reads() - before == want, (rng, reads() - before, want)


@test
def drive_io_errors_count_short_reads(s):
    """A shard file cut short: a heal reads every shard, so that drive's
    read is counted as an error (and the heal rewrites it); the others
    count none."""
    c = s.client()
    b = s.bucket_name("drive-err")
    c.create_bucket(Bucket=b)
    body = os.urandom(3 << 20)
    drive0 = os.path.join(s.tmp, "d1", "data")

    def shard_files():
        return {os.path.join(r, f) for r, _, fs in os.walk(drive0) for f in fs}
    old = shard_files()
    c.put_object(Bucket=b, Key="cut", Body=body)
    cut = [p for p in shard_files() - old if os.path.getsize(p) > (1 << 20)]
    assert len(cut) == 1, cut
    os.truncate(cut[0], 100)
    before, _ = scrape(s)
    errs = lambda fams, d: sample(fams, "strata_drive_io_errors", "strata_drive_io_errors_total",
                                  drive=str(d), op="read")
    runs0 = sample(before, "strata_heal_runs", "strata_heal_runs_total")
    st, _, text = get(s.endpoint + "/strata/admin/v1/heal/start", (s.ak, s.sk), method="POST")
    assert st == 202, text
    deadline = time.monotonic() + 60
    while True:
        fams, _ = scrape(s)
        if sample(fams, "strata_heal_runs", "strata_heal_runs_total") == runs0 + 1:
            break
        assert time.monotonic() < deadline, "heal did not finish"
        time.sleep(0.1)
    assert errs(fams, 0) >= errs(before, 0) + 1, (errs(before, 0), errs(fams, 0))
    for d in (1, 2, 3):
        assert errs(fams, d) == errs(before, d) == 0, d
    assert c.get_object(Bucket=b, Key="cut")["Body"].read() == body


TOKEN = "a" * 8 + "0123456789abcdef0123456789abcdef"


def bearer(url, token):
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    try:
        with OPENER.open(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


@test
def metrics_bearer_token(s):
    tok = os.path.join(s.tmp, "metrics.token")
    with open(tok, "w") as f:
        f.write(TOKEN + "\n")
    s2 = Strata(args=["--metrics-token-file", tok])
    try:
        st, ctype, text = bearer(s2.endpoint + "/metrics", TOKEN)
        assert st == 200 and ctype.startswith("text/plain; version=0.0.4"), (st, text[:300])
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        assert "strata_drive_io_seconds" in fams and "strata_rocksdb_write_stopped" in fams
        for wrong in (TOKEN[:-1] + "x", TOKEN + "x", "", TOKEN[:-1]):
            st, _, text = bearer(s2.endpoint + "/metrics", wrong)
            assert st == 403 and "<Code>AccessDenied</Code>" in text, (wrong, st, text)
            assert "strata_http" not in text
        st, _, text = get(s2.endpoint + "/metrics")  # no token: not public
        assert st in (403, 404) and "strata_http" not in text, (st, text[:200])
        # The token opens /metrics only.
        st, _, text = bearer(s2.endpoint + "/strata/admin/v1/info", TOKEN)
        assert st in (400, 403) and "drives" not in text, (st, text)
        # A signed admin scrape still works.
        scrape(s2)
    finally:
        assert s2.stop()
    # A token too short to be one: the daemon refuses to start.
    with open(tok, "w") as f:
        f.write("short\n")
    env = {"PATH": "/usr/bin:/bin", "STRATA_ROOT_USER": s.ak, "STRATA_ROOT_PASSWORD": s.sk}
    d = [os.path.join(s.tmp, f"tokdrive{i}") for i in range(4)]
    for x in d:
        os.makedirs(x, exist_ok=True)
    p = subprocess.run([os.environ["STRATA_BIN"], "server", "--address", "127.0.0.1:1",
                        "--metrics-token-file", tok] + d, env=env, capture_output=True,
                       text=True, timeout=30)
    assert p.returncode != 0 and "metrics-token-file" in p.stdout + p.stderr, (p.returncode, p.stderr)


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
