// Shape functions of API.md §2: reshape transpose squeeze expand_dims concat stack split
// tril/triu flip.
#include <algorithm>
#include <numeric>
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/shape_error.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {
std::string s(std::string_view v) { return std::string(v); }
}  // namespace

V reshape(Builder& b, V x, std::span<const std::int64_t> shape_in) {
  const auto& xs = b.type(x).shape;
  const std::int64_t n = num_elements(xs);
  Shape shape(shape_in.begin(), shape_in.end());
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw ValueError("reshape: only one dimension can be -1, got " + shape_str(shape_in));
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw ValueError("reshape: dimensions must be non-negative (or one -1), got " + shape_str(shape_in));
    } else if (__builtin_mul_overflow(known, shape[i], &known) || known > kMaxElements) {
      throw ValueError("reshape: shape " + shape_str(shape_in) + " has more than 2^56 elements, more than any " +
                       "array can hold (the array is too big)");
    }
  }
  if (infer >= 0) {
    if (known == 0) {
      throw ValueError("reshape: cannot infer the -1 dimension of " + shape_str(shape_in) +
                       " next to a zero-size dimension (NumPy's rule)");
    }
    if (n % known != 0) {
      throw ShapeError("reshape: cannot reshape an array of shape " + shape_str(xs) + " (" + std::to_string(n) +
                       " elements) to " + shape_str(shape_in));
    }
    shape[infer] = n / known;
  }
  if (num_elements(shape) != n) {
    throw ShapeError("reshape: cannot reshape an array of shape " + shape_str(xs) + " (" + std::to_string(n) +
                     " elements) to " + shape_str(shape_in) + " (" + std::to_string(num_elements(shape)) + " elements)");
  }
  if (shape == xs) return x;
  Attrs a;
  a.shape = std::move(shape);
  return b.emit1(Op::Reshape, {x}, std::move(a));
}

V transpose(Builder& b, V x, const Axes& perm_in) {
  const int rank = static_cast<int>(b.type(x).shape.size());
  std::vector<std::int64_t> perm;
  if (!perm_in) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  } else {
    if (static_cast<int>(perm_in->size()) != rank) {
      throw ValueError("transpose: axes " + shape_str(*perm_in) + " must list each of the " + std::to_string(rank) +
                       " axes once");
    }
    for (auto p : *perm_in) perm.push_back(normalize_axis(p, rank, "transpose"));
    auto sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw ValueError("transpose: axes " + shape_str(*perm_in) + " repeat an axis; give a permutation");
    }
  }
  bool identity = true;
  for (int i = 0; i < rank; ++i) identity = identity && perm[i] == i;
  if (identity) return x;
  Attrs a;
  a.dims = std::move(perm);
  return b.emit1(Op::Transpose, {x}, std::move(a));
}

V squeeze(Builder& b, V x, const Axes& axes_in) {
  const auto& xs = b.type(x).shape;
  const int rank = static_cast<int>(xs.size());
  std::vector<int> axes;
  if (axes_in) {
    axes = normalize_axes(*axes_in, rank, "squeeze");
    for (int a : axes) {
      if (xs[a] != 1) {
        throw ValueError("squeeze: axis " + std::to_string(a) + " of shape " + shape_str(xs) +
                         " has size " + std::to_string(xs[a]) + "; only size-1 axes can be squeezed");
      }
    }
  } else {
    for (int i = 0; i < rank; ++i)
      if (xs[i] == 1) axes.push_back(i);
  }
  Shape out;
  for (int i = 0; i < rank; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(xs[i]);
  return reshape(b, x, out);
}

V expand_dims(Builder& b, V x, std::span<const std::int64_t> axes_in) {
  const auto& xs = b.type(x).shape;
  const int out_rank = static_cast<int>(xs.size() + axes_in.size());
  const auto axes = normalize_axes(axes_in, out_rank, "expand_dims");
  Shape out;
  std::size_t k = 0;
  for (int i = 0; i < out_rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) out.push_back(1);
    else out.push_back(xs[k++]);
  }
  return reshape(b, x, out);
}


V concat(Builder& b, std::span<const V> xs_in, std::int64_t axis, std::string_view fname) {
  if (xs_in.empty()) throw ValueError(s(fname) + ": needs at least one array");
  const DType dtype = common_dtype(b, fname, xs_in, true);
  const auto& first = b.type(xs_in[0]).shape;
  const int rank = static_cast<int>(first.size());
  if (rank == 0) throw ValueError(s(fname) + ": zero-dimensional arrays cannot be concatenated; use stack");
  const int ax = normalize_axis(axis, rank, fname);
  std::vector<V> xs;
  for (V x : xs_in) {
    const auto& sh = b.type(x).shape;
    bool ok = static_cast<int>(sh.size()) == rank;
    for (int i = 0; ok && i < rank; ++i) ok = i == ax || sh[i] == first[i];
    if (!ok) {
      throw ShapeError(s(fname) + ": shapes " + shape_str(first) + " and " + shape_str(sh) +
                       " must match on every axis except the concatenation axis " + std::to_string(ax));
    }
    xs.push_back(astype(b, x, dtype));
  }
  if (xs.size() == 1) return xs[0];
  Attrs a;
  a.axis = ax;
  return b.emit(Op::Concat, xs, std::move(a))[0];
}

