#!/usr/bin/env python3
"""Which Hugging Face models train through trn: PyTorch's own Hugging Face
training suite (benchmarks/dynamo/huggingface_models_list.txt in the PyTorch
repository, 55 models), each built at a small size from its config class
(random initialisation, dropout off, nothing downloaded).

    bench/model_coverage.py [--models A,B,...] [--json coverage.json]

Per model, the furthest it gets:

  parity    one SGD step (lr 1) through trn.compile_step equals PyTorch's in
            every parameter (test/python/gradcheck.py's tolerance; a gradient
            below 1e-3 of the step's largest against the step's scale) and
            in the loss;
  compiled  the step compiled and ran on the simulated NeuronCore, but not at
            parity;
  traced    the step was traced and translated, but did not compile or run;
  failed    tracing failed: the error says where (the op, its shapes and the
            model's source line);
  skipped   the model cannot be built here (its class is not in this
            transformers, or it needs a download), with the reason.

Prints a table and the share at parity; `--json FILE` writes {"models":
[{"name", "class", "status", "error", "seconds"}, ...], "parity": N,
"total": N}.
"""
import argparse
import json
import math
import os
import pathlib
import sys
import tempfile
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "test" / "python"))  # the gradient harness

import torch  # noqa: E402
import transformers  # noqa: E402

import trn  # noqa: E402
from gradcheck import sgd_step_parity  # noqa: E402

VOCAB, SEQ, BATCH = 96, 8, 2

# The list's names -> (model class, task). The task picks the inputs:
# lm (causal or masked LM: ids, labels), qa (ids, start and end positions),
# cls (ids, a label per sequence), seq2seq (ids, target ids), speech
# (log-mel features, target ids).
MODELS = {
    "AlbertForMaskedLM": ("AlbertForMaskedLM", "lm"),
    "AlbertForQuestionAnswering": ("AlbertForQuestionAnswering", "qa"),
    "AllenaiLongformerBase": ("LongformerForMaskedLM", "lm"),
    "BartForCausalLM": ("BartForCausalLM", "lm"),
    "BartForConditionalGeneration": ("BartForConditionalGeneration", "seq2seq"),
    "BertForMaskedLM": ("BertForMaskedLM", "lm"),
    "BertForQuestionAnswering": ("BertForQuestionAnswering", "qa"),
    "BlenderbotForCausalLM": ("BlenderbotForCausalLM", "lm"),
    "BlenderbotForConditionalGeneration": ("BlenderbotForConditionalGeneration", "seq2seq"),
    "BlenderbotSmallForCausalLM": ("BlenderbotSmallForCausalLM", "lm"),
    "BlenderbotSmallForConditionalGeneration": ("BlenderbotSmallForConditionalGeneration",
                                                "seq2seq"),
    "CamemBert": ("CamembertForMaskedLM", "lm"),
    "DebertaV2ForMaskedLM": ("DebertaV2ForMaskedLM", "lm"),
    "DebertaV2ForQuestionAnswering": ("DebertaV2ForQuestionAnswering", "qa"),
    "DistilBertForMaskedLM": ("DistilBertForMaskedLM", "lm"),
    "DistilBertForQuestionAnswering": ("DistilBertForQuestionAnswering", "qa"),
    "DistillGPT2": ("GPT2LMHeadModel", "lm"),
    "ElectraForCausalLM": ("ElectraForCausalLM", "lm"),
    "ElectraForQuestionAnswering": ("ElectraForQuestionAnswering", "qa"),
    "GPT2ForSequenceClassification": ("GPT2ForSequenceClassification", "cls"),
    "GPTJForCausalLM": ("GPTJForCausalLM", "lm"),
    "GPTJForQuestionAnswering": ("GPTJForQuestionAnswering", "qa"),
    "GPTNeoForCausalLM": ("GPTNeoForCausalLM", "lm"),
    "GPTNeoForSequenceClassification": ("GPTNeoForSequenceClassification", "cls"),
    "GoogleFnet": ("FNetForMaskedLM", "lm"),
    "LayoutLMForMaskedLM": ("LayoutLMForMaskedLM", "lm"),
    "LayoutLMForSequenceClassification": ("LayoutLMForSequenceClassification", "cls"),
    "M2M100ForConditionalGeneration": ("M2M100ForConditionalGeneration", "seq2seq"),
    "MBartForCausalLM": ("MBartForCausalLM", "lm"),
    "MBartForConditionalGeneration": ("MBartForConditionalGeneration", "seq2seq"),
    "MT5ForConditionalGeneration": ("MT5ForConditionalGeneration", "seq2seq"),
    "MegatronBertForCausalLM": ("MegatronBertForCausalLM", "lm"),
    "MegatronBertForQuestionAnswering": ("MegatronBertForQuestionAnswering", "qa"),
    "MobileBertForMaskedLM": ("MobileBertForMaskedLM", "lm"),
    "MobileBertForQuestionAnswering": ("MobileBertForQuestionAnswering", "qa"),
    "OPTForCausalLM": ("OPTForCausalLM", "lm"),
    "PLBartForCausalLM": ("PLBartForCausalLM", "lm"),
    "PLBartForConditionalGeneration": ("PLBartForConditionalGeneration", "seq2seq"),
    "PegasusForCausalLM": ("PegasusForCausalLM", "lm"),
    "PegasusForConditionalGeneration": ("PegasusForConditionalGeneration", "seq2seq"),
    "RobertaForCausalLM": ("RobertaForCausalLM", "lm"),
    "RobertaForQuestionAnswering": ("RobertaForQuestionAnswering", "qa"),
    "T5ForConditionalGeneration": ("T5ForConditionalGeneration", "seq2seq"),
    "T5Small": ("T5ForConditionalGeneration", "seq2seq"),
    "TrOCRForCausalLM": ("TrOCRForCausalLM", "lm"),
    "XGLMForCausalLM": ("XGLMForCausalLM", "lm"),
    "XLNetLMHeadModel": ("XLNetLMHeadModel", "lm"),
    "YituTechConvBert": ("ConvBertForMaskedLM", "lm"),
    "meta-llama/Llama-3.2-1B": ("LlamaForCausalLM", "lm"),
    "google/gemma-2-2b": ("Gemma2ForCausalLM", "lm"),
    "google/gemma-3-4b-it": ("Gemma3ForCausalLM", "lm"),
    "openai/whisper-tiny": ("WhisperForConditionalGeneration", "speech"),
    "Qwen/Qwen3-0.6B": ("Qwen3ForCausalLM", "lm"),
    "mistralai/Mistral-7B-Instruct-v0.3": ("MistralForCausalLM", "lm"),
    "openai/gpt-oss-20b": ("GptOssForCausalLM", "lm"),
}

