#include <algorithm>
#include "quabla/backends/cpu/vector_math.h"

#if defined(QUABLA_HAVE_LIBMVEC) && defined(__AVX2__)
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "quabla/backends/cpu/scalar_math.h"

// The x86_64 vector ABI names of libmvec's AVX2 ("d") variants: 8 floats or 4 doubles.
#define QB_MVEC_FUNCS(X) \
  X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh) \
  X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(cbrt) X(erf) X(erfc)

extern "C" {
#define QB_DECLARE(name) __m256 _ZGVdN8v_##name##f(__m256); __m256d _ZGVdN4v_##name(__m256d);
QB_MVEC_FUNCS(QB_DECLARE)
#undef QB_DECLARE
}

namespace qb::cpu {

namespace {

using VecF = __m256 (*)(__m256);
using VecD = __m256d (*)(__m256d);

struct VecFns {
  VecF f32;
  VecD f64;
};

VecFns lookup(Op op) {
  switch (op) {
    case Op::Sin: return {_ZGVdN8v_sinf, _ZGVdN4v_sin};
    case Op::Cos: return {_ZGVdN8v_cosf, _ZGVdN4v_cos};
    case Op::Tan: return {_ZGVdN8v_tanf, _ZGVdN4v_tan};
    case Op::Asin: return {_ZGVdN8v_asinf, _ZGVdN4v_asin};
    case Op::Acos: return {_ZGVdN8v_acosf, _ZGVdN4v_acos};
    case Op::Atan: return {_ZGVdN8v_atanf, _ZGVdN4v_atan};
    case Op::Sinh: return {_ZGVdN8v_sinhf, _ZGVdN4v_sinh};
    case Op::Cosh: return {_ZGVdN8v_coshf, _ZGVdN4v_cosh};
    case Op::Tanh: return {_ZGVdN8v_tanhf, _ZGVdN4v_tanh};
    case Op::Asinh: return {_ZGVdN8v_asinhf, _ZGVdN4v_asinh};
    case Op::Acosh: return {_ZGVdN8v_acoshf, _ZGVdN4v_acosh};
    case Op::Atanh: return {_ZGVdN8v_atanhf, _ZGVdN4v_atanh};
    case Op::Exp: return {_ZGVdN8v_expf, _ZGVdN4v_exp};
    case Op::Exp2: return {_ZGVdN8v_exp2f, _ZGVdN4v_exp2};
    case Op::Expm1: return {_ZGVdN8v_expm1f, _ZGVdN4v_expm1};
    case Op::Log: return {_ZGVdN8v_logf, _ZGVdN4v_log};
    case Op::Log2: return {_ZGVdN8v_log2f, _ZGVdN4v_log2};
    case Op::Log10: return {_ZGVdN8v_log10f, _ZGVdN4v_log10};
    case Op::Log1p: return {_ZGVdN8v_log1pf, _ZGVdN4v_log1p};
    case Op::Cbrt: return {_ZGVdN8v_cbrtf, _ZGVdN4v_cbrt};
    case Op::Erf: return {_ZGVdN8v_erff, _ZGVdN4v_erf};
    case Op::Erfc: return {_ZGVdN8v_erfcf, _ZGVdN4v_erfc};
    default: return {nullptr, nullptr};  // every other op has no libmvec form
  }
}

template <class T, class Vec, class Fn, class Load, class Store>
void apply(Fn f, Load load, Store store, const T* x, T* y, std::int64_t n) {
  constexpr std::int64_t W = sizeof(Vec) / sizeof(T);
  std::int64_t i = 0;
  for (; i + W <= n; i += W) store(y + i, f(load(x + i)));
  if (i < n) {
    T in[W] = {}, out[W];
    std::memcpy(in, x + i, static_cast<std::size_t>(n - i) * sizeof(T));
    store(out, f(load(in)));
    std::memcpy(y + i, out, static_cast<std::size_t>(n - i) * sizeof(T));
  }
}

}  // namespace

bool has_vector_unary(Op op) { return lookup(op).f32 != nullptr; }

bool vector_unary_f32(Op op, const float* x, float* y, std::int64_t n) {
  const VecF f = lookup(op).f32;
  if (!f) return false;
  apply<float, __m256>(f, [](const float* p) { return _mm256_loadu_ps(p); },
                       [](float* p, __m256 v) { _mm256_storeu_ps(p, v); }, x, y, n);
  return true;
}

bool vector_unary_f64(Op op, const double* x, double* y, std::int64_t n) {
  const VecD f = lookup(op).f64;
  if (!f) return false;
  if (op != Op::Sin && op != Op::Cos && op != Op::Tan) {
    apply<double, __m256d>(f, [](const double* p) { return _mm256_loadu_pd(p); },
                           [](double* p, __m256d v) { _mm256_storeu_pd(p, v); }, x, y, n);
    return true;
  }
  // Huge arguments take the long double path of scalar_math.h (decided per value, so
  // results never depend on an element's position). Block by block, with the block's
  // inputs kept aside: y may be x (in place), so x[i] is gone once the vector pass wrote it.
  constexpr std::int64_t kBlock = 256;
  double saved[kBlock];
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t len = std::min(kBlock, n - b);
    std::copy_n(x + b, len, saved);
    apply<double, __m256d>(f, [](const double* p) { return _mm256_loadu_pd(p); },
                           [](double* p, __m256d v) { _mm256_storeu_pd(p, v); }, saved, y + b, len);
    for (std::int64_t i = 0; i < len; ++i) {
      const double v = saved[i];
      if (math::huge_trig_arg(v)) y[b + i] = op == Op::Sin ? math::sin(v) : op == Op::Cos ? math::cos(v) : math::tan(v);
    }
  }
  return true;
}

}  // namespace qb::cpu

#else

namespace qb::cpu {
bool has_vector_unary(Op) { return false; }
bool vector_unary_f32(Op, const float*, float*, std::int64_t) { return false; }
bool vector_unary_f64(Op, const double*, double*, std::int64_t) { return false; }
}  // namespace qb::cpu

#endif
