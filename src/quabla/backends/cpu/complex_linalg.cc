// The factorizations of complex matrices (the lowered forms of ops.def's cholesky, slogdet,
// eigh, svd, qr and lu, mode bit 8): LAPACK's complex routines from scipy-openblas32 on a
// column-major interleaved copy of each planar matrix, results written back planar. The
// layout reasoning is the real kernels' (linalg.cc): a row-major matrix is the column-major
// view of its transpose, and for a Hermitian matrix the transpose is the conjugate, so
// routines that read one triangle read the row-major lower one from the column-major upper.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/lapack_batch.h"
#include "quabla/backends/cpu/svd_values_fold.h"
#include "quabla/ir/errors.h"

using zc = std::complex<double>;
using cc = std::complex<float>;

extern "C" {
void scipy_zpotrf_(const char* uplo, const int* n, zc* a, const int* lda, int* info, std::size_t uplo_len);
void scipy_cpotrf_(const char* uplo, const int* n, cc* a, const int* lda, int* info, std::size_t uplo_len);
void scipy_zgetrf_(const int* m, const int* n, zc* a, const int* lda, int* ipiv, int* info);
void scipy_cgetrf_(const int* m, const int* n, cc* a, const int* lda, int* ipiv, int* info);
void scipy_zheevd_(const char* jobz, const char* uplo, const int* n, zc* a, const int* lda, double* w, zc* work,
                   const int* lwork, double* rwork, const int* lrwork, int* iwork, const int* liwork, int* info,
                   std::size_t jobz_len, std::size_t uplo_len);
void scipy_cheevd_(const char* jobz, const char* uplo, const int* n, cc* a, const int* lda, float* w, cc* work,
                   const int* lwork, float* rwork, const int* lrwork, int* iwork, const int* liwork, int* info,
                   std::size_t jobz_len, std::size_t uplo_len);
void scipy_zgesdd_(const char* jobz, const int* m, const int* n, zc* a, const int* lda, double* s, zc* u, const int* ldu,
                   zc* vt, const int* ldvt, zc* work, const int* lwork, double* rwork, int* iwork, int* info,
                   std::size_t jobz_len);
void scipy_cgesdd_(const char* jobz, const int* m, const int* n, cc* a, const int* lda, float* s, cc* u, const int* ldu,
                   cc* vt, const int* ldvt, cc* work, const int* lwork, float* rwork, int* iwork, int* info,
                   std::size_t jobz_len);
void scipy_zgetrs_(const char* trans, const int* n, const int* nrhs, const zc* a, const int* lda, const int* ipiv, zc* b,
                   const int* ldb, int* info, std::size_t trans_len);
void scipy_cgetrs_(const char* trans, const int* n, const int* nrhs, const cc* a, const int* lda, const int* ipiv, cc* b,
                   const int* ldb, int* info, std::size_t trans_len);
void scipy_ztrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m, const int* n,
                  const zc* alpha, const zc* a, const int* lda, zc* b, const int* ldb, std::size_t, std::size_t,
                  std::size_t, std::size_t);
void scipy_ctrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m, const int* n,
                  const cc* alpha, const cc* a, const int* lda, cc* b, const int* ldb, std::size_t, std::size_t,
                  std::size_t, std::size_t);
void scipy_zgeqrf_(const int* m, const int* n, zc* a, const int* lda, zc* tau, zc* work, const int* lwork, int* info);
void scipy_cgeqrf_(const int* m, const int* n, cc* a, const int* lda, cc* tau, cc* work, const int* lwork, int* info);
void scipy_zungqr_(const int* m, const int* n, const int* k, zc* a, const int* lda, const zc* tau, zc* work,
                   const int* lwork, int* info);
void scipy_cungqr_(const int* m, const int* n, const int* k, cc* a, const int* lda, const cc* tau, cc* work,
                   const int* lwork, int* info);
}

