"""Tracing one training step (forward, backward, optimizer) with make_fx.

The step is a pure function of flat tensor inputs, in this order:
trainable parameters, frozen parameters and buffers, optimizer states,
gradient accumulators, hyper-parameters (one learning rate per group, the
step count), the batch, and the dropout seed (last, dropped from the graph
when nothing draws random numbers). It returns the loss and the new values of
what it updates. The model runs with its tensors swapped for the traced
inputs (`torch.nn.utils.stateless`), so the user's module is not modified.

Every traced node records the user's source line that made it (the first
frame outside torch and trn), so errors and compiler diagnostics can point
at it.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
import torch.fx
from torch.fx.experimental import proxy_tensor
from torch.nn.utils import stateless

from . import _record
from .errors import TrnError, UnsupportedOpError, eager_error

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TRN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _find_user_frame() -> Optional[Tuple[str, int, str, str]]:
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(_TRN_DIR):
            return None  # backward and optimizer ops: no user line
        if not path.startswith(_TORCH_DIR) and not path.startswith("<"):
            source = linecache.getline(path, frame.f_lineno).strip()
            return path, frame.f_lineno, frame.f_code.co_name, source
        frame = frame.f_back
    return None


class _LocatingTracer(proxy_tensor.PythonKeyTracer):
    def create_proxy(self, kind, target, args, kwargs, name=None,
                     type_expr=None, proxy_factory_fn=None):
        proxy = super().create_proxy(kind, target, args, kwargs, name,
                                     type_expr, proxy_factory_fn)
        if kind == "call_function":
            proxy.node.meta["trn_frame"] = _find_user_frame()
        return proxy


@contextlib.contextmanager
def _locating_tracer():
    saved = proxy_tensor.PythonKeyTracer
    proxy_tensor.PythonKeyTracer = _LocatingTracer
    try:
        yield
    finally:
        proxy_tensor.PythonKeyTracer = saved


@dataclass
class StepLayout:
    """Counts of each input group, in the flat input order."""
    params: int
    others: int  # frozen parameters and buffers
    states: int
    accums: int
    lrs: int
    batch: int


def build_step_function(model: torch.nn.Module, loss_fn: Callable[..., Any],
                        param_names: Sequence[str], other_names: Sequence[str],
                        layout: StepLayout, state_counts: Sequence[int],
                        update: bool, with_grads: bool = True
                        ) -> Callable[..., List[torch.Tensor]]:
    """The pure step function over flat inputs (see the module docstring).

    It returns the loss and the gradients, added to the accumulators when
    there are any (`with_grads=False`: the loss alone, forward only). The optimizer update of an `update` step is not traced:
    `_optim.emit_update` writes it into the graph after the traced part, from
    the inputs the function takes (states, learning rates, step count) and
    the gradients it returns.
    """

    def step(*flat: torch.Tensor) -> List[torch.Tensor]:
        it = iter(flat)
        params = [next(it) for _ in range(layout.params)]
        others = [next(it) for _ in range(layout.others)]
        for count in state_counts:
            for _ in range(count):
                next(it)
        accums = [next(it) for _ in range(layout.accums)]
        for _ in range(layout.lrs + (1 if update else 0)):
            next(it)
        batch = [next(it) for _ in range(layout.batch)]
        if with_grads:
            params = [p.detach().requires_grad_() for p in params]
        tensors = dict(zip(param_names, params))
        tensors.update(zip(other_names, others))
        # tie_weights: a parameter shared by two modules (an LM head tied to
        # the embedding) is one input wherever the model reads it.
        with stateless._reparametrize_module(model, tensors, tie_weights=True), \
                torch.set_grad_enabled(with_grads):
            loss = loss_fn(model, *batch)
        if not with_grads:
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise TrnError("loss_fn must return a scalar tensor (the loss), "
                               f"got {_describe(loss)}")
            return [loss.reshape(())]
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise TrnError("loss_fn must return a scalar tensor (the loss), got "
                           f"{_describe(loss)}")
        if not loss.requires_grad:
            raise TrnError("the loss does not depend on any trainable parameter; "
                           "check that loss_fn calls the model it is given")
        loss = loss.reshape(())
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        grads = [g if g is not None else torch.zeros_like(p)
                 for g, p in zip(grads, params)]
        if accums:
            grads = [a + g for a, g in zip(accums, grads)]
        return [loss.detach()] + [g.detach() for g in grads]

    return step


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return type(value).__name__


def trace(step: Callable[..., List[torch.Tensor]], inputs: Sequence[torch.Tensor],
          fake: bool) -> Any:
    """The recorded graph of `step` (`_record`, on meta tensors), or, when a
    op has no meta kernel, make_fx's; Python-level failures become one-line
    errors that name the user's line (data-dependent control flow, .item())."""
    with _compiling():
        return _trace(step, inputs, fake)


