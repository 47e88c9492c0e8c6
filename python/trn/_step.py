"""`trn.compile_step`: one wrap that trains a PyTorch model on trn.

A `CompiledStep` owns, per distinct input signature, one executable: the
traced and translated graph, its compiled artifact (from the compile cache)
and the simulated NeuronCore it is loaded on. Parameters, optimizer states
and gradient accumulators live on the device between calls; each tensor has a
"home" (the executable whose HBM holds its latest value, or the host) and is
copied only when another executable needs it or PyTorch changed it.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from . import _extract, _optim, _shard, _trace, _translate
from ._mlir import element_type, torch_dtype
from .errors import CompileError, DeviceError, TrnError, UnsupportedOpError

log = logging.getLogger("trn")
if not log.handlers:
    # The retrace line and compiler warnings are meant to be seen: print them
    # to stderr as "trn: ..." unless the application configures the "trn"
    # logger itself (logging.getLogger("trn").setLevel(logging.WARNING)
    # silences the retrace lines).
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("trn: %(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False

# Size-preserving integer views for dtypes NumPy lacks.
_NUMPY_VIEW = {torch.bfloat16: torch.int16, torch.float16: torch.int16}


def _native():
    try:
        from . import _trn
    except ImportError as error:
        raise TrnError(f"trn's native extension is missing ({error}); build it "
                       "with utils/setup.sh") from None
    return _trn


def to_bytes(tensor: torch.Tensor) -> np.ndarray:
    """A contiguous NumPy view of `tensor`'s bytes, as the device stores them."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype in _NUMPY_VIEW:
        t = t.view(_NUMPY_VIEW[t.dtype])
    return t.numpy()


