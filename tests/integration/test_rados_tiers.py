#!/usr/bin/python3
"""test_rados_tiers.py - tiers as pools: a RADOS-backed daemon with
`--tier warm:rados:POOL`, POOL an erasure-coded 2+1 pool on a cluster of
three memstore OSDs (started once for the file).

- lifecycle Transition (--lc-day-seconds 1) of a 300 KiB object, a 9 MiB
  object (three 4 MiB stripes) and a multipart object (5 MiB + 2 MiB):
  HEAD and the listing say STANDARD_IA; GET full and by range (first byte,
  across the stripe edge, across the part boundary, the tail) returns the
  same bytes; the warm pool holds exactly the stripes of the new data
  (the 9 MiB object's stripes concatenated, read with the rados CLI, are
  its bytes) and the hot pool P.data none of the old ones once the reclaim
  grace (1 s: --orphan-grace-seconds) passed; deleting the objects empties the warm
  pool of them;
- a PUT naming STANDARD_IA writes straight into the warm pool (nothing in
  the hot one), reads back by range, shows in the admin info's tier as its
  pool, and its delete reclaims it;
- the daemon killed (_exit 137, as kill -9) mid-transition, its copy in
  the pool complete but not yet verified nor switched to: after a restart
  the object is listed once, its bytes are intact, it is on the tier, and
  the pools hold exactly its stripes (the killed attempt's copy reclaimed,
  the hot copy gone: nothing twice, nothing lost); the nine kills run in
  three lanes at once, each a gateway on pools of its own;
- bad tier specs refuse the start with one clear line: a missing pool, the
  store's own pools, an empty pool name, hot as a pool, a drive tier on the
  RADOS store, and a pool tier on a local daemon.

The daemon reads "tiers" from a config file (the form carried by
--print-config too).  Skipped (77) when the Ceph daemons are missing.
"""

import hashlib
import json
import os
import subprocess
import sys
import threading
import time

from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rados_gw import flags, launch, rados_init, require_daemon_on_rados  # noqa: E402
from strata_harness import Strata, in_lanes, log, run, test, wait_until  # noqa: E402

BIN = os.environ.get("STRATA_BIN", "")
MiB = 1 << 20
STRIPE = 4 * MiB
PREFIX = "rt" + os.urandom(3).hex()
WARM = PREFIX + ".warm"
HOT = PREFIX + ".data"
CLUSTER = None
CONF = None  # the daemon's config file
GW_ARGS = ["--lc-day-seconds", "1", "--ilm-interval-seconds", "1", "--orphan-grace-seconds", "1",
           "--ilm-move-mbps", "0", "--lease-seconds", "5"]
EC_POOL_MU = threading.Lock()  # one erasure-code profile, set by each create_ec_pool


class Pools:
    """The pools of a gateway: PREFIX.meta, PREFIX.data (hot) and its warm
    tier PREFIX.warm."""

    def __init__(self, prefix):
        self.prefix, self.meta = prefix, prefix + ".meta"
        self.hot, self.warm = prefix + ".data", prefix + ".warm"


MAIN = Pools(PREFIX)


def body(n, seed):
    return hashlib.sha256(seed.encode()).digest() * (n // 32) + b"z" * (n % 32)


def pool_objects(pool):
    """Names of the objects in pool (the rados CLI)."""
    out = CLUSTER.rados("-p", pool, "ls").stdout
    out = out.decode() if isinstance(out, bytes) else out
    return set(ln.strip() for ln in out.splitlines() if ln.strip())


def data_ids(names):
    """{32-hex data id: sorted stripe numbers} of data object names ID.NNNNNNNN."""
    ids = {}
    for n in names:
        i, _, s = n.partition(".")
        ids.setdefault(i, []).append(int(s, 16))
    return {i: sorted(v) for i, v in ids.items()}


def size_of(data_id):
    """The size a warm data object's stripe 0 records (xattr strata =
    "1 SIZE STRIPE NSTRIPES", meta/rados/data.c)."""
    v = CLUSTER.rados("-p", WARM, "getxattr", f"{data_id}.00000000", "strata").stdout.split()
    assert v[0] == "1" and int(v[2]) == STRIPE, v
    return int(v[1])


def stripes(size):
    return max(1, (size + STRIPE - 1) // STRIPE)


def rule(c, b):
    c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "warm", "Filter": {}, "Status": "Enabled",
         "Transitions": [{"Days": 0, "StorageClass": "STANDARD_IA"}]}]})


def put_multipart(c, b, key, parts):
    up = c.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
    done = [{"PartNumber": i, "ETag": c.upload_part(Bucket=b, Key=key, UploadId=up,
                                                    PartNumber=i, Body=p)["ETag"]}
            for i, p in enumerate(parts, 1)]
    c.complete_multipart_upload(Bucket=b, Key=key, UploadId=up, MultipartUpload={"Parts": done})


