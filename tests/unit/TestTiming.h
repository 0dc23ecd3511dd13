#pragma once
/// The time bounds of the [perf] tests are for an optimised build. A sanitizer build (ASan +
/// UBSan, -DKFUSE_SANITIZE=ON) runs the same work several times slower; it still runs them,
/// for what the sanitizers find in big graphs, with bounds this much wider.
namespace kfuse::test {
#ifdef KFUSE_SANITIZE
inline constexpr double kTimeSlack = 5.0;
#else
inline constexpr double kTimeSlack = 1.0;
#endif
} // namespace kfuse::test
