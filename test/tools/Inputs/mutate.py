"""Feeds mutated trn graphs to trn-opt and trn-eval and fails on any crash.

Every mutant must either be accepted or rejected with a diagnostic and exit
status 1; a signal (crash, abort) or a timeout (hang) is a failure. The
mutations are deterministic (seeded) so a failure is reproducible: the
offending mutant is written next to the output for inspection.
"""
import argparse
import pathlib
import random
import re
import subprocess
import sys

INTERESTING_NUMBERS = ["0", "-1", "1", "3", "7", "64", "-9223372036854775808",
                       "9223372036854775807", "4294967296", "2147483648", "1.0e309",
                       "nan", "0x7FC00000", "-0.0"]
INTERESTING_TYPES = ["f32", "bf16", "f16", "f8E4M3FN", "f8E5M2", "i1", "i32", "i64",
                     "i8", "f64", "index", "complex<f32>", "tensor<2xf32>"]


def mutate(text, rng):
    kind = rng.randrange(7)
    lines = text.splitlines()
    if kind == 0 and lines:  # drop a line
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind == 1:  # replace a number
        numbers = list(re.finditer(r"-?\d+(\.\d+)?(e[+-]?\d+)?", text))
        if numbers:
            m = rng.choice(numbers)
            return text[:m.start()] + rng.choice(INTERESTING_NUMBERS) + text[m.end():]
    if kind == 2:  # replace an element type
        types = list(re.finditer(r"\b(f32|bf16|f16|i1|i32|i64|f8E4M3FN|f8E5M2)\b", text))
        if types:
            m = rng.choice(types)
            return text[:m.start()] + rng.choice(INTERESTING_TYPES) + text[m.end():]
    if kind == 3:  # truncate
        return text[:rng.randrange(len(text) + 1)]
    if kind == 4:  # swap two SSA names
        names = list(set(re.findall(r"%[A-Za-z0-9_]+", text)))
        if len(names) >= 2:
            a, b = rng.sample(names, 2)
            return text.replace(a, "%__tmp__").replace(b, a).replace("%__tmp__", b)
    if kind == 5:  # change a shape dimension
        dims = list(re.finditer(r"(?<=[<x])\d+(?=x)", text))
        if dims:
            m = rng.choice(dims)
            return text[:m.start()] + rng.choice(["0", "1", "2", "5", "4096"]) + text[m.end():]
    # delete a random span of characters
    start = rng.randrange(len(text) + 1)
    return text[:start] + text[start + rng.randrange(1, 20):]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", required=True, help="directory with trn-opt and trn-eval")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", required=True)
    parser.add_argument("graphs", nargs="+")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    sources = [pathlib.Path(g).read_text() for g in args.graphs]
    outcomes = {"accepted": 0, "rejected": 0}
    for i in range(args.count):
        mutant = mutate(rng.choice(sources), rng)
        path = work / "mutant.mlir"
        path.write_text(mutant)
        for tool in (["trn-opt", "-canonicalize", "-cse"], ["trn-eval", "--zeros"]):
            cmd = [str(pathlib.Path(args.tools) / tool[0]), str(path)] + tool[1:]
            try:
                result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                (work / f"hang-{i}.mlir").write_text(mutant)
                sys.exit(f"mutant {i}: {tool[0]} hung; saved as hang-{i}.mlir")
            if result.returncode not in (0, 1):
                (work / f"crash-{i}.mlir").write_text(mutant)
                sys.exit(f"mutant {i}: {tool[0]} exited with {result.returncode}; saved as "
                         f"crash-{i}.mlir\n{result.stderr[-2000:]}")
            if result.returncode == 1 and not result.stderr.strip():
                (work / f"silent-{i}.mlir").write_text(mutant)
                sys.exit(f"mutant {i}: {tool[0]} failed without a diagnostic")
            outcomes["accepted" if result.returncode == 0 else "rejected"] += 1
    print(f"{args.count} mutants: {outcomes['accepted']} runs accepted, "
          f"{outcomes['rejected']} rejected with a diagnostic, 0 crashes")


if __name__ == "__main__":
    main()
