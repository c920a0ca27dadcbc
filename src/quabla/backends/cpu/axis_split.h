// An array seen as [outer, len, inner] around one axis: what the gather/scatter kernels
// index along.
#pragma once
#include <cstdint>
#include <span>

namespace qb::cpu {

struct AxisSplit {
  std::int64_t outer = 1, len = 1, inner = 1;
};

inline AxisSplit split_at(std::span<const std::int64_t> shape, int axis) {
  AxisSplit s;
  for (int i = 0; i < axis; ++i) s.outer *= shape[static_cast<std::size_t>(i)];
  s.len = shape[static_cast<std::size_t>(axis)];
  for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}

}  // namespace qb::cpu
