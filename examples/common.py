"""Shared pieces of the example training scripts (gpt.py, bert.py, llama.py, transformer_encoder.py).

Each script defines its model, its loss function and its synthetic batches; this module does the rest the same
way for all of them: the command line, presets, seeding, the optimizer and learning-rate schedule, the training
loop on either device, checkpoints and output files.

The loop is the same on both devices so that their losses can be compared step by step:

* ``--device cpu``: eager PyTorch (forward, ``loss.backward()``, optional clipping, ``optimizer.step()``);
* ``--device trn``: ``trn.compile_step`` traces forward, backward and the optimizer update into one graph and
  runs each micro-step on the simulated NeuronCore.

With ``--grad-accum N`` each step is one micro-batch, the loss is divided by N (as the AWS and Hugging Face
scripts do) and the optimizer runs every N steps. The printed loss is the undivided one.
"""

import argparse
import dataclasses
import functools
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Type

import torch

CHECKPOINT_NAME = "checkpoint.pt"

# Size flags and the config fields they set; a script gets the ones its config has.
SIZE_FLAGS = {
    "layers": "number of transformer layers",
    "hidden": "hidden size",
    "heads": "attention heads",
    "kv_heads": "key/value heads (grouped-query attention)",
    "ffn": "MLP inner size",
    "vocab": "vocabulary size",
}

Batch = Tuple[torch.Tensor, ...]
LossFn = Callable[..., torch.Tensor]


