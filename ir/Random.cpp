#include "ir/Random.h"

#include "ir/ParallelFor.h"

#include <algorithm>
#include <optional>
#include <thread>

namespace kfuse {

namespace {

/// SplitMix64 (Steele, Lea, Flood 2014): a fast generator whose output function is also a
/// good 64-bit mixer, so it both seeds and generates.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;

/// Draw j of a stream (0-based) as a dtype value in [-1, 1), or nullopt where the draw is
/// rejected: SplitMix64's j-th output depends on j alone (its state advances by a constant),
/// so any draw can be computed without the ones before it.
struct Draws {
  uint64_t state; ///< the state before draw 0
  DType dtype;
  std::optional<double> operator()(uint64_t j) const {
    uint64_t z = mix64(state + (j + 1) * kGamma);
    // Uniform in [-1, 1) with 53 random bits. Rounding may carry a value just below 1 up to
    // 1, or a tiny one down to 0: such a draw is skipped.
    double r = roundToDType(static_cast<double>(z >> 11) * 0x1p-52 - 1.0, dtype);
    if (r >= 1.0 || r == 0.0)
      return std::nullopt;
    return r;
  }
};

/// Element i takes the i-th accepted draw. The draws are cut into blocks; the blocks' accepted
/// counts (on every core), summed in order, give each block its first element; the blocks
/// then write their values (on every core). The values are those of one sequential pass.
void fillAccepted(std::vector<double> &out, const Draws &draw, unsigned threads) {
  constexpr uint64_t kBlock = uint64_t(1) << 16;
  const uint64_t n = out.size();
  if (threads == 0)
    threads = n >= 4 * kBlock ? std::max(1u, std::thread::hardware_concurrency()) : 1;
  uint64_t firstDraw = 0, filled = 0;
  if (threads == 1) { // one pass: counting first would only double the work
    for (uint64_t j = 0; filled < n; ++j)
      if (std::optional<double> v = draw(j))
        out[filled++] = *v;
    return;
  }
  while (filled < n) {
    // As many draws as elements left: with the skipped draws, a last round fills the few
    // elements they leave.
    size_t blocks = static_cast<size_t>((n - filled + kBlock - 1) / kBlock);
    std::vector<uint64_t> count(blocks);
    auto blockDraws = [&](size_t b, auto &&each) {
      for (uint64_t j = firstDraw + b * kBlock, e = j + kBlock; j < e; ++j)
        if (std::optional<double> v = draw(j))
          each(*v);
    };
    parallelFor(blocks, threads, [&](size_t b) { blockDraws(b, [&](double) { ++count[b]; }); });
    std::vector<uint64_t> start(blocks, filled);
    for (size_t b = 1; b < blocks; ++b)
      start[b] = start[b - 1] + count[b - 1];
    parallelFor(blocks, threads, [&](size_t b) {
      uint64_t i = start[b];
      if (i < n)
        blockDraws(b, [&](double v) {
          if (i < n)
            out[i++] = v;
        });
    });
    filled = std::min(n, start[blocks - 1] + count[blocks - 1]);
    firstDraw += blocks * kBlock;
  }
}

} // namespace

Tensor randomTensor(const TensorType &t, uint64_t seed, uint64_t stream, unsigned threads) {
  Tensor out(t);
  fillAccepted(out.data,
               Draws{mix64(seed ^ 0x6b667573652d726eull) ^ mix64(stream * 0xd1b54a32d192ed03ull + 1),
                     t.dtype},
               threads);
  return out;
}

std::vector<Tensor> randomInputs(const Graph &g, uint64_t seed) {
  std::vector<Tensor> out;
  out.reserve(g.inputs().size());
  for (size_t i = 0; i < g.inputs().size(); ++i)
    out.push_back(randomTensor(g.inputs()[i]->type(), seed, i));
  return out;
}

} // namespace kfuse