def ranged(c, b, key, spec):
    r = c.get_object(Bucket=b, Key=key, Range=spec)
    return r["Body"].read(), r["ContentRange"]


def start_fails(args, env_extra=None):
    """Run the daemon with args; it must exit (not serve): (rc, output)."""
    env = {"PATH": "/usr/bin:/bin"}
    env.update(env_extra or {})
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    r = subprocess.run([BIN, "server", "--address", "127.0.0.1:1"] + args,
                       capture_output=True, text=True, timeout=60, env=env)
    return r.returncode, r.stdout + r.stderr


def fresh_bucket(s, name, pools=MAIN):
    """A client, a new bucket, and the pools' objects before it is used."""
    c = s.client()
    b = s.bucket_name(name)
    c.create_bucket(Bucket=b)
    return c, b, pool_objects(pools.hot), pool_objects(pools.warm)


@test
def transitions_move_data_to_the_pool(s):
    c, b, hot0, warm0 = fresh_bucket(s, "move")
    objs = {"small": body(300 * 1024, "s"), "big": body(9 * MiB + 5, "b")}
    for k, v in objs.items():
        c.put_object(Bucket=b, Key=k, Body=v, ContentType="application/x-test")
    parts = [body(5 * MiB, "p1"), body(2 * MiB + 3, "p2")]
    put_multipart(c, b, "multi", parts)
    objs["multi"] = b"".join(parts)
    hot_new = pool_objects(HOT) - hot0
    want_stripes = stripes(300 * 1024) + stripes(9 * MiB + 5) + stripes(5 * MiB) + \
        stripes(2 * MiB + 3)
    assert len(hot_new) == want_stripes, (len(hot_new), want_stripes, sorted(hot_new))
    assert pool_objects(WARM) == warm0
    etags = {k: c.head_object(Bucket=b, Key=k)["ETag"] for k in objs}
    rule(c, b)

    def moved():
        return all(c.head_object(Bucket=b, Key=k).get("StorageClass") == "STANDARD_IA"
                   for k in objs)
    wait_until("the three objects transitioned", moved, 60)
    for k, v in objs.items():
        h = c.head_object(Bucket=b, Key=k)
        assert h["ETag"] == etags[k] and h["ContentLength"] == len(v), (k, h)
        assert h["ContentType"] == "application/x-test" or k == "multi", h
        g = c.get_object(Bucket=b, Key=k)
        assert g["StorageClass"] == "STANDARD_IA", g
        assert g["Body"].read() == v, f"{k}: bytes differ after the transition"
    listed = {o["Key"]: o["StorageClass"] for o in c.list_objects_v2(Bucket=b)["Contents"]}
    assert listed == {k: "STANDARD_IA" for k in objs}, listed
    big, multi = objs["big"], objs["multi"]
    for key, data, spec, lo, hi in [
            ("big", big, "bytes=0-0", 0, 0),
            ("big", big, f"bytes={STRIPE - 10}-{STRIPE + 9}", STRIPE - 10, STRIPE + 9),
            ("big", big, f"bytes={2 * STRIPE - 1}-{2 * STRIPE + 100}", 2 * STRIPE - 1,
             2 * STRIPE + 100),
            ("big", big, "bytes=-7", len(big) - 7, len(big) - 1),
            ("multi", multi, f"bytes={5 * MiB - 3}-{5 * MiB + 2}", 5 * MiB - 3, 5 * MiB + 2),
            ("small", objs["small"], "bytes=1000-", 1000, 300 * 1024 - 1)]:
        got, cr = ranged(c, b, key, spec)
        assert got == data[lo:hi + 1], (key, spec)
        assert cr == f"bytes {lo}-{hi}/{len(data)}", (key, spec, cr)
    # The new copies are in the warm pool: exactly their stripes.
    warm_new = pool_objects(WARM) - warm0
    ids = data_ids(warm_new)
    assert sorted(len(v) for v in ids.values()) == [1, 1, 2, 3], ids
    assert all(v == list(range(len(v))) for v in ids.values()), ids
    big_id = [i for i, v in ids.items() if len(v) == 3][0]
    path = s.tmp + "/stripe"
    got = b""
    for n in range(3):
        CLUSTER.rados("-p", WARM, "get", f"{big_id}.{n:08x}", path)
        with open(path, "rb") as f:
            got += f.read()
    assert got == big, "the warm pool's stripes are not the object's bytes"
    # Each copy's stripe 0 records its size: the single-part objects'
    # copies and multi's two parts.
    sizes = {i: size_of(i) for i in ids}
    assert sorted(sizes.values()) == sorted([300 * 1024, 9 * MiB + 5, 5 * MiB, 2 * MiB + 3]), sizes
    # The old data goes from the hot pool after the reclaim grace.
    wait_until("the hot copies reclaimed", lambda: not (pool_objects(HOT) & hot_new), 30)
    # Deletes reclaim every warm copy: the single-part objects' data and
    # the deleted multipart version's parts (its part table names them).
    assert len(warm_new) == 7, warm_new
    for k in objs:
        c.delete_object(Bucket=b, Key=k)
    wait_until("the warm copies reclaimed after the delete",
               lambda: not (pool_objects(WARM) & warm_new), 30)
    c.delete_bucket(Bucket=b)


