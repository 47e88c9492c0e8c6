"""BERT pretraining (masked LM + next-sentence prediction) on synthetic token chains.

The shape of Hugging Face's BertForPreTraining as AWS's BERT-large phase-1 tutorial trains it: word, position
and token-type embeddings; post-LN encoder layers (separate Q, K, V projections, GELU MLP); an MLM head whose
decoder is tied to the word embeddings; a pooler and a 2-way NSP classifier. Loss = MLM + NSP.
As in real BERT pretraining, the loss sits near ln(vocab) + ln(2) for a few dozen steps before it falls
(see it with --steps 300).

    .venv/bin/python examples/bert.py                     # eager PyTorch on the CPU
    .venv/bin/python examples/bert.py --device trn        # the same steps compiled by trn, run on the simulator
    trn-parallel-compile -- .venv/bin/python examples/bert.py --device trn --config bert-large --grad-accum 32
        # extracts the step graphs of the full-size model, built on the meta device
"""

import dataclasses
import math
import sys
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

import common

MASK_ID = 0  # the [MASK] token of the synthetic data
TOPIC_WIDTH = 4  # tokens per 'topic' window


@dataclasses.dataclass
class BertConfig:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    vocab: int = 128
    seq: int = 16
    ffn: Optional[int] = None  # 4 * hidden when not given
    max_positions: int = 512
    type_vocab: int = 2
    dropout: float = 0.0
    eps: float = 1e-12

    def __post_init__(self) -> None:
        self.ffn = self.ffn or 4 * self.hidden
        if self.hidden % self.heads:
            raise ValueError(f"--heads {self.heads} does not divide --hidden {self.hidden}")
        if self.seq > self.max_positions:
            raise ValueError(f"--seq {self.seq} exceeds the {self.max_positions} learned positions")


PRESETS = {
    "small": {"batch": 4},
    # bert-large-uncased (Hugging Face config.json: 24 layers, hidden 1024, 16 heads, intermediate 4096,
    # vocab 30522, 512 positions) with the phase-1 shapes of AWS's dp_bert_large_hf_pretrain_hdf5.py
    # (--batch_size 16, seq_len 128; the tutorial adds --grad_accum_usteps 32).
    "bert-large": {"layers": 24, "hidden": 1024, "heads": 16, "ffn": 4096, "vocab": 30522, "seq": 128,
                   "batch": 16},
}


class SelfAttention(nn.Module):
    def __init__(self, cfg: BertConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.query = nn.Linear(cfg.hidden, cfg.hidden, device=device, dtype=dtype)
        self.key = nn.Linear(cfg.hidden, cfg.hidden, device=device, dtype=dtype)
        self.value = nn.Linear(cfg.hidden, cfg.hidden, device=device, dtype=dtype)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = (proj(x).view(b, s, self.heads, h // self.heads).transpose(1, 2)
                   for proj in (self.query, self.key, self.value))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.heads))
        if attention_mask is not None:  # [b, s] with 1 for real tokens, 0 for padding
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        probs = self.dropout(scores.softmax(dim=-1))
        return (probs @ v).transpose(1, 2).reshape(b, s, h)


