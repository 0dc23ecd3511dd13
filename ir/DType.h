#pragma once
/// Element types of tensors, their sizes and the rounding each one applies on store.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kfuse {

enum class DType : uint8_t { F32, F16, BF16 };
inline constexpr DType f32 = DType::F32;
inline constexpr DType f16 = DType::F16;
inline constexpr DType bf16 = DType::BF16;
inline constexpr DType allDTypes[] = {DType::F32, DType::F16, DType::BF16};

const char *dtypeName(DType t);
/// The largest finite value of `t`: 65504 (f16), about 3.39e38 (bf16), 3.40e38 (f32).
double largestFinite(DType t);
size_t dtypeSize(DType t);
std::optional<DType> parseDType(std::string_view s);

/// IEEE binary16 and bfloat16 conversions, round to nearest even, NaN kept NaN.
uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);
uint16_t floatToBF16Bits(float f);
float bf16BitsToFloat(uint16_t b);

/// Rounds a float64 value to the nearest value of dtype `t` (through f32 first for the
/// 16-bit types, as a kernel that computes in f32 and stores would).
double roundToDType(double v, DType t);

} // namespace kfuse
