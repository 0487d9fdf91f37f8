#!/usr/bin/env python3
"""test_notify.py - bucket event notifications (server/notify/).

A webhook receiver runs in this process (http.server on 127.0.0.1, a
thread); the daemon gets two webhook targets: hook1 (the receiver, with a
bearer token from a file) and dead (a port nothing listens on).  Covers
Put/GetBucketNotificationConfiguration and AWS's validation errors, the
events of PutObject, CopyObject, CompleteMultipartUpload, DeleteObject(s),
delete markers and object tagging with prefix/suffix filters (the JSON
checked field by field), delivery in order after the receiver comes back,
delivery after kill -9 of the daemon, and PUT latency with a dead target.
"""

import json
import os
import re
import secrets
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import key_writers  # noqa: E402
from notify_hook import Receiver, drained, keys_of, metrics, put_conf, queue_conf  # noqa: E402
from strata_harness import (REGION, Strata, expect_error, free_port, log, new_bucket,  # noqa: E402
                            run, test)

HOOK_PORT = free_port()
DEAD_PORT = free_port()
TOKEN = secrets.token_hex(24)
REDIS_PORT = free_port()
REDIS_PASS = secrets.token_hex(16)
REDIS_ARN = "arn:strata:sqs::r1:redis"
NATS_PORT = free_port()
NATS_TOKEN = secrets.token_hex(16)
NATS_ARN = "arn:strata:sqs::n1:nats"
HOOK_ARN = "arn:strata:sqs::hook1:webhook"
DEAD_ARN = "arn:strata:sqs::dead:webhook"


HOOK = Receiver(HOOK_PORT)


@test
def config_round_trip(s):
    c, b = new_bucket(s, "ncfg")
    # A bucket without a configuration answers an empty one.
    got = c.get_bucket_notification_configuration(Bucket=b)
    assert "QueueConfigurations" not in got, got
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "in/", ".jpg", cid="created"),
             queue_conf(HOOK_ARN, ["s3:ObjectRemoved:Delete", "s3:ObjectTagging:*"]))
    got = c.get_bucket_notification_configuration(Bucket=b)["QueueConfigurations"]
    assert len(got) == 2, got
    assert got[0]["Id"] == "created" and got[0]["QueueArn"] == HOOK_ARN
    assert got[0]["Events"] == ["s3:ObjectCreated:*"]
    assert got[0]["Filter"]["Key"]["FilterRules"] == [{"Name": "Prefix", "Value": "in/"},
                                                      {"Name": "Suffix", "Value": ".jpg"}]
    assert got[1]["Events"] == ["s3:ObjectRemoved:Delete", "s3:ObjectTagging:*"]
    assert got[1]["Id"], "an Id is generated when none is given"
    assert "Filter" not in got[1]
    # An empty configuration turns notifications off.
    c.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={})
    assert "QueueConfigurations" not in c.get_bucket_notification_configuration(Bucket=b)


