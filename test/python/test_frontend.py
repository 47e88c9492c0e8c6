"""The frontend's translation of aten ops, its errors and extraction mode."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import trn
from conftest import EXAMPLES, PYTHON, run_example


class OpModel(torch.nn.Module):
    """y = f(x * w + b) for an op under test; parameters get gradients
    through the op, so its backward translation is exercised too."""

    def __init__(self, fn):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w = torch.nn.Parameter(torch.randn(4, 8, generator=g))
        self.b = torch.nn.Parameter(torch.randn(8, generator=g) * 0.1)
        self.fn = fn

    def forward(self, x):
        return self.fn(x * self.w + self.b)


def _loss(model, x):
    y = model(x)
    return (y.float() * y.float()).mean()


OPS = {
    "exp_log_tanh": lambda h: torch.log1p(torch.exp(torch.tanh(h))),
    "sigmoid_silu_relu": lambda h: torch.sigmoid(h) + F.silu(h) + F.relu(h),
    "gelu_erf_tanh": lambda h: F.gelu(h) + F.gelu(h, approximate="tanh"),
    "pow_sqrt_rsqrt": lambda h: h.pow(2) + (h * h + 1).sqrt() + (h * h + 1).rsqrt() + h ** 3,
    "div_reciprocal": lambda h: h / (h.abs() + 1) + 1.0 / (h * h + 2),
    "clamp_min_max": lambda h: h.clamp(-0.5, 0.5) + torch.maximum(h, -h) + h.clamp_min(0.1),
    "where_masked_fill": lambda h: torch.where(h > 0, h, 2 * h).masked_fill(h < -1, 0.0),
    "tril_triu": lambda h: torch.tril(h) + torch.triu(h, 1) * 2,
    "softmax_log_softmax": lambda h: F.softmax(h, -1) + F.log_softmax(h, 0),
    "layer_norm": lambda h: F.layer_norm(h, (8,)),
    "mean_amax_sum": lambda h: h - h.mean(-1, keepdim=True) + h.amax(0) + h.sum(),
    "transpose_reshape": lambda h: (h.t() @ h).reshape(4, 16).permute(1, 0),
    "cat_stack_split": lambda h: torch.cat(list(torch.split(h, 3, dim=1))[::-1], 1)
    + torch.stack(h.unbind(0), 0),
    "slice_select": lambda h: h[:, 1:7].sum(1) + h[2].sum() + h[:, -1] + h[0:3:2].sum(0).sum(),
    "index_select_repeat": lambda h: h.index_select(0, torch.tensor([0, 3, 3, 1])).repeat(2, 1),
    "advanced_index": lambda h: h[torch.tensor([3, 0, 0])] * 2,
    "expand_bmm": lambda h: torch.bmm(h.unsqueeze(0).expand(3, 4, 8),
                                      h.t().unsqueeze(0).expand(3, 8, 4)),
    "cross_entropy": lambda h: F.cross_entropy(h, torch.tensor([1, 0, 7, -100]),
                                               reduction="none") + h.sum(1),
    "to_bf16_and_back": lambda h: h.to(torch.bfloat16).to(torch.float32) * h,
    "leaky_relu_hardtanh_softplus": lambda h: F.leaky_relu(h, 0.1) + F.relu6(h * 4)
    + F.hardtanh(h) + F.softplus(h * 3, beta=2.0, threshold=2.0),
    "var_std": lambda h: (h - h.mean(1, keepdim=True)) / (h.var(1, keepdim=True) + 1).sqrt()
    + h.std(0) + h.var(unbiased=False),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_translation_matches_pytorch(name, cache_dir):
    fn = OPS[name]
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(7))
    ref, dev = OpModel(fn), OpModel(fn)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    dev_opt = torch.optim.SGD(dev.parameters(), lr=0.1)
    step = trn.compile_step(dev, dev_opt, _loss, cache_dir=cache_dir)
    for _ in range(2):
        expected = _loss(ref, x)
        ref_opt.zero_grad()
        expected.backward()
        ref_opt.step()
        got = step(x)
        assert abs(got.item() - expected.item()) <= 1e-4 * abs(expected.item()) + 1e-6
    for a, b in zip(ref.parameters(), dev.parameters()):
        assert (a - b).norm() <= 1e-4 * a.norm() + 1e-6


def test_unsupported_op_names_op_shapes_and_line(cache_dir):
    model = OpModel(lambda h: torch.cumprod(h, 1))
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            _loss, cache_dir=cache_dir)
    with pytest.raises(trn.UnsupportedOpError) as info:
        step(torch.randn(4, 8))
    message = str(info.value)
    assert "aten.cumprod" in message and "f32[4, 8]" in message
    assert "test_frontend.py" in message and "torch.cumprod(h, 1)" in message
    assert "\n" not in message


def test_python_control_flow_on_tensor_values_is_refused(cache_dir):
    def branchy(h):
        if h.sum() > 0:  # data-dependent control flow
            return h * 2
        return h

    model = OpModel(branchy)
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            _loss, cache_dir=cache_dir)
    with pytest.raises(trn.UnsupportedOpError) as info:
        step(torch.randn(4, 8))
    assert "test_frontend.py" in str(info.value)


@pytest.mark.parametrize("kwargs, text", [
    ({"grad_accum": 0}, "grad_accum must be a positive integer"),
    ({"flags": "--auto-cast sometimes"}, "bad compile flags"),
    ({"max_grad_norm": -1.0}, "max_grad_norm"),
    ({"max_grad_norm": float("nan")}, "max_grad_norm"),
    ({"sync": "never"}, "sync must be"),
])
def test_bad_arguments(kwargs, text):
    model = OpModel(lambda h: h)
    with pytest.raises(trn.TrnError, match=text):
        trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                         _loss, **kwargs)


def test_non_tensor_input_and_meta_model():
    model = OpModel(lambda h: h)
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), _loss)
    with pytest.raises(trn.TrnError, match="is a int"):
        step(3)
    meta = OpModel(lambda h: h).to_empty(device="meta")
    step = trn.compile_step(meta, torch.optim.SGD(meta.parameters(), lr=0.1), _loss)
    with pytest.raises(trn.TrnError, match="meta device"):
        step(torch.randn(4, 8))


def test_schedule_changes_lr_without_retrace(cache_dir):
    model = OpModel(torch.tanh)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    step = trn.compile_step(model, opt, _loss, cache_dir=cache_dir)
    x = torch.randn(4, 8)
    step(x)
    opt.param_groups[0]["lr"] = 0.01
    step(x)
    assert len(step._executables) == 1
    assert opt.state_dict()["state"][0]["step"].item() == 2.0


def _extract(tmp_path, script, *args, max_steps=None):
    manifest = tmp_path / "graphs" / "manifest.jsonl"
    env = {"TRN_EXTRACT_GRAPHS_ONLY": "1", "TRN_GRAPH_MANIFEST": str(manifest)}
    if max_steps:
        env["TRN_EXTRACT_MAX_STEPS"] = str(max_steps)
    proc = run_example(script, "--device", "trn", "--steps", "50", *args, env=env)
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    return proc, manifest, lines


def test_extraction_writes_manifest_and_stops(tmp_path):
    proc, manifest, lines = _extract(tmp_path, "gpt.py", "--grad-accum", "3")
    assert "extraction done" in proc.stderr
    # Micro-step, micro-step, update: two optimizer steps that bring no new
    # graph end it after three windows (9 calls), the update graph included.
    assert len(lines) == 9
    keys = {line["key"] for line in lines}
    assert len(keys) == 2
    assert [line["graph_name"] for line in lines[:3]] == [
        "train_micro_step", "train_micro_step", "train_step"]
    for line in lines:
        assert Path(line["graph"]).is_file()
        assert line["graph"] == str(manifest.parent / f"{line['key']}.mlir")
        assert line["call_site"].startswith(str(EXAMPLES))
        assert line["ops"] > 100 and line["estimated_compile_seconds"] > 0
        assert [i["name"] for i in line["inputs"]] == ["input_ids", "labels"]
        assert line["inputs"][0]["shape"] == [4, 16]
        assert line["script"].endswith("gpt.py")
    # The written graph is the graph the key names.
    text = Path(lines[0]["graph"]).read_text()
    from trn import _trn
    assert _trn.graph_key(text, []) == lines[0]["key"]


def test_extraction_max_steps_and_concurrent_appends(tmp_path):
    manifest = tmp_path / "graphs" / "manifest.jsonl"
    env = dict(os.environ, TRN_EXTRACT_GRAPHS_ONLY="1", TRN_GRAPH_MANIFEST=str(manifest),
               TRN_EXTRACT_MAX_STEPS="3")
    procs = [subprocess.Popen([PYTHON, str(EXAMPLES / script), "--device", "trn",
                               "--quiet"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
             for script in ("gpt.py", "llama.py")]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert len(lines) == 6
    assert {Path(line["script"]).name for line in lines} == {"gpt.py", "llama.py"}


def test_extraction_of_a_meta_preset(tmp_path):
    proc, _, lines = _extract(tmp_path, "llama.py", "--config", "llama3-70b",
                              "--layers", "1", "--seq", "256", max_steps=1)
    assert len(lines) == 1
    assert lines[0]["inputs"][0]["shape"] == [1, 256]


def test_state_loaded_after_wrapping_wins(cache_dir):
    """optimizer/model.load_state_dict after compile_step: the next steps
    continue from the loaded state, as they would in PyTorch."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(11))
    model = OpModel(torch.tanh)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    step = trn.compile_step(model, opt, _loss, cache_dir=cache_dir, sync="manual",
                            max_grad_norm=0)
    for _ in range(3):
        step(x)
    step.sync()
    saved_model = {k: v.clone() for k, v in model.state_dict().items()}
    saved_opt = __import__("copy").deepcopy(opt.state_dict())
    later = [step(x).item() for _ in range(2)]
    step(x)  # the device moves on; the host copy is stale (sync="manual")
    model.load_state_dict(saved_model)
    opt.load_state_dict(saved_opt)
    step.sync()  # must not overwrite what was just loaded
    assert torch.equal(model.w, saved_model["w"])
    again = [step(x).item() for _ in range(2)]
    assert again == pytest.approx(later, rel=1e-6)


