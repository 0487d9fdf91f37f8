#!/usr/bin/python3
"""s3_dataset.py - helper of tests/bench/s3.sh (a program, never a test).

  load     create the bucket, upload the dataset through S3 (4 KiB object,
           N distinct 100 KiB objects, 1 MiB, 64 MiB), write the same bytes
           as plain files under --www/<bucket>/ for nginx, and write wrk path
           lists: <name>.strata (presigned GET paths, long expiry) and
           <name>.nginx (plain paths), one per line.
  putsign  write signed PUT requests (signed payload: x-amz-content-sha256 is
           the body's SHA-256) for wrk: one "path<TAB>x-amz-date<TAB>
           authorization<TAB>sha256" line per key, and the body file.
  delete   delete --key from the bucket (FAULT_DRILL in s3.sh: a GET cell
           over a missing object must fail the run).
  checkpoint  the 1 GiB checkpoint shape, RUNS times, medians: boto3's
           transfer manager (PARTS parts in flight) uploading one object of
           --size-mb and reading it right back, through strata and through
           nginx's S3 shim (s3.sh), and the same with a lean client (PARTS
           parallel PUTs of the slices: presigned UploadPart URLs / WebDAV;
           PARTS ranged GETs); prints one JSON line.
  list     time ListObjectsV2 paging over a bucket (optionally first filling
           a bucket with --make N empty keys) with boto3 or (--client raw) a
           raw SigV4 client; prints one JSON line.

Runs with /usr/bin/python3 (Debian's boto3).  Everything talks to 127.0.0.1.
"""

import argparse
import concurrent.futures
import datetime
import filecmp
import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

import boto3
from botocore.config import Config

REGION = "us-east-1"
SIZES = {"get4k": 4096, "get1m": 1 << 20, "get64m": 64 << 20}


def client(a, pool=32):
    return boto3.session.Session().client(
        "s3", endpoint_url=a.endpoint, region_name=REGION, aws_access_key_id=a.ak,
        aws_secret_access_key=a.sk,
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                      max_pool_connections=pool, retries={"max_attempts": 3}))


def write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def load(a):
    c = client(a)
    try:
        c.create_bucket(Bucket=a.bucket)
    except c.exceptions.BucketAlreadyOwnedByYou:
        pass
    www = os.path.join(a.www, a.bucket)
    lists = {}

    def put(key, data):
        c.put_object(Bucket=a.bucket, Key=key, Body=data)
        write_file(os.path.join(www, key), data)
        return key

    t0 = time.monotonic()
    for name, size in SIZES.items():
        key = f"{name}/obj"
        put(key, os.urandom(size))
        lists[name] = [key]
    keys = [f"get100k/{i:05d}" for i in range(a.n100k)]
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        lists["get100k"] = list(ex.map(lambda k: put(k, os.urandom(100 * 1024)), keys))
    upload_s = time.monotonic() - t0
    # Check the daemon serves what we stored before measuring anything.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for name, ks in lists.items():
        for key in (ks[0], ks[-1]):
            url = c.generate_presigned_url("get_object", Params={"Bucket": a.bucket, "Key": key},
                                           ExpiresIn=604800)
            with opener.open(url, timeout=120) as r:
                got = r.read()
            with open(os.path.join(www, key), "rb") as f:
                if got != f.read():
                    sys.exit(f"s3_dataset: {key}: strata returned different bytes")
    for name, ks in lists.items():
        with open(os.path.join(a.out, name + ".strata"), "w") as f:
            for key in ks:
                url = c.generate_presigned_url("get_object", Params={"Bucket": a.bucket, "Key": key},
                                               ExpiresIn=604800)
                f.write(url[len(a.endpoint):] + "\n")
        with open(os.path.join(a.out, name + ".nginx"), "w") as f:
            for key in ks:
                f.write(f"/{a.bucket}/{key}\n")
    total = sum(SIZES.values()) + a.n100k * 100 * 1024
    print(json.dumps({"uploaded_objects": len(keys) + len(SIZES), "bytes": total,
                      "seconds": round(upload_s, 2), "MBps": round(total / upload_s / 1e6, 1)}))


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def putsign(a):
    body = os.urandom(a.size)
    with open(a.body, "wb") as f:
        f.write(body)
    payload = hashlib.sha256(body).hexdigest()
    host = a.endpoint.split("://", 1)[1]
    now = datetime.datetime.now(datetime.timezone.utc)
    amzdate, date = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    scope = f"{date}/{REGION}/s3/aws4_request"
    k = _hmac(_hmac(_hmac(_hmac(("AWS4" + a.sk).encode(), date), REGION), "s3"), "aws4_request")
    signed = "content-length;host;x-amz-content-sha256;x-amz-date"
    with open(a.out, "w") as f:
        for i in range(a.n):
            path = f"/{a.bucket}/{a.prefix}{i:05d}"
            creq = "\n".join(["PUT", path, "", f"content-length:{a.size}", f"host:{host}",
                              f"x-amz-content-sha256:{payload}", f"x-amz-date:{amzdate}", "",
                              signed, payload])
            sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(creq.encode()).hexdigest()])
            sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            auth = f"AWS4-HMAC-SHA256 Credential={a.ak}/{scope}, SignedHeaders={signed}, Signature={sig}"
            f.write(f"{path}\t{amzdate}\t{auth}\t{payload}\n")


