#!/usr/bin/env bash
# Sets everything up (utils/setup.sh) and runs the main job: the GPT example
# (examples/gpt.py, a plain PyTorch script wrapped by trn.compile_step) is
# first traced and compiled ahead of training by trn-parallel-compile into
# the default local compile cache, then trained for 20 steps on the simulated
# NeuronCore (every graph a cache hit) next to the same script on PyTorch
# CPU; each step's loss side by side and the device statistics of a step.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '[example] %s\n' "$*"; }

"$root/utils/setup.sh"
# The project's Python environment (utils/setup.sh makes it).
python=${TRN_VENV:-$root/.venv}/bin/python

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
steps=${TRN_EXAMPLE_STEPS:-20}

bin="$root/build/bin"
say "trace-then-compile: $bin/trn-parallel-compile -- $python examples/gpt.py --device trn --steps $steps"
"$bin/trn-parallel-compile" --workdir "$work/compile" -- \
  "$python" "$root/examples/gpt.py" --device trn --steps "$steps"

say "training examples/gpt.py on PyTorch CPU ($steps steps)"
"$python" "$root/examples/gpt.py" --device cpu --steps "$steps" --quiet \
  --losses-out "$work/cpu.json"
say "training examples/gpt.py through trn (cache: ${TRN_CACHE_DIR:-/var/tmp/trn-compile-cache})"
"$python" "$root/examples/gpt.py" --device trn --steps "$steps" --quiet \
  --losses-out "$work/trn.json" --stats-out "$work/stats.json"

say "loss per step"
"$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
cpu = json.load(open(f"{work}/cpu.json"))["losses"]
dev = json.load(open(f"{work}/trn.json"))["losses"]
stats = json.load(open(f"{work}/stats.json"))
print(f"{'step':>5} {'PyTorch CPU':>13} {'trn (simulated)':>16} {'rel. diff':>10}")
worst = 0.0
for i, (a, b) in enumerate(zip(cpu, dev)):
    diff = abs(a - b) / abs(a)
    worst = max(worst, diff)
    print(f"{i:>5} {a:>13.6f} {b:>16.6f} {diff:>10.1e}")
print(f"largest relative difference: {worst:.1e} (fp32; the bar is 1e-4)")
for graph in stats["graphs"]:
    print(f"graph {graph['key']} ({graph['kind']} step): cache {graph['cache_status']}")
if any(g["cache_status"] != "hit" for g in stats["graphs"]):
    print("error: the training run compiled a graph trn-parallel-compile did not")
    sys.exit(1)
print(f"device time per step {stats['device_time_ns'] / 1e3:.1f} us, "
      f"{stats['instructions']} instructions, Tensor Engine {stats['tensor_engine_utilisation'] * 100:.1f}%, "
      f"MFU {stats['mfu'] * 100:.2f}%, HBM->SBUF {stats['hbm_to_sbuf_bytes']} B")
sys.exit(0 if worst <= 1e-4 else 1)
PY
say "done"
