/*!
 * \file sampling.h
 * \brief The RDU sampler's geometry: density from a k-nearest-neighbour graph and greedy
 * farthest-point (k-center) selection, optionally mixed with per-point scores.
 *
 * Neighbours come from FAISS on the Python side; the core links nothing but the standard library.
 */
#ifndef TCL_SAMPLING_H_
#define TCL_SAMPLING_H_

#include <cstdint>
#include <vector>

namespace tcl {

/*!
 * \brief Density of each point: 1 / (epsilon + mean distance to its neighbours), self excluded.
 * \param distances (n, k) row-major, squared L2 as FAISS returns them (the root is taken here).
 * \param indices (n, k) row-major neighbour ids; -1 marks a missing neighbour.
 * \return (n,) densities scaled so that the densest point has 1.
 */
std::vector<double> DensityFromKnn(const float* distances, const int64_t* indices, int64_t n,
                                   int64_t k);

struct GreedyResult {
  std::vector<int64_t> selected;     // in selection order, initial ones excluded
  std::vector<double> radius;        // k-center radius (max min-distance) before each pick
  std::vector<double> min_distance;  // (n,) final distance of each point to the selected set
};

/*!
 * \brief Greedy selection of `k` points. Each step picks the point maximizing
 * `diversity_weight * d(p) / max_q d(q) + bonus[p]`, where d is the Euclidean distance to the
 * points already selected (`initial` included); with no bonus this is farthest-point k-center.
 * Ties go to the smallest index. When nothing is selected yet, `first` starts the set.
 * \param points (n, dim) row-major float32.
 */
GreedyResult GreedySelect(const float* points, int64_t n, int64_t dim, int64_t k,
                          const std::vector<int64_t>& initial, const double* bonus,
                          double diversity_weight, int64_t first, int num_threads);

}  // namespace tcl

#endif  // TCL_SAMPLING_H_
