"""Edits a random-input archive from `trn-eval --random --save-inputs` in place.

    edit_inputs.py IN.npz [--abs PATTERN] [--scale PATTERN:FACTOR]
                          [--every PATTERN:STEP:VALUE] [--mod PATTERN:M] ...

trn-eval's random inputs are floats in [-1, 1) and integers in [0, --int-max).
Some graphs need other inputs; the edited archive is then fed to both trn-eval
(--inputs) and trn-run (--inputs). PATTERN is a shell-style pattern on the
input names; edits apply in the order given.

  --abs PATTERN               |x|: Adam's second moments must not be negative.
  --scale PATTERN:FACTOR      x * FACTOR, e.g. logits spread wide enough that
                              softmax depends on the max subtraction. Use a
                              power of two: it keeps bf16 inputs exact.
  --mod PATTERN:M             x mod M: integer inputs with a smaller range than
                              --int-max, e.g. BERT's token types (M = 2).
  --every PATTERN:STEP:VALUE  every STEP-th element (row-major, from the
                              first) set to VALUE, e.g. every 7th label set
                              to ignore_index (-100).
"""
import fnmatch
import sys

import numpy as np


def main(argv):
    if len(argv) < 2 or len(argv) % 2 != 0:
        sys.exit(__doc__)
    path = argv[1]
    with np.load(path) as f:
        arrays = dict(f)

    def matching(pattern):
        names = [n for n in arrays if fnmatch.fnmatchcase(n, pattern)]
        if not names:
            sys.exit(f"edit_inputs.py: no input matches '{pattern}' in {sorted(arrays)}")
        return names

    for flag, spec in zip(argv[2::2], argv[3::2]):
        if flag == "--abs":
            for n in matching(spec):
                arrays[n] = np.abs(arrays[n])
        elif flag == "--scale":
            pattern, factor = spec.rsplit(":", 1)
            for n in matching(pattern):
                arrays[n] = (arrays[n] * float(factor)).astype(arrays[n].dtype)
        elif flag == "--mod":
            pattern, modulus = spec.rsplit(":", 1)
            for n in matching(pattern):
                arrays[n] = (arrays[n] % int(modulus)).astype(arrays[n].dtype)
        elif flag == "--every":
            pattern, step, value = spec.split(":")
            for n in matching(pattern):
                arrays[n].reshape(-1)[:: int(step)] = value
        else:
            sys.exit(f"edit_inputs.py: unknown option '{flag}'\n{__doc__}")
    np.savez(path, **arrays)


if __name__ == "__main__":
    main(sys.argv)
