#!/usr/bin/env bash
# Sets everything up (utils/setup.sh) and runs the main example.
#
# Today the example is a transformer-block training step (forward, backward,
# AdamW) written in trn: verified and simplified by trn-opt, run on the
# reference evaluator by trn-eval, and checked against PyTorch in float64.
# When the frontend, backend and runtime land, this becomes trace-then-compile
# of examples/ and a short training run on the simulated NeuronCore.
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

# Compile an MLP layer step for NeuronCore-v2 through the default local
# compile cache, run it on the simulated NeuronCore and check it against the
# reference evaluator. The second compile is a cache hit.
mlp=$root/test/e2e/mlp.mlir
say "compiling $(basename "$mlp") with trn-cc (cache: ${TRN_CACHE_DIR:-/var/tmp/trn-compile-cache})"
"$build_dir/bin/trn-cc" compile "$mlp" -o "$work/mlp.trnart"
"$build_dir/bin/trn-cc" compile "$mlp" -o "$work/mlp.trnart"
say "running it on the simulated NeuronCore (trn-run)"
"$build_dir/bin/trn-eval" "$mlp" --random 5 --save-inputs "$work/mlp-in.npz" \
  --outputs "$work/mlp-ref.npz" >/dev/null
"$build_dir/bin/trn-run" "$work/mlp.trnart" --inputs "$work/mlp-in.npz" \
  --outputs "$work/mlp-out.npz" --profile "$work/mlp-trace.json"
say "comparing the simulator's outputs with the reference evaluator"
/usr/bin/python3 "$root/test/e2e/Inputs/compare.py" "$work/mlp-ref.npz" \
  "$work/mlp-out.npz" 1e-4 | tail -n 1
say "done"
