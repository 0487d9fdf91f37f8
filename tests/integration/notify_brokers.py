"""notify_brokers.py - the message brokers and database the amqp, mqtt and
postgres event targets are tested and measured against
(test_notify_brokers.py, tests/bench/notify_bench.py): the Debian servers,
each on a free loopback port in a private directory, stopped by PID.

  Rabbit     rabbitmq-server: its own node name, mnesia/log dirs, config (a
             user "strata" with the given password), erlang cookie (HOME),
             and epmd on a port of its own (epmd_kill() at the end);
             consumed with pika (python3-pika).
  Mosquitto  a config with a password file and a persistent store; consumed
             with paho-mqtt (python3-paho-mqtt) in a persistent session, so
             a broker restart loses nothing.
  Postgres   initdb + postgres of /usr/lib/postgresql/15 as the postgres
             user (it refuses root), scram password for TCP, queried with
             psql over the private directory's unix socket.

A missing server binary is an AssertionError (deploy/install-deps.sh
installs them).
"""

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from ports import free_port

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


# ---- RabbitMQ ------------------------------------------------------------

class Rabbit:
    def __init__(self, tmp, password):
        self.password = password
        self.port, self.dist, self.epmd = free_port(), free_port(), free_port()
        self.exe = "/usr/lib/rabbitmq/bin/rabbitmq-server"
        assert os.path.exists(self.exe), "rabbitmq-server missing: deploy/install-deps.sh"
        self.dir = os.path.join(tmp, "rabbitmq")
        os.mkdir(self.dir)
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write(f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
                    f"default_user = strata\ndefault_pass = {self.password}\n"
                    "log.console = false\n")
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        self.p = None
        self.msgs = []

    def start(self):
        d = self.dir
        env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": d, "LANG": "C.UTF-8",
               "RABBITMQ_CONF_ENV_FILE": os.path.join(d, "env.conf"),
               "RABBITMQ_NODENAME": f"strata{self.port}@localhost",
               "RABBITMQ_CONFIG_FILE": os.path.join(d, "rabbitmq"),
               "RABBITMQ_MNESIA_BASE": os.path.join(d, "mnesia"),
               "RABBITMQ_LOG_BASE": os.path.join(d, "log"),
               "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(d, "enabled_plugins"),
               "RABBITMQ_PID_FILE": os.path.join(d, "pid"),
               "RABBITMQ_DIST_PORT": str(self.dist),
               "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface "
                                                      "{127,0,0,1}",
               # The epmd it starts is its own: a private port, loopback.
               "ERL_EPMD_PORT": str(self.epmd), "ERL_EPMD_ADDRESS": "127.0.0.1"}
        self.p = subprocess.Popen([self.exe], env=env, cwd=d, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(self._up, "rabbitmq-server start", timeout=90, step=0.5)

    def _up(self):
        rc = self.p.poll()
        assert rc is None, f"rabbitmq-server exited {rc} at start; its logs: {self.dir}/log"
        return self._try_conn()

    def _try_conn(self):
        try:
            self.conn().close()
            return True
        except Exception:
            return False

    def conn(self):
        import pika
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", self.port, credentials=pika.PlainCredentials("strata", self.password),
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
        wait_for(lambda: not port_open(self.port), "rabbitmq stopped")

    def epmd_kill(self):
        """The epmd daemon the broker started on its private port."""
        out = subprocess.run(["ss", "-Hltnp", f"sport = :{self.epmd}"], capture_output=True,
                             text=True).stdout
        for pid in set(re.findall(r"pid=(\d+)", out)):
            os.kill(int(pid), signal.SIGKILL)


# ---- Mosquitto -----------------------------------------------------------

class Mosquitto:
    def __init__(self, tmp, password):
        self.password = password
        self.port = free_port()
        self.exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        assert os.path.exists(self.exe), "mosquitto missing: deploy/install-deps.sh"
        self.dir = os.path.join(tmp, "mosquitto")
        os.mkdir(self.dir)
        pw = os.path.join(self.dir, "passwd")
        subprocess.run(["mosquitto_passwd", "-c", "-b", pw, "strata", self.password], check=True,
                       capture_output=True)
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous false\n"
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
        wait_for(lambda: self.p.poll() is None and port_open(self.port), "mosquitto start")

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
        cl.username_pw_set("strata", self.password)
        cl.on_connect, cl.on_subscribe, cl.on_message = on_connect, on_subscribe, on_message
        cl.reconnect_delay_set(0.2, 1)
        cl.connect("127.0.0.1", self.port, 30)
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
        wait_for(lambda: not port_open(self.port), "mosquitto stopped")


# ---- PostgreSQL ----------------------------------------------------------

class Postgres:
    def __init__(self, tmp, password):
        self.password = password
        self.port = free_port()
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
            f.write(self.password + "\n")
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
                                   "-k", self.dir, "-h", "127.0.0.1", "-p", str(self.port)],
                                  user=self.uid, group=self.gid, extra_groups=[],
                                  cwd=self.dir, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        wait_for(lambda: self.p.poll() is None and self.psql("SELECT 1") == "1",
                 "postgres start", timeout=30, step=0.2)

    def psql(self, sql):
        r = subprocess.run(["psql", "-h", self.dir, "-p", str(self.port), "-U", "strata", "-d",
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
