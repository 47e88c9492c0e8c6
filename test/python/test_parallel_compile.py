"""trn-parallel-compile end to end: collect and compile the examples' graphs,
find them cached on a second run and in the training run, and lose only the
failing graph when a compile fails, is killed or passes its timeout."""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

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

    # The cache counted every request, whoever made it: two compiles, then
    # two hits from each of the second run, the training run and the last.
    counted = subprocess.run([str(BIN / "trn-cache"), "stats", "--json",
                              "--cache-dir", str(cache)],
                             capture_output=True, text=True, timeout=60)
    assert counted.returncode == 0, counted.stderr
    statistics = json.loads(counted.stdout)["statistics"]
    assert (statistics["misses"], statistics["hits"]) == (2, 6), statistics
    assert statistics["compile_ms"] > 0


def test_pipelined_graph_compiles_and_caches_per_stage(tmp_path):
    """A pipelined step is one compile and one cache entry per stage: each
    stage is its own job, and a graph with a stage missing from the cache is
    not taken as cached."""
    cache, work = tmp_path / "cache", tmp_path / "work"
    command = [PYTHON, str(EXAMPLES / "gpt.py"), "--device", "trn", "--steps", "2",
               "--batch", "4", "--mesh", "pp=2,tp=2"]
    first = run_tool("--cache-dir", str(cache), "--workdir", str(work),
                     "--json", str(tmp_path / "first.json"), "--", *command)
    assert first.returncode == 0, first.stderr
    assert "Total successful compilations: 2" in first.stderr
    assert "2 of these are the stages of 1 pipelined graph(s)" in first.stderr
    graphs = report(tmp_path / "first.json")["graphs"]
    assert sorted(g["stage"] for g in graphs) == [0, 1]
    assert len({g["key"] for g in graphs}) == 2

    # Stage 1's entry goes missing: only it is compiled again.
    stage1 = next(g["key"] for g in graphs if g["stage"] == 1)
    entries = list(cache.glob(f"trncc-*/{stage1}"))
    assert len(entries) == 1
    subprocess.run(["rm", "-rf", str(entries[0])], check=True)
    again = run_tool("--command", "compile", "--cache-dir", str(cache),
                     "--workdir", str(work), "--json", str(tmp_path / "again.json"))
    assert again.returncode == 0, again.stderr
    assert "Total successful compilations: 1" in again.stderr
    assert "Already cached: 1" in again.stderr
    status = {g["stage"]: g["status"] for g in report(tmp_path / "again.json")["graphs"]}
    assert status == {0: "cached", 1: "compiled"}

    # The training run finds both stages in the cache.
    stats = tmp_path / "stats.json"
    train = subprocess.run(command + ["--stats-out", str(stats)],
                           env=dict(os.environ, TRN_CACHE_DIR=str(cache)),
                           capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stderr
    assert all(g["cache_status"] == "hit"
               for g in json.loads(stats.read_text())["graphs"])


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
    script.write_text("""
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
    # The traceback is shown once: live, as the script printed it, and the
    # error names its last line.
    assert (proc.stdout + proc.stderr).count("Traceback") == 1, proc.stdout + proc.stderr
    # Quiet, the output was not shown: the error shows its end.
    quiet = run_tool("-q", *common)
    assert quiet.returncode == 1 and quiet.stdout == ""
    assert quiet.stderr.count("Traceback") == 1 and "  | RuntimeError" in quiet.stderr
    proc = run_tool("--ignore-script-error", *common)
    assert proc.returncode == 1  # the graphs compiled, the command still failed
    assert "Total successful compilations: 1" in proc.stderr


def test_no_graph_traced(tmp_path):
    proc = run_tool("--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "w"),
                    "--", PYTHON, "-c", "print('hello')")
    assert proc.returncode == 1
    assert "traced no graph" in proc.stderr


def _job_command(tmp_path: Path, tool_args: list) -> list:
    return [TOOL, "--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "work"),
            "--json", str(tmp_path / "job.json"), "-j", "1", *tool_args, "--",
            PYTHON, str(EXAMPLES / "gpt.py"), "--device", "trn", "--steps", "20",
            "--grad-accum", "2"]


def _check_job(tmp_path: Path, proc: subprocess.CompletedProcess, tasks: int) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    # Rank 0 prints the job's summary, once.
    assert output.count("Total graphs: 2") == 1
    assert "Total successful compilations: 2" in output
    assert output.count("task 0 prints the job's summary") == tasks - 1
    data = report(tmp_path / "job.json")
    # Each graph compiled exactly once in the whole job.
    assert sorted(g["status"] for g in data["graphs"]) == ["compiled", "compiled"]
    listing = subprocess.run([str(BIN / "trn-cache"), "list", "--json",
                              "--cache-dir", str(tmp_path / "cache")],
                             capture_output=True, text=True)
    assert listing.returncode == 0
    assert len(json.loads(listing.stdout)) == 2
    # The job directory is gone once every task read the results.
    assert not list((tmp_path / "cache" / "jobs").iterdir())


def test_mpirun_tasks_split_the_graphs(tmp_path):
    env = dict(os.environ, OMPI_MCA_btl_tcp_if_include="lo",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("TRN_CC_FLAGS", None)
    proc = subprocess.run(["mpirun", "--oversubscribe", "-np", "4",
                           *_job_command(tmp_path, [])],
                          env=env, capture_output=True, text=True, timeout=600)
    _check_job(tmp_path, proc, 4)


def test_mpirun_one_failing_task_fails_every_task(tmp_path):
    # Task 2's training command fails: every task exits non-zero, nothing
    # hangs.
    script = tmp_path / "train.sh"
    script.write_text(f"""#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 2 ]; then echo "rank 2 ran out of data" >&2; exit 3; fi
exec {PYTHON} {EXAMPLES / 'gpt.py'} --device trn --steps 20
""")
    script.chmod(0o755)
    wrapper = tmp_path / "task.sh"
    # Each task's own exit status, whatever mpirun reports.
    wrapper.write_text(f"""#!/bin/sh
{TOOL} --cache-dir {tmp_path / 'cache'} --workdir {tmp_path / 'work'} -q -- {script}
echo "exit $OMPI_COMM_WORLD_RANK $?" > {tmp_path}/status.$OMPI_COMM_WORLD_RANK
""")
    wrapper.chmod(0o755)
    env = dict(os.environ, OMPI_MCA_btl_tcp_if_include="lo",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(["mpirun", "--oversubscribe", "-np", "4", str(wrapper)],
                          env=env, capture_output=True, text=True, timeout=600)
    statuses = sorted((tmp_path / f"status.{r}").read_text().split()[2] for r in range(4))
    assert statuses == ["1", "1", "1", "1"], proc.stderr[-3000:]
    assert "the training command of task 2 failed (exit status 3)" in proc.stderr


def test_srun_tasks_split_the_graphs(tmp_path):
    from slurm_cluster import SlurmCluster, SlurmUnavailable
    try:
        cluster = SlurmCluster(tmp_path).__enter__()
    except SlurmUnavailable as why:
        pytest.skip(f"no Slurm here: {why}")
    try:
        proc = cluster.run(["srun", "-n", "4", *_job_command(tmp_path, [])])
        _check_job(tmp_path, proc, 4)
    finally:
        cluster.stop()


def test_analyze_estimates_without_compiling(tmp_path):
    proc = run_tool("--command", "analyze", "--cache-dir", str(tmp_path / "cache"),
                    "--workdir", str(tmp_path / "w"), "-q", "--json", str(tmp_path / "a.json"),
                    "--", PYTHON, str(EXAMPLES / "gpt.py"), "--device", "trn",
                    "--steps", "20", "--grad-accum", "2")
    assert proc.returncode == 0, proc.stderr
    assert "2 graphs" in proc.stdout
    data = json.loads((tmp_path / "a.json").read_text())
    assert sorted(g["graph_name"] for g in data["graphs"]) == ["train_micro_step", "train_step"]
    assert all(g["fits"] and 0 < g["hbm_bytes_estimate"] < 1 << 30 for g in data["graphs"])
    assert not list(tmp_path.rglob("MODULE_*.trnart"))  # nothing compiled
    assert not (tmp_path / "cache").exists()


def test_analyze_names_unsupported_ops_and_goes_on(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("""
import torch, trn
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4, 4))
    def forward(self, x):
        return torch.special.i0(x @ self.w).sum()
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = trn.compile_step(model, opt, lambda m, x: m(x))
for i in range(5):
    step(torch.ones(3, 4))
    print("step", i, "done")
