// Matrix products through BLAS (scipy-openblas32: the OpenBLAS build NumPy and SciPy ship,
// with its symbols prefixed scipy_ so it never clashes with another BLAS in the process).
#include <cblas.h>

#include <limits>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/ir/errors.h"

namespace qb::cpu {

void matmul(DType dtype, const std::byte* a, const std::byte* b, std::byte* c, std::int64_t batch,
            std::int64_t m, std::int64_t k, std::int64_t n) {
  constexpr auto kMax = std::numeric_limits<blasint>::max();
  if (m > kMax || k > kMax || n > kMax) throw ValueError("matmul: a matrix dimension exceeds the 32-bit BLAS limit");
  const auto M = static_cast<blasint>(m), K = static_cast<blasint>(k), N = static_cast<blasint>(n);
  for (std::int64_t i = 0; i < batch; ++i) {
    switch (dtype) {
      case DType::f32: {
        auto* A = reinterpret_cast<const float*>(a) + i * m * k;
        auto* B = reinterpret_cast<const float*>(b) + i * k * n;
        auto* C = reinterpret_cast<float*>(c) + i * m * n;
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
        break;
      }
      case DType::f64: {
        auto* A = reinterpret_cast<const double*>(a) + i * m * k;
        auto* B = reinterpret_cast<const double*>(b) + i * k * n;
        auto* C = reinterpret_cast<double*>(c) + i * m * n;
        scipy_cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, A, K, B, N, 0.0, C, N);
        break;
      }
      case DType::bool_: case DType::i32:
        throw InternalError("cpu::matmul: needs a float dtype");
    }
  }
}

}  // namespace qb::cpu