# A small model whatever the config class calls its sizes (unknown names
# are ignored attributes). Two layers, width 32, 4 heads of 8, 2 key/value
# heads, 4 experts (2 per token).
_SMALL = dict(
    vocab_size=VOCAB, hidden_size=32, d_model=32, n_embd=32, dim=32, embedding_size=32,
    num_hidden_layers=2, num_layers=2, n_layer=2, n_layers=2, encoder_layers=2,
    decoder_layers=2, num_decoder_layers=2,
    num_attention_heads=4, num_heads=4, n_head=4, n_heads=4, encoder_attention_heads=4,
    decoder_attention_heads=4, num_key_value_heads=2, head_dim=8, d_kv=8,
    intermediate_size=64, ffn_dim=64, encoder_ffn_dim=64, decoder_ffn_dim=64, d_ff=64,
    n_inner=64, hidden_dim=64, d_inner=64,
    max_position_embeddings=64, n_positions=64, max_target_positions=64,
    max_source_positions=16, num_mel_bins=8, rotary_dim=4,
    attention_window=4, num_local_experts=4, num_experts=4, num_experts_per_tok=2,
    sliding_window=64, embedding_dim=32, true_hidden_size=32, intra_bottleneck_size=32,
    pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
    num_labels=2, use_cache=False,
)


# What a config class needs beyond _SMALL to describe two layers.
_OVERRIDES = {
    "GPTNeoConfig": dict(attention_types=[[["global", "local"], 1]], window_size=4),
}


def small_config(cls_name: str):
    model_cls = getattr(transformers, cls_name)
    config_cls = model_cls.config_class
    sizes = {**_SMALL, **_OVERRIDES.get(config_cls.__name__, {})}
    if config_cls.__name__ == "XLNetConfig":
        del sizes["max_position_embeddings"]  # XLNet has no such limit (it raises)
    config = config_cls(**sizes)
    for key, value in list(vars(config).items()):
        if isinstance(value, float) and ("dropout" in key or key.endswith("_pdrop")
                                         or key.endswith("layerdrop")):
            setattr(config, key, 0.0)
    if hasattr(config, "layer_types") and isinstance(config.layer_types, list):
        config.layer_types = config.layer_types[:config.num_hidden_layers]
    return model_cls, config


