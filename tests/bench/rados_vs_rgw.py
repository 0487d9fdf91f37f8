#!/usr/bin/python3
"""rados_vs_rgw.py - Strata on RADOS against Ceph's radosgw on the same
cluster, the same client, in one run (a benchmark program, never a timed
test).

Starts one throw-away cluster (tests/integration/ceph_cluster.py: one
monitor, --osds OSDs, BlueStore on a sparse file, or --memstore), Debian's
radosgw on it (beast on 127.0.0.1 with tcp_nodelay=1, an S3 user made with
radosgw-admin, the default.rgw.* pools it creates itself; without
tcp_nodelay, --rgw-nagle, a keep-alive GET of 4 KiB waits ~44 ms and one
of 100 KiB ~25 ms on one connection here, against 2-7 ms on a new one) and Strata on it (`strata rados
init`, then the daemon with --rados-conf; pools strata.meta and
strata.data).  Both servers get the same dataset through boto3
(tests/bench/s3_dataset.py load: 4 KiB, 1 MiB, 64 MiB and N100K x 100 KiB
objects) and an empty-object bucket of --keys keys for the listing, then
every row runs --runs times, the servers alternating, and the medians are
reported:

  get4k     GET 4 KiB, wrk with presigned URLs, --conns connections
  get100k   GET 100 KiB over N100K keys, --conns connections
  get64m    GET 64 MiB, --big-conns connections
  put100k   PUT 100 KiB (signed payload), --conns connections: new keys
            (a key prefix per run and server, --put-keys signed requests
            per cell, each sent once; a cell that ran out and overwrote
            is counted as failed)
  put64m    PUT 64 MiB (8 keys), --big-conns connections
  list      ListObjectsV2 over --keys keys, pages of 1,000 (s3_dataset's
            raw SigV4 client: the server's cost, not boto3's XML parsing)
  listv     ListObjectVersions over --keys keys of two versions each in a
            versioned bucket, pages of 1,000 (key-marker and
            version-id-marker; the same raw client)

Per row: req/s (MB/s on the 64 MiB rows), Strata/radosgw, p50 and p99, the
gateway's CPU per request and the OSDs' (user + system time from
/proc/PID/stat over the cell).  GETs are warm (each cell re-reads the same
objects): BlueStore's and the OSD's caches hold them after the first pass,
as they would for a hot set.

  tests/bench/rados_vs_rgw.py                       # every row, ~35 min here
  tests/bench/rados_vs_rgw.py --quick               # every row, smaller, <= 8 min here
  tests/bench/rados_vs_rgw.py --servers rgw --keys 5000 --n100k 1000 --duration 5
  STRATA_BIN=build-rel/strata tests/bench/rados_vs_rgw.py --memstore

--quick: 1,000 x 100 KiB keys, a listing over 10,000 keys, 3 s cells (GET
64 MiB 10 s, PUT 64 MiB 12 s: a 64 MiB request takes seconds on a loaded
machine), 3 runs (any of these given explicitly wins): the same rows, the
servers interleaved as in a full run, for a shared machine.

--strata-variant NAME=ARGS (repeatable) starts one more Strata daemon on
the same cluster with its own pools (prefix strata-NAME) and these extra
server arguments, measured interleaved with the others: a setting A/B in
one run, e.g. inl64k='--inline-max 65536'; ARGS starting with @PATH run
that binary (another build).  Every cell also records the OSDs' perf
counters per request (`ceph daemon osd.N perf dump`: ops, bytes the ops
carried, BlueFS's WAL and SST bytes, which grow with RocksDB compactions,
BlueStore's data writes) and the OSDs' mean op, commit and kv_sync
latencies; the report prints them under the table.

STRATA_BIN: any build of strata (default build-rel/strata); a build whose
daemon has no --rados-conf stops the run at once with that message (run
--servers rgw to measure radosgw alone).  Exit 1 when any request failed
(non-2xx, socket error, wrong bytes at load): figures over failures are no
results.  STRATA_DEBUG_* variables are passed to the Strata daemons
(STRATA_DEBUG_STAGES=N: per-stage request times in their logs,
server/http/stages.h).  KEEP=1 keeps the work directory (logs); the JSON lines of every
cell are copied to build-bench/rados_vs_rgw-results.jsonl.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

for _k in list(os.environ):  # boto3 sees only the keys given here
    if _k.startswith("AWS_") or _k.lower().endswith("_proxy"):
        del os.environ[_k]
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

import benchlib  # noqa: E402
import s3_dataset  # noqa: E402
from ceph_cluster import CephCluster, cpu_seconds  # noqa: E402

GIB = 1 << 30
SIZES = {"get4k": 4096, "get100k": 100 * 1024, "get64m": 64 << 20, "put100k": 100 * 1024,
         "put64m": 64 << 20}
LABELS = {"get4k": "GET 4 KiB", "get100k": "GET 100 KiB, N keys", "get64m": "GET 64 MiB",
          "put100k": "PUT 100 KiB", "put64m": "PUT 64 MiB", "list": "ListObjectsV2",
          "listv": "ListObjectVersions"}
NAMES = {"strata": "Strata", "rgw": "radosgw"}
# OSD perf counters kept per cell (ceph daemon osd.N perf dump): ops, and
# what RocksDB and BlueFS wrote (WAL, SST: compactions), summed over OSDs.
OSD_COUNTERS = {("osd", "op"): "osd_ops", ("osd", "op_w"): "osd_op_w",
                ("osd", "op_r"): "osd_op_r", ("osd", "op_in_bytes"): "osd_in_bytes",
                ("bluefs", "bytes_written_wal"): "wal_bytes",
                ("bluefs", "bytes_written_sst"): "sst_bytes",
                ("bluestore", "bluestore_write_big_bytes"): "big_bytes",
                ("bluestore", "bluestore_write_small_bytes"): "small_bytes",
                ("rocksdb", "compact"): "compactions"}
# OSD latencies (sum and count kept; the mean over the cell in ms is shown)
OSD_LATENCIES = {("osd", "op_latency"): "op_ms", ("bluestore", "commit_lat"): "commit_ms",
                 ("bluestore", "kv_sync_lat"): "kv_sync_ms"}
BUCKET, LIST_BUCKET, LISTV_BUCKET = "bench", "listbench", "listvbench"


def say(msg):
    print(f"[rados_vs_rgw] {msg}", flush=True)


def strata_has_rados(binary):
    """True when this build's daemon takes --rados-conf (its server --help
    lists the option; the `strata rados` tool's usage line does not count)."""
    r = subprocess.run([binary, "server", "--help"], capture_output=True, text=True, timeout=30,
                       env={"PATH": "/usr/bin:/bin"})
    return any(ln.lstrip().startswith("--rados-conf") for ln in (r.stdout + r.stderr).splitlines())


