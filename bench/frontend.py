#!/usr/bin/env python3
"""The PyTorch frontend: preset tracing time, example steps on the simulator vs PyTorch CPU.

Tracing time of the full-size presets, and training steps of the small
examples on the simulator against eager PyTorch on the CPU.

    bench/frontend.py [--presets bert,gpt,llama] [--layers N]
                      [--examples gpt,bert,llama,transformer_encoder] [--steps 20]
                      [--timeout 900] [--python .venv/bin/python] [--json bench-frontend.json]

(a) Presets. Runs `examples/bert.py --config bert-large`, `examples/gpt.py
--config gpt3-23b` and `examples/llama.py --config llama3-70b` with `--device
trn` in extraction mode (TRN_EXTRACT_GRAPHS_ONLY=1, TRN_GRAPH_MANIFEST in a
temporary directory, TRN_EXTRACT_MAX_STEPS=1): the model is built on the meta
device and its first training step (forward and backward recorded on meta
tensors, the AdamW update written as trn ops) is translated to a `trn`
graph, which is written but not compiled. Reports the manifest's
`trace_seconds` (tracing and translation,
target <= 5 s) and `ops`, the size of the graph file and the wall time of the
whole process (Python and torch start-up, building the model, tracing,
translating, hashing the graph for its cache key). `--layers N` passes
`--layers N` to every preset (when a full preset takes too long); the table
then says which layer count was traced. A preset that fails or times out is
reported with its error.

(b) Small examples. Runs each example (default `small` config, default
`--steps 20`, AdamW) once with `--device cpu` (eager PyTorch) and once with
`--device trn` (traced, compiled through a fresh, empty compile cache in a
temporary directory, run on the simulated NeuronCore). The examples print one
line per step (flushed); the time between consecutive step lines, from the
second step on, is the wall time per step on either device (on trn it
includes uploading the batch, simulating, reading the loss and, with the
default sync="step", copying parameters and optimizer state back into the
module). The first step on trn also traces, translates and compiles; it is
reported apart. The simulated device time and the other device statistics are
those of the last step, from the example's `--stats-out FILE`. The losses
printed on both devices are compared step by step.

Only one example runs at a time (the bench itself imports neither torch nor trn).
"""
import argparse
import ast
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import PYTHON

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TRACE_TARGET_SECONDS = 5.0
PRESETS = {"bert": ("bert.py", "bert-large"), "gpt": ("gpt.py", "gpt3-23b"),
           "llama": ("llama.py", "llama3-70b")}
SMALL = ["gpt", "bert", "llama", "transformer_encoder"]
STEP_LINE = re.compile(r"^step\s+(\d+)\s+loss\s+(\S+)")

def preset_layers(script, preset):
    """The preset's layer count, read from the example's PRESETS literal
    (without importing it: no torch in this process)."""
    tree = ast.parse((EXAMPLES / script).read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", "") == "PRESETS"):
            return ast.literal_eval(node.value)[preset].get("layers")
    return None


def last_error(stderr):
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line
    return lines[-1] if lines else ""


def extract(python, name, layers, timeout):
    """(a): one preset in extraction mode; the manifest's record of its step."""
    script, preset = PRESETS[name]
    full_layers = preset_layers(script, preset)
    work = pathlib.Path(tempfile.mkdtemp(prefix="trn-bench-frontend-"))
    manifest = work / "manifest.jsonl"
    env = dict(os.environ, TRN_EXTRACT_GRAPHS_ONLY="1", TRN_GRAPH_MANIFEST=str(manifest),
               TRN_EXTRACT_MAX_STEPS="1")
    command = [python, str(EXAMPLES / script), "--config", preset, "--device", "trn"]
    if layers:
        command += ["--layers", str(layers)]
    print(f"(a) {' '.join(command[1:])} (extraction) ...", flush=True)
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True,
                              timeout=timeout)
        code, stderr = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as e:
        code = -1
        stderr = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) \
            else (e.stderr or "")
        stderr += f"\nbench: error: killed after {timeout:.0f} s"
    wall = time.perf_counter() - start
    records = []
    if manifest.exists():
        records = [json.loads(line) for line in manifest.read_text().splitlines() if line]
    result = {"example": script, "config": preset, "preset_layers": full_layers,
              "layers": layers or full_layers, "command": command[1:],
              "exit_status": code, "wall_seconds": wall, "error": "",
              "target_seconds": TRACE_TARGET_SECONDS}
    if records:
        r = records[0]
        graph = pathlib.Path(r["graph"])
        result.update({
            "trace_seconds": r["trace_seconds"], "ops": r["ops"], "key": r["key"],
            "graph_name": r["graph_name"], "inputs": r["inputs"],
            "estimated_compile_seconds": r["estimated_compile_seconds"],
            "estimated_compile_memory_bytes": r["estimated_compile_memory_bytes"],
            "graph_bytes": graph.stat().st_size if graph.exists() else None,
            "manifest_lines": len(records)})
    if code != 0 or not records:
        result["error"] = last_error(stderr) or f"exit status {code}, no manifest line"
    shutil.rmtree(work, ignore_errors=True)
    return result


