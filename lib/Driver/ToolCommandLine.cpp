//===- ToolCommandLine.cpp - the one command-line convention --------------===//
//
// parseToolArgs and the messages every tool shares (docs/cli.md,
// "Conventions").
//
//===----------------------------------------------------------------------===//

#include "trn/Driver/ToolCommandLine.h"

#include "trn/Cache/Text.h"
#include "trn/Driver/CompileFlags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>

namespace mlir::trn {

namespace {

/// An option a tool's command line may name: its own, or the table's.
struct KnownFlag {
  const ToolFlag *own = nullptr;
  const CompileFlagSpec *shared = nullptr;
  explicit operator bool() const { return own || shared; }
  bool takesValue() const {
    return own ? own->takesValue : shared->takesValue();
  }
  bool valueMayBeAFlag() const { return own && own->valueMayBeAFlag; }
};

KnownFlag findToolFlag(const ToolCommandLine &tool, std::string_view name) {
  for (const ToolFlag &flag : tool.flags)
    if (flag.name == name)
      return {&flag, nullptr};
  return {nullptr, findCompileFlag(name)};
}

/// The tool's option, or the table's, that `name` names; `_` may stand for
/// `-` (the anchor's users type --num_parallel).
KnownFlag findFlag(const ToolCommandLine &tool, std::string &name) {
  if (KnownFlag known = findToolFlag(tool, name))
    return known;
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  KnownFlag known = findToolFlag(tool, dashed);
  if (known)
    name = dashed;
  return known;
}

std::string unknownOption(const ToolCommandLine &tool, const std::string &token,
                          std::string_view name) {
  std::vector<std::string_view> candidates;
  for (const ToolFlag &flag : tool.flags)
    candidates.push_back(flag.name);
  if (tool.takesCodegenFlags)
    for (const CompileFlagSpec &spec : compileFlagSpecs())
      if (spec.isCodegen())
        candidates.push_back(spec.name);
  std::string message = "unknown option '" + token + "'";
  std::string suggestion = didYouMean(name, candidates, "--");
  return message + (suggestion.empty()
                        ? " (see " + std::string(tool.tool) + " --help)"
                        : suggestion);
}

} // namespace

std::string didYouMean(std::string_view word,
                       const std::vector<std::string_view> &candidates,
                       std::string_view prefix) {
  // Suggest only what looks like a typo, not an unrelated word.
  size_t limit = std::max<size_t>(1, std::min<size_t>(3, word.size() / 3));
  std::string_view best;
  size_t bestDistance = limit + 1;
  for (std::string_view candidate : candidates) {
    size_t distance = cache::editDistance(word, candidate);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  if (best.empty())
    return "";
  return "; did you mean '" + std::string(prefix) + std::string(best) + "'?";
}

int usageError(std::string_view tool, const std::string &message) {
  std::cerr << tool << ": error: " << message << "\n";
  return kExitUsage;
}

std::string badValue(const ToolFlagUse &use, const std::string &expected) {
  return "option '" + use.spelled + "': '" + use.value.value_or("") +
         "' is not " + expected;
}

std::optional<long long> parseInteger(const std::string &text,
                                      long long minimum) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
      text[0] == '+')
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end || errno == ERANGE || value < minimum)
    return std::nullopt;
  return value;
}

std::optional<double> parsePositive(const std::string &text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (*end || errno == ERANGE || !std::isfinite(value) || !(value > 0))
    return std::nullopt;
  return value;
}

std::optional<std::string> takeInteger(const ToolFlagUse &use,
                                       long long minimum, long long &out) {
  std::optional<long long> number =
      parseInteger(use.value.value_or(""), minimum);
  if (!number)
    return badValue(use, "an integer >= " + std::to_string(minimum));
  out = *number;
  return std::nullopt;
}

std::optional<std::string> takePositive(const ToolFlagUse &use,
                                        std::optional<double> &out) {
  out = parsePositive(use.value.value_or(""));
  if (!out)
    return badValue(use, "a positive finite number");
  return std::nullopt;
}

