#!/usr/bin/python3
"""cpu_per_request.py - the daemon's cost per request for a fixed workload
(a program, never a test): what to compare before and after a change on a
machine too busy for wall-clock figures.

Starts strata (--bin) on 127.0.0.1 with four drive directories, uploads
the object the workload reads, warms up, then sends N requests one after
another on one keep-alive connection and reports, as one JSON line:
  cpu       the daemon's user and system CPU (/proc/PID/stat) per request,
            in µs; the median of --repeat runs is what to quote
  callgrind the daemon runs under valgrind --tool=callgrind; the counters
            are zeroed after the warm-up and dumped after the N requests
            (callgrind_control), so instructions per request are
            deterministic and startup is not counted; --out keeps the
            profile for callgrind_annotate --inclusive=yes
Workloads: get4k (presigned GET, as tests/bench/s3.sh's get cells), get4k2u
(presigned GETs of two users in turn: what the SigV4 signing-key cache is
for), sget4k (GET signed in the Authorization header), get100k (presigned:
one object of the size of s3.sh's dataloader row), get1m and get64m (presigned),
put64m (PUT with a signed payload, as s3.sh's put64m cell), put100k (the
same over 200 keys in turn: inline objects, overwrites after the first
pass, as s3.sh's put100k cell does after its first 1,000).

  tests/bench/cpu_per_request.py --bin build/strata --mode cpu --workload get4k -n 20000 --repeat 5
  tests/bench/cpu_per_request.py --bin build/strata --mode callgrind --workload get4k -n 2000
  tests/bench/cpu_per_request.py --bin build/strata --workload put64m -n 20 --perf /tmp/p.data
"""

import argparse
import glob
import hashlib
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import boto3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, wait_ready  # noqa: E402

AK, SK, REGION = "CPUBENCH00000001", "cpubench-secret-cpubench-secret-0123456", "us-east-1"
AK2, SK2 = "CPUBENCH00000002", "cpubench-second-user-secret-0123456789"
SIZES = {"get4k": 4096, "get4k2u": 4096, "sget4k": 4096, "get100k": 100 << 10, "get1m": 1 << 20,
         "get64m": 64 << 20, "put64m": 64 << 20, "put100k": 100 << 10}
WARM = {"get4k": 300, "get4k2u": 300, "sget4k": 300, "get100k": 200, "get1m": 50, "get64m": 3, "put64m": 1, "put100k": 200}


def signed_headers(method, url, body, payload_hash):
    req = AWSRequest(method=method, url=url, data=body,
                     headers={"x-amz-content-sha256": payload_hash})
    S3SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(req)
    return dict(req.headers.items())


def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]), int(f[12])  # utime, stime


def ctx_switches(pid, kinds=("voluntary", "nonvoluntary")):
    """Context switches of each thread (voluntary, the thread slept, and
    involuntary, it was preempted), by name."""
    by = {}
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            st = open(t + "/status").read().splitlines()
        except OSError:
            continue  # the thread ended
        f = dict(x.split(":", 1) for x in st if ":" in x)
        name = f["Name"].strip()
        by[name] = by.get(name, 0) + sum(int(f[k + "_ctxt_switches"]) for k in kinds)
    return by


