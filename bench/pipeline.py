#!/usr/bin/env python3
"""Pipeline stages of the tutorials' models: per-stage compile time.

    bench/pipeline.py [--cases gpt3-23b,gpt3-23b-recompute,gpt3-46b,gpt3-175b,llama3-70b,bert-large]
                      [--stages all|0,3] [--simulate gpt3-23b]
                      [--json bench-pipeline.json]

Each model is traced once, whole, by the frontend on meta tensors (bf16,
batch 1, a microbatch of one data-parallel replica, unless said), then every stage
is compiled cold and alone, as trn-parallel-compile or a cluster's nodes
would: `trn-cc compile --no-cache --mesh ... --microbatches M --stage K`
(the partitioner cuts the whole step, then only stage K's forward, backward
and update fragments are lowered). The configurations are AWS's tutorials':

- gpt3-23b: 28 layers, hidden 8192, 64 heads, sequence 2048; tp=8, pp=4;
- gpt3-23b-recompute: the same with --recompute-activations (its MFU is also
  given over gpt3-23b's matmul FLOPs, the model's, when both are simulated);
- gpt3-46b: the same at 56 layers; tp=8, pp=8;
- gpt3-175b: 96 layers, hidden 12288, 96 heads, ffn 49152; tp=32, pp=8;
- llama3-70b: 80 layers, hidden 8192, 64 heads over 8 kv heads, sequence
  8192; dp=2, tp=32, pp=8, with --recompute-activations --sequence-parallel
  (the tutorial's settings);
- bert-large: 24 layers, hidden 1024, sequence 128, 16 per replica; dp=2 only
  (one program).

--simulate CASES then runs those cases' stages (every stage must have been
compiled: --stages all) on the simulated trn1, timing only, one simulated
rank per stage and the others mirrored (`trn-run STAGES... --mesh M
--mirror-ranks --json`; exact for SPMD ranks, docs/simulator.md): the step
time (slowest rank), the share of the ranks' time not computing (pipeline
bubbles, transfers, collectives) and the MFU (matmul FLOPs of every rank
over the ranks' bf16 peak for the step time), next to the ideal 1F1B bubble
(p - 1) / (m + p - 1).

Printed as a table (trace time; per stage: wall time of the trn-cc process,
the compile time trn-cc reports, peak memory) and written as JSON. The bar
is 10 s per stage. A stage that does not fit a NeuronCore's 16 GiB is
reported with trn-cc's one-line error.
"""
import argparse
import json
import pathlib
import re
import resource
import subprocess
import sys
import tempfile
import time

from benchlib import PYTHON, ROOT, build_bin, extract_graph, write_results

CASES = {
    "gpt3-23b": {"script": "gpt.py", "args": ["--config", "gpt3-23b"],
                 "mesh": "tp=8,pp=4", "microbatches": 8},
    # The same with activation recomputation (--recompute-activations): its
    # MFU is also given against the model's FLOPs (gpt3-23b's, which does not
    # recompute), as Megatron and AWS count it.
    "gpt3-23b-recompute": {"script": "gpt.py", "args": ["--config", "gpt3-23b"],
                           "mesh": "tp=8,pp=4", "microbatches": 8,
                           "flags": ["--recompute-activations"], "model_of": "gpt3-23b"},
    "gpt3-46b": {"script": "gpt.py", "args": ["--config", "gpt3-23b", "--layers", "56"],
                 "mesh": "tp=8,pp=8", "microbatches": 8},
    "gpt3-175b": {"script": "gpt.py",
                  "args": ["--config", "gpt3-23b", "--layers", "96", "--hidden", "12288",
                           "--heads", "96", "--ffn", "49152"],
                  "mesh": "tp=32,pp=8", "microbatches": 8},
    # As the tutorial runs it: activation recomputation and sequence
    # parallelism (without them no stage fits a core's 16 GiB).
    "llama3-70b": {"script": "llama.py", "args": ["--config", "llama3-70b"],
                   "mesh": "dp=2,tp=32,pp=8", "microbatches": 8,
                   "flags": ["--recompute-activations", "--sequence-parallel"]},
    # AWS's phase-1 micro-batch of 16 per replica.
    "bert-large": {"script": "bert.py", "args": ["--config", "bert-large"],
                   "mesh": "dp=2", "microbatches": 1, "batch": 16},
}


def trace(case: dict, work: pathlib.Path) -> tuple:
    start = time.monotonic()
    module = extract_graph([PYTHON, str(ROOT / "examples" / case["script"]), *case["args"],
                            "--dtype", "bfloat16", "--batch", str(case.get("batch", 1)),
                            "--device", "trn", "--steps", "1", "--quiet"], work)
    return module, time.monotonic() - start


