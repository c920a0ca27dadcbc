#include "quabla/ir/shape.h"
#include "quabla/ir/shape_error.h"

#include <algorithm>

#include "quabla/ir/errors.h"

namespace qb {

std::int64_t num_elements(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

void check_shape(std::span<const std::int64_t> shape, std::string_view what, bool allow_zero) {
  if (shape.size() > kMaxRank) {
    throw ValueError(std::string(what) + ": arrays have at most " + std::to_string(kMaxRank) + " dimensions, got " +
                     std::to_string(shape.size()));
  }
  for (auto d : shape) {
    if (d < 0 || (d == 0 && !allow_zero)) {
      throw ValueError(std::string(what) + ": every dimension must be positive, got shape " + shape_str(shape) +
                       (d == 0 ? " (zero-extent arrays are not supported yet)" : ""));
    }
  }
  if (num_elements(shape) > kMaxElements) {
    throw ValueError(std::string(what) + ": shape " + shape_str(shape) + " has more than 2^56 elements, " +
                     "more than any array can hold (the array is too big)");
  }
}

std::string shape_str(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<std::int64_t> row_major_strides(std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int normalize_axis(std::int64_t axis, int rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    throw ValueError(std::string(what) + ": axis " + std::to_string(axis) +
                     " is out of range for an array of rank " + std::to_string(rank) +
                     " (valid axes are " + std::to_string(-rank) + " to " + std::to_string(rank - 1) + ")");
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int> normalize_axes(std::span<const std::int64_t> axes, int rank, std::string_view what) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (auto a : axes) out.push_back(normalize_axis(a, rank, what));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw ValueError(std::string(what) + ": repeated axis in " + shape_str(axes));
  }
  return out;
}

Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b,
                       std::string_view what) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(std::string(what) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " do not broadcast (each axis must match or be 1); reshape or broadcast_to first");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace qb
