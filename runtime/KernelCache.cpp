#include "runtime/KernelCache.h"

#include "ir/Error.h"
#include "runtime/Nvrtc.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unistd.h>
#include <unordered_map>

namespace kfuse::runtime {

static const char kMagic[8] = {'K', 'F', 'C', 'U', 'B', 'I', 'N', '1'};

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

static std::string cacheKey(const std::string &source, const std::string &arch) {
  std::string key = source;
  for (const std::string &o : nvrtcOptions(arch))
    key += '\0' + o;
  key += '\0' + nvrtcVersionString() + '\0' + arch;
  return hashHex(key);
}

std::string cacheEntryPath(const std::string &source, const std::string &arch) {
  return cacheDirectory() + "/" + cacheKey(source, arch) + ".cubin";
}

static bool readEntry(const std::string &path, std::string &cubin) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  if (all.size() < 24 || std::memcmp(all.data(), kMagic, 8) != 0)
    return false;
  uint64_t size, sum;
  std::memcpy(&size, all.data() + 8, 8);
  std::memcpy(&sum, all.data() + 16, 8);
  if (all.size() != 24 + size)
    return false;
  cubin = all.substr(24);
  return fnv1a(cubin) == sum;
}

static void writeEntry(const std::string &path, const std::string &cubin) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return; // an unwritable cache only costs a recompile next time
    uint64_t size = cubin.size(), sum = fnv1a(cubin);
    out.write(kMagic, 8);
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

static std::mutex mu;
static std::unordered_map<std::string, std::string> memory;

void clearMemoryCache() {
  std::lock_guard<std::mutex> lock(mu);
  memory.clear();
}

std::string cachedCubin(const std::string &source, const std::string &arch) {
  std::lock_guard<std::mutex> lock(mu);
  std::string key = cacheKey(source, arch);
  if (auto it = memory.find(key); it != memory.end()) {
    ++cacheStats().memoryHits;
    return it->second;
  }
  std::string path = cacheEntryPath(source, arch);
  std::string cubin;
  if (readEntry(path, cubin)) {
    ++cacheStats().diskHits;
  } else {
    if (std::filesystem::exists(path))
      ++cacheStats().corrupt;
    cubin = nvrtcCompile(source, arch, false).cubin;
    ++cacheStats().compiles;
    writeEntry(path, cubin);
  }
  memory[key] = cubin;
  return cubin;
}

} // namespace kfuse::runtime
