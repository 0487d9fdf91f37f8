#!/usr/bin/python3
"""test_lifecycle.py - bucket lifecycle against a live strata whose
lifecycle day lasts 2 seconds (--lc-day-seconds 2, a scanner pass every
second): Put/Get/DeleteBucketLifecycleConfiguration round trips (boto3's
Filter form, the legacy top-level Prefix from boto3's put_bucket_lifecycle
and from awscli v2), AWS's errors (MalformedXML, InvalidArgument,
InvalidRequest, NoSuchLifecycleConfiguration, missing Content-MD5,
InvalidStorageClass for transitions no tier serves, 1001 rules) leaving the stored configuration untouched,
x-amz-expiration on PUT, HEAD and GET, and the scanner acting on its own:
expiration of current versions (unversioned: gone; versioned: a delete
marker), noncurrent versions with NewerNoncurrentVersions, expired delete
markers, incomplete multipart uploads, size and tag filters, versions under
Object Lock (retention, legal hold) left alone until released, the
strata_ilm_* counters of /metrics, and SIGUSR1 starting a pass.
Background work is awaited by polling with a generous deadline; the cases
that wait for it run at once, a thread each, on buckets of their own.
Run by CTest (integration label) with /usr/bin/python3.
"""

import calendar
import datetime
import email.utils
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import (Strata, at_once, expect_error, log, run, test,  # noqa: E402
                            wait_until)

DAY_S = 2
WAIT_S = 90  # generous: a pass every second, due within two lifecycle days


def new_bucket(s, prefix, versioning=False):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    if versioning:
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return c, b


def put_rules(c, b, rules):
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules})


