#!/usr/bin/env python3
"""test_notify_brokers.py - the amqp, mqtt and postgres event targets
(server/notify/notify_{amqp,mqtt,postgres}.c) against the real servers from
Debian, each started once for this file on a loopback port in a private
directory and stopped by PID:

  rabbitmq-server  its own node name, mnesia/log dirs, config (a user
                   "strata" with a random password), erlang cookie (HOME),
                   and epmd on a port of its own (killed by PID at the end);
                   consumed with pika (python3-pika).
  mosquitto        a config with a password file and a persistent store in
                   the temp dir; consumed with paho-mqtt (python3-paho-mqtt),
                   a persistent session so that a restart loses nothing.
  postgres         initdb + postgres of /usr/lib/postgresql/15 as the
                   postgres user (it refuses root), scram password for TCP,
                   queried with psql over the temp dir's unix socket.

A missing server binary fails the test (deploy/install-deps.sh installs
them).  Each target: the configuration round trip with its ARN, the
s3:TestEvent, records with AWS's fields, the server down (the daemon
counts failures and keeps the events) then up (delivered in order), and
kill -9 of the daemon with events pending (delivered after its restart).
"""

import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, free_port, log, new_bucket, run, test  # noqa: E402

PASS = secrets.token_hex(16)
AMQP_PORT, AMQP_DIST, AMQP_EPMD = free_port(), free_port(), free_port()
MQTT_PORT = free_port()
PG_PORT = free_port()
AMQP_ARN = "arn:strata:sqs::a1:amqp"
MQTT_ARN = "arn:strata:sqs::m1:mqtt"
PG_ARN = "arn:strata:sqs::p1:postgres"
EXCHANGE, QUEUE, RKEY = "strata-ex", "strata-q", "s3.events"
TOPIC = "strata/events"
PG_BIN = "/usr/lib/postgresql/15/bin"


def wait_for(pred, what, timeout=30, step=0.1):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(step)


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def metrics(s):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    text = opener.open(f"{s.endpoint}/metrics", timeout=10).read().decode()
    return {(m.group(1), m.group(2)): int(m.group(3)) for m in re.finditer(
        r'^(strata_notify_\w+)\{target="([^"]+)",kind="\w+"\} (\d+)$', text, re.M)}


def put_conf(c, b, arn, events):
    c.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={
        "QueueConfigurations": [{"Id": "cfg1", "QueueArn": arn, "Events": events}]})


def check_conf(c, b, arn, events):
    got = c.get_bucket_notification_configuration(Bucket=b)["QueueConfigurations"]
    assert got == [{"Id": "cfg1", "QueueArn": arn, "Events": events}], got


def check_record(r, bucket, name, key, size=None, etag=None):
    assert r["eventVersion"] == "2.1" and r["eventSource"] == "aws:s3", r
    assert r["eventName"] == name, (r["eventName"], name)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", r["eventTime"]), r
    assert r["s3"]["bucket"]["name"] == bucket and r["s3"]["bucket"]["arn"] == \
        f"arn:aws:s3:::{bucket}", r
    assert r["s3"]["configurationId"] == "cfg1", r
    assert r["requestParameters"]["sourceIPAddress"] == "127.0.0.1", r
    assert r["responseElements"]["x-amz-request-id"], r
    o = r["s3"]["object"]
    assert o["key"] == key and re.match(r"^[0-9A-F]{16}$", o["sequencer"]), o
    if size is None:
        assert "size" not in o and "eTag" not in o, o
    else:
        assert o["size"] == size and o["eTag"] == etag, (o, size, etag)


def keys(msgs, bucket):
    return [m["Records"][0]["s3"]["object"]["key"] for m in msgs
            if "Records" in m and m["Records"][0]["s3"]["bucket"]["name"] == bucket]


def wait_failed(s, target, before, n=1):
    wait_for(lambda: metrics(s)[("strata_notify_failed_total", target)] >= before + n,
             f"{target}: failed deliveries counted", timeout=20)


