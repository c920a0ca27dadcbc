// Dense linear algebra kernels: LAPACK and BLAS from scipy-openblas32 (symbols prefixed
// scipy_), one call per matrix of a batch, the batch split over the pool in fixed chunks
// (each matrix is computed by one single-threaded call, so results never depend on the
// thread count). A single large matrix instead runs in LAPACK's own threads (for_each_matrix).
//
// LAPACK is column-major and our arrays are row-major: a row-major matrix is the
// column-major view of its transpose. Cholesky factors A^T = A from the "upper" triangle of
// that view (A's lower triangle); LU factors A^T and solves with the transposed system.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/lapack_batch.h"
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
void scipy_dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
                   const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len, std::size_t uplo_len);
void scipy_ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
                   const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len, std::size_t uplo_len);
void scipy_dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
                   const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
                   std::size_t jobz_len);
void scipy_sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
                   const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info,
                   std::size_t jobz_len);
void scipy_dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
                   int* info);
void scipy_sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
                   int* info);
void scipy_dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
                   const int* lwork, int* info);
void scipy_sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
                   const int* lwork, int* info);
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

// Small matrices (per-point Jacobians, implicit ODE steps, small kernels) skip LAPACK, whose
// call overhead is most of the cost there: plain loops, the same algorithms (partial pivoting
// for LU, inf/NaN from a zero pivot as LAPACK's solves give).
// The largest n that takes them: 32 (LAPACK wins from about 32-48 on, measured with
// benchmarks/linalg_crossover.py, docs/architecture.md); QUABLA_LINALG_TINY_MAX overrides
// it, read once (for measuring).
std::int64_t tiny_max_or(std::int64_t fallback) {
  static const char* const e = std::getenv("QUABLA_LINALG_TINY_MAX");
  return e && *e ? std::max<std::int64_t>(0, std::atoll(e)) : fallback;
}
std::int64_t tiny_max() {
  static const std::int64_t v = tiny_max_or(32);
  return v;
}
// Cholesky's own loops hand over to the row-panel factorization earlier, from 24 on.
std::int64_t cholesky_tiny_max() {
  static const std::int64_t v = tiny_max_or(16);
  return v;
}

template <class T>
bool cholesky_tiny(const T* a, std::int64_t n, T* l) {
  std::fill(l, l + n * n, T(0));
  for (std::int64_t j = 0; j < n; ++j) {
    T d = a[j * n + j];
    for (std::int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
    if (!(d > T(0))) return false;  // not positive definite (or NaN)
    const T ljj = std::sqrt(d);
    l[j * n + j] = ljj;
    for (std::int64_t i = j + 1; i < n; ++i) {
      T v = a[i * n + j];
      for (std::int64_t k = 0; k < j; ++k) v -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = v / ljj;
    }
  }
  return true;
}

// Medium matrices (a 64x64 kernel matrix factored at every step of a loop): an own
// right-looking factorization whose updates are contiguous row updates the compiler
// vectorizes, on the upper factor U = L^T in row-major order (w, n x n scratch), then L
// written out with the zeros above it. LAPACK's blocked potrf pays its blocking and packing
// overhead up to about this size (crossover: docs/architecture.md). src's lower triangle
// is read, or the symmetrized (a_ij + a_ji) * 0.5; false when A is not positive definite.
template <class T>
bool cholesky_rows(const T* src, std::int64_t n, bool symmetrize, T* w, T* l) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = i; k < n; ++k)
      w[i * n + k] = symmetrize ? (src[i * n + k] + src[k * n + i]) * T(0.5) : src[k * n + i];
  // Panels of four rows of U: each factored in itself, then the rows below it updated by
  // all four at once (one pass over each trailing row per panel instead of four).
  constexpr std::int64_t kPanel = 4;
  for (std::int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const std::int64_t j1 = std::min(n, j0 + kPanel);
    for (std::int64_t j = j0; j < j1; ++j) {
      T* wj = w + j * n;
      const T d = wj[j];
      if (!(d > T(0))) return false;  // not positive definite (or NaN)
      const T r = std::sqrt(d);
      wj[j] = r;
      for (std::int64_t k = j + 1; k < n; ++k) wj[k] /= r;
      for (std::int64_t i = j + 1; i < j1; ++i) {
        const T f = wj[i];
        T* wi = w + i * n;
        for (std::int64_t k = i; k < n; ++k) wi[k] -= f * wj[k];
      }
    }
    if (j1 - j0 == kPanel) {
      const T *u0 = w + j0 * n, *u1 = u0 + n, *u2 = u1 + n, *u3 = u2 + n;
      for (std::int64_t i = j1; i < n; ++i) {
        const T f0 = u0[i], f1 = u1[i], f2 = u2[i], f3 = u3[i];
        T* wi = w + i * n;
        for (std::int64_t k = i; k < n; ++k) wi[k] -= (f0 * u0[k] + f1 * u1[k]) + (f2 * u2[k] + f3 * u3[k]);
      }
    } else {
      for (std::int64_t j = j0; j < j1; ++j)
        for (std::int64_t i = j1; i < n; ++i) {
          const T f = w[j * n + i];
          T* wi = w + i * n;
          for (std::int64_t k = i; k < n; ++k) wi[k] -= f * w[j * n + k];
        }
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) l[i * n + j] = w[j * n + i];
    std::fill(l + i * n + i + 1, l + (i + 1) * n, T(0));
  }
  return true;
}

