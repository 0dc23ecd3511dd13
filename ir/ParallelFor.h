#pragma once
/// parallelFor: runs body(0..n-1) on `threads` threads (the calling one among them), each
/// taking the next index as it finishes one, so a slow kernel does not hold up the others.
/// The first exception thrown by any body is rethrown once every thread has stopped; the
/// indices not yet taken then are skipped.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kfuse {

template <typename Body> void parallelFor(size_t n, unsigned threads, Body body) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex mu;
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < n;) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first)
          first = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  size_t extra = std::min<size_t>(threads, n);
  for (size_t t = 1; t < extra; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  if (first)
    std::rethrow_exception(first);
}

} // namespace kfuse
