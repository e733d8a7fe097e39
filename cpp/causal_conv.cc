#include "causal_conv.h"

#include <algorithm>
#include <vector>

#include "common.h"
#include "isa.h"
#include "parallel.h"
#include "vector_math.h"

namespace tcl {
namespace {

/*! \brief pre = bias + sum over the taps that exist at step t (before the SiLU). */
TCL_ALWAYS_INLINE void Preactivation(const ConvInputs& in, int64_t b, int64_t t, float* pre) {
  const int64_t dim = in.dim;
  if (in.bias) {
    std::copy(in.bias, in.bias + dim, pre);
  } else {
    std::fill(pre, pre + dim, 0.0f);
  }
  for (int64_t k = std::max<int64_t>(0, in.width - 1 - t); k < in.width; ++k) {
    const float* x = in.x + (b * in.length + t - in.width + 1 + k) * in.x_row;
    for (int64_t d = 0; d < dim; ++d) pre[d] += in.weight[k * dim + d] * x[d];
  }
}

TCL_ALWAYS_INLINE void ForwardBatchBody(const ConvInputs& in, int64_t b, float* out) {
  for (int64_t t = 0; t < in.length; ++t) {
    float* y = out + (b * in.length + t) * in.dim;
    Preactivation(in, b, t, y);
    for (int64_t d = 0; d < in.dim; ++d) y[d] *= Sigmoid(y[d]);
  }
}

struct Scratch {
  std::vector<float> grad_pre;  // (length, dim)
  std::vector<float> dweight;   // (width, dim) of the current batch element
  std::vector<double> dweight_sum, dbias_sum;
};

TCL_ALWAYS_INLINE void BackwardBatchBody(const ConvInputs& in, const float* dout, int64_t b,
                                         Scratch* s, float* dx) {
  const int64_t dim = in.dim, width = in.width;
  float* grad_pre = s->grad_pre.data();
  for (int64_t t = 0; t < in.length; ++t) {
    float* g = grad_pre + t * dim;
    const float* dy = dout + (b * in.length + t) * dim;
    Preactivation(in, b, t, g);
    for (int64_t d = 0; d < dim; ++d) {
      float sig = Sigmoid(g[d]);
      g[d] = dy[d] * sig * (1.0f + g[d] * (1.0f - sig));  // silu'(pre)
    }
    for (int64_t d = 0; d < dim; ++d) s->dbias_sum[static_cast<size_t>(d)] += g[d];
  }
  std::fill(s->dweight.begin(), s->dweight.end(), 0.0f);
  for (int64_t t = 0; t < in.length; ++t) {
    float* dx_t = dx + (b * in.length + t) * dim;
    const float* x_t = in.x + (b * in.length + t) * in.x_row;
    std::fill(dx_t, dx_t + dim, 0.0f);
    // x[t] feeds out[t + width - 1 - k] through tap k.
    for (int64_t k = 0; k < width; ++k) {
      int64_t later = t + width - 1 - k;
      if (later >= in.length) continue;
      const float* g = grad_pre + later * dim;
      const float* w = in.weight + k * dim;
      float* dw = s->dweight.data() + k * dim;
      for (int64_t d = 0; d < dim; ++d) {
        dx_t[d] += w[d] * g[d];
        dw[d] += g[d] * x_t[d];
      }
    }
  }
  for (size_t i = 0; i < s->dweight.size(); ++i) s->dweight_sum[i] += s->dweight[i];
}

TCL_KERNEL_VARIANTS(ForwardBatch, (const ConvInputs& in, int64_t b, float* out), (in, b, out))
TCL_KERNEL_VARIANTS(BackwardBatch,
                    (const ConvInputs& in, const float* dout, int64_t b, Scratch* s, float* dx),
                    (in, dout, b, s, dx))

}  // namespace

void CausalConvForward(const ConvInputs& in, float* out, int num_threads) {
  TCL_CHECK(in.batch >= 0 && in.length >= 0 && in.dim >= 1 && in.width >= 1)
      << "bad convolution shape (batch=" << in.batch << ", length=" << in.length
      << ", dim=" << in.dim << ", width=" << in.width << ")";
  ParallelRanges(in.batch, ResolveThreads(num_threads, in.batch),
                 [&](int, int64_t begin, int64_t end) {
                   for (int64_t b = begin; b < end; ++b) ForwardBatch(in, b, out);
                 });
}

void CausalConvBackward(const ConvInputs& in, const float* dout, float* dx, float* dweight,
                        float* dbias, int num_threads) {
  TCL_CHECK(in.batch >= 0 && in.length >= 0 && in.dim >= 1 && in.width >= 1)
      << "bad convolution shape";
  int threads = ResolveThreads(num_threads, in.batch);
  std::vector<Scratch> scratch(static_cast<size_t>(threads));
  for (Scratch& s : scratch) {
    s.grad_pre.resize(static_cast<size_t>(in.length * in.dim));
    s.dweight.resize(static_cast<size_t>(in.width * in.dim));
    s.dweight_sum.assign(s.dweight.size(), 0.0);
    s.dbias_sum.assign(static_cast<size_t>(in.dim), 0.0);
  }
  ParallelRanges(in.batch, threads, [&](int index, int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      BackwardBatch(in, dout, b, &scratch[static_cast<size_t>(index)], dx);
  });
  for (size_t i = 0; i < scratch[0].dweight_sum.size(); ++i) {
    double sum = 0.0;
    for (const Scratch& s : scratch) sum += s.dweight_sum[i];
    dweight[i] = static_cast<float>(sum);
  }
  if (dbias == nullptr) return;
  for (size_t i = 0; i < scratch[0].dbias_sum.size(); ++i) {
    double sum = 0.0;
    for (const Scratch& s : scratch) sum += s.dbias_sum[i];
    dbias[i] = static_cast<float>(sum);
  }
}

}  // namespace tcl