class RawS3:
    """Keep-alive http.client connection that signs each request with SigV4
    (header auth, empty payload).  No XML library: the caller reads what it
    needs with regexes, so the client costs little next to the server."""

    def __init__(self, a):
        import http.client
        self.host = a.endpoint.split("://", 1)[1]
        self.ak, self.sk = a.ak, a.sk
        self.conn = http.client.HTTPConnection(self.host, timeout=120)
        self.keys = {}

    def _key(self, date):
        if date not in self.keys:
            self.keys[date] = _hmac(_hmac(_hmac(_hmac(("AWS4" + self.sk).encode(), date), REGION),
                                          "s3"), "aws4_request")
        return self.keys[date]

    def request(self, method, path, query):
        """query: list of (name, value) already URI-encoded.  Returns (status, body)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        amzdate, date = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(b"").hexdigest()
        cq = "&".join(f"{k}={v}" for k, v in sorted(query))
        signed = "host;x-amz-content-sha256;x-amz-date"
        creq = "\n".join([method, path, cq, f"host:{self.host}", f"x-amz-content-sha256:{payload}",
                          f"x-amz-date:{amzdate}", "", signed, payload])
        scope = f"{date}/{REGION}/s3/aws4_request"
        sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(creq.encode()).hexdigest()])
        sig = hmac.new(self._key(date), sts.encode(), hashlib.sha256).hexdigest()
        hdrs = {"x-amz-date": amzdate, "x-amz-content-sha256": payload,
                "Authorization": f"AWS4-HMAC-SHA256 Credential={self.ak}/{scope}, "
                                 f"SignedHeaders={signed}, Signature={sig}"}
        self.conn.request(method, path + ("?" + cq if cq else ""), headers=hdrs)
        r = self.conn.getresponse()
        return r.status, r.read()


def raw_list_pass(a):
    """One ListObjectsV2 walk with RawS3 (with a.versions a ListObjectVersions
    walk, key-marker and version-id-marker): (keys or versions, pages, seconds)."""
    import re
    import urllib.parse
    c = RawS3(a)
    versions = getattr(a, "versions", False)
    n = pages = 0
    token = None
    quote = lambda v: urllib.parse.quote(v, safe="-_.~")  # noqa: E731
    if versions:
        key_re = re.compile(rb"<(?:Version|DeleteMarker)>")
        tok_re, vid_re = (re.compile(rb"<NextKeyMarker>([^<]*)<"),
                          re.compile(rb"<NextVersionIdMarker>([^<]*)<"))
    else:
        key_re, tok_re = re.compile(rb"<Key>"), re.compile(rb"<NextContinuationToken>([^<]*)<")
    what = "ListObjectVersions" if versions else "ListObjectsV2"
    t0 = time.monotonic()
    while True:
        q = [("versions", "")] if versions else [("list-type", "2")]
        if token and versions:
            q += [("key-marker", quote(token[0]))]
            if token[1]:
                q += [("version-id-marker", quote(token[1]))]
        elif token:
            q.append(("continuation-token", quote(token)))
        status, body = c.request("GET", f"/{a.bucket}", q)
        if status != 200:
            sys.exit(f"s3_dataset: {what} answered {status}: {body[:300]!r}")
        n += len(key_re.findall(body))
        pages += 1
        m = tok_re.search(body) if b"<IsTruncated>true<" in body or not versions else None
        if not m:
            break
        if versions:
            v = vid_re.search(body)
            token = (m.group(1).decode(), v.group(1).decode() if v else "")
        else:
            token = m.group(1).decode()
    return n, pages, time.monotonic() - t0


def listing(a):
    c = client(a)
    if a.make:
        try:
            c.create_bucket(Bucket=a.bucket)
        except c.exceptions.BucketAlreadyOwnedByYou:
            pass
        versions = getattr(a, "versions", False)
        if versions:  # two versions of each key: pages end inside a key's versions too
            c.put_bucket_versioning(Bucket=a.bucket,
                                    VersioningConfiguration={"Status": "Enabled"})
        t0 = time.monotonic()
        nthreads = 16

        def fill(t):  # raw keep-alive PUTs: boto3 would take many minutes for 1e6 keys
            rc = RawS3(a)
            for i in range(t, a.make, nthreads):
                for _ in range(2 if versions else 1):
                    status, body = rc.request("PUT", f"/{a.bucket}/k/{i:09d}", [])
                    if status != 200:
                        raise RuntimeError(f"PUT k/{i:09d}: {status} {body[:200]!r}")
        with concurrent.futures.ThreadPoolExecutor(nthreads) as ex:
            list(ex.map(fill, range(nthreads)))
        print(f"# uploaded {a.make} empty keys{' x 2 versions' if versions else ''} in "
              f"{time.monotonic() - t0:.1f} s", file=sys.stderr)
    if a.client == "raw":
        best = None
        for _ in range(a.repeat):
            n, pages, dt = raw_list_pass(a)
            best = dt if best is None else min(best, dt)
        print(json.dumps({"client": "raw", "keys": n, "pages": pages, "seconds": round(best, 3),
                          "keys_per_s": round(n / best) if best else None}))
        return
    best = None
    for _ in range(a.repeat):
        t0 = time.monotonic()
        n = pages = 0
        for p in c.get_paginator("list_objects_v2").paginate(Bucket=a.bucket):
            n += p.get("KeyCount", 0)
            pages += 1
        dt = time.monotonic() - t0
        best = dt if best is None else min(best, dt)
    print(json.dumps({"client": "boto3", "keys": n, "pages": pages, "seconds": round(best, 3),
                      "keys_per_s": round(n / best) if best else None}))


class _Slice:
    """File-like view of [off, off + n) of a file, for http.client bodies."""

    def __init__(self, path, off, n):
        self.f = open(path, "rb")
        self.f.seek(off)
        self.left = n

    def read(self, size=-1):
        size = self.left if size is None or size < 0 else min(size, self.left)
        b = self.f.read(size)
        self.left -= len(b)
        return b

    def close(self):
        self.f.close()


def _raw_put(host, port, path, src, off, n):
    """PUT [off, off + n) of src with http.client (1 MiB writes): the lean
    client of the checkpoint cell, for nginx and for strata's presigned
    UploadPart URLs alike. Returns the response's ETag."""
    import http.client
    conn = http.client.HTTPConnection(host, port, timeout=600, blocksize=1 << 20)
    body = _Slice(src, off, n)
    try:
        conn.request("PUT", path, body=body, headers={"Content-Length": str(n)})
        r = conn.getresponse()
        r.read()
        if r.status not in (200, 201, 204):
            raise RuntimeError(f"PUT {path}: {r.status}")
        return r.getheader("ETag")
    finally:
        body.close()
        conn.close()


