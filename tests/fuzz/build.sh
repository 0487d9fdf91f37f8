#!/bin/bash
# Builds the auth fuzz targets with clang's libFuzzer (ASan+UBSan) into
# $1 (default build-fuzz), and seeds their corpora from tests/fuzz/corpus.
# Run e.g.:  build-fuzz/fuzz_chunked -max_total_time=60 tests/fuzz/corpus/fuzz_chunked
# Skips (exit 77) when clang or libFuzzer is missing.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/build-fuzz}
command -v clang >/dev/null || { echo "clang not found: skipping"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' >/tmp/strata-fuzz-probe.c
clang -fsanitize=fuzzer /tmp/strata-fuzz-probe.c -o /tmp/strata-fuzz-probe 2>/dev/null ||
    { echo "libFuzzer not available: skipping"; exit 77; }
mkdir -p "$out"
auth_src="$src/server/sigv4.c $src/server/sigv4_canon.c $src/server/sigv4_crypto.c
          $src/server/sigv4_util.c $src/server/sigv4_presign.c $src/server/sigv2.c
          $src/server/chunked.c $src/server/creds.c"
flags="-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I$src/include -I$src/server"
for t in fuzz_auth_verify fuzz_chunked; do
    # shellcheck disable=SC2086
    clang $flags $auth_src "$src/tests/fuzz/$t.c" -o "$out/$t" -lcrypto -lpthread
    echo "built $out/$t"
done
