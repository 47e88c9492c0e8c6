#!/usr/bin/env python3
"""Compile time and peak memory of whole training-step graphs (design brief
bars: a BERT-large training step and a GPT-3-23B layer stack, <= 10 s each on
the 2-core build machine).

    bench/compile_time.py [--models bert-large,gpt3-23b] [--bert-layers 24]
                          [--gpt-layers 2] [--gpt-tp 8] [--repeat 1] [--timeout 1800]
                          [--memory-limit-gib 20] [--keep DIR]
                          [--json out.json] [--build build]

For each model, utils/gen_transformer_step.py writes the graph (see its help
for what the graphs hold; the GPT stack is by default one rank's share at
TP=8, the design brief's per-stage bar, without the collectives), then `trn-cc compile GRAPH -o OUT --no-cache
--timing` compiles it under GNU time (/usr/bin/time), which gives its CPU
time and peak resident memory (max RSS); the wall time is measured here. trn-cc's
--timing report gives the time of every phase and pass and the size of the
kernel (nc ops, instructions, HBM). With --repeat N, each graph is compiled N
times and the run with the median wall time (the lower middle one for an even N)
is reported, with the minimum and maximum.

A compile that fails (for example a program larger than the core's HBM) is
reported with its error and the time it took to get there: it still counts
against the bar.
"""
import argparse
import json
import os
import pathlib
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET_SECONDS = 10.0
TIMING_LINE = re.compile(r"^\s+(\d+\.\d+) \(\s*[\d.]+%\)  ( *)(\S.*)$")
KERNEL_LINE = re.compile(
    r"kernel of (\d+) nc ops, (\d+) instructions \(tensor (\d+), vector (\d+), "
    r"scalar (\d+), gpsimd (\d+), sync (\d+), dma (\d+)\), HBM (\d+) B")


def parse_timing(stderr):
    """The --timing tree as [{"name", "seconds", "depth"}], without Rest/Total."""
    phases, in_report = [], False
    for line in stderr.splitlines():
        if "Execution time report" in line:
            in_report = True
            continue
        m = TIMING_LINE.match(line) if in_report else None
        if not m:
            continue
        name = m.group(3).strip()
        if name in ("Rest", "Total"):
            continue
        phases.append({"name": name, "seconds": float(m.group(1)),
                       "depth": len(m.group(2)) // 2})
    return phases


def parse_kernel(stderr):
    m = KERNEL_LINE.search(stderr)
    if not m:
        return None
    v = [int(x) for x in m.groups()]
    return {"nc_ops": v[0], "instructions": v[1], "tensor": v[2], "vector": v[3],
            "scalar": v[4], "gpsimd": v[5], "sync": v[6], "dma": v[7], "hbm_bytes": v[8]}


def measure(trn_cc, graph, out, timeout, memory_limit):
    """One compile under GNU time (wall, user and system time, and the
    child's own peak RSS); memory_limit (bytes, 0 for none) caps its address
    space."""
    def limit():
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    with tempfile.NamedTemporaryFile("r", suffix=".time") as usage:
        start = time.perf_counter()
        try:
            proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", usage.name,
                                   str(trn_cc), "compile", str(graph), "-o", str(out),
                                   "--no-cache", "--timing"], capture_output=True, text=True,
                                  timeout=timeout, preexec_fn=limit)
            code, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as e:
            code, stderr = -1, (e.stderr or b"").decode() + f"\nbench: error: killed after {timeout} s"
        wall = time.perf_counter() - start
        fields = usage.read().split()[-3:]
    user, system, rss_kib = (float(fields[0]), float(fields[1]), int(fields[2])) \
        if len(fields) == 3 else (None, None, None)
    error = ""
    if code != 0:
        lines = [line for line in stderr.splitlines() if "error" in line]
        error = lines[0] if lines else f"exit status {code}"
    return {
        "exit_status": code,
        "error": error,
        "wall_seconds": wall,
        "user_seconds": user,
        "system_seconds": system,
        "peak_rss_bytes": rss_kib * 1024 if rss_kib is not None else None,
        "phases": parse_timing(stderr),
        "kernel": parse_kernel(stderr),
        "artifact_bytes": out.stat().st_size if code == 0 and out.exists() else None,
    }


