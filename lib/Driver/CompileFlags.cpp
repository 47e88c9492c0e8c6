//===- CompileFlags.cpp - the compile flags, one table
//---------------------===//
//
// The table and the normalisation of flags into the record the cache key's
// flags hash covers (cache::hashFlags).
//
//===----------------------------------------------------------------------===//

#include "trn/Driver/CompileFlags.h"

#include "trn/Cache/Text.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>

namespace mlir::trn {

using cache::editDistance;
using cache::NormalizedFlags;

const std::vector<CompileFlagSpec> &compileFlagSpecs() {
  static const std::vector<CompileFlagSpec> specs = {
      {"target",
       FlagKind::Choice,
       "target",
       {"trn1", "trn2"},
       "trn1",
       "--target trn1|trn2               hardware (default trn1)"},
      {"opt-level",
       FlagKind::OptLevel,
       "opt-level",
       {"0", "1", "2", "3"},
       "2",
       "-O0 .. -O3, --opt-level N        optimisation level (default 2)"},
      {"auto-cast",
       FlagKind::Choice,
       "auto-cast",
       {"none", "matmul", "all"},
       "none",
       "--auto-cast none|matmul|all      cast matmul inputs (or more) down, "
       "keep FP32 accumulation"},
      {"auto-cast-type",
       FlagKind::Choice,
       "auto-cast-type",
       {"bf16", "fp8_e4m3"},
       "bf16",
       "--auto-cast-type bf16|fp8_e4m3   the type --auto-cast casts to "
       "(default bf16)"},
      {"mesh",
       FlagKind::Mesh,
       "",
       {},
       "",
       "--mesh dp=D,pp=P,tp=T            the mesh to partition over (axes "
       "absent are 1), as --dp, --pp and --tp"},
      // The key records whether the program is data-parallel, not the
      // degree: a data-parallel program is one replica's step, averaging its
      // gradients over dp, and serves every degree (bound when loaded).
      {"dp",
       FlagKind::MeshAxis,
       "dp",
       {},
       "1",
       "--dp N                           data parallelism: the program is "
       "one replica's step and serves every degree N > 1"},
      {"zero1",
       FlagKind::Switch,
       "zero1",
       {},
       "",
       "--zero1                          ZeRO-1: optimizer states split over "
       "dp (the program is then per dp degree)"},
      {"dp-whole-batch",
       FlagKind::Switch,
       "dp-whole-batch",
       {},
       "",
       "--dp-whole-batch                 the graph is the whole batch and dp "
       "splits its first dimension (the program is then per dp degree; "
       "compile_step uses it when a replica holds one example)"},
      {"sequence-parallel",
       FlagKind::Switch,
       "sequence-parallel",
       {},
       "",
       "--sequence-parallel              split the norm regions on the "
       "sequence over tp (Megatron's)"},
      {"pp",
       FlagKind::MeshAxis,
       "pp",
       {},
       "1",
       "--pp N                           pipeline parallelism: N stages of "
       "equal layer runs"},
      {"tp",
       FlagKind::MeshAxis,
       "tp",
       {},
       "1",
       "--tp N                           tensor parallelism: Megatron's plan "
       "over N cores"},
      {"microbatches",
       FlagKind::PositiveInt,
       "microbatches",
       {},
       "1",
       "--microbatches M                 microbatches per step, each the "
       "traced batch: a pipeline's, or without --pp gradient accumulation "
       "in the step (default 1)"},
      {"pipeline-schedule",
       FlagKind::Choice,
       "pipeline-schedule",
       {"gpipe", "1f1b"},
       "1f1b",
       "--pipeline-schedule gpipe|1f1b   pipeline: the order of forwards "
       "and backwards (default 1f1b)"},
      {"recompute-activations",
       FlagKind::Switch,
       "recompute-activations",
       {},
       "",
       "--recompute-activations          with --pp or --microbatches: "
       "recompute each stage's forward in its backward instead of stashing "
       "its activations"},
      {"no-layer-reuse",
       FlagKind::Switch,
       "no-layer-reuse",
       {},
       "",
       "--no-layer-reuse                 compile every copy of a repeated "
       "layer instead of one called per layer"},
      // One compile (and cache entry) per pipeline stage; in the key only
      // when pp > 1.
      {"stage",
       FlagKind::Index,
       "stage",
       {},
       "0",
       "--stage K                        pipeline: compile stage K only "
       "(trn-cc compiles every stage without it)"},
      // Output-neutral: accepted in flag strings ($TRN_CC_FLAGS) and dropped
      // from the key.
      {"cache-dir", FlagKind::NeutralValue, "", {}, "", ""},
      {"no-cache", FlagKind::NeutralSwitch, "", {}, "", ""},
      {"verbose", FlagKind::NeutralSwitch, "", {}, "", ""},
      {"quiet", FlagKind::NeutralSwitch, "", {}, "", ""},
      {"report", FlagKind::NeutralValue, "", {}, "", ""},
      {"output", FlagKind::NeutralValue, "", {}, "", ""},
      {"retry-failed", FlagKind::NeutralSwitch, "", {}, "", ""},
      {"timeout", FlagKind::NeutralValue, "", {}, "", ""},
      {"lock-timeout", FlagKind::NeutralValue, "", {}, "", ""},
      {"jobs", FlagKind::NeutralValue, "", {}, "", ""},
      {"mlir-print-ir-after-all", FlagKind::NeutralSwitch, "", {}, "", ""},
      {"color", FlagKind::NeutralSwitch, "", {}, "", ""},
  };
  return specs;
}

const CompileFlagSpec *findCompileFlag(std::string_view name) {
  for (const CompileFlagSpec &spec : compileFlagSpecs())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

std::string codegenFlagsHelp() {
  std::string text;
  for (const CompileFlagSpec &spec : compileFlagSpecs())
    if (spec.isCodegen() && !spec.help.empty())
      text += "  " + std::string(spec.help) + "\n";
  return text;
}

namespace {

/// Single-letter aliases of long flags.
std::string_view longNameOfShort(char letter) {
  switch (letter) {
  case 'v':
    return "verbose";
  case 'q':
    return "quiet";
  case 'o':
    return "output";
  case 'j':
    return "jobs";
  default:
    return {};
  }
}

std::string unknownFlagError(std::string_view spelled, std::string_view name) {
  std::string message = "unknown flag '" + std::string(spelled) + "'";
  const CompileFlagSpec *best = nullptr;
  size_t bestDistance = std::numeric_limits<size_t>::max();
  for (const CompileFlagSpec &spec : compileFlagSpecs()) {
    size_t distance = editDistance(name, spec.name);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = &spec;
    }
  }
  // Suggest only what looks like a typo, not an unrelated flag.
  size_t limit = std::max<size_t>(1, std::min<size_t>(3, name.size() / 3));
  if (best && bestDistance <= limit)
    message += "; did you mean '--" + std::string(best->name) + "'?";
  return message;
}

std::string joinChoices(const std::vector<std::string_view> &choices) {
  std::string joined;
  for (std::string_view choice : choices) {
    if (!joined.empty())
      joined += ", ";
    joined += choice;
  }
  return joined;
}

std::string trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])))
    ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  return std::string(text.substr(begin, end - begin));
}

