#!/usr/bin/python3
"""test_rados_faults.py - Strata gateways on one Ceph cluster when a
gateway or an OSD fails (three BlueStore OSDs, replicated pools of size 2
and min_size 1, started once for the file; two gateways on the same pools):

- kill -9 of a third gateway in the middle of two large PUTs (64 MiB
  bodies, 24 MiB sent: data objects written, no commit), one replacing an
  existing object and one of a new key: through the other gateways the
  replaced key still shows its old version whole (HEAD, GET bytes, the
  listing's size and ETag), the new key does not exist (404, not listed),
  and no upload is left;
- one OSD stopped (SIGTERM to the PID its pid file names) while four
  writers PUT (4 KiB inline and 1 MiB in data objects) through both
  gateways and a reader GETs what was acknowledged: writes keep being
  acknowledged and reads keep succeeding after the stop, no read returns
  wrong bytes, and every acknowledged write reads back byte-exact through
  both gateways afterwards.

Skips (77) as test_rados_two_gateways.py does, with rados_gw.py's printed
reasons, until the daemon keeps objects on RADOS.
"""

import hashlib
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rados_gw import gateway, run_two_gateways, start_put  # noqa: E402
from strata_harness import expect_error, log, test  # noqa: E402

MiB = 1 << 20
PREFIX = "tf" + os.urandom(3).hex()
CLUSTER = None
B = None  # the second gateway; the first is run()'s argument


