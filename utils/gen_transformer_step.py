#!/usr/bin/env python3
"""Writes transformer training-step graphs (trn dialect, MLIR text) of any
size, for the compile-time benchmark (bench/compile_time.py) and its smoke
test.

    utils/gen_transformer_step.py MODEL [--layers N] [--hidden H] [--heads A]
        [--seq S] [--batch B] [--ffn F] [--vocab V] [--positions P]
        [--dtype bf16|f32] [--optimizer adamw|none] [-o FILE]

MODEL picks the structure and the default sizes (every size can be
overridden):

  bert-large  BERT pretraining step, masked-LM part: word, position and
              token-type embeddings (trn.gather) and their layer norm; post-LN
              encoder layers (fused QKV, bidirectional attention, erf GELU);
              the MLM head (dense, GELU, layer norm, decoder tied to the word
              embeddings, bias); mean cross-entropy over every token's i32
              label; the hand-derived backward (embedding gradients by
              trn.scatter_add, the tied table's two gradients summed) and AdamW
              on every parameter. Defaults: 24 layers, hidden 1024, 16 heads,
              sequence 128, batch 8, MLP 4096, vocabulary 30522, 512
              positions. Left out: dropout, the attention padding mask (every
              sequence is full) and the next-sentence head (a [batch, 2]
              classifier, under 0.01% of the FLOPs).
  gpt3-23b    a stack of GPT-3-style pre-LN decoder layers as one pipeline
              stage sees it: hidden states and the gradient of the stage's
              output come in, the stage runs its layers forward (causal
              attention, tanh GELU), then backward, and returns the gradient
              of its input and of every parameter; no optimizer unless
              --optimizer adamw. Defaults: 2 layers, hidden 8192, 64 heads,
              sequence 2048, micro-batch 1, MLP 32768 (the GPT-3 23B layer
              shape), unpartitioned. --tp N writes one tensor-parallel rank's
              share instead (Megatron-style: heads/N heads, QKV and MLP
              weights split by output columns, the output and down
              projections by input rows), without the all-reduces that the
              partitioner would add: the per-rank compute of a TP=N stage.

Precision (--dtype bf16, the default): parameters and hidden states at the
function boundary are bf16, matmul operands bf16 with f32 accumulation; the
residual stream, norms, softmax, gradients and Adam's moments are f32 (the
conventions of test/e2e/gpt-block-bf16.mlir, trn_graph.StepBuilder).
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trn_graph import StepBuilder  # noqa: E402

MODELS = {
    "bert-large": dict(kind="bert", layers=24, hidden=1024, heads=16, seq=128, batch=8,
                       ffn=4096, vocab=30522, positions=512, optimizer="adamw"),
    "gpt3-23b": dict(kind="gpt-stage", layers=2, hidden=8192, heads=64, seq=2048, batch=1,
                     ffn=32768, vocab=0, positions=0, optimizer="none", tp=1),
}


class TransformerStep(StepBuilder):
    def __init__(self, kind, layers, hidden, heads, seq, batch, ffn, vocab, positions,
                 dtype, optimizer, tp=1):
        super().__init__(dtype == "bf16")
        if hidden % heads:
            raise ValueError(f"{heads} heads do not divide hidden {hidden}")
        if heads % tp or ffn % tp:
            raise ValueError(f"tp={tp} does not divide {heads} heads and MLP {ffn}")
        if tp != 1 and kind == "bert":
            raise ValueError("--tp is for gpt3-23b")
        self.kind, self.L, self.H, self.NH = kind, layers, hidden, heads
        self.S, self.B, self.F, self.V, self.PMAX = seq, batch, ffn, vocab, positions
        self.HD, self.N = hidden // heads, batch * seq
        # One tensor-parallel rank's share (Megatron): heads, QKV and MLP
        # columns, output and down projection rows.
        self.NHL, self.HL, self.FL = heads // tp, hidden // tp, ffn // tp
        self.optimizer = optimizer
        self.post_ln = kind == "bert"
        self.causal = kind != "bert"
        self.tanh_gelu = kind != "bert"
        self.eps = 1e-12 if kind == "bert" else 1e-5
        self.scale = 1.0 / math.sqrt(self.HD)
        self.params = []  # (trn.name, Value)

    def param(self, ssa, shape, name):
        v = self.arg(ssa, shape, self.P, "parameter", name)
        self.params.append((name, v))
        return v

    # -- attention heads ---------------------------------------------------------
    def heads(self, hint, x2d):  # [N, H] -> [B, NH, S, HD]
        g = self.g
        return g.transpose(hint, g.reshape(hint + "_bshd", x2d, (self.B, self.S, self.NHL,
                                                                 self.HD)), [0, 2, 1, 3])

    def unheads(self, hint, x):  # [B, NH, S, HD] -> [N, H]
        g = self.g
        return g.reshape(hint, g.transpose(hint + "_bshd", x, [0, 2, 1, 3]), (self.N, self.HL))

    # -- one layer -------------------------------------------------------------------
    def layer_params(self, i):
        H, HL, F = self.H, self.HL, self.FL
        spec = [("ln1.weight", "ln1_w", (H,)), ("ln1.bias", "ln1_b", (H,)),
                ("attn.qkv.weight", "w_qkv", (3 * HL, H)), ("attn.qkv.bias", "b_qkv", (3 * HL,)),
                ("attn.out.weight", "w_o", (H, HL)), ("attn.out.bias", "b_o", (H,)),
                ("ln2.weight", "ln2_w", (H,)), ("ln2.bias", "ln2_b", (H,)),
                ("mlp.fc.weight", "w_fc", (F, H)), ("mlp.fc.bias", "b_fc", (F,)),
                ("mlp.proj.weight", "w_proj", (H, F)), ("mlp.proj.bias", "b_proj", (H,))]
        return {ssa: self.param(f"l{i}_{ssa}", shape, f"layers.{i}.{name}")
                for name, ssa, shape in spec}

    def attention_forward(self, t, x, p):
        """Self-attention of x (f32 [N, H]) through the output projection."""
        g, H, N = self.g, self.HL, self.N
        qkv = self.linear(t + "qkv", x, p["w_qkv"], p["b_qkv"])
        q = self.heads(t + "q", self.m(g.slice(t + "q2d", qkv, [0, 0], [N, H])))
        k = self.heads(t + "k", self.m(g.slice(t + "k2d", qkv, [0, H], [N, 2 * H])))
        v = self.heads(t + "v", self.m(g.slice(t + "v2d", qkv, [0, 2 * H], [N, 3 * H])))
        o, lse = g.attention(t + "attn", q, k, v, self.scale, self.causal, self.M)
        a2d = self.unheads(t + "a2d", o)
        out = self.linear(t + "o", a2d, p["w_o"], p["b_o"])
        return out, dict(q=q, k=k, v=v, o=o, lse=lse, a2d=a2d)

    def attention_backward(self, t, dout, x, s, p, grads):
        """Gradient of attention_forward's input for its output gradient dout."""
        g = self.g
        grads["w_o"], grads["b_o"], da2d = self.linear_grad(t + "o", dout, s["a2d"], p["w_o"],
                                                            p["b_o"])
        dattn = self.heads(t + "dattn", self.m(da2d))
        dq, dk, dv = g.attention_grad(t + "dheads", s["q"], s["k"], s["v"], s["o"], s["lse"],
                                      dattn, self.scale, self.causal)
        dqkv = g.concatenate(t + "dqkv", [self.unheads(t + "dq2d", dq),
                                          self.unheads(t + "dk2d", dk),
                                          self.unheads(t + "dv2d", dv)], 1)
        grads["w_qkv"], grads["b_qkv"], dx = self.linear_grad(t + "qkv", dqkv, x, p["w_qkv"],
                                                              p["b_qkv"])
        return dx

    def mlp_forward(self, t, x, p):
        g = self.g
        fc = self.linear(t + "fc", x, p["w_fc"], p["b_fc"])
        act = g.gelu(t + "act", fc, self.tanh_gelu)
        return self.linear(t + "proj", act, p["w_proj"], p["b_proj"]), dict(fc=fc, act=act)

    def mlp_backward(self, t, dout, x, s, p, grads):
        g = self.g
        grads["w_proj"], grads["b_proj"], dact = self.linear_grad(
            t + "proj", dout, s["act"], p["w_proj"], p["b_proj"])
        dfc = g.gelu_grad(t + "dfc", dact, s["fc"], self.tanh_gelu)
        grads["w_fc"], grads["b_fc"], dx = self.linear_grad(t + "fc", dfc, x, p["w_fc"],
                                                            p["b_fc"])
        return dx

    def layer_forward(self, i, x, p):
        """x f32 [N, H] -> (y, saved)."""
        g, t = self.g, f"l{i}_"
        ln1w, ln1b = self.f32(p["ln1_w"]), self.f32(p["ln1_b"])
        ln2w, ln2b = self.f32(p["ln2_w"]), self.f32(p["ln2_b"])
        s = dict(x=x, ln1w=ln1w, ln2w=ln2w)
        if self.post_ln:  # BERT: x1 = LN(x + attn(x)), y = LN(x1 + mlp(x1))
            a, s["attn"] = self.attention_forward(t, x, p)
            s["z1"] = g.add(t + "z1", x, a)
            s["ln1"] = g.layer_norm(t + "ln1", s["z1"], ln1w, ln1b, self.eps)
            h1 = s["ln1"][0]
            f, s["mlp"] = self.mlp_forward(t, h1, p)
            s["z2"] = g.add(t + "z2", h1, f)
            s["ln2"] = g.layer_norm(t + "ln2", s["z2"], ln2w, ln2b, self.eps)
            return s["ln2"][0], s
        # GPT: x1 = x + attn(LN(x)), y = x1 + mlp(LN(x1))
        s["ln1"] = g.layer_norm(t + "ln1", x, ln1w, ln1b, self.eps)
        a, s["attn"] = self.attention_forward(t, s["ln1"][0], p)
        s["x1"] = g.add(t + "x1", x, a)
        s["ln2"] = g.layer_norm(t + "ln2", s["x1"], ln2w, ln2b, self.eps)
        f, s["mlp"] = self.mlp_forward(t, s["ln2"][0], p)
        return g.add(t + "y", s["x1"], f), s

    def layer_backward(self, i, dy, s, p):
        """dy f32 [N, H] -> (dx, {ssa: gradient})."""
        g, t, grads = self.g, f"l{i}_", {}
        if self.post_ln:
            ln2 = g.layer_norm_grad(t + "dln2", dy, s["z2"], s["ln2"][1], s["ln2"][2], s["ln2w"])
            grads["ln2_w"], grads["ln2_b"] = ln2[1], ln2[2]
            dz2 = ln2[0]
            dh1 = g.add(t + "dh1", dz2, self.mlp_backward(t, dz2, s["ln1"][0], s["mlp"], p,
                                                          grads))
            ln1 = g.layer_norm_grad(t + "dln1", dh1, s["z1"], s["ln1"][1], s["ln1"][2], s["ln1w"])
            grads["ln1_w"], grads["ln1_b"] = ln1[1], ln1[2]
            dz1 = ln1[0]
            dx = g.add(t + "dx", dz1, self.attention_backward(t, dz1, s["x"], s["attn"], p,
                                                              grads))
            return dx, grads
        dln2 = self.mlp_backward(t, dy, s["ln2"][0], s["mlp"], p, grads)
        ln2 = g.layer_norm_grad(t + "dln2", dln2, s["x1"], s["ln2"][1], s["ln2"][2], s["ln2w"])
        grads["ln2_w"], grads["ln2_b"] = ln2[1], ln2[2]
        dx1 = g.add(t + "dx1", dy, ln2[0])
        dln1 = self.attention_backward(t, dx1, s["ln1"][0], s["attn"], p, grads)
        ln1 = g.layer_norm_grad(t + "dln1", dln1, s["x"], s["ln1"][1], s["ln1"][2], s["ln1w"])
        grads["ln1_w"], grads["ln1_b"] = ln1[1], ln1[2]
        return g.add(t + "dx", dx1, ln1[0]), grads

    # -- whole steps -------------------------------------------------------------------
    def layers(self, x):
        """Forward through every layer, then the backward callback:
        returns (y, backward(dy) -> (dx, {Value name: gradient}))."""
        g = self.g
        ps, saved = [], []
        for i in range(self.L):
            ps.append(self.layer_params(i))
        for i in range(self.L):
            g.comment(f"=== Layer {i} forward ===")
            x, s = self.layer_forward(i, x, ps[i])
            saved.append(s)

        def backward(dy):
            grads = {}
            for i in reversed(range(self.L)):
                g.comment(f"=== Layer {i} backward ===")
                dy, layer_grads = self.layer_backward(i, dy, saved[i], ps[i])
                grads.update({ps[i][ssa].name: gr for ssa, gr in layer_grads.items()})
            return dy, grads
        return x, backward

    def build_bert(self):
        g, H, N, V = self.g, self.H, self.N, self.V
        ids = self.arg("input_ids", (self.B, self.S), "i32", "data", "input_ids")
        types = self.arg("token_type_ids", (self.B, self.S), "i32", "data", "token_type_ids")
        labels2d = self.arg("labels", (self.B, self.S), "i32", "label", "labels")
        wte = self.param("wte", (V, H), "embeddings.word")
        wpe = self.param("wpe", (self.PMAX, H), "embeddings.position")
        wtt = self.param("wtt", (2, H), "embeddings.token_type")
        lne_w = self.param("lne_w", (H,), "embeddings.ln.weight")
        lne_b = self.param("lne_b", (H,), "embeddings.ln.bias")

        g.comment("=== Embeddings ===")
        positions = g.iota("position_ids", (self.B, self.S), 1)
        e3 = g.add("emb_wp", self.f32(g.gather("emb_word", wte, ids)),
                   self.f32(g.gather("emb_pos", wpe, positions)))
        e3 = g.add("emb", e3, self.f32(g.gather("emb_type", wtt, types)))
        e = g.reshape("emb2d", e3, (N, H))
        lnew, lneb = self.f32(lne_w), self.f32(lne_b)
        lne = g.layer_norm("ln_emb", e, lnew, lneb, self.eps)
        x, layers_backward = self.layers(lne[0])
        head_w = self.param("head_w", (H, H), "mlm.transform.weight")
        head_b = self.param("head_b", (H,), "mlm.transform.bias")
        lnh_w = self.param("lnh_w", (H,), "mlm.ln.weight")
        lnh_b = self.param("lnh_b", (H,), "mlm.ln.bias")
        dec_b = self.param("dec_b", (V,), "mlm.decoder.bias")

        g.comment("=== MLM head and loss ===")
        tr = self.linear("mlm_t", x, head_w, head_b)
        tra = g.gelu("mlm_act", tr, self.tanh_gelu)
        lnhw, lnhb = self.f32(lnh_w), self.f32(lnh_b)
        lnh = g.layer_norm("mlm_ln", tra, lnhw, lnhb, self.eps)
        logits = self.linear("logits", lnh[0], wte, dec_b)
        labels = g.reshape("flat_labels", labels2d, (N,))
        loss = g.cross_entropy("loss", logits, labels)

        g.comment("=== MLM head backward ===")
        one = g.constant("one", 1.0, ())
        dlogits = g.cross_entropy_grad("dlogits", logits, labels, one)
        grads = {}
        dwte_dec, grads[dec_b.name], dlnh = self.linear_grad("dec", dlogits, lnh[0], wte, dec_b)
        lnhg = g.layer_norm_grad("dmlm_ln", dlnh, tra, lnh[1], lnh[2], lnhw)
        grads[lnh_w.name], grads[lnh_b.name] = lnhg[1], lnhg[2]
        dtr = g.gelu_grad("dmlm_t", lnhg[0], tr, self.tanh_gelu)
        grads[head_w.name], grads[head_b.name], dx = self.linear_grad("mlm_t", dtr, x, head_w,
                                                                      head_b)
        dx0, layer_grads = layers_backward(dx)
        grads.update(layer_grads)

        g.comment("=== Embeddings backward ===")
        lneg = g.layer_norm_grad("dln_emb", dx0, e, lne[1], lne[2], lnew)
        grads[lne_w.name], grads[lne_b.name] = lneg[1], lneg[2]
        de3 = g.reshape("demb", lneg[0], (self.B, self.S, H))
        dwte_emb = g.scatter_add("dwte_emb", self.splat(0.0, (V, H), "zeros_wte"), ids, de3)
        grads[wte.name] = g.add("dwte", dwte_emb, dwte_dec)
        grads[wpe.name] = g.scatter_add("dwpe", self.splat(0.0, (self.PMAX, H), "zeros_wpe"),
                                        positions, de3)
        grads[wtt.name] = g.scatter_add("dwtt", self.splat(0.0, (2, H), "zeros_wtt"), types, de3)
        results = [(g.reshape("loss1", loss, (1,)), "loss", "loss")]
        return results + self.update(grads)

    def build_gpt_stage(self):
        g, H, N = self.g, self.H, self.N
        x_in = self.arg("x", (N, H), self.P, "data", "x")
        dy_in = self.arg("grad_y", (N, H), self.P, "data", "grad.y")
        y, layers_backward = self.layers(self.f32(x_in))
        dx, grads = layers_backward(self.f32(dy_in))
        results = [(g.convert("y", y, self.P), "output", "y"), (dx, "gradient", "grad.x")]
        return results + self.update(grads)

    def update(self, grads):
        """Results after the backward: AdamW's new parameters and moments, or
        the gradients."""
        g = self.g
        if self.optimizer == "none":
            return [(grads[v.name], "gradient", "grad." + name) for name, v in self.params]
        moments = []
        for name, v in self.params:
            m = self.arg(v.name[1:] + "_m", v.shape, "f32", "optimizer_state", "adam.m." + name)
            s = self.arg(v.name[1:] + "_v", v.shape, "f32", "optimizer_state", "adam.v." + name)
            moments.append((m, s))
        g.comment("=== AdamW ===")
        new = []
        for (name, v), (m, s) in zip(self.params, moments):
            new.append(self.adamw(v.name[1:], v.shape, v, grads[v.name], m, s))
        return ([(p, "parameter", "new." + name) for (name, _), (p, _, _) in zip(self.params, new)]
                + [(m, "optimizer_state", "new.adam.m." + name)
                   for (name, _), (_, m, _) in zip(self.params, new)]
                + [(s, "optimizer_state", "new.adam.v." + name)
                   for (name, _), (_, _, s) in zip(self.params, new)])

    def build_optimizer(self):
        """The optimizer step alone: the model's parameters, their f32
        gradients and the moments in, AdamW's results out."""
        if self.kind == "bert":
            H, V = self.H, self.V
            for ssa, shape, name in [("wte", (V, H), "embeddings.word"),
                                     ("wpe", (self.PMAX, H), "embeddings.position"),
                                     ("wtt", (2, H), "embeddings.token_type"),
                                     ("lne_w", (H,), "embeddings.ln.weight"),
                                     ("lne_b", (H,), "embeddings.ln.bias")]:
                self.param(ssa, shape, name)
        for i in range(self.L):
            self.layer_params(i)
        if self.kind == "bert":
            H, V = self.H, self.V
            for ssa, shape, name in [("head_w", (H, H), "mlm.transform.weight"),
                                     ("head_b", (H,), "mlm.transform.bias"),
                                     ("lnh_w", (H,), "mlm.ln.weight"),
                                     ("lnh_b", (H,), "mlm.ln.bias"),
                                     ("dec_b", (V,), "mlm.decoder.bias")]:
                self.param(ssa, shape, name)
        grads = {v.name: self.arg(v.name[1:] + "_grad", v.shape, "f32", "gradient",
                                  "grad." + name)
                 for name, v in self.params}
        return self.update(grads)

    def build(self, name, part="step"):
        if part == "optimizer":
            results = self.build_optimizer()
        else:
            results = self.build_bert() if self.kind == "bert" else self.build_gpt_stage()
        return self.function(name, results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    parser.add_argument("model", choices=sorted(MODELS))
    for size in ("layers", "hidden", "heads", "seq", "batch", "ffn", "vocab", "positions", "tp"):
        parser.add_argument("--" + size, type=int)
    parser.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    parser.add_argument("--optimizer", choices=["adamw", "none"])
    parser.add_argument("--part", choices=["step", "optimizer"], default="step",
                        help="the whole step, or its optimizer update alone (AdamW over the "
                             "model's parameters, gradients as inputs)")
    parser.add_argument("-o", "--output", default="-", help="the .mlir file (default stdout)")
    args = parser.parse_args()
    config = dict(MODELS[args.model])
    if args.tp is not None and "tp" not in config:
        parser.error(f"--tp is for gpt3-23b, not {args.model}")
    for key in config:
        if getattr(args, key, None) is not None:
            config[key] = getattr(args, key)
    if config["kind"] == "bert" and config["positions"] < config["seq"]:
        parser.error(f"--positions {config['positions']} < --seq {config['seq']}")
    try:
        step = TransformerStep(dtype=args.dtype, **config)
    except ValueError as e:
        parser.error(str(e))
    name = args.model.replace("-", "_") + "_step"
    summary = ", ".join(f"{k} {v}" for k, v in config.items())
    if args.part == "optimizer" and config["optimizer"] != "adamw":
        parser.error("--part optimizer needs --optimizer adamw")
    text = step.build(name, args.part)
    header = (f"// GENERATED by utils/gen_transformer_step.py {args.model}: {summary}, "
              f"dtype {args.dtype}; {step.g.ops} trn ops.\n")
    if args.output == "-":
        sys.stdout.write(header + text)
    else:
        with open(args.output, "w") as f:
            f.write(header + text)


if __name__ == "__main__":
    main()
