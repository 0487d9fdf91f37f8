#!/usr/bin/python3
"""ilm_lag.py - expiry lag benchmark of the lifecycle scanner (a program,
never a timed test).

Fills four drives with bench_ilm_load (N objects in bucket "lag", the last
DUE_FRACTION of them under "z-due/" with a 1-day expiration rule; N100K
objects of 100 KiB in bucket "dl"), then starts strata (Release build,
--lc-day-seconds DAY_S, the default scanner rate and interval: its start-up
full pass walks the bucket meanwhile) and measures:

- lag: from the due time of the last due object (its mtime + 1 lifecycle
  day, rounded up as x-amz-expiration shows it) until the scanner's
  expired counter reaches the number of due objects (ilm status, polled
  every second);
- the dataloader GET p99 (wrk, 100 KiB presigned GETs over the "dl" keys,
  CONNS connections, as tests/bench/s3.sh's get100k cell) in DURATION-second
  cells: IDLE_CELLS before any object is due, back to back while objects
  expire, and IDLE_CELLS after the last one expired (idle again). The
  figure judged is pooled: the p99 of every request of the "during" cells
  against the p99 of every request of the idle cells (before and after),
  from wrk's latency histograms, as one long run of each would report it;
  per-cell p99s are printed to show when a spike happened.

Each "during" line also shows what ran in that cell, to tell what a p99
spike goes with: versions scanned (the full pass and the drains' key
walks), objects expired, keys healed, and the worst drive's RocksDB gauges
and the scanner's gauges sampled every half second, their peak in the cell
(write stall: delayed write rate / stopped; compactions running; pending
compaction bytes; a pass running).

Environment: N (default 1000000), DUE_FRACTION (0.1), DAY_S (default: long
enough for the due objects to become due only after the daemon is up),
STRATA_ARGS (extra daemon flags, e.g. "--ilm-due-rate 0" for unpaced drains),
LOAD_THREADS (32), N100K (1000), CONNS (16), DURATION (10), IDLE_CELLS (3),
STRATA_BIN /
LOAD_BIN (default: build build-bench/ as Release), BENCH_DIR (default a new
directory under /tmp, removed at the end unless KEEP=1).
Prints the figures and one JSON line; exits 1 when a request failed or the
due objects did not all expire.
"""

import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (cells_ok, free_port, get_paths, metrics, pooled_p99,  # noqa: E402
                      stop, wait_ready, wrk_cell)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
N = int(os.environ.get("N", "1000000"))
FRAC = float(os.environ.get("DUE_FRACTION", "0.1"))
THREADS = int(os.environ.get("LOAD_THREADS", "32"))
N100K = int(os.environ.get("N100K", "1000"))
CONNS = int(os.environ.get("CONNS", "16"))
DURATION = int(os.environ.get("DURATION", "10"))
IDLE_CELLS = int(os.environ.get("IDLE_CELLS", "3"))

