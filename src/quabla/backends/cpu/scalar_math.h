// Scalar definitions of the elementwise ops: IEEE results (NaN outside the domain, ±inf at
// poles), no flush-to-zero. float uses the float libm entry points (f32 computed in f32);
// the few functions libm lacks are evaluated in double for float, which rounds correctly
// in almost every case, and with overflow-free formulas for double.
#pragma once
#include <cmath>
#include <cstdint>

namespace qb::cpu::math {

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

// log(e^a + e^b) without overflow.
inline double logaddexp(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return a + 0.69314718055994530942;  // also ±inf + ±inf of one sign
  const double m = a > b ? a : b;
  const double d = a > b ? b - a : a - b;  // <= 0
  return m + std::log1p(std::exp(d));
}
inline float logaddexp(float a, float b) {
  return static_cast<float>(logaddexp(static_cast<double>(a), static_cast<double>(b)));
}

}  // namespace qb::cpu::math
