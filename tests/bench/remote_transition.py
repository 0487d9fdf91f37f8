#!/usr/bin/python3
"""remote_transition.py - lifecycle transition throughput to a remote S3 tier
(a second strata on loopback) against a move to a local tier (a program,
never a timed test).

Starts a remote strata (4 drives, 2+2) and a source strata (hot 2+2 on 4
drives, a local warm tier 4+2 on 6, and --tier cold:s3:URL of a bucket of
the remote; --lc-day-seconds 1, a pass every second, --ilm-move-mbps 0).
PUTs COUNT objects of SIZE_MB MiB into two buckets, moves one bucket to the
local tier (STANDARD_IA) and then the other to the remote one (GLACIER),
each timed by strata_ilm_bytes_moved_total (first byte moved to last).
Every moved object is checked (class) and one read back (MD5).
Environment: STRATA_BIN (default build-rel/strata), COUNT (16), SIZE_MB
(32), BENCH_DIR (a new dir under /tmp).
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

for k in list(os.environ):
    if k.startswith("AWS_"):
        del os.environ[k]
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, metrics, timed_move, wait_ready  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("STRATA_BIN", os.path.join(ROOT, "build-rel", "strata"))
COUNT = int(os.environ.get("COUNT", "16"))
SIZE = int(os.environ.get("SIZE_MB", "32")) << 20
DIR = os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="strata-remote-bench.")
AK, SK = "benchak", "benchsecret-remote"


def drives(prefix, n):
    out = [os.path.join(DIR, f"{prefix}{i}") for i in range(1, n + 1)]
    for d in out:
        os.makedirs(d, exist_ok=True)
    return out


def start(name, args):
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "STRATA_ROOT_USER": AK, "STRATA_ROOT_PASSWORD": SK}
    log = open(os.path.join(DIR, f"{name}.log"), "wb")  # noqa: SIM115 (the daemon's)
    proc = subprocess.Popen([BIN, "server", "--address", f"127.0.0.1:{port}"] + args, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    if not wait_ready(port, proc):
        sys.exit(f"{name} did not start: see {DIR}/{name}.log")
    return proc, f"http://127.0.0.1:{port}"


def client(ep):
    return boto3.session.Session().client(
        "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id=AK,
        aws_secret_access_key=SK,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def main():
    if not os.access(BIN, os.X_OK):
        sys.exit(f"remote_transition.py: build strata first ({BIN})")
    procs = []
    try:
        rproc, rep = start("remote", drives("r", 4))
        procs.append(rproc)
        client(rep).create_bucket(Bucket="cold")
        creds = os.path.join(DIR, "tiers.json")
        with open(os.open(creds, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            json.dump({"cold": {"access_key": AK, "secret_key": SK}}, f)
        sproc, ep = start("source", [
            "--lc-day-seconds", "1", "--ilm-interval-seconds", "1", "--ilm-rate", "0",
            "--metrics-public", "--ilm-move-mbps", "0", "--heal-interval-seconds", "0",
            "--tier", "warm:4+2:" + ",".join(drives("w", 6)),
            "--tier", f"cold:s3:{rep}/cold/data", "--tier-credentials", creds,
            "--storage-class", "GLACIER:cold"] + drives("h", 4))
        procs.append(sproc)
        c = client(ep)
        data = os.urandom(SIZE)
        want = hashlib.md5(data).hexdigest()
        total = COUNT * SIZE
        for b in ("tolocal", "toremote"):
            c.create_bucket(Bucket=b)
            for i in range(COUNT):
                c.put_object(Bucket=b, Key=f"o{i:04d}", Body=data)
        print(f"{COUNT} objects of {SIZE >> 20} MiB ({total / 1e6:.0f} MB) per move, loopback")
        base = metrics(ep, ("strata_ilm_bytes_moved_total",))["strata_ilm_bytes_moved_total"]
        for b, cls, what in (("tolocal", "STANDARD_IA", "hot -> local warm 4+2"),
                             ("toremote", "GLACIER", "hot -> remote strata (S3)")):
            c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={
                "Rules": [{"ID": "m", "Filter": {}, "Status": "Enabled",
                           "Transitions": [{"Days": 0, "StorageClass": cls}]}]})
            secs = timed_move(ep, base, base + total)
            base += total
            print(f"  {what:26s}: {secs:6.2f} s  {total / secs / 1e6:7.1f} MB/s")
            time.sleep(1.5)
            for i in range(COUNT):
                assert c.head_object(Bucket=b, Key=f"o{i:04d}").get("StorageClass") == cls
            got = hashlib.md5(c.get_object(Bucket=b, Key="o0000")["Body"].read()).hexdigest()
            assert got == want, "bytes changed"
            c.delete_bucket_lifecycle(Bucket=b)
        t = time.monotonic()
        for i in range(COUNT):
            c.get_object(Bucket="toremote", Key=f"o{i:04d}")["Body"].read()
        secs = time.monotonic() - t
        print(f"  GET from the remote tier  : {secs:6.2f} s  {total / secs / 1e6:7.1f} MB/s "
              f"(one client, sequential)")
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            p.wait(60)
        if not os.environ.get("BENCH_DIR"):
            shutil.rmtree(DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