def one_run(a, tmp):
    drives = [os.path.join(tmp, f"d{i}") for i in range(1, 5)]
    for d in drives:
        os.makedirs(d, exist_ok=True)
    port = free_port()
    ep = f"http://127.0.0.1:{port}"
    users = os.path.join(tmp, "users")
    with open(users, "w") as f:
        f.write(f"{AK2} {SK2}\n")
    cmd = [a.bin, "server", "--address", f"127.0.0.1:{port}", "--users", users] + a.server_arg + drives
    out_file = os.path.join(tmp, "callgrind.out")
    if a.mode == "callgrind":
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}"] + cmd
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "STRATA_ROOT_USER": AK, "STRATA_ROOT_PASSWORD": SK}
    log = open(os.path.join(tmp, "strata.log"), "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        if not wait_ready(port, proc, timeout=180):
            sys.exit("strata did not start: " + open(log.name).read()[-2000:])
        s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=AK, aws_secret_access_key=SK,
                          region_name=REGION,
                          config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
        s3.create_bucket(Bucket="bench")
        size = SIZES[a.workload]
        body = os.urandom(size)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

        def send(method, path, data=None, headers=None):
            conn.request(method, path, body=data, headers=headers or {})
            r = conn.getresponse()
            got = r.read()
            if r.status != 200:
                sys.exit(f"{method} {path}: {r.status} {got[:300]!r}")
            return got

        if a.workload.startswith("put"):
            ph = hashlib.sha256(body).hexdigest()
            reqs = []
            for i in range(a.n + WARM[a.workload]):
                path = f"/bench/put{i % 200 if a.workload == 'put100k' else i}"
                reqs.append((path, signed_headers("PUT", ep + path, body, ph)))

            def one(i):
                send("PUT", reqs[i][0], body, reqs[i][1])
        else:
            s3.put_object(Bucket="bench", Key="obj", Body=body)
            if a.workload == "get4k2u":  # the second user may read it too
                s3.put_bucket_policy(Bucket="bench", Policy=json.dumps({
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Principal": {"AWS": [AK2]},
                                   "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bench/*"}]}))
            paths = []
            for ak, sk in ((AK, SK), (AK2, SK2))[: 2 if a.workload == "get4k2u" else 1]:
                c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                                 region_name=REGION,
                                 config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
                url = c.generate_presigned_url("get_object", Params={"Bucket": "bench", "Key": "obj"},
                                               ExpiresIn=86400)
                paths.append(url[len(ep):])
            empty = hashlib.sha256(b"").hexdigest()

            def one(i):
                hdrs = signed_headers("GET", ep + "/bench/obj", b"", empty) if a.workload == "sget4k" else None
                path = "/bench/obj" if hdrs else paths[i % len(paths)]
                if send("GET", path, None, hdrs) != body:
                    sys.exit("GET returned other bytes")
        warm = WARM[a.workload]
        for i in range(warm):
            one(a.n + i if a.workload.startswith("put") else i)
        if a.mode == "callgrind":
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
        perf = None
        if a.perf:  # sample the daemon over the N requests only
            ev = ["-e", a.perf_event] if a.perf_event else ["-F", "999"]
            perf = subprocess.Popen(["perf", "record", "-g"] + ev + ["-o", a.perf, "-p", str(proc.pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        u0, s0 = cpu_ticks(proc.pid)
        c0, v0 = ctx_switches(proc.pid), ctx_switches(proc.pid, ("voluntary",))
        t0 = time.monotonic()
        for i in range(a.n):
            one(i)
        wall = time.monotonic() - t0
        u1, s1 = cpu_ticks(proc.pid)
        c1, v1 = ctx_switches(proc.pid), ctx_switches(proc.pid, ("voluntary",))
        if perf:
            perf.send_signal(2)
            perf.wait(timeout=60)
        if a.mode == "callgrind":
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
        tck = os.sysconf("SC_CLK_TCK")
        res = {"workload": a.workload, "n": a.n, "wall_s": round(wall, 2),
               "user_us": round((u1 - u0) / tck * 1e6 / a.n, 1),
               "sys_us": round((s1 - s0) / tck * 1e6 / a.n, 1)}
        res["cpu_us"] = round(res["user_us"] + res["sys_us"], 1)
        # Threads of one name (the storage workers) summed; a thread that
        # ended in between is left out of both ends.
        cs = {k: round((v - c0.get(k, 0)) / a.n, 1) for k, v in c1.items() if v > c0.get(k, 0)}
        res["ctx_switches"] = round(sum(cs.values()), 1)
        res["ctx_voluntary"] = round(sum(v - v0.get(k, 0) for k, v in v1.items()) / a.n, 1)
        res["ctx_by_thread"] = cs
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    if a.mode == "callgrind":
        # The dump after the requests is the file with "Trigger: dump"; the
        # one written at exit holds only what followed it.
        for f in sorted(glob.glob(out_file + "*")):
            with open(f) as fh:
                lines = fh.read().splitlines()
            if "desc: Trigger: dump" not in lines[:40]:
                continue
            total = next(int(x.split()[1]) for x in lines if x.startswith("summary:"))
            res["instructions_per_req"] = total // a.n
            if a.out:
                shutil.copy(f, a.out)
        del res["user_us"], res["sys_us"], res["cpu_us"]  # valgrind's, not the daemon's
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--mode", choices=["cpu", "callgrind"], default="cpu")
    ap.add_argument("--workload", choices=sorted(SIZES), default="get4k")
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", help="callgrind: copy the profile of the N requests here")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="an extra server flag (repeat for more), e.g. --server-arg=--data-cache-on-write")
    ap.add_argument("--perf", help="cpu: perf record -g the daemon over the N requests into this file")
    ap.add_argument("--perf-event", help="with --perf: record this event instead of CPU samples "
                    "(sched:sched_switch: where the daemon's threads sleep)")
    a = ap.parse_args()
    runs = []
    for _ in range(a.repeat):
        tmp = tempfile.mkdtemp(prefix="strata-cpu-per-req.")
        try:
            runs.append(one_run(a, tmp))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(json.dumps(runs[-1]), file=sys.stderr)
    keys = [k for k in runs[0] if k.endswith("_us") or k in ("instructions_per_req", "ctx_switches")]
    summary = {"workload": a.workload, "mode": a.mode, "n": a.n, "runs": len(runs)}
    summary.update({f"median_{k}": statistics.median(r[k] for r in runs) for k in keys})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
