"""Translation of aten ops (as `make_fx` traces them) to `trn` ops.

One handler per aten overload packet, registered in `HANDLERS`; the translator
(`_translate.py`) walks the FX graph and calls the handler of each node with
its arguments, FX nodes replaced by `Value`s. Result shapes and dtypes come
from the node's `tensor_meta` where PyTorch recorded one, so shape logic
(views, `-1` sizes, type promotion) is PyTorch's, not re-derived here.

The supported set is listed in docs/frontend.md; anything else is an
`UnsupportedOpError` naming the op, its input shapes and the user's line.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from ._mlir import FLOAT_TYPES, GraphBuilder, Value, element_type

aten = torch.ops.aten

Handler = Callable[..., Any]
HANDLERS: Dict[Any, Handler] = {}


def _packets(*names: str) -> List[Any]:
    """The aten overload packets of `names` that this PyTorch has."""
    return [getattr(aten, n) for n in names if hasattr(aten, n)]


class TranslationError(Exception):
    """A node the translator cannot express; the translator adds the op,
    its input shapes and the user's source line."""


def handles(*packets: Any) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for packet in packets:
            HANDLERS[packet] = fn
        return fn
    return register


class Context:
    """What a handler sees: the builder, the node's recorded result types and
    the graph-wide inputs the frontend supplies (the dropout seed)."""

    def __init__(self, builder: GraphBuilder, seed: Optional[Value]) -> None:
        self.b = builder
        self.seed = seed
        self.node = None
        self.next_stream = 0

    # -- result types -----------------------------------------------------

    def meta(self, node=None):
        node = node if node is not None else self.node
        meta = node.meta.get("tensor_meta")
        if meta is None:
            val = node.meta.get("val")
            if isinstance(val, torch.Tensor):
                return tuple(val.shape), val.dtype
            return None
        return tuple(meta.shape), meta.dtype

    def out_shape(self):
        return self.meta()[0]

    def out_element(self) -> str:
        dtype = self.meta()[1]
        element = element_type(dtype)
        if element is None:
            raise TranslationError(f"the result has dtype {dtype}, which trn "
                                   "does not support (f32, bf16, f16, i64, "
                                   "i32 and bool are)")
        return element

    # -- operands ---------------------------------------------------------

    def operand(self, x: Any, shape, element: str) -> Value:
        """`x` (a Value or a Python number) as a tensor of `shape`/`element`."""
        if isinstance(x, Value):
            return self.b.broadcast_to(self.b.convert(x, element), shape)
        if isinstance(x, (bool, numbers.Number)):
            return self.b.splat(x, shape, element)
        raise TranslationError(f"an operand of type {type(x).__name__} is not "
                               "supported")

    def promoted(self, *xs: Any) -> str:
        """The element type PyTorch computes `xs` in (compares, where)."""
        tensors = [x for x in xs if isinstance(x, Value)]
        dims = [x for x in tensors if x.rank > 0]
        pool = dims or tensors
        element = pool[0].element
        for x in pool[1:]:
            element = _promote(element, x.element)
        if element in ("i1", "i32", "i64") and any(
                isinstance(x, float) for x in xs):
            element = "f32"
        return element


_RANK = {"i1": 0, "i32": 1, "i64": 2, "f16": 3, "bf16": 3, "f32": 4}


def _promote(a: str, b: str) -> str:
    if a == b:
        return a
    if {a, b} == {"f16", "bf16"}:
        return "f32"
    return a if _RANK[a] >= _RANK[b] else b


def _dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def _dims(ds: Optional[Sequence[int]], rank: int) -> List[int]:
    if ds is None or (isinstance(ds, (list, tuple)) and len(ds) == 0):
        return list(range(rank))
    if isinstance(ds, int):
        ds = [ds]
    return sorted({_dim(int(d), rank) for d in ds})


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

def _elementwise(ctx: Context, op: str, *xs: Any, element: Optional[str] = None
                 ) -> Value:
    shape = ctx.out_shape()
    element = element or ctx.out_element()
    operands = [ctx.operand(x, shape, element) for x in xs]
    if len(operands) == 1:
        return ctx.b.unary(op, operands[0])
    return ctx.b.binary(op, *operands)


for _name in ["neg", "abs", "exp", "log", "log1p", "tanh", "sigmoid", "sqrt",
              "rsqrt", "reciprocal", "erf", "relu", "silu", "sin", "cos",
              "floor", "sign"]:
    def _make(op):
        @handles(getattr(aten, op))
        def unary(ctx: Context, x: Value) -> Value:
            return _elementwise(ctx, op, x)
        return unary
    _make(_name)


# trn.pipeline_stage (python/trn/_stage.py, which defines the operator).
from . import _stage  # noqa: E402,F401  (registers torch.ops.trn)


@handles(torch.ops.trn.pipeline_stage)
def pipeline_stage(ctx: Context, x: Value) -> Value:
    return ctx.b.unary("pipeline_stage", x)


def _scaled(ctx: Context, y: Any, alpha: Any, shape, element) -> Value:
    y = ctx.operand(y, shape, element)
    if alpha is None or alpha == 1:
        return y
    return ctx.b.binary("mul", y, ctx.b.splat(alpha, shape, element))


@handles(aten.add)
def add(ctx: Context, x: Any, y: Any, alpha: Any = 1) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    return ctx.b.binary("add", ctx.operand(x, shape, element),
                        _scaled(ctx, y, alpha, shape, element))


@handles(aten.sub)
def sub(ctx: Context, x: Any, y: Any, alpha: Any = 1) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    return ctx.b.binary("sub", ctx.operand(x, shape, element),
                        _scaled(ctx, y, alpha, shape, element))


@handles(aten.rsub)
def rsub(ctx: Context, x: Any, y: Any, alpha: Any = 1) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    return ctx.b.binary("sub", ctx.operand(y, shape, element),
                        _scaled(ctx, x, alpha, shape, element))


@handles(aten.mul)
def mul(ctx: Context, x: Any, y: Any) -> Value:
    if ctx.out_element() == "i1":
        return _elementwise(ctx, "and", x, y)
    return _elementwise(ctx, "mul", x, y)


@handles(aten.div)
def div(ctx: Context, x: Any, y: Any, rounding_mode: Optional[str] = None
        ) -> Value:
    element = ctx.out_element()
    if rounding_mode is None:
        return _elementwise(ctx, "div", x, y)
    if element not in FLOAT_TYPES or rounding_mode != "floor":
        raise TranslationError(f"division with rounding_mode='{rounding_mode}' "
                               f"on {element} is not supported")
    return ctx.b.unary("floor", _elementwise(ctx, "div", x, y))


@handles(aten.remainder)
def remainder(ctx: Context, x: Any, y: Any) -> Value:
    """x % y with the sign of y (Python's): x - floor(x / y) * y, in f32 for
    integers (exact below 2^24)."""
    b = ctx.b
    shape, element = ctx.out_shape(), ctx.out_element()
    work = element if element in FLOAT_TYPES else "f32"
    xs, ys = ctx.operand(x, shape, work), ctx.operand(y, shape, work)
    quotient = b.unary("floor", b.binary("div", xs, ys))
    return b.convert(b.binary("sub", xs, b.binary("mul", quotient, ys)), element)


@handles(aten.pow)
def pow_(ctx: Context, x: Any, y: Any) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    if isinstance(x, Value) and isinstance(y, numbers.Number):
        base = ctx.operand(x, shape, element)
        # Small integer and half exponents as PyTorch's CPU kernels compute
        # them (x*x, sqrt, rsqrt), which also keeps them exact.
        if y == 1:
            return base
        if y == 2:
            return ctx.b.binary("mul", base, base)
        if y == 3:
            return ctx.b.binary("mul", ctx.b.binary("mul", base, base), base)
        if y == 0.5:
            return ctx.b.unary("sqrt", base)
        if y == -0.5:
            return ctx.b.unary("rsqrt", base)
        if y == -1:
            return ctx.b.unary("reciprocal", base)
    return _elementwise(ctx, "pow", x, y)


@handles(aten.sgn)
def sgn(ctx: Context, x: Value) -> Value:
    return _elementwise(ctx, "sign", x)


@handles(aten.maximum)
def maximum(ctx: Context, x: Any, y: Any) -> Value:
    return _elementwise(ctx, "max", x, y)


@handles(aten.minimum)
def minimum(ctx: Context, x: Any, y: Any) -> Value:
    return _elementwise(ctx, "min", x, y)


@handles(aten.clamp)
def clamp(ctx: Context, x: Value, min: Any = None, max: Any = None) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    y = ctx.operand(x, shape, element)
    if min is not None:
        y = ctx.b.binary("max", y, ctx.operand(min, shape, element))
    if max is not None:
        y = ctx.b.binary("min", y, ctx.operand(max, shape, element))
    return y


@handles(aten.clamp_min)
def clamp_min(ctx: Context, x: Value, min: Any) -> Value:
    return clamp(ctx, x, min=min)


