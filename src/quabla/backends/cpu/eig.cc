// The eigendecomposition of general square matrices (ops.def: eig, its lowered form) by
// LAPACK's geev from scipy-openblas32: the routine NumPy and JAX's CPU backend call, so the
// eigenvalues come in the same order and the eigenvectors with the same normalisation (unit
// 2-norm, largest component real).
//
// Our matrices are row-major and LAPACK's column-major, and geev of the stored transpose
// would give left eigenvectors, so each matrix is transposed into the work copy geev
// overwrites anyway. Complex matrices arrive planar (every real part, then every imaginary
// part) and are interleaved into that copy.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/lapack_batch.h"
#include "quabla/ir/errors.h"

extern "C" {
void scipy_dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi,
                  double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info,
                  std::size_t jobvl_len, std::size_t jobvr_len);
void scipy_sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr, float* wi,
                  float* vl, const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork, int* info,
                  std::size_t jobvl_len, std::size_t jobvr_len);
void scipy_zgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<double>* a, const int* lda,
                  std::complex<double>* w, std::complex<double>* vl, const int* ldvl, std::complex<double>* vr,
                  const int* ldvr, std::complex<double>* work, const int* lwork, double* rwork, int* info,
                  std::size_t jobvl_len, std::size_t jobvr_len);
void scipy_cgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<float>* a, const int* lda,
                  std::complex<float>* w, std::complex<float>* vl, const int* ldvl, std::complex<float>* vr,
                  const int* ldvr, std::complex<float>* work, const int* lwork, float* rwork, int* info,
                  std::size_t jobvl_len, std::size_t jobvr_len);
}

