#pragma once
/// Kernels with the same code. Generated kernels differ by their name and by the comments
/// that tie each line to the `.kf` text; a graph that repeats a pattern (a model's layers,
/// a long chain cut into capped kernels) yields many kernels whose code is otherwise the
/// same. Each such group is compiled once: the others share its cubin and call its entry.
#include <string>
#include <string_view>
#include <vector>

namespace kfuse::compiler {

/// The code of `source` without what does not reach the cubin: the kernel's name
/// `mangled` (which also prefixes its helpers) is replaced by a placeholder and every `//`
/// comment is dropped to the end of its line. Sound because generated code has no string
/// literals: names from the graph appear only in comments (codegen/LineComment.h).
std::string codeIdentity(std::string_view source, std::string_view mangled);

/// For each (source, mangled) pair: the index of the first earlier pair with the same
/// codeIdentity, or -1 where it is the first of its code.
std::vector<int> firstWithSameCode(const std::vector<std::string_view> &sources,
                                   const std::vector<std::string_view> &mangled);

} // namespace kfuse::compiler