std::string toLower(std::string_view text) {
  std::string lower(text);
  for (char &c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

/// Parses a decimal integer in [1, 2^31) written with digits only; returns its
/// canonical spelling (no leading zeros).
std::optional<std::string> parsePositiveInt(std::string_view text) {
  if (text.empty() || text.size() > 12)
    return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value < 1 || value > static_cast<uint64_t>(INT32_MAX))
    return std::nullopt;
  return std::to_string(value);
}

/// One flag occurrence after splitting `--name=value` / `--name value`.
struct FlagUse {
  std::string spelled; ///< as written, for messages (`-O3`, `--auto-cast`)
  const CompileFlagSpec *spec;
  std::optional<std::string> value;
};

struct MeshDegrees {
  std::map<std::string, std::string> axes; ///< axis -> canonical degree
};

class FlagNormalizer {
public:
  explicit FlagNormalizer(std::string &error) : error(error) {}

  std::optional<NormalizedFlags> run(const std::vector<std::string> &args);

private:
  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }
  bool splitArgs(const std::vector<std::string> &args,
                 std::vector<FlagUse> &uses);
  bool apply(const FlagUse &use);
  bool applyMesh(const FlagUse &use);

  std::string &error;
  std::map<std::string, std::string> values;
  /// The last --mesh, if any, and the last --dp/--pp/--tp of each axis: they
  /// are reconciled at the end so that `--mesh tp=2 --tp 4` is an error
  /// whatever the order.
  std::optional<MeshDegrees> mesh;
  std::map<std::string, std::pair<std::string, std::string>> axisFlags;
};

