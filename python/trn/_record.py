"""A lean tracer: records the aten ops of a step run on meta tensors.

`make_fx` builds an FX graph through proxies, pytree maps and FX's naming for
every op, about 0.3 ms per op: 10 s for a Llama3-70B step of 26k ops. The
translator needs much less: each op's overload, its arguments (other ops'
results or Python values), the shapes and dtypes of its results and the
user's source line. `record` runs the step under a TorchDispatchMode on meta
tensors (no values are computed; PyTorch's C++ meta kernels give the shapes)
and writes exactly that, autograd's backward included (the dispatch mode sees
the ops the autograd engine runs).

Identity is by tensor object: every result is kept alive for the trace, an
in-place op returns its input object and so rebinds it to the new node (the
mutation is visible to later readers, as in eager PyTorch), and a tensor no
op produced (a constant the step creates from Python data) becomes a
constant node holding its values. What the recorder cannot handle raises, and
the caller falls back to make_fx.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .errors import UnsupportedOpError

aten = torch.ops.aten

# Ops that read a tensor's value into Python: data-dependent control flow.
_VALUE_READS = {aten._local_scalar_dense.default, aten.is_nonzero.default,
                aten.equal.default, aten.nonzero.default}
# Ops whose result's shape depends on the values (MoE routing by
# torch.where(mask), unique): no static graph has them.
_DATA_DEPENDENT_SHAPES = {aten.nonzero.default, aten._unique2.default, aten.unique_dim.default,
                          aten.unique_consecutive.default, aten.masked_select.default}
_VALUE_READS |= _DATA_DEPENDENT_SHAPES


class Node:
    """One recorded value: a placeholder, a constant, an op, an output of a
    multi-result op (`operator.getitem`), or the graph's output."""
    __slots__ = ("op", "target", "args", "kwargs", "meta", "users", "name")

    def __init__(self, op: str, target: Any, args: tuple = (), kwargs: Optional[dict] = None,
                 name: str = "") -> None:
        self.op = op
        self.target = target
        self.args = args
        self.kwargs = kwargs or {}
        self.meta: Dict[str, Any] = {}
        self.users: Dict["Node", None] = {}
        self.name = name

    def __repr__(self) -> str:
        return f"Node({self.op}, {self.target})"


class Graph:
    """The recorded step: `nodes` in execution order."""

    def __init__(self) -> None:
        self.nodes: List[Node] = []


def _map(value: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(value, (list, tuple)):
        mapped = [_map(v, fn) for v in value]
        return mapped if isinstance(value, list) else tuple(mapped)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return fn(value)


# Views an in-place write can go through: the write is scattered back into
# the base (a slice or an element of it, or the same elements reshaped).
_SLICE_VIEWS = {aten.slice.Tensor}
_SELECT_VIEWS = {aten.select.int}
_STRIDED_VIEWS = {aten.as_strided.default}
_RESHAPE_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.unsqueeze.default,
                  aten.squeeze.dim, aten.squeeze.default, aten.squeeze.dims,
                  aten.alias.default, aten._reshape_alias.default}
_VIEWS = _SLICE_VIEWS | _SELECT_VIEWS | _RESHAPE_VIEWS | _STRIDED_VIEWS


@functools.lru_cache(maxsize=None)
def _writes_first_argument(func: Any) -> bool:
    arguments = func._schema.arguments
    return bool(arguments) and arguments[0].alias_info is not None and \
        arguments[0].alias_info.is_write


