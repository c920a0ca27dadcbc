#include "quabla/backends/cpu/erfinv.h"

#include <cmath>

#include <algorithm>
#include <limits>

#include "quabla/backends/cpu/vector_math.h"

namespace qb::cpu {

namespace {

constexpr std::int64_t kChunk = 512;

constexpr double kTwoOverSqrtPi = 1.1283791670955126;

// One Halley step on g(x) = 0 with g' = 2/sqrt(pi) exp(-x^2) (so g''/g' = -2x).
double halley(double x, double g, double exp_minus_x2) {
  const double step = g / (kTwoOverSqrtPi * exp_minus_x2);
  return x - step / (1.0 + x * step);
}

// Beyond w = 16 (1 - |x| below about 1e-7, the range Giles fitted for float32): the
// asymptotic inverse of erfc(x) ~ exp(-x^2) / (x sqrt(pi)), then Halley steps on erfc.
double far_tail(double u) {
  const double a = std::fabs(u), om = 1.0 - a;
  if (std::isnan(u)) return u;
  if (om == 0.0) return std::copysign(std::numeric_limits<double>::infinity(), u);
  const double big = -std::log(om);
  double x = std::sqrt(big - 0.5 * std::log(3.141592653589793 * big));
  for (int k = 0; k < 3; ++k) x = halley(x, om - std::erfc(x), std::exp(-x * x));
  return std::copysign(x, u);
}

// Giles's approximation as a start (relative error about 1e-7 while w < 16), then one
// Halley step on erf(x) - u for |u| <= 0.5 and on (1 - |u|) - erfc(|x|) above (where
// erf(x) - u would cancel; 1 - |u| is exact there): within about 3 ulp. In place, for at
// most kChunk values.
void erfinv_chunk(double* x, std::int64_t m) {
  double u[kChunk], w[kChunk] = {}, e[kChunk] = {};  // zeroed: GCC cannot see that only m entries are read
  double central_x[kChunk], central_erf[kChunk], tail_x[kChunk], tail_erfc[kChunk];
  std::int64_t central_at[kChunk], tail_at[kChunk];
  std::copy(x, x + m, u);
  for (std::int64_t j = 0; j < m; ++j) {
    const double a = std::fabs(u[j]);
    e[j] = (1.0 - a) * (1.0 + a);
  }
  if (!vector_unary_f64(Op::Log, e, w, m))
    for (std::int64_t j = 0; j < m; ++j) w[j] = std::log(e[j]);
  std::int64_t nc = 0, nt = 0;
  for (std::int64_t j = 0; j < m; ++j) {
    const double wj = -w[j];
    if (!(wj < 16.0)) {  // the far tail, |u| = 1 and NaN: rare, element by element
      x[j] = far_tail(u[j]);
      continue;
    }
    const bool lt = wj < 5.0;
    const double s = lt ? wj - 2.5 : std::sqrt(wj) - 3.0;
    double p = lt ? kGilesCentral[0] : kGilesTail[0];
    for (int i = 1; i < 9; ++i) p = (lt ? kGilesCentral[i] : kGilesTail[i]) + p * s;
    x[j] = p * u[j];
    if (std::fabs(u[j]) <= 0.5) {
      central_at[nc] = j;
      central_x[nc++] = x[j];
    } else {
      tail_at[nt] = j;
      tail_x[nt++] = std::fabs(x[j]);
    }
  }
  if (!vector_unary_f64(Op::Erf, central_x, central_erf, nc))
    for (std::int64_t k = 0; k < nc; ++k) central_erf[k] = std::erf(central_x[k]);
  if (!vector_unary_f64(Op::Erfc, tail_x, tail_erfc, nt))
    for (std::int64_t k = 0; k < nt; ++k) tail_erfc[k] = std::erfc(tail_x[k]);
  for (std::int64_t k = 0; k < nc; ++k) w[k] = -central_x[k] * central_x[k];
  for (std::int64_t k = 0; k < nt; ++k) w[nc + k] = -tail_x[k] * tail_x[k];
  if (!vector_unary_f64(Op::Exp, w, e, nc + nt))
    for (std::int64_t k = 0; k < nc + nt; ++k) e[k] = std::exp(w[k]);
  for (std::int64_t k = 0; k < nc; ++k) {
    const std::int64_t j = central_at[k];
    x[j] = halley(central_x[k], central_erf[k] - u[j], e[k]);
  }
  for (std::int64_t k = 0; k < nt; ++k) {
    const std::int64_t j = tail_at[k];
    x[j] = std::copysign(halley(tail_x[k], (1.0 - std::fabs(u[j])) - tail_erfc[k], e[nc + k]), u[j]);
  }
}

}  // namespace

void erfinv_f64(const double* x, double* y, std::int64_t n) {
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t m = std::min(kChunk, n - start);
    if (y != x) std::copy(x + start, x + start + m, y + start);
    erfinv_chunk(y + start, m);
  }
}

void erfinv_f32(const float* x, float* y, std::int64_t n) {
  double buf[kChunk];
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t m = std::min(kChunk, n - start);
    for (std::int64_t j = 0; j < m; ++j) buf[j] = x[start + j];
    erfinv_chunk(buf, m);
    for (std::int64_t j = 0; j < m; ++j) y[start + j] = static_cast<float>(buf[j]);
  }
}

double erfinv(double x) {
  erfinv_chunk(&x, 1);
  return x;
}

}  // namespace qb::cpu
