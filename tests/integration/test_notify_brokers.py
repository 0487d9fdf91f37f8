#!/usr/bin/env python3
"""test_notify_brokers.py - the amqp, mqtt and postgres event targets
(server/notify/notify_{amqp,mqtt,postgres}.c) against the real servers from
Debian (rabbitmq-server, mosquitto, postgres; notify_brokers.py starts
each once for this file on a loopback port in a private directory, with
a random password, and stops it by PID).  A missing server binary fails
the test (deploy/install-deps.sh installs them).  Each target: the configuration round trip with its ARN, the
s3:TestEvent, records with AWS's fields, the server down (the daemon
counts failures and keeps the events) then up (delivered in order), and
kill -9 of the daemon with events pending (delivered after its restart).
"""

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, free_port, log, new_bucket, run, test  # noqa: E402
from notify_brokers import (EXCHANGE, RKEY, TOPIC, Mosquitto, Postgres, Rabbit,  # noqa: E402
                            wait_for)

PASS = secrets.token_hex(16)
AMQP_ARN = "arn:strata:sqs::a1:amqp"
MQTT_ARN = "arn:strata:sqs::m1:mqtt"
PG_ARN = "arn:strata:sqs::p1:postgres"


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
    assert o["key"] == key and re.match(r"^[0-9A-F]{18}$", o["sequencer"]), o
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


def queue_while_blocked(s, c, b, target, block, prefix):
    """block() the server, PUT 10 keys: PUTs succeed, the target's
    failures are counted and the 10 events stay pending.  The keys."""
    block()
    before = metrics(s)
    ks = [f"{prefix}/k{i:02d}" for i in range(10)]
    for k in ks:
        c.put_object(Bucket=b, Key=k, Body=b"x")
    wait_failed(s, target, before[("strata_notify_failed_total", target)])
    assert metrics(s)[("strata_notify_pending", target)] == len(ks)
    return ks


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
    ks = queue_while_blocked(s, c, b, target, down, "d")
    up()
    wait_for(lambda: len(keys(received(b), b)) >= 2 + len(ks), "records after the server's return",
             timeout=60)
    got = keys(received(b), b)
    assert got[2:] == ks, got
    # The broker holds a message before the daemon has its answer: the
    # queue counts it done a moment later.
    wait_for(lambda: metrics(s)[("strata_notify_pending", target)] == 0, "queue drained")
    m = metrics(s)
    assert m[("strata_notify_delivered_total", target)] >= 3 + len(ks), m

    # kill -9 of the daemon with events pending: delivered after the restart.
    kk = queue_while_blocked(s, c, b, target, block or down, "x")
    s.restart(kill=True)
    (unblock or up)()
    wait_for(lambda: set(kk) <= set(keys(received(b), b)), "records after the daemon's restart",
             timeout=60)
    got = keys(received(b), b)
    firsts = [k for i, k in enumerate(got) if k not in got[:i]]
    assert firsts == ["in/a+b.txt"] + ks + kk, got  # at least once, in order
    wait_for(lambda: metrics(s)[("strata_notify_pending", target)] == 0, "queue drained")


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
    RABBIT, MOSQ, PG = Rabbit(tmp, PASS), Mosquitto(tmp, PASS), Postgres(tmp, PASS)
    try:
        t0 = time.monotonic()
        RABBIT.start()
        log(f"rabbitmq-server up in {time.monotonic() - t0:.1f} s")
        MOSQ.start()
        PG.start()
        run(Strata(args=[
            "--metrics-public",
            "--notify-target", f"a1:amqp:amqp://strata@127.0.0.1:{RABBIT.port}/{EXCHANGE}/{RKEY}",
            "--notify-token-file", f"a1:{tok}",
            "--notify-target", f"m1:mqtt:mqtt://strata@127.0.0.1:{MOSQ.port}/{TOPIC}",
            "--notify-token-file", f"m1:{tok}",
            "--notify-target", f"p1:postgres:postgres://strata@127.0.0.1:{PG.port}/postgres/"
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
