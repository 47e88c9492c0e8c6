#!/usr/bin/env bash
# Sets everything up (utils/setup.sh) and runs the main example.
#
# Today the example is a transformer-block training step (forward, backward,
# AdamW) written in trn: verified and simplified by trn-opt, run on the
# reference evaluator by trn-eval and checked against PyTorch in float64, then
# compiled by trn-cc and run on the simulated NeuronCore by trn-run. When the
# frontend lands, this becomes trace-then-compile of examples/ and a short
# training run.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${TRN_BUILD_DIR:-$root/build}
say() { printf '[example] %s\n' "$*"; }

"$root/utils/setup.sh"

graph=$root/test/Eval/transformer-block.mlir
reference=$root/test/Eval/Inputs/transformer_block_reference.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say "verifying and canonicalizing $(basename "$graph") ($(grep -c ' = trn\.' "$graph") trn ops)"
"$build_dir/bin/trn-opt" "$graph" -canonicalize -cse -o "$work/canonical.mlir"
say "after -canonicalize -cse: $(grep -c ' = trn\.' "$work/canonical.mlir") trn ops"

say "making inputs with NumPy"
/usr/bin/python3 "$reference" make-inputs "$work/in.npz"

say "running the step on the reference evaluator (trn-eval)"
"$build_dir/bin/trn-eval" "$work/canonical.mlir" --inputs "$work/in.npz" \
  --outputs "$work/out.npz" >"$work/summary.txt"
head -n 5 "$work/summary.txt"
say "... (outputs written to an .npz)"

say "checking every output against PyTorch autograd in float64"
/usr/bin/python3 "$reference" check "$work/in.npz" "$work/out.npz" | tail -n 3

# Compile the same step for NeuronCore-v2 through the default local compile
# cache (the second compile is a cache hit), run it on the simulated
# NeuronCore and check every output against the reference evaluator.
say "compiling $(basename "$graph") with trn-cc (cache: ${TRN_CACHE_DIR:-/var/tmp/trn-compile-cache})"
"$build_dir/bin/trn-cc" compile "$graph" -o "$work/step.trnart"
"$build_dir/bin/trn-cc" compile "$graph" -o "$work/step.trnart"
say "running it on the simulated NeuronCore (trn-run), checking it against trn-eval"
"$build_dir/bin/trn-run" "$work/step.trnart" --inputs "$work/in.npz" \
  --outputs "$work/step-out.npz" --profile "$work/step-trace.json" \
  --check-against "$graph" | grep -v 'max abs'
say "done"