@test
def config_validation(s):
    c, b = new_bucket(s, "nval")
    kept = queue_conf(HOOK_ARN, ["s3:ObjectCreated:Put"], cid="kept")
    put_conf(c, b, kept)

    def bad(code, status, msg, *queues, **extra):
        e = expect_error(lambda: put_conf(c, b, *queues, **extra), code, status)
        assert msg in e["Error"]["Message"], e["Error"]
        # A refused configuration leaves the stored one as it was.
        got = c.get_bucket_notification_configuration(Bucket=b)
        assert [q["Id"] for q in got["QueueConfigurations"]] == ["kept"], got

    unable = "Unable to validate the following destination configurations"
    bad("InvalidArgument", 400, unable, queue_conf("arn:strata:sqs::nosuch:webhook",
                                                   ["s3:ObjectCreated:*"]))
    bad("InvalidArgument", 400, unable, queue_conf("arn:strata:sqs::hook1:nats",
                                                   ["s3:ObjectCreated:*"]))
    bad("InvalidArgument", 400, unable, queue_conf("arn:aws:sqs:us-east-1:123456789012:q",
                                                   ["s3:ObjectCreated:*"]))
    bad("InvalidArgument", 400, "not supported",
        queue_conf(HOOK_ARN, ["s3:ObjectCreated:Bogus"]))
    bad("InvalidArgument", 400, "not supported", queue_conf(HOOK_ARN, ["ObjectCreated:Put"]))
    # Same event type, overlapping prefixes (one starts the other) and no
    # suffix: AWS refuses; disjoint prefixes or other events are fine.
    overlap = "Configurations overlap"
    bad("InvalidArgument", 400, overlap, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "a/"),
        queue_conf(HOOK_ARN, ["s3:ObjectCreated:Put"], "a/b/"))
    bad("InvalidArgument", 400, overlap, queue_conf(HOOK_ARN, ["s3:ObjectCreated:Put"], None, ".jpg"),
        queue_conf(DEAD_ARN, ["s3:ObjectCreated:Put"], None, "g"))
    bad("InvalidArgument", 400, overlap, queue_conf(HOOK_ARN, ["s3:ObjectRemoved:*"]),
        queue_conf(HOOK_ARN, ["s3:ObjectRemoved:Delete"], "x/"))
    bad("InvalidArgument", 400, "more than one prefix",
        {"QueueArn": HOOK_ARN, "Events": ["s3:ObjectCreated:*"],
         "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "a"},
                                            {"Name": "prefix", "Value": "b"}]}}})
    bad("InvalidArgument", 400, "prefix or suffix",
        {"QueueArn": HOOK_ARN, "Events": ["s3:ObjectCreated:*"],
         "Filter": {"Key": {"FilterRules": [{"Name": "middle", "Value": "a"}]}}})
    # SNS topics and Lambda functions do not exist here: their
    # destinations cannot be validated.
    bad("InvalidArgument", 400, unable, TopicConfigurations=[
        {"TopicArn": "arn:aws:sns:us-east-1:123456789012:t", "Events": ["s3:ObjectCreated:*"]}])
    bad("InvalidArgument", 400, unable, LambdaFunctionConfigurations=[
        {"LambdaFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:f",
         "Events": ["s3:ObjectCreated:*"]}])
    # Event types AWS has and Strata does not produce, and EventBridge: 501.
    bad("NotImplemented", 501, "", queue_conf(HOOK_ARN, ["s3:Replication:*"]))
    bad("NotImplemented", 501, "", queue_conf(HOOK_ARN, ["s3:ObjectAcl:Put"]))
    bad("NotImplemented", 501, "", EventBridgeConfiguration={})
    # A configuration whose stored form (' written &apos;) would be over
    # the 2 MiB the request-body parser reads back: refused, as it could
    # never be loaded again (GET would fail and no event be sent).
    bad("InvalidArgument", 400, "too large",
        queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "'" * 400000))
    # Not a configuration at all.
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    import hashlib
    for body in (b"<NotificationConfiguration><QueueConfiguration><Queue>" +
                 HOOK_ARN.encode() + b"</Queue></QueueConfiguration></NotificationConfiguration>",
                 b"<Other/>", b"<NotificationConfiguration>"):
        ar = AWSRequest(method="PUT", url=f"{s.endpoint}/{b}?notification", data=body)
        ar.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
        S3SigV4Auth(s.credentials(), "s3", REGION).add_auth(ar)
        p = ar.prepare()
        r = urllib.request.Request(p.url, data=body, method="PUT", headers=dict(p.headers.items()))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            opener.open(r, timeout=10)
            raise AssertionError(f"accepted {body!r}")
        except urllib.error.HTTPError as e:
            assert e.code == 400 and b"<Code>MalformedXML</Code>" in e.read(), body
    # Fine: disjoint prefixes, different events on one prefix.
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "a/"),
             queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "b/"),
             queue_conf(HOOK_ARN, ["s3:ObjectRemoved:*"], "a/"),
             queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "c/", ".jpg"),
             queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "c/", ".png"))
    assert len(c.get_bucket_notification_configuration(Bucket=b)["QueueConfigurations"]) == 5


def check_record(path, hdrs, r, bucket, name, key, size=None, etag=None, vid=None):
    assert path == "/events", path
    assert hdrs.get("Authorization") == f"Bearer {TOKEN}", hdrs
    assert hdrs.get("Content-Type") == "application/json", hdrs
    assert r["eventVersion"] == "2.1" and r["eventSource"] == "aws:s3", r
    assert r["awsRegion"] == REGION, r
    assert r["eventName"] == name, (r["eventName"], name)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", r["eventTime"]), r
    assert r["s3"]["s3SchemaVersion"] == "1.0"
    assert r["s3"]["bucket"]["name"] == bucket
    assert r["s3"]["bucket"]["arn"] == f"arn:aws:s3:::{bucket}"
    assert r["responseElements"]["x-amz-request-id"]
    assert r["requestParameters"]["sourceIPAddress"] == "127.0.0.1"
    o = r["s3"]["object"]
    assert o["key"] == key, (o["key"], key)
    assert re.match(r"^[0-9A-F]{18}$", o["sequencer"]), o
    if size is None:
        assert "size" not in o and "eTag" not in o, o
    else:
        assert o["size"] == size and o["eTag"] == etag, (o, size, etag)
    if vid is None:
        assert "versionId" not in o, o
    else:
        assert o["versionId"] == vid, (o, vid)


