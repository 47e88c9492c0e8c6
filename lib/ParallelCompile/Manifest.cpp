//===- Manifest.cpp - the graph manifest extraction mode writes -----------===//

#include "trn/ParallelCompile/Manifest.h"

#include "trn/Cache/Key.h"
#include "trn/Driver/CompileFlags.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace mlir::trn::parallel {

namespace {

using nlohmann::json;

/// Where a relative graph path in a manifest is resolved from.
std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool parseRecord(const json &object, const std::string &manifestDir,
                 GraphRecord &record, std::string &why) {
  if (!object.is_object()) {
    why = "not a JSON object";
    return false;
  }
  auto text = [&](const char *name, std::string &out, bool required) {
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) {
      if (required)
        why = std::string("no \"") + name + "\"";
      return !required;
    }
    if (!it->is_string()) {
      why = std::string("\"") + name + "\" is not a string";
      return false;
    }
    out = it->get<std::string>();
    return true;
  };
  auto number = [&](const char *name, auto &out) {
    auto it = object.find(name);
    if (it == object.end() || it->is_null())
      return true;
    if (!it->is_number()) {
      why = std::string("\"") + name + "\" is not a number";
      return false;
    }
    out = it->get<std::decay_t<decltype(out)>>();
    return true;
  };
  if (!text("key", record.key, true) ||
      !text("graph", record.graphPath, true) ||
      !text("graph_name", record.graphName, false) ||
      !text("script", record.script, false) ||
      !text("call_site", record.callSite, false) ||
      !text("input_summary", record.inputSummary, false) ||
      !number("ops", record.ops) || !number("elements", record.elements) ||
      !number("estimated_compile_seconds", record.estimatedSeconds) ||
      !number("estimated_compile_memory_bytes", record.estimatedMemoryBytes) ||
      !number("hbm_bytes_estimate", record.hbmBytesEstimate))
    return false;
  if (record.key.rfind("MODULE_", 0) != 0 ||
      record.key.find('/') != std::string::npos) {
    why = "\"key\" '" + record.key + "' is not a MODULE_<graph>+<flags> key";
    return false;
  }
  if (record.graphPath.empty()) {
    why = "\"graph\" is empty";
    return false;
  }
  if (record.graphPath.front() != '/')
    record.graphPath = manifestDir + "/" + record.graphPath;
  if (auto flags = object.find("flags"); flags != object.end()) {
    if (!flags->is_array()) {
      why = "\"flags\" is not a list of strings";
      return false;
    }
    for (const json &flag : *flags) {
      if (!flag.is_string()) {
        why = "\"flags\" is not a list of strings";
        return false;
      }
      record.flags.push_back(flag.get<std::string>());
    }
  }
  if (auto inputs = object.find("inputs");
      inputs != object.end() && inputs->is_array()) {
    std::ostringstream summary;
    for (const json &input : *inputs) {
      if (!input.is_object())
        continue;
      std::string role = input.value("role", "");
      if (role != "data" && role != "label")
        continue;
      if (summary.tellp() > 0)
        summary << ", ";
      summary << input.value("name", "?") << " " << input.value("dtype", "?")
              << "[";
      if (auto shape = input.find("shape");
          shape != input.end() && shape->is_array())
        for (size_t d = 0; d < shape->size(); ++d)
          summary << (d ? ", " : "") << (*shape)[d].dump();
      summary << "]";
    }
    record.inputSummary = summary.str();
  }
  return true;
}

} // namespace

bool readManifest(const std::string &path, std::vector<GraphRecord> &graphs,
                  std::string &error, std::vector<ProblemRecord> *problems) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read the manifest " + path;
    return false;
  }
  std::map<std::string, size_t> indexOf;
  for (const GraphRecord &graph : graphs)
    indexOf.emplace(graph.key, &graph - graphs.data());
  std::string manifestDir = directoryOf(path);
  std::string line;
  for (int64_t lineNumber = 1; std::getline(in, line); ++lineNumber) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
    GraphRecord record;
    std::string why;
    if (object.is_discarded())
      why = "not valid JSON";
    if (why.empty() && object.is_object() && object.contains("unsupported")) {
      const json &message = object["unsupported"];
      if (!message.is_string()) {
        error = path + ":" + std::to_string(lineNumber) +
                ": bad manifest record: \"unsupported\" is not a string";
        return false;
      }
      if (problems && std::none_of(problems->begin(), problems->end(),
                                   [&](const ProblemRecord &seen) {
                                     return seen.message ==
                                            message.get<std::string>();
                                   }))
        problems->push_back(
            {message.get<std::string>(), object.value("graph_name", ""),
             object.value("call_site", ""), object.value("script", "")});
      continue;
    }
    if (!why.empty() || !parseRecord(object, manifestDir, record, why)) {
      error = path + ":" + std::to_string(lineNumber) +
              ": bad manifest record: " + why;
      return false;
    }
    auto [it, inserted] = indexOf.emplace(record.key, graphs.size());
    if (inserted) {
      record.calls = 1;
      graphs.push_back(std::move(record));
    } else {
      ++graphs[it->second].calls;
    }
  }
  return true;
}

std::string GraphRecord::displayName() const {
  return stage < 0 ? graphName : graphName + " stage " + std::to_string(stage);
}

std::vector<GraphRecord> expandPipelineStages(std::vector<GraphRecord> graphs) {
  std::vector<GraphRecord> expanded;
  for (GraphRecord &record : graphs) {
    std::string error;
    std::optional<cache::CacheKey> key = cache::CacheKey::parse(record.key);
    const int64_t stages = stagesToCompile(record.flags);
    if (!key || stages == 0) {
      expanded.push_back(std::move(record));
      continue;
    }
    for (int64_t stage = 0; stage < stages; ++stage) {
      GraphRecord one = record;
      one.stage = stage;
      one.flags.push_back("--stage");
      one.flags.push_back(std::to_string(stage));
      std::optional<cache::NormalizedFlags> stageFlags =
          normalizeFlags(one.flags, error);
      if (!stageFlags) {
        expanded.push_back(record);
        break;
      }
      cache::CacheKey stageKey = *key;
      stageKey.flags = cache::hashFlags(*stageFlags);
      one.key = stageKey.dirName();
      // Each stage is about its share of the whole step.
      one.estimatedSeconds = record.estimatedSeconds / double(stages);
      expanded.push_back(std::move(one));
    }
  }
  return expanded;
}

} // namespace mlir::trn::parallel
