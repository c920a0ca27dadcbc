// Dense linear algebra kernels: LAPACK and BLAS from scipy-openblas32 (symbols prefixed
// scipy_), one call per matrix of a batch, the batch split over the pool in fixed chunks
// (each matrix is computed by one single-threaded call, so results never depend on the
// thread count).
//
// LAPACK is column-major and our arrays are row-major: a row-major matrix is the
// column-major view of its transpose. Cholesky factors A^T = A from the "upper" triangle of
// that view (A's lower triangle); LU factors A^T and solves with the transposed system.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

// LAPACK's Fortran entry points as scipy-openblas32 exports them (prefixed, 32-bit
// integers, each character argument's length passed last). Its lapack.h names them
// without the prefix, so they are declared here.
extern "C" {
void scipy_dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t uplo_len);
void scipy_spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, std::size_t uplo_len);
void scipy_dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void scipy_sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void scipy_dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
                   double* b, const int* ldb, int* info, std::size_t trans_len);
void scipy_sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
                   float* b, const int* ldb, int* info, std::size_t trans_len);
}

namespace qb::cpu {

namespace {

using lapack_int_t = int;

template <class T>
void potrf(char uplo, int n, T* a, int* info) {
  if constexpr (std::is_same_v<T, double>) scipy_dpotrf_(&uplo, &n, a, &n, info, 1);
  else scipy_spotrf_(&uplo, &n, a, &n, info, 1);
}

template <class T>
void getrf(int n, T* a, lapack_int_t* ipiv, int* info) {
  if constexpr (std::is_same_v<T, double>) scipy_dgetrf_(&n, &n, a, &n, ipiv, info);
  else scipy_sgetrf_(&n, &n, a, &n, ipiv, info);
}

template <class T>
void getrs(char trans, int n, int k, const T* a, const lapack_int_t* ipiv, T* b, int* info) {
  if constexpr (std::is_same_v<T, double>) scipy_dgetrs_(&trans, &n, &k, a, &n, ipiv, b, &n, info, 1);
  else scipy_sgetrs_(&trans, &n, &k, a, &n, ipiv, b, &n, info, 1);
}

// Matrices per pool task: a fixed split, whatever the thread count.
std::int64_t grain_for(std::int64_t n) { return std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, n * n * n)); }

template <class T>
void cholesky_t(const T* in, std::int64_t batch, std::int64_t n, T* out) {
  const std::size_t mat = static_cast<std::size_t>(n * n);
  parallel_for(batch, grain_for(n), [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) {
      T* a = out + static_cast<std::size_t>(b) * mat;
      std::copy_n(in + static_cast<std::size_t>(b) * mat, mat, a);
      int info = 0;
      potrf<T>('U', static_cast<int>(n), a, &info);  // the column-major upper = row-major lower
      if (info != 0) {
        std::fill(a, a + mat, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = i + 1; j < n; ++j) a[i * n + j] = T(0);
    }
  });
}

template <class T>
void triangular_solve_t(const T* a, const T* b, std::int64_t batch, std::int64_t n, std::int64_t k, int mode, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n), bmat = static_cast<std::size_t>(n * k);
  const auto uplo = (mode & 1) ? CblasLower : CblasUpper;
  const auto trans = (mode & 2) ? CblasTrans : CblasNoTrans;
  const auto diag = (mode & 4) ? CblasUnit : CblasNonUnit;
  parallel_for(batch, grain_for(n), [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t i = b0; i < b1; ++i) {
      T* x = out + static_cast<std::size_t>(i) * bmat;
      std::copy_n(b + static_cast<std::size_t>(i) * bmat, bmat, x);
      const T* ai = a + static_cast<std::size_t>(i) * amat;
      const auto N = static_cast<int>(n), K = static_cast<int>(k);
      if constexpr (std::is_same_v<T, double>) scipy_cblas_dtrsm(CblasRowMajor, CblasLeft, uplo, trans, diag, N, K, 1.0, ai, N, x, K);
      else scipy_cblas_strsm(CblasRowMajor, CblasLeft, uplo, trans, diag, N, K, 1.0f, ai, N, x, K);
    }
  });
}

