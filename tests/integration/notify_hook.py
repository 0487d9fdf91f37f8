"""notify_hook.py - what the event notification tests share (test_notify.py,
test_rados_queues.py): a webhook receiver in the test process
(http.server on 127.0.0.1, a thread) that records every POST, the
notification configuration a bucket is given, and the strata_notify_*
figures of /metrics."""

import http.server
import json
import re
import threading
import time
import urllib.request


class Receiver:
    """The webhook: records (headers, parsed body) of every POST, answers 200."""

    def __init__(self, port):
        self.port = port
        self.lock = threading.Lock()
        self.got = []
        self.srv = None
        self.conns = set()

    def start(self):
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with rec.lock:
                    rec.conns.add(self.connection)

            def finish(self):
                super().finish()
                with rec.lock:
                    rec.conns.discard(self.connection)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with rec.lock:
                    rec.got.append((self.path, dict(self.headers.items()), json.loads(body)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), H)
        self.srv.daemon_threads = True
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        """Down for real: the listener and every kept-alive connection."""
        import socket
        self.srv.shutdown()
        self.srv.server_close()
        self.srv = None
        with self.lock:
            for c in list(self.conns):
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def records(self):
        with self.lock:
            return [(p, h, r) for p, h, b in self.got for r in b.get("Records", [])]

    def test_events(self, bucket):
        """The s3:TestEvent messages (no Records) received for bucket."""
        with self.lock:
            return [(h, b) for _, h, b in self.got
                    if b.get("Event") == "s3:TestEvent" and b.get("Bucket") == bucket]

    def clear(self):
        with self.lock:
            self.got.clear()

    def wait(self, pred, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            recs = self.records()
            if pred(recs):
                return recs
            time.sleep(0.05)
        raise AssertionError(f"timed out; received {[(r['eventName'], r['s3']['object']['key']) for _, _, r in self.records()]}")


def queue_conf(arn, events, prefix=None, suffix=None, cid=None):
    q = {"QueueArn": arn, "Events": events}
    if cid:
        q["Id"] = cid
    rules = []
    if prefix is not None:
        rules.append({"Name": "prefix", "Value": prefix})
    if suffix is not None:
        rules.append({"Name": "suffix", "Value": suffix})
    if rules:
        q["Filter"] = {"Key": {"FilterRules": rules}}
    return q


def put_conf(c, b, *queues, **extra):
    c.put_bucket_notification_configuration(
        Bucket=b, NotificationConfiguration=dict({"QueueConfigurations": list(queues)}, **extra))


def metrics(s):
    """{(name, target): value} of the strata_notify_* lines of /metrics."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    text = opener.open(f"{s.endpoint}/metrics", timeout=10).read().decode()
    out = {}
    for m in re.finditer(r'^(strata_notify_\w+)\{target="([^"]+)",kind="\w+"\} (\d+)$', text,
                         re.M):
        out[(m.group(1), m.group(2))] = int(m.group(3))
    return out


def drained(s, target, timeout=30):
    """The figures of metrics(s) once target has nothing pending.  A
    receiver holds an event before the daemon has its answer, and the
    queue counts the event done (pending, delivered) only after that: the
    gauge is polled, bounded, instead of read once."""
    deadline = time.monotonic() + timeout
    m = metrics(s)
    while m[("strata_notify_pending", target)] != 0:
        assert time.monotonic() < deadline, f"{target}: still pending after {timeout} s: {m}"
        time.sleep(0.05)
        m = metrics(s)
    return m


def keys_of(recs, bucket):
    return [r["s3"]["object"]["key"] for _, _, r in recs if r["s3"]["bucket"]["name"] == bucket]
