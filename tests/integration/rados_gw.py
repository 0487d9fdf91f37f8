"""rados_gw.py - what the test files with several gateways on one Ceph
cluster share (test_rados_two_gateways.py, test_rados_faults.py): the
checks that the daemon under test can run on RADOS at all, each of which
SKIPs (exit 77) with its reason printed, `strata rados init` of a pool
prefix, and a gateway on it.

A skip is never silent: the reason is printed as "SKIP: ..." and CTest
reports the test as skipped (SKIP_RETURN_CODE 77), not passed.
"""

import http.client
import os
import shutil
import subprocess
import sys

from strata_harness import REGION, Strata, log

MiB = 1 << 20

BIN = os.environ.get("STRATA_BIN", "")


def rgw_client(ep, ak, sk):
    """A boto3 client of a radosgw user (explicit keys, path style, no
    retries)."""
    import boto3
    from botocore.config import Config
    conf = Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                  retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10,
                  read_timeout=120)
    return boto3.session.Session().client("s3", endpoint_url=ep, region_name=REGION,
                                          aws_access_key_id=ak, aws_secret_access_key=sk,
                                          config=conf)


def metric_at(endpoint, name):
    """The sum of metric name's samples in the /metrics of endpoint."""
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    text = opener.open(f"{endpoint}/metrics", timeout=10).read().decode()
    return sum(float(x.split()[-1]) for x in text.splitlines()
               if x.split("{")[0].split(" ")[0] == name)


def skip(reason):
    log(f"SKIP: {reason}")
    sys.exit(77)


def require_daemon_on_rados():
    """Skip unless STRATA_BIN's daemon takes --rados-conf and Ceph is
    installed.  `strata server --help` must list the option (the usage line
    of the `strata rados` tool, which exists without it, does not count)."""
    if not BIN or not os.access(BIN, os.X_OK):
        skip("STRATA_BIN not set")
    for tool in ("ceph-mon", "ceph-osd"):
        if not shutil.which(tool):
            skip(f"{tool} not installed (deploy/install-deps.sh)")
    r = subprocess.run([BIN, "server", "--help"], capture_output=True, text=True, timeout=30,
                       env={"PATH": "/usr/bin:/bin"})
    if not any(ln.lstrip().startswith("--rados-conf") for ln in (r.stdout + r.stderr).splitlines()):
        skip(f"{BIN} server has no --rados-conf: this build's daemon cannot run on RADOS")


def flags(c, prefix):
    return ["--rados-conf", c.conf, "--rados-id", c.client_id, "--rados-pool-prefix", prefix]


def rados_init(c, prefix):
    r = subprocess.run([BIN, "rados", "init"] + flags(c, prefix), capture_output=True, text=True,
                       timeout=300, env={"PATH": "/usr/bin:/bin"})
    if r.returncode != 0:
        raise SystemExit(f"strata rados init {prefix}: exit {r.returncode}: {r.stderr}")
    log(r.stdout.strip())


def gateway(c, prefix, keys=None, args=()):
    """A daemon on the pools PREFIX.* of cluster c (no drives), with more
    daemon flags args."""
    return Strata(args=flags(c, prefix) + list(args), drives=[], keys=keys)


def launch(s, crash_step, env=None):
    """Start s's daemon again (same port, flags, pools) with the transition
    crash hook at step crash_step (0: none: STRATA_DEBUG_TRANSITION_CRASH,
    the daemon _exit(137)s, as kill -9, when a transition reaches it), or
    with the variables env instead."""
    s.extra_env = {"STRATA_DEBUG_TRANSITION_CRASH": str(crash_step)} if crash_step else {}
    if env is not None:
        s.extra_env = dict(env)
    with open(s.log_path, "ab") as logf:
        s.proc = subprocess.Popen(
            [BIN, "server", "--address", f"127.0.0.1:{s.port}"] + s.args + s.drives,
            env=s._daemon_env(), stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    assert s._wait_ready(30), "strata did not start"


def start_put(srv, bucket, key, data, send, query="", method="PUT"):
    """A signed PUT (or method) of data through srv (to /bucket/key?query:
    an object, a part with "partNumber=N&uploadId=U", a complete with POST
    and "uploadId=U") whose first `send` bytes only are sent; returns the
    open connection (the request is in flight)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    path = f"/{bucket}/{key}" + (f"?{query}" if query else "")
    req = AWSRequest(method=method, url=f"{srv.endpoint}{path}", data=data,
                     headers={"Content-Length": str(len(data))})
    S3SigV4Auth(srv.credentials(), "s3", REGION).add_auth(req)
    p = req.prepare()
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
    conn.putrequest(method, path, skip_accept_encoding=True)  # Host: as signed
    for k, v in p.headers.items():
        if k.lower() != "host":
            conn.putheader(k, v)
    conn.endheaders()
    for off in range(0, send, MiB):
        conn.send(data[off:min(off + MiB, send)])
    return conn


def kill9(gw):
    """SIGKILL gw's daemon and forget it (killed on purpose: its stop()
    must not report a death); gw's scratch directory goes."""
    if gw.proc is not None:
        gw.proc.kill()
        gw.proc.wait(15)
    gw.proc = None
    gw.stop()


def objects_missing(gw):
    """Why objects cannot be tested on gw, or None: a daemon on RADOS
    answers 501 NotImplemented to object requests until object data and
    reads are on RADOS (the build may take --rados-conf before that)."""
    c = gw.client()
    b = gw.bucket_name("probe")
    c.create_bucket(Bucket=b)
    try:
        c.put_object(Bucket=b, Key="probe", Body=b"probe")
    except c.exceptions.ClientError as e:
        if e.response.get("Error", {}).get("Code") == "NotImplemented":
            return ("object requests answer 501 NotImplemented on this build's RADOS store "
                    "(object data is not on RADOS yet)")
        raise
    assert c.get_object(Bucket=b, Key="probe")["Body"].read() == b"probe"
    c.delete_object(Bucket=b, Key="probe")
    c.delete_bucket(Bucket=b)
    return None


def run_two_gateways(prefix, ready, **cluster):
    """The main of a test file with two gateways: skip unless the daemon
    can run on RADOS, start a CephCluster(**cluster), `strata rados init`
    prefix, start gateways A and B (same root keys) on it, skip unless
    objects work, call ready(cluster, B), then run the file's tests with A
    (strata_harness.run, which exits)."""
    from ceph_cluster import CephCluster
    from strata_harness import run
    require_daemon_on_rados()
    with CephCluster(**cluster) as c:
        log(f"cluster ({c.nosds} {c.store} OSD(s)) up in {c.start_seconds:.1f} s")
        rados_init(c, prefix)
        a = gateway(c, prefix)
        b = gateway(c, prefix, keys=(a.ak, a.sk))
        try:  # the gateways stop before the cluster they close their state in
            why = objects_missing(a)
            if why:
                a.stop()
                b.stop()
                skip(why)
            ready(c, b)
            run(a)  # exits
        finally:
            a.stop()
            b.stop()