namespace qb::cpu {

namespace {

template <class T>
constexpr bool is_double = std::is_same_v<T, double>;

template <class T>
int potrf(int n, std::complex<T>* a) {
  const char uplo = 'U';
  int info = 0;
  if constexpr (is_double<T>) scipy_zpotrf_(&uplo, &n, a, &n, &info, 1);
  else scipy_cpotrf_(&uplo, &n, a, &n, &info, 1);
  return info;
}

template <class T>
int getrf(int n, std::complex<T>* a, int* ipiv) {
  int info = 0;
  if constexpr (is_double<T>) scipy_zgetrf_(&n, &n, a, &n, ipiv, &info);
  else scipy_cgetrf_(&n, &n, a, &n, ipiv, &info);
  return info;
}

template <class T>
void getrs(int n, int k, const std::complex<T>* a, const int* ipiv, std::complex<T>* b) {
  const char trans = 'N';
  int info = 0;
  if constexpr (is_double<T>) scipy_zgetrs_(&trans, &n, &k, a, &n, ipiv, b, &n, &info, 1);
  else scipy_cgetrs_(&trans, &n, &k, a, &n, ipiv, b, &n, &info, 1);
}

template <class T>
void trsm(char side, char uplo, char trans, char diag, int m, int n, const std::complex<T>* a, int lda,
          std::complex<T>* b, int ldb) {
  const std::complex<T> one = 1;
  if constexpr (is_double<T>) scipy_ztrsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &ldb, 1, 1, 1, 1);
  else scipy_ctrsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &ldb, 1, 1, 1, 1);
}

template <class T>
int heevd(int n, std::complex<T>* a, T* w, std::complex<T>* work, int lwork, T* rwork, int lrwork, int* iwork,
          int liwork) {
  const char jobz = 'V', uplo = 'U';
  int info = 0;
  if constexpr (is_double<T>)
    scipy_zheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1);
  else scipy_cheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1);
  return info;
}

template <class T>
int gesdd(char jobz, int m, int n, std::complex<T>* a, T* s, std::complex<T>* u, int ldu, std::complex<T>* vt, int ldvt,
          std::complex<T>* work, int lwork, T* rwork, int* iwork) {
  int info = 0;
  if constexpr (is_double<T>)
    scipy_zgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, &info, 1);
  else scipy_cgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, &info, 1);
  return info;
}

template <class T>
int geqrf(int m, int n, std::complex<T>* a, std::complex<T>* tau, std::complex<T>* work, int lwork) {
  int info = 0;
  if constexpr (is_double<T>) scipy_zgeqrf_(&m, &n, a, &m, tau, work, &lwork, &info);
  else scipy_cgeqrf_(&m, &n, a, &m, tau, work, &lwork, &info);
  return info;
}

template <class T>
int ungqr(int m, int n, int k, std::complex<T>* a, const std::complex<T>* tau, std::complex<T>* work, int lwork) {
  int info = 0;
  if constexpr (is_double<T>) scipy_zungqr_(&m, &n, &k, a, &m, tau, work, &lwork, &info);
  else scipy_cungqr_(&m, &n, &k, a, &m, tau, work, &lwork, &info);
  return info;
}

template <class T>
int query_size(std::complex<T> q) {
  return std::max(1, static_cast<int>(q.real()));
}

// Matrix b of a planar stack [2, batch, rows, cols], and matrix b of the planar result.
template <class T>
struct PlanarIn {
  const T* base;
  std::size_t plane, mat;
  std::int64_t cols;
  std::complex<T> at(std::int64_t b, std::int64_t i, std::int64_t j) const {
    const std::size_t o = static_cast<std::size_t>(b) * mat + static_cast<std::size_t>(i * cols + j);
    return {base[o], base[plane + o]};
  }
};

