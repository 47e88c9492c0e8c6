#!/usr/bin/env python3
"""Generates test/Eval/transformer-block.mlir: one training step of a GPT-style
pre-LN transformer block with an LM loss, written in the `trn` dialect.

    python3 test/Eval/Inputs/gen_transformer_block.py > test/Eval/transformer-block.mlir

The step is forward, a hand-derived backward (cross_entropy_grad, gelu_grad,
layer_norm_grad, attention_grad and primitives) and AdamW on every parameter.
transformer_block_reference.py recomputes the same step independently with
PyTorch autograd; keep the sizes and hyper-parameters below in sync with it.

For debugging, `--emulate IN.npz OUT.npz` also runs the generated op sequence
in NumPy (in float64, or float32 with `--emulate-dtype float32`), following the
op descriptions in TrnOps.td, and writes the results under the same names
trn-eval uses. It needs numpy (Debian's
/usr/bin/python3 has it); plain generation needs nothing but Python 3.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "utils"))
from trn_graph import fmt_float, ilist, ttype  # noqa: E402

# Sizes: batch, sequence, hidden, heads, head size, MLP, vocabulary.
B, S, H, NH = 2, 8, 16, 2
HD = H // NH
F, V = 4 * H, 32
N = B * S  # tokens

LN_EPS = 1e-5
# AdamW hyper-parameters; the step is fixed at t = 1.
LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP = 1e-2, 0.9, 0.999, 1e-8, 0.1, 1
IGNORE_INDEX = -100

# (trn.name, SSA name, shape), in argument order.
PARAMETERS = [
    ("wte", "wte", (V, H)),
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


class Value:
    def __init__(self, name, shape, dtype="f32", val=None):
        self.name, self.shape, self.dtype, self.val = name, tuple(shape), dtype, val

    @property
    def type(self):
        return ttype(self.shape, self.dtype)


class Builder:
    """Emits one trn op per call; with `np` set, also evaluates it."""

    def __init__(self, np=None, ftype=None):
        self.np = np
        self.ftype = ftype  # NumPy dtype that f32 tensors are emulated in
        self.lines = []
        self.names = set()
        self.op_count = 0

    # -- emission helpers -------------------------------------------------
    def comment(self, text=""):
        self.lines.append(("  // " + text) if text else "")

    def _fresh(self, hint):
        name, i = hint, 1
        while name in self.names:
            i += 1
            name = f"{hint}_{i}"
        self.names.add(name)
        return "%" + name

    def _emit(self, hint, text, results):
        """`results`: list of (shape, dtype, value)."""
        name = self._fresh(hint)
        self.op_count += 1
        if len(results) == 1:
            self.lines.append(f"  {name} = {text}")
            shape, dtype, val = results[0]
            return Value(name, shape, dtype, val)
        self.lines.append(f"  {name}:{len(results)} = {text}")
        return [Value(f"{name}#{i}", shape, dtype, val)
                for i, (shape, dtype, val) in enumerate(results)]

    def _ev(self, fn):
        return fn() if self.np is not None else None

    # -- ops ---------------------------------------------------------------
    def constant(self, hint, value, shape):
        np = self.np
        text = f"trn.constant dense<{fmt_float(value)}> : {ttype(shape, 'f32')}"
        return self._emit(hint, text, [(shape, "f32", self._ev(
            lambda: np.full(shape, value, dtype=self.ftype)))])

    def binary(self, op, hint, a, b):
        assert a.type == b.type, (op, a.type, b.type)
        np = self.np
        fn = {"add": lambda: a.val + b.val, "sub": lambda: a.val - b.val,
              "mul": lambda: a.val * b.val, "div": lambda: a.val / b.val}[op]
        return self._emit(hint, f"trn.{op} {a.name}, {b.name} : {a.type}",
                          [(a.shape, a.dtype, self._ev(fn))])

    def add(self, hint, a, b):
        return self.binary("add", hint, a, b)

    def sub(self, hint, a, b):
        return self.binary("sub", hint, a, b)

    def mul(self, hint, a, b):
        return self.binary("mul", hint, a, b)

    def div(self, hint, a, b):
        return self.binary("div", hint, a, b)

    def sqrt(self, hint, a):
        np = self.np
        return self._emit(hint, f"trn.sqrt {a.name} : {a.type}",
                          [(a.shape, a.dtype, self._ev(lambda: np.sqrt(a.val)))])

    def gelu(self, hint, x):
        return self._emit(hint, f"trn.gelu {x.name} approximate = tanh : {x.type}",
                          [(x.shape, x.dtype, self._ev(lambda: gelu_tanh(self.np, x.val)))])

    def gelu_grad(self, hint, dy, x):
        return self._emit(
            hint, f"trn.gelu_grad {dy.name}, {x.name} approximate = tanh : {x.type}",
            [(x.shape, x.dtype, self._ev(lambda: dy.val * gelu_tanh_derivative(self.np, x.val)))])

    def reshape(self, hint, x, shape):
        assert math.prod(shape) == math.prod(x.shape)
        return self._emit(
            hint, f"trn.reshape {x.name} : ({x.type}) -> {ttype(shape, x.dtype)}",
            [(shape, x.dtype, self._ev(lambda: x.val.reshape(shape)))])

    def transpose(self, hint, x, perm):
        shape = tuple(x.shape[p] for p in perm)
        return self._emit(
            hint, f"trn.transpose {x.name}, perm = {ilist(perm)} : "
                  f"({x.type}) -> {ttype(shape, x.dtype)}",
            [(shape, x.dtype, self._ev(lambda: x.val.transpose(perm)))])

    def slice(self, hint, x, start, limit):
        shape = tuple(l - s for s, l in zip(start, limit))
        strides = [1] * len(shape)
        index = tuple(slice(s, l) for s, l in zip(start, limit))
        return self._emit(
            hint, f"trn.slice {x.name}, start = {ilist(start)}, limit = {ilist(limit)}, "
                  f"strides = {ilist(strides)} : ({x.type}) -> {ttype(shape, x.dtype)}",
            [(shape, x.dtype, self._ev(lambda: x.val[index]))])

    def pad(self, hint, x, low, high):
        shape = tuple(d + l + h for d, l, h in zip(x.shape, low, high))
        return self._emit(
            hint, f"trn.pad {x.name}, low = {ilist(low)}, high = {ilist(high)}, "
                  f"value = 0.0 : ({x.type}) -> {ttype(shape, x.dtype)}",
            [(shape, x.dtype, self._ev(
                lambda: self.np.pad(x.val, list(zip(low, high)))))])

    def broadcast(self, hint, x, shape, dims):
        np = self.np

        def ev():
            expanded = [1] * len(shape)
            for k, d in enumerate(dims):
                expanded[d] = x.shape[k]
            return np.broadcast_to(x.val.reshape(expanded), shape).copy()
        return self._emit(
            hint, f"trn.broadcast_in_dim {x.name}, dims = {ilist(dims)} : "
                  f"({x.type}) -> {ttype(shape, x.dtype)}",
            [(tuple(shape), x.dtype, self._ev(ev))])

    def reduce_sum(self, hint, x, dims):
        shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
        return self._emit(
            hint, f"trn.reduce sum {x.name}, dims = {ilist(dims)} : "
                  f"({x.type}) -> {ttype(shape, x.dtype)}",
            [(shape, x.dtype, self._ev(lambda: x.val.sum(axis=tuple(dims))))])

    def dot(self, hint, lhs, rhs, lb, rb, lc, rc):
        shape = tuple([lhs.shape[d] for d in lb]
                      + [s for i, s in enumerate(lhs.shape) if i not in lb + lc]
                      + [s for i, s in enumerate(rhs.shape) if i not in rb + rc])

        def ev():
            letters = iter("abcdefghijklmnopqrstuvwxyz")
            ls = [next(letters) for _ in lhs.shape]
            rs = [next(letters) for _ in rhs.shape]
            for l, r in zip(lb + lc, rb + rc):
                rs[r] = ls[l]
            out = ([ls[d] for d in lb]
                   + [ls[i] for i in range(len(ls)) if i not in lb + lc]
                   + [rs[i] for i in range(len(rs)) if i not in rb + rc])
            return self.np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}",
                                  lhs.val, rhs.val)
        return self._emit(
            hint, f"trn.dot_general {lhs.name}, {rhs.name}, batching_dims = {ilist(lb)} x "
                  f"{ilist(rb)}, contracting_dims = {ilist(lc)} x {ilist(rc)} : "
                  f"({lhs.type}, {rhs.type}) -> {ttype(shape, 'f32')}",
            [(shape, "f32", self._ev(ev))])

    def gather(self, hint, table, ids):
        shape = tuple(ids.shape) + tuple(table.shape[1:])
        return self._emit(
            hint, f"trn.gather {table.name}[{ids.name}], axis = 0 : "
                  f"({table.type}, {ids.type}) -> {ttype(shape, table.dtype)}",
            [(shape, table.dtype, self._ev(lambda: self.np.take(table.val, ids.val, axis=0)))])

    def scatter_add(self, hint, operand, ids, updates):
        def ev():
            out = operand.val.copy()
            self.np.add.at(out, ids.val, updates.val)
            return out
        return self._emit(
            hint, f"trn.scatter_add {operand.name}[{ids.name}], {updates.name}, axis = 0 : "
                  f"({operand.type}, {ids.type}, {updates.type}) -> {operand.type}",
            [(operand.shape, operand.dtype, self._ev(ev))])

    def layer_norm(self, hint, x, w, b, axis, eps):
        np = self.np
        stats = x.shape[:axis]
        red = tuple(range(axis, len(x.shape)))

        def ev(i):
            mean = x.val.mean(axis=red, keepdims=True)
            var = ((x.val - mean) ** 2).mean(axis=red, keepdims=True)
            rstd = 1.0 / np.sqrt(var + eps)
            out = (x.val - mean) * rstd * w.val + b.val
            return [out, mean.reshape(stats), rstd.reshape(stats)][i]
        st = ttype(stats, "f32")
        return self._emit(
            hint, f"trn.layer_norm {x.name}, {w.name}, {b.name}, axis = {axis}, "
                  f"eps = {fmt_float(eps)} : ({x.type}, {w.type}, {b.type}) -> "
                  f"({x.type}, {st}, {st})",
            [(x.shape, x.dtype, self._ev(lambda: ev(0))),
             (stats, "f32", self._ev(lambda: ev(1))),
             (stats, "f32", self._ev(lambda: ev(2)))])

    def layer_norm_grad(self, hint, dy, x, mean, rstd, w, axis):
        red = tuple(range(axis, len(x.shape)))
        lead = tuple(range(axis))
        keep = x.shape[:axis] + (1,) * (len(x.shape) - axis)

        def ev(i):
            m, r = mean.val.reshape(keep), rstd.val.reshape(keep)
            xhat = (x.val - m) * r
            g = dy.val * w.val
            dx = r * (g - g.mean(axis=red, keepdims=True)
                      - xhat * (g * xhat).mean(axis=red, keepdims=True))
            return [dx, (dy.val * xhat).sum(axis=lead), dy.val.sum(axis=lead)][i]
        return self._emit(
            hint, f"trn.layer_norm_grad {dy.name}, {x.name}, {mean.name}, {rstd.name}, "
                  f"{w.name}, axis = {axis} : ({dy.type}, {x.type}, {mean.type}, "
                  f"{rstd.type}, {w.type}) -> ({x.type}, {w.type}, {w.type})",
            [(x.shape, x.dtype, self._ev(lambda: ev(0))),
             (w.shape, w.dtype, self._ev(lambda: ev(1))),
             (w.shape, w.dtype, self._ev(lambda: ev(2)))])

    def _scores(self, q, k, scale):
        np = self.np
        s = scale * np.einsum("...sd,...td->...st", q.val, k.val)
        S_, T_ = s.shape[-2:]
        mask = np.triu(np.ones((S_, T_), dtype=bool), 1)
        return np.where(mask, -np.inf, s)

    def attention(self, hint, q, k, v, scale):
        np = self.np
        lse_shape = q.shape[:-1]

        def ev(i):
            s = self._scores(q, k, scale)
            mx = s.max(axis=-1, keepdims=True)
            lse = mx + np.log(np.exp(s - mx).sum(axis=-1, keepdims=True))
            p = np.exp(s - lse)
            return [np.einsum("...st,...td->...sd", p, v.val), lse[..., 0]][i]
        out_shape = q.shape[:-1] + v.shape[-1:]
        return self._emit(
            hint, f"trn.attention {q.name}, {k.name}, {v.name}, scale = {fmt_float(scale)} "
                  f"causal : ({q.type}, {k.type}, {v.type}) -> "
                  f"({ttype(out_shape, 'f32')}, {ttype(lse_shape, 'f32')})",
            [(out_shape, "f32", self._ev(lambda: ev(0))),
             (lse_shape, "f32", self._ev(lambda: ev(1)))])

    def attention_grad(self, hint, q, k, v, out, lse, dout, scale):
        np = self.np

        def ev(i):
            p = np.exp(self._scores(q, k, scale) - lse.val[..., None])
            dv = np.einsum("...st,...sd->...td", p, dout.val)
            dp = np.einsum("...sd,...td->...st", dout.val, v.val)
            ds = p * (dp - (dout.val * out.val).sum(axis=-1, keepdims=True))
            dq = scale * np.einsum("...st,...td->...sd", ds, k.val)
            dk = scale * np.einsum("...st,...sd->...td", ds, q.val)
            return [dq, dk, dv][i]
        return self._emit(
            hint, f"trn.attention_grad {q.name}, {k.name}, {v.name}, {out.name}, {lse.name}, "
                  f"{dout.name}, scale = {fmt_float(scale)} causal : ({q.type}, {k.type}, "
                  f"{v.type}, {out.type}, {lse.type}, {dout.type}) -> "
                  f"({q.type}, {k.type}, {v.type})",
            [(q.shape, "f32", self._ev(lambda: ev(0))),
             (k.shape, "f32", self._ev(lambda: ev(1))),
             (v.shape, "f32", self._ev(lambda: ev(2)))])

    def _softmax_rows(self, logits):
        np = self.np
        z = logits - logits.max(axis=1, keepdims=True)
        return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)

    def cross_entropy(self, hint, logits, labels):
        np = self.np

        def ev():
            keep = labels.val != IGNORE_INDEX
            z = logits.val - logits.val.max(axis=1, keepdims=True)
            lse = np.log(np.exp(z).sum(axis=1))
            safe = np.where(keep, labels.val, 0)
            rows = lse - z[np.arange(len(safe)), safe]
            return np.array(np.where(keep, rows, 0.0).sum() / keep.sum())
        return self._emit(
            hint, f"trn.cross_entropy mean {logits.name}, {labels.name} : "
                  f"({logits.type}, {labels.type}) -> tensor<f32>",
            [((), "f32", self._ev(ev))])

    def cross_entropy_grad(self, hint, logits, labels, grad_loss):
        np = self.np

        def ev():
            keep = labels.val != IGNORE_INDEX
            p = self._softmax_rows(logits.val)
            onehot = np.zeros_like(p)
            rows = np.nonzero(keep)[0]
            onehot[rows, labels.val[rows]] = 1.0
            g = grad_loss.val / keep.sum()
            return g * (p - onehot) * keep[:, None]
        return self._emit(
            hint, f"trn.cross_entropy_grad mean {logits.name}, {labels.name}, "
                  f"{grad_loss.name} : ({logits.type}, {labels.type}, {grad_loss.type}) "
                  f"-> {logits.type}",
            [(logits.shape, "f32", self._ev(ev))])


def gelu_tanh(np, x):
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))


def gelu_tanh_derivative(np, x):
    c = math.sqrt(2.0 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x)


def build(inputs=None, np=None, ftype=None):
    """Builds the step. Returns (mlir text, op count, {result name: value})."""
    g = Builder(np, ftype)

    def arg(ssa, shape, dtype, role, name):
        v = Value("%" + ssa, shape, dtype,
                  None if inputs is None else inputs[name].astype(
                      ftype if dtype == "f32" else np.int64))
        g.names.add(ssa)
        return v, f'{v.name}: {v.type} {{trn.role = "{role}", trn.name = "{name}"}}'

    args, params, ms, vs = [], {}, {}, {}
    for name, ssa, shape in PARAMETERS:
        params[ssa], text = arg(ssa, shape, "f32", "parameter", name)
        args.append(text)
    for states, prefix, role_prefix in ((ms, "m_", "adam.m."), (vs, "v_", "adam.v.")):
        for name, ssa, shape in PARAMETERS:
            states[ssa], text = arg(prefix + ssa, shape, "f32", "optimizer_state",
                                    role_prefix + name)
            args.append(text)
    ids, text = arg("input_ids", (B, S), "i64", "data", "input_ids")
    args.append(text)
    labels, text = arg("labels", (B, S), "i64", "label", "labels")
    args.append(text)
    p = params

    def linear(hint, x, w, b):
        """x [N, in] times w [out, in] (nn.Linear layout), plus b [out] if given."""
        if b is None:
            return g.dot(hint, x, w, [], [], [1], [1])
        y = g.dot(hint + "_mm", x, w, [], [], [1], [1])
        bb = g.broadcast(hint + "_bias", b, y.shape, [1])
        return g.add(hint, y, bb)

    def linear_grad(dy, x, w, b, dx_name):
        """Gradients of linear(x, w, b) w.r.t. w, b (None if no bias) and x."""
        dw = g.dot("d" + w, dy, x, [], [], [0], [0])
        db = g.reduce_sum("d" + b, dy, [0]) if b else None
        dx = g.dot(dx_name, dy, p[w], [], [], [1], [0])
        return dw, db, dx

    def heads(hint, x2d):
        """[N, H] -> [B, NH, S, HD]."""
        x4 = g.reshape(hint + "_bshd", x2d, (B, S, NH, HD))
        return g.transpose(hint, x4, [0, 2, 1, 3])

    def unheads(hint, x):
        """[B, NH, S, HD] -> [N, H]."""
        xt = g.transpose(hint + "_bshd", x, [0, 2, 1, 3])
        return g.reshape(hint, xt, (N, H))

    scale = 1.0 / math.sqrt(HD)

    g.comment("=== Forward ===")
    g.comment("Token embedding: x = wte[input_ids], flattened to [tokens, hidden].")
    emb = g.gather("emb", p["wte"], ids)
    x = g.reshape("x", emb, (N, H))
    g.comment()
    g.comment("Attention sub-block: x1 = x + out_proj(attention(ln1(x))).")
    ln1 = g.layer_norm("ln1", x, p["ln1_w"], p["ln1_b"], 1, LN_EPS)
    qkv = linear("qkv", ln1[0], p["w_qkv"], p["b_qkv"])
    q = heads("q", g.slice("q2d", qkv, [0, 0], [N, H]))
    k = heads("k", g.slice("k2d", qkv, [0, H], [N, 2 * H]))
    v = heads("v", g.slice("v2d", qkv, [0, 2 * H], [N, 3 * H]))
    attn = g.attention("attn", q, k, v, scale)
    a2d = unheads("a2d", attn[0])
    o = linear("o", a2d, p["w_o"], p["b_o"])
    x1 = g.add("x1", x, o)
    g.comment()
    g.comment("MLP sub-block: x2 = x1 + proj(gelu_tanh(fc(ln2(x1)))).")
    ln2 = g.layer_norm("ln2", x1, p["ln2_w"], p["ln2_b"], 1, LN_EPS)
    fc = linear("fc", ln2[0], p["w_fc"], p["b_fc"])
    act = g.gelu("act", fc)
    proj = linear("proj", act, p["w_proj"], p["b_proj"])
    x2 = g.add("x2", x1, proj)
    g.comment()
    g.comment("LM head and mean cross-entropy over the tokens not labelled -100.")
    logits = linear("logits", x2, p["w_head"], None)
    flat_labels = g.reshape("flat_labels", labels, (N,))
    loss = g.cross_entropy("loss", logits, flat_labels)

    g.comment()
    g.comment("=== Backward (d<name> is the gradient of the loss w.r.t. <name>) ===")
    one = g.constant("one", 1.0, ())
    dlogits = g.cross_entropy_grad("dlogits", logits, flat_labels, one)
    grads = {}
    grads["w_head"], _, dx2 = linear_grad(dlogits, x2, "w_head", None, "dx2")
    g.comment("MLP: the residual passes dx2 to x1 unchanged.")
    grads["w_proj"], grads["b_proj"], dact = linear_grad(dx2, act, "w_proj", "b_proj",
                                                         "dact")
    dfc = g.gelu_grad("dfc", dact, fc)
    grads["w_fc"], grads["b_fc"], dln2 = linear_grad(dfc, ln2[0], "w_fc", "b_fc", "dln2_out")
    ln2g = g.layer_norm_grad("dln2", dln2, x1, ln2[1], ln2[2], p["ln2_w"], 1)
    grads["ln2_w"], grads["ln2_b"] = ln2g[1], ln2g[2]
    dx1 = g.add("dx1", dx2, ln2g[0])
    g.comment("Attention.")
    grads["w_o"], grads["b_o"], da2d = linear_grad(dx1, a2d, "w_o", "b_o", "da2d")
    dattn = heads("dattn", da2d)
    attg = g.attention_grad("dheads", q, k, v, attn[0], attn[1], dattn, scale)
    g.comment("The adjoint of slicing q, k and v out of qkv: pad each back and add.")
    dq = g.pad("dq", unheads("dq2d", attg[0]), [0, 0], [0, 2 * H])
    dk = g.pad("dk", unheads("dk2d", attg[1]), [0, H], [0, H])
    dv = g.pad("dv", unheads("dv2d", attg[2]), [0, 2 * H], [0, 0])
    dqkv = g.add("dqkv", g.add("dqk", dq, dk), dv)
    grads["w_qkv"], grads["b_qkv"], dln1 = linear_grad(dqkv, ln1[0], "w_qkv", "b_qkv",
                                                       "dln1_out")
    ln1g = g.layer_norm_grad("dln1", dln1, x, ln1[1], ln1[2], p["ln1_w"], 1)
    grads["ln1_w"], grads["ln1_b"] = ln1g[1], ln1g[2]
    dx = g.add("dx", dx1, ln1g[0])
    g.comment("Embedding: accumulate the token gradients into the rows of wte.")
    demb = g.reshape("demb", dx, (B, S, H))
    zeros = g.constant("wte_zero", 0.0, (V, H))
    grads["wte"] = g.scatter_add("dwte", zeros, ids, demb)

    g.comment()
    g.comment(f"=== AdamW, step t = {STEP} ===")
    g.comment("m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2;")
    g.comment("p' = p - lr (m' / (1 - b1^t) / (sqrt(v' / (1 - b2^t)) + eps) + wd p).")
    # (Rounded to 12 digits, far below f32 precision, so 1 - 0.9 prints as 0.1.)
    hyper = [(name, round(value, 12)) for name, value in [
        ("lr", LR), ("b1", BETA1), ("one_minus_b1", 1.0 - BETA1), ("b2", BETA2),
        ("one_minus_b2", 1.0 - BETA2), ("bias_corr1", 1.0 - BETA1 ** STEP),
        ("bias_corr2", 1.0 - BETA2 ** STEP), ("eps", EPS), ("wd", WEIGHT_DECAY)]]
    scalars = {name: g.constant(name, value, ()) for name, value in hyper}
    splats = {}  # shape -> {hyper-parameter name: broadcast value}

    def splat(name, shape):
        if shape not in splats:
            tag = "x".join(str(d) for d in shape)
            g.comment(f"Hyper-parameters broadcast to {ttype(shape, 'f32')}.")
            splats[shape] = {h: g.broadcast(f"{h}_{tag}", scalars[h], shape, [])
                             for h, _ in hyper}
        return splats[shape][name]

    new_p, new_m, new_v = {}, {}, {}
    for name, ssa, shape in PARAMETERS:
        c = {h: splat(h, shape) for h, _ in hyper}
        g.comment(f"{name}")
        gr, pv = grads[ssa], p[ssa]
        m1 = g.add(f"{ssa}_m1", g.mul(f"{ssa}_m1a", c["b1"], ms[ssa]),
                   g.mul(f"{ssa}_m1b", c["one_minus_b1"], gr))
        g2 = g.mul(f"{ssa}_g2", gr, gr)
        v1 = g.add(f"{ssa}_v1", g.mul(f"{ssa}_v1a", c["b2"], vs[ssa]),
                   g.mul(f"{ssa}_v1b", c["one_minus_b2"], g2))
        mhat = g.div(f"{ssa}_mhat", m1, c["bias_corr1"])
        vhat = g.div(f"{ssa}_vhat", v1, c["bias_corr2"])
        denom = g.add(f"{ssa}_denom", g.sqrt(f"{ssa}_rms", vhat), c["eps"])
        update = g.add(f"{ssa}_update", g.div(f"{ssa}_adam", mhat, denom),
                       g.mul(f"{ssa}_decay", c["wd"], pv))
        new_p[ssa] = g.sub(f"{ssa}_new", pv, g.mul(f"{ssa}_step", c["lr"], update))
        new_m[ssa], new_v[ssa] = m1, v1

    # Results: loss, then new parameters, m and v, each aliasing its input.
    results = [(loss, '{trn.role = "loss", trn.name = "loss"}', "loss")]
    n = len(PARAMETERS)
    for group, offset, role, prefix in ((new_p, 0, "parameter", ""),
                                        (new_m, n, "optimizer_state", "adam.m."),
                                        (new_v, 2 * n, "optimizer_state", "adam.v.")):
        for i, (name, ssa, _) in enumerate(PARAMETERS):
            results.append((group[ssa], f'{{trn.role = "{role}", trn.name = "{prefix}{name}", '
                                        f'trn.aliases = {offset + i}}}', prefix + name))

    body = g.lines
    header = ["func.func @transformer_block_step("]
    header += [f"    {a}," for a in args[:-1]] + [f"    {args[-1]})"]
    header += ["    -> (" + results[0][0].type + " " + results[0][1] + ","]
    header += [f"        {r.type} {attrs}," for r, attrs, _ in results[1:-1]]
    header += [f"        {results[-1][0].type} {results[-1][1]}) {{"]
    ret = ["", "  return " + ", ".join(r.name for r, _, _ in results)]
    ret += ["      : " + ", ".join(r.type for r, _, _ in results), "}"]
    text = "\n".join(header + body + ret) + "\n"
    values = {rname: r.val for r, _, rname in results}
    return text, g.op_count, values


PREAMBLE = """\
// One training step of a GPT-style pre-LN transformer block with an LM loss
// (batch {B}, sequence {S}, hidden {H}, {NH} heads, MLP {F}, vocabulary {V},
// f32): token embedding (gather), ln1, fused QKV projection, causal attention,
// output projection and residual, ln2, MLP with tanh-GELU and residual, LM
// head, mean cross-entropy with int64 labels (-100 is ignored); then a
// hand-derived backward and AdamW (lr {LR}, betas ({B1}, {B2}), eps {EPS},
// weight decay {WD}, t = {T}) on all {NP} parameters. {OPS} trn ops.
//
// Generated by Inputs/gen_transformer_block.py (edit that, then regenerate:
//   python3 test/Eval/Inputs/gen_transformer_block.py > test/Eval/transformer-block.mlir).
// Inputs/transformer_block_reference.py recomputes the step independently
// with PyTorch autograd in float64 and compares every result.
//
// RUN: trn-opt %s | trn-opt -canonicalize -cse | FileCheck %s --check-prefix=CANON
// RUN: %trn_python %S/Inputs/transformer_block_reference.py make-inputs %t.in.npz
// RUN: trn-eval %s --inputs %t.in.npz --outputs %t.out.npz
// RUN: %trn_python %S/Inputs/transformer_block_reference.py check %t.in.npz %t.out.npz
// RUN: trn-opt %s -canonicalize -cse | trn-eval - --inputs %t.in.npz --outputs %t.canon.npz
// RUN: %trn_python %S/Inputs/transformer_block_reference.py check %t.in.npz %t.canon.npz

