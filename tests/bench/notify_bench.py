#!/usr/bin/python3
"""notify_bench.py - event notification figures (a program, never a timed
test), against one strata daemon with a webhook target served by a
receiver in this process (http.server, keep-alive).

- events/s: with the receiver down, EVENTS small PUTs fill the queue; the
  receiver comes up and the time from the first to the last event received
  gives the delivery rate of one target (the receiver shares the CPU with the
  daemon, so this is a floor).
- the same for a nats target (nats-server from Debian, a raw-protocol
  subscriber in a process of its own), when nats-server is installed.
- the same for the amqp, mqtt and postgres targets (BROKERS, default all
  three; tests/integration/notify_brokers.py starts rabbitmq-server,
  mosquitto and postgres): the broker blocked (rabbitmq: the queue unbound,
  so every publish is returned; mosquitto and postgres: not started yet)
  while EVENTS PUTs queue up, then unblocked; the rate is read from the
  target's strata_notify_delivered_total, first to last delivery (each
  event waits for the broker's ack or the INSERT's commit).
- foreground PUT rate: PUTS objects of 100 KiB by THREADS boto3 clients
  into a bucket without notifications and one whose every PUT is an event
  delivered to the live receiver, alternating ROUNDS times; medians, and
  the daemon's CPU time per PUT (/proc), steadier than wall-clock rates on
  a shared machine.

Environment: STRATA_BIN (default build-dev/strata), EVENTS (2000), PUTS
(300), THREADS (4), ROUNDS (3), BROKERS ("amqp,mqtt,postgres"; "" for
none), BROKERS_ONLY=1 (only the broker figures), PUT_ONLY=1 (only the foreground PUT
rate, on against off, with the load average before and after; TARGET=nats:
the events go to nats-server instead of the webhook), KEEP=1 keeps the work
directory.
Prints the figures and one JSON line.
"""
import http.server
import json
import multiprocessing
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, metrics, stop, wait_ready  # noqa: E402

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

EVENTS = int(os.environ.get("EVENTS", "2000"))
PUTS = int(os.environ.get("PUTS", "300"))
THREADS = int(os.environ.get("THREADS", "4"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
PUT_ONLY = os.environ.get("PUT_ONLY") == "1"
TARGET = os.environ.get("TARGET", "webhook") if PUT_ONLY else "webhook"
BROKERS = [] if PUT_ONLY else [
    b for b in os.environ.get("BROKERS", "amqp,mqtt,postgres").split(",") if b]


class Receiver:
    """The webhook in a process of its own (its CPU is not the clients' GIL);
    count is shared."""

    def __init__(self, port):
        self.port, self._n, self.proc = port, multiprocessing.Value("q", 0), None

    @property
    def count(self):
        return self._n.value

    def _serve(self):
        n = self._n

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with n.get_lock():
                    n.value += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), H)
        srv.daemon_threads = True
        srv.serve_forever()

    def start(self):
        self.proc = multiprocessing.Process(target=self._serve, daemon=True)
        self.proc.start()

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.join()


def drain_rate(count, want, what):
    """events/s from the first event counted (count(): how many so far) to
    want; exits when not there within 300 s."""
    while count() <= 0:
        time.sleep(0.001)
    t0, first = time.monotonic(), count()
    while count() < want:
        time.sleep(0.01)
        if time.monotonic() - t0 > 300:
            sys.exit(f"{what}: only {count()} of {want} events")
    return (want - first) / (time.monotonic() - t0)


def nats_count(port, n):
    """A raw NATS subscriber on "ev" (a process of its own): counts messages."""
    import socket
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    f.readline()
    s.sendall(b'CONNECT {"verbose":false}\r\nSUB ev 1\r\nPING\r\n')
    while True:
        line = f.readline()
        if not line:
            return
        if line.startswith(b"PING"):
            s.sendall(b"PONG\r\n")
        elif line.startswith(b"PONG"):
            with n.get_lock():
                n.value = max(n.value, 0)  # subscribed
        elif line.startswith(b"MSG "):
            f.read(int(line.split()[-1]) + 2)
            with n.get_lock():
                n.value += 1


