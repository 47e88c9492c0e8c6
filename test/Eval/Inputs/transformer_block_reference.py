#!/usr/bin/python3
"""Independent PyTorch reference for test/Eval/transformer-block.mlir.

    transformer_block_reference.py make-inputs IN.npz [--seed N]
    transformer_block_reference.py check IN.npz OUT.npz

`make-inputs` writes deterministic random inputs under the graph's argument
names (`trn.name`). `check` recomputes the whole training step from IN.npz with
PyTorch autograd in float64 (embedding, layer_norm, linear, causal attention,
tanh-GELU, cross-entropy, loss.backward(), then AdamW by its formula, itself
cross-checked against torch.optim.AdamW) and compares every result in OUT.npz
(written by trn-eval) with it. It exits 1, naming the output, if a result is
missing, unexpected, of the wrong shape or dtype, not finite, or too far off.

Tolerances are for a float32 evaluation of the step. Each element must satisfy
|out - ref| <= ATOL * max|ref| + RTOL * |ref|: the absolute part is relative
to the tensor's own scale, since the outputs range from O(1) (loss, weights)
down to O(1e-7) (second moments). For parameters, whose AdamW step is small
next to their value, the step itself (out - p) is compared with the reference
step by the same rule, plus half an f32 ulp of the new value for rounding.

Run with Debian's /usr/bin/python3 (torch 1.13 and numpy). Keep the sizes and
hyper-parameters in sync with gen_transformer_block.py.
"""

import argparse
import sys

import numpy as np
import torch
import torch.nn.functional as F

B, S, H, NH = 2, 8, 16, 2
HD = H // NH
FF, V = 4 * H, 32
LN_EPS = 1e-5
LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP = 1e-2, 0.9, 0.999, 1e-8, 0.1, 1
IGNORE_INDEX = -100

RTOL, ATOL = 1e-4, 1e-5

# name -> (shape, kind); kinds choose the initialisation.
PARAMETERS = {
    "wte": ((V, H), "embedding"),
    "ln1.weight": ((H,), "norm_weight"),
    "ln1.bias": ((H,), "bias"),
    "attn.qkv.weight": ((3 * H, H), "weight"),
    "attn.qkv.bias": ((3 * H,), "bias"),
    "attn.out.weight": ((H, H), "weight"),
    "attn.out.bias": ((H,), "bias"),
    "ln2.weight": ((H,), "norm_weight"),
    "ln2.bias": ((H,), "bias"),
    "mlp.fc.weight": ((FF, H), "weight"),
    "mlp.fc.bias": ((FF,), "bias"),
    "mlp.proj.weight": ((H, FF), "weight"),
    "mlp.proj.bias": ((H,), "bias"),
    "lm_head.weight": ((V, H), "weight"),
}
M_PREFIX, V_PREFIX = "adam.m.", "adam.v."


def output_names():
    names = ["loss"] + list(PARAMETERS)
    names += [M_PREFIX + p for p in PARAMETERS] + [V_PREFIX + p for p in PARAMETERS]
    return names


