#!/usr/bin/env python3
"""Generates the gpt-block*.mlir e2e tests: one training step of a GPT-style
pre-LN transformer block, from hidden states to a mean cross-entropy LM loss,
then a hand-derived backward and AdamW on all 13 parameters.

    python3 test/e2e/Inputs/gen_gpt_block.py test/e2e

writes four files (regenerate after editing this script):

  gpt-block.mlir            f32, with the composite ops: causal trn.attention
                            (and _grad), trn.cross_entropy (and _grad) with i32
                            labels, trn.gelu_grad, trn.layer_norm (and _grad)
  gpt-block-bf16.mlir       the same in mixed precision (below)
  gpt-block-lowered.mlir    gpt-block.mlir with the composites that do not
                            lower yet (causal attention needs trn.iota,
                            cross-entropy trn.gather/scatter_add, gelu_grad is
                            not lowered) spelled in primitives that lower
  gpt-block-lowered-bf16.mlir   the same for gpt-block-bf16.mlir

Every graph is compiled by trn-cc, run on the simulator and compared with the
reference evaluator; the lowered graphs are also compared with the reference
of the composite graph (same input and output names). (The "lowered" variants
date from before trn.iota, trn.gather, trn.scatter_add and trn.gelu_grad were
lowered; they remain as a check of the decompositions.)

Differences from test/Eval/transformer-block.mlir: no token embedding
(trn.gather and trn.scatter_add do not lower yet): the step starts from
hidden states `x` and also returns their gradient; labels are i32 (the backend
does not lower i64 tensors); the fused QKV gradient is a concatenation instead
of pads and adds (trn.pad does not lower); scalars go through tensor<1xf32>
(rank-0 inputs and outputs: scalar-io.mlir); updated parameters and optimizer
states are returned under new names instead of aliasing their inputs
(alias-inplace.mlir); AdamW runs at step t = 3 so that the bias corrections
matter. Gradients are returned too, so that they are checked directly rather
than through the small AdamW updates.

Mixed precision (the bf16 files): hidden states and parameters are bf16,
Adam's moments f32. Every matmul takes bf16 operands and accumulates in f32;
the residual stream, layer norms, softmax and all elementwise math are f32;
attention takes bf16 q, k, v and grad_output and returns bf16 results, like
trn.attention on bf16 operands (whose decomposition computes in f32 and rounds
the results); gradients are f32; AdamW computes in f32 and rounds the new
parameters to bf16.
"""

import math
import os
import textwrap
import sys

# The IR writer and the step conventions (linear layers, mixed precision,
# AdamW) are shared with utils/gen_transformer_step.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "utils"))
from trn_graph import StepBuilder  # noqa: E402

# batch, sequence, hidden, heads, head size, MLP, vocabulary
B, S, H, NH = 2, 100, 96, 2
HD = H // NH
F, V = 4 * H, 600
N = B * S  # tokens: 200, two partition tiles

LN_EPS = 1e-5
LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP = 1e-2, 0.9, 0.999, 1e-8, 0.1, 3
IGNORE_INDEX = -100
NEG_INF = "0xFF800000"

# (trn.name, SSA name, shape)
PARAMETERS = [
    ("ln1.weight", "ln1_w", (H,)),
    ("ln1.bias", "ln1_b", (H,)),
    ("attn.qkv.weight", "w_qkv", (3 * H, H)),
    ("attn.qkv.bias", "b_qkv", (3 * H,)),
    ("attn.out.weight", "w_o", (H, H)),
    ("attn.out.bias", "b_o", (H,)),
    ("ln2.weight", "ln2_w", (H,)),
    ("ln2.bias", "ln2_b", (H,)),
    ("mlp.fc.weight", "w_fc", (F, H)),
    ("mlp.fc.bias", "b_fc", (F,)),
    ("mlp.proj.weight", "w_proj", (H, F)),
    ("mlp.proj.bias", "b_proj", (H,)),
    ("lm_head.weight", "w_head", (V, H)),
]


