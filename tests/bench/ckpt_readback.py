#!/usr/bin/python3
"""ckpt_readback.py - what a checkpoint's read right back costs the daemon
(a program, never a test): figures that hold on a machine too busy for
s3.sh's MB/s.  Starts strata (--bin, with --args) on 127.0.0.1, then
--rounds times: boto3's transfer manager uploads a --size-mb object in
parts of --part-mb, 8 in flight, and downloads it right back (bytes
compared); prints per round the wall time and the daemon's CPU (user +
system, /proc/PID/stat) of each, and for the GET the bytes the daemon read
from the drives (/proc/PID/io read_bytes: O_DIRECT reads all show) and the
data cache hits (strata_data_cache_hits_total).

  tests/bench/ckpt_readback.py --bin build/strata
  tests/bench/ckpt_readback.py --bin build/strata --args="--data-cache-on-write --data-cache-mb 2048"
"""

import argparse
import filecmp
import os
import re
import subprocess
import sys
import tempfile
import time

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--args", default="", help="extra server flags")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--size-mb", type=int, default=1024)
    p.add_argument("--part-mb", type=int, default=128)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="strata-ckpt-readback.")
    drives = [os.path.join(work, f"d{i}") for i in range(4)]
    for d in drives:
        os.makedirs(d)
    port = benchlib.free_port()
    ak, sk = "CKPTREADBACK", os.urandom(20).hex()
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "STRATA_ROOT_USER": ak, "STRATA_ROOT_PASSWORD": sk}
    proc = subprocess.Popen([a.bin, "server", "--address", f"127.0.0.1:{port}", "--metrics-public",
                             *a.args.split(), *drives], env=env, stdin=subprocess.DEVNULL,
                            stdout=open(os.path.join(work, "strata.log"), "w"), stderr=subprocess.STDOUT)
    try:
        if not benchlib.wait_ready(port, proc):
            sys.exit("ckpt_readback: strata did not start")
        ep = f"http://127.0.0.1:{port}"
        c = boto3.session.Session().client(
            "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id=ak, aws_secret_access_key=sk,
            config=Config(s3={"addressing_style": "path"}, max_pool_connections=16))
        c.create_bucket(Bucket="ckpt")
        src, dst = os.path.join(work, "src"), os.path.join(work, "dst")
        with open(src, "wb") as f:
            for _ in range(a.size_mb):
                f.write(os.urandom(1 << 20))
        tc = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=a.part_mb << 20,
                            max_concurrency=8)

        def cpu():
            v = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")

        def read_bytes():
            return int(re.search(r"read_bytes: (\d+)", open(f"/proc/{proc.pid}/io").read()).group(1))

        def hits():
            return benchlib.metrics(ep).get("strata_data_cache_hits_total", 0)

        for r in range(a.rounds):
            c0, t0 = cpu(), time.monotonic()
            c.upload_file(src, "ckpt", "obj", Config=tc)
            put_cpu, put_s = cpu() - c0, time.monotonic() - t0
            if os.path.exists(dst):
                os.unlink(dst)
            c0, r0, h0, t0 = cpu(), read_bytes(), hits(), time.monotonic()
            c.download_file("ckpt", "obj", dst, Config=tc)
            get_s, get_cpu = time.monotonic() - t0, cpu() - c0
            got_rb, got_h = read_bytes() - r0, hits() - h0
            if not filecmp.cmp(src, dst, shallow=False):
                sys.exit("ckpt_readback: different bytes read back")
            print(f"round {r}: PUT {put_s:.2f} s, daemon CPU {put_cpu:.2f} s; GET right back "
                  f"{get_s:.2f} s, daemon CPU {get_cpu:.2f} s, {got_rb >> 20} MiB from the drives, "
                  f"{got_h:.0f} data cache hits; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        benchlib.stop(proc, work)


if __name__ == "__main__":
    main()