def scenario(s, prefix, arn, target, received, down, up, block=None, unblock=None):
    """The common part: round trip, test event, records, server down then
    up, kill -9 with events pending.  received(bucket) -> the messages
    (parsed JSON, in arrival order) the server holds for the bucket;
    down()/up() stop and start the server; block()/unblock() (default:
    down/up) keep events pending for the kill -9 phase."""
    c, b = new_bucket(s, prefix)
    events = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]
    put_conf(c, b, arn, events)
    check_conf(c, b, arn, events)
    e = c.put_object(Bucket=b, Key="in/a b.txt", Body=b"12345")["ETag"].strip('"')
    c.delete_object(Bucket=b, Key="in/a b.txt")
    msgs = wait_for(lambda: (lambda m: m if len(keys(m, b)) >= 2 else None)(received(b)),
                    "the first two records")
    test_ev = [m for m in msgs if m.get("Event") == "s3:TestEvent"]
    assert len(test_ev) == 1 and test_ev[0]["Bucket"] == b and \
        test_ev[0]["Service"] == "Amazon S3", msgs
    assert msgs[0] == test_ev[0], "the test event comes first"
    recs = [m["Records"][0] for m in msgs if "Records" in m]
    assert len(recs) == 2, recs
    check_record(recs[0], b, "ObjectCreated:Put", "in/a+b.txt", 5, e)
    check_record(recs[1], b, "ObjectRemoved:Delete", "in/a+b.txt")
    assert recs[0]["s3"]["object"]["sequencer"] < recs[1]["s3"]["object"]["sequencer"]

    # The server down: PUTs still succeed, the events wait, then arrive in order.
    down()
    before = metrics(s)
    ks = [f"d/k{i:02d}" for i in range(10)]
    for k in ks:
        c.put_object(Bucket=b, Key=k, Body=b"x")
    wait_failed(s, target, before[("strata_notify_failed_total", target)])
    assert metrics(s)[("strata_notify_pending", target)] == len(ks)
    up()
    wait_for(lambda: len(keys(received(b), b)) >= 2 + len(ks), "records after the server's return",
             timeout=60)
    got = keys(received(b), b)
    assert got[2:] == ks, got
    m = metrics(s)
    assert m[("strata_notify_pending", target)] == 0, m
    assert m[("strata_notify_delivered_total", target)] >= 3 + len(ks), m

    # kill -9 of the daemon with events pending: delivered after the restart.
    (block or down)()
    before = metrics(s)
    kk = [f"x/k{i:02d}" for i in range(10)]
    for k in kk:
        c.put_object(Bucket=b, Key=k, Body=b"y")
    wait_failed(s, target, before[("strata_notify_failed_total", target)])
    assert metrics(s)[("strata_notify_pending", target)] == len(kk)
    s.restart(kill=True)
    (unblock or up)()
    wait_for(lambda: set(kk) <= set(keys(received(b), b)), "records after the daemon's restart",
             timeout=60)
    got = keys(received(b), b)
    firsts = [k for i, k in enumerate(got) if k not in got[:i]]
    assert firsts == ["in/a+b.txt"] + ks + kk, got  # at least once, in order
    wait_for(lambda: metrics(s)[("strata_notify_pending", target)] == 0, "queue drained")


# ---- RabbitMQ ------------------------------------------------------------

