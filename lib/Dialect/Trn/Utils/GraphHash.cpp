//===- GraphHash.cpp - canonical hash of a trn graph ----------------------===//
//
// The canonical form is a line-oriented text, one line per op:
//
//   %7 = trn.add(%5#0, ^1#2) <{inherent attrs}> {discardable attrs} : (types)
//
// with regions as `{` / `^block(arg types)` ... `}` lines below their op. Ops
// and blocks are numbered in pre-order, so operands name their producer by
// position and SSA names never enter. Types and attributes are printed once
// each (they are uniqued, so a DenseMap memoises them) and later written as
// bytes; the text streams through a small buffer into XXH3, so hashing
// allocates nothing per op.
//
//===----------------------------------------------------------------------===//

#include "trn/Dialect/Trn/Utils/GraphHash.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/raw_ostream.h"

#include <xxhash.h>

#include <charconv>
#include <cstring>
#include <limits>
#include <memory>

using namespace mlir;
using mlir::trn::Hash128;
using mlir::trn::hashBytes;

namespace {

/// Streams the canonical form into XXH3-128 through a fixed buffer and,
/// for canonicalForm(), into a string as well.
class CanonicalWriter {
public:
  explicit CanonicalWriter(std::string *text)
      : state(XXH3_createState()), text(text),
        buffer(std::make_unique<char[]>(kBufferSize)) {
    XXH3_128bits_reset(state);
  }
  ~CanonicalWriter() { XXH3_freeState(state); }
  CanonicalWriter(const CanonicalWriter &) = delete;
  CanonicalWriter &operator=(const CanonicalWriter &) = delete;

  void write(llvm::StringRef bytes) {
    if (used + bytes.size() > kBufferSize) {
      flush();
      if (bytes.size() > kBufferSize) {
        consume(bytes.data(), bytes.size());
        return;
      }
    }
    std::memcpy(buffer.get() + used, bytes.data(), bytes.size());
    used += bytes.size();
  }
  void write(char c) {
    if (used == kBufferSize)
      flush();
    buffer[used++] = c;
  }
  void writeUInt(uint64_t value) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
    write(llvm::StringRef(digits, end - digits));
  }
  void writeIndent(unsigned depth) {
    for (unsigned i = 0; i < depth; ++i)
      write(llvm::StringRef("  "));
  }

  Hash128 finish(uint64_t &totalBytes) {
    flush();
    totalBytes = total;
    XXH128_hash_t digest = XXH3_128bits_digest(state);
    return Hash128{digest.high64, digest.low64};
  }

private:
  static constexpr size_t kBufferSize = 64 * 1024;

  void flush() {
    consume(buffer.get(), used);
    used = 0;
  }
  void consume(const char *data, size_t size) {
    XXH3_128bits_update(state, data, size);
    if (text)
      text->append(data, size);
    total += size;
  }

  XXH3_state_t *state;
  std::string *text;
  std::unique_ptr<char[]> buffer;
  size_t used = 0;
  uint64_t total = 0;
};

/// Raw data up to this size is written inline as hex; larger data as its
/// XXH3-128 digest (constants can be megabytes).
constexpr size_t kInlineRawBytes = 32;

class GraphCanonicalizer {
public:
  GraphCanonicalizer(Operation *root, CanonicalWriter &out)
      : root(root), out(out), asmState(root->getContext(), printingFlags()),
        saver(allocator) {}

  void run() {
    // Sizing the maps up front avoids rehashing 100k-entry tables.
    size_t numOps = 0, numBlocks = 0;
    root->walk([&](Operation *op) {
      ++numOps;
      for (Region &region : op->getRegions())
        numBlocks += region.getBlocks().size();
    });
    opIndex.reserve(numOps);
    blockIndex.reserve(numBlocks);
    numberSymbols();
    numberOps(root);
    out.write(llvm::StringRef(trn::kGraphHashVersion));
    out.write('\n');
    writeOp(root, 0);
  }

