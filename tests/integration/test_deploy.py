"""test_deploy.py - the files of deploy/ checked by the tools that consume
them.

- strata.service: `systemd-analyze verify` (with ExecStart pointed at the
  built binary) must print nothing at all (it exits 0 on unknown keys and
  bad values, but says so), the hardening directives are present, and
  `systemd-analyze security --offline` rates it at most 4.0 ("OK").
  Skipped only when systemd-analyze is absent (Debian 12 has it).
- strata.logrotate: `logrotate -d` accepts it, and a forced rotation with
  the file's own settings (paths, owner and the postrotate command pointed
  at this test's daemon) rotates the access log while the daemon runs: the
  old lines stay in access.log.1, the daemon reopens on SIGHUP and writes
  new lines to the new file, nothing lost.
- Containerfile: not built (no registry here), but linted: a Debian 12
  base, every COPY source exists in the checkout, it installs the build
  packages with deploy/install-deps.sh (STRATA_DEPS=build), and the
  runtime packages it installs provide every shared library the built
  binary needs (readelf NEEDED -> dpkg -S) and exist in apt.
"""

import grp
import os
import pwd
import re
import shutil
import subprocess
import time

from strata_harness import Strata, log, run, test

SRC = os.environ.get("STRATA_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
DEPLOY = os.path.join(SRC, "deploy")
BIN = os.environ["STRATA_BIN"]


def sh(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120, **kw)


@test
def systemd_unit_verifies(s):
    if not shutil.which("systemd-analyze"):
        log("SKIP: systemd-analyze is not installed")
        return
    with open(os.path.join(DEPLOY, "strata.service")) as f:
        unit = f.read()
    for d in ("NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes", "ProtectHome=yes",
              "LimitNOFILE=", "ReadWritePaths=", "CapabilityBoundingSet=\n",
              "ExecReload=/bin/kill -HUP $MAINPID", "--access-log /var/log/strata/access.log",
              "LogsDirectory=strata"):
        assert d in unit, f"strata.service lacks {d!r}"
    path = os.path.join(s.tmp, "strata.service")
    with open(path, "w") as f:
        f.write(unit.replace("/usr/local/bin/strata", BIN))
    p = sh("systemd-analyze", "verify", "--man=no", path)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
        (p.returncode, p.stdout, p.stderr)
    # The check itself: a misspelt key is reported.
    with open(path, "w") as f:
        f.write(unit.replace("/usr/local/bin/strata", BIN).replace("NoNewPrivileges", "NoNewPrivilegs"))
    p = sh("systemd-analyze", "verify", "--man=no", path)
    assert "NoNewPrivilegs" in p.stderr, p.stderr
    with open(path, "w") as f:
        f.write(unit.replace("/usr/local/bin/strata", BIN))
    p = sh("systemd-analyze", "security", "--offline=yes", "--no-pager", path)
    m = re.search(r"Overall exposure level for strata.service: ([0-9.]+)", p.stdout)
    assert m and float(m.group(1)) <= 4.0, p.stdout[-2000:]
    log(f"systemd-analyze security: exposure {m.group(1)}")


def access_lines(path):
    with open(path) as f:
        return [l for l in f if "ListBuckets" in l or " GET " in l]


@test
def logrotate_reopens_the_access_log(s):
    lr = shutil.which("logrotate") or "/usr/sbin/logrotate"
    assert os.access(lr, os.X_OK), "logrotate missing: run deploy/install-deps.sh"
    with open(os.path.join(DEPLOY, "strata.logrotate")) as f:
        conf = f.read()
    assert "/var/log/strata/access.log {" in conf and "postrotate" in conf
    assert "systemctl kill --signal=HUP --kill-whom=main strata.service" in conf
    logdir = os.path.join(s.tmp, "log")
    os.makedirs(logdir, exist_ok=True)
    access = os.path.join(logdir, "access.log")
    me, mygroup = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    mine = (conf.replace("/var/log/strata/access.log", access)
            .replace("create 0640 strata strata", f"create 0640 {me} {mygroup}")
            .replace("/bin/systemctl kill --signal=HUP --kill-whom=main strata.service",
                     f"/bin/kill -HUP {S2.proc.pid}"))
    cpath = os.path.join(s.tmp, "strata.logrotate")
    with open(cpath, "w") as f:
        f.write(mine)
    os.chmod(cpath, 0o644)
    state = os.path.join(s.tmp, "logrotate.state")
    # -d: parse and plan only.
    p = sh(lr, "-d", "-s", state, cpath)
    assert p.returncode == 0 and "error" not in (p.stdout + p.stderr).lower(), p.stdout + p.stderr
    c = S2.client()
    for _ in range(3):
        c.list_buckets()
    time.sleep(0.2)
    before = access_lines(access)
    assert len(before) >= 3, before
    p = sh(lr, "-f", "-s", state, cpath)
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.path.exists(access + ".1"), os.listdir(logdir)  # delaycompress: .1 stays plain
    for _ in range(2):
        c.list_buckets()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(access_lines(access)) < 2:
        time.sleep(0.1)
    after = access_lines(access)
    assert len(after) == 2, after  # the daemon reopened: new lines in the new file
    assert access_lines(access + ".1")[:len(before)] == before
    st = os.stat(access)
    assert oct(st.st_mode & 0o777) == "0o640", oct(st.st_mode)


def containerfile():
    with open(os.path.join(DEPLOY, "Containerfile")) as f:
        text = f.read()
    # Join continuation lines, drop comments.
    text = re.sub(r"\\\n\s*", " ", text)
    return [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]


@test
def containerfile_lint(s):
    lines = containerfile()
    froms = [l for l in lines if l.startswith("FROM ")]
    assert froms and all(l.split()[1] == "debian:12" for l in froms), froms
    copies = [l.split()[1:] for l in lines if l.startswith("COPY ") and "--from=" not in l]
    assert copies
    for args in copies:
        for src in args[:-1]:
            assert os.path.exists(os.path.join(SRC, src)), f"COPY {src}: not in the checkout"
    runs = " ".join(l for l in lines if l.startswith("RUN "))
    assert "STRATA_DEPS=build ./deploy/install-deps.sh" in runs, runs
    assert "cmake --build build" in runs and "--target strata" in runs, runs
    assert any(l.startswith("COPY --from=build /src/build/strata /usr/local/bin/strata") for l in lines)
    ep = [l for l in lines if l.startswith("ENTRYPOINT ")]
    assert ep and "/usr/local/bin/strata" in ep[0] and '"server"' in ep[0], ep
    # The runtime packages: the last stage's apt-get install list.
    last = lines[max(i for i, l in enumerate(lines) if l.startswith("FROM ")):]
    inst = " ".join(l for l in last if "apt-get install" in l)
    pkgs = set(re.findall(r"\b(lib[a-z0-9.+-]+|ca-certificates)\b", inst.split("apt-get install", 1)[1]
                          .split("&&")[0]))
    assert pkgs, inst
    r = sh("apt-cache", "show", "--no-all-versions", *sorted(pkgs))
    known = set(re.findall(r"^Package: (\S+)$", r.stdout, re.M))
    assert pkgs <= known, f"not Debian 12 packages: {sorted(pkgs - known)}"
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", sh("readelf", "-d", BIN).stdout)
    # A sanitizer build's runtimes are not part of the image's release build.
    needed = [n for n in needed if not re.match(r"lib(a|ub|t|l)san\.so", n)]
    assert needed
    base = {"libc6", "libgcc-s1", "libstdc++6"}  # in every Debian image
    r = sh("dpkg", "-S", *("*/" + lib for lib in needed))  # one scan of the package lists
    owners = {}
    for line in r.stdout.splitlines():
        pkg, path = line.split(": ", 1)
        owners.setdefault(os.path.basename(path), pkg.split(":")[0])
    for lib in needed:
        owner = owners.get(lib)
        assert owner, f"{lib}: no package provides it here"
        assert owner in pkgs or owner in base, f"{lib} ({owner}) is not installed by the Containerfile"


S2 = None

if __name__ == "__main__":
    s = Strata()
    S2 = s
    # The logrotate test needs the daemon's access log in a file: restart it
    # with one under the scratch directory.
    s.args += ["--access-log", os.path.join(s.tmp, "log", "access.log")]
    os.makedirs(os.path.join(s.tmp, "log"), exist_ok=True)
    s.restart()
    run(s)