class Rabbit:
    def __init__(self, tmp):
        self.exe = "/usr/lib/rabbitmq/bin/rabbitmq-server"
        assert os.path.exists(self.exe), "rabbitmq-server missing: deploy/install-deps.sh"
        self.dir = os.path.join(tmp, "rabbitmq")
        os.mkdir(self.dir)
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write(f"listeners.tcp.1 = 127.0.0.1:{AMQP_PORT}\n"
                    f"default_user = strata\ndefault_pass = {PASS}\n"
                    "log.console = false\n")
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        self.p = None
        self.msgs = []

    def start(self):
        d = self.dir
        env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": d, "LANG": "C.UTF-8",
               "RABBITMQ_CONF_ENV_FILE": os.path.join(d, "env.conf"),
               "RABBITMQ_NODENAME": f"strata{AMQP_PORT}@localhost",
               "RABBITMQ_CONFIG_FILE": os.path.join(d, "rabbitmq"),
               "RABBITMQ_MNESIA_BASE": os.path.join(d, "mnesia"),
               "RABBITMQ_LOG_BASE": os.path.join(d, "log"),
               "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(d, "enabled_plugins"),
               "RABBITMQ_PID_FILE": os.path.join(d, "pid"),
               "RABBITMQ_DIST_PORT": str(AMQP_DIST),
               "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface "
                                                      "{127,0,0,1}",
               # The epmd it starts is its own: a private port, loopback.
               "ERL_EPMD_PORT": str(AMQP_EPMD), "ERL_EPMD_ADDRESS": "127.0.0.1"}
        self.p = subprocess.Popen([self.exe], env=env, cwd=d, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: self.p.poll() is None and self._try_conn(), "rabbitmq-server start",
                 timeout=90, step=0.5)

    def _try_conn(self):
        import pika
        try:
            self.conn().close()
            return True
        except Exception:
            return False

    def conn(self):
        import pika
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", AMQP_PORT, credentials=pika.PlainCredentials("strata", PASS),
            connection_attempts=1, socket_timeout=5))

    def declare(self):
        with self.conn() as cn:
            ch = cn.channel()
            ch.exchange_declare(EXCHANGE, "direct", durable=True)
            ch.queue_declare(QUEUE, durable=True)
            ch.queue_bind(QUEUE, EXCHANGE, RKEY)

    def bind(self, on):
        with self.conn() as cn:
            (cn.channel().queue_bind if on else cn.channel().queue_unbind)(QUEUE, EXCHANGE, RKEY)

    def received(self, bucket):
        """Drains the queue (acked) into self.msgs; those of bucket."""
        with self.conn() as cn:
            ch = cn.channel()
            while True:
                method, props, body = ch.basic_get(QUEUE, auto_ack=True)
                if method is None:
                    break
                assert props.content_type == "application/json" and props.delivery_mode == 2
                self.msgs.append(json.loads(body))
        return [m for m in self.msgs if m.get("Bucket") == bucket or
                ("Records" in m and m["Records"][0]["s3"]["bucket"]["name"] == bucket)]

    def stop(self):
        if self.p and self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGTERM)  # its own session: the script and beam
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait(10)
        wait_for(lambda: not port_open(AMQP_PORT), "rabbitmq stopped")

    def epmd_kill(self):
        """The epmd daemon the broker started on its private port."""
        out = subprocess.run(["ss", "-Hltnp", f"sport = :{AMQP_EPMD}"], capture_output=True,
                             text=True).stdout
        for pid in set(re.findall(r"pid=(\d+)", out)):
            os.kill(int(pid), signal.SIGKILL)


# ---- Mosquitto -----------------------------------------------------------

