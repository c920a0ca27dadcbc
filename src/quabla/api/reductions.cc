// Reductions of API.md §2: sum prod max min any all mean var std logsumexp softmax
// log_softmax norm cumsum.
#include <algorithm>
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {

std::string s(std::string_view v) { return std::string(v); }

std::vector<std::int64_t> resolve_axes(Builder& b, std::string_view fname, V x, const Axes& axes) {
  const int rank = static_cast<int>(b.type(x).shape.size());
  std::vector<std::int64_t> out;
  if (!axes) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int a : normalize_axes(*axes, rank, fname)) out.push_back(a);
  return out;
}

// Re-inserts reduced axes as size 1.
V keep_dims(Builder& b, V r, const Shape& in_shape, const std::vector<std::int64_t>& axes) {
  Shape shape = in_shape;
  for (auto a : axes) shape[a] = 1;
  return reshape(b, r, shape);
}

// Removes the (size-1) reduced axes of a keepdims result.
V drop_axes(Builder& b, V r, const Shape& in_shape, const std::vector<std::int64_t>& axes) {
  Shape shape;
  for (std::size_t i = 0; i < in_shape.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) == axes.end()) shape.push_back(in_shape[i]);
  return reshape(b, r, shape);
}

V like(Builder& b, V x, double value) {
  const ValueType& t = b.type(x);
  return broadcast_to(b, scalar_constant(b, value, t.dtype), t.shape);
}

std::int64_t reduced_count(const Shape& shape, const std::vector<std::int64_t>& axes) {
  std::int64_t n = 1;
  for (auto a : axes) n *= shape[a];
  return n;
}

}  // namespace

V reduce(Builder& b, std::string_view fname, Op op, V x, const Axes& axes_in, bool keepdims) {
  const bool logical = op == Op::ReduceAny || op == Op::ReduceAll;
  const DType d = b.type(x).dtype;
  if ((op == Op::ReduceSum || op == Op::ReduceProd) && (d == DType::bool_ || (is_int(d) && d != DType::i64))) {
    // Sums and products of bools and narrow integers accumulate in the default integer
    // (as NumPy and JAX: a count of True values is an integer); unsigned ones in uint32
    // when that is int32 (JAX's uint32 without x64; with x64 JAX's is uint64, which Quabla
    // does not have: int64 then).
    const DType acc = default_int_dtype() == DType::i32 && is_unsigned(d) ? DType::u32 : default_int_dtype();
    x = astype(b, x, d == DType::bool_ || default_int_dtype() == DType::i64 || is_narrow_int(d) ? acc : d);
  }
  if (logical) {
    x = astype(b, x, DType::bool_);
  } else if (b.type(x).dtype == DType::bool_) {
    throw TypeError(s(fname) + ": not defined for bool arrays (use any/all, or convert with "
                    ".astype(qb.float32) or .astype(qb.float64) first)");
  }
  const auto axes = resolve_axes(b, fname, x, axes_in);
  const Shape in_shape = b.type(x).shape;
  if ((op == Op::ReduceMax || op == Op::ReduceMin) && !axes.empty() && reduced_count(in_shape, axes) == 0 &&
      fname != "logsumexp" && fname != "softmax" && fname != "norm") {
    throw ValueError(s(fname) + ": zero-size array to reduction operation " +
                     (op == Op::ReduceMax ? "maximum" : "minimum") + " which has no identity (shape " +
                     shape_str(in_shape) + ")");
  }
  Attrs a;
  a.dims = axes;
  V r = axes.empty() ? x : b.emit1(op, {x}, std::move(a));
  return keepdims ? keep_dims(b, r, in_shape, axes) : r;
}

V mean(Builder& b, V x, const Axes& axes_in, bool keepdims) {
  x = to_inexact(b, x);
  V total = reduce(b, "mean", Op::ReduceSum, x, axes_in, keepdims);
  const auto n = reduced_count(b.type(x).shape, resolve_axes(b, "mean", x, axes_in));
  return b.emit1(Op::Div, {total, like(b, total, static_cast<double>(n))});
}

namespace {
V var_named(Builder& b, std::string_view fname, V x, const Axes& axes_in, double ddof, bool keepdims) {
  resolve_axes(b, fname, x, axes_in);  // bad axes are reported under the name the user called
  x = to_inexact(b, x);
  V m = mean(b, x, axes_in, true);
  V d = b.emit1(Op::Sub, {x, broadcast_to(b, m, b.type(x).shape)});
  // |d|^2, real for a complex x (NumPy's var of complex numbers is real).
  V sq = is_complex(b.type(d).dtype) ? b.emit1(Op::Real, {b.emit1(Op::Mul, {d, b.emit1(Op::Conj, {d})})})
                                     : b.emit1(Op::Mul, {d, d});
  V ss = reduce(b, "var", Op::ReduceSum, sq, axes_in, keepdims);
  const auto n = reduced_count(b.type(x).shape, resolve_axes(b, "var", x, axes_in));
  return b.emit1(Op::Div, {ss, like(b, ss, static_cast<double>(n) - ddof)});
}
}  // namespace