template <class T>
struct PlanarOut {
  T* base;
  std::size_t plane, mat;
  std::int64_t cols;
  void set(std::int64_t b, std::int64_t i, std::int64_t j, std::complex<T> v) const {
    const std::size_t o = static_cast<std::size_t>(b) * mat + static_cast<std::size_t>(i * cols + j);
    base[o] = v.real();
    base[plane + o] = v.imag();
  }
  void fill(std::int64_t b, T v) const {
    T* p = base + static_cast<std::size_t>(b) * mat;
    std::fill(p, p + mat, v);
    std::fill(p + plane, p + plane + mat, v);
  }
};

template <class T>
PlanarIn<T> planar_in(const T* in, std::int64_t batch, std::int64_t rows, std::int64_t cols) {
  const auto mat = static_cast<std::size_t>(rows * cols);
  return {in, mat * static_cast<std::size_t>(batch), mat, cols};
}
template <class T>
PlanarOut<T> planar_out(T* out, std::int64_t batch, std::int64_t rows, std::int64_t cols) {
  const auto mat = static_cast<std::size_t>(rows * cols);
  return {out, mat * static_cast<std::size_t>(batch), mat, cols};
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The row-major lower triangle of A is the column-major upper one of the stored matrix;
// potrf's upper factor U (B = U^H U, B = conj A) read back row-major is L = U^T with A = L L^H.
template <class T>
void cholesky_c(const T* in, std::int64_t batch, std::int64_t n, T* out) {
  const auto src = planar_in(in, batch, n, n);
  const auto dst = planar_out(out, batch, n, n);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> f(static_cast<std::size_t>(n * n));
    for (std::int64_t b = b0; b < b1; ++b) {
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j <= i; ++j) f[static_cast<std::size_t>(j + i * n)] = src.at(b, i, j);
      if (n > 0 && potrf<T>(static_cast<int>(n), f.data()) != 0) {
        dst.fill(b, static_cast<T>(kNaN));  // not positive definite, as the real kernel
        continue;
      }
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) dst.set(b, i, j, j <= i ? f[static_cast<std::size_t>(j + i * n)] : std::complex<T>{});
    }
  });
}

// det A = det A^T: the stored matrix is factored as it is. sign = det / |det|.
template <class T>
void slogdet_c(const T* in, std::int64_t batch, std::int64_t n, T* out) {
  const auto src = planar_in(in, batch, n, n);
  const auto dst = planar_out(out, batch, 1, 2);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> f(static_cast<std::size_t>(n * n));
    std::vector<int> ipiv(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
    for (std::int64_t b = b0; b < b1; ++b) {
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) f[static_cast<std::size_t>(i * n + j)] = src.at(b, i, j);
      if (n > 0) getrf<T>(static_cast<int>(n), f.data(), ipiv.data());
      std::complex<T> sign = 1;
      T logabs = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        const std::complex<T> d = f[static_cast<std::size_t>(j * n + j)];
        const T mag = std::abs(d);
        if (ipiv[static_cast<std::size_t>(j)] != j + 1) sign = -sign;
        logabs += std::log(mag);  // -inf for a zero pivot; NaN propagates
        if (mag > 0) sign *= d / mag;
      }
      if (std::isinf(logabs) && logabs < 0) sign = 0;
      if (std::isnan(logabs)) sign = {static_cast<T>(kNaN), static_cast<T>(kNaN)};
      dst.set(b, 0, 0, sign);
      dst.set(b, 0, 1, logabs);
    }
  });
}