@handles(aten.clamp_max)
def clamp_max(ctx: Context, x: Value, max: Any) -> Value:
    return clamp(ctx, x, max=max)


_PREDICATES = {aten.eq: "eq", aten.ne: "ne", aten.lt: "lt", aten.le: "le",
               aten.gt: "gt", aten.ge: "ge"}

for _packet, _predicate in _PREDICATES.items():
    def _make(predicate):
        def compare(ctx: Context, x: Any, y: Any) -> Value:
            shape = ctx.out_shape()
            element = ctx.promoted(x, y)
            return ctx.b.compare(predicate, ctx.operand(x, shape, element),
                                 ctx.operand(y, shape, element))
        return compare
    handles(_packet)(_make(_predicate))


@handles(aten.logical_not, aten.bitwise_not)
def logical_not(ctx: Context, x: Value) -> Value:
    if x.element != "i1":
        raise TranslationError("bitwise not of an integer tensor is not supported")
    return ctx.b.unary("not", x)


@handles(aten.logical_and, aten.bitwise_and)
def logical_and(ctx: Context, x: Value, y: Value) -> Value:
    return _elementwise(ctx, "and", x, y, element="i1" if ctx.out_element() == "i1"
                        else None)


@handles(aten.logical_or, aten.bitwise_or)
def logical_or(ctx: Context, x: Value, y: Value) -> Value:
    return _elementwise(ctx, "or", x, y)


@handles(aten.where)
def where(ctx: Context, cond: Value, x: Any, y: Any) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    pred = ctx.operand(cond, shape, "i1")
    return ctx.b.select(pred, ctx.operand(x, shape, element),
                        ctx.operand(y, shape, element))


@handles(aten.masked_fill)
def masked_fill(ctx: Context, x: Value, mask: Value, value: Any) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    if isinstance(value, Value):
        value = ctx.b.reshape(value, ()) if value.numel() == 1 else value
    return ctx.b.select(ctx.operand(mask, shape, "i1"),
                        ctx.operand(value, shape, element),
                        ctx.operand(x, shape, element))


@handles(aten._to_copy)
def to_copy(ctx: Context, x: Value, **kwargs: Any) -> Value:
    return ctx.b.convert(x, ctx.out_element())


@handles(*_packets("clone", "detach", "alias", "lift_fresh", "lift_fresh_copy",
                   "contiguous"))
def identity(ctx: Context, x: Value, *args: Any, **kwargs: Any) -> Value:
    return x


@handles(aten.gelu)
def gelu(ctx: Context, x: Value, approximate: str = "none") -> Value:
    return ctx.b.unary("gelu", x, f" approximate = {approximate}")


@handles(aten.gelu_backward)
def gelu_backward(ctx: Context, grad: Value, x: Value,
                  approximate: str = "none") -> Value:
    return ctx.b.emit1(f"trn.gelu_grad {grad.name}, {x.name} approximate = "
                       f"{approximate} : {x.type}", x.shape, x.element)


@handles(aten.silu_backward)
def silu_backward(ctx: Context, grad: Value, x: Value) -> Value:
    # d/dx x*s(x) = s(x) * (1 + x * (1 - s(x)))
    b = ctx.b
    s = b.unary("sigmoid", x)
    one = b.splat(1.0, x.shape, x.element)
    inner = b.binary("add", one, b.binary("mul", x, b.binary("sub", one, s)))
    return b.binary("mul", grad, b.binary("mul", s, inner))


@handles(aten.sigmoid_backward)
def sigmoid_backward(ctx: Context, grad: Value, y: Value) -> Value:
    b = ctx.b
    one = b.splat(1.0, y.shape, y.element)
    return b.binary("mul", grad, b.binary("mul", y, b.binary("sub", one, y)))


@handles(aten.tanh_backward)
def tanh_backward(ctx: Context, grad: Value, y: Value) -> Value:
    b = ctx.b
    one = b.splat(1.0, y.shape, y.element)
    return b.binary("mul", grad, b.binary("sub", one, b.binary("mul", y, y)))


@handles(aten.threshold_backward)
def threshold_backward(ctx: Context, grad: Value, x: Value, threshold: Any
                       ) -> Value:
    b = ctx.b
    keep = b.compare("gt", x, b.splat(threshold, x.shape, x.element))
    return b.select(keep, grad, b.splat(0.0, grad.shape, grad.element))


# ---------------------------------------------------------------------------
# Tensor creation
# ---------------------------------------------------------------------------

@handles(aten.zeros, aten.new_zeros, aten.zeros_like, aten.new_empty,
         aten.empty_like, aten.empty, aten.new_empty_strided, aten.empty_strided)
def zeros(ctx: Context, *args: Any, **kwargs: Any) -> Value:
    shape, dtype = ctx.meta()
    if math.prod(shape) == 0 and element_type(dtype) is None:
        # A tensor with no elements holds no value of its dtype (BatchNorm's
        # unused uint8 reserve).
        return ctx.b.splat(0, shape, "i32")
    return ctx.b.splat(0, shape, ctx.out_element())


@handles(aten.ones, aten.new_ones, aten.ones_like)
def ones(ctx: Context, *args: Any, **kwargs: Any) -> Value:
    return ctx.b.splat(1, ctx.out_shape(), ctx.out_element())


@handles(aten.full)
def full(ctx: Context, size: Any, value: Any, **kwargs: Any) -> Value:
    return ctx.b.splat(value, ctx.out_shape(), ctx.out_element())


@handles(aten.full_like, aten.new_full)
def full_like(ctx: Context, x: Value, *args: Any, **kwargs: Any) -> Value:
    value = args[-1] if ctx.node.target is aten.new_full.default else args[0]
    return ctx.b.splat(value, ctx.out_shape(), ctx.out_element())


@handles(aten.scalar_tensor)
def scalar_tensor(ctx: Context, value: Any, **kwargs: Any) -> Value:
    return ctx.b.splat(value, ctx.out_shape(), ctx.out_element())


@handles(aten.fill)
def fill(ctx: Context, x: Value, value: Any) -> Value:
    return ctx.operand(value, ctx.out_shape(), ctx.out_element())


@handles(aten.arange)
def arange(ctx: Context, *args: Any, **kwargs: Any) -> Value:
    numbers_ = [a for a in args if isinstance(a, numbers.Number)]
    start, step = 0, 1
    if len(numbers_) >= 2:
        start = numbers_[0]
    if len(numbers_) >= 3:
        step = numbers_[2]
    shape, element = ctx.out_shape(), ctx.out_element()
    y = ctx.b.iota(shape, 0, element)
    if step != 1:
        y = ctx.b.binary("mul", y, ctx.b.splat(step, shape, element))
    if start != 0:
        y = ctx.b.binary("add", y, ctx.b.splat(start, shape, element))
    return y


def _triangle(ctx: Context, x: Value, diagonal: int, lower: bool) -> Value:
    b = ctx.b
    rows = b.iota(x.shape, x.rank - 2, "i32")
    cols = b.iota(x.shape, x.rank - 1, "i32")
    # lower: keep col - row <= diagonal; upper: keep col - row >= diagonal.
    diff = b.binary("sub", cols, rows)
    keep = b.compare("le" if lower else "ge", diff,
                     b.splat(diagonal, x.shape, "i32"))
    return b.select(keep, x, b.splat(0, x.shape, x.element))


@handles(aten.eye)
def eye(ctx: Context, *args: Any, **kwargs: Any) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    b = ctx.b
    diagonal = b.compare("eq", b.iota(shape, 0, "i32"), b.iota(shape, 1, "i32"))
    return diagonal if element == "i1" else b.convert(diagonal, element)


@handles(aten.tril)
def tril(ctx: Context, x: Value, diagonal: int = 0) -> Value:
    return _triangle(ctx, x, diagonal, lower=True)


@handles(aten.triu)
def triu(ctx: Context, x: Value, diagonal: int = 0) -> Value:
    return _triangle(ctx, x, diagonal, lower=False)


# ---------------------------------------------------------------------------
# Shapes and data movement
# ---------------------------------------------------------------------------

@handles(*_packets("view", "_unsafe_view", "_reshape_alias", "reshape",
                   "squeeze", "unsqueeze",
                   "flatten", "view_as", "reshape_as"))
def view(ctx: Context, x: Value, *args: Any, **kwargs: Any) -> Value:
    shape = ctx.out_shape()
    if math.prod(shape) != x.numel():
        return ctx.b.broadcast_to(x, shape)
    return ctx.b.reshape(x, shape)


@handles(aten.expand)
def expand(ctx: Context, x: Value, size: Any, implicit: bool = False) -> Value:
    return ctx.b.broadcast_to(x, ctx.out_shape())


@handles(aten.t)
def t(ctx: Context, x: Value) -> Value:
    return ctx.b.transpose(x, [1, 0] if x.rank == 2 else [0])


