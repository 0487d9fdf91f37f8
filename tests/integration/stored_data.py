"""stored_data.py - what a harness daemon has stored, on either backend.

Tests that check space (reclaim after a delete or an abort) or what is
on the storage in clear (SSE) ask here instead of walking drive
directories, so they run the same on both backends:

- local: the files under each drive's data/ and tmp/ (shard files) are
  the data; every file on the drives (RocksDB included) is searched;
- rados: the objects of the daemon's PREFIX.data pool are the data;
  every object of PREFIX.meta and PREFIX.data (bytes, xattrs, omap keys
  and values) is searched, through python3-rados.

On RADOS data a commit unreferenced is removed after a grace (15 min, at
most --orphan-grace-seconds) by the gc pass of the scanner:
RECLAIM_ARGS are daemon flags under which that happens within seconds
(the local backend removes it at once and needs none), and
wait_reclaimed waits until it has happened before a baseline is taken.
"""

import os
import time

from strata_harness import BACKEND, rados_cluster

# Gc pass every scanner pass (1 s), reclaim grace 5 s: long enough for
# any PUT or part of these tests to commit, short enough to wait for.
RECLAIM_ARGS = (["--ilm-interval-seconds", "1", "--orphan-grace-seconds", "5"]
                if BACKEND == "rados" else [])

_RADOS = None
_STORE_FLAGS = ("--rados-conf", "--rados-id", "--rados-pool-prefix")


def store_args(s):
    """The daemon flags of s that select its store (none on local drives):
    for a restart with other flags on the same store."""
    out = []
    for i, a in enumerate(s.args[:-1]):
        if a in _STORE_FLAGS:
            out += [a, s.args[i + 1]]
    return out


def _on_rados(s):
    """Whether daemon s runs on a RADOS store (whatever STRATA_BACKEND)."""
    return "--rados-pool-prefix" in s.args


def _rados():
    import rados  # python3-rados: only where the backend is rados
    return rados


def _ioctx(s, kind):
    global _RADOS
    if _RADOS is None:
        c = rados_cluster()
        _RADOS = _rados().Rados(conffile=c.conf, rados_id=c.client_id)
        _RADOS.connect(timeout=30)
    prefix = s.args[s.args.index("--rados-pool-prefix") + 1]
    return _RADOS.open_ioctx(f"{prefix}.{kind}")


def data_objects(s):
    """{name: bytes} of the stored data: shard files (local), objects of
    the data pool (rados)."""
    out = {}
    if _on_rados(s):
        io = _ioctx(s, "data")
        try:
            for o in io.list_objects():
                try:
                    out[o.key] = io.stat(o.key)[0]
                except _rados().ObjectNotFound:  # removed since listed
                    pass
        finally:
            io.close()
        return out
    for d in s.drives:
        for sub in ("data", "tmp"):
            for root, _dirs, files in os.walk(os.path.join(d, sub)):
                for f in files:
                    p = os.path.join(root, f)
                    try:
                        out[p] = os.lstat(p).st_size
                    except FileNotFoundError:
                        pass
    return out


def data_bytes(s):
    """Bytes of stored data (data_objects)."""
    return sum(data_objects(s).values())


def _omap(io, oid):
    after = ""
    while True:
        with _rados().ReadOpCtx() as op:
            it, _rc = io.get_omap_vals(op, after, "", 1000)
            io.operate_read_op(op, oid)
            page = list(it)
        for k, v in page:
            yield k, v
        if len(page) < 1000:
            return
        after = page[-1][0]


def _pending_reclaim(s):
    """Index objects of the meta pool with a g/ entry (data waiting for
    its reclaim)."""
    io = _ioctx(s, "meta")
    try:
        out = []
        for o in io.list_objects():
            with _rados().ReadOpCtx() as op:
                it, _rc = io.get_omap_vals(op, "", "g/", 1)
                try:
                    io.operate_read_op(op, o.key)
                except _rados().ObjectNotFound:
                    continue
                if list(it):
                    out.append(o.key)
        return out
    finally:
        io.close()


def wait_reclaimed(s, timeout=60.0):
    """Until no data the daemon unreferenced waits for its reclaim, so a
    baseline taken next does not shrink under the test (local: removed at
    once, nothing to wait for)."""
    if not _on_rados(s):
        return
    deadline = time.monotonic() + timeout
    while True:
        left = _pending_reclaim(s)
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"data still waiting for reclaim after {timeout} s in {left}")
        time.sleep(0.5)


def _rados_stored_with(s, needle):
    hits = []
    for kind in ("meta", "data"):
        io = _ioctx(s, kind)
        try:
            for o in io.list_objects():
                name = f"{kind}/{o.key}"
                try:
                    size = io.stat(o.key)[0]
                    if size and needle in io.read(o.key, size):
                        hits.append((kind, name))
                    if any(needle in v for _k, v in io.get_xattrs(o.key)):
                        hits.append((kind, name + " xattr"))
                    if kind == "meta" and any(needle in k.encode() or needle in (v or b"")
                                              for k, v in _omap(io, o.key)):
                        hits.append((kind, name + " omap"))
                except _rados().ObjectNotFound:  # removed since listed
                    pass
        finally:
            io.close()
    return hits


def stored_with(s, needle):
    """Where needle is stored in clear: [(kind, where)], kind "meta" (the
    metadata store: RocksDB files, the meta pool) or "data" (shard files,
    the data pool)."""
    if _on_rados(s):
        return _rados_stored_with(s, needle)
    hits = []
    for d in s.drives:
        for root, _dirs, files in os.walk(d):
            for f in files:
                p = os.path.join(root, f)
                try:
                    with open(p, "rb") as fh:
                        if needle in fh.read():
                            rel = "/" + os.path.relpath(p, d)
                            hits.append(("meta" if rel.startswith("/meta/") else "data", p))
                except OSError:
                    pass
    return hits
