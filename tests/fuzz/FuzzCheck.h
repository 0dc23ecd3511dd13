#pragma once
/// What both fuzzers check on a graph that was accepted (parsed or built): it verifies; it
/// prints, parses back and prints identically; a clone prints the same; small graphs also
/// run the -O2 pipeline with verification after each pass, and the fused form must verify,
/// round-trip as text, give a traffic report and (where codegen supports it) CUDA C.
/// Any failure is a finding: it prints what broke and aborts, so libFuzzer keeps the input.
#include "ir/Graph.h"

#include <string>

namespace kfuse::fuzz {

/// Prints "fuzz finding: WHAT\nDETAIL" to stderr and aborts.
[[noreturn]] void finding(const std::string &what, const std::string &detail = "");
void checkAcceptedGraph(const Graph &g);

} // namespace kfuse::fuzz