class _Recorder(TorchDispatchMode):
    def __init__(self, graph: Graph, frame_of: Callable[[], Any]) -> None:
        super().__init__()
        self.graph = graph
        self.frame_of = frame_of
        self.node_of: Dict[int, Node] = {}
        self.alive: List[Any] = []
        # A view's base and how it was taken, by the view's identity.
        self.view_of: Dict[int, Any] = {}

    def bind(self, tensor: torch.Tensor, node: Node) -> None:
        self.node_of[id(tensor)] = node
        self.alive.append(tensor)
        node.meta["val"] = (tensor if tensor.device.type == "meta" else
                            torch.empty(tensor.shape, dtype=tensor.dtype, device="meta"))

    def node_for(self, tensor: torch.Tensor) -> Node:
        node = self.node_of.get(id(tensor))
        if node is None:
            if tensor.device.type == "meta" and tensor.numel() != 0:
                raise UnsupportedOpError("the step uses a meta tensor that is neither "
                                         "an input nor computed in the step")
            node = Node("get_attr", None, name="constant")
            # An empty tensor made on the step's device (Hugging Face's
            # key/value cache starts as one) has no values to lose.
            node.meta["constant"] = (
                torch.empty(tensor.shape, dtype=tensor.dtype) if tensor.device.type == "meta"
                else tensor.detach().clone())
            self.graph.nodes.append(node)
            self.bind(tensor, node)
        return node

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _VALUE_READS:
            shapes = [f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}"
                      for t in _tensors_in(args)]
            raise _DataDependent(func, self.frame_of(), shapes)
        used: List[Node] = []
        node_args, meta_args = self._split(args, used)
        node_kwargs, meta_kwargs = self._split(kwargs, used)
        out = func(*meta_args, **meta_kwargs)
        node = Node("call_function", func, node_args, node_kwargs)
        node.meta["trn_frame"] = self.frame_of()
        self.graph.nodes.append(node)
        for arg in used:
            arg.users[node] = None
        if isinstance(out, torch.Tensor):
            self.bind(out, node)
            if func in _VIEWS:
                self.view_of[id(out)] = (args[0], func, args[1:])
            elif _writes_first_argument(func) and id(args[0]) in self.view_of:
                self.write_back(args[0], node)
        elif isinstance(out, (tuple, list)):
            for i, item in enumerate(out):
                if isinstance(item, torch.Tensor):
                    item_node = Node("call_function", operator.getitem, (node, i))
                    node.users[item_node] = None
                    self.graph.nodes.append(item_node)
                    self.bind(item, item_node)
        return out


    def _split(self, value: Any, used: List[Node]) -> Any:
        """`value` (an op's arguments) with each tensor as its node, and as
        a meta tensor to run the op on; the nodes read go to `used`. One walk
        (this runs for every op of the step)."""
        if isinstance(value, torch.Tensor):
            node = self.node_for(value)
            used.append(node)
            return node, (value if value.device.type == "meta" else value.to("meta"))
        kind = type(value)
        if kind is tuple or kind is list:
            pairs = [self._split(v, used) for v in value]
            nodes, metas = [p[0] for p in pairs], [p[1] for p in pairs]
            return (nodes, metas) if kind is list else (tuple(nodes), tuple(metas))
        if kind is dict:
            pairs = {k: self._split(v, used) for k, v in value.items()}
            return ({k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()})
        return value, value

    def write_back(self, view: torch.Tensor, value: Node) -> None:
        """An in-place write into a view (`shifted[:, 1:] = x`): its base
        becomes the base with the view's elements replaced, and so on up
        the chain of views."""
        base, func, view_args = self.view_of[id(view)]
        base_node = self.node_for(base)
        if func in _SLICE_VIEWS:
            target, scatter_args = aten.slice_scatter.default, (base_node, value, *view_args)
        elif func in _SELECT_VIEWS:
            target, scatter_args = aten.select_scatter.default, (base_node, value, *view_args)
        elif func in _STRIDED_VIEWS:
            target, scatter_args = aten.as_strided_scatter.default, (base_node, value, *view_args)
        elif view.numel() == base.numel():
            target, scatter_args = aten.view.default, (value, list(base.shape))
        else:
            raise UnsupportedOpError(
                f"an in-place write through a {func} view is not supported; write "
                "the new tensor with torch.where or torch.cat instead")
        node = Node("call_function", target, scatter_args)
        node.meta["trn_frame"] = self.frame_of()
        self.graph.nodes.append(node)
        for arg in _nodes_in(scatter_args):
            arg.users[node] = None
        self.node_of[id(base)] = node
        node.meta["val"] = torch.empty(base.shape, dtype=base.dtype, device="meta")
        if id(base) in self.view_of:
            self.write_back(base, node)


class _DataDependent(Exception):
    def __init__(self, func: Any, frame: Any, shapes: List[str]) -> None:
        super().__init__(f"{func} reads a tensor's value")
        self.func = func
        self.frame = frame
        self.shapes = shapes


def _tensors_in(value: Any) -> List[torch.Tensor]:
    found: List[torch.Tensor] = []
    _map(value, lambda x: found.append(x) if isinstance(x, torch.Tensor) else None)
    return found


def _nodes_in(value: Any) -> List[Node]:
    found: List[Node] = []
    _map(value, lambda x: found.append(x) if isinstance(x, Node) else None)
    return found


@contextlib.contextmanager
def _constants_on_cpu():
    """torch.tensor(data, device=x.device) with x a meta tensor would lose
    the data (library code makes its mask value so): it is made on the CPU
    instead and becomes a constant of the graph."""
    original = torch.tensor

    def tensor(data: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "meta":
            kwargs["device"] = "cpu"
        return original(data, *args, **kwargs)

    torch.tensor = tensor
    try:
        yield
    finally:
        torch.tensor = original


def record(step: Callable[..., List[torch.Tensor]], inputs: Sequence[torch.Tensor],
           frame_of: Callable[[], Any]) -> Graph:
    """Runs `step` on meta copies of `inputs` and returns what it did."""
    graph = Graph()
    recorder = _Recorder(graph, frame_of)
    metas = []
    for index, tensor in enumerate(inputs):
        meta = tensor.detach().to("meta")
        node = Node("placeholder", None, name=f"input{index}")
        graph.nodes.append(node)
        recorder.bind(meta, node)
        metas.append(meta)
    with recorder, _constants_on_cpu():
        outputs = step(*metas)
    output = Node("output", None, ([recorder.node_for(t) for t in outputs],))
    graph.nodes.append(output)
    return graph
