"""trn.compile_step(..., mesh="...pp=..."): a model traced once trains cut
into pipeline stages (one compiled artifact per stage, every rank on its own
simulated NeuronCore), with the single-device results."""

import subprocess
import sys

import pytest
import torch

import trn
from trn import _trn
from conftest import EXAMPLES, PYTHON

sys.path.insert(0, str(EXAMPLES))
import gpt  # noqa: E402  (the example's model)


def _train(mesh, cache_dir, steps=3, **options):
    torch.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = trn.compile_step(model, optimizer, gpt.loss_fn, cache_dir=cache_dir, mesh=mesh,
                            **options)
    generator = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        ids = torch.randint(0, model.cfg.vocab, (8, model.cfg.seq), generator=generator)
        labels = torch.randint(0, model.cfg.vocab, (8, model.cfg.seq), generator=generator)
        losses.append(float(step(ids, labels)))
    return losses, model.state_dict(), step


def _worst(state, reference):
    return max(float((a - b).abs().max() / (b.abs().max() + 1e-30))
               for a, b in zip(state.values(), reference.values()))


@pytest.mark.parametrize("mesh,options", [
    ("pp=2", {}),
    ("pp=2", {"microbatches": 4, "pipeline_schedule": "gpipe"}),
    ("dp=2,pp=2,tp=2", {}),
    # Microbatches without stages: gradient accumulation inside the step.
    ("dp=2", {"microbatches": 2}),
    (None, {"microbatches": 4}),
])
def test_pipeline_training_equals_single_device(mesh, options, cache_dir):
    ref_losses, ref_state, _ = _train(None, cache_dir)
    losses, state, step = _train(mesh, cache_dir, **options)
    assert losses == pytest.approx(ref_losses, rel=1e-5)
    assert {k: v.shape for k, v in state.items()} == {k: v.shape for k, v in ref_state.items()}
    assert _worst(state, ref_state) < 1e-5
    assert step.last_stats["stages"] == (2 if mesh and "pp=2" in mesh else 1)


def test_pipeline_compiles_one_cache_entry_per_stage(cache_dir):
    _, _, step = _train("pp=2", cache_dir, steps=1)
    assert len(step.graphs()) == 1
    # The second process finds every stage in the cache.
    _, _, again = _train("pp=2", cache_dir, steps=1)
    assert again.graphs()[0]["cache_status"] == "hit"


@pytest.mark.parametrize("options,text", [
    ({"mesh": "pp=2", "microbatches": 0}, "microbatches must be a positive integer"),
    ({"mesh": "pp=2", "pipeline_schedule": "zigzag"}, "pipeline_schedule must be"),
])
def test_bad_pipeline_options(options, text):
    model = gpt.GPT(gpt.GPTConfig())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(trn.TrnError, match=text):
        trn.compile_step(model, optimizer, gpt.loss_fn, **options)


def test_batch_not_divisible_by_the_microbatches(cache_dir):
    model = gpt.GPT(gpt.GPTConfig())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = trn.compile_step(model, optimizer, gpt.loss_fn, cache_dir=cache_dir,
                            mesh="dp=2,pp=2", microbatches=3)
    ids = torch.randint(0, model.cfg.vocab, (8, model.cfg.seq))
    with pytest.raises(trn.TrnError, match="dp=2 x 3 microbatches does not divide"):
        step(ids, ids)


