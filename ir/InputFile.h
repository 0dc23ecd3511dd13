#pragma once
/// InputFile: reading a file a user named without hanging or reading more than was checked.
/// The file is opened without blocking (a FIFO or a terminal named as an input or a cache
/// entry must not stall kfuse forever), accepted only when it is a regular file, and read
/// in pieces whose sizes the caller has checked against size() first, so a header can be
/// validated before a large body is read.
///
///   InputFile f(path);
///   if (!f.ok()) fail("cannot open '{}': {}", path, f.error());
///   std::string head = f.read(0, 16);
#include "ir/Error.h" // excerpt(), for quoting what was read; it was declared here once

#include <cstdint>
#include <string>
#include <string_view>

namespace kfuse {

class InputFile {
public:
  /// Never throws: ok() says whether `path` opened as a regular file, error() why not.
  explicit InputFile(const std::string &path);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  bool ok() const { return fd_ >= 0; }
  /// Why the file did not open, e.g. "No such file or directory" or "not a regular file".
  const std::string &error() const { return error_; }
  uint64_t size() const { return size_; }
  /// Reads `n` bytes at `offset` into `out`; false on an I/O error or a short read (the
  /// file changed size since it was opened).
  bool read(uint64_t offset, size_t n, std::string &out) const;

private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string error_;
};

} // namespace kfuse