std::string toolFlagsHelp(const ToolCommandLine &tool) {
  std::string text;
  for (const ToolFlag &flag : tool.flags)
    if (!flag.help.empty())
      text += "  " + std::string(flag.help) + "\n";
  return text;
}

std::optional<std::string> parseToolArgs(
    const std::vector<std::string> &args, const ToolCommandLine &tool,
    const std::function<std::optional<std::string>(const ToolFlagUse &)>
        &onFlag,
    ParsedToolArgs &parsed) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &token = args[i];
    if (token == "-h" || token == "--help" || token == "--version") {
      (token == "--version" ? parsed.version : parsed.help) = true;
      return std::nullopt;
    }
    if (token == "--" && tool.takesCommandAfterSeparator) {
      parsed.sawSeparator = true;
      parsed.command.assign(args.begin() + i + 1, args.end());
      return std::nullopt;
    }
    if (token.size() < 2 || token[0] != '-') {
      parsed.positionals.push_back(token); // "-" alone is stdin
      continue;
    }

    // Split into the option, its spelling (for messages) and an inline value.
    KnownFlag known;
    std::string spelled;
    std::optional<std::string> value;
    bool oneDash = token[1] != '-';
    std::string_view body = std::string_view(token).substr(oneDash ? 1 : 2);
    size_t equals = body.find('=');
    std::string name(body.substr(0, equals));
    bool glued = false;
    if (oneDash && token[1] == 'O' && tool.takesCodegenFlags &&
        !findToolFlag(tool, name)) {
      // -O2: the level is glued to the flag.
      known.shared = findCompileFlag("opt-level");
      spelled = token;
      glued = true;
    } else if (oneDash && !findToolFlag(tool, name)) {
      // The tool's one-letter aliases: -v, -o FILE, -oFILE, -o=FILE, -j4.
      for (const ToolFlag &flag : tool.flags)
        if (flag.letter && flag.letter == token[1])
          known.own = &flag;
      spelled = token.substr(0, 2);
      std::string_view rest = std::string_view(token).substr(2);
      if (!rest.empty() && rest[0] == '=')
        rest.remove_prefix(1);
      if (!rest.empty())
        value = std::string(rest);
      if (!known)
        return unknownOption(tool, token, name);
    } else {
      // --name, --name=value (and LLVM-style -name).
      known = findFlag(tool, name);
      spelled = token.substr(0, oneDash ? 1 : 2) + name;
      if (equals != std::string_view::npos)
        value = std::string(body.substr(equals + 1));
      if (!known)
        return unknownOption(tool, token.substr(0, token.find('=')), name);
    }

    // The value: inline, else the next argument (which must not be an
    // option, the same rule normalizeFlags applies, unless the option's
    // values are options themselves).
    bool separateValue = false;
    if (known.takesValue() && !value && !glued) {
      if (i + 1 >= args.size() ||
          (args[i + 1].rfind("--", 0) == 0 && !known.valueMayBeAFlag()))
        return "option '" + spelled + "' needs a value";
      value = args[++i];
      separateValue = true;
    }
    if (!known.takesValue() && value)
      return "option '" + spelled + "' takes no value";

    if (known.own) {
      if (std::optional<std::string> problem =
              onFlag({known.own, spelled, value}))
        return problem;
    } else if (known.shared->isCodegen() && tool.takesCodegenFlags) {
      parsed.codegenArgs.push_back(token);
      if (separateValue)
        parsed.codegenArgs.push_back(*value);
    } else {
      std::string why(tool.notOurs);
      for (size_t at; (at = why.find("{option}")) != std::string::npos;)
        why.replace(at, 8, spelled);
      return "option '" + spelled + "' is not a " + std::string(tool.tool) +
             " option (" + why + ")";
    }
  }
  return std::nullopt;
}

} // namespace mlir::trn