namespace qb::cpu {

namespace {

template <class T>
int real_geev(char jobvr, int n, T* a, T* wr, T* wi, T* vr, int ldvr, T* work, int lwork) {
  const char jobvl = 'N';
  const int one = 1;
  int info = 0;
  if constexpr (std::is_same_v<T, double>)
    scipy_dgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, &info, 1, 1);
  else scipy_sgeev_(&jobvl, &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, &info, 1, 1);
  return info;
}

template <class T>
int complex_geev(char jobvr, int n, std::complex<T>* a, std::complex<T>* w, std::complex<T>* vr, int ldvr,
                 std::complex<T>* work, int lwork, T* rwork) {
  const char jobvl = 'N';
  const int one = 1;
  int info = 0;
  if constexpr (std::is_same_v<T, double>)
    scipy_zgeev_(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, &info, 1, 1);
  else scipy_cgeev_(&jobvl, &jobvr, &n, a, &n, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, &info, 1, 1);
  return info;
}

// The planar output of one matrix: `rows` x n real parts at re, imaginary parts at im.
template <class T>
struct PlanarOut {
  T* re;
  T* im;
  std::size_t size;
  void fill_nan() const {
    std::fill(re, re + size, std::numeric_limits<T>::quiet_NaN());
    std::fill(im, im + size, std::numeric_limits<T>::quiet_NaN());
  }
};

template <class T>
void eig_t(const T* in, std::int64_t batch, std::int64_t n, bool complex_in, bool values_only, T* out) {
  const std::int64_t rows = values_only ? 1 : n + 1;
  const std::size_t amat = static_cast<std::size_t>(n * n), omat = static_cast<std::size_t>(rows * n);
  const std::size_t in_plane = static_cast<std::size_t>(batch) * amat, out_plane = static_cast<std::size_t>(batch) * omat;
  const char jobvr = values_only ? 'N' : 'V';
  const int ni = static_cast<int>(n), ldvr = values_only ? 1 : std::max(ni, 1);
  if (n == 0) return;
  for_each_matrix(batch, n, [&](std::int64_t b0, std::int64_t b1) {
    if (!complex_in) {
      std::vector<T> a(amat), wr(static_cast<std::size_t>(n)), wi(static_cast<std::size_t>(n)),
          vr(values_only ? 1 : amat);
      T query = 0;
      real_geev<T>(jobvr, ni, a.data(), wr.data(), wi.data(), vr.data(), ldvr, &query, -1);
      std::vector<T> work(static_cast<std::size_t>(std::max<T>(query, T(1))));
      for (std::int64_t b = b0; b < b1; ++b) {
        const T* src = in + static_cast<std::size_t>(b) * amat;
        const PlanarOut<T> o{out + static_cast<std::size_t>(b) * omat, out + out_plane + static_cast<std::size_t>(b) * omat, omat};
        bool finite = true;
        for (std::int64_t i = 0; i < n; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            const T v = src[i * n + j];
            finite = finite && std::isfinite(v);
            a[static_cast<std::size_t>(i + j * n)] = v;
          }
        // geev on inf/NaN entries fails or loops in its balancing; NaN results, as JAX's.
        if (!finite || real_geev<T>(jobvr, ni, a.data(), wr.data(), wi.data(), vr.data(), ldvr, work.data(),
                                    static_cast<int>(work.size())) != 0) {
          o.fill_nan();
          continue;
        }
        std::copy(wr.begin(), wr.end(), o.re);
        std::copy(wi.begin(), wi.end(), o.im);
        if (values_only) continue;
        // geev's real form: a real eigenvalue's vector is column j; a complex pair (positive
        // imaginary part first) shares columns j (real part) and j + 1 (imaginary part).
        for (std::int64_t j = 0; j < n; ++j) {
          const T* col = vr.data() + static_cast<std::size_t>(j * n);
          if (wi[static_cast<std::size_t>(j)] == T(0)) {
            for (std::int64_t i = 0; i < n; ++i) {
              o.re[n + i * n + j] = col[i];
              o.im[n + i * n + j] = T(0);
            }
            continue;
          }
          const T* imag = col + n;
          for (std::int64_t i = 0; i < n; ++i) {
            o.re[n + i * n + j] = o.re[n + i * n + j + 1] = col[i];
            o.im[n + i * n + j] = imag[i];
            o.im[n + i * n + j + 1] = -imag[i];
          }
          ++j;
        }
      }
      return;
    }
    using C = std::complex<T>;
    std::vector<C> a(amat), w(static_cast<std::size_t>(n)), vr(values_only ? 1 : amat);
    std::vector<T> rwork(static_cast<std::size_t>(2 * n));
    C query = 0;
    complex_geev<T>(jobvr, ni, a.data(), w.data(), vr.data(), ldvr, &query, -1, rwork.data());
    std::vector<C> work(static_cast<std::size_t>(std::max<T>(query.real(), T(1))));
    for (std::int64_t b = b0; b < b1; ++b) {
      const T* src_re = in + static_cast<std::size_t>(b) * amat;
      const T* src_im = src_re + in_plane;
      const PlanarOut<T> o{out + static_cast<std::size_t>(b) * omat, out + out_plane + static_cast<std::size_t>(b) * omat, omat};
      bool finite = true;
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const C v(src_re[i * n + j], src_im[i * n + j]);
          finite = finite && std::isfinite(v.real()) && std::isfinite(v.imag());
          a[static_cast<std::size_t>(i + j * n)] = v;
        }
      if (!finite || complex_geev<T>(jobvr, ni, a.data(), w.data(), vr.data(), ldvr, work.data(),
                                     static_cast<int>(work.size()), rwork.data()) != 0) {
        o.fill_nan();
        continue;
      }
      for (std::int64_t j = 0; j < n; ++j) {
        o.re[j] = w[static_cast<std::size_t>(j)].real();
        o.im[j] = w[static_cast<std::size_t>(j)].imag();
      }
      if (values_only) continue;
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const C v = vr[static_cast<std::size_t>(i + j * n)];
          o.re[n + i * n + j] = v.real();
          o.im[n + i * n + j] = v.imag();
        }
    }
  });
}

}  // namespace

void eig(DType part, const std::byte* a, std::int64_t batch, std::int64_t n, bool complex_in, bool values_only,
         std::byte* out) {
  switch (part) {
    case DType::f64:
      return eig_t(reinterpret_cast<const double*>(a), batch, n, complex_in, values_only, reinterpret_cast<double*>(out));
    case DType::f32:
      return eig_t(reinterpret_cast<const float*>(a), batch, n, complex_in, values_only, reinterpret_cast<float*>(out));
    default: throw InternalError("cpu::eig: float parts expected");
  }
}

}  // namespace qb::cpu
