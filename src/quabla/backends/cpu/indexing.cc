// Kernels with traced integer operands: take/scatter (gather and scatter along one axis)
// and argsort/searchsorted. Scatters combine updates in index order on one thread per
// outer row, so repeated indices give the same result on every run and thread count.
#include <algorithm>
#include <array>
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

// How many indices ahead the gather and scatter loops prefetch their random rows.
constexpr std::int64_t kPrefetch = 16;

template <int Mode, class T>
T combine(T a, T b) {
  if constexpr (Mode == kScatterAdd || Mode == kScatterMul) {
    if constexpr (std::is_integral_v<T>) {  // wraps
      using U = std::make_unsigned_t<T>;
      return Mode == kScatterAdd ? static_cast<T>(static_cast<U>(a) + static_cast<U>(b))
                                 : static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return Mode == kScatterAdd ? a + b : a * b;
    }
  } else if constexpr (Mode == kScatterSet) {
    return b;
  } else if constexpr (std::is_floating_point_v<T>) {
    return Mode == kScatterMin ? math::minimum(a, b) : math::maximum(a, b);
  } else {
    return Mode == kScatterMin ? (a < b ? a : b) : (a > b ? a : b);
  }
}

// One thread per outer row, the updates of a row in index order (so repeated indices give
// the same result on every run); the mode and dtypes are template parameters, so the loop
// over a million scalar updates is a load, a compare and a combine each.
template <int Mode, class T, class I>
void scatter_t(const T* x, AxisSplit s, const I* idx, std::int64_t k, const T* upd, T* out) {
  if (out != x) std::memcpy(out, x, static_cast<std::size_t>(s.outer * s.len * s.inner) * sizeof(T));
  const auto len = static_cast<std::make_unsigned_t<I>>(s.len);
  auto rows = [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t o = b; o < e; ++o) {
      T* base = out + o * s.len * s.inner;
      const T* src = upd + o * k * s.inner;
      if (s.inner == 1) {
        for (std::int64_t j = 0; j < k; ++j) {
          if (j + kPrefetch < k) {
            const auto ahead = static_cast<std::make_unsigned_t<I>>(idx[j + kPrefetch]);
            if (ahead < len) __builtin_prefetch(base + ahead, 1);
          }
          const I at = idx[j];
          if (static_cast<std::make_unsigned_t<I>>(at) >= len) continue;  // out of bounds: dropped
          base[at] = combine<Mode>(base[at], src[j]);
        }
        continue;
      }
      for (std::int64_t j = 0; j < k; ++j) {
        const I at = idx[j];
        if (static_cast<std::make_unsigned_t<I>>(at) >= len) continue;
        T* dst = base + static_cast<std::int64_t>(at) * s.inner;
        const T* u = src + j * s.inner;
        for (std::int64_t i = 0; i < s.inner; ++i) dst[i] = combine<Mode>(dst[i], u[i]);
      }
    }
  };
  parallel_for(s.outer, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, k * s.inner)), rows);
}

// Rows of `Row` (a trivially copyable block of one row's bytes) picked by index.
template <class Row, class I>
void take_rows(const Row* in, AxisSplit s, const I* idx, std::int64_t k, bool fill, Row* out) {
  const auto len = static_cast<std::make_unsigned_t<I>>(s.len);
  parallel_for(s.outer * k, 32768, [&](std::int64_t b, std::int64_t e) {
    std::int64_t o = b / k, j = b % k;  // once per chunk, not per element
    for (std::int64_t r = b; r < e; ++r) {
      // Random reads are latency-bound: ask for the row kPrefetch indices ahead now.
      if (j + kPrefetch < k) {
        const auto ahead = static_cast<std::make_unsigned_t<I>>(idx[j + kPrefetch]);
        if (ahead < len) __builtin_prefetch(in + o * s.len + static_cast<std::int64_t>(ahead));
      }
      I at = idx[j];
      if (static_cast<std::make_unsigned_t<I>>(at) >= len) {
        if (fill) {
          std::memset(static_cast<void*>(out + r), 0, sizeof(Row));  // all-zero bytes are 0 in every dtype
          if (++j == k) j = 0, ++o;
          continue;
        }
        at = at < 0 ? I(0) : static_cast<I>(s.len - 1);
      }
      out[r] = in[o * s.len + at];
      if (++j == k) j = 0, ++o;
    }
  });
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
    case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;  // lowered before planning
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
  if (s.len == 0 && !fill && s.outer * n_idx > 0) {
    throw ValueError("take: cannot index an axis of size 0 (there is no element to clamp to)");
  }
  const std::size_t row = static_cast<std::size_t>(s.inner) * elem_size;
  by_index_dtype(index_dtype, "take", [&](auto itag) {
    using I = decltype(itag);
    const I* idx = reinterpret_cast<const I*>(indices);
    auto rows_of = [&](auto rtag) {
      using Row = decltype(rtag);
      take_rows(reinterpret_cast<const Row*>(in), s, idx, n_idx, fill, reinterpret_cast<Row*>(out));
    };
    switch (row) {  // one scalar per row (the common case) moves as one load and store
      case 1: return rows_of(std::uint8_t{});
      case 4: return rows_of(std::uint32_t{});
      case 8: return rows_of(std::uint64_t{});
      case 16: return rows_of(std::array<std::uint64_t, 2>{});
      case 24: return rows_of(std::array<std::uint64_t, 3>{});
      case 32: return rows_of(std::array<std::uint64_t, 4>{});
      default: break;
    }
    const std::int64_t len = s.len;
    parallel_for(s.outer * n_idx, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, s.inner)),
                 [&](std::int64_t b, std::int64_t e) {
                   std::int64_t o = b / n_idx, j = b % n_idx;
                   for (std::int64_t r = b; r < e; ++r, (++j == n_idx ? (j = 0, ++o) : 0)) {
                     std::int64_t at = idx[j];
                     std::byte* dst = out + static_cast<std::size_t>(r) * row;
                     if (at < 0 || at >= len) {
                       if (fill) {
                         std::memset(dst, 0, row);
                         continue;
                       }
                       at = std::clamp<std::int64_t>(at, 0, len - 1);
                     }
                     std::memcpy(dst, in + static_cast<std::size_t>(o * len + at) * row, row);
                   }
                 });
  });
}

void scatter(DType dtype, const std::byte* x, std::span<const std::int64_t> shape, int axis, DType index_dtype,
             const std::byte* indices, std::int64_t n_idx, const std::byte* updates, int mode, std::byte* out) {
  const AxisSplit s = split_at(shape, axis);
  by_dtype(dtype, "scatter", [&](auto tag) {
    using T = decltype(tag);
    by_index_dtype(index_dtype, "scatter", [&](auto itag) {
      using I = decltype(itag);
      auto run = [&](auto mode_tag) {
        scatter_t<decltype(mode_tag)::value>(reinterpret_cast<const T*>(x), s, reinterpret_cast<const I*>(indices),
                                             n_idx, reinterpret_cast<const T*>(updates), reinterpret_cast<T*>(out));
      };
      switch (mode) {
        case kScatterAdd: return run(std::integral_constant<int, kScatterAdd>{});
        case kScatterSet: return run(std::integral_constant<int, kScatterSet>{});
        case kScatterMul: return run(std::integral_constant<int, kScatterMul>{});
        case kScatterMin: return run(std::integral_constant<int, kScatterMin>{});
        case kScatterMax: return run(std::integral_constant<int, kScatterMax>{});
        default: throw InternalError("cpu::scatter: unknown mode");
      }
    });
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