def parse_args(description: str, config_cls: Type, presets: Dict[str, dict],
               argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Parses the flags common to every example; size flags override the chosen preset."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    model = p.add_argument_group("model")
    model.add_argument("--config", choices=list(presets), default="small",
                       help="size preset (default small); the others build on the meta device, --device trn only")
    names = {f.name for f in dataclasses.fields(config_cls)}
    for name, help_text in SIZE_FLAGS.items():
        if name in names:
            model.add_argument("--" + name.replace("_", "-"), type=int, help=help_text)
    model.add_argument("--seq", type=int, help="sequence length")
    model.add_argument("--batch", type=int, help="micro-batch size")
    model.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32", help="model dtype")
    model.add_argument("--dropout", type=float, default=0.0, help="dropout probability (default 0.0)")
    run = p.add_argument_group("training")
    run.add_argument("--steps", type=int, default=20, help="micro-steps to run in all (default 20)")
    run.add_argument("--device", choices=["cpu", "trn"], default="cpu")
    run.add_argument("--flags", default="", help='trn compile flags, e.g. "--auto-cast matmul"')
    run.add_argument("--mesh", default=None,
                     help='data and tensor parallelism for --device trn, e.g. "dp=2,tp=2" '
                          "(every rank on its own simulated NeuronCore)")
    run.add_argument("--cache-dir", default=None, help="trn compile cache (default: $TRN_CACHE_DIR or trn's)")
    run.add_argument("--optimizer", choices=["adamw", "adam", "sgd"], default="adamw")
    run.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (default 1e-3)")
    run.add_argument("--momentum", type=float, default=0.0, help="SGD momentum (default 0)")
    run.add_argument("--weight-decay", type=float, default=0.01)
    run.add_argument("--warmup-steps", type=int, default=5, help="optimizer steps of linear warmup (default 5)")
    run.add_argument("--max-grad-norm", type=float, default=0.0, help="clip gradients to this norm (0 = off)")
    run.add_argument("--grad-accum", type=int, default=1, help="micro-steps per optimizer step (default 1)")
    run.add_argument("--seed", type=int, default=0)
    out = p.add_argument_group("checkpoints and output")
    out.add_argument("--save", metavar="DIR", help=f"write DIR/{CHECKPOINT_NAME} at the end")
    out.add_argument("--resume", metavar="DIR", help="continue from DIR's checkpoint if there is one")
    out.add_argument("--checkpoint-freq", type=int, default=0, metavar="N", help="also save every N steps")
    out.add_argument("--losses-out", metavar="FILE", help='write {"losses": [...], "steps": [...]} as JSON')
    out.add_argument("--stats-out", metavar="FILE",
                     help="write the last step's simulated device statistics as JSON (--device trn)")
    out.add_argument("--params-out", metavar="FILE", help="torch.save the final state_dict (cpu, float32)")
    out.add_argument("--quiet", action="store_true", help="no per-step lines")
    args = p.parse_args(argv)
    if args.grad_accum < 1 or args.steps < 0 or args.checkpoint_freq < 0:
        p.error("--grad-accum must be >= 1, --steps and --checkpoint-freq >= 0")
    if args.checkpoint_freq and not args.save:
        p.error("--checkpoint-freq needs --save DIR")
    return args


def fail(message: str) -> None:
    """Prints a one-line error and exits with status 2 (a usage error)."""
    print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
    sys.exit(2)


def resolve_config(config_cls: Type, presets: Dict[str, dict], args: argparse.Namespace) -> Tuple[Any, int]:
    """Returns (model config, micro-batch size): the preset, then any explicit size flags on top."""
    values = dict(presets[args.config])
    batch = values.pop("batch", 4)
    names = {f.name for f in dataclasses.fields(config_cls)}
    for name in list(SIZE_FLAGS) + ["seq"]:
        if name in names and getattr(args, name, None) is not None:
            values[name] = getattr(args, name)
    if "dropout" in names:
        values["dropout"] = args.dropout
    elif args.dropout:
        fail("this model has no dropout (--dropout)")
    try:
        config = config_cls(**values)
    except ValueError as e:
        fail(str(e))
    return config, args.batch or batch


def build_model(model_cls: Type[torch.nn.Module], config: Any, args: argparse.Namespace) -> torch.nn.Module:
    """Builds the model: on the CPU after seeding (same weights on both devices), or on the meta device for a
    preset too big for this machine, which only trn's extraction mode can use."""
    dtype = getattr(torch, args.dtype)
    if args.config != "small":
        if args.device == "cpu":
            fail(f"--config {args.config} is too big to materialise here (it is built on the meta device); "
                 "use it with --device trn in extraction mode (trn-parallel-compile)")
        return model_cls(config, device="meta", dtype=dtype)
    torch.manual_seed(args.seed)
    return model_cls(config, device="cpu", dtype=dtype)


def permutation(vocab: int, seed: int) -> torch.Tensor:
    """A fixed random permutation of the vocabulary: the 'grammar' of the synthetic data."""
    return torch.randperm(vocab, generator=torch.Generator().manual_seed(seed))


def token_chains(gen: torch.Generator, perm: torch.Tensor, batch: int, length: int) -> torch.Tensor:
    """[batch, length] int64 token ids: each row starts at a random token and then follows ``perm``, so the
    next token is predictable and the loss can fall."""
    tokens = torch.empty(batch, length, dtype=torch.int64)
    tokens[:, 0] = torch.randint(0, perm.numel(), (batch,), generator=gen)
    for t in range(1, length):
        tokens[:, t] = perm[tokens[:, t - 1]]
    return tokens


def make_optimizer(model: torch.nn.Module, args: argparse.Namespace) -> torch.optim.Optimizer:
    """AdamW, Adam or SGD over all parameters (weight decay on all of them, for simplicity)."""
    params, lr, wd = model.parameters(), args.lr, args.weight_decay
    if args.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=wd)
    return torch.optim.SGD(params, lr=lr, momentum=args.momentum, weight_decay=wd)


