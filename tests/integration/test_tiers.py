#!/usr/bin/python3
"""test_tiers.py - storage tiers and lifecycle transitions against a live
three-tier strata (hot 2+2 on 4 drives, warm 4+2 on 6, compliance 4+4 on
8; --lc-day-seconds 2, a scanner pass every second):
x-amz-storage-class on PUT, CreateMultipartUpload, CopyObject and POST Object landing the
data on the class's tier (shard files counted on the tiers' drives), the
class in HEAD, GET, ListObjects(V2), ListObjectVersions, ListParts,
ListMultipartUploads and GetObjectAttributes, InvalidStorageClass for an
unknown class and for a class no configured tier serves; Transition and
NoncurrentVersionTransition rules (AWS's validation, exact round trip)
moving single-part, multipart and inline-size objects hot -> warm ->
compliance with identical bytes (MD5) and nothing left on the tiers they
left; no move back to a warmer class; a version under Object Lock moving and staying undeletable; a GET
streaming a 64 MiB object throughout its transition returning the complete
old bytes; the strata_ilm_transitioned/bytes_moved counters; the
strata_drive_* and strata_set_* metrics of every tier's drives (tier label).
Run by CTest (integration label) with /usr/bin/python3.
"""

import datetime
import hashlib
import atexit
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, expect_error, log, run, test, wait_until  # noqa: E402

DAY_S = 2
WAIT_S = 90
MiB = 1 << 20

BASE = tempfile.mkdtemp(prefix="test_tiers.", dir=os.environ.get("STRATA_TEST_TMPDIR"))
HOT = [os.path.join(BASE, f"h{i}") for i in range(1, 5)]
WARM = [os.path.join(BASE, f"w{i}") for i in range(1, 7)]
COLD = [os.path.join(BASE, f"c{i}") for i in range(1, 9)]
for d in HOT:
    os.makedirs(d)
atexit.register(shutil.rmtree, BASE, True)


def tier_flags():
    return ["--tier", "warm:4+2:" + ",".join(WARM), "--tier", "compliance:4+4:" + ",".join(COLD)]


def shard_files(drives):
    """Shard files under the drives' data/ directories."""
    n = 0
    for d in drives:
        for _root, _dirs, files in os.walk(os.path.join(d, "data")):
            n += len(files)
    return n


def wait_for(what, fn, timeout=WAIT_S):
    return wait_until(what, fn, timeout)


