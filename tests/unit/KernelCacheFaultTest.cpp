// Faults in the kernel cache (compiler/KernelCache.h), which works without a GPU because
// NVRTC is a library: corrupt, truncated, empty, wrong-magic and foreign entries (another
// program's or another arch's valid entry copied into place) are detected, counted in
// cacheStats().corrupt, compiled again, and the rewritten entry loads; several processes
// filling one cache directory at once lose nothing; an NVRTC failure is one clear error with
// the log; a missing driver is a clear error from Driver::require() that leaves the process
// usable.
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Random.h"
#include "runtime/Driver.h"
#include "compiler/KernelCache.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace kfuse;
using namespace kfuse::runtime;
using namespace kfuse::compiler;
namespace fs = std::filesystem;

namespace {

std::string kernelSource(int i) {
  return fmt::format(
      "extern \"C\" __global__ void k{0}(float *p) {{ p[threadIdx.x] *= {0}.5f; }}\n", i);
}

/// A fresh, empty KFUSE_CACHE_DIR for one test; restored on destruction.
struct TempCache {
  fs::path dir;
  std::string old;
  bool hadOld;
  explicit TempCache(const std::string &name) {
    dir = fs::temp_directory_path() / fmt::format("kfuse-cache-{}-{}", name, ::getpid());
    fs::remove_all(dir);
    const char *o = std::getenv("KFUSE_CACHE_DIR");
    hadOld = o != nullptr;
    old = o ? o : "";
    ::setenv("KFUSE_CACHE_DIR", dir.c_str(), 1);
    clearMemoryCache();
    cacheStats() = {};
  }
  ~TempCache() {
    if (hadOld)
      ::setenv("KFUSE_CACHE_DIR", old.c_str(), 1);
    else
      ::unsetenv("KFUSE_CACHE_DIR");
    clearMemoryCache();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

TEST_CASE("kernel cache: damaged and foreign entries are detected and recompiled",
          "[cache][fault]") {
  TempCache tc("damage");
  const std::string src = kernelSource(1), other = kernelSource(2);
  std::string good = cachedCubin(src, "sm_90");
  std::string otherCubin = cachedCubin(other, "sm_90");
  std::string sm80 = cachedCubin(src, "sm_80");
  REQUIRE(cacheStats().compiles == 3);
  REQUIRE(good.size() > 100);
  std::string path = cacheEntryPath(src, "sm_90");
  std::string entry = readAll(path);
  REQUIRE(entry.size() == good.size() + 32);

  struct Damage {
    const char *what;
    std::string bytes;
  };
  std::string flipped = entry;
  flipped[entry.size() / 2] ^= 0x40;
  std::string badMagic = entry;
  badMagic[0] = 'X';
  std::vector<Damage> damages = {
      {"one payload byte flipped", flipped},
      {"truncated to half", entry.substr(0, entry.size() / 2)},
      {"truncated inside the header", entry.substr(0, 20)},
      {"empty file", ""},
      {"wrong magic", badMagic},
      {"another program's entry", readAll(cacheEntryPath(other, "sm_90"))},
      {"another arch's entry", readAll(cacheEntryPath(src, "sm_80"))},
      {"garbage", std::string(4096, '\x5a')},
  };
  int detected = 0;
  for (const Damage &d : damages) {
    INFO(d.what);
    writeAll(path, d.bytes);
    clearMemoryCache();
    CacheStats before = cacheStats();
    std::string got = cachedCubin(src, "sm_90");
    CHECK(cacheStats().corrupt == before.corrupt + 1);
    CHECK(cacheStats().compiles == before.compiles + 1);
    CHECK(got == good);
    detected += cacheStats().corrupt == before.corrupt + 1;
    // The rewritten entry is good: a new process (memory cleared) reads it from disk.
    clearMemoryCache();
    before = cacheStats();
    CHECK(cachedCubin(src, "sm_90") == good);
    CHECK(cacheStats().diskHits == before.diskHits + 1);
    CHECK(cacheStats().compiles == before.compiles);
  }
  std::printf("kernel cache faults: %d of %zu damaged or foreign entries detected and rewritten\n",
              detected, damages.size());
  // The other entries were never touched.
  clearMemoryCache();
  CHECK(cachedCubin(other, "sm_90") == otherCubin);
  CHECK(cachedCubin(src, "sm_80") == sm80);
  // A missing entry is a plain miss, not corruption.
  fs::remove(path);
  clearMemoryCache();
  CacheStats before = cacheStats();
  CHECK(cachedCubin(src, "sm_90") == good);
  CHECK(cacheStats().corrupt == before.corrupt);
}

TEST_CASE("kernel cache: processes filling one directory at once lose nothing",
          "[cache][fault][concurrency]") {
  TempCache tc("procs");
  constexpr int kProcs = 4, kSources = 3;
  std::vector<pid_t> kids;
  std::fflush(nullptr); // or the children print the parent's buffered output again
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      try {
        // Every process compiles every source, in its own order, so writes collide.
        for (int i = 0; i < kSources; ++i)
          if (cachedCubin(kernelSource(10 + (i + p) % kSources), "sm_90").empty())
            rc = 1;
      } catch (...) {
        rc = 2;
      }
      std::fflush(nullptr);
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  int failedKids = 0;
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failedKids += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK(failedKids == 0);
  // Every entry is there and loads; no temp file is left behind.
  clearMemoryCache();
  cacheStats() = {};
  for (int i = 0; i < kSources; ++i)
    CHECK_FALSE(cachedCubin(kernelSource(10 + i), "sm_90").empty());
  CHECK(cacheStats().diskHits == kSources);
  CHECK(cacheStats().corrupt == 0);
  CHECK(cacheStats().compiles == 0);
  int cubins = 0, reports = 0; // each entry and the ptxas report beside it, nothing else
  for (const auto &e : fs::directory_iterator(tc.dir)) {
    INFO(e.path().string());
    bool report = e.path().extension() == ".info" && e.path().stem().extension() == ".cubin";
    CHECK((e.path().extension() == ".cubin" || report));
    cubins += e.path().extension() == ".cubin";
    reports += report;
  }
  CHECK(cubins == kSources);
  CHECK(reports == kSources);
}

TEST_CASE("kernel cache: an NVRTC failure is one clear error with the log, and nothing is "
          "cached",
          "[cache][fault][nvrtc]") {
  TempCache tc("nvrtc");
  const std::string bad =
      "extern \"C\" __global__ void broken(float *p) { p[0] = undefined_name; }\n";
  std::string msg;
  try {
    cachedCubin(bad, "sm_90");
  } catch (const Error &e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find("NVRTC could not compile the generated kernels") != std::string::npos);
  CHECK(msg.find("undefined_name") != std::string::npos); // the log names the culprit
  CHECK(msg.find("--gpu-architecture=sm_90") != std::string::npos);
  CHECK(msg.find("failed-") != std::string::npos); // where the source was kept
  CHECK_FALSE(fs::exists(cacheEntryPath(bad, "sm_90")));
  CHECK(cacheStats().compiles == 0);
  // Still usable: the same call fails the same way, and a good program compiles.
  CHECK_THROWS_AS(cachedCubin(bad, "sm_90"), Error);
  CHECK_FALSE(cachedCubin(kernelSource(3), "sm_90").empty());
  // An arch NVRTC does not know is an error too, not a crash.
  CHECK_THROWS_AS(cachedCubin(kernelSource(3), "sm_7"), Error);
}

TEST_CASE("kernel cache: an NVRTC failure whose source cannot be kept says so, naming no "
          "file that was never written",
          "[cache][fault][nvrtc]") {
  TempCache tc("nvrtc-unwritable");
  const std::string bad =
      "extern \"C\" __global__ void broken2(float *p) { p[0] = undefined_name; }\n";
  // A folder where the failed source would go: the cache is usable, the write fails.
  fs::path blocked = tc.dir / ("failed-" + hashHex(bad) + ".cu");
  fs::create_directories(blocked);
  std::string msg;
  try {
    cachedCubin(bad, "sm_90");
  } catch (const Error &e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find("NVRTC could not compile the generated kernels") != std::string::npos);
  CHECK(msg.find("not saved: cannot write '" + blocked.string() + "'") != std::string::npos);
  CHECK(msg.find("source: " + blocked.string()) == std::string::npos);
}

TEST_CASE("no driver: Driver::require is a clear error and the process stays usable",
          "[driver][fault]") {
  if (Driver::get()) {
    SUCCEED("a CUDA driver and device are present; the no-driver path is not reachable here");
    return;
  }
  std::string reason = Driver::unavailableReason();
  CHECK_FALSE(reason.empty());
  for (int i = 0; i < 2; ++i) {
    std::string msg;
    try {
      Driver::require();
    } catch (const Error &e) {
      msg = e.what();
    }
    CHECK(msg == "this command needs a GPU: " + reason);
  }
  // Everything that needs no GPU still works.
  Graph g("cpu");
  Value x = g.input("x", DType::F32, {3});
  g.output(relu(x * 2.0));
  CHECK(interpret(g, randomInputs(g, 1)).size() == 1);
  TempCache tc("nodriver");
  CHECK_FALSE(cachedCubin(kernelSource(4), "sm_90").empty());
}