// The largest n that cholesky_rows takes (QUABLA_CHOLESKY_ROWS_MAX overrides it, read once,
// for measuring).
std::int64_t cholesky_rows_max() {
  static const std::int64_t v = [] {
    const char* e = std::getenv("QUABLA_CHOLESKY_ROWS_MAX");
    return e && *e ? std::max<std::int64_t>(0, std::atoll(e)) : std::int64_t{128};
  }();
  return v;
}

// x (n x k, holding b) <- op(A)^-1 x.
template <class T>
void triangular_tiny(const T* a, std::int64_t n, std::int64_t k, int mode, T* x) {
  const bool lower = mode & 1, trans = mode & 2, unit = mode & 4;
  auto at = [&](std::int64_t i, std::int64_t c) { return trans ? a[c * n + i] : a[i * n + c]; };
  const bool forward = lower != trans;  // op(A) lower triangular
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t i = forward ? s : n - 1 - s;
    for (std::int64_t c0 = 0; c0 < s; ++c0) {
      const std::int64_t c = forward ? c0 : n - 1 - c0;
      const T f = at(i, c);
      for (std::int64_t j = 0; j < k; ++j) x[i * k + j] -= f * x[c * k + j];
    }
    if (!unit) {
      const T d = at(i, i);
      for (std::int64_t j = 0; j < k; ++j) x[i * k + j] /= d;
    }
  }
}

// LU with partial pivoting of the n x n matrix in lu (row-major, in place), applying the row
// operations to x (n x k) as well when given; returns the permutation's sign.
template <class T>
T lu_tiny(T* lu, std::int64_t n, T* x, std::int64_t k, std::int64_t* pivots = nullptr) {
  T sign = 1;
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t p = j;
    for (std::int64_t i = j + 1; i < n; ++i)
      if (std::fabs(lu[i * n + j]) > std::fabs(lu[p * n + j])) p = i;
    if (pivots) pivots[j] = p;
    if (p != j) {
      sign = -sign;
      for (std::int64_t c = 0; c < n; ++c) std::swap(lu[j * n + c], lu[p * n + c]);
      if (x)
        for (std::int64_t c = 0; c < k; ++c) std::swap(x[j * k + c], x[p * k + c]);
    }
    const T piv = lu[j * n + j];
    if (piv == T(0)) continue;  // a zero column: nothing to eliminate (LAPACK's getrf does the same)
    for (std::int64_t i = j + 1; i < n; ++i) {
      const T f = lu[i * n + j] / piv;
      lu[i * n + j] = f;
      for (std::int64_t c = j + 1; c < n; ++c) lu[i * n + c] -= f * lu[j * n + c];
      if (x)
        for (std::int64_t c = 0; c < k; ++c) x[i * k + c] -= f * x[j * k + c];
    }
  }
  return sign;
}

