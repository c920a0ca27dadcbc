// Scalar definitions of the elementwise ops: IEEE results (NaN outside the domain, ±inf at
// poles), no flush-to-zero. float uses the float libm entry points (f32 computed in f32);
// the few functions libm lacks are evaluated in double for float, which rounds correctly
// in almost every case, and with overflow-free formulas for double.
#pragma once
#include <cmath>
#include <cstdint>

namespace qb::cpu::math {

// Trigonometric functions. For huge double arguments (|x| >= 2^24) glibc's double sin,
// cos and tan (scalar and libmvec) lose bits in the argument reduction (8 and 14 ULP seen
// near multiples of pi/2 at 5.3e255); the long double versions reduce with more bits.
inline bool huge_trig_arg(double x) { return std::fabs(x) >= 0x1p24; }
template <class T>
inline T sin(T x) {
  if constexpr (sizeof(T) == sizeof(double)) if (huge_trig_arg(x)) return static_cast<T>(std::sin(static_cast<long double>(x)));
  return std::sin(x);
}
template <class T>
inline T cos(T x) {
  if constexpr (sizeof(T) == sizeof(double)) if (huge_trig_arg(x)) return static_cast<T>(std::cos(static_cast<long double>(x)));
  return std::cos(x);
}
template <class T>
inline T tan(T x) {
  if constexpr (sizeof(T) == sizeof(double)) if (huge_trig_arg(x)) return static_cast<T>(std::tan(static_cast<long double>(x)));
  return std::tan(x);
}

template <class T>
inline T sign(T x) {
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);  // keeps ±0 and NaN
}

// NaN-propagating maximum/minimum (as NumPy's maximum/minimum and JAX).
template <class T>
inline T maximum(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}
template <class T>
inline T minimum(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? a : b;
}

inline double logistic(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}
inline float logistic(float x) { return static_cast<float>(logistic(static_cast<double>(x))); }

// log(1 + e^x) without overflow.
inline double softplus(double x) {
  if (x > 0) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}
inline float softplus(float x) { return static_cast<float>(softplus(static_cast<double>(x))); }

// max(a, b) + log1p(e^-|a-b|) in 113-bit precision (quadmath, or long double where the
// build has no libquadmath): used when that sum cancels (precise_math.cc).
double logaddexp_precise(double a, double b);

// log(e^a + e^b) without overflow. Double is evaluated in long double (64-bit significand);
// when the sum cancels (e^a + e^b near 1, the result near 0) the few results that the
// extra 11 bits cannot make accurate are recomputed in quad precision.
inline double logaddexp(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return logaddexp_precise(a, b);  // a + ln 2 (also ±inf of one sign)
  const long double m = a > b ? a : b;
  const long double d = a > b ? static_cast<long double>(b) - a : static_cast<long double>(a) - b;  // <= 0, exact
  const long double r = m + std::log1p(std::exp(d));
  if (std::fabs(r) < 1e-3L * std::fabs(m)) return logaddexp_precise(a, b);
  return static_cast<double>(r);
}
inline float logaddexp(float a, float b) {
  return static_cast<float>(logaddexp(static_cast<double>(a), static_cast<double>(b)));
}

// x * logistic(x). Evaluated with extra precision (float in double, double in long double,
// whose wider exponent range also keeps the subnormal results of large negative x exact).
inline long double silu_wide(long double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;  // the limits
  if (x >= 0) return x / (1 + std::exp(-x));
  const long double e = std::exp(x);
  return x * e / (1 + e);
}
inline double silu(double x) { return static_cast<double>(silu_wide(x)); }
inline float silu(float x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0f;
  const double xd = x;
  return static_cast<float>(xd >= 0 ? xd / (1 + std::exp(-xd)) : xd * std::exp(xd) / (1 + std::exp(xd)));
}

// The tanh approximation of GELU, 0.5 x (1 + tanh(z)), z = sqrt(2/pi) (x + 0.044715 x^3),
// evaluated as x * logistic(2z) (no cancellation for negative x) with extra precision:
// for negative x the relative error of z is magnified by |2z| in the result.
inline long double gelu_tanh_wide(long double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  constexpr long double kSqrt2OverPi = 0.797884560802865355879892119868763737L;
  const long double t = 2 * kSqrt2OverPi * (x + 0.044715L * x * x * x);
  if (t >= 0) return x / (1 + std::exp(-t));
  const long double e = std::exp(t);
  return x * e / (1 + e);
}
inline double gelu_tanh(double x) { return static_cast<double>(gelu_tanh_wide(x)); }
inline float gelu_tanh(float x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0f;
  const double xd = x;
  const double t = 2 * 0.79788456080286535588 * (xd + 0.044715 * xd * xd * xd);
  if (t >= 0) return static_cast<float>(xd / (1 + std::exp(-t)));
  const double e = std::exp(t);
  return static_cast<float>(xd * e / (1 + e));
}

}  // namespace qb::cpu::math
