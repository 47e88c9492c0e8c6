#!/usr/bin/env python3
"""Whole training steps on the tutorials' clusters, simulated at their scale.

    bench/cluster_step.py [--configs gpt3-23b-dp32,llama3-70b-dp2,...]
                          [--json bench-cluster-step.json] [--keep DIR]

Each seed configuration as the tutorials and AWS's benchmark table run it:
traced from the example by the frontend (extraction mode: one step on meta
tensors, bf16, one sequence per microbatch), every pipeline stage compiled
cold and alone (`trn-cc compile --no-cache --mesh M --microbatches N --stage
K`, as trn-parallel-compile's workers do), then the whole step simulated on
trn1, timing only, one rank per stage and the others mirrored (`trn-run
STAGES --mesh M --mirror-ranks --json`): every microbatch's forward and
backward, the transfers between stages, the tensor-parallel collectives, the
data-parallel gradient reduction over EFA and the optimizer. The 1F1B steady
state repeats recorded timelines (docs/simulator.md, "Reused timelines").

Per configuration it prints the step time, the cluster's sequences/s, the
split of a rank's step by what runs (matmul, attention, elementwise,
optimizer, data movement, collectives, transfers between stages with their
waits, idle),
the MFU as AWS counts it (model FLOPs: 6 N per token plus causal attention,
6 L S h, no recomputation; over the published 95 bf16 TFLOPS a core for the
step) and as trn-run counts it (every matmul the ranks ran, recomputation
included, over the simulated 91.8 TFLOPS), AWS's figure
and the ratio, the ranks' idle share (pipeline bubbles, waits for transfers
and collectives), one rank's HBM per stage as trn-cc's fit check counts it
(`--analyze --json`: parameters, optimizer state, gradient accumulators,
the stashes in flight, peak intermediates) against a core's 16 GiB, and
the largest compiled forward fragment's layout (a stage's compile report
describes its forward),
the compile time per stage, and the simulation's wall time and peak memory;
the same as JSON.

Configurations, one sequence per microbatch. The rows AWS publishes run a
global batch of 1024 sequences (the table gives it for Llama; for GPT-3 it
does not, but 1024 at GPT-3 23B's dp 32 is issue 31's 32 microbatches and
reproduces AWS's 100 seq/s); the tutorials' smaller clusters run 32
microbatches a replica:

Every tensor-parallel row runs with sequence parallelism (--sequence-parallel,
as NxD and NeMo run these models; AWS's table does not say) and the
compiler's selective recomputation; without sequence parallelism trn's fit
check refuses the GPT-3 plans (stage 0: 23B 16.5 GiB, 46B 21.4, 175B 30.7).

- gpt3-23b-dp4 / -dp32: tp 8, pp 4, 28 layers at hidden 8192, seq 2048;
  AWS 100 seq/s, 29.65% MFU at dp 32 (32 nodes);
- gpt3-46b-dp4 / -dp16: the same at 56 layers, pp 8; AWS 47.2 seq/s, 27.7%
  (dp 16: 64 microbatches);
- gpt3-175b-dp1 / -dp4: 96 layers at hidden 12288, tp 32, pp 8; AWS 12.7
  seq/s, 33.14% at dp 4 (32 nodes; 256 microbatches);
- llama3-70b-dp2 / -dp4: tp 32, pp 8, seq 8192, 1024 sequences a step; AWS
  (Llama 3.1 70B, 32 nodes) 7.94 seq/s. The tutorial's ZeRO-1 is not used
  (the plan fits without it);
- bert-large-dp32 / -dp512: BERT-large phase 1 (seq 128) as AWS's tutorial
  runs it, 16 sequences a core and 32 accumulated micro-steps, no tensor or
  pipeline parallelism, on 1 and 16 nodes; AWS 29.07% (1 node) and 25.83%
  (16 nodes) MFU, no sequences/s published. Gradient accumulation is trn's
  in-step accumulation (--microbatches without --pp: one stage). AWS's table
  does not say how it counts BERT's FLOPs: here 6 N per token plus
  bidirectional attention, 12 L S h per token;
- llama31-8b-dp32: tp 32, dp 32, seq 8192, 32 accumulated microbatches of
  one sequence a replica (1024 a step); AWS (32 nodes) 47.95 seq/s.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time

from benchlib import PYTHON, ROOT, build_bin, extract_graph, selected, write_results

CORES_PER_NODE = 32
#: AWS's MFU is over the published peak: 3,040 bf16 TFLOPS per trn1.32xlarge
#: (neuroncore.md §1), 95 per core. (trn-run's is over the simulated Tensor
#: Engine's 128 x 128 x 2 x 2.8 GHz = 91.8.)
PUBLISHED_PEAK_PER_CORE = 3040e12 / CORES_PER_NODE
GPT3_175B = ["--config", "gpt3-23b", "--layers", "96", "--hidden", "12288", "--heads", "96",
             "--ffn", "49152"]
#: Sequence parallelism, as NxD and NeMo run these models: without it the fit
#: check refuses the GPT-3 plans (stage 0 of 23B needs 16.5 GiB, 46B 21.4,
#: 175B 30.7 against a core's 16). Recomputation is the compiler's selective
#: one (Megatron-LM's: all-gathered activations and attention scores).
SP = ["--sequence-parallel"]

CONFIGS = {
    "gpt3-23b-dp4": {"script": "gpt.py", "args": ["--config", "gpt3-23b"],
                     "mesh": "dp=4,tp=8,pp=4", "microbatches": 32, "flags": SP},
    "gpt3-23b-dp32": {"script": "gpt.py", "args": ["--config", "gpt3-23b"],
                      "mesh": "dp=32,tp=8,pp=4", "microbatches": 32, "flags": SP,
                      "aws": {"seq_per_s": 100.0, "mfu": 0.2965}},
    "gpt3-46b-dp4": {"script": "gpt.py", "args": ["--config", "gpt3-23b", "--layers", "56"],
                     "mesh": "dp=4,tp=8,pp=8", "microbatches": 32, "flags": SP},
    "gpt3-46b-dp16": {"script": "gpt.py", "args": ["--config", "gpt3-23b", "--layers", "56"],
                      "mesh": "dp=16,tp=8,pp=8", "microbatches": 64, "flags": SP,
                      "aws": {"seq_per_s": 47.2, "mfu": 0.277}},
    "gpt3-175b-dp1": {"script": "gpt.py", "args": GPT3_175B,
                      "mesh": "dp=1,tp=32,pp=8", "microbatches": 32, "flags": SP},
    "gpt3-175b-dp4": {"script": "gpt.py", "args": GPT3_175B,
                      "mesh": "dp=4,tp=32,pp=8", "microbatches": 256, "flags": SP,
                      "aws": {"seq_per_s": 12.7, "mfu": 0.3314}},
    "llama3-70b-dp2": {"script": "llama.py", "args": ["--config", "llama3-70b"],
                       "mesh": "dp=2,tp=32,pp=8", "microbatches": 512, "flags": SP},
    "llama3-70b-dp4": {"script": "llama.py", "args": ["--config", "llama3-70b"],
                       "mesh": "dp=4,tp=32,pp=8", "microbatches": 256, "flags": SP,
                       "aws": {"seq_per_s": 7.94}},
    "bert-large-dp32": {"script": "bert.py", "args": ["--config", "bert-large"], "batch": 16,
                        "mesh": "dp=32", "microbatches": 32, "aws": {"mfu": 0.2907}},
    "bert-large-dp512": {"script": "bert.py", "args": ["--config", "bert-large"], "batch": 16,
                         "mesh": "dp=512", "microbatches": 32, "aws": {"mfu": 0.2583}},
    "llama31-8b-dp32": {"script": "llama.py", "args": ["--config", "llama31-8b"],
                        "mesh": "dp=32,tp=32", "microbatches": 32, "flags": SP,
                        "aws": {"seq_per_s": 47.95}},
}


def mesh_degrees(mesh: str) -> dict:
    return {axis: int(size) for axis, size in (part.split("=") for part in mesh.split(","))}


def model_flops_per_sequence(config: dict) -> tuple:
    """(parameters, FLOPs of one sequence's forward and backward) as AWS counts them: 6 N per
    token plus causal attention, 6 L S h per token (neuroncore.md §6.3's derivation); BERT's
    bidirectional attention does twice that."""
    code = (
        "import sys, json, torch\n"
        f"sys.path.insert(0, {str(ROOT / 'examples')!r})\n"
        f"import {config['script'][:-3]} as m, common\n"
        "args = common.parse_args(m.__doc__, m.{cls}Config, m.PRESETS, sys.argv[1:])\n"
        "cfg, batch = common.resolve_config(m.{cls}Config, m.PRESETS, args)\n"
        "with torch.device('meta'):\n"
        "    model = m.{model}(cfg)\n"
        "print(json.dumps({{'params': sum(p.numel() for p in model.parameters()),\n"
        "                  'layers': cfg.layers, 'hidden': cfg.hidden, 'seq': cfg.seq}}))\n")
    names = {"gpt.py": ("GPT", "GPT"), "llama.py": ("Llama", "Llama"),
             "bert.py": ("Bert", "BertForPreTraining")}[config["script"]]
    code = code.format(cls=names[0], model=names[1])
    out = subprocess.run([PYTHON, "-c", code, *config["args"]], check=True, capture_output=True,
                         text=True).stdout
    shape = json.loads(out)
    tokens = shape["seq"]
    attention = 12 if config["script"] == "bert.py" else 6
    flops = (6 * shape["params"] * tokens
             + attention * shape["layers"] * tokens * tokens * shape["hidden"])
    return shape["params"], flops


def simulate(bin_dir: pathlib.Path, mesh: str, artifacts: list) -> dict:
    args = ["/usr/bin/time", "-f", "TRN_BENCH_MAXRSS_KB %M", str(bin_dir / "trn-run"),
            *map(str, artifacts), "--mesh", mesh, "--mirror-ranks", "--json"]
    start = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - start
    peak_kb = next((int(line.split()[1]) for line in proc.stderr.splitlines()
                    if line.startswith("TRN_BENCH_MAXRSS_KB")), 0)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines()
                 if not line.startswith("TRN_BENCH_MAXRSS_KB")]
        return {"error": (lines or ["trn-run failed"])[-1][:300]}
    report = json.loads(proc.stdout)
    return {"report": report, "simulation_wall_s": round(wall, 1),
            "simulation_peak_gib": round(peak_kb / (1 << 20), 2)}


def stage_footprints(bin_dir: pathlib.Path, graph: pathlib.Path, config: dict) -> dict:
    """One rank's HBM per stage as trn-cc's fit check counts it (`--analyze --json`: parameters,
    optimizer state, gradient accumulators, the stashes of the microbatches in flight and the
    peak of intermediates), or the check's one-line refusal."""
    args = [str(bin_dir / "trn-cc"), "--analyze", str(graph), "--mesh", config["mesh"],
            "--microbatches", str(config["microbatches"]), *config.get("flags", []), "--json"]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        # A plan over a core's HBM by the check's count is still simulated,
        # and said to be over (the count of intermediates is an upper bound).
        message = (proc.stderr.strip().splitlines() or ["?"])[-1]
        over = re.search(r"does not fit: stage \d+'s rank needs ([0-9.]+) GiB", message)
        if not over:
            return {"error": message[:300]}
        return {"stage_hbm_gib": [float(over.group(1))], "fits": False,
                "fit_check": message[:300]}
    stages = json.loads(proc.stdout)["mesh_hbm"]["stages"]
    return {"stage_hbm_gib": [round(s["total_bytes"] / (1 << 30), 2) for s in stages],
            "fits": True}


def compile_stage(bin_dir: pathlib.Path, graph: pathlib.Path, config: dict, stage: int,
                  out: pathlib.Path) -> dict:
    report = out.with_suffix(".report.json")
    # Without pp the microbatches accumulate in one stage (no --stage).
    staged = ["--stage", str(stage)] if mesh_degrees(config["mesh"]).get("pp", 1) > 1 else []
    args = [str(bin_dir / "trn-cc"), "compile", str(graph), "--no-cache", "--mesh",
            config["mesh"], "--microbatches", str(config["microbatches"]), *staged,
            *config.get("flags", []), "-o", str(out), "--report", str(report), "-q"]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"stage": stage, "error": (proc.stderr.strip().splitlines() or ["?"])[-1][:300]}
    data = json.loads(report.read_text())
    return {"stage": stage, "compile_s": round(data["compile_seconds"], 2),
            "hbm_gib": round(data["hbm_bytes"] / (1 << 30), 2),
            "peak_compile_memory_gib": round(data["peak_memory_bytes"] / (1 << 30), 2)}


def run_config(bin_dir: pathlib.Path, name: str, config: dict, work: pathlib.Path) -> dict:
    result = {"config": name}
    degrees = mesh_degrees(config["mesh"])
    cores = degrees.get("dp", 1) * degrees.get("tp", 1) * degrees.get("pp", 1)
    result.update({"mesh": config["mesh"], "microbatches": config["microbatches"],
                   "nodes": cores // CORES_PER_NODE, "flags": config.get("flags", [])})
    start = time.monotonic()
    batch = config.get("batch", 1)
    graph = extract_graph([PYTHON, str(ROOT / "examples" / config["script"]), *config["args"],
                           "--dtype", "bfloat16", "--batch", str(batch), "--device", "trn",
                           "--steps", "1", "--quiet"], work)
    result["trace_s"] = round(time.monotonic() - start, 1)
    params, flops_per_sequence = model_flops_per_sequence(config)
    result["parameters"] = params
    fit = stage_footprints(bin_dir, graph, config)
    if "error" in fit:
        result["error"] = fit["error"]
        return result
    result.update(fit)
    stages, artifacts = [], []
    pp = degrees.get("pp", 1)
    for stage in range(pp):
        artifacts.append(work / f"s{stage}.trnart")
        stages.append(compile_stage(bin_dir, graph, config, stage, artifacts[-1]))
        print(f"{name} stage {stage}: {stages[-1]}", file=sys.stderr, flush=True)
    result["stages"] = stages
    if any("error" in row for row in stages):
        result["error"] = next(row["error"] for row in stages if "error" in row)
        return result
    simulated = simulate(bin_dir, config["mesh"], artifacts)
    if "error" in simulated:
        result["error"] = simulated["error"]
        return result
    report = simulated.pop("report")
    result.update(simulated)
    step_s = report["step_time_ns"] / 1e9
    sequences = degrees.get("dp", 1) * config["microbatches"] * batch
    model_flops = flops_per_sequence * sequences
    result.update({
        "step_s": round(step_s, 3),
        "sequences": sequences,
        "seq_per_s": round(sequences / step_s, 3),
        "model_mfu": round(model_flops / (step_s * cores * PUBLISHED_PEAK_PER_CORE), 4),
        "executed_mfu": round(report["mfu"], 4),
        "idle_fraction": round(report["idle_fraction"], 4),
        "ideal_1f1b_bubble": round((pp - 1) / (config["microbatches"] + pp - 1), 4),
        "time_by_kind": {kind: round(share, 4)
                         for kind, share in report.get("time_by_kind", {}).items()},
        "fragment_runs": report.get("fragment_runs"),
        "fragment_runs_replayed": report.get("fragment_runs_replayed"),
        "max_stage_hbm_gib": max(fit["stage_hbm_gib"]),
        "max_forward_fragment_hbm_gib": max(row["hbm_gib"] for row in stages),
        "max_stage_compile_s": max(row["compile_s"] for row in stages),
    })
    aws = config.get("aws")
    if aws:
        result["aws"] = aws
        # AWS gives BERT's MFU alone: at the same cluster, the same ratio.
        ratio = (result["seq_per_s"] / aws["seq_per_s"] if "seq_per_s" in aws
                 else result["model_mfu"] / aws["mfu"])
        result["ratio_to_aws"] = round(ratio, 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--json", default="bench-cluster-step.json")
    parser.add_argument("--keep", metavar="DIR", type=pathlib.Path,
                        help="keep each configuration's graph and stage artifacts in DIR/<name> "
                             "(to profile them with trn-run)")
    options = parser.parse_args()
    names = selected(options.configs, CONFIGS, "configuration")
    bin_dir = build_bin()
    results = []
    for name in names:
        if options.keep:
            work = options.keep / name
            work.mkdir(parents=True, exist_ok=True)
            results.append(run_config(bin_dir, name, CONFIGS[name], work))
        else:
            with tempfile.TemporaryDirectory(prefix="trn-bench-cluster-") as tmp:
                results.append(run_config(bin_dir, name, CONFIGS[name], pathlib.Path(tmp)))
        print(f"{name}: {json.dumps({k: v for k, v in results[-1].items() if k != 'stages'})}",
              file=sys.stderr, flush=True)
    print(f"{'configuration':<17} {'nodes':>5} {'mb':>4} {'step s':>7} {'seq/s':>7} "
          f"{'AWS':>6} {'ratio':>6} {'MFU':>6} {'exec':>6} {'idle':>6} {'HBM GiB':>7} "
          f"{'cc s':>5} {'sim s':>6} {'sim GiB':>7}")
    for r in results:
        if "error" in r:
            print(f"{r['config']:<17} not run: {r['error']}")
            continue
        # AWS's seq/s, or its MFU where it gives only that (BERT).
        aws = r.get("aws", {})
        aws_text = (f"{aws['seq_per_s']}" if "seq_per_s" in aws
                    else f"{100 * aws['mfu']:.1f}%" if "mfu" in aws else "-")
        print(f"{r['config']:<17} {r['nodes']:>5} {r['microbatches']:>4} {r['step_s']:>7.2f} "
              f"{r['seq_per_s']:>7.2f} {aws_text:>6} "
              f"{r.get('ratio_to_aws', '-'):>6} {100 * r['model_mfu']:>5.1f}% "
              f"{100 * r['executed_mfu']:>5.1f}% {100 * r['idle_fraction']:>5.1f}% "
              f"{r['max_stage_hbm_gib']:>6.2f}{'' if r['fits'] else '!'} "
              f"{r['max_stage_compile_s']:>5.1f} "
              f"{r['simulation_wall_s']:>6.1f} {r['simulation_peak_gib']:>7.2f}")
    print("(!: over a core's 16 GiB by trn-cc's fit check, an upper bound: it counts "
          "every value a fragment's graph keeps alive at once)")
    print("\nwhere a rank's step goes (every simulated rank's time, by what runs; transfer: "
          "send and recv between stages with their waits; idle: between instructions)")
    for r in results:
        if "time_by_kind" in r:
            split = ", ".join(f"{kind} {100 * share:.1f}%"
                              for kind, share in r["time_by_kind"].items() if share >= 0.0005)
            print(f"  {r['config']:<17} {split}")
    write_results(options.json, results)


if __name__ == "__main__":
    main()
