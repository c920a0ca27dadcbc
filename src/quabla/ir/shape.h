// Static shapes and the axis helpers every layer shares.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qb {

using Shape = std::vector<std::int64_t>;

// The most elements one array may have: byte sizes (x 8), strides and offsets computed from
// shapes then never overflow 64 bits. NumPy's limit is of the same kind ("array is too big").
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 56;
// The most dimensions one array may have (NumPy's limit too; qb.save/qb.load share it).
inline constexpr std::size_t kMaxRank = 64;

// The product of the dimensions, saturating at INT64_MAX when it overflows (so a comparison
// of two element counts is never fooled by wrap-around).
std::int64_t num_elements(std::span<const std::int64_t> shape);
// Every array shape passes here before it is used: at most kMaxRank dimensions, each
// positive (zero-extent arrays are not supported yet; `allow_zero` admits the zero-extent
// intermediates transforms create internally, e.g. the checkpoints of an empty loop), at
// most kMaxElements elements; ValueError naming `what`.
void check_shape(std::span<const std::int64_t> shape, std::string_view what, bool allow_zero = false);
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