class Step(StepBuilder):
    """Emits the step; `lowered` spells the unlowered composites in primitives."""

    def __init__(self, bf16, lowered):
        super().__init__(bf16)
        self.lowered = lowered

    # -- attention -------------------------------------------------------------
    def causal_mask(self):
        """i1 [B, NH, S, S]: key position > query position."""
        g = self.g
        pos = g.iconstant("positions", list(range(S)))
        shape = (B, NH, S, S)
        rows = g.broadcast("query_pos", pos, shape, [2])
        cols = g.broadcast("key_pos", pos, shape, [3])
        return g.compare("gt", "future", cols, rows)

    def attention(self, q, k, v, scale):
        """Returns (output in M, state for the backward)."""
        g = self.g
        if not self.lowered:
            return g.attention("attn", q, k, v, scale, True, self.M)
        g.comment("Causal attention in primitives: p = exp(scale q k^T + mask - lse).")
        scores = g.dot("scores_qk", q, k, [0, 1], [0, 1], [3], [3])
        scaled = g.mul("scores", scores, self.splat(scale, scores.shape, "scale_sst"))
        mask = self.causal_mask()
        masked = g.select("masked", mask, self.splat(NEG_INF, scores.shape, "neg_inf"), scaled)
        mx = g.reduce("max", "row_max", masked, [3])
        shifted = g.sub("shifted", masked, g.broadcast("row_max_b", mx, scores.shape, [0, 1, 2]))
        e = g.unary("exp", "exps", shifted)
        total = g.reduce("sum", "row_sum", e, [3])
        lse = g.add("lse", mx, g.unary("log", "log_sum", total))
        p = g.unary("exp", "probs", g.sub("logits_minus_lse", masked,
                                             g.broadcast("lse_b", lse, scores.shape, [0, 1, 2])))
        o = g.dot("attn_f32", p, self.f32(v), [0, 1], [0, 1], [3], [2])
        return g.convert("attn", o, self.M), (p, mask)

    def attention_grad(self, q, k, v, o, state, do, scale):
        g = self.g
        if not self.lowered:
            lse = state
            return g.attention_grad("dheads", q, k, v, o, lse, do, scale, True)
        p, _ = state
        g.comment("Attention backward in primitives, from p.")
        do32, v32, q32, k32 = self.f32(do), self.f32(v), self.f32(q), self.f32(k)
        dv = g.dot("dv_heads_f32", p, do32, [0, 1], [0, 1], [2], [2])
        dp = g.dot("dprobs", do32, v32, [0, 1], [0, 1], [3], [3])
        rowdot = g.reduce("sum", "do_dot_o", g.mul("do_o", do32, self.f32(o)), [3])
        ds = g.mul("dscores", p, g.sub("dp_centred", dp,
                                          g.broadcast("do_dot_o_b", rowdot, p.shape, [0, 1, 2])))
        dq = g.mul("dq_heads_f32", g.dot("ds_k", ds, k32, [0, 1], [0, 1], [3], [2]),
                   self.splat(scale, q.shape, "scale_shd"))
        dk = g.mul("dk_heads_f32", g.dot("ds_q", ds, q32, [0, 1], [0, 1], [2], [2]),
                   self.splat(scale, k.shape, "scale_shd"))
        return [g.convert(n, x, self.M) for n, x in
                (("dq_heads", dq), ("dk_heads", dk), ("dv_heads", dv))]

    # -- cross-entropy -----------------------------------------------------------
    def cross_entropy(self, logits, labels):
        """Mean loss (tensor<f32>) and its gradient w.r.t. logits (grad_loss = 1)."""
        g = self.g
        if not self.lowered:
            loss = g.cross_entropy("loss", logits, labels)
            one = g.constant("one", 1.0, ())
            return loss, lambda: g.cross_entropy_grad("dlogits", logits, labels, one)
        g.comment("Mean cross-entropy in primitives: one-hot from a constant [0, V).")
        classes = g.iconstant("classes", list(range(V)))
        hot = g.compare("eq", "is_label", g.broadcast("labels_b", labels, logits.shape, [0]),
                        g.broadcast("classes_b", classes, logits.shape, [1]))
        onehot = g.convert("onehot", hot, "f32")
        kept = g.compare("ne", "kept", labels, g.emit(
            "ignore", f"trn.constant dense<{IGNORE_INDEX}> : {labels.type}",
            [(labels.shape, labels.dtype)]))
        keep = g.convert("keep", kept, "f32")
        count = g.reduce("sum", "count", keep, [0])
        logp = g.log_softmax("logp", logits, 1)
        nll = g.reduce("sum", "label_logp", g.mul("picked", onehot, logp), [1])
        loss = g.div("loss", g.unary("neg", "neg_sum", g.reduce("sum", "sum_logp", nll, [0])), count)

        def grad():
            probs = g.softmax("probs_lm", logits, 1)
            g_rows = g.div("mean_weight", self.splat(1.0, keep.shape, "ones_n"),
                           g.broadcast("count_b", count, keep.shape, []))
            weight = g.select("row_weight", kept, g_rows, self.splat(0.0, keep.shape, "zeros_n"))
            return g.mul("dlogits", g.sub("probs_minus_onehot", probs, onehot),
                         g.broadcast("row_weight_b", weight, logits.shape, [0]))
        return loss, grad

    # -- GELU ------------------------------------------------------------------------
    def gelu_grad(self, dy, x):
        g = self.g
        if not self.lowered:
            return g.gelu_grad("dfc", dy, x)
        g.comment("gelu_grad (tanh) in primitives: with t = tanh(c (x + k x^3)),")
        g.comment("d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2).")
        c = self.splat(math.sqrt(2.0 / math.pi), x.shape, "gelu_c")
        k = self.splat(0.044715, x.shape, "gelu_k")
        k3 = self.splat(3 * 0.044715, x.shape, "gelu_3k")
        one = self.splat(1.0, x.shape, "one_nf")
        half = self.splat(0.5, x.shape, "half_nf")
        x2 = g.mul("fc_sq", x, x)
        inner = g.add("gelu_inner", x, g.mul("gelu_kx3", k, g.mul("fc_cube", x2, x)))
        t = g.unary("tanh", "gelu_t", g.mul("gelu_u", c, inner))
        left = g.mul("gelu_left", half, g.add("gelu_1pt", one, t))
        sech2 = g.sub("gelu_sech2", one, g.mul("gelu_t2", t, t))
        poly = g.mul("gelu_poly", c, g.add("gelu_poly0", one, g.mul("gelu_3kx2", k3, x2)))
        right = g.mul("gelu_right", g.mul("gelu_r0", g.mul("gelu_hx", half, x), sech2), poly)
        return g.mul("dfc", dy, g.add("dgelu", left, right))

    # -- the step ------------------------------------------------------------------------
    def build(self):
        g, P, arg = self.g, self.P, self.arg
        x_in = arg("x", (N, H), P, "data", "x")
        labels2d = arg("labels", (B, S), "i32", "label", "labels")
        p = {ssa: arg(ssa, shape, P, "parameter", name) for name, ssa, shape in PARAMETERS}
        ms = {ssa: arg("m_" + ssa, shape, "f32", "optimizer_state", "adam.m." + name)
              for name, ssa, shape in PARAMETERS}
        vs = {ssa: arg("v_" + ssa, shape, "f32", "optimizer_state", "adam.v." + name)
              for name, ssa, shape in PARAMETERS}
        scale = 1.0 / math.sqrt(HD)

        def heads(hint, x2d):  # [N, H] -> [B, NH, S, HD]
            return g.transpose(hint, g.reshape(hint + "_bshd", x2d, (B, S, NH, HD)), [0, 2, 1, 3])

        def unheads(hint, x):  # [B, NH, S, HD] -> [N, H]
            return g.reshape(hint, g.transpose(hint + "_bshd", x, [0, 2, 1, 3]), (N, H))

        g.comment("=== Forward ===")
        x = self.f32(x_in)
        ln1w, ln1b = self.f32(p["ln1_w"]), self.f32(p["ln1_b"])
        ln1 = g.layer_norm("ln1", x, ln1w, ln1b, LN_EPS)
        qkv = self.linear("qkv", ln1[0], p["w_qkv"], p["b_qkv"])
        q = heads("q", self.m(g.slice("q2d", qkv, [0, 0], [N, H])))
        k = heads("k", self.m(g.slice("k2d", qkv, [0, H], [N, 2 * H])))
        v = heads("v", self.m(g.slice("v2d", qkv, [0, 2 * H], [N, 3 * H])))
        attn, attn_state = self.attention(q, k, v, scale)
        a2d = unheads("a2d", attn)
        x1 = g.add("x1", x, self.linear("o", a2d, p["w_o"], p["b_o"]))
        ln2w, ln2b = self.f32(p["ln2_w"]), self.f32(p["ln2_b"])
        ln2 = g.layer_norm("ln2", x1, ln2w, ln2b, LN_EPS)
        fc = self.linear("fc", ln2[0], p["w_fc"], p["b_fc"])
        act = g.unary("gelu", "act", fc, " approximate = tanh")
        x2 = g.add("x2", x1, self.linear("proj", act, p["w_proj"], p["b_proj"]))
        logits = self.linear("logits", x2, p["w_head"], None)
        labels = g.reshape("flat_labels", labels2d, (N,))
        loss, loss_grad = self.cross_entropy(logits, labels)

        g.comment()
        g.comment("=== Backward ===")
        dlogits = loss_grad()
        grads = {}
        grads["w_head"], _, dx2 = self.linear_grad("head", dlogits, x2, p["w_head"], None)
        grads["w_proj"], grads["b_proj"], dact = self.linear_grad("proj", dx2, act,
                                                                  p["w_proj"], p["b_proj"])
        dfc = self.gelu_grad(dact, fc)
        grads["w_fc"], grads["b_fc"], dln2 = self.linear_grad("fc", dfc, ln2[0],
                                                              p["w_fc"], p["b_fc"])
        ln2g = g.layer_norm_grad("dln2", dln2, x1, ln2[1], ln2[2], ln2w)
        grads["ln2_w"], grads["ln2_b"] = ln2g[1], ln2g[2]
        dx1 = g.add("dx1", dx2, ln2g[0])
        grads["w_o"], grads["b_o"], da2d = self.linear_grad("o", dx1, a2d, p["w_o"], p["b_o"])
        dattn = heads("dattn", self.m(da2d))
        dq, dk, dv = self.attention_grad(q, k, v, attn, attn_state, dattn, scale)
        g.comment("The adjoint of slicing q, k and v out of qkv: concatenate.")
        dqkv = g.concatenate("dqkv", [unheads("dq2d", dq), unheads("dk2d", dk),
                                      unheads("dv2d", dv)], 1)
        grads["w_qkv"], grads["b_qkv"], dln1 = self.linear_grad("qkv", dqkv, ln1[0],
                                                                p["w_qkv"], p["b_qkv"])
        ln1g = g.layer_norm_grad("dln1", dln1, x, ln1[1], ln1[2], ln1w)
        grads["ln1_w"], grads["ln1_b"] = ln1g[1], ln1g[2]
        dx = g.add("dx", dx1, ln1g[0])

        g.comment()
        g.comment(f"=== AdamW, step t = {STEP} ===")
        hyper = dict(lr=LR, beta1=BETA1, beta2=BETA2, eps=EPS, weight_decay=WEIGHT_DECAY,
                     step=STEP)
        new_p, new_m, new_v = {}, {}, {}
        for name, ssa, shape in PARAMETERS:
            g.comment(name)
            new_p[ssa], new_m[ssa], new_v[ssa] = self.adamw(ssa, shape, p[ssa], grads[ssa],
                                                            ms[ssa], vs[ssa], hyper)

        loss1 = g.reshape("loss1", loss, (1,))
        results = [(loss1, "loss", "loss"), (dx, "gradient", "grad.x")]
        results += [(grads[ssa], "gradient", "grad." + name) for name, ssa, _ in PARAMETERS]
        results += [(new_p[ssa], "parameter", "new." + name) for name, ssa, _ in PARAMETERS]
        results += [(new_m[ssa], "optimizer_state", "new.adam.m." + name)
                    for name, ssa, _ in PARAMETERS]
        results += [(new_v[ssa], "optimizer_state", "new.adam.v." + name)
                    for name, ssa, _ in PARAMETERS]
        fn = "gpt_block" + ("_lowered" if self.lowered else "") + ("_bf16" if self.bf16 else "")
        return self.function(fn, results), g.ops, len(results)


