"""trn-parallel-compile end to end: collect and compile the examples' graphs,
find them cached on a second run and in the training run, and lose only the
failing graph when a compile fails, is killed or passes its timeout."""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

import trn
from trn import _trn
from conftest import EXAMPLES, PYTHON, ROOT

# The extension is built (not linked from the source tree): its build dir.
BIN = Path(_trn.__file__).resolve().parents[2] / "bin"
TOOL = str(BIN / "trn-parallel-compile")
INPUTS = ROOT / "test" / "tools" / "Inputs"


def run_tool(*args: str, env: dict = None, timeout: int = 600
             ) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.pop("TRN_CC_FLAGS", None)
    full_env.update(env or {})
    return subprocess.run([TOOL, *args], env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def report(path: Path) -> dict:
    data = json.loads(path.read_text())
    data["by_key"] = {g["key"]: g for g in data["graphs"]}
    return data


def test_collect_compile_then_everything_is_cached(tmp_path):
    cache, work = tmp_path / "cache", tmp_path / "work"
    command = [PYTHON, str(EXAMPLES / "gpt.py"), "--device", "trn", "--steps", "20",
               "--grad-accum", "2"]
    first = run_tool("--cache-dir", str(cache), "--workdir", str(work),
                     "--json", str(tmp_path / "first.json"), "--", *command)
    assert first.returncode == 0, first.stderr
    # The anchor's words, then what it does not say.
    assert "Total graphs: 2" in first.stderr
    assert "Total successful compilations: 2" in first.stderr
    assert "Total failed compilations: 0" in first.stderr
    assert "extraction done" in first.stdout + first.stderr
    data = report(tmp_path / "first.json")
    assert sorted(g["status"] for g in data["graphs"]) == ["compiled", "compiled"]
    assert sorted(g["graph_name"] for g in data["graphs"]) == ["train_micro_step",
                                                               "train_step"]
    assert all(g["peak_memory_bytes"] > 0 and Path(g["log"]).exists()
               for g in data["graphs"])

    second = run_tool("--cache-dir", str(cache), "--workdir", str(work), "-q",
                      "--json", str(tmp_path / "second.json"), "--", *command)
    assert second.returncode == 0, second.stderr
    assert "Already cached: 2" in second.stderr
    assert all(g["status"] == "cached" for g in report(tmp_path / "second.json")["graphs"])

    # The training run compiles nothing: every graph is a cache hit.
    stats = tmp_path / "stats.json"
    train = subprocess.run(command[:5] + ["4", "--grad-accum", "2", "--stats-out", str(stats)],
                           env=dict(os.environ, TRN_CACHE_DIR=str(cache)),
                           capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stderr
    graphs = json.loads(stats.read_text())["graphs"]
    assert {g["key"] for g in graphs} == set(data["by_key"])
    assert all(g["cache_status"] == "hit" for g in graphs)

    # --command compile compiles what the workdir's manifests list.
    again = run_tool("--command", "compile", "--cache-dir", str(cache),
                     "--workdir", str(work), "-q")
    assert again.returncode == 0 and "Already cached: 2" in again.stderr


def _variant(tmp_path: Path, name: str, rows: int) -> Path:
    """A small graph of its own shape (its own key)."""
    text = (INPUTS / "add_exp.mlir").read_text()
    path = tmp_path / f"{name}.mlir"
    path.write_text(text.replace("256x64", f"{rows}x64"))
    return path


def _manifest(tmp_path: Path, graphs: dict) -> Path:
    manifest = tmp_path / "graphs" / "manifest.jsonl"
    manifest.parent.mkdir(exist_ok=True)
    with manifest.open("w") as f:
        for name, path in graphs.items():
            key = _trn.graph_key(path.read_text(), [])
            f.write(json.dumps({"key": key, "graph": str(path), "graph_name": name,
                                "flags": [], "ops": 3,
                                "estimated_compile_seconds": 0.1,
                                "estimated_compile_memory_bytes": 1 << 26}) + "\n")
    return manifest


def _wrapper(tmp_path: Path) -> Path:
    """A trn-cc that is killed on the graph named kill*.mlir (only on its
    first attempt) and hangs on hang*.mlir: the failures a real compiler
    meets (an OOM kill, a compile that never ends)."""
    script = tmp_path / "trn-cc-wrapper"
    script.write_text(f"""#!/bin/sh
case "$2" in
  *kill*) if [ ! -e "{tmp_path}/killed-once" ]; then
            touch "{tmp_path}/killed-once"; kill -9 $$; fi ;;
  *hang*) exec sleep 60 ;;
esac
exec "{BIN / 'trn-cc'}" "$@"
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_failures_lose_only_their_graph(tmp_path):
    graphs = {"good1": _variant(tmp_path, "good1", 5),
              "good2": _variant(tmp_path, "good2", 6),
              "kill": _variant(tmp_path, "kill", 7),
              "hang": _variant(tmp_path, "hang", 9),
              "bad": INPUTS / "unlowered.mlir"}
    manifest = _manifest(tmp_path, graphs)
    args = ["--command", "compile", "--manifest", str(manifest),
            "--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "work"),
            "--compiler", str(_wrapper(tmp_path)), "--timeout-per-graph", "3s",
            "-j", "3", "--json", str(tmp_path / "r.json")]
    proc = run_tool(*args)
    assert proc.returncode == 1, proc.stderr
    assert "Total graphs: 5" in proc.stderr
    assert "Total successful compilations: 2" in proc.stderr
    assert "Total failed compilations: 3" in proc.stderr
    by_name = {g["graph_name"]: g for g in report(tmp_path / "r.json")["graphs"]}
    assert by_name["good1"]["status"] == by_name["good2"]["status"] == "compiled"
    assert by_name["kill"]["status"] == "failed"
    assert by_name["kill"]["reason"].startswith("killed by SIGKILL")
    assert by_name["hang"]["reason"].startswith("timeout")
    assert by_name["bad"]["reason"].startswith("compile error: ")
    assert "must be exact f32 values" in by_name["bad"]["reason"]
    assert "failed graphs:" in proc.stderr and "reason: timeout" in proc.stderr

    # Again with one retry: the killed compile was transient and now passes,
    # the deterministic failure is cached and not recompiled, the timeout
    # stays a failure.
    proc = run_tool(*args, "--retries", "1")
    by_name = {g["graph_name"]: g for g in report(tmp_path / "r.json")["graphs"]}
    assert by_name["kill"]["status"] == "compiled"
    assert by_name["good1"]["status"] == "cached"
    assert by_name["bad"]["status"] == "failed (cached)"
    assert by_name["bad"]["attempts"] == 0
    assert by_name["hang"]["status"] == "failed"
    assert proc.returncode == 1


def test_training_command_failure(tmp_path):
    script = tmp_path / "train.py"
    # A script that traces one step and then fails.
    script.write_text(f"""
import torch, trn
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = trn.compile_step(model, opt, lambda m, x: m(x).sum())
step(torch.ones(3, 4))
raise RuntimeError("the data loader broke")
""")
    common = ["--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "work"),
              "--", PYTHON, str(script)]
    proc = run_tool(*common)
    assert proc.returncode == 1
    assert "the training command failed (exit status 1)" in proc.stderr
    assert "RuntimeError: the data loader broke" in proc.stderr
    assert "Total graphs" not in proc.stderr
    proc = run_tool("--ignore-script-error", *common)
    assert proc.returncode == 1  # the graphs compiled, the command still failed
    assert "Total successful compilations: 1" in proc.stderr


def test_no_graph_traced(tmp_path):
    proc = run_tool("--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "w"),
                    "--", PYTHON, "-c", "print('hello')")
    assert proc.returncode == 1
    assert "traced no graph" in proc.stderr
