"""Hugging Face `transformers` models at a tiny size, built from their config
classes (random initialisation, nothing downloaded, dropout off), with a
batch and a loss for each: what test_hf_models.py trains through trn."""

from dataclasses import dataclass
from typing import Callable, Dict, Tuple

import torch
import transformers

VOCAB, SEQ = 96, 8

_LAYERS = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=32)


@dataclass
class Spec:
    config: Callable[[], transformers.PretrainedConfig]
    task: str  # "pretraining" (BERT's MLM + NSP), "mlm", "lm" or "seq2seq"
    #: The attention implementations the model has (HF refuses the others).
    attention: Tuple[str, ...] = ("eager", "sdpa")


SPECS: Dict[str, Spec] = {
    "BertForPreTraining": Spec(lambda: transformers.BertConfig(**_LAYERS), "pretraining"),
    "GPT2LMHeadModel": Spec(lambda: transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=32,
        bos_token_id=0, eos_token_id=0), "lm"),
    "LlamaForCausalLM": Spec(lambda: transformers.LlamaConfig(**_LAYERS, num_key_value_heads=2), "lm"),
    "MistralForCausalLM": Spec(lambda: transformers.MistralConfig(**_LAYERS, num_key_value_heads=2),
                               "lm"),
    "Qwen2ForCausalLM": Spec(lambda: transformers.Qwen2Config(**_LAYERS, num_key_value_heads=2), "lm"),
    "GemmaForCausalLM": Spec(lambda: transformers.GemmaConfig(**_LAYERS, num_key_value_heads=2,
                                                              head_dim=8), "lm"),
    "OPTForCausalLM": Spec(lambda: transformers.OPTConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
        max_position_embeddings=32, word_embed_proj_dim=32), "lm"),
    # Local (windowed) attention in its second layer; Hugging Face has no SDPA
    # path for GPT-Neo.
    "GPTNeoForCausalLM": Spec(lambda: transformers.GPTNeoConfig(
        vocab_size=VOCAB, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64,
        max_position_embeddings=32, attention_types=[[["global", "local"], 1]], window_size=4),
        "lm", ("eager",)),
    "RobertaForMaskedLM": Spec(lambda: transformers.RobertaConfig(
        **{**_LAYERS, "max_position_embeddings": 40}), "mlm"),
    "DistilBertForMaskedLM": Spec(lambda: transformers.DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
        max_position_embeddings=32), "mlm"),
    "AlbertForMaskedLM": Spec(lambda: transformers.AlbertConfig(**_LAYERS, embedding_size=16), "mlm"),
    "ElectraForMaskedLM": Spec(lambda: transformers.ElectraConfig(**_LAYERS, embedding_size=16), "mlm"),
    "T5ForConditionalGeneration": Spec(lambda: transformers.T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        decoder_start_token_id=0), "seq2seq"),
    "BartForConditionalGeneration": Spec(lambda: transformers.BartConfig(
        vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=32), "seq2seq"),
}


def without_dropout(config: transformers.PretrainedConfig) -> transformers.PretrainedConfig:
    """Every dropout probability of a config at 0 (the step is compared with
    PyTorch's, whose random numbers trn does not reproduce)."""
    for key, value in list(vars(config).items()):
        if isinstance(value, float) and ("dropout" in key or key.endswith("_pdrop")):
            setattr(config, key, 0.0)
    return config


def make_model(name: str, attention: str = "eager") -> torch.nn.Module:
    config = without_dropout(SPECS[name].config())
    config._attn_implementation = attention
    torch.manual_seed(0)
    return getattr(transformers, name)(config)


def batch(name: str, size: int, seed: int = 1) -> Tuple[torch.Tensor, ...]:
    """Token ids and labels for `size` sequences: MLM labels -100 (ignored)
    but at about 30% of the positions (one at least per row), next-token
    labels for causal LMs, target ids for sequence-to-sequence models."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (size, SEQ), generator=g)
    task = SPECS[name].task
    if task in ("pretraining", "mlm"):
        masked = torch.rand(size, SEQ, generator=g) < 0.3
        masked[:, 1] = True
        labels = torch.where(masked, ids, torch.full_like(ids, -100))
        if task == "mlm":
            return ids, labels
        token_types = torch.zeros(size, SEQ, dtype=torch.long)
        token_types[:, SEQ // 2:] = 1
        return ids, token_types, labels, torch.randint(0, 2, (size,), generator=g)
    if task == "seq2seq":
        return ids, torch.randint(3, VOCAB, (size, SEQ), generator=g)
    return ids, ids.clone()


def loss_fn(name: str) -> Callable[..., torch.Tensor]:
    """The model's own loss, as the HF Trainer takes it (`outputs.loss`)."""
    if SPECS[name].task == "pretraining":
        return lambda model, ids, token_types, labels, nsp: model(
            input_ids=ids, token_type_ids=token_types, labels=labels,
            next_sentence_label=nsp).loss
    return lambda model, ids, labels: model(input_ids=ids, labels=labels).loss


def key_bias_is_zero(name: str) -> bool:
    """A key projection's bias: it adds the same to every score of a
    query's row, which the softmax cancels, so its gradient is zero in exact
    arithmetic."""
    return name.endswith(("key.bias", "k_lin.bias", "k_proj.bias"))
