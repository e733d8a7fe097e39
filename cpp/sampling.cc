#include "sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common.h"
#include "parallel.h"

namespace tcl {

std::vector<double> DensityFromKnn(const float* distances, const int64_t* indices, int64_t n,
                                   int64_t k) {
  TCL_CHECK(n >= 0 && k >= 1) << "need a (n, k) neighbour table, got n=" << n << " k=" << k;
  std::vector<double> density(static_cast<size_t>(n), 0.0);
  double densest = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0.0;
    int64_t count = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t nb = indices[i * k + j];
      if (nb < 0 || nb == i) continue;  // missing neighbour, or the point itself
      TCL_CHECK(nb < n) << "neighbour index " << nb << " of point " << i
                        << " is out of range (n=" << n << ")";
      double d2 = static_cast<double>(distances[i * k + j]);
      sum += std::sqrt(std::max(d2, 0.0));
      ++count;
    }
    // A point without neighbours gets the lowest density: it represents nothing else.
    density[static_cast<size_t>(i)] =
        count ? 1.0 / (1e-12 + sum / static_cast<double>(count)) : 0.0;
    densest = std::max(densest, density[static_cast<size_t>(i)]);
  }
  if (densest > 0) {
    for (double& d : density) d /= densest;
  }
  return density;
}

namespace {

double Distance(const float* a, const float* b, int64_t dim) {
  // Eight independent partial sums: the loop vectorizes (one long chain would not), and the
  // order is numpy's pairwise summation for rows of 8..128 values, so the twin agrees exactly.
  if (dim < 8) {
    double sum = 0.0;
    for (int64_t j = 0; j < dim; ++j) {
      double diff = static_cast<double>(a[j]) - static_cast<double>(b[j]);
      sum += diff * diff;
    }
    return std::sqrt(sum);
  }
  double r[8];
  for (int j = 0; j < 8; ++j) {
    double diff = static_cast<double>(a[j]) - static_cast<double>(b[j]);
    r[j] = diff * diff;
  }
  int64_t blocked = dim - dim % 8;
  for (int64_t i = 8; i < blocked; i += 8) {
    for (int j = 0; j < 8; ++j) {
      double diff = static_cast<double>(a[i + j]) - static_cast<double>(b[i + j]);
      r[j] += diff * diff;
    }
  }
  double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
  for (int64_t i = blocked; i < dim; ++i) {
    double diff = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    sum += diff * diff;
  }
  return std::sqrt(sum);
}

/*! \brief min_distance[i] = min(min_distance[i], |p_i - center|) over all i, in parallel. */
void UpdateDistances(const float* points, int64_t n, int64_t dim, int64_t center,
                     std::vector<double>* min_distance, int num_threads) {
  auto work = [&](int64_t begin, int64_t end) {
    const float* c = points + center * dim;
    for (int64_t i = begin; i < end; ++i) {
      double d = Distance(points + i * dim, c, dim);
      if (d < (*min_distance)[static_cast<size_t>(i)]) (*min_distance)[static_cast<size_t>(i)] = d;
    }
  };
  int threads = static_cast<int>(std::min<int64_t>(num_threads, std::max<int64_t>(1, n / 4096)));
  ParallelRanges(n, threads, [&](int, int64_t begin, int64_t end) { work(begin, end); });
}

}  // namespace

GreedyResult GreedySelect(const float* points, int64_t n, int64_t dim, int64_t k,
                          const std::vector<int64_t>& initial, const double* bonus,
                          double diversity_weight, int64_t first, int num_threads) {
  TCL_CHECK(dim >= 1) << "points need at least one dimension";
  TCL_CHECK(k >= 0) << "k must be >= 0, got " << k;
  for (int64_t i : initial)
    TCL_CHECK(i >= 0 && i < n) << "initial index " << i << " out of range (n=" << n << ")";
  num_threads = ResolveThreads(num_threads, n);
  GreedyResult result;
  const double infinity = std::numeric_limits<double>::infinity();
  result.min_distance.assign(static_cast<size_t>(n), infinity);
  std::vector<char> taken(static_cast<size_t>(n), 0);
  for (int64_t i : initial) {
    if (!taken[static_cast<size_t>(i)]) {
      taken[static_cast<size_t>(i)] = 1;
      UpdateDistances(points, n, dim, i, &result.min_distance, num_threads);
    }
  }
  int64_t available = n - static_cast<int64_t>(std::count(taken.begin(), taken.end(), 1));
  TCL_CHECK(k <= available) << "k=" << k << " exceeds the " << available
                            << " points not selected yet";
  for (int64_t step = 0; step < k; ++step) {
    int64_t pick = -1;
    double radius = 0.0;
    bool empty = std::all_of(result.min_distance.begin(), result.min_distance.end(),
                             [&](double d) { return d == infinity; });
    if (empty) {
      TCL_CHECK(first >= 0 && first < n)
          << "first index " << first << " out of range (n=" << n << ")";
      pick = first;
      radius = infinity;
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (!taken[static_cast<size_t>(i)])
          radius = std::max(radius, result.min_distance[static_cast<size_t>(i)]);
      }
      double best = -infinity;
      for (int64_t i = 0; i < n; ++i) {
        if (taken[static_cast<size_t>(i)]) continue;
        double d = result.min_distance[static_cast<size_t>(i)];
        double score =
            diversity_weight * (radius > 0 ? d / radius : 0.0) + (bonus ? bonus[i] : 0.0);
        if (score > best) {
          best = score;
          pick = i;
        }
      }
    }
    result.radius.push_back(radius);
    result.selected.push_back(pick);
    taken[static_cast<size_t>(pick)] = 1;
    UpdateDistances(points, n, dim, pick, &result.min_distance, num_threads);
  }
  return result;
}

}  // namespace tcl