def metrics(s):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    out = {}
    with opener.open(f"{s.endpoint}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("strata_ilm_"):
                k, v = line.split()
                out[k] = float(v)
    return out


def body(n, seed):
    return hashlib.sha256(seed.encode()).digest() * (n // 32) + b"x" * (n % 32)


def md5(b):
    return hashlib.md5(b).hexdigest()


def get_md5(c, b, k, vid=None):
    kw = {"VersionId": vid} if vid else {}
    return md5(c.get_object(Bucket=b, Key=k, **kw)["Body"].read())


def head_class(c, b, k, vid=None):
    kw = {"VersionId": vid} if vid else {}
    h = c.head_object(Bucket=b, Key=k, **kw)
    return h.get("StorageClass", "STANDARD")


def list_class(c, b, k):
    for o in c.list_objects_v2(Bucket=b, Prefix=k).get("Contents", []):
        if o["Key"] == k:
            return o["StorageClass"]
    return None


def new_bucket(s, prefix, versioning=False):
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    if versioning:
        c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return c, b


def mpu(c, b, k, parts, **kw):
    up = c.create_multipart_upload(Bucket=b, Key=k, **kw)["UploadId"]
    done = []
    for i, p in enumerate(parts, 1):
        done.append({"PartNumber": i, "ETag": c.upload_part(Bucket=b, Key=k, UploadId=up,
                                                            PartNumber=i, Body=p)["ETag"]})
    return up, done


@test
def drive_metrics_per_tier(s):
    """strata_drive_* and strata_set_* cover every tier's drives, labelled
    with the tier; a PUT to STANDARD_IA shows as writes on the warm drives."""
    from prometheus_client.parser import text_string_to_metric_families

    def scrape():
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{s.endpoint}/metrics", timeout=10) as r:
            return {f.name: f for f in text_string_to_metric_families(r.read().decode())}

    def samples(fams, fam, name=None, **labels):
        return [x for x in fams[fam].samples if x.name == (name or fam)
                and all(x.labels.get(k) == v for k, v in labels.items())]

    def warm_writes(fams):
        return sum(x.value for x in samples(fams, "strata_drive_io_seconds",
                                            "strata_drive_io_seconds_count", tier="warm",
                                            op="write"))

    before = scrape()
    for tier, drives in (("hot", HOT), ("warm", WARM), ("compliance", COLD)):
        for fam in ("strata_drive_online", "strata_drive_fresh", "strata_drive_total_bytes",
                    "strata_drive_free_bytes"):
            got = samples(before, fam, tier=tier)
            assert [x.labels["path"] for x in got] == drives, (fam, tier, got)
            assert [x.labels["drive"] for x in got] == [str(i) for i in range(len(drives))]
            assert all(x.labels["set"] == "0" for x in got), got
        assert all(x.value == 1 for x in samples(before, "strata_drive_online", tier=tier))
        assert all(x.value == 0 for x in samples(before, "strata_drive_fresh", tier=tier))
        assert all(x.value > 0 for x in samples(before, "strata_drive_total_bytes", tier=tier))
        errs = samples(before, "strata_drive_io_errors", "strata_drive_io_errors_total",
                       tier=tier, op="write")
        assert len(errs) == len(drives) and all(x.value == 0 for x in errs), errs
        assert len(samples(before, "strata_set_shards_healed",
                           "strata_set_shards_healed_total", tier=tier)) == 1
    c, b = new_bucket(s, "tiermetrics")
    c.put_object(Bucket=b, Key="w", Body=body(2 * MiB, "tiermetrics"),
                 StorageClass="STANDARD_IA")
    after = scrape()
    assert warm_writes(after) >= warm_writes(before) + len(WARM), \
        (warm_writes(before), warm_writes(after))


# ---- classes on PUT ----------------------------------------------------------

@test
def info_lists_tiers(s):
    st, doc = s.admin_get("info")
    assert st == 200, doc
    tiers = {t["name"]: t for t in doc["tiers"]}
    assert list(tiers) == ["hot", "warm", "compliance"], list(tiers)
    want = {"hot": (1, 4, 2, "STANDARD"), "warm": (1, 6, 4, "STANDARD_IA"),
            "compliance": (1, 8, 4, "GLACIER")}
    for name, (nsets, ndrives, k, cls) in want.items():
        t = tiers[name]
        assert t["sets_total"] == nsets and t["drives_total"] == ndrives, t
        assert t["drives_online"] == ndrives and cls in t["classes"], t
        assert t["sets"][0]["data"] == k, t
    paths = [d["path"] for d in tiers["warm"]["sets"][0]["drives"]]
    assert paths == WARM, paths
    # The top-level sets stay the hot tier's (the metadata home).
    assert doc["sets"] == tiers["hot"]["sets"] and doc["drives_total"] == 4, doc


@test
def put_with_class(s):
    c, b = new_bucket(s, "tput")
    w0, c0 = shard_files(WARM), shard_files(COLD)
    big, small = body(3 * MiB + 5, "big"), body(1000, "small")
    c.put_object(Bucket=b, Key="ia", Body=big, StorageClass="STANDARD_IA")
    assert shard_files(WARM) == w0 + 6, "a 4+2 object is 6 shard files on the warm tier"
    c.put_object(Bucket=b, Key="glacier", Body=big, StorageClass="GLACIER")
    assert shard_files(COLD) == c0 + 8, "a 4+4 object is 8 shard files on the compliance tier"
    c.put_object(Bucket=b, Key="warm-small", Body=small, StorageClass="WARM")
    c.put_object(Bucket=b, Key="std", Body=small)
    for k, cls, data in (("ia", "STANDARD_IA", big), ("glacier", "GLACIER", big),
                         ("warm-small", "WARM", small), ("std", "STANDARD", small)):
        assert head_class(c, b, k) == cls, (k, head_class(c, b, k))
        g = c.get_object(Bucket=b, Key=k)
        assert g.get("StorageClass", "STANDARD") == cls
        assert md5(g["Body"].read()) == md5(data), k
        assert list_class(c, b, k) == cls, (k, list_class(c, b, k))
        a = c.get_object_attributes(Bucket=b, Key=k, ObjectAttributes=["StorageClass"])
        assert a["StorageClass"] == cls, (k, a)
    v1 = {o["Key"]: o["StorageClass"] for o in c.list_objects(Bucket=b)["Contents"]}
    assert v1 == {"ia": "STANDARD_IA", "glacier": "GLACIER", "warm-small": "WARM",
                  "std": "STANDARD"}, v1
    vers = {v["Key"]: v["StorageClass"] for v in c.list_object_versions(Bucket=b)["Versions"]}
    assert vers == v1, vers
    # Bad classes: AWS's InvalidStorageClass; nothing is stored.
    expect_error(lambda: c.put_object(Bucket=b, Key="bad", Body=b"x", StorageClass="PLATINUM"),
                 "InvalidStorageClass", 400)
    expect_error(lambda: c.put_object(Bucket=b, Key="bad", Body=b"x", StorageClass="ONEZONE_IA"),
                 "InvalidStorageClass", 400)
    expect_error(lambda: c.create_multipart_upload(Bucket=b, Key="bad",
                                                   StorageClass="REDUCED_REDUNDANCY"),
                 "InvalidStorageClass", 400)
    expect_error(lambda: c.head_object(Bucket=b, Key="bad"), "404", 404)


@test
def multipart_and_copy_with_class(s):
    c, b = new_bucket(s, "tmpu")
    parts = [body(5 * MiB, "p1"), body(MiB + 3, "p2")]
    c0 = shard_files(COLD)
    up, done = mpu(c, b, "m", parts, StorageClass="COMPLIANCE")
    assert shard_files(COLD) == c0 + 16, "two parts on the compliance tier"
    lp = c.list_parts(Bucket=b, Key="m", UploadId=up)
    assert lp["StorageClass"] == "COMPLIANCE", lp
    ups = c.list_multipart_uploads(Bucket=b)["Uploads"]
    assert [u["StorageClass"] for u in ups] == ["COMPLIANCE"], ups
    c.complete_multipart_upload(Bucket=b, Key="m", UploadId=up,
                                MultipartUpload={"Parts": done})
    assert head_class(c, b, "m") == "COMPLIANCE"
    assert get_md5(c, b, "m") == md5(b"".join(parts))
    # CopyObject: the class the copy names, else STANDARD (AWS).
    w0 = shard_files(WARM)
    c.copy_object(Bucket=b, Key="m2", CopySource={"Bucket": b, "Key": "m"},
                  StorageClass="STANDARD_IA")
    assert head_class(c, b, "m2") == "STANDARD_IA"
    assert shard_files(WARM) == w0 + 6
    c.copy_object(Bucket=b, Key="m3", CopySource={"Bucket": b, "Key": "m"})
    assert head_class(c, b, "m3") == "STANDARD"
    for k in ("m2", "m3"):
        assert get_md5(c, b, k) == md5(b"".join(parts)), k
    # In place: only the class changes (AWS allows that copy onto itself).
    c.copy_object(Bucket=b, Key="m3", CopySource={"Bucket": b, "Key": "m3"},
                  StorageClass="GLACIER")
    assert head_class(c, b, "m3") == "GLACIER"
    assert get_md5(c, b, "m3") == md5(b"".join(parts))
    expect_error(lambda: c.copy_object(Bucket=b, Key="m4", CopySource={"Bucket": b, "Key": "m"},
                                       StorageClass="NOPE"), "InvalidStorageClass", 400)


@test
def post_object_with_class(s):
    """POST Object (boto3's presigned form): the x-amz-storage-class field."""
    import requests
    session = requests.Session()
    session.trust_env = False
    c, b = new_bucket(s, "tpost")
    data = body(MiB + 9, "post")
    w0 = shard_files(WARM)
    for cls, code in (("STANDARD_IA", 204), ("ONEZONE_IA", 400)):
        p = c.generate_presigned_post(b, "up-" + cls, Fields={"x-amz-storage-class": cls},
                                      Conditions=[{"x-amz-storage-class": cls}], ExpiresIn=300)
        r = session.post(p["url"], data=p["fields"], files={"file": ("a", data)}, timeout=60)
        assert r.status_code == code, (cls, r.status_code, r.text)
    assert "InvalidStorageClass" in r.text, r.text
    assert head_class(c, b, "up-STANDARD_IA") == "STANDARD_IA"
    assert get_md5(c, b, "up-STANDARD_IA") == md5(data)
    assert shard_files(WARM) == w0 + 6
    expect_error(lambda: c.head_object(Bucket=b, Key="up-ONEZONE_IA"), "404", 404)


# ---- lifecycle configuration -------------------------------------------------

@test
def transition_config(s):
    c, b = new_bucket(s, "tcfg")
    rules = [
        {"ID": "chain", "Filter": {"Prefix": "a/"}, "Status": "Enabled",
         "Transitions": [{"Days": 1, "StorageClass": "STANDARD_IA"},
                         {"Days": 3, "StorageClass": "GLACIER"}],
         "Expiration": {"Days": 100}},
        {"ID": "nc", "Filter": {}, "Status": "Enabled",
         "NoncurrentVersionTransitions": [{"NoncurrentDays": 2, "StorageClass": "WARM",
                                           "NewerNoncurrentVersions": 2}]},
        {"ID": "date", "Filter": {"Prefix": "d/"}, "Status": "Disabled",
         "Transitions": [{"Date": datetime.datetime(2031, 1, 1,
                                                    tzinfo=datetime.timezone.utc),
                          "StorageClass": "DEEP_ARCHIVE"}]},
        # Dates before 1970 and at the epoch are Dates too, stored exactly.
        {"ID": "old", "Filter": {"Prefix": "o/"}, "Status": "Disabled",
         "Transitions": [{"Date": datetime.datetime(1015, 1, 1, tzinfo=datetime.timezone.utc),
                          "StorageClass": "STANDARD_IA"}]},
        {"ID": "epoch", "Filter": {"Prefix": "e/"}, "Status": "Disabled",
         "Transitions": [{"Date": datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc),
                          "StorageClass": "GLACIER"}],
         "Expiration": {"Date": datetime.datetime(1969, 12, 31, tzinfo=datetime.timezone.utc)}},
    ]
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules})
    got = c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert got == rules, json.dumps(got, default=str)

    def bad(r, code):
        expect_error(lambda: c.put_bucket_lifecycle_configuration(
            Bucket=b, LifecycleConfiguration={"Rules": [r]}), code, 400)
    base = {"ID": "x", "Filter": {}, "Status": "Enabled"}
    bad(dict(base, Transitions=[{"Days": 1, "StorageClass": "PLATINUM"}]), "InvalidStorageClass")
    # A valid AWS class that no configured tier serves.
    bad(dict(base, Transitions=[{"Days": 1, "StorageClass": "ONEZONE_IA"}]),
        "InvalidStorageClass")
    bad(dict(base, Transitions=[{"Days": 1, "StorageClass": "GLACIER"},
                                {"Days": 5, "StorageClass": "GLACIER"}]), "InvalidArgument")
    bad(dict(base, Transitions=[{"Days": 1, "StorageClass": "GLACIER"},
                                {"Date": datetime.datetime(2031, 1, 1),
                                 "StorageClass": "STANDARD_IA"}]), "InvalidRequest")
    bad(dict(base, Transitions=[{"Date": datetime.datetime(1969, 12, 31),
                                 "StorageClass": "GLACIER"},
                                {"Days": 5, "StorageClass": "STANDARD_IA"}]), "InvalidRequest")
    bad(dict(base, Transitions=[{"Days": -1, "StorageClass": "GLACIER"}]), "InvalidArgument")
    bad(dict(base, Transitions=[{"Date": datetime.datetime(2031, 1, 1, 10),
                                 "StorageClass": "GLACIER"}]), "InvalidArgument")
    assert c.get_bucket_lifecycle_configuration(Bucket=b)["Rules"] == rules


