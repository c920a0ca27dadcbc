// Reductions and cumulative sums with a fixed evaluation order, so results never depend on
// the thread count: each output element is reduced by one thread, in one order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/scalar_math.h"
#include "quabla/backends/cpu/summation.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

struct Layout {
  std::int64_t outer, red, inner;
};

// One contiguous row reduced into kLanes independent accumulators (a loop the compiler
// vectorises; one accumulator is a chain of dependent operations, 36x slower than NumPy's
// max on 1e6 elements), then the lanes and the tail combined in order. The order is fixed by
// the row length alone, never by the thread count.
template <class T, class Acc, class Combine>
Acc reduce_row(const T* x, std::int64_t n, Acc init, Combine combine) {
  constexpr int kLanes = 16;
  Acc lane[kLanes];
  for (int k = 0; k < kLanes; ++k) lane[k] = init;
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) lane[k] = combine(lane[k], x[i + k]);
  Acc acc = init;
  for (int k = 0; k < kLanes; ++k) acc = combine(acc, lane[k]);
  for (; i < n; ++i) acc = combine(acc, x[i]);
  return acc;
}

// The largest (Max) or smallest element of a contiguous row, NaN if any is NaN (as
// math::maximum), in two vectors of running extrema and NaN flags (GCC's vector
// extensions: the compiler does not vectorise a NaN-propagating max reduction by itself;
// the scalar chain was 3x slower than NumPy). The vectors are the target's widest: 64
// bytes with AVX-512, else 32 (GCC lowers a 64-byte select without AVX-512 to scalar code,
// which was 10x slower than NumPy on an AVX2 machine). The order of the comparisons is
// fixed by the row length and the build's target, never by the thread count.
#if defined(__AVX512F__)
constexpr int kExtremumBytes = 64;
#else
constexpr int kExtremumBytes = 32;
#endif
template <class T>
struct ExtremumVec;
template <>
struct ExtremumVec<double> {
  typedef double type __attribute__((vector_size(kExtremumBytes)));
};
template <>
struct ExtremumVec<float> {
  typedef float type __attribute__((vector_size(kExtremumBytes)));
};

template <class T, bool Max>
T extremum_row(const T* x, std::int64_t n) {
  constexpr int W = kExtremumBytes / static_cast<int>(sizeof(T));
  using V = typename ExtremumVec<T>::type;
  const T init = Max ? -INFINITY : INFINITY;
  V m0, m1, f0, f1;
  for (int k = 0; k < W; ++k) {
    m0[k] = m1[k] = init;
    f0[k] = f1[k] = 0;
  }
  const V one = f0 + T(1);
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V a, b;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, x + i + W, sizeof b);
    if constexpr (Max) {
      m0 = a > m0 ? a : m0;
      m1 = b > m1 ? b : m1;
    } else {
      m0 = a < m0 ? a : m0;
      m1 = b < m1 ? b : m1;
    }
    f0 = a != a ? one : f0;
    f1 = b != b ? one : f1;
  }
  auto better = [](T v, T m) { return Max ? v > m : v < m; };
  T acc = init;
  bool nan = false;
  for (int k = 0; k < W; ++k) {
    acc = better(m0[k], acc) ? m0[k] : acc;
    acc = better(m1[k], acc) ? m1[k] : acc;
    nan = nan || f0[k] != 0 || f1[k] != 0;
  }
  for (; i < n; ++i) {
    acc = better(x[i], acc) ? x[i] : acc;
    nan = nan || x[i] != x[i];
  }
  return nan ? std::numeric_limits<T>::quiet_NaN() : acc;
}

// acc[i] = combine(acc[i], x[i]) over one row of `inner` (pointers as parameters: a uint8
// accumulator may alias anything, and pointers reloaded after every store stop vectorising).
template <class T, class Acc, class Combine>
void combine_row(Acc* acc, const T* x, std::int64_t inner, Combine combine) {
  for (std::int64_t i = 0; i < inner; ++i) acc[i] = combine(acc[i], x[i]);
}

// Reduces the middle axis of an [outer, red, inner] array.
template <class T, class Acc, class Combine>
void reduce_oni(const T* in, Layout l, T* out, Acc init, Combine combine) {
  parallel_for(l.outer, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, l.red * l.inner)),
               [&](std::int64_t b, std::int64_t e) {
                 if (l.inner == 1) {
                   for (std::int64_t o = b; o < e; ++o) out[o] = static_cast<T>(reduce_row<T, Acc>(in + o * l.red, l.red, init, combine));
                   return;
                 }
                 std::vector<Acc> acc(static_cast<std::size_t>(l.inner));
                 for (std::int64_t o = b; o < e; ++o) {
                   std::fill(acc.begin(), acc.end(), init);
                   const T* base = in + o * l.red * l.inner;
                   for (std::int64_t r = 0; r < l.red; ++r) combine_row<T, Acc>(acc.data(), base + r * l.inner, l.inner, combine);
                   for (std::int64_t i = 0; i < l.inner; ++i) out[o * l.inner + i] = static_cast<T>(acc[i]);
                 }
               });
}

