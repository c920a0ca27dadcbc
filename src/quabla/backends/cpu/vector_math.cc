#include <algorithm>
#include "quabla/backends/cpu/vector_math.h"

#include "quabla/backends/cpu/erfinv.h"

#if defined(QUABLA_HAVE_LIBMVEC) && defined(__AVX2__)
#include <immintrin.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

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

// Exact results where glibc's scalar functions give them and libmvec is a unit in the last
// place off: cbrt of a perfect cube (cbrt(27) = 3) and log10 of a power of ten as a double
// or float holds it (log10(1e7) = 7). A cheap check per element after the vector pass.
template <class T>
T exact_cbrt(T x, T y) {
  const T r = std::nearbyint(y);
  return r * r * r == x ? r : y;
}

template <class T>
T exact_log10(T x, T y) {
  const T r = std::nearbyint(y);
  // Normal powers only (10^r from 10^-37 / 10^-307 up): among subnormals the nearest T to
  // 10^r is not close enough for log10 to round to r (float 1e-40 has log10 -40.0000023).
  constexpr T lowest = std::is_same_v<T, float> ? -37 : -307;
  if (!(r >= lowest && r <= std::numeric_limits<T>::max_exponent10) ||
      std::abs(y - r) > 8 * std::numeric_limits<T>::epsilon() * std::max<T>(1, std::abs(r)))
    return y;
  // The nearest T to 10^r, read once from the decimal literal (correctly rounded).
  static const auto powers = [] {
    std::array<T, 617> p{};
    for (int k = -308; k <= 308; ++k) p[static_cast<std::size_t>(k + 308)] = static_cast<T>(std::strtod(("1e" + std::to_string(k)).c_str(), nullptr));
    return p;
  }();
  return powers[static_cast<std::size_t>(static_cast<int>(r) + 308)] == x ? r : y;
}

// Ops whose vector results get a per-element correction from their inputs.
bool needs_fixup(Op op, bool f64) {
  return op == Op::Cbrt || op == Op::Log10 || (f64 && (op == Op::Sin || op == Op::Cos || op == Op::Tan));
}

template <class T>
T fixup(Op op, T x, T y) {
  switch (op) {
    case Op::Cbrt: return exact_cbrt(x, y);
    case Op::Log10: return exact_log10(x, y);
    default:
      // double sin/cos/tan of huge arguments take the long double path of scalar_math.h
      // (decided per value, so results never depend on an element's position).
      if constexpr (std::is_same_v<T, double>) {
        if (math::huge_trig_arg(x)) return op == Op::Sin ? math::sin(x) : op == Op::Cos ? math::cos(x) : math::tan(x);
      }
      return y;
  }
}

// The vector pass block by block, with each block's inputs kept aside for the fixup: y may be
// x (in place), so x[i] is gone once the vector pass wrote it.
template <class T, class VecPass>
void with_fixup(Op op, const T* x, T* y, std::int64_t n, VecPass pass) {
  constexpr std::int64_t kBlock = 256;
  T saved[kBlock];
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t len = std::min(kBlock, n - b);
    std::copy_n(x + b, len, saved);
    pass(saved, y + b, len);
    for (std::int64_t i = 0; i < len; ++i) y[b + i] = fixup(op, saved[i], y[b + i]);
  }
}

// float32 tan through the double kernel, rounded once: libmvec's tanf is 2 units in the
// last place off at ordinary arguments (tan(2.5f)); this is within half a unit.
void tan_f32_via_f64(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, _mm256_cvtpd_ps(_ZGVdN4v_tan(_mm256_cvtps_pd(_mm_loadu_ps(x + i)))));
  if (i < n) {
    float in[4] = {}, out[4];
    std::memcpy(in, x + i, static_cast<std::size_t>(n - i) * sizeof(float));
    _mm_storeu_ps(out, _mm256_cvtpd_ps(_ZGVdN4v_tan(_mm256_cvtps_pd(_mm_loadu_ps(in)))));
    std::memcpy(y + i, out, static_cast<std::size_t>(n - i) * sizeof(float));
  }
}

}  // namespace

bool has_vector_unary(Op op) { return op == Op::ErfInv || lookup(op).f32 != nullptr; }

bool vector_unary_f32(Op op, const float* x, float* y, std::int64_t n) {
  if (op == Op::ErfInv) {
    erfinv_f32(x, y, n);
    return true;
  }
  const VecF f = lookup(op).f32;
  if (!f) return false;
  if (op == Op::Tan) {
    tan_f32_via_f64(x, y, n);
    return true;
  }
  auto pass = [f](const float* in, float* out, std::int64_t len) {
    apply<float, __m256>(f, [](const float* p) { return _mm256_loadu_ps(p); },
                         [](float* p, __m256 v) { _mm256_storeu_ps(p, v); }, in, out, len);
  };
  if (needs_fixup(op, false)) with_fixup<float>(op, x, y, n, pass);
  else pass(x, y, n);
  return true;
}

bool vector_unary_f64(Op op, const double* x, double* y, std::int64_t n) {
  if (op == Op::ErfInv) {
    erfinv_f64(x, y, n);
    return true;
  }
  const VecD f = lookup(op).f64;
  if (!f) return false;
  auto pass = [f](const double* in, double* out, std::int64_t len) {
    apply<double, __m256d>(f, [](const double* p) { return _mm256_loadu_pd(p); },
                           [](double* p, __m256d v) { _mm256_storeu_pd(p, v); }, in, out, len);
  };
  if (needs_fixup(op, true)) with_fixup<double>(op, x, y, n, pass);
  else pass(x, y, n);
  return true;
}

}  // namespace qb::cpu

#else

namespace qb::cpu {
// Without libmvec only erf_inv has a vector form (its own, over scalar libm).
bool has_vector_unary(Op op) { return op == Op::ErfInv; }
bool vector_unary_f32(Op op, const float* x, float* y, std::int64_t n) {
  if (op != Op::ErfInv) return false;
  erfinv_f32(x, y, n);
  return true;
}
bool vector_unary_f64(Op op, const double* x, double* y, std::int64_t n) {
  if (op != Op::ErfInv) return false;
  erfinv_f64(x, y, n);
  return true;
}
}  // namespace qb::cpu

#endif
