#pragma once
/// What the C API's files share (not installed): the handles behind include/kfuse/kfuse.h's
/// opaque pointers, and the boundary every exported function goes through. guard() runs a
/// function's body, turns whatever it throws into a kfuse_status and the thread's last-error
/// message, and lets nothing cross into C:
///
///   kfuse_status kfuse_graph_verify(kfuse_graph g) {
///     return capi::guard("kfuse_graph_verify", KFUSE_ERROR_INVALID_GRAPH,
///                        [&] { verify(*capi::graphArg(g).graph); });
///   }
///
/// CApiError carries its own status (a NULL argument, an unknown op); any other kfuse::Error
/// gets the function's default status, a ParseError KFUSE_ERROR_PARSE.
#include "kfuse/kfuse.h"

#include "compiler/Compile.h"
#include "ir/Error.h"
#include "ir/Graph.h"

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kfuse::runtime {
class Executable;
}

/// A value handle: a node of its graph, or a scalar literal (node == nullptr).
struct kfuse_value_s {
  kfuse::Node *node = nullptr;
  double literal = 0;
};

struct kfuse_graph_s {
  std::unique_ptr<kfuse::Graph> graph;
  std::deque<kfuse_value_s> values; ///< stable addresses: the handles
  std::unordered_map<const kfuse::Node *, kfuse_value_s *> byNode;
  std::unordered_set<const kfuse_value_s *> known; ///< to refuse a handle of another graph
  std::string printed;                             ///< kfuse_graph_print's text

  /// The one handle of `n` (made on first use).
  kfuse_value_s *wrap(kfuse::Node *n);
  kfuse_value_s *literal(double v);
  /// `v` checked to be one of this graph's handles; `what` names it in the error.
  kfuse_value_s &value(kfuse_value v, std::string_view what);
  /// As value(), and a tensor (not a literal).
  kfuse::Node *tensor(kfuse_value v, std::string_view what);
};

struct kfuse_graph_set_s {
  std::vector<std::unique_ptr<kfuse::Graph>> graphs;
};

struct kfuse_module_s {
  kfuse::compiler::CompiledModule module;
  kfuse::compiler::Stage stage = kfuse::compiler::Stage::Cubin;
  /// The JSON and text answers, built once at compile time so that reading them from several
  /// threads is safe.
  std::string reportJson, fusionJson, kernelsJson, planText;
};

struct kfuse_executable_s {
  std::unique_ptr<kfuse::runtime::Executable> exe;
  size_t numInputs = 0, numOutputs = 0;
  bool captured = false;                           ///< the CUDA graph exists
  std::vector<unsigned long long> boundIn, boundOut; ///< the buffers it was recorded for
  ~kfuse_executable_s();
};

namespace kfuse::capi {

/// An error with its own status code.
class CApiError : public Error {
public:
  CApiError(kfuse_status s, const std::string &msg) : Error(msg), status(s) {}
  kfuse_status status;
};

template <typename... Args>
[[noreturn]] void failWith(kfuse_status s, fmt::format_string<Args...> f, Args &&...args) {
  throw CApiError(s, fmt::format(f, std::forward<Args>(args)...));
}

/// Records "FN: WHAT" as this thread's last error and returns `s`; never throws.
kfuse_status setError(kfuse_status s, const char *fn, const char *what) noexcept;
/// Called inside a catch (...): classifies the exception in flight and records it.
kfuse_status handleException(const char *fn, kfuse_status onError) noexcept;

/// Runs `body`; KFUSE_OK, or the status and message of whatever it threw (`onError` for a
/// plain kfuse::Error).
template <typename F> kfuse_status guard(const char *fn, kfuse_status onError, F &&body) noexcept {
  try {
    body();
    return KFUSE_OK;
  } catch (...) {
    return handleException(fn, onError);
  }
}

/// `p`, or KFUSE_ERROR_INVALID_ARGUMENT "WHAT is NULL".
template <typename T> T *need(T *p, std::string_view what) {
  if (!p)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "{} is NULL", what);
  return p;
}

inline kfuse_graph_s &graphArg(kfuse_graph g) { return *need(g, "graph"); }
inline kfuse_module_s &moduleArg(kfuse_module m) { return *need(m, "module"); }

/// The dtype of a kfuse_dtype value, or KFUSE_ERROR_INVALID_ARGUMENT.
DType dtypeArg(kfuse_dtype t);
/// Caller text quoted in a message: at most 60 bytes, control bytes as '?'.
std::string quote(std::string_view s);
/// Index `i` of `n` things called `what` ("kernel"), or KFUSE_ERROR_INVALID_ARGUMENT.
void checkIndex(size_t i, size_t n, std::string_view what);

} // namespace kfuse::capi