// heevd reads the column-major upper triangle: the Hermitian matrix H of A's lower triangle,
// transposed, i.e. conj H. Same eigenvalues; its eigenvectors are the conjugates of H's.
template <class T>
void eigh_c(const T* in, std::int64_t batch, std::int64_t n, T* out) {
  const auto src = planar_in(in, batch, n, n);
  const auto dst = planar_out(out, batch, n + 1, n);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> f(static_cast<std::size_t>(n * n)), work(static_cast<std::size_t>(2 * n + n * n + 1));
    std::vector<T> w(static_cast<std::size_t>(n)), rwork(static_cast<std::size_t>(1 + 5 * n + 2 * n * n));
    std::vector<int> iwork(static_cast<std::size_t>(3 + 5 * n));
    for (std::int64_t b = b0; b < b1; ++b) {
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j <= i; ++j) f[static_cast<std::size_t>(j + i * n)] = src.at(b, i, j);
      if (n > 0 && heevd<T>(static_cast<int>(n), f.data(), w.data(), work.data(), static_cast<int>(work.size()),
                            rwork.data(), static_cast<int>(rwork.size()), iwork.data(),
                            static_cast<int>(iwork.size())) != 0) {
        dst.fill(b, static_cast<T>(kNaN));  // no convergence (NaN input), as the real kernel
        continue;
      }
      for (std::int64_t j = 0; j < n; ++j) dst.set(b, 0, j, w[static_cast<std::size_t>(j)]);
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < n; ++c) dst.set(b, 1 + r, c, std::conj(f[static_cast<std::size_t>(r + c * n)]));
    }
  });
}

// The stored matrix is A^T (n x m) = U' S V'^H, so A = conj(V') S U'^T: A's U is conj(V'),
// whose row-major storage is that of V'^H (gesdd's vt), and A's V is conj(U').
template <class T>
void svd_c(const T* in, std::int64_t batch, std::int64_t m, std::int64_t n, bool full, bool values_only, T* out) {
  const std::int64_t k = std::min(m, n), mx = std::max(m, n), w = full ? mx : k;
  const std::int64_t ucols = full ? m : k, vrows = full ? n : k;
  const auto src = planar_in(in, batch, m, n);
  const auto dst = planar_out(out, batch, m + 1 + n, w);
  const char jobz = values_only ? 'N' : full ? 'A' : 'S';
  for_each_matrix(batch, mx, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> x(static_cast<std::size_t>(m * n)), up(static_cast<std::size_t>(n * vrows)),
        vtp(static_cast<std::size_t>(ucols * m));
    std::vector<T> s(static_cast<std::size_t>(std::max<std::int64_t>(k, 1))),
        rwork(static_cast<std::size_t>(std::max<std::int64_t>({1, 5 * k * k + 5 * k, 2 * mx * k + 2 * k * k + k})));
    std::vector<int> iwork(static_cast<std::size_t>(8 * std::max<std::int64_t>(k, 1)));
    const int N = static_cast<int>(n), M = static_cast<int>(m), ldvt = static_cast<int>(std::max<std::int64_t>(ucols, 1));
    std::complex<T> query = 0;
    gesdd<T>(jobz, N, M, x.data(), s.data(), up.data(), std::max(N, 1), vtp.data(), ldvt, &query, -1, rwork.data(),
             iwork.data());
    std::vector<std::complex<T>> work(static_cast<std::size_t>(query_size(query)));
    for (std::int64_t b = b0; b < b1; ++b) {
      dst.fill(b, T(0));
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) x[static_cast<std::size_t>(i * n + j)] = src.at(b, i, j);
      if (k == 0) {  // an empty matrix: full U and V are identities
        for (std::int64_t r = 0; r < ucols; ++r) dst.set(b, r, r, T(1));
        for (std::int64_t r = 0; r < vrows; ++r) dst.set(b, m + 1 + r, r, T(1));
        continue;
      }
      if (gesdd<T>(jobz, N, M, x.data(), s.data(), up.data(), std::max(N, 1), vtp.data(), ldvt, work.data(),
                   static_cast<int>(work.size()), rwork.data(), iwork.data()) != 0) {
        dst.fill(b, static_cast<T>(kNaN));
        continue;
      }
      for (std::int64_t c = 0; c < k; ++c) dst.set(b, m, c, s[static_cast<std::size_t>(c)]);
      if (values_only) continue;  // jobz 'N': no vectors (the other rows stay zero)
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < ucols; ++c) dst.set(b, r, c, vtp[static_cast<std::size_t>(r * ucols + c)]);
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < vrows; ++c) dst.set(b, m + 1 + r, c, std::conj(up[static_cast<std::size_t>(r + c * n)]));
    }
  });
}