def make_batch(task: str, config, g: torch.Generator):
    ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
    if task == "lm":
        return (ids, ids.clone()), lambda m, x, y: m(input_ids=x, labels=y).loss
    if task == "qa":
        start = torch.randint(0, SEQ, (BATCH,), generator=g)
        end = torch.randint(0, SEQ, (BATCH,), generator=g)
        return (ids, start, end), lambda m, x, s, e: m(input_ids=x, start_positions=s,
                                                       end_positions=e).loss
    if task == "cls":
        ids[:, -1] = config.pad_token_id if config.pad_token_id is not None else 1
        labels = torch.randint(0, 2, (BATCH,), generator=g)
        return (ids, labels), lambda m, x, y: m(input_ids=x, labels=y).loss
    if task == "seq2seq":
        target = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
        return (ids, target), lambda m, x, y: m(input_ids=x, labels=y).loss
    features = torch.randn(BATCH, config.num_mel_bins, 2 * config.max_source_positions,
                           generator=g)
    target = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
    return (features, target), lambda m, x, y: m(input_features=x, labels=y).loss


def zero_in_exact_arithmetic(param, report) -> bool:
    """A parameter whose gradient is below 1e-3 of the step's largest,
    zero or nearly so in exact arithmetic (a key projection's bias under
    softmax; a question-answering head's bias, which the softmax over the
    positions cancels, and the biases before it in MobileBERT's narrow
    bottlenecks): what is left is the rounding of sums of much larger
    terms, so it is judged against the step's gradient scale, as the
    gradient harness does for the elements a test names."""
    scales = [p.scale for p in report.params if p.scale > 0]
    if not scales or param.scale > 1e-3 * max(scales):
        return False
    rtol = max(p.tolerance / p.scale for p in report.params if p.scale > 0)
    return param.error <= rtol * max(scales)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"[:400]


def run_model(name: str, cache_dir: str) -> dict:
    cls_name, task = MODELS[name]
    row = {"name": name, "class": cls_name, "status": "skipped", "error": None}
    start = time.perf_counter()
    try:
        if not hasattr(transformers, cls_name):
            row["error"] = f"transformers {transformers.__version__} has no {cls_name}"
            return row
        model_cls, config = small_config(cls_name)
        batch, loss_fn = make_batch(task, config, torch.Generator().manual_seed(1))

        def make():
            torch.manual_seed(0)
            return model_cls(config)

        model = make()
        step = trn.compile_step(model, torch.optim.SGD(model.parameters(), lr=1.0), loss_fn,
                                cache_dir=cache_dir)
        row["status"] = "failed"
        step.lower(*batch)
        row["status"] = "traced"
        report = sgd_step_parity(make, loss_fn, batch, cache_dir=cache_dir)
        row["status"] = "compiled"
        loss_ok = math.isclose(report.loss, report.reference_loss, rel_tol=1e-5, abs_tol=1e-6)
        bad = [p for p in report.failures if not zero_in_exact_arithmetic(p, report)]
        if loss_ok and not bad:
            row["status"] = "parity"
        else:
            row["error"] = (f"loss {report.loss:.6g} (PyTorch {report.reference_loss:.6g}); "
                            f"{len(bad)} parameters differ"
                            + (f", e.g. {bad[0].name}" if bad else ""))
    except Exception as error:  # noqa: BLE001 - every failure is a row of the table
        row["error"] = first_line(error)
    finally:
        row["seconds"] = round(time.perf_counter() - start, 2)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated names from the list (default: all)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    names = args.models.split(",") if args.models else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"model_coverage.py: unknown model(s) {', '.join(unknown)}; "
                 f"choose from the list in {__file__}")
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        for i, name in enumerate(names, 1):
            row = run_model(name, cache_dir)
            rows.append(row)
            print(f"[{i:2d}/{len(names)}] {name:42s} {row['status']:8s} {row['seconds']:6.1f}s"
                  + (f"  {row['error']}" if row["error"] else ""), flush=True)
    parity = sum(r["status"] == "parity" for r in rows)
    counts = {s: sum(r["status"] == s for r in rows)
              for s in ("parity", "compiled", "traced", "failed", "skipped")}
    print(f"\n{parity} of {len(rows)} at parity ({100.0 * parity / len(rows):.0f}%): "
          + ", ".join(f"{n} {s}" for s, n in counts.items()))
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"trn {trn.__version__}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"models": rows, "parity": parity, "total": len(rows),
             "torch": torch.__version__, "transformers": transformers.__version__},
            indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