  uint64_t numOperations() const { return opIndex.size(); }

private:
  /// Printing must not depend on the tool's --mlir-print-* options: the same
  /// graph must hash the same in every tool.
  static OpPrintingFlags printingFlags() {
    OpPrintingFlags flags;
    flags.elideLargeElementsAttrs(std::numeric_limits<int64_t>::max());
    flags.printLargeElementsAttrWithHex(-1);
    flags.elideLargeResourceString(std::numeric_limits<int64_t>::max());
    flags.enableDebugInfo(false);
    flags.printGenericOpForm(false);
    return flags;
  }

  /// The root's top-level symbols (functions) are known by their position:
  /// renaming a function does not change the graph.
  void numberSymbols() {
    auto symbolName = [](Operation *op) {
      return op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    };
    if (!isa<ModuleOp>(root)) {
      if (StringAttr name = symbolName(root))
        symbolIndex[name] = 0;
      return;
    }
    for (Region &region : root->getRegions())
      for (Block &block : region)
        for (Operation &op : block)
          if (StringAttr name = symbolName(&op))
            symbolIndex.try_emplace(name, symbolIndex.size());
  }

  /// Numbers ops and blocks in the pre-order writeOp() follows, ahead of
  /// writing, so that uses before definitions (graph regions, successors)
  /// resolve too.
  void numberOps(Operation *op) {
    opIndex.try_emplace(op, opIndex.size());
    for (Region &region : op->getRegions()) {
      for (Block &block : region) {
        blockIndex.try_emplace(&block, blockIndex.size());
        for (Operation &nested : block)
          numberOps(&nested);
      }
    }
  }

  bool isTopLevelSymbol(Operation *op) const {
    return op == root || op->getParentOp() == root;
  }

  void writeOp(Operation *op, unsigned depth) {
    out.writeIndent(depth);
    out.write('%');
    out.writeUInt(opIndex.lookup(op));
    out.write(llvm::StringRef(" = "));
    if (op->isRegistered()) {
      out.write(op->getName().getStringRef());
    } else {
      // An unregistered name may hold any character; quote it.
      out.write(quoted(op->getName().getStringRef()));
    }

    out.write('(');
    bool first = true;
    for (Value operand : op->getOperands()) {
      if (!first)
        out.write(llvm::StringRef(", "));
      first = false;
      writeValue(operand);
    }
    out.write(')');

    if (op->getNumSuccessors()) {
      out.write(llvm::StringRef(" ["));
      for (unsigned i = 0, e = op->getNumSuccessors(); i < e; ++i) {
        if (i)
          out.write(llvm::StringRef(", "));
        writeBlockRef(op->getSuccessor(i));
      }
      out.write(']');
    }

    writeAttributes(op);

    out.write(llvm::StringRef(" : ("));
    first = true;
    for (Type type : op->getResultTypes()) {
      if (!first)
        out.write(llvm::StringRef(", "));
      first = false;
      out.write(typeText(type));
    }
    out.write(')');
    out.write('\n');

    for (Region &region : op->getRegions()) {
      out.writeIndent(depth + 1);
      out.write(llvm::StringRef("{\n"));
      for (Block &block : region) {
        out.writeIndent(depth + 1);
        writeBlockRef(&block);
        out.write('(');
        for (BlockArgument argument : block.getArguments()) {
          if (argument.getArgNumber())
            out.write(llvm::StringRef(", "));
          out.write(typeText(argument.getType()));
        }
        out.write(llvm::StringRef(")\n"));
        for (Operation &nested : block)
          writeOp(&nested, depth + 2);
      }
      out.writeIndent(depth + 1);
      out.write(llvm::StringRef("}\n"));
    }
  }