@test
def events_with_filters(s):
    c, b = new_bucket(s, "nev")
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*",
                                         "s3:ObjectTagging:*"], "in/", ".bin", cid="c1"))
    HOOK.clear()
    k1 = "in/a b+c ü.bin"
    e1 = c.put_object(Bucket=b, Key=k1, Body=b"x" * 1000)["ETag"].strip('"')
    c.put_object(Bucket=b, Key="in/skip.txt", Body=b"no")     # suffix does not match
    c.put_object(Bucket=b, Key="out/skip.bin", Body=b"no")    # prefix does not match
    e2 = c.copy_object(Bucket=b, Key="in/copy.bin",
                       CopySource={"Bucket": b, "Key": k1})["CopyObjectResult"]["ETag"].strip('"')
    mp = c.create_multipart_upload(Bucket=b, Key="in/mp.bin")["UploadId"]
    part = b"p" * (5 << 20)
    pe = c.upload_part(Bucket=b, Key="in/mp.bin", UploadId=mp, PartNumber=1, Body=part)["ETag"]
    e3 = c.complete_multipart_upload(Bucket=b, Key="in/mp.bin", UploadId=mp, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": pe}]})["ETag"].strip('"')
    c.put_object_tagging(Bucket=b, Key=k1, Tagging={"TagSet": [{"Key": "t", "Value": "v"}]})
    c.delete_object_tagging(Bucket=b, Key=k1)
    c.delete_object(Bucket=b, Key="in/copy.bin")
    c.put_object(Bucket=b, Key="in/m1.bin", Body=b"1")
    c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "in/m1.bin"}, {"Key": "out/m2.bin"}]})
    want = [("ObjectCreated:Put", "in/a+b%2Bc+%C3%BC.bin", 1000, e1),
            ("ObjectCreated:Copy", "in/copy.bin", 1000, e2),
            ("ObjectCreated:CompleteMultipartUpload", "in/mp.bin", 5 << 20, e3),
            ("ObjectTagging:Put", "in/a+b%2Bc+%C3%BC.bin", None, None),
            ("ObjectTagging:Delete", "in/a+b%2Bc+%C3%BC.bin", None, None),
            ("ObjectRemoved:Delete", "in/copy.bin", None, None),
            ("ObjectCreated:Put", "in/m1.bin", 1, "c4ca4238a0b923820dcc509a6f75849b"),
            ("ObjectRemoved:Delete", "in/m1.bin", None, None)]
    recs = HOOK.wait(lambda rs: len(keys_of(rs, b)) >= len(want))
    time.sleep(0.5)  # nothing more may come
    recs = [x for x in HOOK.records() if x[2]["s3"]["bucket"]["name"] == b]
    assert len(recs) == len(want), [(r["eventName"], r["s3"]["object"]["key"]) for _, _, r in recs]
    for (p, h, r), (name, key, size, etag) in zip(recs, want):
        check_record(p, h, r, b, name, key, size, etag)
        assert r["s3"]["configurationId"] == "c1"
        assert urllib.parse.unquote_plus(r["s3"]["object"]["key"]) in (k1, key)
    seqs = [r["s3"]["object"]["sequencer"] for _, _, r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs


@test
def events_versioned_and_markers(s):
    c, b = new_bucket(s, "nver")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:Put", "s3:ObjectRemoved:*"]))
    HOOK.clear()
    r = c.put_object(Bucket=b, Key="k", Body=b"abc")
    v1, e1 = r["VersionId"], r["ETag"].strip('"')
    c.copy_object(Bucket=b, Key="k2", CopySource={"Bucket": b, "Key": "k"})  # Copy: not configured
    dm = c.delete_object(Bucket=b, Key="k")
    assert dm["DeleteMarker"]
    c.delete_object(Bucket=b, Key="k", VersionId=v1)
    recs = HOOK.wait(lambda rs: len(keys_of(rs, b)) >= 3)
    time.sleep(0.3)
    recs = [x for x in HOOK.records() if x[2]["s3"]["bucket"]["name"] == b]
    assert len(recs) == 3, [(r["eventName"], r["s3"]["object"]["key"]) for _, _, r in recs]
    check_record(*recs[0], b, "ObjectCreated:Put", "k", 3, e1, v1)
    check_record(*recs[1], b, "ObjectRemoved:DeleteMarkerCreated", "k", vid=dm["VersionId"])
    check_record(*recs[2], b, "ObjectRemoved:Delete", "k", vid=v1)


@test
def events_follow_commit_order(s):
    """One key changed at once by several clients through every path that
    makes a version or a delete marker (PUT, copy, multipart upload, POST,
    delete): its events come in the order the versions committed (the
    bucket's version order), their sequencers rising with it."""
    c, b = new_bucket(s, "norder")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    key_writers.sources(c, b, "hot", clients=8, each=15)
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"], "hot",
                              cid="order"))
    HOOK.clear()
    key_writers.burst(s.client, b, "hot", clients=8, each=15)
    committed = [vid for vid, _ in reversed(key_writers.history(c, b, "hot"))]
    assert len(committed) == 120, len(committed)
    recs = HOOK.wait(lambda rs: len(keys_of(rs, b)) >= 120, timeout=120)
    time.sleep(0.5)  # nothing more may come
    recs = [r for _, _, r in HOOK.records() if r["s3"]["bucket"]["name"] == b]
    assert {r["s3"]["object"]["key"] for r in recs} == {"hot"}, recs
    got = [r["s3"]["object"]["versionId"] for r in recs]
    at = [committed.index(v) for v in got]
    assert got == committed, ("events in delivery order against the commit order: " + " ".join(
        f"{n}({r['eventName'].split(':')[-1]})" if n != i else str(n)
        for i, (n, r) in enumerate(zip(at, recs))))
    seqs = [int(r["s3"]["object"]["sequencer"], 16) for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    names = {r["eventName"] for r in recs}
    assert names == {"ObjectCreated:Put", "ObjectCreated:Copy", "ObjectCreated:Post",
                     "ObjectCreated:CompleteMultipartUpload",
                     "ObjectRemoved:DeleteMarkerCreated"}, names


@test
def sequencers_grow_with_one_key_across_restart(s):
    """One key put, overwritten, tagged, untagged and deleted, in an
    unversioned bucket (the delete removes it) and a versioned one (a
    marker), then all again after a restart of the daemon: its events
    carry AWS's fixed-width sequencers, growing strictly with the changes;
    in the versioned bucket they sort as ListObjectVersions orders the
    versions and markers."""
    events = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*", "s3:ObjectTagging:*"]
    c, plain = new_bucket(s, "nseq")
    _, ver = new_bucket(s, "nseqv")
    c.put_bucket_versioning(Bucket=ver, VersioningConfiguration={"Status": "Enabled"})
    for b in (plain, ver):
        put_conf(c, b, queue_conf(HOOK_ARN, events))
    HOOK.clear()

    def changes(c):
        for b in (plain, ver):
            c.put_object(Bucket=b, Key="k", Body=b"one")
            c.put_object(Bucket=b, Key="k", Body=b"two!")
            c.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "t",
                                                                           "Value": "v"}]})
            c.delete_object_tagging(Bucket=b, Key="k")
            c.delete_object(Bucket=b, Key="k")

    def of(b):
        return [r for _, _, r in HOOK.records() if r["s3"]["bucket"]["name"] == b]

    changes(c)
    HOOK.wait(lambda rs: len(of(plain)) >= 5 and len(of(ver)) >= 5)
    s.restart()
    changes(s.client())
    HOOK.wait(lambda rs: len(of(plain)) >= 10 and len(of(ver)) >= 10)
    time.sleep(0.5)  # nothing more may come
    for b, removed in ((plain, "ObjectRemoved:Delete"), (ver, "ObjectRemoved:DeleteMarkerCreated")):
        recs = of(b)
        names = ["ObjectCreated:Put", "ObjectCreated:Put", "ObjectTagging:Put",
                 "ObjectTagging:Delete", removed] * 2
        assert [r["eventName"] for r in recs] == names, [r["eventName"] for r in recs]
        seqs = [r["s3"]["object"]["sequencer"] for r in recs]
        assert all(re.match(r"^[0-9A-F]{18}$", q) for q in seqs), seqs
        assert all(x < y for x, y in zip(seqs, seqs[1:])), seqs
    # Versions and markers: their events' order is the bucket's version order.
    made = [(r["s3"]["object"]["sequencer"], r["s3"]["object"]["versionId"]) for r in of(ver)
            if r["eventName"].startswith(("ObjectCreated", "ObjectRemoved"))]
    history = [vid for vid, _ in reversed(key_writers.history(c, ver, "k"))]
    assert [v for _, v in sorted(made)] == history, (made, history)


