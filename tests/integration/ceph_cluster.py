#!/usr/bin/python3
"""ceph_cluster.py - a throw-away single-host Ceph cluster on loopback.

For the RADOS backend's integration tests and for developers:

    from ceph_cluster import CephCluster
    with CephCluster(osds=3, store="memstore") as c:
        c.create_pool("strata.meta", size=2)               # replicated
        c.create_ec_pool("strata.warm", k=2, m=1)          # needs k+m OSDs
        run_daemon("--rados-conf", c.conf, "--rados-id", c.client_id)
        c.stop_osd(1); ...; c.start_osd(1)                 # failure tests
    with CephCluster(store="bluestore", rgw=True) as c:     # side by side
        ak, sk = c.rgw_user(); s3 = boto3.client("s3", endpoint_url=c.rgw_endpoint, ...)

One monitor, 1..N OSDs (memstore: data in the OSD's memory, for tests that
need no durability; bluestore: a sparse file per OSD), optionally a radosgw
and a manager.  No manager by default: pools, I/O, omap, object classes,
watch/notify and radosgw all work without one (the monitor creates pools),
and ceph-mgr costs 210-300 MiB of RSS and a second to start.  Without a
manager `ceph pg ...` hangs and `ceph -s` shows no PG statistics; pool
readiness is checked with an op on the pool instead.

Every file (config, keyrings, monitor and OSD data, sockets, logs) is under
one base directory (a new temporary directory unless given), removed when
the cluster stops.  Daemons run in the foreground as our children, each in
its own session, and are stopped by PID only (SIGTERM, then SIGKILL after a
timeout); nothing is looked up by name.  Everything listens on 127.0.0.1
only.  If the test process is killed (SIGKILL), the daemons get SIGTERM
from the kernel (parent-death signal) and are gone within ~10 s (an OSD
waits for the monitor at shutdown); only the base directory (strata-ceph-*
under $STRATA_TEST_TMPDIR or /tmp) stays behind.

By hand (the cluster outlives the command; its PIDs are in DIR/cluster.json):

    tests/integration/ceph_cluster.py start DIR [--osds N] [--store memstore|bluestore] [--mgr] [--rgw] [--pool NAME]... [--ec-pool NAME]...
    tests/integration/ceph_cluster.py status DIR
    tests/integration/ceph_cluster.py stop DIR        # kills the recorded PIDs, removes DIR

`start` prints the shell lines to use it (CEPH_CONF, CEPH_KEYRING, ...), e.g.
`ceph -c DIR/ceph.conf -s` or `rados -c DIR/ceph.conf lspools`.  With
--replace, a cluster left in DIR by an earlier run is stopped first; with
--stop-with-parent, a detached watcher stops the cluster when the process
that ran `start` exits (CTest's fixture for integration_rados/: the
cluster never outlives the ctest run, even a killed one).

Measured here (2 cores shared with other jobs, load average 8-13), start
to OSDs up, and RSS of the daemons:
  1 OSD memstore   3.9-4.7 s    79 MiB (mon 38, osd 41)
  1 OSD bluestore  8.3-12.4 s   86 MiB (sparse 20 GB file, ~40 MiB allocated)
  3 OSD memstore   6.2-7.6 s   163 MiB
  3 OSD bluestore  11.5 s      186 MiB (mkfs in parallel; 18.9 s one by one)
  + radosgw        15.5-19.6 s (1 OSD bluestore), radosgw 53 MiB
  + ceph-mgr       about +1 s, 210-300 MiB
A replicated pool is usable 1.7-4.6 s after its create, an EC 2+1 pool
4.2-4.9 s; stop_osd 1.1-1.9 s, start_osd 1.9-4.6 s.

Runs with /usr/bin/python3; needs ceph-mon, ceph-osd, ceph-common (radosgw
for rgw=True) from deploy/install-deps.sh, and ceph-mgr for mgr=True (not
installed by it).
"""

import argparse
import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports import free_port  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30

# Ports the OSDs and the manager may bind (the monitor's and radosgw's are
# picked free).  Ceph's default range; each daemon takes the first free ones.
_MS_PORT_MIN, _MS_PORT_MAX = 6800, 7300


class CephError(RuntimeError):
    pass


def _free_port_pair():
    """Two consecutive free ports on 127.0.0.1 (msgr2 and legacy v1), below
    the ephemeral range and so outside Ceph's own 6800-7300."""
    return free_port(2)


