"""Writes `trn` dialect graphs as MLIR text.

The frontend builds a step graph op by op through `GraphBuilder` and hands the
text to the compiler (which parses and verifies it). Every op carries the
location of the user's source line it came from, as a named location
`loc("aten.mm"("train.py":42:0))`, so a diagnostic deep in the compiler still
names the PyTorch op and the line. Locations do not enter the cache key.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch

# PyTorch dtype -> trn element type.
_ELEMENT_TYPES: Dict[torch.dtype, str] = {
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.bool: "i1",
}

FLOAT_TYPES = ("f32", "bf16", "f16")


def element_type(dtype: torch.dtype) -> Optional[str]:
    """The trn element type of a PyTorch dtype, or None if trn has none."""
    return _ELEMENT_TYPES.get(dtype)


def torch_dtype(element: str) -> torch.dtype:
    for dtype, name in _ELEMENT_TYPES.items():
        if name == element:
            return dtype
    raise KeyError(element)


def tensor_type(shape: Sequence[int], element: str) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{element}>"


def _hex_float(value: float, element: str) -> str:
    """A non-finite float as the bit pattern MLIR's parser accepts."""
    if element == "f32":
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return f"0x{bits:08X}"
    if element == "f16":
        bits = struct.unpack("<H", struct.pack("<e", value))[0]
        return f"0x{bits:04X}"
    # bf16: the top half of the f32 pattern (exact for inf and NaN).
    bits = struct.unpack("<I", struct.pack("<f", value))[0] >> 16
    return f"0x{bits:04X}"


def _nested(values: Sequence[float], shape: Sequence[int], element: str) -> str:
    """A dense literal of `shape`: MLIR wants one bracket level per
    dimension (a flat list is only accepted for rank 1)."""
    if not shape:
        return literal(values[0], element)
    if len(shape) == 1:
        return "[" + ", ".join(literal(v, element) for v in values) + "]"
    step = len(values) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(values[i * step:(i + 1) * step], shape[1:], element)
                           for i in range(shape[0])) + "]"


def literal(value: float, element: str) -> str:
    """One element of a dense attribute of `element` type."""
    if element == "i1":
        return "true" if value else "false"
    if element in ("i32", "i64"):
        return str(int(value))
    value = float(value)
    if not math.isfinite(value):
        return _hex_float(value, element)
    # MLIR float literals need a '.' before the exponent.
    return f"{value:.17e}"


_ELEMENT_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "i1": 1}
_USE = re.compile(r"%[0-9]+\b")


class Raw:
    """An attribute value written as it is (e.g. a #dist.sharding)."""

    def __init__(self, text: str) -> None:
        self.text = text


@dataclass(frozen=True)
class Value:
    """An SSA value of the graph being built."""
    name: str
    shape: Tuple[int, ...]
    element: str

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.element)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)

    def nbytes(self) -> int:
        return self.numel() * _ELEMENT_BYTES.get(self.element, 4)


def _ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


