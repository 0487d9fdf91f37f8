#!/usr/bin/python3
"""test_lock_archive.py - the compliance-archive scenario: 500 records written
to an Object Lock bucket with COMPLIANCE retention a few seconds ahead;
while it holds, every delete of a version (even with the governance
bypass), every attempt to overwrite a version (a PUT of the key only adds a
version: the locked bytes stay) and every attempt to shorten the retention
fails with AccessDenied; once the retain-until date has passed, every
version deletes and the bucket goes.  Then `strata audit verify` over the
drives accepts the audit log, which holds a denied entry for each refused
attempt, and a single flipped byte in one drive's log is detected.
Only attempts answered before the retain-until date are judged (the
daemon decided them while the retention held; a shortening, before the
shorter date it asks for), so a slow machine makes the test weaker, never
red.
Run by CTest (integration label) with /usr/bin/python3.
"""

import base64
import concurrent.futures
import datetime
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, log, run, test  # noqa: E402
import botocore  # noqa: E402

N = 500
HOLD_S = 20
UTC = datetime.timezone.utc


def record(i):
    return f"record {i:04d}: amount={i * 37 % 1000} currency=EUR\n".encode() * 4


def code_of(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


@test
def compliance_archive(s):
    c = s.client(max_pool_connections=16)
    b = s.bucket_name("archive")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    until = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(seconds=HOLD_S)
    deadline = until.timestamp() - 0.2  # attempts answered later are not judged
    keys = [f"ledger/2026/{i:04d}.rec" for i in range(N)]

    def write(i):
        data = record(i)
        r = c.put_object(Bucket=b, Key=keys[i], Body=data, ObjectLockMode="COMPLIANCE",
                         ObjectLockRetainUntilDate=until,
                         ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode())
        return r["VersionId"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        vids = list(pool.map(write, range(N)))
    log(f"{N} records written, retention until {until.isoformat()}")

    shorter = until - datetime.timedelta(seconds=HOLD_S // 2)
    # A shortening answered after the shorter date asks for a date in the
    # past (InvalidArgument): judged only before it.
    shorten_deadline = shorter.timestamp() - 0.2

    def attack(i):
        """Returns [(kind, judged, code)] for the three attempts on record i."""
        out = []
        for kind in ("delete", "shorten", "overwrite"):
            if kind == "delete":
                code = code_of(lambda: c.delete_object(Bucket=b, Key=keys[i], VersionId=vids[i],
                                                       BypassGovernanceRetention=True))
            elif kind == "shorten":
                code = code_of(lambda: c.put_object_retention(
                    Bucket=b, Key=keys[i], VersionId=vids[i], BypassGovernanceRetention=True,
                    Retention={"Mode": "COMPLIANCE", "RetainUntilDate": shorter}))
            else:
                # A PUT of the key cannot replace the locked version: it adds one.
                # Judged only if the locked version was read back in time.
                nv = c.put_object(Bucket=b, Key=keys[i], Body=b"tampered")["VersionId"]
                try:
                    got = c.get_object(Bucket=b, Key=keys[i], VersionId=vids[i])["Body"].read()
                    code = "AccessDenied" if nv != vids[i] and got == record(i) else "REPLACED"
                except botocore.exceptions.ClientError as e:
                    code = e.response["Error"]["Code"]
            out.append((kind, time.time() < (shorten_deadline if kind == "shorten" else deadline),
                        code))
        return out

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = [r for rs in pool.map(attack, range(N)) for r in rs]
    judged = [r for r in results if r[1]]
    bad = [r for r in judged if r[2] != "AccessDenied"]
    assert not bad, f"{len(bad)} attempts were not refused while the retention held: {bad[:5]}"
    denied_api = sum(1 for k, j, _ in judged if k != "overwrite")
    log(f"{len(judged)} of {len(results)} attempts judged before the retain-until date, all refused")
    if len(judged) < len(results):
        log(f"NOTE: slow machine: {len(results) - len(judged)} attempts came too late to judge")

    # The retention ends by the daemon's clock; wait for it, then everything goes.
    while time.time() < until.timestamp() + 0.5:
        time.sleep(0.2)
    assert c.get_object_retention(Bucket=b, Key=keys[0], VersionId=vids[0])["Retention"][
        "RetainUntilDate"] == until

    def remove(i):
        vers = c.list_object_versions(Bucket=b, Prefix=keys[i])["Versions"]
        for v in vers:
            c.delete_object(Bucket=b, Key=keys[i], VersionId=v["VersionId"])
        return len(vers)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        removed = sum(pool.map(remove, range(N)))
    # Each record has its own version and a "tampered" one, less the originals
    # deleted by attempts answered after the retention ended.
    late_deletes = sum(1 for k, _, code in results if k == "delete" and code == "OK")
    assert removed == 2 * N - late_deletes, (removed, late_deletes)
    c.delete_bucket(Bucket=b)

    if s.proc is None:
        log("external daemon: the audit log check needs the drives; skipped")
        return
    drives = [os.path.join(s.tmp, f"d{i}") for i in range(1, 5)]
    binary = os.environ["STRATA_BIN"]
    v = subprocess.run([binary, "audit", "verify"] + drives, capture_output=True, text=True)
    assert v.returncode == 0, (v.returncode, v.stdout, v.stderr)
    assert v.stdout.count(": ok,") == 4, v.stdout
    show = subprocess.run([binary, "audit", "show", drives[1]], capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    denied = [ln for ln in show.stdout.splitlines() if "\tdenied\t" in ln and b in ln]
    assert len(denied) >= denied_api, (len(denied), denied_api)
    assert any("\tDeleteObject\t" in ln for ln in denied), denied[:3]
    if any(k == "shorten" for k, _, _ in judged):
        assert any("\tPutObjectRetention\t" in ln for ln in denied), denied[:3]

    # One flipped byte in the middle of one drive's log is found.
    path = os.path.join(drives[2], "audit.log")
    with open(path, "r+b") as f:
        data = f.read()
        pos = len(data) // 2
        while data[pos:pos + 1] in (b"\n", b'"', b"{", b"}", b":", b","):
            pos += 1
        f.seek(pos)
        f.write(bytes([data[pos] ^ 0x01]))
    v = subprocess.run([binary, "audit", "verify"] + drives, capture_output=True, text=True)
    assert v.returncode == 1, (v.returncode, v.stdout, v.stderr)
    assert f"{drives[2]}: BROKEN at entry" in v.stdout, v.stdout
    assert v.stdout.count(": ok,") == 3, v.stdout


if __name__ == "__main__":
    run(Strata())