def test_pipeline_under_mpirun_runs_one_rank_per_process(cache_dir, tmp_path):
    """Eight processes, one rank each (dp 2 x pp 2 x tp 2): the losses are
    the single-device ones."""
    ref_losses, _, _ = _train(None, cache_dir)
    script = tmp_path / "train.py"
    script.write_text(f"""
import os, sys, torch, trn
sys.path.insert(0, {str(EXAMPLES)!r})
import gpt
torch.manual_seed(0)
model = gpt.GPT(gpt.GPTConfig())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
step = trn.compile_step(model, optimizer, gpt.loss_fn, cache_dir={cache_dir!r},
                        mesh="dp=2,pp=2,tp=2")
generator = torch.Generator().manual_seed(1)
losses = []
for _ in range(3):
    ids = torch.randint(0, model.cfg.vocab, (8, model.cfg.seq), generator=generator)
    labels = torch.randint(0, model.cfg.vocab, (8, model.cfg.seq), generator=generator)
    losses.append(float(step(ids, labels)))
rank = os.environ["OMPI_COMM_WORLD_RANK"]
with open(os.path.join({str(tmp_path)!r}, "losses." + rank), "w") as out:
    out.write(" ".join(map(str, losses)))
""")
    proc = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "8",
                           "-x", "OMPI_MCA_btl_tcp_if_include=lo", PYTHON, str(script)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # Every process holds the same losses.
    for rank in range(8):
        values = [float(v) for v in (tmp_path / f"losses.{rank}").read_text().split()]
        assert values == pytest.approx(ref_losses, rel=1e-5)


class _ThreeLayers(torch.nn.Module):
    """Parameters without layer indices: only markers can cut it."""

    def __init__(self, cut_after: str) -> None:
        super().__init__()
        self.cut_after = cut_after
        self.first = torch.nn.Linear(16, 16)
        self.second = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.first(x))
        if self.cut_after == "first":
            x = trn.pipeline_stage(x)
        x = torch.tanh(self.second(x))
        if self.cut_after == "second":
            x = trn.pipeline_stage(x)
        return self.head(x)


def _mse(model, x, y):
    return ((model(x) - y) ** 2).mean()


def _train_marked(cut_after, mesh, cache_dir, steps=3):
    torch.manual_seed(0)
    model = _ThreeLayers(cut_after)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(12, 16, generator=generator)
    y = torch.randn(12, 4, generator=generator)
    if mesh is None:
        losses = []
        for _ in range(steps):
            optimizer.zero_grad()
            loss = _mse(model, x, y)
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
        return losses, model.state_dict(), None
    step = trn.compile_step(model, optimizer, _mse, cache_dir=cache_dir, mesh=mesh)
    losses = [float(step(x, y)) for _ in range(steps)]
    return losses, model.state_dict(), step


@pytest.mark.parametrize("cut_after", ["first", "second"])
def test_pipeline_stage_markers_cut_where_the_model_says(cut_after, cache_dir):
    """trn.pipeline_stage(x) is the identity on the CPU and the cut under pp:
    the marked model trains with the CPU's results, and the stage that holds
    two of the three layers is the larger."""
    ref_losses, ref_state, _ = _train_marked(cut_after, None, cache_dir)
    losses, state, step = _train_marked(cut_after, "dp=2,pp=2", cache_dir)
    assert losses == pytest.approx(ref_losses, rel=1e-5)
    assert _worst(state, ref_state) < 1e-5
    assert step.last_stats["stages"] == 2
    (exe,) = step._executables.values()
    stages = _trn.mesh_footprint(exe.graph.text, step.flags)["stages"]
    params = [stage["parameters"] for stage in stages]
    assert (params[0] < params[1]) == (cut_after == "first")


def test_pipeline_stage_markers_are_ignored_without_pp(cache_dir):
    ref_losses, _, _ = _train_marked("first", None, cache_dir)
    losses, _, _ = _train_marked("first", "dp=2", cache_dir)
    assert losses == pytest.approx(ref_losses, rel=1e-5)


def test_pipeline_stage_markers_must_match_pp(cache_dir):
    with pytest.raises(trn.CompileError,
                       match="markers cut its forward into 2 stages but the mesh has pp=3"):
        _train_marked("first", "pp=3", cache_dir, steps=1)


def test_pipeline_stage_takes_a_tensor():
    with pytest.raises(trn.TrnError, match="trn.pipeline_stage takes a tensor"):
        trn.pipeline_stage([1, 2])
    x = torch.randn(3, requires_grad=True)
    y = trn.pipeline_stage(x)
    assert torch.equal(y, x)
    y.sum().backward()
    assert torch.equal(x.grad, torch.ones(3))
