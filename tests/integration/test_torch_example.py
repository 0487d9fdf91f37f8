#!/usr/bin/python3
"""test_torch_example.py - the PyTorch example, run as written.

Extracts the python block that follows the marker comment in
examples/pytorch/README.md ("Training data with PyTorch"), writes it out
as shards.py and imports it: its pack() stores samples of awkward sizes (1 byte to 300 KiB, ranges
across 1 MiB stripes) as shard objects plus an index, and its ShardDataset
is read through a real torch DataLoader with two worker processes; every
sample's bytes are compared with what was packed, and each batch reports
the worker's pid next to the pid its boto3 client was made in (one client
per worker, none in the parent).  Then the block runs as a script (its
__main__: 1,024 samples, 8 workers, two epochs).  Failure paths: a deleted
shard raises NoSuchKey, a shard rewritten with other bytes of the same size
raises PreconditionFailed (If-Match on the indexed ETag) instead of handing
out wrong bytes, a missing index fails the constructor.  spawn workers get
the dataset without the parent's client (__getstate__).

Needs python3-torch (deploy/install-deps.sh); without it the test fails and
says so.  Run by CTest with /usr/bin/python3.
"""

import gc
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import botocore  # noqa: E402
from strata_harness import Strata, log, run, test  # noqa: E402

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "pytorch",
                      "README.md")
MARKER = "<!-- tests/integration/test_torch_example.py runs the next code block"

try:
    import torch.utils.data._utils
    from torch.utils.data import DataLoader
except ImportError as e:
    raise SystemExit(f"python3-torch is missing ({e}): run deploy/install-deps.sh")
# After a worker raised, torch joins each worker for this long (5 s) before
# terminating it; the failure tests would spend 20 s waiting.
torch.utils.data._utils.MP_STATUS_CHECK_INTERVAL = 0.5


def readme_block():
    text = open(README, encoding="utf-8").read()
    at = text.find(MARKER)
    assert at >= 0, "examples/pytorch/README.md lost the example's marker comment"
    m = re.compile(r"```python\n(.*?)\n```", re.S).search(text, at)
    assert m and text[at:m.start()].count("\n") == 1, "no python block right after the marker"
    return m.group(1) + "\n"


def load_example(s):
    """Write the README block to the scratch dir, point it at our daemon, import it."""
    path = os.path.join(s.tmp, "example", "shards.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(readme_block())
    os.environ.update(STRATA_ENDPOINT=s.endpoint, AWS_ACCESS_KEY_ID=s.ak,
                      AWS_SECRET_ACCESS_KEY=s.sk)
    # spawn workers re-import this file, whose harness import scrubs AWS_*
    # from their environment: they find the keys in the private HOME.
    with open(os.path.join(s.home, ".aws", "credentials"), "w") as f:
        f.write(f"[default]\naws_access_key_id = {s.ak}\naws_secret_access_key = {s.sk}\n")
    sys.path.insert(0, os.path.dirname(path))
    import shards
    return shards


def samples_of(rng, sizes):
    return [rng.randbytes(n) for n in sizes]


def read_all(loader_kwargs, ds, order):
    """Samples in `order` through a DataLoader over ds; also (worker pid,
    pid the worker's client was made in) of each batch."""
    got, pids = [], []
    # timeout: a worker error that cannot reach the parent must fail, not hang
    loader = DataLoader(ds, sampler=order, batch_size=8, timeout=120,
                        collate_fn=lambda b: (os.getpid(), ds.pid, b), **loader_kwargs)
    for wpid, cpid, batch in loader:
        pids.append((wpid, cpid))
        got.extend(bytes(t.numpy()) for t in batch)
    return got, pids


def packed(s, ex, prefix, samples, per_shard):
    c = s.client()
    b = s.bucket_name("torch")
    try:
        c.create_bucket(Bucket=b)
    except c.exceptions.BucketAlreadyOwnedByYou:
        pass
    ex.pack(ex.s3_client(), b, prefix, samples, per_shard=per_shard)
    return c, b


@test
def dataloader_reads_every_sample(s):
    ex = load_example(s)
    rng = random.Random(12)
    # 1 byte, around the 128 KiB inline limit, a 300 KiB sample, and enough
    # of them that shards span several 1 MiB stripes.
    sizes = [1, 2, 4096, 128 * 1024 - 1, 128 * 1024, 128 * 1024 + 1, 300 * 1024]
    sizes += [rng.randint(1, 100 * 1024) for _ in range(89)]
    data = samples_of(rng, sizes)
    c, b = packed(s, ex, "ok/", data, per_shard=40)
    keys = [o["Key"] for o in c.list_objects_v2(Bucket=b, Prefix="ok/")["Contents"]]
    assert keys == ["ok/index.json", "ok/shard-00000", "ok/shard-00001", "ok/shard-00002"], keys
    ds = ex.ShardDataset(b, "ok/")
    assert len(ds) == len(data)
    # The parent reads a sample itself first: its client must not leak into the workers.
    assert bytes(ds[5].numpy()) == data[5] and ds.pid == os.getpid()
    order = list(range(len(data)))
    rng.shuffle(order)
    got, pids = read_all({"num_workers": 2}, ds, order)
    assert len(got) == len(order)
    bad = [i for i, g in zip(order, got) if g != data[i]]
    assert not bad, f"wrong bytes for samples {bad[:10]}"
    workers = {w for w, _ in pids}
    assert all(w == c_ for w, c_ in pids), f"a worker used a client made elsewhere: {pids}"
    assert len(workers) == 2 and os.getpid() not in workers, pids
    log(f"{len(got)} samples, {sum(sizes)} bytes, 3 shards, workers {sorted(workers)}: bytes match")


@test
def readme_main_runs(s):
    """The block's own __main__, as a user runs it (bucket "datasets")."""
    load_example(s)
    c = s.client()
    try:
        c.create_bucket(Bucket="datasets")
    except c.exceptions.BucketAlreadyOwnedByYou:
        pass
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "NO_PROXY": "127.0.0.1,localhost",
           "STRATA_ENDPOINT": s.endpoint, "AWS_ACCESS_KEY_ID": s.ak, "AWS_SECRET_ACCESS_KEY": s.sk,
           "AWS_CONFIG_FILE": os.environ["AWS_CONFIG_FILE"],
           "AWS_SHARED_CREDENTIALS_FILE": os.environ["AWS_SHARED_CREDENTIALS_FILE"],
           "AWS_EC2_METADATA_DISABLED": "true"}
    p = subprocess.run(["/usr/bin/python3", os.path.join(s.tmp, "example", "shards.py")],
                       env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=600)
    for line in (p.stdout + p.stderr).strip().splitlines()[-20:]:
        log(f"shards.py: {line}")
    assert p.returncode == 0, f"shards.py exited {p.returncode}"
    assert p.stdout.split("\n") == ["epoch 0: 1024 samples", "epoch 1: 1024 samples", ""], p.stdout
    idx = c.get_object(Bucket="datasets", Key="train/index.json")["Body"].read()
    assert idx.count(b"train/shard-") == 4 + 1024, "index does not name 4 shards and 1,024 samples"