// The lower triangle of src, or of (src + src^T) * 0.5 (element for element as the unfused add
// and multiply compute it), with zeros above: all a Cholesky of the row-major lower triangle
// reads (the own loops and potrf alike).
template <class T>
void lower_input(const T* src, std::int64_t n, bool symmetrize, T* dst) {
  for (std::int64_t i = 0; i < n; ++i) {
    T* row = dst + i * n;
    const T* s_row = src + i * n;
    if (symmetrize) {
      for (std::int64_t j = 0; j <= i; ++j) row[j] = (s_row[j] + src[j * n + i]) * T(0.5);
    } else {
      std::copy_n(s_row, i + 1, row);
    }
    std::fill(row + i + 1, row + n, T(0));
  }
}

template <class T>
void cholesky_t(const T* in, std::int64_t batch, std::int64_t n, T* out, bool symmetrize) {
  const std::size_t mat = static_cast<std::size_t>(n * n);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> sym(symmetrize && n <= cholesky_tiny_max() ? mat : 0);
    for (std::int64_t b = b0; b < b1; ++b) {
      T* a = out + static_cast<std::size_t>(b) * mat;
      const T* src = in + static_cast<std::size_t>(b) * mat;
      if (n <= cholesky_tiny_max()) {
        if (symmetrize) {
          lower_input(src, n, true, sym.data());
          src = sym.data();
        }
        if (!cholesky_tiny(src, n, a))
          std::fill(a, a + mat, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      if (n <= cholesky_rows_max()) {
        thread_local std::vector<T> w;
        if (w.size() < mat) w.resize(mat);
        if (!cholesky_rows(src, n, symmetrize, w.data(), a)) std::fill(a, a + mat, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      // potrf reads and writes one triangle only: the other one's zeros are written with it.
      lower_input(src, n, symmetrize, a);
      int info = 0;
      potrf<T>('U', static_cast<int>(n), a, &info);  // the column-major upper = row-major lower
      if (info != 0) std::fill(a, a + mat, std::numeric_limits<T>::quiet_NaN());
    }
  });
}

template <class T>
void triangular_solve_t(const T* a, const T* b, std::int64_t batch, std::int64_t n, std::int64_t k, int mode, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n), bmat = static_cast<std::size_t>(n * k);
  const auto uplo = (mode & 1) ? CblasLower : CblasUpper;
  const auto trans = (mode & 2) ? CblasTrans : CblasNoTrans;
  const auto diag = (mode & 4) ? CblasUnit : CblasNonUnit;
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t i = b0; i < b1; ++i) {
      T* x = out + static_cast<std::size_t>(i) * bmat;
      std::copy_n(b + static_cast<std::size_t>(i) * bmat, bmat, x);
      const T* ai = a + static_cast<std::size_t>(i) * amat;
      if (n <= tiny_max()) {
        triangular_tiny(ai, n, k, mode, x);
        continue;
      }
      const auto N = static_cast<int>(n), K = static_cast<int>(k);
      if (k == 1) {  // one right-hand side: trsv (trsm packs its operands first, which costs more here)
        if constexpr (std::is_same_v<T, double>) scipy_cblas_dtrsv(CblasRowMajor, uplo, trans, diag, N, ai, N, x, 1);
        else scipy_cblas_strsv(CblasRowMajor, uplo, trans, diag, N, ai, N, x, 1);
        continue;
      }
      if constexpr (std::is_same_v<T, double>) scipy_cblas_dtrsm(CblasRowMajor, CblasLeft, uplo, trans, diag, N, K, 1.0, ai, N, x, K);
      else scipy_cblas_strsm(CblasRowMajor, CblasLeft, uplo, trans, diag, N, K, 1.0f, ai, N, x, K);
    }
  });
}

