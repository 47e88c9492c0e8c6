"""Idioms of library model code (Hugging Face `transformers` uses each of
these), written the way that code writes them, each checked by one SGD
step against PyTorch in every parameter (gradcheck.py)."""

import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import trn

from gradcheck import assert_sgd_step_parity

VOCAB, HIDDEN = 16, 8


class _TokenModel(nn.Module):
    """Embedding -> `body(h, ids)` -> LM head: the idiom under test is the body."""

    def __init__(self, body):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB)
        self.body = body

    def forward(self, ids):
        return self.head(self.body(self.proj(self.emb(ids)), ids))


def _lm_loss(model, ids, labels):
    logits = model(ids)
    return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))


def _batch(rows=2, seq=6):
    g = torch.Generator().manual_seed(3)
    return (torch.randint(1, VOCAB, (rows, seq), generator=g),
            torch.randint(0, VOCAB, (rows, seq), generator=g))


def _check(body, cache_dir, loss=_lm_loss, batch=None):
    assert_sgd_step_parity(lambda: _TokenModel(body), loss, batch or _batch(),
                           cache_dir=cache_dir)


def test_cumsum_and_its_gradient(cache_dir):
    """OPT's and RoBERTa's position ids are a cumsum of the mask; here a
    running sum of activations, so its gradient (a flipped cumsum) counts."""
    _check(lambda h, ids: torch.cumsum(h, dim=1) / 4, cache_dir)


def test_cumsum_of_an_integer_mask(cache_dir):
    """RoBERTa: position ids from the non-padding mask, as integers."""
    table = torch.randn(12, HIDDEN)

    def body(h, ids):
        mask = ids.ne(1).int()
        positions = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1
        return h + F.embedding(positions, table)
    _check(body, cache_dir)


def test_gather_along_a_dimension(cache_dir):
    """torch.gather with several picks per row (ALBERT and ELECTRA gather a
    token-type buffer with the position ids), and its gradient."""
    index = torch.tensor([[0, 2, 2, 5, 1, 7], [7, 6, 0, 0, 3, 4]])[:, :, None].expand(-1, -1, 4)

    def body(h, ids):
        picked = torch.gather(h, 2, index)
        return h + picked.sum(-1, keepdim=True)
    _check(body, cache_dir)


def test_gather_from_a_buffer_row(cache_dir):
    buffered = torch.arange(32).remainder(2)[None, :]  # [1, 32] token types
    types = nn.Embedding(2, HIDDEN)

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.types = types
            self.register_buffer("token_type_ids", buffered, persistent=False)

        def forward(self, h, ids):
            positions = torch.arange(ids.shape[1])[None, :]
            token_types = torch.gather(self.token_type_ids, dim=1, index=positions)
            return h + self.types(token_types.expand(ids.shape[0], -1))
    _check(Body(), cache_dir)


def test_labels_padded_and_shifted(cache_dir):
    """Hugging Face's causal-LM loss pads the labels with ignore_index and
    shifts them: F.pad of an integer tensor."""

    def loss(model, ids, labels):
        logits = model(ids)
        labels = F.pad(labels, (0, 1), value=-100)[:, 1:]
        return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1),
                               ignore_index=-100)
    _check(lambda h, ids: h, cache_dir, loss=loss)


def test_write_into_a_slice(cache_dir):
    """T5's and BART's shift_tokens_right: a new tensor, written in place
    through slices (`shifted[:, 1:] = ids[:, :-1]`), then used."""
    table = torch.randn(VOCAB, HIDDEN)

    def body(h, ids):
        shifted = ids.new_zeros(ids.shape)
        shifted[:, 1:] = ids[:, :-1].clone()
        shifted[:, 0] = 3
        shifted.masked_fill_(shifted == 5, 1)
        return h + F.embedding(shifted, table)
    _check(body, cache_dir)


def test_write_into_a_slice_of_activations(cache_dir):
    """An in-place write through a view of a tensor that needs a gradient."""

    def body(h, ids):
        out = h.clone()
        out[:, :, :4] = h[:, :, 4:] * 2
        out[:, 0] = 0
        return out
    _check(body, cache_dir)


