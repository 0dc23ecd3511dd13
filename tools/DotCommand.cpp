// `kfuse dot G.kf [--graph NAME] [--fused] [-o FILE] [--svg FILE] [--device D]`: the graph
// as Graphviz DOT (analysis/Dot.h), kernels as clusters with their traffic, edges with their
// bytes. `--svg` renders it with Graphviz's own `dot -Tsvg`, found on PATH.
#include "compiler/Compile.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "analysis/Dot.h"
#include "codegen/GemmSpec.h"
#include "passes/PassManager.h"
#include "tools/CliArgs.h"
#include "tools/Command.h"
#include "tools/ModuleIO.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace kfuse::tool {
namespace {

/// The first executable regular file `name` in a PATH folder ("" for an empty entry means
/// the current folder, as execvp reads it), or "" when there is none.
std::string findOnPath(const std::string &name) {
  const char *env = std::getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos)
      end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return "";
}

/// A file from mkstemp, removed when it goes out of scope.
struct TempFile {
  std::string path;
  TempFile() {
    const char *dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/kfuse-dot-XXXXXX";
    int fd = ::mkstemp(path.data());
    if (fd < 0)
      fail("cannot create a temporary file in '{}': {}", path.substr(0, path.rfind('/')),
           std::strerror(errno));
    ::close(fd);
  }
  ~TempFile() { ::unlink(path.c_str()); }
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
};

std::string readAll(const std::string &path) {
  std::string s;
  if (std::FILE *f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
      s.append(buf, n);
    std::fclose(f);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
    s.pop_back();
  return s;
}

/// Runs `dot -Tsvg -o SVG` on the text, its stdin and stderr redirected to temporary files
/// (no pipes, so no deadlock on a large graph or a long error). A failing run becomes a
/// kfuse::Error carrying dot's stderr; warnings of a successful one are passed on.
void renderSvg(const std::string &dotText, const std::string &svgPath) {
  std::string dot = findOnPath("dot");
  if (dot.empty())
    fail("--svg needs Graphviz's 'dot' program, which is not on PATH; install graphviz "
         "(e.g. apt-get install graphviz) or write the DOT text with -o FILE");
  TempFile in, err;
  writeText(in.path, dotText);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in.path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err.path.c_str(), O_WRONLY | O_TRUNC, 0);
  std::string outArg = "-o" + svgPath; // one argument, so a path starting with '-' is safe
  std::vector<char *> argv = {const_cast<char *>("dot"), const_cast<char *>("-Tsvg"), outArg.data(),
                              nullptr};
  pid_t pid;
  int rc = posix_spawn(&pid, dot.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    fail("cannot run '{}': {}", dot, std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      fail("waiting for '{}': {}", dot, std::strerror(errno));
  std::string log = readAll(err.path);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    if (!log.empty())
      fmt::print(stderr, "{}\n", log);
    return;
  }
  std::string how = WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status))
                                      : fmt::format("signal {}", WTERMSIG(status));
  fail("'{} -Tsvg' failed ({}){}{}", dot, how, log.empty() ? "" : ":\n", log);
}

/// The generated kernels' estimates for `g` as drawn (its kernel regions as they are, CUDA C
/// without NVRTC), so the labels say what `kfuse report` says; none where they would not
/// differ from the traffic model's times or codegen refuses the graph.
std::vector<NamedEstimate> estimatesFor(const Graph &g, const Target &d) {
  if (!estimatesDiffer(g)) // the model's times are the estimates
    return {};
  compiler::CompileOptions o;
  o.planning = compiler::Planning::AsGiven;
  o.target = d;
  o.until = compiler::Stage::Source;
  std::vector<NamedEstimate> e;
  try {
    compiler::CompiledModule m = compiler::compile(g, o);
    for (const compiler::CompiledKernel &k : m.kernels)
      e.push_back({k.spec.name, k.estimate.seconds, k.estimate.computeBound});
  } catch (const Error &) {
  }
  return e;
}

int dotMain(const std::vector<std::string> &args) {
  CliArgs cli("dot", "FILE.kf",
              "Writes a graph of FILE.kf ('-' reads stdin) as Graphviz DOT: each kernel a "
              "cluster with its bytes read and written and predicted time, each edge labelled "
              "with its bytes, dashed where it stays in registers inside a kernel.");
  cli.option("--graph", "NAME", "the graph to draw (default: the file's first)");
  cli.flag("--fused", "draw the graph after the -O2 pipeline (simplify,cse,dce,fuse) instead "
                      "of as written");
  cli.option("-o", "FILE", "write the DOT text to FILE (default: stdout, unless --svg)",
             {"--output"});
  cli.option("--svg", "FILE", "render the picture to FILE with Graphviz ('dot -Tsvg')");
  cli.option("--device", "DEVICE",
             "the device of the predicted times: h200 (the default), h100, a100, seed, or "
             "NAME:BW_TBps:TFLOPs[:FIXED_us[:SMS]]");
  if (auto rc = cli.parse(args))
    return *rc;
  Target d;
  try {
    d = parseTarget(cli.value("--device", "h200"));
  } catch (const Error &e) { // a bad option value: exit 2, like every command's
    return cli.badArgs(e.what());
  }
  const std::string &file = cli.positionals()[0];
  std::vector<std::unique_ptr<Graph>> module = loadModule(file);
  Graph &g = selectGraph(module, file, cli.value("--graph"));
  if (cli.has("--fused")) {
    PassManagerOptions popts; // sibling matmuls as the device's GEMM kernels allow
    popts.siblingGemm = codegen::siblingGemmPolicy(d);
    PassManager pm(popts);
    pm.addPipeline(defaultPipeline());
    pm.run(g);
  }
  verify(g);
  std::string text = graphToDot(g, d, estimatesFor(g, d));
  if (cli.has("-o") || !cli.has("--svg"))
    writeText(cli.value("-o"), text);
  if (cli.has("--svg"))
    renderSvg(text, cli.value("--svg"));
  return kExitOk;
}

CommandRegistration reg{"dot", "Graphviz picture of a graph, kernels as clusters", dotMain};

} // namespace
} // namespace kfuse::tool
