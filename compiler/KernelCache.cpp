#include "compiler/KernelCache.h"

#include "ir/Error.h"
#include "compiler/Nvrtc.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unistd.h>
#include <unordered_map>

namespace kfuse::compiler {

// Entry layout: magic, the hash of the full key (source, options, NVRTC version, arch), the
// cubin's size and checksum, then the cubin. The key makes an entry copied from another
// program or arch (a self-consistent but foreign file) count as corrupt.
static const char kMagic[8] = {'K', 'F', 'C', 'U', 'B', 'I', 'N', '2'};
static constexpr size_t kHeader = 32;

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hashHex(std::string_view bytes) { return fmt::format("{:016x}", fnv1a(bytes)); }

std::string cacheDirectory() {
  if (const char *d = std::getenv("KFUSE_CACHE_DIR"); d && *d)
    return d;
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/kfuse";
  return "/tmp/kfuse-cache";
}

CacheStats &cacheStats() {
  static CacheStats s;
  return s;
}

static uint64_t cacheKeyHash(const std::string &source, const std::string &arch) {
  std::string key = source;
  for (const std::string &o : nvrtcOptions(arch))
    key += '\0' + o;
  key += '\0' + nvrtcVersionString() + '\0' + arch;
  return fnv1a(key);
}

static std::string cacheKey(const std::string &source, const std::string &arch) {
  return fmt::format("{:016x}", cacheKeyHash(source, arch));
}

std::string cacheEntryPath(const std::string &source, const std::string &arch) {
  return cacheDirectory() + "/" + cacheKey(source, arch) + ".cubin";
}

static bool readEntry(const std::string &path, uint64_t key, std::string &cubin) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  if (all.size() < kHeader || std::memcmp(all.data(), kMagic, 8) != 0)
    return false;
  uint64_t entryKey, size, sum;
  std::memcpy(&entryKey, all.data() + 8, 8);
  std::memcpy(&size, all.data() + 16, 8);
  std::memcpy(&sum, all.data() + 24, 8);
  if (entryKey != key || all.size() != kHeader + size)
    return false;
  cubin = all.substr(kHeader);
  return fnv1a(cubin) == sum;
}

static void writeEntry(const std::string &path, uint64_t key, const std::string &cubin) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return; // an unwritable cache only costs a recompile next time
    uint64_t size = cubin.size(), sum = fnv1a(cubin);
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char *>(&key), 8);
    out.write(reinterpret_cast<const char *>(&size), 8);
    out.write(reinterpret_cast<const char *>(&sum), 8);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!out)
      return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
}

static std::mutex mu; // guards the memory map and the stats, never held over a compile
static std::unordered_map<std::string, CachedKernel> memory;

void clearMemoryCache() {
  std::lock_guard<std::mutex> lock(mu);
  memory.clear();
}

CacheStats cacheStatsSnapshot() {
  std::lock_guard<std::mutex> lock(mu);
  return cacheStats();
}

/// The ptxas report beside an entry: advisory (registers and spills for the dumps), so it
/// is plain text, and a missing or unreadable one only leaves the numbers unknown.
static std::string infoPath(const std::string &entry) { return entry + ".info"; }

static std::string readInfo(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : std::string();
}

static void writeInfo(const std::string &path, const std::string &info) {
  std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out)
      return;
    out << info;
    if (!out)
      return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
}

CachedKernel cachedCompile(const std::string &source, const std::string &arch) {
  uint64_t keyHash = cacheKeyHash(source, arch);
  std::string key = fmt::format("{:016x}", keyHash);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memory.find(key); it != memory.end()) {
      ++cacheStats().memoryHits;
      CachedKernel hit = it->second;
      hit.from = CachedKernel::Memory;
      return hit;
    }
  }
  // Disk reads and NVRTC run unlocked: kernels of one program compile on several threads.
  // Two threads with the same source both compile and write the same entry atomically.
  std::string path = cacheEntryPath(source, arch);
  CachedKernel k;
  bool corrupt = false;
  if (readEntry(path, keyHash, k.cubin)) {
    k.from = CachedKernel::Disk;
    k.info = readInfo(infoPath(path));
  } else {
    corrupt = std::filesystem::exists(path);
    CompiledProgram p = nvrtcCompile(source, arch, false);
    k.cubin = std::move(p.cubin);
    k.info = std::move(p.log);
    k.from = CachedKernel::Compiled;
    writeEntry(path, keyHash, k.cubin);
    writeInfo(infoPath(path), k.info);
  }
  std::lock_guard<std::mutex> lock(mu);
  CacheStats &s = cacheStats();
  if (k.from == CachedKernel::Disk)
    ++s.diskHits;
  else
    ++s.compiles;
  s.corrupt += corrupt;
  memory[key] = k;
  return k;
}

std::string cachedCubin(const std::string &source, const std::string &arch) {
  return cachedCompile(source, arch).cubin;
}

} // namespace kfuse::compiler
