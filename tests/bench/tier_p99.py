#!/usr/bin/python3
"""tier_p99.py - foreground impact of tier transitions (a program, never a
timed test): the dataloader benchmark's GET 100 KiB p99 with and without
the scanner moving data between tiers.

Starts strata (Release build) with two tiers under BENCH_DIR (hot 2+2 on 4
drives, warm 4+2 on 6), --lc-day-seconds 1, PUTs N100K objects of 100 KiB
into bucket "dataloader" and SIZE_GB GiB of OBJ_MB MiB objects
into bucket "moving", then runs wrk cells of DURATION seconds (CONNS
connections, presigned GETs over the "dataloader" keys, as tests/bench/s3.sh's
get100k cell):
- idle: nothing to move;
- during: a Transition rule (Days 0 -> STANDARD_IA) on "moving"; the scanner
  (its due-time index) copies every object to warm at --ilm-move-mbps; cells
  back to back until strata_ilm_bytes_moved_total reached SIZE_GB;
- after: idle again.
Reports p99 idle / during (the worst cell) / after, their ratio, and the
move rate (the bytes of the objects moved after the first one(s), over the
time from when the first object showed STANDARD_IA in the listing to when
the last one did; polled every 0.2 s).  Every moved object's
class is checked, one is read back (MD5).

Environment: SIZE_GB (default 10), OBJ_MB (64), N100K
(1000), CONNS (16), DURATION (10), MOVE_MBPS (default: the daemon's
default), STRATA_ARGS (more daemon flags), PUT_THREADS (4), STRATA_BIN
(default: build build-bench/ as Release), BENCH_DIR (a new directory
under /tmp, removed at the end unless KEEP=1).
Prints the figures and one JSON line; exits 1 when a request failed or the
data did not all move.
"""

import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (cells_ok, free_port, get_paths, metrics, stop,  # noqa: E402
                      wait_ready, wrk_cell)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZE = int(float(os.environ.get("SIZE_GB", "10")) * (1 << 30))
OBJ = int(os.environ.get("OBJ_MB", "64")) << 20
N100K = int(os.environ.get("N100K", "1000"))
CONNS = int(os.environ.get("CONNS", "16"))
DURATION = int(os.environ.get("DURATION", "10"))
THREADS = int(os.environ.get("PUT_THREADS", "4"))
AK, SK = "tierbench", "tierbench-secret-key-0123"


