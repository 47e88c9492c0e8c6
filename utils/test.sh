#!/usr/bin/env bash
# Sets everything up (utils/setup.sh), builds, then runs every test: the lit
# suite (check-trn), the GoogleTest suite (ctest) and the Python frontend's
# pytest suite (test/python). Ends with a line
# "N passed, N failed" and exits non-zero if anything failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${TRN_BUILD_DIR:-$root/build}
say() { printf '[test] %s\n' "$*"; }
# The project's Python environment (utils/setup.sh makes it).
python=${TRN_VENV:-$root/.venv}/bin/python

if ! "$root/utils/setup.sh"; then
  echo "[test] error: setup or build failed (see above)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

results=$build_dir/test-results
rm -rf "$results" && mkdir -p "$results"
llvm_prefix=$(llvm-config-19 --prefix)
jobs=${TRN_JOBS:-$(nproc)}

say "running lit tests (test/)"
"$python" "$llvm_prefix/build/utils/lit/lit.py" -sv -j"$jobs" \
  --xunit-xml-output="$results/lit.xml" "$build_dir/test"
lit_status=$?

say "running GoogleTest tests (test/unit, via ctest)"
(cd "$build_dir" && ctest -j"$jobs" --output-on-failure --output-junit "$results/ctest.xml")
ctest_status=$?

say "running the Python frontend tests (test/python, pytest)"
# A private compile cache, so the tests neither depend on nor fill the user's.
pytest_cache=$(mktemp -d)
(cd "$root" && TRN_CACHE_DIR="$pytest_cache" "$python" -m pytest -q \
  -p no:cacheprovider --junitxml="$results/pytest.xml" test/python)
pytest_status=$?
rm -rf "$pytest_cache"

"$python" - "$results" "$lit_status" "$ctest_status" "$pytest_status" <<'PY'
import sys, pathlib, xml.etree.ElementTree as ET
results, statuses = pathlib.Path(sys.argv[1]), sys.argv[2:]
passed = failed = 0
for name in ("lit.xml", "ctest.xml", "pytest.xml"):
    path = results / name
    if not path.exists():
        print(f"[test] {name} missing: the runner did not finish", file=sys.stderr)
        failed += 1
        continue
    for case in ET.parse(path).iter("testcase"):
        if case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
# A runner that failed without a failing test case (crash, bad config) still fails.
if failed == 0 and any(s != "0" for s in statuses):
    failed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
