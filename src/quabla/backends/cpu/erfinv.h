// The inverse error function for the erf_inv op and the normal draws: vectorised through
// the libmvec functions (log, erf, erfc, exp) where the build has them.
#pragma once
#include <cstdint>

namespace qb::cpu {

// Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): his
// single-precision polynomials in w - 2.5 (w = -log(1 - x^2) < 5) and in sqrt(w) - 3.
inline constexpr double kGilesCentral[9] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06,
                                            -4.39150654e-06, 0.00021858087, -0.00125372503,
                                            -0.00417768164, 0.246640727, 1.50140941};
inline constexpr double kGilesTail[9] = {-0.000200214257, 0.000100950558, 0.00134934322,
                                         -0.00367342844, 0.00573950773, -0.0076224613,
                                         0.00943887047, 1.00167406, 2.83297682};

// y[i] = erfinv(x[i]) for i < n (y may be x): within a few ulp; +-inf at +-1, NaN outside
// [-1, 1] and for NaN. float32 goes through double and is rounded once.
void erfinv_f64(const double* x, double* y, std::int64_t n);
void erfinv_f32(const float* x, float* y, std::int64_t n);
double erfinv(double x);

}  // namespace qb::cpu