# Adam's second moments must not be negative; every 7th label is ignored; the
# weights are scaled so that attention (score std ~1.3) and the loss (~7.5,
# log 600 = 6.4) are neither flat nor saturated.
EDITS = ("--abs 'adam.v.*' --every labels:7:-100 --scale 'attn.qkv.weight:0.5' "
         "--scale 'mlp.proj.weight:0.125' --scale 'lm_head.weight:0.015625'")


def preamble(bf16, lowered, ops, outputs):
    sfx = "-bf16" if bf16 else ""
    tol = "2e-2" if bf16 else "1e-4"
    precision = ("mixed precision: bf16 hidden states and parameters, bf16 matmul "
                 "operands, f32 accumulation, residual stream, norms, softmax, "
                 "gradients and Adam moments" if bf16 else "f32")
    summary = (
        f"One training step of a GPT-style pre-LN transformer block from hidden states "
        f"({precision}): ln1, fused QKV projection, causal attention ({NH} heads of {HD}), "
        f"output projection and residual, ln2, MLP with tanh-GELU ({F}) and residual, LM "
        f"head ({V} classes: N > 512), mean cross-entropy over i32 labels with every 7th "
        f"ignored (-100); a hand-derived backward and AdamW (t = {STEP}) on the 13 "
        f"parameters. Batch {B} x sequence {S} = {N} tokens (two partition tiles), hidden "
        f"{H}. {ops} trn ops, {outputs} outputs: the loss, the gradients (of x and of every "
        f"parameter), the new parameters and Adam moments.")
    text = ("// GENERATED by Inputs/gen_gpt_block.py (edit that, then regenerate:\n"
            "//   python3 test/e2e/Inputs/gen_gpt_block.py test/e2e).\n//\n"
            + "".join("// " + line + "\n" for line in textwrap.wrap(summary, 76)))
    if lowered:
        text += f"""//
// The composites that do not lower yet are spelled in primitives: causal
// attention (the mask compares two broadcasts of a constant [0, {S})),
// cross-entropy (one-hot from a constant [0, {V})) and gelu_grad. The
// simulator matches this graph's reference and the reference of the
// composite graph gpt-block{sfx}.mlir on the same inputs. Adam's second
// moments are made non-negative and the weights scaled so that attention and
// the loss are neither flat nor saturated (edit_inputs.py).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 23 --int-max {V} --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz {EDITS}
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-eval %S/gpt-block{sfx}.mlir --inputs %t/in.npz --outputs %t/ref-composite.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz {tol} | FileCheck %s
// RUN: %trn_python %S/Inputs/compare.py %t/ref-composite.npz %t/out.npz {tol} | FileCheck %s
// CHECK: {outputs} outputs match

"""
    else:
        text += f"""//
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-eval %s --random 23 --int-max {V} --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz {EDITS}
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz {tol} | FileCheck %s
// CHECK: outputs match

"""
    return text


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    for bf16 in (False, True):
        for lowered in (False, True):
            text, ops, outputs = Step(bf16, lowered).build()
            name = "gpt-block" + ("-lowered" if lowered else "") + ("-bf16" if bf16 else "")
            with open(os.path.join(out_dir, name + ".mlir"), "w") as f:
                f.write(preamble(bf16, lowered, ops, outputs) + text)


if __name__ == "__main__":
    main()
