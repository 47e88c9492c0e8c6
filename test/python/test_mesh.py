"""trn.compile_step(..., mesh=...): a model traced once trains at a dp x tp
mesh, every rank on its own simulated NeuronCore in this process, with the
single-device results."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import trn
from trn import _trn
from conftest import EXAMPLES, PYTHON, run_example

sys.path.insert(0, str(EXAMPLES))
import gpt  # noqa: E402  (the example's model)


def _train(mesh, make_optimizer, cache_dir, steps=3, flags=""):
    torch.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig())
    optimizer = make_optimizer(model.parameters())
    step = trn.compile_step(model, optimizer, gpt.loss_fn, cache_dir=cache_dir, mesh=mesh,
                            flags=flags)
    generator = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        ids = torch.randint(0, model.cfg.vocab, (4, model.cfg.seq), generator=generator)
        labels = torch.randint(0, model.cfg.vocab, (4, model.cfg.seq), generator=generator)
        losses.append(float(step(ids, labels)))
    return losses, model.state_dict(), optimizer


def _worst(state, reference):
    """Largest error of any tensor relative to its largest value."""
    return max(float((a - b).abs().max() / (b.abs().max() + 1e-30))
               for a, b in zip(state.values(), reference.values()))


def _sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


@pytest.mark.parametrize("mesh", ["tp=2", "dp=2", "dp=2,tp=2"])
def test_mesh_training_equals_single_device(mesh, cache_dir):
    ref_losses, ref_state, _ = _train(None, _sgd, cache_dir)
    losses, state, _ = _train(mesh, _sgd, cache_dir)
    assert losses == pytest.approx(ref_losses, rel=1e-5)
    # Unsharded: model.state_dict() has the model's own shapes.
    assert {k: v.shape for k, v in state.items()} == {k: v.shape for k, v in ref_state.items()}
    assert _worst(state, ref_state) < 1e-5


@pytest.mark.parametrize("flags", ["--zero1", "--sequence-parallel",
                                   "--zero1 --sequence-parallel"])
def test_mesh_with_zero1_and_sequence_parallelism(flags, cache_dir):
    """ZeRO-1 (optimizer states split over dp, traced at the whole batch) and
    Megatron's sequence parallelism, as compile flags."""
    ref_losses, ref_state, _ = _train(None, _sgd, cache_dir)
    losses, state, _ = _train("dp=2,tp=2", _sgd, cache_dir, flags=flags)
    assert losses == pytest.approx(ref_losses, rel=1e-5)
    assert _worst(state, ref_state) < 1e-5


def test_mesh_adamw(cache_dir):
    """AdamW divides by sqrt(v) + eps: a near-zero gradient's last-bit
    differences (the partitioned sums add in another order) move its update
    by up to lr, so parameters agree to about 1e-3 of their scale and the
    losses to 1e-5 (the same happens between any two summation orders)."""
    make = lambda params: torch.optim.AdamW(params, lr=1e-3)  # noqa: E731
    ref_losses, ref_state, ref_opt = _train(None, make, cache_dir)
    losses, state, opt = _train("dp=2,tp=2", make, cache_dir)
    assert losses == pytest.approx(ref_losses, rel=1e-5)
    assert _worst(state, ref_state) < 5e-3
    # Optimizer state comes back whole too.
    for p_state, r_state in zip(opt.state.values(), ref_opt.state.values()):
        assert p_state["exp_avg"].shape == r_state["exp_avg"].shape


@pytest.mark.parametrize("mesh,text", [
    ("dp=0", "is not dp=N, pp=N or tp=N with a positive N"),
    ("tp=2,tp=4", "gives 'tp' twice"),
    ("ep=2", "'ep=2' is not dp=N, pp=N or tp=N"),
    (3, "mesh must be a string"),
])
def test_bad_mesh(mesh, text):
    model = gpt.GPT(gpt.GPTConfig())
    with pytest.raises(trn.TrnError, match=text.replace("(", r"\(").replace(")", r"\)")):
        trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), gpt.loss_fn,
                         mesh=mesh)


