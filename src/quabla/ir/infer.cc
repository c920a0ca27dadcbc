#include "quabla/ir/infer.h"
#include "quabla/ir/shape_error.h"

#include <algorithm>
#include <string>

#include "quabla/ir/errors.h"

namespace qb {

namespace {

[[noreturn]] void fail(Op op, const std::string& msg) {
  throw ShapeError(std::string(op_name(op)) + ": " + msg);
}

void expect_arity(Op op, std::span<const ValueType> in) {
  const int arity = op_arity(op);
  if (arity >= 0 && static_cast<int>(in.size()) != arity) {
    fail(op, "expects " + std::to_string(arity) + " operands, got " + std::to_string(in.size()));
  }
}

ValueType strong(DType d, Shape s) { return ValueType{d, std::move(s), false}; }

ValueType unary_float(Op op, const ValueType& x) {
  if (!is_float(x.dtype)) {
    fail(op, is_complex(x.dtype) ? "is not defined for complex numbers yet, got " + x.str()
                                 : "needs a float operand, got " + x.str());
  }
  return strong(x.dtype, x.shape);
}

// The ops the complex lowering (transforms/lower_complex.cc) has a rule for take complex
// operands too.
ValueType unary_inexact(Op op, const ValueType& x) {
  if (!is_inexact(x.dtype)) fail(op, "needs a float or complex operand, got " + x.str());
  return strong(x.dtype, x.shape);
}

bool is_real_numeric(DType d) { return is_float(d) || is_int(d); }
bool is_numeric(DType d) { return is_real_numeric(d) || is_complex(d); }

void same_types(Op op, const ValueType& a, const ValueType& b) {
  if (a.dtype != b.dtype || a.shape != b.shape) {
    fail(op, "operands must have one dtype and shape, got " + a.str() + " and " + b.str());
  }
}

ValueType binary(Op op, const ValueType& a, const ValueType& b, bool want_float, bool want_bool) {
  same_types(op, a, b);
  if (want_float && !is_float(a.dtype)) fail(op, "needs float operands, got " + a.str());
  if (want_bool && a.dtype != DType::bool_) fail(op, "needs bool operands, got " + a.str());
  return strong(a.dtype, a.shape);
}

Shape reduce_shape(Op op, const ValueType& x, const std::vector<std::int64_t>& axes) {
  const int rank = static_cast<int>(x.shape.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank || (i && axes[i] <= axes[i - 1])) {
      fail(op, "axes " + shape_str(axes) + " must be sorted, distinct and within rank " + std::to_string(rank));
    }
  }
  Shape out;
  for (int i = 0; i < rank; ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), i)) out.push_back(x.shape[i]);
  }
  return out;
}

}  // namespace