class Server:
    """One S3 endpoint under test: its name, endpoint, keys, PID, work dir."""

    def __init__(self, name, endpoint, ak, sk, pid, work):
        self.name, self.endpoint, self.ak, self.sk, self.pid = name, endpoint, ak, sk, pid
        self.work = work
        os.makedirs(work, exist_ok=True)

    def ns(self, **kw):
        """The argument namespace s3_dataset's functions take."""
        base = dict(endpoint=self.endpoint, ak=self.ak, sk=self.sk, bucket=BUCKET)
        base.update(kw)
        return argparse.Namespace(**base)


def start_strata(binary, c, work, prefix, extra=()):
    os.makedirs(work, exist_ok=True)
    r = subprocess.run([binary, "rados", "init", "--rados-conf", c.conf, "--rados-id", c.client_id,
                        "--rados-pool-prefix", prefix], capture_output=True, text=True,
                       timeout=300, env={"PATH": "/usr/bin:/bin"})
    if r.returncode != 0:
        sys.exit(f"rados_vs_rgw: strata rados init: exit {r.returncode}: {r.stderr.strip()}")
    say(r.stdout.strip())
    ak = "BENCH" + os.urandom(6).hex().upper()
    sk = os.urandom(20).hex()
    port = benchlib.free_port()
    log = open(os.path.join(work, "strata.log"), "wb")
    proc = subprocess.Popen(
        [binary, "server", "--address", f"127.0.0.1:{port}", "--rados-conf", c.conf,
         "--rados-id", c.client_id, "--rados-pool-prefix", prefix] + list(extra),
        env={"PATH": "/usr/bin:/bin", "HOME": work, "STRATA_ROOT_USER": ak,
             "STRATA_ROOT_PASSWORD": sk,
             # profiling switches (STRATA_DEBUG_STAGES: server/http/stages.h)
             **{k: v for k, v in os.environ.items() if k.startswith("STRATA_DEBUG_")}},
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        # Its own session, as ceph_cluster.py starts radosgw: with the
        # kernel's autogroup scheduling a session shares one CPU share, so
        # in this script's session the daemon would compete with its own
        # client (wrk, the listing loop) where radosgw does not.
        start_new_session=True)
    log.close()
    if not benchlib.wait_ready(port, proc, timeout=60):
        with open(os.path.join(work, "strata.log"), errors="replace") as f:
            tail = f.read()[-3000:]
        sys.exit(f"rados_vs_rgw: strata did not become ready:\n{tail}")
    srv = Server("strata", f"http://127.0.0.1:{port}", ak, sk, proc.pid, work)
    cl = s3_dataset.client(srv.ns())
    cl.create_bucket(Bucket="probe")
    try:
        cl.put_object(Bucket="probe", Key="probe", Body=b"probe")
    except cl.exceptions.ClientError as e:
        benchlib.stop(proc, work)
        sys.exit(f"rados_vs_rgw: {binary} on RADOS answers a PUT with "
                 f"{e.response['Error'].get('Code')}: object data is not on RADOS in this build")
    return proc, srv


