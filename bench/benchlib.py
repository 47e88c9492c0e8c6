"""What the benchmarks share: the built tools and the graphs they measure.

    from benchlib import ROOT, PYTHON, build_bin, make_graph
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: The project's Python environment (utils/setup.sh makes .venv), the one
#: with torch and numpy; else the interpreter running the benchmark.
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() \
    else sys.executable


def selected(names: str, known: dict, what: str) -> list:
    """The comma-separated `names` a bench was asked for, each one of `known`;
    an unknown one ends the bench with one line listing the known ones."""
    chosen = [n for n in names.split(",") if n]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        sys.exit(f"bench: unknown {what} {unknown[0]!r}; known: {', '.join(known)}")
    return chosen


def build_bin(tool: str = "trn-cc") -> pathlib.Path:
    """The bin directory of the build ($TRN_BUILD_DIR, else build/) that has `tool`."""
    for candidate in (os.environ.get("TRN_BUILD_DIR"), ROOT / "build"):
        if candidate and (pathlib.Path(candidate) / "bin" / tool).exists():
            return pathlib.Path(candidate) / "bin"
    sys.exit(f"bench: build/bin/{tool} not found; run utils/setup.sh")


def make_graph(spec: list, out: pathlib.Path, work: pathlib.Path) -> None:
    """Writes the graph `spec` names to `out`:

    - ["gen", MODEL, ARGS...]: utils/gen_transformer_step.py MODEL ARGS;
    - ["trace", SCRIPT, ARGS...]: examples/SCRIPT ARGS --device trn, traced by
      the frontend in extraction mode (one step, nothing runs);
    - ["layer", SCRIPT, ARGS...]: bench/SCRIPT ARGS, a script that traces one
      layer's step itself, in extraction mode.
    """
    kind, script, args = spec[0], spec[1], spec[2:]
    if kind == "gen":
        subprocess.run([PYTHON, str(ROOT / "utils" / "gen_transformer_step.py"), script,
                        *args, "-o", str(out)], check=True)
        return
    if kind == "layer":
        command = [PYTHON, str(ROOT / "bench" / script), *args]
    else:
        command = [PYTHON, str(ROOT / "examples" / script), *args, "--device", "trn",
                   "--steps", "1", "--quiet"]
    out.write_bytes(extract_graph(command, work).read_bytes())


def extract_graph(command: list, work: pathlib.Path) -> pathlib.Path:
    """Runs `command` (a training script) in the frontend's extraction mode
    (one step, nothing runs) and returns the one graph it traced, written
    under work/graphs, which starts empty (a graph left there by an earlier
    trace is not this one's)."""
    graphs = work / "graphs"
    shutil.rmtree(graphs, ignore_errors=True)
    env = dict(os.environ, TRN_EXTRACT_GRAPHS_ONLY="1", TRN_EXTRACT_MAX_STEPS="1",
               TRN_GRAPH_MANIFEST=str(graphs / "manifest.jsonl"))
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    modules = sorted(graphs.glob("MODULE_*.mlir"))
    if len(modules) != 1:
        sys.exit(f"bench: expected one traced graph in {graphs}, got {len(modules)}")
    return modules[0]


def write_results(path: str, results: list) -> None:
    """Writes a benchmark's `results` to `path` as JSON, with the date and the host's CPU count."""
    pathlib.Path(path).write_text(json.dumps(
        {"date": time.strftime("%Y-%m-%d"), "host_cpus": os.cpu_count(),
         "results": results}, indent=2) + "\n")
    print(f"wrote {path}")


def report(rows: list, result: dict, json_path: "str | None", title: "str | None" = None) -> None:
    """Prints `rows` (name, value) as an aligned table under `title`, and writes `result` to `json_path`."""
    if title:
        print(title)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    if json_path:
        pathlib.Path(json_path).write_text(json.dumps(result, indent=2) + "\n")
