//===- NCBase.td - nc dialect, types and enums -------------*- tablegen -*-===//
//
// The `nc` dialect: NeuronCore-v2 kernels (docs/isa.md).
//
//===----------------------------------------------------------------------===//

#ifndef TRN_DIALECT_NC_IR_NCBASE_TD
#define TRN_DIALECT_NC_IR_NCBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def NC_Dialect : Dialect {
  let name = "nc";
  let cppNamespace = "::mlir::nc";
  let summary = "NeuronCore-v2 kernel instructions";
  let description = [{
    The `nc` dialect is the instruction set of one NeuronCore (docs/isa.md):
    HBM tensors, SBUF and PSUM tiles, and the instructions of the Tensor,
    Vector, Scalar and GpSimd engines and of the DMA queues. Every op mirrors
    one `trnrt::Opcode` of runtime/include/trnrt/Isa.h, and its verifier
    enforces the hardware limits of the target (trn1 unless the module says
    `nc.target = "trn2"`), naming the limit it violates.

    Tiles are values of type `!nc.tile<mem, PxF...xT>`: `mem` is `sbuf`,
    `psum` or `hbm`, the first dimension is the partition dimension (at most
    128) and up to four free dimensions follow. `nc.alloc` creates an on-chip
    tile; `nc.view` selects partitions and a strided free-dimension window of
    a tile or of an HBM tensor (`!nc.hbm<shape x T>`). Instructions read their
    source tiles and write their destination tile in place.

    Ordering between engines is explicit: after scheduling, every instruction
    carries `nc.waits = [[semaphore, value], ...]` and `nc.signal = s`.
    A kernel whose tiles did not fit in SBUF records what nc-allocate spilled
    to HBM: `nc.spilled_tiles` and `nc.spilled_bytes`.
  }];
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    static constexpr ::llvm::StringLiteral getWaitsAttrName() { return "nc.waits"; }
    static constexpr ::llvm::StringLiteral getSignalAttrName() { return "nc.signal"; }
    static constexpr ::llvm::StringLiteral getTargetAttrName() { return "nc.target"; }
    static constexpr ::llvm::StringLiteral getNameAttrName() { return "nc.name"; }
    static constexpr ::llvm::StringLiteral getKindAttrName() { return "nc.kind"; }
    /// What nc-allocate spilled to HBM (kernel function attributes).
    static constexpr ::llvm::StringLiteral getSpilledTilesAttrName() { return "nc.spilled_tiles"; }
    static constexpr ::llvm::StringLiteral getSpilledBytesAttrName() { return "nc.spilled_bytes"; }
    /// A kernel that nc.call runs (a layer compiled once), not a program of
    /// its own.
    static constexpr ::llvm::StringLiteral getSubroutineAttrName() { return "nc.subroutine"; }
    /// The name of the updated value of an "inout" argument.
    static constexpr ::llvm::StringLiteral getOutputNameAttrName() { return "nc.output_name"; }
    /// A partitioned kernel's mesh (kernel attributes): axis names and their
    /// compile-time sizes, which collectives' `axes` name.
    static constexpr ::llvm::StringLiteral getMeshAxesAttrName() { return "nc.mesh_axes"; }
    static constexpr ::llvm::StringLiteral getMeshSizesAttrName() { return "nc.mesh_sizes"; }
    /// The mesh axes the kernel is one replica's step along (their size is
    /// bound at load time: data parallelism).
    static constexpr ::llvm::StringLiteral getReplicaAxesAttrName() { return "nc.replica_axes"; }
    /// A pipeline fragment kernel: {step, stage, stages, microbatches,
    /// schedule, phase, axis} (trnrt::PipelineFragment).
    static constexpr ::llvm::StringLiteral getPipelineAttrName() { return "nc.pipeline"; }
    /// A fragment's argument: how the runtime binds it, array<i64: kind,
    /// index> (trnrt::TensorPort: 1 argument, 2 microbatch, 3 stash,
    /// 4 accumulator, 5 result); nc.output_port for an inout's update.
    static constexpr ::llvm::StringLiteral getPortAttrName() { return "nc.port"; }
    static constexpr ::llvm::StringLiteral getOutputPortAttrName() { return "nc.output_port"; }
    /// How a partitioned kernel's argument maps to the global tensor: per
    /// dimension the mesh axes (indices into nc.mesh_axes, major first) that
    /// split it, and (optionally) in how many blocks; for an "inout"
    /// argument, its updated value's as nc.output_sharding/_blocks.
    static constexpr ::llvm::StringLiteral getShardingAttrName() { return "nc.sharding"; }
    static constexpr ::llvm::StringLiteral getBlocksAttrName() { return "nc.blocks"; }
    static constexpr ::llvm::StringLiteral getOutputShardingAttrName() { return "nc.output_sharding"; }
    static constexpr ::llvm::StringLiteral getOutputBlocksAttrName() { return "nc.output_blocks"; }
  }];
}

