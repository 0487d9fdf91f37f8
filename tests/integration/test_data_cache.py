"""test_data_cache.py - whole erasure-coded objects kept in memory for the
next GETs (--data-cache-mb), with boto3 against a live daemon.

The daemon runs with --read-cache-max-mb 0, so every read of the drives is
O_DIRECT and shows in its /proc/PID/io read_bytes: a GET answered from the
data cache reads nothing from the drives (below QUIET: the metadata
stores' own reads aside), one that is not reads at least the object's
data shards.  The checks:
- a repeated GET of a 1 MiB object, whole and by Range, reads no drive,
  returns the object's bytes, and counts in strata_data_cache_hits_total;
- never stale: after an overwrite the new bytes (and the old version by
  its versionId), after a delete NoSuchKey; a multipart object's ranges
  within and across its parts;
- an SSE-C object: the right key gets the plaintext every time (the cache
  holds only the stored, encrypted bytes), no key or a wrong key is
  refused as before;
- --data-cache-mb 0: every GET reads the drives again;
- --data-cache-on-write: the first GET after a PutObject, and after the
  UploadParts of a multipart object, reads no drive and returns the exact
  bytes (whole, by Range within a part, by PartNumber); a PUT refused at
  its commit (If-None-Match: *) and an aborted upload leave no entry
  (strata_data_cache_objects and _bytes as before); an overwrite's first
  GET has the new bytes; an SSE-C PUT's first GET decrypts from memory
  with its key (that only ciphertext is kept: tests/unit/meta/test_dcache.c);
- a full cache: PUTs past the budget evict entries and fill into their
  memory (strata_data_cache_reused_total), entries and spares within the
  budget, every GET the right bytes; a delete leaves its memory to the
  next PUT.
"""

import base64
import hashlib
import os
import secrets
import urllib.request

from strata_harness import (Strata, daemon_read_bytes, expect_error, log, restart_with, run,
                            test)

MiB = 1 << 20
# What a GET answered from memory may see the daemon read meanwhile (its
# metadata stores' own reads); a GET from the drives reads its data shards,
# at least half a 1 MiB object on this 2+2 set.  0 is what was measured.
QUIET = 128 << 10


def metric(s, name):
    req = urllib.request.Request(s.endpoint + "/metrics")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
    raise AssertionError(f"{name} not in /metrics")


def fetched(s, fn):
    """(result of fn(), bytes the daemon read from its drives meanwhile)."""
    r0 = daemon_read_bytes(s)
    out = fn()
    return out, daemon_read_bytes(s) - r0


def get(c, b, key, **kw):
    return c.get_object(Bucket=b, Key=key, **kw)["Body"].read()


def with_cache(s, mb, prefix, on_write=False):
    """Restart with --data-cache-mb mb (None: the default), and
    --data-cache-on-write when on_write; a client and a new bucket."""
    s.args = [a for a in s.args if a != "--data-cache-on-write"]
    if on_write:
        s.args.append("--data-cache-on-write")
    restart_with(s, "data-cache-mb", mb)
    c = s.client()
    b = s.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    return c, b


@test
def repeated_get_is_served_from_memory(s):
    c, b = with_cache(s, None, "dcache")
    data = os.urandom(MiB)
    c.put_object(Bucket=b, Key="one", Body=data)
    got, n = fetched(s, lambda: get(c, b, "one"))
    assert got == data and n >= MiB // 2, n  # the first GET reads the drives
    h0 = metric(s, "strata_data_cache_hits_total")
    for _ in range(3):
        got, n = fetched(s, lambda: get(c, b, "one"))
        assert got == data, "wrong bytes from the cache"
        assert n < QUIET, f"a cached GET read {n} bytes from the drives"
    assert metric(s, "strata_data_cache_hits_total") >= h0 + 3
    r, n = fetched(s, lambda: c.get_object(Bucket=b, Key="one", Range="bytes=1000-300999"))
    assert r["ContentRange"] == f"bytes 1000-300999/{MiB}", r["ContentRange"]
    assert r["Body"].read() == data[1000:301000] and n < QUIET, n
    r = c.get_object(Bucket=b, Key="one", Range="bytes=-5")
    assert r["Body"].read() == data[-5:]
    assert metric(s, "strata_data_cache_bytes") >= MiB
    assert metric(s, "strata_data_cache_objects") >= 1