def test_constant_made_on_the_activations_device(cache_dir):
    """GPT-Neo: `torch.tensor(value, dtype=..., device=x.device)` as a mask
    value, then torch.where with a boolean buffer."""

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bias", torch.tril(torch.ones(6, 6, dtype=torch.bool)))

        def forward(self, h, ids):
            scores = h @ h.transpose(1, 2)
            low = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype,
                               device=scores.device)
            weights = torch.where(self.bias, scores, low).softmax(-1)
            return weights @ h
    _check(Body(), cache_dir)


def test_library_code_sees_a_compiler(cache_dir):
    """While trn traces, torch.compiler.is_compiling() is true, as under
    torch.compile: library code skips data-dependent shortcuts."""
    seen = []

    def body(h, ids):
        seen.append(torch.compiler.is_compiling())
        return h
    _check(body, cache_dir)
    assert seen[-1] is True and not torch.compiler.is_compiling()


@pytest.mark.parametrize("dims", [[1], [2], [1, 2]])
def test_flip(dims, cache_dir):
    _check(lambda h, ids: h + torch.flip(h, dims) * 0.5, cache_dir)


class _ConfiguredBatch(nn.Module):
    """Research code that takes the batch size from its config:
    `q.view(cfg.batch, seq, heads, head_dim)`."""

    def __init__(self, batch: int):
        super().__init__()
        self.batch = batch
        self.emb = nn.Embedding(VOCAB, HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        seq = ids.shape[1]
        q, k, v = self.qkv(self.emb(ids)).chunk(3, dim=-1)
        q, k, v = (t.view(self.batch, seq, 2, HIDDEN // 2).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.head(a.transpose(1, 2).reshape(self.batch, seq, HIDDEN))


@pytest.mark.parametrize("mesh", ["dp=2", "dp=2,tp=2"])
def test_a_batch_size_from_the_config_under_dp(mesh, cache_dir):
    """Traced at one replica's share the view fails; the step is then traced
    at the batch the user passed and dp splits it in the compiler."""
    batch = _batch(rows=4)
    assert_sgd_step_parity(lambda: _ConfiguredBatch(4), _lm_loss, batch, mesh=mesh,
                           cache_dir=cache_dir)


def test_a_batch_size_from_the_config_under_pp_is_refused(cache_dir):
    class Layered(_ConfiguredBatch):
        def __init__(self, batch):
            super().__init__(batch)
            self.layers = nn.ModuleList([nn.Linear(HIDDEN, HIDDEN) for _ in range(2)])

        def forward(self, ids):
            h = self.emb(ids).view(self.batch, ids.shape[1], HIDDEN)
            for layer in self.layers:
                h = h + layer(h)
            return self.head(h)

    model = Layered(8)
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), _lm_loss,
                            mesh="dp=2,pp=2", cache_dir=cache_dir)
    with pytest.raises(trn.UnsupportedOpError, match="take the size from the input's shape"):
        step(*_batch(rows=8))


@pytest.mark.parametrize("op", ["nonzero", "where", "unique", "masked_select"])
def test_data_dependent_shapes_are_refused_with_what_to_do(op, cache_dir):
    """MoE routing written with torch.where(mask) (nonzero), unique or
    masked_select: one line naming the op and the user's line, and the
    fixed-capacity alternative."""
    def body(h, ids):
        mask = ids > 7
        if op == "nonzero":
            rows = mask.nonzero()[:, 0]
        elif op == "where":
            rows = torch.where(mask)[0]
        elif op == "unique":
            rows = torch.unique(ids)
        else:
            return torch.masked_select(h, mask[:, :, None]).sum() + h
        return h + h[rows].sum()

    model = _TokenModel(body)
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), _lm_loss,
                            cache_dir=cache_dir)
    with pytest.raises(trn.UnsupportedOpError) as info:
        step(*_batch())
    message = str(info.value)
    assert "shape depends on the values" in message and "fixed capacity" in message
    assert "test_idioms.py" in message and "\n" not in message


@pytest.mark.parametrize("conv", [
    dict(kernel_size=3, padding=1),                       # Whisper's first
    dict(kernel_size=3, stride=2, padding=1),             # Whisper's second
    dict(kernel_size=5, padding=2, groups=HIDDEN),        # ConvBERT's depthwise
    dict(kernel_size=3, dilation=2, padding=2, bias=False),
])
def test_conv1d(conv, cache_dir):
    """nn.Conv1d (Whisper's audio stem, ConvBERT's depthwise convolution):
    its weight, bias and input gradients."""

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(HIDDEN, HIDDEN, **conv)

        def forward(self, h, ids):
            y = self.conv(h.transpose(1, 2))
            return F.pad(y, (0, h.shape[1] - y.shape[2])).transpose(1, 2) + h
    _check(Body(), cache_dir)


