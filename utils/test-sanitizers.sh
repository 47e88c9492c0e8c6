#!/usr/bin/env bash
# Builds the runtime and the cache with AddressSanitizer and
# UndefinedBehaviorSanitizer in build-sanitize/ and runs their GoogleTest
# suites (numerics, .npz, ISA validator, artifact reader, simulator, cache).
# Any sanitizer report fails the run. A documented CI step (docs/cli.md);
# not part of utils/test.sh because it doubles the build time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${TRN_SANITIZE_BUILD_DIR:-$root/build-sanitize}
say() { printf '[sanitize] %s\n' "$*"; }

"$root/utils/setup.sh" >/dev/null
llvm_prefix=$(llvm-config-19 --prefix)
if [[ ! -f $build_dir/build.ninja ]]; then
  say "configuring $build_dir with -fsanitize=address,undefined"
  cmake -G Ninja -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMLIR_DIR="$llvm_prefix/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$llvm_prefix/build/utils/lit/lit.py" \
    -DTRN_SANITIZE="address;undefined" -DTRN_BUILD_FUZZERS=OFF >/dev/null
fi
tests=(TrnRtSupportTests TrnIsaTests TrnArtifactTests TrnSimulatorTests
       TrnCacheStoreTests TrnCacheStressTests)
say "building ${tests[*]}"
ninja -C "$build_dir" -j"${TRN_JOBS:-$(nproc)}" "${tests[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
for t in "${tests[@]}"; do
  if "$build_dir/test/unit/$t" --gtest_brief=1 >"$build_dir/$t.log" 2>&1; then
    say "$t: passed"
  else
    say "$t: FAILED (see $build_dir/$t.log)"
    failed=1
  fi
done
exit $failed