""")
    proc = run_tool("--command", "analyze", "--cache-dir", str(tmp_path / "cache"),
                    "--workdir", str(tmp_path / "w"), "--", PYTHON, str(script))
    assert proc.returncode == 1, proc.stderr
    assert "step 1 done" in proc.stdout  # the script went on
    assert "1 step call could not be traced" in proc.stdout
    assert "i0" in proc.stdout and "train.py:8" in proc.stdout


def test_analyze_flags_a_model_too_large_for_one_core(tmp_path):
    proc = run_tool("--command", "analyze", "--cache-dir", str(tmp_path / "cache"),
                    "--workdir", str(tmp_path / "w"), "-q", "--json", str(tmp_path / "a.json"),
                    "--", PYTHON, str(EXAMPLES / "gpt.py"), "--config", "gpt3-23b",
                    "--device", "trn", "--steps", "3")
    assert proc.returncode == 1
    assert "1 graph needs more HBM than one NeuronCore has" in proc.stdout
    graph = json.loads((tmp_path / "a.json").read_text())["graphs"][0]
    assert not graph["fits"] and graph["hbm_bytes_estimate"] > 16 << 30


def test_read_only_cache_answers_but_does_not_compile(tmp_path):
    cache, work = tmp_path / "cache", tmp_path / "work"
    command = ["--", PYTHON, str(EXAMPLES / "gpt.py"), "--device", "trn", "--steps", "20"]
    assert run_tool("--cache-dir", str(cache), "--workdir", str(work), "-q",
                    *command).returncode == 0
    read_only = {"TRN_CACHE_READ_ONLY": "1"}
    proc = run_tool("--cache-dir", str(cache), "--workdir", str(work), "-q", *command,
                    env=read_only)
    assert proc.returncode == 0 and "Already cached: 1" in proc.stderr
    proc = run_tool("--cache-dir", str(cache), "--workdir", str(work), "-q",
                    *command, "--seq", "8", env=read_only)
    assert proc.returncode == 1
    assert "not compiled: the cache is read-only (TRN_CACHE_READ_ONLY=1)" in proc.stderr


def test_collect_with_max_steps_and_flags(tmp_path):
    # One step call: the micro-step graph only; --flags reach the script's
    # keys through TRN_CC_FLAGS.
    proc = run_tool("--command", "collect", "--max-steps", "1", "--flags", "--auto-cast matmul",
                    "--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "w"),
                    "--", PYTHON, str(EXAMPLES / "gpt.py"), "--device", "trn", "--steps", "20",
                    "--grad-accum", "2")
    assert proc.returncode == 0, proc.stderr
    assert "collected 1 graph into" in proc.stderr
    manifest = next((tmp_path / "w" / "graphs").glob("manifest-*.jsonl"))
    record = json.loads(manifest.read_text().splitlines()[0])
    assert record["graph_name"] == "train_micro_step"
    assert record["flags"] == ["--auto-cast", "matmul"]
    assert not (tmp_path / "cache").exists()  # collect compiles nothing


@pytest.mark.parametrize("shared", [True, False])
def test_two_nodes_say_at_once_when_the_cache_is_not_shared(shared, tmp_path):
    """Two srun tasks on two nodes (Slurm's variables, one host): with one
    cache directory (given relative) they compile the job's graph together;
    with a directory each, as node-local /var/tmp gives, each says within
    seconds that the cache is not shared and what to do, not after the
    120 s lease."""
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({
        "key": "MODULE_0123456789abcdef0123456789abcdef+0123456789abcdef0123456789abcdef",
        "graph": str(INPUTS / "add_exp.mlir"), "graph_name": "add_exp"}) + "\n")
    tasks = []
    for rank in range(2):
        env = dict(os.environ, SLURM_JOB_ID="4242", SLURM_STEP_ID="0",
                   SLURM_PROCID=str(rank), SLURM_STEP_NUM_TASKS="2",
                   SLURM_NODEID=str(rank), SLURM_LOCALID="0", SLURM_STEP_NUM_NODES="2")
        env.pop("TRN_CC_FLAGS", None)
        cache = "cache" if shared else f"node{rank}/cache"
        (tmp_path / cache).mkdir(parents=True, exist_ok=True)
        tasks.append(subprocess.Popen(
            [TOOL, "--command", "compile", "--manifest", str(manifest), "--workdir",
             f"w{rank}", "--cache-dir", cache], cwd=tmp_path, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [task.communicate(timeout=100)[0] for task in tasks]
    codes = [task.returncode for task in tasks]
    if shared:
        assert codes == [0, 0], outputs
        assert "Total successful compilations: 1" in outputs[0]
        return
    assert codes == [1, 1], outputs
    for output in outputs:
        assert ("sees no task of the job's other nodes" in output
                and "the cache directory is not shared between the 2 nodes" in output
                and "give --cache-dir (or TRN_CACHE_DIR) a directory on a filesystem "
                    "every node mounts" in output), output
        assert "has not been heard from" not in output


def test_each_task_labels_its_training_commands_output(tmp_path):
    """Under srun every task runs the training command; its lines (the last
    one without a newline too) carry the task's number, so that the job's
    interleaved log says whose they are. One task alone prints them as they
    are."""
    command = [PYTHON, "-c", "print('hello'); print('world', end='')"]
    tasks = []
    for rank in range(2):
        env = dict(os.environ, SLURM_JOB_ID="4343", SLURM_STEP_ID="0",
                   SLURM_PROCID=str(rank), SLURM_STEP_NUM_TASKS="2",
                   SLURM_NODEID="0", SLURM_LOCALID=str(rank), SLURM_STEP_NUM_NODES="1")
        tasks.append(subprocess.Popen(
            [TOOL, "--workdir", f"w{rank}", "--cache-dir", "cache", "--", *command],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True))
    outputs = [task.communicate(timeout=100)[0] for task in tasks]
    for rank, output in enumerate(outputs):
        assert f"[task {rank}] hello\n[task {rank}] world\n" in output, output
    alone = run_tool("--workdir", str(tmp_path / "w"), "--cache-dir", str(tmp_path / "c1"),
                     "--", *command)
    assert "hello\nworld" in alone.stdout and "[task" not in alone.stdout