bool FlagNormalizer::splitArgs(const std::vector<std::string> &args,
                               std::vector<FlagUse> &uses) {
  // Tokens after trimming; an argument such as "--target trn2" (one shell
  // word holding a flag and its value) is split at its first space.
  std::vector<std::string> tokens;
  for (const std::string &arg : args) {
    std::string token = trim(arg);
    if (token.empty())
      continue;
    size_t space = token.find_first_of(" \t\n\r");
    size_t equals = token.find('=');
    if (token[0] == '-' && equals != std::string::npos) {
      // "--target = trn2": spaces around '=' do not matter either.
      std::string name = trim(std::string_view(token).substr(0, equals));
      if (name.find_first_of(" \t\n\r") == std::string::npos) {
        tokens.push_back(name + "=" +
                         trim(std::string_view(token).substr(equals + 1)));
        continue;
      }
    }
    if (token[0] == '-' && space != std::string::npos &&
        (equals == std::string::npos || space < equals)) {
      tokens.push_back(token.substr(0, space));
      tokens.push_back(trim(std::string_view(token).substr(space)));
      continue;
    }
    tokens.push_back(std::move(token));
  }

  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string &token = tokens[i];
    if (token.size() < 2 || token[0] != '-')
      return fail("unexpected argument '" + token +
                  "'; only codegen flags are accepted");

    FlagUse use;
    std::string name;
    std::optional<std::string> inlineValue;
    // One dash: a long name spelled LLVM-style (-target) if it is one, else a
    // short flag.
    bool oneDash = token[1] != '-';
    size_t equals = token.find('=');
    std::string oneDashName = trim(std::string_view(token).substr(
        1, equals == std::string::npos ? std::string::npos : equals - 1));
    bool shortFlag = oneDash && !findCompileFlag(oneDashName) &&
                     (token[1] == 'O' || !longNameOfShort(token[1]).empty());
    if (shortFlag) {
      // -O2, -v, -q, -o FILE / -oFILE, -j N / -j4.
      char letter = token[1];
      name = letter == 'O' ? "opt-level" : std::string(longNameOfShort(letter));
      use.spelled = token.substr(0, 2);
      std::string rest = token.substr(2);
      if (!rest.empty() && rest[0] == '=')
        rest.erase(0, 1);
      if (letter == 'O') {
        use.spelled = token;
        inlineValue = rest; // "-O" alone is an empty, hence invalid, value
      } else if (!rest.empty()) {
        inlineValue = rest;
      }
    } else {
      // --name, --name=value; LLVM tools accept one dash for long names too.
      size_t dashes = token[1] == '-' ? 2 : 1;
      std::string body = token.substr(dashes);
      size_t valueStart = body.find('=');
      name = trim(body.substr(0, valueStart));
      if (valueStart != std::string::npos)
        inlineValue = trim(std::string_view(body).substr(valueStart + 1));
      use.spelled = token.substr(0, dashes) + name;
    }

    use.spec = findCompileFlag(name);
    if (!use.spec)
      return fail(unknownFlagError(use.spelled, name));

    bool takesValue = use.spec->takesValue();
    if (takesValue && !inlineValue) {
      if (i + 1 >= tokens.size() || tokens[i + 1].rfind("--", 0) == 0)
        return fail("flag '" + use.spelled + "' needs a value");
      inlineValue = tokens[++i];
    }
    if (!takesValue && inlineValue && use.spec->name != "color")
      return fail("flag '" + use.spelled + "' takes no value");
    use.value = std::move(inlineValue);
    uses.push_back(std::move(use));
  }
  return true;
}