def compile_stage(bin_dir: pathlib.Path, graph: pathlib.Path, case: dict,
                  stage, out: pathlib.Path) -> dict:
    args = [str(bin_dir / "trn-cc"), "compile", str(graph), "--no-cache",
            "--mesh", case["mesh"], "-o", str(out)]
    if stage is not None:
        args += ["--microbatches", str(case["microbatches"]), "--stage", str(stage)]
    args += case.get("flags", [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    row = {"stage": stage, "wall_s": round(wall, 2),
           # ru_maxrss of all children so far: a lower bound for this one
           # only when it is the largest yet.
           "peak_rss_gib": round(max(peak, before) / (1 << 20), 2)}
    # trn-cc's times: "850.0 ms", "12.34 s", "4m05s", "2h03m".
    match = re.search(r"compiled \S+ in (?:([0-9.]+) (ms|s)|(\d+)([mh])(\d+)[sm])",
                      proc.stdout + proc.stderr)
    if match and match.group(1):
        value = float(match.group(1))
        row["compile_s"] = round(value / 1000 if match.group(2) == "ms" else value, 2)
    elif match:
        unit = 60 if match.group(4) == "m" else 3600
        row["compile_s"] = int(match.group(3)) * unit + int(match.group(5)) * unit / 60
    if proc.returncode != 0:
        row["error"] = proc.stderr.strip().splitlines()[-1][:300]
    elif out.exists():
        row["artifact_mib"] = round(out.stat().st_size / (1 << 20), 1)
    return row


def simulate(bin_dir: pathlib.Path, case: dict, artifacts: list) -> dict:
    start = time.monotonic()
    proc = subprocess.run([str(bin_dir / "trn-run"), *map(str, artifacts),
                           "--mesh", case["mesh"], "--mirror-ranks", "--json"],
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1][:300]}
    report = json.loads(proc.stdout)
    stages, microbatches = report["stages"], report["microbatches"]
    return {"step_time_ms": round(report["step_time_ns"] / 1e6, 2),
            "idle_fraction": round(report["idle_fraction"], 4),
            "ideal_1f1b_bubble": round((stages - 1) / (microbatches + stages - 1), 4),
            "mfu": round(report["mfu"], 4),
            "matmul_tflop_per_rank": round(report["matmul_flops_per_rank"] / 1e12, 2),
            "ranks_simulated": report["ranks_simulated"],
            "simulation_wall_s": round(wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--stages", default="all",
                        help="all, or a comma list of stage indices")
    parser.add_argument("--simulate", default="",
                        help="comma list of cases whose step to simulate (timing only)")
    parser.add_argument("--json", default="bench-pipeline.json")
    options = parser.parse_args()
    for name in [n for n in options.simulate.split(",") if n]:
        if name not in options.cases.split(","):
            sys.exit(f"bench: --simulate {name} needs the case in --cases")
        if options.stages != "all":
            sys.exit("bench: --simulate needs every stage compiled (--stages all)")
    bin_dir = build_bin()
    results = []
    for name in options.cases.split(","):
        case = CASES[name]
        with tempfile.TemporaryDirectory(prefix="trn-bench-pipeline-") as tmp:
            work = pathlib.Path(tmp)
            graph, traced = trace(case, work)
            pp = int(dict(a.split("=") for a in case["mesh"].split(",")).get("pp", "1"))
            stages = list(range(pp)) if options.stages == "all" else [
                int(s) for s in options.stages.split(",") if int(s) < pp]
            rows, artifacts = [], []
            for stage in (stages if pp > 1 else [None]):
                artifacts.append(work / f"stage{stage}.trnart")
                row = compile_stage(bin_dir, graph, case, stage, artifacts[-1])
                rows.append(row)
                print(f"{name} stage {stage}: {row}", file=sys.stderr, flush=True)
            result = {"case": name, "mesh": case["mesh"],
                      "microbatches": case["microbatches"],
                      "trace_s": round(traced, 2), "stages": rows}
            if name in options.simulate.split(",") and pp == 1:
                sys.exit(f"bench: --simulate {name}: not a pipelined case")
            if name in options.simulate.split(","):
                result["simulated"] = simulate(bin_dir, case, artifacts)
                print(f"{name} simulated: {result['simulated']}", file=sys.stderr,
                      flush=True)
            results.append(result)
    print(f"{'case':<12} {'mesh':<17} {'trace s':>8} {'stage':>5} {'wall s':>7} "
          f"{'compile s':>9}  note")
    for result in results:
        for row in result["stages"]:
            stage = "-" if row["stage"] is None else str(row["stage"])
            print(f"{result['case']:<12} {result['mesh']:<17} {result['trace_s']:>8.2f} "
                  f"{stage:>5} {row['wall_s']:>7.2f} {row.get('compile_s', 0):>9.2f}  "
                  f"{row.get('error', '')}")
    by_case = {r["case"]: r for r in results}
    for result in results:
        sim = result.get("simulated")
        twin = by_case.get(CASES[result["case"]].get("model_of", ""), {}).get("simulated")
        if sim and twin and "error" not in sim and "error" not in twin:
            # The same utilisation over the model's FLOPs (without recomputation).
            sim["model_mfu"] = round(sim["mfu"] * twin["matmul_tflop_per_rank"]
                                     / sim["matmul_tflop_per_rank"], 4)
    for result in results:
        sim = result.get("simulated")
        if not sim:
            continue
        if "error" in sim:
            print(f"{result['case']} simulated step: {sim['error']}")
            continue
        print(f"{result['case']} simulated step ({result['mesh']}, {result['microbatches']} "
              f"microbatches, 1F1B): {sim['step_time_ms']:.1f} ms, idle "
              f"{100 * sim['idle_fraction']:.1f}% (ideal 1F1B bubble "
              f"{100 * sim['ideal_1f1b_bubble']:.1f}%), MFU {100 * sim['mfu']:.1f}%"
              + (f" ({100 * sim['model_mfu']:.1f}% of the model's FLOPs)"
                 if "model_mfu" in sim else "") + "; "
              f"{sim['ranks_simulated']} ranks simulated in {sim['simulation_wall_s']} s")
    write_results(options.json, results)


if __name__ == "__main__":
    main()