def expect_worker_error(ds, order, code):
    """Reading `order` (samples of one broken shard) must raise, re-raised
    from a worker, naming `code`: no batch, so no wrong bytes."""
    try:
        got, _ = read_all({"num_workers": 2}, ds, order)
    except OSError as e:  # the example turns ClientError into OSError
        assert code in str(e), f"expected {code}, got {type(e).__name__}: {str(e)[-800:]}"
        msg = str(e)
    else:
        raise AssertionError(f"read {len(got)} samples without an error; expected {code}")
    # The failed iterator sits in a reference cycle with the traceback; shut
    # its workers down now, not inside the next loader's forked workers.
    gc.collect()
    return msg


@test
def missing_or_rewritten_shard_fails_loudly(s):
    ex = load_example(s)
    rng = random.Random(7)
    data = samples_of(rng, [rng.randint(1000, 20000) for _ in range(60)])
    c, b = packed(s, ex, "bad/", data, per_shard=20)
    ds = ex.ShardDataset(b, "bad/")
    middle = list(range(20, 40))  # shard-00001
    # Rewritten with other bytes of the same length: the indexed ETag no longer
    # matches, so the ranged GET answers 412 instead of someone else's bytes.
    c.put_object(Bucket=b, Key="bad/shard-00001", Body=os.urandom(sum(len(x) for x in data[20:40])))
    msg = expect_worker_error(ds, middle, "PreconditionFailed")
    log(f"rewritten shard: {msg.strip().splitlines()[-1]}")
    # The other shards still read correctly through the same dataset.
    got, _ = read_all({"num_workers": 2}, ds, list(range(0, 20)) + list(range(40, 60)))
    assert got == data[0:20] + data[40:60], "untouched shards returned wrong bytes"
    c.delete_object(Bucket=b, Key="bad/shard-00001")
    msg = expect_worker_error(ds, middle, "NoSuchKey")
    log(f"deleted shard: {msg.strip().splitlines()[-1]}")
    try:
        ex.ShardDataset(b, "nothing-here/")
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchKey", e.response
    else:
        raise AssertionError("a dataset without an index was constructed")


@test
def spawn_workers_get_no_client(s):
    ex = load_example(s)
    rng = random.Random(3)
    data = samples_of(rng, [rng.randint(1, 5000) for _ in range(24)])
    _, b = packed(s, ex, "spawn/", data, per_shard=10)
    ds = ex.ShardDataset(b, "spawn/")
    ds[0]  # the parent's own client, which spawn cannot pickle
    assert ds.s3 is not None
    loader = DataLoader(ds, batch_size=6, num_workers=2, multiprocessing_context="spawn",
                        collate_fn=list, timeout=120)
    got = [bytes(t.numpy()) for batch in loader for t in batch]
    assert got == data, "spawn workers returned wrong bytes"


if __name__ == "__main__":
    run(Strata())