def test_make_fx_fallback_traces_the_same_step(cache_dir, monkeypatch):
    """When the recorder cannot run a step (an op without a meta kernel), the
    step is traced with make_fx instead, with the same result."""
    from trn import _record

    def no_meta_kernel(*args, **kwargs):
        raise NotImplementedError("no meta kernel")

    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(5))
    fn = OPS["layer_norm"]
    recorded = OpModel(fn)
    step = trn.compile_step(recorded, torch.optim.SGD(recorded.parameters(), lr=0.1),
                            _loss, cache_dir=cache_dir)
    first = step(x).item()
    monkeypatch.setattr(_record, "record", no_meta_kernel)
    traced = OpModel(fn)
    step = trn.compile_step(traced, torch.optim.SGD(traced.parameters(), lr=0.1),
                            _loss, cache_dir=cache_dir)
    assert step(x).item() == pytest.approx(first, rel=1e-6)
    assert step.last_executable.graph.ops > 10


def test_evaluate_runs_forward_only_with_device_parameters(cache_dir):
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(2))
    ref, dev = OpModel(torch.tanh), OpModel(torch.tanh)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    step = trn.compile_step(dev, torch.optim.SGD(dev.parameters(), lr=0.1), _loss,
                            cache_dir=cache_dir, sync="manual")
    step(x)
    loss = _loss(ref, x)
    loss.backward()
    ref_opt.step()
    with torch.no_grad():
        expected = _loss(ref, x).item()
    before = dict(step._home)
    assert step.evaluate(x).item() == pytest.approx(expected, rel=1e-5)
    assert step.evaluate(x).item() == pytest.approx(expected, rel=1e-5)  # no update
    assert step._home == before
    graph = step.last_executable.graph
    assert graph.text.startswith("func.func @eval_step(")
    assert all(spec.aliases is None for spec, _, _ in graph.results)