def _free_port():
    return free_port()


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    try:
        wpid, _ = os.waitpid(pid, os.WNOHANG)
        if wpid == pid:
            return False
    except ChildProcessError:
        pass
    return True


def _kill_pid(pid, timeout=15.0):
    """SIGTERM, wait up to timeout, then SIGKILL.  By PID only."""
    if not pid or not _pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    end = time.monotonic() + 5
    while time.monotonic() < end and _pid_alive(pid):
        time.sleep(0.05)


def _die_with_parent():
    """In the child before exec: SIGTERM when the process that started it
    dies (a test killed with SIGKILL leaves no cluster running)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def cpu_seconds(pid):
    """User + system CPU time of a process (all its threads), seconds; 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class CephCluster:
    """A single-host cluster: mon.a, osd.0..N-1, mgr.x and radosgw (optional).

    Attributes once started: base (directory), conf (ceph.conf path), keyring
    (client.admin's keyring), client_id ("admin"), client_name
    ("client.admin"), mon_host (the mon_host string), fsid, pids (name -> PID),
    rgw_endpoint ("http://127.0.0.1:PORT" with rgw=True), start_seconds,
    rgw_start_seconds (radosgw's own share of it: spawn to port open, which
    includes creating its default.rgw.* pools).
    """

    def __init__(self, osds=1, store="memstore", base=None, mgr=False, rgw=False,
                 memstore_bytes=2 * GIB, bluestore_bytes=20 * GIB,
                 osd_memory_target=GIB, timeout=60.0, extra_conf=None, keep_base=False,
                 die_with_parent=True, rgw_frontend_opts=""):
        if store not in ("memstore", "bluestore"):
            raise ValueError("store must be memstore or bluestore")
        if osds < 1:
            raise ValueError("at least one OSD")
        self.nosds = osds
        self.store = store
        self.want_mgr = mgr
        self.want_rgw = rgw
        # More options of radosgw's beast frontend, e.g. "tcp_nodelay=1".
        self.rgw_frontend_opts = rgw_frontend_opts
        self.memstore_bytes = memstore_bytes
        self.bluestore_bytes = bluestore_bytes
        self.osd_memory_target = osd_memory_target
        self.timeout = timeout
        self.extra_conf = dict(extra_conf or {})
        self._given_base = base
        self.keep_base = keep_base
        # Daemons get SIGTERM when the thread that started them exits (the
        # kernel's parent-death signal follows the starting thread: start
        # the cluster from a thread that outlives its use, e.g. the main one).
        self.die_with_parent = die_with_parent
        self.base = None
        self.conf = None
        self.keyring = None
        self.client_id = "admin"
        self.client_name = "client.admin"
        self.fsid = None
        self.mon_host = None
        self.rgw_endpoint = None
        self.rgw_start_seconds = None
        self.pids = {}
        self._procs = {}
        self._osd_uuid = {}
        self.start_seconds = None
        self._atexit = False

    # ---- context manager -------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # ---- paths and commands ---------------------------------------------
    def path(self, *parts):
        return os.path.join(self.base, *parts)

    def _run(self, argv, timeout=None, check=True, input=None):
        r = subprocess.run(argv, capture_output=True, text=True, input=input,
                           timeout=timeout or self.timeout)
        if check and r.returncode != 0:
            raise CephError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()[-2000:]}")
        return r

    def ceph(self, *args, timeout=None, check=True, json_out=False):
        """Run the `ceph` CLI as client.admin against this cluster."""
        argv = ["ceph", "-c", self.conf, "--connect-timeout", "10"] + list(args)
        if json_out:
            argv += ["-f", "json"]
        r = self._run(argv, timeout=timeout, check=check)
        if json_out and r.returncode == 0:
            return json.loads(r.stdout or "null")
        return r.stdout if check else r

    def rados(self, *args, timeout=None, check=True):
        """Run the `rados` CLI as client.admin against this cluster."""
        return self._run(["rados", "-c", self.conf] + list(args), timeout=timeout, check=check)

    def env(self):
        """Environment variables that point ceph/rados tools at this cluster."""
        return {"CEPH_CONF": self.conf, "CEPH_KEYRING": self.keyring,
                "CEPH_ARGS": f"--id {self.client_id}"}

    # ---- start -------------------------------------------------------------
    def _write_conf(self, port):
        b = self.base
        self.mon_host = f"[v2:127.0.0.1:{port},v1:127.0.0.1:{port + 1}]"
        g = {
            "fsid": self.fsid,
            "mon_host": self.mon_host,
            "public_network": "127.0.0.0/8",
            "ms_bind_ipv4": "true",
            "ms_bind_ipv6": "false",
            "auth_cluster_required": "cephx",
            "auth_service_required": "cephx",
            "auth_client_required": "cephx",
            "auth_allow_insecure_global_id_reclaim": "false",
            "osd_pool_default_size": "1",
            "osd_pool_default_min_size": "1",
            "mon_allow_pool_size_one": "true",
            "mon_warn_on_pool_no_redundancy": "false",
            "osd_crush_chooseleaf_type": "0",
            "osd_pool_default_pg_num": "8",
            "osd_pool_default_pgp_num": "8",
            "osd_pool_default_pg_autoscale_mode": "off",
            "mon_max_pg_per_osd": "1000",
            "mon_allow_pool_delete": "true",
            "mon_data_avail_warn": "2",
            "run_dir": f"{b}/run",
            "crash_dir": f"{b}/crash",
            "admin_socket": f"{b}/run/$cluster-$name.asok",
            "log_file": f"{b}/log/$cluster-$name.log",
            "mon_cluster_log_file": f"{b}/log/$cluster.log",
            "pid_file": f"{b}/run/$name.pid",
            "log_to_stderr": "false",
            "err_to_stderr": "true",
            "mon_data": f"{b}/mon-$id",
            "mgr_data": f"{b}/mgr-$id",
            "osd_data": f"{b}/osd-$id",
            "ms_bind_port_min": str(_MS_PORT_MIN),
            "ms_bind_port_max": str(_MS_PORT_MAX),
        }
        osd = {
            "keyring": f"{b}/osd-$id/keyring",
            "osd_objectstore": self.store,
            "osd_memory_target": str(self.osd_memory_target),
            "osd_max_object_size": str(128 * MIB),
        }
        if self.store == "memstore":
            osd["memstore_device_bytes"] = str(self.memstore_bytes)
        else:
            osd.update({
                "bluestore_block_create": "true",
                "bluestore_block_size": str(self.bluestore_bytes),
                "bluestore_debug_enforce_settings": "ssd",
            })
        sections = {
            "global": g,
            "mon": {"keyring": f"{b}/mon-$id/keyring"},
            "mgr": {"keyring": f"{b}/mgr-$id/keyring"},
            "osd": osd,
            # One admin socket per client process (several in one test).
            "client": {"keyring": f"{b}/keyring",
                       "admin_socket": f"{b}/run/$cluster-$name.$pid.$cctid.asok"},
        }
        for sec, kv in self.extra_conf.items():  # {"osd": {"debug_osd": "5"}, ...}
            sections.setdefault(sec, {}).update({k: str(v) for k, v in kv.items()})
        with open(self.conf, "w") as f:
            for name, kv in sections.items():
                f.write(f"[{name}]\n")
                for k, v in kv.items():
                    f.write(f"\t{k} = {v}\n")

    def _spawn(self, name, argv):
        logf = open(self.path("log", f"{name}.out"), "ab")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                             start_new_session=True, close_fds=True,
                             preexec_fn=_die_with_parent if self.die_with_parent else None)
        logf.close()
        self._procs[name] = p
        self.pids[name] = p.pid
        self._save_state()
        return p

    def _save_state(self):
        if not self.base or not os.path.isdir(self.base):
            return
        st = {"base": self.base, "conf": self.conf, "keyring": self.keyring,
              "client_id": self.client_id, "fsid": self.fsid, "mon_host": self.mon_host,
              "store": self.store, "osds": self.nosds, "pids": self.pids,
              "osd_uuid": self._osd_uuid, "rgw_endpoint": self.rgw_endpoint,
              "owner_pid": os.getpid()}
        tmp = self.path("cluster.json.tmp")
        with open(tmp, "w") as f:
            json.dump(st, f, indent=1)
        os.replace(tmp, self.path("cluster.json"))

    def _wait(self, what, pred, timeout=None, proc_name=None):
        end = time.monotonic() + (timeout or self.timeout)
        while True:
            if pred():
                return
            if proc_name and not _pid_alive(self.pids.get(proc_name, 0)):
                raise CephError(f"{proc_name} exited while waiting for {what}; see {self.path('log')}")
            if time.monotonic() > end:
                raise CephError(f"timed out waiting for {what}; see {self.path('log')}")
            time.sleep(0.2)

    def start(self):
        t0 = time.monotonic()
        if self._given_base:
            os.makedirs(self._given_base, exist_ok=True)
            if os.listdir(self._given_base):
                raise CephError(f"{self._given_base} is not empty")
            self.base = os.path.abspath(self._given_base)
        else:
            parent = os.environ.get("STRATA_TEST_TMPDIR") or tempfile.gettempdir()
            self.base = tempfile.mkdtemp(prefix="strata-ceph-", dir=parent)
        if not self._atexit:
            atexit.register(self.stop)
            self._atexit = True
        try:
            self._start(t0)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _start(self, t0):
        for d in ("run", "log", "crash"):
            os.makedirs(self.path(d))
        self.fsid = str(uuid.uuid4())
        self.conf = self.path("ceph.conf")
        self.keyring = self.path("keyring")
        self._write_conf(_free_port_pair())
        # Keys: client.admin (full caps) and the monitor's, in one mon keyring.
        monkr = self.path("mon.keyring")
        self._run(["ceph-authtool", "--create-keyring", monkr, "--gen-key", "-n", "mon.",
                   "--cap", "mon", "allow *"])
        self._run(["ceph-authtool", "--create-keyring", self.keyring, "--gen-key", "-n",
                   "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *",
                   "--cap", "mgr", "allow *", "--cap", "mds", "allow *"])
        self._run(["ceph-authtool", monkr, "--import-keyring", self.keyring])
        monmap = self.path("monmap")
        self._run(["monmaptool", "--create", "--fsid", self.fsid, "--addv", "a", self.mon_host,
                   "--enable-all-features", "--set-min-mon-release", "pacific", monmap])
        self._run(["ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap", monmap,
                   "--keyring", monkr])
        self._spawn("mon.a", ["ceph-mon", "-f", "-c", self.conf, "-i", "a"])
        self._wait("the monitor", lambda: self.ceph("mon", "stat", check=False, timeout=20).returncode == 0,
                   proc_name="mon.a")
        if self.want_mgr:
            os.makedirs(self.path("mgr-x"))
            self.ceph("auth", "get-or-create", "mgr.x", "mon", "allow profile mgr", "osd", "allow *",
                      "mds", "allow *", "-o", self.path("mgr-x", "keyring"))
            self._spawn("mgr.x", ["ceph-mgr", "-f", "-c", self.conf, "-i", "x"])
        self._create_osds(list(range(self.nosds)))
        self._wait_osds_up(self.nosds)
        if self.want_rgw:
            self._start_rgw()

    def _create_osds(self, ids):
        """Register osd.i for each i, make their stores in parallel (a
        bluestore mkfs takes seconds), then start them."""
        for i in ids:
            osd_uuid = str(uuid.uuid4())
            key = self._run(["ceph-authtool", "--gen-print-key"]).stdout.strip()
            secret = self.path(f"osd-secret-{i}.json")
            with open(secret, "w") as f:
                json.dump({"cephx_secret": key}, f)
            osd_id = int(self.ceph("osd", "new", osd_uuid, "-i", secret).strip())
            os.unlink(secret)
            if osd_id != i:
                raise CephError(f"osd new gave id {osd_id}, expected {i}")
            data = self.path(f"osd-{osd_id}")
            os.makedirs(data)
            with open(os.path.join(data, "keyring"), "w") as f:
                f.write(f"[osd.{osd_id}]\n\tkey = {key}\n")
            self._osd_uuid[str(osd_id)] = osd_uuid
        mkfs = {}
        try:
            for i in ids:
                logf = open(self.path("log", f"osd.{i}.mkfs.out"), "ab")
                mkfs[i] = subprocess.Popen(
                    ["ceph-osd", "-c", self.conf, "-i", str(i), "--mkfs", "--osd-uuid",
                     self._osd_uuid[str(i)]],
                    stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, close_fds=True,
                    preexec_fn=_die_with_parent if self.die_with_parent else None)
                logf.close()
            end = time.monotonic() + max(self.timeout, 120)
            for i, p in mkfs.items():
                rc = p.wait(timeout=max(1.0, end - time.monotonic()))
                if rc != 0:
                    raise CephError(f"osd.{i} mkfs: exit {rc}; see {self.path('log')}")
        finally:
            for p in mkfs.values():  # on a timeout or an error: ours, by PID
                if p.poll() is None:
                    _kill_pid(p.pid, timeout=5)
                    p.wait()
        for i in ids:
            self._spawn(f"osd.{i}", ["ceph-osd", "-f", "-c", self.conf, "-i", str(i)])

    def _num_up(self):
        r = self.ceph("osd", "stat", "-f", "json", check=False, timeout=20)
        if r.returncode != 0:
            return -1
        return json.loads(r.stdout).get("num_up_osds", 0)

    def _wait_osds_up(self, n, timeout=None):
        self._wait(f"{n} OSD(s) up", lambda: self._num_up() == n, timeout=timeout)

    def _start_rgw(self):
        """radosgw on 127.0.0.1 (beast), its own cephx user; at its first
        start it creates the pools it wants (.rgw.root, default.rgw.*) with
        the cluster's defaults (replicated, osd_pool_default_size copies)."""
        t0 = time.monotonic()
        port = _free_port()
        data = self.path("rgw")
        os.makedirs(data)
        self.ceph("auth", "get-or-create", "client.rgw.a", "mon", "allow rw", "osd", "allow rwx",
                  "mgr", "allow rw", "-o", os.path.join(data, "keyring"))
        self._spawn("client.rgw.a", [
            "radosgw", "-f", "-c", self.conf, "-n", "client.rgw.a",
            "--keyring", os.path.join(data, "keyring"),
            "--rgw_frontends", f"beast endpoint=127.0.0.1:{port} {self.rgw_frontend_opts}".strip(),
            "--rgw_data", data, "--rgw_dns_name", "127.0.0.1"])
        self.rgw_endpoint = f"http://127.0.0.1:{port}"
        self._save_state()

        def up():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False
        self._wait("radosgw", up, timeout=max(self.timeout, 90), proc_name="client.rgw.a")
        self.rgw_start_seconds = time.monotonic() - t0

    def rgw_user(self, uid="bench", access_key=None, secret_key=None):
        """An S3 user on the radosgw (rgw=True) for side-by-side runs:
        returns (access key, secret key).  Fixed keys may be given."""
        if not self.rgw_endpoint:
            raise CephError("no radosgw: start with rgw=True")
        argv = ["radosgw-admin", "-c", self.conf, "-n", "client.rgw.a",
                "--keyring", self.path("rgw", "keyring"), "user", "create", f"--uid={uid}",
                f"--display-name={uid}"]
        if access_key and secret_key:
            argv += [f"--access-key={access_key}", f"--secret={secret_key}"]
        r = self._run(argv, timeout=max(self.timeout, 60))
        keys = json.loads(r.stdout)["keys"][0]
        return keys["access_key"], keys["secret_key"]

    # ---- pools -------------------------------------------------------------
    def _wait_pool_ready(self, name, timeout=None):
        """Until an op on the pool completes (its PGs are active)."""
        def ok():
            r = self.rados("-p", name, "--rados_osd_op_timeout=3", "stat", "__strata_probe__",
                           check=False, timeout=20)
            return r.returncode == 0 or "No such file" in r.stderr
        self._wait(f"pool {name}", ok, timeout=timeout)

    def create_pool(self, name, pg_num=8, size=1, application="strata"):
        """A replicated pool (omap works here): size copies, pg_num PGs."""
        self.ceph("osd", "pool", "create", name, str(pg_num), str(pg_num), "replicated")
        if size != 1:
            self.ceph("osd", "pool", "set", name, "size", str(size), "--yes-i-really-mean-it")
            self.ceph("osd", "pool", "set", name, "min_size", "1")
        self.ceph("osd", "pool", "application", "enable", name, application)
        self._wait_pool_ready(name)
        return name

    def create_ec_pool(self, name, k=2, m=1, pg_num=8, profile=None, application="strata",
                       overwrites=None):
        """An erasure-coded pool (no omap).  k+m must not exceed the OSD count.
        Partial overwrites (allow_ec_overwrites) need bluestore: on by default
        there; a memstore EC pool takes whole-object writes and appends only."""
        if k + m > self.nosds:
            raise CephError(f"EC {k}+{m} needs {k + m} OSDs, the cluster has {self.nosds}")
        profile = profile or f"strata-k{k}m{m}"
        self.ceph("osd", "erasure-code-profile", "set", profile, f"k={k}", f"m={m}",
                  "crush-failure-domain=osd", "--force")
        self.ceph("osd", "pool", "create", name, str(pg_num), str(pg_num), "erasure", profile)
        if overwrites is None:
            overwrites = self.store == "bluestore"
        if overwrites:
            self.ceph("osd", "pool", "set", name, "allow_ec_overwrites", "true")
        self.ceph("osd", "pool", "application", "enable", name, application)
        self._wait_pool_ready(name)
        return name

    def delete_pool(self, name):
        self.ceph("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")

    # ---- OSD failure tests ---------------------------------------------------
    def osd_pid(self, i):
        return self.pids.get(f"osd.{i}")

    def stop_osd(self, i, sig=signal.SIGTERM, wait_down=True):
        """Stop osd.i by its PID.  SIGTERM: a clean shutdown that marks
        itself down.  SIGKILL: a crash; its peers would report it after the
        heartbeat grace, but a lone OSD has no peers (the monitor would wait
        mon_osd_report_timeout, 15 min), so it is marked down here at once
        (`ceph osd down`), as a test that killed it knows it is."""
        pid = self.pids.get(f"osd.{i}")
        if not pid:
            raise CephError(f"osd.{i} is not running")
        if sig == signal.SIGTERM:
            _kill_pid(pid)
        else:
            os.kill(pid, sig)
            end = time.monotonic() + 10
            while time.monotonic() < end and _pid_alive(pid):
                time.sleep(0.05)
        self.pids.pop(f"osd.{i}", None)
        self._procs.pop(f"osd.{i}", None)
        self._save_state()
        if sig != signal.SIGTERM:
            self.ceph("osd", "down", f"osd.{i}", check=False)
        if wait_down:
            self._wait(f"osd.{i} down", lambda: self._osd_up(i) is False, timeout=60)

    def _osd_up(self, i):
        r = self.ceph("osd", "dump", "-f", "json", check=False, timeout=20)
        if r.returncode != 0:
            return None
        for o in json.loads(r.stdout).get("osds", []):
            if o.get("osd") == i:
                return bool(o.get("up"))
        return None

    def start_osd(self, i, wait_up=True):
        """Start osd.i again.  bluestore keeps its objects.  A memstore OSD
        comes back empty (verified: it writes out no objects at stop): with
        copies on other OSDs it backfills, as the only copy its PGs' data is
        gone and their ops hang.  Restart tests want bluestore."""
        if self.pids.get(f"osd.{i}"):
            raise CephError(f"osd.{i} is running")
        self._spawn(f"osd.{i}", ["ceph-osd", "-f", "-c", self.conf, "-i", str(i)])
        if wait_up:
            self._wait(f"osd.{i} up", lambda: self._osd_up(i) is True, proc_name=f"osd.{i}")

    # ---- accounting and stop -----------------------------------------------
    def rss_mib(self):
        """Resident memory of each daemon, MiB."""
        return {n: _rss_kib(p) / 1024 for n, p in self.pids.items() if _pid_alive(p)}

    def cpu_seconds(self):
        """CPU time (user + system) used so far by each daemon, seconds."""
        return {n: cpu_seconds(p) for n, p in self.pids.items()}

    def stop(self):
        """Kill our daemons by PID (radosgw, OSDs, manager, monitor last), remove the base."""
        order = sorted(self.pids, key=lambda n: (0 if n.startswith("client.") else
                                                 1 if n.startswith("osd.") else
                                                 2 if n.startswith("mgr.") else 3))
        for name in order:
            _kill_pid(self.pids[name])
            p = self._procs.get(name)
            if p is not None:
                try:
                    p.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
        self.pids.clear()
        self._procs.clear()
        if self.base and not self.keep_base and os.path.isdir(self.base):
            shutil.rmtree(self.base, ignore_errors=True)
        if not self.keep_base:
            self.base = None


