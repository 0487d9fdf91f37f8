"""test_admin_cli.py - `strata admin`, the CLI over the admin API, run
against a real daemon: tables and --json for info, usage, heal and config,
keys from the environment or flags (flags win), and exit codes scripts can
trust: 0 done, 1 the server refused (non-admin, missing bucket, bad
argument), 2 bad usage, 3 unreachable, 4 a broken audit log; audit verify
and tail; https to a self-signed daemon with --ca-cert.
"""

import json
import os
import subprocess
import time

from strata_harness import Strata, free_port, lock_denial, run, test

USER2 = ("STRATACLIUSER2", "cli-second-secret")
_users = os.path.join(os.environ.get("STRATA_TEST_TMPDIR") or "/tmp", f"cli-users-{os.getpid()}")
with open(_users, "w") as f:
    f.write(f"{USER2[0]} {USER2[1]}\n")


def cli(s, *args, keys=None, env_keys=True, endpoint=None, extra_env=None):
    """(exit code, stdout, stderr) of `strata admin ARGS`."""
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home}
    env.update(extra_env or {})
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    if env_keys:
        ak, sk = keys or (s.ak, s.sk)
        env.update(STRATA_ENDPOINT=endpoint or s.endpoint, STRATA_ACCESS_KEY=ak,
                   STRATA_SECRET_KEY=sk)
    p = subprocess.run([os.environ["STRATA_BIN"], "admin", *args], env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@test
def info_table_and_json(s):
    rc, out, err = cli(s, "info")
    assert rc == 0, err
    assert "Strata 0.1.0" in out and "1 set(s), 4/4 drives online" in out, out
    for i in range(1, 5):
        line = [l for l in out.splitlines() if l.endswith(os.path.join(s.tmp, f"d{i}"))]
        assert len(line) == 1 and " online " in line[0] and "GiB" in line[0], out
    rc, out, err = cli(s, "--json", "info")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["drives_online"] == 4 and doc["sets"][0]["data"] == 2, doc
    assert doc["store"] == {"backend": "local"}, doc["store"]  # the drives above are the store
    assert "store:" not in cli(s, "info")[1]


@test
def usage_table_and_json(s):
    c = s.client()
    b = s.bucket_name("cli")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="one", Body=b"x" * 2048)
    c.put_object(Bucket=b, Key="two", Body=b"y" * 100)
    rc, out, err = cli(s, "usage", b)
    assert rc == 0, err
    row = [l.split() for l in out.splitlines() if l.startswith(b + " ")]
    # BUCKET OBJECTS BYTES(2 words) VERSIONS ALL-BYTES(2) MARKERS UPLOADS
    assert row == [[b, "2", "2.1", "KiB", "2", "2.1", "KiB", "0", "0"]], out
    assert out.splitlines()[0].split()[:3] == ["BUCKET", "OBJECTS", "BYTES"], out
    rc, out, err = cli(s, "--json", "usage")
    assert rc == 0, err
    by = {x["name"]: x for x in json.loads(out)["buckets"]}
    assert by[b]["objects"] == 2 and by[b]["bytes"] == 2148, by[b]
    rc, out, err = cli(s, "usage", "no-such-bucket-cli")
    assert rc == 1 and "NoSuchBucket (HTTP 404)" in err, (rc, err)
    rc, out, err = cli(s, "usage", "a/b")
    assert rc == 2, (rc, err)


@test
def heal_start_wait_and_status(s):
    rc, out, err = cli(s, "heal", "status")
    assert rc == 0 and out.startswith("heal: idle (runs finished: 0"), (rc, out, err)
    rc, out, err = cli(s, "heal", "start", "--wait")
    assert rc == 0, err
    assert "heal: idle (runs finished: 1" in out and "last run: finished" in out and ", ok;" in out, out
    rc, out, err = cli(s, "--json", "heal", "status")
    doc = json.loads(out)
    assert rc == 0 and doc["runs_finished"] == 1 and doc["last"]["result"] == "ok", doc
    assert doc["last"]["objects_scanned"] >= 2, doc


@test
def config_masks_the_secret(s):
    rc, out, err = cli(s, "config")
    assert rc == 0, err
    assert s.sk not in out and "********" in out, out
    lines = dict(l.split(None, 1) for l in out.splitlines() if len(l.split(None, 1)) == 2)
    assert lines["root-user"] == s.ak and lines["users"] == _users, lines
    rc, out, err = cli(s, "--json", "config")
    assert json.loads(out)["root-password"] == "********"