def make_scheduler(optimizer: torch.optim.Optimizer,
                   args: argparse.Namespace) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup over the first optimizer steps, then constant."""
    warmup = max(1, args.warmup_steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))


def save_checkpoint(directory: str, state: Dict[str, Any]) -> None:
    """torch.save into DIR/checkpoint.pt atomically: a temporary file in DIR, then os.replace."""
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(directory, CHECKPOINT_NAME))
    except BaseException:
        os.unlink(tmp)
        raise


def _scaled(loss_fn: LossFn, n: int) -> LossFn:
    """The loss divided by the number of accumulated micro-batches (identity for n == 1)."""
    if n == 1:
        return loss_fn

    @functools.wraps(loss_fn)  # keeps the signature: trn names the step's inputs after its parameters
    def scaled_loss_fn(model: torch.nn.Module, *batch: torch.Tensor) -> torch.Tensor:
        return loss_fn(model, *batch) / n

    return scaled_loss_fn


def train(args: argparse.Namespace, model: torch.nn.Module, loss_fn: LossFn,
          make_batch: Callable[[torch.Generator], Batch]) -> int:
    """Runs the training loop described in the module docstring; returns the exit status."""
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    on_meta = next(model.parameters()).is_meta
    model.train()
    optimizer = make_optimizer(model, args)
    scheduler = make_scheduler(optimizer, args)
    gen = torch.Generator().manual_seed(args.seed)  # the data stream; the same on both devices
    start = 0
    if args.resume:
        path = os.path.join(args.resume, CHECKPOINT_NAME)
        if on_meta:
            print(f"{name}: a meta-device model does not load checkpoints; ignoring --resume")
        elif os.path.exists(path):
            ckpt = torch.load(path, map_location="cpu")
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            gen.set_state(ckpt["data_generator"])
            torch.set_rng_state(ckpt["rng"])  # dropout masks on the CPU
            start = ckpt["step"]
            print(f"{name}: resumed from {path} at step {start}")
        else:
            print(f"{name}: no checkpoint in {args.resume}; starting from step 0")
    loss_fn = _scaled(loss_fn, args.grad_accum)

    step = None
    if args.mesh and args.device != "trn":
        fail("--mesh partitions the step for --device trn; add --device trn")
    if args.device == "trn":
        try:
            import trn  # only needed here: the CPU path runs without the trn package
        except ModuleNotFoundError as e:
            if e.name != "trn":
                raise
            fail("--device trn needs the trn Python package: run utils/setup.sh")
        # Wrapped after loading the checkpoint, so the device starts from the restored state.
        step = trn.compile_step(model, optimizer, loss_fn, flags=args.flags, cache_dir=args.cache_dir,
                                grad_accum=args.grad_accum, max_grad_norm=args.max_grad_norm or None,
                                mesh=args.mesh)

    # A meta-device model, or trn's extraction mode (trn-parallel-compile), traces steps without running them:
    # there are no losses to report and no trained state to save.
    dry_run = on_meta or getattr(step, "extracting", False)

    def checkpoint(done: int) -> None:
        if dry_run:
            return
        if step is not None:
            step.sync()  # parameters and optimizer state back into the module and optimizer
        save_checkpoint(args.save, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                    "scheduler": scheduler.state_dict(), "step": done,  # steps completed
                                    "data_generator": gen.get_state(), "rng": torch.get_rng_state()})

    if not args.quiet:
        count = sum(p.numel() for p in model.parameters())
        print(f"{name}: config {args.config}, {count / 1e6:.2f}M parameters, {args.dtype}, "
              f"device {args.device}, {args.optimizer}, grad-accum {args.grad_accum}")
    losses, steps = [], []
    t0 = time.perf_counter()
    for i in range(start, args.steps):
        batch = tuple(t.contiguous() for t in make_batch(gen))
        if step is None:  # eager PyTorch on the CPU
            loss = loss_fn(model, *batch)
            loss.backward()
            if (i + 1) % args.grad_accum == 0:
                if args.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        else:  # one micro-step on the simulated NeuronCore
            loss = step(*batch)
        if (i + 1) % args.grad_accum == 0:
            scheduler.step()
        if not dry_run:
            losses.append(loss.detach().float().item() * args.grad_accum)
            steps.append(i)
            if not args.quiet:
                print(f"step {i:3d}  loss {losses[-1]:.6f}", flush=True)
        elif not args.quiet:
            print(f"step {i:3d}  traced, not run", flush=True)
        # Saved only at optimizer-step boundaries: accumulated gradients are not part of a checkpoint.
        if args.checkpoint_freq and (i + 1) % args.checkpoint_freq == 0 and (i + 1) % args.grad_accum == 0:
            checkpoint(i + 1)
    elapsed = time.perf_counter() - t0
    if step is not None and not dry_run:
        step.sync()

    if args.save and args.steps > start:
        checkpoint(args.steps)
    if args.losses_out:
        with open(args.losses_out, "w") as f:
            json.dump({"losses": losses, "steps": steps}, f)
    if args.stats_out and step is not None and not dry_run:
        with open(args.stats_out, "w") as f:
            json.dump(dict(step.last_stats, graphs=step.graphs()), f)
    if args.params_out and not dry_run:
        torch.save({k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()},
                   args.params_out)
    n = args.steps - start
    last = f", last loss {losses[-1]:.6f}" if losses else ""
    print(f"{name}: {n} steps in {elapsed:.2f} s ({n / elapsed if elapsed > 0 else 0.0:.1f} steps/s){last}")
    return 0