def load(srv, n100k, nkeys, nkeys_v=0):
    """The dataset and the listing buckets on srv; path lists in srv.work."""
    t = time.monotonic()
    s3_dataset.load(srv.ns(www=os.path.join(srv.work, "www"), out=srv.work, n100k=n100k))
    shutil.rmtree(os.path.join(srv.work, "www"), ignore_errors=True)  # nginx's copy: not used
    if nkeys:
        s3_dataset.listing(srv.ns(bucket=LIST_BUCKET, make=nkeys, client="raw", repeat=1))
    if nkeys_v:
        s3_dataset.listing(srv.ns(bucket=LISTV_BUCKET, make=nkeys_v, client="raw", repeat=1,
                                  versions=True))
    say(f"{NAMES[srv.name]}: dataset loaded in {time.monotonic() - t:.0f} s")


def osd_cpu(c):
    return sum(cpu_seconds(p) for n, p in c.pids.items() if n.startswith("osd."))


def osd_counters(c):
    """OSD_COUNTERS summed over the OSDs (admin socket; absent ones 0)."""
    tot = dict.fromkeys(OSD_COUNTERS.values(), 0)
    for n in c.pids:
        if not n.startswith("osd."):
            continue
        r = subprocess.run(["ceph", "--admin-daemon", c.path("run", f"ceph-{n}.asok"), "perf",
                            "dump"], capture_output=True, text=True, timeout=60)
        try:
            d = json.loads(r.stdout)
        except ValueError:
            continue
        for (sec, k), name in OSD_COUNTERS.items():
            v = d.get(sec, {}).get(k, 0)
            tot[name] += v.get("avgcount", 0) if isinstance(v, dict) else v
        for (sec, k), name in OSD_LATENCIES.items():
            v = d.get(sec, {}).get(k, {})
            tot[name + ".sum"] = tot.get(name + ".sum", 0) + v.get("sum", 0)
            tot[name + ".n"] = tot.get(name + ".n", 0) + v.get("avgcount", 0)
    return tot


def timed(c, srv, fn):
    """fn() with the gateway's and the OSDs' CPU seconds over it, and the
    OSDs' counters' deltas."""
    k0 = osd_counters(c)
    g0, o0, t0 = cpu_seconds(srv.pid), osd_cpu(c), time.monotonic()
    out = fn()
    g, o, t = cpu_seconds(srv.pid) - g0, osd_cpu(c) - o0, time.monotonic() - t0
    k1 = osd_counters(c)
    srv.last_counters = {k: k1[k] - k0[k] for k in OSD_COUNTERS.values()}
    for name in OSD_LATENCIES.values():
        n = k1.get(name + ".n", 0) - k0.get(name + ".n", 0)
        srv.last_counters[name] = (k1[name + ".sum"] - k0[name + ".sum"]) * 1e3 / n if n else 0
    return out, g, o, t


