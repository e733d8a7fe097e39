#include "scan.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common.h"
#include "isa.h"
#include "parallel.h"
#include "vector_math.h"

namespace tcl {
namespace {

constexpr float kMinLogDecay = -40.0f;

/*! \brief Pointers to the inputs of one (b, t) row. */
struct Row {
  const float* u;
  const float* delta;
  const float* B;
  const float* C;
  const float* z;

  TCL_ALWAYS_INLINE Row(const ScanInputs& in, int64_t row)
      : u(in.u + row * in.u_row),
        delta(in.delta + row * in.delta_row),
        B(in.B + row * in.B_row),
        C(in.C + row * in.C_row),
        z(in.z ? in.z + row * in.z_row : nullptr) {}
};

/*! \brief x = delta + delta_bias (optional) of one row. */
TCL_ALWAYS_INLINE void StepInputs(const ScanInputs& in, const float* delta, float* x) {
  if (in.delta_bias) {
    for (int64_t d = 0; d < in.dim; ++d) x[d] = delta[d] + in.delta_bias[d];
  } else {
    std::copy(delta, delta + in.dim, x);
  }
}

/*! \brief dt = softplus(delta + delta_bias) (each part optional) of one row. */
TCL_ALWAYS_INLINE void StepSizes(const ScanInputs& in, const float* delta, float* dt) {
  StepInputs(in, delta, dt);
  if (in.delta_softplus) {
    for (int64_t d = 0; d < in.dim; ++d) dt[d] = Softplus(dt[d]);
  }
}

/*! \brief One step of one state row: h = decay * h_prev + dt * u * b; y += c * h. */
TCL_ALWAYS_INLINE void ForwardRow(const float* dt, const float* u, const float* a, float b, float c,
                                  const float* h_prev, float* h, float* y, int64_t dim) {
  for (int64_t d = 0; d < dim; ++d) {
    float decay = Exp(std::max(dt[d] * a[d], kMinLogDecay));
    h[d] = decay * h_prev[d] + dt[d] * u[d] * b;
    y[d] += c * h[d];
  }
}

/*! \brief y = scan + D * u for one row, h advanced from h_prev (which may alias h). */
TCL_ALWAYS_INLINE void ForwardStep(const ScanInputs& in, const Row& r, const float* dt,
                                   const float* h_prev, float* h, float* y) {
  const int64_t dim = in.dim;
  std::fill(y, y + dim, 0.0f);
  for (int64_t n = 0; n < in.state; ++n) {
    ForwardRow(dt, r.u, in.A + n * dim, r.B[n], r.C[n], h_prev + n * dim, h + n * dim, y, dim);
  }
  if (in.D) {
    for (int64_t d = 0; d < dim; ++d) y[d] += in.D[d] * r.u[d];
  }
}

TCL_ALWAYS_INLINE void ForwardBatchBody(const ScanInputs& in, int64_t b, float* h, float* dt,
                                        float* out) {
  std::fill(h, h + in.state * in.dim, 0.0f);
  for (int64_t t = 0; t < in.length; ++t) {
    int64_t row = b * in.length + t;
    Row r(in, row);
    float* y = out + row * in.dim;
    StepSizes(in, r.delta, dt);
    ForwardStep(in, r, dt, h, h, y);
    if (r.z) {
      for (int64_t d = 0; d < in.dim; ++d) y[d] *= r.z[d] * Sigmoid(r.z[d]);
    }
  }
}

/*! \brief Scratch of one thread in the backward pass; the *_sum are over its batch elements. */
struct BackwardScratch {
  std::vector<float> history;  // (length + 1, state, dim): h[-1] = 0, h[0], ..., h[length-1]
  std::vector<float> dts;      // (length, dim) step sizes
  std::vector<float> pregate;  // (length, dim) scan + D * u, before the silu(z) gate
  std::vector<float> dh;       // (state, dim) gradient reaching h[t] from later steps and out[t]
  std::vector<float> grad_y;   // (dim,) gradient of the pre-gate output
  std::vector<float> grad_dt;  // (dim,)
  std::vector<float> terms;    // (dim,) products waiting for a lane sum
  std::vector<float> dA, dD, dbias;  // per batch element
  std::vector<double> dA_sum, dD_sum, dbias_sum;

