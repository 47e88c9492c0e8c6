#!/usr/bin/env python3
"""Speed of the simulator itself against PyTorch CPU (fp32) on a
matmul-heavy training step.

    bench/simulator_vs_pytorch.py [--batch 1024 --hidden 1024 --ffn 4096]
                                  [--iterations 5] [--repeats 3]
                                  [--threads 1,2] [--json out.json]

The step is an MLP block forward and backward (two matmuls forward, four
backward, tanh-GELU and its gradient), written in trn, compiled by trn-cc and
run by trn-run; PyTorch runs the same step with autograd in fp32 on the same
machine (torch 2.13 CPU, the project's .venv). Reported: wall time per step of each, their
ratio (target from the design brief: simulator >= 0.5x PyTorch's speed), and
the simulated device metrics of the step.

Threads are matched: for each count n of --threads, the simulator runs with
`trn-run --threads n` and PyTorch with n intra-op threads *and* n OpenBLAS
threads (Debian's torch sends matmuls to OpenBLAS, whose own thread pool
torch.set_num_threads does not govern; by default it uses every core). Each
time is the best of --repeats measurements, taken alternately for both sides
(the build machine is shared, so slower outliers are other processes).
"""
import argparse
import ctypes
import json
import pathlib
import subprocess
import tempfile
import time

import torch

from benchlib import report


def graph(b, d, f):
    t = lambda *s: "tensor<" + "x".join(map(str, s)) + "xf32>"
    return f"""func.func @mlp_step(%x: {t(b, d)} {{trn.name = "x"}}, %w1: {t(f, d)} {{trn.name = "w1"}},
                    %w2: {t(d, f)} {{trn.name = "w2"}}, %dy: {t(b, d)} {{trn.name = "dy"}})
    -> ({t(b, d)} {{trn.name = "y"}}, {t(f, d)} {{trn.name = "dw1"}}, {t(d, f)} {{trn.name = "dw2"}},
        {t(b, d)} {{trn.name = "dx"}}) {{
  %pre = trn.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [1] : ({t(b, d)}, {t(f, d)}) -> {t(b, f)}
  %h = trn.gelu %pre approximate = tanh : {t(b, f)}
  %y = trn.dot_general %h, %w2, batching_dims = [] x [], contracting_dims = [1] x [1] : ({t(b, f)}, {t(d, f)}) -> {t(b, d)}
  %dw2 = trn.dot_general %dy, %h, batching_dims = [] x [], contracting_dims = [0] x [0] : ({t(b, d)}, {t(b, f)}) -> {t(d, f)}
  %dh = trn.dot_general %dy, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : ({t(b, d)}, {t(d, f)}) -> {t(b, f)}
  %dpre = trn.gelu_grad %dh, %pre approximate = tanh : {t(b, f)}
  %dw1 = trn.dot_general %dpre, %x, batching_dims = [] x [], contracting_dims = [0] x [0] : ({t(b, f)}, {t(b, d)}) -> {t(f, d)}
  %dx = trn.dot_general %dpre, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : ({t(b, f)}, {t(f, d)}) -> {t(b, d)}
  return %y, %dw1, %dw2, %dx : {t(b, d)}, {t(f, d)}, {t(d, f)}, {t(b, d)}
}}
"""