class GraphBuilder:
    """Accumulates the ops of one `func.func` step graph."""

    def __init__(self) -> None:
        self._lines: List[str] = []
        self._next = 0
        self._constants: Dict[Tuple[str, str], Value] = {}
        self.location = 'loc(unknown)'
        self.ops = 0
        self.elements = 0  # summed over every op's results: the work to lower
        self.uses_rng = False
        # Liveness of op results (bytes, defining op, last using op), for the
        # HBM estimate; splat constants become immediates and are left out.
        self._bytes: Dict[str, int] = {}
        self._defined: Dict[str, int] = {}
        self._last_use: Dict[str, int] = {}
        self._splat_names: set = set()

    # -- emission ---------------------------------------------------------

    def _fresh(self) -> str:
        name = f"%{self._next}"
        self._next += 1
        return name

    def emit(self, body: str, results: Sequence[Tuple[Tuple[int, ...], str]]
             ) -> List[Value]:
        """Emits `<results> = <body> <loc>` and returns the result values."""
        values = [Value(self._fresh(), tuple(int(d) for d in shape), element)
                  for shape, element in results]
        lhs = ", ".join(v.name for v in values)
        self._lines.append(f"    {lhs} = {body} {self.location}")
        for used in _USE.findall(body):
            self._last_use[used] = self.ops
        for v in values:
            self._bytes[v.name] = v.nbytes()
            self._defined[v.name] = self.ops
        self.ops += 1
        self.elements += sum(v.numel() for v in values)
        return values

    def emit1(self, body: str, shape: Sequence[int], element: str) -> Value:
        return self.emit(body, [(tuple(shape), element)])[0]

    def function(self, name: str, args: Sequence[Tuple[Value, Dict[str, object]]],
                 results: Sequence[Tuple[Value, Dict[str, object]]]) -> str:
        """The module text: the function's signature, body and return."""
        def attrs(entries: Dict[str, object]) -> str:
            parts = []
            for key, value in entries.items():
                if isinstance(value, Raw):
                    parts.append(f"{key} = {value.text}")
                elif isinstance(value, str):
                    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                    parts.append(f'{key} = "{escaped}"')
                else:
                    parts.append(f"{key} = {int(value)} : i64")
            return "{" + ", ".join(parts) + "}"

        arg_text = ",\n".join(f"    {v.name}: {v.type} {attrs(a)}" for v, a in args)
        result_types = ", ".join(f"{v.type} {attrs(a)}" for v, a in results)
        returned = ", ".join(v.name for v, _ in results)
        types = ", ".join(v.type for v, _ in results)
        lines = [f"func.func @{name}(\n{arg_text}) -> ({result_types}) {{"]
        lines.extend(self._lines)
        lines.append(f"    return {returned} : {types} {self.location}")
        for v, _ in results:
            self._last_use[v.name] = self.ops  # live until the step ends
        lines.append("}")
        return "\n".join(lines) + "\n"

    def peak_live_bytes(self) -> int:
        """The largest total size of op results alive at once (a value lives
        from its op to its last use; results to the end): what the backend
        needs in HBM scratch if it reuses dead values' space, before its own
        temporaries."""
        events: Dict[int, int] = {}
        for name, size in self._bytes.items():
            if name in self._splat_names:
                continue
            start = self._defined[name]
            end = max(self._last_use.get(name, start), start)
            events[start] = events.get(start, 0) + size
            events[end + 1] = events.get(end + 1, 0) - size
        live = peak = 0
        for index in sorted(events):
            live += events[index]
            peak = max(peak, live)
        return peak

    def argument(self, index: int, shape: Sequence[int], element: str) -> Value:
        return Value(f"%arg{index}", tuple(int(d) for d in shape), element)

    # -- constants and shapes ---------------------------------------------

    def splat(self, value: float, shape: Sequence[int], element: str) -> Value:
        text = literal(value, element)
        ty = tensor_type(shape, element)
        key = (text, ty)
        if key not in self._constants:
            self._constants[key] = self.emit1(
                f"trn.constant dense<{text}> : {ty}", shape, element)
            self._splat_names.add(self._constants[key].name)
        return self._constants[key]

    def dense(self, values: Sequence[float], shape: Sequence[int],
              element: str) -> Value:
        if len(set(values)) <= 1 and values:
            return self.splat(values[0], shape, element)
        return self.emit1(f"trn.constant dense<{_nested(values, shape, element)}> : "
                          f"{tensor_type(shape, element)}", shape, element)

    def convert(self, x: Value, element: str) -> Value:
        if x.element == element:
            return x
        return self.emit1(f"trn.convert {x.name} : {x.type} -> "
                          f"{tensor_type(x.shape, element)}", x.shape, element)

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        shape = tuple(int(d) for d in shape)
        if x.shape == shape:
            return x
        if math.prod(shape) != x.numel():
            raise ValueError(f"reshape of {x.shape} to {shape}")
        return self.emit1(f"trn.reshape {x.name} : ({x.type}) -> "
                          f"{tensor_type(shape, x.element)}", shape, x.element)

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        perm = [int(p) for p in perm]
        if perm == list(range(x.rank)):
            return x
        shape = tuple(x.shape[p] for p in perm)
        return self.emit1(f"trn.transpose {x.name}, perm = {_ints(perm)} : "
                          f"({x.type}) -> {tensor_type(shape, x.element)}",
                          shape, x.element)

    def broadcast_in_dim(self, x: Value, shape: Sequence[int],
                         dims: Sequence[int]) -> Value:
        shape = tuple(int(d) for d in shape)
        if x.shape == shape and list(dims) == list(range(x.rank)):
            return x
        return self.emit1(f"trn.broadcast_in_dim {x.name}, dims = {_ints(dims)} : "
                          f"({x.type}) -> {tensor_type(shape, x.element)}",
                          shape, x.element)

    def broadcast_to(self, x: Value, shape: Sequence[int]) -> Value:
        """NumPy-style broadcast (trailing dims aligned)."""
        shape = tuple(int(d) for d in shape)
        if x.shape == shape:
            return x
        offset = len(shape) - x.rank
        if offset < 0:
            # A value with leading unit dims broadcast to fewer dims.
            if all(d == 1 for d in x.shape[:-offset]):
                return self.broadcast_to(self.reshape(x, x.shape[-offset:]), shape)
            raise ValueError(f"cannot broadcast {x.shape} to {shape}")
        return self.broadcast_in_dim(x, shape, list(range(offset, len(shape))))

    def slice(self, x: Value, start: Sequence[int], limit: Sequence[int],
              strides: Sequence[int]) -> Value:
        shape = tuple((int(l) - int(s) + int(st) - 1) // int(st)
                      for s, l, st in zip(start, limit, strides))
        if shape == x.shape:
            return x
        return self.emit1(
            f"trn.slice {x.name}, start = {_ints(start)}, limit = {_ints(limit)}, "
            f"strides = {_ints(strides)} : ({x.type}) -> "
            f"{tensor_type(shape, x.element)}", shape, x.element)

    def pad(self, x: Value, low: Sequence[int], high: Sequence[int],
            value: float = 0.0) -> Value:
        if not any(low) and not any(high):
            return x
        shape = tuple(d + l + h for d, l, h in zip(x.shape, low, high))
        return self.emit1(
            f"trn.pad {x.name}, low = {_ints(low)}, high = {_ints(high)}, "
            f"value = {literal(value, 'f32')} : ({x.type}) -> "
            f"{tensor_type(shape, x.element)}", shape, x.element)

    def concatenate(self, xs: Sequence[Value], dim: int) -> Value:
        if len(xs) == 1:
            return xs[0]
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        names = ", ".join(x.name for x in xs)
        types = ", ".join(x.type for x in xs)
        return self.emit1(f"trn.concatenate {names} dim = {dim} : ({types}) -> "
                          f"{tensor_type(shape, xs[0].element)}", shape,
                          xs[0].element)

    def iota(self, shape: Sequence[int], dim: int, element: str) -> Value:
        return self.emit1(f"trn.iota dim = {dim} : {tensor_type(shape, element)}",
                          shape, element)

    # -- computation ------------------------------------------------------

    def unary(self, op: str, x: Value, attrs: str = "") -> Value:
        return self.emit1(f"trn.{op} {x.name}{attrs} : {x.type}", x.shape,
                          x.element)

    def binary(self, op: str, a: Value, b: Value) -> Value:
        assert a.type == b.type, (op, a, b)
        return self.emit1(f"trn.{op} {a.name}, {b.name} : {a.type}", a.shape,
                          a.element)

    def compare(self, predicate: str, a: Value, b: Value) -> Value:
        assert a.type == b.type, (predicate, a, b)
        return self.emit1(f"trn.compare {predicate}, {a.name}, {b.name} : {a.type}",
                          a.shape, "i1")

    def select(self, pred: Value, on_true: Value, on_false: Value) -> Value:
        return self.emit1(f"trn.select {pred.name}, {on_true.name}, "
                          f"{on_false.name} : {pred.type}, {on_true.type}",
                          on_true.shape, on_true.element)

    def reduce(self, kind: str, x: Value, dims: Sequence[int]) -> Value:
        dims = sorted(int(d) for d in dims)
        if not dims:
            return x
        shape = tuple(d for i, d in enumerate(x.shape) if i not in dims)
        return self.emit1(f"trn.reduce {kind} {x.name}, dims = {_ints(dims)} : "
                          f"({x.type}) -> {tensor_type(shape, x.element)}",
                          shape, x.element)

    def dot_general(self, a: Value, b: Value, batch: Tuple[List[int], List[int]],
                    contract: Tuple[List[int], List[int]], element: str) -> Value:
        shape = [a.shape[d] for d in batch[0]]
        shape += [d for i, d in enumerate(a.shape) if i not in batch[0] + contract[0]]
        shape += [d for i, d in enumerate(b.shape) if i not in batch[1] + contract[1]]
        return self.emit1(
            f"trn.dot_general {a.name}, {b.name}, batching_dims = "
            f"{_ints(batch[0])} x {_ints(batch[1])}, contracting_dims = "
            f"{_ints(contract[0])} x {_ints(contract[1])} : ({a.type}, {b.type}) "
            f"-> {tensor_type(shape, element)}", shape, element)

    def gather(self, table: Value, indices: Value, axis: int,
               batch_dims: int = 0) -> Value:
        shape = (table.shape[:axis] + indices.shape[batch_dims:]
                 + table.shape[axis + 1:])
        bd = f", batch_dims = {batch_dims}" if batch_dims else ""
        return self.emit1(
            f"trn.gather {table.name}[{indices.name}], axis = {axis}{bd} : "
            f"({table.type}, {indices.type}) -> {tensor_type(shape, table.element)}",
            shape, table.element)

    def scatter_add(self, operand: Value, indices: Value, updates: Value,
                    axis: int, batch_dims: int = 0) -> Value:
        bd = f", batch_dims = {batch_dims}" if batch_dims else ""
        return self.emit1(
            f"trn.scatter_add {operand.name}[{indices.name}], {updates.name}, "
            f"axis = {axis}{bd} : ({operand.type}, {indices.type}, {updates.type}) "
            f"-> {operand.type}", operand.shape, operand.element)

    def rng_bernoulli(self, seed: Value, stream: int, p: float,
                      shape: Sequence[int]) -> Value:
        self.uses_rng = True
        return self.emit1(
            f"trn.rng_bernoulli {seed.name}, stream = {stream}, p = "
            f"{literal(p, 'f32')} : {seed.type} -> {tensor_type(shape, 'i1')}",
            shape, "i1")
