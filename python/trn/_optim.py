"""torch.optim's SGD, Adam and AdamW (and gradient clipping) as trn ops.

The update is written straight into the step graph after the traced forward
and backward (tracing it through make_fx cost half the trace time of a large
model for ops whose form is fixed). It follows PyTorch 1.13's single-tensor
implementations formula by formula (same order of operations, so the same
roundings; scalars in f32), with two differences that keep one graph valid
for every step: the learning rate of
each parameter group and the step count are graph inputs (tensors), so a
scheduler or the passing steps never retrace; and SGD's first momentum step
(`buf = grad`) is a select on the step count instead of a Python branch.

Hyper-parameters that are not inputs (betas, eps, weight decay, momentum,
dampening, nesterov, maximize, amsgrad) are part of the plan's signature:
changing one retraces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple, Union

import torch

from ._mlir import GraphBuilder, Value
from .errors import TrnError


@dataclass(frozen=True)
class GroupHyper:
    """The baked-in hyper-parameters of one parameter group."""
    weight_decay: float
    betas: Tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    amsgrad: bool = False
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    maximize: bool = False


@dataclass(frozen=True)
class OptimizerPlan:
    """What the traced update needs to know about the optimizer."""
    kind: str  # "sgd", "adam", "adamw"
    groups: Tuple[GroupHyper, ...]
    param_group: Tuple[int, ...]  # group index of each trainable parameter

    def state_keys(self, group: int) -> List[str]:
        """The per-parameter state tensors, named as torch.optim names them."""
        hyper = self.groups[group]
        if self.kind == "sgd":
            return ["momentum_buffer"] if hyper.momentum != 0 else []
        keys = ["exp_avg", "exp_avg_sq"]
        if hyper.amsgrad:
            keys.append("max_exp_avg_sq")
        return keys


_KINDS = {torch.optim.SGD: "sgd", torch.optim.Adam: "adam",
          torch.optim.AdamW: "adamw"}


def plan_for(optimizer: torch.optim.Optimizer,
             named_params: Sequence[Tuple[str, torch.nn.Parameter]]) -> OptimizerPlan:
    """The plan of `optimizer` over the trainable `named_params` (name and
    parameter, in graph order)."""
    kind = _KINDS.get(type(optimizer))
    if kind is None:
        raise TrnError(f"optimizer {type(optimizer).__name__} is not supported; "
                       "use torch.optim.SGD, Adam or AdamW")
    group_of: Dict[int, int] = {}
    groups: List[GroupHyper] = []
    for index, group in enumerate(optimizer.param_groups):
        for p in group["params"]:
            group_of[id(p)] = index
        if group.get("foreach") is True or group.get("fused"):
            pass  # the same arithmetic either way
        if group.get("capturable"):
            pass
        if kind == "sgd":
            groups.append(GroupHyper(
                weight_decay=float(group.get("weight_decay", 0.0)),
                momentum=float(group.get("momentum", 0.0)),
                dampening=float(group.get("dampening", 0.0)),
                nesterov=bool(group.get("nesterov", False)),
                maximize=bool(group.get("maximize", False))))
        else:
            betas = tuple(float(b) for b in group["betas"])
            groups.append(GroupHyper(
                weight_decay=float(group.get("weight_decay", 0.0)),
                betas=betas, eps=float(group["eps"]),
                amsgrad=bool(group.get("amsgrad", False)),
                maximize=bool(group.get("maximize", False))))
    missing = [name for name, p in named_params if id(p) not in group_of]
    if missing:
        shown = ", ".join(f"'{name}'" for name in missing[:4])
        more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        raise TrnError(f"the optimizer has no parameter group for the trainable "
                       f"parameter{'s' if len(missing) > 1 else ''} {shown}{more} of the "
                       "model; pass model.parameters() to the optimizer, or set "
                       "requires_grad=False on what it should not train")
    param_group = [group_of[id(p)] for _, p in named_params]
    return OptimizerPlan(kind, tuple(groups), tuple(param_group))


class _Emitter:
    """Elementwise helpers over the GraphBuilder: a Python number or a 0-dim
    value is converted to a tensor's element type and broadcast to its shape,
    as PyTorch's type promotion does when the traced update multiplied a
    tensor by a Python float or a 0-dim lr."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.b = builder

    def like(self, x: Union[Value, float], ref: Value) -> Value:
        if isinstance(x, Value):
            return self.b.broadcast_to(self.b.convert(x, ref.element), ref.shape)
        return self.b.splat(x, ref.shape, ref.element)

    def op(self, name: str, x: Union[Value, float], y: Union[Value, float]) -> Value:
        ref = x if isinstance(x, Value) and (not isinstance(y, Value) or x.rank >= y.rank) else y
        return self.b.binary(name, self.like(x, ref), self.like(y, ref))

    def add(self, x, y) -> Value:
        return self.op("add", x, y)

    def sub(self, x, y) -> Value:
        return self.op("sub", x, y)

    def mul(self, x, y) -> Value:
        return self.op("mul", x, y)

    def div(self, x, y) -> Value:
        return self.op("div", x, y)

    def unary(self, name: str, x: Value) -> Value:
        return self.b.unary(name, x)


