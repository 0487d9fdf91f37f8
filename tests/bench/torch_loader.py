#!/usr/bin/python3
"""torch_loader.py - the README's PyTorch DataLoader end to end, strata
against nginx (a program, never a test; the `torch` cell of s3.sh, which
starts both servers on 127.0.0.1).

Writes SHARDS shard objects of PER_SHARD samples of SIZE bytes (random
bytes, a CRC-32 kept per sample) through S3 into --bucket, with the
README's index format (prefix/index.json: shard ETags and each sample's
shard, offset and length), and the same bytes as plain files under
--www/<bucket>/ for nginx.  Then one DataLoader shape (WORKERS persistent
workers, BATCH samples per batch, PREFETCH batches per worker) reads a
shuffled full pass RUNS times (the default collate stacks each batch into
one tensor) over each of:
  strata        the ShardDataset of examples/pytorch/README.md: boto3,
                one client per worker, ranged GET with If-Match
  nginx         the same Dataset structure with urllib3: ranged GET with
                If-Match (nginx's ETag) of the shard's file
  strata-http   the nginx Dataset over presigned shard URLs of strata: the
                same client as nginx, so strata/nginx without boto3's cost
  files         the same Dataset structure reading the shard files with
                pread (page cache): the DataLoader's ceiling, no server
  strata-objects  (--objects 1, default) the README's other variant: every
                sample also stored as its own object (inline up to 128 KiB),
                a whole-object GET with the README's boto3 client
in rotation, the same sample order for each.  The training loop checks every
sample's length and CRC-32 and measures the time it waits for each batch
(what stalls a training step), and the bytes read from the disks during
each pass per sample.  Prints progress on stderr and one JSON line
on stdout: per dataset the medians over RUNS of samples/s and MB/s (a full
pass over the wall clock, the check included) and of the p99 wait per
batch, and the strata/nginx ratios.  Exits 1 if any sample's bytes are wrong
(or any read fails).

Runs with /usr/bin/python3 (Debian's boto3 and python3-torch).
"""

import argparse
import concurrent.futures
import json
import os
import random
import re
import statistics
import sys
import time
import warnings
import zlib

import boto3
import torch
import urllib3
from botocore.config import Config
from torch.utils.data import DataLoader, Dataset

REGION = "us-east-1"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MARKER = "<!-- tests/integration/test_torch_example.py runs the next code block"


def readme_example(tmp):
    """Import the README's example block (the code users copy) as a module."""
    text = open(os.path.join(ROOT, "examples", "pytorch", "README.md"), encoding="utf-8").read()
    m = re.compile(r"```python\n(.*?)\n```", re.S).search(text, text.index(MARKER))
    os.makedirs(tmp, exist_ok=True)
    with open(os.path.join(tmp, "shards.py"), "w") as f:
        f.write(m.group(1) + "\n")
    sys.path.insert(0, tmp)
    import shards
    return shards


class HttpShardDataset(Dataset):
    """The README's ShardDataset with plain HTTP: urls[key] is the shard's
    URL (a file on nginx, or a presigned strata URL), etags[key] its ETag."""

    def __init__(self, samples, urls, etags):
        self.samples, self.urls, self.etags = samples, urls, etags
        self.http, self.pid = None, None

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        if self.pid != os.getpid():
            self.http, self.pid = urllib3.PoolManager(maxsize=1, retries=False), os.getpid()
        key, off, n = self.samples[i]
        r = self.http.request("GET", self.urls[key], timeout=120, headers={
            "Range": f"bytes={off}-{off + n - 1}", "If-Match": self.etags[key]})
        if r.status != 206 or len(r.data) != n:
            raise OSError(f"{self.urls[key].split('?')[0]}: HTTP {r.status}, {len(r.data)} bytes "
                          f"at {off}, expected {n}")
        return torch.frombuffer(bytearray(r.data), dtype=torch.uint8)


class ObjectDataset(Dataset):
    """The README's one-object-per-sample variant: a whole-object GET with
    the README's client (boto3, one per worker)."""

    def __init__(self, s3_client, bucket, keys):
        self.s3_client, self.bucket, self.keys = s3_client, bucket, keys
        self.s3, self.pid = None, None

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        if self.pid != os.getpid():
            self.s3, self.pid = self.s3_client(), os.getpid()
        body = self.s3.get_object(Bucket=self.bucket, Key=self.keys[i])["Body"].read()
        return torch.frombuffer(bytearray(body), dtype=torch.uint8)