// After getrf on the column-major view M = A^T of a row-major A (M = P L U), the same
// memory read row-major holds U^T in its lower triangle and L^T (unit) in its upper one, so
// A x = b (A = U^T L^T P^T) is two row-major triangular solves on b where it lies, then the
// row interchanges undone in reverse order: no copies of b to and from column-major.
template <class T>
void lu_solve_rows(const T* lu, const lapack_int_t* ipiv, std::int64_t n, std::int64_t k, T* x) {
  const auto N = static_cast<int>(n), K = static_cast<int>(k);
  if (k == 1) {  // one right-hand side: trsv (trsm packs its operands first, which costs more here)
    if constexpr (std::is_same_v<T, double>) {
      scipy_cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, N, lu, N, x, 1);
      scipy_cblas_dtrsv(CblasRowMajor, CblasUpper, CblasNoTrans, CblasUnit, N, lu, N, x, 1);
    } else {
      scipy_cblas_strsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, N, lu, N, x, 1);
      scipy_cblas_strsv(CblasRowMajor, CblasUpper, CblasNoTrans, CblasUnit, N, lu, N, x, 1);
    }
  } else if constexpr (std::is_same_v<T, double>) {
    scipy_cblas_dtrsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, N, K, 1.0, lu, N, x, K);
    scipy_cblas_dtrsm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasUnit, N, K, 1.0, lu, N, x, K);
  } else {
    scipy_cblas_strsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, N, K, 1.0f, lu, N, x, K);
    scipy_cblas_strsm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasUnit, N, K, 1.0f, lu, N, x, K);
  }
  for (std::int64_t r = n; r-- > 0;) {  // x = P y = P_1 (P_2 (... (P_n y)))
    const std::int64_t p = ipiv[r] - 1;
    if (p != r) std::swap_ranges(x + r * k, x + (r + 1) * k, x + p * k);
  }
}

template <class T>
void solve_t(const T* a, const T* b, std::int64_t batch, std::int64_t n, std::int64_t k, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n), bmat = static_cast<std::size_t>(n * k);
  const bool tiny = n <= tiny_max();
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    // Systems up to 8x8 (a Newton step inside a loop body: one call per iteration) factor
    // in a stack buffer, with no allocation per call; larger ones in a buffer of the
    // runtime's block cache (no fresh pages per call).
    constexpr std::size_t kStack = 64;
    std::array<T, kStack> lu_stack;
    const BufferPtr lu_heap = amat > kStack ? Buffer::allocate(amat * sizeof(T)) : nullptr;
    T* const lu = amat > kStack ? lu_heap->as<T>() : lu_stack.data();
    std::vector<lapack_int_t> ipiv(tiny ? 0 : static_cast<std::size_t>(n));
    for (std::int64_t i = b0; i < b1; ++i) {
      T* x = out + static_cast<std::size_t>(i) * bmat;
      std::copy_n(a + static_cast<std::size_t>(i) * amat, amat, lu);  // read column-major: A^T
      std::copy_n(b + static_cast<std::size_t>(i) * bmat, bmat, x);
      if (tiny) {
        lu_tiny(lu, n, x, k);
        triangular_tiny(lu, n, k, 0, x);  // U x = L^-1 P b
        continue;
      }
      int info = 0;
      getrf<T>(static_cast<int>(n), lu, ipiv.data(), &info);
      // A singular U still solves (its zero pivots give inf/NaN, as JAX's solve does).
      lu_solve_rows(lu, ipiv.data(), n, k, x);
    }
  });
}

template <class T>
void syevd(int n, T* a, T* w, T* work, int lwork, int* iwork, int liwork, int* info) {
  const char jobz = 'V', uplo = 'U';  // the column-major upper triangle = the row-major lower
  if constexpr (std::is_same_v<T, double>) scipy_dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  else scipy_ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}

