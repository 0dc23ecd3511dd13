#include "ir/Random.h"

namespace kfuse {

namespace {

/// SplitMix64 (Steele, Lea, Flood 2014): a fast generator whose output function is also a
/// good 64-bit mixer, so it both seeds and generates.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct SplitMix64 {
  uint64_t state;
  uint64_t next() { return mix64(state += 0x9e3779b97f4a7c15ull); }
  /// Uniform in [-1, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-52 - 1.0; }
};

} // namespace

Tensor randomTensor(const TensorType &t, uint64_t seed, uint64_t stream) {
  Tensor out(t);
  SplitMix64 rng{mix64(seed ^ 0x6b667573652d726eull) ^ mix64(stream * 0xd1b54a32d192ed03ull + 1)};
  for (double &v : out.data) {
    // Rounding may carry a value just below 1 up to 1, or a tiny one down to 0: draw again.
    double r;
    do
      r = roundToDType(rng.uniform(), t.dtype);
    while (r >= 1.0 || r == 0.0);
    v = r;
  }
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