bool FlagNormalizer::applyMesh(const FlagUse &use) {
  static const std::vector<std::string_view> axisNames = {"dp", "pp", "tp"};
  MeshDegrees degrees;
  std::string_view text = *use.value;
  if (trim(text).empty())
    return fail("flag '" + use.spelled +
                "' needs a value like dp=2,pp=1,tp=8 (axes: dp, pp, tp)");
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t comma = text.find(',', begin);
    std::string item = trim(text.substr(begin, comma == std::string_view::npos
                                                   ? std::string::npos
                                                   : comma - begin));
    begin = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    size_t equals = item.find('=');
    if (equals == std::string::npos)
      return fail("invalid mesh entry '" + item + "' for '" + use.spelled +
                  "'; expected axis=degree with axes dp, pp, tp");
    std::string axis = toLower(trim(item.substr(0, equals)));
    std::string degree = trim(item.substr(equals + 1));
    if (std::find(axisNames.begin(), axisNames.end(), axis) == axisNames.end())
      return fail("unknown mesh axis '" + axis + "' for '" + use.spelled +
                  "'; allowed: " + joinChoices(axisNames));
    if (degrees.axes.count(axis))
      return fail("mesh axis '" + axis + "' given twice in '" + use.spelled +
                  "'");
    auto canonical = parsePositiveInt(degree);
    if (!canonical)
      return fail("invalid degree '" + degree + "' for mesh axis '" + axis +
                  "'; expected a positive integer");
    degrees.axes[axis] = *canonical;
  }
  mesh = std::move(degrees); // a later --mesh replaces an earlier one whole
  return true;
}

bool FlagNormalizer::apply(const FlagUse &use) {
  const CompileFlagSpec &spec = *use.spec;
  const std::string &value = use.value ? *use.value : std::string();
  switch (spec.kind) {
  case FlagKind::Choice: {
    std::string lower = toLower(value);
    if (std::find(spec.choices.begin(), spec.choices.end(), lower) ==
        spec.choices.end())
      return fail("invalid value '" + value + "' for '" + use.spelled +
                  "'; allowed: " + joinChoices(spec.choices));
    values[std::string(spec.key)] = lower;
    return true;
  }
  case FlagKind::OptLevel:
    if (value.size() != 1 || value[0] < '0' || value[0] > '3')
      return fail("invalid value '" + value + "' for '" + use.spelled +
                  "'; allowed: " + joinChoices(spec.choices) +
                  " (as -O<N> or --opt-level=<N>)");
    values[std::string(spec.key)] = value;
    return true;
  case FlagKind::PositiveInt: {
    auto canonical = parsePositiveInt(value);
    if (!canonical)
      return fail("invalid value '" + value + "' for '" + use.spelled +
                  "'; expected a positive integer");
    values[std::string(spec.key)] = *canonical;
    return true;
  }
  case FlagKind::Index: {
    auto canonical = parsePositiveInt("1" + value);
    if (value.empty() || !canonical ||
        value.find_first_not_of("0123456789") != std::string::npos)
      return fail("invalid value '" + value + "' for '" + use.spelled +
                  "'; expected a non-negative integer");
    // Canonical: no leading zeros.
    size_t first = value.find_first_not_of('0');
    values[std::string(spec.key)] =
        first == std::string::npos ? "0" : value.substr(first);
    return true;
  }
  case FlagKind::MeshAxis: {
    auto canonical = parsePositiveInt(value);
    if (!canonical)
      return fail("invalid value '" + value + "' for '" + use.spelled +
                  "'; expected a positive integer");
    axisFlags[std::string(spec.name)] = {*canonical, use.spelled};
    return true;
  }
  case FlagKind::Mesh:
    return applyMesh(use);
  case FlagKind::NeutralValue:
    if (value.empty())
      return fail("flag '" + use.spelled + "' needs a value");
    if (spec.name == "jobs" && !parsePositiveInt(value))
      return fail("invalid value '" + value + "' for '" + use.spelled +
                  "'; expected a positive integer");
    return true;
  case FlagKind::Switch:
    values[std::string(spec.key)] = "on";
    return true;
  case FlagKind::NeutralSwitch:
    if (spec.name == "color" && use.value) {
      static const std::vector<std::string_view> colorChoices = {
          "always", "never", "auto", "true", "false"};
      if (std::find(colorChoices.begin(), colorChoices.end(), toLower(value)) ==
          colorChoices.end())
        return fail("invalid value '" + value + "' for '" + use.spelled +
                    "'; allowed: " + joinChoices(colorChoices));
    }
    return true;
  }
  return true;
}

