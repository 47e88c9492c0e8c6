#!/usr/bin/env python3
"""What trn-assign-layouts saves on transformer training steps, simulated.

    bench/layouts.py [--json out.json] [--build build]

Generates one layer of each benchmark model with utils/gen_transformer_step.py
(a GPT-3-shaped layer at hidden 1024, 8 heads of 128, sequence 512; a
BERT-large layer at batch 8, sequence 128, 16 heads of 64), lowers each with
trn-cc's pipeline spelled out as trn-opt passes, once as trn-cc runs it and
once without trn-assign-layouts, and runs both artifacts with trn-run on zero
inputs. Reports the transposes left in the graph, the simulated device time
and the HBM traffic.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

MODELS = {
    "gpt3-layer": ["gpt3-23b", "--layers", "1", "--hidden", "1024", "--heads", "8",
                   "--seq", "512", "--batch", "1", "--ffn", "4096", "--tp", "1"],
    "bert-layer": ["bert-large", "--layers", "1", "--hidden", "1024", "--heads", "16",
                   "--seq", "128", "--batch", "8", "--ffn", "4096", "--vocab", "1024",
                   "--positions", "128"],
}

GRAPH_PASSES = ["--trn-decompose-composites=keep-flash-attention=true", "--trn-narrow-i64",
                "--canonicalize", "--cse"]
LOWERING_PASSES = ["--trn-fuse-elementwise", "--convert-trn-to-nc", "--nc-allocate",
                   "--nc-insert-sync"]


def run(cmd, **kwargs):
    return subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def measure(bin_dir, graph, work, name, assign_layouts):
    graph_passes = GRAPH_PASSES + (["--trn-assign-layouts"] if assign_layouts else [])
    trn_level = work / f"{name}.trn.mlir"
    run([bin_dir / "trn-opt", graph, *graph_passes, "-o", trn_level])
    transposes = len(re.findall(r"trn\.transpose", trn_level.read_text()))
    nc_level = work / f"{name}.nc.mlir"
    run([bin_dir / "trn-opt", trn_level, *LOWERING_PASSES, "-o", nc_level])
    artifact = work / f"{name}.trnart"
    run([bin_dir / "trn-translate", nc_level, "--nc-to-artifact", "-o", artifact])
    stats = json.loads(run([bin_dir / "trn-run", artifact, "--zeros", "--json"],
                           capture_output=True, text=True).stdout)
    return {
        "transposes": transposes,
        "device_time_us": stats["device_time_ns"] / 1000.0,
        "hbm_traffic_mib": (stats["hbm_to_sbuf_bytes"] + stats["sbuf_to_hbm_bytes"]) / 2**20,
        "instructions": stats["instructions"],
        "tensor_engine_utilisation": stats["tensor_engine_utilisation"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--build", default=str(ROOT / "build"))
    args = parser.parse_args()
    bin_dir = pathlib.Path(args.build) / "bin"
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        for model, gen_args in MODELS.items():
            graph = work / f"{model}.mlir"
            run([sys.executable, ROOT / "utils" / "gen_transformer_step.py", *gen_args,
                 "-o", graph])
            print(f"[layouts] {model}: lowering with and without trn-assign-layouts",
                  flush=True)
            results[model] = {
                "without": measure(bin_dir, graph, work, f"{model}-without", False),
                "with": measure(bin_dir, graph, work, f"{model}-with", True),
            }
    print(f"{'model':<12} {'layouts':<8} {'transposes':>10} {'device us':>11} "
          f"{'HBM MiB':>9} {'instructions':>12} {'TE util':>8}")
    for model, pair in results.items():
        for label in ("without", "with"):
            r = pair[label]
            print(f"{model:<12} {label:<8} {r['transposes']:>10} {r['device_time_us']:>11.1f} "
                  f"{r['hbm_traffic_mib']:>9.1f} {r['instructions']:>12} "
                  f"{100 * r['tensor_engine_utilisation']:>7.1f}%")
        speedup = pair["without"]["device_time_us"] / pair["with"]["device_time_us"]
        pair["speedup"] = speedup
        print(f"{model:<12} speedup  {speedup:.2f}x")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        print(f"[layouts] wrote {args.json}")


if __name__ == "__main__":
    main()