def nats_rate(c, ep, port):
    """events/s to the nats target from a filled queue (nats-server down while
    EVENTS PUTs queue up; core NATS drops what no one subscribed to, so the
    server and the subscriber start while the target is backing off)."""
    import shutil
    exe = shutil.which("nats-server") or "/usr/sbin/nats-server"
    if not os.path.exists(exe):
        print("nats: nats-server not installed, skipped")
        return None
    for i in range(EVENTS):
        c.put_object(Bucket="bench-nats", Key=f"ev/{i}", Body=b"x")

    def failed():
        return metrics(ep, ("strata_notify_failed_total",)).get("strata_notify_failed_total", 0)
    f0 = failed()
    while failed() == f0:  # a try just failed: the next is seconds away
        time.sleep(0.01)
    srv = subprocess.Popen([exe, "-a", "127.0.0.1", "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n = multiprocessing.Value("q", -1)
    sub = None
    try:
        deadline = time.monotonic() + 10
        while sub is None or (n.value < 0 and sub.is_alive()) or not sub.is_alive():
            if sub is None or not sub.is_alive():
                time.sleep(0.05)
                sub = multiprocessing.Process(target=nats_count, args=(port, n), daemon=True)
                sub.start()
            time.sleep(0.01)
            if time.monotonic() > deadline:
                sys.exit("nats subscriber did not start")
        rate = drain_rate(lambda: n.value, EVENTS, "nats")
        print(f"nats delivery: {EVENTS} queued events, {rate:.0f} events/s")
        return rate
    finally:
        if sub:
            sub.kill()
        srv.kill()
        srv.wait()


def delivered(ep, target):
    """strata_notify_delivered_total of one target."""
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    text = opener.open(f"{ep}/metrics", timeout=30).read().decode()
    m = re.search(rf'^strata_notify_delivered_total{{target="{target}",kind="\w+"}} (\d+)$',
                  text, re.M)
    return int(m.group(1)) if m else 0


def broker_rates(binary, work, env):
    """events/s to each broker target from a filled queue (module doc)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "integration"))
    import notify_brokers as nb
    password = secrets.token_hex(16)
    tok = os.path.join(work, "broker-pass")
    with open(tok, "w") as f:
        f.write(password + "\n")
    os.chmod(tok, 0o600)
    servers = {"amqp": nb.Rabbit, "mqtt": nb.Mosquitto, "postgres": nb.Postgres}
    srv = {k: servers[k](work, password) for k in BROKERS}
    addr = {"amqp": lambda s: f"amqp://strata@127.0.0.1:{s.port}/{nb.EXCHANGE}/{nb.RKEY}",
            "mqtt": lambda s: f"mqtt://strata@127.0.0.1:{s.port}/{nb.TOPIC}",
            "postgres": lambda s: f"postgres://strata@127.0.0.1:{s.port}/postgres/s3events"}
    args = []
    for k in BROKERS:
        args += ["--notify-target", f"{k}1:{k}:{addr[k](srv[k])}", "--notify-token-file",
                 f"{k}1:{tok}"]
    port = free_port()
    log = open(os.path.join(work, "strata-brokers.log"), "wb")
    proc = subprocess.Popen([binary, "server", "--address", f"127.0.0.1:{port}",
                             "--metrics-public", "--access-log", "/dev/null"] + args
                            + [os.path.join(work, f"b{i}") for i in range(1, 5)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    ep = f"http://127.0.0.1:{port}"
    rates = {}
    try:
        if not wait_ready(port, proc):
            sys.exit("strata did not start")
        c = boto3.session.Session().client(
            "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id="benchadmin",
            aws_secret_access_key="benchsecret123",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        for k in BROKERS:
            s, target, bucket = srv[k], f"{k}1", f"bench-{k}"
            if k == "amqp":
                s.start()
                s.declare()
                s.bind(False)  # every publish returned: nothing counts as delivered
            c.create_bucket(Bucket=bucket)
            c.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={
                "QueueConfigurations": [{"QueueArn": f"arn:strata:sqs::{target}:{k}",
                                         "Events": ["s3:ObjectCreated:*"]}]})
            for i in range(EVENTS):
                c.put_object(Bucket=bucket, Key=f"ev/{i}", Body=b"x")
            want = EVENTS + 1  # and the configuration's s3:TestEvent
            assert delivered(ep, target) == 0
            if k == "amqp":
                s.bind(True)
            else:
                s.start()
            while delivered(ep, target) == 0:
                time.sleep(0.005)
            t0, first = time.monotonic(), delivered(ep, target)
            while (n := delivered(ep, target)) < want:
                time.sleep(0.02)
                if time.monotonic() - t0 > 600:
                    sys.exit(f"{k}: only {n} of {want} events")
            rates[k] = (want - first) / (time.monotonic() - t0)
            print(f"{k} delivery: {EVENTS} queued events, {rates[k]:.0f} events/s")
            s.stop()
    finally:
        stop(proc, os.path.join(work, "none"))
        for s in srv.values():
            try:
                s.stop()
            except Exception as e:  # noqa: BLE001 - stop the others all the same
                print(f"stopping {type(s).__name__}: {e}")
        if "amqp" in srv:
            srv["amqp"].epmd_kill()
    return rates


def webhook_rate(c, rec):
    """events/s to the webhook from a filled queue: EVENTS PUTs queued with
    the receiver down, then the receiver started."""
    for i in range(EVENTS):
        c.put_object(Bucket="bench-on", Key=f"ev/{i}", Body=b"x")
    rec.start()
    # The target's backoff (up to 5 s) may delay the first delivery:
    # timed from the first event received.
    ev_s = drain_rate(lambda: rec.count, EVENTS, "webhook")
    print(f"webhook delivery: {EVENTS} queued events in {EVENTS / ev_s:.2f} s = "
          f"{ev_s:.0f} events/s")
    return ev_s


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    binary = os.environ.get("STRATA_BIN", os.path.join(root, "build-dev", "strata"))
    work = tempfile.mkdtemp(prefix="notify_bench.")
    port, hook_port, nats_port = free_port(), free_port(), free_port()
    env = dict(os.environ, STRATA_ROOT_USER="benchadmin", STRATA_ROOT_PASSWORD="benchsecret123")
    log = open(os.path.join(work, "strata.log"), "wb")
    proc = subprocess.Popen([binary, "server", "--address", f"127.0.0.1:{port}",
                             "--metrics-public", "--access-log", "/dev/null",
                             "--notify-target", f"h:webhook:http://127.0.0.1:{hook_port}/e",
                             "--notify-target", f"n:nats:nats://127.0.0.1:{nats_port}/ev"]
                            + [os.path.join(work, f"d{i}") for i in range(1, 5)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    ep = f"http://127.0.0.1:{port}"
    try:
        if BROKERS:
            rates = broker_rates(binary, work, env)
            print(json.dumps({f"{k}_events_per_s": round(v) for k, v in rates.items()}))
        if os.environ.get("BROKERS_ONLY") == "1":
            return
        if not wait_ready(port, proc):
            sys.exit("strata did not start")
        c = boto3.session.Session().client(
            "s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id="benchadmin",
            aws_secret_access_key="benchsecret123",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          max_pool_connections=THREADS * 2))
        for b in ("bench-off", "bench-on", "bench-nats"):
            c.create_bucket(Bucket=b)
        c.put_bucket_notification_configuration(Bucket="bench-nats", NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": "arn:strata:sqs::n:nats",
                                     "Events": ["s3:ObjectCreated:*"]}]})
        arn = "arn:strata:sqs::n:nats" if TARGET == "nats" else "arn:strata:sqs::h:webhook"
        c.put_bucket_notification_configuration(Bucket="bench-on", NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]})
        rec = Receiver(hook_port)
        nats_ev_s = ev_s = None
        if TARGET == "nats":
            import shutil
            nats_srv = subprocess.Popen(
                [shutil.which("nats-server") or "/usr/sbin/nats-server", "-a", "127.0.0.1", "-p",
                 str(nats_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            sink_pid = nats_srv.pid

            def got():
                return delivered(ep, "n")
        else:
            rec.start()
            sink_pid = rec.proc.pid

            def got():
                return rec.count
        if not PUT_ONLY:
            nats_ev_s = nats_rate(c, ep, nats_port)
            ev_s = webhook_rate(c, rec)
        load0 = os.getloadavg()
        body = os.urandom(100 << 10)

        tick = os.sysconf("SC_CLK_TCK")

        def cpu(pid=None):
            with open(f"/proc/{pid or proc.pid}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            return (int(st[11]) + int(st[12])) / tick

        def cell(bucket):
            c0, r0 = cpu(), cpu(sink_pid)
            n = [0]
            lk = threading.Lock()

            def worker():
                while True:
                    with lk:
                        if n[0] >= PUTS:
                            return
                        i = n[0]
                        n[0] += 1
                    c.put_object(Bucket=bucket, Key=f"p/{i}", Body=body)
            ts = [threading.Thread(target=worker) for _ in range(THREADS)]
            t = time.monotonic()
            for x in ts:
                x.start()
            for x in ts:
                x.join()
            rate = PUTS / (time.monotonic() - t)
            cpu_us[bucket].append((cpu() - c0) / PUTS * 1e6)
            rcv_us[bucket].append((cpu(sink_pid) - r0) / PUTS * 1e6)
            return rate

        cpu_us = {"bench-off": [], "bench-on": []}
        rcv_us = {"bench-off": [], "bench-on": []}
        cell("bench-off")  # warm up
        cpu_us["bench-off"].clear()
        off, on = [], []
        for _ in range(ROUNDS):
            off.append(cell("bench-off"))
            on.append(cell("bench-on"))
        m_off, m_on = statistics.median(off), statistics.median(on)
        print(f"PUT 100 KiB x{PUTS}, {THREADS} threads: notifications off "
              f"{', '.join(f'{x:.0f}' for x in off)} PUT/s (median {m_off:.0f}); on "
              f"{', '.join(f'{x:.0f}' for x in on)} (median {m_on:.0f}); on/off {m_on / m_off:.3f}")
        # The same PUTs interleaved one by one (each client alternates the
        # buckets), so that a change of the machine's load hits both alike:
        # the median latency of each.
        lat = {"bench-off": [], "bench-on": []}
        n = [0]
        lk = threading.Lock()

        def mixed():
            while True:
                with lk:
                    if n[0] >= 2 * PUTS:
                        return
                    i = n[0]
                    n[0] += 1
                b = ("bench-off", "bench-on")[i % 2]
                t = time.monotonic()
                c.put_object(Bucket=b, Key=f"m/{i}", Body=body)
                lat[b].append(time.monotonic() - t)
        ts = [threading.Thread(target=mixed) for _ in range(THREADS)]
        for x in ts:
            x.start()
        for x in ts:
            x.join()
        l_off, l_on = (statistics.median(lat[k]) * 1e3 for k in ("bench-off", "bench-on"))
        print(f"interleaved, {PUTS} PUTs each: median latency off {l_off:.2f} ms, on {l_on:.2f} ms "
              f"(off/on {l_off / l_on:.3f})")
        c_off, c_on = (statistics.median(cpu_us[k]) for k in ("bench-off", "bench-on"))
        print(f"daemon CPU per PUT (its delivery thread included): off {c_off:.0f} us, "
              f"on {c_on:.0f} us ({c_on / c_off:.3f}x); the {TARGET} receiver's CPU per PUT "
              f"{statistics.median(rcv_us['bench-on']):.0f} us (a process on the same cores)")
        load1 = os.getloadavg()
        print(f"load average (1, 5, 15 min) before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
              f"after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
        deadline = time.monotonic() + 120
        want = (0 if PUT_ONLY else EVENTS) + PUTS * (ROUNDS + 1)
        while got() < want and time.monotonic() < deadline:
            time.sleep(0.1)
        m = metrics(ep, ("strata_notify_",))
        print(json.dumps({"events_per_s": round(ev_s) if ev_s else None,
                          "nats_events_per_s": round(nats_ev_s) if nats_ev_s else None, "put_off": round(m_off),
                          "put_on": round(m_on), "ratio": round(m_on / m_off, 3),
                          "cpu_us_off": round(c_off), "cpu_us_on": round(c_on),
                          "lat_ms_off": round(l_off, 2), "lat_ms_on": round(l_on, 2),
                          "target": TARGET, "delivered": got(), "want": want,
                          "dropped": m.get("strata_notify_dropped_total", 0),
                          "load_before": round(load0[0], 2), "load_after": round(load1[0], 2)}))
        if got() < want:
            sys.exit("events lost")
    finally:
        if "rec" in locals():
            rec.stop()
        if "nats_srv" in locals():
            nats_srv.kill()
            nats_srv.wait()
        stop(proc, work)


if __name__ == "__main__":
    main()
