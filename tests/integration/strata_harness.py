"""strata_harness.py - shared by tests/integration/test_*.py.

Starts one strata daemon per test file (Strata(args=[...]) adds daemon
flags) on a free 127.0.0.1 port with four drive directories under $STRATA_TEST_TMPDIR and known root keys (or reuses
STRATA_TEST_ENDPOINT=host:port), waits for GET /health/ready (30 s), and kills
exactly that PID at exit.  The test process's own environment is scrubbed of
AWS_*/proxy/CA-bundle variables and gets a private HOME, so boto3 sees only
what the test gives it.  The daemon log is checked for sanitizer reports.

With STRATA_BACKEND=rados the same daemon runs on a RADOS store instead:
the first Strata() of the process starts one throw-away Ceph cluster
(ceph_cluster.py: one monitor, one memstore OSD), reused by every daemon of
the file and stopped at exit after them; each daemon gets pools of its own
(`strata rados init` with a fresh --rados-pool-prefix) and no drives.  A
file that cannot run there (no ceph-mon / ceph-osd) exits 77 (skipped).
Under CTest the files of integration_rados/ share one cluster instead
(STRATA_CEPH_SHARED names its directory, started and stopped by the
fixture tests integration_rados/cluster_start and cluster_stop): only the
pools of a file's own prefixes are its, and they are deleted when its
daemon stops.  Run alone (no STRATA_CEPH_SHARED, or its cluster gone), a
file starts its own cluster as above.
Which files pass on RADOS: CMakeLists.txt (integration_rados/) and
COVERAGE.md.

Tests are plain functions registered with @test and run by run(); a failed
assert or an unexpected exception fails that test, the others still run.
Runs with /usr/bin/python3 (Debian's, which sees python3-boto3).
"""

import atexit
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

REGION = "us-east-1"

