#pragma once
/// A fusion decision is a value that carries its reason (after XLA's FusionDecision): a
/// "no" always says why, in one sentence a user can act on, and the reason travels to
/// `kfuse opt --explain-fusion` and the JSON report unchanged.
#include <string>
#include <utility>

namespace kfuse {

class FusionDecision {
public:
  static FusionDecision allow() { return FusionDecision(true, {}); }
  static FusionDecision forbid(std::string reason) { return FusionDecision(false, std::move(reason)); }

  bool canFuse() const { return ok_; }
  explicit operator bool() const { return ok_; }
  /// The reason for a "no"; "fusible" for a "yes".
  std::string explain() const { return ok_ ? std::string("fusible") : reason_; }

private:
  FusionDecision(bool ok, std::string reason) : ok_(ok), reason_(std::move(reason)) {}
  bool ok_;
  std::string reason_;
};

} // namespace kfuse
