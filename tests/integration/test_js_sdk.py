#!/usr/bin/python3
"""test_js_sdk.py - aws-sdk-js v3 (@aws-sdk/client-s3, pinned in
tests/integration/js/package-lock.json) against a live strata: the
harness starts the daemon and makes a bucket, then node runs
js/range_checksum.mjs, which uploads with the SDK's CRC32 trailer and
reads whole and ranged objects with ChecksumMode ENABLED (the SDK
validates every checksum header it gets).  node comes from Debian's
nodejs package and node_modules from `npm ci`, both done by
deploy/install-deps.sh; without them this test fails and says so.
Run by CTest with /usr/bin/python3.
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strata_harness import Strata, log, run, test  # noqa: E402

JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")


@test
def range_get_with_checksum_validation(s):
    node = shutil.which("node", path="/usr/bin:/bin:/usr/local/bin")
    assert node, "node is not installed: run deploy/install-deps.sh"
    sdk = os.path.join(JS_DIR, "node_modules", "@aws-sdk", "client-s3", "package.json")
    assert os.path.exists(sdk), f"{sdk} is missing: run deploy/install-deps.sh (npm ci in {JS_DIR})"
    b = s.bucket_name("js")
    s.client().create_bucket(Bucket=b)
    env = {"PATH": "/usr/bin:/bin", "HOME": s.home, "NO_PROXY": "127.0.0.1,localhost",
           "STRATA_ENDPOINT": s.endpoint, "STRATA_AK": s.ak, "STRATA_SK": s.sk, "STRATA_BUCKET": b}
    p = subprocess.run([node, os.path.join(JS_DIR, "range_checksum.mjs")], cwd=JS_DIR, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    for line in (p.stdout + p.stderr).strip().splitlines():
        log(f"node: {line}")
    assert p.returncode == 0, f"range_checksum.mjs exited {p.returncode}"
    assert "checks passed" in p.stdout, p.stdout


if __name__ == "__main__":
    run(Strata())
