"""Checks that partitioning passes keep what a program computes: every
function of every split of a pass test, run on the multi-rank reference
evaluator after the passes, equals the same function run unpartitioned.

    check_partition.py TEST.mlir --tools DIR [--int-max N] [--rtol R] -- TRN-OPT-FLAGS...

For each `// -----` split of TEST.mlir (after the passes have run on it
alone) and each function in it, trn-eval runs the unpartitioned function on
random inputs (floats in [-1, 1), integers in [0, N)) and the partitioned
one on the same global inputs; every output must agree within RTOL of its
largest element. A program with replica axes is one replica's step: the
unpartitioned function runs on each replica's share of the global inputs,
and a result the replicas split is their results side by side, any other
their mean (DDP's semantics: a ratio of two batch sums, which the program
averages separately, would differ). Splits that expect errors are skipped;
the last line says how many functions were checked. Prints
`MISMATCH ...` and exits 1 on a difference. trn-opt and trn-eval are taken
from DIR.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def run(args, what):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{what} failed: {' '.join(args)}\n{result.stderr.strip()}")
    return result.stdout


def replica_reference(trn_eval, source, name, inputs, prefix, shardings, own):
    """One replica's step, run on each replica's share of the global inputs
    (a dimension of an input the replicas split is k times the function's):
    a result split over the replicas is theirs side by side, any other their
    mean (as DDP averages gradients)."""
    global_inputs = dict(np.load(inputs))
    local = prefix + ".local.npz"
    run([trn_eval, source, f"--entry={name}", "--zeros", f"--save-inputs={local}"],
        f"trn-eval (unpartitioned @{name})")
    shapes = {key: value.shape for key, value in np.load(local).items()}
    replicas = 1
    for key, value in global_inputs.items():
        for g, l in zip(value.shape, shapes[key]):
            if g != l:
                replicas = max(replicas, g // l)
    results = []
    for r in range(replicas):
        share = {}
        for key, value in global_inputs.items():
            for dim, (g, l) in enumerate(zip(value.shape, shapes[key])):
                if g != l:
                    value = np.take(value, range(r * l, (r + 1) * l), axis=dim)
            share[key] = value
        path = prefix + f".r{r}"
        np.savez(path + ".in.npz", **share)
        run([trn_eval, source, f"--entry={name}", f"--inputs={path}.in.npz",
             f"--outputs={path}.out.npz"], f"trn-eval (unpartitioned @{name}, replica {r})")
        results.append(dict(np.load(path + ".out.npz")))
    return ReplicaResults(results, shardings, own)


class ReplicaResults:
    """The replicas' results, combined as the partitioned function's result
    shardings say: side by side along a dimension split over dp (in its
    blocks, `4x{"dp"}`), else averaged, or replica 0's when the test says
    the result is each replica's own (`check_partition: replica's own`)."""

    def __init__(self, results, shardings, own):
        self.results = results
        self.files = list(results[0])
        self.shardings = shardings
        self.own = own

    def combine(self, key, index):
        parts = [result[key] for result in self.results]
        for dim, (blocks, axes) in enumerate(self.shardings[index]):
            if "dp" in axes:
                size = parts[0].shape[dim] // blocks
                pieces = [np.take(part, range(b * size, (b + 1) * size), axis=dim)
                          for b in range(blocks) for part in parts]
                return np.concatenate(pieces, axis=dim)
        if self.own:
            return parts[0]
        return np.mean(np.stack([p.astype(np.float64) for p in parts]), axis=0)


def result_shardings(text, name):
    """Per result of @name in a partitioned module: (blocks, axes) per
    dimension."""
    signature = re.search(r"func\.func @" + re.escape(name) + r"\((.*?)\) attributes", text)
    results = signature.group(1).split(") -> (", 1)[1] if signature else ""
    shardings = []
    for dims in re.findall(r"#dist\.sharding<@\w+, \[(.*?)\](?:, partial[^>]*)?>", results):
        parsed = []
        for blocks, axes in re.findall(r"(?:(\d+)x)?\{([^}]*)\}", dims):
            parsed.append((int(blocks or 1), re.findall(r'"(\w+)"', axes)))
        shardings.append(parsed)
    return shardings


def main(argv):
    if "--" not in argv:
        sys.exit("usage: check_partition.py TEST.mlir --tools DIR [--int-max N] [--rtol R] "
                 "-- FLAGS...")
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("test")
    parser.add_argument("--tools", required=True)
    parser.add_argument("--int-max", type=int, default=4)
    parser.add_argument("--rtol", type=float, default=1e-5)
    options = parser.parse_args(argv[:split])
    passes = argv[split + 1:]
    trn_opt = os.path.join(options.tools, "trn-opt")
    trn_eval = os.path.join(options.tools, "trn-eval")
    text = open(options.test).read()
    chunks = re.split(r"(?m)^// -----\s*$", text)
    checked, of_replicas, skipped = 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for index, chunk in enumerate(chunks):
            if "expected-error" in chunk:
                skipped += 1
                continue
            source = os.path.join(tmp, f"{index}.mlir")
            with open(source, "w") as f:
                f.write(chunk)
            partitioned = os.path.join(tmp, f"{index}.part.mlir")
            run([trn_opt, source, *passes, "-o", partitioned], "trn-opt")
            replicas = "dist.replica_axes" in open(partitioned).read()
            for name in re.findall(r"func\.func @([\w.]+)\(", chunk):
                prefix = os.path.join(tmp, f"{index}.{name}")
                inputs, out = prefix + ".in.npz", prefix + ".out.npz"
                run([trn_eval, partitioned, f"--entry={name}", "--random=7",
                     f"--int-max={options.int_max}", f"--save-inputs={inputs}",
                     f"--outputs={out}"], f"trn-eval (partitioned @{name})")
                got = np.load(out)
                if replicas:
                    want = replica_reference(
                        trn_eval, source, name, inputs, prefix,
                        result_shardings(open(partitioned).read(), name),
                        "check_partition: replica's own" in chunk)
                else:
                    ref = prefix + ".ref.npz"
                    run([trn_eval, source, f"--entry={name}", f"--inputs={inputs}",
                         f"--outputs={ref}"], f"trn-eval (unpartitioned @{name})")
                    want = np.load(ref)
                for result, key in enumerate(want.files):
                    b = got[key].astype(np.float64)
                    a = (want.combine(key, result) if isinstance(want, ReplicaResults)
                         else want[key]).astype(np.float64)
                    if a.shape != b.shape:
                        print(f"MISMATCH @{name} {key}: shape {b.shape}, not {a.shape}")
                        return 1
                    scale = max(np.abs(a).max(initial=0.0), 1e-30)
                    error = np.abs(a - b).max(initial=0.0) / scale
                    if error > options.rtol:
                        print(f"MISMATCH @{name} {key}: relative error {error:.3e} "
                              f"> {options.rtol:g}")
                        return 1
                checked += 1
                of_replicas += replicas
    print(f"checked {checked} functions ({of_replicas} of one replica's step); "
          f"skipped {skipped} splits that expect errors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
