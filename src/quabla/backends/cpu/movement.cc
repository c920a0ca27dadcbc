// Data movement: one strided copy covers broadcast (stride 0), transpose (permuted
// strides), slice (offset and scaled strides) and reverse (negative strides).
#include <cstring>

#include "quabla/backends/cpu/kernels.h"

namespace qb::cpu {

namespace {

template <class T>
void copy_rows(const T* in, std::int64_t offset, std::span<const std::int64_t> shape,
               std::span<const std::int64_t> strides, T* out) {
  const std::size_t rank = shape.size();
  if (rank == 0) {
    out[0] = in[offset];
    return;
  }
  const std::int64_t inner = shape[rank - 1];
  const std::int64_t inner_stride = strides[rank - 1];
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
