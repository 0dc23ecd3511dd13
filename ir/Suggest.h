#pragma once
/// "Did you mean" for names the user misspelled: ops, attributes, dtypes, command-line flags.
#include <string>
#include <string_view>
#include <vector>

namespace kfuse {

/// The candidate closest to `word` by edit distance (a swap of two neighbours is one edit), when it
/// is within one edit (words of up to 4 characters) or max(2, |word| / 2) edits, as " (did you
/// mean 'silu'?)"; "" when none is that
/// close. Ties go to the first candidate.
std::string didYouMean(std::string_view word, const std::vector<std::string> &candidates);

/// Every op's name as .kf spells it (ir/Ops.def), inputs aside.
std::vector<std::string> opNames();

} // namespace kfuse