V stack(Builder& b, std::span<const V> xs_in, std::int64_t axis) {
  if (xs_in.empty()) throw ValueError("stack: needs at least one array");
  const auto& first = b.type(xs_in[0]).shape;
  for (V x : xs_in) {
    if (b.type(x).shape != first) {
      throw ShapeError("stack: every array must have the same shape, got " + shape_str(first) + " and " +
                       shape_str(b.type(x).shape));
    }
  }
  const std::int64_t ax = normalize_axis(axis, static_cast<int>(first.size()) + 1, "stack");
  // Promote before expand_dims: a reshaped Python scalar would no longer be weak.
  const DType dtype = common_dtype(b, "stack", xs_in, true);
  bool weak = true;  // stacked Python numbers stay weak, as in JAX
  std::vector<V> xs;
  for (V x : xs_in) {
    weak = weak && b.type(x).weak;
    xs.push_back(expand_dims(b, astype(b, x, dtype), std::vector<std::int64_t>{ax}));
  }
  const V out = concat(b, xs, ax, "stack");
  if (weak) b.graph().values[out].weak = true;
  return out;
}

std::vector<V> split(Builder& b, V x, std::span<const std::int64_t> indices_in, std::int64_t sections,
                     std::int64_t axis) {
  const auto& xs = b.type(x).shape;
  const int rank = static_cast<int>(xs.size());
  if (rank == 0) throw ValueError("split: cannot split a zero-dimensional array");
  const int ax = normalize_axis(axis, rank, "split");
  const std::int64_t len = xs[ax];
  std::vector<std::int64_t> bounds{0};
  if (sections > 0) {
    if (len % sections != 0) {
      throw ValueError("split: axis " + std::to_string(ax) + " of length " + std::to_string(len) +
                       " does not divide into " + std::to_string(sections) + " equal sections; pass split indices instead");
    }
    for (std::int64_t i = 1; i <= sections; ++i) bounds.push_back(i * len / sections);
  } else {
    for (auto i : indices_in) {
      const std::int64_t k = std::clamp<std::int64_t>(i < 0 ? i + len : i, 0, len);
      if (k <= bounds.back()) {
        throw ValueError("split: indices " + shape_str(indices_in) +
                         " must be increasing and leave no empty piece (zero-extent arrays are not supported)");
      }
      bounds.push_back(k);
    }
    if (bounds.back() == len) {
      throw ValueError("split: the last index " + std::to_string(bounds.back()) + " leaves an empty piece");
    }
    bounds.push_back(len);
  }
  std::vector<V> out;
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    Attrs a;
    a.starts.assign(rank, 0);
    a.limits = xs;
    a.strides.assign(rank, 1);
    a.starts[ax] = bounds[i];
    a.limits[ax] = bounds[i + 1];
    out.push_back(b.emit1(Op::Slice, {x}, std::move(a)));
  }
  return out;
}

V pad_constant(Builder& b, V x, V value, std::span<const std::int64_t> low, std::span<const std::int64_t> high,
               std::span<const std::int64_t> interior) {
  const auto& xs = b.type(x).shape;
  if (low.size() != xs.size() || high.size() != xs.size() || (!interior.empty() && interior.size() != xs.size())) {
    throw ValueError("pad: needs a (before, after) pair per axis of an array of shape " + shape_str(xs));
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (low[i] < 0 || high[i] < 0 || (!interior.empty() && interior[i] < 0)) {
      throw ValueError("pad: pad widths must be >= 0, got (" + std::to_string(low[i]) + ", " + std::to_string(high[i]) +
                       (interior.empty() ? std::string() : ", " + std::to_string(interior[i])) + ") on axis " +
                       std::to_string(i));
    }
  }
  if (!b.type(value).shape.empty()) {
    throw ValueError("pad: constant_values must be a scalar here, got shape " + shape_str(b.type(value).shape));
  }
  Attrs a;
  a.starts.assign(low.begin(), low.end());
  a.limits.assign(high.begin(), high.end());
  if (interior.empty()) a.strides.assign(xs.size(), 0);  // no interior padding
  else a.strides.assign(interior.begin(), interior.end());
  return b.emit1(Op::Pad, {x, astype(b, value, b.type(x).dtype)}, std::move(a));
}

V tri_mask(Builder& b, V x, std::int64_t k, bool lower) {
  const auto& xs = b.type(x).shape;
  const char* fname = lower ? "tril" : "triu";
  if (xs.size() < 2) throw ValueError(std::string(fname) + ": needs an array of rank >= 2, got shape " + shape_str(xs));
  const std::int64_t rows = xs[xs.size() - 2], cols = xs[xs.size() - 1];
  auto lit = std::make_shared<Literal>();
  lit->type = ValueType{DType::bool_, {rows, cols}, false};
  lit->data = Buffer::allocate(static_cast<std::size_t>(rows * cols));
  auto* m = lit->data->as<std::uint8_t>();
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) m[i * cols + j] = lower ? (j - i <= k) : (j - i >= k);
  V mask = broadcast_to(b, b.constant(std::move(lit)), xs, fname);
  V zero = broadcast_to(b, scalar_constant(b, 0.0, b.type(x).dtype), xs, fname);
  return b.emit1(Op::Select, {mask, x, zero});
}

V flip(Builder& b, V x, const Axes& axes_in) {
  const int rank = static_cast<int>(b.type(x).shape.size());
  std::vector<std::int64_t> axes;
  if (!axes_in) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  } else {
    for (int a : normalize_axes(*axes_in, rank, "flip")) axes.push_back(a);
  }
  if (axes.empty()) return x;
  Attrs a;
  a.dims = std::move(axes);
  return b.emit1(Op::Reverse, {x}, std::move(a));
}

}  // namespace qb::api
