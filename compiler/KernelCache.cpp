#include "compiler/KernelCache.h"

#include "ir/Error.h"
#include "ir/InputFile.h"
#include "compiler/Nvrtc.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
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

std::optional<std::string> usableCacheDirectory() {
  std::string dir = cacheDirectory();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && !std::filesystem::is_directory(dir, ec) && !ec)
    ec = std::make_error_code(std::errc::not_a_directory);
  if (!ec)
    return dir;
  static std::mutex warnMu;
  static std::set<std::string> warned; // one warning per directory, not one per kernel
  std::lock_guard<std::mutex> lock(warnMu);
  if (warned.insert(dir).second)
    fmt::print(stderr,
               "kfuse: warning: kernel cache '{}' is unusable ({}); compiling without a "
               "cache\n",
               excerpt(dir), ec.message());
  return std::nullopt;
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

/// The header is checked against the file's size before the cubin is read, so a huge
/// entry costs no memory; a FIFO or other non-regular entry is refused without blocking.
static bool readEntry(const std::string &path, uint64_t key, std::string &cubin) {
  InputFile in(path);
  std::string header;
  if (!in.ok() || !in.read(0, kHeader, header) || std::memcmp(header.data(), kMagic, 8) != 0)
    return false;
  uint64_t entryKey, size, sum;
  std::memcpy(&entryKey, header.data() + 8, 8);
  std::memcpy(&size, header.data() + 16, 8);
  std::memcpy(&sum, header.data() + 24, 8);
  if (entryKey != key || in.size() - kHeader != size || !in.read(kHeader, size, cubin))
    return false;
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
  InputFile in(path);
  std::string info;
  constexpr uint64_t kMaxInfo = 1 << 20; // ptxas's report is a few lines per kernel
  if (!in.ok() || in.size() > kMaxInfo || !in.read(0, in.size(), info))
    return {};
  return info;
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
  std::optional<std::string> dir = usableCacheDirectory();
  std::string path = dir ? *dir + "/" + key + ".cubin" : std::string();
  CachedKernel k;
  bool corrupt = false;
  if (dir && readEntry(path, keyHash, k.cubin)) {
    k.from = CachedKernel::Disk;
    k.info = readInfo(infoPath(path));
  } else {
    std::error_code ec; // anything in the entry's place (even a symlink loop) is corrupt
    corrupt = dir && std::filesystem::symlink_status(path, ec).type() !=
                         std::filesystem::file_type::not_found;
    CompiledProgram p = nvrtcCompile(source, arch, false);
    k.cubin = std::move(p.cubin);
    k.info = std::move(p.log);
    k.from = CachedKernel::Compiled;
    if (dir) {
      writeEntry(path, keyHash, k.cubin);
      writeInfo(infoPath(path), k.info);
    }
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
