#!/usr/bin/env bash
# Regenerates the docs that come from ODS (docs/dialects/*.md) from a built tree.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${TRN_BUILD_DIR:-$root/build}
ninja -C "$build_dir" TrnDocGen NCDocGen DistDocGen
cp "$build_dir/include/trn/Dialect/Trn/IR/TrnDialect.md" "$root/docs/dialects/trn.md"
cp "$build_dir/include/trn/Dialect/NC/IR/NCDialect.md" "$root/docs/dialects/nc.md"
cp "$build_dir/include/trn/Dialect/Dist/IR/DistDialect.md" "$root/docs/dialects/dist.md"
echo "[update-docs] docs/dialects/{trn,nc,dist}.md refreshed"
