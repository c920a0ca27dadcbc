// Data movement: one strided copy covers broadcast (stride 0), transpose (permuted
// strides), slice (offset and scaled strides) and reverse (negative strides).
#include <cstdint>
#include <cstring>
#include <vector>

#include "quabla/backends/cpu/axis_split.h"
#include "quabla/backends/cpu/kernels.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

template <class T>
void copy_rows(const T* in, std::int64_t offset, std::span<const std::int64_t> shape_in,
               std::span<const std::int64_t> strides_in, T* out) {
  if (shape_in.empty()) {
    out[0] = in[offset];
    return;
  }
  // Adjacent output axes that step through the input as one axis would are merged, so a
  // transpose of [2, m, n] to [m, n, 2] is the two-axis copy below, not m n rows of two.
  std::vector<std::int64_t> shape_v{shape_in[0]}, strides_v{strides_in[0]};
  for (std::size_t a = 1; a < shape_in.size(); ++a) {
    if (strides_v.back() == strides_in[a] * shape_in[a]) {
      shape_v.back() *= shape_in[a];
      strides_v.back() = strides_in[a];
    } else {
      shape_v.push_back(shape_in[a]);
      strides_v.push_back(strides_in[a]);
    }
  }
  const std::span<const std::int64_t> shape(shape_v), strides(strides_v);
  const std::size_t rank = shape.size();
  if (rank == 2 && shape[1] <= 4 && shape[0] >= 64) {
    // Many short rows (interleaving the planes of complex values): two columns (a complex
    // value's parts) in one pass; more column by column, each a strided write of a
    // contiguous (or evenly strided) read, instead of a loop per row; blocks of rows on the
    // pool's threads.
    const std::int64_t rows = shape[0], cols = shape[1], s0 = strides[0], s1 = strides[1];
    parallel_for(rows, 1 << 15, [&](std::int64_t r0, std::int64_t r1) {
      if (cols == 2) {
        const T* a = in + offset;
        const T* b = in + offset + s1;
        for (std::int64_t r = r0; r < r1; ++r) {
          out[2 * r] = a[r * s0];
          out[2 * r + 1] = b[r * s0];
        }
        return;
      }
      for (std::int64_t c = 0; c < cols; ++c) {
        const T* src = in + offset + c * s1;
        T* dst = out + c;
        for (std::int64_t r = r0; r < r1; ++r) dst[r * cols] = src[r * s0];
      }
    });
    return;
  }
  if (rank == 2 && shape[0] <= 4 && shape[1] >= 64 && strides[1] != 1) {
    // A few long strided rows (splitting interleaved complex values into planes): two rows
    // in one pass, more one after another; each row cut into blocks on the pool's threads.
    const std::int64_t rows = shape[0], inner = shape[1], s0 = strides[0], s1 = strides[1];
    parallel_for(inner, 1 << 15, [&](std::int64_t i0, std::int64_t i1) {
      if (rows == 2) {
        const T* a = in + offset;
        const T* b = in + offset + s0;
        for (std::int64_t i = i0; i < i1; ++i) {
          out[i] = a[i * s1];
          out[inner + i] = b[i * s1];
        }
        return;
      }
      for (std::int64_t r = 0; r < rows; ++r) {
        const T* src = in + offset + r * s0;
        T* dst = out + r * inner;
        for (std::int64_t i = i0; i < i1; ++i) dst[i] = src[i * s1];
      }
    });
    return;
  }
  const std::int64_t inner = shape[rank - 1];
  const std::int64_t inner_stride = strides[rank - 1];
  if (num_elements(shape) == 0) return;
  const std::int64_t rows = num_elements(shape) / inner;
  std::vector<std::int64_t> idx(rank - 1, 0);
  std::int64_t src = offset;
  for (std::int64_t row = 0; row < rows; ++row) {
    T* dst = out + row * inner;
    if (inner_stride == 1) {
      std::memcpy(dst, in + src, static_cast<std::size_t>(inner) * sizeof(T));
    } else if (inner_stride == 0) {
      const T v = in[src];
      for (std::int64_t i = 0; i < inner; ++i) dst[i] = v;
    } else {
      for (std::int64_t i = 0; i < inner; ++i) dst[i] = in[src + i * inner_stride];
    }
    // Advance the multi-index over the outer axes (odometer order).
    for (int a = static_cast<int>(rank) - 2; a >= 0; --a) {
      src += strides[a];
      if (++idx[a] < shape[a]) break;
      src -= strides[a] * shape[a];
      idx[a] = 0;
    }
  }
}

}  // namespace

namespace {
template <class T>
void interleave_as(std::span<const std::byte* const> ins, std::int64_t rows, std::byte* out) {
  const std::size_t k = ins.size();
  T* o = reinterpret_cast<T*>(out);
  parallel_for(rows, 1 << 15, [&](std::int64_t r0, std::int64_t r1) {
    if (k == 2) {
      const T* a = reinterpret_cast<const T*>(ins[0]);
      const T* b = reinterpret_cast<const T*>(ins[1]);
      for (std::int64_t r = r0; r < r1; ++r) {
        o[2 * r] = a[r];
        o[2 * r + 1] = b[r];
      }
      return;
    }
    for (std::size_t j = 0; j < k; ++j) {
      const T* a = reinterpret_cast<const T*>(ins[j]);
      for (std::int64_t r = r0; r < r1; ++r) o[static_cast<std::size_t>(r) * k + j] = a[r];
    }
  });
}
}  // namespace

