"""Writes and checks .npz files with NumPy for the trn-eval interop tests."""
import sys

import numpy as np


def main():
    command, path = sys.argv[1], sys.argv[2]
    if command == "write":
        np.savez(path, x=np.arange(6, dtype=np.float64).reshape(2, 3) + 0.25,
                 ids=np.array([3, 1], dtype=np.int32))
    elif command == "write-compressed-bad-shape":
        np.savez_compressed(path, x=np.zeros((3, 2), np.float32), ids=np.zeros(2, np.int64))
    elif command == "write-float-ids":
        np.savez(path, x=np.zeros((2, 3), np.float32), ids=np.zeros(2, np.float32))
    elif command == "check":
        out = np.load(path)
        assert sorted(out.files) == ["ids_out", "y", "y_bf16"], out.files
        expected = 2 * (np.arange(6, dtype=np.float32).reshape(2, 3) + 0.25)
        assert out["y"].dtype == np.float32 and np.array_equal(out["y"], expected), out["y"]
        assert out["ids_out"].dtype == np.int64 and out["ids_out"].tolist() == [3, 1]
        # bf16 outputs are widened exactly to float32: 10.5 needs 5 significant bits.
        assert out["y_bf16"].dtype == np.float32 and np.array_equal(out["y_bf16"], expected)
        print("npz ok")
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main()
