/*!
 * \file parallel.h
 * \brief Static split of [0, n) into contiguous ranges, one per thread; the caller runs the first.
 *
 * Static and contiguous on purpose: which thread reduces which items is fixed by (n, threads),
 * so reductions done per range and then combined in range order are deterministic.
 */
#ifndef TCL_PARALLEL_H_
#define TCL_PARALLEL_H_

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace tcl {

/*! \brief Threads to use: `requested`, or all hardware threads when <= 0; never more than `n`. */
inline int ResolveThreads(int requested, int64_t n) {
  int64_t threads = requested > 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max<int64_t>(1, std::min(threads, n)));
}

/*! \brief Calls work(range_index, begin, end) for `threads` contiguous ranges covering [0, n). */
template <typename Work>
void ParallelRanges(int64_t n, int threads, const Work& work) {
  if (threads <= 1 || n <= 1) {
    work(0, int64_t{0}, n);
    return;
  }
  int64_t step = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && t * step < n; ++t) {
    pool.emplace_back([&work, t, step, n] { work(t, t * step, std::min(n, (t + 1) * step)); });
  }
  work(0, int64_t{0}, std::min(n, step));
  for (std::thread& th : pool) th.join();
}

}  // namespace tcl

#endif  // TCL_PARALLEL_H_