template <class T>
void eigh_t(const T* a, std::int64_t batch, std::int64_t n, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n), omat = static_cast<std::size_t>((n + 1) * n);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> z(amat), work(static_cast<std::size_t>(1 + 6 * n + 2 * n * n));
    std::vector<int> iwork(static_cast<std::size_t>(3 + 5 * n));
    for (std::int64_t i = b0; i < b1; ++i) {
      T* o = out + static_cast<std::size_t>(i) * omat;
      std::copy_n(a + static_cast<std::size_t>(i) * amat, amat, z.data());
      int info = 0;
      syevd<T>(static_cast<int>(n), z.data(), o, work.data(), static_cast<int>(work.size()), iwork.data(),
               static_cast<int>(iwork.size()), &info);
      if (info != 0) {  // no convergence (NaN input): NaN results, as JAX gives
        std::fill(o, o + omat, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      // z holds the eigenvectors as column-major columns, i.e. as rows of the row-major
      // view: V (row-major, eigenvectors as columns) is its transpose.
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < n; ++c) o[n + r * n + c] = z[static_cast<std::size_t>(c * n + r)];
    }
  });
}

template <class T>
void gesdd(char jobz, int m, int n, T* a, T* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork, int* iwork, int* info) {
  if constexpr (std::is_same_v<T, double>)
    scipy_dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
  else scipy_sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

// The row-major m x n matrix is the column-major n x m matrix A^T = U' S V'^T, so A = V' S U'^T:
// A's U (row-major) is the storage of V'^T and A's V^T (row-major) the storage of U'.
template <class T>
void svd_t(const T* a, std::int64_t batch, std::int64_t m, std::int64_t n, bool full, bool values_only, T* out) {
  const std::int64_t k = std::min(m, n), w = full ? std::max(m, n) : k;
  const std::int64_t ucols = full ? m : k, vrows = full ? n : k;  // A's U: m x ucols; A's V^T: vrows x n
  const std::size_t amat = static_cast<std::size_t>(m * n), omat = static_cast<std::size_t>((m + 1 + n) * w);
  const char jobz = values_only ? 'N' : full ? 'A' : 'S';
  for_each_matrix(batch, std::max(m, n), [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> x(amat), s(static_cast<std::size_t>(k)), up(static_cast<std::size_t>(n * vrows)),
        vtp(static_cast<std::size_t>(ucols * m));
    std::vector<int> iwork(static_cast<std::size_t>(8 * std::max<std::int64_t>(k, 1)));
    T query = 0;
    int info = 0;
    // Column-major A^T is n x m: U' is n x vrows (ld n), V'^T is ucols x m (ld ucols).
    gesdd<T>(jobz, static_cast<int>(n), static_cast<int>(m), x.data(), s.data(), up.data(), static_cast<int>(n),
             vtp.data(), static_cast<int>(std::max<std::int64_t>(ucols, 1)), &query, -1, iwork.data(), &info);
    std::vector<T> work(static_cast<std::size_t>(std::max<T>(query, T(1))));
    for (std::int64_t i = b0; i < b1; ++i) {
      T* o = out + static_cast<std::size_t>(i) * omat;
      std::fill(o, o + omat, T(0));
      std::copy_n(a + static_cast<std::size_t>(i) * amat, amat, x.data());
      gesdd<T>(jobz, static_cast<int>(n), static_cast<int>(m), x.data(), s.data(), up.data(), static_cast<int>(n),
               vtp.data(), static_cast<int>(std::max<std::int64_t>(ucols, 1)), work.data(), static_cast<int>(work.size()),
               iwork.data(), &info);
      if (info != 0) {
        std::fill(o, o + omat, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      for (std::int64_t c = 0; c < k; ++c) o[m * w + c] = s[static_cast<std::size_t>(c)];
      if (values_only) continue;  // jobz 'N': no vectors (the other rows stay zero)
      // U (m x ucols, row-major) = storage of V'^T (ucols x m, column-major).
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < ucols; ++c) o[r * w + c] = vtp[static_cast<std::size_t>(r * ucols + c)];
      // V^T (vrows x n, row-major) = storage of U' (n x vrows, column-major); out holds V.
      for (std::int64_t r = 0; r < vrows; ++r)
        for (std::int64_t c = 0; c < n; ++c) o[(m + 1 + c) * w + r] = up[static_cast<std::size_t>(r * n + c)];
    }
  });
}

template <class T>
void geqrf(int m, int n, T* a, T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, double>) scipy_dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
  else scipy_sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}

template <class T>
void orgqr(int m, int n, int k, T* a, const T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, double>) scipy_dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
  else scipy_sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}

