#!/bin/bash
# Builds every libFuzzer target of tests/fuzz (each fuzz_<name>.c) with
# clang, ASan+UBSan and libFuzzer, into $1 (default build-fuzz), through
# CMake (-DSTRATA_LIBFUZZER=ON), so each target links the library it
# needs exactly as the CTest replay does.  Only the fuzz targets (and the
# libraries below them) are built.
# Run e.g.:  build-fuzz/fuzz_range -max_total_time=60 tests/fuzz/corpus/fuzz_range
# Skips (exit 77) when clang or libFuzzer is missing; install them with
# STRATA_WITH_FUZZ=1 deploy/install-deps.sh.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/build-fuzz}
command -v clang >/dev/null || { echo "clang not found: skipping"; exit 77; }
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' >"$probe/p.c"
clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2>/dev/null ||
    { echo "libFuzzer not available: skipping"; exit 77; }
# Warnings are not errors here: clang warns about things gcc (the CI
# compiler, with -Werror) does not, in code this build does not own.
cmake -S "$src" -B "$out" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSTRATA_ASAN=ON -DSTRATA_WERROR=OFF -DSTRATA_LIBFUZZER=ON >/dev/null
targets=()
for f in "$src"/tests/fuzz/fuzz_*.c; do
    targets+=("$(basename "$f" .c)")
done
log="$out/fuzz-build.log"
cmake --build "$out" -j"$(nproc)" --target "${targets[@]}" >"$log" 2>&1 ||
    { tail -40 "$log"; echo "build failed: see $log"; exit 1; }
for t in "${targets[@]}"; do
    mkdir -p "$src/tests/fuzz/corpus/$t"
    echo "built $out/$t"
done
