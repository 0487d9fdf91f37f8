"""test_config_file.py - `--config FILE` (JSON), `--print-config`, and
SIGHUP.

The config file holds every flag by its long name plus drives and root
keys; flags and the environment win over it; `strata --print-config`
prints the effective configuration with the root password masked, and
that output loads back as a config file (the mask itself is refused as a
password).  A daemon started from a config file serves with its values.
SIGHUP reloads the users file (a broken one keeps the old users) and
reopens the access log file (rotation).
"""

import json
import os
import signal
import subprocess
import time

from strata_harness import Strata, expect_error, log, run, test

BIN = os.environ.get("STRATA_BIN")
TMP = os.path.join(os.environ.get("STRATA_TEST_TMPDIR") or "/tmp", f"config-file-{os.getpid()}")
os.makedirs(TMP, exist_ok=True)
USERS = os.path.join(TMP, "users")
ACCESS_LOG = os.path.join(TMP, "access.log")
U2 = ("CFGUSERTWO", "cfg-user-two-secret")
U3 = ("CFGUSERTHREE", "cfg-user-three-secret")
with open(USERS, "w") as f:
    f.write(f"# initial users\n{U2[0]} {U2[1]} Two\n")
DAEMON_CONF = os.path.join(TMP, "daemon.json")
with open(DAEMON_CONF, "w") as f:
    json.dump({"users": USERS, "max-inflight": 77, "access-log": ACCESS_LOG,
               "log-level": "notice", "timeout": 60}, f)


