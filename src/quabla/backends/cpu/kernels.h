// CPU kernels, one file per family. Each works on contiguous row-major buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "quabla/ir/graph.h"

namespace qb::cpu {

// An elementwise operand: `scalar` operands hold one element that is read for every index
// (a broadcast scalar that the plan never materialises).
struct Operand {
  const std::byte* data;
  bool scalar;
};

// out[i] = op(in0[i], in1[i], ...) for i in [0, n). `in_dtype` is the dtype of the float
// operands (for Select: of the selected values; for Convert: the source dtype).
void elementwise(Op op, DType in_dtype, DType out_dtype, std::span<const Operand> in, std::byte* out,
                 std::int64_t n);

// Reduces `axes` (sorted, distinct) of a row-major array with a fixed summation order.
void reduce(Op op, DType dtype, const std::byte* in, std::span<const std::int64_t> shape,
            std::span<const std::int64_t> axes, std::byte* out);

void cumsum(DType dtype, const std::byte* in, std::span<const std::int64_t> shape, int axis, bool reverse,
            std::byte* out);

// out[idx] = in[offset + sum_k idx_k * in_strides[k]] over out_shape (strides in elements,
// 0 to broadcast, negative to reverse). Covers broadcast, transpose, slice and reverse.
void strided_copy(std::size_t elem_size, const std::byte* in, std::int64_t offset,
                  std::span<const std::int64_t> out_shape, std::span<const std::int64_t> in_strides,
                  std::byte* out);

// out = pad value everywhere, then out[offset + sum_k idx_k * out_strides[k]] = in[idx] over
// in_shape (the store-side twin of strided_copy).
// out[r k + j] = ins[j][r] for r < rows, j < k = ins.size() (elements of elem_size bytes).
void interleave(std::size_t elem_size, std::span<const std::byte* const> ins, std::int64_t rows, std::byte* out);
void strided_store(std::size_t elem_size, const std::byte* in, std::span<const std::int64_t> in_shape,
                   std::int64_t offset, std::span<const std::int64_t> out_strides, std::byte* out);

// Static-index gather/scatter-add along `axis` of an array of shape `shape`.
void gather(std::size_t elem_size, const std::byte* in, std::span<const std::int64_t> shape, int axis,
            std::span<const std::int64_t> indices, std::byte* out);
void scatter_add(DType dtype, const std::byte* x, const std::byte* updates, std::span<const std::int64_t> shape,
                 int axis, std::span<const std::int64_t> indices, std::byte* out);

// Traced-index gather and scatter along `axis` (ops.def: take, scatter). `index_dtype` is
// i32 or i64; `n_idx` the number of indices; mode as the ops' attrs.
void take(std::size_t elem_size, const std::byte* in, std::span<const std::int64_t> shape, int axis,
          DType index_dtype, const std::byte* indices, std::int64_t n_idx, bool fill, std::byte* out);
void scatter(DType dtype, const std::byte* x, std::span<const std::int64_t> shape, int axis, DType index_dtype,
             const std::byte* indices, std::int64_t n_idx, const std::byte* updates, int mode, std::byte* out);

// Sorting along the last axis of [rows, n] (ops.def: argsort, searchsorted).
void argsort(DType dtype, const std::byte* in, std::int64_t rows, std::int64_t n, bool descending,
             DType out_dtype, std::byte* out);
void searchsorted(DType dtype, const std::byte* sorted, std::int64_t rows, std::int64_t n, const std::byte* values,
                  std::int64_t m, bool right, DType out_dtype, std::byte* out);

// Batched row-major C[b] = A[b] (m x k) @ B[b] (k x n) through BLAS. With trans_a, a holds
// each A[b] transposed (k x m); with trans_b, b holds each B[b] as n x k.
void matmul(DType dtype, const std::byte* a, const std::byte* b, std::byte* c, std::int64_t batch,
            std::int64_t m, std::int64_t k, std::int64_t n, bool trans_a = false, bool trans_b = false);

// Dense linear algebra over a batch of row-major matrices (ops.def: cholesky,
// triangular_solve, solve, slogdet; linalg.cc). a: [batch, n, n], b and out: [batch, n, k];
// slogdet's out: [batch, 2] (sign, log|det|).
// symmetrize: factor (A + A^T) / 2 (computed as add then multiply by 0.5, as the elementwise
// kernels would), read from `in` as it is (cholesky_fold.h folds that symmetrization here).
void cholesky(DType dtype, const std::byte* in, std::int64_t batch, std::int64_t n, std::byte* out,
              bool symmetrize = false);
void triangular_solve(DType dtype, const std::byte* a, const std::byte* b, std::int64_t batch, std::int64_t n,
                      std::int64_t k, int mode, std::byte* out);
void solve(DType dtype, const std::byte* a, const std::byte* b, std::int64_t batch, std::int64_t n, std::int64_t k,
           std::byte* out);
void slogdet(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t n, std::byte* out);
// out: [batch, n + 1, n], the eigenvalues then the eigenvectors as columns.
void eigh(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t n, std::byte* out);
// out: [batch, n + 2, n]: permutation, pivots, then L and U (ops.def: lu).
void lu(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t n, std::byte* out);
// a: [batch, m, n]; out: [batch, m + 1 + n, w] (ops.def: svd); values_only: only the
// singular-value row is computed, the others are zero (svd_values_fold.h).
void svd(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t m, std::int64_t n, bool full, std::byte* out,
         bool values_only = false);
// a: [batch, m, n]; out: [batch, m + rq, w] (ops.def: qr).
void qr(DType dtype, const std::byte* a, std::int64_t batch, std::int64_t m, std::int64_t n, bool complete, std::byte* out);

// The factorizations of complex matrices in planar form (the lowered forms of ops.def's
// cholesky, slogdet, eigh, svd, qr and lu, mode bit 8; complex_linalg.cc): in [2, batch, m,
// n], out [2, batch, ...] with the real kernels' result shapes; mode's bit 0 is svd's full
// and qr's complete, kSvdValuesOnly svd's singular values alone. part: f32 or f64.
void complex_factorization(Op op, DType part, const std::byte* in, std::int64_t batch, std::int64_t m, std::int64_t n,
                           std::int64_t mode, std::byte* out);
// The same for complex systems (ops.def's solve and triangular_solve with mode bit 8): a
// [2, batch, n, n], b and out [2, batch, n, k]; mode: triangular_solve's bits.
void complex_solve(Op op, DType part, const std::byte* a, const std::byte* b, std::int64_t batch, std::int64_t n,
                   std::int64_t k, std::int64_t mode, std::byte* out);

// ops.def's threefry: for each of `keys` keys (k0[k], k1[k]), its blocks 0 .. n-1 as out[k]
// = [first words (n), second words (n)] (threefry_blocks.cc).
void threefry_blocks(const std::int32_t* k0, const std::int32_t* k1, std::int64_t keys, std::int64_t n,
                     std::int32_t* out);

// The eigenvalues (and unless values_only the right eigenvectors) of `batch` general n x n
// matrices (the lowered form of ops.def's eig, eig.cc): a real [batch, n, n], or with
// complex_in planar [2, batch, n, n]; out planar [2, batch, rows, n], rows = 1 or n + 1
// (the eigenvalues, then the eigenvectors as columns). part: f32 or f64.
void eig(DType part, const std::byte* a, std::int64_t batch, std::int64_t n, bool complex_in, bool values_only,
         std::byte* out);

// The discrete Fourier transform of `batch` rows of n complex numbers in planar form (the
// batch x n real parts of `part`, f32 or f64, then the imaginary parts: the lowered form of
// ops.def's fft, fft.cc): unscaled with exponent -2 pi i jk/n, or with `inverse` +2 pi i
// jk/n and scaled by 1/n. Computed in double. With in_inner (out_inner) > 1 the rows of a
// plane are the columns of blocks of n x inner values (a transform along a non-last axis,
// read or written without a transpose): row r = o inner + c holds o n inner + c + k inner.
void fft(DType part, const std::byte* in, std::int64_t batch, std::int64_t n, bool inverse, std::byte* out,
         std::int64_t in_inner = 1, std::int64_t out_inner = 1);
// The same for real rows (`batch` rows of n reals in, planar complex rows out: all n
// frequencies, or with `half` the first n / 2 + 1; out_inner lays out those rows).
void fft_real(DType part, const std::byte* in, std::int64_t batch, std::int64_t n, bool inverse, bool half,
              std::byte* out, std::int64_t in_inner = 1, std::int64_t out_inner = 1);

}  // namespace qb::cpu