def hdrs(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"]


def wait_for(what, fn, timeout=WAIT_S):
    return wait_until(what, fn, timeout)


def exists(c, b, k):
    try:
        c.head_object(Bucket=b, Key=k)
        return True
    except c.exceptions.ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return False
        raise


def versions(c, b, prefix=""):
    """[(key, version_id, is_marker, is_latest)] newest first per key."""
    out = []
    for page in c.get_paginator("list_object_versions").paginate(Bucket=b, Prefix=prefix):
        out += [(v["Key"], v["VersionId"], False, v["IsLatest"]) for v in page.get("Versions", [])]
        out += [(m["Key"], m["VersionId"], True, m["IsLatest"])
                for m in page.get("DeleteMarkers", [])]
    return out


def passes_go_by(s, n=3):
    """Let n more scanner passes (1 s apart) run: for asserting that
    something did not happen.  Sleeping here can only make such a check
    weaker on a slow machine, never fail it."""
    time.sleep(n * 1.0 + DAY_S)


# ---- configuration ---------------------------------------------------------

@test
def config_round_trip(s):
    c, b = new_bucket(s, "lccfg")
    expect_error(lambda: c.get_bucket_lifecycle_configuration(Bucket=b),
                 "NoSuchLifecycleConfiguration", 404)
    rules = [
        {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
         "Expiration": {"Days": 30}},
        {"ID": "tagged", "Filter": {"And": {"Prefix": "tmp/", "Tags": [
            {"Key": "class", "Value": "scratch"}, {"Key": "team", "Value": "ml"}],
            "ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 1000}},
         "Status": "Disabled", "Expiration": {"Date": datetime.datetime(2031, 1, 1)}},
        {"ID": "nc", "Filter": {"ObjectSizeGreaterThan": 5}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 7, "NewerNoncurrentVersions": 3}},
        {"ID": "edm", "Filter": {"Prefix": ""}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}},
        {"ID": "tag", "Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Status": "Enabled",
         "Expiration": {"Days": 1}},
        {"ID": "and1", "Filter": {"And": {"Prefix": "one/"}}, "Status": "Enabled",
         "Expiration": {"Days": 4}},
    ]
    put_rules(c, b, rules)
    got = c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert len(got) == 6, got
    assert got[0] == rules[0], got[0]
    assert got[1]["Filter"]["And"]["Tags"] == rules[1]["Filter"]["And"]["Tags"], got[1]
    assert got[1]["Filter"]["And"]["Prefix"] == "tmp/"
    assert got[1]["Filter"]["And"]["ObjectSizeGreaterThan"] == 10
    assert got[1]["Filter"]["And"]["ObjectSizeLessThan"] == 1000
    assert got[1]["Status"] == "Disabled"
    assert got[1]["Expiration"]["Date"].replace(tzinfo=None) == datetime.datetime(2031, 1, 1)
    assert got[2]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 7,
                                                     "NewerNoncurrentVersions": 3}, got[2]
    assert got[3]["Expiration"] == {"ExpiredObjectDeleteMarker": True}, got[3]
    assert got[3]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2}
    assert got[4]["Filter"] == {"Tag": {"Key": "k", "Value": "v"}}, got[4]
    assert got[5] == rules[5], got[5]  # an And of one predicate stays an And
    # A rule without an ID gets one, which GET shows.
    put_rules(c, b, [{"Filter": {}, "Status": "Enabled", "Expiration": {"Days": 1}}])
    got = c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert len(got) == 1 and got[0]["ID"], got
    r = c.delete_bucket_lifecycle(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    expect_error(lambda: c.get_bucket_lifecycle_configuration(Bucket=b),
                 "NoSuchLifecycleConfiguration", 404)
    # Deleting what is not there succeeds, as on AWS.
    r = c.delete_bucket_lifecycle(Bucket=b)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204


def legacy_prefix_round_trip(s):
    c, b = new_bucket(s, "lclegacy")
    # boto3's old PutBucketLifecycle: the rule's Prefix sits in the Rule.
    c.put_bucket_lifecycle(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "old", "Prefix": "logs/", "Status": "Enabled", "Expiration": {"Days": 3}}]})
    got = c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert got == [{"ID": "old", "Prefix": "logs/", "Status": "Enabled",
                    "Expiration": {"Days": 3}}], got
    got = c.get_bucket_lifecycle(Bucket=b)["Rules"]
    assert got[0]["Prefix"] == "logs/", got
    if not os.access("/usr/bin/aws", os.X_OK):
        log("awscli v2 not installed: legacy Prefix through awscli not checked")
        return
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "AWS_ACCESS_KEY_ID": s.ak,
           "AWS_SECRET_ACCESS_KEY": s.sk, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    cfg = {"Rules": [{"ID": "cli", "Prefix": "cli/", "Status": "Enabled",
                      "Expiration": {"Days": 5}}]}
    aws = ["/usr/bin/aws", "--endpoint-url", s.endpoint, "s3api"]
    p = subprocess.run(aws + ["put-bucket-lifecycle-configuration", "--bucket", b,
                              "--lifecycle-configuration", json.dumps(cfg)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(aws + ["get-bucket-lifecycle-configuration", "--bucket", b],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["Rules"] == cfg["Rules"], p.stdout


@test
def config_errors(s):
    c, b = new_bucket(s, "lcerr")
    good = [{"ID": "keep", "Filter": {"Prefix": "a/"}, "Status": "Enabled",
             "Expiration": {"Days": 9}}]
    put_rules(c, b, good)

    def bad(rules, code, status=400):
        expect_error(lambda: put_rules(c, b, rules), code, status)

    exp1 = {"Days": 1}
    bad([{"ID": "x", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 0}}],
        "InvalidArgument")
    bad([{"ID": "x", "Filter": {}, "Status": "Enabled",
          "Expiration": {"Date": datetime.datetime(2031, 1, 1, 10, 0)}}], "InvalidArgument")
    bad([{"ID": "x", "Filter": {}, "Status": "Enabled", "Expiration": exp1},
         {"ID": "x", "Filter": {}, "Status": "Enabled", "Expiration": exp1}], "InvalidArgument")
    bad([{"ID": "x", "Filter": {}, "Status": "Enabled",
          "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 101}}],
        "InvalidArgument")
    bad([{"ID": "x", "Filter": {"And": {"ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 5}},
          "Status": "Enabled", "Expiration": exp1}], "InvalidArgument")
    bad([{"ID": "x", "Prefix": "a", "Filter": {"Prefix": "a"}, "Status": "Enabled",
          "Expiration": exp1}], "MalformedXML")
    bad([{"ID": "x", "Filter": {}, "Status": "Enabled"}], "InvalidRequest")
    bad([{"ID": "x", "Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Status": "Enabled",
          "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}], "InvalidRequest")
    bad([{"ID": f"r{i}", "Filter": {"Prefix": f"p{i}/"}, "Status": "Enabled",
          "Expiration": exp1} for i in range(1001)], "MalformedXML")
    # Valid, but this single-tier daemon has no tier serving the class:
    # refused (test_tiers.py covers a daemon that has them).
    bad([{"ID": "t", "Filter": {}, "Status": "Enabled",
          "Transitions": [{"Days": 30, "StorageClass": "STANDARD_IA"}]}], "InvalidStorageClass")
    bad([{"ID": "t", "Filter": {}, "Status": "Enabled",
          "NoncurrentVersionTransitions": [{"NoncurrentDays": 30, "StorageClass": "GLACIER"}]}],
        "InvalidStorageClass")
    bad([{"ID": "t", "Filter": {}, "Status": "Enabled",
          "Transitions": [{"Days": 30, "StorageClass": "PLATINUM"}]}], "InvalidStorageClass")
    # AWS requires Content-MD5 (or an x-amz-checksum-*) on this call.
    nomd5 = s.client()

    def strip(request, **kw):
        for h in list(request.headers.keys()):
            if h.lower() == "content-md5" or h.lower().startswith("x-amz-checksum-") or \
                    h.lower() == "x-amz-sdk-checksum-algorithm":
                del request.headers[h]
    nomd5.meta.events.register("before-sign.s3.PutBucketLifecycleConfiguration", strip)
    expect_error(lambda: put_rules(nomd5, b, [{"ID": "y", "Filter": {}, "Status": "Enabled",
                                               "Expiration": exp1}]), "InvalidRequest", 400)
    # Every refusal left the stored configuration as it was.
    assert c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"] == good
    # And on a bucket that does not exist.
    expect_error(lambda: c.get_bucket_lifecycle_configuration(Bucket=b + "-none"),
                 "NoSuchBucket", 404)


# ---- x-amz-expiration --------------------------------------------------------

EXP_RE = re.compile(r'^expiry-date="([^"]+)", rule-id="([^"]*)"$')


def expiry_of(h):
    m = EXP_RE.match(h.get("x-amz-expiration", ""))
    assert m, h.get("x-amz-expiration")
    return calendar.timegm(email.utils.parsedate(m.group(1))), m.group(2)


@test
def expiration_header(s):
    c, b = new_bucket(s, "lchdr")
    # A long lifecycle-day count keeps the objects alive during the test.
    put_rules(c, b, [
        {"ID": "long", "Filter": {"Prefix": "e/"}, "Status": "Enabled",
         "Expiration": {"Days": 1000}},
        {"ID": "short", "Filter": {"Prefix": "e/short/"}, "Status": "Enabled",
         "Expiration": {"Days": 500}},
        {"ID": "off", "Filter": {"Prefix": "off/"}, "Status": "Disabled",
         "Expiration": {"Days": 500}}])
    t0 = time.time()
    put = c.put_object(Bucket=b, Key="e/x", Body=b"x")
    exp_put, rid = expiry_of(hdrs(put))
    assert rid == "long", rid
    head = c.head_object(Bucket=b, Key="e/x")
    lm = calendar.timegm(head["LastModified"].utctimetuple())
    exp_head, rid = expiry_of(hdrs(head))
    assert rid == "long" and exp_head == exp_put
    get = c.get_object(Bucket=b, Key="e/x")
    assert get["Body"].read() == b"x"
    assert expiry_of(hdrs(get)) == (exp_head, "long")
    # Last-Modified + 1000 days, rounded up to a lifecycle-day boundary.
    assert exp_head % DAY_S == 0, exp_head
    assert lm + 1000 * DAY_S <= exp_head <= lm + 1000 * DAY_S + DAY_S + 1, (lm, exp_head, t0)
    # The shorter of two matching rules applies.
    c.put_object(Bucket=b, Key="e/short/y", Body=b"y")
    assert expiry_of(hdrs(c.head_object(Bucket=b, Key="e/short/y")))[1] == "short"
    # No header where no enabled rule applies.
    for k in ("other", "off/z"):
        r = c.put_object(Bucket=b, Key=k, Body=b"z")
        assert "x-amz-expiration" not in hdrs(r)
        assert "x-amz-expiration" not in hdrs(c.head_object(Bucket=b, Key=k))
    c.delete_bucket_lifecycle(Bucket=b)
    assert "x-amz-expiration" not in hdrs(c.head_object(Bucket=b, Key="e/x"))


# ---- the scanner -------------------------------------------------------------

def expire_current_unversioned(s):
    c, b = new_bucket(s, "lcexp")
    put_rules(c, b, [{"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
                      "Expiration": {"Days": 1}},
                     {"ID": "off", "Filter": {"Prefix": "keep/"}, "Status": "Disabled",
                      "Expiration": {"Days": 1}}])
    for k in ("tmp/a", "tmp/b", "keep/a", "other"):
        c.put_object(Bucket=b, Key=k, Body=k.encode())
    wait_for("tmp/ to expire", lambda: not exists(c, b, "tmp/a") and not exists(c, b, "tmp/b"))
    assert versions(c, b, "tmp/") == []  # removed, no marker on an unversioned bucket
    for k in ("keep/a", "other"):
        assert c.get_object(Bucket=b, Key=k)["Body"].read() == k.encode()


def expire_current_versioned(s):
    c, b = new_bucket(s, "lcexpv", versioning=True)
    put_rules(c, b, [{"ID": "cur", "Filter": {"Prefix": "d/"}, "Status": "Enabled",
                      "Expiration": {"Days": 1}}])
    v1 = c.put_object(Bucket=b, Key="d/k", Body=b"one")["VersionId"]
    wait_for("a delete marker on d/k",
             lambda: any(m and latest for (_, _, m, latest) in versions(c, b, "d/")))
    vs = versions(c, b, "d/")
    assert [(k, vid, m) for (k, vid, m, _) in vs if not m] == [("d/k", v1, False)], vs
    assert len([v for v in vs if v[2]]) == 1, vs  # exactly one marker
    # The data is still there as a noncurrent version.
    assert c.get_object(Bucket=b, Key="d/k", VersionId=v1)["Body"].read() == b"one"
    passes_go_by(s)
    assert len([v for v in versions(c, b, "d/") if v[2]]) == 1  # no marker on a marker


def expire_noncurrent(s):
    c, b = new_bucket(s, "lcnc", versioning=True)
    put_rules(c, b, [{"ID": "nc", "Filter": {"Prefix": "n/"}, "Status": "Enabled",
                      "NoncurrentVersionExpiration": {"NoncurrentDays": 1,
                                                      "NewerNoncurrentVersions": 1}}])
    vids = [c.put_object(Bucket=b, Key="n/k", Body=f"v{i}".encode())["VersionId"]
            for i in range(4)]
    # The current version and the newest noncurrent one stay.
    wait_for("the older noncurrent versions to go",
             lambda: [v[1] for v in versions(c, b, "n/")] == [vids[3], vids[2]])
    assert c.get_object(Bucket=b, Key="n/k")["Body"].read() == b"v3"
    assert c.get_object(Bucket=b, Key="n/k", VersionId=vids[2])["Body"].read() == b"v2"
    passes_go_by(s)
    assert [v[1] for v in versions(c, b, "n/")] == [vids[3], vids[2]]


def expired_delete_markers(s):
    c, b = new_bucket(s, "lcdm", versioning=True)
    put_rules(c, b, [{"ID": "dm", "Filter": {"Prefix": "m/"}, "Status": "Enabled",
                      "Expiration": {"ExpiredObjectDeleteMarker": True},
                      "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}])
    c.put_object(Bucket=b, Key="m/k", Body=b"x")
    c.delete_object(Bucket=b, Key="m/k")          # a marker over one version
    c.delete_object(Bucket=b, Key="m/lonely")     # a marker alone from the start
    c.put_object(Bucket=b, Key="x/k", Body=b"x")  # outside the rule
    c.delete_object(Bucket=b, Key="x/k")
    # The version expires, then the marker is the only one left and goes too.
    wait_for("m/ to be empty", lambda: versions(c, b, "m/") == [])
    xs = versions(c, b, "x/")
    assert len(xs) == 2 and sum(1 for v in xs if v[2]) == 1, xs


@test
def dates_any_year_round_trip(s):
    """Expiration Dates before 1970, at the epoch and far ahead are stored
    exactly: GET returns each Date as sent (raw body checked too); a time
    other than midnight is still InvalidArgument."""
    c, b = new_bucket(s, "lcdates")
    utc = datetime.timezone.utc
    dates = [datetime.datetime(1015, 1, 1, tzinfo=utc), datetime.datetime(1969, 12, 31, tzinfo=utc),
             datetime.datetime(1970, 1, 1, tzinfo=utc), datetime.datetime(9999, 12, 31, tzinfo=utc)]
    # On a prefix no object has: a date in the past expires at once.
    rules = [{"ID": f"d{i}", "Filter": {"Prefix": f"none{i}/"}, "Status": "Enabled",
              "Expiration": {"Date": d}} for i, d in enumerate(dates)]
    put_rules(c, b, rules)
    raw = []
    c.meta.events.register("after-call.s3.GetBucketLifecycleConfiguration",
                           lambda http_response, **kw: raw.append(http_response.content))
    got = c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert got == rules, got
    for d in ("1015-01-01", "1969-12-31", "1970-01-01", "9999-12-31"):
        assert f"<Date>{d}T00:00:00.000Z</Date>".encode() in raw[-1], raw[-1]
    expect_error(lambda: put_rules(c, b, [{"ID": "x", "Filter": {}, "Status": "Enabled",
                                           "Expiration": {"Date": datetime.datetime(
                                               1969, 12, 31, 12, tzinfo=utc)}}]),
                 "InvalidArgument", 400)
    assert c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"] == rules


def days_expire_lone_delete_markers(s):
    """AWS: an Expiration with Days on a versioned bucket also removes an
    expired object delete marker (the key's only version) once the marker
    is Days old.  A marker with a version behind it stays until that
    version is gone; markers outside the rule stay; a tag-filtered Days
    rule cannot name a marker."""
    c, b = new_bucket(s, "lcdaysdm", versioning=True)
    put_rules(c, b, [{"ID": "d", "Filter": {"Prefix": "d/"}, "Status": "Enabled",
                      "Expiration": {"Days": 2}},
                     {"ID": "t", "Filter": {"And": {"Prefix": "t/", "Tags": [
                         {"Key": "a", "Value": "b"}]}}, "Status": "Enabled",
                      "Expiration": {"Days": 1}}])
    v1 = c.put_object(Bucket=b, Key="d/behind", Body=b"x")["VersionId"]
    t0 = time.monotonic()
    c.delete_object(Bucket=b, Key="d/behind")  # a marker over one version
    c.delete_object(Bucket=b, Key="d/alone")   # a marker alone from the start
    c.delete_object(Bucket=b, Key="t/alone")
    c.delete_object(Bucket=b, Key="x/alone")   # outside every rule
    wait_for("d/alone's marker to go", lambda: versions(c, b, "d/alone") == [])
    # Not before it was Days (2 x 2 s) old.
    assert time.monotonic() - t0 >= 2 * DAY_S, time.monotonic() - t0
    passes_go_by(s)
    vs = versions(c, b, "d/behind")
    assert sorted((vid, m) for (_, vid, m, _) in vs if not m) == [(v1, False)], vs
    assert sum(1 for v in vs if v[2] and v[3]) == 1, vs  # the marker is still the latest
    assert c.get_object(Bucket=b, Key="d/behind", VersionId=v1)["Body"].read() == b"x"
    for k in ("t/alone", "x/alone"):
        assert [v[2] for v in versions(c, b, k)] == [True], k
    # Once the version behind it is gone, the (old) marker goes too.
    c.delete_object(Bucket=b, Key="d/behind", VersionId=v1)
    wait_for("d/behind's marker to go", lambda: versions(c, b, "d/behind") == [])


def abort_incomplete_uploads(s):
    c, b = new_bucket(s, "lcmpu")
    put_rules(c, b, [{"ID": "ab", "Filter": {"Prefix": "up/"}, "Status": "Enabled",
                      "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}])
    u1 = c.create_multipart_upload(Bucket=b, Key="up/x")["UploadId"]
    c.upload_part(Bucket=b, Key="up/x", UploadId=u1, PartNumber=1, Body=b"p" * 1000)
    u2 = c.create_multipart_upload(Bucket=b, Key="keep/x")["UploadId"]

    def ids():
        return {u["UploadId"] for u in c.list_multipart_uploads(Bucket=b).get("Uploads", [])}
    assert ids() == {u1, u2}
    wait_for("up/x's upload to be aborted", lambda: ids() == {u2})
    expect_error(lambda: c.list_parts(Bucket=b, Key="up/x", UploadId=u1), "NoSuchUpload", 404)
    c.abort_multipart_upload(Bucket=b, Key="keep/x", UploadId=u2)


def size_and_tag_filters(s):
    c, b = new_bucket(s, "lcflt")
    put_rules(c, b, [
        {"ID": "big", "Filter": {"And": {"Prefix": "sz/", "ObjectSizeGreaterThan": 100}},
         "Status": "Enabled", "Expiration": {"Days": 1}},
        {"ID": "small", "Filter": {"ObjectSizeLessThan": 10}, "Status": "Enabled",
         "Expiration": {"Days": 1}},
        {"ID": "tmp", "Filter": {"Tag": {"Key": "class", "Value": "tmp"}}, "Status": "Enabled",
         "Expiration": {"Days": 1}}])
    c.put_object(Bucket=b, Key="sz/big", Body=b"b" * 200)
    c.put_object(Bucket=b, Key="sz/mid", Body=b"m" * 100)  # not > 100, not < 10
    c.put_object(Bucket=b, Key="tiny", Body=b"t" * 9)
    c.put_object(Bucket=b, Key="ten", Body=b"t" * 10)
    r = c.put_object(Bucket=b, Key="tg/a", Body=b"a" * 50, Tagging="class=tmp&x=1")
    assert expiry_of(hdrs(r))[1] == "tmp"
    c.put_object(Bucket=b, Key="tg/b", Body=b"b" * 50, Tagging="class=keep")
    assert "x-amz-expiration" not in hdrs(c.head_object(Bucket=b, Key="tg/b"))
    assert expiry_of(hdrs(c.head_object(Bucket=b, Key="sz/big")))[1] == "big"
    wait_for("the matching objects to expire",
             lambda: not any(exists(c, b, k) for k in ("sz/big", "tiny", "tg/a")))
    for k, n in (("sz/mid", 100), ("ten", 10), ("tg/b", 50)):
        assert len(c.get_object(Bucket=b, Key=k)["Body"].read()) == n, k



def metrics(s):
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{s.endpoint}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {ln.split()[0]: int(ln.split()[1]) for ln in text.splitlines()
            if ln.startswith("strata_ilm_")}


def scanner_metrics(s):
    c, b = new_bucket(s, "lcmet")
    put_rules(c, b, [{"ID": "all", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 1}}])
    before = metrics(s)
    for name in ("passes", "scanned", "expired", "noncurrent_expired", "delete_markers_removed",
                 "uploads_aborted", "skipped_locked", "errors", "healed", "tmp_reclaimed"):
        assert f"strata_ilm_{name}_total" in before, before
    c.put_object(Bucket=b, Key="k", Body=b"k")
    wait_for("k to expire", lambda: not exists(c, b, "k"))
    after = wait_for("the pass to be counted", lambda: (
        lambda m: m if m["strata_ilm_expired_total"] > before["strata_ilm_expired_total"] else None)(
            metrics(s)))
    assert after["strata_ilm_passes_total"] > before["strata_ilm_passes_total"]
    assert after["strata_ilm_scanned_total"] > before["strata_ilm_scanned_total"]
    assert after["strata_ilm_errors_total"] == 0, after


def locked_versions_are_left_alone(s):
    c = s.client()
    b = s.bucket_name("lclock")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    put_rules(c, b, [{"ID": "all", "Filter": {"Prefix": "l/"}, "Status": "Enabled",
                      "Expiration": {"Days": 1},
                      "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}])
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    locked = c.put_object(Bucket=b, Key="l/ret", Body=b"retained", ObjectLockMode="COMPLIANCE",
                          ObjectLockRetainUntilDate=until)["VersionId"]
    held = c.put_object(Bucket=b, Key="l/hold", Body=b"held",
                        ObjectLockLegalHoldStatus="ON")["VersionId"]
    free = c.put_object(Bucket=b, Key="l/free", Body=b"free")["VersionId"]
    before = metrics(s)["strata_ilm_skipped_locked_total"]
    # Expiration puts a delete marker on each (markers are never locked);
    # then the noncurrent unlocked version goes, the locked ones stay.
    wait_for("l/free's version to be removed",
             lambda: not [v for v in versions(c, b, "l/free") if not v[2]])
    wait_for("the scanner to meet the locked versions",
             lambda: metrics(s)["strata_ilm_skipped_locked_total"] >= before + 2)
    for k, vid, body in (("l/ret", locked, b"retained"), ("l/hold", held, b"held")):
        assert c.get_object(Bucket=b, Key=k, VersionId=vid)["Body"].read() == body
        vs = versions(c, b, k)  # the locked version under the marker expiration added
        assert sorted((m, latest) for (_, _, m, latest) in vs) == [(False, False), (True, True)], vs
    assert free not in [v[1] for v in versions(c, b, "l/")]
    c.put_object_legal_hold(Bucket=b, Key="l/hold", VersionId=held,
                            LegalHold={"Status": "OFF"})
    # Once the hold is released lifecycle removes the version on a later pass.
    wait_for("l/hold's version to go once released",
             lambda: not [v for v in versions(c, b, "l/hold") if not v[2]])
    assert c.get_object(Bucket=b, Key="l/ret", VersionId=locked)["Body"].read() == b"retained"


# These mostly wait for lifecycle days and scanner passes, each on a bucket
# of its own: they run at once.
test(at_once("scanner_and_legacy_cases", [
    legacy_prefix_round_trip, expire_current_unversioned, expire_current_versioned,
    expire_noncurrent, expired_delete_markers, days_expire_lone_delete_markers,
    locked_versions_are_left_alone]))
# Alone: these read an object (upload) due in a day before it may go, and
# scanner_metrics needs the counters to move for its own object only.
for _fn in (abort_incomplete_uploads, size_and_tag_filters, scanner_metrics):
    test(_fn)


@test
def sigusr1_starts_a_pass(s):
    if s.proc is None:
        log("external daemon: SIGUSR1 not checked")
        return
    import signal
    # A daemon of its own whose next pass is an hour away: only the signal
    # can start one during the test.
    home = os.environ["HOME"]
    s2 = Strata(args=["--ilm-interval-seconds", "3600", "--metrics-public"])
    try:
        wait_for("the start-up pass", lambda: metrics(s2)["strata_ilm_passes_total"] == 1)
        s2.proc.send_signal(signal.SIGUSR1)
        wait_for("a pass after SIGUSR1", lambda: metrics(s2)["strata_ilm_passes_total"] == 2)
        assert s2.proc.poll() is None
    finally:
        os.environ["HOME"] = home
        assert s2.stop(), "second daemon did not stop cleanly"

if __name__ == "__main__":
    # --metrics-public: the scanner's counters are read from an anonymous /metrics.
    run(Strata(args=["--lc-day-seconds", str(DAY_S), "--ilm-interval-seconds", "1",
                     "--metrics-public"]))
