"""trn.pipeline_stage: an explicit cut between pipeline stages in a model's
forward pass (docs/partitioning.md, "Pipeline parallelism").

The marker is a PyTorch operator, `torch.ops.trn.pipeline_stage`, so that
tracing records it like any other op; it returns its input (a copy) on every
device and its gradient passes through unchanged. The compiler gives each
parameter the stage of the forward ops that first use it, counting the
markers on their inputs' paths, instead of cutting equal runs of layers.
"""

import torch

from .errors import TrnError

_LIBRARY = torch.library.Library("trn", "DEF")
_LIBRARY.define("pipeline_stage(Tensor x) -> Tensor")


def _identity(x: torch.Tensor) -> torch.Tensor:
    # A new tensor, as the schema (no alias annotation) promises.
    return x.clone()


for _key in ("CPU", "Meta"):
    _LIBRARY.impl("pipeline_stage", _identity, _key)


class _Boundary(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # noqa: D401
        return torch.ops.trn.pipeline_stage(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return grad


def pipeline_stage(x: torch.Tensor) -> torch.Tensor:
    """Marks the start of the next pipeline stage: call it on the activation
    that crosses the cut, e.g. `x = trn.pipeline_stage(x)` between two blocks
    of the model's forward. Returns `x` (the same values; gradients pass
    through). With `compile_step(..., mesh="pp=N,...")` the markers decide the
    stages (N - 1 markers on the forward's path for N stages); without pp they
    are ignored, and on the CPU they cost one copy."""
    if not isinstance(x, torch.Tensor):
        raise TrnError(f"trn.pipeline_stage takes a tensor, got {type(x).__name__}")
    return _Boundary.apply(x)