def wrk_row(c, srv, row, a, run=0):
    big = row.endswith("64m")
    conns = a.big_conns if big else a.conns
    duration = {"put64m": a.put64m_duration, "get64m": a.get64m_duration}.get(row, a.duration)
    if row.startswith("put"):
        reqs, body = os.path.join(srv.work, row + ".req"), os.path.join(srv.work, row + ".body")
        # Signed now: a signature's date must be within 15 minutes of the server's.
        n = 8 if big else a.put_keys
        s3_dataset.putsign(srv.ns(n=n, size=SIZES[row], prefix=f"{row}/r{run}/",
                                  body=body, out=reqs))
        fn = lambda: benchlib.wrk_cell(srv.endpoint, srv.work, reqs, conns, duration,  # noqa: E731
                                       put_body=body)
    else:
        paths = os.path.join(srv.work, row + ".strata")  # s3_dataset's presigned GET paths
        fn = lambda: benchlib.wrk_cell(srv.endpoint, srv.work, paths, conns, duration)  # noqa: E731
    cell, gcpu, ocpu, secs = timed(c, srv, fn)
    n = cell["requests"]
    # put100k: a cell past half its keys per thread overwrote: not the row
    over = max(0, n - a.put_keys) if row == "put100k" else 0
    if over:
        say(f"{row} {NAMES[srv.name]}: {n} requests over {a.put_keys} keys: {over} overwrites "
            "(raise --put-keys)")
    return {"row": row, "server": srv.name, "requests": n, "rps": n / duration,
            "p50_ms": cell["p50_us"] / 1e3, "p99_ms": cell["p99_us"] / 1e3,
            "errors": cell["errors"] + cell["non2xx"] + over, "gw_cpu_us": gcpu * 1e6 / n if n else None,
            "osd_cpu_us": ocpu * 1e6 / n if n else None, "conns": conns, "seconds": round(secs, 1),
            "osd": per_req(srv.last_counters, n)}


def per_req(counters, n):
    """The OSD counters per request (ops as is, bytes in KiB)."""
    if not n:
        return {}
    return {k: round(v if k.endswith("_ms") else v / n / (1024 if k.endswith("bytes") else 1), 2)
            for k, v in counters.items()}