@test
def never_stale(s):
    c, b = with_cache(s, None, "dcstale")
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = os.urandom(MiB + 17)
    v2 = os.urandom(MiB + 17)
    vid1 = c.put_object(Bucket=b, Key="k", Body=v1)["VersionId"]
    assert get(c, b, "k") == v1 and get(c, b, "k") == v1  # cached
    vid2 = c.put_object(Bucket=b, Key="k", Body=v2)["VersionId"]
    assert get(c, b, "k") == v2 and get(c, b, "k") == v2
    assert get(c, b, "k", VersionId=vid1) == v1
    assert get(c, b, "k", VersionId=vid2) == v2
    c.delete_object(Bucket=b, Key="k", VersionId=vid2)
    assert get(c, b, "k") == v1
    c.delete_object(Bucket=b, Key="k", VersionId=vid1)
    expect_error(lambda: c.get_object(Bucket=b, Key="k"), "NoSuchKey", 404)

    # Unversioned: overwrite and delete.
    u = s.bucket_name("dcstaleu")
    c.create_bucket(Bucket=u)
    c.put_object(Bucket=u, Key="k", Body=v1)
    assert get(c, u, "k") == v1 and get(c, u, "k") == v1
    c.put_object(Bucket=u, Key="k", Body=v2)
    assert get(c, u, "k") == v2 and get(c, u, "k") == v2
    c.delete_object(Bucket=u, Key="k")
    expect_error(lambda: c.get_object(Bucket=u, Key="k"), "NoSuchKey", 404)

    # Multipart: parts of 5 MiB, cached one by one; ranges within and across.
    part = 5 * MiB
    body = os.urandom(2 * part + 1234)
    up = c.create_multipart_upload(Bucket=u, Key="mp")["UploadId"]
    etags = []
    for i, off in enumerate(range(0, len(body), part)):
        etags.append(c.upload_part(Bucket=u, Key="mp", UploadId=up, PartNumber=i + 1,
                                   Body=body[off:off + part])["ETag"])
    c.complete_multipart_upload(Bucket=u, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    for _ in range(2):
        assert get(c, u, "mp") == body
        assert get(c, u, "mp", Range="bytes=100-200099") == body[100:200100]
        across = f"bytes={part - 10}-{part + 9}"
        assert get(c, u, "mp", Range=across) == body[part - 10:part + 10]
        assert get(c, u, "mp", PartNumber=2) == body[part:2 * part]
    _, n = fetched(s, lambda: get(c, u, "mp"))
    assert n < QUIET, f"cached parts read {n} bytes from the drives"
    body2 = os.urandom(part + 3)
    c.put_object(Bucket=u, Key="mp", Body=body2)
    assert get(c, u, "mp") == body2 and get(c, u, "mp") == body2


@test
def sse_c_objects_need_their_key(s):
    c, b = with_cache(s, None, "dcssec")
    key, wrong = secrets.token_bytes(32), secrets.token_bytes(32)
    kw = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    data = os.urandom(MiB + 5)
    c.put_object(Bucket=b, Key="enc", Body=data, **kw)
    for _ in range(3):
        assert get(c, b, "enc", **kw) == data
    assert get(c, b, "enc", Range="bytes=77-70000", **kw) == data[77:70001]
    expect_error(lambda: c.get_object(Bucket=b, Key="enc"), "InvalidRequest", 400)
    expect_error(lambda: c.get_object(Bucket=b, Key="enc", SSECustomerAlgorithm="AES256",
                                      SSECustomerKey=wrong), "AccessDenied", 403)
    md5 = base64.b64encode(hashlib.md5(key).digest()).decode()
    h = c.head_object(Bucket=b, Key="enc", **kw)
    assert h["SSECustomerKeyMD5"] == md5 and h["ContentLength"] == len(data)


@test
def zero_turns_the_cache_off(s):
    c, b = with_cache(s, 0, "dcoff")
    data = os.urandom(MiB)
    c.put_object(Bucket=b, Key="one", Body=data)
    for _ in range(3):
        got, n = fetched(s, lambda: get(c, b, "one"))
        assert got == data and n >= MiB // 2, n
    assert metric(s, "strata_data_cache_hits_total") == 0
    log("with --data-cache-mb 0 every GET read the drives")


def cache_use(s):
    return metric(s, "strata_data_cache_objects"), metric(s, "strata_data_cache_bytes")


@test
def put_fills_the_cache(s):
    c, b = with_cache(s, None, "dcwrite", on_write=True)
    data = os.urandom(MiB + 3)
    c.put_object(Bucket=b, Key="one", Body=data)
    got, n = fetched(s, lambda: get(c, b, "one"))
    assert got == data, "wrong bytes from the cache"
    assert n < QUIET, f"the first GET after the PUT read {n} bytes from the drives"
    r, n = fetched(s, lambda: c.get_object(Bucket=b, Key="one", Range="bytes=5-700004"))
    assert r["ContentRange"] == f"bytes 5-700004/{len(data)}", r["ContentRange"]
    assert r["Body"].read() == data[5:700005] and n < QUIET, n
    # An overwrite: its first GET has the new bytes, from memory.
    data2 = os.urandom(MiB + 3)
    c.put_object(Bucket=b, Key="one", Body=data2)
    got, n = fetched(s, lambda: get(c, b, "one"))
    assert got == data2 and n < QUIET, n

    # Multipart: every part cached at its upload, the object read back
    # whole, by Range within a part and across, and by PartNumber.
    part = 5 * MiB
    body = os.urandom(2 * part + 4321)
    up = c.create_multipart_upload(Bucket=b, Key="ckpt")["UploadId"]
    etags = [c.upload_part(Bucket=b, Key="ckpt", UploadId=up, PartNumber=i + 1,
                           Body=body[off:off + part])["ETag"]
             for i, off in enumerate(range(0, len(body), part))]
    c.complete_multipart_upload(Bucket=b, Key="ckpt", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    got, n = fetched(s, lambda: get(c, b, "ckpt"))
    assert got == body and n < QUIET, f"the first GET of the parts read {n} bytes"
    rng, n = fetched(s, lambda: get(c, b, "ckpt", Range=f"bytes={part + 7}-{2 * part - 2}"))
    assert rng == body[part + 7:2 * part - 1] and n < QUIET, n
    assert get(c, b, "ckpt", Range=f"bytes={part - 3}-{part + 2}") == body[part - 3:part + 3]
    assert get(c, b, "ckpt", PartNumber=3) == body[2 * part:]

    # SSE-C: the right key reads the plaintext from the cached ciphertext.
    key = secrets.token_bytes(32)
    kw = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    enc = os.urandom(MiB)
    c.put_object(Bucket=b, Key="enc", Body=enc, **kw)
    got, n = fetched(s, lambda: get(c, b, "enc", **kw))
    assert got == enc and n < QUIET, n
    expect_error(lambda: c.get_object(Bucket=b, Key="enc"), "InvalidRequest", 400)


@test
def failed_or_aborted_writes_leave_no_entry(s):
    c, b = with_cache(s, None, "dcwfail", on_write=True)
    data = os.urandom(MiB)
    c.put_object(Bucket=b, Key="k", Body=data)
    before = cache_use(s)
    # Refused at the commit, after its data was written.
    inm = s.client()
    inm.meta.events.register("before-sign.s3.PutObject",
                             lambda request, **kw: request.headers.__setitem__("If-None-Match", "*"))
    expect_error(lambda: inm.put_object(Bucket=b, Key="k", Body=os.urandom(MiB)),
                 "PreconditionFailed", 412)
    assert cache_use(s) == before, (cache_use(s), before)
    assert get(c, b, "k") == data
    # An upload aborted after its parts were stored.
    up = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    for i in range(2):
        c.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=i + 1, Body=os.urandom(5 * MiB))
    mid = cache_use(s)
    assert mid[0] == before[0] + 2 and mid[1] == before[1] + 10 * MiB, (mid, before)
    c.abort_multipart_upload(Bucket=b, Key="mp", UploadId=up)
    assert cache_use(s) == before, (cache_use(s), before)
    expect_error(lambda: c.get_object(Bucket=b, Key="mp"), "NoSuchKey", 404)


@test
def a_full_cache_recycles_its_memory(s):
    # 8 MiB: five 1.5 MiB objects fit; each later PUT evicts one entry and
    # fills into its memory (strata_data_cache_reused_total).
    c, b = with_cache(s, 8, "dcrecycle", on_write=True)
    objs = {f"k{i}": os.urandom(3 * MiB // 2 + i) for i in range(10)}
    for k, data in objs.items():
        c.put_object(Bucket=b, Key=k, Body=data)
        got, n = fetched(s, lambda: get(c, b, k))
        assert got == data, f"{k}: wrong bytes from the cache"
        assert n < QUIET, f"{k}: the first GET after the PUT read {n} bytes from the drives"
        used = metric(s, "strata_data_cache_bytes") + metric(s, "strata_data_cache_spare_bytes")
        assert used <= 8 * MiB, used
    assert metric(s, "strata_data_cache_reused_total") >= 4
    assert metric(s, "strata_data_cache_evictions_total") >= 4
    for k, data in objs.items():  # evicted ones from the drives, the rest from memory
        assert get(c, b, k) == data, f"{k}: wrong bytes"
    # A delete leaves its entry's memory to the next PUT.
    c.delete_object(Bucket=b, Key="k9")
    assert metric(s, "strata_data_cache_spare_bytes") >= len(objs["k9"])
    r0 = metric(s, "strata_data_cache_reused_total")
    data = os.urandom(MiB)
    c.put_object(Bucket=b, Key="new", Body=data)
    assert metric(s, "strata_data_cache_reused_total") == r0 + 1
    got, n = fetched(s, lambda: get(c, b, "new"))
    assert got == data and n < QUIET, n


@test
def writes_do_not_fill_by_default(s):
    c, b = with_cache(s, None, "dcwoff")
    data = os.urandom(MiB)
    c.put_object(Bucket=b, Key="one", Body=data)
    assert cache_use(s) == (0, 0)
    got, n = fetched(s, lambda: get(c, b, "one"))
    assert got == data and n >= MiB // 2, n


if __name__ == "__main__":
    # O_DIRECT reads only (every drive read shows in read_bytes); no
    # scanner, whose start-up heal would read the drives beside the GETs.
    run(Strata(args=["--read-cache-max-mb", "0", "--ilm-interval-seconds", "0",
                     "--heal-interval-seconds", "0", "--metrics-public",
                     "--sse-c-allow-http"]))
