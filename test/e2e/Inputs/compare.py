"""Compares simulator outputs with reference-evaluator outputs (.npz).

Tolerances follow the dtype path: f32 results whose matmuls ran in f32 agree
to ~1e-5 relative; results that went through bf16 to bf16 rounding.
"""
import sys

import numpy as np

ref, out = np.load(sys.argv[1]), np.load(sys.argv[2])
rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 2e-3
assert sorted(ref.files) == sorted(out.files), (ref.files, out.files)
for name in sorted(ref.files):
    r, o = ref[name].astype(np.float64), out[name].astype(np.float64)
    assert r.shape == o.shape, (name, r.shape, o.shape)
    assert np.all(np.isfinite(o)), f"{name}: non-finite values (uninitialised memory?)"
    scale = max(np.abs(r).max(), 1e-30)
    err = np.abs(r - o).max() / scale
    print(f"{name}: max error / max |ref| = {err:.2e}")
    assert err <= rtol, f"{name}: error {err:.2e} above {rtol}"
print(f"{len(ref.files)} outputs match")