# ---- the scanner moving data -------------------------------------------------

@test
def transition_chain(s):
    c, b = new_bucket(s, "tchain")
    objs = {"a/big": body(3 * MiB + 1, "big"), "a/small": body(2000, "small")}
    for k, v in objs.items():
        c.put_object(Bucket=b, Key=k, Body=v)
    parts = [body(5 * MiB, "q1"), body(2 * MiB + 9, "q2")]
    up, done = mpu(c, b, "a/multi", parts)
    c.complete_multipart_upload(Bucket=b, Key="a/multi", UploadId=up,
                                MultipartUpload={"Parts": done})
    objs["a/multi"] = b"".join(parts)
    before = metrics(s)
    h0, w0, c0 = shard_files(HOT), shard_files(WARM), shard_files(COLD)
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "chain", "Filter": {"Prefix": "a/"}, "Status": "Enabled",
         "Transitions": [{"Days": 1, "StorageClass": "STANDARD_IA"},
                         {"Days": 5, "StorageClass": "GLACIER"}]}]})
    seen = {k: [] for k in objs}

    def all_in(cls):
        for k in objs:
            hc = head_class(c, b, k)
            if not seen[k] or seen[k][-1] != hc:
                seen[k].append(hc)
        return all(seen[k][-1] == cls for k in objs)
    wait_for("warm", lambda: all_in("STANDARD_IA"))
    for k, v in objs.items():
        assert get_md5(c, b, k) == md5(v), k
        assert list_class(c, b, k) == "STANDARD_IA"
    # Big (1 data id) and multipart (2) moved: 3 x 4 files left hot, 3 x 6 arrived warm.
    wait_for("the hot copies removed", lambda: shard_files(HOT) == h0 - 12)
    assert shard_files(WARM) == w0 + 18
    wait_for("compliance", lambda: all_in("GLACIER"))
    for k, v in objs.items():
        assert get_md5(c, b, k) == md5(v), k
        assert seen[k] == ["STANDARD", "STANDARD_IA", "GLACIER"], (k, seen[k])
    wait_for("the warm copies removed", lambda: shard_files(WARM) == w0)
    assert shard_files(COLD) == c0 + 24
    assert shard_files(HOT) == h0 - 12
    after = metrics(s)
    assert after["strata_ilm_transitioned_total"] >= before["strata_ilm_transitioned_total"] + 6
    moved = after["strata_ilm_bytes_moved_total"] - before["strata_ilm_bytes_moved_total"]
    want = 2 * (len(objs["a/big"]) + len(objs["a/multi"]))
    assert moved == want, (moved, want)


