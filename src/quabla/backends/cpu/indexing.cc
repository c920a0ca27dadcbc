// Kernels with traced integer operands: take/scatter (gather and scatter along one axis)
// and argsort/searchsorted. Scatters combine updates in index order on one thread per
// outer row, so repeated indices give the same result on every run and thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "quabla/backends/cpu/axis_split.h"
#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/scalar_math.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

// Reads index j of an i32 or i64 index buffer.
struct IndexReader {
  const std::byte* data;
  bool wide;
  std::int64_t operator[](std::int64_t j) const {
    if (wide) return reinterpret_cast<const std::int64_t*>(data)[j];
    return reinterpret_cast<const std::int32_t*>(data)[j];
  }
};

IndexReader reader(DType index_dtype, const std::byte* indices) {
  if (!is_int(index_dtype)) throw InternalError("cpu::take/scatter: indices must be integers");
  return {indices, index_dtype == DType::i64};
}

template <class T>
T combine(int mode, T a, T b) {
  switch (mode) {
    case 0:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      } else {
        return a + b;
      }
    case 1: return b;
    case 2:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      } else {
        return a * b;
      }
    case 3:
      if constexpr (std::is_floating_point_v<T>) return math::minimum(a, b);
      else return a < b ? a : b;
    default:
      if constexpr (std::is_floating_point_v<T>) return math::maximum(a, b);
      else return a > b ? a : b;
  }
}

template <class T>
void scatter_t(const T* x, AxisSplit s, IndexReader idx, std::int64_t k, const T* upd, int mode, T* out) {
  if (out != x) std::memcpy(out, x, static_cast<std::size_t>(s.outer * s.len * s.inner) * sizeof(T));
  auto rows = [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t o = b; o < e; ++o)
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t at = idx[j];
        if (at < 0 || at >= s.len) continue;  // dropped, as JAX's default scatter mode
        T* dst = out + (o * s.len + at) * s.inner;
        const T* src = upd + (o * k + j) * s.inner;
        for (std::int64_t i = 0; i < s.inner; ++i) dst[i] = combine(mode, dst[i], src[i]);
      }
  };
  parallel_for(s.outer, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, k * s.inner)), rows);
}

// Ascending order with NaN last (NumPy's and JAX's sort order); the descending order is its
// mirror image (NaN first). Ties are left to the stable sort.
template <class T>
bool less_nan_last(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

template <class T, class I>
void argsort_t(const T* x, std::int64_t rows, std::int64_t n, bool descending, I* out) {
  parallel_for(rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, n)), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const T* row = x + r * n;
      I* o = out + r * n;
      std::iota(o, o + n, I(0));
      if (descending) {
        std::stable_sort(o, o + n, [row](I i, I j) { return less_nan_last(row[j], row[i]); });
      } else {
        std::stable_sort(o, o + n, [row](I i, I j) { return less_nan_last(row[i], row[j]); });
      }
    }
  });
}

template <class T, class I>
void searchsorted_t(const T* a, std::int64_t rows, std::int64_t n, const T* v, std::int64_t m, bool right, I* out) {
  parallel_for(rows, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, m)), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const T* row = a + r * n;
      for (std::int64_t j = 0; j < m; ++j) {
        const T val = v[r * m + j];
        const T* at = right ? std::upper_bound(row, row + n, val, less_nan_last<T>)
                            : std::lower_bound(row, row + n, val, less_nan_last<T>);
        out[r * m + j] = static_cast<I>(at - row);
      }
    }
  });
}

template <class F>
void by_dtype(DType dtype, const char* what, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::bool_: return f(std::uint8_t{});
  }
  throw InternalError(std::string("cpu::") + what + ": unknown dtype");
}

template <class F>
void by_index_dtype(DType dtype, const char* what, F&& f) {
  if (dtype == DType::i32) return f(std::int32_t{});
  if (dtype == DType::i64) return f(std::int64_t{});
  throw InternalError(std::string("cpu::") + what + ": the result dtype must be an integer");
}

}  // namespace

void take(std::size_t elem_size, const std::byte* in, std::span<const std::int64_t> shape, int axis,
          DType index_dtype, const std::byte* indices, std::int64_t n_idx, bool fill, std::byte* out) {
  const AxisSplit s = split_at(shape, axis);
  const IndexReader idx = reader(index_dtype, indices);
  const auto row = static_cast<std::size_t>(s.inner) * elem_size;
  if (s.len == 0 && !fill && s.outer * n_idx > 0) {
    throw ValueError("take: cannot index an axis of size 0 (there is no element to clamp to)");
  }
  parallel_for(s.outer * n_idx, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, s.inner)),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t r = b; r < e; ++r) {
                   const std::int64_t o = r / n_idx, j = r % n_idx;
                   std::int64_t at = idx[j];
                   std::byte* dst = out + static_cast<std::size_t>(r) * row;
                   if (at < 0 || at >= s.len) {
                     if (fill) {
                       std::memset(dst, 0, row);  // all-zero bytes are 0 in every dtype
                       continue;
                     }
                     at = std::clamp<std::int64_t>(at, 0, s.len - 1);
                   }
                   std::memcpy(dst, in + static_cast<std::size_t>(o * s.len + at) * row, row);
                 }
               });
}

void scatter(DType dtype, const std::byte* x, std::span<const std::int64_t> shape, int axis, DType index_dtype,
             const std::byte* indices, std::int64_t n_idx, const std::byte* updates, int mode, std::byte* out) {
  const AxisSplit s = split_at(shape, axis);
  const IndexReader idx = reader(index_dtype, indices);
  by_dtype(dtype, "scatter", [&](auto tag) {
    using T = decltype(tag);
    scatter_t(reinterpret_cast<const T*>(x), s, idx, n_idx, reinterpret_cast<const T*>(updates), mode,
              reinterpret_cast<T*>(out));
  });
}

void argsort(DType dtype, const std::byte* in, std::int64_t rows, std::int64_t n, bool descending,
             DType out_dtype, std::byte* out) {
  by_dtype(dtype, "argsort", [&](auto tag) {
    using T = decltype(tag);
    by_index_dtype(out_dtype, "argsort", [&](auto itag) {
      using I = decltype(itag);
      argsort_t(reinterpret_cast<const T*>(in), rows, n, descending, reinterpret_cast<I*>(out));
    });
  });
}

void searchsorted(DType dtype, const std::byte* sorted, std::int64_t rows, std::int64_t n, const std::byte* values,
                  std::int64_t m, bool right, DType out_dtype, std::byte* out) {
  by_dtype(dtype, "searchsorted", [&](auto tag) {
    using T = decltype(tag);
    by_index_dtype(out_dtype, "searchsorted", [&](auto itag) {
      using I = decltype(itag);
      searchsorted_t(reinterpret_cast<const T*>(sorted), rows, n, reinterpret_cast<const T*>(values), m, right,
                     reinterpret_cast<I*>(out));
    });
  });
}

}  // namespace qb::cpu
