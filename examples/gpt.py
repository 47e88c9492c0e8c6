"""Trains a GPT-2 style decoder language model on synthetic token chains (next-token prediction).

Pre-LN blocks (fused QKV causal self-attention, GELU-tanh MLP), learned position embeddings, and an LM head tied
to the token embedding, as in GPT-2 and NeMo Megatron GPT-3.

    .venv/bin/python examples/gpt.py                      # eager PyTorch on the CPU
    .venv/bin/python examples/gpt.py --device trn         # the same steps compiled by trn, run on the simulator
    trn-parallel-compile -- .venv/bin/python examples/gpt.py --device trn --config gpt3-23b
        # extracts the step graphs of the full-size model, built on the meta device
"""

import dataclasses
import math
import sys
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

import common


@dataclasses.dataclass
class GPTConfig:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    vocab: int = 128
    seq: int = 16            # also the number of learned positions
    ffn: Optional[int] = None  # 4 * hidden when not given
    dropout: float = 0.0
    eps: float = 1e-5

    def __post_init__(self) -> None:
        self.ffn = self.ffn or 4 * self.hidden
        if self.hidden % self.heads:
            raise ValueError(f"--heads {self.heads} does not divide --hidden {self.hidden}")


PRESETS = {
    "small": {"batch": 4},
    # GPT-3 23B as AWS trains it with neuronx-nemo-megatron (nemo/examples/nlp/language_modeling/gpt_23b.sh:
    # SEQ_LENGTH=2048, HS=8192, N_LAYERS=28, N_AH=64; test.sh: FFN_HS=4*HS, UBS=1, layernorm_epsilon=1e-5).
    # Vocabulary: the GPT-2 BPE (50257) padded by Megatron to a multiple of make_vocab_size_divisible_by (128)
    # times TP (8), i.e. 51200.
    "gpt3-23b": {"layers": 28, "hidden": 8192, "heads": 64, "ffn": 32768, "vocab": 51200, "seq": 2048,
                 "batch": 1},
}


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden, device=device, dtype=dtype)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden, device=device, dtype=dtype)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.heads))
        # True above the diagonal: masked out. Made here rather than kept as a
        # buffer, so that compilers see the mask is causal (trn then runs
        # flash attention).
        future = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        probs = self.attn_dropout(scores.softmax(dim=-1))
        out = (probs @ v).transpose(1, 2).reshape(b, s, h)
        return self.resid_dropout(self.proj(out))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.hidden, cfg.ffn, device=device, dtype=dtype)
        self.proj = nn.Linear(cfg.ffn, cfg.hidden, device=device, dtype=dtype)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.proj(F.gelu(self.fc(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.hidden, eps=cfg.eps, device=device, dtype=dtype)
        self.attn = CausalSelfAttention(cfg, device=device, dtype=dtype)
        self.ln_2 = nn.LayerNorm(cfg.hidden, eps=cfg.eps, device=device, dtype=dtype)
        self.mlp = MLP(cfg, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.hidden, device=device, dtype=dtype)
        self.wpe = nn.Embedding(cfg.seq, cfg.hidden, device=device, dtype=dtype)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, device=device, dtype=dtype) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.hidden, eps=cfg.eps, device=device, dtype=dtype)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by 1/sqrt(2 * layers)
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(positions))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # LM head tied to the token embedding


def loss_fn(model: GPT, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy; ``labels`` are the inputs shifted left by one."""
    logits = model(input_ids).float()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.reshape(-1))


def main(argv=None) -> int:
    args = common.parse_args(__doc__, GPTConfig, PRESETS, argv)
    cfg, batch = common.resolve_config(GPTConfig, PRESETS, args)
    model = common.build_model(GPT, cfg, args)
    perm = common.permutation(cfg.vocab, args.seed)

    def make_batch(gen: torch.Generator):
        tokens = common.token_chains(gen, perm, batch, cfg.seq + 1)
        return tokens[:, :-1], tokens[:, 1:]

    return common.train(args, model, loss_fn, make_batch)


if __name__ == "__main__":
    sys.exit(main())
