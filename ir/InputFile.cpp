#include "ir/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kfuse {

InputFile::InputFile(const std::string &path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error_ = std::strerror(errno);
    return;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error_ = std::strerror(errno);
    ::close(fd);
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    error_ = S_ISDIR(st.st_mode)    ? "it is a folder, not a regular file"
             : S_ISFIFO(st.st_mode) ? "it is a FIFO, not a regular file"
                                    : "not a regular file";
    ::close(fd);
    return;
  }
  fd_ = fd;
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool InputFile::read(uint64_t offset, size_t n, std::string &out) const {
  if (fd_ < 0 || offset > size_ || n > size_ - offset)
    return false;
  out.resize(n);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd_, out.data() + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

std::string readModuleStream(int fd, const std::string &name, uint64_t maxBytes) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      fail("cannot read '{}': {}", name, std::strerror(errno));
    if (got == 0)
      return text;
    size_t n = static_cast<size_t>(got);
    if (const void *nul = std::memchr(buf, '\0', n)) {
      text.append(buf, static_cast<const char *>(nul) - buf + 1);
      return text;
    }
    if (text.size() + n > maxBytes)
      fail("'{}' holds more than {} bytes; a .kf module may hold at most 1 GiB", name, maxBytes);
    text.append(buf, n);
  }
}

std::string readModuleText(const std::string &path, uint64_t maxBytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    fail("cannot open '{}': {}", path, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    fail("cannot open '{}': {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    fail("cannot read '{}': {}", path, std::strerror(EISDIR));
  if (S_ISFIFO(st.st_mode)) { // a pipe: blocking reads from here on, as from stdin
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return readModuleStream(fd, path, maxBytes);
  }
  if (!S_ISREG(st.st_mode))
    fail("cannot open '{}': not a regular file, a pipe or a FIFO", path);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > maxBytes)
    fail("'{}' is {} bytes; a .kf file may hold at most 1 GiB", path, size);
  std::string text(size, '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t r = ::pread(fd, text.data() + done, size - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      fail("cannot read '{}': {}", path, std::strerror(errno));
    if (r == 0)
      break; // the file shrank since fstat
    done += static_cast<size_t>(r);
  }
  text.resize(done);
  return text;
}

} // namespace kfuse