def test_batch_not_divisible_by_dp(cache_dir):
    model = gpt.GPT(gpt.GPTConfig())
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), gpt.loss_fn,
                            cache_dir=cache_dir, mesh="dp=2")
    ids = torch.zeros(3, model.cfg.seq, dtype=torch.int64)
    with pytest.raises(trn.TrnError, match="has 3 rows, which dp=2 does not divide"):
        step(ids, ids)


@pytest.mark.parametrize("script", ["gpt.py", "llama.py", "bert.py", "transformer_encoder.py"])
def test_example_trains_at_a_mesh(script, cache_dir):
    common = ["--device", "trn", "--steps", "3", "--cache-dir", cache_dir, "--optimizer", "sgd",
              "--lr", "0.1"]
    single = run_example(script, *common)
    meshed = run_example(script, *common, "--mesh", "dp=2,tp=2")
    last = lambda proc: float(proc.stdout.strip().splitlines()[-1].split()[-1])  # noqa: E731
    # nn.MultiheadAttention's fused in_proj_bias: its key part's exact
    # gradient is zero, so what it holds is rounding noise, summed in another
    # order when partitioned (docs/frontend.md, "Numerics"); the parameters
    # that matter agree to 1e-7 on the evaluator.
    assert last(meshed) == pytest.approx(last(single), rel=1e-4)
    refused = run_example(script, "--mesh", "tp=2", check=False)
    assert refused.returncode != 0 and "--mesh partitions the step for --device trn" in refused.stderr


MPI_SCRIPT = r"""
import json, os, sys
import torch
sys.path.insert(0, sys.argv[1])
import gpt, trn
torch.manual_seed(0)
model = gpt.GPT(gpt.GPTConfig())
step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                        gpt.loss_fn, cache_dir=sys.argv[2], mesh="dp=2,tp=2")
g = torch.Generator().manual_seed(1)
losses = []
for _ in range(3):
    ids = torch.randint(0, 128, (4, 16), generator=g)
    labels = torch.randint(0, 128, (4, 16), generator=g)
    losses.append(float(step(ids, labels)))
state = {k: v.tolist() for k, v in model.state_dict().items() if k == "blocks.0.attn.qkv.weight"}
rank = os.environ["OMPI_COMM_WORLD_RANK"]
with open(os.path.join(sys.argv[3], f"rank{rank}.json"), "w") as out:
    json.dump({"processes": step.last_executable.program.processes, "losses": losses,
               "state": state}, out)
"""


def test_mesh_under_mpirun_runs_one_rank_per_process(cache_dir, tmp_path):
    """Under `mpirun -np 4` each process of the script is one rank of the
    dp=2 x tp=2 mesh, collectives over Open MPI; every process ends with the
    single-device losses and the whole parameters."""
    import shutil
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed (utils/setup.sh installs openmpi-bin)")
    script = tmp_path / "train.py"
    script.write_text(MPI_SCRIPT)
    proc = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4",
                           PYTHON, str(script), str(EXAMPLES), cache_dir, str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("rank*.json"))]
    assert len(reports) == 4
    ref_losses, ref_state, _ = _train(None, _sgd, cache_dir)
    ref = ref_state["blocks.0.attn.qkv.weight"]
    for report in reports:
        assert report["processes"] == 4
        assert report["losses"] == pytest.approx(ref_losses, rel=1e-5)
        got = torch.tensor(report["state"]["blocks.0.attn.qkv.weight"])
        assert float((got - ref).abs().max() / ref.abs().max()) < 1e-5


