#!/usr/bin/env python3
"""Tensor Engine utilisation of a large bf16 matmul on the simulated trn1 core.

    bench/matmul_utilization.py [--m 4096 --k 8192 --n 8192] [--json out.json]
                                [--build build]

Generates a trn graph with one dot_general (bf16 x bf16 -> f32), compiles it
with trn-cc (no cache), runs it with trn-run on zero inputs and reports the
compile time, the simulated device time, Tensor Engine utilisation and MFU
(target from the design brief: >= 85% utilisation for 4096x8192x8192).
"""
import argparse
import json
import pathlib
import subprocess
import tempfile
import time

from benchlib import report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--k", type=int, default=8192)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--build", default=str(pathlib.Path(__file__).resolve().parent.parent / "build"))
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    m, k, n = args.m, args.k, args.n
    bin_dir = pathlib.Path(args.build) / "bin"
    with tempfile.TemporaryDirectory() as work:
        graph = pathlib.Path(work) / "matmul.mlir"
        graph.write_text(
            f"func.func @matmul(%a: tensor<{m}x{k}xbf16> {{trn.name = \"a\"}}, "
            f"%b: tensor<{k}x{n}xbf16> {{trn.name = \"b\"}}) -> (tensor<{m}x{n}xf32> {{trn.name = \"c\"}}) {{\n"
            f"  %0 = trn.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] "
            f": (tensor<{m}x{k}xbf16>, tensor<{k}x{n}xbf16>) -> tensor<{m}x{n}xf32>\n"
            f"  return %0 : tensor<{m}x{n}xf32>\n}}\n")
        artifact = pathlib.Path(work) / "matmul.trnart"
        start = time.perf_counter()
        subprocess.run([str(bin_dir / "trn-cc"), "compile", str(graph), "-o", str(artifact),
                        "--no-cache", "-q"], check=True)
        compile_seconds = time.perf_counter() - start
        start = time.perf_counter()
        run = subprocess.run([str(bin_dir / "trn-run"), str(artifact), "--zeros", "--json"],
                             check=True, capture_output=True, text=True)
        simulate_seconds = time.perf_counter() - start
        stats = json.loads(run.stdout)
    flops = 2.0 * m * n * k
    result = {
        "benchmark": "matmul_utilization",
        "shape": [m, k, n],
        "dtype": "bf16 x bf16 -> f32",
        "compile_seconds": compile_seconds,
        "simulator_seconds": simulate_seconds,
        "simulator_gflops_per_second": flops / simulate_seconds / 1e9,
        "device_time_us": stats["device_time_ns"] / 1000.0,
        "tensor_engine_utilisation": stats["tensor_engine_utilisation"],
        "mfu": stats["mfu"],
        "dma_count": stats["dma_count"],
        "engine_busy_percent": stats["engine_busy_percent"],
        "target_utilisation": 0.85,
    }
    rows = [
        ("shape M x K x N", f"{m} x {k} x {n}"),
        ("compile time (s)", f"{compile_seconds:.2f}"),
        ("simulated device time (us)", f"{result['device_time_us']:.1f}"),
        ("Tensor Engine utilisation", f"{100 * result['tensor_engine_utilisation']:.1f}%"),
        ("MFU", f"{100 * result['mfu']:.1f}%"),
        ("DMA transfers", str(result["dma_count"])),
        ("simulator wall time (s)", f"{simulate_seconds:.2f}"),
        ("simulator speed (GFLOP/s)", f"{result['simulator_gflops_per_second']:.1f}"),
        ("target utilisation", ">= 85%"),
    ]
    report(rows, result, args.json, "bf16 matmul on the simulated trn1 NeuronCore")


if __name__ == "__main__":
    main()
