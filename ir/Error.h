#pragma once
/// kfuse::Error is the one exception a user sees: one sentence that names the op, the
/// shapes or dtypes, or the file position that caused it. Internal invariants use assert.
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace kfuse {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args &&...args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

} // namespace kfuse
