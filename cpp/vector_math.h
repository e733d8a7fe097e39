/*!
 * \file vector_math.h
 * \brief Branch-free float32 exp/log/softplus/sigmoid for loops the compiler vectorizes.
 *
 * std::exp and friends stay scalar library calls unless -ffast-math; these inline versions are
 * plain arithmetic (Cephes' minimax polynomials, ~2 ulp) and vectorize under -fno-trapping-math,
 * which CMakeLists.txt sets for the files that include this header.
 */
#ifndef TCL_VECTOR_MATH_H_
#define TCL_VECTOR_MATH_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "isa.h"  // TCL_ALWAYS_INLINE: these compile into each instruction-set build of a kernel

namespace tcl {

/*!
 * \brief exp(x), clamped to [-87, 88], to ~2 ulp; branch-free so that loops over it vectorize
 * (std::exp does not without -ffast-math). Cephes' expf: x = k ln2 + r with |r| <= ln2 / 2,
 * a degree-6 minimax polynomial in r, and 2^k built in the exponent bits.
 */
TCL_ALWAYS_INLINE float Exp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  // Adding and removing 1.5 * 2^23 rounds to the nearest integer in the default rounding mode.
  float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - k * 0.693359375f + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

/*! \brief log(x) for normal x > 0, branch-free (Cephes' logf: x = m 2^e with m in [sqrt(1/2),
 * sqrt(2))). */
TCL_ALWAYS_INLINE float Log(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  float e = static_cast<float>(((bits >> 23) & 0xff) - 126);
  bits = (bits & 0x807fffff) | 0x3f000000;  // mantissa in [0.5, 1)
  float m;
  std::memcpy(&m, &bits, sizeof(m));
  bool low = m < 0.707106781186547524f;
  e -= low ? 1.0f : 0.0f;
  m = (low ? m + m : m) - 1.0f;
  float z = m * m;
  float p = 7.0376836292e-2f;
  p = p * m - 1.1514610310e-1f;
  p = p * m + 1.1676998740e-1f;
  p = p * m - 1.2420140846e-1f;
  p = p * m + 1.4249322787e-1f;
  p = p * m - 1.6668057665e-1f;
  p = p * m + 2.0000714765e-1f;
  p = p * m - 2.4999993993e-1f;
  p = p * m + 3.3333331174e-1f;
  float y = p * m * z + e * -2.12194440e-4f - 0.5f * z;
  return m + y + e * 0.693359375f;
}

/*! \brief log(1 + exp(x)); the tails are exact to float precision. */
TCL_ALWAYS_INLINE float Softplus(float x) {
  float e = Exp(std::min(x, 20.0f));
  float mid = Log(1.0f + e);
  return x > 20.0f ? x : (x < -15.0f ? e : mid);
}

TCL_ALWAYS_INLINE float Sigmoid(float x) { return 1.0f / (1.0f + Exp(-x)); }

/*! \brief Sum with 16 independent lanes (a reduction the compiler may vectorize without
 * -ffast-math). */
TCL_ALWAYS_INLINE float LaneSum(const float* x, int64_t n) {
  float lanes[16] = {};
  int64_t blocked = n - n % 16;
  for (int64_t i = 0; i < blocked; i += 16) {
    for (int j = 0; j < 16; ++j) lanes[j] += x[i + j];
  }
  float sum = 0.0f;
  for (float lane : lanes) sum += lane;
  for (int64_t i = blocked; i < n; ++i) sum += x[i];
  return sum;
}

}  // namespace tcl

#endif  // TCL_VECTOR_MATH_H_