@test
def noncurrent_transition(s):
    c, b = new_bucket(s, "tnc", versioning=True)
    v1 = body(2 * MiB, "v1")
    vid1 = c.put_object(Bucket=b, Key="k", Body=v1)["VersionId"]
    vid2 = c.put_object(Bucket=b, Key="k", Body=b"current")["VersionId"]
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "nc", "Filter": {}, "Status": "Enabled",
         "NoncurrentVersionTransitions": [{"NoncurrentDays": 1,
                                           "StorageClass": "STANDARD_IA"}]}]})

    def classes():
        return {v["VersionId"]: v["StorageClass"]
                for v in c.list_object_versions(Bucket=b)["Versions"]}
    wait_for("the noncurrent version on warm", lambda: classes()[vid1] == "STANDARD_IA")
    assert classes()[vid2] == "STANDARD"
    assert head_class(c, b, "k", vid1) == "STANDARD_IA"
    assert get_md5(c, b, "k", vid1) == md5(v1)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"current"


@test
def never_back_to_a_warmer_class(s):
    """AWS's waterfall: a rule to STANDARD_IA leaves a GLACIER object alone."""
    c, b = new_bucket(s, "twater")
    cold = body(MiB + 1, "cold")
    c.put_object(Bucket=b, Key="g", Body=cold, StorageClass="GLACIER")
    c.put_object(Bucket=b, Key="s", Body=body(MiB + 2, "std"))
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "t", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": 0, "StorageClass": "STANDARD_IA"}]}]})
    # Once the STANDARD object moved, the pass has seen the GLACIER one too.
    wait_for("the STANDARD object on warm", lambda: head_class(c, b, "s") == "STANDARD_IA")
    time.sleep(1.5)
    assert head_class(c, b, "g") == "GLACIER"
    assert get_md5(c, b, "g") == md5(cold)