std::vector<ValueType> infer_types(Op op, std::span<const ValueType> in, const Attrs& a, const Regions& regions) {
  expect_arity(op, in);
  switch (op) {
    case Op::Parameter:
      fail(op, "parameters are created by Builder::param");
    case Op::Constant:
      if (!a.literal) fail(op, "missing literal");
      return {a.literal->type};

    case Op::Neg: case Op::Sign:
      if (!is_numeric(in[0].dtype)) fail(op, "needs a numeric operand, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};
    case Op::Abs:  // |z| of a complex z is real
      if (!is_numeric(in[0].dtype)) fail(op, "needs a numeric operand, got " + in[0].str());
      return {strong(complex_part(in[0].dtype), in[0].shape)};
    case Op::Floor: case Op::Ceil: case Op::Round:
      if (!is_real_numeric(in[0].dtype)) fail(op, "needs a real numeric operand, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};

    case Op::Sqrt: case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log: case Op::Log2: case Op::Log10:
    case Op::Log1p: case Op::Sin: case Op::Cos: case Op::Tan: case Op::Sinh: case Op::Cosh: case Op::Tanh:
    case Op::StopGradient:
      return {unary_inexact(op, in[0])};
    case Op::Cbrt: case Op::Asin: case Op::Acos: case Op::Atan: case Op::Asinh: case Op::Acosh: case Op::Atanh:
    case Op::Erf: case Op::Erfc: case Op::ErfInv: case Op::Logistic: case Op::Softplus: case Op::Silu: case Op::GeluTanh:
      return {unary_float(op, in[0])};

    case Op::IsNan: case Op::IsInf: case Op::IsFinite:
      unary_inexact(op, in[0]);
      return {strong(DType::bool_, in[0].shape)};

    case Op::Not:
      if (in[0].dtype != DType::bool_ && !is_int(in[0].dtype)) fail(op, "needs a bool or integer operand, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};

    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow:
      same_types(op, in[0], in[1]);
      if (!is_numeric(in[0].dtype)) fail(op, "needs numeric operands, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};
    case Op::Rem:
      same_types(op, in[0], in[1]);
      if (!is_real_numeric(in[0].dtype)) fail(op, "needs real numeric operands, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};
    case Op::Max: case Op::Min:  // complex: lexicographic (real parts, then imaginary), as JAX's
      same_types(op, in[0], in[1]);
      if (!is_numeric(in[0].dtype)) fail(op, "needs numeric operands, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};
    case Op::Atan2: case Op::Hypot: case Op::LogAddExp:
      return {binary(op, in[0], in[1], true, false)};

    case Op::And: case Op::Or: case Op::Xor:
      same_types(op, in[0], in[1]);
      if (in[0].dtype != DType::bool_ && !is_int(in[0].dtype)) fail(op, "needs bool or integer operands, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};
    case Op::ShiftLeft: case Op::ShiftRight:
      same_types(op, in[0], in[1]);
      if (!is_int(in[0].dtype)) fail(op, "needs integer operands, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};

    case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:  // complex: lexicographic, as JAX's
      same_types(op, in[0], in[1]);
      return {strong(DType::bool_, in[0].shape)};
    case Op::Eq: case Op::Ne:
      same_types(op, in[0], in[1]);
      return {strong(DType::bool_, in[0].shape)};

    case Op::Select:
      if (in[0].dtype != DType::bool_ || in[0].shape != in[1].shape) {
        fail(op, "predicate must be bool of the operands' shape, got " + in[0].str() + " for " + in[1].str());
      }
      same_types(op, in[1], in[2]);
      return {strong(in[1].dtype, in[1].shape)};

    case Op::Convert:
      return {strong(a.dtype, in[0].shape)};

    case Op::Reshape:
      if (num_elements(a.shape) != num_elements(in[0].shape)) {
        fail(op, "cannot reshape " + in[0].str() + " to " + shape_str(a.shape));
      }
      return {strong(in[0].dtype, a.shape)};

    case Op::BroadcastInDim: {
      const auto& x = in[0];
      if (a.dims.size() != x.shape.size()) fail(op, "dims must name one result axis per operand axis");
      for (std::size_t i = 0; i < a.dims.size(); ++i) {
        const auto d = a.dims[i];
        if (d < 0 || d >= static_cast<std::int64_t>(a.shape.size()) || (i && d <= a.dims[i - 1]) ||
            (x.shape[i] != 1 && x.shape[i] != a.shape[d])) {
          fail(op, "cannot broadcast " + x.str() + " to " + shape_str(a.shape) + " with dims " + shape_str(a.dims));
        }
      }
      return {strong(x.dtype, a.shape)};
    }

    case Op::Transpose: {
      const auto& x = in[0];
      std::vector<std::int64_t> sorted = a.dims;
      std::sort(sorted.begin(), sorted.end());
      bool ok = sorted.size() == x.shape.size();
      for (std::size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<std::int64_t>(i);
      if (!ok) fail(op, "permutation " + shape_str(a.dims) + " does not match rank of " + x.str());
      Shape s;
      for (auto p : a.dims) s.push_back(x.shape[p]);
      return {strong(x.dtype, s)};
    }

    case Op::Slice: {
      const auto& x = in[0];
      const std::size_t r = x.shape.size();
      if (a.starts.size() != r || a.limits.size() != r || a.strides.size() != r) {
        fail(op, "starts/limits/strides must have one entry per axis of " + x.str());
      }
      Shape s(r);
      for (std::size_t i = 0; i < r; ++i) {
        if (a.strides[i] <= 0 || a.starts[i] < 0 || a.limits[i] > x.shape[i] || a.starts[i] > a.limits[i]) {
          fail(op, "bad slice on axis " + std::to_string(i) + " of " + x.str());
        }
        s[i] = (a.limits[i] - a.starts[i] + a.strides[i] - 1) / a.strides[i];
      }
      return {strong(x.dtype, s)};
    }

    case Op::Pad: {
      const auto& x = in[0];
      const std::size_t r = x.shape.size();
      if (in[1].dtype != x.dtype || !in[1].shape.empty()) fail(op, "the padding value must be a scalar " + std::string(dtype_short_name(x.dtype)));
      if (a.starts.size() != r || a.limits.size() != r || a.strides.size() != r) fail(op, "low/high/interior need one entry per axis");
      Shape s(r);
      for (std::size_t i = 0; i < r; ++i) {
        if (a.starts[i] < 0 || a.limits[i] < 0 || a.strides[i] < 0) fail(op, "negative padding");
        s[i] = a.starts[i] + a.limits[i] + x.shape[i] + (x.shape[i] - 1) * a.strides[i];
      }
      return {strong(x.dtype, s)};
    }

    case Op::Reverse:
      reduce_shape(op, in[0], a.dims);  // validates the axes
      return {strong(in[0].dtype, in[0].shape)};

    case Op::Concat: {
      if (in.empty()) fail(op, "needs at least one operand");
      const auto& x = in[0];
      const auto axis = a.axis;
      if (axis < 0 || axis >= static_cast<std::int64_t>(x.shape.size())) fail(op, "axis out of range");
      Shape s = x.shape;
      for (std::size_t k = 1; k < in.size(); ++k) {
        const auto& y = in[k];
        bool ok = y.dtype == x.dtype && y.shape.size() == x.shape.size();
        for (std::size_t i = 0; ok && i < s.size(); ++i) ok = static_cast<std::int64_t>(i) == axis || y.shape[i] == x.shape[i];
        if (!ok) fail(op, "operands " + x.str() + " and " + y.str() + " differ off the concatenation axis");
        s[axis] += y.shape[axis];
      }
      return {strong(x.dtype, s)};
    }

    case Op::ReduceSum: case Op::ReduceProd:
      if (!is_numeric(in[0].dtype)) fail(op, "needs a numeric operand, got " + in[0].str());
      return {strong(in[0].dtype, reduce_shape(op, in[0], a.dims))};
    case Op::ReduceMax: case Op::ReduceMin:  // complex: lexicographic, as JAX's
      if (!is_numeric(in[0].dtype)) fail(op, "needs a numeric operand, got " + in[0].str());
      return {strong(in[0].dtype, reduce_shape(op, in[0], a.dims))};
    case Op::ReduceAny: case Op::ReduceAll:
      if (in[0].dtype != DType::bool_) fail(op, "needs a bool operand, got " + in[0].str());
      return {strong(DType::bool_, reduce_shape(op, in[0], a.dims))};

    case Op::Cumsum:
      if (!is_numeric(in[0].dtype)) fail(op, "needs a numeric operand, got " + in[0].str());
      if (a.axis < 0 || a.axis >= static_cast<std::int64_t>(in[0].shape.size())) fail(op, "axis out of range");
      return {strong(in[0].dtype, in[0].shape)};

    case Op::Gather: case Op::ScatterAdd: {
      const auto& x = in[0];
      const auto axis = a.axis;
      if (axis < 0 || axis >= static_cast<std::int64_t>(x.shape.size())) fail(op, "axis out of range for " + x.str());
      if (static_cast<std::int64_t>(a.dims.size()) != num_elements(a.shape)) fail(op, "index count differs from index shape");
      for (auto i : a.dims) {
        if (i < 0 || i >= x.shape[axis]) fail(op, "index " + std::to_string(i) + " out of range for axis of size " + std::to_string(x.shape[axis]));
      }
      Shape s(x.shape.begin(), x.shape.begin() + axis);
      s.insert(s.end(), a.shape.begin(), a.shape.end());
      s.insert(s.end(), x.shape.begin() + axis + 1, x.shape.end());
      if (op == Op::Gather) return {strong(x.dtype, s)};
      if (!is_inexact(x.dtype) || in[1].dtype != x.dtype || in[1].shape != s) {
        fail(op, "updates must be " + ValueType{x.dtype, s, false}.str() + " for " + x.str() + ", got " + in[1].str());
      }
      return {strong(x.dtype, x.shape)};
    }

    case Op::Take: case Op::Scatter: {
      const auto& x = in[0];
      const auto axis = a.axis;
      if (axis < 0 || axis >= static_cast<std::int64_t>(x.shape.size())) fail(op, "axis out of range for " + x.str());
      if (!is_int(in[1].dtype)) fail(op, "indices must be integers, got " + in[1].str());
      if (a.mode < 0 || a.mode > (op == Op::Take ? 1 : 4)) fail(op, "unknown mode " + std::to_string(a.mode));
      Shape s(x.shape.begin(), x.shape.begin() + axis);
      s.insert(s.end(), in[1].shape.begin(), in[1].shape.end());
      s.insert(s.end(), x.shape.begin() + axis + 1, x.shape.end());
      if (op == Op::Take) return {strong(x.dtype, s)};
      if (is_complex(x.dtype) && a.mode != kScatterAdd && a.mode != kScatterSet) {
        fail(op, "complex numbers have no order or product mode here, got " + x.str());
      }
      if (in[2].dtype != x.dtype || in[2].shape != s) {
        fail(op, "updates must be " + ValueType{x.dtype, s, false}.str() + " for " + x.str() + ", got " + in[2].str());
      }
      return {strong(x.dtype, x.shape)};
    }

    case Op::Argsort: case Op::SearchSorted: {
      const auto& x = in[0];
      if (!is_int(a.dtype)) fail(op, "the result dtype must be an integer");
      if (x.shape.empty() || !is_real_numeric(x.dtype)) fail(op, "needs a numeric operand of rank >= 1, got " + x.str());
      if (op == Op::Argsort) return {strong(a.dtype, x.shape)};
      const auto& v = in[1];
      if (v.dtype != x.dtype || v.shape.size() != x.shape.size() ||
          !std::equal(x.shape.begin(), x.shape.end() - 1, v.shape.begin())) {
        fail(op, "values " + v.str() + " must share the dtype and batch axes of " + x.str());
      }
      return {strong(a.dtype, v.shape)};
    }

    case Op::MatMul: {
      const auto& x = in[0];
      const auto& y = in[1];
      const std::size_t r = x.shape.size();
      if (!is_inexact(x.dtype) || x.dtype != y.dtype || r < 2 || y.shape.size() != r ||
          !std::equal(x.shape.begin(), x.shape.end() - 2, y.shape.begin()) || x.shape[r - 1] != y.shape[r - 2]) {
        fail(op, "operands " + x.str() + " and " + y.str() + " are not [..., m, k] x [..., k, n] of one float or complex dtype");
      }
      Shape s = x.shape;
      s[r - 1] = y.shape[r - 1];
      return {strong(x.dtype, s)};
    }

    case Op::Cholesky: case Op::Slogdet: case Op::Eigh: case Op::Lu: case Op::Svd: case Op::Qr: {
      // Float or complex matrices; mode bit 8 marks the lowered form of a complex one: a float
      // operand and result in planar form [2, ...] (transforms/lower_complex.h).
      const bool planar = (a.mode & kLinalgPlanar) != 0;
      const std::size_t lead = planar ? 1 : 0;
      const auto& x = in[0];
      const std::size_t r = x.shape.size();
      const bool square = op != Op::Svd && op != Op::Qr;
      if ((planar ? !is_float(x.dtype) || r < 3 || x.shape[0] != 2 : !is_inexact(x.dtype)) || r < 2 ||
          (square && x.shape[r - 1] != x.shape[r - 2])) {
        fail(op, "operand " + x.str() + " is not a float or complex " + (square ? "[..., n, n] stack of square matrices"
                                                                                : "[..., m, n] stack of matrices"));
      }
      const std::int64_t m = x.shape[r - 2], n = x.shape[r - 1], k = std::min(m, n);
      Shape s(x.shape.begin() + static_cast<std::ptrdiff_t>(lead), x.shape.end());
      const std::size_t q = s.size();
      switch (op) {
        case Op::Cholesky: break;
        case Op::Eigh: s[q - 2] += 1; break;
        case Op::Lu: s[q - 2] += 2; break;
        case Op::Slogdet: s.resize(q - 2); s.push_back(2); break;
        case Op::Svd:
          s[q - 2] = m + 1 + n;
          s[q - 1] = (a.mode & 1) ? std::max(m, n) : k;
          break;
        default: {  // qr
          const std::int64_t rq = (a.mode & 1) ? m : k;
          s[q - 2] = m + rq;
          s[q - 1] = std::max(rq, n);
        }
      }
      if (planar) s.insert(s.begin(), 2);
      return {strong(x.dtype, std::move(s))};
    }
    case Op::TriangularSolve: case Op::Solve: {
      const auto& x = in[0];
      const auto& y = in[1];
      const std::size_t r = x.shape.size();
      if (!is_inexact(x.dtype) || x.dtype != y.dtype || r < 2 || y.shape.size() != r ||
          x.shape[r - 1] != x.shape[r - 2] || !std::equal(x.shape.begin(), x.shape.end() - 1, y.shape.begin())) {
        fail(op, "operands " + x.str() + " and " + y.str() +
                     " are not [..., n, n] and [..., n, k] of one float or complex dtype");
      }
      return {strong(x.dtype, y.shape)};
    }
    case Op::Threefry: {
      same_types(op, in[0], in[1]);
      if (in[0].dtype != DType::i32) fail(op, "needs int32 key words, got " + in[0].str());
      Shape s = in[0].shape;
      s.push_back(2);
      s.insert(s.end(), a.shape.begin(), a.shape.end());
      return {strong(DType::i32, std::move(s))};
    }
    case Op::Eig: {
      const auto& x = in[0];
      const std::size_t r = x.shape.size();
      const bool lowered = (a.mode & 4) != 0, planar_in = (a.mode & 2) != 0;
      if (a.mode < 0 || a.mode > 7 || (planar_in && !lowered)) fail(op, "unknown mode " + std::to_string(a.mode));
      const std::size_t lead = planar_in ? 1 : 0;  // the planes axis of a lowered complex operand
      if (r < 2 + lead || x.shape[r - 1] != x.shape[r - 2] || (planar_in && x.shape[0] != 2) ||
          (lowered ? !is_float(x.dtype) : !is_inexact(x.dtype))) {
        fail(op, "operand " + x.str() + " is not a float or complex [..., n, n] stack of square matrices");
      }
      Shape s(x.shape.begin() + static_cast<std::ptrdiff_t>(lead), x.shape.end());
      if (a.mode & 1) s.pop_back();
      else s[s.size() - 2] += 1;
      if (!lowered) return {strong(complex_of(complex_part(x.dtype)), std::move(s))};
      s.insert(s.begin(), 2);
      return {strong(x.dtype, std::move(s))};
    }
    case Op::Real: case Op::Imag:
      if (!is_complex(in[0].dtype)) fail(op, "needs a complex operand, got " + in[0].str());
      return {strong(complex_part(in[0].dtype), in[0].shape)};
    case Op::Conj:
      if (!is_complex(in[0].dtype)) fail(op, "needs a complex operand, got " + in[0].str());
      return {strong(in[0].dtype, in[0].shape)};
    case Op::Complex:
      same_types(op, in[0], in[1]);
      if (!is_float(in[0].dtype)) fail(op, "needs float parts, got " + in[0].str());
      return {strong(complex_of(in[0].dtype), in[0].shape)};
    case Op::Fft: {
      const auto& x = in[0];
      if (a.mode < 0 || a.mode > 7 || ((a.mode & 2) && !is_float(x.dtype)) || ((a.mode & 4) && !(a.mode & 2))) {
        fail(op, "unknown mode " + std::to_string(a.mode));
      }
      if ((a.mode & 2) && !x.shape.empty()) {  // the lowered real-input forms
        Shape s = x.shape;
        if (a.mode & 4) s.back() = s.back() / 2 + 1;
        s.insert(s.begin(), 2);
        return {strong(x.dtype, std::move(s))};
      }
      const bool lowered = is_float(x.dtype) && x.shape.size() >= 2 && x.shape.front() == 2;
      if (!(is_complex(x.dtype) && !x.shape.empty()) && !lowered) {
        fail(op, "needs a complex operand of rank >= 1 (or its lowered planar float [2, ..., n] form), got " + x.str());
      }
      return {strong(x.dtype, x.shape)};
    }
    case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::CustomVjpLin: case Op::Checkpoint: case Op::LinearSolve:
      return infer_region_types(op, in, a, regions);
    case Op::HostCall:
      if (a.num_consts >= 0 && in.size() != 1) fail(op, "a linear host call takes one operand");
      return {strong(a.dtype, a.shape)};
    case Op::NamedAxis: {
      if (a.mode == kAxisIndex) {
        if (!in.empty()) fail(op, "axis_index takes no operand");
        return {strong(DType::i32, {})};
      }
      if (in.size() != 1) fail(op, "takes one operand");
      if (a.length < 1) fail(op, "the axis size must be positive");
      const ValueType& x = in[0];
      if (a.mode == kAxisGather) {
        Shape s = x.shape;
        const auto r = static_cast<std::int64_t>(s.size());
        const bool tiled = a.num_carry != 0;
        if (a.axis < 0 || a.axis > r - (tiled ? 1 : 0)) fail(op, "all_gather axis out of range for " + x.str());
        if (tiled) s[static_cast<std::size_t>(a.axis)] *= a.length;
        else s.insert(s.begin() + a.axis, a.length);
        return {strong(x.dtype, std::move(s))};
      }
      if (a.mode < kAxisSum || a.mode > kAxisPermute) fail(op, "unknown collective");
      return {strong(x.dtype, x.shape)};
    }
  }
  throw InternalError("infer_types: unknown op");
}

}  // namespace qb