class Layer(nn.Module):
    """A post-LN encoder layer: x = LN(x + attn(x)); x = LN(x + mlp(x))."""

    def __init__(self, cfg: BertConfig, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.attention = SelfAttention(cfg, **kw)
        self.attention_output = nn.Linear(cfg.hidden, cfg.hidden, **kw)
        self.attention_norm = nn.LayerNorm(cfg.hidden, eps=cfg.eps, **kw)
        self.intermediate = nn.Linear(cfg.hidden, cfg.ffn, **kw)
        self.output = nn.Linear(cfg.ffn, cfg.hidden, **kw)
        self.output_norm = nn.LayerNorm(cfg.hidden, eps=cfg.eps, **kw)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        x = self.attention_norm(x + self.dropout(self.attention_output(self.attention(x, attention_mask))))
        return self.output_norm(x + self.dropout(self.output(F.gelu(self.intermediate(x)))))


class BertForPreTraining(nn.Module):
    def __init__(self, cfg: BertConfig, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.cfg = cfg
        self.word_embeddings = nn.Embedding(cfg.vocab, cfg.hidden, **kw)
        self.position_embeddings = nn.Embedding(cfg.max_positions, cfg.hidden, **kw)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab, cfg.hidden, **kw)
        self.embeddings_norm = nn.LayerNorm(cfg.hidden, eps=cfg.eps, **kw)
        self.dropout = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(Layer(cfg, **kw) for _ in range(cfg.layers))
        self.pooler = nn.Linear(cfg.hidden, cfg.hidden, **kw)
        # MLM head: transform (dense, GELU, LayerNorm), then a decoder tied to the word embeddings, plus a bias.
        self.mlm_dense = nn.Linear(cfg.hidden, cfg.hidden, **kw)
        self.mlm_norm = nn.LayerNorm(cfg.hidden, eps=cfg.eps, **kw)
        self.mlm_bias = nn.Parameter(torch.zeros(cfg.vocab, **kw))
        self.nsp = nn.Linear(cfg.hidden, 2, **kw)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                attention_mask: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """Returns (MLM logits [b, s, vocab], NSP logits [b, 2])."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        x = self.dropout(self.embeddings_norm(x))
        for layer in self.layers:
            x = layer(x, attention_mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))  # the [CLS] position
        h = self.mlm_norm(F.gelu(self.mlm_dense(x)))
        return F.linear(h, self.word_embeddings.weight, self.mlm_bias), self.nsp(pooled)


def loss_fn(model: BertForPreTraining, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
            mlm_labels: torch.Tensor, nsp_labels: torch.Tensor) -> torch.Tensor:
    """MLM cross-entropy over the masked positions (labels -100 elsewhere) plus NSP cross-entropy."""
    mlm_logits, nsp_logits = model(input_ids, token_type_ids)
    mlm_logits = mlm_logits.float()
    mlm = F.cross_entropy(mlm_logits.view(-1, mlm_logits.shape[-1]), mlm_labels.view(-1), ignore_index=-100)
    return mlm + F.cross_entropy(nsp_logits.float(), nsp_labels)


def make_batch(gen: torch.Generator, perm: torch.Tensor, batch: int, seq: int,
               vocab: int) -> Tuple[torch.Tensor, ...]:
    """Two 'sentences' per row, each a chain of tokens from a narrow 'topic' window of the vocabulary; the
    second shares the first one's topic (NSP label 0) or has a random one (label 1). 15% of the tokens after
    [CLS] become the MLM targets (labels -100 elsewhere)."""
    first, width = seq // 2, perm.numel()
    topic = torch.randint(0, vocab - width + 1, (batch, 1), generator=gen)
    other = torch.randint(0, vocab - width + 1, (batch, 1), generator=gen)
    nsp_labels = torch.randint(0, 2, (batch,), generator=gen)
    tokens = topic + common.token_chains(gen, perm, batch, seq)
    tokens[:, first:] += torch.where(nsp_labels[:, None] == 1, other - topic, torch.zeros_like(topic))
    token_type_ids = torch.zeros(batch, seq, dtype=torch.int64)
    token_type_ids[:, first:] = 1
    masked = torch.rand(batch, seq, generator=gen) < 0.15
    masked[:, 0] = False  # [CLS]
    masked[:, 1] = True   # at least one target per row
    mlm_labels = torch.where(masked, tokens, torch.full_like(tokens, -100))
    # BERT's 80/10/10 rule: a target shows [MASK], a random token, or itself.
    r = torch.rand(batch, seq, generator=gen)
    noise = torch.randint(0, vocab, (batch, seq), generator=gen)
    input_ids = torch.where(masked & (r < 0.8), torch.full_like(tokens, MASK_ID), tokens)
    input_ids = torch.where(masked & (r >= 0.8) & (r < 0.9), noise, input_ids)
    return input_ids, token_type_ids, mlm_labels, nsp_labels


def main(argv=None) -> int:
    args = common.parse_args(__doc__, BertConfig, PRESETS, argv)
    cfg, batch = common.resolve_config(BertConfig, PRESETS, args)
    model = common.build_model(BertForPreTraining, cfg, args)
    perm = common.permutation(min(TOPIC_WIDTH, cfg.vocab), args.seed)
    return common.train(args, model, loss_fn, lambda gen: make_batch(gen, perm, batch, cfg.seq, cfg.vocab))


if __name__ == "__main__":
    sys.exit(main())