def test_data_dependent_shape_is_refused(cache_dir):
    model = OpModel(lambda h: h[h > 0].sum().reshape(1, 1))
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            _loss, cache_dir=cache_dir)
    with pytest.raises(trn.UnsupportedOpError) as info:
        step(torch.randn(4, 8))
    assert "boolean mask gives a data-dependent shape" in str(info.value)
    assert "h[h > 0]" in str(info.value)


def test_parameter_groups_with_their_own_lr_and_weight_decay(cache_dir):
    """Biases without weight decay and a higher lr, as training scripts do:
    one learning-rate input per group, each group's hyper-parameters."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(4))

    def groups(model):
        return [{"params": [model.w], "weight_decay": 0.1, "lr": 0.01},
                {"params": [model.b], "weight_decay": 0.0, "lr": 0.05}]

    ref, dev = OpModel(torch.tanh), OpModel(torch.tanh)
    ref_opt = torch.optim.AdamW(groups(ref))
    dev_opt = torch.optim.AdamW(groups(dev))
    step = trn.compile_step(dev, dev_opt, _loss, cache_dir=cache_dir)
    for i in range(4):
        dev_opt.param_groups[1]["lr"] = ref_opt.param_groups[1]["lr"] = 0.05 / (i + 1)
        expected = _loss(ref, x)
        ref_opt.zero_grad()
        expected.backward()
        ref_opt.step()
        assert step(x).item() == pytest.approx(expected.item(), rel=1e-5)
    for a, b in zip(ref.parameters(), dev.parameters()):
        assert (a - b).norm() <= 1e-5 * a.norm()
    assert "lr.1" in step.last_executable.graph.text


def test_buffer_updated_in_place_is_refused(cache_dir):
    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))
            self.register_buffer("seen", torch.zeros(()))

        def forward(self, x):
            self.seen.add_(1)
            return (x * self.w).sum()

    model = Counting()
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            lambda m, x: m(x), cache_dir=cache_dir)
    with pytest.raises(trn.UnsupportedOpError, match="updates the step input 'seen'"):
        step(torch.ones(3))


class _TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _cross_entropy(model, x, y):
    return F.cross_entropy(model(x), y)


def test_parameters_the_optimizer_misses_are_named(cache_dir):
    model = _TwoLayers()
    step = trn.compile_step(model, torch.optim.SGD(model.fc1.parameters(), lr=0.1),
                            _cross_entropy, cache_dir=cache_dir)
    with pytest.raises(trn.TrnError, match="no parameter group for the trainable "
                       "parameters 'fc2.weight', 'fc2.bias' of the model"):
        step(torch.randn(4, 8), torch.randint(0, 4, (4,)))


def test_loss_fn_without_the_model_argument_shows_the_signature(cache_dir):
    model = _TwoLayers()

    def loss_fn(x, labels):
        return F.cross_entropy(model(x), labels)

    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            loss_fn, cache_dir=cache_dir)
    with pytest.raises(trn.TrnError, match=r"loss_fn\(x, labels\) cannot take the model "
                       r"and the step's 2 inputs: .* `def loss_fn\(model, x, labels\):`"):
        step(torch.randn(4, 8), torch.randint(0, 4, (4,)))


def test_batchnorm_in_train_mode_says_what_to_do(cache_dir):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16),
                                torch.nn.Linear(16, 4))
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            _cross_entropy, cache_dir=cache_dir)
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))
    with pytest.raises(trn.UnsupportedOpError, match=r"model\[1\] \(BatchNorm1d\) updates "
                       r"its running statistics .* call model\[1\]\.eval\(\) .* "
                       "track_running_stats=False"):
        step(x, y)
    # What the message says works: the running statistics, read only.
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16),
                                    torch.nn.Linear(16, 4))
    reference.load_state_dict(model.state_dict())
    model[1].eval()
    reference[1].eval()
    expected = _cross_entropy(reference, x, y)
    assert step(x, y).item() == pytest.approx(expected.item(), rel=1e-5)


def test_backward_after_the_step_explains(cache_dir):
    model = _TwoLayers()
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            _cross_entropy, cache_dir=cache_dir)
    loss = step(torch.randn(4, 8), torch.randint(0, 4, (4,)))
    with pytest.raises(trn.TrnError, match=r"loss.backward\(\) after a trn step: the step "
                       "already ran the backward pass"):
        loss.backward()
    # Otherwise the loss is the plain 0-dim tensor it was.
    assert repr(loss).startswith("tensor(")
    assert not loss.requires_grad and loss.shape == ()
    assert float(loss.numpy()) == loss.item()
    assert type(loss * 2) is torch.Tensor


def test_a_dtype_error_is_raised_as_eager_pytorch_raises_it(cache_dir):
    """cross_entropy with float class indices: eager PyTorch's RuntimeError,
    with the user's line (and still a trn.UnsupportedOpError)."""
    model = _TwoLayers()
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            lambda m, x, y: F.cross_entropy(m(x), y.float()),
                            cache_dir=cache_dir)
    with pytest.raises(RuntimeError, match=r"tracing the step failed at .*test_frontend.py:\d+: "
                       r".*RuntimeError: expected target dtype to be Long") as info:
        step(torch.randn(4, 8), torch.randint(0, 4, (4,)))
    assert isinstance(info.value, trn.UnsupportedOpError)
    assert "please report" not in str(info.value)