@pytest.mark.parametrize("mesh, rows", [(None, 1), (None, 2), (None, 3), ("dp=2", 2),
                                        ("dp=2", 6), ("dp=2,tp=2", 4)])
@pytest.mark.parametrize("mode", ["batch statistics", "running statistics"])
def test_batchnorm_after_a_convolution(mode, mesh, rows, cache_dir):
    """nn.BatchNorm1d after nn.Conv1d (wav2vec2's and ConvNets' blocks): with
    the batch's statistics (track_running_stats=False, in train mode: its
    gradient runs through the statistics) or, in eval mode, with running
    statistics as buffers. Train mode with running statistics updates them,
    which trn refuses with what to do (test_frontend.py). Under dp the
    statistics are the global batch's (as SyncBatchNorm's), so the step equals
    PyTorch's on the whole batch."""

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            # No bias before a norm (its gradient is 0 under batch statistics).
            self.conv = nn.Conv1d(HIDDEN, HIDDEN, kernel_size=3, padding=1, bias=False)
            self.norm = nn.BatchNorm1d(HIDDEN, track_running_stats=mode != "batch statistics")
            if mode == "running statistics":
                g = torch.Generator().manual_seed(5)
                self.norm.running_mean.copy_(torch.randn(HIDDEN, generator=g))
                self.norm.running_var.copy_(torch.rand(HIDDEN, generator=g) + 0.5)
                self.norm.eval()

        def forward(self, h, ids):
            return self.norm(self.conv(h.transpose(1, 2))).transpose(1, 2) + h
    assert_sgd_step_parity(lambda: _TokenModel(Body()), _lm_loss, _batch(rows=rows),
                           mesh=mesh, cache_dir=cache_dir)


def test_unfold_along_one_dimension(cache_dir):
    """ConvBERT's span-based convolution: F.unfold of [B, C, S, 1] with a
    (K, 1) kernel, and its gradient (F.fold)."""

    def body(h, ids):
        cols = F.unfold(h.transpose(1, 2).unsqueeze(-1), kernel_size=(3, 1), padding=(1, 0))
        cols = cols.view(h.shape[0], HIDDEN, 3, h.shape[1]).sum(2)
        return h + cols.transpose(1, 2)
    _check(body, cache_dir)


