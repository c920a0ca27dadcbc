// Matrix products through BLAS (scipy-openblas32: the OpenBLAS build NumPy and SciPy ship,
// with its symbols prefixed scipy_ so it never clashes with another BLAS in the process).
#include <cblas.h>

#include <algorithm>
#include <limits>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {
// Rows of C per task: a fixed split (never derived from the thread count), so each element
// of C is always computed by the same single-threaded BLAS call and results are bitwise
// identical for any number of threads.
constexpr std::int64_t kRowBlock = 128;

void ensure_single_threaded_blas() {
  // Our pool splits GEMMs; OpenBLAS's own threads stay off. The package loads the library
  // with OPENBLAS_NUM_THREADS=1 (python/quabla/_loader.py); calling set_num_threads when it
  // is already 1 would start OpenBLAS's thread server anyway, so only a library loaded
  // elsewhere with more threads is switched down.
  static const bool once = [] {
    if (scipy_openblas_get_num_threads() > 1) scipy_openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

// Batches of tiny products (a matrix times a vector per example, as einsum("bij,bj->bi")
// gives) cost more in BLAS call overhead than in arithmetic: they run as plain loops, one
// accumulator per element of C summed in k order, whatever the transposition flags, so a
// virtual transpose and a materialised one still give the same bits.
constexpr std::int64_t kSmallProduct = 4096;  // m * k * n at or below which the loop runs

template <class T>
void small_products(const T* a, const T* b, T* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                    std::int64_t n, bool trans_a, bool trans_b) {
  const std::int64_t a_ri = trans_a ? 1 : k, a_pi = trans_a ? m : 1;  // A(i, p) = a[i * a_ri + p * a_pi]
  const std::int64_t b_pj = trans_b ? 1 : n, b_jj = trans_b ? k : 1;  // B(p, j) = b[p * b_pj + j * b_jj]
  parallel_for(batch, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, m * k * n)),
               [&](std::int64_t t0, std::int64_t t1) {
                 for (std::int64_t t = t0; t < t1; ++t) {
                   const T* A = a + t * m * k;
                   const T* B = b + t * k * n;
                   T* C = c + t * m * n;
                   for (std::int64_t i = 0; i < m; ++i)
                     for (std::int64_t j = 0; j < n; ++j) {
                       T acc = 0;
                       for (std::int64_t p = 0; p < k; ++p) acc += A[i * a_ri + p * a_pi] * B[p * b_pj + j * b_jj];
                       C[i * n + j] = acc;
                     }
                 }
               });
}
}  // namespace

void matmul(DType dtype, const std::byte* a, const std::byte* b, std::byte* c, std::int64_t batch,
            std::int64_t m, std::int64_t k, std::int64_t n, bool trans_a, bool trans_b) {
  constexpr auto kMax = std::numeric_limits<blasint>::max();
  if (m > kMax || k > kMax || n > kMax) throw ValueError("matmul: a matrix dimension exceeds the 32-bit BLAS limit");
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: zeros (BLAS would reject the zero leading dimension)
    std::fill_n(c, static_cast<std::size_t>(batch * m * n) * (dtype == DType::f32 ? 4 : 8), std::byte{0});
    return;
  }
  if (m * k * n <= kSmallProduct && batch > 1 && (dtype == DType::f32 || dtype == DType::f64)) {
    if (dtype == DType::f32) {
      small_products(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), reinterpret_cast<float*>(c),
                     batch, m, k, n, trans_a, trans_b);
    } else {
      small_products(reinterpret_cast<const double*>(a), reinterpret_cast<const double*>(b),
                     reinterpret_cast<double*>(c), batch, m, k, n, trans_a, trans_b);
    }
    return;
  }
  ensure_single_threaded_blas();
  const auto K = static_cast<blasint>(k), N = static_cast<blasint>(n);
  // Row block r0 of op(A): rows r0.. of A, or columns r0.. of the stored (k x m) A^T.
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto lda = static_cast<blasint>(trans_a ? m : k), ldb = static_cast<blasint>(trans_b ? k : n);
  const std::int64_t a_row_step = trans_a ? 1 : k;
  const std::int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  // Products under ~2 M multiply-adds run on the caller: handing them to the pool costs
  // more than it saves (measured on the beam4 workload's 256x32x32 products).
  const std::int64_t grain = batch * m * k * n < (1 << 21) ? batch * row_blocks : 1;
  parallel_for(batch * row_blocks, grain, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t i = t / row_blocks, r0 = (t % row_blocks) * kRowBlock;
      const auto M = static_cast<blasint>(std::min(kRowBlock, m - r0));
      switch (dtype) {
        case DType::f32: {
          auto* A = reinterpret_cast<const float*>(a) + i * m * k + r0 * a_row_step;
          auto* B = reinterpret_cast<const float*>(b) + i * k * n;
          auto* C = reinterpret_cast<float*>(c) + i * m * n + r0 * n;
          if (N == 1) {
            if (m == 1) *C = scipy_cblas_sdot(K, A, 1, B, 1);
            else scipy_cblas_sgemv(CblasRowMajor, ta, trans_a ? K : M, trans_a ? M : K, 1.0f, A, lda, B, 1, 0.0f, C, 1);
            break;
          }
          scipy_cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N);
          break;
        }
        case DType::f64: {
          auto* A = reinterpret_cast<const double*>(a) + i * m * k + r0 * a_row_step;
          auto* B = reinterpret_cast<const double*>(b) + i * k * n;
          auto* C = reinterpret_cast<double*>(c) + i * m * n + r0 * n;
          if (N == 1) {  // matrix-vector products: gemm's packing costs ~10x a dot here
            if (m == 1) *C = scipy_cblas_ddot(K, A, 1, B, 1);
            else scipy_cblas_dgemv(CblasRowMajor, ta, trans_a ? K : M, trans_a ? M : K, 1.0, A, lda, B, 1, 0.0, C, 1);
            break;
          }
          scipy_cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, A, lda, B, ldb, 0.0, C, N);
          break;
        }
        case DType::bool_: case DType::i32: case DType::i64: case DType::c64: case DType::c128: QB_NARROW_INT_CASES:
          throw InternalError("cpu::matmul: needs a float dtype");
      }
    }
  });
}

}  // namespace qb::cpu