class FileShardDataset(Dataset):
    """The same loader over the shard files themselves (pread from the page
    cache): the ceiling of the DataLoader on this machine, no server."""

    def __init__(self, samples, paths):
        self.samples, self.paths = samples, paths
        self.fds, self.pid = None, None

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        if self.pid != os.getpid():
            self.fds, self.pid = {}, os.getpid()
        key, off, n = self.samples[i]
        if key not in self.fds:
            self.fds[key] = os.open(self.paths[key], os.O_RDONLY)
        return torch.frombuffer(bytearray(os.pread(self.fds[key], n, off)), dtype=torch.uint8)


class Batches:
    """Batch sampler whose order the loop sets before each pass."""

    def __init__(self):
        self.batches = []

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)


def write_dataset(a, s3):
    """Shards through S3 and as files, streamed shard by shard; returns the
    index (README format) and the CRC-32 of every sample."""
    www = os.path.join(a.www, a.bucket)
    try:
        s3.create_bucket(Bucket=a.bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass

    def one(shard):
        key = f"{a.prefix}shard-{shard:05d}"
        body = os.urandom(a.per_shard * a.size)
        etag = s3.put_object(Bucket=a.bucket, Key=key, Body=body)["ETag"]
        path = os.path.join(www, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)
        rows = [[key, j * a.size, a.size] for j in range(a.per_shard)]
        crcs = [zlib.crc32(memoryview(body)[o:o + n]) for _, o, n in rows]
        if a.objects:  # the same samples, one object each
            for j, (_, o, n) in enumerate(rows):
                s3.put_object(Bucket=a.bucket, Key=f"{a.prefix}obj/{shard * a.per_shard + j:07d}",
                              Body=body[o:o + n])
        return key, etag, rows, crcs

    index, crcs = {"shards": {}, "samples": []}, []
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        for key, etag, rows, c in ex.map(one, range(a.shards)):
            index["shards"][key] = etag
            index["samples"] += rows
            crcs += c
    body = json.dumps(index).encode()
    s3.put_object(Bucket=a.bucket, Key=a.prefix + "index.json", Body=body)
    with open(os.path.join(www, a.prefix + "index.json"), "wb") as f:
        f.write(body)
    secs = time.monotonic() - t0
    total = a.shards * a.per_shard * a.size
    log(f"wrote {a.shards} shards x {a.per_shard} samples x {a.size} B = {total / 1e6:.0f} MB "
        f"in {secs:.1f} s (S3 PUT + file{', and one object per sample' if a.objects else ''})")
    return index, crcs


def log(msg):
    print(f"torch_loader: {msg}", file=sys.stderr, flush=True)


def one_pass(loader, sampler, order, batch, crcs, index):
    """One pass in `order`; returns (seconds, waits per batch, bad samples)."""
    sampler.batches = [order[i:i + batch] for i in range(0, len(order), batch)]
    waits, bad = [], 0
    t0 = last = time.monotonic()
    for k, stacked in enumerate(loader):
        now = time.monotonic()
        waits.append(now - last)
        if stacked.shape != (len(sampler.batches[k]), index[0][2]):
            raise SystemExit(f"batch {k}: shape {tuple(stacked.shape)}")
        for i, t in zip(sampler.batches[k], stacked):
            if zlib.crc32(t.numpy()) != crcs[i]:
                bad += 1
        last = time.monotonic()
    assert k == len(sampler.batches) - 1, "the loader lost batches"
    return time.monotonic() - t0, waits, bad


def disk_read_bytes():
    """Bytes read from the whole disks (/sys/block, no loop or ram devices)
    so far: shows how much of a pass came from the drives (strata reads its
    shard files with O_DIRECT; nginx reads through the page cache).  The
    machine may be shared: other readers count too."""
    disks = {d for d in os.listdir("/sys/block") if not d.startswith(("loop", "ram", "zram"))}
    total = 0
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if p[2] in disks:
                total += int(p[5]) * 512
    return total


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--ak", required=True)
    ap.add_argument("--sk", required=True)
    ap.add_argument("--nginx", required=True, help="nginx base URL serving --www")
    ap.add_argument("--www", required=True, help="nginx's document root")
    ap.add_argument("--bucket", default="torchbench")
    ap.add_argument("--prefix", default="train/")
    ap.add_argument("--shards", type=int, default=64)
    ap.add_argument("--per-shard", type=int, default=256)
    ap.add_argument("--size", type=int, default=100 * 1024)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--prefetch", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--objects", type=int, default=1,
                    help="1: also store every sample as its own object and read those (strata-objects)")
    ap.add_argument("--tmp", default="/tmp", help="where the README's block is written")
    a = ap.parse_args()
    # More workers than cores is the point here (they wait on the network).
    warnings.filterwarnings("ignore", message="This DataLoader will create")

    os.environ.update(STRATA_ENDPOINT=a.endpoint, AWS_ACCESS_KEY_ID=a.ak, AWS_SECRET_ACCESS_KEY=a.sk)
    ex = readme_example(os.path.join(a.tmp, "torch-example"))
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=a.endpoint, region_name=REGION, aws_access_key_id=a.ak,
        aws_secret_access_key=a.sk, config=Config(s3={"addressing_style": "path"},
                                                  signature_version="s3v4", max_pool_connections=8))
    index, crcs = write_dataset(a, s3)
    samples = index["samples"]

    http = urllib3.PoolManager()
    nginx_urls = {k: f"{a.nginx}/{a.bucket}/{k}" for k in index["shards"]}
    nginx_etags = {k: http.request("HEAD", u).headers["ETag"] for k, u in nginx_urls.items()}
    presigned = {k: s3.generate_presigned_url("get_object", Params={"Bucket": a.bucket, "Key": k},
                                              ExpiresIn=604800) for k in index["shards"]}
    files = {k: os.path.join(a.www, a.bucket, k) for k in index["shards"]}
    datasets = {"strata": ex.ShardDataset(a.bucket, a.prefix),
                "nginx": HttpShardDataset(samples, nginx_urls, nginx_etags),
                "strata-http": HttpShardDataset(samples, presigned, index["shards"]),
                "files": FileShardDataset(samples, files)}
    if a.objects:
        keys = [f"{a.prefix}obj/{i:07d}" for i in range(len(samples))]
        datasets["strata-objects"] = ObjectDataset(ex.s3_client, a.bucket, keys)
    assert len(datasets["strata"]) == len(samples)

    loaders = {}
    for name, ds in datasets.items():
        sampler = Batches()
        # Samples of one size: the default collate stacks a batch into one tensor.
        loaders[name] = (DataLoader(ds, batch_sampler=sampler, num_workers=a.workers,
                                    prefetch_factor=a.prefetch, persistent_workers=True,
                                    timeout=300), sampler)
    log(f"DataLoader: {a.workers} workers, batches of {a.batch}, prefetch {a.prefetch}; "
        f"{len(samples)} samples per pass, {a.runs} passes per dataset")
    # Warm-up: start the workers and their connections (not timed).
    for name, (loader, sampler) in loaders.items():
        _, _, bad = one_pass(loader, sampler, list(range(a.workers * a.batch * 2)), a.batch, crcs,
                             samples)
        assert bad == 0, f"{name}: wrong bytes in the warm-up"

    results = {name: [] for name in loaders}
    wrong = 0
    for run in range(a.runs):
        order = list(range(len(samples)))
        random.Random(run).shuffle(order)
        for name, (loader, sampler) in loaders.items():
            disk0 = disk_read_bytes()
            secs, waits, bad = one_pass(loader, sampler, order, a.batch, crcs, samples)
            wrong += bad
            r = {"samples_per_s": len(order) / secs, "MBps": len(order) * a.size / secs / 1e6,
                 "p50_wait_ms": statistics.median(waits) * 1e3, "p99_wait_ms": p99(waits) * 1e3,
                 "disk_KiB_per_sample": (disk_read_bytes() - disk0) / len(order) / 1024, "bad": bad}
            results[name].append(r)
            log(f"run {run + 1} {name:12s} {r['samples_per_s']:8.0f} samples/s {r['MBps']:7.1f} MB/s "
                f"wait p50 {r['p50_wait_ms']:6.2f} ms p99 {r['p99_wait_ms']:7.2f} ms, "
                f"disk read {r['disk_KiB_per_sample']:.0f} KiB/sample"
                + (f"  {bad} WRONG SAMPLES" if bad else ""))

    out = {"samples": len(samples), "size": a.size, "shards": a.shards, "workers": a.workers,
           "batch": a.batch, "prefetch": a.prefetch, "runs": a.runs, "wrong_samples": wrong}
    for name, rs in results.items():
        for f in ("samples_per_s", "MBps", "p50_wait_ms", "p99_wait_ms", "disk_KiB_per_sample"):
            out[f"{name}_{f}"] = round(statistics.median(r[f] for r in rs), 2)
    for name in results:
        if name == "nginx":
            continue
        out[f"{name}_ratio"] = round(out[f"{name}_samples_per_s"] / out["nginx_samples_per_s"], 2)
        out[f"{name}_p99_ratio"] = round(out[f"{name}_p99_wait_ms"] / out["nginx_p99_wait_ms"], 2)
    print(json.dumps(out), flush=True)
    if wrong:
        log(f"FAILED: {wrong} samples had wrong bytes")
        sys.exit(1)


if __name__ == "__main__":
    main()