template <class T>
void reduce_float(Op op, const T* in, Layout l, T* out) {
  switch (op) {
    case Op::ReduceSum:
      if (l.inner == 1) {
        parallel_for(l.outer, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, l.red)),
                     [&](std::int64_t b, std::int64_t e) {
                       for (std::int64_t o = b; o < e; ++o) out[o] = blocked_sum(in + o * l.red, l.red);
                     });
        return;
      }
      return reduce_oni<T, T>(in, l, out, T(0), [](T a, T x) { return a + x; });
    case Op::ReduceProd: return reduce_oni<T, T>(in, l, out, T(1), [](T a, T x) { return a * x; });
    case Op::ReduceMax: case Op::ReduceMin:
      if (l.inner == 1) {
        const bool max = op == Op::ReduceMax;
        parallel_for(l.outer, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, l.red)),
                     [&](std::int64_t b, std::int64_t e) {
                       for (std::int64_t o = b; o < e; ++o)
                         out[o] = max ? extremum_row<T, true>(in + o * l.red, l.red) : extremum_row<T, false>(in + o * l.red, l.red);
                     });
        return;
      }
      if (op == Op::ReduceMax) return reduce_oni<T, T>(in, l, out, -INFINITY, [](T a, T x) { return math::maximum(a, x); });
      return reduce_oni<T, T>(in, l, out, INFINITY, [](T a, T x) { return math::minimum(a, x); });
    default: break;
  }
  throw InternalError("cpu::reduce: unexpected op " + std::string(op_name(op)));
}

template <class T>
void reduce_int(Op op, const T* in, Layout l, T* out) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case Op::ReduceSum:
      return reduce_oni<T, U>(in, l, out, U(0), [](U a, T x) { return static_cast<U>(a + static_cast<U>(x)); });
    case Op::ReduceProd:
      return reduce_oni<T, U>(in, l, out, U(1), [](U a, T x) { return static_cast<U>(a * static_cast<U>(x)); });
    case Op::ReduceMax:
      return reduce_oni<T, T>(in, l, out, std::numeric_limits<T>::min(), [](T a, T x) { return a > x ? a : x; });
    case Op::ReduceMin:
      return reduce_oni<T, T>(in, l, out, std::numeric_limits<T>::max(), [](T a, T x) { return a < x ? a : x; });
    default: break;
  }
  throw InternalError("cpu::reduce: unexpected integer op " + std::string(op_name(op)));
}

void reduce_bool(Op op, const std::uint8_t* in, Layout l, std::uint8_t* out) {
  using B = std::uint8_t;
  if (op == Op::ReduceAny) return reduce_oni<B, B>(in, l, out, B(0), [](B a, B x) { return B(a | (x != 0)); });
  if (op == Op::ReduceAll) return reduce_oni<B, B>(in, l, out, B(1), [](B a, B x) { return B(a & (x != 0)); });
  throw InternalError("cpu::reduce: unexpected bool op " + std::string(op_name(op)));
}

// n copies of the reduction's identity: what a reduction over an empty axis gives.
void fill_identity(Op op, DType dtype, std::byte* out, std::int64_t n) {
  const double v = op == Op::ReduceProd || op == Op::ReduceAll ? 1.0
                   : op == Op::ReduceMax                        ? -INFINITY
                   : op == Op::ReduceMin                        ? INFINITY
                                                                : 0.0;
  switch (dtype) {
    case DType::f32: std::fill_n(reinterpret_cast<float*>(out), n, static_cast<float>(v)); return;
    case DType::f64: std::fill_n(reinterpret_cast<double*>(out), n, v); return;
    case DType::bool_: std::fill_n(reinterpret_cast<std::uint8_t*>(out), n, static_cast<std::uint8_t>(v != 0)); return;
    case DType::i32: case DType::i64: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
  }
  const std::size_t elem = itemsize(dtype);
  for (std::int64_t i = 0; i < n; ++i) store_double(dtype, out + static_cast<std::size_t>(i) * elem, v);  // +-inf saturate
}

// Moves the reduced axes to the end when they are not one contiguous run of axes.
std::vector<std::byte> gather_reduced_last(std::size_t elem, const std::byte* in, std::span<const std::int64_t> shape,
                                           std::span<const std::int64_t> axes, Layout& l) {
  std::vector<std::int64_t> perm;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(shape.size()); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) perm.push_back(i);
  perm.insert(perm.end(), axes.begin(), axes.end());
  const auto strides = row_major_strides(shape);
  Shape out_shape;
  std::vector<std::int64_t> in_strides;
  for (auto p : perm) {
    out_shape.push_back(shape[p]);
    in_strides.push_back(strides[p]);
  }
  std::vector<std::byte> tmp(static_cast<std::size_t>(num_elements(shape)) * elem);
  strided_copy(elem, in, 0, out_shape, in_strides, tmp.data());
  l.red = 1;
  for (auto a : axes) l.red *= shape[a];
  l.outer = num_elements(shape) / l.red;
  l.inner = 1;
  return tmp;
}

}  // namespace

