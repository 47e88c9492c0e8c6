#!/usr/bin/env python3
"""Flash-style attention kernels against the decomposed lowering, simulated.

    bench/attention.py [--heads 8 --seq 2048 --head-size 128] [--dtype bf16]
                       [--no-causal] [--json out.json] [--build build]

For trn.attention (forward) and trn.attention_grad (backward) of one
tensor-parallel rank's heads (default: GPT-3-23B at TP=8: 8 heads of 128,
sequence 2048, causal, bf16), compiles the graph twice with trn-cc: as
written (the fused flash-style kernels) and after `trn-opt
--trn-decompose-composites` (matmul, softmax and matmul with the scores in
HBM). Runs both with trn-run on zero inputs and reports the simulated device
time, the HBM traffic and the Tensor Engine utilisation.
"""
import argparse
import json
import pathlib
import subprocess
import tempfile
import time


def graphs(heads, seq, head_size, dtype, causal):
    t = f"tensor<1x{heads}x{seq}x{head_size}x{dtype}>"
    lse = f"tensor<1x{heads}x{seq}xf32>"
    scale = head_size ** -0.5
    mask = " causal" if causal else ""
    forward = (
        f"func.func @attention(%q: {t} {{trn.name = \"q\"}}, %k: {t} {{trn.name = \"k\"}}, "
        f"%v: {t} {{trn.name = \"v\"}}) -> ({t} {{trn.name = \"o\"}}, {lse} {{trn.name = \"lse\"}}) {{\n"
        f"  %o, %lse = trn.attention %q, %k, %v, scale = {scale}{mask} : ({t}, {t}, {t}) -> ({t}, {lse})\n"
        f"  return %o, %lse : {t}, {lse}\n}}\n")
    backward = (
        f"func.func @attention_grad(%q: {t} {{trn.name = \"q\"}}, %k: {t} {{trn.name = \"k\"}}, "
        f"%v: {t} {{trn.name = \"v\"}}, %o: {t} {{trn.name = \"o\"}}, %lse: {lse} {{trn.name = \"lse\"}}, "
        f"%do: {t} {{trn.name = \"do\"}}) -> ({t} {{trn.name = \"dq\"}}, {t} {{trn.name = \"dk\"}}, "
        f"{t} {{trn.name = \"dv\"}}) {{\n"
        f"  %dq, %dk, %dv = trn.attention_grad %q, %k, %v, %o, %lse, %do, scale = {scale}{mask} : "
        f"({t}, {t}, {t}, {t}, {lse}, {t}) -> ({t}, {t}, {t})\n"
        f"  return %dq, %dk, %dv : {t}, {t}, {t}\n}}\n")
    return {"forward": forward, "backward": backward}


def measure(bin_dir, graph, work, name):
    artifact = work / f"{name}.trnart"
    start = time.perf_counter()
    subprocess.run([str(bin_dir / "trn-cc"), "compile", str(graph), "-o", str(artifact),
                    "--no-cache", "-q"], check=True)
    compile_seconds = time.perf_counter() - start
    run = subprocess.run([str(bin_dir / "trn-run"), str(artifact), "--zeros", "--json"],
                         check=True, capture_output=True, text=True)
    stats = json.loads(run.stdout)
    return {
        "compile_seconds": compile_seconds,
        "device_time_us": stats["device_time_ns"] / 1000.0,
        "hbm_traffic_mib": (stats["hbm_to_sbuf_bytes"] + stats["sbuf_to_hbm_bytes"]) / 2**20,
        "tensor_engine_utilisation": stats["tensor_engine_utilisation"],
        "instructions": stats["instructions"],
        "engine_busy_percent": stats["engine_busy_percent"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--head-size", type=int, default=128)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    parser.add_argument("--no-causal", action="store_true")
    parser.add_argument("--build", default=str(pathlib.Path(__file__).resolve().parent.parent / "build"))
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    bin_dir = pathlib.Path(args.build) / "bin"
    causal = not args.no_causal
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        for direction, text in graphs(args.heads, args.seq, args.head_size, args.dtype,
                                      causal).items():
            fused = work / f"{direction}.mlir"
            fused.write_text(text)
            decomposed = work / f"{direction}-decomposed.mlir"
            subprocess.run([str(bin_dir / "trn-opt"), str(fused),
                            "--pass-pipeline=builtin.module(func.func(trn-decompose-composites))",
                            "-o", str(decomposed)], check=True)
            print(f"{direction}: compiling and simulating ...", flush=True)
            row = {"direction": direction,
                   "flash": measure(bin_dir, fused, work, f"{direction}-flash"),
                   "decomposed": measure(bin_dir, decomposed, work, f"{direction}-decomposed")}
            row["speedup"] = (row["decomposed"]["device_time_us"] /
                              row["flash"]["device_time_us"])
            results.append(row)

    shape = (f"{args.heads} heads x seq {args.seq} x head {args.head_size}, {args.dtype}"
             f"{', causal' if causal else ''}")
    print(f"\nattention on the simulated trn1 NeuronCore ({shape})")
    print(f"{'kernel':10s} {'lowering':11s} {'device us':>10s} {'HBM MiB':>9s} "
          f"{'TE util':>8s} {'instrs':>8s} {'compile s':>10s}")
    for row in results:
        for lowering in ("flash", "decomposed"):
            r = row[lowering]
            print(f"{row['direction']:10s} {lowering:11s} {r['device_time_us']:10.1f} "
                  f"{r['hbm_traffic_mib']:9.1f} {100 * r['tensor_engine_utilisation']:7.1f}% "
                  f"{r['instructions']:8d} {r['compile_seconds']:10.2f}")
        print(f"{row['direction']:10s} {'speedup':11s} {row['speedup']:9.1f}x")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({
            "benchmark": "attention",
            "heads": args.heads, "seq": args.seq, "head_size": args.head_size,
            "dtype": args.dtype, "causal": causal, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
