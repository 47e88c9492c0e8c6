//===- LowerRandom.cpp - trn.rng_uniform / trn.rng_bernoulli --------------===//
//
// Both ops draw element i (row-major) from Philox4x32-10 at counter i, so a
// tile [rows, width] at (r0, c0) of the result viewed as [R, C] is one
// nc.rng whose counter pattern is base = r0 * C + c0, channel_multiplier = C
// and a unit step along the free dim: every tile reproduces exactly the
// evaluator's values, whatever the tiling. The seed (an i64 scalar in HBM)
// is broadcast once into a [P, 2] i32 tile (its low and high words) that
// every nc.rng reads.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "trnrt/Random.h"

using namespace mlir;
using namespace mlir::trntonc;

LogicalResult Lowering::lowerRandom(Operation *op) {
  Value seed = op->getOperand(0);
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  std::optional<int64_t> keepBelow;
  float low = 0.0f, high = 1.0f;
  int64_t stream = 0;
  if (auto bernoulli = dyn_cast<trn::RngBernoulliOp>(op)) {
    keepBelow = trnrt::bernoulliThreshold24(bernoulli.getP().convertToDouble());
    stream = bernoulli.getStream();
  } else {
    auto uniform = cast<trn::RngUniformOp>(op);
    double lowValue = uniform.getLow().convertToDouble();
    double highValue = uniform.getHigh().convertToDouble();
    low = static_cast<float>(lowValue);
    high = static_cast<float>(highValue);
    // The instruction carries f32 bounds; the op's f64 bounds must survive.
    if (double(low) != lowValue || double(high) != highValue)
      return op->emitError("'trn.rng_uniform' bounds low = ")
             << lowValue << ", high = " << highValue
             << " are not lowered to NeuronCore kernels: they must be exact "
                "f32 values";
    stream = uniform.getStream();
  }
  Value out = newTensor(op->getResult(0));
  ArrayRef<int64_t> shape = type.getShape();
  int64_t cols = shape.empty() ? 1 : shape.back();
  int64_t rows = shape.empty() ? 1 : product(shape.drop_back());
  if (rows * cols == 0)
    return success();

  // [P, 2] i32: every partition reads the seed's two words (partition
  // stride 0).
  int64_t seedPartitions = std::min(kPartitions, rows);
  Type i32 = builder.getI32Type();
  auto seedWindowType = TileType::get(builder.getContext(), MemorySpace::hbm,
                                      {seedPartitions, 2}, i32);
  Value seedWindow = builder.create<ViewOp>(
      kb.loc, seedWindowType, hbmOf(seed), builder.getI64IntegerAttr(0),
      builder.getI64IntegerAttr(0), builder.getI64IntegerAttr(0),
      builder.getDenseI64ArrayAttr({1}));
  Value seedTile = kb.tile(MemorySpace::sbuf, seedPartitions, {2}, i32);
  kb.dma(seedTile, seedWindow);

  IntegerAttr keepBelowAttr =
      keepBelow ? builder.getI64IntegerAttr(*keepBelow) : IntegerAttr();
  forEachTile(shape, [&](int64_t r0, int64_t tileRows, int64_t c0,
                         int64_t width) {
    Value seedRows = tileRows == seedPartitions
                         ? seedTile
                         : kb.window(seedTile, {tileRows, 2}, 0);
    Value tile =
        kb.tile(MemorySpace::sbuf, tileRows, {width}, type.getElementType());
    builder.create<RngOp>(
        kb.loc, tile, seedRows, builder.getI64IntegerAttr(stream),
        builder.getI64IntegerAttr(r0 * cols + c0),
        builder.getI64IntegerAttr(cols), builder.getDenseI64ArrayAttr({1}),
        keepBelowAttr, builder.getF32FloatAttr(low),
        builder.getF32FloatAttr(high));
    kb.dma(kb.rowTile(out, cols, r0, tileRows, c0, width), tile);
  });
  return success();
}
