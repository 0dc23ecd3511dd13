#pragma once
/// Quantities as people read them in reports and messages: bytes, seconds, FLOPs.
#include <string>
#include <string_view>

namespace kfuse {

/// "16 GB", "33.6 MB", "512 B": decimal units, 3 significant digits.
std::string formatBytes(double bytes);
/// "4.78 ms", "69.4 us".
std::string formatSeconds(double s);
/// "1 kernel", "2 kernels"; `many` where adding "s" is wrong ("launches").
std::string plural(long long n, std::string_view one, std::string_view many = {});
/// "137.4 GFLOP".
std::string formatFlops(double f);

} // namespace kfuse