@test
def locked_version_moves(s):
    c = s.client()
    b = s.bucket_name("tlock")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    data = body(MiB + 1, "lock")
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    vid = c.put_object(Bucket=b, Key="worm", Body=data, ObjectLockMode="COMPLIANCE",
                       ObjectLockRetainUntilDate=until)["VersionId"]
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "t", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": 0, "StorageClass": "COMPLIANCE"}]}]})
    wait_for("the locked version on compliance",
             lambda: head_class(c, b, "worm", vid) == "COMPLIANCE")
    h = c.head_object(Bucket=b, Key="worm", VersionId=vid)
    assert h["ObjectLockMode"] == "COMPLIANCE", h
    assert get_md5(c, b, "worm", vid) == md5(data)
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm", VersionId=vid), "AccessDenied", 403)


@test
def get_through_transition(s):
    """A GET streaming 64 MiB while its object moves to warm: whole old bytes."""
    c, b = new_bucket(s, "tget")
    data = body(64 * MiB, "sixty-four")
    c.put_object(Bucket=b, Key="big", Body=data)
    h0 = shard_files(HOT)
    g = c.get_object(Bucket=b, Key="big")["Body"]
    got = [g.read(4 * MiB)]
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "t", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": 0, "StorageClass": "STANDARD_IA"}]}]})
    wait_for("the switch to warm", lambda: head_class(c, b, "big") == "STANDARD_IA")
    # The old copy is pinned by our reader: still there.
    time.sleep(1.5)
    assert shard_files(HOT) == h0, "the old data went while a GET still read it"
    while True:
        chunk = g.read(4 * MiB)
        if not chunk:
            break
        got.append(chunk)
    g.close()
    assert md5(b"".join(got)) == md5(data), "the GET did not return the old bytes whole"
    wait_for("the old copy removed after the GET", lambda: shard_files(HOT) == h0 - 4)
    assert get_md5(c, b, "big") == md5(data)


if __name__ == "__main__":
    strata = Strata(args=["--lc-day-seconds", str(DAY_S), "--ilm-interval-seconds", "1",
                          "--metrics-public", "--ilm-move-mbps", "0"] + tier_flags(),
                    drives=HOT)
    log(f"tiers under {BASE}")
    ok = run(strata)
