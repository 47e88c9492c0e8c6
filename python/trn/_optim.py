"""Functional forms of torch.optim's SGD, Adam and AdamW, traced into the step.

The update follows PyTorch 1.13's single-tensor implementations formula by
formula (same order of operations, so the same roundings in f32), with two
differences that keep one graph valid for every step: the learning rate of
each parameter group and the step count are graph inputs (tensors), so a
scheduler or the passing steps never retrace; and SGD's first momentum step
(`buf = grad`) is a select on the step count instead of a Python branch.

Hyper-parameters that are not inputs (betas, eps, weight decay, momentum,
dampening, nesterov, maximize, amsgrad) are part of the plan's signature:
changing one retraces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import torch

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
             params: Sequence[torch.nn.Parameter]) -> OptimizerPlan:
    """The plan of `optimizer` over the trainable `params` (in graph order)."""
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
    param_group = []
    for p in params:
        if id(p) not in group_of:
            raise TrnError("a trainable parameter of the model is in no parameter "
                           "group of the optimizer; pass model.parameters() to it "
                           "or set requires_grad=False on the parameter")
        param_group.append(group_of[id(p)])
    return OptimizerPlan(kind, tuple(groups), tuple(param_group))


def apply_update(plan: OptimizerPlan, params: Sequence[torch.Tensor],
                 grads: Sequence[torch.Tensor],
                 states: Sequence[Sequence[torch.Tensor]],
                 lrs: Sequence[torch.Tensor], step: torch.Tensor
                 ) -> Tuple[List[torch.Tensor], List[List[torch.Tensor]]]:
    """New parameters and states; `step` is this update's 1-based count."""
    new_params: List[torch.Tensor] = []
    new_states: List[List[torch.Tensor]] = []
    for param, grad, state, group in zip(params, grads, states, plan.param_group):
        hyper, lr = plan.groups[group], lrs[group]
        if plan.kind == "sgd":
            p, s = _sgd(param, grad, state, hyper, lr, step)
        else:
            p, s = _adam(param, grad, state, hyper, lr, step,
                         decoupled=plan.kind == "adamw")
        new_params.append(p)
        new_states.append(s)
    return new_params, new_states


def _sgd(param, grad, state, h: GroupHyper, lr, step):
    d_p = -grad if h.maximize else grad
    if h.weight_decay != 0:
        d_p = d_p.add(param, alpha=h.weight_decay)
    new_state = []
    if h.momentum != 0:
        (buf,) = state
        updated = buf * h.momentum + d_p * (1 - h.dampening)
        buf = torch.where(step == 1, d_p, updated)
        new_state.append(buf)
        d_p = d_p.add(buf, alpha=h.momentum) if h.nesterov else buf
    return param + d_p * (-lr), new_state


def _adam(param, grad, state, h: GroupHyper, lr, step, decoupled: bool):
    grad = -grad if h.maximize else grad
    beta1, beta2 = h.betas
    if decoupled:
        param = param * (1 - lr * h.weight_decay)
    elif h.weight_decay != 0:
        grad = grad.add(param, alpha=h.weight_decay)
    exp_avg, exp_avg_sq = state[0], state[1]
    exp_avg = exp_avg * beta1 + grad * (1 - beta1)
    exp_avg_sq = exp_avg_sq * beta2 + grad * grad * (1 - beta2)
    bias_correction1 = 1 - torch.pow(beta1, step)
    bias_correction2 = 1 - torch.pow(beta2, step)
    step_size = lr / bias_correction1
    bias_correction2_sqrt = torch.sqrt(bias_correction2)
    new_state = [exp_avg, exp_avg_sq]
    second = exp_avg_sq
    if h.amsgrad:
        second = torch.maximum(state[2], exp_avg_sq)
        new_state.append(second)
    denom = torch.sqrt(second) / bias_correction2_sqrt + h.eps
    return param + (exp_avg / denom) * (-step_size), new_state


def clip_grad_norm(grads: List[torch.Tensor], max_norm: float) -> List[torch.Tensor]:
    """torch.nn.utils.clip_grad_norm_ (2-norm) as a pure function."""
    norms = [torch.sqrt(torch.sum(g.float() * g.float())) for g in grads]
    total = torch.sqrt(sum(n * n for n in norms))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [g * coef.to(g.dtype) for g in grads]