def run_example(python, name, device, steps, timeout, cache_dir, work):
    """(b): one small example on one device; per-step times from its step lines."""
    script = EXAMPLES / f"{name}.py"
    args = ["--device", device, "--steps", str(steps)]
    stats_path = work / f"{name}-{device}-stats.json"
    if device == "trn":
        args += ["--cache-dir", str(cache_dir), "--stats-out", str(stats_path)]
    command = [python, str(script)] + args
    print(f"(b) examples/{name}.py {' '.join(args)} ...", flush=True)
    stamps, losses = [], []
    header = None
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=err,
                                text=True, bufsize=1)
        summary = ""
        timer = threading.Timer(timeout, proc.kill)  # a silent hang is killed too
        timer.start()
        for line in proc.stdout:
            now = time.perf_counter()
            m = STEP_LINE.match(line)
            if m:
                stamps.append(now)
                losses.append(float(m.group(2)))
            elif header is None and ": config " in line:
                header = now
            elif " steps in " in line:
                summary = line.strip()
        code = proc.wait()
        timed_out = not timer.is_alive() and code != 0
        timer.cancel()
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read()
    if timed_out:
        stderr += f"\nbench: error: killed after {timeout:.0f} s"
    intervals = [b - a for a, b in zip(stamps, stamps[1:])]
    result = {"example": name, "device": device, "steps": steps, "exit_status": code,
              "wall_seconds": wall, "steps_seen": len(stamps), "losses": losses,
              "summary": summary, "error": "" if code == 0 else last_error(stderr),
              "first_step_seconds": (stamps[0] - header) if stamps and header else None,
              "step_seconds_mean": statistics.mean(intervals) if intervals else None,
              "step_seconds_median": statistics.median(intervals) if intervals else None,
              "step_seconds_min": min(intervals) if intervals else None,
              "step_seconds_max": max(intervals) if intervals else None}
    if device == "trn" and stats_path.exists():
        stats = json.loads(stats_path.read_text())
        result.update({
            "device_time_us": stats["device_time_ns"] / 1e3,
            "instructions": stats["instructions"],
            "tensor_engine_utilisation": stats["tensor_engine_utilisation"],
            "hbm_traffic_bytes": stats["hbm_to_sbuf_bytes"] + stats["sbuf_to_hbm_bytes"],
            "cache_status": stats.get("cache_status"), "key": stats.get("key"),
            "last_stats": stats})
    return result