def make_inputs(path, seed):
    """Inputs that keep every activation O(1), so that every path matters:
    unit-variance embeddings, weights ~ N(0, 1/fan_in), LayerNorm weights
    near 1, small biases. The Adam moments (v > 0) are small next to the
    gradients (|g| ~ 1e-2), so that the new m and v, and the steps, depend on
    the gradients; but not zero, so that elements whose exact gradient is 0
    (the key bias; wte rows of absent tokens) take a well-conditioned step
    instead of rounding noise divided by its own magnitude."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, (shape, kind) in PARAMETERS.items():
        if kind == "embedding":
            value = rng.normal(0.0, 1.0, shape)
        elif kind == "weight":
            value = rng.normal(0.0, shape[1] ** -0.5, shape)
        elif kind == "norm_weight":
            value = 1.0 + rng.normal(0.0, 0.1, shape)
        else:
            value = rng.normal(0.0, 0.1, shape)
        arrays[name] = value.astype(np.float32)
    for name, (shape, _) in PARAMETERS.items():
        arrays[M_PREFIX + name] = rng.normal(0.0, 1e-3, shape).astype(np.float32)
        arrays[V_PREFIX + name] = rng.uniform(1e-8, 1e-7, shape).astype(np.float32)
    ids = rng.integers(0, V, (B, S))
    ids[1, 3] = ids[0, 2]  # a repeated token: its embedding gradients accumulate
    labels = rng.integers(0, V, (B, S))
    labels[1, S - 1] = IGNORE_INDEX  # a padded position, left out of the mean
    arrays["input_ids"] = ids.astype(np.int64)
    arrays["labels"] = labels.astype(np.int64)
    np.savez(path, **arrays)


def forward(p, ids, labels):
    """The block in nn style on [batch, sequence, hidden]; returns the loss."""
    x = F.embedding(ids, p["wte"])
    h = F.layer_norm(x, (H,), p["ln1.weight"], p["ln1.bias"], LN_EPS)
    q, k, v = F.linear(h, p["attn.qkv.weight"], p["attn.qkv.bias"]).split(H, dim=-1)
    q, k, v = (t.view(B, S, NH, HD).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / HD ** 0.5
    future = torch.ones(S, S, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    a = (probs @ v).transpose(1, 2).reshape(B, S, H)
    x = x + F.linear(a, p["attn.out.weight"], p["attn.out.bias"])
    h = F.layer_norm(x, (H,), p["ln2.weight"], p["ln2.bias"], LN_EPS)
    h = F.gelu(F.linear(h, p["mlp.fc.weight"], p["mlp.fc.bias"]), approximate="tanh")
    x = x + F.linear(h, p["mlp.proj.weight"], p["mlp.proj.bias"])
    logits = F.linear(x, p["lm_head.weight"])
    return F.cross_entropy(logits.reshape(B * S, V), labels.reshape(B * S),
                           ignore_index=IGNORE_INDEX, reduction="mean")


def adamw(p, g, m, v):
    """One AdamW step by its formula (decoupled weight decay)."""
    m1 = BETA1 * m + (1 - BETA1) * g
    v1 = BETA2 * v + (1 - BETA2) * g * g
    m_hat = m1 / (1 - BETA1 ** STEP)
    v_hat = v1 / (1 - BETA2 ** STEP)
    return p - LR * (m_hat / (v_hat.sqrt() + EPS) + WEIGHT_DECAY * p), m1, v1


def reference(inputs):
    t = {k: torch.from_numpy(a.astype(np.float64)) for k, a in inputs.items()
         if a.dtype.kind == "f"}
    params = {n: t[n].clone().requires_grad_(True) for n in PARAMETERS}
    ids = torch.from_numpy(inputs["input_ids"].astype(np.int64))
    labels = torch.from_numpy(inputs["labels"].astype(np.int64))
    loss = forward(params, ids, labels)
    loss.backward()

    expected = {"loss": loss.detach()}
    for n in PARAMETERS:
        new_p, m1, v1 = adamw(t[n], params[n].grad, t[M_PREFIX + n], t[V_PREFIX + n])
        expected[n], expected[M_PREFIX + n], expected[V_PREFIX + n] = new_p, m1, v1

    # The formula above must agree with PyTorch's own AdamW.
    check_params = [t[n].clone().requires_grad_(True) for n in PARAMETERS]
    opt = torch.optim.AdamW(check_params, lr=LR, betas=(BETA1, BETA2), eps=EPS,
                            weight_decay=WEIGHT_DECAY)
    for cp, n in zip(check_params, PARAMETERS):
        cp.grad = params[n].grad.clone()
        opt.state[cp] = {"step": torch.tensor(float(STEP - 1)),
                         "exp_avg": t[M_PREFIX + n].clone(),
                         "exp_avg_sq": t[V_PREFIX + n].clone()}
    opt.step()
    for cp, n in zip(check_params, PARAMETERS):
        state = opt.state[cp]
        for got, want in ((cp.detach(), expected[n]),
                          (state["exp_avg"], expected[M_PREFIX + n]),
                          (state["exp_avg_sq"], expected[V_PREFIX + n])):
            if not torch.allclose(got, want, rtol=1e-12, atol=1e-15):
                sys.exit(f"internal error: the AdamW formula disagrees with "
                         f"torch.optim.AdamW for {n}")
    return {k: e.numpy() for k, e in expected.items()}


def compare(name, got, want, before=None):
    """Returns (ok, message) for one output."""
    if got.shape != want.shape:
        return False, f"shape {got.shape}, expected {want.shape}"
    if got.dtype != np.float32:
        return False, f"dtype {got.dtype}, expected float32"
    g = got.astype(np.float64)
    if not np.all(np.isfinite(g)):
        return False, f"{np.count_nonzero(~np.isfinite(g))} non-finite values"
    err = np.abs(g - want)
    max_abs = float(err.max(initial=0.0))
    max_rel = float((err / np.maximum(np.abs(want), 1e-30)).max(initial=0.0))
    if before is None:
        tol = ATOL * np.abs(want).max(initial=0.0) + RTOL * np.abs(want)
        what = ""
    else:
        step_want = want - before
        tol = (ATOL * np.abs(step_want).max(initial=0.0) + RTOL * np.abs(step_want)
               + np.abs(want) * 2.0 ** -24)
        step_err = np.abs((g - before) - step_want)
        what = (f", step max rel err "
                f"{float((step_err / np.maximum(np.abs(step_want), 1e-30)).max()):.2e}")
    ratio = float((err / tol).max(initial=0.0)) if np.all(tol > 0) else (
        0.0 if max_abs == 0.0 else float("inf"))
    message = (f"max abs err {max_abs:.2e}, max rel err {max_rel:.2e}{what}, "
               f"worst err/tol {ratio:.3f}")
    if ratio > 1.0:
        worst = np.unravel_index(int(np.argmax(err / tol)), err.shape) if err.ndim else ()
        message += (f"; at {tuple(int(i) for i in worst)} got {g[worst]!r}, "
                    f"expected {float(want[worst])!r}")
        return False, message
    return True, message


def check(in_path, out_path):
    with np.load(in_path) as f:
        inputs = dict(f)
    with np.load(out_path) as f:
        outputs = dict(f)
    expected = reference(inputs)

    failures = []
    names = output_names()
    missing = [n for n in names if n not in outputs]
    unexpected = sorted(set(outputs) - set(names))
    if missing:
        failures.append(f"missing outputs: {', '.join(missing)}")
    if unexpected:
        failures.append(f"unexpected outputs: {', '.join(unexpected)}")
    for name in names:
        if name not in outputs:
            continue
        before = inputs[name].astype(np.float64) if name in PARAMETERS else None
        ok, message = compare(name, outputs[name], expected[name], before)
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {message}")
        if not ok:
            failures.append(f"output '{name}' differs from the PyTorch reference: {message}")
    print(f"loss: got {float(outputs.get('loss', np.nan)):.8f}, "
          f"reference {float(expected['loss']):.8f}")
    if failures:
        for failure in failures:
            print(f"error: {failure}", file=sys.stderr)
        return 1
    print(f"all {len(names)} outputs match the PyTorch reference "
          f"(rtol {RTOL}, atol {ATOL} x tensor scale)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("make-inputs", help="write deterministic random inputs")
    make.add_argument("inputs")
    make.add_argument("--seed", type=int, default=1234)
    chk = sub.add_parser("check", help="compare trn-eval outputs with PyTorch")
    chk.add_argument("inputs")
    chk.add_argument("outputs")
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    if args.command == "make-inputs":
        make_inputs(args.inputs, args.seed)
        return 0
    return check(args.inputs, args.outputs)


if __name__ == "__main__":
    sys.exit(main())
