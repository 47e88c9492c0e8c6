#!/usr/bin/env python3
"""Whole training steps on the simulated trn1: MFU and where the time goes.

    bench/step_mfu.py [--cases bert-large-micro,bert-large-step,gpt3-23b-layer-tp8,llama3-70b-layer-tp32]
                      [--json bench-step-mfu.json]

Each case is compiled cold (`trn-cc compile --no-cache`) and run once on the
simulated NeuronCore, timing only (`trn-run --timing-only --json`: every
instruction checked and costed, no arithmetic; a partitioned program runs
rank 0 with its peers mirrored, `--mirror-ranks`). The cases (issue 17):

- bert-large-micro: the BERT-large micro-step as AWS runs phase 1: 24
  layers, batch 16, sequence 128, bf16, forward and backward, the gradients
  written out (utils/gen_transformer_step.py --optimizer none; the generator
  writes each gradient rather than adding it into an accumulator);
- bert-large-step: the same with its AdamW update (most of which runs as the
  epilogue of the weight-gradient matmuls, overlapped with them: its time
  is not apart, so its bandwidth is measured on the next case);
- bert-large-optimizer: the AdamW update of BERT-large's parameters alone
  (--part optimizer: gradients in), which must reach 80% of HBM bandwidth
  (the bytes the update must move: every parameter, gradient and moment
  read, every parameter and moment written, over its time);
- gpt3-23b-layer-tp8: one GPT-3 23B layer, forward and backward, one rank's
  share at tensor parallelism 8 (hidden 8192, 64 heads, sequence 2048);
- llama3-70b-layer-tp32: one Llama3-70B decoder layer (examples/llama.py's:
  RMSNorm, grouped-query attention over 8 kv heads with rotary embeddings,
  SwiGLU; sequence 8192, bf16) traced on meta tensors by bench/llama_layer.py
  (forward, backward from an upstream gradient, SGD update) and partitioned
  at tp=32 with sequence parallelism, as the NxD tutorial runs it.

Printed as a table and written as JSON: compile time, simulated device
time, MFU (the FLOPs the graph asks for: 2*M*N*K per matmul, 4*S*T*D per
attention head forward and twice that backward, masked blocks included as
Megatron counts them; one rank's share of them for a partitioned case),
HFU (trn-run's MFU: the matmul FLOPs the program executes, attention
recomputation included, causal blocks skipped), Tensor Engine utilisation, HBM traffic against the bytes the
step's inputs and outputs take (a lower bound: saved activations are not
counted), and the device time split by kind (matmul, attention,
elementwise/fused, optimizer, data movement, collective, idle). Targets
(issue 17): 45% MFU on the BERT micro-step, 55% on the GPT-3 layer, 50% on
the Llama layer, the optimizer at 80% of HBM bandwidth.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time

from benchlib import build_bin, make_graph, selected
#: trn1's HBM bandwidth per NeuronCore, and what its 16 DMA engines move
#: (runtime/lib/Target.cpp: 410 and 16 x 17 bytes per ns).
HBM_BYTES_PER_S = 410e9
DMA_BYTES_PER_S = 272e9

CASES = {
    "bert-large-micro": {
        "build": ["gen", "bert-large", "--batch", "16", "--seq", "128",
                  "--optimizer", "none"],
        "target_mfu": 0.45},
    "bert-large-step": {
        "build": ["gen", "bert-large", "--batch", "16", "--seq", "128",
                  "--optimizer", "adamw"]},
    "bert-large-optimizer": {
        "build": ["gen", "bert-large", "--part", "optimizer", "--optimizer", "adamw"],
        "optimizer": True, "optimizer_only": True},
    "gpt3-23b-layer-tp8": {
        "build": ["gen", "gpt3-23b", "--layers", "1", "--tp", "8"],
        "target_mfu": 0.55},
    "llama3-70b-layer-tp32": {
        "build": ["layer", "llama_layer.py", "--config", "llama3-70b"],
        "mesh": "tp=32", "flags": ["--sequence-parallel"], "target_mfu": 0.50},
}

KINDS = ["matmul", "attention", "elementwise", "optimizer", "data movement",
         "collective", "other", "idle"]
DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4, "i64": 8, "i1": 1,
               "i8": 1, "f8E4M3FN": 1}


def signature_bytes(graph: pathlib.Path) -> dict:
    """Bytes of the step function's arguments and results, by trn.role."""
    text = graph.read_text()
    start = text.index("func.func @")
    # The body's brace is the first one outside the argument and result
    # lists (attribute dictionaries are inside them).
    depth, body, seen = 0, start, False
    for body in range(start, len(text)):
        c = text[body]
        if c == "(":
            depth, seen = depth + 1, True
        elif c == ")":
            depth -= 1
        elif c == "{" and depth == 0 and seen:
            break
    signature = text[start:body]
    sizes = {}
    for match in re.finditer(r"tensor<(?:(\d+(?:x\d+)*)x)?([a-zA-Z][a-zA-Z0-9]*)>"
                             r"(?: \{[^}]*?trn\.role = \"([a-z_]+)\")?", signature):
        dims, dtype, role = match.groups()
        count = 1
        for d in filter(None, (dims or "").split("x")):
            count *= int(d)
        role = role or "other"
        sizes[role] = sizes.get(role, 0) + count * DTYPE_BYTES.get(dtype, 4)
    return sizes