@test
def post_object_event(s):
    """A browser form upload (POST Object, presigned by boto3) is
    ObjectCreated:Post."""
    import hashlib
    import requests
    c, b = new_bucket(s, "npost")
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:Post"]))
    HOOK.clear()
    c.put_object(Bucket=b, Key="up/put", Body=b"not a post")  # Put: not configured
    post = c.generate_presigned_post(Bucket=b, Key="up/form file.txt", ExpiresIn=300)
    data = b"posted bytes"
    r = requests.post(post["url"], data=post["fields"],
                      files={"file": ("f.txt", data, "text/plain")}, timeout=30)
    assert r.status_code == 204, (r.status_code, r.text)
    recs = HOOK.wait(lambda rs: len(keys_of(rs, b)) >= 1)
    time.sleep(0.3)
    recs = [x for x in HOOK.records() if x[2]["s3"]["bucket"]["name"] == b]
    assert len(recs) == 1, [(r["eventName"], r["s3"]["object"]["key"]) for _, _, r in recs]
    check_record(*recs[0], b, "ObjectCreated:Post", "up/form+file.txt", len(data),
                 hashlib.md5(data).hexdigest())


@test
def target_down_then_up_in_order(s):
    c, b = new_bucket(s, "ndown")
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"]))
    HOOK.stop()
    try:
        before = metrics(s)
        keys = [f"k{i:03d}" for i in range(40)]
        for k in keys:
            c.put_object(Bucket=b, Key=k, Body=b"d")
        # Delivery fails and is retried: counted, nothing delivered.
        deadline = time.monotonic() + 10
        while metrics(s)[("strata_notify_failed_total", "hook1")] == \
                before[("strata_notify_failed_total", "hook1")]:
            assert time.monotonic() < deadline, "no failed delivery counted"
            time.sleep(0.1)
        m = metrics(s)
        assert m[("strata_notify_pending", "hook1")] >= len(keys), m
        assert m[("strata_notify_queued_total", "hook1")] - \
            before[("strata_notify_queued_total", "hook1")] == len(keys)
    finally:
        HOOK.clear()
        HOOK.start()
    recs = HOOK.wait(lambda rs: len(keys_of(rs, b)) >= len(keys), timeout=30)
    assert keys_of(recs, b) == keys, keys_of(recs, b)
    m = drained(s, "hook1")
    assert m[("strata_notify_delivered_total", "hook1")] >= len(keys), m
    assert m[("strata_notify_dropped_total", "hook1")] == 0, m


def killed_with_events_queued(s, prefix, keys, between=None, after=None):
    """The receiver down, a PUT of each key (events queued), kill -9 and a
    restart (between() while the daemon is down, after() once it is up),
    the receiver back: every event arrives, first occurrences in order
    (at least once: duplicates allowed, nothing lost)."""
    c, b = new_bucket(s, prefix)
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"]))
    HOOK.stop()
    try:
        for k in keys:
            c.put_object(Bucket=b, Key=k, Body=b"k")
        s.restart(kill=True, between=between)
        if after:
            after()
        HOOK.clear()
    finally:
        if HOOK.srv is None:
            HOOK.start()
    recs = HOOK.wait(lambda rs: set(keys) <= set(keys_of(rs, b)), timeout=30)
    got = keys_of(recs, b)
    firsts = [k for i, k in enumerate(got) if k not in got[:i]]
    assert firsts == keys, got


@test
def kill9_delivers_after_restart(s):
    killed_with_events_queued(s, "nkill", [f"x{i:03d}" for i in range(50)])