# ---- command line --------------------------------------------------------------
def _cli():
    ap = argparse.ArgumentParser(description="throw-away single-host Ceph cluster on 127.0.0.1")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("dir")
    s.add_argument("--osds", type=int, default=1)
    s.add_argument("--store", choices=("memstore", "bluestore"), default="memstore")
    s.add_argument("--mgr", action="store_true", help="also run ceph-mgr (not needed for I/O)")
    s.add_argument("--rgw", action="store_true")
    s.add_argument("--pool", action="append", default=[],
                   help="create a replicated pool NAME (repeatable)")
    s.add_argument("--ec-pool", action="append", default=[],
                   help="create an EC 2+1 pool NAME (repeatable; needs --osds 3)")
    s.add_argument("--replace", action="store_true",
                   help="first stop a cluster recorded in DIR and empty DIR")
    s.add_argument("--stop-with-parent", action="store_true",
                   help="stop the cluster when the parent of this command exits")
    for n in ("stop", "status"):
        sub.add_parser(n).add_argument("dir")
    a = ap.parse_args()

    if a.cmd == "start":
        if not shutil.which("ceph-mon") or not shutil.which("ceph-osd"):
            print("ceph_cluster: SKIP: no ceph-mon / ceph-osd (deploy/install-deps.sh)", file=sys.stderr)
            return 77
        if a.replace and os.path.isdir(a.dir):
            _stop_recorded(a.dir)
            shutil.rmtree(a.dir, ignore_errors=True)
        owner = os.getppid()
        c = CephCluster(osds=a.osds, store=a.store, base=a.dir, mgr=a.mgr, rgw=a.rgw,
                        keep_base=True, die_with_parent=False)
        c.start()
        for p in a.pool:
            c.create_pool(p)
        for p in a.ec_pool:
            c.create_ec_pool(p, k=2, m=1)
        atexit.unregister(c.stop)  # the cluster outlives this command
        if a.stop_with_parent:
            _watch_owner(owner, c.base)
        rss = c.rss_mib()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `start ... | head` is fine
        if c.rgw_start_seconds is not None:
            print(f"# radosgw answered {c.rgw_start_seconds:.1f} s after its start")
        print(f"# cluster up in {c.start_seconds:.1f} s; daemons (RSS MiB): "
              + ", ".join(f"{n}={int(c.pids[n])}({rss.get(n, 0):.0f})" for n in c.pids))
        print(f"export CEPH_CONF={c.conf}")
        print(f"export CEPH_KEYRING={c.keyring}")
        if c.rgw_endpoint:
            ak, sk = c.rgw_user()
            print(f"# radosgw: {c.rgw_endpoint} access key {ak} secret key {sk}")
        print(f"# stop: {sys.argv[0]} stop {c.base}")
        return 0

    st_path = os.path.join(a.dir, "cluster.json")
    try:
        with open(st_path) as f:
            st = json.load(f)
    except OSError as e:
        print(f"ceph_cluster: {st_path}: {e.strerror}", file=sys.stderr)
        return 1
    if a.cmd == "status":
        for n, pid in st["pids"].items():
            print(f"{n}\tpid {pid}\t{'running' if _pid_alive(pid) else 'gone'}\trss {_rss_kib(pid) / 1024:.0f} MiB")
        print(f"conf {st['conf']}")
        return 0
    _stop_recorded(a.dir)
    return 0


