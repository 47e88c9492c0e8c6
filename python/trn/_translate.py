"""FX graph (from `make_fx`) to a `trn` step graph in MLIR text.

Walks the graph node by node (placeholders become function arguments, each
aten call goes to its handler in `_aten.py`, the output node becomes the
return) and keeps the user's source line of every node as the op's location,
in the manner of torch-mlir's FX importer.
"""

from __future__ import annotations

import math
import operator
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx

from . import _aten, _record
from ._mlir import _ELEMENT_BYTES, GraphBuilder, Raw, Value, element_type
from .errors import UnsupportedOpError


@dataclass
class ArgSpec:
    """How one placeholder becomes a function argument; `sharding` is its
    #dist.sharding attribute (trn.shard), if any."""
    name: str
    role: str
    sharding: Optional[str] = None


@dataclass
class ResultSpec:
    """How one output becomes a function result; `aliases` is the index of
    the argument it updates in place."""
    name: str
    role: str
    aliases: Optional[int] = None


@dataclass
class Graph:
    """A translated step graph."""
    text: str
    ops: int
    uses_rng: bool
    elements: int
    arguments: List[Tuple[ArgSpec, Tuple[int, ...], str]] = field(default_factory=list)
    # Bytes of the arguments and of the largest set of op results alive at
    # once: an estimate of the HBM the compiled step lays out.
    argument_bytes: int = 0
    peak_live_bytes: int = 0
    results: List[Tuple[ResultSpec, Tuple[int, ...], str]] = field(default_factory=list)


def user_frame(node: torch.fx.Node) -> Optional[Tuple[str, int, str, str]]:
    """(file, line, function, source) of the user's code that made `node`."""
    return node.meta.get("trn_frame")


#: Where an op the backward or the optimizer made comes from.
_NO_USER_LINE = "in the backward or optimizer part of the step (no user line)"


def describe_location(node: torch.fx.Node) -> str:
    frame = user_frame(node)
    if frame is None:
        return _NO_USER_LINE
    path, line, function, source = frame
    where = f"at {os.path.relpath(path) if not path.startswith('..') else path}:{line}"
    if function:
        where += f" in {function}()"
    if source:
        where += f": `{source}`"
    return where


def _mlir_location(node: torch.fx.Node) -> str:
    target = _target_name(node)
    frame = user_frame(node)
    escaped = target.replace('"', "")
    if frame is None:
        return f'loc("{escaped}")'
    path = frame[0].replace("\\", "/").replace('"', "")
    return f'loc("{escaped}"("{path}":{frame[1]}:0))'


def _target_name(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return f"aten.{target.__name__}" if "." in target.__name__ else str(target)
    return getattr(target, "__name__", str(target))


def _describe_value(x: Any) -> str:
    if isinstance(x, Value):
        return f"{x.element}[{', '.join(map(str, x.shape))}]"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_describe_value(v) for v in x) + "]"
    return repr(x)


def _functional_packet(target: Any) -> Any:
    name = getattr(getattr(target, "overloadpacket", None), "__name__", "")
    if name.endswith("_") and not name.endswith("__"):
        return getattr(torch.ops.aten, name[:-1], None)
    return None


def _packet(target: Any) -> Any:
    return getattr(target, "overloadpacket", target)


Epilogue = Callable[[GraphBuilder, Dict[str, Value], List[Value]], List[Value]]