def emit_clip(builder: GraphBuilder, grads: Sequence[Value], max_norm: float
              ) -> List[Value]:
    """torch.nn.utils.clip_grad_norm_ (2-norm): norms in f32, one global
    coefficient clamped to 1."""
    e = _Emitter(builder)
    total = None
    for g in grads:
        gf = builder.convert(g, "f32")
        norm = e.unary("sqrt", builder.reduce("sum", e.mul(gf, gf), range(gf.rank)))
        square = e.mul(norm, norm)
        total = square if total is None else e.add(total, square)
    total = e.unary("sqrt", total)
    coef = e.div(builder.splat(max_norm, (), "f32"), e.add(total, 1e-6))
    coef = builder.binary("min", coef, builder.splat(1.0, (), "f32"))
    return [e.mul(g, coef) for g in grads]


def emit_update(builder: GraphBuilder, plan: OptimizerPlan, params: Sequence[Value],
                grads: Sequence[Value], states: Sequence[Sequence[Value]],
                lrs: Sequence[Value], step: Value
                ) -> Tuple[List[Value], List[List[Value]]]:
    """New parameters and states; `step` is this update's 1-based count."""
    e = _Emitter(builder)
    new_params: List[Value] = []
    new_states: List[List[Value]] = []
    for param, grad, state, group in zip(params, grads, states, plan.param_group):
        hyper, lr = plan.groups[group], lrs[group]
        grad = builder.convert(grad, param.element)
        if plan.kind == "sgd":
            p, s = _sgd(e, param, grad, state, hyper, lr, step)
        else:
            p, s = _adam(e, param, grad, state, hyper, lr, step,
                         decoupled=plan.kind == "adamw")
        new_params.append(p)
        new_states.append(s)
    return new_params, new_states


def _sgd(e: _Emitter, param, grad, state, h: GroupHyper, lr, step):
    b = e.b
    d_p = e.unary("neg", grad) if h.maximize else grad
    if h.weight_decay != 0:
        d_p = e.add(d_p, e.mul(param, h.weight_decay))
    new_state = []
    if h.momentum != 0:
        (buf,) = state
        updated = e.add(e.mul(buf, h.momentum), e.mul(d_p, 1 - h.dampening))
        first = b.compare("eq", step, b.splat(1.0, (), step.element))
        buf = b.select(b.broadcast_to(first, d_p.shape), d_p, updated)
        new_state.append(buf)
        d_p = e.add(d_p, e.mul(buf, h.momentum)) if h.nesterov else buf
    return e.add(param, e.mul(d_p, e.unary("neg", lr))), new_state


def _adam(e: _Emitter, param, grad, state, h: GroupHyper, lr, step, decoupled: bool):
    b = e.b
    grad = e.unary("neg", grad) if h.maximize else grad
    beta1, beta2 = h.betas
    if decoupled:
        param = e.mul(param, e.sub(1.0, e.mul(lr, h.weight_decay)))
    elif h.weight_decay != 0:
        grad = e.add(grad, e.mul(param, h.weight_decay))
    exp_avg, exp_avg_sq = state[0], state[1]
    exp_avg = e.add(e.mul(exp_avg, beta1), e.mul(grad, 1 - beta1))
    exp_avg_sq = e.add(e.mul(exp_avg_sq, beta2), e.mul(e.mul(grad, grad), 1 - beta2))
    bias_correction1 = e.sub(1.0, e.op("pow", beta1, step))
    bias_correction2 = e.sub(1.0, e.op("pow", beta2, step))
    step_size = e.div(lr, bias_correction1)
    bias_correction2_sqrt = e.unary("sqrt", bias_correction2)
    new_state = [exp_avg, exp_avg_sq]
    second = exp_avg_sq
    if h.amsgrad:
        second = b.binary("max", state[2], exp_avg_sq)
        new_state.append(second)
    denom = e.add(e.div(e.unary("sqrt", second), bias_correction2_sqrt), h.eps)
    update = e.mul(e.div(exp_avg, denom), e.unary("neg", step_size))
    return e.add(param, update), new_state
