"""Writes `trn` graphs as MLIR text: the shared half of the graph generators.

Used by test/e2e/Inputs/gen_gpt_block.py (the e2e GPT block tests),
utils/gen_transformer_step.py (BERT-large and GPT-3-shaped training steps for
bench/compile_time.py) and, for its text helpers, test/Eval/Inputs/
gen_transformer_block.py. Plain Python 3, no torch or numpy.

  Builder       emits one op per call (primitives and composites) and names
                its SSA values; values are `Value`s (SSA name, shape, dtype).
  StepBuilder   the mixed-precision conventions of a training step on top of
                a Builder: matmul operands in one dtype with f32
                accumulation, linear layers and their gradients, AdamW, and
                the func.func around the body.
"""

import math


def fmt_float(x):
    text = repr(float(x))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def ttype(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def ilist(values):
    return "[" + ", ".join(str(v) for v in values) + "]"


class Value:
    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def type(self):
        return ttype(self.shape, self.dtype)


class Builder:
    def __init__(self):
        self.lines, self.names, self.ops = [], set(), 0
        self._next_suffix = {}

    def comment(self, text=""):
        self.lines.append(("  // " + text) if text else "")

    def fresh(self, hint):
        name = hint
        if name in self.names:
            # The first free hint_2, hint_3, ...; remembered per hint so that a
            # hint used in every layer costs O(1), not O(layers).
            i = self._next_suffix.get(hint, 1)
            while name in self.names:
                i += 1
                name = f"{hint}_{i}"
            self._next_suffix[hint] = i
        self.names.add(name)
        return "%" + name

    def emit(self, hint, text, results):
        name = self.fresh(hint)
        self.ops += 1
        if len(results) == 1:
            self.lines.append(f"  {name} = {text}")
            return Value(name, *results[0])
        self.lines.append(f"  {name}:{len(results)} = {text}")
        return [Value(f"{name}#{i}", *r) for i, r in enumerate(results)]

    # -- primitives --------------------------------------------------------
    def constant(self, hint, value, shape, dtype="f32"):
        text = value if isinstance(value, str) else fmt_float(value)
        return self.emit(hint, f"trn.constant dense<{text}> : {ttype(shape, dtype)}",
                         [(shape, dtype)])

    def iconstant(self, hint, values, dtype="i32"):
        return self.emit(hint, f"trn.constant dense<{ilist(values)}> : "
                               f"{ttype((len(values),), dtype)}", [((len(values),), dtype)])

    def iota(self, hint, shape, dim, dtype="i32"):
        return self.emit(hint, f"trn.iota dim = {dim} : {ttype(shape, dtype)}",
                         [(tuple(shape), dtype)])

    def binary(self, op, hint, a, b):
        assert a.type == b.type, (op, a.type, b.type)
        return self.emit(hint, f"trn.{op} {a.name}, {b.name} : {a.type}", [(a.shape, a.dtype)])

    def add(self, hint, a, b):
        return self.binary("add", hint, a, b)

    def sub(self, hint, a, b):
        return self.binary("sub", hint, a, b)

    def mul(self, hint, a, b):
        return self.binary("mul", hint, a, b)

    def div(self, hint, a, b):
        return self.binary("div", hint, a, b)

    def unary(self, op, hint, a, attrs=""):
        return self.emit(hint, f"trn.{op} {a.name}{attrs} : {a.type}", [(a.shape, a.dtype)])

    def compare(self, pred, hint, a, b):
        assert a.type == b.type
        return self.emit(hint, f"trn.compare {pred}, {a.name}, {b.name} : {a.type}",
                         [(a.shape, "i1")])

    def select(self, hint, pred, t, f):
        assert t.type == f.type and pred.shape == t.shape
        return self.emit(hint, f"trn.select {pred.name}, {t.name}, {f.name} : "
                               f"{pred.type}, {t.type}", [(t.shape, t.dtype)])

    def convert(self, hint, x, dtype):
        if x.dtype == dtype:
            return x
        return self.emit(hint, f"trn.convert {x.name} : {x.type} -> {ttype(x.shape, dtype)}",
                         [(x.shape, dtype)])

    def reshape(self, hint, x, shape):
        assert math.prod(shape) == math.prod(x.shape)
        return self.emit(hint, f"trn.reshape {x.name} : ({x.type}) -> {ttype(shape, x.dtype)}",
                         [(shape, x.dtype)])

    def transpose(self, hint, x, perm):
        shape = tuple(x.shape[p] for p in perm)
        return self.emit(hint, f"trn.transpose {x.name}, perm = {ilist(perm)} : "
                               f"({x.type}) -> {ttype(shape, x.dtype)}", [(shape, x.dtype)])

    def slice(self, hint, x, start, limit):
        shape = tuple(l - s for s, l in zip(start, limit))
        return self.emit(hint, f"trn.slice {x.name}, start = {ilist(start)}, limit = "
                               f"{ilist(limit)}, strides = {ilist([1] * len(shape))} : "
                               f"({x.type}) -> {ttype(shape, x.dtype)}", [(shape, x.dtype)])

    def concatenate(self, hint, xs, dim):
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        return self.emit(hint, f"trn.concatenate {', '.join(x.name for x in xs)} dim = {dim} : "
                               f"({', '.join(x.type for x in xs)}) -> "
                               f"{ttype(shape, xs[0].dtype)}", [(tuple(shape), xs[0].dtype)])

    def broadcast(self, hint, x, shape, dims):
        return self.emit(hint, f"trn.broadcast_in_dim {x.name}, dims = {ilist(dims)} : "
                               f"({x.type}) -> {ttype(shape, x.dtype)}", [(tuple(shape), x.dtype)])

    def reduce(self, kind, hint, x, dims):
        shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
        return self.emit(hint, f"trn.reduce {kind} {x.name}, dims = {ilist(dims)} : "
                               f"({x.type}) -> {ttype(shape, x.dtype)}", [(shape, x.dtype)])

    def dot(self, hint, lhs, rhs, lb, rb, lc, rc):
        assert lhs.dtype == rhs.dtype
        shape = tuple([lhs.shape[d] for d in lb]
                      + [s for i, s in enumerate(lhs.shape) if i not in lb + lc]
                      + [s for i, s in enumerate(rhs.shape) if i not in rb + rc])
        return self.emit(hint, f"trn.dot_general {lhs.name}, {rhs.name}, batching_dims = "
                               f"{ilist(lb)} x {ilist(rb)}, contracting_dims = {ilist(lc)} x "
                               f"{ilist(rc)} : ({lhs.type}, {rhs.type}) -> {ttype(shape, 'f32')}",
                         [(shape, "f32")])

    def gather(self, hint, table, indices, axis=0):
        shape = table.shape[:axis] + indices.shape + table.shape[axis + 1:]
        return self.emit(hint, f"trn.gather {table.name}[{indices.name}], axis = {axis} : "
                               f"({table.type}, {indices.type}) -> {ttype(shape, table.dtype)}",
                         [(shape, table.dtype)])

    def scatter_add(self, hint, operand, indices, updates, axis=0):
        return self.emit(hint, f"trn.scatter_add {operand.name}[{indices.name}], "
                               f"{updates.name}, axis = {axis} : ({operand.type}, "
                               f"{indices.type}, {updates.type}) -> {operand.type}",
                         [(operand.shape, operand.dtype)])

    # -- composites ----------------------------------------------------------
    def layer_norm(self, hint, x, w, b, eps=1e-5):
        st = ttype(x.shape[:1], "f32")
        return self.emit(hint, f"trn.layer_norm {x.name}, {w.name}, {b.name}, axis = 1, "
                               f"eps = {fmt_float(eps)} : ({x.type}, {w.type}, {b.type}) -> "
                               f"({x.type}, {st}, {st})",
                         [(x.shape, x.dtype), (x.shape[:1], "f32"), (x.shape[:1], "f32")])

    def layer_norm_grad(self, hint, dy, x, mean, rstd, w):
        return self.emit(hint, f"trn.layer_norm_grad {dy.name}, {x.name}, {mean.name}, "
                               f"{rstd.name}, {w.name}, axis = 1 : ({dy.type}, {x.type}, "
                               f"{mean.type}, {rstd.type}, {w.type}) -> ({x.type}, {w.type}, "
                               f"{w.type})",
                         [(x.shape, x.dtype), (w.shape, w.dtype), (w.shape, w.dtype)])

    def softmax(self, hint, x, dim):
        return self.emit(hint, f"trn.softmax {x.name}, dim = {dim} : {x.type}", [(x.shape, x.dtype)])

    def log_softmax(self, hint, x, dim):
        return self.emit(hint, f"trn.log_softmax {x.name}, dim = {dim} : {x.type}",
                         [(x.shape, x.dtype)])

    def gelu(self, hint, x, tanh=True):
        return self.unary("gelu", hint, x, " approximate = tanh" if tanh else "")

    def gelu_grad(self, hint, dy, x, tanh=True):
        approximate = " approximate = tanh" if tanh else ""
        return self.emit(hint, f"trn.gelu_grad {dy.name}, {x.name}{approximate} : {x.type}",
                         [(x.shape, x.dtype)])

    def attention(self, hint, q, k, v, scale, causal, out_dtype):
        """(output in out_dtype, lse f32) of q, k, v [..., S, D]."""
        flag = " causal" if causal else ""
        return self.emit(hint, f"trn.attention {q.name}, {k.name}, {v.name}, scale = "
                               f"{fmt_float(scale)}{flag} : ({q.type}, {k.type}, "
                               f"{v.type}) -> ({ttype(q.shape, out_dtype)}, "
                               f"{ttype(q.shape[:-1], 'f32')})",
                         [(q.shape, out_dtype), (q.shape[:-1], "f32")])

    def attention_grad(self, hint, q, k, v, o, lse, do, scale, causal):
        flag = " causal" if causal else ""
        return self.emit(hint, f"trn.attention_grad {q.name}, {k.name}, {v.name}, "
                               f"{o.name}, {lse.name}, {do.name}, scale = "
                               f"{fmt_float(scale)}{flag} : ({q.type}, {k.type}, "
                               f"{v.type}, {o.type}, {lse.type}, {do.type}) -> "
                               f"({q.type}, {k.type}, {v.type})",
                         [(q.shape, q.dtype), (k.shape, k.dtype), (v.shape, v.dtype)])

    def cross_entropy(self, hint, logits, labels):
        """Mean cross-entropy, tensor<f32>."""
        return self.emit(hint, f"trn.cross_entropy mean {logits.name}, {labels.name} : "
                               f"({logits.type}, {labels.type}) -> tensor<f32>", [((), "f32")])

    def cross_entropy_grad(self, hint, logits, labels, grad_loss):
        return self.emit(hint, f"trn.cross_entropy_grad mean {logits.name}, {labels.name}, "
                               f"{grad_loss.name} : ({logits.type}, {labels.type}, "
                               f"{grad_loss.type}) -> {logits.type}",
                         [(logits.shape, "f32")])


ADAMW_DEFAULTS = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1, step=3)