// Householder QR of A (transposed into column-major), then Q from the reflectors.
template <class T>
void qr_c(const T* in, std::int64_t batch, std::int64_t m, std::int64_t n, bool complete, T* out) {
  const std::int64_t k = std::min(m, n), qc = complete ? m : k, w = std::max(qc, n);
  const auto src = planar_in(in, batch, m, n);
  const auto dst = planar_out(out, batch, m + qc, w);
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k), QC = static_cast<int>(qc);
  for_each_matrix(batch, std::max(m, n), [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> f(static_cast<std::size_t>(m * std::max(n, qc))),
        tau(static_cast<std::size_t>(std::max<std::int64_t>(k, 1)));
    std::complex<T> q1 = 0, q2 = 0;
    geqrf<T>(M, N, f.data(), tau.data(), &q1, -1);
    ungqr<T>(M, QC, K, f.data(), tau.data(), &q2, -1);
    std::vector<std::complex<T>> work(static_cast<std::size_t>(std::max(query_size(q1), query_size(q2))));
    for (std::int64_t b = b0; b < b1; ++b) {
      dst.fill(b, T(0));
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < n; ++c) f[static_cast<std::size_t>(r + c * m)] = src.at(b, r, c);
      if (m > 0 && n > 0) geqrf<T>(M, N, f.data(), tau.data(), work.data(), static_cast<int>(work.size()));
      for (std::int64_t r = 0; r < qc; ++r)
        for (std::int64_t c = r; c < n; ++c) dst.set(b, m + r, c, f[static_cast<std::size_t>(r + c * m)]);
      if (k > 0) ungqr<T>(M, QC, K, f.data(), tau.data(), work.data(), static_cast<int>(work.size()));
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < qc; ++c) {
          // with k = 0 there are no reflectors: Q is the identity's first columns
          dst.set(b, r, c, k > 0 ? f[static_cast<std::size_t>(r + c * m)] : std::complex<T>(T(r == c ? 1 : 0)));
        }
    }
  });
}

// P A = L U (A transposed into column-major): the permutation and pivot rows as the real
// kernel writes them, with zero imaginary parts.
template <class T>
void lu_c(const T* in, std::int64_t batch, std::int64_t n, T* out) {
  const auto src = planar_in(in, batch, n, n);
  const auto dst = planar_out(out, batch, n + 2, n);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> f(static_cast<std::size_t>(n * n));
    std::vector<int> ipiv(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
    std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
    for (std::int64_t b = b0; b < b1; ++b) {
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < n; ++c) f[static_cast<std::size_t>(r + c * n)] = src.at(b, r, c);
      if (n > 0) getrf<T>(static_cast<int>(n), f.data(), ipiv.data());
      for (std::int64_t r = 0; r < n; ++r) perm[static_cast<std::size_t>(r)] = r;
      for (std::int64_t r = 0; r < n; ++r) {
        const std::int64_t p = ipiv[static_cast<std::size_t>(r)] - 1;
        std::swap(perm[static_cast<std::size_t>(r)], perm[static_cast<std::size_t>(p)]);
        dst.set(b, 1, r, static_cast<T>(p));
        for (std::int64_t c = 0; c < n; ++c) dst.set(b, 2 + r, c, f[static_cast<std::size_t>(r + c * n)]);
      }
      for (std::int64_t r = 0; r < n; ++r) dst.set(b, 0, r, static_cast<T>(perm[static_cast<std::size_t>(r)]));
    }
  });
}

// Up to this order a complex system is solved by the loops below: LAPACK's per-call work
// (argument checks, blocking queries) costs more than the elimination itself there.
constexpr std::int64_t kSmallSolveMax = 8;

