"""trn: train PyTorch models through the trn compiler on a simulated NeuronCore.

    import trn
    step = trn.compile_step(model, optimizer, loss_fn)
    for batch in data:
        loss = step(*batch)      # forward, backward and optimizer update

`loss_fn(model, *batch)` returns the scalar loss. The first call (and any call
with new input shapes or dtypes) traces forward, backward and the optimizer
update into one `trn` graph, which is compiled through the compile cache and
run on the simulated NeuronCore. See docs/frontend.md.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch

from ._shard import shard
from ._stage import pipeline_stage
from ._step import CompiledStep, StepLoss
from .errors import (CompileError, DeviceError, ExtractionStop, TrnError,
                     UnsupportedOpError)

__all__ = ["compile_step", "CompiledStep", "StepLoss", "shard", "pipeline_stage", "TrnError",
           "UnsupportedOpError",
           "CompileError", "DeviceError", "ExtractionStop", "__version__"]


def _version() -> str:
    try:
        from . import _trn
        return _trn.compiler_version()
    except ImportError:
        return "unknown"


__version__ = _version()


def compile_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 loss_fn: Callable[..., torch.Tensor], flags: str = "",
                 cache_dir: Optional[str] = None, grad_accum: int = 1,
                 max_grad_norm: Optional[float] = None, sync: str = "step",
                 retry_failed: bool = False, mesh: Optional[str] = None,
                 microbatches: Optional[int] = None,
                 pipeline_schedule: str = "1f1b") -> CompiledStep:
    """Wraps one training step of `model` for trn.

    Args:
        model: the module to train; its parameters and buffers are the step's
            state. Build it on the "meta" device to trace and compile a model
            too large to materialise (extraction mode or `step.compile`).
        optimizer: torch.optim.SGD, Adam or AdamW over the model's parameters.
            The learning rate of each group is read at every call (schedulers
            work without retracing); other hyper-parameters are compiled in.
        loss_fn: `loss_fn(model, *batch) -> scalar loss tensor`.
        flags: compile flags as for trn-cc, e.g. "--auto-cast matmul"
            (TRN_CC_FLAGS in the environment are added before them).
        cache_dir: the compile cache (default: TRN_CACHE_DIR, else
            /var/tmp/trn-compile-cache).
        grad_accum: micro-steps per optimizer update; gradients are summed
            over them (divide the loss by it in loss_fn to average).
        max_grad_norm: clip the global 2-norm of the gradients to this value
            before the update, as torch.nn.utils.clip_grad_norm_.
        sync: "step" copies parameters and optimizer state back into the
            module and optimizer after every call; "manual" only when
            `step.sync()` is called (faster for long runs).
        retry_failed: recompile graphs whose compile failure is cached.
        mesh: data and tensor parallelism, e.g. "dp=2,tp=2": the step is
            traced once, unpartitioned, and the compiler partitions it
            (Megatron's plan found in the graph); every rank runs on its own
            simulated NeuronCore in this process. The batch passed to the
            step is the global batch: each data-parallel replica takes its
            share of the first dimension and the gradients are averaged, as
            DDP does. Parameters and optimizer state are read back whole
            (`model.state_dict()` is unsharded). With pp, e.g.
            "dp=2,pp=2,tp=2", the compiler also cuts the step into pipeline
            stages at layer boundaries (parameters named with a layer index,
            such as "blocks.3.", cut into equal runs), or where the model
            calls `trn.pipeline_stage(x)`; one compiled artifact per stage.
            docs/partitioning.md.
        microbatches: the microbatches each data-parallel replica's share of
            the batch is cut into (default: pp); the gradients are averaged
            over them, as gradient accumulation does. Without pp the step
            is compiled at one microbatch and accumulates inside one call
            (one launch, unlike grad_accum's one call per micro-step).
        pipeline_schedule: with pp > 1, "1f1b" (default) or "gpipe".

    Returns:
        A `CompiledStep`; calling it with a batch runs one (micro-)step and
        returns the loss as a 0-dim tensor.
    """
    return CompiledStep(model, optimizer, loss_fn, flags=flags,
                        cache_dir=cache_dir, grad_accum=grad_accum,
                        max_grad_norm=max_grad_norm, sync=sync,
                        retry_failed=retry_failed, mesh=mesh,
                        microbatches=microbatches,
                        pipeline_schedule=pipeline_schedule)