def build():
    b = os.path.join(ROOT, "build-bench")
    subprocess.run(["cmake", "-S", ROOT, "-B", b, "-DCMAKE_BUILD_TYPE=Release"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", b, "-j2", "--target", "strata"], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(b, "strata")


def main():
    strata_bin = os.environ.get("STRATA_BIN") or build()
    work = os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="strata-tier-p99.")
    hot = [os.path.join(work, f"h{i}") for i in range(1, 5)]
    warm = [os.path.join(work, f"w{i}") for i in range(1, 7)]
    for d in hot:
        os.makedirs(d, exist_ok=True)
    port = free_port()
    ep = f"http://127.0.0.1:{port}"
    args = [strata_bin, "server", "--address", f"127.0.0.1:{port}", "--lc-day-seconds", "1",
            "--metrics-public", "--tier", "warm:4+2:" + ",".join(warm)]
    if os.environ.get("MOVE_MBPS"):
        args += ["--ilm-move-mbps", os.environ["MOVE_MBPS"]]
    args += os.environ.get("STRATA_ARGS", "").split() + hot
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "STRATA_ROOT_USER": AK,
           "STRATA_ROOT_PASSWORD": SK}
    logf = open(os.path.join(work, "strata.log"), "wb")  # noqa: SIM115 (the daemon's)
    proc = subprocess.Popen(args, env=env, stdout=logf, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    ok = True
    try:
        if not wait_ready(port, proc):
            raise SystemExit("strata did not start")
        c = boto3.session.Session().client(
            "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id=AK,
            aws_secret_access_key=SK,
            config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                          max_pool_connections=THREADS * 2))
        c.create_bucket(Bucket="dataloader")
        c.create_bucket(Bucket="moving")
        small = os.urandom(100 * 1024)
        nobj = max(1, SIZE // OBJ)
        data = os.urandom(OBJ)
        want = hashlib.md5(data).hexdigest()
        print(f"==> PUT {N100K} x 100 KiB + {nobj} x {OBJ >> 20} MiB "
              f"({nobj * OBJ / (1 << 30):.2f} GiB)", flush=True)
        with concurrent.futures.ThreadPoolExecutor(THREADS) as ex:
            list(ex.map(lambda i: c.put_object(Bucket="dataloader", Key=f"{i:08d}", Body=small),
                        range(N100K)))
            list(ex.map(lambda i: c.put_object(Bucket="moving", Key=f"m{i:05d}", Body=data),
                        range(nobj)))
        paths = os.path.join(work, "dl.paths")
        get_paths(c, ep, "dataloader", [f"{i:08d}" for i in range(N100K)], paths)

        def cell():
            return wrk_cell(ep, work, paths, CONNS, DURATION)

        cell()  # warm-up: page cache and block cache
        idle = cell()
        print(f"  idle  : GET 100 KiB p99 {idle['p99_us'] / 1000:.1f} ms, "
              f"{idle['requests'] / DURATION:.0f} req/s", flush=True)
        total = nobj * OBJ
        base = metrics(ep)["strata_ilm_bytes_moved_total"]
        c.put_bucket_lifecycle_configuration(Bucket="moving", LifecycleConfiguration={
            "Rules": [{"ID": "m", "Filter": {}, "Status": "Enabled",
                       "Transitions": [{"Days": 0, "StorageClass": "STANDARD_IA"}]}]})
        # The move's span: when the first object shows the new class in the
        # listing and when the last one does (polled every 0.2 s; the
        # scanner's counters are published in batches, too coarse here).
        span = {"first": None, "last": None, "stop": False}

        def watch():
            while not span["stop"] and span["last"] is None:
                try:
                    objs = c.list_objects_v2(Bucket="moving").get("Contents", [])
                except Exception:
                    objs = []
                n = sum(1 for o in objs if o.get("StorageClass") == "STANDARD_IA")
                now = time.monotonic()
                if n and span["first"] is None:
                    span["first"] = (now, n)
                if n == nobj:
                    span["last"] = now
                time.sleep(0.2)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        cells = []
        deadline = time.monotonic() + 3600 + total / (1 << 20)
        while time.monotonic() < deadline:
            r = cell()
            m = metrics(ep)["strata_ilm_bytes_moved_total"] - base
            cells.append(r)
            print(f"  during: GET 100 KiB p99 {r['p99_us'] / 1000:.1f} ms, "
                  f"{r['requests'] / DURATION:.0f} req/s; moved {m / (1 << 20):.0f} MiB",
                  flush=True)
            if span["last"] is not None:
                break
        span["stop"] = True
        watcher.join()
        moved = metrics(ep)["strata_ilm_bytes_moved_total"] - base
        after = cell()
        print(f"  after : GET 100 KiB p99 {after['p99_us'] / 1000:.1f} ms", flush=True)
        classes = [c.head_object(Bucket="moving", Key=f"m{i:05d}").get("StorageClass", "STANDARD")
                   for i in range(nobj)]
        got = hashlib.md5(c.get_object(Bucket="moving", Key="m00000")["Body"].read()).hexdigest()
        during = max((x["p99_us"] for x in cells), default=0)
        rate = None
        if span["first"] and span["last"] and span["last"] > span["first"][0]:
            # From the first object(s) done to the last: the others' bytes.
            rate = (nobj - span["first"][1]) * OBJ / (span["last"] - span["first"][0])
        res = {"size_bytes": total, "objects": nobj, "obj_mb": OBJ >> 20,
               "p99_idle_ms": idle["p99_us"] / 1000, "p99_during_max_ms": during / 1000,
               "p99_after_ms": after["p99_us"] / 1000,
               "p99_ratio": round(during / (idle["p99_us"] or 1), 2),
               "req_per_s_idle": round(idle["requests"] / DURATION),
               "req_per_s_during_min": round(min((x["requests"] for x in cells), default=0)
                                             / DURATION),
               "moved_bytes": int(moved),
               "move_mib_per_s": round(rate / (1 << 20), 1) if rate else None}
        print(json.dumps(res))
        if moved < total or any(x != "STANDARD_IA" for x in classes):
            print(f"FAIL: not everything moved ({moved} of {total} bytes)")
            ok = False
        if got != want:
            print("FAIL: a moved object reads back different bytes")
            ok = False
        ok = cells_ok(cells + [idle, after]) and ok
    finally:
        stop(proc, work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