#: trn1's bf16 Tensor Engine peak per NeuronCore (runtime/lib/Target.cpp).
PEAK_FLOPS = 91.75e12

_TYPE = r"tensor<((?:\d+x)*)([a-zA-Z][a-zA-Z0-9]*)>"


def _shape(dims: str) -> list:
    return [int(d) for d in dims.split("x") if d]


def model_flops(graph: pathlib.Path) -> float:
    """The FLOPs the step's graph asks for, as written: 2*M*N*K per matmul,
    and per attention op 4*S*T*D forward (scores and output), twice that
    backward, over every head, masked or not (the convention of Megatron's
    MFU; the flash kernels skip the blocks a causal mask removes, so they do
    less). Recomputation is not counted: that is the hardware's FLOPs, which
    trn-run reports as its MFU (here "HFU")."""
    total = 0.0
    dot = re.compile(r"trn\.dot_general .*?contracting_dims = \[([\d, ]*)\] x .*?: \("
                     + _TYPE + r", " + _TYPE + r"\) -> " + _TYPE)
    attention = re.compile(r"trn\.attention(_grad)? .*?: \(" + _TYPE + r", " + _TYPE)
    for line in graph.read_text().splitlines():
        if (m := dot.search(line)):
            lhs = _shape(m.group(2))
            result = _shape(m.group(6))
            k = 1
            for d in filter(None, m.group(1).split(",")):
                k *= lhs[int(d)]
            n = 1
            for d in result:
                n *= d
            total += 2.0 * n * k
        elif (m := attention.search(line)):
            q, kv = _shape(m.group(2)), _shape(m.group(4))
            # [..., S, D] queries against [..., T, D] keys (the default
            # layout; a seq_dim layout has the same element counts).
            elements = 1
            for d in q:
                elements *= d
            flops = 4.0 * elements * kv[-2]  # 2*S*T*D twice, over the heads
            total += 2 * flops if m.group(1) else flops
    return total