def body(tag, size):
    return hashlib.sha256(tag.encode()).digest() * (size // 32)


def data_objects():
    return len(CLUSTER.rados("-p", f"{PREFIX}.data", "ls").stdout.split())


@test
def gateway_killed_mid_put_leaves_nothing_half_visible(a):
    ca, cb = a.client(), B.client()
    bucket = a.bucket_name("kill")
    ca.create_bucket(Bucket=bucket)
    old = body("old", 2 * MiB)
    old_etag = ca.put_object(Bucket=bucket, Key="replaced", Body=old)["ETag"]
    before = data_objects()
    c = gateway(CLUSTER, PREFIX, keys=(a.ak, a.sk))
    try:
        new = body("new", 64 * MiB)
        conns = [start_put(c, bucket, k, new, 24 * MiB) for k in ("replaced", "fresh")]
        time.sleep(1.0)  # the gateway writes the stripes received
        c.proc.send_signal(signal.SIGKILL)
        c.proc.wait(15)
        for conn in conns:
            conn.close()
        log(f"data objects in {PREFIX}.data: {before} before, {data_objects()} after the kill")
    finally:
        if c.proc is not None and c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()
        c.proc = None  # killed on purpose: its stop() must not report a death
        c.stop()
    for cl in (ca, cb):
        h = cl.head_object(Bucket=bucket, Key="replaced")
        assert h["ETag"] == old_etag and h["ContentLength"] == len(old), h
        assert cl.get_object(Bucket=bucket, Key="replaced")["Body"].read() == old
        expect_error(lambda: cl.head_object(Bucket=bucket, Key="fresh"), "404", 404)
        expect_error(lambda: cl.get_object(Bucket=bucket, Key="fresh"), "NoSuchKey", 404)
        listed = cl.list_objects_v2(Bucket=bucket)["Contents"]
        assert [(o["Key"], o["Size"], o["ETag"]) for o in listed] == [
            ("replaced", len(old), old_etag)], listed
        assert cl.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    # Both gateways still write the keys.
    cb.put_object(Bucket=bucket, Key="fresh", Body=b"after")
    assert ca.get_object(Bucket=bucket, Key="fresh")["Body"].read() == b"after"


def pool_size(name):
    return int(CLUSTER.ceph("osd", "pool", "get", name, "size", json_out=True)["size"])


@test
def osd_stopped_under_puts_loses_no_acknowledged_write(a):
    for pool in (f"{PREFIX}.meta", f"{PREFIX}.data"):
        assert pool_size(pool) == 2, pool
    bucket = a.bucket_name("osd")
    a.client().create_bucket(Bucket=bucket)
    acked = {}  # key -> (sha256, time acknowledged)
    lock = threading.Lock()
    stop = threading.Event()
    write_errors, read_errors, wrong = [], [], []
    reads_ok = []  # times of successful reads

    def writer(t):
        cl = (a if t % 2 == 0 else B).client()
        i = 0
        while not stop.is_set():
            key = f"w{t}/{i:05d}"
            data = body(key, 4096 if i % 2 == 0 else MiB)
            try:
                cl.put_object(Bucket=bucket, Key=key, Body=data)
                with lock:
                    acked[key] = (hashlib.sha256(data).digest(), time.monotonic())
            except Exception as e:  # a refused write is allowed; a lost acknowledged one is not
                write_errors.append((key, repr(e)[:200]))
            i += 1

    def reader():
        clients = [a.client(), B.client()]
        rng = random.Random(1)
        while not stop.is_set():
            with lock:
                keys = list(acked)
            if not keys:
                time.sleep(0.05)
                continue
            key = rng.choice(keys)
            try:
                got = rng.choice(clients).get_object(Bucket=bucket, Key=key)["Body"].read()
            except Exception as e:
                read_errors.append((key, repr(e)[:200]))
                continue
            if hashlib.sha256(got).digest() != acked[key][0]:
                wrong.append(key)
            reads_ok.append(time.monotonic())

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    threads.append(threading.Thread(target=reader))
    for th in threads:
        th.start()
    try:
        time.sleep(4)
        with open(CLUSTER.path("run", "osd.1.pid")) as f:
            pidfile = int(f.read().strip())
        assert pidfile == CLUSTER.osd_pid(1), (pidfile, CLUSTER.osd_pid(1))
        t_stop = time.monotonic()
        CLUSTER.stop_osd(1)  # SIGTERM to that PID, then until the monitor has it down
        log(f"osd.1 (pid {pidfile}) down after {time.monotonic() - t_stop:.1f} s")
        time.sleep(6)
    finally:
        t_end = time.monotonic()
        stop.set()
        for th in threads:
            th.join(120)
    after_w = [k for k, (_, t) in acked.items() if t > t_stop]
    after_r = [t for t in reads_ok if t > t_stop]
    log(f"{len(acked)} writes acknowledged ({len(after_w)} after the stop), {len(write_errors)} "
        f"refused; {len(reads_ok)} reads ({len(after_r)} after the stop), {len(read_errors)} "
        f"failed; first failures: {write_errors[:2]} {read_errors[:2]}")
    assert not wrong, f"reads returned wrong bytes: {wrong[:5]}"
    assert after_w, "no write was acknowledged after the OSD stopped"
    assert after_r, "no read succeeded after the OSD stopped"
    # Reads went on to the end, not only in the moment after the stop.
    assert max(after_r) > t_end - 2 and len(after_r) >= 5, (len(after_r), t_end - max(after_r))
    for srv in (a, B):
        cl = srv.client()
        for key, (sha, _) in sorted(acked.items()):
            got = cl.get_object(Bucket=bucket, Key=key)["Body"].read()
            assert hashlib.sha256(got).digest() == sha, f"{key} through {srv.endpoint}"
    listed = set()
    for page in a.client().get_paginator("list_objects_v2").paginate(Bucket=bucket):
        listed.update(o["Key"] for o in page.get("Contents", []))
    assert set(acked) <= listed, sorted(set(acked) - listed)[:5]
    CLUSTER.start_osd(1)


def main():
    def ready(cluster, second):
        global B, CLUSTER
        B, CLUSTER = second, cluster
    # Every pool (Strata's, made by `strata rados init`) gets 2 copies.
    run_two_gateways(PREFIX, ready, osds=3, store="bluestore", timeout=180, extra_conf={
        "global": {"osd_pool_default_size": 2, "osd_pool_default_min_size": 1}})


if __name__ == "__main__":
    main()
