#!/usr/bin/python3
"""Compare two trn-eval output archives element by element.

    compare_outputs.py EXPECTED.npz ACTUAL.npz [--rtol R] [--atol A]

decompose-composites.mlir uses it to compare the outputs of composite ops
(EXPECTED: the reference evaluator computes each composite in f64 and rounds
once) with those of their decomposition into primitives (ACTUAL: f32
arithmetic, rounded after every op).

Both archives must hold the same names with the same shapes and dtypes.
Finite elements must satisfy |actual - expected| <= ATOL * max|expected| +
RTOL * |expected|: the absolute part is relative to the tensor's own scale,
so that elements which cancel to nearly 0 (gradients) are judged against the
magnitude of their tensor. Non-finite elements must match exactly (NaN where
NaN, infinities of the same sign). Exits 1, naming the output, on a mismatch.
"""

import argparse
import sys

import numpy as np


def compare(got, want, rtol, atol):
    """Returns (ok, message) for one output."""
    if got.shape != want.shape:
        return False, f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return False, f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind not in "fc":
        mismatches = int(np.count_nonzero(got != want))
        return mismatches == 0, f"{mismatches} of {want.size} elements differ"
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(w)
    same_special = np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(
        g[np.isinf(w)], w[np.isinf(w)]) and np.all(np.isfinite(g[finite]))
    if not same_special:
        return False, (f"non-finite values differ: {np.count_nonzero(~np.isfinite(g))} "
                       f"got, {np.count_nonzero(~finite)} expected")
    special = int(np.count_nonzero(~finite))
    g, w = g[finite], w[finite]
    scale = float(np.abs(w).max(initial=0.0))
    err = np.abs(g - w)
    tol = atol * scale + rtol * np.abs(w)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err == 0.0, 0.0, err / tol)
    worst = float(ratio.max(initial=0.0))
    message = (f"max |expected| {scale:.3g}, max abs err {float(err.max(initial=0.0)):.2e}, "
               f"worst err/tol {worst:.3f}")
    if special:
        message += f", {special} non-finite as expected"
    if worst > 1.0:
        i = int(np.argmax(ratio))
        message += f"; got {g[i]!r} where {w[i]!r} was expected"
        return False, message
    return True, message


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("expected")
    parser.add_argument("actual")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-6,
                        help="absolute tolerance, times the tensor's max |expected|")
    args = parser.parse_args()
    with np.load(args.expected) as f:
        expected = dict(f)
    with np.load(args.actual) as f:
        actual = dict(f)

    failures = []
    if sorted(expected) != sorted(actual):
        failures.append(f"outputs differ: expected {sorted(expected)}, got {sorted(actual)}")
    for name in sorted(set(expected) & set(actual)):
        ok, message = compare(actual[name], expected[name], args.rtol, args.atol)
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {message}")
        if not ok:
            failures.append(f"output '{name}': {message}")
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