def test_each_graph_says_whether_it_was_cached_and_why_not(tmp_path, caplog):
    """One INFO line per compiled graph: found in the cache, or compiled and
    why the cache did not have it when it holds the graph with other flags
    (trn-parallel-compile run with TRN_CC_FLAGS the training run lacks). A
    cache of its own: other tests compile the same graph."""
    import logging
    caplog.set_level(logging.INFO, logger="trn")
    cache_dir = str(tmp_path / "cache")
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))
    for flags, expected in [("", "cache miss: no entry has this graph and these flags"),
                            ("", "found in the compile cache"),
                            ("--auto-cast matmul", "cache miss: the graph is cached with other "
                             "flags (auto-cast: none there, matmul here; trn-cache explain")]:
        torch.manual_seed(0)
        model = _TwoLayers()
        caplog.clear()
        step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                _cross_entropy, cache_dir=cache_dir, flags=flags)
        step(x, y)
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step graph")]
        assert len(lines) == 1 and expected in lines[0], (flags, lines)


def test_every_unsupported_op_is_named_at_once(cache_dir):
    """Two unsupported ops in the forward: both named, with their lines, in
    one error (not one per rerun); their gradients' problems are counted."""

    def body(h):
        h = torch.cumprod(h, dim=1)
        return torch.special.erfcx(h)

    model = OpModel(body)
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), _loss,
                            cache_dir=cache_dir)
    with pytest.raises(trn.UnsupportedOpError) as info:
        step(torch.randn(4, 8))
    message = str(info.value)
    assert message.startswith("2 problems (and 2 in the backward part that follow from "
                              "them): (1) unsupported PyTorch op aten.cumprod"), message
    assert "(2) unsupported PyTorch op aten.special_erfcx" in message
    assert message.count("test_frontend.py:") == 2


