//===- NCTranslations.cpp - trn-translate registrations for nc -----------===//
//
//   --nc-to-artifact          the kernel as a binary trn artifact
//   --nc-to-program-summary   the program's streams as text (for tests)
//
//===----------------------------------------------------------------------===//

#include "trn/Target/NCToProgram.h"

#include "trn/Dialect/NC/IR/NCOps.h"

#include "trnrt/Artifact.h"
#include "trnrt/IsaValidate.h"
#include "trnrt/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::nc;

namespace {

FailureOr<trnrt::Program> exportModule(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  SmallVector<func::FuncOp> kernels;
  if (module)
    kernels.assign(module.getOps<func::FuncOp>().begin(),
                   module.getOps<func::FuncOp>().end());
  if (kernels.size() != 1)
    return op->emitError("expected a module with exactly one kernel "
                         "function, found ")
           << kernels.size();
  FailureOr<trnrt::Program> program = exportProgram(kernels.front());
  if (failed(program))
    return failure();
  // The exporter's output must satisfy the hardware rules and complete: a
  // failure here is a compiler bug, reported before anything runs it.
  std::string error;
  const trnrt::Target *target = trnrt::lookupTarget(program->target);
  if (!target || !trnrt::validateProgram(*program, *target, error) ||
      !trnrt::checkSemaphoresCanComplete(*program, error))
    return kernels.front().emitError("exported program is invalid: ") << error;
  return program;
}

void printPattern(llvm::raw_ostream &os, const trnrt::AccessPattern &ap) {
  static const char *memories[] = {"hbm", "sbuf", "psum"};
  os << memories[static_cast<int>(ap.memory)] << ":"
     << trnrt::dtypeName(ap.dtype) << "@" << ap.byteOffset;
  if (ap.memory == trnrt::Memory::Hbm)
    os << " p" << ap.numPartitions << "x" << ap.partitionStride;
  else
    os << " p" << ap.startPartition << "+" << ap.numPartitions;
  os << " [";
  for (size_t i = 0; i < ap.dims.size(); ++i)
    os << (i ? "," : "") << ap.dims[i].size << ":" << ap.dims[i].stride;
  os << "]";
}

void printStream(llvm::raw_ostream &os, const char *name,
                 const std::vector<trnrt::Instruction> &stream) {
  for (size_t i = 0; i < stream.size(); ++i) {
    const trnrt::Instruction &inst = stream[i];
    os << name << "[" << i << "] " << trnrt::opcodeName(inst.opcode);
    // A send writes nothing of its own.
    if (inst.opcode != trnrt::Opcode::Send) {
      os << " ";
      printPattern(os, inst.dst);
    }
    for (const trnrt::AccessPattern &src : inst.srcs) {
      os << " <- ";
      printPattern(os, src);
    }
    if (trnrt::isCollectiveOpcode(inst.opcode))
      os << " axes(" << inst.meshAxes << ")";
    if (inst.opcode == trnrt::Opcode::Send ||
        inst.opcode == trnrt::Opcode::Recv)
      os << " peer(" << inst.peer << ") tag(" << inst.tag << ")";
    for (const trnrt::SemaphoreWait &wait : inst.waits)
      os << " wait(s" << wait.semaphore << ">=" << wait.value << ")";
    if (inst.signal >= 0)
      os << " signal(s" << inst.signal << ")";
    os << "\n";
  }
}

} // namespace

void mlir::nc::registerNCTranslations() {
  auto dialects = [](DialectRegistry &registry) {
    registry.insert<NCDialect, func::FuncDialect>();
  };
  TranslateFromMLIRRegistration toArtifact(
      "nc-to-artifact", "translate an nc kernel to a trn artifact",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        FailureOr<trnrt::Program> program = exportModule(op);
        if (failed(program))
          return failure();
        trnrt::ArtifactInfo info;
        info.compilerVersion = "trn-translate";
        std::vector<uint8_t> bytes;
        std::string error;
        if (!trnrt::writeArtifact(*program, info, bytes, error))
          return op->emitError("cannot write the artifact: ") << error;
        os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
        return success();
      },
      dialects);
  TranslateFromMLIRRegistration toSummary(
      "nc-to-program-summary", "print the program of an nc kernel as text",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        FailureOr<trnrt::Program> program = exportModule(op);
        if (failed(program))
          return failure();
        os << "target " << program->target << ", hbm " << program->hbmBytes
           << " bytes, " << program->numSemaphores << " semaphores\n";
        for (const trnrt::HbmTensor &tensor : program->tensors)
          os << "tensor " << tensor.name << " @" << tensor.offset << "\n";
        static const char *names[] = {"tensor", "vector", "scalar", "gpsimd",
                                      "sync"};
        for (size_t e = 0; e < program->engineStreams.size(); ++e)
          printStream(os, names[e], program->engineStreams[e]);
        for (size_t q = 0; q < program->dmaQueues.size(); ++q) {
          std::string name = "dma" + std::to_string(q);
          printStream(os, name.c_str(), program->dmaQueues[q]);
        }
        return success();
      },
      dialects);
}