class _Buffered(nn.Module):
    """Buffers as library code registers them: a causal mask [1, 1, T, T]
    on each block, sliced and broadcast over batch and heads; rotary cos/sin
    tables on the root (persistent=False); an integer buffer of position ids
    and a boolean one; two layers, so that pp=2 cuts between them."""

    def __init__(self, seq: int = 6, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.emb = nn.Embedding(VOCAB, HIDDEN)
        self.qkv = nn.ModuleList([nn.Linear(HIDDEN, 3 * HIDDEN) for _ in range(2)])
        for block in self.qkv:
            block.register_buffer("causal", torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8))
        angles = torch.arange(8)[:, None] * torch.arange(1, HIDDEN // heads // 2 + 1)[None, :]
        self.register_buffer("cos", torch.cos(angles / 8.0).repeat(1, 2), persistent=False)
        self.register_buffer("sin", torch.sin(angles / 8.0).repeat(1, 2), persistent=False)
        self.register_buffer("position_ids", torch.arange(8)[None, :])
        self.register_buffer("keep", torch.ones(VOCAB, dtype=torch.bool))
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        b, t = ids.shape
        h = self.emb(ids) * self.keep[ids][..., None]
        positions = self.position_ids[:, :t]
        cos, sin = self.cos[positions][:, None], self.sin[positions][:, None]
        for i, block in enumerate(self.qkv):
            q, k, v = block(h).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            half = q.shape[-1] // 2
            rotate = lambda x: torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # noqa: E731
            q, k = q * cos + rotate(q) * sin, k * cos + rotate(k) * sin
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
            scores = scores.masked_fill(block.causal[:, :, :t, :t] == 0, float("-inf"))
            a = scores.softmax(-1) @ v
            h = h + a.transpose(1, 2).reshape(b, t, HIDDEN)
        return self.head(h)


@pytest.mark.parametrize("mesh", [None, "dp=2", "tp=2", "pp=2", "dp=2,tp=2", "dp=2,pp=2",
                                  "dp=2,pp=2,tp=2"])
@pytest.mark.parametrize("per_replica", [1, 2])
def test_buffers_at_every_mesh(mesh, per_replica, cache_dir, request):
    if mesh == "pp=2" and per_replica == 1:
        # Known (a compile error, never a wrong number; docs/partitioning.md,
        # "Not yet"): a pipeline without dp whose microbatch is one example
        # loses the batch of one in the views of the fused q/k/v.
        request.applymarker(pytest.mark.xfail(
            strict=True, raises=trn.CompileError,
            reason="pp without dp, one example per microbatch"))
    parts = 1
    for axis in ("dp", "pp"):
        if mesh and f"{axis}=2" in mesh:
            parts *= 2
    assert_sgd_step_parity(_Buffered, _lm_loss, _batch(rows=parts * per_replica), mesh=mesh,
                           cache_dir=cache_dir)


def test_no_grad_regions_and_detach(cache_dir):
    """A statistic computed under torch.no_grad() and a detached target
    (stop-gradient): no gradient flows through either."""

    def body(h, ids):
        with torch.no_grad():
            scale = h.abs().mean() + 1
        anchor = h.detach() * 0.5
        return h / scale + (h - anchor) ** 2
    _check(body, cache_dir)


def test_module_hooks_that_do_not_change_the_graph(cache_dir):
    seen = []

    def make():
        model = _TokenModel(lambda h, ids: h)
        model.proj.register_forward_pre_hook(lambda m, args: seen.append(args[0].shape))
        model.proj.register_forward_hook(lambda m, args, out: seen.append(out.shape))
        return model
    assert_sgd_step_parity(make, _lm_loss, _batch(), cache_dir=cache_dir)
    assert seen


def test_repeat_interleave_for_grouped_query_attention(cache_dir):
    """Llama implementations expand 2 key/value heads to 4 query heads with
    repeat_interleave."""

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(HIDDEN, HIDDEN)
            self.kv = nn.Linear(HIDDEN, HIDDEN)

        def forward(self, h, ids):
            b, t, _ = h.shape
            q = self.q(h).view(b, t, 4, 2).transpose(1, 2)
            k, v = self.kv(h).view(b, t, 2, 2, 2).permute(3, 0, 2, 1, 4)
            k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return h + a.transpose(1, 2).reshape(b, t, HIDDEN)
    _check(Body(), cache_dir)


def test_where_and_masked_fill_with_broadcast_masks(cache_dir):
    def body(h, ids):
        rows = (ids > 5)[:, :, None]            # [B, T, 1] over the features
        cols = torch.arange(HIDDEN) % 2 == 0     # [HIDDEN] over the tokens
        h = torch.where(rows, h, h * 0.5)
        return h.masked_fill(cols, 0.25) + torch.where(cols, h, 0.0)
    _check(body, cache_dir)


@pytest.mark.parametrize("mask", ["boolean", "additive"])
def test_sdpa_with_a_mask(mask, cache_dir):
    """F.scaled_dot_product_attention with a padding mask (boolean, or
    additive) as an argument: computed as written, exactly."""

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)

        def forward(self, h, ids):
            b, t, _ = h.shape
            q, k, v = self.qkv(h).view(b, t, 3, 2, HIDDEN // 2).permute(2, 0, 3, 1, 4)
            keep = (ids != 3)[:, None, None, :] | torch.eye(t, dtype=torch.bool)
            attn_mask = keep if mask == "boolean" else torch.where(keep, 0.0, -1e9)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
            return h + a.transpose(1, 2).reshape(b, t, HIDDEN)
    _check(Body(), cache_dir)


def test_autocast_around_the_forward(cache_dir):
    """torch.autocast("cpu", dtype=torch.bfloat16) around the model's
    forward: the matmuls run in bf16 on both sides; the losses agree to
    bf16's precision."""
    def loss(model, ids, labels):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(ids)
        return F.cross_entropy(logits.float().reshape(-1, VOCAB), labels.reshape(-1))

    torch.manual_seed(0)
    model = _TokenModel(lambda h, ids: torch.relu(h))
    reference = copy.deepcopy(model)
    step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), loss,
                            cache_dir=cache_dir)
    batch = _batch()
    got, want = float(step(*batch)), loss(reference, *batch).item()
    assert abs(got - want) <= 2e-2 * abs(want), (got, want)
