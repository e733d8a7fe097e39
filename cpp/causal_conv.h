/*!
 * \file causal_conv.h
 * \brief The Mamba block's depthwise causal convolution with its SiLU, fused, forward and backward
 * (the CPU counterpart of the causal-conv1d package's `causal_conv1d_fn(x, w, b, "silu")`):
 *
 *     out[t, d] = silu(bias[d] + sum_k weight[k, d] * x[t - width + 1 + k, d])   (x[<0] = 0)
 *
 * Channels-last: x and out are (batch, length, dim), x's rows `x_row` floats apart (a column slice
 * of the input projection is read in place); weight is (width, dim), Conv1d's transposed.
 * The PyTorch twin is Conv1d + silu (tcl.model.mamba).
 */
#ifndef TCL_CAUSAL_CONV_H_
#define TCL_CAUSAL_CONV_H_

#include <cstdint>

namespace tcl {

struct ConvInputs {
  int64_t batch = 0, length = 0, dim = 0, width = 0;
  const float* x = nullptr;
  int64_t x_row = 0;
  const float* weight = nullptr;
  const float* bias = nullptr;  // optional (dim,)
};

/*! \brief out (batch, length, dim), contiguous; threads split the batch. */
void CausalConvForward(const ConvInputs& in, float* out, int num_threads);

/*!
 * \brief Gradients of sum(dout * out): dx (batch, length, dim), dweight (width, dim), dbias (dim,)
 * (written when the bias exists), the last two summed over the batch in double.
 */
void CausalConvBackward(const ConvInputs& in, const float* dout, float* dx, float* dweight,
                        float* dbias, int num_threads);

}  // namespace tcl

#endif  // TCL_CAUSAL_CONV_H_