def pass_rows(phases):
    """(indented name, seconds) for the table."""
    return [("  " * p["depth"] + p["name"], p["seconds"]) for p in phases]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="bert-large,gpt3-23b")
    parser.add_argument("--bert-layers", type=int, default=24)
    parser.add_argument("--gpt-layers", type=int, default=2)
    parser.add_argument("--gpt-tp", type=int, default=8,
                        help="tensor-parallel degree of the GPT stack: one rank's share of "
                             "every layer (1: the whole layer)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds before a compile is killed")
    parser.add_argument("--memory-limit-gib", type=float, default=20.0,
                        help="address-space limit of trn-cc (0: none), to keep a runaway "
                             "compile from taking the machine down")
    parser.add_argument("--keep", help="keep the graphs and artifacts in this directory")
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    trn_cc = pathlib.Path(args.build) / "bin" / "trn-cc"
    if not trn_cc.exists():
        sys.exit(f"compile_time.py: {trn_cc} not found (build first, or pass --build)")
    work = pathlib.Path(args.keep) if args.keep else pathlib.Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    layers = {"bert-large": args.bert_layers, "gpt3-23b": args.gpt_layers}
    results = []
    try:
        for model in args.models.split(","):
            if model not in layers:
                sys.exit(f"compile_time.py: unknown model '{model}' (bert-large, gpt3-23b)")
            graph = work / f"{model}.mlir"
            start = time.perf_counter()
            extra = ["--tp", str(args.gpt_tp)] if model == "gpt3-23b" else []
            subprocess.run([sys.executable, str(ROOT / "utils" / "gen_transformer_step.py"),
                            model, "--layers", str(layers[model]), "-o", str(graph)] + extra,
                           check=True)
            generate_seconds = time.perf_counter() - start
            header = graph.open().readline().strip()
            trn_ops = int(re.search(r"; (\d+) trn ops", header).group(1))
            limit = int(args.memory_limit_gib * 2**30)
            runs = [measure(trn_cc, graph, work / f"{model}.trnart", args.timeout, limit)
                    for _ in range(args.repeat)]
            walls = sorted(r["wall_seconds"] for r in runs)
            median = sorted(runs, key=lambda r: r["wall_seconds"])[(len(runs) - 1) // 2]
            results.append({
                "model": model, "layers": layers[model], "graph": header[3:],
                "graph_bytes": graph.stat().st_size, "trn_ops": trn_ops,
                "generate_seconds": generate_seconds, "runs": len(runs),
                "wall_seconds_min": walls[0], "wall_seconds_max": walls[-1],
                "wall_seconds_median": statistics.median(walls),
                "target_seconds": TARGET_SECONDS, **median})
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    for r in results:
        k = r["kernel"] or {}
        ok = r["exit_status"] == 0
        rows = [
            ("graph", f"{r['trn_ops']} trn ops, {r['graph_bytes'] / 2**20:.2f} MiB of MLIR"),
            ("status", "compiled" if ok else "FAILED: " + r["error"]),
            ("wall time (s)", f"{r['wall_seconds']:.2f}" + (
                f" (median run of {r['runs']}; min {r['wall_seconds_min']:.2f}, "
                f"max {r['wall_seconds_max']:.2f})" if r["runs"] > 1 else "")),
            ("user + system CPU (s)", f"{r['user_seconds']:.2f} + {r['system_seconds']:.2f}"),
            ("peak RSS (MiB)", f"{r['peak_rss_bytes'] / 2**20:.0f}"),
            ("target", f"<= {TARGET_SECONDS:.0f} s: "
                       + ("met" if ok and r["wall_seconds"] <= TARGET_SECONDS else "not met")),
        ]
        if k:
            rows += [("nc ops in the kernel", str(k["nc_ops"])),
                     ("instructions", f"{k['instructions']} (tensor {k['tensor']}, vector "
                                      f"{k['vector']}, scalar {k['scalar']}, gpsimd "
                                      f"{k['gpsimd']}, dma {k['dma']})"),
                     ("HBM laid out (GiB)", f"{k['hbm_bytes'] / 2**30:.2f}")]
        if r["artifact_bytes"]:
            rows.append(("artifact (MiB)", f"{r['artifact_bytes'] / 2**20:.1f}"))
        rows += [(name, f"{sec:.3f}") for name, sec in pass_rows(r["phases"])]
        width = max(len(name) for name, _ in rows)
        print(f"{r['model']}, {r['layers']} layers: {r['graph']}")
        for name, value in rows:
            print(f"  {name:<{width}}  {value}")
        print()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"benchmark": "compile_time", "machine": os.uname().nodename, "cpus": os.cpu_count(),
             "results": results}, indent=2) + "\n")
    return 0 if all(r["exit_status"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
