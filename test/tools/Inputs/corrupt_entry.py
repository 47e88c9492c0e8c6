"""Flips one byte in the largest file of a cache entry (trn-cache tests)."""
import pathlib
import sys

root, key = pathlib.Path(sys.argv[1]), sys.argv[2]
entries = list(root.glob(f"trncc-*/{key}"))
assert len(entries) == 1, f"entry {key} not found under {root}"
victim = max((p for p in entries[0].iterdir() if p.is_file()), key=lambda p: p.stat().st_size)
data = bytearray(victim.read_bytes())
data[len(data) // 2] ^= 0x40
victim.write_bytes(bytes(data))
print(f"flipped a byte of {victim.name}")