def from_bytes(data: bytes, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    view = _NUMPY_VIEW.get(dtype, dtype)
    array = np.frombuffer(bytearray(data), dtype=torch.empty((), dtype=view).numpy().dtype)
    t = torch.from_numpy(array.copy()).reshape(tuple(shape))
    return t.view(dtype) if view is not dtype else t


def _nbytes(shape: Sequence[int], dtype: torch.dtype) -> int:
    return math.prod(shape) * torch.empty((), dtype=dtype).element_size()


@dataclass
class _Executable:
    """One graph: its text, key and, unless extracting, the loaded program."""
    graph: _translate.Graph
    key: str
    signature: Tuple
    program: Any = None
    cache_status: str = ""
    compile_seconds: float = 0.0
    trace_seconds: float = 0.0
    uses_rng: bool = False
    #: The compile flags of this graph: the step's, and --dp-whole-batch
    #: when it is traced at the whole batch (one example per replica).
    flags: List[str] = field(default_factory=list)


class StepLoss(torch.Tensor):
    """The loss a compiled step returns: a plain tensor (its ops give plain
    tensors), whose backward() says that the step already ran the backward
    pass and the update, rather than PyTorch's "does not require grad"."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __repr__(self, *args: Any, **kwargs: Any) -> str:
        return repr(self.as_subclass(torch.Tensor))

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise TrnError("loss.backward() after a trn step: the step already ran the "
                       "backward pass and the optimizer update; remove "
                       "loss.backward() and optimizer.step() from the training loop")


class CompiledStep:
    """The callable `trn.compile_step` returns; see its docstring."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 loss_fn: Callable[..., torch.Tensor], flags: str = "",
                 cache_dir: Optional[str] = None, grad_accum: int = 1,
                 max_grad_norm: Optional[float] = None, sync: str = "step",
                 retry_failed: bool = False, mesh: Optional[str] = None,
                 microbatches: Optional[int] = None,
                 pipeline_schedule: str = "1f1b") -> None:
        if not isinstance(model, torch.nn.Module):
            raise TrnError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TrnError("optimizer must be a torch.optim.Optimizer, got "
                           f"{type(optimizer).__name__}")
        if not callable(loss_fn):
            raise TrnError("loss_fn must be callable as loss_fn(model, *batch)")
        if not isinstance(grad_accum, int) or grad_accum < 1:
            raise TrnError(f"grad_accum must be a positive integer, got {grad_accum!r}")
        if max_grad_norm is not None and not (
                isinstance(max_grad_norm, (int, float)) and max_grad_norm >= 0
                and math.isfinite(max_grad_norm)):
            raise TrnError(f"max_grad_norm must be a positive number (0 or None: no "
                           f"clipping), got {max_grad_norm!r}")
        if sync not in ("step", "manual"):
            raise TrnError(f"sync must be 'step' or 'manual', got {sync!r}")
        if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
            raise TrnError(f"cache_dir must be a path or None, got {cache_dir!r}")
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.mesh, self.mesh_spec = _parse_mesh(mesh)
        self.flags = self._parse_flags(flags)
        if self.mesh_spec:
            self.flags += ["--mesh", self.mesh_spec]
        # Pipeline parallelism: the batch of each replica is cut into
        # microbatches, each the traced step's batch; without pp they
        # accumulate their gradients in the step (a pipeline of one stage).
        self.stages = self.mesh.get("pp", 1)
        if microbatches is not None and (not isinstance(microbatches, int)
                                         or isinstance(microbatches, bool)
                                         or microbatches < 1):
            raise TrnError(f"microbatches must be a positive integer, got {microbatches!r}")
        if pipeline_schedule not in ("1f1b", "gpipe"):
            raise TrnError(f"pipeline_schedule must be '1f1b' or 'gpipe', got "
                           f"{pipeline_schedule!r}")
        self.microbatches = microbatches or self.stages
        self.pipelined = self.stages > 1 or self.microbatches > 1
        if self.pipelined:
            self.flags += ["--microbatches", str(self.microbatches),
                           "--pipeline-schedule", pipeline_schedule]
        self.cache_dir = os.fspath(cache_dir) if cache_dir is not None else ""
        self.grad_accum = grad_accum
        self.max_grad_norm = float(max_grad_norm) if max_grad_norm else None
        self.sync_mode = sync
        self.retry_failed = retry_failed
        self.extracting = _extract.enabled()
        self.batch_names = self._batch_names(loss_fn)

        self._executables: Dict[Tuple, _Executable] = {}
        self._last_signature: Optional[Tuple] = None
        self._micro = 0
        self._home: Dict[str, Optional[_Executable]] = {}
        self._host_version: Dict[str, Tuple[int, int]] = {}
        self._accums: Dict[str, torch.Tensor] = {}
        # Device-homed tensors whose host copy is older (synced lazily).
        self._stale_on_host: set = set()
        self._updates = self._initial_update_count()
        self._optimizer_state_id = id(optimizer.state)
        self.last_stats: Dict[str, Any] = {}
        self.last_executable: Optional[_Executable] = None

    # -- configuration ----------------------------------------------------

    def _parse_flags(self, flags: str) -> List[str]:
        if not isinstance(flags, str):
            raise TrnError(f"flags must be a string such as '--auto-cast matmul', "
                           f"got {type(flags).__name__}")
        tokens = shlex.split(os.environ.get("TRN_CC_FLAGS", "")) + shlex.split(flags)
        if not _native_available():
            return tokens
        try:
            _native().normalize_flags(tokens)
        except ValueError as error:
            source = (f" (TRN_CC_FLAGS={os.environ['TRN_CC_FLAGS']!r} then flags="
                      f"{flags!r})" if os.environ.get("TRN_CC_FLAGS") else "")
            raise TrnError(f"bad compile flags {' '.join(tokens)!r}{source}: "
                           f"{error}") from None
        return tokens

    @staticmethod
    def _batch_names(loss_fn: Callable) -> List[str]:
        try:
            params = list(inspect.signature(loss_fn).parameters.values())
        except (TypeError, ValueError):
            return []
        names = [p.name for p in params[1:]
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return names

    def _initial_update_count(self) -> int:
        """Optimizer steps already taken (a resumed optimizer has state)."""
        self._optimizer_state_id = id(self.optimizer.state)
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                state = self.optimizer.state.get(p, {})
                if "step" in state:
                    step = state["step"]
                    return int(step.item() if isinstance(step, torch.Tensor) else step)
                if "momentum_buffer" in state and state["momentum_buffer"] is not None:
                    return 1
        return 0

    def _refresh_update_count(self) -> None:
        if id(self.optimizer.state) != self._optimizer_state_id:
            # optimizer.load_state_dict() replaced the state: its step counts.
            self._updates = self._initial_update_count()

    # -- the tensors a step reads and writes ------------------------------

    def _trainable(self) -> List[Tuple[str, torch.nn.Parameter]]:
        return [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]

    def _others(self) -> List[Tuple[str, torch.Tensor]]:
        frozen = [(n, p) for n, p in self.model.named_parameters() if not p.requires_grad]
        return frozen + list(self.model.named_buffers())

    def _state_tensor(self, param: torch.Tensor, key: str) -> torch.Tensor:
        state = self.optimizer.state.get(param)
        if state and state.get(key) is not None:
            return state[key]
        return torch.zeros_like(param, memory_format=torch.contiguous_format)

    def _lrs(self) -> List[float]:
        return [float(g["lr"]) for g in self.optimizer.param_groups]

    # -- signatures and retracing ----------------------------------------

    def _signature(self, batch: Sequence[torch.Tensor], kind: str) -> Tuple:
        params = tuple((n, tuple(p.shape), p.dtype) for n, p in self._trainable())
        others = tuple((n, tuple(t.shape), t.dtype) for n, t in self._others())
        plan = _optim.plan_for(self.optimizer, self._trainable())
        inputs = tuple((tuple(t.shape), t.dtype) for t in batch)
        return (("inputs", inputs), ("kind", kind),
                ("training", self.model.training), ("parameters", params),
                ("buffers", others), ("optimizer", plan),
                ("accumulate", self.grad_accum > 1))

    def _why_retrace(self, old: Tuple, new: Tuple) -> str:
        for (name, a), (_, b) in zip(old, new):
            if a == b:
                continue
            if name == "inputs":
                for i, (x, y) in enumerate(zip(a, b)):
                    if x != y:
                        label = (self.batch_names[i] if i < len(self.batch_names)
                                 else f"#{i}")
                        return (f"input '{label}' changed from {_shape_str(*x)} to "
                                f"{_shape_str(*y)}")
                return f"the number of inputs changed from {len(a)} to {len(b)}"
            if name == "kind":
                return _KIND_REASONS[b]
            if name == "training":
                return "the model switched to " + ("train()" if b else "eval()")
            if name == "optimizer":
                return "an optimizer hyper-parameter other than lr changed"
            return f"the model's {name} changed"
        return "the signature changed"

    # -- building ---------------------------------------------------------

    def _build(self, signature: Tuple, batch: Sequence[torch.Tensor],
               kind: str, whole_batch: bool = False) -> _Executable:
        start = time.perf_counter()
        update = kind == "update"
        trainable = self._trainable()
        if not trainable:
            raise TrnError("the model has no trainable parameters")
        others = self._others()
        plan = _optim.plan_for(self.optimizer, trainable)
        param_names = [n for n, _ in trainable]
        state_keys = [plan.state_keys(g) for g in plan.param_group]
        accumulate = self.grad_accum > 1 and kind != "eval"
        layout = _trace.StepLayout(
            params=len(trainable), others=len(others),
            states=sum(len(k) for k in state_keys) if update else 0,
            accums=len(trainable) if accumulate else 0,
            lrs=len(plan.groups) if update else 0, batch=len(batch))
        state_counts = [len(k) for k in state_keys] if update else [0] * len(trainable)
        step_fn = _trace.build_step_function(
            self.model, self.loss_fn, param_names, [n for n, _ in others], layout,
            state_counts, update, with_grads=kind != "eval")

        args: List[_translate.ArgSpec] = []
        inputs: List[torch.Tensor] = []
        # The user's shardings (trn.shard) win over the compiler's seeds;
        # without a mesh there is nothing to shard.
        def sharding(t: torch.Tensor) -> Optional[str]:
            spec = _shard.sharding_of(t) if self.mesh_spec else None
            return _shard.attribute(spec) if spec is not None else None
        for name, p in trainable:
            args.append(_translate.ArgSpec(name, "parameter", sharding(p)))
            inputs.append(p.detach())
        for name, t in others:
            args.append(_translate.ArgSpec(name, "constant", sharding(t)))
            inputs.append(t.detach())
        state_names: List[str] = []
        if update:
            for (name, p), keys in zip(trainable, state_keys):
                for key in keys:
                    state_names.append(f"{key}.{name}")
                    args.append(_translate.ArgSpec(f"{key}.{name}", "optimizer_state"))
                    inputs.append(self._state_tensor(p, key).detach())
        accum_names = [f"grad_accum.{n}" for n, _ in trainable] if accumulate else []
        for name, (_, p) in zip(accum_names, trainable):
            args.append(_translate.ArgSpec(name, "gradient"))
            inputs.append(torch.zeros_like(p.detach()))
        if update:
            for i, lr in enumerate(self._lrs()):
                args.append(_translate.ArgSpec(_lr_name(i, len(plan.groups)),
                                               "hyperparameter"))
                inputs.append(torch.tensor(lr, dtype=torch.float32))
            args.append(_translate.ArgSpec("step", "hyperparameter"))
            inputs.append(torch.tensor(float(self._updates + 1)))
        # One replica's step, unless ZeRO-1 (whose state shards depend on
        # the degree) partitions the whole batch's graph. So is a step whose
        # replicas hold one example each (per microbatch, in a pipeline): in
        # one replica's graph the batch dimension is 1 and views merge it
        # into others, where the compiler can no longer tell one replica's
        # examples from another's (PyTorch's nn.MultiheadAttention, batch
        # second inside, got wrong gradients). Then a microbatch holds one
        # example of every replica and dp splits it.
        dp = self.mesh.get("dp", 1)
        flags = list(self.flags)
        one_example_each = dp * self.microbatches
        if dp > 1 and "--zero1" not in flags and (whole_batch or any(
                t.dim() and t.shape[0] == one_example_each for t in batch)):
            flags.append("--dp-whole-batch")
        if "--zero1" in flags or "--dp-whole-batch" in flags:
            dp = 1
        # A pipelined step is traced at one microbatch of one replica.
        parts = dp * self.microbatches
        for i, t in enumerate(batch):
            label = self.batch_names[i] if i < len(self.batch_names) else f"input{i}"
            role = "label" if ("label" in label or "target" in label) else "data"
            args.append(_translate.ArgSpec(label, role))
            if parts > 1:
                # The graph is one data-parallel replica's step: traced at
                # each replica's share of the batch (docs/partitioning.md).
                if t.dim() == 0 or t.shape[0] % parts:
                    rows = t.shape[0] if t.dim() else "no"
                    what = (f"dp={dp} x {self.microbatches} microbatches"
                            if self.pipelined else f"dp={dp}")
                    raise TrnError(f"step input '{label}' has {rows} rows, which "
                                   f"{what} does not divide; give every "
                                   "data-parallel replica (and microbatch) the same "
                                   "share of the batch")
                t = t[: t.shape[0] // parts]
            inputs.append(t.detach())
        args.append(_translate.ArgSpec("seed", "seed"))
        inputs.append(torch.tensor(0, dtype=torch.int64))

        results = [_translate.ResultSpec("loss", "loss")]
        index_of = {spec.name: i for i, spec in enumerate(args)}
        if update:
            for name in param_names:
                results.append(_translate.ResultSpec(name, "parameter", index_of[name]))
            for name in state_names:
                results.append(_translate.ResultSpec(name, "optimizer_state",
                                                     index_of[name]))
        for name in accum_names:
            results.append(_translate.ResultSpec(name, "gradient", index_of[name]))

        fake = any(t.device.type == "meta" for t in inputs) or self.extracting
        gm = _trace.trace(step_fn, inputs, fake=fake)
        epilogue = None
        if update:
            lr_names = [_lr_name(i, len(plan.groups)) for i in range(len(plan.groups))]
            epilogue = self._update_epilogue(plan, param_names, state_keys, lr_names,
                                             accum_names)
        try:
            graph = _translate.translate(gm, args, results, name=_GRAPH_NAMES[kind],
                                         seed_index=len(args) - 1, epilogue=epilogue)
        except _translate.InputUpdateError as error:
            raise self._buffer_update_error(error) from None
        if any(spec.sharding for spec in args):
            # The mesh the shardings name, as trn-cc --mesh declares it: a
            # data-parallel program is one replica's step at a nominal dp = 2.
            dp = self.mesh.get("dp", 1)
            if dp > 1 and "--zero1" not in flags and "--dp-whole-batch" not in flags:
                dp = 2
            graph.text = (f"dist.mesh @mesh <dp = {dp}, tp = {self.mesh.get('tp', 1)}>\n"
                          + graph.text)
        trace_seconds = time.perf_counter() - start
        key = self._key(graph.text, flags)
        return _Executable(graph=graph, key=key, signature=signature,
                           trace_seconds=trace_seconds, uses_rng=graph.uses_rng,
                           flags=flags)

    def _update_epilogue(self, plan: _optim.OptimizerPlan, param_names: List[str],
                         state_keys: List[List[str]], lr_names: List[str],
                         accum_names: List[str]) -> _translate.Epilogue:
        """Writes clipping and the optimizer update after the traced
        forward and backward, whose outputs are the loss and the gradients."""
        max_grad_norm = self.max_grad_norm

        def epilogue(builder, args, outputs):
            loss, grads = outputs[0], list(outputs[1:])
            if max_grad_norm:
                grads = _optim.emit_clip(builder, grads, max_grad_norm)
            params = [args[n] for n in param_names]
            states = [[args[f"{k}.{n}"] for k in keys]
                      for n, keys in zip(param_names, state_keys)]
            new_params, new_states = _optim.emit_update(
                builder, plan, params, grads, states, [args[n] for n in lr_names],
                args["step"])
            results = [loss] + new_params
            for s in new_states:
                results.extend(s)
            for name in accum_names:
                a = args[name]
                results.append(builder.splat(0.0, a.shape, a.element))
            return results

        return epilogue

    def _key(self, text: str, flags: List[str]) -> str:
        try:
            return _native().graph_key(text, flags)
        except ValueError as error:
            raise CompileError(f"the translated graph is invalid (a trn bug, "
                               f"please report it): {error}") from None

    def _compile(self, exe: _Executable) -> None:
        result = _native().compile(exe.graph.text, exe.flags, cache_dir=self.cache_dir,
                                   use_cache=True, retry_failed=self.retry_failed,
                                   source_name="<trn step>")
        for warning in result["warnings"]:
            log.warning("%s", warning)
        if not result["ok"]:
            raise CompileError(f"compiling the step graph {result['key'] or ''} "
                               f"failed: {result['error']}")
        exe.cache_status = result["cache_status"]
        exe.compile_seconds = result["compile_seconds"]
        # One line per graph, as Neuron's runs print: cached, or compiled and
        # why the cache did not have it when it has the graph otherwise.
        if exe.cache_status == "hit":
            log.info("step graph %s: found in the compile cache", result["key"])
        elif exe.cache_status == "miss":
            log.info("step graph %s: compiled in %.1f s (cache miss: %s)", result["key"],
                     exe.compile_seconds,
                     result["miss_reason"] or "no entry has this graph and these flags")
        artifacts = [result["artifact"]]
        # A pipelined step: one artifact (and cache entry) per stage.
        for stage in range(1, self.stages):
            more = _native().compile(exe.graph.text, exe.flags + ["--stage", str(stage)],
                                     cache_dir=self.cache_dir, use_cache=True,
                                     retry_failed=self.retry_failed,
                                     source_name="<trn step>")
            if not more["ok"]:
                raise CompileError(f"compiling stage {stage} of the step graph "
                                   f"{more['key'] or ''} failed: {more['error']}")
            exe.compile_seconds += more["compile_seconds"]
            artifacts.append(more["artifact"])
        try:
            if self.pipelined:
                # Microbatches alone run on one core: a mesh of one rank.
                exe.program = _native().PipelineProgram(artifacts, self.mesh_spec or "dp=1")
            elif self.mesh_spec:
                exe.program = _native().MeshProgram(result["artifact"], self.mesh_spec)
            else:
                exe.program = _native().Program(result["artifact"])
        except _native().DeviceError as error:
            raise DeviceError(f"the compiled step does not load on the simulated "
                              f"NeuronCore: {error}") from None

    # -- running ----------------------------------------------------------

    def _executable(self, batch: Sequence[torch.Tensor], kind: str
                    ) -> Tuple[_Executable, bool]:
        signature = self._signature(batch, kind)
        exe = self._executables.get(signature)
        new = exe is None
        if new:
            if self._last_signature is not None:
                log.info("tracing a new step graph: %s",
                         self._why_retrace(self._last_signature, signature))
            try:
                exe = self._build(signature, batch, kind)
            except UnsupportedOpError as error:
                exe = self._build_whole_batch(signature, batch, kind, error)
            self._executables[signature] = exe
        self._last_signature = signature
        return exe, new

    def _build_whole_batch(self, signature: Tuple, batch: Sequence[torch.Tensor], kind: str,
                           error: UnsupportedOpError) -> _Executable:
        """A step whose tracing at one replica's share of the batch failed in
        the model's own code (a view to a batch size from its config) is
        traced at the batch the user passed, and dp splits it in the compiler
        (--dp-whole-batch: the program is then per dp degree)."""
        dp = self.mesh.get("dp", 1)
        if dp == 1 or "--zero1" in self.flags or not str(error).startswith(
                "tracing the step failed"):
            raise error
        if self.pipelined:
            raise UnsupportedOpError(
                f"{error}; with pp or microbatches the step is traced at one microbatch "
                "of one data-parallel replica, so model code that fixes the batch size (a "
                "view to a configured batch) cannot be cut into microbatches yet: take "
                "the size from the input's shape") from None
        try:
            exe = self._build(signature, batch, kind, whole_batch=True)
        except UnsupportedOpError:
            raise error from None
        log.info("traced the step at the whole batch (dp splits it in the compiler): "
                 "at one replica's share, %s", error)
        return exe

    def _buffer_update_error(self, error: "_translate.InputUpdateError") -> TrnError:
        """A module's buffer written in place by the step, said in the module's
        terms: BatchNorm's running statistics in train mode are the usual
        case."""
        module_path, _, buffer = error.input_name.rpartition(".")
        try:
            module = self.model.get_submodule(module_path)
        except AttributeError:
            return error
        # As the user would write it: model.layers[0].norm.
        where = "model" + "".join(f"[{part}]" if part.isdigit() else f".{part}"
                                  for part in module_path.split(".") if part)
        kind = type(module).__name__
        if isinstance(module, torch.nn.modules.batchnorm._NormBase):
            return UnsupportedOpError(
                f"{where} ({kind}) updates its running statistics ('{buffer}') in "
                "train mode, and trn does not carry buffer updates yet: call "
                f"{where}.eval() to normalize with the running statistics, or "
                f"build it with track_running_stats=False to use the batch's")
        return UnsupportedOpError(
            f"{where} ({kind}) writes its buffer '{buffer}' during the step, and "
            "trn does not carry buffer updates yet: compute the value without "
            f"assigning it to the module ({error})")

    def _check_loss_fn_arity(self, count: int) -> None:
        """loss_fn must take the model and the step's `count` inputs."""
        try:
            signature = inspect.signature(self.loss_fn)
        except (TypeError, ValueError):
            return  # no Python signature to check (a builtin)
        try:
            signature.bind(self.model, *([None] * count))
        except TypeError:
            name = getattr(self.loss_fn, "__name__", "loss_fn")
            names = [p.name for p in signature.parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if names and names[0] != "model" and len(names) == count:
                names = ["model"] + names
            else:
                names = ["model"] + [f"input{i}" for i in range(count)]
            raise TrnError(
                f"{name}{signature} cannot take the model and the step's {count} "
                f"input{'s' if count != 1 else ''}: trn calls loss_fn(model, *batch); "
                f"define it as `def {name}({', '.join(names)}):`") from None

    def __call__(self, *batch: torch.Tensor) -> torch.Tensor:
        """One training micro-step; returns its loss (see compile_step)."""
        self._check_loss_fn_arity(len(batch))
        self._refresh_update_count()
        update = (self._micro + 1) % self.grad_accum == 0
        loss = self._run(batch, "update" if update else "micro")
        if not self.extracting:
            self._micro = (self._micro + 1) % self.grad_accum
            if update:
                self._updates += 1
                # What optimizer.step() would count: LR schedulers read it
                # (and warn about being stepped before the optimizer if not).
                if hasattr(self.optimizer, "_step_count"):
                    self.optimizer._step_count += 1
                self.optimizer._opt_called = True  # what a scheduler checks
            if self.sync_mode == "step":
                self.sync()
        return torch.Tensor._make_subclass(StepLoss, loss)

    def evaluate(self, *batch: torch.Tensor) -> torch.Tensor:
        """The loss of `batch` with the current parameters, forward only, on
        the device: nothing is updated. The model's train()/eval() mode is
        the caller's (call model.eval() first, as in PyTorch)."""
        return self._run(batch, "eval")

    def _run(self, batch: Sequence[torch.Tensor], kind: str) -> torch.Tensor:
        for i, t in enumerate(batch):
            if not isinstance(t, torch.Tensor):
                label = self.batch_names[i] if i < len(self.batch_names) else f"#{i}"
                raise TrnError(f"step input '{label}' is a {type(t).__name__}; pass "
                               "tensors (wrap Python numbers with torch.tensor)")
            if element_type(t.dtype) is None:
                raise TrnError(f"step input #{i} has dtype {t.dtype}, which trn does "
                               "not support (float32, bfloat16, float16, int64, "
                               "int32, bool)")
        if self.extracting and _extract.analyzing():
            # `trn-parallel-compile --command analyze`: an unsupported op is
            # recorded (with its line) and the script goes on, so that one
            # run lists every graph's problem.
            try:
                exe, new = self._executable(batch, kind)
            except UnsupportedOpError as error:
                return self._record_unsupported(batch, kind, str(error))
        else:
            exe, new = self._executable(batch, kind)
        self.last_executable = exe
        if self.extracting:
            return self._extract(exe, new, kind)
        if exe.program is None:
            if any(p.device.type == "meta" for p in self.model.parameters()):
                raise TrnError("the model's parameters are on the meta device, so "
                               "its steps can be traced and compiled but not run; "
                               "extract with TRN_EXTRACT_GRAPHS_ONLY=1 "
                               "(trn-parallel-compile) or call step.compile(*batch)")
            self._compile(exe)
        # An evaluation reads the parameters without taking them over, so the
        # training graphs keep them in place.
        self._upload(exe, batch, claim=kind != "eval")
        try:
            stats = exe.program.run()
        except _native().DeviceError as error:
            raise DeviceError(f"the step failed on the simulated NeuronCore: {error}") from None
        self.last_stats = dict(stats, cache_status=exe.cache_status, key=exe.key)
        for spec, _, _ in exe.graph.results:
            if spec.aliases is not None:
                self._home[spec.name] = exe
                self._stale_on_host.add(spec.name)
        shape, dtype = (), exe.graph.results[0][2]
        return from_bytes(exe.program.read("loss", _nbytes(shape, torch_dtype(dtype))),
                          shape, torch_dtype(dtype))

    def _host_tensors(self) -> Dict[str, torch.Tensor]:
        """Name -> the PyTorch tensor that holds each state on the host."""
        tensors: Dict[str, torch.Tensor] = {}
        trainable = self._trainable()
        for name, p in trainable:
            tensors[name] = p.detach()
        for name, t in self._others():
            tensors[name] = t.detach()
        plan = _optim.plan_for(self.optimizer, trainable)
        for (name, p), group in zip(trainable, plan.param_group):
            for key in plan.state_keys(group):
                state = self.optimizer.state.get(p)
                if state is not None and state.get(key) is not None:
                    tensors[f"{key}.{name}"] = state[key]
        tensors.update(self._accums)
        return tensors

    def _upload(self, exe: _Executable, batch: Sequence[torch.Tensor],
                claim: bool = True) -> None:
        host = self._host_tensors()
        trainable = dict(self._trainable())
        program = exe.program
        batch_index = 0
        lrs = self._lrs()
        for spec, shape, element in exe.graph.arguments:
            name, role = spec.name, spec.role
            if role in ("data", "label"):
                program.write(name, to_bytes(batch[batch_index]))
                batch_index += 1
                continue
            if role == "hyperparameter":
                value = (float(self._updates + 1) if name == "step"
                         else lrs[_lr_index(name)])
                program.write(name, to_bytes(torch.tensor(value, dtype=torch.float32)))
                continue
            if role == "seed":
                seed = torch.randint(0, 2 ** 62, (), dtype=torch.int64)
                program.write(name, to_bytes(seed))
                continue
            tensor = host.get(name)
            if tensor is not None and self._host_version.get(name) != _version_of(tensor):
                self._home[name] = None  # PyTorch changed it: the host is newest
            home = self._home.get(name)
            if home is exe:
                continue
            if home is not None:
                dtype = torch_dtype(element)
                data = home.program.read(name, _nbytes(shape, dtype))
                program.write(name, np.frombuffer(data, dtype=np.uint8))
            else:
                if tensor is None:
                    tensor = self._fresh_state(name, trainable)
                program.write(name, to_bytes(tensor))
                self._host_version[name] = _version_of(tensor)
            if claim:
                self._home[name] = exe

    def _fresh_state(self, name: str, trainable: Dict[str, torch.Tensor]) -> torch.Tensor:
        """Zeros for a state PyTorch has not created yet (moments, buffers,
        gradient accumulators)."""
        param = trainable[name.split(".", 1)[1]]
        return torch.zeros_like(param.detach(), memory_format=torch.contiguous_format)

    def graphs(self) -> List[Dict[str, Any]]:
        """The step graphs this step has traced so far: key, kind, and how
        each was obtained ("hit", "miss": compiled in this process, or ""
        while extracting)."""
        return [{"key": exe.key, "kind": dict(exe.signature)["kind"],
                 "cache_status": exe.cache_status,
                 "compile_seconds": exe.compile_seconds}
                for exe in self._executables.values()]

    def sync(self) -> None:
        """Copies parameters, optimizer states and accumulators from the
        device into the model and optimizer (what `model.state_dict()` and
        `optimizer.state_dict()` then return). Idempotent and cheap when
        nothing changed; with sync="step" (the default) every call does it."""
        self._refresh_update_count()
        trainable = self._trainable()
        if not trainable:
            return
        plan = _optim.plan_for(self.optimizer, trainable)
        with torch.no_grad():
            for (name, p), group in zip(trainable, plan.param_group):
                self._pull(name, p.detach())
                keys = plan.state_keys(group)
                if any(self._home.get(f"{k}.{name}") is not None for k in keys):
                    state = self.optimizer.state[p]
                    copied = False
                    for key in keys:
                        if state.get(key) is None:
                            state[key] = torch.zeros_like(p.detach())
                            self._host_version[f"{key}.{name}"] = _version_of(state[key])
                        copied |= self._pull(f"{key}.{name}", state[key])
                    if copied and plan.kind != "sgd":
                        state["step"] = torch.tensor(float(self._updates))
                if f"grad_accum.{name}" in self._home:
                    if f"grad_accum.{name}" not in self._accums:
                        accum = torch.zeros_like(p.detach())
                        self._accums[f"grad_accum.{name}"] = accum
                        self._host_version[f"grad_accum.{name}"] = _version_of(accum)
                    self._pull(f"grad_accum.{name}", self._accums[f"grad_accum.{name}"])

    def _pull(self, name: str, target: torch.Tensor) -> bool:
        """Copies `name` into `target` if the device holds a newer value."""
        home = self._home.get(name)
        if home is None or name not in self._stale_on_host:
            return False
        if self._host_version.get(name) != _version_of(target):
            # PyTorch wrote it since (load_state_dict): the host copy wins.
            self._home[name] = None
            self._stale_on_host.discard(name)
            return False
        data = home.program.read(name, _nbytes(target.shape, target.dtype))
        target.copy_(from_bytes(data, target.shape, target.dtype))
        self._host_version[name] = _version_of(target)
        self._stale_on_host.discard(name)
        return True

    def _next_kind(self) -> str:
        return "update" if (self._micro + 1) % self.grad_accum == 0 else "micro"

    # -- compile without running ------------------------------------------

    def lower(self, *batch: torch.Tensor) -> str:
        """The trn graph (MLIR text) of the step these inputs would run."""
        exe, _ = self._executable(batch, self._next_kind())
        return exe.graph.text

    def compile(self, *batch: torch.Tensor) -> Dict[str, Any]:
        """Traces and compiles (through the cache) without running; works for
        models on the meta device. Returns key, cache status and timings."""
        exe, _ = self._executable(batch, self._next_kind())
        seconds, statuses = 0.0, []
        # A pipelined step compiles every stage (one cache entry each).
        for stage in range(self.stages):
            flags = exe.flags + (["--stage", str(stage)] if self.stages > 1 else [])
            result = _native().compile(exe.graph.text, flags, cache_dir=self.cache_dir,
                                       retry_failed=self.retry_failed,
                                       source_name="<trn step>")
            if not result["ok"]:
                raise CompileError(f"compiling the step graph failed: {result['error']}")
            seconds += result["compile_seconds"]
            statuses.append(result["cache_status"])
        status = statuses[0] if len(set(statuses)) == 1 else ",".join(statuses)
        return {"key": exe.key, "cache_status": status, "compile_seconds": seconds,
                "trace_seconds": exe.trace_seconds, "ops": exe.graph.ops}

    # -- extraction -------------------------------------------------------

    def _record_unsupported(self, batch: Sequence[torch.Tensor], kind: str,
                            message: str) -> torch.Tensor:
        extractor = _extract.extractor()
        record = {
            "unsupported": message,
            "script": os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "",
            "call_site": _call_site(),
            "graph_name": _GRAPH_NAMES[kind],
            "flags": self.flags,
            "pid": os.getpid(),
        }
        first = extractor.record_problem(message, record)
        update = kind == "update"
        if kind != "eval":
            self._micro = (self._micro + 1) % self.grad_accum
            if update:
                self._updates += 1
            extractor.finish_step(first, update)
        return torch.zeros((), dtype=torch.float32)

    def _rank_hbm_estimate(self, exe: _Executable) -> int:
        """HBM one NeuronCore needs for the graph: with a mesh, one rank's
        share (the compiler partitions it, milliseconds); else the whole."""
        if not self.mesh_spec or not _native_available():
            return exe.graph.argument_bytes + exe.graph.peak_live_bytes
        try:
            return int(_native().mesh_footprint(exe.graph.text, exe.flags)["total"])
        except ValueError as error:
            raise TrnError(f"mesh {self.mesh_spec!r} does not partition the step: "
                           f"{error}") from None

    def _extract(self, exe: _Executable, new: bool, kind: str) -> torch.Tensor:
        extractor = _extract.extractor()
        site = _call_site()
        try:
            hbm = self._rank_hbm_estimate(exe)
        except TrnError as error:
            if _extract.analyzing():
                # `--command analyze` lists it with the other problems.
                return self._record_unsupported((), kind, str(error))
            raise
        record = {
            "flags": exe.flags,
            "script": os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "",
            "call_site": site,
            "graph_name": _GRAPH_NAMES[kind],
            "inputs": [{"name": spec.name, "role": spec.role, "shape": list(shape),
                        "dtype": element}
                       for spec, shape, element in exe.graph.arguments
                       if spec.role in ("data", "label")],
            "ops": exe.graph.ops,
            "elements": exe.graph.elements,
            "trace_seconds": round(exe.trace_seconds, 4),
            "estimated_compile_seconds": _estimate_compile_seconds(exe.graph),
            "estimated_compile_memory_bytes": _estimate_compile_memory(exe.graph),
            "hbm_bytes_estimate": hbm,
            "pid": os.getpid(),
            "rank": int(os.environ.get("SLURM_PROCID",
                                       os.environ.get("OMPI_COMM_WORLD_RANK", "0"))),
        }
        first = extractor.record(exe.key, exe.graph.text, record)
        loss = torch.zeros((), dtype=torch_dtype(exe.graph.results[0][2]))
        if kind == "eval":
            return loss  # recorded; evaluation does not count as a step
        update = kind == "update"
        self._micro = (self._micro + 1) % self.grad_accum
        if update:
            self._updates += 1
            if hasattr(self.optimizer, "_step_count"):
                self.optimizer._step_count += 1  # as in a real run
        extractor.finish_step(first, update)
        return loss


_GRAPH_NAMES = {"update": "train_step", "micro": "train_micro_step",
                "eval": "eval_step"}
_KIND_REASONS = {
    "update": "this call ends a gradient-accumulation window (optimizer update)",
    "micro": "a micro-step that only accumulates gradients",
    "eval": "an evaluation step (forward only)",
}


def _parse_mesh(mesh: Optional[str]) -> Tuple[Dict[str, int], str]:
    """"dp=2,tp=2" -> ({"dp": 2, "tp": 2}, "dp=2,tp=2"); None -> ({}, "")."""
    if mesh is None:
        return {}, ""
    if not isinstance(mesh, str):
        raise TrnError(f"mesh must be a string such as 'dp=2,tp=2', got {mesh!r}")
    degrees: Dict[str, int] = {}
    for item in filter(None, (part.strip() for part in mesh.split(","))):
        name, _, degree = item.partition("=")
        name = name.strip()
        if name not in ("dp", "tp", "pp") or not degree.strip().isdigit() \
                or int(degree) < 1:
            raise TrnError(f"mesh {mesh!r}: {item!r} is not dp=N, pp=N or tp=N with "
                           "a positive N (e.g. mesh='dp=2,pp=2,tp=2')")
        if name in degrees:
            raise TrnError(f"mesh {mesh!r} gives '{name}' twice")
        degrees[name] = int(degree)
    if all(d == 1 for d in degrees.values()):
        return degrees, ""
    return degrees, ",".join(f"{k}={v}" for k, v in degrees.items())


def _version_of(tensor: torch.Tensor) -> Tuple[int, int]:
    """Changes when PyTorch writes the tensor or replaces it (load_state_dict)."""
    return (tensor.data_ptr(), tensor._version)


def _lr_name(index: int, groups: int) -> str:
    return "lr" if groups == 1 else f"lr.{index}"


def _lr_index(name: str) -> int:
    return 0 if name == "lr" else int(name.split(".", 1)[1])


def _shape_str(shape: Tuple[int, ...], dtype: torch.dtype) -> str:
    return f"{str(dtype).replace('torch.', '')}[{', '.join(map(str, shape))}]"


def _call_site() -> str:
    frame = sys._getframe(1)
    here = os.path.dirname(os.path.abspath(__file__))
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
    if frame is None:
        return ""
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


# Compile-cost estimates for scheduling (longest first, under a memory
# budget), fitted on trn-cc compiles of ten example graphs from 4e6 to 3e9
# result elements (2-core build machine, 2026-11-24; docs/frontend.md): both
# grow with the elements the ops produce, which is what the lowering tiles.
def _estimate_compile_seconds(graph: _translate.Graph) -> float:
    return round(0.08 + 5e-10 * graph.elements + 2e-5 * graph.ops, 3)


def _estimate_compile_memory(graph: _translate.Graph) -> int:
    return int(100e6 + 0.85 * graph.elements)


def _native_available() -> bool:
    """Flags are checked by the native extension when it is importable."""
    try:
        _native()
        return True
    except TrnError:
        return False