def ms(value):
    return f"{value * 1e3:.1f}" if value is not None else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presets", default="bert,gpt,llama",
                        help="presets to trace in extraction mode (bert, gpt, llama; '' for none)")
    parser.add_argument("--layers", type=int,
                        help="pass --layers N to every preset instead of its full layer count")
    parser.add_argument("--examples", default=",".join(SMALL),
                        help="small examples to train on both devices ('' for none)")
    parser.add_argument("--steps", type=int, default=20, help="steps per small example (default 20)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds before one example process is killed")
    parser.add_argument("--python", default=PYTHON,
                        help=f"the interpreter with torch and trn (default {PYTHON})")
    parser.add_argument("--json", default="bench-frontend.json",
                        help="write the results here (default bench-frontend.json in the cwd)")
    args = parser.parse_args()
    presets = [p for p in args.presets.split(",") if p]
    examples = [e for e in args.examples.split(",") if e]
    for p in presets:
        if p not in PRESETS:
            sys.exit(f"frontend.py: unknown preset '{p}' ({', '.join(PRESETS)})")
    for e in examples:
        if not (EXAMPLES / f"{e}.py").exists():
            sys.exit(f"frontend.py: no example examples/{e}.py")
    if args.steps < 2:
        sys.exit("frontend.py: --steps must be at least 2 (the first step is timed apart)")

    preset_results = [extract(args.python, p, args.layers, args.timeout) for p in presets]
    example_results = []
    work = pathlib.Path(tempfile.mkdtemp(prefix="trn-bench-frontend-"))
    try:
        for name in examples:
            cpu = run_example(args.python, name, "cpu", args.steps, args.timeout, None, work)
            dev = run_example(args.python, name, "trn", args.steps, args.timeout,
                              work / "cache", work)
            n = min(len(cpu["losses"]), len(dev["losses"]))
            diffs = [abs(a - b) for a, b in zip(cpu["losses"][:n], dev["losses"][:n])]
            example_results.append({
                "example": name, "cpu": cpu, "trn": dev,
                "max_abs_loss_difference": max(diffs) if diffs else None,
                "trn_over_cpu_step_time": (dev["step_seconds_median"] / cpu["step_seconds_median"]
                                           if dev["step_seconds_median"] and cpu["step_seconds_median"]
                                           else None)})
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if preset_results:
        print("\n(a) trace + translate of the full-size presets (meta tensors, extraction mode, "
              "first step: forward, backward, AdamW)")
        if args.layers:
            print(f"    layers overridden with --layers {args.layers} (not the full presets)")
        print(f"  {'preset':12s} {'layers':>9s} {'trace s':>8s} {'target':>7s} {'trn ops':>8s} "
              f"{'graph MiB':>9s} {'process s':>9s}  status")
        for r in preset_results:
            layers = (f"{r['layers']}/{r['preset_layers']}" if r["layers"] != r["preset_layers"]
                      else str(r["layers"]))
            ok = r["exit_status"] == 0 and "trace_seconds" in r
            trace = f"{r['trace_seconds']:.2f}" if "trace_seconds" in r else "-"
            met = ("met" if r["trace_seconds"] <= TRACE_TARGET_SECONDS else "NOT met") \
                if "trace_seconds" in r else "-"
            ops = str(r.get("ops", "-"))
            size = f"{r['graph_bytes'] / 2**20:.1f}" if r.get("graph_bytes") else "-"
            status = "ok" if ok else "FAILED: " + r["error"]
            print(f"  {r['config']:12s} {layers:>9s} {trace:>8s} {met:>7s} {ops:>8s} {size:>9s} "
                  f"{r['wall_seconds']:9.1f}  {status}")
    if example_results:
        print(f"\n(b) small examples, {args.steps} steps, wall time per step after the first "
              "(median of the step-line intervals), ms")
        print(f"  {'example':20s} {'cpu':>7s} {'trn':>7s} {'trn/cpu':>8s} {'device':>8s} "
              f"{'instrs':>7s} {'HBM MiB':>8s} {'1st step trn':>12s} {'max |dloss|':>11s}  status")
        for e in example_results:
            c, t = e["cpu"], e["trn"]
            ratio = f"{e['trn_over_cpu_step_time']:.1f}x" if e["trn_over_cpu_step_time"] else "-"
            device = f"{t['device_time_us'] / 1e3:.3f}" if "device_time_us" in t else "-"
            instrs = str(t.get("instructions", "-"))
            hbm = f"{t['hbm_traffic_bytes'] / 2**20:.2f}" if "hbm_traffic_bytes" in t else "-"
            diff = (f"{e['max_abs_loss_difference']:.2e}"
                    if e["max_abs_loss_difference"] is not None else "-")
            status = "; ".join(f"{d['device']} FAILED: {d['error']}" for d in (c, t)
                               if d["exit_status"] != 0) or "ok"
            print(f"  {e['example']:20s} {ms(c['step_seconds_median']):>7s} "
                  f"{ms(t['step_seconds_median']):>7s} {ratio:>8s} {device:>8s} {instrs:>7s} "
                  f"{hbm:>8s} {ms(t['first_step_seconds']):>12s} {diff:>11s}  {status}")
        print("  cpu, trn: wall time per step; device: simulated device time of the last step "
              "(--stats-out), its instructions and HBM traffic; 1st step trn: trace, translate, "
              "cold compile and run; max |dloss|: largest difference of the printed losses")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"benchmark": "frontend", "machine": os.uname().nodename, "cpus": os.cpu_count(),
             "command": sys.argv, "steps": args.steps, "layers_override": args.layers,
             "presets": preset_results, "examples": example_results}, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    failed = [r for r in preset_results if r["exit_status"] != 0] + \
        [d for e in example_results for d in (e["cpu"], e["trn"]) if d["exit_status"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