class Mosquitto:
    def __init__(self, tmp):
        self.exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        assert os.path.exists(self.exe), "mosquitto missing: deploy/install-deps.sh"
        self.dir = os.path.join(tmp, "mosquitto")
        os.mkdir(self.dir)
        pw = os.path.join(self.dir, "passwd")
        subprocess.run(["mosquitto_passwd", "-c", "-b", pw, "strata", PASS], check=True,
                       capture_output=True)
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {MQTT_PORT} 127.0.0.1\nallow_anonymous false\n"
                    f"password_file {pw}\npersistence true\n"
                    f"persistence_location {self.dir}/\nautosave_interval 0\n"
                    "user root\n")
        self.p = None
        self.sub = None
        self.lock = threading.Lock()
        self.msgs = []

    def start(self):
        self.p = subprocess.Popen([self.exe, "-c", self.conf], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        wait_for(lambda: self.p.poll() is None and port_open(MQTT_PORT), "mosquitto start")

    def subscribe(self):
        """A persistent session (clean_session off, QoS 1): what is
        published while it is away waits in the broker."""
        import paho.mqtt.client as mqtt
        got = threading.Event()

        def on_connect(cl, ud, flags, rc):
            if rc == 0:
                cl.subscribe(TOPIC, qos=1)

        def on_subscribe(cl, ud, mid, granted):
            got.set()

        def on_message(cl, ud, msg):
            assert msg.qos == 1, msg.qos
            with self.lock:
                self.msgs.append(json.loads(msg.payload))
        cl = mqtt.Client(client_id="strata-test-sub", clean_session=False)
        cl.username_pw_set("strata", PASS)
        cl.on_connect, cl.on_subscribe, cl.on_message = on_connect, on_subscribe, on_message
        cl.reconnect_delay_set(0.2, 1)
        cl.connect("127.0.0.1", MQTT_PORT, 30)
        cl.loop_start()
        assert got.wait(10), "mqtt subscription"
        self.sub = cl

    def received(self, bucket):
        with self.lock:
            return [m for m in self.msgs if m.get("Bucket") == bucket or
                    ("Records" in m and m["Records"][0]["s3"]["bucket"]["name"] == bucket)]

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.terminate()  # SIGTERM: the persistent store is written
            self.p.wait(20)
        wait_for(lambda: not port_open(MQTT_PORT), "mosquitto stopped")


# ---- PostgreSQL ----------------------------------------------------------

class Postgres:
    def __init__(self, tmp):
        for exe in ("initdb", "postgres"):
            assert os.path.exists(f"{PG_BIN}/{exe}"), f"{exe} missing: deploy/install-deps.sh"
        self.dir = os.path.join(tmp, "pg")
        os.mkdir(self.dir, 0o700)
        pw = pwd.getpwnam("postgres")
        self.uid, self.gid = pw.pw_uid, pw.pw_gid
        os.chown(self.dir, self.uid, self.gid)
        os.chmod(tmp, 0o755)
        pwfile = os.path.join(self.dir, "pwfile")
        with open(pwfile, "w") as f:
            f.write(PASS + "\n")
        os.chown(pwfile, self.uid, self.gid)
        r = subprocess.run([f"{PG_BIN}/initdb", "-D", os.path.join(self.dir, "data"), "-U",
                            "strata", f"--pwfile={pwfile}", "--auth-local=trust",
                            "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"],
                           user=self.uid, group=self.gid, extra_groups=[], capture_output=True,
                           text=True, cwd=self.dir)
        assert r.returncode == 0, r.stderr
        os.unlink(pwfile)
        self.p = None

    def start(self):
        self.p = subprocess.Popen([f"{PG_BIN}/postgres", "-D", os.path.join(self.dir, "data"),
                                   "-k", self.dir, "-h", "127.0.0.1", "-p", str(PG_PORT)],
                                  user=self.uid, group=self.gid, extra_groups=[],
                                  cwd=self.dir, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        wait_for(lambda: self.p.poll() is None and self.psql("SELECT 1") == "1",
                 "postgres start", timeout=30, step=0.2)

    def psql(self, sql):
        r = subprocess.run(["psql", "-h", self.dir, "-p", str(PG_PORT), "-U", "strata", "-d",
                            "postgres", "-AtX", "-c", sql], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"})
        return r.stdout.strip() if r.returncode == 0 else None

    def received(self, bucket):
        # ctid: the heap order of an append-only table, the insertion order.
        out = self.psql("SELECT event_data FROM s3events WHERE "
                        f"event_data->>'Bucket' = '{bucket}' OR "
                        f"event_data #>> '{{Records,0,s3,bucket,name}}' = '{bucket}' "
                        "ORDER BY ctid")
        return [json.loads(line) for line in (out or "").splitlines()]

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)  # fast shutdown
            self.p.wait(30)


RABBIT = MOSQ = PG = None


@test
def amqp_target(s):
    RABBIT.declare()
    scenario(s, "namqp", AMQP_ARN, "a1", RABBIT.received,
             down=RABBIT.stop, up=RABBIT.start,
             # Unroutable (returned by the broker) keeps events pending
             # without another 20 s broker restart.
             block=lambda: RABBIT.bind(False), unblock=lambda: RABBIT.bind(True))


@test
def amqp_unroutable_is_not_delivered(s):
    """A message the broker returns (no queue bound) is not counted
    delivered: it stays pending until a queue is bound."""
    c, b = new_bucket(s, "nunr")
    put_conf(c, b, AMQP_ARN, ["s3:ObjectCreated:*"])
    wait_for(lambda: metrics(s)[("strata_notify_pending", "a1")] == 0, "test event delivered")
    RABBIT.bind(False)
    try:
        before = metrics(s)
        c.put_object(Bucket=b, Key="u", Body=b"u")
        wait_failed(s, "a1", before[("strata_notify_failed_total", "a1")], 2)
        m = metrics(s)
        assert m[("strata_notify_pending", "a1")] == 1, m
        assert m[("strata_notify_delivered_total", "a1")] == \
            before[("strata_notify_delivered_total", "a1")], m
    finally:
        RABBIT.bind(True)
    wait_for(lambda: keys(RABBIT.received(b), b) == ["u"], "delivered once bound")


@test
def mqtt_target(s):
    MOSQ.subscribe()
    scenario(s, "nmqtt", MQTT_ARN, "m1", MOSQ.received, down=MOSQ.stop, up=MOSQ.start)


@test
def postgres_target(s):
    scenario(s, "npg", PG_ARN, "p1", PG.received, down=PG.stop, up=PG.start)
    # The table Strata created: MinIO's access format.
    cols = PG.psql("SELECT column_name || ':' || data_type FROM information_schema.columns "
                   "WHERE table_name = 's3events' ORDER BY ordinal_position")
    assert cols.splitlines() == ["event_time:timestamp with time zone", "event_data:jsonb"], cols
    # event_time is the record's eventTime.
    row = PG.psql("SELECT to_char(event_time AT TIME ZONE 'UTC', "
                  "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') || ' ' || "
                  "(event_data #>> '{Records,0,eventTime}') FROM s3events "
                  "WHERE event_data ? 'Records' LIMIT 1")
    a, b = row.split()
    assert a == b, row


@test
def target_specs_refused(s):
    """Addresses of the new kinds that cannot work are refused at start
    with the form the kind wants."""
    for spec, want in (("a:amqp:amqp://127.0.0.1:5672/ex", "EXCHANGE/ROUTING_KEY"),
                       ("a:amqp:http://127.0.0.1:5672/ex/k", "amqp://"),
                       ("m:mqtt:mqtt://127.0.0.1:1883/a/+/b", "no wildcards"),
                       ("m:mqtt:mqtt://127.0.0.1:99999/t", "mqtt://"),
                       ("p:postgres:postgres://127.0.0.1:5432/db", "DBNAME/TABLE"),
                       ("p:postgres:postgres://127.0.0.1:5432/db/t;drop", "DBNAME/TABLE"),
                       ("p:postgres:postgres://u:pw@127.0.0.1:5432/db/t", "DBNAME/TABLE")):
        out = subprocess.run([os.environ["STRATA_BIN"], "server", "--address",
                              f"127.0.0.1:{free_port()}", "--notify-target", spec,
                              os.path.join(s.tmp, "bad1"), os.path.join(s.tmp, "bad2"),
                              os.path.join(s.tmp, "bad3"), os.path.join(s.tmp, "bad4")],
                             capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, STRATA_DATA_DIR=s.tmp))
        assert out.returncode != 0 and want in out.stderr, (spec, out.returncode, out.stderr)


if __name__ == "__main__":
    tmp = tempfile.mkdtemp(prefix="test_notify_brokers.")
    tok = os.path.join(tmp, "pass")
    with open(tok, "w") as f:
        f.write(PASS + "\n")
    os.chmod(tok, 0o600)
    RABBIT, MOSQ, PG = Rabbit(tmp), Mosquitto(tmp), Postgres(tmp)
    try:
        t0 = time.monotonic()
        RABBIT.start()
        log(f"rabbitmq-server up in {time.monotonic() - t0:.1f} s")
        MOSQ.start()
        PG.start()
        run(Strata(args=[
            "--metrics-public",
            "--notify-target", f"a1:amqp:amqp://strata@127.0.0.1:{AMQP_PORT}/{EXCHANGE}/{RKEY}",
            "--notify-token-file", f"a1:{tok}",
            "--notify-target", f"m1:mqtt:mqtt://strata@127.0.0.1:{MQTT_PORT}/{TOPIC}",
            "--notify-token-file", f"m1:{tok}",
            "--notify-target", f"p1:postgres:postgres://strata@127.0.0.1:{PG_PORT}/postgres/"
                               "s3events",
            "--notify-token-file", f"p1:{tok}"]))
    finally:
        if MOSQ.sub:
            MOSQ.sub.loop_stop()
        for srv in (RABBIT, MOSQ, PG):
            try:
                srv.stop()
            except Exception as e:  # noqa: BLE001 - stop the others all the same
                log(f"stopping {type(srv).__name__}: {e}")
        RABBIT.epmd_kill()
        shutil.rmtree(tmp, ignore_errors=True)
