// The user-level functions of API.md §1-§2 as graph builders: NumPy broadcasting, the
// promotion rules (weak scalars, explicit float32/float64 mixing), argument checks with
// messages that name the function, and compositions of primitives. Eager calls run these
// as cached one-call programs (eager.h); tracing records the same functions, so jit and
// eager cannot disagree.
#pragma once
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "quabla/ir/builder.h"

namespace qb::api {

using V = ValueId;
using Axes = std::optional<std::vector<std::int64_t>>;  // nullopt: every axis

// ---- promotion and broadcasting
// The common float dtype of a binary arithmetic call (API.md §1), or a TypeError/ValueError.
DType arithmetic_dtype(std::string_view fname, const ValueType& a, const ValueType& b);
V astype(Builder& b, V x, DType to);
// x itself when it is a float; integers and bools converted by inexact_dtype (weakness kept).
V to_inexact(Builder& b, V x);
// Raises ValueError when x is a weak Python-int constant that `to` (int32) cannot hold.
void check_weak_int_fits(Builder& b, std::string_view fname, V x, DType to);
V broadcast_to(Builder& b, V x, std::span<const std::int64_t> shape, std::string_view fname = "broadcast_to");
// Promotes (arithmetic rules) and broadcasts operands to one dtype and shape.
std::vector<V> promote_broadcast(Builder& b, std::string_view fname, std::span<const V> xs, bool allow_bool);

// ---- elementwise
V unary(Builder& b, std::string_view fname, Op op, V x);          // float -> float
V predicate(Builder& b, std::string_view fname, Op op, V x);      // isnan/isinf/isfinite
V binary(Builder& b, std::string_view fname, Op op, V x, V y);    // float x float -> float
V compare(Builder& b, std::string_view fname, Op op, V x, V y);   // -> bool
V logical(Builder& b, std::string_view fname, Op op, V x, V y, bool strict_bool);
V logical_not(Builder& b, V x, bool strict_bool);
V where(Builder& b, V c, V x, V y);
V integer_power(Builder& b, V x, std::int64_t n);
V int_power(Builder& b, V x, V y);  // integer ** integer (by squaring; wraps)  // exact repeated multiplication, n >= 0
V power(Builder& b, V x, V y);
V square(Builder& b, V x);
V reciprocal(Builder& b, V x);
V relu(Builder& b, V x);
V silu(Builder& b, V x);
V gelu(Builder& b, V x, bool approximate);
V clip(Builder& b, V x, std::optional<V> lo, std::optional<V> hi);
V mod(Builder& b, V x, V y);  // Python/NumPy remainder: the sign of the divisor
V floor_divide(Builder& b, V x, V y);  // Python's //: floor(x / y), exact for integers
V bitwise(Builder& b, std::string_view fname, Op op, V x, V y);  // & | ^ << >> on integers/bools
V bitwise_not(Builder& b, V x);  // ~ on integers (bitwise) and bools (logical)
V nan_to_num(Builder& b, V x, double nan, std::optional<double> posinf, std::optional<double> neginf);
V scalar_constant(Builder& b, double value, DType dtype);

// ---- complex numbers (complex.cc)
V real_part(Builder& b, V x);   // x itself when real
V imag_part(Builder& b, V x);   // zeros when real
V conjugate(Builder& b, V x);   // x itself when real
V make_complex(Builder& b, V re, V im);  // re + i im (lax.complex), promoted and broadcast
V fft_last(Builder& b, V x, bool inverse);  // along the last axis; real input becomes complex

// ---- reductions
V reduce(Builder& b, std::string_view fname, Op op, V x, const Axes& axes, bool keepdims);
V mean(Builder& b, V x, const Axes& axes, bool keepdims);
V var(Builder& b, V x, const Axes& axes, double ddof, bool keepdims);
V std_(Builder& b, V x, const Axes& axes, double ddof, bool keepdims);
V logsumexp(Builder& b, V x, const Axes& axes, bool keepdims);
V softmax(Builder& b, V x, std::int64_t axis);
V log_softmax(Builder& b, V x, std::int64_t axis);
V norm(Builder& b, V x, const Axes& axes, bool keepdims);
V cumsum(Builder& b, V x, std::optional<std::int64_t> axis, bool reverse);

// ---- shapes
V reshape(Builder& b, V x, std::span<const std::int64_t> shape);
V transpose(Builder& b, V x, const Axes& perm);
V squeeze(Builder& b, V x, const Axes& axes);
V expand_dims(Builder& b, V x, std::span<const std::int64_t> axes);
V concat(Builder& b, std::span<const V> xs, std::int64_t axis, std::string_view fname = "concat");
V stack(Builder& b, std::span<const V> xs, std::int64_t axis);
std::vector<V> split(Builder& b, V x, std::span<const std::int64_t> indices, std::int64_t sections, std::int64_t axis);
V tri_mask(Builder& b, V x, std::int64_t k, bool lower);  // tril (lower) / triu
// x with low[i] / high[i] copies of the scalar `value` before / after it on axis i (NumPy's
// pad in constant mode, as one op).
// Pads with `value`: low and high elements before and after each axis and `interior` (when
// given, one per axis) between neighbouring elements (lax.pad's interior padding).
V pad_constant(Builder& b, V x, V value, std::span<const std::int64_t> low, std::span<const std::int64_t> high,
               std::span<const std::int64_t> interior = {});
V flip(Builder& b, V x, const Axes& axes);

// ---- static integer indices (indices may be negative; shape is the index array's shape)
V gather(Builder& b, V x, std::span<const std::int64_t> indices, std::span<const std::int64_t> index_shape,
         std::int64_t axis);
V scatter_add(Builder& b, V x, std::span<const std::int64_t> indices, std::span<const std::int64_t> index_shape,
              V updates, std::int64_t axis);

// ---- traced integer indices (traced_indexing.cc)
V take_indices(Builder& b, V x, V idx, std::int64_t axis, bool fill);
V scatter_indices(Builder& b, V x, V idx, V updates, std::int64_t axis, std::int64_t mode, bool unique);
V argsort_last(Builder& b, V x, bool descending);
V searchsorted_last(Builder& b, V sorted, V values, bool right);
// The one dtype of several operands by the arithmetic rules (bool kept when all are bool
// and allow_bool), and the operands converted to it (shapes untouched).
DType common_dtype(Builder& b, std::string_view fname, std::span<const V> xs, bool allow_bool);
std::vector<V> promote_broadcast_dtype_only(Builder& b, std::string_view fname, std::span<const V> xs);

// ---- products
V matmul(Builder& b, V x, V y);
V dot(Builder& b, V x, V y);

// ---- dense linear algebra (linalg.cc): float stacks of square matrices [..., n, n] (solves
// and eig also complex); a right-hand side is [..., n, k], or [n] (a vector, NumPy 2's
// rule); batch axes broadcast.
V linalg_cholesky(Builder& b, V a);
V linalg_triangular_solve(Builder& b, V a, V rhs, bool lower, bool transpose, bool unit_diagonal);
V linalg_solve(Builder& b, V a, V rhs);
V linalg_slogdet(Builder& b, V a);  // [..., 2]: sign, log|det|
V linalg_eigh(Builder& b, V a);     // [..., n + 1, n]: eigenvalues, then eigenvectors as columns
// The Threefry-2x32 blocks of each key (k0, k1) (int32 words of one shape K) over a sample
// shape: int32 K + [2] + shape, the first words then the second (ops.def: threefry).
V random_threefry(Builder& b, V k0, V k1, const Shape& shape);
// Complex [..., n + 1, n] (eigenvalues, then right eigenvectors as columns; ops.def: eig), or
// with values_only complex [..., n].
V linalg_eig(Builder& b, V a, bool values_only);
V linalg_svd(Builder& b, V a, bool full_matrices);  // [..., m + 1 + n, w]: U, s, V (ops.def: svd)
V linalg_qr(Builder& b, V a, bool complete);        // [..., m + rq, w]: Q, R (ops.def: qr)
V linalg_lu(Builder& b, V a);                       // [..., n + 2, n]: perm, pivots, L\U (ops.def: lu)

// ---- indexing: one entry per index item after the binding has resolved it
struct IndexItem {
  enum Kind : std::uint8_t { Int, Slice, NewAxis, Ellipsis } kind;
  std::int64_t start = 0, stop = 0, step = 1;  // Int: start is the index (may be negative)
  bool has_start = false, has_stop = false;
};
V getitem(Builder& b, V x, std::span<const IndexItem> items);

}  // namespace qb::api