def set_torch_threads(n):
    """n intra-op threads for torch and n threads for the OpenBLAS it calls."""
    torch.set_num_threads(n)
    try:
        blas = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return None
    blas.openblas_set_num_threads(n)
    return blas.openblas_get_num_threads()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts to compare at")
    parser.add_argument("--build", default=str(pathlib.Path(__file__).resolve().parent.parent / "build"))
    parser.add_argument("--json")
    args = parser.parse_args()
    b, d, f = args.batch, args.hidden, args.ffn
    thread_counts = [int(t) for t in args.threads.split(",")]
    bin_dir = pathlib.Path(args.build) / "bin"
    flops = 2.0 * b * d * f * 6

    torch.manual_seed(0)
    x = torch.randn(b, d, requires_grad=True)
    w1 = torch.randn(f, d, requires_grad=True)
    w2 = torch.randn(d, f, requires_grad=True)
    dy = torch.randn(b, d)

    def torch_step():
        pre = x @ w1.t()
        h = torch.nn.functional.gelu(pre, approximate="tanh")
        y = h @ w2.t()
        y.backward(dy)
        x.grad = w1.grad = w2.grad = None
        return y

    configs = []
    with tempfile.TemporaryDirectory() as work:
        source = pathlib.Path(work) / "mlp.mlir"
        source.write_text(graph(b, d, f))
        artifact = pathlib.Path(work) / "mlp.trnart"
        subprocess.run([str(bin_dir / "trn-cc"), "compile", str(source), "-o", str(artifact),
                        "--no-cache", "-q"], check=True)

        # trn-run reports the last of N runs; wall time over N runs minus one
        # run isolates per-step cost from loading.
        def run(n, threads):
            start = time.perf_counter()
            out = subprocess.run([str(bin_dir / "trn-run"), str(artifact), "--random", "1",
                                  "--iterations", str(n), "--threads", str(threads), "--json"],
                                 check=True, capture_output=True, text=True).stdout
            return time.perf_counter() - start, json.loads(out)

        for threads in thread_counts:
            blas_threads = set_torch_threads(threads)
            torch_step()
            # Alternate the two sides, so that load from other processes
            # falls on both alike.
            sim_steps, torch_steps = [], []
            for _ in range(args.repeats):
                one, _ = run(1, threads)
                many, stats = run(1 + args.iterations, threads)
                sim_steps.append((many - one) / args.iterations)
                start = time.perf_counter()
                for _ in range(args.iterations):
                    torch_step()
                torch_steps.append((time.perf_counter() - start) / args.iterations)
            configs.append({
                "threads": threads,
                "torch_threads": torch.get_num_threads(),
                "openblas_threads": blas_threads,
                "pytorch_seconds_per_step": min(torch_steps),
                "simulator_seconds_per_step": min(sim_steps),
                "pytorch_samples": torch_steps,
                "simulator_samples": sim_steps,
                "simulator_speed_vs_pytorch": min(torch_steps) / min(sim_steps),
            })

    result = {
        "benchmark": "simulator_vs_pytorch",
        "shape": {"batch": b, "hidden": d, "ffn": f},
        "step_gflop": flops / 1e9,
        "iterations": args.iterations,
        "repeats": args.repeats,
        "configs": configs,
        "target_ratio": 0.5,
        "device_time_us": stats["device_time_ns"] / 1000.0,
        "tensor_engine_utilisation": stats["tensor_engine_utilisation"],
        "mfu": stats["mfu"],
        "spill_bytes": stats["spill_bytes"],
    }
    rows = [("step (MLP fwd+bwd)", f"batch {b}, hidden {d}, ffn {f}: {flops / 1e9:.1f} GFLOP")]
    for c in configs:
        n = c["threads"]
        rows += [
            (f"PyTorch CPU fp32, {n} thread(s)",
             f"{c['pytorch_seconds_per_step'] * 1e3:.1f} ms/step (torch {c['torch_threads']}, "
             f"OpenBLAS {c['openblas_threads']})"),
            (f"simulator, {n} thread(s)", f"{c['simulator_seconds_per_step'] * 1e3:.1f} ms/step"),
            (f"simulator speed / PyTorch, {n} thread(s)",
             f"{c['simulator_speed_vs_pytorch']:.2f}x (target >= 0.5x)"),
        ]
    rows += [
        ("simulated device time", f"{result['device_time_us']:.0f} us"),
        ("simulated TE utilisation", f"{100 * result['tensor_engine_utilisation']:.1f}%"),
        ("simulated MFU", f"{100 * result['mfu']:.1f}%"),
    ]
    report(rows, result, args.json)


if __name__ == "__main__":
    main()
