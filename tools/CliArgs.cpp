#include "tools/CliArgs.h"

#include "ir/InputFile.h"
#include "ir/Suggest.h"
#include "tools/Command.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace kfuse::tool {

CliArgs::CliArgs(std::string command, std::string positionals, std::string summary)
    : command_(std::move(command)), positionalsUsage_(std::move(positionals)),
      summary_(std::move(summary)) {}

CliArgs &CliArgs::flag(std::string name, std::string help, std::vector<std::string> aliases) {
  specs_.push_back({std::move(name), std::move(aliases), "", std::move(help), {}});
  return *this;
}

CliArgs &CliArgs::option(std::string name, std::string valueName, std::string help,
                         std::vector<std::string> aliases) {
  specs_.push_back(
      {std::move(name), std::move(aliases), std::move(valueName), std::move(help), {}});
  return *this;
}

CliArgs &CliArgs::repeatable() {
  specs_.back().repeatable = true;
  return *this;
}

CliArgs &CliArgs::positionalCount(size_t min, size_t max) {
  minPositionals_ = min;
  maxPositionals_ = max;
  return *this;
}

CliArgs::Spec *CliArgs::find(const std::string &spelling) {
  for (Spec &s : specs_)
    if (s.name == spelling ||
        std::find(s.aliases.begin(), s.aliases.end(), spelling) != s.aliases.end())
      return &s;
  return nullptr;
}

const CliArgs::Spec *CliArgs::find(const std::string &name) const {
  return const_cast<CliArgs *>(this)->find(name);
}

std::optional<int> CliArgs::addValue(Spec &s, const std::string &key, std::string val) {
  if (val.empty())
    return badArgs(fmt::format("option '{}' needs a value ({}), got an empty one", key,
                               s.valueName));
  if (!s.repeatable && !s.given.empty())
    return badArgs(fmt::format("option '{}' is given twice; it takes one value", s.name));
  s.given.push_back(std::move(val));
  return std::nullopt;
}

std::string CliArgs::suggestOption(const std::string &key) const {
  std::vector<std::string> names{"--help"};
  for (const Spec &s : specs_) {
    names.push_back(s.name);
    names.insert(names.end(), s.aliases.begin(), s.aliases.end());
  }
  return didYouMean(key, names);
}

int CliArgs::badArgs(const std::string &message) const {
  fmt::print(stderr, "kfuse {}: error: {}\n(`kfuse {} --help` lists the options)\n", command_,
             message, command_);
  return kExitBadArgs;
}

std::optional<int> CliArgs::parse(const std::vector<std::string> &args) {
  positionals_.clear();
  for (Spec &s : specs_)
    s.given.clear();
  bool onlyPositionals = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (onlyPositionals || a.size() < 2 || a[0] != '-') { // "-" alone is a positional (stdin)
      positionals_.push_back(a);
      continue;
    }
    if (a == "--") {
      onlyPositionals = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      fmt::print("{}", usage());
      return kExitOk;
    }
    std::string key = a, val;
    bool hasInlineValue = false;
    if (size_t eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      key = a.substr(0, eq);
      val = a.substr(eq + 1);
      hasInlineValue = true;
    }
    if (key == "--help")
      return badArgs("option '--help' takes no value");
    Spec *s = find(key);
    if (!s)
      return badArgs(fmt::format("unknown option '{}'{}", excerpt(key), suggestOption(key)));
    if (s->valueName.empty()) {
      if (hasInlineValue)
        return badArgs(fmt::format("option '{}' takes no value", key));
      s->given.push_back("");
      continue;
    }
    if (!hasInlineValue) {
      if (i + 1 >= args.size())
        return badArgs(fmt::format("option '{}' needs a value ({})", key, s->valueName));
      val = args[++i];
    }
    if (auto rc = addValue(*s, key, std::move(val)))
      return rc;
  }
  if (positionals_.size() < minPositionals_)
    return badArgs(minPositionals_ == 1 && maxPositionals_ == 1
                       ? fmt::format("expected {}", positionalsUsage_)
                       : fmt::format("expected at least {} argument{} ({})", minPositionals_,
                                     minPositionals_ == 1 ? "" : "s", positionalsUsage_));
  if (positionals_.size() > maxPositionals_)
    return badArgs(
        fmt::format("unexpected argument '{}'", excerpt(positionals_[maxPositionals_])));
  return std::nullopt;
}

bool CliArgs::has(const std::string &name) const {
  const Spec *s = find(name);
  return s && !s->given.empty();
}

std::string CliArgs::value(const std::string &name, const std::string &fallback) const {
  const Spec *s = find(name);
  return s && !s->given.empty() ? s->given.back() : fallback;
}

std::vector<std::string> CliArgs::values(const std::string &name) const {
  const Spec *s = find(name);
  return s ? s->given : std::vector<std::string>{};
}

std::string CliArgs::usage() const {
  std::string out = fmt::format("usage: kfuse {} [options] {}\n\n{}\n\noptions:\n", command_,
                                positionalsUsage_, summary_);
  auto line = [&](std::string left, const std::string &help) {
    if (left.size() < 24)
      out += fmt::format("  {:<24} {}\n", left, help);
    else
      out += fmt::format("  {}\n  {:<24} {}\n", left, "", help);
  };
  for (const Spec &s : specs_) {
    std::string left;
    auto spell = [&](const std::string &name) {
      if (!left.empty())
        left += ", ";
      left += name;
      if (!s.valueName.empty())
        left += (name.rfind("--", 0) == 0 ? "=" : " ") + s.valueName;
    };
    spell(s.name);
    for (const std::string &al : s.aliases)
      spell(al);
    line(left, s.help);
  }
  line("-h, --help", "print this help and exit");
  return out;
}

std::optional<int> CliArgs::positiveInt(const std::string &name, int &out) const {
  std::string s = value(name);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || out < 1)
    return badArgs(fmt::format("{} needs a positive integer, got '{}'", name, s));
  return std::nullopt;
}

} // namespace kfuse::tool