  void Resize(const ScanInputs& in) {
    size_t dim = static_cast<size_t>(in.dim), block = static_cast<size_t>(in.state) * dim;
    size_t length = static_cast<size_t>(in.length);
    history.resize((length + 1) * block);
    dts.resize(length * dim);
    pregate.resize(length * dim);
    dh.resize(block);
    dA.resize(block);
    grad_y.resize(dim);
    grad_dt.resize(dim);
    terms.resize(dim);
    dD.resize(dim);
    dbias.resize(dim);
    dA_sum.assign(block, 0.0);
    dD_sum.assign(dim, 0.0);
    dbias_sum.assign(dim, 0.0);
  }
};

/*!
 * \brief One state row of the backward step at time t: the gradient reaching h[t] (dh, from
 * later steps, plus y's) flows into dt, A, u, B (its terms, summed by the caller) and h[t-1].
 * No two arrays overlap; saying so (restrict) is what lets the compiler vectorize this loop.
 */
TCL_ALWAYS_INLINE void BackwardRow(int64_t dim, const float* __restrict__ dt,
                                   const float* __restrict__ a, const float* __restrict__ u,
                                   const float* __restrict__ grad_y,
                                   const float* __restrict__ h_prev, float b, float c,
                                   float* __restrict__ dh, float* __restrict__ grad_dt,
                                   float* __restrict__ dA, float* __restrict__ du,
                                   float* __restrict__ terms) {
  for (int64_t d = 0; d < dim; ++d) {
    float grad_h = dh[d] + grad_y[d] * c;
    float log_decay = dt[d] * a[d];
    float decay = Exp(std::max(log_decay, kMinLogDecay));
    float unclamped = log_decay >= kMinLogDecay ? 1.0f : 0.0f;
    float grad_log = unclamped * grad_h * h_prev[d] * decay;
    grad_dt[d] += grad_log * a[d] + grad_h * u[d] * b;
    dA[d] += grad_log * dt[d];
    du[d] += grad_h * dt[d] * b;
    terms[d] = grad_h * dt[d] * u[d];
    dh[d] = grad_h * decay;
  }
}

void Accumulate(const std::vector<float>& part, std::vector<double>* sum) {
  for (size_t i = 0; i < part.size(); ++i) (*sum)[i] += part[i];
}

/*! \brief Recomputes batch b's forward pass: step sizes, states h[0..L], pre-gate outputs. */
TCL_ALWAYS_INLINE void ReplayForward(const ScanInputs& in, int64_t b, BackwardScratch* s) {
  const int64_t dim = in.dim, block = in.state * dim;
  float* history = s->history.data();
  std::fill(history, history + block, 0.0f);
  for (int64_t t = 0; t < in.length; ++t) {
    Row r(in, b * in.length + t);
    float* dt = s->dts.data() + t * dim;
    StepSizes(in, r.delta, dt);
    ForwardStep(in, r, dt, history + t * block, history + (t + 1) * block,
                s->pregate.data() + t * dim);
  }
}

/*!
 * \brief The gradient reaching y at one step (through the gate z when there is one, writing
 * dz) into s->grad_y, and u's direct part through D into du.
 */
TCL_ALWAYS_INLINE void OutputGradients(const ScanInputs& in, const Row& r, const ScanGradients& g,
                                       int64_t row, const float* dout_t, const float* y, float* du,
                                       BackwardScratch* s) {
  const int64_t dim = in.dim;
  float* grad_y = s->grad_y.data();
  if (r.z) {
    float* dz = g.dz + row * dim;
    for (int64_t d = 0; d < dim; ++d) {
      float sig = Sigmoid(r.z[d]);
      dz[d] = dout_t[d] * y[d] * sig * (1.0f + r.z[d] * (1.0f - sig));
      grad_y[d] = dout_t[d] * r.z[d] * sig;
    }
  } else {
    std::copy(dout_t, dout_t + dim, grad_y);
  }
  if (in.D) {
    for (int64_t d = 0; d < dim; ++d) {
      du[d] = grad_y[d] * in.D[d];
      s->dD[static_cast<size_t>(d)] += grad_y[d] * r.u[d];
    }
  } else {
    std::fill(du, du + dim, 0.0f);
  }
}

/*! \brief One backward time step t of batch b: dz, du, dB, dC, ddelta at t; dh to t-1. */
TCL_ALWAYS_INLINE void BackwardStep(const ScanInputs& in, const float* dout, const ScanGradients& g,
                                    int64_t b, int64_t t, BackwardScratch* s) {
  const int64_t dim = in.dim, block = in.state * dim;
  const float* history = s->history.data();
  float *grad_y = s->grad_y.data(), *grad_dt = s->grad_dt.data(), *terms = s->terms.data();
  int64_t row = b * in.length + t;
  Row r(in, row);
  const float* dt = s->dts.data() + t * dim;
  float* du = g.du + row * dim;
  OutputGradients(in, r, g, row, dout + row * dim, s->pregate.data() + t * dim, du, s);
  std::fill(grad_dt, grad_dt + dim, 0.0f);
  for (int64_t n = 0; n < in.state; ++n) {
    const float* h_cur = history + (t + 1) * block + n * dim;
    for (int64_t d = 0; d < dim; ++d) terms[d] = grad_y[d] * h_cur[d];
    g.dC[row * in.state + n] = LaneSum(terms, dim);
    BackwardRow(dim, dt, in.A + n * dim, r.u, grad_y, history + t * block + n * dim, r.B[n], r.C[n],
                s->dh.data() + n * dim, grad_dt, s->dA.data() + n * dim, du, terms);
    g.dB[row * in.state + n] = LaneSum(terms, dim);
  }
  float* ddelta = g.ddelta + row * dim;
  if (in.delta_softplus) {
    // d softplus(x) / dx = sigmoid(x), x = delta + delta_bias
    StepInputs(in, r.delta, terms);
    for (int64_t d = 0; d < dim; ++d) ddelta[d] = grad_dt[d] * Sigmoid(terms[d]);
  } else {
    std::copy(grad_dt, grad_dt + dim, ddelta);
  }
  float* dbias = s->dbias.data();
  for (int64_t d = 0; d < dim; ++d) dbias[d] += ddelta[d];
}

TCL_ALWAYS_INLINE void BackwardBatchBody(const ScanInputs& in, const float* dout,
                                         const ScanGradients& g, int64_t b, BackwardScratch* s) {
  ReplayForward(in, b, s);
  std::fill(s->dh.begin(), s->dh.end(), 0.0f);
  std::fill(s->dA.begin(), s->dA.end(), 0.0f);
  std::fill(s->dD.begin(), s->dD.end(), 0.0f);
  std::fill(s->dbias.begin(), s->dbias.end(), 0.0f);
  for (int64_t t = in.length - 1; t >= 0; --t) BackwardStep(in, dout, g, b, t, s);
  Accumulate(s->dA, &s->dA_sum);
  Accumulate(s->dD, &s->dD_sum);
  Accumulate(s->dbias, &s->dbias_sum);
}

TCL_KERNEL_VARIANTS(ForwardBatch,
                    (const ScanInputs& in, int64_t b, float* h, float* dt, float* out),
                    (in, b, h, dt, out))
TCL_KERNEL_VARIANTS(BackwardBatch,
                    (const ScanInputs& in, const float* dout, const ScanGradients& g, int64_t b,
                     BackwardScratch* s),
                    (in, dout, g, b, s))

void CheckInputs(const ScanInputs& in) {
  TCL_CHECK(in.batch >= 0 && in.length >= 0 && in.dim >= 1 && in.state >= 1)
      << "bad scan shape (batch=" << in.batch << ", length=" << in.length << ", dim=" << in.dim
      << ", state=" << in.state << ")";
  TCL_CHECK(in.u && in.delta && in.A && in.B && in.C) << "scan: u, delta, A, B and C are required";
}

}  // namespace

void SelectiveScanForward(const ScanInputs& in, float* out, int num_threads) {
  CheckInputs(in);
  ParallelRanges(in.batch, ResolveThreads(num_threads, in.batch),
                 [&](int, int64_t begin, int64_t end) {
                   std::vector<float> h(static_cast<size_t>(in.state * in.dim)),
                       dt(static_cast<size_t>(in.dim));
                   for (int64_t b = begin; b < end; ++b)
                     ForwardBatch(in, b, h.data(), dt.data(), out);
                 });
}

void SelectiveScanBackward(const ScanInputs& in, const float* dout, const ScanGradients& grads,
                           int num_threads) {
  CheckInputs(in);
  int threads = ResolveThreads(num_threads, in.batch);
  std::vector<BackwardScratch> scratch(static_cast<size_t>(threads));
  for (BackwardScratch& s : scratch) s.Resize(in);
  ParallelRanges(in.batch, threads, [&](int index, int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      BackwardBatch(in, dout, grads, b, &scratch[static_cast<size_t>(index)]);
  });
  auto reduce = [&](std::vector<double> BackwardScratch::* part, float* out) {
    if (out == nullptr) return;
    size_t size = (scratch[0].*part).size();
    for (size_t i = 0; i < size; ++i) {
      double sum = 0.0;
      for (const BackwardScratch& s : scratch) sum += (s.*part)[i];
      out[i] = static_cast<float>(sum);
    }
  };
  reduce(&BackwardScratch::dA_sum, grads.dA);
  reduce(&BackwardScratch::dD_sum, in.D ? grads.dD : nullptr);
  reduce(&BackwardScratch::dbias_sum, in.delta_bias ? grads.ddelta_bias : nullptr);
}

}  // namespace tcl
