#pragma once
/// CliArgs: the small command-line parser every `kfuse` subcommand shares, so they all
/// accept the same forms and fail the same way:
///   --flag        a flag (also any exact spelling registered, e.g. -O2)
///   --key=value   an option with a value, or `--key value`, or `-o value`
///   --            everything after it is positional
///   --help / -h   prints the generated usage to stdout; parse() returns exit code 0
/// Bad arguments print "kfuse CMD: error: ..." and a hint to stderr; parse() returns 2.
/// An option's value may not be empty (`--outputs=` doing nothing hid a typo), and an
/// option may be given once unless declared repeatable() (a second `--graph` silently
/// winning hid the first).
///
///   CliArgs cli("opt", "FILE.kf", "parse, verify and print a .kf module");
///   cli.option("-o", "FILE", "write the output to FILE instead of stdout");
///   cli.flag("--verify-each", "verify after every pass");
///   if (auto rc = cli.parse(args)) return *rc;
///   std::string out = cli.value("-o");
#include <optional>
#include <string>
#include <vector>

namespace kfuse::tool {

class CliArgs {
public:
  /// `positionals` is the usage text of the positional arguments, e.g. "FILE.kf".
  CliArgs(std::string command, std::string positionals, std::string summary);

  /// A boolean flag; `aliases` are other spellings of it (e.g. "-v").
  CliArgs &flag(std::string name, std::string help, std::vector<std::string> aliases = {});
  /// An option that takes a non-empty value, once (see repeatable()).
  CliArgs &option(std::string name, std::string valueName, std::string help,
                  std::vector<std::string> aliases = {});
  /// The option declared last may be given several times: values() is all of them, in
  /// order, and value() the last.
  CliArgs &repeatable();
  /// How many positional arguments are accepted (default exactly one).
  CliArgs &positionalCount(size_t min, size_t max);

  /// Parses args (args[0] is the command's name). Returns an exit code when the command
  /// should stop now (0 after --help, 2 after a bad argument), nullopt to go on.
  std::optional<int> parse(const std::vector<std::string> &args);

  bool has(const std::string &name) const;
  std::string value(const std::string &name, const std::string &fallback = "") const;
  std::vector<std::string> values(const std::string &name) const;
  const std::vector<std::string> &positionals() const { return positionals_; }

  /// Reads option `name` as a positive integer into `out`; an exit code (2, after badArgs)
  /// when it is not one.
  std::optional<int> positiveInt(const std::string &name, int &out) const;

  std::string usage() const;
  /// Prints "kfuse CMD: error: MESSAGE" and the --help hint to stderr; returns 2. For
  /// checks a command makes after parse() (e.g. two options that exclude each other).
  int badArgs(const std::string &message) const;

private:
  struct Spec {
    std::string name;
    std::vector<std::string> aliases;
    std::string valueName; // empty for a flag
    std::string help;
    std::vector<std::string> given; // one entry per occurrence ("" for a flag)
    bool repeatable = false;
  };
  std::optional<int> addValue(Spec &s, const std::string &key, std::string val);
  Spec *find(const std::string &spelling);
  const Spec *find(const std::string &name) const;
  /// " (did you mean '--check'?)" for an unknown option close to one this command takes.
  std::string suggestOption(const std::string &key) const;

  std::string command_, positionalsUsage_, summary_;
  std::vector<Spec> specs_;
  std::vector<std::string> positionals_;
  size_t minPositionals_ = 1, maxPositionals_ = 1;
};

} // namespace kfuse::tool
