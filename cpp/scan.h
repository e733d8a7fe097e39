/*!
 * \file scan.h
 * \brief Mamba's selective scan (S6) on the CPU: a fused forward and backward for the cost model,
 * with the semantics of mamba_ssm's `selective_scan_fn` (its CUDA kernel's CPU counterpart).
 *
 * For every batch b, step t, channel d and state n:
 *
 *     dt[t]   = softplus(delta[t] + delta_bias)          (softplus and bias optional)
 *     h[t]    = exp(max(dt[t] * A, -40)) * h[t-1] + dt[t] * B[t] * u[t]
 *     out[t]  = (sum_n C[t] * h[t] + D * u[t]) * silu(z[t])   (D and z optional)
 *
 * PyTorch runs this as dozens of whole-tensor passes per step; here each (b, t) step is one pass
 * over a (state, dim) block that stays in L1. tcl.model.scan.selective_scan_torch is the twin.
 *
 * Layout is channels-last, as the cost model's linear layers produce it: u, delta, z and the
 * output are (batch, length, dim); B, C are (batch, length, state); A is (state, dim). Channels
 * are contiguous; rows (b, t) are `*_row` floats apart, so column slices of a projection's output
 * are read in place. The clamp at -40 keeps exp() out of float32 denormals (which run ~50x slower
 * on x86); the gradient through a clamped entry is zero, as torch.clamp's.
 */
#ifndef TCL_SCAN_H_
#define TCL_SCAN_H_

#include <cstdint>

namespace tcl {

struct ScanInputs {
  int64_t batch = 0, length = 0, dim = 0, state = 0;
  const float* u = nullptr;
  int64_t u_row = 0;
  const float* delta = nullptr;
  int64_t delta_row = 0;
  const float* A = nullptr;
  const float* B = nullptr;
  int64_t B_row = 0;
  const float* C = nullptr;
  int64_t C_row = 0;
  const float* D = nullptr;  // optional (dim,)
  const float* z = nullptr;  // optional
  int64_t z_row = 0;
  const float* delta_bias = nullptr;  // optional (dim,)
  bool delta_softplus = false;
};

/*! \brief Gradients, all contiguous; dD, dz and ddelta_bias are written only where the input
 * exists. */
struct ScanGradients {
  float* du;
  float* ddelta;
  float* dA;
  float* dB;
  float* dC;
  float* dD;
  float* dz;
  float* ddelta_bias;
};

/*! \brief out (batch, length, dim), contiguous; threads split the batch. */
void SelectiveScanForward(const ScanInputs& in, float* out, int num_threads);

/*!
 * \brief Gradients of sum(dout * out). The forward is recomputed per batch element, not stored.
 * Parameter gradients (dA, dD, ddelta_bias) are summed over the batch in double, in a fixed
 * order for a given thread count.
 */
void SelectiveScanBackward(const ScanInputs& in, const float* dout, const ScanGradients& grads,
                           int num_threads);

}  // namespace tcl

#endif  // TCL_SCAN_H_