void reduce(Op op, DType dtype, const std::byte* in, std::span<const std::int64_t> shape,
            std::span<const std::int64_t> axes, std::byte* out) {
  Layout l{1, 1, 1};
  std::vector<std::byte> tmp;
  if (num_elements(shape) == 0 && !axes.empty()) {
    // Over an empty axis: the reduction's identity (0, 1, -inf, +inf, false, true).
    std::int64_t n = 1;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(shape.size()); ++i)
      if (!std::binary_search(axes.begin(), axes.end(), i)) n *= shape[i];
    fill_identity(op, dtype, out, n);
    return;
  }
  const bool contiguous = axes.empty() || axes.back() - axes.front() + 1 == static_cast<std::int64_t>(axes.size());
  if (contiguous) {
    const std::int64_t first = axes.empty() ? 0 : axes.front();
    const std::int64_t last = axes.empty() ? -1 : axes.back();
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(shape.size()); ++i) {
      (i < first ? l.outer : i <= last ? l.red : l.inner) *= shape[i];
    }
  } else {
    tmp = gather_reduced_last(itemsize(dtype), in, shape, axes, l);
    in = tmp.data();
  }
  switch (dtype) {
    case DType::f32: return reduce_float(op, reinterpret_cast<const float*>(in), l, reinterpret_cast<float*>(out));
    case DType::f64: return reduce_float(op, reinterpret_cast<const double*>(in), l, reinterpret_cast<double*>(out));
    case DType::bool_:
      return reduce_bool(op, reinterpret_cast<const std::uint8_t*>(in), l, reinterpret_cast<std::uint8_t*>(out));
    case DType::i32:
      return reduce_int(op, reinterpret_cast<const std::int32_t*>(in), l, reinterpret_cast<std::int32_t*>(out));
    case DType::i64:
      return reduce_int(op, reinterpret_cast<const std::int64_t*>(in), l, reinterpret_cast<std::int64_t*>(out));
    case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;  // lowered before planning
  }
  throw InternalError("cpu::reduce: unknown dtype");
}

namespace {
template <class T>
void cumsum_t(const T* in, std::span<const std::int64_t> shape, int axis, bool reverse, T* out) {
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const std::int64_t len = shape[axis];
  if constexpr (std::is_same_v<T, float>) {
    // float32 running sums accumulate in double (one rounding per output, not one per
    // step: 1e5 additions of 0.1f end at 10000.0, where a float32 accumulator drifts to 9998.6)
    std::vector<double> acc(static_cast<std::size_t>(inner));
    for (std::int64_t o = 0; o < outer; ++o) {
      const float* x = in + o * len * inner;
      float* y = out + o * len * inner;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int64_t k = 0; k < len; ++k) {
        const std::int64_t r = reverse ? len - 1 - k : k;
        for (std::int64_t i = 0; i < inner; ++i) {
          acc[static_cast<std::size_t>(i)] += static_cast<double>(x[r * inner + i]);
          y[r * inner + i] = static_cast<float>(acc[static_cast<std::size_t>(i)]);
        }
      }
    }
    return;
  }
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* x = in + o * len * inner;
    T* y = out + o * len * inner;
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t r = reverse ? len - 1 - k : k;
      const std::int64_t prev = reverse ? r + 1 : r - 1;
      for (std::int64_t i = 0; i < inner; ++i) {
        if constexpr (std::is_integral_v<T>) {  // wraps on overflow
          using U = std::make_unsigned_t<T>;
          y[r * inner + i] = static_cast<T>((k ? static_cast<U>(y[prev * inner + i]) : U(0)) + static_cast<U>(x[r * inner + i]));
        } else {
          y[r * inner + i] = (k ? y[prev * inner + i] : T(0)) + x[r * inner + i];
        }
      }
    }
  }
}
}  // namespace

void cumsum(DType dtype, const std::byte* in, std::span<const std::int64_t> shape, int axis, bool reverse,
            std::byte* out) {
  switch (dtype) {
    case DType::f32:
      return cumsum_t(reinterpret_cast<const float*>(in), shape, axis, reverse, reinterpret_cast<float*>(out));
    case DType::f64:
      return cumsum_t(reinterpret_cast<const double*>(in), shape, axis, reverse, reinterpret_cast<double*>(out));
    case DType::i32:
      return cumsum_t(reinterpret_cast<const std::int32_t*>(in), shape, axis, reverse, reinterpret_cast<std::int32_t*>(out));
    case DType::i64:
      return cumsum_t(reinterpret_cast<const std::int64_t*>(in), shape, axis, reverse, reinterpret_cast<std::int64_t*>(out));
    case DType::bool_: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
  }
  throw InternalError("cpu::cumsum: needs a numeric dtype");
}

}  // namespace qb::cpu
