// Module functions and their Array-method and operator forms. Each converts its Python
// arguments, forms a cache key from the function name and static attributes, and runs the
// user-level builder function of api/ as a cached eager program (DESIGN.md rule 5).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>

#include "quabla/api/eager.h"
#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/python/device_aware.h"
#include "quabla/python/dtype_object.h"

namespace qb::py {

namespace {

using api::V;
using Vs = std::vector<ValueId>;

template <class F>
Array call1(std::string key, nb::handle x, F&& f) {
  Array a = to_operand(x);
  return eager_call(std::move(key), std::span(&a, 1),
                    [&](Builder& b, std::span<const ValueId> p) { return Vs{f(b, p[0])}; })[0];
}

// A Python int beside an array of a narrower integer dtype must fit in it (JAX raises
// OverflowError); under a trace the same check runs on the constant (api::check_weak_int_fits).
void check_python_ints(std::span<const Array> args, const std::string& name) {
  std::optional<DType> narrow;
  for (const Array& a : args) {
    if (!a.type.weak && is_int(a.dtype()) && a.dtype() != DType::i64) narrow = a.dtype();
  }
  if (!narrow) return;
  for (const Array& a : args) {
    if (!a.type.weak || a.dtype() != DType::i64 || a.is_tracer() || a.size() != 1) continue;
    const std::int64_t v = *a.storage->as<std::int64_t>();
    if (v < int_min(*narrow) || v > int_max(*narrow)) {
      throw ValueError(name.substr(0, name.find(':')) + ": the Python int " + std::to_string(v) + " does not fit in " +
                       std::string(dtype_name(*narrow)) + "; convert the array with .astype(qb.int64) first");
    }
  }
}

template <class F>
Array call2(std::string key, nb::handle x, nb::handle y, F&& f) {
  Array args[] = {to_operand(x), to_operand(y)};
  check_python_ints(args, key);
  return eager_call(std::move(key), args, [&](Builder& b, std::span<const ValueId> p) { return Vs{f(b, p[0], p[1])}; })[0];
}

std::vector<Array> operands(nb::handle seq, const char* fname) {
  if (!PyList_Check(seq.ptr()) && !PyTuple_Check(seq.ptr())) {
    throw TypeError(std::string(fname) + ": expects a list or tuple of arrays");
  }
  std::vector<Array> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) out.push_back(to_operand(h));
  return out;
}

template <class F, class... Extra>
void def_fn(nb::module_& m, const char* name, F f, const Extra&... extra) {
  m.def(name, device_aware(name, std::move(f)), extra...);
}

// Binds `f` as module function `name` and as the Array method of the same name (the
// method's self is the function's first argument, so its annotation is dropped there).
template <class F>
void def_both(nb::module_& m, nb::class_<Array>& cls, const char* name, F f) {
  def_fn(m, name, f);
  cls.def(name, f);
}
template <class F, class First, class... Rest>
void def_both(nb::module_& m, nb::class_<Array>& cls, const char* name, F f, const First& first, const Rest&... rest) {
  def_fn(m, name, f, first, rest...);
  cls.def(name, f, rest...);
}

struct Unary {
  const char* name;
  Op op;
};
constexpr Unary kUnary[] = {
    {"sin", Op::Sin},       {"cos", Op::Cos},         {"tan", Op::Tan},         {"arcsin", Op::Asin},
    {"arccos", Op::Acos},   {"arctan", Op::Atan},     {"sinh", Op::Sinh},       {"cosh", Op::Cosh},
    {"tanh", Op::Tanh},     {"arcsinh", Op::Asinh},   {"arccosh", Op::Acosh},   {"arctanh", Op::Atanh},
    {"exp", Op::Exp},       {"expm1", Op::Expm1},     {"exp2", Op::Exp2},       {"log", Op::Log},
    {"log1p", Op::Log1p},   {"log2", Op::Log2},       {"log10", Op::Log10},     {"sqrt", Op::Sqrt},
    {"cbrt", Op::Cbrt},     {"erf", Op::Erf},         {"erfc", Op::Erfc},       {"erf_inv", Op::ErfInv},       {"abs", Op::Abs},
    {"absolute", Op::Abs},  {"sign", Op::Sign},       {"floor", Op::Floor},     {"ceil", Op::Ceil},
    {"round", Op::Round},   {"sigmoid", Op::Logistic}, {"softplus", Op::Softplus}, {"negative", Op::Neg},
    {"stop_gradient", Op::StopGradient},
};

struct Binary {
  const char* name;
  Op op;
};
constexpr Binary kBinary[] = {
    {"add", Op::Add},         {"subtract", Op::Sub},  {"multiply", Op::Mul},   {"divide", Op::Div},
    {"true_divide", Op::Div}, {"arctan2", Op::Atan2}, {"atan2", Op::Atan2},     {"hypot", Op::Hypot},
    {"fmod", Op::Rem},        {"maximum", Op::Max},   {"minimum", Op::Min},     {"logaddexp", Op::LogAddExp},
};
constexpr Binary kCompare[] = {
    {"greater", Op::Gt}, {"greater_equal", Op::Ge}, {"less", Op::Lt},
    {"less_equal", Op::Le}, {"equal", Op::Eq},      {"not_equal", Op::Ne},
};

Array binary_op(Op op, const char* name, nb::handle x, nb::handle y) {
  return call2(name, x, y, [&](Builder& b, V a, V c) { return api::binary(b, name, op, a, c); });
}
Array compare_op(Op op, const char* name, nb::handle x, nb::handle y) {
  return call2(name, x, y, [&](Builder& b, V a, V c) { return api::compare(b, name, op, a, c); });
}
Array logical_op(Op op, const char* name, nb::handle x, nb::handle y, bool strict) {
  return call2(std::string(name) + (strict ? "!" : ""), x, y,
               [&](Builder& b, V a, V c) { return api::logical(b, name, op, a, c, strict); });
}

Array bitwise_op(Op op, const char* name, nb::handle x, nb::handle y) {
  return call2(name, x, y, [&](Builder& b, V a, V c) { return api::bitwise(b, name, op, a, c); });
}

Array power_op(nb::handle x, nb::handle y) {
  if (PyLong_Check(y.ptr()) && !PyBool_Check(y.ptr())) {
    const auto n = nb::cast<std::int64_t>(y);
    if (n >= 0) return call1("ipow:" + std::to_string(n), x, [n](Builder& b, V a) { return api::integer_power(b, a, n); });
  }
  return call2("power", x, y, [](Builder& b, V a, V c) { return api::power(b, a, c); });
}

Array reduce_op(Op op, const char* name, nb::handle x, nb::handle axis, bool keepdims) {
  auto axes = parse_axes(axis, name);
  return call1(std::string(name) + axes_key(axes) + (keepdims ? "k" : ""), x,
               [&](Builder& b, V a) { return api::reduce(b, name, op, a, axes, keepdims); });
}

// Static integer indices from an int, a nested list or an integer NumPy array.
std::pair<std::vector<std::int64_t>, Shape> parse_indices(nb::handle obj, const char* fname) {
  if (PyBool_Check(obj.ptr()) || PyFloat_Check(obj.ptr())) {
    throw TypeError(std::string(fname) + ": indices must be integers, got " + nb::type_name(obj.type()).c_str());
  }
  Array a = to_array(obj);
  a.require_concrete(fname);
  if (a.dtype() == DType::bool_) throw TypeError(std::string(fname) + ": indices must be integers, not bools; use qb.where for masks");
  std::vector<std::int64_t> idx;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    if (a.dtype() == DType::i32 || a.dtype() == DType::i64) {
      idx.push_back(a.dtype() == DType::i32 ? a.storage->as<std::int32_t>()[i] : a.storage->as<std::int64_t>()[i]);
      continue;
    }
    const double v = a.dtype() == DType::f32 ? a.storage->as<float>()[i] : a.storage->as<double>()[i];
    if (v != std::floor(v) || std::abs(v) > 9.0e15) {
      throw TypeError(std::string(fname) + ": indices must be integers, got " + std::to_string(v));
    }
    idx.push_back(static_cast<std::int64_t>(v));
  }
  return {idx, a.shape()};
}

