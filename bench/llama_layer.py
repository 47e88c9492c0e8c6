#!/usr/bin/env python3
"""Traces one Llama decoder layer's training step for bench/step_mfu.py.

    TRN_EXTRACT_GRAPHS_ONLY=1 TRN_GRAPH_MANIFEST=DIR/manifest.jsonl \\
        .venv/bin/python bench/llama_layer.py [--config llama3-70b] [--seq S]

The layer of examples/llama.py (RMSNorm, grouped-query attention with
rotary embeddings, SwiGLU MLP, no biases) alone, on the meta device in
bf16: the step is its forward, the backward of `sum(layer(x) * dy)` (dy:
the upstream gradient, an input, as a pipeline stage receives it) and an
SGD update, traced by the trn frontend in extraction mode (nothing runs).
"""
import argparse
import pathlib
import sys

import torch
import torch.nn as nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
import llama  # noqa: E402
import trn  # noqa: E402


class LayerStep(nn.Module):
    """One decoder layer with the model's rotary tables and causal mask."""

    def __init__(self, cfg: llama.LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.layer = llama.DecoderLayer(cfg, device=device, dtype=dtype)
        head_dim = cfg.hidden // cfg.heads
        inv_freq = 1.0 / cfg.rope_theta ** (
            torch.arange(0, head_dim, 2, device=device).float() / head_dim)
        freqs = torch.outer(torch.arange(cfg.seq, device=device).float(), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", angles.cos().to(dtype), persistent=False)
        self.register_buffer("sin", angles.sin().to(dtype), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.shape[1]
        future = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        return self.layer(x, self.cos[:s], self.sin[:s], future)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="llama3-70b", choices=sorted(llama.PRESETS))
    parser.add_argument("--seq", type=int, default=None)
    args = parser.parse_args(argv)
    preset = dict(llama.PRESETS[args.config])
    preset.pop("batch", None)
    if args.seq:
        preset["seq"] = args.seq
    cfg = llama.LlamaConfig(**preset)
    model = LayerStep(cfg, device="meta", dtype=torch.bfloat16)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def loss_fn(m: LayerStep, x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        return (m(x).float() * dy).sum()

    step = trn.compile_step(model, optimizer, loss_fn)
    x = torch.empty(1, cfg.seq, cfg.hidden, device="meta", dtype=torch.bfloat16)
    dy = torch.empty(1, cfg.seq, cfg.hidden, device="meta", dtype=torch.float32)
    step(x, dy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
