#pragma once
/// The kernel cache: cubins kept in memory and on disk (KFUSE_CACHE_DIR, default
/// ~/.cache/kfuse), keyed by a hash of source + options + NVRTC version + arch. Disk entries
/// are written atomically (temp file, then rename) and checked on load (magic header, the
/// key hash, so a file copied from another program or arch is refused,
/// size, checksum); a corrupt entry is compiled again and rewritten. An entry that is not a
/// regular file (a FIFO, a symlink loop) is a corrupt entry, never opened in a way that could
/// block; a cache directory that cannot be used costs only the cache, with one warning.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kfuse::compiler {

uint64_t fnv1a(std::string_view bytes);
/// 16 hex digits of fnv1a.
std::string hashHex(std::string_view bytes);
std::string cacheDirectory();
/// cacheDirectory(), created if missing, when it is a usable folder; otherwise nullopt,
/// after one warning per directory on stderr ("kfuse: warning: kernel cache ... is
/// unusable (REASON); compiling without a cache"): a symlink loop, an over-long path or a
/// file in its place must not stop a compile.
std::optional<std::string> usableCacheDirectory();

struct CacheStats {
  unsigned memoryHits = 0, diskHits = 0, compiles = 0, corrupt = 0;
};

/// A compiled program from the cache: its cubin and what ptxas reported about each kernel
/// (registers, spills, stack, shared memory: `-v`'s lines, empty where a disk entry has no
/// report beside it).
struct CachedKernel {
  std::string cubin;
  std::string info;
  enum From : uint8_t { Memory, Disk, Compiled } from = Compiled;
};

/// The program for `source` on `arch`, from memory, disk or a fresh NVRTC compile. Safe to
/// call from several threads at once (no lock is held while NVRTC runs).
CachedKernel cachedCompile(const std::string &source, const std::string &arch);
/// cachedCompile's cubin.
std::string cachedCubin(const std::string &source, const std::string &arch);
/// The counters (not synchronized: read them while no compile runs, or take a snapshot).
CacheStats &cacheStats();
CacheStats cacheStatsSnapshot();
/// Forgets the in-memory entries (as a new process would); the disk stays.
void clearMemoryCache();
/// The disk path a program's entry has (for tests).
std::string cacheEntryPath(const std::string &source, const std::string &arch);

} // namespace kfuse::compiler
