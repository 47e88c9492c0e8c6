#!/usr/bin/env python3
"""trn-parallel-compile: cold and warm collect-and-compile against one-by-one trn-cc.

    bench/parallel_compile.py [--cases gpt,bert,llama,transformer_encoder,bert-large]
                              [--grad-accum 2] [-j N] [--json bench-parallel-compile.json]

For each case (an example script and its arguments, all with --device trn):

- cold: `trn-parallel-compile --cache-dir <fresh> -- <command>`: collect (the
  script in extraction mode) then compile every graph in parallel workers;
  wall time of the whole command, and the time of its compile phase from its
  --json (`wall_seconds`).
- warm: the same command again on the filled cache: collect, find every
  graph cached, compile nothing.
- one by one: each graph the cold run collected compiled with `trn-cc compile
  GRAPH --cache-only --cache-dir <another fresh cache>`, one after the other
  (what a user without the tool, or a single worker, waits for), summed.

`--grad-accum 2` gives each small example two graphs (the micro-step and the
update step), so that there is something to run in parallel; bert-large is
the AWS BERT-large phase-1 shape (--config bert-large: its micro-step and
update graphs, traced on meta tensors). The machine's cores bound the
parallel speed-up.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from benchlib import PYTHON
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

CASES = {
    "gpt": ["gpt.py"],
    "bert": ["bert.py"],
    "llama": ["llama.py"],
    "transformer_encoder": ["transformer_encoder.py"],
    "bert-large": ["bert.py", "--config", "bert-large"],
}


def build_bin() -> pathlib.Path:
    for candidate in (os.environ.get("TRN_BUILD_DIR"), ROOT / "build"):
        if candidate and (pathlib.Path(candidate) / "bin" / "trn-parallel-compile").exists():
            return pathlib.Path(candidate) / "bin"
    sys.exit("bench: build/bin/trn-parallel-compile not found; run utils/setup.sh")


def timed(args, **kwargs):
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, **kwargs)
    return time.perf_counter() - start, proc


def run_case(name: str, bin_dir: pathlib.Path, grad_accum: int, jobs: int) -> dict:
    script, *extra = CASES[name]
    command = [PYTHON, str(EXAMPLES / script), *extra, "--device", "trn", "--steps", "20"]
    if grad_accum > 1:
        command += ["--grad-accum", str(grad_accum)]
    tool = [str(bin_dir / "trn-parallel-compile"), "-q"] + (["-j", str(jobs)] if jobs else [])
    env = dict(os.environ)
    env.pop("TRN_CC_FLAGS", None)
    with tempfile.TemporaryDirectory(prefix="bench-pc-") as tmp:
        tmp = pathlib.Path(tmp)
        common = ["--cache-dir", str(tmp / "cache"), "--workdir", str(tmp / "work")]
        cold_s, cold = timed(tool + common + ["--json", str(tmp / "cold.json"), "--", *command],
                             env=env)
        if cold.returncode != 0:
            return {"case": name, "error": (cold.stderr or cold.stdout)[-600:]}
        cold_report = json.loads((tmp / "cold.json").read_text())
        warm_s, warm = timed(tool + common + ["--json", str(tmp / "warm.json"), "--", *command],
                             env=env)
        warm_report = json.loads((tmp / "warm.json").read_text())
        one_by_one = 0.0
        for graph in cold_report["graphs"]:
            seconds, proc = timed([str(bin_dir / "trn-cc"), "compile", graph["graph"],
                                   "--cache-only", "--cache-dir", str(tmp / "serial"), "-q"],
                                  env=env)
            if proc.returncode != 0:
                return {"case": name, "error": proc.stderr[-600:]}
            one_by_one += seconds
        return {
            "case": name,
            "graphs": len(cold_report["graphs"]),
            "cold_seconds": cold_s,
            "cold_compile_phase_seconds": cold_report["summary"]["wall_seconds"],
            "cold_compiled": cold_report["summary"]["compiled"],
            "warm_seconds": warm_s,
            "warm_cached": warm_report["summary"]["cached"],
            "warm_compiled": warm_report["summary"]["compiled"],
            "one_by_one_seconds": one_by_one,
            "peak_worker_memory_bytes": max(g["peak_memory_bytes"] for g in cold_report["graphs"]),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--grad-accum", type=int, default=2)
    parser.add_argument("-j", type=int, default=0, help="workers (default: the tool's)")
    parser.add_argument("--json", default="bench-parallel-compile.json")
    args = parser.parse_args()
    bin_dir = build_bin()
    results = []
    for name in args.cases.split(","):
        if name not in CASES:
            sys.exit(f"bench: unknown case {name!r}; one of {', '.join(CASES)}")
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        results.append(run_case(name, bin_dir, args.grad_accum, args.j))

    header = (f"{'case':<20} {'graphs':>6} {'cold':>9} {'compile':>9} {'warm':>8} "
              f"{'one by one':>11} {'speed-up':>9} {'worker peak':>12}")
    print(header)
    print("-" * len(header))
    for r in results:
        if "error" in r:
            print(f"{r['case']:<20} error: {r['error'].strip().splitlines()[-1]}")
            continue
        speedup = r["one_by_one_seconds"] / r["cold_compile_phase_seconds"]
        print(f"{r['case']:<20} {r['graphs']:>6} {r['cold_seconds']:>8.2f}s "
              f"{r['cold_compile_phase_seconds']:>8.2f}s {r['warm_seconds']:>7.2f}s "
              f"{r['one_by_one_seconds']:>10.2f}s {speedup:>8.2f}x "
              f"{r['peak_worker_memory_bytes'] / 2**20:>9.0f} MiB")
    print("cold: the whole command (collect + compile); compile: its compile phase; warm: again on "
          "the filled cache; one by one: trn-cc per graph, sequentially; speed-up: one by one / "
          "compile phase")
    pathlib.Path(args.json).write_text(json.dumps({"cpus": os.cpu_count(), "results": results},
                                                  indent=2) + "\n")
    print(f"bench: wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
