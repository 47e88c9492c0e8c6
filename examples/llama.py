"""Trains a Llama style decoder language model on synthetic token chains (next-token prediction).

RMSNorm, rotary position embeddings (rotate-half form), grouped-query causal attention, a SwiGLU MLP, no biases
and an untied LM head, as in Llama 3.

    .venv/bin/python examples/llama.py                    # eager PyTorch on the CPU
    .venv/bin/python examples/llama.py --device trn       # the same steps compiled by trn, run on the simulator
    trn-parallel-compile -- .venv/bin/python examples/llama.py --device trn --config llama3-70b
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
class LlamaConfig:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    vocab: int = 128
    seq: int = 16
    ffn: Optional[int] = None  # 8/3 * hidden rounded up to a multiple of 32 when not given
    eps: float = 1e-5
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        self.ffn = self.ffn or 32 * math.ceil(8 * self.hidden / 3 / 32)
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"need --heads ({self.heads}) dividing --hidden ({self.hidden}) "
                             f"and --kv-heads ({self.kv_heads}) dividing --heads")


PRESETS = {
    "small": {"batch": 4},
    # Meta-Llama-3-70B config.json: num_hidden_layers 80, hidden_size 8192, num_attention_heads 64,
    # num_key_value_heads 8, intermediate_size 28672, vocab_size 128256, rms_norm_eps 1e-5,
    # rope_theta 500000; sequence 8192 (max_position_embeddings, and the NxD Llama-3 70B tutorial's seq_len).
    "llama3-70b": {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672, "vocab": 128256,
                   "seq": 8192, "eps": 1e-5, "rope_theta": 500000.0, "batch": 1},
    # Meta-Llama-3.1-8B config.json: num_hidden_layers 32, hidden_size 4096, num_attention_heads 32,
    # num_key_value_heads 8, intermediate_size 14336, vocab_size 128256; sequence 8192 as AWS's
    # Llama-3.1-8B training benchmark. (Its "llama3" rope scaling changes the rotary frequencies' values,
    # not the step's shapes or work; this example keeps plain RoPE.)
    "llama31-8b": {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "vocab": 128256,
                   "seq": 8192, "eps": 1e-5, "rope_theta": 500000.0, "batch": 1},
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, device=None, dtype=None) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.heads, cfg.kv_heads, cfg.hidden // cfg.heads
        kw = dict(bias=False, device=device, dtype=dtype)
        self.q_proj = nn.Linear(cfg.hidden, cfg.heads * self.head_dim, **kw)
        self.k_proj = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, **kw)
        self.v_proj = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, **kw)
        self.o_proj = nn.Linear(cfg.heads * self.head_dim, cfg.hidden, **kw)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                future: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # Grouped-query attention: every key/value head serves heads // kv_heads query heads.
        rep = self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, self.heads, s, self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, self.heads, s, self.head_dim)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        return self.o_proj((probs @ v).transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = nn.Linear(cfg.hidden, cfg.ffn, **kw)
        self.up_proj = nn.Linear(cfg.hidden, cfg.ffn, **kw)
        self.down_proj = nn.Linear(cfg.ffn, cfg.hidden, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # SwiGLU


class DecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.eps, device=device, dtype=dtype)
        self.self_attn = Attention(cfg, device=device, dtype=dtype)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.eps, device=device, dtype=dtype)
        self.mlp = MLP(cfg, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                future: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, future)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden, device=device, dtype=dtype)
        self.layers = nn.ModuleList(DecoderLayer(cfg, device=device, dtype=dtype) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, cfg.eps, device=device, dtype=dtype)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False, device=device, dtype=dtype)
        # Rotary tables for every position, computed in float32 and stored in the model dtype.
        head_dim = cfg.hidden // cfg.heads
        inv_freq = 1.0 / cfg.rope_theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
        freqs = torch.outer(torch.arange(cfg.seq, device=device).float(), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        dtype = self.embed_tokens.weight.dtype
        self.register_buffer("cos", angles.cos().to(dtype), persistent=False)
        self.register_buffer("sin", angles.sin().to(dtype), persistent=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        s = input_ids.shape[1]
        cos, sin = self.cos[:s], self.sin[:s]
        # Causal: True above the diagonal is masked out (made here, not kept
        # as a buffer, so that compilers see it is causal).
        future = torch.ones(s, s, dtype=torch.bool, device=input_ids.device).triu(1)
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, future)
        return self.lm_head(self.norm(x))


def loss_fn(model: Llama, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy; ``labels`` are the inputs shifted left by one."""
    logits = model(input_ids).float()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.reshape(-1))


def main(argv=None) -> int:
    args = common.parse_args(__doc__, LlamaConfig, PRESETS, argv)
    cfg, batch = common.resolve_config(LlamaConfig, PRESETS, args)
    model = common.build_model(Llama, cfg, args)
    perm = common.permutation(cfg.vocab, args.seed)

    def make_batch(gen: torch.Generator):
        tokens = common.token_chains(gen, perm, batch, cfg.seq + 1)
        return tokens[:, :-1], tokens[:, 1:]

    return common.train(args, model, loss_fn, make_batch)


if __name__ == "__main__":
    sys.exit(main())