class _Problems:
    """The ops a step uses that trn cannot translate, all of them: each
    failed node gets a stand-in value (zeros of its recorded shape) so that
    the rest of the graph is still translated and its problems found, and
    the error names every one, not one per rerun."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        self.messages: Dict[str, int] = {}

    def note(self, node: torch.fx.Node, env: Dict[torch.fx.Node, Any],
             ctx: "_aten.Context", message: str) -> None:
        self.messages[message] = self.messages.get(message, 0) + 1
        stand_in = self._stand_in(node.meta.get("val"))
        if stand_in is None:
            self.raise_any()  # nothing to go on with
        env[node] = stand_in

    def _stand_in(self, val: Any) -> Any:
        if isinstance(val, torch.Tensor):
            element = element_type(val.dtype) or "f32"
            return self.builder.splat(0, tuple(val.shape), element)
        if isinstance(val, (tuple, list)):
            parts = [self._stand_in(v) for v in val]
            return None if any(p is None for p in parts) else type(val)(parts)
        return None

    def raise_any(self) -> None:
        if not self.messages:
            return
        messages = self.messages
        # The backward's problems follow from the forward's (an op's
        # gradient): named only when there are no others.
        forward = {m: n for m, n in messages.items() if _NO_USER_LINE not in m}
        derived = len(messages) - len(forward)
        if forward:
            messages = forward
        described = [message if count == 1 else f"{message} ({count} times)"
                     for message, count in messages.items()]
        more = (f" (and {derived} in the backward part that follow from them)"
                if forward and derived else "")
        if len(described) == 1:
            raise UnsupportedOpError(described[0] + more)
        raise UnsupportedOpError(f"{len(described)} problems{more}: " + "; ".join(
            f"({i}) {text}" for i, text in enumerate(described, 1)))


class InputUpdateError(UnsupportedOpError):
    """The step writes one of its inputs in place (a module's buffer): the
    message, and the input's name for a caller that knows the module."""

    def __init__(self, message: str, input_name: str) -> None:
        super().__init__(message)
        self.input_name = input_name


def translate(gm: torch.fx.GraphModule, args: Sequence[ArgSpec],
              results: Sequence[ResultSpec], name: str = "step",
              seed_index: Optional[int] = None,
              epilogue: Optional[Epilogue] = None) -> Graph:
    """Translates `gm` into a graph whose arguments follow `args` (one per
    placeholder) and whose results follow `results`. The results are the FX
    graph's outputs, or what `epilogue(builder, arguments by name, outputs)`
    makes of them (the optimizer update). The argument at `seed_index`, the
    last one, is dropped when no op uses it."""
    builder = GraphBuilder()
    nodes = gm.graph.nodes if isinstance(gm, torch.fx.GraphModule) else gm.nodes
    placeholders = [n for n in nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        raise AssertionError(f"{len(placeholders)} placeholders, {len(args)} specs")
    if seed_index is not None and seed_index != len(args) - 1:
        raise AssertionError("the seed must be the last argument")

    env: Dict[torch.fx.Node, Any] = {}
    arguments: List[Tuple[ArgSpec, Tuple[int, ...], str]] = []
    seed: Optional[Value] = None
    for index, (node, spec) in enumerate(zip(placeholders, args)):
        meta = node.meta.get("tensor_meta") or node.meta["val"]
        element = element_type(meta.dtype)
        if element is None:
            raise UnsupportedOpError(
                f"input '{spec.name}' has dtype {meta.dtype}, which trn does not "
                "support (float32, bfloat16, float16, int64, int32, bool); "
                "convert it before the step")
        value = builder.argument(index, meta.shape, element)
        env[node] = value
        arguments.append((spec, value.shape, element))
        if index == seed_index:
            seed = value

    ctx = _aten.Context(builder, seed)
    problems = _Problems(builder)
    outputs: List[Any] = []
    for node in nodes:
        if node.op == "placeholder":
            continue
        builder.location = _mlir_location(node)
        if node.op == "output":
            outputs = list(_map_nodes(node.args[0], env))
            continue
        if node.op == "get_attr":
            env[node] = _constant(builder, gm, node)
            continue
        if node.op != "call_function":
            raise UnsupportedOpError(f"FX node kind '{node.op}' is not supported")
        node_args = _map_nodes(node.args, env)
        node_kwargs = _map_nodes(node.kwargs, env)
        if node.target is operator.getitem:
            env[node] = node_args[0][node_args[1]]
            continue
        handler = _aten.HANDLERS.get(_packet(node.target))
        inplace_of = None
        if handler is None:
            # An in-place op (autograd formulas use a few: fill_, sub_, mul_):
            # the functional op, then the mutated input names the new value.
            functional = _functional_packet(node.target)
            if functional is not None and isinstance(node.args[0], (torch.fx.Node,
                                                                    _record.Node)):
                handler = _aten.HANDLERS.get(functional)
                inplace_of = node.args[0]
                if inplace_of.op == "placeholder":
                    # A buffer updated by the forward (running statistics):
                    # the new value would be lost, so refuse it.
                    raise InputUpdateError(
                        f"{_target_name(node)} {describe_location(node)} updates "
                        f"the step input '{args[placeholders.index(inplace_of)].name}' "
                        "in place (e.g. a buffer of running statistics); trn does "
                        "not carry such updates yet: compute the value without "
                        "assigning it to the module",
                        args[placeholders.index(inplace_of)].name)
        ctx.node = node
        if handler is None:
            problems.note(node, env, ctx, (
                f"unsupported PyTorch op {_target_name(node)} (inputs "
                f"{_describe_value(list(node_args))}) {describe_location(node)}; "
                "docs/frontend.md lists the supported ops"))
            continue
        try:
            env[node] = handler(ctx, *node_args, **node_kwargs)
            if inplace_of is not None:
                env[inplace_of] = env[node]
        except _aten.TranslationError as error:
            problems.note(node, env, ctx, (
                f"{_target_name(node)} (inputs {_describe_value(list(node_args))}) "
                f"{describe_location(node)}: {error}"))
        except (ValueError, KeyError, IndexError, TypeError, AssertionError) as error:
            problems.raise_any()  # a stand-in's consequence is not a trn bug
            raise UnsupportedOpError(
                f"internal error translating {_target_name(node)} (inputs "
                f"{_describe_value(list(node_args))}) {describe_location(node)}: "
                f"{type(error).__name__}: {error}; please report it") from None

    problems.raise_any()
    if epilogue is not None:
        builder.location = 'loc("optimizer")'
        by_name = {spec.name: builder.argument(i, shape, element)
                   for i, (spec, shape, element) in enumerate(arguments)}
        outputs = epilogue(builder, by_name, outputs)
    if len(outputs) != len(results):
        raise AssertionError(f"{len(outputs)} outputs, {len(results)} specs")
    kept_args = arguments
    if seed_index is not None and not builder.uses_rng:
        kept_args = arguments[:-1]
    arg_attrs = []
    for index, (spec, shape, element) in enumerate(kept_args):
        entries: Dict[str, object] = {"trn.name": spec.name, "trn.role": spec.role}
        if spec.sharding is not None:
            entries["dist.sharding"] = Raw(spec.sharding)
        arg_attrs.append((builder.argument(index, shape, element), entries))
    result_attrs = []
    result_list = []
    for value, spec in zip(outputs, results):
        if not isinstance(value, Value):
            raise AssertionError(f"output '{spec.name}' is {value!r}")
        if spec.aliases is not None:
            # An updated input keeps its type (e.g. a bf16 parameter).
            target = arguments[spec.aliases]
            value = builder.broadcast_to(builder.convert(value, target[2]), target[1])
        attrs: Dict[str, object] = {"trn.name": spec.name, "trn.role": spec.role}
        if spec.aliases is not None:
            attrs["trn.aliases"] = spec.aliases
        result_attrs.append((value, attrs))
        result_list.append((spec, value.shape, value.element))
    text = builder.function(name, arg_attrs, result_attrs)
    argument_bytes = sum(math.prod(shape) * _ELEMENT_BYTES.get(element, 4)
                         for _, shape, element in kept_args)
    return Graph(text=text, ops=builder.ops, uses_rng=builder.uses_rng,
                 elements=builder.elements,
                 arguments=kept_args, results=result_list,
                 argument_bytes=argument_bytes,
                 peak_live_bytes=builder.peak_live_bytes())


def _map_nodes(value: Any, env: Dict[Any, Any]) -> Any:
    """`value` with every graph node (FX or recorded) replaced by its value."""
    if isinstance(value, (list, tuple)):
        mapped = [_map_nodes(v, env) for v in value]
        return mapped if isinstance(value, list) else tuple(mapped)
    if isinstance(value, dict):
        return {k: _map_nodes(v, env) for k, v in value.items()}
    if isinstance(value, (torch.fx.Node, _record.Node)):
        return env[value]
    return value


def _constant(builder: GraphBuilder, gm: Any, node: Any) -> Value:
    tensor = (node.meta["constant"] if "constant" in node.meta
              else getattr(gm, node.target))
    if not isinstance(tensor, torch.Tensor):
        raise UnsupportedOpError(f"constant '{node.target}' is a "
                                 f"{type(tensor).__name__}, not a tensor")
    element = element_type(tensor.dtype)
    if element is None:
        if tensor.dtype == torch.float64:
            tensor, element = tensor.float(), "f32"
        else:
            raise UnsupportedOpError(
                f"a constant tensor of dtype {tensor.dtype} captured "
                f"{describe_location(node)} is not supported")
    if tensor.numel() > 1 << 20:
        raise UnsupportedOpError(
            f"a constant tensor of {tensor.numel()} elements captured "
            f"{describe_location(node)}; register it as a buffer instead")
    if tensor.device.type == "meta" or _is_fake(tensor):
        raise UnsupportedOpError(
            f"a tensor created outside the step {describe_location(node)} has no "
            "values under fake tracing; register it as a buffer of the model")
    values = tensor.detach().cpu().reshape(-1)
    if tensor.dtype == torch.bfloat16 or tensor.dtype == torch.float16:
        values = values.float()
    return builder.dense(values.tolist(), tuple(tensor.shape), element)


def _is_fake(tensor: torch.Tensor) -> bool:
    return type(tensor).__name__ == "FakeTensor"
