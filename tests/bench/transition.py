#!/usr/bin/python3
"""transition.py - how fast lifecycle transitions move data between tiers (a
program, never a timed test).

Starts a strata with three tiers under BENCH_DIR (hot 2+2 on 4 drives, warm
4+2 on 6, compliance 4+4 on 8; --lc-day-seconds 1, a pass every second),
PUTs COUNT objects of SIZE_MB MiB, then sets a rule moving them to
STANDARD_IA (warm) at once and times the moves by the scanner's
strata_ilm_bytes_moved_total (first byte moved to last), then the same from
warm to GLACIER (compliance).  With MOVE_MBPS set the daemon runs with
--ilm-move-mbps MOVE_MBPS (default 0: unbounded), to show the pacing.  Also
times one scanner pass over SCAN_OBJECTS small objects with nothing due (the
scan rate: versions examined per second, --ilm-rate 0).
Every moved object is read back and compared (MD5) once.
Environment: STRATA_BIN (default build-rel/strata), COUNT (16), SIZE_MB
(64), MOVE_MBPS (0), SCAN_OBJECTS (20000), BENCH_DIR (a new dir under /tmp).
"""

import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

os.environ.pop("AWS_CA_BUNDLE", None)
for k in list(os.environ):
    if k.startswith("AWS_"):
        del os.environ[k]
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import timed_move  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("STRATA_BIN", os.path.join(ROOT, "build-rel", "strata"))
COUNT = int(os.environ.get("COUNT", "16"))
SIZE = int(os.environ.get("SIZE_MB", "64")) << 20
MBPS = os.environ.get("MOVE_MBPS", "0")
SCAN = int(os.environ.get("SCAN_OBJECTS", "20000"))
DIR = os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="strata-transition-bench.")


def drives(prefix, n):
    return [os.path.join(DIR, f"{prefix}{i}") for i in range(1, n + 1)]


def metrics(ep):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    out = {}
    with opener.open(f"{ep}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("strata_ilm_"):
                k, v = line.split()
                out[k] = float(v)
    return out


def main():
    if not os.access(BIN, os.X_OK):
        sys.exit(f"transition.py: build strata first ({BIN})")
    for d in drives("h", 4):
        os.makedirs(d, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ep = f"http://127.0.0.1:{port}"
    env = {"PATH": "/usr/bin:/bin", "STRATA_ROOT_USER": "benchak",
           "STRATA_ROOT_PASSWORD": "benchsecret-transition"}
    log = open(os.path.join(DIR, "strata.log"), "wb")  # noqa: SIM115 (the daemon's)
    proc = subprocess.Popen(
        [BIN, "server", "--address", f"127.0.0.1:{port}", "--lc-day-seconds", "1",
         "--ilm-interval-seconds", "1", "--ilm-rate", "0", "--metrics-public",
         "--ilm-move-mbps", MBPS, "--heal-interval-seconds", "0",
         "--tier", "warm:4+2:" + ",".join(drives("w", 6)),
         "--tier", "compliance:4+4:" + ",".join(drives("c", 8))] + drives("h", 4),
        env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                    f"{ep}/health/ready", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        c = boto3.session.Session().client(
            "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id="benchak",
            aws_secret_access_key="benchsecret-transition",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        c.create_bucket(Bucket="move")
        data = os.urandom(SIZE)
        want = hashlib.md5(data).hexdigest()
        for i in range(COUNT):
            c.put_object(Bucket="move", Key=f"o{i:04d}", Body=data)
        total = COUNT * SIZE
        print(f"{COUNT} objects of {SIZE >> 20} MiB ({total / 1e6:.0f} MB), "
              f"--ilm-move-mbps {MBPS}")
        base = metrics(ep)["strata_ilm_bytes_moved_total"]
        for cls, tier in (("STANDARD_IA", "warm 4+2"), ("GLACIER", "compliance 4+4")):
            c.put_bucket_lifecycle_configuration(Bucket="move", LifecycleConfiguration={
                "Rules": [{"ID": "m", "Filter": {}, "Status": "Enabled",
                           "Transitions": [{"Days": 0, "StorageClass": cls}]}]})
            secs = timed_move(ep, base, base + total)
            base += total
            print(f"  to {tier:15s}: {secs:6.2f} s  {total / secs / 1e6:7.1f} MB/s "
                  f"({total / secs / (1 << 20):.1f} MiB/s)")
            time.sleep(1.5)
            for i in range(COUNT):
                h = c.head_object(Bucket="move", Key=f"o{i:04d}")
                assert h.get("StorageClass") == cls, h
            got = hashlib.md5(c.get_object(Bucket="move", Key="o0000")["Body"].read())
            assert got.hexdigest() == want, "bytes changed"
        c.delete_bucket_lifecycle(Bucket="move")
        # Scan rate: a pass over SCAN small objects, nothing due.
        c.create_bucket(Bucket="scan")
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda i: c.put_object(Bucket="scan", Key=f"s{i:06d}", Body=b"x"),
                        range(SCAN)))
        c.put_bucket_lifecycle_configuration(Bucket="scan", LifecycleConfiguration={
            "Rules": [{"ID": "later", "Filter": {}, "Status": "Enabled",
                       "Transitions": [{"Days": 100000, "StorageClass": "GLACIER"}]}]})
        p0 = metrics(ep)["strata_ilm_passes_total"]
        while metrics(ep)["strata_ilm_passes_total"] < p0 + 2:
            time.sleep(0.05)
        st = json.loads(subprocess.run(
            [BIN, "admin", "--endpoint", ep, "--access-key", "benchak", "--secret-key",
             "benchsecret-transition", "--json", "ilm", "status"],
            capture_output=True, check=True).stdout)["last"]
        ms = max(st["finished_ms"] - st["started_ms"], 1)
        print(f"  scan: one pass examined {st['scanned']} versions in {ms} ms "
              f"({st['scanned'] * 1000 / ms:.0f} versions/s)")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        if not os.environ.get("BENCH_DIR"):
            shutil.rmtree(DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