std::optional<NormalizedFlags>
FlagNormalizer::run(const std::vector<std::string> &args) {
  std::vector<FlagUse> uses;
  if (!splitArgs(args, uses))
    return std::nullopt;
  for (const FlagUse &use : uses)
    if (!apply(use))
      return std::nullopt;

  // Reconcile --mesh with --dp/--pp/--tp: the same degree twice is fine.
  for (const auto &[axis, degreeAndSpelling] : axisFlags) {
    const auto &[degree, spelled] = degreeAndSpelling;
    if (mesh && mesh->axes.count(axis) && mesh->axes[axis] != degree) {
      error = "conflicting degrees for mesh axis '" + axis + "': --mesh " +
              axis + "=" + mesh->axes[axis] + " but " + spelled + " " + degree;
      return std::nullopt;
    }
  }

  NormalizedFlags flags;
  for (const CompileFlagSpec &spec : compileFlagSpecs()) {
    if (spec.key.empty())
      continue;
    std::string key(spec.key);
    std::string value(spec.defaultValue);
    if (spec.kind == FlagKind::MeshAxis) {
      if (mesh && mesh->axes.count(key))
        value = mesh->axes[key];
      auto it = axisFlags.find(key);
      if (it != axisFlags.end())
        value = it->second.first;
      if (key == "dp") {
        // Any degree > 1 is the same program; 1 keeps the single-device
        // key unchanged. ZeRO-1 splits the optimizer states by the degree,
        // and a whole-batch graph its batch: then it is kept.
        if (value == "1")
          continue;
        if (!values.count("zero1") && !values.count("dp-whole-batch"))
          value = "replicas";
      }
    } else if (spec.kind == FlagKind::Switch) {
      // Off by default and then left out, so that adding a switch keeps
      // every existing key.
      if (!values.count(key))
        continue;
      value = values[key];
    } else {
      auto it = values.find(key);
      if (it != values.end())
        value = it->second;
    }
    flags.values[key] = value;
  }
  // Stages mean something only with stages to cut; microbatches without
  // them are gradient accumulation in the step (a pipeline of one stage),
  // and recomputation needs microbatches or stages to cut the step into
  // a forward and a backward.
  if (flags.values["pp"] == "1") {
    if (values.count("stage")) {
      error = "--stage applies to pipeline parallelism (--pp > 1)";
      return std::nullopt;
    }
    if (flags.values["microbatches"] == "1" &&
        flags.values.count("recompute-activations")) {
      error = "--recompute-activations applies to a step cut into "
              "microbatches or pipeline stages (--microbatches > 1 or "
              "--pp > 1)";
      return std::nullopt;
    }
    flags.values.erase("stage");
  } else if (std::strtoll(flags.values["stage"].c_str(), nullptr, 10) >=
             std::strtoll(flags.values["pp"].c_str(), nullptr, 10)) {
    error = "--stage " + flags.values["stage"] + " is not a stage of --pp " +
            flags.values["pp"] + " (stages count from 0)";
    return std::nullopt;
  }
  return flags;
}

} // namespace

std::optional<NormalizedFlags>
normalizeFlags(const std::vector<std::string> &args, std::string &error) {
  error.clear();
  return FlagNormalizer(error).run(args);
}

} // namespace mlir::trn

int64_t mlir::trn::stagesToCompile(const std::vector<std::string> &args) {
  std::string error;
  std::optional<cache::NormalizedFlags> flags = normalizeFlags(args, error);
  if (!flags)
    return 0;
  for (const std::string &arg : args)
    if (arg == "--stage" || arg.rfind("--stage=", 0) == 0)
      return 0;
  int64_t pp = std::strtoll(flags->values["pp"].c_str(), nullptr, 10);
  return pp > 1 ? pp : 0;
}

int64_t mlir::trn::dpDegreeOf(const std::vector<std::string> &args) {
  int64_t degree = 1;
  auto parse = [&](const std::string &text) {
    char *end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (!text.empty() && *end == '\0' && value >= 1)
      degree = value;
  };
  auto fromMesh = [&](const std::string &mesh) {
    size_t start = 0;
    while (start <= mesh.size()) {
      size_t end = mesh.find(',', start);
      if (end == std::string::npos)
        end = mesh.size();
      std::string item = mesh.substr(start, end - start);
      if (item.rfind("dp=", 0) == 0)
        parse(item.substr(3));
      start = end + 1;
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    std::string next = i + 1 < args.size() ? args[i + 1] : std::string();
    if (arg == "--dp" || arg == "-dp")
      parse(next);
    else if (arg.rfind("--dp=", 0) == 0)
      parse(arg.substr(5));
    else if (arg == "--mesh" || arg == "-mesh")
      fromMesh(next);
    else if (arg.rfind("--mesh=", 0) == 0)
      fromMesh(arg.substr(7));
  }
  return degree;
}
