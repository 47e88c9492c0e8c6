"""The gradient-exact parity harness: one SGD step, every parameter compared.

A loss that agrees within 1e-4, or a run under Adam, proves little: Adam
divides each gradient by its own running magnitude, so a gradient that is
halved, doubled or summed twice leaves the first updates nearly unchanged.
Here the step is plain SGD with learning rate 1 and no momentum, so every
parameter after the step is `p - grad` and each one is compared with
PyTorch's, on the same global batch, at the given mesh.

The tolerance of a parameter is derived from its dtype and the length of the
reductions that made its gradient (the batch's elements), relative to the
largest gradient element of that parameter: a float32 sum of K terms is
exact to about eps * sqrt(K) of its terms' scale. A gradient that is wrong
by a factor, or misses a replica's contribution, is off by a sizeable
fraction of its scale and fails by orders of magnitude.

Elements whose gradient is zero in exact arithmetic (a key projection's bias
under softmax: adding a constant to every score of a row changes nothing)
are rounding noise in both programs; `exact_zero` names them, and they are
checked against the scale of the whole step's gradients instead of their
own, which is noise.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

import trn

#: Safety factor over eps * sqrt(K): summation order and fused kernels.
_SLACK = 64.0


@dataclass
class ParamResult:
    name: str
    error: float  # largest |p_trn - p_torch|
    scale: float  # largest |grad| of this parameter (PyTorch's)
    tolerance: float
    exact_zero: bool = False

    @property
    def ok(self) -> bool:
        return self.error <= self.tolerance


@dataclass
class StepReport:
    mesh: Optional[str]
    loss: float
    reference_loss: float
    params: List[ParamResult] = field(default_factory=list)

    @property
    def failures(self) -> List[ParamResult]:
        return [p for p in self.params if not p.ok]

    def describe(self) -> str:
        lines = [f"mesh={self.mesh} loss {self.loss:.7g} (PyTorch {self.reference_loss:.7g})"]
        for p in self.params:
            mark = "ok " if p.ok else "BAD"
            kind = " (zero in exact arithmetic)" if p.exact_zero else ""
            lines.append(f"  {mark} {p.name}: error {p.error:.2e}, gradient scale "
                         f"{p.scale:.2e}, tolerance {p.tolerance:.2e}{kind}")
        return "\n".join(lines)


def _eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


def sgd_step_parity(make_model: Callable[[], torch.nn.Module],
                    loss_fn: Callable[..., torch.Tensor],
                    batch: Sequence[torch.Tensor], *, mesh: Optional[str] = None,
                    microbatches: Optional[int] = None, grad_accum: int = 1,
                    flags: str = "", cache_dir: Optional[str] = None,
                    exact_zero: Dict[str, Callable[[torch.Tensor], torch.Tensor]] = None,
                    pipeline_schedule: str = "1f1b") -> StepReport:
    """One SGD step (lr 1) through trn at `mesh` and in PyTorch on the same
    global `batch`; a report on every parameter.

    With `grad_accum = N` the batch is cut into N equal micro-batches along
    its first dimension and the loss of each is divided by N (the examples'
    convention), in both programs. `exact_zero` maps a parameter name to a
    function returning a boolean mask of its elements whose gradient is zero
    in exact arithmetic.
    """
    exact_zero = exact_zero or {}
    torch.manual_seed(0)
    model = make_model()
    reference = copy.deepcopy(model)

    def scaled_loss(m, *b):
        return loss_fn(m, *b) / grad_accum

    chunks = list(zip(*[t.chunk(grad_accum) for t in batch])) if grad_accum > 1 else [tuple(batch)]
    ref_opt = torch.optim.SGD(reference.parameters(), lr=1.0)
    ref_opt.zero_grad()
    ref_loss = 0.0
    for chunk in chunks:
        loss = scaled_loss(reference, *chunk)
        loss.backward()
        ref_loss = float(loss.detach())
    grads = {k: (v.grad.detach().clone() if v.grad is not None else torch.zeros_like(v))
             for k, v in reference.named_parameters()}
    ref_opt.step()

    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    kwargs = dict(cache_dir=cache_dir, mesh=mesh, flags=flags, grad_accum=grad_accum)
    if microbatches is not None:
        kwargs["microbatches"] = microbatches
    if mesh and "pp=" in mesh:
        kwargs["pipeline_schedule"] = pipeline_schedule
    step = trn.compile_step(model, opt, scaled_loss, **kwargs)
    loss = 0.0
    for chunk in chunks:
        loss = float(step(*chunk))
    step.sync()

    # The reductions that make a gradient run over the batch's elements.
    elements = max(t.numel() for t in batch)
    after = dict(model.named_parameters())
    global_scale = max((float(g.abs().max()) for g in grads.values() if g.numel()), default=0.0)
    report = StepReport(mesh, loss, ref_loss)
    for name, ref_param in reference.named_parameters():
        grad = grads[name]
        rtol = _SLACK * _eps(ref_param.dtype) * math.sqrt(max(elements, 1))
        diff = (after[name].detach() - ref_param.detach()).abs()
        mask = exact_zero.get(name)
        if mask is not None:
            zero = mask(grad)
            report.params.append(ParamResult(
                f"{name}[exact zero]", float(diff[zero].max()) if zero.any() else 0.0,
                global_scale, rtol * global_scale, exact_zero=True))
            diff = diff[~zero]
            grad = grad[~zero]
        scale = float(grad.abs().max()) if grad.numel() else 0.0
        # p - grad is rounded to the parameter's precision once more; a
        # parameter the loss does not reach keeps its value exactly.
        rounding = (_eps(ref_param.dtype) * float(ref_param.detach().abs().max())
                    if ref_param.numel() else 0.0)
        tolerance = rtol * scale + rounding if scale > 0 else 0.0
        report.params.append(ParamResult(
            name, float(diff.max()) if diff.numel() else 0.0, scale, tolerance))
    return report


def assert_sgd_step_parity(*args, **kwargs) -> StepReport:
    """`sgd_step_parity`, failing with the whole report when any parameter
    (or the loss) differs."""
    report = sgd_step_parity(*args, **kwargs)
    loss_ok = math.isclose(report.loss, report.reference_loss, rel_tol=1e-5, abs_tol=1e-6)
    assert loss_ok and not report.failures, report.describe()
    return report