@test
def test_event_on_configuration(s):
    """Applying a configuration sends AWS's s3:TestEvent message once to
    each destination (hook1 named by two configurations gets one), with
    the PUT's request id and host id; an empty configuration sends none."""
    c, b = new_bucket(s, "ntest")
    HOOK.clear()
    r = c.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={
        "QueueConfigurations": [queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "a/"),
                                queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"], "b/")]})
    deadline = time.monotonic() + 20
    while not HOOK.test_events(b):
        assert time.monotonic() < deadline, "no s3:TestEvent"
        time.sleep(0.05)
    time.sleep(0.5)  # nothing more may come
    got = HOOK.test_events(b)
    assert len(got) == 1, got
    hdrs, msg = got[0]
    assert hdrs.get("Authorization") == f"Bearer {TOKEN}", hdrs
    meta = r["ResponseMetadata"]
    assert msg == {"Service": "Amazon S3", "Event": "s3:TestEvent", "Time": msg["Time"],
                   "Bucket": b, "RequestId": meta["RequestId"],
                   "HostId": meta["HTTPHeaders"]["x-amz-id-2"]}, (msg, meta)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", msg["Time"]), msg
    assert not keys_of(HOOK.records(), b), "a test event is not an event record"
    # Turning notifications off sends nothing; s3:TestEvent is no event
    # type one can subscribe to.
    c.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={})
    time.sleep(0.5)
    assert len(HOOK.test_events(b)) == 1, HOOK.test_events(b)
    e = expect_error(lambda: put_conf(c, b, queue_conf(HOOK_ARN, ["s3:TestEvent"])),
                     "InvalidArgument", 400)
    assert "not supported" in e["Error"]["Message"], e


@test
def queue_survives_first_drive_loss(s):
    """Events queued while the target is down, the daemon killed, the first
    drive replaced by an empty one (its queue copy gone): after the restart
    the second drive's copy delivers every event in order, and the new
    drive gets its copy back."""
    import shutil
    q0 = os.path.join(s.drives[0], "notify", "hook1.q")
    q1 = os.path.join(s.drives[1], "notify", "hook1.q")

    def replace_drive0():
        assert os.path.getsize(q1) == os.path.getsize(q0) > 0
        shutil.rmtree(s.drives[0])
        os.mkdir(s.drives[0])

    def rebuilt():
        assert os.path.getsize(q0) == os.path.getsize(q1) > 0, "drive 0's copy rebuilt"
        assert metrics(s)[("strata_notify_queue_copies", "hook1")] == 2
    assert metrics(s)[("strata_notify_queue_copies", "hook1")] == 2
    killed_with_events_queued(s, "nloss", [f"l{i:03d}" for i in range(30)],
                              between=replace_drive0, after=rebuilt)


@test
def stale_queue_copy_never_wins(s):
    """Drive 1's queue copy unusable at a start (its notify/ a file): the
    daemon runs on drive 0's copy alone (copies 1), delivers, empties it
    and queues new events; killed, drive 1's old copy back (longer than
    drive 0's): the restart keeps drive 0's newer copy, so the new events
    arrive (a length-only choice would lose them for the stale ones)."""
    import shutil
    c, b = new_bucket(s, "nstale")
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:ObjectCreated:*"]))
    d1 = os.path.join(s.drives[1], "notify")
    q0 = os.path.join(s.drives[0], "notify", "hook1.q")
    old, new = [f"o{i:02d}" for i in range(20)], ["n0", "n1"]
    HOOK.stop()
    try:
        for k in old:
            c.put_object(Bucket=b, Key=k, Body=b"o")

        def d1_unusable():
            shutil.move(d1, d1 + ".away")
            with open(d1, "w") as f:
                f.write("not a directory")
        s.restart(kill=True, between=d1_unusable)
        assert metrics(s)[("strata_notify_queue_copies", "hook1")] == 1
        HOOK.clear()
        HOOK.start()
        HOOK.wait(lambda rs: set(old) <= set(keys_of(rs, b)), timeout=30)
        deadline = time.monotonic() + 20
        while os.path.getsize(q0) > 0:  # caught up: emptied after 1 s idle
            assert time.monotonic() < deadline, "drive 0's copy not emptied"
            time.sleep(0.1)
        HOOK.stop()
        for k in new:
            c.put_object(Bucket=b, Key=k, Body=b"n")
        stale = os.path.join(d1 + ".away", "hook1.q")
        assert os.path.getsize(stale) > os.path.getsize(q0) > 0

        def d1_back():
            os.unlink(d1)
            shutil.move(d1 + ".away", d1)
        s.restart(kill=True, between=d1_back)
        assert metrics(s)[("strata_notify_queue_copies", "hook1")] == 2
        assert os.path.getsize(os.path.join(d1, "hook1.q")) == os.path.getsize(q0)
        HOOK.clear()
    finally:
        if HOOK.srv is None:
            HOOK.start()
        if os.path.isfile(d1):
            os.unlink(d1)
            shutil.move(d1 + ".away", d1)
    recs = HOOK.wait(lambda rs: set(new) <= set(keys_of(rs, b)), timeout=30)
    got = keys_of(recs, b)
    assert [k for k in got if k in new] == new, got