class NC_Op<string mnemonic, list<Trait> traits = []>
    : Op<NC_Dialect, mnemonic, traits>;

def NC_MemorySpace : I32EnumAttr<"MemorySpace", "NeuronCore memory", [
    I32EnumAttrCase<"hbm", 0>, I32EnumAttrCase<"sbuf", 1>,
    I32EnumAttrCase<"psum", 2>]> {
  let cppNamespace = "::mlir::nc";
}

def NC_AluOp : I32EnumAttr<"AluOp", "ALU operator", [
    I32EnumAttrCase<"bypass", 0>, I32EnumAttrCase<"add", 1>,
    I32EnumAttrCase<"subtract", 2>, I32EnumAttrCase<"multiply", 3>,
    I32EnumAttrCase<"divide", 4>, I32EnumAttrCase<"max", 5>,
    I32EnumAttrCase<"min", 6>, I32EnumAttrCase<"pow", 7>,
    I32EnumAttrCase<"is_equal", 8>, I32EnumAttrCase<"is_not_equal", 9>,
    I32EnumAttrCase<"is_less", 10>, I32EnumAttrCase<"is_less_equal", 11>,
    I32EnumAttrCase<"is_greater", 12>, I32EnumAttrCase<"is_greater_equal", 13>,
    I32EnumAttrCase<"logical_and", 14>, I32EnumAttrCase<"logical_or", 15>,
    I32EnumAttrCase<"bitwise_and", 16>, I32EnumAttrCase<"bitwise_or", 17>]> {
  let cppNamespace = "::mlir::nc";
}

def NC_ActivationFunc : I32EnumAttr<"ActivationFunc", "activation function", [
    I32EnumAttrCase<"copy", 0>, I32EnumAttrCase<"exp", 1>,
    I32EnumAttrCase<"log", 2>, I32EnumAttrCase<"tanh", 3>,
    I32EnumAttrCase<"sigmoid", 4>, I32EnumAttrCase<"relu", 5>,
    I32EnumAttrCase<"gelu", 6>, I32EnumAttrCase<"gelu_tanh", 7>,
    I32EnumAttrCase<"gelu_dx", 8>, I32EnumAttrCase<"gelu_tanh_dx", 9>,
    I32EnumAttrCase<"silu", 10>, I32EnumAttrCase<"erf", 11>,
    I32EnumAttrCase<"sqrt", 12>, I32EnumAttrCase<"rsqrt", 13>,
    I32EnumAttrCase<"reciprocal", 14>, I32EnumAttrCase<"square", 15>,
    I32EnumAttrCase<"sin", 16>, I32EnumAttrCase<"cos", 17>,
    I32EnumAttrCase<"abs", 18>, I32EnumAttrCase<"sign", 19>,
    I32EnumAttrCase<"floor", 20>, I32EnumAttrCase<"log1p", 21>,
    I32EnumAttrCase<"negate", 22>]> {
  let cppNamespace = "::mlir::nc";
}

def NC_CompareOp : I32EnumAttr<"CompareOp", "comparison", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::nc";
}

def NC_Engine : I32EnumAttr<"Engine", "engine", [
    I32EnumAttrCase<"tensor", 0>, I32EnumAttrCase<"vector", 1>,
    I32EnumAttrCase<"scalar", 2>, I32EnumAttrCase<"gpsimd", 3>,
    I32EnumAttrCase<"sync", 4>, I32EnumAttrCase<"dma", 5>]> {
  let cppNamespace = "::mlir::nc";
}

def NC_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how a collective combines its group's values", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"mean", 3>]> {
  let cppNamespace = "::mlir::nc";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class NC_Type<string name, string typeMnemonic> : TypeDef<NC_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def NC_TileType : NC_Type<"Tile", "tile"> {
  let summary = "a tile in SBUF, PSUM or (as a DMA window) HBM";
  let description = [{
    `!nc.tile<sbuf, 128x4x512xbf16>`: dimension 0 is the partition dimension;
    the rest are free dimensions (1 to 4), row-major within each partition.
  }];
  let parameters = (ins "::mlir::nc::MemorySpace":$memory,
                        ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getPartitions() const { return getShape().front(); }
    ::llvm::ArrayRef<int64_t> getFreeShape() const {
      return getShape().drop_front();
    }
    /// Elements per partition.
    int64_t getFreeElements() const;
    /// Bytes per partition.
    int64_t getFreeBytes() const;
  }];
}

def NC_HbmType : NC_Type<"Hbm", "hbm"> {
  let summary = "a tensor in HBM";
  let description = "`!nc.hbm<1024x768xbf16>`, row-major.";
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // TRN_DIALECT_NC_IR_NCBASE_TD