// Householder QR of A (copied to column-major), then Q formed from the reflectors.
template <class T>
void qr_t(const T* a, std::int64_t batch, std::int64_t m, std::int64_t n, bool complete, T* out) {
  const std::int64_t k = std::min(m, n), qc = complete ? m : k, w = std::max(qc, n);
  const std::size_t amat = static_cast<std::size_t>(m * n), omat = static_cast<std::size_t>((m + qc) * w);
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k), QC = static_cast<int>(qc);
  for_each_matrix(batch, std::max(m, n), [&](std::int64_t b0, std::int64_t b1) {
    // The factored matrix needs room for Q's qc columns (column-major, ld m).
    std::vector<T> f(static_cast<std::size_t>(m * std::max(n, qc))), tau(static_cast<std::size_t>(std::max<std::int64_t>(k, 1)));
    T q1 = 0, q2 = 0;
    int info = 0;
    geqrf<T>(M, N, f.data(), tau.data(), &q1, -1, &info);
    orgqr<T>(M, QC, K, f.data(), tau.data(), &q2, -1, &info);
    std::vector<T> work(static_cast<std::size_t>(std::max({q1, q2, T(1)})));
    for (std::int64_t i = b0; i < b1; ++i) {
      T* o = out + static_cast<std::size_t>(i) * omat;
      std::fill(o, o + omat, T(0));
      const T* ai = a + static_cast<std::size_t>(i) * amat;
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < n; ++c) f[static_cast<std::size_t>(r + c * m)] = ai[r * n + c];
      geqrf<T>(M, N, f.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
      for (std::int64_t r = 0; r < qc; ++r)  // R: the upper triangle (rows past k are zero)
        for (std::int64_t c = r; c < n; ++c) o[(m + r) * w + c] = f[static_cast<std::size_t>(r + c * m)];
      if (k > 0) orgqr<T>(M, QC, K, f.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < qc; ++c) o[r * w + c] = f[static_cast<std::size_t>(r + c * m)];
    }
  });
}

// P A = L U with partial pivoting. out [n + 2, n]: row 0 the permutation (PA's row i is A's
// row perm[i]), row 1 the pivots (row j was swapped with row piv[j], 0-based, as
// scipy.linalg.lu_factor), rows 2.. L (strictly lower, unit diagonal implied) and U.
template <class T>
void lu_t(const T* a, std::int64_t batch, std::int64_t n, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n), omat = static_cast<std::size_t>((n + 2) * n);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> f(amat);
    std::vector<std::int64_t> piv(static_cast<std::size_t>(n)), perm(static_cast<std::size_t>(n));
    std::vector<lapack_int_t> ipiv(static_cast<std::size_t>(n));
    for (std::int64_t i = b0; i < b1; ++i) {
      T* o = out + static_cast<std::size_t>(i) * omat;
      const T* ai = a + static_cast<std::size_t>(i) * amat;
      if (n <= tiny_max()) {
        std::copy_n(ai, amat, o + 2 * n);
        lu_tiny<T>(o + 2 * n, n, nullptr, 0, piv.data());
      } else {
        for (std::int64_t r = 0; r < n; ++r)  // to column-major A
          for (std::int64_t c = 0; c < n; ++c) f[static_cast<std::size_t>(r + c * n)] = ai[r * n + c];
        int info = 0;
        getrf<T>(static_cast<int>(n), f.data(), ipiv.data(), &info);
        for (std::int64_t r = 0; r < n; ++r) {
          piv[static_cast<std::size_t>(r)] = ipiv[static_cast<std::size_t>(r)] - 1;
          for (std::int64_t c = 0; c < n; ++c) o[(2 + r) * n + c] = f[static_cast<std::size_t>(r + c * n)];
        }
      }
      for (std::int64_t r = 0; r < n; ++r) perm[static_cast<std::size_t>(r)] = r;
      for (std::int64_t r = 0; r < n; ++r) std::swap(perm[static_cast<std::size_t>(r)], perm[static_cast<std::size_t>(piv[static_cast<std::size_t>(r)])]);
      for (std::int64_t r = 0; r < n; ++r) {
        o[r] = static_cast<T>(perm[static_cast<std::size_t>(r)]);
        o[n + r] = static_cast<T>(piv[static_cast<std::size_t>(r)]);
      }
    }
  });
}