@test
def damaged_queue_files_recovered(s):
    """Killed with events queued, then in both copies of the queue a torn
    record appended to the queue file (a crash mid-append) and the
    delivered offset pointing into a record (a lost write of it): after
    the restart every event still arrives, the torn bytes are cut off."""
    copies = [os.path.join(d, "notify", "hook1") for d in s.drives[:2]]
    sizes = []

    def damage():
        for q in copies:
            sizes.append(os.path.getsize(q + ".q"))
            assert sizes[-1] > 0
            with open(q + ".q", "ab") as f:
                f.write(b"SNTQ\x40\x00\x00\x00half a rec")
            with open(q + ".ack", "wb") as f:
                f.write((5).to_bytes(8, "little"))

    def cut():
        assert [os.path.getsize(q + ".q") for q in copies] == sizes, "the torn record is cut off"
    killed_with_events_queued(s, "ntorn", [f"t{i:02d}" for i in range(20)], between=damage,
                              after=cut)


@test
def dead_target_does_not_slow_puts(s):
    c, quiet = new_bucket(s, "nquiet")
    c2, b = new_bucket(s, "ndead")
    put_conf(c, b, queue_conf(DEAD_ARN, ["s3:ObjectCreated:*"]))
    body = os.urandom(100 << 10)

    def timed(bucket):
        t = []
        for i in range(30):
            t0 = time.monotonic()
            c.put_object(Bucket=bucket, Key=f"p{i}", Body=body)
            t.append(time.monotonic() - t0)
        return sorted(t)

    timed(quiet)  # warm up
    t_off, t_on = timed(quiet), timed(b)
    med_off, med_on = t_off[15], t_on[15]
    log(f"PUT 100 KiB median: no notification {med_off * 1e3:.1f} ms, dead target "
        f"{med_on * 1e3:.1f} ms")
    assert med_on < med_off * 3 + 0.02, (med_off, med_on)
    assert t_on[-1] < 2.0, t_on
    m = metrics(s)
    assert m[("strata_notify_queued_total", "dead")] >= 30
    assert m[("strata_notify_pending", "dead")] >= 30
    assert m[("strata_notify_delivered_total", "dead")] == 0


def redis_start(tmp):
    """redis-server on REDIS_PORT with a password, nothing persisted."""
    import shutil
    import subprocess
    if not shutil.which("redis-server"):
        raise AssertionError("redis-server missing: deploy/install-deps.sh installs it")
    p = subprocess.Popen(["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--dir", tmp,
                          "--requirepass", REDIS_PASS], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while redis_cli("PING") != "PONG":
        assert time.monotonic() < deadline and p.poll() is None, "redis-server did not start"
        time.sleep(0.05)
    return p


def redis_cli(*args):
    import subprocess
    out = subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "--no-auth-warning", "-a",
                          REDIS_PASS] + list(args), capture_output=True, text=True)
    return out.stdout.strip()


def redis_list(records_only=True):
    import subprocess
    out = subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "--no-auth-warning", "-a",
                          REDIS_PASS, "--json", "LRANGE", "events", "0", "-1"],
                         capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip().startswith("["):
        # redis-cli of Debian 12 has no --json: one element per line.
        out = subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "--no-auth-warning", "-a",
                              REDIS_PASS, "LRANGE", "events", "0", "-1"],
                             capture_output=True, text=True)
        msgs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    else:
        msgs = [json.loads(x) for x in json.loads(out.stdout)]
    return [m for m in msgs if "Records" in m] if records_only else msgs


@test
def redis_target(s):
    c, b = new_bucket(s, "nredis")
    put_conf(c, b, queue_conf(REDIS_ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]))
    rtmp = tempfile.mkdtemp(dir=s.tmp)
    p = redis_start(rtmp)
    try:
        e = c.put_object(Bucket=b, Key="r/one", Body=b"12345")["ETag"].strip('"')
        c.delete_object(Bucket=b, Key="r/one")
        deadline = time.monotonic() + 20
        while len(redis_list()) < 2:
            assert time.monotonic() < deadline, redis_list()
            time.sleep(0.05)
        msgs = redis_list()
        assert len(msgs) == 2, msgs
        # The s3:TestEvent of the configuration came first, before any record.
        first = redis_list(records_only=False)[0]
        assert first["Event"] == "s3:TestEvent" and first["Bucket"] == b, first
        r0, r1 = msgs[0]["Records"][0], msgs[1]["Records"][0]
        assert r0["eventName"] == "ObjectCreated:Put" and r0["s3"]["bucket"]["name"] == b
        assert r0["s3"]["object"]["key"] == "r/one" and r0["s3"]["object"]["size"] == 5
        assert r0["s3"]["object"]["eTag"] == e
        assert r1["eventName"] == "ObjectRemoved:Delete" and r1["s3"]["object"]["key"] == "r/one"
        assert r0["s3"]["object"]["sequencer"] < r1["s3"]["object"]["sequencer"]
        # Redis down (killed by PID): events wait in the queue, then arrive in order.
        p.kill()
        p.wait(10)
        before = metrics(s)[("strata_notify_failed_total", "r1")]
        keys = [f"r/k{i:02d}" for i in range(10)]
        for k in keys:
            c.put_object(Bucket=b, Key=k, Body=b"x")
        deadline = time.monotonic() + 10
        while metrics(s)[("strata_notify_failed_total", "r1")] == before:
            assert time.monotonic() < deadline, "no failed delivery counted"
            time.sleep(0.1)
        assert metrics(s)[("strata_notify_pending", "r1")] == len(keys)
        p = redis_start(rtmp)  # empty: nothing was persisted
        deadline = time.monotonic() + 30
        while len(redis_list()) < len(keys):
            assert time.monotonic() < deadline, redis_list()
            time.sleep(0.1)
        got = [m["Records"][0]["s3"]["object"]["key"] for m in redis_list()]
        assert got == [urllib.parse.quote(k, safe="/") for k in keys], got
        m = drained(s, "r1")
        assert m[("strata_notify_delivered_total", "r1")] == 13, m
    finally:
        p.kill()
        p.wait(10)