// Canonicalization keeps the composites and the signature's roles and
// aliases; broadcasts of the scalar hyper-parameters fold to splat constants.
// CANON-LABEL: func.func @transformer_block_step(
// CANON-SAME: {{trn.name = "wte", trn.role = "parameter"}}
// CANON-SAME: {{trn.name = "input_ids", trn.role = "data"}}
// CANON-SAME: {{trn.name = "labels", trn.role = "label"}}
// CANON-SAME: -> (tensor<f32> {{trn.name = "loss", trn.role = "loss"}}
// CANON-SAME: tensor<32x16xf32> {{trn.aliases = 0 : i64, trn.name = "wte", trn.role = "parameter"}}
// CANON-SAME: tensor<32x16xf32> {{trn.aliases = {LAST} : i64, trn.name = "adam.v.lm_head.weight", trn.role = "optimizer_state"}}
// CANON-DAG: trn.constant dense<0.899999976> : tensor<48x16xf32>
// CANON-DAG: trn.constant dense<0.000000e+00> : tensor<32x16xf32>
// CANON: trn.gather
// CANON: trn.layer_norm
// CANON: trn.attention {{{{.*}}}} causal
// CANON: trn.gelu {{{{.*}}}} approximate = tanh
// CANON: trn.cross_entropy mean
// CANON: trn.cross_entropy_grad mean
// CANON: trn.gelu_grad {{{{.*}}}} approximate = tanh
// CANON: trn.layer_norm_grad
// CANON: trn.attention_grad {{{{.*}}}} causal
// CANON: trn.pad
// CANON: trn.layer_norm_grad
// CANON: trn.scatter_add
// CANON: trn.sqrt
// CANON: return

"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--emulate", nargs=2, metavar=("IN_NPZ", "OUT_NPZ"),
                        help="run the step in NumPy on IN_NPZ and write OUT_NPZ")
    parser.add_argument("--emulate-dtype", default="float64", choices=["float64", "float32"])
    args = parser.parse_args()
    if args.emulate:
        import numpy as np
        with np.load(args.emulate[0]) as f:
            inputs = dict(f)
        _, _, values = build(inputs, np, np.dtype(args.emulate_dtype).type)
        np.savez(args.emulate[1], **{k: np.asarray(v, dtype=np.float32)
                                     for k, v in values.items()})
        return
    text, ops, _ = build()
    sys.stdout.write(PREAMBLE.format(
        B=B, S=S, H=H, NH=NH, F=F, V=V, LR=LR, B1=BETA1, B2=BETA2, EPS=EPS,
        WD=WEIGHT_DECAY, T=STEP, NP=len(PARAMETERS), OPS=ops,
        LAST=3 * len(PARAMETERS) - 1))
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