def _stop_recorded(base):
    """Stop the daemons recorded in BASE/cluster.json (radosgw and OSDs
    first, the monitor last) and remove BASE; nothing to do without it."""
    try:
        with open(os.path.join(base, "cluster.json")) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return
    order = sorted(st["pids"], key=lambda n: (0 if n.startswith("client.") else
                                              1 if n.startswith("osd.") else
                                              2 if n.startswith("mgr.") else 3))
    for n in order:
        pid = st["pids"][n]
        # Refuse to signal a PID that is no longer a Ceph daemon (reused).
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                exe = os.path.basename(f.read().split(b"\0")[0]).decode()
        except OSError:
            continue
        if exe not in ("ceph-mon", "ceph-mgr", "ceph-osd", "radosgw"):
            continue
        _kill_pid(pid)
    shutil.rmtree(st["base"], ignore_errors=True)


def _start_time(pid):
    """The start time of PID (clock ticks since boot), None if it is gone:
    tells a process from a later one that reuses its PID."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _watch_owner(owner, base):
    """Fork a detached watcher (own session, no inherited output, so the
    caller's pipes close) that stops the cluster in BASE once OWNER exits,
    and exits itself when BASE is removed (the cluster was stopped)."""
    born = _start_time(owner)
    if os.fork() != 0:
        return
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 1 << 16)
    while os.path.exists(os.path.join(base, "cluster.json")):
        if born is None or _start_time(owner) != born:
            _stop_recorded(base)
            break
        time.sleep(1)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(_cli())
