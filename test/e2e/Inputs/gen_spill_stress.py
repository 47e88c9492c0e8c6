#!/usr/bin/env python3
"""Generates a random nc kernel that must spill SBUF tiles, with inputs and
the outputs an exact numpy model of the same program computes.

    gen_spill_stress.py --seed S --out DIR [--slack BYTES]

writes

  DIR/kernel.mlir    an nc kernel before nc-allocate: f32 HBM inputs and
                     outputs, 12-20 SBUF tiles of 128 partitions, 40-80
                     random instructions that use the tiles far apart,
                     then a store of every tile
  DIR/inputs.npz     the inputs, by nc.name
  DIR/expected.npz   the outputs, by nc.name, from the numpy model
  DIR/sbuf-bytes     the SBUF bytes per partition to give nc-allocate:
                     -nc-allocate=sbuf-bytes=$(cat DIR/sbuf-bytes)

and prints a one-line summary. The same seed gives the same files.

The program. Tiles are [128, F] or [128, A, B] f32 with F (or A * B) a
multiple of 64 in [64, 1024]. Instructions are loads (dma_copy from an HBM
view of an input: contiguous, strided, or transposing from a [W, 128]
input), memsets, tensor_copy, SBUF-to-SBUF dma_copy, tensor_tensor add,
subtract and max (in place or out of place), stores into outputs, and
round trips through HBM scratch (an nc.hbm_alloc stored once and loaded
from one to three times later, as the lowering's intermediates). Every
tile operand is the whole tile or an nc.view of it: a contiguous or strided
window, rows of a 1-D tile, columns or the transpose of a 2-D tile, or a
reversed run. Views are defined either next to their tile's nc.alloc, shared
by all their users (nc-allocate rebuilds them on a reloaded tile), or just
before their instruction. The operands of one instruction have the same
number of elements; their free shapes may differ (elements pair up by
row-major position, docs/isa.md section 3). Within one instruction, the
destination and a source on the same tile are the same elements in the same
order (in place) or disjoint. A tile's first write covers all of it, and
sources only read tiles written before (trn-run --poison fills the rest with
NaN). Every output is stored exactly once and whole, from an n-element
operand into a [128, n] output or, transposing, into an [n, 128] one: two
to four outputs in the middle of the program or at its end, and then the
final contents of every tile, so that a corrupted tile shows.

Values are small integers that stay below 2^20 in magnitude (an add or
subtract that would leave that range becomes a max), so f32 arithmetic is
exact and the simulator must match the model bit for bit.

Allocation. Two to four "late" tiles are allocated at the top of the kernel
and first written in the second half of the program (nc-allocate moves them
down for free); the others are allocated up to 7 instructions before their
first write. sbuf-bytes is the largest sum of the distinct tiles one
instruction touches, rounded up to 64 bytes, plus slack (4 KiB by default,
the largest tile). nc-allocate only spills a tile whose next use comes after
the first use of the tile it makes room for, so:
  - a tile's allocation is moved down until it, plus the tiles the
    instructions from there to its first write touch, fit in that largest
    sum;
  - the late tiles are allocated latest first use first, so each of them can
    displace the ones allocated before it.
Those sums always fit, but nc-allocate does not move the tiles an
instruction needs, so the space they leave can be split into holes none of
which holds the new tile: then it reports "SBUF is full". The slack makes
that rare (about one program in eight at 4 KiB); test/e2e/spill-stress.test
uses seeds that allocate.
The tiles holding data that a later instruction reads must, at some point,
take more than sbuf-bytes, so spills are certain; programs where they do
not are drawn again.
"""

import argparse
import os
import sys

import numpy as np

PARTITIONS = 128
ELEMENT_BYTES = 4
# Values stay below this in magnitude: f32 holds every integer up to 2^24.
VALUE_LIMIT = 2.0 ** 20
# Bytes per partition added to the largest instruction's tiles.
SLACK_BYTES = 4096
# Instructions a tile may be allocated before its first write.
MAX_ALLOC_GAP = 7


def round_up(value, multiple):
    return (value + multiple - 1) // multiple * multiple