template <class T>
void slogdet_t(const T* a, std::int64_t batch, std::int64_t n, T* out) {
  const std::size_t amat = static_cast<std::size_t>(n * n);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> lu(amat);
    std::vector<lapack_int_t> ipiv(static_cast<std::size_t>(n));
    for (std::int64_t i = b0; i < b1; ++i) {
      std::copy_n(a + static_cast<std::size_t>(i) * amat, amat, lu.data());
      T sign = 1, logabs = 0;
      if (n <= tiny_max()) {
        sign = lu_tiny<T>(lu.data(), n, nullptr, 0);
      } else {
        int info = 0;
        getrf<T>(static_cast<int>(n), lu.data(), ipiv.data(), &info);
        for (std::int64_t j = 0; j < n; ++j)
          if (ipiv[static_cast<std::size_t>(j)] != j + 1) sign = -sign;
      }
      for (std::int64_t j = 0; j < n; ++j) {
        const T d = lu[static_cast<std::size_t>(j * n + j)];
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

void cholesky(DType dtype, const std::byte* in, std::int64_t batch, std::int64_t n, std::byte* out, bool symmetrize) {
  if (dtype == DType::f64)
    return cholesky_t(reinterpret_cast<const double*>(in), batch, n, reinterpret_cast<double*>(out), symmetrize);
  if (dtype == DType::f32)
    return cholesky_t(reinterpret_cast<const float*>(in), batch, n, reinterpret_cast<float*>(out), symmetrize);
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

void eigh(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t n, std::byte* out) {
  if (dtype == DType::f64) return eigh_t(reinterpret_cast<const double*>(a), batch, n, reinterpret_cast<double*>(out));
  if (dtype == DType::f32) return eigh_t(reinterpret_cast<const float*>(a), batch, n, reinterpret_cast<float*>(out));
  throw InternalError("eigh: float operands only");
}

void svd(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t m, std::int64_t n, bool full, std::byte* out,
         bool values_only) {
  if (dtype == DType::f64)
    return svd_t(reinterpret_cast<const double*>(a), batch, m, n, full, values_only, reinterpret_cast<double*>(out));
  if (dtype == DType::f32)
    return svd_t(reinterpret_cast<const float*>(a), batch, m, n, full, values_only, reinterpret_cast<float*>(out));
  throw InternalError("svd: float operands only");
}

void qr(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t m, std::int64_t n, bool complete, std::byte* out) {
  if (dtype == DType::f64) return qr_t(reinterpret_cast<const double*>(a), batch, m, n, complete, reinterpret_cast<double*>(out));
  if (dtype == DType::f32) return qr_t(reinterpret_cast<const float*>(a), batch, m, n, complete, reinterpret_cast<float*>(out));
  throw InternalError("qr: float operands only");
}

void lu(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t n, std::byte* out) {
  if (dtype == DType::f64) return lu_t(reinterpret_cast<const double*>(a), batch, n, reinterpret_cast<double*>(out));
  if (dtype == DType::f32) return lu_t(reinterpret_cast<const float*>(a), batch, n, reinterpret_cast<float*>(out));
  throw InternalError("lu: float operands only");
}

}  // namespace qb::cpu