@contextlib.contextmanager
def _compiling():
    """`torch.compiler.is_compiling()` is true while the step is traced, as
    under torch.compile: library code then takes its traceable paths
    (Hugging Face's attention masks skip their data-dependent shortcuts)."""
    saved = torch.compiler.is_compiling
    torch.compiler.is_compiling = lambda: True
    try:
        yield
    finally:
        torch.compiler.is_compiling = saved


def _trace(step: Callable[..., List[torch.Tensor]], inputs: Sequence[torch.Tensor],
           fake: bool) -> Any:
    try:
        return _record.record(step, inputs, _find_user_frame)
    except _record._DataDependent as error:
        frame = error.frame
        where = (f" at {os.path.relpath(frame[0])}:{frame[1]}: `{frame[3]}`"
                 if frame else "")
        if error.func in _record._DATA_DEPENDENT_SHAPES:
            raise UnsupportedOpError(
                f"{error.func} gives a result whose shape depends on the values{where} "
                f"(of {', '.join(error.shapes)}); trn compiles one static graph: keep the "
                "shapes fixed, e.g. route a mixture of experts with a fixed capacity per "
                "expert (every token's top-k weights as a dense [tokens, experts] matrix, "
                "zero where not routed) instead of torch.where(mask) / nonzero / unique"
            ) from None
        raise UnsupportedOpError(
            f"the step depends on tensor values{where} (Python control flow, "
            f".item() or a data-dependent shape: {error.func} of "
            f"{', '.join(error.shapes)}); trn compiles one static graph per "
            "input shape: compute it with tensor ops instead") from None
    except TrnError:
        raise
    except Exception:  # noqa: BLE001 - an op without a meta kernel: make_fx
        pass
    try:
        with _locating_tracer():
            if fake and any(t.device.type == "meta" for t in inputs):
                # A model too large to materialise: trace on meta tensors,
                # whose kernels are PyTorch's C++ meta functions (a third
                # faster than fake tensors); a step that mixes in CPU
                # constants falls back to fake tensors.
                try:
                    return proxy_tensor.make_fx(step)(*[t.to("meta") for t in inputs])
                except (RuntimeError, NotImplementedError):
                    pass
            if fake:
                from torch._subclasses.fake_tensor import FakeTensorMode
                mode = FakeTensorMode(allow_fallback_kernels=False)
                fake_inputs = [_to_fake(mode, t) for t in inputs]
                with mode:
                    return proxy_tensor.make_fx(step)(*fake_inputs)
            return proxy_tensor.make_fx(step)(*inputs)
    except TrnError:
        raise
    except Exception as error:  # noqa: BLE001 - re-raised with the user's line
        message = _tracing_failure(error)
        if type(error) in _EAGER_KINDS and message.startswith("tracing the step failed"):
            # PyTorch's own check in the user's code: eager raises it too.
            raise eager_error(type(error), message) from None
        raise UnsupportedOpError(message) from None


#: Errors PyTorch's checks raise in eager mode as well (not subclasses such
#: as NotImplementedError, which tracing raises for what it cannot do).
_EAGER_KINDS = (RuntimeError, TypeError, ValueError, IndexError)


def _to_fake(mode, tensor: torch.Tensor) -> torch.Tensor:
    from torch._subclasses.fake_tensor import FakeTensor
    if tensor.device.type == "meta":
        # A model built on the meta device: a fake CPU tensor of its shape.
        return FakeTensor(mode, tensor.detach(), torch.device("cpu"))
    return mode.from_tensor(tensor)


def _tracing_failure(error: Exception) -> str:
    """One line: what failed during tracing and where in the user's code."""
    where = ""
    tb = error.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        path = frame.f_code.co_filename
        if (not path.startswith(_TORCH_DIR) and not path.startswith(_TRN_DIR)
                and not path.startswith("<")):
            line = frame.f_lineno
            source = linecache.getline(path, line).strip()
            where = f" at {os.path.relpath(path)}:{line}: `{source}`"
            break
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    kind = type(error).__name__
    lowered = message.lower()
    if ("data-dependent" in lowered or "_local_scalar_dense" in lowered
            or "item()" in lowered or "nonzero" in lowered
            or "dynamic" in lowered or "boolean value of tensor" in lowered):
        return (f"the step depends on tensor values{where} (Python control flow, "
                ".item() or a data-dependent shape); trn compiles one static graph "
                f"per input shape: compute it with tensor ops instead ({kind}: "
                f"{message})")
    return f"tracing the step failed{where}: {kind}: {message}"
