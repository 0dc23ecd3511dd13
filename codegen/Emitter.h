#pragma once
/// Emitter: builds CUDA C text line by line with indentation and scopes, and hands out
/// stable temporary names (t0, t1, ...) so the same input always gives the same source,
/// byte for byte (the kernel cache and the golden tests rely on that).
#include <fmt/format.h>
#include <string>

namespace kfuse::codegen {

class Emitter {
public:
  template <typename... Args> void line(fmt::format_string<Args...> f, Args &&...args) {
    out_.append(indent_ * 2, ' ');
    out_ += fmt::format(f, std::forward<Args>(args)...);
    out_ += '\n';
  }
  void blank() { out_ += '\n'; }
  /// Writes `header {` and indents.
  template <typename... Args> void openScope(fmt::format_string<Args...> f, Args &&...args) {
    out_.append(indent_ * 2, ' ');
    std::string header = fmt::format(f, std::forward<Args>(args)...);
    out_ += header;
    out_ += header.empty() || header.back() == '\n' ? "{\n" : " {\n";
    ++indent_;
  }
  /// Dedents and writes `}` followed by `trailer`.
  void closeScope(const std::string &trailer = "") {
    --indent_;
    out_.append(indent_ * 2, ' ');
    out_ += "}" + trailer + "\n";
  }
  std::string tmp() { return fmt::format("t{}", nextTmp_++); }
  void resetTemps() { nextTmp_ = 0; }
  const std::string &str() const { return out_; }

private:
  std::string out_;
  int indent_ = 0;
  unsigned nextTmp_ = 0;
};

} // namespace kfuse::codegen
