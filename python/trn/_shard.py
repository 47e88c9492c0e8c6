"""trn.shard: the user's sharding of a parameter, which wins over the
compiler's seeds (docs/partitioning.md)."""

from typing import Optional, Sequence, Tuple, Union

import torch

from .errors import TrnError

_AXES = ("dp", "tp")
Spec = Tuple[Tuple[str, ...], ...]
# Kept on the tensor itself (a parameter lives as long as its model; tensors
# compare elementwise, so they cannot key a dict).
_ATTRIBUTE = "_trn_sharding"


def shard(tensor: torch.Tensor,
          spec: Sequence[Union[None, str, Sequence[str]]]) -> torch.Tensor:
    """Shards `tensor` (a parameter or buffer of the model) over the mesh of
    `compile_step(..., mesh=...)`: one entry per dimension, None to keep it
    whole, "tp" or "dp" to split it, or a tuple such as ("dp", "tp") to
    split it over both (the first the most major). The compiler propagates
    it and it wins over Megatron's plan; call it before the step's first
    call. Returns `tensor`."""
    if not isinstance(tensor, torch.Tensor):
        raise TrnError(f"trn.shard takes a tensor, got {type(tensor).__name__}")
    if isinstance(spec, str) or not isinstance(spec, Sequence):
        raise TrnError(f"trn.shard spec must be a sequence with one entry per dimension "
                       f"(None, 'tp', 'dp' or a tuple of them), got {spec!r}")
    if len(spec) != tensor.dim():
        raise TrnError(f"trn.shard spec {tuple(spec)!r} has {len(spec)} entries but the "
                       f"tensor has {tensor.dim()} dimensions")
    normalized = []
    seen = set()
    for entry in spec:
        axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        for axis in axes:
            if axis not in _AXES:
                raise TrnError(f"trn.shard spec {tuple(spec)!r}: unknown mesh axis {axis!r}; "
                               f"use {' or '.join(_AXES)}")
            if axis in seen:
                raise TrnError(f"trn.shard spec {tuple(spec)!r} splits over {axis!r} twice")
            seen.add(axis)
        normalized.append(axes)
    setattr(tensor, _ATTRIBUTE, tuple(normalized))
    return tensor


def sharding_of(tensor: torch.Tensor) -> Optional[Spec]:
    """The spec trn.shard gave `tensor`, if any."""
    return getattr(tensor, _ATTRIBUTE, None)


def attribute(spec: Spec) -> str:
    """The #dist.sharding of `spec` on the frontend's @mesh."""
    dims = ", ".join("{" + ", ".join(f'"{axis}"' for axis in axes) + "}" for axes in spec)
    return f"#dist.sharding<@mesh, [{dims}]>"