def list_row(c, srv, nkeys, row="list"):
    versions = row == "listv"
    (n, pages, secs), gcpu, ocpu, _ = timed(c, srv, lambda: s3_dataset.raw_list_pass(
        srv.ns(bucket=LISTV_BUCKET if versions else LIST_BUCKET, versions=versions)))
    want = 2 * nkeys if versions else nkeys
    return {"row": row, "server": srv.name, "requests": pages, "keys": n,
            "rps": pages / secs, "keys_per_s": n / secs, "p50_ms": secs * 1e3 / max(pages, 1),
            "p99_ms": None, "errors": 0 if n == want else abs(want - n),
            "gw_cpu_us": gcpu * 1e6 / pages if pages else None,
            "osd_cpu_us": ocpu * 1e6 / pages if pages else None, "seconds": round(secs, 2),
            "osd": per_req(srv.last_counters, pages)}


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(v) if v else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def report(results, servers, a, c):
    by = {}
    for r in results:
        by.setdefault((r["row"], r["server"]), []).append(r)
    print(f"\n## Strata on RADOS vs radosgw: {c.nosds} OSD(s), {c.store}, {os.cpu_count()} cores, "
          f"127.0.0.1, medians of {a.runs} alternating runs; wrk -t2, {a.duration} s per cell "
          f"(GET 64 MiB {a.get64m_duration} s, PUT 64 MiB {a.put64m_duration} s), "
          f"{a.conns} connections ({a.big_conns} on 64 MiB rows), {a.n100k} x 100 KiB keys, "
          f"listing over {a.keys} keys\n")
    head = ["row"]
    for s in servers:
        head += [f"{NAMES[s]} req/s (MB/s)", "p50 ms", "p99 ms", "gw CPU us/req", "OSD CPU us/req"]
    variants = [s for s in servers if s != "rgw"]
    if "rgw" in servers:
        head += [f"{NAMES[s]}/radosgw" for s in variants]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for row in a.rows:
        cells, rates = [LABELS[row] if not row.startswith("list")
                        else f"{LABELS[row]}, {a.keys} keys{' x 2 versions' if row == 'listv' else ''} (pages)"], []
        for s in servers:
            rs = by.get((row, s), [])
            rate = med(rs, "rps")
            rates.append(rate)
            shown = fmt(rate, ".0f")
            if row in SIZES and SIZES[row] >= 1 << 20 and rate is not None:
                shown = f"{rate:.1f} ({rate * SIZES[row] / 1e6:.0f})"
            elif row.startswith("list") and rs:
                shown += f" ({med(rs, 'keys_per_s'):.0f} keys/s)"
            errs = sum(r["errors"] for r in rs)
            if errs:
                shown += f" ({errs} err)"
            cells += [shown, fmt(med(rs, "p50_ms"), ".2f"), fmt(med(rs, "p99_ms"), ".2f"),
                      fmt(med(rs, "gw_cpu_us"), ".0f"), fmt(med(rs, "osd_cpu_us"), ".0f")]
        if "rgw" in servers:
            rr = rates[servers.index("rgw")]
            cells += [f"{rates[servers.index(s)] / rr:.2f}" if rates[servers.index(s)] and rr
                      else "-" for s in variants]
        print("| " + " | ".join(cells) + " |")
    print("\nOSD counters per request (medians; KiB for bytes: osd_in what the ops carried, wal and "
          "sst what BlueFS wrote for RocksDB (sst: flushes and compactions), big/small BlueStore's "
          "data writes; *_ms: the OSD's mean latencies over the cell):\n")
    keys = list(OSD_COUNTERS.values()) + list(OSD_LATENCIES.values())
    print("| row | server | " + " | ".join(keys) + " |")
    print("|" + " --- |" * (len(keys) + 2))
    for row in a.rows:
        for s in servers:
            rs = [r["osd"] for r in by.get((row, s), []) if r.get("osd")]
            if rs:
                print(f"| {row} | {NAMES[s]} | " + " | ".join(
                    fmt(statistics.median(r[k] for r in rs), ".2f") for k in keys) + " |")
    print("\nList rows: req/s are pages of 1,000 keys per second and p50 the mean ms per page "
          "(one client, pages in sequence).  CPU per request: user + system of the gateway process "
          "and of every OSD over the cell, divided by the requests it completed.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memstore", action="store_true", help="OSDs on memstore, not BlueStore")
    ap.add_argument("--osds", type=int, default=1)
    ap.add_argument("--quick", action="store_true",
                    help="smaller dataset and shorter cells (<= 8 min here; the docstring)")
    ap.add_argument("--keys", type=int, help="keys of the listing bucket (100000; quick 10000)")
    ap.add_argument("--n100k", type=int, help="distinct 100 KiB objects (10000; quick 1000)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, help="seconds per wrk cell (10; quick 3)")
    ap.add_argument("--get64m-duration", type=int, help="(--duration; quick 10)")
    ap.add_argument("--put64m-duration", type=int, help="(20; quick 12)")
    ap.add_argument("--conns", type=int, default=32)
    ap.add_argument("--put-keys", type=int, default=40000,
                    help="signed PUT 100 KiB requests per cell, each a new key (40000)")
    ap.add_argument("--big-conns", type=int, default=8, help="connections of the 64 MiB rows")
    ap.add_argument("--servers", default="strata,rgw", help="strata,rgw or one of them")
    ap.add_argument("--rows", default="get4k,get100k,get64m,put100k,put64m,list")
    ap.add_argument("--strata-variant", action="append", default=[], metavar="NAME=ARGS",
                    help="one more Strata daemon on the same cluster (its own pools), started "
                         "with these extra server arguments, measured interleaved with the "
                         "others (repeatable), e.g. inl64k='--inline-max 65536'; ARGS starting "
                         "with @PATH run that strata binary (another build)")
    ap.add_argument("--strata-args", default="",
                    help="extra server arguments of the first Strata daemon")
    ap.add_argument("--rgw-nagle", action="store_true",
                    help="radosgw without tcp_nodelay=1 (its default: keep-alive requests then "
                         "wait 25-45 ms for delayed ACKs here)")
    ap.add_argument("--memstore-gib", type=int, default=8)
    ap.add_argument("--bluestore-gib", type=int, default=60, help="sparse file per OSD")
    a = ap.parse_args()
    sizes = {"keys": (100000, 10000), "n100k": (10000, 1000), "duration": (10, 3),
             "put64m_duration": (20, 12), "get64m_duration": (None, 10)}
    for k, (full, quick) in sizes.items():
        if getattr(a, k) is None:
            setattr(a, k, quick if a.quick else full)
    if a.get64m_duration is None:
        a.get64m_duration = a.duration
    servers = [s for s in a.servers.split(",") if s]
    extra = {"strata": a.strata_args.split()}
    bins = {}
    if "strata" in servers:
        for v in a.strata_variant:
            name, _, args = v.partition("=")
            if not name.isalnum():
                ap.error(f"--strata-variant {v!r}: NAME=ARGS, NAME letters and digits")
            sv = "strata-" + name
            NAMES[sv] = "Strata " + name
            extra[sv] = args.split()
            if extra[sv] and extra[sv][0].startswith("@"):
                bins[sv] = extra[sv].pop(0)[1:]
            servers.insert(servers.index("strata") + 1, sv)
    a.rows = [r for r in a.rows.split(",") if r]
    if not servers or any(s not in NAMES for s in servers) or len(set(servers)) != len(servers) or any(r not in LABELS for r in a.rows):
        ap.error("--servers: strata and/or rgw; --rows: " + ",".join(LABELS))
    for tool in ("wrk", "ceph-mon", "ceph-osd", "radosgw"):
        if not shutil.which(tool):
            sys.exit(f"rados_vs_rgw: {tool} not installed (deploy/install-deps.sh)")
    binary = None
    if "strata" in servers:
        binary = os.environ.get("STRATA_BIN") or os.path.join(ROOT, "build-rel", "strata")
        if not os.access(binary, os.X_OK):
            sys.exit(f"rados_vs_rgw: STRATA_BIN {binary!r} is not an executable strata")
        if not strata_has_rados(binary):
            sys.exit(f"rados_vs_rgw: {binary} has no --rados-conf: this build's daemon cannot "
                     "run on RADOS; use a build that can, or --servers rgw for radosgw alone")

    work = tempfile.mkdtemp(prefix="strata-rados-vs-rgw.",
                            dir=os.environ.get("BENCH_DIR") or tempfile.gettempdir())
    results_path = os.path.join(work, "results.jsonl")
    procs, ok = [], False
    store = "memstore" if a.memstore else "bluestore"
    try:
        c = CephCluster(osds=a.osds, store=store, rgw=True, memstore_bytes=a.memstore_gib * GIB,
                        bluestore_bytes=a.bluestore_gib * GIB, timeout=120,
                        rgw_frontend_opts="" if a.rgw_nagle else "tcp_nodelay=1",
                        base=os.path.join(work, "ceph"))
        with c:
            say(f"cluster ({a.osds} x {store}) and radosgw up in {c.start_seconds:.1f} s "
                f"(radosgw {c.rgw_start_seconds:.1f} s of it)")
            srvs = []
            for s in servers:
                if s.startswith("strata"):
                    # each Strata daemon its own pools: prefix strata, strata-NAME
                    p, srv = start_strata(bins.get(s, binary), c, os.path.join(work, s), s,
                                          extra[s])
                    srv.name = s
                    procs.append((p, srv.work))
                else:
                    ak, sk = c.rgw_user()
                    srv = Server("rgw", c.rgw_endpoint, ak, sk, c.pids["client.rgw.a"],
                                 os.path.join(work, "rgw"))
                srvs.append(srv)
            for srv in srvs:
                load(srv, a.n100k, a.keys if "list" in a.rows else 0,
                     a.keys if "listv" in a.rows else 0)
            results = []
            with open(results_path, "w") as out:
                for row in a.rows:
                    for run in range(a.runs):
                        order = srvs if run % 2 == 0 else srvs[::-1]
                        for srv in order:
                            r = (list_row(c, srv, a.keys, row) if row.startswith("list")
                                 else wrk_row(c, srv, row, a, run))
                            r["run"] = run
                            results.append(r)
                            out.write(json.dumps(r) + "\n")
                            out.flush()
                            say(f"{row} {NAMES[srv.name]} run {run + 1}: {r['rps']:.1f}/s, p50 "
                                f"{fmt(r['p50_ms'], '.2f')} ms, p99 {fmt(r['p99_ms'], '.2f')} ms, "
                                f"gw {fmt(r['gw_cpu_us'], '.0f')} us/req, errors {r['errors']}")
            for p, pwork in procs:
                if p.poll() is not None:
                    say(f"FAIL: strata exited during the run (status {p.returncode})")
                    results.append({"row": "-", "server": "strata", "errors": 1})
                # while the cluster is up: without it a daemon's shutdown waits on librados
                benchlib.stop(p, pwork)
            report(results, servers, a, c)
            bad = [f"{r['row']}/{r['server']}" for r in results if r["errors"]]
            if bad:
                print(f"\nFAILED: requests failed in {', '.join(sorted(set(bad)))}: not a valid run")
            ok = not bad
    finally:
        for p, pwork in procs:
            benchlib.stop(p, pwork)
        if os.path.exists(results_path):
            os.makedirs(os.path.join(ROOT, "build-bench"), exist_ok=True)
            shutil.copy(results_path, os.path.join(ROOT, "build-bench", "rados_vs_rgw-results.jsonl"))
        if os.environ.get("KEEP") == "1":
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