@test
def exit_codes(s):
    # 1: refused by the server.
    rc, out, err = cli(s, "info", keys=USER2)
    assert rc == 1 and "AccessDenied (HTTP 403)" in err, (rc, err)
    rc, out, err = cli(s, "heal", "start", keys=USER2)
    assert rc == 1 and "AccessDenied" in err, (rc, err)
    rc, out, err = cli(s, "info", keys=(s.ak, "wrong-secret"))
    assert rc == 1 and "SignatureDoesNotMatch" in err, (rc, err)
    rc, out, err = cli(s, "audit", "tail", "0")
    assert rc == 1 and "InvalidArgument (HTTP 400)" in err, (rc, err)
    # 2: bad usage.
    for args in (("frobnicate",), ("heal",), ("heal", "start", "--now"), ("info", "extra"), (),
                 ("audit",), ("audit", "tail", "x"), ("audit", "verify", "now")):
        rc, out, err = cli(s, *args)
        assert rc == 2, (args, rc, err)
    rc, out, err = cli(s, "info", env_keys=False)
    assert rc == 2 and "no keys" in err, (rc, err)
    rc, out, err = cli(s, "--endpoint", "ftp://x", "info")
    assert rc == 2, (rc, err)
    # 3: nothing listens there.
    rc, out, err = cli(s, "info", endpoint=f"http://127.0.0.1:{free_port()}")
    assert rc == 3, (rc, err)
    # Flags win over the environment.
    rc, out, err = cli(s, "--access-key", s.ak, "--secret-key", s.sk, "info", keys=USER2)
    assert rc == 0, err
    rc, out, err = cli(s, "--endpoint", s.endpoint, "info",
                       endpoint=f"http://127.0.0.1:{free_port()}")
    assert rc == 0, err


@test
def audit_verify_and_tail(s):
    b, vid = lock_denial(s, "cli-audit")
    rc, out, err = cli(s, "audit", "tail", "3")
    assert rc == 0, err
    rows = out.splitlines()
    assert rows[0].split()[:3] == ["TIME", "SEQ", "USER"] and 2 <= len(rows) <= 4, out
    assert " denied " in rows[-1] and f"{b}/worm" in rows[-1] and s.ak in rows[-1], out
    rc, out, err = cli(s, "audit", "verify")
    assert rc == 0 and out.rstrip().endswith("audit log: ok") and "drives agree" in out, (rc, out, err)
    # A tampered drive: exit 4 and the drive named.
    path = os.path.join(s.tmp, "d3", "audit.log")
    orig = open(path, "rb").read()
    open(path, "wb").write(orig.replace(b'"outcome":"denied"', b'"outcome":"allowd"'))
    try:
        rc, out, err = cli(s, "audit", "verify")
        assert rc == 4 and "audit log: BROKEN" in out, (rc, out, err)
        broken = [l for l in out.splitlines() if "BROKEN at entry" in l]
        assert len(broken) == 1 and os.path.join(s.tmp, "d3") in broken[0], out
        rc, out, err = cli(s, "--json", "audit", "verify")
        assert rc == 4 and json.loads(out)["ok"] is False, (rc, out)
    finally:
        open(path, "wb").write(orig)


@test
def ilm_run_and_status(s):
    rc, out, err = cli(s, "--json", "ilm", "status")
    assert rc == 0, err
    before = json.loads(out)["total"]["passes"]
    rc, out, err = cli(s, "ilm", "run")
    assert rc == 0 and out.startswith("lifecycle scanner: on"), (rc, out, err)
    deadline = time.monotonic() + 60
    while True:
        rc, out, err = cli(s, "ilm", "status")
        assert rc == 0, err
        total = [l for l in out.splitlines() if l.startswith("total:")]
        assert len(total) == 1, out
        if int(total[0].split("passes ")[1].split(",")[0]) > before:
            break
        assert time.monotonic() < deadline, out
        time.sleep(0.2)
    assert "last pass:" in out, out


@test
def https_with_a_ca_cert(s):
    """A TLS daemon with a self-signed certificate: refused without
    --ca-cert (exit 3), served with it or STRATA_CA_CERT."""
    d = os.path.join(s.tmp, "tls")
    os.makedirs(d)
    cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    subprocess.run(["/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    drives = [os.path.join(d, f"d{i}") for i in range(1, 5)]
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "STRATA_ROOT_USER": s.ak, "STRATA_ROOT_PASSWORD": s.sk}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    with open(os.path.join(d, "log"), "wb") as logf:
        p = subprocess.Popen([os.environ["STRATA_BIN"], "server", "--address",
                              f"127.0.0.1:{port}", "--tls-cert", cert, "--tls-key", key, *drives],
                             env=env, stdout=logf, stderr=subprocess.STDOUT)
    try:
        ep = f"https://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            rc, out, err = cli(s, "--ca-cert", cert, "info", endpoint=ep)
            if rc != 3 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert rc == 0 and "4/4 drives online" in out, (rc, err)
        rc, out, err = cli(s, "info", endpoint=ep)
        assert rc == 3 and "certificate" in err, (rc, err)
        env_ca = {"STRATA_CA_CERT": cert}
        rc, out, err = cli(s, "config", endpoint=ep, extra_env=env_ca)
        assert rc == 0 and "tls-cert" in out and cert in out, (rc, err)
    finally:
        p.terminate()
        assert p.wait(15) == 0


if __name__ == "__main__":
    run(Strata(args=["--users", _users]))