@handles(aten.transpose)
def transpose(ctx: Context, x: Value, d0: int, d1: int) -> Value:
    perm = list(range(x.rank))
    d0, d1 = _dim(d0, x.rank), _dim(d1, x.rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.b.transpose(x, perm)


@handles(aten.permute)
def permute(ctx: Context, x: Value, dims: Sequence[int]) -> Value:
    return ctx.b.transpose(x, [_dim(d, x.rank) for d in dims])


def _slice_bounds(size: int, start: Optional[int], end: Optional[int]):
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


@handles(aten.slice)
def slice_(ctx: Context, x: Value, dim: int = 0, start: Optional[int] = None,
           end: Optional[int] = None, step: int = 1) -> Value:
    dim = _dim(dim, x.rank)
    lo, hi = _slice_bounds(x.shape[dim], start, end)
    starts = [0] * x.rank
    limits = list(x.shape)
    strides = [1] * x.rank
    starts[dim], limits[dim], strides[dim] = lo, hi, step
    if hi == lo:
        return ctx.b.splat(0, ctx.out_shape(), x.element)
    return ctx.b.slice(x, starts, limits, strides)


@handles(aten.select)
def select(ctx: Context, x: Value, dim: int, index: int) -> Value:
    dim = _dim(dim, x.rank)
    index = index + x.shape[dim] if index < 0 else index
    starts = [0] * x.rank
    limits = list(x.shape)
    starts[dim], limits[dim] = index, index + 1
    y = ctx.b.slice(x, starts, limits, [1] * x.rank)
    return ctx.b.reshape(y, ctx.out_shape())


@handles(aten.slice_backward)
def slice_backward(ctx: Context, grad: Value, input_sizes: Sequence[int],
                   dim: int, start: int, end: int, step: int) -> Value:
    dim = _dim(dim, len(input_sizes))
    lo, hi = _slice_bounds(input_sizes[dim], start, end)
    if step != 1:
        # Scatter the rows back to start, start + step, ..., with the
        # dimension moved first (rows of a table, as an embedding's gradient).
        b = ctx.b
        count = grad.shape[dim]
        index = b.iota((count,), 0, "i32")
        index = b.binary("add", b.binary("mul", index, b.splat(step, (count,), "i32")),
                         b.splat(lo, (count,), "i32"))
        perm = [dim] + [d for d in range(grad.rank) if d != dim]
        moved = b.transpose(grad, perm) if dim else grad
        rest = list(moved.shape[1:])
        rows = b.splat(0.0, [input_sizes[dim], math.prod(rest)], grad.element)
        placed = b.scatter_add(rows, index, b.reshape(moved, [count, math.prod(rest)]), 0)
        placed = b.reshape(placed, [input_sizes[dim]] + rest)
        return b.transpose(placed, [perm.index(d) for d in range(grad.rank)]) if dim else placed
    low = [0] * grad.rank
    high = [0] * grad.rank
    low[dim], high[dim] = lo, input_sizes[dim] - hi
    return ctx.b.pad(grad, low, high)


@handles(aten.select_backward)
def select_backward(ctx: Context, grad: Value, input_sizes: Sequence[int],
                    dim: int, index: int) -> Value:
    dim = _dim(dim, len(input_sizes))
    index = index + input_sizes[dim] if index < 0 else index
    shape = list(input_sizes)
    shape[dim] = 1
    g = ctx.b.reshape(grad, shape)
    low = [0] * len(shape)
    high = [0] * len(shape)
    low[dim], high[dim] = index, input_sizes[dim] - index - 1
    return ctx.b.pad(g, low, high)


@handles(aten.constant_pad_nd)
def constant_pad_nd(ctx: Context, x: Value, pad: Sequence[int], value: float = 0.0) -> Value:
    """F.pad: pairs of (before, after) from the last dimension backwards; a
    negative amount crops."""
    low, high = [0] * x.rank, [0] * x.rank
    for i in range(len(pad) // 2):
        low[x.rank - 1 - i], high[x.rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    start = [max(-l, 0) for l in low]
    limit = [d - max(-h, 0) for d, h in zip(x.shape, high)]
    x = ctx.b.slice(x, start, limit, [1] * x.rank)
    return ctx.b.pad(x, [max(l, 0) for l in low], [max(h, 0) for h in high], value)


@handles(*_packets("copy_", "copy"))
def copy(ctx: Context, dst: Value, src: Value, non_blocking: bool = False) -> Value:
    """dst's elements replaced by src's, broadcast and converted (a write
    through a view is scattered into its base by the recorder)."""
    return ctx.operand(src, ctx.out_shape(), ctx.out_element())


@handles(aten.slice_scatter)
def slice_scatter(ctx: Context, base: Value, src: Value, dim: int = 0,
                  start: Optional[int] = None, end: Optional[int] = None,
                  step: int = 1) -> Value:
    dim = _dim(dim, base.rank)
    lo, hi = _slice_bounds(base.shape[dim], start, end)
    if step != 1:
        raise TranslationError("writing a strided slice (x[::2] = y) is not supported; "
                               "build the tensor with torch.where or torch.cat")
    b = ctx.b
    src = b.convert(src, base.element)
    parts = []
    for part_lo, part_hi in ((0, lo), (hi, base.shape[dim])):
        if part_hi > part_lo:
            starts, limits = [0] * base.rank, list(base.shape)
            starts[dim], limits[dim] = part_lo, part_hi
            parts.append(b.slice(base, starts, limits, [1] * base.rank))
    parts.insert(1 if lo > 0 else 0, src)
    return b.concatenate(parts, dim) if len(parts) > 1 else src


@handles(aten.select_scatter)
def select_scatter(ctx: Context, base: Value, src: Value, dim: int, index: int) -> Value:
    dim = _dim(dim, base.rank)
    index = index + base.shape[dim] if index < 0 else index
    shape = list(base.shape)
    shape[dim] = 1
    return slice_scatter(ctx, base, ctx.b.reshape(src, shape), dim, index, index + 1)


@handles(aten.cumsum)
def cumsum(ctx: Context, x: Value, dim: int, dtype: Any = None) -> Value:
    """A running sum: a matmul with an upper-triangular matrix of ones (in
    f32: exact for integer counts below 2^24, as position ids are)."""
    b = ctx.b
    dim = _dim(dim, x.rank)
    n = x.shape[dim]
    rows = b.iota((n, n), 0, "i32")
    cols = b.iota((n, n), 1, "i32")
    upper = b.convert(b.compare("le", rows, cols), "f32")
    # [rows, n] x [n, n], with the summed dimension moved last.
    perm = [d for d in range(x.rank) if d != dim] + [dim]
    moved = b.transpose(b.convert(x, "f32"), perm) if dim != x.rank - 1 else b.convert(x, "f32")
    flat = b.reshape(moved, (moved.numel() // n, n))
    total = b.reshape(b.dot_general(flat, upper, ([], []), ([1], [0]), "f32"), moved.shape)
    if dim != x.rank - 1:
        total = b.transpose(total, [perm.index(d) for d in range(x.rank)])
    return b.convert(total, ctx.out_element())


@handles(aten.scatter_add)
def scatter_add(ctx: Context, x: Value, dim: int, index: Value, src: Value) -> Value:
    """x with src added at index along `dim` (torch.gather's gradient): the
    same flat element offsets as gather, scattered into x flattened."""
    b = ctx.b
    dim = _dim(dim, x.rank)
    if any(i != s for d, (i, s) in enumerate(zip(index.shape, x.shape)) if d != dim):
        raise TranslationError("scatter_add with an index smaller than the input in a "
                               "dimension other than `dim` is not supported")
    lookup = _ElementLookup(ctx, x, dim, index)
    updates = b.reshape(b.convert(lookup.moved(src), x.element), (lookup.flat.numel(), 1))
    return lookup.restore(b.reshape(b.scatter_add(lookup.table, lookup.flat, updates, 0),
                                    lookup.x.shape))


@handles(aten.as_strided)
def as_strided(ctx: Context, x: Value, size: Sequence[int], stride: Sequence[int],
               storage_offset: int = 0) -> Value:
    """A strided view of x taken as contiguous (autograd's gradient of an
    in-place write through a view is one): a slice of x when the view picks
    a block of it, dimensions in order."""
    start, limit = _strided_block(x.shape, size, stride, storage_offset)
    block = ctx.b.slice(x, start, limit, [1] * x.rank)
    return ctx.b.reshape(block, tuple(size))


@handles(aten.as_strided_scatter)
def as_strided_scatter(ctx: Context, x: Value, src: Value, size: Sequence[int],
                       stride: Sequence[int], storage_offset: int = 0) -> Value:
    """x with the block as_strided picks replaced by src."""
    b = ctx.b
    start, limit = _strided_block(x.shape, size, stride, storage_offset)
    block = [l - s for s, l in zip(start, limit)]
    high = [d - l for d, l in zip(x.shape, limit)]
    placed = b.pad(b.reshape(b.convert(src, x.element), block), start, high)
    inside = b.compare("ne", b.pad(b.splat(1.0, block, "f32"), start, high),
                       b.splat(0.0, x.shape, "f32"))
    return b.select(inside, placed, x)


def _strided_block(shape: Sequence[int], size: Sequence[int], stride: Sequence[int],
                   storage_offset: Optional[int]):
    """The [start, limit) block of a contiguous `shape` that a strided view
    of `size`/`stride` picks, dimensions in order; an error otherwise."""
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    start, rest = [], storage_offset or 0
    for s in strides:
        start.append(rest // s)
        rest %= s
    limit = [st + 1 for st in start]
    previous = -1
    for n, t in zip(size, stride):
        if n == 1:
            continue
        dims = [d for d in range(previous + 1, len(shape)) if strides[d] == t and shape[d] > 1]
        if rest or not dims or start[dims[0]] + n > shape[dims[0]]:
            raise TranslationError(f"as_strided with size {list(size)} and stride "
                                   f"{list(stride)} is not a block of {list(shape)}")
        previous = dims[0]
        limit[previous] = start[previous] + n
    if math.prod(l - s for s, l in zip(start, limit)) != math.prod(size):
        raise TranslationError(f"as_strided with size {list(size)} and stride "
                               f"{list(stride)} is not a block of {list(shape)}")
    return start, limit


class _Conv1d:
    """A 1-D convolution as matmuls over patches (im2col): x [B, Cin, L]
    padded, its K taps strided slices [B, Cin, K, Lout]; per group g, the
    patches [B*Lout, Cin/g*K] times the weight [Cin/g*K, Cout/g]."""

    def __init__(self, ctx: Context, x_shape, w_shape, stride, padding, dilation, groups):
        if len(x_shape) != 3 or any(len(v) != 1 for v in (stride, padding, dilation)):
            raise TranslationError("only 1-D convolutions ([batch, channels, length]) are "
                                   "supported")
        self.b = ctx.b
        self.batch, self.cin, self.length = x_shape
        self.cout, _, self.taps = w_shape
        self.stride, self.pad, self.dilation = stride[0], padding[0], dilation[0]
        self.groups = groups
        span = self.dilation * (self.taps - 1) + 1
        self.lout = (self.length + 2 * self.pad - span) // self.stride + 1
        self.ck = self.cin // groups * self.taps

    def patches(self, x: Value) -> Value:
        """[g, B*Lout, Cin/g*K]."""
        b, g = self.b, self.groups
        cols = _taps(b, x, self.taps, self.stride, self.pad, self.dilation)
        cols = b.reshape(cols, [self.batch, g, self.ck, self.lout])
        cols = b.transpose(cols, [1, 0, 3, 2])
        return b.reshape(cols, [g, self.batch * self.lout, self.ck])

    def weight(self, w: Value) -> Value:
        """[g, Cin/g*K, Cout/g]."""
        g = self.groups
        return self.b.transpose(self.b.reshape(w, [g, self.cout // g, self.ck]), [0, 2, 1])

    def grouped_out(self, out: Value) -> Value:
        """[B, Cout, Lout] as [g, B*Lout, Cout/g]."""
        b, g = self.b, self.groups
        out = b.reshape(out, [self.batch, g, self.cout // g, self.lout])
        return b.reshape(b.transpose(out, [1, 0, 3, 2]), [g, self.batch * self.lout,
                                                           self.cout // g])

    def ungrouped_out(self, out: Value) -> Value:
        """[g, B*Lout, Cout/g] as [B, Cout, Lout]."""
        b, g = self.b, self.groups
        out = b.reshape(out, [g, self.batch, self.lout, self.cout // g])
        return b.reshape(b.transpose(out, [1, 0, 3, 2]), [self.batch, self.cout, self.lout])

    def fold(self, ctx: Context, cols: Value) -> Value:
        """The patches' gradient [g, B*Lout, Cin/g*K] summed back onto x."""
        b, g = self.b, self.groups
        cols = b.reshape(cols, [g, self.batch, self.lout, self.ck])
        cols = b.reshape(b.transpose(cols, [1, 0, 3, 2]),
                         [self.batch, self.cin, self.taps, self.lout])
        return _untaps(ctx, cols, self.length, self.stride, self.pad, self.dilation)


def _taps(b: GraphBuilder, x: Value, taps: int, stride: int, pad: int, dilation: int) -> Value:
    """x [B, C, L] zero-padded, its `taps` strided slices side by side:
    [B, C, K, Lout] (a 1-D convolution's patches, F.unfold's columns)."""
    batch, channels, length = x.shape
    lout = (length + 2 * pad - dilation * (taps - 1) - 1) // stride + 1
    xp = b.pad(x, [0, 0, pad], [0, 0, pad])
    parts = []
    for k in range(taps):
        start = k * dilation
        tap = b.slice(xp, [0, 0, start], [batch, channels, start + stride * (lout - 1) + 1],
                      [1, 1, stride])
        parts.append(b.reshape(tap, [batch, channels, 1, lout]))
    return b.concatenate(parts, 2) if len(parts) > 1 else parts[0]


def _untaps(ctx: Context, cols: Value, length: int, stride: int, pad: int,
            dilation: int) -> Value:
    """The gradient of _taps: each tap [B, C, Lout] added back where it was
    taken, the padding cut off: [B, C, L]."""
    b = ctx.b
    batch, channels, taps, lout = cols.shape
    total = None
    for k in range(taps):
        tap = b.reshape(b.slice(cols, [0, 0, k, 0], [batch, channels, k + 1, lout],
                                [1, 1, 1, 1]), [batch, channels, lout])
        start = k * dilation
        placed = slice_backward(ctx, tap, [batch, channels, length + 2 * pad], 2, start,
                                start + stride * (lout - 1) + 1, stride)
        total = placed if total is None else b.binary("add", total, placed)
    return b.slice(total, [0, 0, pad], [batch, channels, pad + length], [1, 1, 1])


def _unfold_1d(x_shape, kernel, dilation, padding, stride):
    """F.unfold over [B, C, H, 1] with a (K, 1) kernel (ConvBERT's): the
    1-D taps along H; anything else is refused."""
    if len(x_shape) != 4 or x_shape[3] != 1 or kernel[1] != 1 or padding[1] != 0:
        raise TranslationError("F.unfold / F.fold are supported over [B, C, H, 1] with a "
                               "(K, 1) kernel only")
    return kernel[0], stride[0], padding[0], dilation[0]


@handles(aten.im2col)
def im2col(ctx: Context, x: Value, kernel_size, dilation, padding, stride) -> Value:
    taps, step, pad, dil = _unfold_1d(x.shape, kernel_size, dilation, padding, stride)
    batch, channels, height, _ = x.shape
    cols = _taps(ctx.b, ctx.b.reshape(x, [batch, channels, height]), taps, step, pad, dil)
    return ctx.b.reshape(cols, ctx.out_shape())


@handles(aten.col2im)
def col2im(ctx: Context, cols: Value, output_size, kernel_size, dilation, padding,
           stride) -> Value:
    shape = ctx.out_shape()
    taps, step, pad, dil = _unfold_1d(shape, kernel_size, dilation, padding, stride)
    batch, channels, height, _ = shape
    cols = ctx.b.reshape(cols, [batch, channels, taps, cols.shape[-1]])
    return ctx.b.reshape(_untaps(ctx, cols, height, step, pad, dil), shape)


@handles(aten.convolution)
def convolution(ctx: Context, x: Value, w: Value, bias: Optional[Value], stride, padding,
                dilation, transposed: bool, output_padding, groups: int) -> Value:
    if transposed:
        raise TranslationError("transposed convolutions are not supported")
    conv = _Conv1d(ctx, x.shape, w.shape, stride, padding, dilation, groups)
    b = ctx.b
    out = b.dot_general(conv.patches(x), conv.weight(w), ([0], [0]), ([2], [1]), x.element)
    out = conv.ungrouped_out(out)
    if bias is not None:
        out = b.binary("add", out, b.broadcast_in_dim(bias, out.shape, [1]))
    return out


@handles(aten.convolution_backward)
def convolution_backward(ctx: Context, grad: Value, x: Value, w: Value, bias_sizes, stride,
                         padding, dilation, transposed: bool, output_padding, groups: int,
                         output_mask):
    if transposed:
        raise TranslationError("transposed convolutions are not supported")
    conv = _Conv1d(ctx, x.shape, w.shape, stride, padding, dilation, groups)
    b = ctx.b
    grads = conv.grouped_out(grad)  # [g, B*Lout, Cout/g]
    results = [None, None, None]
    if output_mask[0]:
        cols = b.dot_general(grads, b.transpose(conv.weight(w), [0, 2, 1]), ([0], [0]),
                             ([2], [1]), grad.element)
        results[0] = conv.fold(ctx, cols)
    if output_mask[1]:
        dw = b.dot_general(b.transpose(grads, [0, 2, 1]), conv.patches(x), ([0], [0]),
                           ([2], [1]), grad.element)  # [g, Cout/g, Cin/g*K]
        results[1] = b.reshape(dw, list(w.shape))
    if output_mask[2]:
        results[2] = b.reduce("sum", grad, [0, 2])
    return results


@handles(aten.flip)
def flip(ctx: Context, x: Value, dims: Sequence[int]) -> Value:
    """x reversed along `dims` (cumsum's gradient is one): each a lookup of
    the rows in reverse order, with the dimension moved first."""
    b = ctx.b
    for dim in _dims(dims, x.rank):
        n = x.shape[dim]
        if n == 1:
            continue
        perm = [dim] + [d for d in range(x.rank) if d != dim]
        moved = b.transpose(x, perm) if dim else x
        rows = b.reshape(moved, (n, moved.numel() // n))
        reverse = b.binary("sub", b.splat(n - 1, (n,), "i32"), b.iota((n,), 0, "i32"))
        flipped = b.reshape(b.gather(rows, reverse, 0), moved.shape)
        x = b.transpose(flipped, [perm.index(d) for d in range(x.rank)]) if dim else flipped
    return x


class _ElementLookup:
    """torch.gather's and scatter_add's elements of x along `dim` as offsets
    into x flattened (row * size + index), with `dim` moved last; the
    indexed dimension of x is cut to the index's in the others."""

    def __init__(self, ctx: Context, x: Value, dim: int, index: Value) -> None:
        b = self.b = ctx.b
        limits = [i if d != dim else s for d, (s, i) in enumerate(zip(x.shape, index.shape))]
        x = b.slice(x, [0] * x.rank, limits, [1] * x.rank)
        self.perm = [d for d in range(x.rank) if d != dim] + [dim]
        self.x, index = self.moved(x), self.moved(index)
        size, picked = self.x.shape[-1], index.shape[-1]
        rows = math.prod(self.x.shape[:-1])
        index = b.convert(b.reshape(index, (rows, picked)), "i32")
        offsets = b.binary("mul", b.iota((rows, picked), 0, "i32"),
                           b.splat(size, (rows, picked), "i32"))
        self.flat = b.reshape(b.binary("add", offsets, index), (rows * picked,))
        self.table = b.reshape(self.x, (rows * size, 1))
        self.picked_shape = tuple(self.x.shape[:-1]) + (picked,)

    def moved(self, v: Value) -> Value:
        return v if self.perm[-1] == v.rank - 1 else self.b.transpose(v, self.perm)

    def restore(self, v: Value) -> Value:
        if self.perm[-1] == v.rank - 1:
            return v
        return self.b.transpose(v, [self.perm.index(d) for d in range(v.rank)])


@handles(aten.gather)
def gather(ctx: Context, x: Value, dim: int, index: Value, sparse_grad: bool = False) -> Value:
    """torch.gather: out[..., k, ...] = x[..., index[..., k, ...], ...] along
    `dim`, the other dimensions taken as they are: a lookup of single
    elements in x flattened."""
    lookup = _ElementLookup(ctx, x, _dim(dim, x.rank), index)
    picked = ctx.b.gather(lookup.table, lookup.flat, 0)
    return lookup.restore(ctx.b.reshape(picked, lookup.picked_shape))


@handles(aten.cat)
def cat(ctx: Context, xs: Sequence[Value], dim: int = 0) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    xs = [ctx.b.convert(x, element) for x in xs if x.numel() > 0 or x.rank > 1]
    return ctx.b.concatenate(xs, _dim(dim, len(shape)))


@handles(aten.stack)
def stack(ctx: Context, xs: Sequence[Value], dim: int = 0) -> Value:
    shape = ctx.out_shape()
    dim = _dim(dim, len(shape))
    parts = []
    for x in xs:
        part_shape = list(x.shape)
        part_shape.insert(dim, 1)
        parts.append(ctx.b.reshape(x, part_shape))
    return ctx.b.concatenate(parts, dim)


def _split(ctx: Context, x: Value, sizes: Sequence[int], dim: int) -> List[Value]:
    dim = _dim(dim, x.rank)
    out, offset = [], 0
    for size in sizes:
        starts = [0] * x.rank
        limits = list(x.shape)
        starts[dim], limits[dim] = offset, offset + size
        out.append(ctx.b.slice(x, starts, limits, [1] * x.rank))
        offset += size
    return out


@handles(aten.split)
def split(ctx: Context, x: Value, split_size: Any, dim: int = 0) -> List[Value]:
    if isinstance(split_size, (list, tuple)):
        return _split(ctx, x, split_size, dim)
    size = x.shape[_dim(dim, x.rank)]
    sizes = [min(split_size, size - i) for i in range(0, size, split_size)]
    return _split(ctx, x, sizes, dim)


@handles(aten.split_with_sizes)
def split_with_sizes(ctx: Context, x: Value, sizes: Sequence[int], dim: int = 0
                     ) -> List[Value]:
    return _split(ctx, x, sizes, dim)


@handles(aten.unbind)
def unbind(ctx: Context, x: Value, dim: int = 0) -> List[Value]:
    dim = _dim(dim, x.rank)
    shape = x.shape[:dim] + x.shape[dim + 1:]
    return [ctx.b.reshape(p, shape)
            for p in _split(ctx, x, [1] * x.shape[dim], dim)]


@handles(aten.repeat)
def repeat(ctx: Context, x: Value, repeats: Sequence[int]) -> Value:
    # Interleave a new unit dim before each dim, broadcast it to the repeat
    # count, then merge: [r0, d0, r1, d1, ...] -> [r0*d0, r1*d1, ...].
    lead = len(repeats) - x.rank
    dims = (1,) * lead + x.shape
    expanded_in = []
    for d in dims:
        expanded_in += [1, d]
    y = ctx.b.reshape(x, expanded_in)
    target = []
    for r, d in zip(repeats, dims):
        target += [r, d]
    y = ctx.b.broadcast_in_dim(y, target, list(range(len(target))))
    return ctx.b.reshape(y, ctx.out_shape())


@handles(aten.index_select)
def index_select(ctx: Context, x: Value, dim: int, index: Value) -> Value:
    """Rows of x along `dim`: a lookup of rows with the dimension moved first."""
    b = ctx.b
    dim = _dim(dim, x.rank)
    if dim == 0:
        return b.gather(x, index, 0)
    perm = [dim] + [d for d in range(x.rank) if d != dim]
    picked = b.gather(b.transpose(x, perm), index, 0)
    return b.transpose(picked, [perm.index(d) for d in range(x.rank)])


def _leading_offsets(ctx: Context, x: Value, used):
    """x[i0, i1, ...] with index tensors on x's leading dimensions: each
    element of their broadcast shape as the row it picks of x flattened over
    those dimensions (Hugging Face's mask functions index a [B, S] mask with
    [B, 1, 1, 1] and [1, 1, 1, S]). Returns the rows [count] (i32), the
    broadcast shape and the remaining dimensions of x."""
    dims = [d for d, _ in used]
    if dims != list(range(len(dims))):
        raise TranslationError("indexing with several index tensors is supported on "
                               "the leading dimensions only (x[i, j], x[i, j, :]); "
                               "index one dimension at a time")
    b = ctx.b
    shape = list(torch.broadcast_shapes(*[tuple(i.shape) for _, i in used]))
    offset = None
    for d, idx in used:
        stride = math.prod(x.shape[d + 1:len(dims)])
        part = b.broadcast_to(b.convert(idx, "i32"), shape)
        if stride != 1:
            part = b.binary("mul", part, b.splat(stride, shape, "i32"))
        offset = part if offset is None else b.binary("add", offset, part)
    return b.reshape(offset, (math.prod(shape),)), shape, list(x.shape[len(dims):])


@handles(aten.index)
def index(ctx: Context, x: Value, indices: Sequence[Optional[Value]]) -> Value:
    """x[..., idx, ...] with one integer index tensor, or x[i0, i1, ...] with
    several on the leading dimensions (advanced indexing)."""
    used = [(d, i) for d, i in enumerate(indices) if i is not None]
    if any(i.element == "i1" for _, i in used):
        raise TranslationError("indexing with a boolean mask gives a data-dependent "
                               "shape; keep the shape static, e.g. "
                               "torch.where(mask, x, 0)")
    if len(used) == 1:
        dim, idx = used[0]
        return ctx.b.reshape(ctx.b.gather(x, idx, dim), ctx.out_shape())
    b = ctx.b
    offset, _, rest = _leading_offsets(ctx, x, used)
    boolean = x.element == "i1"
    table = b.convert(x, "i32") if boolean else x  # rows of bytes are gathered as i32
    rows = b.reshape(table, [math.prod(x.shape[:len(used)])] + rest)
    picked = b.reshape(b.gather(rows, offset, 0), ctx.out_shape())
    if boolean:
        picked = b.compare("ne", picked, b.splat(0, picked.shape, "i32"))
    return picked


@handles(aten.index_put)
def index_put(ctx: Context, x: Value, indices: Sequence[Optional[Value]],
              values: Value, accumulate: bool = False) -> Value:
    """The gradient of x[idx]: values added at idx (accumulate=True); or
    masked assignment `x[mask] = v` (a boolean mask over x's leading
    dimensions and one value, or values that broadcast over the rest)."""
    used = [(d, i) for d, i in enumerate(indices) if i is not None]
    if (not accumulate and len(used) == 1 and used[0][0] == 0 and
            used[0][1].element == "i1" and isinstance(values, Value)):
        mask = used[0][1]
        if x.shape[:mask.rank] != mask.shape:
            raise TranslationError(f"a boolean mask of shape {list(mask.shape)} over a tensor "
                                   f"of shape {list(x.shape)}: the mask must cover the "
                                   "tensor's leading dimensions")
        rest = x.shape[mask.rank:]
        if values.numel() != 1 and tuple(values.shape[-len(rest):] if rest else ()) != rest:
            raise TranslationError(
                "x[mask] = values with one value per selected element depends on how many "
                "the mask selects (data-dependent); assign one value, or write "
                "torch.where(mask, values, x) with values of x's shape")
        element = ctx.out_element()
        shape = x.shape
        pred = ctx.b.broadcast_in_dim(mask, shape, list(range(mask.rank)))
        if values.numel() == 1:
            fill = ctx.b.broadcast_to(ctx.b.convert(ctx.b.reshape(values, ()), element), shape)
        else:
            fill = ctx.operand(ctx.b.reshape(values, rest), shape, element)
        return ctx.b.select(pred, fill, ctx.b.convert(x, element))
    if not accumulate or any(i.element == "i1" for _, i in used):
        raise TranslationError("only index_put with accumulate=True and integer "
                               "index tensors (the gradient of x[idx]) is supported")
    if len(used) > 1:
        # The gradient of x[i0, i1, ...]: added to the rows it picked.
        b = ctx.b
        element = ctx.out_element()
        offset, shape, rest = _leading_offsets(ctx, x, used)
        rows = b.reshape(b.convert(x, element), [math.prod(x.shape[:len(used)])] + rest)
        updates = b.reshape(ctx.operand(values, shape + rest, element),
                            [math.prod(shape)] + rest)
        return b.reshape(b.scatter_add(rows, offset, updates, 0), x.shape)
    dim, idx = used[0]
    element = ctx.out_element()
    updates_shape = x.shape[:dim] + idx.shape + x.shape[dim + 1:]
    updates = ctx.operand(values, updates_shape, element)
    return ctx.b.scatter_add(ctx.b.convert(x, element), idx, updates, dim)


@handles(aten.index_add)
def index_add(ctx: Context, x: Value, dim: int, index: Value, source: Value,
              alpha: Any = 1) -> Value:
    b = ctx.b
    element = ctx.out_element()
    source = _scaled(ctx, source, alpha, source.shape, element)
    dim = _dim(dim, x.rank)
    x = b.convert(x, element)
    if dim == 0:
        return b.scatter_add(x, index, source, 0)
    # Added to rows, with the dimension moved first (index_select's gradient).
    perm = [dim] + [d for d in range(x.rank) if d != dim]
    added = b.scatter_add(b.transpose(x, perm), index, b.transpose(source, perm), 0)
    return b.transpose(added, [perm.index(d) for d in range(x.rank)])


@handles(aten.embedding)
def embedding(ctx: Context, weight: Value, indices: Value, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Value:
    return ctx.b.gather(weight, indices, 0)


@handles(aten.embedding_dense_backward)
def embedding_dense_backward(ctx: Context, grad: Value, indices: Value,
                             num_weights: int, padding_idx: int,
                             scale_grad_by_freq: bool) -> Value:
    if scale_grad_by_freq:
        raise TranslationError("embedding with scale_grad_by_freq=True is not "
                               "supported")
    b = ctx.b
    if padding_idx >= 0:
        keep = b.compare("ne", indices, b.splat(padding_idx, indices.shape,
                                                indices.element))
        keep = b.broadcast_in_dim(keep, grad.shape, list(range(indices.rank)))
        grad = b.select(keep, grad, b.splat(0.0, grad.shape, grad.element))
    zeros_ = b.splat(0.0, (num_weights,) + grad.shape[indices.rank:], grad.element)
    return b.scatter_add(zeros_, indices, grad, 0)


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

def _reduce(ctx: Context, kind: str, x: Value, dims: Any) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    y = ctx.b.reduce(kind, ctx.b.convert(x, element), _dims(dims, x.rank))
    return ctx.b.reshape(y, shape)


@handles(aten.sum)
def sum_(ctx: Context, x: Value, dims: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Value:
    if not isinstance(dims, (list, tuple, int)):
        dims = None
    return _reduce(ctx, "sum", x, dims)


@handles(aten.mean)
def mean(ctx: Context, x: Value, dims: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Value:
    if not isinstance(dims, (list, tuple, int)):
        dims = None
    dims = _dims(dims, x.rank)
    count = math.prod(x.shape[d] for d in dims)
    total = _reduce(ctx, "sum", x, dims)
    return ctx.b.binary("div", total, ctx.b.splat(count, total.shape,
                                                  total.element))


@handles(aten.amax)
def amax(ctx: Context, x: Value, dims: Any = (), keepdim: bool = False) -> Value:
    return _reduce(ctx, "max", x, dims)


@handles(aten.amin)
def amin(ctx: Context, x: Value, dims: Any = (), keepdim: bool = False) -> Value:
    return _reduce(ctx, "min", x, dims)


@handles(aten.max, aten.min)
def max_or_min(ctx: Context, x: Value, dim: Any = None, keepdim: bool = False):
    """max(x) over everything, or max(x, dim) as values and indices."""
    kind = "max" if ctx.node.target.overloadpacket is aten.max else "min"
    if dim is None or not isinstance(dim, int):
        if isinstance(dim, Value):
            raise TranslationError(f"{kind}(x, y) of two tensors: use torch.maximum")
        return ctx.b.reshape(ctx.b.reduce(kind, x, list(range(x.rank))), ())
    dim = _dim(dim, x.rank)
    shape = list(x.shape)
    if keepdim:
        shape[dim] = 1
    else:
        del shape[dim]
    if kind == "min":
        raise TranslationError("min(x, dim) with indices is not supported; use amin")
    values = ctx.b.reshape(ctx.b.reduce(kind, x, [dim]), shape)
    return [values, ctx.b.reshape(_argmax(ctx, x, dim), shape)]


def _argmax(ctx: Context, x: Value, dim: int) -> Value:
    """The first index of the largest element along `dim` (as PyTorch's):
    the smallest index where x equals its maximum, as i64 (indices counted
    in f32: exact below 2^24)."""
    b = ctx.b
    peak = b.broadcast_in_dim(b.reduce("max", x, [dim]), x.shape,
                              [d for d in range(x.rank) if d != dim])
    where = b.iota(x.shape, dim, "f32")
    beyond = b.splat(float(x.shape[dim]), x.shape, "f32")
    first = b.reduce("min", b.select(b.compare("eq", x, peak), where, beyond), [dim])
    return b.convert(first, "i64")


@handles(aten.argmax)
def argmax(ctx: Context, x: Value, dim: Optional[int] = None,
           keepdim: bool = False) -> Value:
    if dim is None:
        x, dim = ctx.b.reshape(x, (x.numel(),)), 0
    return ctx.b.reshape(_argmax(ctx, x, _dim(dim, x.rank)), ctx.out_shape())


# ---------------------------------------------------------------------------
# Matrix products
# ---------------------------------------------------------------------------

@handles(aten.mm)
def mm(ctx: Context, a: Value, b: Value) -> Value:
    return ctx.b.dot_general(a, b, ([], []), ([1], [0]), ctx.out_element())


@handles(aten.bmm)
def bmm(ctx: Context, a: Value, b: Value) -> Value:
    return ctx.b.dot_general(a, b, ([0], [0]), ([2], [1]), ctx.out_element())


@handles(aten.addmm)
def addmm(ctx: Context, bias: Any, a: Value, b: Value, beta: Any = 1,
          alpha: Any = 1) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    product = _scaled(ctx, mm(ctx, a, b), alpha, shape, element)
    return ctx.b.binary("add", _scaled(ctx, bias, beta, shape, element), product)


@handles(aten.baddbmm)
def baddbmm(ctx: Context, bias: Any, a: Value, b: Value, beta: Any = 1,
            alpha: Any = 1) -> Value:
    shape, element = ctx.out_shape(), ctx.out_element()
    product = _scaled(ctx, bmm(ctx, a, b), alpha, shape, element)
    if beta == 0:
        return product
    return ctx.b.binary("add", _scaled(ctx, bias, beta, shape, element), product)


# ---------------------------------------------------------------------------
# Composites: softmax, layer norm, losses, dropout
# ---------------------------------------------------------------------------

@handles(aten._softmax)
def softmax(ctx: Context, x: Value, dim: int, half_to_float: bool = False
            ) -> Value:
    y = ctx.b.unary("softmax", x, f", dim = {_dim(dim, x.rank)}")
    return ctx.b.convert(y, ctx.out_element())


@handles(aten._safe_softmax)
def safe_softmax(ctx: Context, x: Value, dim: int, dtype: Any = None) -> Value:
    """softmax, with 0 for rows that are all -inf (a query every key of which
    is masked: PyTorch 2's scaled_dot_product_attention math path)."""
    b, dim = ctx.b, _dim(dim, x.rank)
    y = softmax(ctx, x, dim)
    row_max = b.reduce("max", x, [dim])
    keep = b.compare("ne", row_max, b.splat(float("-inf"), row_max.shape, row_max.element))
    keep = b.broadcast_in_dim(keep, y.shape, [d for d in range(x.rank) if d != dim])
    return b.select(keep, y, b.splat(0.0, y.shape, y.element))


@handles(aten._log_softmax)
def log_softmax(ctx: Context, x: Value, dim: int, half_to_float: bool = False
                ) -> Value:
    y = ctx.b.unary("log_softmax", x, f", dim = {_dim(dim, x.rank)}")
    return ctx.b.convert(y, ctx.out_element())


def _softmax_grad(ctx: Context, op: str, grad: Value, out: Value, dim: int
                  ) -> Value:
    element = ctx.out_element()
    grad, out = ctx.b.convert(grad, element), ctx.b.convert(out, element)
    return ctx.b.emit1(f"trn.{op} {out.name}, {grad.name}, dim = "
                       f"{_dim(dim, out.rank)} : {out.type}", out.shape, element)


@handles(aten._softmax_backward_data)
def softmax_backward(ctx: Context, grad: Value, out: Value, dim: int,
                     input_dtype: Any) -> Value:
    return _softmax_grad(ctx, "softmax_grad", grad, out, dim)


@handles(aten._log_softmax_backward_data)
def log_softmax_backward(ctx: Context, grad: Value, out: Value, dim: int,
                         input_dtype: Any) -> Value:
    return _softmax_grad(ctx, "log_softmax_grad", grad, out, dim)


def _norm_params(ctx: Context, x: Value, normalized_shape: Sequence[int],
                 weight: Optional[Value], bias: Optional[Value]):
    shape = tuple(int(d) for d in normalized_shape)
    if weight is None:
        weight = ctx.b.splat(1.0, shape, x.element)
    if bias is None:
        bias = ctx.b.splat(0.0, shape, x.element)
    return shape, weight, bias


@handles(aten.native_layer_norm)
def native_layer_norm(ctx: Context, x: Value, normalized_shape: Sequence[int],
                      weight: Optional[Value], bias: Optional[Value], eps: float
                      ) -> List[Value]:
    shape, weight, bias = _norm_params(ctx, x, normalized_shape, weight, bias)
    axis = x.rank - len(shape)
    stats = x.shape[:axis]
    y, mean_, rstd = ctx.b.emit(
        f"trn.layer_norm {x.name}, {weight.name}, {bias.name}, axis = {axis}, "
        f"eps = {eps:.17e} : ({x.type}, {weight.type}, {bias.type}) -> "
        f"({x.type}, tensor<{''.join(f'{d}x' for d in stats)}f32>, "
        f"tensor<{''.join(f'{d}x' for d in stats)}f32>)",
        [(x.shape, x.element), (stats, "f32"), (stats, "f32")])
    # PyTorch keeps unit dims for the statistics: [..., 1, 1].
    stat_shape = stats + (1,) * len(shape)
    stat_element = _stat_element(ctx, x)
    return [y, ctx.b.convert(ctx.b.reshape(mean_, stat_shape), stat_element),
            ctx.b.convert(ctx.b.reshape(rstd, stat_shape), stat_element)]


def _stat_element(ctx: Context, x: Value) -> str:
    for user in ctx.node.users:
        if user.args[1] in (1, 2):
            meta = ctx.meta(user)
            if meta is not None:
                return element_type(meta[1]) or "f32"
    return x.element


@handles(aten.native_layer_norm_backward)
def native_layer_norm_backward(ctx: Context, grad: Value, x: Value,
                               normalized_shape: Sequence[int], mean_: Value,
                               rstd: Value, weight: Optional[Value],
                               bias: Optional[Value], mask: Sequence[bool]
                               ) -> List[Optional[Value]]:
    shape, weight, bias = _norm_params(ctx, x, normalized_shape, weight, bias)
    axis = x.rank - len(shape)
    stats = x.shape[:axis]
    mean_ = ctx.b.reshape(ctx.b.convert(mean_, "f32"), stats)
    rstd = ctx.b.reshape(ctx.b.convert(rstd, "f32"), stats)
    grad = ctx.b.convert(grad, x.element)
    dx, dw, db = ctx.b.emit(
        f"trn.layer_norm_grad {grad.name}, {x.name}, {mean_.name}, {rstd.name}, "
        f"{weight.name}, axis = {axis} : ({grad.type}, {x.type}, {mean_.type}, "
        f"{rstd.type}, {weight.type}) -> ({x.type}, {weight.type}, {weight.type})",
        [(x.shape, x.element), (weight.shape, weight.element),
         (weight.shape, weight.element)])
    return [dx if mask[0] else None, dw if mask[1] else None,
            db if mask[2] else None]


class _ChannelStats:
    """BatchNorm's view of x: channels on dim 1, statistics over the others,
    in f32."""

    def __init__(self, ctx: Context, x: Value) -> None:
        if x.rank < 2:
            raise TranslationError(f"batch_norm of a rank-{x.rank} input; it normalizes "
                                   "dim 1 of an input of rank 2 or more")
        self.b, self.x = ctx.b, x
        self.channels = x.shape[1]
        self.dims = [0] + list(range(2, x.rank))
        self.count = x.numel() // max(self.channels, 1)
        self.shape = (self.channels,)

    def f32(self, value: Optional[Value], default: float) -> Value:
        if value is None:
            return self.b.splat(default, self.shape, "f32")
        return self.b.convert(value, "f32")

    def spread(self, per_channel: Value) -> Value:
        return self.b.broadcast_in_dim(per_channel, self.x.shape, [1])

    def total(self, value: Value) -> Value:
        return self.b.reduce("sum", value, self.dims)

    def scalar(self, value: float) -> Value:
        return self.b.splat(value, self.shape, "f32")


@handles(aten.native_batch_norm)
def native_batch_norm(ctx: Context, x: Value, weight: Optional[Value],
                      bias: Optional[Value], running_mean: Optional[Value],
                      running_var: Optional[Value], training: bool, momentum: float,
                      eps: float) -> List[Value]:
    if training and running_mean is not None:
        raise TranslationError(
            "batch_norm in training mode updates its running statistics in place, and "
            "trn does not carry buffer updates yet: call .eval() on the module to "
            "normalize with its running statistics, or build it with "
            "track_running_stats=False to use the batch's")
    b, c = ctx.b, _ChannelStats(ctx, x)
    xf = b.convert(x, "f32")
    if training:
        mean = b.binary("div", c.total(xf), c.scalar(c.count))
        centered = b.binary("sub", xf, c.spread(mean))
        var = b.binary("div", c.total(b.binary("mul", centered, centered)),
                       c.scalar(c.count))
    else:
        mean, var = c.f32(running_mean, 0.0), c.f32(running_var, 1.0)
        centered = b.binary("sub", xf, c.spread(mean))
    invstd = b.unary("rsqrt", b.binary("add", var, c.scalar(eps)))
    scale = b.binary("mul", invstd, c.f32(weight, 1.0))
    y = b.binary("add", b.binary("mul", centered, c.spread(scale)),
                 c.spread(c.f32(bias, 0.0)))
    stat_element = _stat_element(ctx, x)
    if training:
        saved = [b.convert(mean, stat_element), b.convert(invstd, stat_element)]
    else:
        # Evaluation saves nothing (PyTorch returns empty statistics).
        saved = [b.splat(0, (0,), stat_element)] * 2
    return [b.convert(y, x.element)] + saved


@handles(aten.native_batch_norm_backward)
def native_batch_norm_backward(ctx: Context, grad: Value, x: Value,
                               weight: Optional[Value], running_mean: Optional[Value],
                               running_var: Optional[Value], save_mean: Optional[Value],
                               save_invstd: Optional[Value], train: bool, eps: float,
                               mask: Sequence[bool]) -> List[Optional[Value]]:
    b, c = ctx.b, _ChannelStats(ctx, x)
    g, xf = b.convert(grad, "f32"), b.convert(x, "f32")
    if train:
        mean, invstd = c.f32(save_mean, 0.0), c.f32(save_invstd, 1.0)
    else:
        mean = c.f32(running_mean, 0.0)
        invstd = b.unary("rsqrt", b.binary("add", c.f32(running_var, 1.0),
                                           c.scalar(eps)))
    xhat = b.binary("mul", b.binary("sub", xf, c.spread(mean)), c.spread(invstd))
    sum_g = c.total(g)
    sum_g_xhat = c.total(b.binary("mul", g, xhat))
    scale = b.binary("mul", invstd, c.f32(weight, 1.0))
    if train:
        # dx = w invstd / N (N g - sum(g) - xhat sum(g xhat)): the batch's
        # statistics depend on x too.
        inner = b.binary("sub", b.binary("sub", b.binary("mul", g, b.splat(
            c.count, x.shape, "f32")), c.spread(sum_g)),
            b.binary("mul", xhat, c.spread(sum_g_xhat)))
        dx = b.binary("mul", inner, c.spread(b.binary("div", scale, c.scalar(c.count))))
    else:
        dx = b.binary("mul", g, c.spread(scale))
    element = weight.element if weight is not None else x.element
    return [b.convert(dx, x.element) if mask[0] else None,
            b.convert(sum_g_xhat, element) if mask[1] else None,
            b.convert(sum_g, element) if mask[2] else None]


def _safe_targets(ctx: Context, target: Value, ignore_index: int):
    b = ctx.b
    keep = b.compare("ne", target, b.splat(ignore_index, target.shape,
                                           target.element))
    safe = b.select(keep, target, b.splat(0, target.shape, target.element))
    return keep, safe


@handles(aten.nll_loss_forward)
def nll_loss_forward(ctx: Context, logp: Value, target: Value,
                     weight: Optional[Value], reduction: int, ignore_index: int
                     ) -> List[Value]:
    if weight is not None:
        raise TranslationError("nll_loss with class weights is not supported")
    b = ctx.b
    if logp.rank == 1:
        logp = b.reshape(logp, (1,) + logp.shape)
        target = b.reshape(target, (1,))
    keep, safe = _safe_targets(ctx, target, ignore_index)
    picked = b.gather(logp, safe, axis=1, batch_dims=1)
    keepf = b.convert(keep, logp.element)
    losses = b.binary("mul", b.unary("neg", picked), keepf)
    count = b.reduce("sum", keepf, [0])
    if reduction == 0:
        out = losses
    elif reduction == 1:
        out = b.binary("div", b.reduce("sum", losses, [0]), count)
    else:
        out = b.reduce("sum", losses, [0])
    return [out, count]


@handles(aten.nll_loss_backward)
def nll_loss_backward(ctx: Context, grad: Value, logp: Value, target: Value,
                      weight: Optional[Value], reduction: int, ignore_index: int,
                      total_weight: Value) -> Value:
    b = ctx.b
    shape = logp.shape
    if logp.rank == 1:
        logp = b.reshape(logp, (1,) + logp.shape)
        target = b.reshape(target, (1,))
    keep, safe = _safe_targets(ctx, target, ignore_index)
    n = target.shape[0]
    g = b.convert(grad, logp.element)
    if reduction == 1:
        g = b.binary("div", g, b.convert(total_weight, logp.element))
    per_row = b.broadcast_to(g, (n,)) if g.rank == 0 else g
    values = b.binary("mul", b.unary("neg", per_row), b.convert(keep, logp.element))
    zeros_ = b.splat(0.0, logp.shape, logp.element)
    out = b.scatter_add(zeros_, safe, values, axis=1, batch_dims=1)
    return b.reshape(out, shape)


@handles(aten.native_dropout)
def native_dropout(ctx: Context, x: Value, p: float, train: Optional[bool]
                   ) -> List[Value]:
    b = ctx.b
    if not train or p == 0:
        return [x, b.splat(1, x.shape, "i1")]
    if ctx.seed is None:
        raise TranslationError("dropout needs a seed input")
    keep = b.rng_bernoulli(ctx.seed, ctx.next_stream, 1.0 - p, x.shape)
    ctx.next_stream += 1
    scaled = b.binary("mul", x, b.splat(1.0 / (1.0 - p), x.shape, x.element))
    return [b.select(keep, scaled, b.splat(0.0, x.shape, x.element)), keep]


@handles(aten.native_dropout_backward)
def native_dropout_backward(ctx: Context, grad: Value, mask: Value, scale: float
                            ) -> Value:
    b = ctx.b
    scaled = b.binary("mul", grad, b.splat(scale, grad.shape, grad.element))
    return b.select(ctx.operand(mask, grad.shape, "i1"), scaled,
                    b.splat(0.0, grad.shape, grad.element))


@handles(aten.bernoulli)
def bernoulli(ctx: Context, x: Value, p: Any = 0.5, generator: Any = None) -> Value:
    """Dropout as nn.Dropout traces it: empty_like().bernoulli_(1 - p)."""
    if not isinstance(p, numbers.Number):
        raise TranslationError("bernoulli with a tensor of probabilities is not "
                               "supported")
    if ctx.seed is None:
        raise TranslationError("random numbers need a seed input")
    keep = ctx.b.rng_bernoulli(ctx.seed, ctx.next_stream, float(p), x.shape)
    ctx.next_stream += 1
    return ctx.b.convert(keep, ctx.out_element())


# ---------------------------------------------------------------------------
# More activations and statistics users write by hand
# ---------------------------------------------------------------------------

@handles(aten.leaky_relu)
def leaky_relu(ctx: Context, x: Value, negative_slope: float = 0.01) -> Value:
    b = ctx.b
    positive = b.compare("gt", x, b.splat(0.0, x.shape, x.element))
    return b.select(positive, x, b.binary("mul", x, b.splat(negative_slope, x.shape,
                                                             x.element)))


@handles(aten.leaky_relu_backward)
def leaky_relu_backward(ctx: Context, grad: Value, x: Value, negative_slope: float,
                        self_is_result: bool = False) -> Value:
    b = ctx.b
    positive = b.compare("gt", x, b.splat(0.0, x.shape, x.element))
    return b.select(positive, grad, b.binary("mul", grad, b.splat(
        negative_slope, grad.shape, grad.element)))


@handles(aten.hardtanh)
def hardtanh(ctx: Context, x: Value, min_val: float = -1.0, max_val: float = 1.0
             ) -> Value:
    return clamp(ctx, x, min_val, max_val)


@handles(aten.hardtanh_backward)
def hardtanh_backward(ctx: Context, grad: Value, x: Value, min_val: float,
                      max_val: float) -> Value:
    b = ctx.b
    inside = b.binary("and", b.compare("gt", x, b.splat(min_val, x.shape, x.element)),
                      b.compare("lt", x, b.splat(max_val, x.shape, x.element)))
    return b.select(inside, grad, b.splat(0.0, grad.shape, grad.element))


@handles(aten.softplus)
def softplus(ctx: Context, x: Value, beta: float = 1.0, threshold: float = 20.0
             ) -> Value:
    # log1p(exp(beta * x)) / beta, and x where beta * x > threshold.
    b = ctx.b
    bx = b.binary("mul", x, b.splat(beta, x.shape, x.element))
    soft = b.binary("div", b.unary("log1p", b.unary("exp", bx)),
                    b.splat(beta, x.shape, x.element))
    linear = b.compare("gt", bx, b.splat(threshold, x.shape, x.element))
    return b.select(linear, x, soft)


@handles(aten.softplus_backward)
def softplus_backward(ctx: Context, grad: Value, x: Value, beta: float,
                      threshold: float) -> Value:
    b = ctx.b
    bx = b.binary("mul", x, b.splat(beta, x.shape, x.element))
    scaled = b.binary("mul", grad, b.unary("sigmoid", bx))
    linear = b.compare("gt", bx, b.splat(threshold, x.shape, x.element))
    return b.select(linear, grad, scaled)


def _variance(ctx: Context, x: Value, dims: Any, correction: float) -> Value:
    b = ctx.b
    dims = _dims(dims, x.rank)
    count = math.prod(x.shape[d] for d in dims)
    element = ctx.out_element()
    x = b.convert(x, element)
    total = b.reduce("sum", x, dims)
    mean_ = b.binary("div", total, b.splat(count, total.shape, element))
    kept = [d for d in range(x.rank) if d not in dims]
    centred = b.binary("sub", x, b.broadcast_in_dim(mean_, x.shape, kept))
    squares = b.reduce("sum", b.binary("mul", centred, centred), dims)
    return b.binary("div", squares, b.splat(max(count - correction, 0), squares.shape,
                                            element))


def _correction(unbiased: Any, correction: Any) -> float:
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased is True else 0.0


@handles(aten.var)
def var(ctx: Context, x: Value, dims: Any = None, unbiased: Any = None,
        keepdim: bool = False, correction: Any = None) -> Value:
    if isinstance(dims, bool):  # var(x, unbiased)
        dims, unbiased = None, dims
    result = _variance(ctx, x, dims, _correction(unbiased, correction))
    return ctx.b.reshape(result, ctx.out_shape())


@handles(aten.std)
def std(ctx: Context, x: Value, dims: Any = None, unbiased: Any = None,
        keepdim: bool = False, correction: Any = None) -> Value:
    if isinstance(dims, bool):
        dims, unbiased = None, dims
    result = _variance(ctx, x, dims, _correction(unbiased, correction))
    return ctx.b.reshape(ctx.b.unary("sqrt", result), ctx.out_shape())
