#!/usr/bin/env python3
"""Partitioning one layer of the tutorials' models: time and collectives.

    bench/partition.py [--cases gpt3-23b-tp8,gpt3-175b-tp32,llama3-70b-tp32]
                       [--repeat 3] [--simulate gpt3-23b-tp8] [--json bench-partition.json]

For each case, the unpartitioned graph of one layer at full size is built
once (no weights: shapes only):

- gpt3-23b-tp8: utils/gen_transformer_step.py gpt3-23b --layers 1 (hidden
  8192, 64 heads, ffn 32768, sequence 2048, batch 1, bf16; forward and
  backward of the layer, as a pipeline stage computes it), mesh tp=8;
- gpt3-175b-tp32: the same generator at GPT-3 175B's sizes (hidden 12288, 96
  heads, ffn 49152), mesh tp=32;
- llama3-70b-tp32: examples/llama.py --config llama3-70b --layers 1 traced by
  the frontend on meta tensors (embedding, one layer with grouped-query
  attention over 8 kv heads, LM head over 128,256 words, cross-entropy,
  AdamW; sequence 8192, bf16), mesh tp=32.

Then the partitioning passes trn-cc runs for --mesh (trn-split-batch-dims,
cse, dist-seed, dist-propagate, dist-spmd) are timed with trn-opt (best of
--repeat runs, wall time of the process), and the rank program is compiled
with `trn-cc compile --no-cache` (the rank program's compile time; the
issue's bar is 2 s for partition plus compile). Printed as a table and
written as JSON: times, the collectives of the rank program by kind, and the
bytes one rank sends into them.

--simulate CASES simulates those cases' rank programs (`trn-run --mesh
--mirror-ranks --json`: rank 0, timing only, its peers mirrored: every rank
of the SPMD program runs the same instructions at the same times, so the
figures are the whole mesh's, in seconds instead of the minutes a functional
run of every rank takes) and reports the step's simulated device time, the
time in collectives and the MFU (AWS reports 29.65% for GPT-3 23B on trn1).
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time

from benchlib import build_bin, make_graph
PASSES = ["-trn-split-batch-dims", "-cse"]

CASES = {
    "gpt3-23b-tp8": {
        "build": ["gen", "gpt3-23b", "--layers", "1"],
        "mesh": "tp=8",
    },
    "gpt3-175b-tp32": {
        "build": ["gen", "gpt3-23b", "--layers", "1", "--hidden", "12288",
                  "--heads", "96", "--ffn", "49152"],
        "mesh": "tp=32",
    },
    "llama3-70b-tp32": {
        "build": ["trace", "llama.py", "--config", "llama3-70b", "--layers", "1",
                  "--dtype", "bfloat16"],
        "mesh": "tp=32",
    },
}

BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i64": 8, "i32": 4, "i1": 1}


def collectives(program: str) -> dict:
    """Count and local bytes of every collective in the rank program."""
    stats = {}
    pattern = re.compile(r"= dist\.(all_reduce|all_gather|reduce_scatter|all_to_all|"
                         r"collective_permute|all_slice)\b.*: tensor<([0-9x]*)x?(bf16|f16|f32|i64|i32|i1)>")
    for line in program.splitlines():
        match = pattern.search(line)
        if not match:
            continue
        kind, dims, dtype = match.groups()
        elements = 1
        for dim in filter(None, dims.split("x")):
            elements *= int(dim)
        entry = stats.setdefault(kind, {"count": 0, "bytes": 0})
        entry["count"] += 1
        # A local slice sends nothing.
        if kind != "all_slice":
            entry["bytes"] += elements * BYTES[dtype]
    return stats


def run_case(name: str, bin_dir: pathlib.Path, repeat: int, simulate: bool) -> dict:
    case = CASES[name]
    with tempfile.TemporaryDirectory(prefix="trn-bench-partition-") as tmp:
        work = pathlib.Path(tmp)
        graph = work / "layer.mlir"
        make_graph(case["build"], graph, work)
        part = work / "rank.mlir"
        args = [str(bin_dir / "trn-opt"), str(graph), *PASSES,
                f"-dist-seed=mesh={case['mesh']}", "-dist-propagate", "-dist-spmd",
                "-o", str(part)]
        best = None
        for _ in range(repeat):
            start = time.perf_counter()
            proc = subprocess.run(args, capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            if proc.returncode != 0:
                sys.exit(f"bench: partitioning {name} failed: {proc.stderr.strip()}")
            best = elapsed if best is None else min(best, elapsed)
        program = part.read_text()
        record = {
            "case": name,
            "mesh": case["mesh"],
            "graph_ops": sum(1 for line in graph.read_text().splitlines() if " = trn." in line),
            "partition_seconds": round(best, 4),
            "collectives": collectives(program),
        }
        start = time.perf_counter()
        proc = subprocess.run([str(bin_dir / "trn-cc"), "compile", str(part), "--no-cache",
                               "-o", str(work / "rank.trnx")], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode == 0:
            record["compile_seconds"] = round(elapsed, 3)
            if simulate:
                sim_start = time.perf_counter()
                run = subprocess.run([str(bin_dir / "trn-run"), str(work / "rank.trnx"),
                                      "--mesh", case["mesh"], "--mirror-ranks", "--json"],
                                     capture_output=True, text=True)
                sim_seconds = time.perf_counter() - sim_start
                if run.returncode != 0:
                    sys.exit(f"bench: simulating {name} failed: {run.stderr.strip()}")
                stats = json.loads(run.stdout)
                slowest = max(stats["ranks"], key=lambda r: r["device_time_ns"])
                record["simulated"] = {
                    "device_time_ms": round(stats["device_time_ns"] / 1e6, 3),
                    "communication_ms": round(slowest["communication_ns"] / 1e6, 3),
                    "collective_wait_ms": round(slowest["collective_wait_ns"] / 1e6, 3),
                    "mfu": round(stats["mfu"], 4),
                    "simulation_wall_s": round(sim_seconds, 2),
                }
        else:
            lines = proc.stderr.strip().splitlines()
            record["compile_error"] = lines[0] if lines else f"exit {proc.returncode}"
        return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--simulate", default="",
                        help="cases to run on every rank as well (slow), e.g. gpt3-23b-tp8")
    parser.add_argument("--json", default="bench-partition.json")
    args = parser.parse_args(argv)
    names = [n for n in args.cases.split(",") if n]
    simulate = [n for n in args.simulate.split(",") if n]
    unknown = [n for n in names + simulate if n not in CASES]
    if unknown or args.repeat < 1:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}"
                     if unknown else "--repeat must be at least 1")
    bin_dir = build_bin("trn-opt")
    records = []
    print(f"{'case':<18} {'mesh':<6} {'ops':>5} {'partition s':>12} {'compile s':>10}  collectives "
          "(count, MiB sent per rank)")
    for name in names:
        record = run_case(name, bin_dir, args.repeat, name in simulate)
        records.append(record)
        summary = ", ".join(f"{kind} {s['count']} ({s['bytes'] / 2**20:.0f})"
                            for kind, s in sorted(record["collectives"].items()))
        compile_text = (f"{record['compile_seconds']:.3f}" if "compile_seconds" in record
                        else "failed")
        print(f"{name:<18} {record['mesh']:<6} {record['graph_ops']:>5} "
              f"{record['partition_seconds']:>12.4f} {compile_text:>10}  {summary}", flush=True)
        if "compile_error" in record:
            print(f"  compile: {record['compile_error']}")
        if "simulated" in record:
            sim = record["simulated"]
            print(f"  simulated step: {sim['device_time_ms']:.2f} ms (slowest rank), "
                  f"{sim['communication_ms']:.2f} ms in collectives, MFU {100 * sim['mfu']:.1f}%")
    pathlib.Path(args.json).write_text(json.dumps({"cases": records}, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