@test
def put_naming_the_class_writes_to_the_pool(s):
    c, b, hot0, warm0 = fresh_bucket(s, "direct")
    data = body(5 * MiB + 9, "direct")
    c.put_object(Bucket=b, Key="d", Body=data, StorageClass="STANDARD_IA")
    new = data_ids(pool_objects(WARM) - warm0)
    assert list(new.values()) == [[0, 1]], new
    assert size_of(list(new)[0]) == len(data)
    assert pool_objects(HOT) == hot0, "a write naming the warm class touched the hot pool"
    g = c.get_object(Bucket=b, Key="d", Range="bytes=4194300-4194310")
    assert g["Body"].read() == data[4194300:4194311] and g["StorageClass"] == "STANDARD_IA"
    st, doc = s.admin_get("info")
    assert st == 200, doc
    warm = [t for t in doc["tiers"] if t["name"] == "warm"]
    assert len(warm) == 1 and warm[0].get("pool") == WARM, doc["tiers"]
    c.delete_object(Bucket=b, Key="d")
    wait_until("the warm copy reclaimed after the delete",
               lambda: not (pool_objects(WARM) - warm0), 30)
    c.delete_bucket(Bucket=b)


def index_shards(pools):
    return {o for o in pool_objects(pools.meta) if o.startswith("idx.")}


def shard_keys(pools, shards, kinds=("x/", "w/", "g/")):
    """Keys of those kinds in the index shards; by default transition
    intents (x/), pending data (w/) and reclaim entries (g/): none once a
    transition is resolved and the reclaim grace has passed."""
    left = []
    for obj in shards:
        keys = CLUSTER.rados("-p", pools.meta, "listomapkeys", obj).stdout
        left += [(obj, k) for k in keys.splitlines() if k[:2] in kinds]
    return left


def crash_run(s, pools, step, shape):
    s.proc.terminate()
    assert s.proc.wait(30) == 0
    launch(s, step)
    shards0 = index_shards(pools)
    c, b, hot0, warm0 = fresh_bucket(s, f"crash{step}{shape[0]}", pools)
    shards = index_shards(pools) - shards0  # the bucket's
    assert shards, "no index shard made for the bucket"
    if shape == "single":
        data = body(9 * MiB + 1, b)
        c.put_object(Bucket=b, Key="k", Body=data)
        want = [[0, 1, 2]]
    else:
        parts = [body(5 * MiB, b + "1"), body(MiB + 3, b + "2")]
        put_multipart(c, b, "k", parts)
        data = b"".join(parts)
        want = [[0], [0, 1]]
    hot_new = data_ids(pool_objects(pools.hot) - hot0)
    assert sorted(hot_new.values()) == want, hot_new
    heads = [k for _, k in shard_keys(pools, shards, ("h/",))]
    assert len(heads) == 1 and heads[0].startswith("h/k"), heads  # the listing sees the shards
    try:
        rule(c, b)
    except (ConnectionClosedError, EndpointConnectionError):
        pass  # the transition reached the step and the daemon died before the answer
    rc = s.proc.wait(30)
    assert rc == 137, f"the daemon exited with {rc}, not at transition step {step}"
    launch(s, 0)
    c = s.client()
    wait_until(f"the transition done after the kill at step {step}",
               lambda: c.head_object(Bucket=b, Key="k").get("StorageClass") == "STANDARD_IA",
               60)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == data, "bytes changed"
    g = c.get_object(Bucket=b, Key="k", Range=f"bytes={5 * MiB - 2}-{5 * MiB + 1}")
    assert g["Body"].read() == data[5 * MiB - 2:5 * MiB + 2], "ranged bytes changed"
    vers = c.list_object_versions(Bucket=b)
    assert [v["Key"] for v in vers.get("Versions", [])] == ["k"], vers
    assert not vers.get("DeleteMarkers"), vers
    # Nothing twice, nothing lost: one copy in the warm pool (the killed
    # attempt's copy reclaimed), the hot copy gone, and no intent, pending
    # or reclaim entry left once the grace passed.
    def settled():
        new = data_ids(pool_objects(pools.warm) - warm0)
        return sorted(new.values()) == want and \
            not (set(data_ids(pool_objects(pools.hot))) & set(hot_new)) and \
            not shard_keys(pools, shards)
    wait_until("exactly one warm copy, no hot one, no entry left", settled, 30)
    c.delete_object(Bucket=b, Key="k")
    wait_until("the warm copy reclaimed after the delete",
               lambda: pool_objects(pools.warm) == warm0, 30)
    c.delete_bucket(Bucket=b)


