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

/// The whole text of a .kf module a user named: a regular file of at most `maxBytes`
/// (refused by its size before it is read), or a pipe or FIFO (`/dev/stdin`, `<(cmd)`)
/// read as a stream (readModuleStream). A folder, a device such as /dev/zero or a socket is
/// refused without a read. Throws kfuse::Error naming `path`.
std::string readModuleText(const std::string &path, uint64_t maxBytes);
/// An open stream (stdin, a pipe) read up to its end, or through its first NUL byte: .kf
/// text holds none, so the parser's error is the one the whole input would give, and an
/// endless stream of zeros stops at once. More than `maxBytes` is a kfuse::Error.
std::string readModuleStream(int fd, const std::string &name, uint64_t maxBytes);

} // namespace kfuse
