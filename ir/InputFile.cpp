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

} // namespace kfuse
