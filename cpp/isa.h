/*!
 * \file isa.h
 * \brief Which instruction-set build of the model kernels runs: chosen from the CPU's features at
 * load, reported, and settable (tests run every build the CPU supports; TCL_KERNEL_ISA forces one).
 *
 * Each kernel entry point is compiled three times from one body (TCL_KERNEL_VARIANTS): for
 * AVX-512 (F, VL, BW, DQ), for AVX2 with FMA, and for baseline x86-64 (SSE2). The choice goes by
 * CPU *features* (`__builtin_cpu_supports`), not by CPU model: GCC's
 * `target_clones("arch=haswell")` dispatches on the model, so every AVX2 CPU that is not a Haswell
 * (all of AMD's among them) ran the SSE2 build. Off x86-64 there is one build, "baseline".
 */
#ifndef TCL_ISA_H_
#define TCL_ISA_H_

#include <string>
#include <vector>

namespace tcl {

enum class KernelIsa { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

/*! \brief "baseline", "avx2" or "avx512". */
const char* KernelIsaName(KernelIsa isa);

/*! \brief The builds this CPU can run, baseline first, best last. */
std::vector<KernelIsa> SupportedKernelIsas();

/*! \brief The build the kernels run now (the best supported one unless set). */
KernelIsa ActiveKernelIsa();

/*!
 * \brief Makes the kernels run `name` ("baseline", "avx2", "avx512", or "auto" for the best);
 * throws tcl::Error naming the supported builds when the name is unknown or the CPU lacks it.
 */
void SetKernelIsa(const std::string& name);

}  // namespace tcl

#if defined(__GNUC__) || defined(__clang__)
#define TCL_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TCL_ALWAYS_INLINE inline
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <xmmintrin.h>

namespace tcl {
/*!
 * \brief Flushes float32 denormals to zero (FTZ, DAZ) in this thread while alive. The compiler
 * evaluates both sides of the branch-free clamps in Exp for every lane, and a side that lands in
 * denormals (x / exp(88) for |x| < 2) costs a microcode assist per instruction: the SiLU ran 10x
 * slower. Results below FLT_MIN become 0, which no cost-model score can tell apart.
 */
class FlushDenormals {
 public:
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtzDaz); }
  ~FlushDenormals() { _mm_setcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  static constexpr unsigned kFtzDaz = 0x8040;  // MXCSR bits 15 (FTZ) and 6 (DAZ)
  unsigned saved_;
};
}  // namespace tcl

#define TCL_KERNEL_ISA_X86 1
// Everything the body calls is TCL_ALWAYS_INLINE, so the whole loop nest is compiled for the
// variant's instruction set (a callee compiled for less may be inlined into a caller built for
// more).
#define TCL_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define TCL_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))

/*!
 * \brief Defines `void name params` that runs `name##Body args`, compiled once per instruction set
 * and dispatched on ActiveKernelIsa(). `params` and `args` are parenthesized lists.
 */
#define TCL_KERNEL_VARIANTS(name, params, args)                   \
  void name##Baseline params { name##Body args; }                 \
  TCL_TARGET_AVX2 void name##Avx2 params { name##Body args; }     \
  TCL_TARGET_AVX512 void name##Avx512 params { name##Body args; } \
  void name params {                                              \
    ::tcl::FlushDenormals flush;                                  \
    switch (::tcl::ActiveKernelIsa()) {                           \
      case ::tcl::KernelIsa::kAvx512: name##Avx512 args; return;  \
      case ::tcl::KernelIsa::kAvx2: name##Avx2 args; return;      \
      case ::tcl::KernelIsa::kBaseline: break;                    \
    }                                                             \
    name##Baseline args;                                          \
  }
#else
#define TCL_KERNEL_VARIANTS(name, params, args) \
  void name params { name##Body args; }
#endif

#endif  // TCL_ISA_H_
