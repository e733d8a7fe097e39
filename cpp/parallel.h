/*!
 * \file parallel.h
 * \brief The thread pools of the core: a static split of [0, n) into contiguous ranges, one per
 * thread, and a dynamic one that hands out items one at a time; the caller is one of the threads.
 *
 * Static and contiguous where results are reduced: which thread reduces which items is fixed by
 * (n, threads), so reductions done per range and then combined in range order are deterministic.
 * Dynamic where items cost unevenly and each writes only its own slot (record chunks).
 */
#ifndef TCL_PARALLEL_H_
#define TCL_PARALLEL_H_

#include <algorithm>
#include <atomic>
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

/*! \brief Calls work(i) for every i in [0, n) on `threads` threads, each taking the next item. */
template <typename Work>
void ParallelForEach(int64_t n, int threads, const Work& work) {
  std::atomic<int64_t> next{0};
  auto loop = [&work, &next, n] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) work(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && t < n; ++t) pool.emplace_back(loop);
  loop();
  for (std::thread& th : pool) th.join();
}

}  // namespace tcl

#endif  // TCL_PARALLEL_H_
