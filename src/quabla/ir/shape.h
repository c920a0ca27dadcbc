// Static shapes and the axis helpers every layer shares.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qb {

using Shape = std::vector<std::int64_t>;

std::int64_t num_elements(std::span<const std::int64_t> shape);
// "[2, 3]" (the form errors and the printer use).
std::string shape_str(std::span<const std::int64_t> shape);
// Row-major strides in elements.
std::vector<std::int64_t> row_major_strides(std::span<const std::int64_t> shape);

// Resolves a possibly negative axis against rank; throws ValueError naming `what` when out of
// range.
int normalize_axis(std::int64_t axis, int rank, std::string_view what);
// Resolves and sorts a list of axes; rejects duplicates.
std::vector<int> normalize_axes(std::span<const std::int64_t> axes, int rank, std::string_view what);

// NumPy broadcasting of two shapes; throws ValueError naming `what` and both shapes.
Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b,
                       std::string_view what);

}  // namespace qb