// A comparison operator that yields NotImplemented (so Python falls back) for operands we
// cannot convert, as NumPy does for `x == None`.
template <class F>
nb::object or_not_implemented(F&& f) {
  try {
    return nb::cast(f());
  } catch (const TypeError&) {
    return nb::borrow(Py_NotImplemented);
  }
}

}  // namespace

void bind_functions(nb::module_& m, nb::class_<Array>& cls) {
  for (const Unary& u : kUnary) {
    const Unary spec = u;
    def_both(m, cls, spec.name, [spec](nb::handle x) {
      return call1(spec.name, x, [&](Builder& b, V a) { return api::unary(b, spec.name, spec.op, a); });
    });
  }
  for (const Binary& bi : kBinary) {
    const Binary spec = bi;
    def_both(m, cls, spec.name, [spec](nb::handle x, nb::handle y) { return binary_op(spec.op, spec.name, x, y); });
  }
  for (const Binary& bi : kCompare) {
    const Binary spec = bi;
    def_both(m, cls, spec.name, [spec](nb::handle x, nb::handle y) { return compare_op(spec.op, spec.name, x, y); });
  }
  for (auto [name, op] : {std::pair{"isnan", Op::IsNan}, std::pair{"isinf", Op::IsInf}, std::pair{"isfinite", Op::IsFinite}}) {
    def_both(m, cls, name, [name, op](nb::handle x) {
      return call1(name, x, [&](Builder& b, V a) { return api::predicate(b, name, op, a); });
    });
  }
  def_both(m, cls, "power", &power_op);
  // Complex parts and the FFT's kernel (python/quabla/_complex.py and fft.py build the
  // jax.numpy functions on these).
  def_fn(m, "_real", [](nb::handle x) { return call1("real", x, [](Builder& b, V a) { return api::real_part(b, a); }); });
  def_fn(m, "_imag", [](nb::handle x) { return call1("imag", x, [](Builder& b, V a) { return api::imag_part(b, a); }); });
  def_fn(m, "_conj", [](nb::handle x) { return call1("conj", x, [](Builder& b, V a) { return api::conjugate(b, a); }); });
  def_fn(m, "_complex", [](nb::handle re, nb::handle im) {
    return call2("complex", re, im, [](Builder& b, V a, V c) { return api::make_complex(b, a, c); });
  });
  def_fn(m, "_fft_last", [](nb::handle x, bool inverse) {
    return call1(inverse ? "ifft" : "fft", x, [inverse](Builder& b, V a) { return api::fft_last(b, a, inverse); });
  }, nb::arg("x"), nb::arg("inverse") = false);
  def_both(m, cls, "mod", [](nb::handle x, nb::handle y) { return call2("mod", x, y, &api::mod); });
  def_both(m, cls, "remainder", [](nb::handle x, nb::handle y) { return call2("mod", x, y, &api::mod); });
  def_fn(m, "floor_divide", [](nb::handle x, nb::handle y) { return call2("floor_divide", x, y, &api::floor_divide); });
  for (auto [fname, op] : {std::pair{"bitwise_and", Op::And}, std::pair{"bitwise_or", Op::Or},
                           std::pair{"bitwise_xor", Op::Xor}, std::pair{"left_shift", Op::ShiftLeft},
                           std::pair{"right_shift", Op::ShiftRight}}) {
    def_fn(m, fname, [op, fname](nb::handle x, nb::handle y) { return bitwise_op(op, fname, x, y); });
  }
  def_fn(m, "bitwise_not", [](nb::handle x) { return call1("invert", x, &api::bitwise_not); });
  def_fn(m, "invert", [](nb::handle x) { return call1("invert", x, &api::bitwise_not); });
  def_both(m, cls, "square", [](nb::handle x) { return call1("square", x, &api::square); });
  def_both(m, cls, "reciprocal", [](nb::handle x) { return call1("reciprocal", x, &api::reciprocal); });
  def_both(m, cls, "relu", [](nb::handle x) { return call1("relu", x, &api::relu); });
  def_both(m, cls, "silu", [](nb::handle x) { return call1("silu", x, &api::silu); });
  def_both(m, cls, "gelu", [](nb::handle x, bool approximate) {
    return call1(approximate ? "gelu~" : "gelu", x, [approximate](Builder& b, V a) { return api::gelu(b, a, approximate); });
  }, nb::arg("x"), nb::arg("approximate") = true);
  def_both(m, cls, "logical_and", [](nb::handle x, nb::handle y) { return logical_op(Op::And, "logical_and", x, y, false); });
  def_both(m, cls, "logical_or", [](nb::handle x, nb::handle y) { return logical_op(Op::Or, "logical_or", x, y, false); });
  def_both(m, cls, "logical_xor", [](nb::handle x, nb::handle y) { return logical_op(Op::Ne, "logical_xor", x, y, false); });
  def_both(m, cls, "logical_not", [](nb::handle x) {
    return call1("logical_not", x, [](Builder& b, V a) { return api::logical_not(b, a, false); });
  });
  def_both(m, cls, "clip", [](nb::handle x, nb::handle lo, nb::handle hi) {
    std::vector<Array> args{to_operand(x)};
    const bool has_lo = !lo.is_none(), has_hi = !hi.is_none();
    if (has_lo) args.push_back(to_operand(lo));
    if (has_hi) args.push_back(to_operand(hi));
    std::string key = std::string("clip") + (has_lo ? "l" : "") + (has_hi ? "h" : "");
    return eager_call(key, args, [&](Builder& b, std::span<const ValueId> p) {
      std::optional<V> l, h;
      if (has_lo) l = p[1];
      if (has_hi) h = p[has_lo ? 2 : 1];
      return Vs{api::clip(b, p[0], l, h)};
    })[0];
  }, nb::arg("x"), nb::arg("min") = nb::none(), nb::arg("max") = nb::none());
  def_both(m, cls, "nan_to_num", [](nb::handle x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
    std::string key = "nan_to_num:" + std::to_string(nan) + ":" + (posinf ? std::to_string(*posinf) : "d") + ":" +
                      (neginf ? std::to_string(*neginf) : "d");
    return call1(key, x, [&](Builder& b, V a) { return api::nan_to_num(b, a, nan, posinf, neginf); });
  }, nb::arg("x"), nb::arg("nan") = 0.0, nb::arg("posinf") = nb::none(), nb::arg("neginf") = nb::none());
  // where(condition) alone is nonzero(condition) (NumPy's and jax.numpy's one-argument form,
  // with jax.numpy's size= and fill_value= for jit).
  def_fn(m, "where", [](nb::handle c, nb::handle x, nb::handle y, nb::handle size, nb::handle fill_value) -> nb::object {
    if (x.is_none() && y.is_none()) {
      nb::dict kw;
      kw["size"] = size;
      kw["fill_value"] = fill_value;
      return nb::module_::import_("quabla").attr("nonzero")(c, **kw);
    }
    if (x.is_none() || y.is_none()) throw TypeError("where: pass both x and y, or neither (where(condition) is nonzero(condition))");
    if (!size.is_none() || !fill_value.is_none()) throw TypeError("where: size= and fill_value= go with where(condition) alone");
    Array args[] = {to_operand(c), to_operand(x), to_operand(y)};
    return nb::cast(eager_call("where", args, [](Builder& b, std::span<const ValueId> p) {
      return Vs{api::where(b, p[0], p[1], p[2])};
    })[0]);
  }, nb::arg("condition"), nb::arg("x") = nb::none(), nb::arg("y") = nb::none(), nb::arg("size") = nb::none(),
     nb::arg("fill_value") = nb::none());
  // copy= (NumPy's, jax.numpy's) changes nothing: arrays are immutable, so sharing is safe.
  def_both(m, cls, "astype", [](nb::handle x, nb::handle dtype, nb::handle /*copy*/) {
    auto d = parse_dtype(dtype);
    if (!d) throw TypeError("astype: dtype must be qb.float32, qb.float64 or qb.bool_, not None");
    if (!is_complex(*d) && nb::isinstance<Array>(x) && is_complex(nb::cast<const Array&>(x).dtype())) {
      // NumPy's and JAX's warning: the result is the real part.
      nb::object cls = nb::borrow(PyExc_UserWarning);
      try {
        cls = nb::module_::import_("numpy.exceptions").attr("ComplexWarning");
      } catch (const nb::python_error&) {  // no NumPy: a UserWarning says the same
      }
      if (PyErr_WarnEx(cls.ptr(), "Casting complex values to real discards the imaginary part", 1) < 0) {
        throw nb::python_error();
      }
    }
    return to_array(x, d);
  }, nb::arg("x"), nb::arg("dtype"), nb::arg("copy") = nb::none());

  // ---- reductions
  // NumPy's and jax.numpy's dtype=, out=, where= and initial= (NumPy's np.sum(x) calls
  // x.sum(axis=, dtype=, out=)): when any is given, quabla._reduce_options composes them
  // around the plain reduction; the plain call pays nothing for them.
  auto with_options = [](const char* name, nb::handle x, nb::handle axis, bool keepdims, nb::handle dtype,
                         nb::handle out, nb::handle where, nb::handle initial, nb::handle ddof) {
    return nb::module_::import_("quabla._reduce_options")
        .attr("reduce")(name, x, axis, keepdims, dtype, out, where, initial, ddof);
  };
  for (auto [name, op] : {std::pair{"sum", Op::ReduceSum}, std::pair{"prod", Op::ReduceProd}, std::pair{"max", Op::ReduceMax},
                          std::pair{"min", Op::ReduceMin}, std::pair{"amax", Op::ReduceMax}, std::pair{"amin", Op::ReduceMin},
                          std::pair{"any", Op::ReduceAny}, std::pair{"all", Op::ReduceAll}}) {
    def_both(m, cls, name, [name, op, with_options](nb::handle x, nb::handle axis, bool keepdims, nb::handle dtype,
                                                    nb::handle out, nb::handle where, nb::handle initial,
                                                    bool promote_integers) -> nb::object {
      // jax.numpy's promote_integers=False: an integer sum or product keeps its dtype.
      nb::object own_dtype;  // keeps the dtype object alive while dtype refers to it
      if (!promote_integers && dtype.is_none() && (op == Op::ReduceSum || op == Op::ReduceProd)) {
        const Array a = to_operand(x);
        if (is_int(a.dtype())) {
          own_dtype = nb::cast(DTypeObject{a.dtype()});
          dtype = own_dtype;
        }
      }
      if (dtype.is_none() && out.is_none() && where.is_none() && initial.is_none())
        return nb::cast(reduce_op(op, name, x, axis, keepdims));
      return with_options(name, x, axis, keepdims, dtype, out, where, initial, nb::none());
    }, nb::arg("x"), nb::arg("axis") = nb::none(), nb::arg("keepdims") = false, nb::arg("dtype") = nb::none(),
             nb::arg("out") = nb::none(), nb::arg("where") = nb::none(), nb::arg("initial") = nb::none(),
             nb::arg("promote_integers") = true);
  }
  def_both(m, cls, "mean", [with_options](nb::handle x, nb::handle axis, bool keepdims, nb::handle dtype, nb::handle out,
                                          nb::handle where) -> nb::object {
    if (!dtype.is_none() || !out.is_none() || !where.is_none())
      return with_options("mean", x, axis, keepdims, dtype, out, where, nb::none(), nb::none());
    auto axes = parse_axes(axis, "mean");
    return nb::cast(call1("mean" + axes_key(axes) + (keepdims ? "k" : ""), x,
                          [&](Builder& b, V a) { return api::mean(b, a, axes, keepdims); }));
  }, nb::arg("x"), nb::arg("axis") = nb::none(), nb::arg("keepdims") = false, nb::arg("dtype") = nb::none(),
           nb::arg("out") = nb::none(), nb::arg("where") = nb::none());
  for (auto [name, is_std] : {std::pair{"var", false}, std::pair{"std", true}}) {
    def_both(m, cls, name, [name, is_std, with_options](nb::handle x, nb::handle axis, double ddof, bool keepdims,
                                                        nb::handle dtype, nb::handle out, nb::handle where,
                                                        std::optional<double> correction) -> nb::object {
      if (correction) {  // the array API's name for ddof
        if (ddof != 0.0) throw ValueError(std::string(name) + ": give ddof or correction, not both");
        ddof = *correction;
      }
      if (!dtype.is_none() || !out.is_none() || !where.is_none())
        return with_options(name, x, axis, keepdims, dtype, out, where, nb::none(), nb::float_(ddof));
      auto axes = parse_axes(axis, name);
      return nb::cast(call1(std::string(name) + axes_key(axes) + ":" + std::to_string(ddof) + (keepdims ? "k" : ""), x, [&](Builder& b, V a) {
        if (b.type(a).dtype == DType::bool_) throw TypeError(std::string(name) + ": not defined for bool arrays; use astype first");
        return is_std ? api::std_(b, a, axes, ddof, keepdims) : api::var(b, a, axes, ddof, keepdims);
      }));
    }, nb::arg("x"), nb::arg("axis") = nb::none(), nb::arg("ddof") = 0.0, nb::arg("keepdims") = false,
             nb::arg("dtype") = nb::none(), nb::arg("out") = nb::none(), nb::arg("where") = nb::none(),
             nb::arg("correction").none() = nb::none());
  }
  def_both(m, cls, "logsumexp", [](nb::handle x, nb::handle axis, bool keepdims) {
    auto axes = parse_axes(axis, "logsumexp");
    return call1("logsumexp" + axes_key(axes) + (keepdims ? "k" : ""), x, [&](Builder& b, V a) {
      if (b.type(a).dtype == DType::bool_) throw TypeError("logsumexp: not defined for bool arrays; use astype first");
      return api::logsumexp(b, a, axes, keepdims);
    });
  }, nb::arg("x"), nb::arg("axis") = nb::none(), nb::arg("keepdims") = false);
  for (auto [name, is_log] : {std::pair{"softmax", false}, std::pair{"log_softmax", true}}) {
    def_both(m, cls, name, [name, is_log](nb::handle x, std::int64_t axis) {
      return call1(std::string(name) + std::to_string(axis), x, [&](Builder& b, V a) {
        if (b.type(a).dtype == DType::bool_) throw TypeError(std::string(name) + ": not defined for bool arrays; use astype first");
        return is_log ? api::log_softmax(b, a, axis) : api::softmax(b, a, axis);
      });
    }, nb::arg("x"), nb::arg("axis") = -1);
  }
  def_both(m, cls, "norm", [](nb::handle x, nb::handle axis, bool keepdims) {
    auto axes = parse_axes(axis, "norm");
    return call1("norm" + axes_key(axes) + (keepdims ? "k" : ""), x, [&](Builder& b, V a) { return api::norm(b, a, axes, keepdims); });
  }, nb::arg("x"), nb::arg("axis") = nb::none(), nb::arg("keepdims") = false);
  def_both(m, cls, "cumsum", [](nb::handle x, std::optional<std::int64_t> axis, bool reverse) {
    return call1("cumsum" + (axis ? std::to_string(*axis) : std::string("n")) + (reverse ? "r" : ""), x,
                 [&](Builder& b, V a) { return api::cumsum(b, a, axis, reverse); });
  }, nb::arg("x"), nb::arg("axis") = nb::none(), nb::arg("reverse") = false);

  // ---- shapes
  def_fn(m, "reshape", [](nb::handle x, nb::handle shape) {
    auto s = parse_shape(shape, "reshape");
    return call1("reshape" + shape_str(s), x, [&](Builder& b, V a) { return api::reshape(b, a, s); });
  }, nb::arg("x"), nb::arg("shape"));
  cls.def("reshape", [](nb::handle x, nb::args shape, nb::kwargs options) -> nb::object {
    if (shape.size() == 0) throw TypeError("reshape: missing the shape; pass it as x.reshape(2, 3) or x.reshape((2, 3))");
    nb::handle s = shape.size() == 1 ? shape[0] : nb::handle(shape);
    if (options.size() != 0)  // order= (column-major): composed in Python
      return nb::module_::import_("quabla._numpy_names").attr("reshape")(x, s, **options);
    auto sh = parse_shape(s, "reshape");
    return nb::cast(call1("reshape" + shape_str(sh), x, [&](Builder& b, V a) { return api::reshape(b, a, sh); }));
  });
  def_fn(m, "ravel", [](nb::handle x) { return call1("ravel", x, [](Builder& b, V a) {
    return api::reshape(b, a, std::vector<std::int64_t>{-1}); }); });
  cls.def("ravel", [](nb::handle x) { return call1("ravel", x, [](Builder& b, V a) {
    return api::reshape(b, a, std::vector<std::int64_t>{-1}); }); });
  def_fn(m, "transpose", [](nb::handle x, nb::handle axes) {
    auto p = parse_axes(axes, "transpose");
    return call1("transpose" + axes_key(p), x, [&](Builder& b, V a) { return api::transpose(b, a, p); });
  }, nb::arg("x"), nb::arg("axes") = nb::none());
  cls.def("transpose", [](nb::handle x, nb::args axes) {
    api::Axes p = axes.size() == 0 ? std::nullopt : parse_axes(axes.size() == 1 ? axes[0] : nb::handle(axes), "transpose");
    return call1("transpose" + axes_key(p), x, [&](Builder& b, V a) { return api::transpose(b, a, p); });
  });
  cls.def_prop_ro("T", [](nb::handle x) {
    return call1("transposeall", x, [](Builder& b, V a) { return api::transpose(b, a, std::nullopt); });
  });
  def_both(m, cls, "broadcast_to", [](nb::handle x, nb::handle shape) {
    auto s = parse_shape(shape, "broadcast_to");
    return call1("broadcast_to" + shape_str(s), x, [&](Builder& b, V a) { return api::broadcast_to(b, a, s); });
  }, nb::arg("x"), nb::arg("shape"));
  def_both(m, cls, "squeeze", [](nb::handle x, nb::handle axis) {
    auto axes = parse_axes(axis, "squeeze");
    return call1("squeeze" + axes_key(axes), x, [&](Builder& b, V a) { return api::squeeze(b, a, axes); });
  }, nb::arg("x"), nb::arg("axis") = nb::none());
  def_fn(m, "expand_dims", [](nb::handle x, nb::handle axis) {
    auto axes = parse_axes(axis, "expand_dims");
    if (!axes) throw TypeError("expand_dims: axis must be an int or a tuple of ints");
    return call1("expand_dims" + axes_key(axes), x, [&](Builder& b, V a) { return api::expand_dims(b, a, *axes); });
  }, nb::arg("x"), nb::arg("axis"));
  def_both(m, cls, "flip", [](nb::handle x, nb::handle axis) {
    auto axes = parse_axes(axis, "flip");
    return call1("flip" + axes_key(axes), x, [&](Builder& b, V a) { return api::flip(b, a, axes); });
  }, nb::arg("x"), nb::arg("axis") = nb::none());
  for (auto [name, lower] : {std::pair{"tril", true}, std::pair{"triu", false}}) {
    def_fn(m, name, [name, lower](nb::handle x, std::int64_t k) {
      return call1(std::string(name) + std::to_string(k), x, [&](Builder& b, V a) { return api::tri_mask(b, a, k, lower); });
    }, nb::arg("x"), nb::arg("k") = 0);
  }
  for (const char* name : {"concat", "concatenate"}) {
    def_fn(m, name, [](nb::handle xs, std::int64_t axis) {
      auto args = operands(xs, "concat");
      return eager_call("concat" + std::to_string(axis), args, [&](Builder& b, std::span<const ValueId> p) {
        return Vs{api::concat(b, p, axis)};
      })[0];
    }, nb::arg("arrays"), nb::arg("axis") = 0);
  }
  def_fn(m, "stack", [](nb::handle xs, std::int64_t axis) {
    auto args = operands(xs, "stack");
    return eager_call("stack" + std::to_string(axis), args, [&](Builder& b, std::span<const ValueId> p) {
      return Vs{api::stack(b, p, axis)};
    })[0];
  }, nb::arg("arrays"), nb::arg("axis") = 0);
  def_fn(m, "_pad_constant", [](nb::handle x, nb::handle value, const std::vector<std::int64_t>& low,
                            const std::vector<std::int64_t>& high, const std::vector<std::int64_t>& interior) {
    return call2("pad" + shape_str(low) + shape_str(high) + shape_str(interior), x, value,
                 [&](Builder& b, V a, V v) { return api::pad_constant(b, a, v, low, high, interior); });
  }, nb::arg("x"), nb::arg("value"), nb::arg("low"), nb::arg("high"), nb::arg("interior") = std::vector<std::int64_t>{});
  def_fn(m, "split", [](nb::handle x, nb::handle sections, std::int64_t axis) {
    Array a = to_array(x);
    std::int64_t n = 0;
    std::vector<std::int64_t> indices;
    if (PyIndex_Check(sections.ptr()) && !PyBool_Check(sections.ptr()) && !nb::isinstance<Array>(sections)) {
      n = parse_int64(sections, "split", "the number of sections");
      if (n <= 0) throw ValueError("split: the number of sections must be positive, got " + std::to_string(n));
    } else {
      indices = parse_shape(sections, "split");
    }
    return eager_call("split" + std::to_string(n) + shape_str(indices) + ":" + std::to_string(axis), std::span(&a, 1),
                      [&](Builder& b, std::span<const ValueId> p) { return api::split(b, p[0], indices, n, axis); });
  }, nb::arg("x"), nb::arg("indices_or_sections"), nb::arg("axis") = 0);

  // ---- static integer indices
  def_both(m, cls, "gather", [](nb::handle x, nb::handle indices, std::int64_t axis) {
    auto [idx, ishape] = parse_indices(indices, "gather");
    return call1("gather" + shape_str(idx) + shape_str(ishape) + ":" + std::to_string(axis), x,
                 [&](Builder& b, V a) { return api::gather(b, a, idx, ishape, axis); });
  }, nb::arg("x"), nb::arg("indices"), nb::arg("axis") = 0);
  def_fn(m, "scatter_add", [](nb::handle x, nb::handle indices, nb::handle updates, std::int64_t axis) {
    auto [idx, ishape] = parse_indices(indices, "scatter_add");
    return call2("scatter_add" + shape_str(idx) + shape_str(ishape) + ":" + std::to_string(axis), x, updates,
                 [&](Builder& b, V a, V u) { return api::scatter_add(b, a, idx, ishape, u, axis); });
  }, nb::arg("x"), nb::arg("indices"), nb::arg("updates"), nb::arg("axis") = 0);

  // ---- traced-index primitives (python/quabla/_indexing.py composes the NumPy forms)
  def_fn(m, "_take", [](nb::handle x, nb::handle idx, std::int64_t axis, bool fill) {
    return call2("take:" + std::to_string(axis) + (fill ? "f" : "c"), x, idx,
                 [&](Builder& b, V a, V i) { return api::take_indices(b, a, i, axis, fill); });
  }, nb::arg("x"), nb::arg("indices"), nb::arg("axis"), nb::arg("fill"));
  def_fn(m, "_scatter", [](nb::handle x, nb::handle idx, nb::handle updates, std::int64_t axis, std::int64_t mode,
                       bool unique) {
    Array args[] = {to_operand(x), to_operand(idx), to_operand(updates)};
    const Array checked[] = {args[0], args[2]};
    check_python_ints(checked, "scatter");
    return eager_call("scatter:" + std::to_string(axis) + ":" + std::to_string(mode) + (unique ? "u" : ""), args,
                      [&](Builder& b, std::span<const ValueId> p) {
                        return Vs{api::scatter_indices(b, p[0], p[1], p[2], axis, mode, unique)};
                      })[0];
  }, nb::arg("x"), nb::arg("indices"), nb::arg("updates"), nb::arg("axis"), nb::arg("mode"), nb::arg("unique"));
  // A loop index as the default integer, still weak (it adopts the dtype of what it meets).
  def_fn(m, "_weak_index", [](nb::handle x) {
    return call1("weak_index", x, [](Builder& b, V a) {
      V r = api::astype(b, a, default_int_dtype());
      b.graph().values[r].weak = true;
      return r;
    });
  }, nb::arg("x"));
  def_fn(m, "_argsort", [](nb::handle x, bool descending) {
    return call1(std::string("argsort") + (descending ? "d" : "a"), x,
                 [&](Builder& b, V a) { return api::argsort_last(b, a, descending); });
  }, nb::arg("x"), nb::arg("descending"));
  def_fn(m, "_searchsorted", [](nb::handle a, nb::handle v, bool right) {
    return call2(std::string("searchsorted") + (right ? "r" : "l"), a, v,
                 [&](Builder& b, V x, V y) { return api::searchsorted_last(b, x, y, right); });
  }, nb::arg("sorted"), nb::arg("values"), nb::arg("right"));

  // ---- products
  def_both(m, cls, "matmul", [](nb::handle x, nb::handle y) { return call2("matmul", x, y, &api::matmul); });
  def_both(m, cls, "dot", [](nb::handle x, nb::handle y) { return call2("dot", x, y, &api::dot); });

  // ---- operators
  auto bin = [&](const char* dunder, const char* rdunder, Op op, const char* name) {
    cls.def(dunder, [op, name](nb::handle x, nb::handle y) { return binary_op(op, name, x, y); });
    cls.def(rdunder, [op, name](nb::handle x, nb::handle y) { return binary_op(op, name, y, x); });
  };
  bin("__add__", "__radd__", Op::Add, "add");
  bin("__sub__", "__rsub__", Op::Sub, "subtract");
  bin("__mul__", "__rmul__", Op::Mul, "multiply");
  bin("__truediv__", "__rtruediv__", Op::Div, "divide");
  cls.def("__mod__", [](nb::handle x, nb::handle y) { return call2("mod", x, y, &api::mod); });
  cls.def("__rmod__", [](nb::handle x, nb::handle y) { return call2("mod", y, x, &api::mod); });
  cls.def("__pow__", [](nb::handle x, nb::handle y) { return power_op(x, y); });
  cls.def("__rpow__", [](nb::handle x, nb::handle y) {
    return call2("power", y, x, [](Builder& b, V a, V c) { return api::power(b, a, c); });
  });
  // Dense linear algebra primitives (qb.linalg composes them: python/quabla/linalg.py).
  def_fn(m, "linalg_cholesky", [](nb::handle a) { return call1("linalg_cholesky", a, &api::linalg_cholesky); });
  def_fn(m, "linalg_slogdet", [](nb::handle a) { return call1("linalg_slogdet", a, &api::linalg_slogdet); });
  def_fn(m, "linalg_eigh", [](nb::handle a) { return call1("linalg_eigh", a, &api::linalg_eigh); });
  def_fn(m, "linalg_lu", [](nb::handle a) { return call1("linalg_lu", a, &api::linalg_lu); });
  def_fn(m, "random_threefry", [](nb::handle k0, nb::handle k1, nb::handle shape) {
    const Shape s = parse_shape(shape, "qb.random");
    return call2("random_threefry:" + shape_str(s), k0, k1,
                 [&s](Builder& bb, V a, V c) { return api::random_threefry(bb, a, c, s); });
  }, nb::arg("k0"), nb::arg("k1"), nb::arg("shape"));
  def_fn(m, "linalg_eig", [](nb::handle a, bool values_only) {
    return call1(values_only ? "linalg_eig:values" : "linalg_eig", a,
                 [values_only](Builder& bb, V x) { return api::linalg_eig(bb, x, values_only); });
  }, nb::arg("a"), nb::arg("values_only"));
  def_fn(m, "linalg_svd", [](nb::handle a, bool full) {
    return call1(full ? "linalg_svd:full" : "linalg_svd", a, [full](Builder& bb, V x) { return api::linalg_svd(bb, x, full); });
  }, nb::arg("a"), nb::arg("full_matrices"));
  def_fn(m, "linalg_qr", [](nb::handle a, bool complete) {
    return call1(complete ? "linalg_qr:complete" : "linalg_qr", a, [complete](Builder& bb, V x) { return api::linalg_qr(bb, x, complete); });
  }, nb::arg("a"), nb::arg("complete"));
  def_fn(m, "linalg_solve", [](nb::handle a, nb::handle b) { return call2("linalg_solve", a, b, &api::linalg_solve); });
  def_fn(m, "linalg_triangular_solve", [](nb::handle a, nb::handle b, bool lower, bool transpose, bool unit_diagonal) {
    const std::string key = std::string("linalg_trisolve:") + (lower ? "l" : "u") + (transpose ? "t" : "n") + (unit_diagonal ? "1" : "0");
    return call2(key, a, b, [=](Builder& bb, V x, V y) {
      return api::linalg_triangular_solve(bb, x, y, lower, transpose, unit_diagonal);
    });
  }, nb::arg("a"), nb::arg("b"), nb::arg("lower"), nb::arg("transpose"), nb::arg("unit_diagonal"));
  cls.def("__matmul__", [](nb::handle x, nb::handle y) { return call2("matmul", x, y, &api::matmul); });
  cls.def("__rmatmul__", [](nb::handle x, nb::handle y) { return call2("matmul", y, x, &api::matmul); });
  cls.def("__neg__", [](nb::handle x) { return call1("negative", x, [](Builder& b, V a) { return api::unary(b, "negative", Op::Neg, a); }); });
  cls.def("__pos__", [](const Array& a) { return a; });
  cls.def("__abs__", [](nb::handle x) { return call1("abs", x, [](Builder& b, V a) { return api::unary(b, "abs", Op::Abs, a); }); });
  cls.def("__invert__", [](nb::handle x) { return call1("invert", x, &api::bitwise_not); });
  for (auto [dunder, rdunder, op, name] :
       {std::tuple{"__and__", "__rand__", Op::And, "and (&)"}, std::tuple{"__or__", "__ror__", Op::Or, "or (|)"},
        std::tuple{"__xor__", "__rxor__", Op::Xor, "xor (^)"},
        std::tuple{"__lshift__", "__rlshift__", Op::ShiftLeft, "left_shift (<<)"},
        std::tuple{"__rshift__", "__rrshift__", Op::ShiftRight, "right_shift (>>)"}}) {
    cls.def(dunder, [op, name](nb::handle x, nb::handle y) { return bitwise_op(op, name, x, y); });
    cls.def(rdunder, [op, name](nb::handle x, nb::handle y) { return bitwise_op(op, name, y, x); });
  }
  cls.def("__floordiv__", [](nb::handle x, nb::handle y) { return call2("floor_divide", x, y, &api::floor_divide); });
  cls.def("__rfloordiv__", [](nb::handle x, nb::handle y) { return call2("floor_divide", y, x, &api::floor_divide); });
  for (auto [dunder, op, name] : {std::tuple{"__lt__", Op::Lt, "less"}, std::tuple{"__le__", Op::Le, "less_equal"},
                                  std::tuple{"__gt__", Op::Gt, "greater"}, std::tuple{"__ge__", Op::Ge, "greater_equal"},
                                  std::tuple{"__eq__", Op::Eq, "equal"}, std::tuple{"__ne__", Op::Ne, "not_equal"}}) {
    cls.def(dunder, [op, name](nb::handle x, nb::handle y) {
      return or_not_implemented([&] { return compare_op(op, name, x, y); });
    }, nb::arg("other").none());
  }

  // x + None and the like: NotImplemented (Python then raises its own "unsupported operand
  // type(s)" TypeError, as for JAX's arrays) where nanobind would report a signature
  // mismatch. Registered after the operators, so only an operand they refuse (None) gets here.
  for (const char* dunder :
       {"__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
        "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
        "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__",
        "__rrshift__"}) {
    cls.def(dunder, [](nb::handle, nb::handle) { return nb::borrow(Py_NotImplemented); }, nb::arg("other").none());
  }

  m.def("_eager_cache_size", &eager_cache_size);
}

}  // namespace qb::py