// |re| + |im|, the pivot measure LAPACK's complex routines use (izamax's cabs1).
template <class T>
T cabs1(std::complex<T> z) {
  return std::abs(z.real()) + std::abs(z.imag());
}

// Gaussian elimination with partial pivoting (getrf's pivot choice) on the row-major n x n
// matrix a and the n x k right-hand sides x, then back substitution; x becomes A^-1 B. A zero
// pivot gives inf/NaN, as LAPACK's.
template <class T>
void solve_small(std::complex<T>* a, std::complex<T>* x, std::int64_t n, std::int64_t k) {
  for (std::int64_t c = 0; c < n; ++c) {
    std::int64_t p = c;
    for (std::int64_t r = c + 1; r < n; ++r)
      if (cabs1(a[r * n + c]) > cabs1(a[p * n + c])) p = r;
    if (p != c) {
      std::swap_ranges(a + c * n, a + c * n + n, a + p * n);
      std::swap_ranges(x + c * k, x + c * k + k, x + p * k);
    }
    const std::complex<T> inv = T(1) / a[c * n + c];
    for (std::int64_t r = c + 1; r < n; ++r) {
      const std::complex<T> f = a[r * n + c] * inv;
      for (std::int64_t j = c + 1; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      for (std::int64_t j = 0; j < k; ++j) x[r * k + j] -= f * x[c * k + j];
    }
  }
  for (std::int64_t r = n - 1; r >= 0; --r) {
    for (std::int64_t j = 0; j < k; ++j) {
      std::complex<T> v = x[r * k + j];
      for (std::int64_t q = r + 1; q < n; ++q) v -= a[r * n + q] * x[q * k + j];
      x[r * k + j] = v / a[r * n + r];
    }
  }
}

// A X = B: LU with partial pivoting of A (transposed into column-major), then B's columns
// (column-major) solved; a singular A gives inf/NaN as the real kernel does. Small systems by
// solve_small, row-major.
template <class T>
void solve_c(const T* a, const T* b, std::int64_t batch, std::int64_t n, std::int64_t k, T* out) {
  const auto sa = planar_in(a, batch, n, n);
  const auto sb = planar_in(b, batch, n, k);
  const auto dst = planar_out(out, batch, n, k);
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> f(static_cast<std::size_t>(n * n)), x(static_cast<std::size_t>(n * k));
    std::vector<int> ipiv(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
    for (std::int64_t i = b0; i < b1; ++i) {
      if (n <= kSmallSolveMax) {
        for (std::int64_t r = 0; r < n; ++r) {
          for (std::int64_t c = 0; c < n; ++c) f[static_cast<std::size_t>(r * n + c)] = sa.at(i, r, c);
          for (std::int64_t c = 0; c < k; ++c) x[static_cast<std::size_t>(r * k + c)] = sb.at(i, r, c);
        }
        solve_small(f.data(), x.data(), n, k);
        for (std::int64_t r = 0; r < n; ++r)
          for (std::int64_t c = 0; c < k; ++c) dst.set(i, r, c, x[static_cast<std::size_t>(r * k + c)]);
        continue;
      }
      for (std::int64_t r = 0; r < n; ++r) {
        for (std::int64_t c = 0; c < n; ++c) f[static_cast<std::size_t>(r + c * n)] = sa.at(i, r, c);
        for (std::int64_t c = 0; c < k; ++c) x[static_cast<std::size_t>(r + c * n)] = sb.at(i, r, c);
      }
      getrf<T>(static_cast<int>(n), f.data(), ipiv.data());  // info > 0: a zero pivot, inf/NaN below
      getrs<T>(static_cast<int>(n), static_cast<int>(k), f.data(), ipiv.data(), x.data());
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) dst.set(i, r, c, x[static_cast<std::size_t>(r + c * n)]);
    }
  });
}

