#include "ir/DType.h"

#include <bit>
#include <cmath>
#include <limits>

namespace kfuse {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  }
  return "?";
}

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32: return 4;
  case DType::F16: return 2;
  case DType::BF16: return 2;
  }
  return 0;
}

std::optional<DType> parseDType(std::string_view s) {
  for (DType t : allDTypes)
    if (s == dtypeName(t))
      return t;
  return std::nullopt;
}

uint16_t floatToHalfBits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // Inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow to Inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (absx < 0x38800000u) { // result is subnormal or zero in half
    // Scale into the subnormal range using float arithmetic, which rounds to nearest even.
    float a = std::bit_cast<float>(absx);
    float scaled = a * 16777216.0f; // 2^24: one half subnormal ulp becomes 1.0
    uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return static_cast<uint16_t>(sign | h);
}

float halfBitsToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31)
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t floatToBF16Bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet NaN
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

float bf16BitsToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

double roundToDType(double v, DType t) {
  float f = static_cast<float>(v);
  switch (t) {
  case DType::F32: return f;
  case DType::F16: return halfBitsToFloat(floatToHalfBits(f));
  case DType::BF16: return bf16BitsToFloat(floatToBF16Bits(f));
  }
  return f;
}

double largestFinite(DType t) {
  switch (t) {
  case DType::F16:
    return double(halfBitsToFloat(0x7BFF));
  case DType::BF16:
    return double(bf16BitsToFloat(0x7F7F));
  case DType::F32:
    break;
  }
  return double(std::numeric_limits<float>::max());
}

} // namespace kfuse