def pattern(offset, shape, strides):
    """The element offsets offset + sum(i_d * strides[d]) of an access
    pattern, in row-major order of `shape`."""
    index = np.full(shape, offset, dtype=np.int64)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        axis = [1] * len(shape)
        axis[d] = size
        steps = np.arange(size, dtype=np.int64) * stride
        index = index + steps.reshape(axis)
    return index.reshape(-1)


def row_major_strides(shape):
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def dims(shape):
    return "x".join(str(size) for size in shape)


def tile_type(memory, shape):
    return f"!nc.tile<{memory}, {PARTITIONS}x{dims(shape)}xf32>"


#===----------------------------------------------------------------------===#
# The model: tiles, operands, HBM tensors
#===----------------------------------------------------------------------===#


class Tile:
    """An SBUF tile [128, shape...] and its contents: `value` holds every
    partition's elements in row-major order, `defined` which of them have
    been written (the same in every partition: operands span all 128)."""

    def __init__(self, index, shape):
        self.index = index
        self.shape = tuple(shape)
        self.elements = int(np.prod(shape))
        self.bytes = self.elements * ELEMENT_BYTES
        self.value = np.zeros((PARTITIONS, self.elements))
        self.defined = np.zeros(self.elements, dtype=bool)
        # Allocated at the top of the kernel and not written before
        # instruction `writable_from`.
        self.late = False
        self.writable_from = 0

    @property
    def name(self):
        return f"%t{self.index}"

    @property
    def type(self):
        return tile_type("sbuf", self.shape)


class Operand:
    """A whole tile (strides None) or an nc.view of one."""

    def __init__(self, tile, shape, offset=0, strides=None):
        self.tile = tile
        self.shape = tuple(shape)
        self.offset = offset
        self.strides = None if strides is None else tuple(strides)
        # The tile elements the operand's elements are, in order.
        self.index = pattern(offset, self.shape,
                             row_major_strides(self.shape)
                             if strides is None else strides)
        self.count = len(self.index)

    @property
    def is_view(self):
        return self.strides is not None

    @property
    def key(self):
        return (self.tile.index, self.shape, self.offset, self.strides)

    @property
    def type(self):
        return tile_type("sbuf", self.shape)

    def readable(self):
        return bool(self.tile.defined[self.index].all())

    def read(self):
        return self.tile.value[:, self.index]

    def write(self, value):
        self.tile.value[:, self.index] = value
        self.tile.defined[self.index] = True


class Hbm:
    """A kernel argument: an input or an output, [128, W] (partition p is
    row p) or `transposed` [W, 128] (partition p is column p)."""

    def __init__(self, name, kind, shape, transposed, data):
        self.name = name
        self.kind = kind
        self.shape = tuple(shape)
        self.transposed = transposed
        self.data = data

    @property
    def width(self):
        return self.shape[0] if self.transposed else self.shape[1]

    @property
    def type(self):
        return f"!nc.hbm<{dims(self.shape)}xf32>"


class HbmOperand:
    """A tile-shaped DMA window of an HBM tensor: element (p, i...) is
    element offset + p * partition_stride + sum(i_d * strides[d]) of the
    row-major tensor."""

    def __init__(self, tensor, shape, offset, partition_stride, strides):
        self.tensor = tensor
        self.shape = tuple(shape)
        self.offset = offset
        self.partition_stride = partition_stride
        self.strides = tuple(strides)
        self.index = (np.arange(PARTITIONS, dtype=np.int64)[:, None] *
                      partition_stride + pattern(offset, shape, strides)[None])
        assert 0 <= self.index.min()
        assert self.index.max() < tensor.data.size

    @property
    def type(self):
        return tile_type("hbm", self.shape)


