// "Did you mean" (ir/Suggest.h): close names are guessed, far and short ones are not.
#include "ir/Suggest.h"

#include <catch2/catch.hpp>

using namespace kfuse;

TEST_CASE("didYouMean: the closest name within a few edits", "[suggest]") {
  std::vector<std::string> ops = opNames();
  CHECK(didYouMean("sliu", ops) == " (did you mean 'silu'?)"); // a swap is one edit
  CHECK(didYouMean("gelu_tahn", ops) == " (did you mean 'gelu_tanh'?)");
  CHECK(didYouMean("transpose_b", {"trans_a", "trans_b"}) == " (did you mean 'trans_b'?)");
  CHECK(didYouMean("f61", {"f32", "f16", "bf16"}) == " (did you mean 'f16'?)");
  CHECK(didYouMean("foo", ops).empty()); // two edits from 'log': too far for three letters
  CHECK(didYouMean("frobnicate", ops).empty());
  CHECK(didYouMean("silu", ops).empty()); // a name that exists is not misspelled
  CHECK(didYouMean(std::string(100000, 'a'), ops).empty());
  CHECK(didYouMean("", ops).empty());
}