void interleave(std::size_t elem, std::span<const std::byte* const> ins, std::int64_t rows, std::byte* out) {
  switch (elem) {
    case 1: return interleave_as<std::uint8_t>(ins, rows, out);
    case 2: return interleave_as<std::uint16_t>(ins, rows, out);
    case 4: return interleave_as<std::uint32_t>(ins, rows, out);
    case 8: return interleave_as<std::uint64_t>(ins, rows, out);
    default:
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < ins.size(); ++j)
          std::memcpy(out + (static_cast<std::size_t>(r) * ins.size() + j) * elem, ins[j] + static_cast<std::size_t>(r) * elem, elem);
  }
}

void strided_store(std::size_t elem, const std::byte* in, std::span<const std::int64_t> in_shape,
                   std::int64_t offset, std::span<const std::int64_t> out_strides, std::byte* out) {
  const std::size_t rank = in_shape.size();
  const std::int64_t n = num_elements(in_shape);
  std::vector<std::int64_t> idx(rank, 0);
  std::int64_t dst = offset;
  const auto e = static_cast<std::int64_t>(elem);
  if (rank > 0 && n > 0 && out_strides[rank - 1] == 1) {
    // Contiguous rows (pad's case): one copy per row, the odometer over the outer axes.
    const std::int64_t row = in_shape[rank - 1];
    for (std::int64_t k = 0; k < n; k += row) {
      std::memcpy(out + dst * e, in + k * e, static_cast<std::size_t>(row * e));
      for (std::size_t a = rank - 1; a-- > 0;) {
        dst += out_strides[a];
        if (++idx[a] < in_shape[a]) break;
        dst -= out_strides[a] * in_shape[a];
        idx[a] = 0;
      }
    }
    return;
  }
  for (std::int64_t k = 0; k < n; ++k) {
    std::memcpy(out + dst * e, in + k * e, elem);
    for (std::size_t a = rank; a-- > 0;) {
      dst += out_strides[a];
      if (++idx[a] < in_shape[a]) break;
      dst -= out_strides[a] * in_shape[a];
      idx[a] = 0;
    }
  }
}

void strided_copy(std::size_t elem_size, const std::byte* in, std::int64_t offset,
                  std::span<const std::int64_t> out_shape, std::span<const std::int64_t> in_strides,
                  std::byte* out) {
  switch (elem_size) {
    case 1: return copy_rows(reinterpret_cast<const std::uint8_t*>(in), offset, out_shape, in_strides, reinterpret_cast<std::uint8_t*>(out));
    case 4: return copy_rows(reinterpret_cast<const std::uint32_t*>(in), offset, out_shape, in_strides, reinterpret_cast<std::uint32_t*>(out));
    case 8: return copy_rows(reinterpret_cast<const std::uint64_t*>(in), offset, out_shape, in_strides, reinterpret_cast<std::uint64_t*>(out));
    default: break;
  }
}

}  // namespace qb::cpu

namespace qb::cpu {

namespace {

template <class T>
void scatter_add_t(const T* x, const T* upd, AxisSplit s, std::span<const std::int64_t> idx, T* out) {
  std::memcpy(out, x, static_cast<std::size_t>(s.outer * s.len * s.inner) * sizeof(T));
  const auto k = static_cast<std::int64_t>(idx.size());
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t j = 0; j < k; ++j) {
      T* dst = out + (o * s.len + idx[j]) * s.inner;
      const T* src = upd + (o * k + j) * s.inner;
      for (std::int64_t i = 0; i < s.inner; ++i) dst[i] += src[i];  // repeated indices accumulate in order
    }
}
}  // namespace

void gather(std::size_t elem_size, const std::byte* in, std::span<const std::int64_t> shape, int axis,
            std::span<const std::int64_t> indices, std::byte* out) {
  const AxisSplit s = split_at(shape, axis);
  const std::size_t row = static_cast<std::size_t>(s.inner) * elem_size;
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::size_t j = 0; j < indices.size(); ++j)
      std::memcpy(out + (o * static_cast<std::int64_t>(indices.size()) + static_cast<std::int64_t>(j)) * static_cast<std::int64_t>(row),
                  in + (o * s.len + indices[j]) * static_cast<std::int64_t>(row), row);
}

void scatter_add(DType dtype, const std::byte* x, const std::byte* updates, std::span<const std::int64_t> shape,
                 int axis, std::span<const std::int64_t> indices, std::byte* out) {
  const AxisSplit s = split_at(shape, axis);
  switch (dtype) {
    case DType::f32:
      return scatter_add_t(reinterpret_cast<const float*>(x), reinterpret_cast<const float*>(updates), s, indices,
                           reinterpret_cast<float*>(out));
    case DType::f64:
      return scatter_add_t(reinterpret_cast<const double*>(x), reinterpret_cast<const double*>(updates), s, indices,
                           reinterpret_cast<double*>(out));
    case DType::bool_: case DType::i32: case DType::i64: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
  }
  throw InternalError("cpu::scatter_add: static scatter-add carries float cotangents only");
}

}  // namespace qb::cpu