def _philox_word(seed: int, stream: int, index: int) -> int:
    """Philox4x32-10 word 0 (docs/isa.md, rng), written out independently
    of the C++ one so that the test checks the device's masks bit for bit."""
    mask = 0xFFFFFFFF
    key0, key1 = seed & mask, (seed >> 32) & mask
    c0, c1, c2, c3 = index & mask, (index >> 32) & mask, stream, 0
    for round_ in range(10):
        if round_:
            key0, key1 = (key0 + 0x9E3779B9) & mask, (key1 + 0xBB67AE85) & mask
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ key0, p1 & mask,
                          (p0 >> 32) ^ c3 ^ key1, p0 & mask)
    return c0


class DropoutModel(torch.nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.w = torch.nn.Parameter(torch.arange(1.0, 65.0).reshape(8, 8))
        self.drop = torch.nn.Dropout(p)

    def forward(self, x):
        return self.drop(self.w * x)


def test_dropout_masks_are_philox_and_shared_by_forward_and_backward(cache_dir):
    p = 0.25
    model = DropoutModel(p)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    step = trn.compile_step(model, opt, lambda m, x: m(x).sum(), cache_dir=cache_dir)
    x = torch.ones(8, 8)
    masks = []
    for call in range(2):
        torch.manual_seed(100 + call)
        seed = int(torch.randint(0, 2 ** 62, (), dtype=torch.int64))
        torch.manual_seed(100 + call)
        before = model.w.detach().clone()
        loss = step(x)
        # Element i is kept when its 24-bit draw is below (1 - p) * 2^24.
        keep = torch.tensor([(_philox_word(seed, 0, i) >> 8) < (1 - p) * 2 ** 24
                             for i in range(64)]).reshape(8, 8)
        scale = 1 / (1 - p)
        # Forward: the kept weights, scaled; backward: the same mask, so SGD
        # with lr 1 moves exactly the kept weights by the scale.
        assert loss.item() == pytest.approx((before * keep).sum().item() * scale, rel=1e-6)
        moved = before - model.w.detach()
        assert torch.allclose(moved, keep.float() * scale)
        masks.append(keep)
    assert 0 < masks[0].sum() < 64
    assert not torch.equal(masks[0], masks[1]), "a fresh seed every step"
    # eval(): dropout is the identity and draws no seed.
    model.eval()
    state = torch.get_rng_state()
    assert step.evaluate(x).item() == pytest.approx((model.w.detach() * x).sum().item())
    assert torch.equal(state, torch.get_rng_state())


def test_constants_of_any_rank(cache_dir):
    """A constant the step makes from Python data (a [3, 2] and a [2, 1, 2]
    tensor) keeps its shape in the graph; one SGD step equals PyTorch's."""
    from gradcheck import assert_sgd_step_parity

    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x):
            y = self.lin(x) * torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
            return y + torch.tensor([[[0.5, -1.0]], [[2.0, 0.25]]]).sum(0)

    assert_sgd_step_parity(Scaled, lambda m, x: m(x).pow(2).mean(), (torch.randn(3, 2),),
                           cache_dir=cache_dir)
