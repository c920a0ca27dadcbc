// Slow, exact-enough paths of a few elementwise functions, taken only for the rare inputs
// where the fast evaluation cancels (scalar_math.h).
#include <cmath>

#include "quabla/backends/cpu/scalar_math.h"

#if defined(QUABLA_HAVE_QUADMATH)
#include <quadmath.h>
#endif

namespace qb::cpu::math {

double logaddexp_precise(double a, double b) {
  if (std::isinf(a) && a == b) return a;  // ±inf: the sum is e^±inf twice
#if defined(QUABLA_HAVE_QUADMATH)
  const __float128 m = a > b ? a : b;
  const __float128 d = a > b ? static_cast<__float128>(b) - a : static_cast<__float128>(a) - b;
  return static_cast<double>(m + log1pq(expq(d)));
#else
  const long double m = a > b ? a : b;
  const long double d = a > b ? static_cast<long double>(b) - a : static_cast<long double>(a) - b;
  return static_cast<double>(m + std::log1p(std::exp(d)));
#endif
}

}  // namespace qb::cpu::math
