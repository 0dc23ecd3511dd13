#include "analysis/Differential.h"

#include "ir/Error.h"
#include "ir/ErrorBound.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>

namespace kfuse {

Agreement passAgreement(std::string_view pass) {
  return pass == "simplify" ? Agreement::Rounding : Agreement::Bitwise;
}

double roundingTolerance(DType t) {
  switch (t) {
  case DType::F32:
    return 0x1p-21;
  case DType::F16:
    return 0x1p-8;
  case DType::BF16:
    return 0x1p-5;
  }
  return 0x1p-5;
}

static int mantissaBits(DType t) { return t == DType::F32 ? 23 : t == DType::F16 ? 10 : 7; }

DType loosestDType(const Graph &g) {
  DType worst = DType::F32;
  for (const Node *n : g.nodes())
    if (mantissaBits(n->dtype()) < mantissaBits(worst))
      worst = n->dtype();
  return worst;
}

static bool sameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

std::string compareOutputs(llvm::ArrayRef<Tensor> want, llvm::ArrayRef<Tensor> got, Agreement how,
                           DType loosest, double *maxError, llvm::ArrayRef<Tensor> errorScale) {
  if (want.size() != got.size())
    return fmt::format("{} outputs where {} were expected", got.size(), want.size());
  double tol = roundingTolerance(loosest);
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(want[i].type == got[i].type))
      return fmt::format("output {} is {} where it was {}", i, got[i].type.str(),
                         want[i].type.str());
    for (size_t j = 0; j < want[i].data.size(); ++j) {
      double a = want[i].data[j], b = got[i].data[j];
      if (sameBits(a, b))
        continue;
      bool ok = false;
      if (how == Agreement::Rounding && std::isfinite(a) && std::isfinite(b)) {
        double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
        double err = std::fabs(a - b) / scale;
        if (maxError)
          *maxError = std::max(*maxError, err);
        ok = err <= tol;
        if (!ok && i < errorScale.size() && j < errorScale[i].data.size())
          ok = std::fabs(a - b) <= tol * scale + kErrorMargin * errorScale[i].data[j];
      }
      if (!ok)
        return fmt::format("output {} ({}) element {}: {} where it was {} ({})", i,
                           want[i].type.str(), j, b, a,
                           how == Agreement::Bitwise ? "bits must not change"
                                                     : fmt::format("tolerance {:g}", tol));
    }
  }
  return "";
}

PipelineCheck checkPipeline(const Graph &g, llvm::ArrayRef<Tensor> inputs,
                            llvm::ArrayRef<std::string> passes) {
  PipelineCheck r;
  DType loosest = loosestDType(g);
  std::unique_ptr<Graph> cur = g.clone();
  try {
    verify(*cur);
    std::vector<Tensor> original = interpret(*cur, inputs);
    std::vector<Tensor> before = original;
    // The error scale of a graph's outputs (ir/ErrorBound.h), for the Rounding comparisons.
    auto errorScale = [&](const Graph &h) { return interpret(*errorGraph(h), inputs); };
    std::vector<Tensor> originalScale;
    Agreement overall = Agreement::Bitwise;
    for (const std::string &name : passes) {
      r.failedPass = name;
      Agreement how = passAgreement(name);
      std::vector<Tensor> scale;
      if (how == Agreement::Rounding) {
        scale = errorScale(*cur);
        if (overall == Agreement::Bitwise) // before any pass changed it, cur is g
          originalScale = &name == &passes.front() ? scale : errorScale(g);
        overall = Agreement::Rounding;
      }
      PassManagerOptions o;
      o.verifyEach = true;
      PassManager pm(o);
      pm.addPass(name);
      pm.run(*cur);
      std::vector<Tensor> after = interpret(*cur, inputs);
      std::string m = compareOutputs(before, after, how, loosest, &r.maxRoundingError, scale);
      if (!m.empty()) {
        r.failure = fmt::format("after pass '{}': {}", name, m);
        return r;
      }
      for (const Tensor &t : after)
        r.elementsCompared += t.data.size();
      before = std::move(after);
    }
    r.failedPass = "";
    std::string m =
        compareOutputs(original, before, overall, loosest, &r.maxRoundingError, originalScale);
    if (!m.empty())
      r.failure = fmt::format("after the whole pipeline: {}", m);
  } catch (const Error &e) {
    r.failure = r.failedPass.empty() ? std::string(e.what())
                                     : fmt::format("in pass '{}': {}", r.failedPass, e.what());
  }
  return r;
}

} // namespace kfuse
