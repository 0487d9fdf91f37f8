"""benchlib.py - what the Python benchmark programs of tests/bench share: a
free loopback port, waiting for /health/ready, /metrics as a dict, the
time lifecycle transitions take to move a number of bytes, and one
wrk cell of presigned 100 KiB GETs (tests/bench/s3.sh's get100k cell: the
dataloader benchmark) reporting p50/p99 and its latency histogram, and the
p99 of several cells pooled from their histograms.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

GET_LUA = r"""
local paths, idx, counter = {}, 0, 0
function setup(thread) thread:set("id", counter); counter = counter + 1 end
function init(args)
    for line in io.lines(args[1]) do paths[#paths + 1] = line end
    idx = ((id or 0) * 7919) % #paths
end
function request() idx = idx % #paths + 1; return wrk.format("GET", paths[idx]) end
function done(summary, latency, requests)
    local e, hist = summary.errors, {}
    -- latency(i): the i-th distinct latency (us) and how many requests took it
    for i = 1, #latency do
        local us, n = latency(i)
        hist[#hist + 1] = string.format("[%d,%d]", us, n)
    end
    io.write(string.format('{"requests":%d,"p50_us":%d,"p99_us":%d,"errors":%d,"non2xx":%d,"hist":[%s]}\n',
        summary.requests, latency:percentile(50), latency:percentile(99),
        e.connect + e.read + e.write + e.timeout, e.status, table.concat(hist, ",")))
end
"""

# PUTs for wrk: args[1] holds "path<TAB>x-amz-date<TAB>authorization<TAB>sha256"
# lines (tests/bench/s3_dataset.py putsign), args[2] the body file.  The
# request half, which s3.sh puts after its own setup and done functions.
PUT_REQUEST_LUA = r"""
local reqs, idx, body = {}, 0, nil
function init(args)
    local f = assert(io.open(args[2], "rb"))
    body = f:read("*a")
    f:close()
    for line in io.lines(args[1]) do
        local p, d, a, s = line:match("([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)")
        reqs[#reqs + 1] = { path = p, h = { ["x-amz-date"] = d, ["Authorization"] = a,
                                            ["x-amz-content-sha256"] = s } }
    end
    -- each of wrk's 2 threads starts at its own half: a cell of fewer
    -- requests than lines PUTs each key once (new keys, no overwrites)
    idx = ((id or 0) * math.floor(#reqs / 2)) % #reqs
end
function request()
    idx = idx % #reqs + 1
    local r = reqs[idx]
    return wrk.format("PUT", r.path, r.h, body)
end
"""
# The same JSON line as GET_LUA's (its setup and done functions).
PUT_LUA = GET_LUA.split("function init(args)")[0] + PUT_REQUEST_LUA + \
    "function done" + GET_LUA.split("function done", 1)[1]

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_ready(port, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with _OPENER.open(f"http://127.0.0.1:{port}/health/ready", timeout=2) as r:
                if r.status == 200:
                    return True
        except Exception:
            pass
        time.sleep(0.1)
    return False


def metrics(ep, prefixes=("strata_",)):
    """/metrics (served with --metrics-public): name -> value, the largest
    sample over the labels (the worst drive for the per-drive gauges)."""
    g = {}
    with _OPENER.open(f"{ep}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("#") or " " not in line:
                continue
            name, v = line.rsplit(" ", 1)
            name = name.split("{")[0]
            if name.startswith(tuple(prefixes)):
                g[name] = max(g.get(name, 0), float(v))
    return g


def timed_move(ep, base, until_bytes):
    """Wait until strata_ilm_bytes_moved_total reaches until_bytes; the
    seconds from the first byte moved (the counter leaving base) to the
    last (sampled every 50 ms)."""
    t0 = None
    while True:
        v = metrics(ep, ("strata_ilm_bytes_moved_total",))["strata_ilm_bytes_moved_total"]
        now = time.monotonic()
        if t0 is None and v > base:
            t0 = now
        if v >= until_bytes:
            return max(now - (t0 if t0 is not None else now), 0.05)
        time.sleep(0.05)


def get_paths(client, ep, bucket, keys, path):
    """Write the presigned GET paths of bucket's keys to path (wrk's input)."""
    with open(path, "w") as f:
        for k in keys:
            url = client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": k},
                                                ExpiresIn=86400)
            f.write(url[len(ep):] + "\n")


def wrk_cell(ep, work, paths, conns, duration, put_body=None):
    """One wrk cell of GETs over paths (or, with put_body, of the signed PUT
    requests in paths with that body file): {requests, p50_us, p99_us,
    errors, non2xx, hist}; hist is [[latency_us, count], ...] ascending."""
    name, text = ("put.lua", PUT_LUA) if put_body else ("get.lua", GET_LUA)
    lua = os.path.join(work, name)
    if not os.path.exists(lua):
        with open(lua, "w") as f:
            f.write(text)
    r = subprocess.run(["wrk", "-t", "2", "-c", str(conns), "-d", f"{duration}s",
                        "--timeout", "120s" if put_body else "60s", "-s", lua, ep, "--", paths]
                       + ([put_body] if put_body else []),
                       capture_output=True, text=True)
    line = [x for x in r.stdout.splitlines() if x.startswith('{"requests"')]
    return json.loads(line[0]) if line else {"requests": 0, "p50_us": 0, "p99_us": 0,
                                             "errors": 1, "non2xx": 0, "hist": []}


def pooled_p99(cells):
    """The p99 (us) of all requests of cells, from their merged histograms:
    what one wrk run spanning the cells would report, so that one noisy
    cell neither sets nor hides the figure."""
    merged = {}
    for c in cells:
        for us, n in c.get("hist", []):
            merged[us] = merged.get(us, 0) + n
    total = sum(merged.values())
    seen = 0
    for us in sorted(merged):
        seen += merged[us]
        if seen >= 0.99 * total:
            return us
    return 0


def cells_ok(cells):
    """False (after saying which) when a wrk cell saw failed requests."""
    bad = [x for x in cells if x["errors"] or x["non2xx"]]
    if bad:
        print(f"FAIL: GET requests failed: {bad}")
    return not bad


def stop(proc, work):
    """Stop the daemon (SIGTERM, then kill); remove work unless KEEP=1."""
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    if os.environ.get("KEEP") != "1":
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")