def strata(*args, env=None):
    e = {"PATH": "/usr/bin:/bin"}
    e.update(env or {})
    p = subprocess.run([BIN, *args], env=e, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def write(name, doc):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


FULL = {
    "address": "127.0.0.1:9911", "users": "/etc/strata/users", "tls-cert": "/etc/strata/c.pem",
    "tls-key": "/etc/strata/k.pem", "domain": "s3.example.test", "access-log": "/var/log/x.log",
    "inline-max": 4096, "small-object-log": True, "small-object-log-segment-mb": 32, "cache-mb": 64, "object-cache-mb": 96, "data-cache-mb": 320, "data-cache-on-write": True, "memtable-mb": 48, "mpu-retry-seconds": 3600, "read-cache-max-mb": 256,
    "max-inflight": 33, "timeout": "45", "threads": 2, "workers": 4,
    "lc-day-seconds": 600, "ilm-interval-seconds": 0, "ilm-rate": 10, "heal-interval-seconds": 0,
    "orphan-grace-seconds": 120,
    "max-conns-per-ip": 8, "body-memory-mb": 128, "log-level": "debug",
    "root-user": "cfgroot", "root-password": "cfg-root-secret-xyz", "metrics-public": True,
    "admin-users": "AK1,AK2", "kms-key-file": "/etc/strata/kms.json", "sse-c-allow-http": True,
    "metrics-token-file": "/etc/strata/metrics.token",
    "drives": ["/srv/strata/d{1...4}"], "ilm-move-mbps": 32, "ilm-due-rate": 120, "heal-rate": 90,
    "tiers": ["warm:4+2:/srv/strata/w{1...6}", "compliance:/srv/c1,/srv/c{2...8}"],
    "storage-classes": ["ONEZONE_IA:warm"], "region": "eu-west-3",
    "default-object-ownership": "ObjectWriter", "root-display-name": "Ops Team",
    "notify-targets": ["hook1:webhook:http://127.0.0.1:8080/events", "r:webhook:https://hooks.example.test/s3"],
    "notify-token-files": ["hook1:/etc/strata/hook.token"], "notify-queue-max": 5000,
    "tier-credentials": "/etc/strata/tiers.json",
    "replication-targets": ["site2:http://127.0.0.1:9912"], "replication-sealed-retry-seconds": 300,
    "rados-conf": "/etc/ceph/ceph.conf", "rados-id": "strata", "rados-pool-prefix": "s3", "lease-seconds": 6,
}


@test
def print_config_shows_every_setting(s):
    path = write("full.json", FULL)
    rc, out, err = strata("--print-config", "--config", path)
    assert rc == 0, err
    doc = json.loads(out)
    assert "cfg-root-secret-xyz" not in out
    want = dict(FULL, timeout=45, **{"root-password": "********", "config": path,
                                     "drives": [f"/srv/strata/d{i}" for i in range(1, 5)]})
    assert doc == want, f"{doc}\n!=\n{want}"


@test
def flags_and_environment_win(s):
    path = write("full.json", FULL)
    rc, out, err = strata("--print-config", "--config", path, "--max-inflight", "7",
                          "--address=127.0.0.1:9922", "/data/x{1...4}",
                          env={"STRATA_ROOT_USER": "envroot", "STRATA_ROOT_PASSWORD": "envsecret"})
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["max-inflight"] == 7 and doc["address"] == "127.0.0.1:9922", doc
    assert doc["drives"] == [f"/data/x{i}" for i in range(1, 5)], doc["drives"]
    assert doc["root-user"] == "envroot" and "envsecret" not in out
    assert doc["cache-mb"] == 64  # untouched by flags: still the file's
    # The same through "strata server ... --print-config".
    rc, out2, err = strata("server", "--config", path, "--threads", "0", "--print-config")
    assert rc == 0 and json.loads(out2)["threads"] == 0, err


@test
def object_ownership_and_root_name_flags(s):
    rc, out, err = strata("--print-config")
    doc = json.loads(out)
    assert rc == 0 and doc["default-object-ownership"] == "BucketOwnerEnforced", (out, err)
    assert doc["root-display-name"] == "root", doc
    for mode in ("ObjectWriter", "BucketOwnerPreferred", "BucketOwnerEnforced"):
        rc, out, err = strata("--print-config", "--default-object-ownership", mode,
                              "--root-display-name", "Jane Q. Admin")
        doc = json.loads(out)
        assert rc == 0 and doc["default-object-ownership"] == mode, (mode, out, err)
        assert doc["root-display-name"] == "Jane Q. Admin", doc
    for bad in ("objectwriter", "", "Nobody", "BucketOwnerEnforced "):
        rc, out, err = strata("--print-config", "--default-object-ownership", bad)
        assert rc == 2 and "--default-object-ownership" in err and not out, (bad, rc, out, err)
    for bad in ("", "x" * 128):
        rc, out, err = strata("--print-config", "--root-display-name", bad)
        assert rc == 2 and "--root-display-name" in err and not out, (bad, rc, out, err)
    path = write("ownership.json", {"default-object-ownership": "Whoever"})
    rc, out, err = strata("--print-config", "--config", path)
    assert rc == 2 and "default-object-ownership" in err, (rc, out, err)


@test
def memtable_budget_flag(s):
    rc, out, err = strata("--print-config")
    assert rc == 0 and json.loads(out)["memtable-mb"] == 512, (out, err)  # the default
    rc, out, err = strata("--print-config", "--memtable-mb", "8")
    assert rc == 0 and json.loads(out)["memtable-mb"] == 8, (out, err)
    for bad in ("7", "0", "abc", "12x", "", "-16", "99999999999999999999"):
        rc, out, err = strata("--print-config", "--memtable-mb", bad)
        assert rc == 2 and "--memtable-mb" in err and not out, (bad, rc, out, err)
    path = write("memtable.json", {"memtable-mb": 4})
    rc, out, err = strata("--print-config", "--config", path)
    assert rc == 2 and "memtable-mb" in err, (rc, out, err)


@test
def read_cache_max_flag(s):
    rc, out, err = strata("--print-config")
    assert rc == 0 and json.loads(out)["read-cache-max-mb"] == 64, (out, err)  # the default
    for ok in ("0", "256", "4096"):
        rc, out, err = strata("--print-config", "--read-cache-max-mb", ok)
        assert rc == 0 and json.loads(out)["read-cache-max-mb"] == int(ok), (ok, out, err)
    for bad in ("abc", "12x", "", "-16", "99999999999999999999", "2000000000"):
        rc, out, err = strata("--print-config", "--read-cache-max-mb", bad)
        assert rc == 2 and "--read-cache-max-mb" in err and not out, (bad, rc, out, err)
    path = write("readcache.json", {"read-cache-max-mb": 512})
    rc, out, err = strata("--print-config", "--config", path)
    assert rc == 0 and json.loads(out)["read-cache-max-mb"] == 512, (rc, out, err)


@test
def tiers_flags_and_errors(s):
    path = write("full.json", FULL)
    # --tier flags replace the file's "tiers"; --storage-class adds to its classes.
    rc, out, err = strata("--print-config", "--config", path, "--tier", "cold:/x/c{1...4}",
                          "--storage-class", "GLACIER:cold")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["tiers"] == ["cold:/x/c{1...4}"], doc["tiers"]
    assert doc["storage-classes"] == ["ONEZONE_IA:warm", "GLACIER:cold"], doc["storage-classes"]
    for bad in (["--tier", "warm"], ["--tier", "Warm:/x/w{1...4}"],
                ["--tier", "warm:4+2:/x/w{1...4}"], ["--tier", "warm:1+0:/x/w{1...4}"],
                ["--tier", "w:/x/a{1...4}", "--tier", "w:/x/b{1...4}"],
                ["--storage-class", "GLACIER"], ["--storage-class", "glacier:warm"]):
        rc, _, err = strata("--print-config", *bad)
        assert rc == 2 and err, (bad, rc, err)
    # Hot drives twice: as arguments and as --tier hot.
    rc, _, err = strata("--print-config", "--tier", "hot:/x/h{1...4}", "/x/d{1...4}")
    assert rc == 2 and "hot" in err, (rc, err)
    rc, out, err = strata("--print-config", "--tier", "hot:2+2:/x/h{1...4}")
    assert rc == 0 and json.loads(out)["drives"] == [f"/x/h{i}" for i in range(1, 5)], (out, err)


@test
def printed_config_loads_back(s):
    path = write("full.json", FULL)
    env = {"STRATA_ROOT_USER": "envroot", "STRATA_ROOT_PASSWORD": "envsecret"}
    rc, out, err = strata("--print-config", "--config", path, env=env)
    assert rc == 0, err
    first = json.loads(out)
    # As printed, the masked password is refused ...
    back = write("back.json", out)
    rc, _, err = strata("--print-config", "--config", back, env=env)
    assert rc == 2 and "mask" in err, (rc, err)
    # ... and without it the printed file is the same configuration.
    del first["root-password"]
    back = write("back.json", first)
    rc, out, err = strata("--print-config", "--config", back, env=env)
    assert rc == 0, err
    second = json.loads(out)
    assert second.pop("config") == back
    first.pop("config")
    second.pop("root-password")
    assert second == first, f"{second}\n!=\n{first}"


@test
def bad_config_files_are_refused(s):
    cases = [
        ("unknown.json", {"adress": "x"}, '"adress": unknown key'),
        ("type.json", {"address": ["127.0.0.1:1"]}, '"address": want a string'),
        ("drives.json", {"drives": "/d1"}, '"drives": want an array'),
        ("notobj.json", "[1, 2]", "not a JSON object"),
        ("syntax.json", '{"address": "x",\n', "syntax.json:"),
        ("dup.json", '{"threads": 1, "threads": 2}', "duplicate"),
        ("level.json", {"log-level": "loud"}, "unknown log level loud"),
        ("bool.json", {"metrics-public": "yes"}, '"metrics-public": want true or false'),
    ]
    for name, doc, msg in cases:
        rc, out, err = strata("--print-config", "--config", write(name, doc))
        assert rc == 2 and msg in err, (name, rc, err)
        assert out == "", (name, out)
    rc, out, err = strata("--print-config", "--config", os.path.join(TMP, "missing.json"))
    assert rc == 2 and "missing.json" in err, (rc, err)


@test
def numbers_are_whole(s):
    # A number option takes a whole number in its range, from a flag or the
    # file: no suffix, no sign unless negatives mean something.
    for flag in ("--max-inflight", "--timeout", "--inline-max", "--heal-rate", "--lc-day-seconds"):
        for bad in ("abc", "12k", "-1", "", "99999999999999999999"):
            rc, out, err = strata("--print-config", flag, bad)
            assert rc == 2 and f"strata: {flag} must be" in err and out == "", (flag, bad, rc, err)
    rc, out, err = strata("--print-config", "--config", write("junk.json", {"threads": "2x"}))
    assert rc == 2 and '"threads"' in err and out == "", (rc, err)
    rc, out, err = strata("--print-config", "--ilm-interval-seconds", "-1", "--threads", "0",
                          env={"STRATA_DATA_DIR": TMP})
    assert rc == 0 and json.loads(out)["ilm-interval-seconds"] == -1, (rc, err)


@test
def daemon_runs_with_the_config_file(s):
    env = {"STRATA_ENDPOINT": s.endpoint, "STRATA_ACCESS_KEY": s.ak, "STRATA_SECRET_KEY": s.sk}
    rc, out, err = strata("admin", "--json", "config", env=env)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["config"] == DAEMON_CONF and doc["max-inflight"] == 77, doc
    assert doc["users"] == USERS and doc["access-log"] == ACCESS_LOG, doc
    assert doc["log-level"] == "notice" and doc["timeout"] == 60, doc
    assert doc["address"] == f"127.0.0.1:{s.port}"  # the harness's flag won
    s.client(*U2).list_buckets()


def until(fn, timeout=10):
    """fn() once it stops raising (the daemon handles SIGHUP asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def wait_for(pred, what, timeout=10):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def read(path):
    return open(path, errors="replace").read() if os.path.exists(path) else ""


@test
def sighup_reloads_users(s):
    s.client(*U2).list_buckets()
    expect_error(s.client(*U3).list_buckets, "InvalidAccessKeyId", 403)
    with open(USERS, "w") as f:
        f.write(f"{U3[0]} {U3[1]} Three\n")
    os.kill(s.proc.pid, signal.SIGHUP)
    until(lambda: s.client(*U3).list_buckets())
    expect_error(s.client(*U2).list_buckets, "InvalidAccessKeyId", 403)
    # A users file that does not load keeps the users the daemon has.
    with open(USERS, "w") as f:
        f.write("ONLYAKEY\n")
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_for(lambda: "cannot reload users" in read(s.log_path), "the reload error in the log")
    s.client(*U3).list_buckets()
    # The root user is never lost by a reload.
    s.client().list_buckets()


@test
def sighup_reopens_the_access_log(s):
    b = s.bucket_name("before-rotate")
    s.client().create_bucket(Bucket=b)
    wait_for(lambda: b in read(ACCESS_LOG), "the first line")
    os.rename(ACCESS_LOG, ACCESS_LOG + ".1")
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_for(lambda: os.path.exists(ACCESS_LOG), "the reopened access log")
    a = s.bucket_name("after-rotate")
    s.client().create_bucket(Bucket=a)
    wait_for(lambda: a in read(ACCESS_LOG), "a line in the new file")
    old = open(ACCESS_LOG + ".1").read()
    assert b in old and a not in old, "the rotated file still gets lines"
    log("access log reopened on SIGHUP")


if __name__ == "__main__":
    run(Strata(args=["--config", DAEMON_CONF]))