def _raw_get(host, port, path, dst, off, n):
    import http.client
    conn = http.client.HTTPConnection(host, port, timeout=600)
    try:
        conn.request("GET", path, headers={"Range": f"bytes={off}-{off + n - 1}"})
        r = conn.getresponse()
        if r.status != 206:
            raise RuntimeError(f"GET {path}: {r.status}")
        fd = os.open(dst, os.O_WRONLY)
        pos = off
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            os.pwrite(fd, b, pos)
            pos += len(b)
        os.close(fd)
        if pos != off + n:
            raise RuntimeError(f"GET {path}: short read")
    finally:
        conn.close()


def checkpoint(a):
    """Four transfers of the same bytes, each PUT then read right back
    (and, with --cold, read again after dropping the page cache and, with
    --restart, restarting strata: a read back on restart):
    boto3's transfer manager against strata and against nginx's S3 shim
    (s3.sh's config), and the lean client (http.client: presigned
    UploadPart and ranged GET URLs for strata, WebDAV PUTs of the slices
    and ranged GETs for nginx) against both.  boto3 against nginx is
    boto3's own ceiling: what that transfer costs beyond the lean client's
    is the client's, not a server's."""
    from boto3.s3.transfer import TransferConfig
    size = a.size_mb << 20
    parts = a.parts
    src = os.path.join(a.out, "ckpt.src")
    dst = os.path.join(a.out, "ckpt.dst")
    with open(src, "wb") as f:
        for _ in range(a.size_mb):
            f.write(os.urandom(1 << 20))
    www = os.path.join(a.www, a.bucket)
    os.makedirs(os.path.join(www, "ckpt"), exist_ok=True)
    os.link(src, os.path.join(www, "ckpt", "whole"))  # what nginx's GETs read
    c = client(a, pool=parts * 2)
    nc = boto3.session.Session().client(  # boto3 against nginx's shim
        "s3", endpoint_url=a.nginx, region_name=REGION, aws_access_key_id=a.ak,
        aws_secret_access_key=a.sk,
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                      max_pool_connections=parts * 2, retries={"max_attempts": 1}))
    part = (size + parts - 1) // parts
    tc = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=part,
                        max_concurrency=parts, use_threads=True)
    host, port = a.nginx.split("://", 1)[1].rsplit(":", 1)
    slices = [(i * part, min(part, size - i * part)) for i in range(parts) if i * part < size]

    def timed(fn):
        t0 = time.monotonic()
        fn()
        return time.monotonic() - t0

    def prep_dst():
        if os.path.exists(dst):
            os.unlink(dst)
        with open(dst, "wb") as f:
            f.truncate(size)

    def same(what):
        if not filecmp.cmp(src, dst, shallow=False):
            sys.exit(f"s3_dataset: checkpoint: {what} returned different bytes")

    def shim_parts_same():
        """nginx's shim stored every part boto3 sent, byte for byte."""
        with open(src, "rb") as f:
            for i, (off, n) in enumerate(slices):
                f.seek(off)
                with open(os.path.join(a.www, "_parts", a.bucket, "ckpt", f"obj.part{i + 1}"), "rb") as p:
                    if p.read() != f.read(n):
                        sys.exit(f"s3_dataset: checkpoint: nginx's shim stored part {i + 1} wrong")

    shost, sport = a.endpoint.split("://", 1)[1].rsplit(":", 1)

    def parallel(fn):
        return list(concurrent.futures.ThreadPoolExecutor(parts).map(fn, slices))

    def raw_upload():
        """The multipart upload with the lean client: presigned UploadPart
        URLs, so the figure is strata's, not boto3's per-chunk cost."""
        uid = c.create_multipart_upload(Bucket=a.bucket, Key="ckpt/raw")["UploadId"]
        url = lambda i: c.generate_presigned_url(  # noqa: E731
            "upload_part", Params={"Bucket": a.bucket, "Key": "ckpt/raw", "UploadId": uid,
                                   "PartNumber": i + 1})[len(a.endpoint):]
        etags = parallel(lambda s: _raw_put(shost, int(sport), url(s[0] // part), src, *s))
        c.complete_multipart_upload(Bucket=a.bucket, Key="ckpt/raw", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})

    def warm(path):
        with open(path, "rb") as f:
            while f.read(8 << 20):
                pass

    def drop_caches():
        """A restart's read-back: nothing of either server's files in memory."""
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")

    obj = None  # presigned GET of ckpt/raw, once it exists
    # (server, client) -> (PUT, GET of what it wrote)
    puts = {("strata", "boto3"): lambda: c.upload_file(src, a.bucket, "ckpt/obj", Config=tc),
            ("strata", "raw"): raw_upload,
            ("nginx", "boto3"): lambda: nc.upload_file(src, a.bucket, "ckpt/obj", Config=tc),
            ("nginx", "raw"): lambda: parallel(
                lambda s: _raw_put(host, int(port), f"/{a.bucket}/ckpt/part{s[0] // part}", src, *s))}
    gets = {("strata", "boto3"): lambda: c.download_file(a.bucket, "ckpt/obj", dst, Config=tc),
            ("strata", "raw"): lambda: parallel(
                lambda s: _raw_get(shost, int(sport), obj[len(a.endpoint):], dst, *s)),
            ("nginx", "boto3"): lambda: nc.download_file(a.bucket, "ckpt/whole", dst, Config=tc),
            ("nginx", "raw"): lambda: parallel(
                lambda s: _raw_get(host, int(port), f"/{a.bucket}/ckpt/whole", dst, *s))}
    name = lambda srv, cl, what: f"{srv}_{'raw_' if cl == 'raw' else ''}{what}"  # noqa: E731
    res = {}
    for run in range(a.repeat):
        for srv, cl in puts:
            res.setdefault(name(srv, cl, "put"), []).append(timed(puts[srv, cl]))
            if run == 0 and (srv, cl) == ("nginx", "boto3"):
                shim_parts_same()
            if obj is None and srv == "strata" and cl == "raw":
                obj = c.generate_presigned_url("get_object", Params={"Bucket": a.bucket,
                                                                     "Key": "ckpt/raw"})
            prep_dst()
            if srv == "nginx":
                warm(src)  # ckpt/whole as it would be right after its PUT (a cold GET dropped it)
            # nginx's PUTs leave a GiB of dirty pages (strata's are durable):
            # written back first, so the GET's own writes into dst are not
            # throttled behind them.
            os.sync()
            res.setdefault(name(srv, cl, "get"), []).append(timed(gets[srv, cl]))
            if run == 0:
                same(f"{srv} ({cl})")
        if a.cold:
            for srv, cl in gets:
                prep_dst()
                if srv == "strata" and a.restart:  # nothing of it left in the daemon's memory
                    subprocess.run([a.restart], check=True)
                drop_caches()
                res.setdefault(name(srv, cl, "cold_get"), []).append(timed(gets[srv, cl]))
                if run == 0:
                    same(f"{srv} ({cl}, cold)")
    os.unlink(dst)
    out = {"size_mb": a.size_mb, "parts": parts, "runs": a.repeat}
    med = {k: statistics.median(v) for k, v in res.items()}
    for k, v in med.items():
        out[k + "_MBps"] = round(size / v / 1e6, 1)
    for what in ("put", "get") + (("cold_get",) if a.cold else ()):
        out[f"{what}_ratio"] = round(med[f"nginx_{what}"] / med[f"strata_{what}"], 2)
        out[f"raw_{what}_ratio"] = round(med[f"nginx_raw_{what}"] / med[f"strata_raw_{what}"], 2)
        # boto3's own cost: its time against nginx beyond the lean client's,
        # as a share of its time against strata.
        out[f"boto3_client_share_{what}"] = round(
            max(0.0, med[f"nginx_{what}"] - med[f"nginx_raw_{what}"]) / med[f"strata_{what}"], 2)
    print(json.dumps(out))


def delete(a):
    client(a).delete_object(Bucket=a.bucket, Key=a.key)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cmd", choices=["load", "putsign", "list", "delete", "checkpoint"])
    p.add_argument("--key", help="delete: the key")
    p.add_argument("--endpoint", required=True)
    p.add_argument("--ak", required=True)
    p.add_argument("--sk", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--www", help="load: nginx document root")
    p.add_argument("--out", help="load: directory for path lists; putsign: request file")
    p.add_argument("--n100k", type=int, default=10000)
    p.add_argument("--n", type=int, default=1000, help="putsign: number of distinct keys")
    p.add_argument("--size", type=int, default=100 * 1024, help="putsign: body size")
    p.add_argument("--prefix", default="put/")
    p.add_argument("--body", help="putsign: body file to write")
    p.add_argument("--make", type=int, default=0, help="list: first upload this many empty keys")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--nginx", help="checkpoint: nginx endpoint (http://host:port)")
    p.add_argument("--size-mb", type=int, default=1024, help="checkpoint: object size")
    p.add_argument("--parts", type=int, default=8, help="checkpoint: parts in flight")
    p.add_argument("--cold", action="store_true",
                   help="checkpoint: also GETs after dropping the page cache (root)")
    p.add_argument("--versions", action="store_true",
                   help="list: a versioned bucket (--make puts each key twice) and "
                        "ListObjectVersions walks (raw client only)")
    p.add_argument("--restart", help="checkpoint, with --cold: a command that restarts strata "
                                     "(its data cache goes too) before each of its cold GETs")
    p.add_argument("--client", choices=["boto3", "raw"], default="boto3",
                   help="list: boto3's paginator, or a raw keep-alive SigV4 client (regex, no XML "
                        "parser) that measures the server rather than boto3")
    a = p.parse_args()
    {"load": load, "putsign": putsign, "list": listing, "delete": delete,
     "checkpoint": checkpoint}[a.cmd](a)


if __name__ == "__main__":
    main()