def test_user_sharding_wins_and_trains(cache_dir):
    """trn.shard(parameter, spec) is the graph's argument sharding, which
    wins over Megatron's plan (here the MLP's first weight split on its
    input features instead of its output features); the step still equals
    the single-device one."""
    ref_losses, ref_state, _ = _train(None, _sgd, cache_dir)
    torch.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig())
    assert trn.shard(model.blocks[0].mlp.fc.weight, (None, "tp")) is model.blocks[0].mlp.fc.weight
    step = trn.compile_step(model, _sgd(model.parameters()), gpt.loss_fn, cache_dir=cache_dir,
                            mesh="tp=2")
    generator = torch.Generator().manual_seed(1)
    losses = []
    for i in range(3):
        ids = torch.randint(0, model.cfg.vocab, (4, model.cfg.seq), generator=generator)
        labels = torch.randint(0, model.cfg.vocab, (4, model.cfg.seq), generator=generator)
        if i == 0:
            text = step.lower(ids, labels)
            assert text.startswith("dist.mesh @mesh <dp = 1, tp = 2>")
            assert ('trn.name = "blocks.0.mlp.fc.weight", trn.role = "parameter", '
                    'dist.sharding = #dist.sharding<@mesh, [{}, {"tp"}]>') in text
        losses.append(float(step(ids, labels)))
    assert losses == pytest.approx(ref_losses, rel=1e-5)
    assert _worst(model.state_dict(), ref_state) < 1e-5


@pytest.mark.parametrize("spec,text", [
    (("tp",), "has 1 entries but the tensor has 2 dimensions"),
    (("pp", None), "unknown mesh axis 'pp'"),
    (("tp", "tp"), "splits over 'tp' twice"),
    ("tp", "must be a sequence with one entry per dimension"),
])
def test_bad_shard_spec(spec, text):
    weight = torch.nn.Parameter(torch.zeros(4, 4))
    with pytest.raises(trn.TrnError, match=text):
        trn.shard(weight, spec)


def test_parallel_compile_analyze_checks_the_mesh(tmp_path):
    """trn-parallel-compile --command analyze on a script with --mesh: the
    manifest's HBM need is one rank's (the compiler partitions each traced
    graph, milliseconds), and a mesh the model cannot take is listed with
    the script's other problems, naming it."""
    tool = str(EXAMPLES.parent / "build" / "bin" / "trn-parallel-compile")
    def analyze(mesh, workdir):
        return subprocess.run([tool, "--command", "analyze", "--workdir", str(workdir), "--json",
                               str(workdir / "report.json"), "--", PYTHON,
                               str(EXAMPLES / "gpt.py"), "--device", "trn", "--steps", "1",
                               "--mesh", mesh], capture_output=True, text=True, timeout=300)
    whole = analyze("dp=1", tmp_path / "whole")
    split = analyze("tp=2", tmp_path / "tp2")
    assert whole.returncode == 0 and split.returncode == 0, split.stdout + split.stderr
    hbm = lambda d: json.loads((d / "report.json").read_text())["graphs"][0]["hbm_bytes_estimate"]  # noqa: E731
    assert hbm(tmp_path / "tp2") < hbm(tmp_path / "whole")
    bad = analyze("tp=3", tmp_path / "tp3")
    assert bad.returncode != 0
    assert "mesh 'tp=3' does not partition the step" in bad.stdout + bad.stderr
    assert "tp=3 does not divide 4 heads" in bad.stdout + bad.stderr
    # A pipeline: every stage's rank is measured; the manifest's need is
    # the stage that needs the most.
    piped = analyze("pp=2,tp=2", tmp_path / "pp2")
    assert piped.returncode == 0, piped.stdout + piped.stderr
    graph = json.loads((tmp_path / "pp2" / "report.json").read_text())["graphs"][0]
    footprint = _trn.mesh_footprint(Path(graph["graph"]).read_text(),
                                    ["--mesh", "pp=2,tp=2", "--microbatches", "2"])
    assert len(footprint["stages"]) == 2
    totals = [stage["total"] for stage in footprint["stages"]]
    assert footprint["total"] == max(totals) == graph["hbm_bytes_estimate"]
    assert footprint["stash"] > 0
