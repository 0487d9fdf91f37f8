"""test_space.py - what objects that are not inline cost on the drives.

The daemon's default set (four drives, 2+2, 1 MiB stripes, objects up to
128 KiB inline) is formatted with shard format 2: the last stripe's blocks
are only as long as its bytes need (rounded up to 4 KiB), so a 300 KiB
object is four 160 KiB shard files, not four files padded to a whole
stripe.  Each object is PUT through boto3, the bytes added to the drives'
data/ directories are counted against the layout written out here, and
the object is read back whole and by ranges, also after a restart.
"""

import json
import os

from strata_harness import Strata, run, test

SHARD = 512 * 1024  # ceil(1 MiB / 2), 4 KiB aligned
STRIPE = 2 * SHARD


def data_bytes(s):
    total = 0
    for d in s.drives:
        for root, _, files in os.walk(os.path.join(d, "data")):
            total += sum(os.lstat(os.path.join(root, f)).st_size for f in files)
    return total


def expected(size):
    """Bytes on the four drives for an erasure-coded object of size bytes."""
    blocks = -(-size // STRIPE)
    rest = size - (blocks - 1) * STRIPE
    last = -(-(-(-rest // 2)) // 4096) * 4096
    table = -(-(blocks * 4) // 4096) * 4096
    return 4 * (4096 + (blocks - 1) * SHARD + last + table)


SIZES = [128 * 1024 + 1, 300 * 1024, 1 << 20, (1 << 20) + 1, 2 * (1 << 20) + 12345]


def body(i, n):
    return (bytes([(i * 37 + 11) % 251]) * 7 + os.urandom(13)) * (n // 20) + os.urandom(n % 20)


@test
def drives_formatted_with_format_2(s):
    for d in s.drives:
        with open(os.path.join(d, "format.json")) as f:
            assert json.load(f)["format_version"] == 2, d


@test
def small_objects_not_padded_to_a_stripe(s):
    c = s.client()
    b = s.bucket_name("space")
    c.create_bucket(Bucket=b)
    bodies = {}
    for i, n in enumerate(SIZES):
        data = body(i, n)
        assert len(data) == n
        before = data_bytes(s)
        c.put_object(Bucket=b, Key=f"o{i}", Body=data)
        added = data_bytes(s) - before
        assert added == expected(n), (n, added, expected(n))
        bodies[f"o{i}"] = data
    # 300 KiB: 640 KiB on the drives, where a padded stripe took 2,080 KiB.
    assert expected(300 * 1024) == 640 * 1024

    def check():
        for k, data in bodies.items():
            got = c.get_object(Bucket=b, Key=k)["Body"].read()
            assert got == data, k
            n = len(data)
            for lo, hi in ((n - 1, n - 1), (n // 2, n - 1), (0, 4096), (n - 5000, n - 1)):
                r = c.get_object(Bucket=b, Key=k, Range=f"bytes={lo}-{hi}")["Body"].read()
                assert r == data[lo:hi + 1], (k, lo, hi)

    check()
    s.restart()
    check()


if __name__ == "__main__":
    run(Strata())
