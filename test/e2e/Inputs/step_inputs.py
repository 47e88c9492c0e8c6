"""Makes trn-eval's random inputs of a training-step graph sensible for a
training step: a small positive learning rate, step 3, non-negative Adam
second moments, causal masks for the `*.future` buffers.

    step_inputs.py IN.npz OUT.npz
"""
import sys

import numpy as np


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: step_inputs.py IN.npz OUT.npz")
    arrays = dict(np.load(argv[1]))
    for name, value in arrays.items():
        if name == "lr":
            arrays[name] = np.array(0.01, dtype=value.dtype)
        elif name == "step":
            arrays[name] = np.array(3.0, dtype=value.dtype)
        elif name.startswith("exp_avg_sq"):
            arrays[name] = np.abs(value) * 0.01
        elif name.endswith("future"):
            arrays[name] = np.triu(np.ones(value.shape, dtype=bool), 1)
    np.savez(argv[2], **arrays)


if __name__ == "__main__":
    main(sys.argv)
