"""Compares simulator outputs with reference-evaluator outputs (.npz).

    compare.py REF.npz OUT.npz [RTOL] [NAME=RTOL ...]

REF comes from trn-eval (the oracle), OUT from trn-run. Both must hold the same
output names and shapes. For every output the error is

    max |ref - out| / max |ref|

the largest absolute error relative to the tensor's own magnitude, so elements
that cancel to nearly 0 (gradients, centred activations) are judged against the
scale of their tensor rather than their own. Integer and i1 outputs must match
exactly. Non-finite values must match too: NaN where the reference has NaN,
infinities of the same sign (a NaN the reference does not have is reported as
uninitialised memory, since trn-run --poison fills fresh memory with NaN).

RTOL (default 2e-3) is the bound for every output; `NAME=RTOL` overrides it for
the outputs whose name matches NAME, a shell-style pattern (`adam.v.*=1e-2`).
The last matching override wins.

Choosing a tolerance. trn-eval computes each op in f64 and rounds its result to
the result type once; the NeuronCore computes in f32 (matmuls accumulate in f32
in PSUM) and rounds after every instruction. So:
  - f32 graphs agree to ~1e-6 relative per op; chains of a few dozen ops
    (a decomposed composite, a training step) stay below ~1e-5. The tests use
    1e-4: ten times the observed error, far below any real bug (a wrong tile,
    a missed accumulation or a mask off by one row is an O(1) error).
  - bf16 results have 8 significant bits. Values computed in f32 that differ
    in the last f32 bit can round to neighbouring bf16 values; one bf16 ulp
    is at most 2^-7 = 7.8e-3 of the tensor's max (log-softmax-bf16.mlir shows
    6.3e-3). Such a flip in an intermediate (a bf16 activation fed to the next
    matmul) spreads to later results at a smaller relative size. The bf16
    tests use 2e-2: about 2.5 ulps of the largest element, still far below a
    real bug.
The printed errors are the evidence: keep the tolerance well above them and
well below 1e-1.
"""
import fnmatch
import sys

import numpy as np


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    ref, out = np.load(argv[1]), np.load(argv[2])
    rtol, overrides = 2e-3, []
    for arg in argv[3:]:
        if "=" in arg:
            pattern, _, value = arg.rpartition("=")
            overrides.append((pattern, float(value)))
        else:
            rtol = float(arg)
    assert sorted(ref.files) == sorted(out.files), (ref.files, out.files)
    worst = 0.0
    for name in sorted(ref.files):
        tol = rtol
        for pattern, value in overrides:
            if fnmatch.fnmatchcase(name, pattern):
                tol = value
        r, o = ref[name], out[name]
        assert r.shape == o.shape, (name, r.shape, o.shape)
        if r.dtype.kind in "iub":
            bad = int(np.count_nonzero(r != o))
            print(f"{name}: {bad} of {r.size} elements differ")
            assert bad == 0, f"{name}: integer outputs differ"
            continue
        r, o = r.astype(np.float64), o.astype(np.float64)
        finite = np.isfinite(r)
        assert np.all(np.isfinite(o[finite])), \
            f"{name}: non-finite values (uninitialised memory?)"
        assert np.array_equal(r[~finite], o[~finite], equal_nan=True), \
            f"{name}: non-finite values differ from the reference"
        r, o = r[finite], o[finite]
        scale = max(float(np.abs(r).max(initial=0.0)), 1e-30)
        err = float(np.abs(r - o).max(initial=0.0)) / scale
        worst = max(worst, err)
        print(f"{name}: max error / max |ref| = {err:.2e}")
        assert err <= tol, f"{name}: error {err:.2e} above {tol}"
    print(f"largest error {worst:.2e}")
    print(f"{len(ref.files)} outputs match")


if __name__ == "__main__":
    main(sys.argv)
