// NumPy basic indexing: integers, slices with any nonzero step, None and one Ellipsis.
// Lowered to slice (positive strides), reverse (negative steps) and reshape.
#include <algorithm>
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

V getitem(Builder& b, V x, std::span<const IndexItem> items) {
  const Shape xs = b.type(x).shape;
  const int rank = static_cast<int>(xs.size());
  int consuming = 0, ellipses = 0;
  for (const auto& it : items) {
    if (it.kind == IndexItem::Int || it.kind == IndexItem::Slice) ++consuming;
    if (it.kind == IndexItem::Ellipsis) ++ellipses;
  }
  if (ellipses > 1) throw IndexError("an index can only have a single ellipsis ('...')");
  if (consuming > rank) {
    throw IndexError("too many indices for array: array is " + std::to_string(rank) + "-dimensional, but " +
                     std::to_string(consuming) + " were indexed");
  }
  // Expand the ellipsis (or pad at the end) to full slices.
  std::vector<IndexItem> full;
  for (const auto& it : items) {
    if (it.kind == IndexItem::Ellipsis) {
      for (int i = 0; i < rank - consuming; ++i) full.push_back({IndexItem::Slice});
    } else {
      full.push_back(it);
    }
  }
  if (!ellipses)
    for (int i = 0; i < rank - consuming; ++i) full.push_back({IndexItem::Slice});

  Attrs sl;
  sl.starts.assign(rank, 0);
  sl.limits = xs;
  sl.strides.assign(rank, 1);
  std::vector<std::int64_t> reversed;
  Shape out_shape;
  int axis = 0;
  bool any_slice = false;
  for (const auto& it : full) {
    if (it.kind == IndexItem::NewAxis) {
      out_shape.push_back(1);
      continue;
    }
    const std::int64_t len = xs[axis];
    if (it.kind == IndexItem::Int) {
      const std::int64_t i = it.start < 0 ? it.start + len : it.start;
      if (i < 0 || i >= len) {
        throw IndexError("index " + std::to_string(it.start) + " is out of bounds for axis " + std::to_string(axis) +
                         " with size " + std::to_string(len));
      }
      sl.starts[axis] = i;
      sl.limits[axis] = i + 1;
      any_slice = true;
    } else {
      // Python's slice.indices semantics.
      const std::int64_t step = it.step;
      if (step == 0) throw ValueError("slice step cannot be zero");
      auto clampi = [&](std::int64_t v, bool present, std::int64_t dflt) {
        if (!present) return dflt;
        if (v < 0) v += len;
        if (step > 0) return std::clamp<std::int64_t>(v, 0, len);
        return std::clamp<std::int64_t>(v, -1, len - 1);
      };
      const std::int64_t start = clampi(it.start, it.has_start, step > 0 ? 0 : len - 1);
      const std::int64_t stop = clampi(it.stop, it.has_stop, step > 0 ? len : -1);
      // Picks in [start, stop): ceil(span / |step|), written so that a step near 2^63 (Python
      // clamps larger ones there) cannot overflow; one pick then, as NumPy gives.
      const std::int64_t span = step > 0 ? stop - start : start - stop;
      const std::int64_t abs_step = step > 0 ? step : -step;
      const std::int64_t count = span > 0 ? (span - 1) / abs_step + 1 : 0;
      if (count == 0) {  // an empty slice, as NumPy: a zero-extent axis
        sl.starts[axis] = sl.limits[axis] = std::clamp<std::int64_t>(start, 0, len);
        sl.strides[axis] = 1;
        any_slice = true;
        out_shape.push_back(0);
        ++axis;
        continue;
      }
      const std::int64_t stride = count == 1 ? 1 : abs_step;  // the picks lie within the axis
      if (step > 0) {
        sl.starts[axis] = start;
        sl.limits[axis] = start + (count - 1) * stride + 1;
        sl.strides[axis] = stride;
      } else {
        // In reversed coordinates j = len - 1 - i the picks are increasing with stride -step.
        reversed.push_back(axis);
        sl.starts[axis] = len - 1 - start;
        sl.limits[axis] = sl.starts[axis] + (count - 1) * stride + 1;
        sl.strides[axis] = stride;
      }
      any_slice = any_slice || count != len || step != 1;
      out_shape.push_back(count);
    }
    ++axis;
  }
  V r = x;
  if (!reversed.empty()) {
    Attrs rv;
    rv.dims = reversed;
    r = b.emit1(Op::Reverse, {r}, std::move(rv));
  }
  if (any_slice) r = b.emit1(Op::Slice, {r}, std::move(sl));
  return reshape(b, r, out_shape);
}

}  // namespace qb::api

namespace qb::api {

namespace {
Attrs gather_attrs(Builder& b, V x, std::span<const std::int64_t> indices, std::span<const std::int64_t> index_shape,
                   std::int64_t axis, const char* fname) {
  const auto& xs = b.type(x).shape;
  if (xs.empty()) throw ValueError(std::string(fname) + ": needs an array of rank >= 1");
  Attrs a;
  a.axis = normalize_axis(axis, static_cast<int>(xs.size()), fname);
  const std::int64_t len = xs[a.axis];
  for (auto i : indices) {
    if (i < -len || i >= len) {
      throw IndexError(std::string(fname) + ": index " + std::to_string(i) + " is out of bounds for axis " +
                       std::to_string(a.axis) + " with size " + std::to_string(len));
    }
    a.dims.push_back(i < 0 ? i + len : i);
  }
  a.shape.assign(index_shape.begin(), index_shape.end());
  return a;
}
}  // namespace

V gather(Builder& b, V x, std::span<const std::int64_t> indices, std::span<const std::int64_t> index_shape,
         std::int64_t axis) {
  return b.emit1(Op::Gather, {x}, gather_attrs(b, x, indices, index_shape, axis, "gather"));
}

V scatter_add(Builder& b, V x, std::span<const std::int64_t> indices, std::span<const std::int64_t> index_shape,
              V updates, std::int64_t axis) {
  if (b.type(x).dtype == DType::bool_) {
    throw TypeError("scatter_add: not defined for bool arrays; convert with .astype(qb.float32) or .astype(qb.float64)");
  }
  Attrs a = gather_attrs(b, x, indices, index_shape, axis, "scatter_add");
  const auto& xs = b.type(x).shape;
  Shape ushape(xs.begin(), xs.begin() + a.axis);
  ushape.insert(ushape.end(), index_shape.begin(), index_shape.end());
  ushape.insert(ushape.end(), xs.begin() + a.axis + 1, xs.end());
  const ValueType& ut = b.type(updates);
  if (is_float(ut.dtype) && ut.dtype != b.type(x).dtype && !ut.weak) {
    throw ValueError("scatter_add: updates are " + std::string(dtype_name(ut.dtype)) + " but x is " +
                     std::string(dtype_name(b.type(x).dtype)) + "; convert one with astype");
  }
  V u = broadcast_to(b, astype(b, updates, b.type(x).dtype), ushape, "scatter_add");
  return b.emit1(Op::ScatterAdd, {x, u}, std::move(a));
}

}  // namespace qb::api