V var(Builder& b, V x, const Axes& axes_in, double ddof, bool keepdims) {
  return var_named(b, "var", x, axes_in, ddof, keepdims);
}

V std_(Builder& b, V x, const Axes& axes_in, double ddof, bool keepdims) {
  return b.emit1(Op::Sqrt, {var_named(b, "std", x, axes_in, ddof, keepdims)});
}

V logsumexp(Builder& b, V x, const Axes& axes_in, bool keepdims) {
  if (b.type(x).dtype != DType::bool_) x = to_inexact(b, x);
  V m = reduce(b, "logsumexp", Op::ReduceMax, x, axes_in, true);
  // A non-finite maximum (all -inf, or +inf) is not subtracted, so the result stays exact.
  V m_safe = b.emit1(Op::Select, {b.emit1(Op::IsFinite, {m}), m, like(b, m, 0.0)});
  m_safe = b.emit1(Op::StopGradient, {m_safe});
  V shifted = b.emit1(Op::Sub, {x, broadcast_to(b, m_safe, b.type(x).shape)});
  V sum = reduce(b, "logsumexp", Op::ReduceSum, b.emit1(Op::Exp, {shifted}), axes_in, true);
  V r = b.emit1(Op::Add, {b.emit1(Op::Log, {sum}), m_safe});
  return keepdims ? r : drop_axes(b, r, b.type(x).shape, resolve_axes(b, "logsumexp", x, axes_in));
}

V softmax(Builder& b, V x, std::int64_t axis) {
  if (b.type(x).dtype != DType::bool_) x = to_inexact(b, x);
  const Axes axes = std::vector<std::int64_t>{axis};
  V m = b.emit1(Op::StopGradient, {reduce(b, "softmax", Op::ReduceMax, x, axes, true)});
  V e = b.emit1(Op::Exp, {b.emit1(Op::Sub, {x, broadcast_to(b, m, b.type(x).shape)})});
  V total = reduce(b, "softmax", Op::ReduceSum, e, axes, true);
  return b.emit1(Op::Div, {e, broadcast_to(b, total, b.type(x).shape)});
}

V log_softmax(Builder& b, V x, std::int64_t axis) {
  if (b.type(x).dtype != DType::bool_) x = to_inexact(b, x);
  resolve_axes(b, "log_softmax", x, std::vector<std::int64_t>{axis});
  V lse = logsumexp(b, x, std::vector<std::int64_t>{axis}, true);
  return b.emit1(Op::Sub, {x, broadcast_to(b, lse, b.type(x).shape)});
}

V norm(Builder& b, V x, const Axes& axes_in, bool keepdims) {
  if (b.type(x).dtype != DType::bool_) x = to_inexact(b, x);
  // Scaled by the largest magnitude so squares neither overflow nor underflow.
  V ax = unary(b, "norm", Op::Abs, x);
  V s = reduce(b, "norm", Op::ReduceMax, ax, axes_in, true);
  V usable = b.emit1(Op::And, {b.emit1(Op::Gt, {s, like(b, s, 0.0)}), b.emit1(Op::IsFinite, {s})});
  V s_safe = b.emit1(Op::Select, {usable, s, like(b, s, 1.0)});
  V scaled = b.emit1(Op::Div, {x, broadcast_to(b, s_safe, b.type(x).shape)});
  V ss = reduce(b, "norm", Op::ReduceSum, b.emit1(Op::Mul, {scaled, scaled}), axes_in, true);
  V r = b.emit1(Op::Mul, {s_safe, b.emit1(Op::Sqrt, {ss})});
  V is_inf = b.emit1(Op::IsInf, {s});
  r = b.emit1(Op::Select, {is_inf, s, r});
  return keepdims ? r : drop_axes(b, r, b.type(x).shape, resolve_axes(b, "norm", x, axes_in));
}

V cumsum(Builder& b, V x, std::optional<std::int64_t> axis, bool reverse) {
  if (b.type(x).dtype == DType::bool_) x = astype(b, x, default_int_dtype());  // a running count
  if (!axis) {
    const std::int64_t n = num_elements(b.type(x).shape);
    x = reshape(b, x, std::vector<std::int64_t>{n});
    axis = 0;
  }
  Attrs a;
  a.axis = normalize_axis(*axis, static_cast<int>(b.type(x).shape.size()), "cumsum");
  a.reverse = reverse;
  return b.emit1(Op::Cumsum, {x}, std::move(a));
}

}  // namespace qb::api
