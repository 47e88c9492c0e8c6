"""Idioms of library model code (Hugging Face `transformers` uses each of
these), written the way that code writes them, each checked by one SGD
step against PyTorch in every parameter (gradcheck.py)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

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
    import trn

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
    import trn

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


def test_unfold_along_one_dimension(cache_dir):
    """ConvBERT's span-based convolution: F.unfold of [B, C, S, 1] with a
    (K, 1) kernel, and its gradient (F.fold)."""

    def body(h, ids):
        cols = F.unfold(h.transpose(1, 2).unsqueeze(-1), kernel_size=(3, 1), padding=(1, 0))
        cols = cols.view(h.shape[0], HIDDEN, 3, h.shape[1]).sum(2)
        return h + cols.transpose(1, 2)
    _check(body, cache_dir)