// op(A) X = B with A read from one triangle (mode bits as ops.def's triangular_solve). As
// column-major data, A's storage is S = A^T and X's, B's (n x k) are their k x n transposes
// Y = X^T, B^T: the equation is Y op(A)^T = B^T, a right-side trsm on S (op(A)^T is S for
// op = identity, S^T for op = transpose; A's lower triangle is S's upper one). No copies but
// the interleaving.
template <class T>
void triangular_solve_c(const T* a, const T* b, std::int64_t batch, std::int64_t n, std::int64_t k, int mode, T* out) {
  const auto sa = planar_in(a, batch, n, n);
  const auto sb = planar_in(b, batch, n, k);
  const auto dst = planar_out(out, batch, n, k);
  const char uplo = (mode & 1) ? 'U' : 'L', trans = (mode & 2) ? 'T' : 'N', diag = (mode & 4) ? 'U' : 'N';
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<std::complex<T>> s(static_cast<std::size_t>(n * n)), y(static_cast<std::size_t>(n * k));
    for (std::int64_t i = b0; i < b1; ++i) {
      for (std::int64_t r = 0; r < n; ++r) {
        for (std::int64_t c = 0; c < n; ++c) s[static_cast<std::size_t>(r * n + c)] = sa.at(i, r, c);
        for (std::int64_t c = 0; c < k; ++c) y[static_cast<std::size_t>(r * k + c)] = sb.at(i, r, c);
      }
      trsm<T>('R', uplo, trans, diag, static_cast<int>(k), static_cast<int>(n), s.data(), static_cast<int>(n), y.data(),
              static_cast<int>(k));
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) dst.set(i, r, c, y[static_cast<std::size_t>(r * k + c)]);
    }
  });
}

template <class T>
void run(Op op, const T* in, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t mode, T* out) {
  switch (op) {
    case Op::Cholesky: return cholesky_c(in, batch, n, out);
    case Op::Slogdet: return slogdet_c(in, batch, n, out);
    case Op::Eigh: return eigh_c(in, batch, n, out);
    case Op::Svd: return svd_c(in, batch, m, n, (mode & 1) != 0, (mode & kSvdValuesOnly) != 0, out);
    case Op::Qr: return qr_c(in, batch, m, n, (mode & 1) != 0, out);
    case Op::Lu: return lu_c(in, batch, n, out);
    default: throw InternalError("cpu::complex_factorization: " + std::string(op_name(op)) + " is not one");
  }
}

}  // namespace

void complex_solve(Op op, DType part, const std::byte* a, const std::byte* b, std::int64_t batch, std::int64_t n,
                   std::int64_t k, std::int64_t mode, std::byte* out) {
  if (n == 0 || k == 0) return;
  auto go = [&](auto tag) {
    using T = decltype(tag);
    const T* pa = reinterpret_cast<const T*>(a);
    const T* pb = reinterpret_cast<const T*>(b);
    T* po = reinterpret_cast<T*>(out);
    if (op == Op::Solve) return solve_c(pa, pb, batch, n, k, po);
    if (op == Op::TriangularSolve) return triangular_solve_c(pa, pb, batch, n, k, static_cast<int>(mode), po);
    throw InternalError("cpu::complex_solve: " + std::string(op_name(op)) + " is not a solve");
  };
  switch (part) {
    case DType::f64: return go(double{});
    case DType::f32: return go(float{});
    default: throw InternalError("cpu::complex_solve: float parts expected");
  }
}

void complex_factorization(Op op, DType part, const std::byte* in, std::int64_t batch, std::int64_t m, std::int64_t n,
                           std::int64_t mode, std::byte* out) {
  switch (part) {
    case DType::f64:
      return run(op, reinterpret_cast<const double*>(in), batch, m, n, mode, reinterpret_cast<double*>(out));
    case DType::f32:
      return run(op, reinterpret_cast<const float*>(in), batch, m, n, mode, reinterpret_cast<float*>(out));
    default: throw InternalError("cpu::complex_factorization: float parts expected");
  }
}

}  // namespace qb::cpu