# The daemon _exit(137)s (as kill -9) at transition step K
# (STRATA_DEBUG_TRANSITION_CRASH: 1 intent written, 2 first MiB copied,
# 3 copy durable, 4 verified, 5 record switched, 6 and 7 after the one op
# that queues the old copy for removal and drops the intent), then runs
# again without the hook.  Each kill costs a lease period (--lease-seconds
# 5) before the restarted gateway's ILM runs, so the cases run in LANES
# lanes at once, each a gateway on pools of its own (lane 0 is the file's
# daemon), one case after the other within a lane.
LANES = 3


def open_lane(s, i):
    """Lane i's (gateway, pools): lane 0 the file's daemon, the others a
    daemon like it on pools PREFIX-i.* with a warm pool of their own."""
    if i == 0:
        return s, MAIN
    pools = Pools(f"{PREFIX}-{i}")
    rados_init(CLUSTER, pools.prefix)
    with EC_POOL_MU:
        CLUSTER.create_ec_pool(pools.warm, k=2, m=1)
    conf = CLUSTER.path(f"strata-{i}.json")
    with open(conf, "w") as f:
        json.dump({"tiers": [f"warm:rados:{pools.warm}"]}, f)
    return Strata(args=flags(CLUSTER, pools.prefix) + ["--config", conf] + GW_ARGS,
                  drives=[]), pools


def close_lane(s, i, lane):
    return lane[0] is s or lane[0].stop()


def kill_at(step, shape):
    def fn(lane):
        crash_run(lane[0], lane[1], step, shape)
    fn.__name__ = f"kill_at_step_{step}_{shape}"
    return fn


test(in_lanes("kills_at_every_step",
              [kill_at(step, "single") for step in range(1, 8)] +
              [kill_at(3, "multipart"), kill_at(5, "multipart")],
              LANES, open_lane, close_lane))


@test
def bad_tier_specs_refuse_the_start(s):
    f = flags(CLUSTER, PREFIX)
    cases = [
        (f + ["--tier", "warm:rados:nosuchpool"], 1,
         "tier warm: pool nosuchpool does not exist: create it (e.g. ceph osd pool create "
         "nosuchpool erasure"),
        (f + ["--tier", f"warm:rados:{HOT}"], 2,
         f"tier warm: pool \"{HOT}\": want a tier name other than hot, given once, and a pool "
         f"other than {PREFIX}.meta and {PREFIX}.data"),
        (f + ["--tier", "warm:rados:"], 2,
         "tier warm: want NAME:rados:POOL with a pool name of 1 to 127 printable characters"),
        (f + ["--tier", f"hot:rados:{WARM}"], 2,
         "tier hot is the pool PREFIX.data of the RADOS store (--rados-pool-prefix)"),
        (f + ["--tier", "warm:/tmp/never-used-w{1...4}"], 2,
         "--rados-conf cannot be combined with --tier NAME:DRIVES: tiers of a RADOS store are "
         "pools of its cluster (--tier NAME:rados:POOL) or remote S3 endpoints (NAME:s3:URL)"),
        (["--tier", f"warm:rados:{WARM}", s.tmp + "/local{1...4}"], 1,
         "tier warm: a pool (NAME:rados:POOL) needs the RADOS store (--rados-conf FILE)"),
    ]
    for args, want_rc, want in cases:
        rc, out = start_fails(args)
        assert rc == want_rc and want in out, (args, rc, out)
        assert "Strata S3 endpoint" not in out, out


@test
def print_config_carries_the_pool_tier(s):
    r = subprocess.run([BIN, "server", "--config", CONF, "--print-config"] +
                       flags(CLUSTER, PREFIX), capture_output=True, text=True, timeout=30,
                       env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tiers"] == [f"warm:rados:{WARM}"], r.stdout


def main():
    global CLUSTER, CONF
    require_daemon_on_rados()
    from ceph_cluster import CephCluster
    t0 = time.monotonic()
    with CephCluster(osds=3, store="memstore") as c:
        CLUSTER = c
        rados_init(c, PREFIX)
        c.create_ec_pool(WARM, k=2, m=1)
        log(f"cluster, pools and EC pool {WARM} ready in {time.monotonic() - t0:.1f} s")
        CONF = c.path("strata.json")
        with open(CONF, "w") as f:
            json.dump({"tiers": [f"warm:rados:{WARM}"]}, f)
        s = Strata(args=flags(c, PREFIX) + ["--config", CONF] + GW_ARGS, drives=[])
        try:
            run(s)  # exits
        finally:
            s.stop()


if __name__ == "__main__":
    main()