template <class T>
void solve_t(const T* a, const T* b, std::int64_t batch, std::int64_t n, std::int64_t k, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n), bmat = static_cast<std::size_t>(n * k);
  parallel_for(batch, grain_for(n), [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> lu(amat), rhs(bmat);
    std::vector<lapack_int_t> ipiv(static_cast<std::size_t>(n));
    for (std::int64_t i = b0; i < b1; ++i) {
      std::copy_n(a + static_cast<std::size_t>(i) * amat, amat, lu.data());  // column-major A^T
      const T* bi = b + static_cast<std::size_t>(i) * bmat;
      for (std::int64_t r = 0; r < n; ++r)  // B to column-major
        for (std::int64_t c = 0; c < k; ++c) rhs[static_cast<std::size_t>(r + c * n)] = bi[r * k + c];
      int info = 0;
      getrf<T>(static_cast<int>(n), lu.data(), ipiv.data(), &info);
      // A singular U still solves (its zero pivots give inf/NaN, as JAX's solve does).
      getrs<T>('T', static_cast<int>(n), static_cast<int>(k), lu.data(), ipiv.data(), rhs.data(), &info);
      T* x = out + static_cast<std::size_t>(i) * bmat;
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) x[r * k + c] = rhs[static_cast<std::size_t>(r + c * n)];
    }
  });
}

template <class T>
void slogdet_t(const T* a, std::int64_t batch, std::int64_t n, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n);
  parallel_for(batch, grain_for(n), [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> lu(amat);
    std::vector<lapack_int_t> ipiv(static_cast<std::size_t>(n));
    for (std::int64_t i = b0; i < b1; ++i) {
      std::copy_n(a + static_cast<std::size_t>(i) * amat, amat, lu.data());
      int info = 0;
      getrf<T>(static_cast<int>(n), lu.data(), ipiv.data(), &info);
      T sign = 1, logabs = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        const T d = lu[static_cast<std::size_t>(j * n + j)];
        if (ipiv[static_cast<std::size_t>(j)] != j + 1) sign = -sign;
        if (d < 0) sign = -sign;
        logabs += std::log(std::fabs(d));  // -inf for a zero pivot; NaN propagates
      }
      if (std::isinf(logabs) && logabs < 0) sign = 0;
      if (std::isnan(logabs)) sign = std::numeric_limits<T>::quiet_NaN();
      out[2 * i] = sign;
      out[2 * i + 1] = logabs;
    }
  });
}

}  // namespace

void cholesky(DType dtype, const std::byte* in, std::int64_t batch, std::int64_t n, std::byte* out) {
  if (dtype == DType::f64) return cholesky_t(reinterpret_cast<const double*>(in), batch, n, reinterpret_cast<double*>(out));
  if (dtype == DType::f32) return cholesky_t(reinterpret_cast<const float*>(in), batch, n, reinterpret_cast<float*>(out));
  throw InternalError("cholesky: float operands only");
}

void triangular_solve(DType dtype, const std::byte* a, const std::byte* b, std::int64_t batch, std::int64_t n,
                      std::int64_t k, int mode, std::byte* out) {
  if (dtype == DType::f64) {
    return triangular_solve_t(reinterpret_cast<const double*>(a), reinterpret_cast<const double*>(b), batch, n, k, mode,
                              reinterpret_cast<double*>(out));
  }
  if (dtype == DType::f32) {
    return triangular_solve_t(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), batch, n, k, mode,
                              reinterpret_cast<float*>(out));
  }
  throw InternalError("triangular_solve: float operands only");
}

void solve(DType dtype, const std::byte* a, const std::byte* b, std::int64_t batch, std::int64_t n, std::int64_t k,
           std::byte* out) {
  if (dtype == DType::f64) {
    return solve_t(reinterpret_cast<const double*>(a), reinterpret_cast<const double*>(b), batch, n, k,
                   reinterpret_cast<double*>(out));
  }
  if (dtype == DType::f32) {
    return solve_t(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), batch, n, k,
                   reinterpret_cast<float*>(out));
  }
  throw InternalError("solve: float operands only");
}

void slogdet(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t n, std::byte* out) {
  if (dtype == DType::f64) return slogdet_t(reinterpret_cast<const double*>(a), batch, n, reinterpret_cast<double*>(out));
  if (dtype == DType::f32) return slogdet_t(reinterpret_cast<const float*>(a), batch, n, reinterpret_cast<float*>(out));
  throw InternalError("slogdet: float operands only");
}

}  // namespace qb::cpu