@test
def lifecycle_events(s):
    """Expiration and transition by the ILM engine (2-second days): the
    lifecycle events, with the lifecycle as principal."""
    import datetime
    c, b = new_bucket(s, "nlc")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    put_conf(c, b, queue_conf(HOOK_ARN, ["s3:LifecycleExpiration:*"], "exp/"),
             queue_conf(HOOK_ARN, ["s3:LifecycleTransition"], "tr/"))
    HOOK.clear()
    v_exp = c.put_object(Bucket=b, Key="exp/a", Body=b"e")["VersionId"]
    v_tr = c.put_object(Bucket=b, Key="tr/b", Body=b"t" * 300000)["VersionId"]
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "exp", "Status": "Enabled", "Filter": {"Prefix": "exp/"},
         "Expiration": {"Days": 1}},
        {"ID": "tr", "Status": "Enabled", "Filter": {"Prefix": "tr/"},
         "Transitions": [{"Days": 1, "StorageClass": "STANDARD_IA"}]}]})
    recs = HOOK.wait(lambda rs: len(keys_of(rs, b)) >= 2, timeout=60)
    time.sleep(0.5)
    recs = [x for x in HOOK.records() if x[2]["s3"]["bucket"]["name"] == b]
    by = {r["eventName"]: r for _, _, r in recs}
    assert sorted(by) == ["LifecycleExpiration:DeleteMarkerCreated", "LifecycleTransition"], \
        [(r["eventName"], r["s3"]["object"]["key"]) for _, _, r in recs]
    e, t = by["LifecycleExpiration:DeleteMarkerCreated"], by["LifecycleTransition"]
    assert e["s3"]["object"]["key"] == "exp/a" and t["s3"]["object"]["key"] == "tr/b"
    assert t["s3"]["object"]["versionId"] == v_tr
    # The marker that expired the current version, not the version itself.
    marker = c.list_object_versions(Bucket=b, Prefix="exp/")["DeleteMarkers"][0]["VersionId"]
    assert e["s3"]["object"]["versionId"] == marker != v_exp
    assert e["userIdentity"]["principalId"] == "s3.amazonaws.com"
    assert c.head_object(Bucket=b, Key="tr/b")["StorageClass"] == "STANDARD_IA"
    assert datetime.datetime.strptime(t["eventTime"], "%Y-%m-%dT%H:%M:%S.%fZ")


def nats_start():
    import shutil
    import subprocess
    exe = shutil.which("nats-server") or "/usr/sbin/nats-server"
    assert os.path.exists(exe), "nats-server missing: deploy/install-deps.sh installs it"
    p = subprocess.Popen([exe, "-a", "127.0.0.1", "-p", str(NATS_PORT), "--auth", NATS_TOKEN],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p


class NatsSub:
    """A subscriber speaking the NATS text protocol on a raw socket."""

    def __init__(self, subject):
        import socket
        deadline = time.monotonic() + 10
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", NATS_PORT), timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "nats-server did not start"
                time.sleep(0.05)
        self.f = self.sock.makefile("rb")
        assert self.f.readline().startswith(b"INFO ")
        connect = json.dumps({"auth_token": NATS_TOKEN, "verbose": False})
        self.sock.sendall(f"CONNECT {connect}\r\nSUB {subject} 1\r\nPING\r\n".encode())
        assert self.f.readline() == b"PONG\r\n"
        self.msgs = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            while True:
                line = self.f.readline()
                if not line:
                    return
                if line.startswith(b"PING"):
                    self.sock.sendall(b"PONG\r\n")
                elif line.startswith(b"MSG "):
                    n = int(line.split()[-1])
                    body = json.loads(self.f.read(n + 2)[:n])
                    if "Records" in body:  # not the configuration's s3:TestEvent
                        with self.lock:
                            self.msgs.append(body)
        except (OSError, ValueError):
            return

    def keys(self):
        with self.lock:
            return [m["Records"][0]["s3"]["object"]["key"] for m in self.msgs]

    def close(self):
        self.sock.close()


@test
def nats_target(s):
    c, b = new_bucket(s, "nnats")
    put_conf(c, b, queue_conf(NATS_ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]))
    p = nats_start()
    sub = None
    try:
        sub = NatsSub("s3events")
        e = c.put_object(Bucket=b, Key="n/one", Body=b"123")["ETag"].strip('"')
        c.delete_object(Bucket=b, Key="n/one")
        deadline = time.monotonic() + 20
        while len(sub.msgs) < 2:
            assert time.monotonic() < deadline, sub.msgs
            time.sleep(0.05)
        r0, r1 = sub.msgs[0]["Records"][0], sub.msgs[1]["Records"][0]
        assert r0["eventName"] == "ObjectCreated:Put" and r0["s3"]["bucket"]["name"] == b
        assert r0["s3"]["object"]["key"] == "n/one" and r0["s3"]["object"]["size"] == 3
        assert r0["s3"]["object"]["eTag"] == e
        assert r1["eventName"] == "ObjectRemoved:Delete"
        # nats-server killed by PID: events wait, then arrive in order.
        sub.close()
        p.kill()
        p.wait(10)
        before = metrics(s)[("strata_notify_failed_total", "n1")]
        keys = [f"n/k{i:02d}" for i in range(10)]
        for k in keys:
            c.put_object(Bucket=b, Key=k, Body=b"x")
        # Core NATS drops what no one is subscribed to: wait until the
        # target's backoff has grown (5 failures: the next try >= 1.6 s
        # away), so the subscriber below is in place before it.
        deadline = time.monotonic() + 15
        while metrics(s)[("strata_notify_failed_total", "n1")] < before + 5:
            assert time.monotonic() < deadline, "failed deliveries not counted"
            time.sleep(0.05)
        assert metrics(s)[("strata_notify_pending", "n1")] == len(keys)
        p = nats_start()
        sub = NatsSub("s3events")  # subscribed before the target's retry
        deadline = time.monotonic() + 30
        while len(sub.keys()) < len(keys):
            assert time.monotonic() < deadline, sub.keys()
            time.sleep(0.1)
        assert sub.keys() == [urllib.parse.quote(k, safe="/") for k in keys], sub.keys()
        m = drained(s, "n1")
        # 12 events and the configuration's s3:TestEvent.
        assert m[("strata_notify_delivered_total", "n1")] == 13, m
    finally:
        if sub:
            sub.close()
        p.kill()
        p.wait(10)