class Instruction:
    """kind: load, store, dma (SBUF to SBUF), memset, copy or tensor_tensor
    (`op`). Compute instructions have an `engine`, DMAs a `queue`."""

    def __init__(self, kind, dst, srcs, op=None, engine=None, queue=None,
                 value=None):
        self.kind = kind
        self.dst = dst
        self.srcs = srcs
        self.op = op
        self.engine = engine
        self.queue = queue
        self.value = value

    @property
    def operands(self):
        return [self.dst] + self.srcs

    def tiles(self):
        """The distinct tiles the instruction touches."""
        found = {}
        for operand in self.operands:
            if isinstance(operand, Operand):
                found[operand.tile.index] = operand.tile
        return list(found.values())

    def writes(self, tile):
        return isinstance(self.dst, Operand) and self.dst.tile is tile

    def reads(self, tile):
        return any(isinstance(src, Operand) and src.tile is tile
                   for src in self.srcs)


#===----------------------------------------------------------------------===#
# The generator
#===----------------------------------------------------------------------===#


class Generator:
    def __init__(self, seed, slack):
        self.rng = np.random.default_rng(seed)
        self.slack = slack

    def pick(self, items):
        return items[int(self.rng.integers(len(items)))]

    def engine(self):
        return "gpsimd" if self.rng.random() < 0.3 else "vector"

    def queue(self):
        return int(self.rng.integers(0, 16))

    # Operands.

    def random_operand(self, tile, count):
        """A random operand of `count` elements of `tile` (whole or a view),
        or None if the tile has fewer elements."""
        rng, size = self.rng, tile.elements
        if count > size:
            return None
        forms = ["reverse"]
        if count == size:
            forms += ["whole"] * 4
            if len(tile.shape) == 2:
                forms += ["transpose"]
        else:
            forms += ["window"] * 2
        if (count - 1) * 2 + 1 <= size:
            forms += ["strided"] * 2
        if count > 64 and len(tile.shape) == 1:
            forms += ["rows"]
        if len(tile.shape) == 2 and count % tile.shape[0] == 0 and \
                count // tile.shape[0] < tile.shape[1]:
            forms += ["columns"] * 2
        form = self.pick(forms)
        if form == "whole":
            return Operand(tile, tile.shape)
        if form == "transpose":
            rows, cols = tile.shape
            return Operand(tile, (cols, rows), 0, (1, cols))
        if form == "window":
            offset = int(rng.integers(0, size - count + 1))
            return Operand(tile, (count,), offset, (1,))
        if form == "strided":
            stride = self.pick([s for s in (2, 3, 4)
                                if (count - 1) * s + 1 <= size])
            span = (count - 1) * stride + 1
            offset = int(rng.integers(0, size - span + 1))
            return Operand(tile, (count,), offset, (stride,))
        if form == "rows":
            # Rows of `cols` elements, `pitch` apart.
            cols = self.pick([16, 32, 64])
            rows = count // cols
            pitch = int(rng.integers(cols, (size - cols) // (rows - 1) + 1))
            span = (rows - 1) * pitch + cols
            offset = int(rng.integers(0, size - span + 1))
            return Operand(tile, (rows, cols), offset, (pitch, 1))
        if form == "columns":
            rows, cols = tile.shape
            width = count // rows
            offset = int(rng.integers(0, cols - width + 1))
            return Operand(tile, (rows, width), offset, (cols, 1))
        assert form == "reverse"
        start = int(rng.integers(count - 1, size))
        return Operand(tile, (count,), start, (-1,))

    def random_count(self, tile):
        """The whole tile half of the time and always on a tile without data
        (see writable_tiles), else a multiple of 64 below."""
        if tile.elements == 64 or not tile.defined.any() or \
                self.rng.random() < 0.5:
            return tile.elements
        return 64 * int(self.rng.integers(1, tile.elements // 64))

    def readable_operand(self, count=None):
        """An operand (of `count` elements if given) whose elements all hold
        data, or None."""
        tiles = [t for t in self.tiles if t.defined.any() and
                 (count is None or t.elements >= count)]
        if not tiles:
            return None
        for _ in range(40):
            tile = self.pick(tiles)
            operand = self.random_operand(
                tile, self.random_count(tile) if count is None else count)
            if operand is not None and operand.readable():
                return operand
        return None

    @staticmethod
    def compatible(dst, srcs):
        """On a shared tile, dst and each source are the same elements in the
        same order or disjoint."""
        for src in srcs:
            if src.tile is not dst.tile or \
                    np.array_equal(src.index, dst.index):
                continue
            if np.intersect1d(src.index, dst.index).size:
                return False
        return True

    def writable_tiles(self, position, count=None):
        """The tiles an instruction at `position` may write `count` elements
        of (any number if None). A tile's first write covers all of it, so
        that tiles hold data everywhere or nowhere."""
        return [t for t in self.tiles if t.writable_from <= position and
                (count is None or t.elements == count or
                 t.elements > count and t.defined.any())]

    def destination(self, count, srcs, position):
        """A writable operand of `count` elements compatible with `srcs`,
        often on a tile that holds no data yet; None if none is found."""
        writable = self.writable_tiles(position, count)
        if not writable:
            return None
        fresh = [t for t in writable if not t.defined.any()]
        for attempt in range(40):
            if fresh and attempt < 10 and self.rng.random() < 0.5:
                tile = self.pick(fresh)
            else:
                tile = self.pick(writable)
            operand = self.random_operand(tile, count)
            if operand is not None and self.compatible(operand, srcs):
                return operand
        return None

    def hbm_window(self, tensor, count, whole):
        """A DMA window of `count` elements per partition of `tensor`: the
        whole tensor, or a random (maybe stride-2) run of each row, or of
        each column of a transposed tensor."""
        stride, start = 1, 0
        if not whole:
            if (count - 1) * 2 + 1 <= tensor.width and \
                    self.rng.random() < 0.3:
                stride = 2
            span = (count - 1) * stride + 1
            start = int(self.rng.integers(0, tensor.width - span + 1))
        if tensor.transposed:
            return HbmOperand(tensor, (count,), start * PARTITIONS, 1,
                              (stride * PARTITIONS,))
        if stride == 1 and count > 64 and self.rng.random() < 0.3:
            return HbmOperand(tensor, (count // 64, 64), start, tensor.width,
                              (64, 1))
        return HbmOperand(tensor, (count,), start, tensor.width, (stride,))

    # Instructions. Each returns None if it finds no suitable operands.

    def load(self, position, tensor=None):
        """Loads from `tensor` (an HBM scratch tensor) or a random input."""
        tensor = tensor or self.pick(self.inputs)
        writable = [t for t in self.writable_tiles(position)
                    if t.defined.any() or t.elements <= tensor.width]
        if not writable:
            return None
        fresh = [t for t in writable if not t.defined.any()]
        tile = self.pick(fresh if fresh and self.rng.random() < 0.6
                         else writable)
        count = self.random_count(tile)
        while count > tensor.width:
            count = 64 * int(self.rng.integers(1, tensor.width // 64 + 1))
        dst = self.random_operand(tile, count)
        src = self.hbm_window(tensor, dst.count, whole=False)
        dst.write(tensor.data.reshape(-1)[src.index])
        return Instruction("load", dst, [src], queue=self.queue())

    def memset(self, position):
        tile = self.pick(self.writable_tiles(position))
        dst = self.random_operand(tile, self.random_count(tile))
        value = float(self.rng.integers(-4, 5))
        dst.write(np.full((PARTITIONS, dst.count), value))
        return Instruction("memset", dst, [], engine=self.engine(),
                           value=value)

    def copy(self, position, kind):
        src = self.readable_operand()
        if src is None:
            return None
        dst = self.destination(src.count, [src], position)
        if dst is None or (dst.tile is src.tile and
                           np.array_equal(dst.index, src.index)):
            return None
        dst.write(src.read())
        if kind == "dma":
            return Instruction("dma", dst, [src], queue=self.queue())
        return Instruction("copy", dst, [src], engine=self.engine())

    def tensor_tensor(self, position):
        lhs = self.readable_operand()
        if lhs is None:
            return None
        rhs = self.readable_operand(lhs.count) or lhs
        if self.rng.random() < 0.2:
            lhs, rhs = rhs, lhs
        # lhs holds data, so it is writable.
        if self.rng.random() < 0.4 and self.compatible(lhs, [rhs]):
            dst = lhs
        else:
            dst = self.destination(lhs.count, [lhs, rhs], position)
            if dst is None:
                return None
        op = self.pick(["add", "add", "subtract", "max"])
        a, b = lhs.read(), rhs.read()
        result = {"add": np.add, "subtract": np.subtract,
                  "max": np.maximum}[op](a, b)
        if np.abs(result).max() > VALUE_LIMIT:
            op, result = "max", np.maximum(a, b)
        dst.write(result)
        # GpSimd has add but neither subtract nor max (docs/isa.md, 5.2).
        return Instruction("tensor_tensor", dst, [lhs, rhs], op=op,
                           engine=self.engine() if op == "add" else "vector")

    def store(self, name, kind="output", src=None):
        """Stores `src`, or a random operand holding data, into a new HBM
        tensor `name`: an output, or scratch (an nc.hbm_alloc)."""
        src = src or self.readable_operand()
        if src is None:
            return None
        value = src.read()
        if self.rng.random() < 0.3:
            tensor = Hbm(name, kind, (src.count, PARTITIONS), True,
                         value.T.copy())
        else:
            tensor = Hbm(name, kind, (PARTITIONS, src.count), False,
                         value.copy())
        (self.outputs if kind == "output" else self.scratch).append(tensor)
        dst = self.hbm_window(tensor, src.count, whole=True)
        assert np.array_equal(tensor.data.reshape(-1)[dst.index], value)
        return Instruction("store", dst, [src], queue=self.queue())

    # The program.

    def draw(self):
        """Draws the tiles, the inputs and the program, running the model."""
        rng = self.rng
        length = int(rng.integers(40, 81))
        self.tiles = []
        for index in range(int(rng.integers(12, 21))):
            elements = 64 * int(rng.integers(1, 17))
            shape = (elements,)
            inner = [b for b in (16, 32, 64, 128, 256)
                     if elements % b == 0 and elements // b >= 2]
            if inner and rng.random() < 0.35:
                cols = self.pick(inner)
                shape = (elements // cols, cols)
            self.tiles.append(Tile(index, shape))
        for tile in rng.choice(self.tiles, int(rng.integers(2, 5)),
                               replace=False):
            tile.late = True
            tile.writable_from = int(rng.integers(int(0.4 * length),
                                                  int(0.7 * length)))
        self.inputs = []
        for index in range(int(rng.integers(2, 4))):
            width = int(self.pick([1024, 1536, 2048]))
            transposed = bool(rng.random() < 0.3)
            shape = (width, PARTITIONS) if transposed else (PARTITIONS, width)
            data = rng.integers(-8, 9, size=shape).astype(np.float64)
            self.inputs.append(Hbm(f"in{index}", "input", shape, transposed,
                                   data))
        self.outputs = []
        # Intermediates in HBM scratch, as the lowering makes them: stored
        # once, loaded one to three times some instructions later (sharing
        # the scratch region with the spills by liveness).
        self.scratch = []
        scratch_loads = []
        store_at = sorted(int(rng.integers(int(0.3 * length), length + 1))
                          for _ in range(int(rng.integers(2, 5))))
        self.program = []
        while len(self.program) < length or store_at:
            position = len(self.program)
            instruction = None
            if store_at and store_at[0] <= position:
                instruction = self.store(f"out{len(self.outputs)}")
                if instruction is not None:
                    store_at.pop(0)
            elif scratch_loads and min(scratch_loads)[0] <= position:
                scratch_loads.sort()
                _, number = scratch_loads[0]
                instruction = self.load(position, self.scratch[number])
                if instruction is not None:
                    scratch_loads.pop(0)
            if instruction is None:
                kind = self.pick(["load"] * 20 + ["memset"] * 6 +
                                 ["copy"] * 12 + ["dma"] * 6 +
                                 ["scratch"] * 5 + ["tensor_tensor"] * 56)
                if kind == "scratch":
                    instruction = self.store(f"tmp{len(self.scratch)}",
                                             "scratch")
                    if instruction is not None:
                        for _ in range(int(rng.integers(1, 4))):
                            scratch_loads.append(
                                (position + int(rng.integers(2, 26)),
                                 len(self.scratch) - 1))
                elif kind == "tensor_tensor":
                    instruction = self.tensor_tensor(position)
                elif kind in ("copy", "dma"):
                    instruction = self.copy(position, kind)
                elif kind == "memset":
                    instruction = self.memset(position)
                if instruction is None:
                    instruction = self.load(position)
            self.program.append(instruction)
        for _, number in sorted(scratch_loads):
            instruction = self.load(len(self.program), self.scratch[number])
            if instruction is not None:
                self.program.append(instruction)
        # The final contents of every tile are outputs too, so that any
        # corrupted tile shows.
        for tile in self.tiles:
            if tile.defined.any():
                assert tile.defined.all()
                self.program.append(self.store(
                    f"tile{tile.index}", "output",
                    self.random_operand(tile, tile.elements)))

    def place(self):
        """Chooses where each tile is allocated and sbuf-bytes; False if the
        tiles holding data never take more than that (no spill needed)."""
        uses = {}
        for position, instruction in enumerate(self.program):
            for tile in instruction.tiles():
                uses.setdefault(tile.index, []).append(position)
        self.tiles = [t for t in self.tiles if t.index in uses]
        self.largest = max(sum(t.bytes for t in instruction.tiles())
                           for instruction in self.program)
        self.sbuf_bytes = round_up(self.largest, 64) + self.slack
        # The late tiles go first, latest first use first.
        self.top = sorted((t for t in self.tiles if t.late),
                          key=lambda t: -uses[t.index][0])
        # The other tiles, by the instruction they are allocated before.
        self.alloc_before = {}
        for tile in self.tiles:
            if tile.late:
                continue
            first = uses[tile.index][0]
            gap = min(int(self.rng.integers(0, MAX_ALLOC_GAP + 1)), first)
            while gap > 0:
                between = {t.index: t.bytes
                           for instruction in self.program[first - gap:
                                                           first + 1]
                           for t in instruction.tiles() if t is not tile}
                if tile.bytes + sum(between.values()) <= self.largest:
                    break
                gap -= 1
            self.alloc_before.setdefault(first - gap, []).append(tile)
        # The most bytes of tiles written before, and read after, a point.
        self.peak = 0
        for position in range(len(self.program)):
            self.peak = max(self.peak, sum(
                tile.bytes for tile in self.tiles
                if any(self.program[p].writes(tile)
                       for p in uses[tile.index] if p <= position) and
                any(self.program[p].reads(tile)
                    for p in uses[tile.index] if p > position)))
        return self.peak > self.sbuf_bytes

    def generate(self):
        while True:
            self.draw()
            if self.place():
                return

    # The kernel.

    def kernel(self, seed):
        lines = []
        emit = lines.append
        emit(f"// gen_spill_stress.py --seed {seed}: {len(self.tiles)} tiles, "
             f"{len(self.program)} instructions.")
        emit(f"// sbuf-bytes = {self.sbuf_bytes}: one instruction touches at "
             f"most {self.largest} bytes per partition of tiles; tiles "
             f"holding data take up to {self.peak}.")
        arguments = ",\n    ".join(
            f"%{t.name}: {t.type} {{nc.kind = \"{t.kind}\", "
            f"nc.name = \"{t.name}\"}}" for t in self.inputs + self.outputs)
        emit(f"func.func @spill_stress(\n    {arguments}) {{")

        # Half of the view operands are defined next to their tile's
        # allocation, one view for all users of the same window.
        hoisted = set()
        hoisted_by_tile = {}
        for instruction in self.program:
            for operand in instruction.operands:
                if isinstance(operand, Operand) and operand.is_view and \
                        self.rng.random() < 0.5:
                    hoisted.add(id(operand))
                    hoisted_by_tile.setdefault(operand.tile.index,
                                               {}).setdefault(operand.key,
                                                              operand)
        view_names = {}

        def view(name, source, source_type, operand, partition_stride=None):
            attributes = []
            if operand.offset:
                attributes.append(f"offset = {operand.offset}")
            if partition_stride is not None:
                attributes.append(f"partition_stride = {partition_stride}")
            strides = ", ".join(str(s) for s in operand.strides)
            suffix = f" {{{', '.join(attributes)}}}" if attributes else ""
            emit(f"  {name} = nc.view {source} strides [{strides}]{suffix} : "
                 f"{source_type} -> {operand.type}")

        def allocate(tile):
            emit(f"  {tile.name} = nc.alloc : {tile.type}")
            for number, operand in enumerate(
                    hoisted_by_tile.get(tile.index, {}).values()):
                name = f"{tile.name}_v{number}"
                view(name, tile.name, tile.type, operand)
                view_names[operand.key] = name

        for tile in self.top:
            allocate(tile)
        for position, instruction in enumerate(self.program):
            for tile in self.alloc_before.get(position, []):
                allocate(tile)
            if instruction.kind == "store" and \
                    instruction.dst.tensor.kind == "scratch":
                tensor = instruction.dst.tensor
                emit(f"  %{tensor.name} = nc.hbm_alloc \"{tensor.name}\" : "
                     f"{tensor.type}")
            values = []
            for number, operand in enumerate(instruction.operands):
                if isinstance(operand, HbmOperand):
                    name = f"%x{position}"
                    view(name, f"%{operand.tensor.name}", operand.tensor.type,
                         operand, operand.partition_stride)
                elif not operand.is_view:
                    name = operand.tile.name
                elif id(operand) in hoisted:
                    name = view_names[operand.key]
                else:
                    name = f"%v{position}_{number}"
                    view(name, operand.tile.name, operand.tile.type, operand)
                values.append(name)
            types = ", ".join(o.type for o in instruction.operands)
            engine = " on gpsimd" if instruction.engine == "gpsimd" else ""
            if instruction.kind in ("load", "store", "dma"):
                emit(f"  nc.dma_copy {values[0]}, {values[1]} "
                     f"{{queue = {instruction.queue}}} : {types}")
            elif instruction.kind == "memset":
                emit(f"  nc.memset {values[0]}, {instruction.value!r}{engine}"
                     f" : {types}")
            elif instruction.kind == "copy":
                emit(f"  nc.tensor_copy {values[0]}, {values[1]}{engine} : "
                     f"{types}")
            else:
                emit(f"  nc.tensor_tensor {instruction.op} {values[0]}, "
                     f"{values[1]}, {values[2]}{engine} : {types}")
        emit("  return")
        emit("}")
        return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(
        description="Generates a random nc kernel that must spill, its "
        "inputs and its expected outputs (see the module docstring).")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--slack", type=int, default=SLACK_BYTES,
                        help="bytes per partition added to the largest "
                        f"instruction's tiles (default {SLACK_BYTES})")
    args = parser.parse_args(argv)
    generator = Generator(args.seed, args.slack)
    generator.generate()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "kernel.mlir"), "w") as f:
        f.write(generator.kernel(args.seed))
    np.savez(os.path.join(args.out, "inputs.npz"),
             **{t.name: t.data.astype(np.float32) for t in generator.inputs})
    np.savez(os.path.join(args.out, "expected.npz"),
             **{t.name: t.data.astype(np.float32) for t in generator.outputs})
    with open(os.path.join(args.out, "sbuf-bytes"), "w") as f:
        f.write(f"{generator.sbuf_bytes}\n")
    print(f"seed {args.seed}: {len(generator.tiles)} tiles "
          f"({len(generator.top)} allocated at the top), "
          f"{len(generator.program)} instructions, {len(generator.inputs)} "
          f"inputs, {len(generator.outputs)} outputs, "
          f"{len(generator.scratch)} scratch tensors; sbuf-bytes "
          f"{generator.sbuf_bytes} (largest instruction {generator.largest}, "
          f"peak live {generator.peak})")


if __name__ == "__main__":
    main(sys.argv[1:])
