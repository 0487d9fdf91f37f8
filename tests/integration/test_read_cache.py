"""test_read_cache.py - which reads of erasure-coded objects go through the
page cache (--read-cache-max-mb).

Objects, and each part of a multipart object, up to the limit (64 MiB by
default) are read through the page cache: a second GET of the same bytes
does not touch the drives.  Bigger ones, or every one with 0, are read
with O_DIRECT each time.  What the daemon fetched from the drives is its
/proc/PID/io read_bytes around each GET (the lifecycle scanner, whose
start-up heal reads the drives, is off); the bytes returned are compared
every time.
"""

import hashlib
import os

from strata_harness import Strata, daemon_read_bytes, log, restart_with, run, test

SINGLE = (2 << 20) + 4321  # one object: three stripes, not inline
PART = 5 << 20           # two parts of a multipart object


def fetched(s, c, b, key, data):
    """Bytes the daemon read from its drives for one whole GET of key."""
    r0 = daemon_read_bytes(s)
    got = c.get_object(Bucket=b, Key=key)["Body"].read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest(), f"{key}: wrong bytes"
    return daemon_read_bytes(s) - r0


STATE = {}


def setup(s):
    if STATE:
        return STATE
    c = s.client()
    b = s.bucket_name("rcache")
    c.create_bucket(Bucket=b)
    single = os.urandom(SINGLE)
    c.put_object(Bucket=b, Key="single", Body=single)
    mp = os.urandom(2 * PART)
    up = c.create_multipart_upload(Bucket=b, Key="parts")["UploadId"]
    etags = [c.upload_part(Bucket=b, Key="parts", UploadId=up, PartNumber=i + 1,
                           Body=mp[i * PART:(i + 1) * PART])["ETag"] for i in range(2)]
    c.complete_multipart_upload(Bucket=b, Key="parts", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    STATE.update(c=c, b=b, single=single, parts=mp)
    return STATE


def with_limit(s, mb):
    """Restart the daemon with --read-cache-max-mb mb (None: the default)."""
    restart_with(s, "read-cache-max-mb", mb)


@test
def default_limit_serves_repeated_reads_from_memory(s):
    st = setup(s)
    with_limit(s, None)
    fetched(s, st["c"], st["b"], "single", st["single"])  # may fetch: first read
    fetched(s, st["c"], st["b"], "parts", st["parts"])
    again = fetched(s, st["c"], st["b"], "single", st["single"])
    again_mp = fetched(s, st["c"], st["b"], "parts", st["parts"])
    log(f"second GETs fetched {again} and {again_mp} bytes from the drives")
    assert again < (256 << 10), again
    assert again_mp < (256 << 10), again_mp


@test
def zero_reads_every_get_from_the_drives(s):
    st = setup(s)
    with_limit(s, 0)
    for _ in range(2):
        n = fetched(s, st["c"], st["b"], "single", st["single"])
        assert n >= SINGLE, n  # the data shards at least, read past the page cache
        n = fetched(s, st["c"], st["b"], "parts", st["parts"])
        assert n >= 2 * PART, n


@test
def limit_applies_to_each_part(s):
    st = setup(s)
    with_limit(s, 4)  # parts of 5 MiB are bigger; the 2 MiB object is not
    fetched(s, st["c"], st["b"], "single", st["single"])
    assert fetched(s, st["c"], st["b"], "single", st["single"]) < (256 << 10)
    for _ in range(2):
        n = fetched(s, st["c"], st["b"], "parts", st["parts"])
        assert n >= 2 * PART, n
    with_limit(s, 8)  # now both parts are within it
    fetched(s, st["c"], st["b"], "parts", st["parts"])
    n = fetched(s, st["c"], st["b"], "parts", st["parts"])
    assert n < (256 << 10), n


if __name__ == "__main__":
    # No scanner: its start-up heal reads every shard from the drives and
    # would count in the daemon's read_bytes beside the GETs.
    run(Strata(args=["--ilm-interval-seconds", "0", "--heal-interval-seconds", "0",
                     "--data-cache-mb", "0"]))