def build():
    b = os.path.join(ROOT, "build-bench")
    subprocess.run(["cmake", "-S", ROOT, "-B", b, "-DCMAKE_BUILD_TYPE=Release"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", b, "-j2", "--target", "strata", "bench_ilm_load"],
                   check=True, stdout=subprocess.DEVNULL)
    return os.path.join(b, "strata"), os.path.join(b, "bench_ilm_load")


def main():
    strata_bin = os.environ.get("STRATA_BIN")
    load_bin = os.environ.get("LOAD_BIN")
    if not strata_bin or not load_bin:
        strata_bin, load_bin = build()
    work = os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="strata-ilm-lag.")
    drives = [os.path.join(work, f"d{i}") for i in range(1, 5)]
    for d in drives:
        os.makedirs(d, exist_ok=True)
    proc = None
    ok = True
    try:
        print(f"==> loading {N} objects ({FRAC:.0%} due) + {N100K} x 100 KiB, {THREADS} threads")
        ak = "LAG" + secrets.token_hex(6).upper()
        sk = secrets.token_hex(20)
        out = subprocess.run([load_bin, str(N), str(FRAC), str(THREADS), str(N100K), ak] + drives,
                             check=True, capture_output=True, text=True).stdout
        load = json.loads(out)
        print("  ", out.strip())
        # Due only once the daemon is up: the first due object is due one
        # day after its mtime; keep that after now + 30 s.
        since_first = time.time() - load["due_first_ms"] / 1000
        day_s = int(os.environ.get("DAY_S")
                    or max(60, int(since_first + 30 + (IDLE_CELLS + 1) * DURATION)))
        due_last_ms = ((load["due_last_ms"] + day_s * 1000) + day_s * 1000 - 1) // (day_s * 1000) * (day_s * 1000)
        due_first_ms = ((load["due_first_ms"] + day_s * 1000) + day_s * 1000 - 1) // (day_s * 1000) * (day_s * 1000)

        port = free_port()
        env = {"PATH": "/usr/bin:/bin", "HOME": work, "STRATA_ROOT_USER": ak,
               "STRATA_ROOT_PASSWORD": sk}
        logf = open(os.path.join(work, "strata.log"), "wb")
        proc = subprocess.Popen([strata_bin, "server", "--address", f"127.0.0.1:{port}",
                                 "--lc-day-seconds", str(day_s), "--metrics-public"]
                                + os.environ.get("STRATA_ARGS", "").split() + drives,
                                env=env, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        if not wait_ready(port, proc):
            raise SystemExit("strata did not start")
        ep = f"http://127.0.0.1:{port}"
        c = boto3.session.Session().client(
            "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id=ak,
            aws_secret_access_key=sk, config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
        paths = os.path.join(work, "dl.paths")
        get_paths(c, ep, "dl", [f"{i:08d}" for i in range(N100K)], paths)

        def cell():
            return wrk_cell(ep, work, paths, CONNS, DURATION)

        def expired():
            env2 = {"PATH": "/usr/bin:/bin", "HOME": work, "STRATA_ENDPOINT": ep,
                    "STRATA_ACCESS_KEY": ak, "STRATA_SECRET_KEY": sk}
            r = subprocess.run([strata_bin, "admin", "--json", "ilm", "status"], env=env2,
                               capture_output=True, text=True, timeout=60)
            d = json.loads(r.stdout)
            return d["total"]["expired"], d

        # The expired counter, polled every second from the first due time.
        state = {"done_at": None, "stop": False}

        def poller():
            while not state["stop"] and state["done_at"] is None:
                try:
                    if expired()[0] >= load["due"]:
                        state["done_at"] = time.time()
                except Exception:
                    pass
                time.sleep(1)

        def gauges():
            """The worst drive's RocksDB gauges and the scanner's counters."""
            return metrics(ep, ("strata_rocksdb_", "strata_ilm_"))

        # The gauges sampled every half second: their peaks within a cell.
        peaks = {}
        peak_mu = threading.Lock()

        def sampler():
            while not state["stop"]:
                try:
                    g = gauges()
                except Exception:
                    g = {}
                with peak_mu:
                    for k, v in g.items():
                        if not k.endswith("_total"):
                            peaks[k] = max(peaks.get(k, 0), v)
                time.sleep(0.5)

        def take_peaks():
            with peak_mu:
                p = dict(peaks)
                peaks.clear()
            return p

        def describe(g0, g1):
            d = lambda k: int(g1.get(k, 0) - g0.get(k, 0))
            g1 = dict(g1, **take_peaks())
            return (f"scanned {d('strata_ilm_scanned_total')}, expired +{d('strata_ilm_expired_total')},"
                    f" healed +{d('strata_ilm_heal_queued_total')};"
                    f" rocksdb peaks: delayed {g1.get('strata_rocksdb_delayed_write_rate_bytes', 0):.0f} B/s,"
                    f" stopped {g1.get('strata_rocksdb_write_stopped', 0):.0f},"
                    f" compactions {g1.get('strata_rocksdb_running_compactions', 0):.0f},"
                    f" pending {g1.get('strata_rocksdb_pending_compaction_bytes', 0) / 1e6:.1f} MB,"
                    f" pass running {g1.get('strata_ilm_pass_running', 0):.0f}")

        def idle_cells(when):
            out = []
            for _ in range(IDLE_CELLS):
                r = cell()
                out.append(r)
                print(f"  {when}: GET p99 {r['p99_us'] / 1000:.1f} ms, "
                      f"{r['requests'] / DURATION:.0f} req/s", flush=True)
            return out

        cell()  # warm-up: page cache and block cache
        idle = idle_cells("idle ")
        if time.time() * 1000 >= due_first_ms:
            print("WARNING: objects became due during the idle cells (set DAY_S)")
        wait = due_first_ms / 1000 - time.time()
        if wait > 0:
            print(f"==> first due object due in {wait:.0f} s (day {day_s} s)")
            time.sleep(wait)
        cells = []
        th = threading.Thread(target=poller, daemon=True)
        th.start()
        threading.Thread(target=sampler, daemon=True).start()
        t_end = time.time() + 3600
        g0 = gauges()
        take_peaks()
        while time.time() < t_end and state["done_at"] is None:
            r = cell()
            n, st = expired()
            g1 = gauges()
            cells.append(r)
            print(f"  during: GET p99 {r['p99_us'] / 1000:.1f} ms, {r['requests'] / DURATION:.0f} req/s;"
                  f" expired {n}/{load['due']}, backlog {st['progress']['due_backlog']};"
                  f" {describe(g0, g1)}", flush=True)
            g0 = g1
        state["stop"] = True
        th.join()
        done_at = state["done_at"]
        after = idle_cells("after")
        lag = (done_at - due_last_ms / 1000) if done_at else None
        during_p99 = pooled_p99(cells)
        base = pooled_p99(idle + after) or 1
        worst = max((x["p99_us"] for x in cells), default=0)
        over = sum(1 for x in cells if x["p99_us"] > 1.5 * base)
        print(f"  pooled GET p99: idle {pooled_p99(idle) / 1000:.2f} ms before,"
              f" {pooled_p99(after) / 1000:.2f} ms after, {base / 1000:.2f} ms both;"
              f" during {during_p99 / 1000:.2f} ms ({during_p99 / base:.2f}x);"
              f" worst cell {worst / 1000:.2f} ms, {over} of {len(cells)} cells over 1.5x")
        res = {"objects": N, "due": load["due"], "load_s": load["load_s"],
               "puts_per_s": load["puts_per_s"], "day_s": day_s,
               "lag_s": round(lag, 1) if lag is not None else None,
               "expiry_span_s": round(done_at - due_first_ms / 1000, 1) if done_at else None,
               "p99_idle_ms": base / 1000, "p99_idle_before_ms": pooled_p99(idle) / 1000,
               "p99_idle_after_ms": pooled_p99(after) / 1000,
               "p99_during_ms": during_p99 / 1000, "p99_ratio": round(during_p99 / base, 2),
               "p99_worst_cell_ms": worst / 1000, "cells_over_1_5x": over, "cells": len(cells)}
        print(json.dumps(res))
        if not done_at:
            print("FAIL: the due objects did not all expire")
            ok = False
        ok = cells_ok(cells + idle + after) and ok
    finally:
        stop(proc, work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