# Scrub the environment before botocore is imported anywhere: nothing from
# the caller's shell (profiles, CA bundles, proxies, endpoint overrides) may
# leak into the clients.
for _k in list(os.environ):
    if (_k.startswith("AWS_") or _k.startswith("BOTO") or _k.lower().endswith("_proxy")
            or _k in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")):
        del os.environ[_k]
os.environ["NO_PROXY"] = "127.0.0.1,localhost"
os.environ["no_proxy"] = "127.0.0.1,localhost"

import boto3  # noqa: E402
import botocore  # noqa: E402
from botocore.config import Config  # noqa: E402

from ports import free_port  # noqa: E402,F401  (re-exported for the tests)

NAME = os.path.splitext(os.path.basename(sys.argv[0]))[0]
BACKEND = os.environ.get("STRATA_BACKEND") or "local"
if BACKEND not in ("local", "rados"):
    raise SystemExit(f"STRATA_BACKEND must be local or rados, not {BACKEND!r}")
_CLUSTER = None


def log(msg):
    # One write: lines of tests run at once (at_once) do not interleave.
    sys.stdout.write(f"[{NAME}] {msg}\n")
    sys.stdout.flush()


def md5_hex(b):
    return hashlib.md5(b).hexdigest()


class SharedCluster:
    """The cluster of STRATA_CEPH_SHARED/cluster.json (ceph_cluster.py
    start), used but never stopped: its fixture does that."""

    shared = True

    def __init__(self, st):
        self.conf = st["conf"]
        self.client_id = st["client_id"]


def shared_cluster():
    """The shared cluster if STRATA_CEPH_SHARED names one whose monitor
    and OSDs run, else None."""
    base = os.environ.get("STRATA_CEPH_SHARED")
    if not base:
        return None
    try:
        with open(os.path.join(base, "cluster.json")) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return None
    for pid in st["pids"].values():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
    return SharedCluster(st)


def rados_cluster():
    """The process's Ceph cluster: the shared one if there is one, else a
    throw-away one started at the first call and stopped at exit (after the
    daemons, whose atexit handlers run first)."""
    global _CLUSTER
    if _CLUSTER is None:
        _CLUSTER = shared_cluster()
        if _CLUSTER is not None:
            log(f"ceph cluster shared ({_CLUSTER.conf})")
            return _CLUSTER
        if not shutil.which("ceph-mon") or not shutil.which("ceph-osd"):
            log("SKIP: STRATA_BACKEND=rados needs ceph-mon and ceph-osd (deploy/install-deps.sh)")
            sys.exit(77)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from ceph_cluster import CephCluster
        c = CephCluster(osds=1, store="memstore")
        c.start()
        atexit.register(c.stop)
        log(f"ceph cluster up in {c.start_seconds:.1f} s ({c.conf})")
        _CLUSTER = c
    return _CLUSTER


def rados_flags(prefix):
    """Daemon flags for the pools PREFIX.* of the process's cluster."""
    c = rados_cluster()
    return ["--rados-conf", c.conf, "--rados-id", c.client_id, "--rados-pool-prefix", prefix]


def rados_init(prefix):
    """`strata rados init` of PREFIX.* on the process's cluster."""
    r = subprocess.run([os.environ["STRATA_BIN"], "rados", "init"] + rados_flags(prefix),
                       capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin"})
    if r.returncode != 0:
        raise SystemExit(f"strata rados init {prefix}: exit {r.returncode}: {r.stderr}")


def rados_drop(prefix):
    """Delete the pools PREFIX.* of a shared cluster (a private one goes
    with its cluster): the next files get the OSD's memory and PGs."""
    c = rados_cluster()
    if not getattr(c, "shared", False):
        return
    base = ["rados", "-c", c.conf, "--id", c.client_id]
    env = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run(base + ["lspools"], capture_output=True, text=True, timeout=60, env=env)
    for pool in r.stdout.split():
        if pool.startswith(prefix + "."):
            d = subprocess.run(base + ["rmpool", pool, pool, "--yes-i-really-really-mean-it"],
                               capture_output=True, text=True, timeout=60, env=env)
            if d.returncode != 0:
                log(f"NOTE: could not delete pool {pool}: {d.stderr.strip()}")


class Strata:
    """One daemon (or an external one) for the whole test file."""

    def __init__(self, args=(), drives=None, keys=None, extra_env=None):
        """args: extra daemon flags.  drives: the daemon's drive directories
        (default: four under the scratch directory; the caller owns
        directories it passes).  keys: (access key, secret key) of the root
        user, default random.  extra_env: more variables for the daemon's
        environment (e.g. LD_PRELOAD)."""
        self.args = list(args)  # extra daemon flags
        self.keys = keys
        self.extra_env = dict(extra_env or {})
        base = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
        os.makedirs(base, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix=NAME + ".", dir=base)
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(self.home, ".aws"))
        os.environ["HOME"] = self.home
        os.environ["AWS_CONFIG_FILE"] = os.path.join(self.home, ".aws", "config")
        os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(self.home, ".aws", "credentials")
        os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
        self.run_id = secrets.token_hex(4)
        self.rados_prefix = None
        self.proc = None
        self.log_path = None
        self.failed = False
        self.stopped = False
        self.stopped_ok = True
        ep = os.environ.get("STRATA_TEST_ENDPOINT")
        if ep:
            self.host, port = ep.rsplit(":", 1)
            self.port = int(port)
            self.ak = os.environ.get("STRATA_TEST_ACCESS_KEY") or os.environ.get("STRATA_ROOT_USER")
            self.sk = os.environ.get("STRATA_TEST_SECRET_KEY") or os.environ.get("STRATA_ROOT_PASSWORD")
            if not (self.ak and self.sk):
                raise SystemExit("STRATA_TEST_ENDPOINT needs STRATA_TEST_ACCESS_KEY/STRATA_TEST_SECRET_KEY")
        else:
            self._start(drives)
        self.endpoint = f"http://{self.host}:{self.port}"
        atexit.register(self.stop)
        log(f"daemon at {self.endpoint} (pid {self.proc.pid if self.proc else 'external'}), scratch {self.tmp}")

    def _start(self, drives=None):
        binary = os.environ.get("STRATA_BIN")
        if not binary or not os.access(binary, os.X_OK):
            raise SystemExit(f"STRATA_BIN not set or not executable: {binary!r}")
        self.host = "127.0.0.1"
        if BACKEND == "rados" and drives is None:
            # Pools of its own on the process's cluster, no drives.
            prefix = "t" + self.run_id
            self.rados_prefix = prefix
            rados_init(prefix)
            self.args += rados_flags(prefix)
            drives = []
        self.ak = "STRATATESTKEY" + secrets.token_hex(4).upper()
        self.sk = "strata-test-secret/" + secrets.token_hex(12)
        if self.keys:
            self.ak, self.sk = self.keys
        if drives is None:
            drives = [os.path.join(self.tmp, f"d{i}") for i in range(1, 5)]
            for d in drives:
                os.makedirs(d)
        self.log_path = os.path.join(self.tmp, "strata.log")
        env = self._daemon_env()
        self.drives = drives
        for attempt in range(3):
            self.port = free_port()
            with open(self.log_path, "wb") as logf:
                self.proc = subprocess.Popen(
                    [binary, "server", "--address", f"127.0.0.1:{self.port}"] + self.args + drives,
                    env=env, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
            if self._wait_ready(30):
                return
            if self.proc.poll() is None:
                self.dump_log()
                self.proc.kill()
                self.proc.wait()
                raise SystemExit("strata did not become ready in 30 s")
            text = open(self.log_path, errors="replace").read()
            if attempt == 2 or "address already in use" not in text.lower():
                print(text)
                raise SystemExit(f"strata exited at start-up with status {self.proc.returncode}")

    def _daemon_env(self):
        env = {"PATH": "/usr/bin:/bin", "HOME": self.home,
               "STRATA_ROOT_USER": self.ak, "STRATA_ROOT_PASSWORD": self.sk}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(self.extra_env)
        return env

    def restart(self, kill=False, between=None):
        """Stop our daemon (SIGTERM and a clean exit, or SIGKILL with kill),
        call between() if given (the daemon is down: drives may be changed),
        and start it again on the same drives and port (with the current
        extra_env)."""
        if kill:
            self.proc.kill()
            self.proc.wait(15)
        else:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.proc.wait(15)
            assert rc == 0, f"strata exited with status {rc} after SIGTERM"
        if between:
            between()
        env = self._daemon_env()
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(
                [os.environ["STRATA_BIN"], "server", "--address", f"127.0.0.1:{self.port}"]
                + self.args + self.drives, env=env, stdin=subprocess.DEVNULL, stdout=logf,
                stderr=subprocess.STDOUT)
        if not self._wait_ready(30):
            raise AssertionError("strata did not come back after a restart")

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with opener.open(f"http://127.0.0.1:{self.port}/health/ready", timeout=2) as r:
                    if r.status == 200:
                        return True
            except Exception:
                pass
            time.sleep(0.1)
        return False

    def dump_log(self, lines=60):
        if self.log_path and os.path.exists(self.log_path):
            with open(self.log_path, errors="replace") as f:
                tail = f.readlines()[-lines:]
            print(f"----- strata log (last {lines} lines): {self.log_path} -----")
            print("".join(tail), end="")
            print("-----")

    def stop(self):
        """Kill exactly our daemon; returns False if its shutdown was a failure."""
        if self.stopped:
            return self.stopped_ok
        self.stopped = True
        ok = True
        if self.proc is not None:
            if self.proc.poll() is not None:
                log(f"FAIL: strata (pid {self.proc.pid}) died during the test (status {self.proc.returncode})")
                ok = False
            else:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    rc = self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    log(f"FAIL: strata (pid {self.proc.pid}) ignored SIGTERM for 15 s; killing it")
                    self.proc.kill()
                    self.proc.wait()
                    rc = None
                    ok = False
                if rc == -signal.SIGTERM:
                    log("NOTE: strata has no SIGTERM handler: shutdown is not graceful")
                elif rc not in (0, None):
                    log(f"FAIL: strata exited with status {rc} after SIGTERM")
                    ok = False
            with open(self.log_path, errors="replace") as f:
                text = f.read()
            for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                           "ThreadSanitizer"):
                if marker in text:
                    log(f"FAIL: sanitizer report in the daemon log ({marker})")
                    ok = False
            if not ok or self.failed:
                self.dump_log()
            self.proc = None
        if self.rados_prefix:
            rados_drop(self.rados_prefix)
        if ok and not self.failed and os.environ.get("STRATA_TEST_KEEP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            log(f"kept {self.tmp}")
        self.stopped_ok = ok
        return ok

    # ---- clients ---------------------------------------------------------
    def client(self, ak=None, sk=None, **cfg):
        """A boto3 S3 client with explicit keys, path-style; max_attempts 1 is one
        retry in botocore (two attempts), so a retried request is exercised too."""
        conf = Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                      retries={"max_attempts": 1, "mode": "standard"},
                      connect_timeout=10, read_timeout=120, **cfg)
        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name=REGION,
            aws_access_key_id=ak or self.ak, aws_secret_access_key=sk or self.sk, config=conf)

    def bucket_name(self, prefix):
        """A valid bucket name unique to this run (3-63 chars, lowercase)."""
        short = "".join(c if c.isalnum() else "-" for c in NAME.lower())[:16]
        return f"{prefix}-{short}-{self.run_id}"[:63].rstrip("-")

    def credentials(self):
        return botocore.credentials.Credentials(self.ak, self.sk)

    def admin_get(self, path, method="GET"):
        """(status, parsed JSON) of a signed GET (or method) /strata/admin/v1/<path>."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        req = AWSRequest(method=method, url=f"{self.endpoint}/strata/admin/v1/{path}", data=b"")
        S3SigV4Auth(self.credentials(), "s3", REGION).add_auth(req)
        p = req.prepare()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(urllib.request.Request(p.url, headers=dict(p.headers), method=method),
                             timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


_TESTS = []


def test(fn):
    _TESTS.append(fn)
    return fn


def _run_one(fn, arg, failed, where=""):
    """fn(arg), logged ok with its time or FAIL with its traceback (one
    write, so the lines of cases run at once stay whole); a failed fn's
    name goes to failed."""
    t = time.monotonic()
    try:
        fn(arg)
    except Exception:
        failed.append(fn.__name__)
        log(f"FAIL: {fn.__name__}\n{traceback.format_exc()}")
    else:
        log(f"ok: {fn.__name__} ({time.monotonic() - t:.2f} s{where})")


def in_lanes(name, cases, lanes, open_lane=None, close_lane=None):
    """A test named name that runs the test functions cases in `lanes`
    lanes at once, a thread each: lane i runs cases[i::lanes] one after
    the other, each as case(ctx) with ctx = open_lane(strata, i) (default:
    the file's daemon), and close_lane(strata, i, ctx) (if given) ends the
    lane, False if that failed.  For cases that mostly wait for the
    daemon's background work (lifecycle days, scanner passes, leases), on
    buckets, daemons or pools of their own.  Each case is logged ok or FAIL
    (with its traceback) as run() does; the test fails naming the cases
    and lanes that failed.  STRATA_TEST_ONLY picks among the cases too."""
    def fn(strata):
        import concurrent.futures
        only = os.environ.get("STRATA_TEST_ONLY")
        picked = [f for f in cases if not only or only in name or only in f.__name__]
        n = max(1, min(lanes, len(picked)))
        failed = []

        def lane(i):
            ctx = None
            try:
                ctx = open_lane(strata, i) if open_lane else strata
                for f in picked[i::n]:
                    _run_one(f, ctx, failed, f", in {name}")
            except Exception:
                failed.append(f"lane {i}")
                log(f"FAIL: lane {i} of {name}\n{traceback.format_exc()}")
            finally:
                if ctx is not None and close_lane and not close_lane(strata, i, ctx):
                    failed.append(f"lane {i}'s end")
        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            list(ex.map(lane, range(n)))
        assert not failed, f"failed in {name}: {', '.join(failed)}"
    fn.__name__ = name
    fn.cases = list(cases)
    return fn


def at_once(name, fns):
    """in_lanes with a lane per case, all on the file's daemon."""
    return in_lanes(name, fns, len(fns))


def _picked(fn, only):
    return not only or only in fn.__name__ or any(only in f.__name__
                                                  for f in getattr(fn, "cases", ()))


def expect_error(fn, code, status=None):
    """Call fn; it must raise a ClientError with this S3 code (and status)."""
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        err = e.response.get("Error", {})
        got = err.get("Code")
        got_status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        assert got == code, f"expected error {code}, got {got} ({got_status}): {e.response}"
        if status is not None:
            assert got_status == status, f"expected HTTP {status} for {code}, got {got_status}"
        return e.response
    raise AssertionError(f"expected error {code}, but the call succeeded")


def wait_until(what, fn, timeout=90):
    """Poll fn every 0.2 s until it returns something true (returned);
    AssertionError naming what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def data_files(drives):
    """Shard files under the drives' data/ directories."""
    return sum(len(files) for d in drives for _root, _dirs, files in
               os.walk(os.path.join(d, "data")))


def restart_with(strata, flag, value):
    """Restart the daemon with --flag=value in place of any --flag (None: without it)."""
    strata.args = [a for a in strata.args if not a.startswith(f"--{flag}")]
    if value is not None:
        strata.args.append(f"--{flag}={value}")
    strata.restart()


def daemon_read_bytes(strata):
    """Bytes the daemon read from storage (/proc/PID/io read_bytes)."""
    with open(f"/proc/{strata.proc.pid}/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    raise AssertionError("no read_bytes in /proc/PID/io")


def new_bucket(strata, prefix):
    """A new bucket of this run, created by root: (boto3 client, name)."""
    c = strata.client()
    b = strata.bucket_name(prefix)
    c.create_bucket(Bucket=b)
    return c, b


def lock_denial(strata, prefix):
    """An Object Lock bucket with a COMPLIANCE version (an hour) whose
    delete by version id was refused: one "denied" audit log entry.
    Returns (bucket, version id)."""
    import base64
    import datetime
    c = strata.client()
    b = strata.bucket_name(prefix)
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    data = b"kept"
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    vid = c.put_object(Bucket=b, Key="worm", Body=data,
                       ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode(),
                       ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    expect_error(lambda: c.delete_object(Bucket=b, Key="worm", VersionId=vid), "AccessDenied", 403)
    return b, vid


def run(strata):
    """Run every @test in order; exit 0 only if all passed."""
    only = os.environ.get("STRATA_TEST_ONLY")
    failed = []
    t0 = time.monotonic()
    for fn in _TESTS:
        if not _picked(fn, only):
            continue
        _run_one(fn, strata, failed)
        if strata.proc is not None and fn.__name__ in failed:
            # A crash shows up as a reset connection before the process is
            # gone (core dump); give it a moment so the death is attributed.
            try:
                strata.proc.wait(0.5)
            except subprocess.TimeoutExpired:
                pass
        if strata.proc is not None and strata.proc.poll() is not None:
            # Everything after this would fail with "connection refused";
            # name the test that killed the daemon instead.
            log(f"FAIL: strata died (status {strata.proc.returncode}) during {fn.__name__}; "
                "the remaining tests were not run")
            if fn.__name__ not in failed:
                failed.append(fn.__name__)
            break
    strata.failed = bool(failed)
    daemon_ok = strata.stop()
    n = len([f for f in _TESTS if _picked(f, only)])
    log(f"{n} tests, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}"
        f" ({time.monotonic() - t0:.1f} s)")
    if n == 0:
        log("FAIL: no tests ran")
        sys.exit(1)
    sys.exit(0 if not failed and daemon_ok else 1)
