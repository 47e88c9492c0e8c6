"""Inputs and checks for the trn-run test of the nc matmul kernel.

Values are multiples of 1/4 in [-2, 2], exact in bf16, so c = a^T b is exact in
fp32 and the simulator's result must match NumPy bit for bit.
"""
import json
import sys

import numpy as np

command = sys.argv[1]
if command == "make":
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 9, size=(128, 128)).astype(np.float32) / 4
    b = rng.integers(-8, 9, size=(128, 512)).astype(np.float32) / 4
    np.savez(sys.argv[2], a=a, b=b)
    np.savez(sys.argv[3], a=a, b=b[:, :256])  # wrong shape for b
elif command == "check":
    inputs, outputs = np.load(sys.argv[2]), np.load(sys.argv[3])
    expected = inputs["a"].T.astype(np.float64) @ inputs["b"].astype(np.float64)
    got = outputs["c"]
    assert got.dtype == np.float32 and got.shape == (128, 512), (got.dtype, got.shape)
    assert np.array_equal(got, expected.astype(np.float32)), np.abs(got - expected).max()
    print("matmul exact:", got.shape)
elif command == "profile":
    trace = json.load(open(sys.argv[2]))
    events = trace["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    threads = sorted(e["args"]["name"] for e in events if e.get("name") == "thread_name")
    assert all(e["dur"] > 0 for e in slices)
    print(len(slices), "slices on", ", ".join(threads))
