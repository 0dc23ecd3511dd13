// kfuse: the command-line driver. Dispatches to the registered subcommands (tools/*Command.cpp)
// and turns any exception that escapes them into one message and exit code 1.
#include "ir/Error.h"
#include "ir/InputFile.h"
#include "ir/Parser.h"
#include "ir/Suggest.h"
#include "tools/Command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/core.h>

namespace kfuse::tool {
std::vector<Command> &commandRegistry() {
  static std::vector<Command> registry;
  return registry;
}
} // namespace kfuse::tool

using namespace kfuse::tool;

static void usage(std::FILE *to) {
  fmt::print(to, "kfuse {}: a kernel fusion compiler for elementwise and matmul graphs\n\n"
                 "usage: kfuse <command> [options] FILE.kf\n\ncommands:\n",
             KFUSE_VERSION);
  auto cmds = commandRegistry();
  std::sort(cmds.begin(), cmds.end(), [](auto &a, auto &b) { return a.name < b.name; });
  for (const Command &c : cmds)
    fmt::print(to, "  {:<10} {}\n", c.name, c.summary);
  fmt::print(to, "\n`kfuse <command> --help` describes a command's options; `kfuse --version` "
                 "prints the version.\n");
}

/// A command's exit code, made 1 when its output to stdout was lost: fmt::print and
/// writeText go through stdout's FILE*, so a full disk or a closed stdout shows in its error
/// flag or the final flush, and a command that printed nothing cannot have lost anything.
static int checkStdout(const std::string &cmd, int rc) {
  errno = 0;
  bool flushed = std::fflush(stdout) == 0;
  int err = errno;
  if (flushed && !std::ferror(stdout))
    return rc;
  fmt::print(stderr, "kfuse {}: error: cannot write to stdout: {}\n", cmd,
             err ? std::strerror(err) : "write error");
  return rc == kExitOk ? kExitUserError : rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return kExitBadArgs;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return checkStdout(cmd, kExitOk);
  }
  if (cmd == "--version") {
    fmt::print("kfuse {}\n", KFUSE_VERSION);
    return checkStdout(cmd, kExitOk);
  }
  for (const Command &c : commandRegistry()) {
    if (c.name != cmd)
      continue;
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
      return checkStdout(cmd, c.main(args));
    } catch (const kfuse::ParseError &e) { // already "FILE:LINE:COL: error: ..." + caret
      fmt::print(stderr, "{}\n", e.what());
      return kExitUserError;
    } catch (const kfuse::Error &e) {
      fmt::print(stderr, "kfuse {}: error: {}\n", cmd, e.what());
      return kExitUserError;
    } catch (const std::bad_alloc &) {
      fmt::print(stderr, "kfuse {}: error: out of host memory\n", cmd);
      return kExitUserError;
    } catch (const std::exception &e) {
      // A bug, or an error a command forgot to turn into a kfuse::Error: still one message
      // and exit 1, never std::terminate.
      fmt::print(stderr, "kfuse {}: internal error: {}\n", cmd, kfuse::excerpt(e.what(), 1000));
      return kExitUserError;
    } catch (...) {
      fmt::print(stderr, "kfuse {}: internal error: an unknown exception\n", cmd);
      return kExitUserError;
    }
  }
  std::vector<std::string> names{"--help", "--version"};
  for (const Command &c : commandRegistry())
    names.push_back(c.name);
  fmt::print(stderr, "kfuse: unknown command '{}'{}\n\n", kfuse::excerpt(cmd, 200),
             kfuse::didYouMean(cmd, names));
  usage(stderr);
  return kExitBadArgs;
}
