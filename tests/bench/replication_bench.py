#!/usr/bin/python3
"""replication_bench.py - replication lag between two strata daemons on
loopback (a program, never a timed test).

The source replicates bucket "src" to bucket "dst" of the target.  A boto3
client PUTs objects of SIZE bytes at RATE per second for SECONDS seconds
(paced; the achieved rate is printed); a second process follows the target
and notes when each version arrives there (replication is in order per
target, so it waits for the keys one after the other, HEADing every
millisecond).  The lag of a version is the time from the source's answer
to the PUT until the target has it.  Prints p50/p95/p99/max of the lag,
the source's strata_replication_lag_seconds and one JSON line.

Environment: STRATA_BIN (default build-dev/strata), RATE (100), SIZE
(102400), DURATION (30 s), KEEP=1 keeps the work directory.
"""
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, metrics, stop, wait_ready  # noqa: E402

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

RATE = float(os.environ.get("RATE", "100"))
SIZE = int(os.environ.get("SIZE", str(100 * 1024)))
DURATION = float(os.environ.get("DURATION", "30"))
AK, SK = "benchadmin", "benchsecret123"


def daemon(binary, work, name, args):
    drives = [os.path.join(work, name, f"d{i}") for i in range(4)]
    for d in drives:
        os.makedirs(d)
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "STRATA_ROOT_USER": AK,
           "STRATA_ROOT_PASSWORD": SK}
    log = open(os.path.join(work, name + ".log"), "wb")
    proc = subprocess.Popen([binary, "server", "--address", f"127.0.0.1:{port}",
                             "--metrics-public", "--log-level", "warn", *args, *drives],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    if not wait_ready(port, proc):
        raise SystemExit(f"{name} did not start: see {log.name}")
    return proc, f"http://127.0.0.1:{port}"


def client(ep):
    return boto3.session.Session().client(
        "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id=AK,
        aws_secret_access_key=SK,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      max_pool_connections=4))


def follow(ep, n, q, out):
    """In a process of its own: when each version reached the target
    (CLOCK_MONOTONIC, shared with the parent)."""
    f = client(ep)
    seen = [None] * n
    deadline = None
    for _ in range(n):
        i, vid = q.get()
        while True:
            try:
                f.head_object(Bucket="dst", Key=f"k{i:06d}", VersionId=vid)
                seen[i] = time.monotonic()
                break
            except Exception:
                if deadline and time.monotonic() > deadline:
                    break
                time.sleep(0.001)
        deadline = None
    out.put(seen)


def pct(v, p):
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    binary = os.environ.get("STRATA_BIN", "build-dev/strata")
    work = tempfile.mkdtemp(prefix="replication_bench.")
    dst = src = None
    try:
        dst, dst_ep = daemon(binary, work, "target", [])
        creds = os.path.join(work, "creds.json")
        with open(os.open(creds, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            json.dump({"site2": {"access_key": AK, "secret_key": SK}}, f)
        src, src_ep = daemon(binary, work, "source", ["--replication-target",
                                                      f"site2:{dst_ep}", "--tier-credentials",
                                                      creds])
        s, d = client(src_ep), client(dst_ep)
        for c, b in ((s, "src"), (d, "dst")):
            c.create_bucket(Bucket=b)
            c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        s.put_bucket_replication(Bucket="src", ReplicationConfiguration={
            "Role": "arn:aws:iam::1:role/r", "Rules": [{
                "ID": "all", "Priority": 1, "Status": "Enabled", "Filter": {},
                "DeleteMarkerReplication": {"Status": "Disabled"},
                "Destination": {"Bucket": "arn:aws:s3:::dst"}}]})
        body = os.urandom(SIZE)
        n = int(RATE * DURATION)
        q, out = multiprocessing.Queue(), multiprocessing.Queue()
        fp = multiprocessing.Process(target=follow, args=(dst_ep, n, q, out), daemon=True)
        fp.start()
        acked = [None] * n
        t0 = time.monotonic()
        for i in range(n):
            delay = t0 + i / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            vid = s.put_object(Bucket="src", Key=f"k{i:06d}", Body=body)["VersionId"]
            acked[i] = time.monotonic()
            q.put((i, vid))
        put_s = time.monotonic() - t0
        seen = out.get(timeout=180)
        fp.join(10)
        lags = sorted((seen[i] - acked[i]) * 1000 for i in range(n) if seen[i])
        missing = sum(1 for x in seen if x is None)
        m = metrics(src_ep, ("strata_replication_",))
        res = {"puts": n, "size": SIZE, "put_rate": round(n / put_s, 1),
               "lag_ms_p50": round(pct(lags, 50), 1), "lag_ms_p95": round(pct(lags, 95), 1),
               "lag_ms_p99": round(pct(lags, 99), 1), "lag_ms_max": round(lags[-1], 1),
               "lag_ms_mean": round(statistics.mean(lags), 1), "not_replicated": missing,
               "bytes_replicated": int(m.get("strata_replication_bytes_total", 0)),
               "failed": int(m.get("strata_replication_failed_total", 0))}
        print(f"{n} PUTs of {SIZE} B at {res['put_rate']}/s (asked {RATE}/s)")
        print(f"replication lag ms: p50 {res['lag_ms_p50']}  p95 {res['lag_ms_p95']}  "
              f"p99 {res['lag_ms_p99']}  max {res['lag_ms_max']}  mean {res['lag_ms_mean']}")
        print(f"not replicated: {missing}; bytes replicated {res['bytes_replicated']}; "
              f"failed {res['failed']}")
        print(json.dumps(res))
    finally:
        stop(src, work)
        stop(dst, work)


if __name__ == "__main__":
    main()