def run_case(name: str, bin_dir: pathlib.Path) -> dict:
    case = CASES[name]
    with tempfile.TemporaryDirectory(prefix="trn-step-mfu-") as tmp:
        work = pathlib.Path(tmp)
        graph, artifact = work / "step.mlir", work / "step.trnart"
        make_graph(case["build"], graph, work)
        compile_args = [str(bin_dir / "trn-cc"), "compile", str(graph), "--no-cache",
                        "-q", "-o", str(artifact)]
        if "mesh" in case:
            compile_args += ["--mesh", case["mesh"]]
        compile_args += case.get("flags", [])
        start = time.monotonic()
        proc = subprocess.run(compile_args, capture_output=True, text=True)
        compile_s = time.monotonic() - start
        if proc.returncode != 0:
            return {"case": name, "error": proc.stderr.strip().splitlines()[-1][:300]}
        run_args = [str(bin_dir / "trn-run"), str(artifact), "--json"]
        run_args += (["--mesh", case["mesh"], "--mirror-ranks"] if "mesh" in case
                     else ["--timing-only"])
        start = time.monotonic()
        proc = subprocess.run(run_args, capture_output=True, text=True)
        simulate_s = time.monotonic() - start
        if proc.returncode != 0:
            return {"case": name, "error": proc.stderr.strip().splitlines()[-1][:300]}
        report = json.loads(proc.stdout)
        sizes = signature_bytes(graph) if "mesh" not in case else {}
        flops = model_flops(graph)
    ranks = 1
    for axis in case.get("mesh", "").split(","):
        if "=" in axis:
            ranks *= int(axis.split("=")[1])
    device_ns = report["device_time_ns"]
    kinds = report.get("time_by_kind_ns", {})
    row = {
        "case": name,
        "compile_s": round(compile_s, 2),
        "simulate_s": round(simulate_s, 1),
        "device_time_ms": round(device_ns / 1e6, 3),
        # One rank's share of the model's FLOPs over its time.
        "mfu": round(flops / ranks / (device_ns * 1e-9) / PEAK_FLOPS, 4),
        "hfu": round(report["mfu"], 4),
        "tensor_engine_utilisation": round(report.get("tensor_engine_utilisation", 0), 4),
        "hbm_mib": round((report.get("hbm_to_sbuf_bytes", 0) +
                          report.get("sbuf_to_hbm_bytes", 0)) / 2**20, 1),
        "time_by_kind": {k: round(kinds.get(k, 0) / device_ns, 4) for k in KINDS},
    }
    if sizes:
        row["io_mib"] = round(sum(sizes.values()) / 2**20, 1)
    if "target_mfu" in case:
        row["target_mfu"] = case["target_mfu"]
    if case.get("optimizer_only"):
        kinds = dict(kinds, optimizer=device_ns)  # the whole program updates
    if case.get("optimizer") and kinds.get("optimizer"):
        # The update reads every parameter, its gradient (f32, made in the
        # step) and both moments, and writes the parameter and the moments.
        params = sizes.get("parameter", 0)
        states = sizes.get("optimizer_state", 0)
        # Arguments and results both list parameters and moments: halve.
        params, states = params / 2, states / 2
        elements = params / 2  # bf16 parameters
        moved = 2 * params + 2 * states + 4 * elements
        seconds = kinds["optimizer"] / 1e9
        row["optimizer_ms"] = round(kinds["optimizer"] / 1e6, 3)
        row["optimizer_min_mib"] = round(moved / 2**20, 1)
        row["optimizer_hbm_fraction"] = round(moved / seconds / HBM_BYTES_PER_S, 4)
        row["optimizer_dma_fraction"] = round(moved / seconds / DMA_BYTES_PER_S, 4)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", default="bench-step-mfu.json")
    args = parser.parse_args(argv)
    names = selected(args.cases, CASES, "case")
    bin_dir = build_bin()
    rows = []
    for name in names:
        print(f"[step_mfu] {name} ...", flush=True)
        rows.append(run_case(name, bin_dir))
        print(f"[step_mfu] {name}: {rows[-1]}", flush=True)

    short = {"matmul": "mm", "attention": "attn", "elementwise": "elem",
             "optimizer": "opt", "data movement": "move", "collective": "coll",
             "other": "other", "idle": "idle"}
    header = (f"{'case':24} {'compile s':>9} {'device ms':>10} {'MFU':>6} {'HFU':>6} {'TE util':>7} "
              f"{'HBM MiB':>8} {'I/O MiB':>8}  time by kind")
    print(header)
    for row in rows:
        if "error" in row:
            print(f"{row['case']:24} error: {row['error']}")
            continue
        split = ", ".join(f"{short[k]} {100 * v:.1f}%" for k, v in row["time_by_kind"].items()
                          if v > 0)
        io = f"{row['io_mib']:8.1f}" if "io_mib" in row else f"{'-':>8}"
        print(f"{row['case']:24} {row['compile_s']:9.2f} {row['device_time_ms']:10.3f} "
              f"{100 * row['mfu']:5.1f}% {100 * row['hfu']:5.1f}% "
              f"{100 * row['tensor_engine_utilisation']:6.1f}% "
              f"{row['hbm_mib']:8.1f} {io}  {split}")
        if "optimizer_ms" in row:
            print(f"{'':24} optimizer {row['optimizer_ms']:.3f} ms for at least "
                  f"{row['optimizer_min_mib']:.1f} MiB: "
                  f"{100 * row['optimizer_hbm_fraction']:.1f}% of HBM bandwidth "
                  f"({100 * row['optimizer_dma_fraction']:.1f}% of what the DMA engines move)")
    pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