  void writeAttributes(Operation *op) {
    bool topLevel = isTopLevelSymbol(op);
    auto function = topLevel ? dyn_cast<FunctionOpInterface>(op) : nullptr;
    StringRef symbolAttrName = SymbolTable::getSymbolAttrName();

    // Inherent attributes (properties) in their registered order.
    std::optional<RegisteredOperationName> info = op->getRegisteredInfo();
    if (info) {
      bool any = false;
      for (StringAttr name : info->getAttributeNames()) {
        // Top-level symbol names are replaced by their index below; argument
        // and result attributes of functions are written per argument, so
        // that a missing dictionary and an empty one are the same.
        if (topLevel && name.getValue() == symbolAttrName)
          continue;
        std::optional<Attribute> value = op->getInherentAttr(name.getValue());
        if (!value || !*value)
          continue;
        if (function && (*value == function.getArgAttrsAttr() ||
                         *value == function.getResAttrsAttr()))
          continue;
        out.write(llvm::StringRef(any ? ", " : " <{"));
        any = true;
        out.write(name.getValue());
        out.write(llvm::StringRef(" = "));
        out.write(attrText(*value));
      }
      if (any)
        out.write(llvm::StringRef("}>"));
    } else if (Attribute properties = op->getPropertiesAsAttribute()) {
      // An unregistered op keeps its generic `<{...}>` as one attribute.
      out.write(llvm::StringRef(" <{"));
      out.write(attrText(properties));
      out.write(llvm::StringRef("}>"));
    }
    // Ops with no inherent attributes (trn.add) have no properties storage;
    // their raw dictionary is all discardable, and reading it directly avoids
    // rebuilding a DictionaryAttr per op.
    DictionaryAttr discardable =
        !info || op->getPropertiesStorage() || info->getAttributeNames().empty()
            ? op->getRawDictionaryAttrs()
            : op->getDiscardableAttrDictionary();
    if (discardable && !discardable.empty()) {
      out.write(' ');
      out.write(attrText(discardable));
    }

    if (op != root && topLevel) {
      if (auto name = op->getAttrOfType<StringAttr>(symbolAttrName)) {
        out.write(llvm::StringRef(" @#"));
        out.writeUInt(symbolIndex.lookup(name));
      }
    }

    if (function) {
      out.write(llvm::StringRef(" args["));
      for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
        if (i)
          out.write(llvm::StringRef(", "));
        writeOptionalDictionary(function.getArgAttrDict(i));
      }
      out.write(llvm::StringRef("] results["));
      for (unsigned i = 0, e = function.getNumResults(); i < e; ++i) {
        if (i)
          out.write(llvm::StringRef(", "));
        writeOptionalDictionary(function.getResultAttrDict(i));
      }
      out.write(']');
    }
  }

  void writeOptionalDictionary(DictionaryAttr dictionary) {
    if (!dictionary || dictionary.empty())
      out.write(llvm::StringRef("{}"));
    else
      out.write(attrText(dictionary));
  }

  void writeValue(Value value) {
    if (auto result = dyn_cast<OpResult>(value)) {
      auto it = opIndex.find(result.getOwner());
      if (it == opIndex.end()) {
        // Defined outside the hashed root; cannot happen for an isolated
        // function or module.
        out.write(llvm::StringRef("%outside"));
        return;
      }
      out.write('%');
      out.writeUInt(it->second);
      out.write('#');
      out.writeUInt(result.getResultNumber());
      return;
    }
    auto argument = cast<BlockArgument>(value);
    writeBlockRef(argument.getOwner());
    out.write('#');
    out.writeUInt(argument.getArgNumber());
  }

  void writeBlockRef(Block *block) {
    auto it = blockIndex.find(block);
    if (it == blockIndex.end()) {
      out.write(llvm::StringRef("^outside"));
      return;
    }
    out.write('^');
    out.writeUInt(it->second);
  }

  /// The canonical text of a type, printed once.
  llvm::StringRef typeText(Type type) {
    auto [it, inserted] = typeMemo.try_emplace(type);
    if (inserted) {
      std::string text;
      llvm::raw_string_ostream os(text);
      type.print(os, asmState);
      it->second = saver.save(os.str());
    }
    return it->second;
  }

  /// The canonical text of an attribute, built once; the memoised texts live
  /// in a bump allocator so references stay valid while the map grows.
  llvm::StringRef attrText(Attribute attr) {
    auto it = attrMemo.find(attr);
    if (it != attrMemo.end())
      return it->second;
    llvm::StringRef text = saver.save(encodeAttribute(attr));
    attrMemo[attr] = text;
    return text;
  }

  std::string encodeAttribute(Attribute attr) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (auto dense = dyn_cast<DenseIntOrFPElementsAttr>(attr)) {
      // Uniqued by (type, raw data, splat), so these three identify it.
      os << "dense<" << (dense.isSplat() ? "splat " : "");
      writeRawData(os, dense.getRawData());
      os << "> : " << typeText(dense.getType());
    } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
      // The printed form names the blob, not its contents: hash the bytes.
      DenseResourceElementsHandle handle = resource.getRawHandle();
      os << "dense_resource<";
      if (const AsmResourceBlob *blob = handle.getBlob())
        writeRawData(os, blob->getData());
      else
        os << "unloaded " << quoted(handle.getKey());
      os << "> : " << typeText(resource.getType());
    } else if (auto array = dyn_cast<ArrayAttr>(attr)) {
      // Elements go through attrText so nested constants and symbol
      // references are canonical too.
      os << '[';
      llvm::interleave(
          array.getValue(), os,
          [&](Attribute element) { os << attrText(element); }, ", ");
      os << ']';
    } else if (auto dictionary = dyn_cast<DictionaryAttr>(attr)) {
      os << '{';
      llvm::interleave(
          dictionary.getValue(), os,
          [&](NamedAttribute entry) {
            os << quoted(entry.getName().getValue()) << " = "
               << attrText(entry.getValue());
          },
          ", ");
      os << '}';
    } else if (auto string = dyn_cast<StringAttr>(attr);
               string && isa<NoneType>(string.getType())) {
      // trn.name values: tens of thousands in a large graph, all plain.
      os << quoted(string.getValue());
    } else if (auto symbol = dyn_cast<SymbolRefAttr>(attr)) {
      auto it = symbolIndex.find(symbol.getRootReference());
      if (it == symbolIndex.end()) {
        attr.print(os, asmState);
      } else {
        os << "@#" << it->second;
        for (FlatSymbolRefAttr nested : symbol.getNestedReferences()) {
          os << "::";
          nested.print(os, asmState);
        }
      }
    } else {
      attr.print(os, asmState);
    }
    return std::move(os.str());
  }

  static void writeRawData(llvm::raw_ostream &os, ArrayRef<char> data) {
    if (data.size() <= kInlineRawBytes) {
      os << "0x";
      for (char byte : data)
        os << llvm::format_hex_no_prefix(static_cast<uint8_t>(byte), 2);
      return;
    }
    os << data.size() << " bytes xxh3:"
       << hashBytes(std::string_view(data.data(), data.size())).hex();
  }

  static std::string quoted(llvm::StringRef text) {
    std::string result;
    result.reserve(text.size() + 2);
    result += '"';
    // Names are almost always plain; escaping goes character by character.
    bool plain = llvm::all_of(
        text, [](char c) { return llvm::isPrint(c) && c != '"' && c != '\\'; });
    if (plain) {
      result.append(text.data(), text.size());
    } else {
      llvm::raw_string_ostream os(result);
      llvm::printEscapedString(text, os);
    }
    result += '"';
    return result;
  }

  Operation *root;
  CanonicalWriter &out;
  AsmState asmState;
  llvm::BumpPtrAllocator allocator;
  llvm::StringSaver saver;
  llvm::DenseMap<Operation *, uint32_t> opIndex;
  llvm::DenseMap<Block *, uint32_t> blockIndex;
  llvm::DenseMap<StringAttr, uint32_t> symbolIndex;
  llvm::DenseMap<Type, llvm::StringRef> typeMemo;
  llvm::DenseMap<Attribute, llvm::StringRef> attrMemo;
};

Hash128 hashRoot(Operation *root, std::string *text,
                 trn::GraphHashStats *stats) {
  CanonicalWriter writer(text);
  GraphCanonicalizer canonicalizer(root, writer);
  canonicalizer.run();
  uint64_t bytes = 0;
  Hash128 hash = writer.finish(bytes);
  if (stats) {
    stats->operations = canonicalizer.numOperations();
    stats->canonicalBytes = bytes;
  }
  return hash;
}

} // namespace

namespace mlir::trn {

Hash128 hashGraph(ModuleOp module, GraphHashStats *stats) {
  return hashRoot(module, nullptr, stats);
}

Hash128 hashGraph(func::FuncOp function, GraphHashStats *stats) {
  return hashRoot(function, nullptr, stats);
}

std::string canonicalForm(ModuleOp module) {
  std::string text;
  hashRoot(module, &text, nullptr);
  return text;
}

std::string canonicalForm(func::FuncOp function) {
  std::string text;
  hashRoot(function, &text, nullptr);
  return text;
}

} // namespace mlir::trn
