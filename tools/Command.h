#pragma once
/// Subcommands of the `kfuse` tool register themselves, one file per command, so the
/// tool's main needs no list of them:
///   static kfuse::tool::CommandRegistration reg{"opt", "run passes and print IR", optMain};
#include <functional>
#include <string>
#include <vector>

namespace kfuse::tool {

/// Exit codes of every command: 0 success, 1 a user error (one clear message on stderr),
/// 2 bad command-line arguments.
enum ExitCode { kExitOk = 0, kExitUserError = 1, kExitBadArgs = 2 };

/// args[0] is the command's name; a command prints its own --help.
using CommandMain = std::function<int(const std::vector<std::string> &args)>;

struct Command {
  std::string name;
  std::string summary;
  CommandMain main;
};

std::vector<Command> &commandRegistry();

struct CommandRegistration {
  CommandRegistration(std::string name, std::string summary, CommandMain main) {
    commandRegistry().push_back({std::move(name), std::move(summary), std::move(main)});
  }
};

} // namespace kfuse::tool