@test
def queue_bound_drops_and_counts(s):
    """A second daemon, --notify-queue-max 5, its target dead: the
    configuration's s3:TestEvent and 8 PUTs all succeed, 5 events queued
    (the test event first), 4 dropped and counted."""
    s2 = Strata(args=["--metrics-public", "--notify-queue-max", "5", "--notify-target",
                      f"d2:webhook:http://127.0.0.1:{DEAD_PORT}/x"])
    try:
        c, b = new_bucket(s2, "nbound")
        put_conf(c, b, queue_conf("arn:strata:sqs::d2:webhook", ["s3:ObjectCreated:*"]))
        for i in range(8):
            c.put_object(Bucket=b, Key=f"b{i}", Body=b"x")
        m = metrics(s2)
        assert m[("strata_notify_queued_total", "d2")] == 5, m
        assert m[("strata_notify_dropped_total", "d2")] == 4, m
        assert m[("strata_notify_pending", "d2")] == 5, m
    finally:
        assert s2.stop(), "second daemon did not stop cleanly"


@test
def print_config_shows_targets(s):
    import subprocess
    out = subprocess.run([os.environ["STRATA_BIN"], "--print-config", "--notify-target",
                          "h:webhook:http://127.0.0.1:1/x", "--notify-token-file", "h:/t",
                          "--notify-queue-max", "7"], capture_output=True, text=True,
                         env=dict(os.environ, STRATA_DATA_DIR=s.tmp))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["notify-targets"] == ["h:webhook:http://127.0.0.1:1/x"], doc
    assert doc["notify-token-files"] == ["h:/t"] and doc["notify-queue-max"] == 7, doc
    # The config file's arrays, printed back.
    conf = os.path.join(s.tmp, "notify.json")
    with open(conf, "w") as f:
        json.dump({"notify-targets": ["c:redis:127.0.0.1:1/k", "d:nats:nats://127.0.0.1:1/s"],
                   "notify-token-files": ["c:/p"], "notify-queue-max": 9}, f)
    out = subprocess.run([os.environ["STRATA_BIN"], "--print-config", "--config", conf],
                         capture_output=True, text=True,
                         env=dict(os.environ, STRATA_DATA_DIR=s.tmp))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["notify-targets"] == ["c:redis:127.0.0.1:1/k", "d:nats:nats://127.0.0.1:1/s"]
    assert doc["notify-token-files"] == ["c:/p"] and doc["notify-queue-max"] == 9, doc
    for bad in (["--notify-target", "h:carrier-pigeon:x"], ["--notify-target", "no-kind"],
                ["--notify-target", "b@d:webhook:http://x"]):
        out = subprocess.run([os.environ["STRATA_BIN"], "--print-config"] + bad,
                             capture_output=True, text=True,
                             env=dict(os.environ, STRATA_DATA_DIR=s.tmp))
        assert out.returncode == 2 and "--notify-target" in out.stderr, (bad, out)


if __name__ == "__main__":
    tmp = tempfile.mkdtemp(prefix="test_notify.")
    tok = os.path.join(tmp, "token")
    with open(tok, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(tok, 0o600)
    HOOK.start()
    rtok = os.path.join(tmp, "redis-pass")
    with open(rtok, "w") as f:
        f.write(REDIS_PASS + "\n")
    warm = [os.path.join(tmp, f"w{i}") for i in range(1, 5)]
    ntok = os.path.join(tmp, "nats-token")
    with open(ntok, "w") as f:
        f.write(NATS_TOKEN + "\n")
    run(Strata(args=["--metrics-public",
                     "--notify-target", f"n1:nats:nats://127.0.0.1:{NATS_PORT}/s3events",
                     "--notify-token-file", f"n1:{ntok}", "--lc-day-seconds", "2", "--ilm-interval-seconds", "1",
                     "--tier", "warm:2+2:" + ",".join(warm),
                     "--notify-target", f"r1:redis:127.0.0.1:{REDIS_PORT}/events",
                     "--notify-token-file", f"r1:{rtok}",
                     "--notify-target", f"hook1:webhook:http://127.0.0.1:{HOOK_PORT}/events",
                     "--notify-token-file", f"hook1:{tok}",
                     "--notify-target", f"dead:webhook:http://127.0.0.1:{DEAD_PORT}/x"]))