class StepBuilder:
    """A training step's conventions on top of a Builder.

    `bf16` selects mixed precision: parameters, hidden states and matmul
    operands in bf16, every matmul accumulating in f32, everything else
    (norms, softmax, gradients, Adam's moments) in f32.
    """

    def __init__(self, bf16):
        self.g = Builder()
        self.bf16 = bf16
        self.P = "bf16" if bf16 else "f32"  # parameters and hidden states
        self.M = "bf16" if bf16 else "f32"  # matmul operands, attention q/k/v
        self.splats = {}
        self.args = []

    def splat(self, value, shape, tag):
        key = (value if isinstance(value, str) else float(value), tuple(shape))
        if key not in self.splats:
            self.splats[key] = self.g.constant(tag, value, shape)
        return self.splats[key]

    def m(self, x):
        """x as a matmul operand."""
        return self.g.convert(x.name[1:].replace("#", "_") + "_mm", x, self.M)

    def f32(self, x):
        return self.g.convert(x.name[1:].replace("#", "_") + "_f32", x, "f32")

    def arg(self, ssa, shape, dtype, role, name):
        """A function argument (trn.role, trn.name) named %ssa."""
        v = Value("%" + ssa, shape, dtype)
        self.g.names.add(ssa)
        self.args.append(f'{v.name}: {v.type} {{trn.role = "{role}", trn.name = "{name}"}}')
        return v

    def linear(self, hint, x, w, b):
        """x [N, in] w^T [in, out] (+ b), f32."""
        g = self.g
        y = g.dot(hint + "_mm", self.m(x), self.m(w), [], [], [1], [1])
        if b is None:
            return y
        bb = g.broadcast(hint + "_bias", self.f32(b), y.shape, [1])
        return g.add(hint, y, bb)

    def linear_grad(self, hint, dy, x, w, b):
        """(dw, db, dx) of linear(x, w, b) for the output gradient dy."""
        g = self.g
        dym = self.m(dy)
        dw = g.dot("d" + hint + "_w", dym, self.m(x), [], [], [0], [0])
        db = g.reduce("sum", "d" + hint + "_b", self.f32(dy), [0]) if b is not None else None
        dx = g.dot("d" + hint + "_in", dym, self.m(w), [], [], [1], [0])
        return dw, db, dx

    def adamw(self, ssa, shape, param, grad, m, v, hyper=None):
        """One AdamW update of `param` (in P) with f32 `grad` and moments:
        returns (new parameter in P, new m, new v). `hyper` defaults to
        ADAMW_DEFAULTS; the bias corrections are for its `step`."""
        g = self.g
        h = dict(ADAMW_DEFAULTS, **(hyper or {}))
        consts = {"lr": h["lr"], "b1": h["beta1"], "one_minus_b1": 1.0 - h["beta1"],
                  "b2": h["beta2"], "one_minus_b2": 1.0 - h["beta2"],
                  "bias_corr1": 1.0 - h["beta1"] ** h["step"],
                  "bias_corr2": 1.0 - h["beta2"] ** h["step"], "eps": h["eps"],
                  "wd": h["weight_decay"]}
        consts = {k: round(val, 12) for k, val in consts.items()}
        tag = "x".join(str(d) for d in shape)
        c = {k: self.splat(val, shape, f"{k}_{tag}") for k, val in consts.items()}
        pv = self.f32(param)
        m1 = g.add(f"{ssa}_m1", g.mul(f"{ssa}_m1a", c["b1"], m),
                   g.mul(f"{ssa}_m1b", c["one_minus_b1"], grad))
        v1 = g.add(f"{ssa}_v1", g.mul(f"{ssa}_v1a", c["b2"], v),
                   g.mul(f"{ssa}_v1b", c["one_minus_b2"], g.mul(f"{ssa}_g2", grad, grad)))
        mhat = g.div(f"{ssa}_mhat", m1, c["bias_corr1"])
        vhat = g.div(f"{ssa}_vhat", v1, c["bias_corr2"])
        denom = g.add(f"{ssa}_denom", g.unary("sqrt", f"{ssa}_rms", vhat), c["eps"])
        update = g.add(f"{ssa}_update", g.div(f"{ssa}_adam", mhat, denom),
                       g.mul(f"{ssa}_decay", c["wd"], pv))
        newp = g.sub(f"{ssa}_new_f32" if self.P != "f32" else f"{ssa}_new", pv,
                     g.mul(f"{ssa}_step", c["lr"], update))
        return g.convert(f"{ssa}_new", newp, self.P), m1, v1

    def function(self, name, results):
        """The func.func text: the arguments made by arg(), the body emitted
        so far, and `results` [(Value, role, name)] returned."""
        g = self.g
        header = [f"func.func @{name}("]
        header += [f"    {a}," for a in self.args[:-1]] + [f"    {self.args[-1]})"]
        res = [f'{r.type} {{trn.role = "{role}", trn.name = "{name}"}}' for r, role, name in results]
        header += ["    -> (" + ",\n        ".join(res) + ") {"]
        ret = ["", "  return " + ", ".join(r.name for r, _, _ in results),
               "      : " + ", ".join(r.type for r, _, _ in results), "}"]
        return "\n".join(header + g.lines + ret) + "\n"
