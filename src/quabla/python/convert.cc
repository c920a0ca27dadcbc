// Python objects <-> Arrays. Import always copies (arrays are immutable and must not alias
// memory a caller can still write); export is zero-copy through the buffer protocol.
#include <algorithm>
#include <bit>
#include <complex>
#include <cstring>
#include <string_view>

#include "quabla/api/eager.h"
#include "quabla/api/trace.h"

#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/python/device_array.h"
#include "quabla/python/dtype_object.h"

namespace qb::py {

namespace {

std::string py_type_name(nb::handle obj) { return nb::type_name(obj.type()).c_str(); }

// ---- nested lists and tuples
bool is_sequence(nb::handle h) { return PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()); }

// Deeper nesting is refused before anything recurses over it (NumPy's limit is 64 too).
constexpr std::size_t kMaxListDepth = 64;

void list_shape(nb::handle h, Shape& shape) {
  while (is_sequence(h)) {
    const auto n = static_cast<std::int64_t>(PySequence_Fast_GET_SIZE(h.ptr()));
    if (shape.size() == kMaxListDepth) {
      throw ValueError("array: nested sequences deeper than " + std::to_string(kMaxListDepth) +
                       " levels are not supported");
    }
    shape.push_back(n);
    if (n == 0) return;
    h = PySequence_Fast_GET_ITEM(h.ptr(), 0);
  }
}

// A Python int as int64, or a ValueError naming what does not fit.
std::int64_t exact_int64(nb::handle h) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow) {
    throw ValueError("the Python int " + std::string(nb::str(h).c_str()) +
                     " does not fit in int64; Quabla's widest integer type");
  }
  return v;
}

bool is_numpy_integer(nb::handle h) {
  return nb::hasattr(h, "dtype") && nb::hasattr(h, "__index__") && !nb::isinstance<Array>(h) &&
         nb::cast<std::string>(nb::str(h.attr("dtype").attr("kind"))) == std::string("i");
}

bool is_numpy_complex(nb::handle h) {
  return nb::hasattr(h, "dtype") && nb::hasattr(h, "__complex__") && !nb::isinstance<Array>(h) &&
         nb::cast<std::string>(nb::str(h.attr("dtype").attr("kind"))) == std::string("c");
}

struct ListReader {
  explicit ListReader(const Shape& s) : shape(s) {}
  const Shape& shape;
  std::vector<double> values;
  std::vector<double> imags;       // imaginary parts, once a leaf is complex (then one per leaf)
  std::vector<std::int64_t> ints;  // exact values while every leaf is an integer
  bool all_bool = true;
  bool all_int = true;

  void read(nb::handle h, std::size_t depth) {
    if (depth == shape.size()) {
      if (is_sequence(h)) ragged();
      read_leaf(h);
      return;
    }
    if (!is_sequence(h) || PySequence_Fast_GET_SIZE(h.ptr()) != shape[depth]) ragged();
    const auto n = PySequence_Fast_GET_SIZE(h.ptr());
    for (Py_ssize_t i = 0; i < n; ++i) read(PySequence_Fast_GET_ITEM(h.ptr(), i), depth + 1);
  }

  void read_leaf(nb::handle h) {
    nb::object as_complex;
    if (!PyComplex_Check(h.ptr()) && is_numpy_complex(h)) {  // numpy.complex64: a Python complex
      as_complex = nb::steal(PyObject_CallMethod(h.ptr(), "__complex__", nullptr));
      if (!as_complex.is_valid()) throw nb::python_error();
      h = as_complex;
    }
    if (PyComplex_Check(h.ptr())) {
      all_bool = all_int = false;
      imags.resize(values.size(), 0.0);  // the real leaves before the first complex one
      values.push_back(PyComplex_RealAsDouble(h.ptr()));
      imags.push_back(PyComplex_ImagAsDouble(h.ptr()));
      if (PyErr_Occurred()) throw nb::python_error();
      return;
    }
    read_real_leaf(h);
    if (!imags.empty()) imags.push_back(0.0);
  }

  void read_real_leaf(nb::handle h) {
    if (PyBool_Check(h.ptr())) {
      values.push_back(h.ptr() == Py_True ? 1.0 : 0.0);
      ints.push_back(h.ptr() == Py_True);
      return;
    }
    all_bool = false;
    if (PyLong_Check(h.ptr()) || is_numpy_integer(h)) {
      const std::int64_t v = PyLong_Check(h.ptr()) ? exact_int64(h) : nb::cast<std::int64_t>(nb::int_(h));
      ints.push_back(v);
      values.push_back(static_cast<double>(v));
      return;
    }
    all_int = false;
    if (PyFloat_Check(h.ptr())) {
      values.push_back(PyFloat_AsDouble(h.ptr()));
      if (PyErr_Occurred()) throw nb::python_error();
      return;
    }
    if (nb::hasattr(h, "__float__") && !nb::isinstance<Array>(h)) {  // NumPy scalars
      values.push_back(nb::cast<double>(nb::float_(h)));
      return;
    }
    throw TypeError("cannot convert a nested sequence containing " + py_type_name(h) +
                    " to a quabla array; elements must be numbers or bools");
  }

  [[noreturn]] void ragged() const {
    throw ValueError("cannot build an array from a ragged nested sequence: every level must be a list or tuple "
                     "of the same length (expected shape " + shape_str(shape) + ")");
  }
};

Array from_doubles(const std::vector<double>& v, Shape shape, DType dtype, const std::vector<double>& imags = {}) {
  Array a = Array::empty(dtype, std::move(shape));
  const std::size_t elem = itemsize(dtype);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (imags.empty()) store_double(dtype, a.storage->data() + i * elem, v[i]);
    else store_complex(dtype, a.storage->data() + i * elem, v[i], imags[i]);
  }
  return a;
}

}  // namespace

void check_int_fits(DType d, std::int64_t v) {
  if (d == DType::i32 && (v < INT32_MIN || v > INT32_MAX)) {
    const std::string msg = "Python integer " + std::to_string(v) + " out of bounds for int32; pass dtype=qb.int64";
    PyErr_SetString(PyExc_OverflowError, msg.c_str());
    throw nb::python_error();
  }
}

namespace {

Array from_ints(const std::vector<std::int64_t>& v, Shape shape, DType dtype) {
  Array a = Array::empty(dtype, std::move(shape));
  const std::size_t elem = itemsize(dtype);
  for (std::size_t i = 0; i < v.size(); ++i) {
    check_int_fits(dtype, v[i]);
    store_int64(dtype, a.storage->data() + i * elem, v[i]);
  }
  return a;
}

// ---- the buffer protocol (NumPy arrays and scalars, memoryview, array.array, ...)
struct BufferView {
  Py_buffer view{};
  bool ok = false;
  explicit BufferView(nb::handle h) { ok = PyObject_GetBuffer(h.ptr(), &view, PyBUF_RECORDS_RO) == 0; if (!ok) PyErr_Clear(); }
  ~BufferView() { if (ok) PyBuffer_Release(&view); }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
};

// Element reader for a struct-module format code; returns false for unsupported formats.
template <class F>
bool dispatch_format(char code, F&& f) {
  switch (code) {
    case 'f': f(float{}); return true;
    case 'd': f(double{}); return true;
    case '?': f(bool{}); return true;
    case 'b': f(std::int8_t{}); return true;
    case 'B': f(std::uint8_t{}); return true;
    case 'h': f(std::int16_t{}); return true;
    case 'H': f(std::uint16_t{}); return true;
    case 'i': f(std::int32_t{}); return true;
    case 'I': f(std::uint32_t{}); return true;
    case 'l': f(long{}); return true;
    case 'L': f((unsigned long){}); return true;
    case 'q': f((long long){}); return true;
    case 'Q': f((unsigned long long){}); return true;
    case 'n': f(Py_ssize_t{}); return true;
    case 'N': f(std::size_t{}); return true;
    default: return false;
  }
}

// A buffer's element format: the struct code, and whether its bytes are in the other order
// than this host's (NumPy's '>f8' on a little-endian machine).
struct ElementFormat {
  char code;
  bool swap;
};

ElementFormat element_format(const char* fmt) {
  if (!fmt) return {'B', false};
  constexpr bool little = std::endian::native == std::endian::little;
  bool swap = false;
  if (*fmt == '@' || *fmt == '=') {
    ++fmt;
  } else if (*fmt == '<' || *fmt == '>' || *fmt == '!') {
    swap = (*fmt == '<') != little;
    ++fmt;
  }
  return {fmt[0] != '\0' && fmt[1] == '\0' ? fmt[0] : '\0', swap};
}

template <class T>
void reverse_bytes(T& v) {
  auto* b = reinterpret_cast<unsigned char*>(&v);
  std::reverse(b, b + sizeof(T));
}

template <class T>
struct is_std_complex : std::false_type {};
template <class T>
struct is_std_complex<std::complex<T>> : std::true_type {};

// NumPy's complex64 and complex128 buffers (struct codes "Zf" and "Zd"): 'f', 'd', or 0.
char complex_format(const char* fmt) {
  if (!fmt) return 0;
  if (*fmt == '@' || *fmt == '=' || *fmt == '<' || *fmt == '>' || *fmt == '!') ++fmt;
  if (fmt[0] == 'Z' && (fmt[1] == 'f' || fmt[1] == 'd') && fmt[2] == '\0') return fmt[1];
  return 0;
}

template <class P>
Array from_complex_buffer(const Py_buffer& v, bool swap, DType dt) {
  Shape shape(v.shape, v.shape + v.ndim);
  Array out = Array::empty(dt, shape);
  const std::int64_t n = num_elements(shape);
  const std::size_t elem = itemsize(dt);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(v.ndim), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    const char* p = static_cast<const char*>(v.buf);
    for (int a = 0; a < v.ndim; ++a) p += idx[static_cast<std::size_t>(a)] * v.strides[a];
    P re, im;
    std::memcpy(&re, p, sizeof(P));
    std::memcpy(&im, p + sizeof(P), sizeof(P));
    if (swap) {
      reverse_bytes(re);
      reverse_bytes(im);
    }
    store_complex(dt, out.storage->data() + static_cast<std::size_t>(k) * elem, static_cast<double>(re),
                  static_cast<double>(im));
    for (int a = v.ndim - 1; a >= 0; --a) {
      if (++idx[static_cast<std::size_t>(a)] < v.shape[a]) break;
      idx[static_cast<std::size_t>(a)] = 0;
    }
  }
  return out;
}

std::optional<Array> from_buffer(nb::handle h, std::optional<DType> dtype) {
  BufferView bv(h);
  if (!bv.ok) return std::nullopt;
  const Py_buffer& v = bv.view;
  if (const char zc = complex_format(v.format)) {
    constexpr bool little = std::endian::native == std::endian::little;
    const bool swap = v.format && ((v.format[0] == '<') != little) && (v.format[0] == '<' || v.format[0] == '>' || v.format[0] == '!');
    // complex128 data is complex64 under a float32 default, as float64 data is float32.
    DType natural = zc == 'd' && default_float_dtype() == DType::f64 ? DType::c128 : DType::c64;
    const DType dt = dtype.value_or(natural);
    return zc == 'd' ? from_complex_buffer<double>(v, swap, dt) : from_complex_buffer<float>(v, swap, dt);
  }
  const auto [code, swap] = element_format(v.format);
  if (code == 'e') {
    throw TypeError("float16 arrays are not supported; convert with .astype(numpy.float32) first");
  }
  // Floats, bools and integers keep their dtype; 64-bit unsigned integers become int64
  // (Quabla has no uint64).
  DType natural = DType::i64;
  if (code == 'd') natural = DType::f64;
  if (code == 'f') natural = DType::f32;
  if (code == '?') natural = DType::bool_;
  if (code == 'b') natural = DType::i8;
  if (code == 'B') natural = DType::u8;
  if (code == 'h') natural = DType::i16;
  if (code == 'H') natural = DType::u16;
  if (code == 'i' || ((code == 'l' || code == 'n') && sizeof(long) == 4)) natural = DType::i32;
  if (code == 'I' || (code == 'L' && sizeof(unsigned long) == 4)) natural = DType::u32;
  // With float32 the default (jax_enable_x64 off), float64 data becomes float32, as JAX
  // canonicalizes it: NumPy's float64 collocation points then meet float32 parameters
  // without an astype. An explicit dtype keeps float64.
  if (natural == DType::f64 && default_float_dtype() == DType::f32) natural = DType::f32;
  const DType dt = dtype.value_or(natural);
  Shape shape(v.shape, v.shape + v.ndim);
  Array out = Array::empty(dt, shape);
  const std::int64_t n = num_elements(shape);
  const bool contiguous = PyBuffer_IsContiguous(&v, 'C') != 0;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(v.ndim), 0);
  const bool supported = dispatch_format(code, [&](auto tag) {
    using S = decltype(tag);
    const bool to_bool = dt == DType::bool_;
    auto convert = [to_bool](S s, auto* d) {
      using D = std::remove_pointer_t<decltype(d)>;
      if (std::is_same_v<D, std::uint8_t> && to_bool) {
        if constexpr (std::is_floating_point_v<S>) *d = static_cast<D>(s != S(0) || s != s);  // NaN -> True
        else *d = static_cast<D>(s != S(0));
      } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) *d = float_to_int<D>(s);
      else *d = static_cast<D>(s);
    };
    auto write = [&](auto* dst) {
      using D = std::remove_pointer_t<decltype(dst)>;
      if (contiguous) {
        const auto* src = static_cast<const char*>(v.buf);
        if (swap) {
          for (std::int64_t k = 0; k < n; ++k) {
            S s;
            std::memcpy(&s, src + k * sizeof(S), sizeof(S));
            reverse_bytes(s);
            convert(s, dst + k);
          }
          return;
        }
        if constexpr (sizeof(S) == sizeof(D) && !is_std_complex<D>::value &&
                      std::is_floating_point_v<S> == std::is_floating_point_v<D> &&
                      std::is_signed_v<S> == std::is_signed_v<D> && !std::is_same_v<S, bool>) {
          if (to_bool) {
            for (std::int64_t k = 0; k < n; ++k) {
              S s;
              std::memcpy(&s, src + k * sizeof(S), sizeof(S));
              convert(s, dst + k);
            }
            return;
          }
          std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(S));  // same format: a plain copy
        } else {
          for (std::int64_t k = 0; k < n; ++k) {
            S s;
            std::memcpy(&s, src + k * sizeof(S), sizeof(S));
            convert(s, dst + k);
          }
        }
        return;
      }
      for (std::int64_t k = 0; k < n; ++k) {
        const char* p = static_cast<const char*>(v.buf);
        for (int a = 0; a < v.ndim; ++a) p += idx[a] * v.strides[a];
        S s;
        std::memcpy(&s, p, sizeof(S));
        if (swap) reverse_bytes(s);
        convert(s, dst + k);
        for (int a = v.ndim - 1; a >= 0; --a) {
          if (++idx[a] < v.shape[a]) break;
          idx[a] = 0;
        }
      }
    };
    switch (dt) {
      case DType::f32: write(out.storage->as<float>()); break;
      case DType::f64: write(out.storage->as<double>()); break;
      case DType::bool_: write(out.storage->as<std::uint8_t>()); break;
      case DType::i32: write(out.storage->as<std::int32_t>()); break;
      case DType::i64: write(out.storage->as<std::int64_t>()); break;
      case DType::c64: write(out.storage->as<std::complex<float>>()); break;
      case DType::c128: write(out.storage->as<std::complex<double>>()); break;
      case DType::i8: write(out.storage->as<std::int8_t>()); break;
      case DType::i16: write(out.storage->as<std::int16_t>()); break;
      case DType::u8: write(out.storage->as<std::uint8_t>()); break;
      case DType::u16: write(out.storage->as<std::uint16_t>()); break;
      case DType::u32: write(out.storage->as<std::uint32_t>()); break;
    }
  });
  if (!supported) {
    throw TypeError("cannot convert a buffer of element format '" + std::string(v.format ? v.format : "?") +
                    "' to a quabla array; supported are float32, float64, bool and integers");
  }
  return out;
}

}  // namespace

Array to_array(nb::handle obj, std::optional<DType> dtype) {
  if (is_device_array(obj)) {
    // Closed over by a traced function: a constant of the program, as a host array is (the
    // program uploads its constants to its device once).
    if (innermost_open_trace()) return to_host(nb::cast<const DeviceArray&>(obj));
    reject_device_array(obj, "converting to a host array");
  }
  if (nb::isinstance<Array>(obj)) {
    Array a = nb::cast<Array>(obj);
    if (dtype && *dtype != a.dtype()) {
      return eager_call("convert:" + std::string(dtype_short_name(*dtype)), std::span(&a, 1),
                        [d = *dtype](Builder& b, std::span<const ValueId> p) {
                          return std::vector<ValueId>{api::astype(b, p[0], d)};
                        })[0];
    }
    return a;
  }
  if (PyBool_Check(obj.ptr())) return Array::scalar(obj.ptr() == Py_True, dtype.value_or(DType::bool_));
  if (PyLong_Check(obj.ptr())) {
    const std::int64_t v = exact_int64(obj);
    const DType d = dtype.value_or(default_int_dtype());
    check_int_fits(d, v);
    Array a = Array::empty(d, {});
    store_int64(d, a.storage->data(), v);
    return a;
  }
  if (PyFloat_Check(obj.ptr())) {
    const double v = PyFloat_AsDouble(obj.ptr());
    if (PyErr_Occurred()) throw nb::python_error();
    // Strong, unlike jnp.asarray(2.0): a 0-d array made on purpose keeps its dtype (and a
    // jitted loop fed it, then its strong result, compiles once, not twice).
    return Array::scalar(v, dtype.value_or(default_float_dtype()));
  }
  if (PyComplex_Check(obj.ptr())) {
    const DType d = dtype.value_or(complex_of(default_float_dtype()));
    Array a = Array::empty(d, {});
    store_complex(d, a.storage->data(), PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr()));
    return a;
  }
  if (is_sequence(obj)) {
    Shape shape;
    list_shape(obj, shape);
    ListReader r(shape);
    r.values.reserve(static_cast<std::size_t>(num_elements(shape)));
    r.read(obj, 0);
    // An empty list is float, as in NumPy.
    const DType natural = r.values.empty()  ? default_float_dtype()
                          : !r.imags.empty() ? complex_of(default_float_dtype())
                          : r.all_bool       ? DType::bool_
                          : r.all_int        ? default_int_dtype()
                                             : default_float_dtype();
    const DType d = dtype.value_or(natural);
    if (r.all_int && !r.ints.empty() && is_int(d)) return from_ints(r.ints, shape, d);
    return from_doubles(r.values, shape, d, r.imags);
  }
  {
    // bytes and NumPy's dates, times, byte strings and strings expose their raw bytes as a
    // buffer of uint8: numbers they are not (JAX refuses them too).
    const std::string_view name = Py_TYPE(obj.ptr())->tp_name;
    if (PyBytes_Check(obj.ptr()) || name == "numpy.datetime64" || name == "numpy.timedelta64" ||
        name == "numpy.bytes_" || name == "numpy.str_" || name == "numpy.void") {
      throw TypeError("cannot convert " + py_type_name(obj) + " to a quabla array: bytes, dates, times and strings "
                      "are not numbers; convert them first (for a date, e.g. .astype('int64'))");
    }
  }
  if (auto a = from_buffer(obj, dtype)) return *a;
  if (nb::hasattr(obj, "__array__")) {
    nb::object converted = obj.attr("__array__")();
    if (auto a = from_buffer(converted, dtype)) return *a;
  }
  throw TypeError("cannot convert " + py_type_name(obj) +
                  " to a quabla array; pass a number, a bool, a nested list or tuple, a NumPy array or a quabla Array");
}

namespace {
// A NumPy scalar (numpy.float32(0.5), numpy.int64(3), numpy.bool_(True)): an operand as the
// Python number it holds, so every NumPy scalar is weak (numpy.float64 is a float subclass
// and was weak already; the others were strong, so float32 and float64 scalars disagreed).
bool is_numpy_scalar(nb::handle obj) {
  // NumPy's scalar types are numpy.float32, numpy.int64, ...: a name test, before any
  // attribute lookup, keeps this off the path of arrays (an ndarray, even 0-d, stays strong).
  const std::string_view name = Py_TYPE(obj.ptr())->tp_name;
  return name.starts_with("numpy.") && !name.starts_with("numpy.ndarray") && nb::hasattr(obj, "item") &&
         nb::hasattr(obj, "ndim") && nb::cast<int>(obj.attr("ndim")) == 0;
}
}  // namespace

Array to_operand(nb::handle obj) {
  if (PyBool_Check(obj.ptr())) return Array::scalar(obj.ptr() == Py_True, DType::bool_, true);
  if (PyLong_Check(obj.ptr())) {  // a weak int: it adopts the dtype of the array it meets
    Array a = Array::empty(DType::i64, {});
    a.type.weak = true;
    *a.storage->as<std::int64_t>() = exact_int64(obj);
    return a;
  }
  if (PyFloat_Check(obj.ptr())) {
    const double v = PyFloat_AsDouble(obj.ptr());
    if (PyErr_Occurred()) throw nb::python_error();
    return Array::scalar(v, DType::f64, true);
  }
  if (PyComplex_Check(obj.ptr())) {  // a weak complex, as a Python float is a weak float
    Array a = Array::empty(DType::c128, {});
    a.type.weak = true;
    store_complex(DType::c128, a.storage->data(), PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr()));
    return a;
  }
  if (is_numpy_scalar(obj)) {
    nb::object value = obj.attr("item")();
    if (PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()) ||
        PyComplex_Check(value.ptr())) {
      return to_operand(value);
    }
  }
  return to_array(obj);
}

namespace {
// A Python int or an integer scalar of NumPy (anything with __index__ but bools and arrays).
bool is_index(nb::handle h) {
  return !PyBool_Check(h.ptr()) && (PyLong_Check(h.ptr()) || (PyIndex_Check(h.ptr()) && !nb::isinstance<Array>(h) &&
                                                              !is_sequence(h)));
}
}  // namespace

api::Axes parse_axes(nb::handle obj, const char* fname) {
  if (obj.is_none()) return std::nullopt;
  if (is_index(obj)) return std::vector<std::int64_t>{parse_int64(obj, fname, "axes")};
  if (is_sequence(obj)) {
    std::vector<std::int64_t> axes;
    for (nb::handle h : nb::borrow<nb::sequence>(obj)) {
      if (!is_index(h)) throw TypeError(std::string(fname) + ": axes must be integers, got " + py_type_name(h));
      axes.push_back(parse_int64(h, fname, "axes"));
    }
    return axes;
  }
  throw TypeError(std::string(fname) + ": axis must be None, an int or a tuple of ints, got " + py_type_name(obj));
}

// A 0-d integer quabla array: a shape entry as jax.numpy takes one (its __index__ raises a
// TracerError when it is traced).
bool is_int_scalar_array(nb::handle h) {
  if (!nb::isinstance<Array>(h)) return false;
  const Array& a = nb::cast<const Array&>(h);
  return is_int(a.dtype()) && a.type.shape.empty();
}

std::int64_t parse_int64(nb::handle h, const char* fname, const char* what) {
  if (!PyIndex_Check(h.ptr()) || PyBool_Check(h.ptr()) || (nb::isinstance<Array>(h) && !is_int_scalar_array(h))) {
    throw TypeError(std::string(fname) + ": " + what + " must be integers, got " + py_type_name(h));
  }
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow) {
    throw ValueError(std::string(fname) + ": " + what + " " + nb::str(h).c_str() +
                     " does not fit in 64 bits (the array is too big)");
  }
  return v;
}

std::vector<std::int64_t> parse_shape(nb::handle obj, const char* fname) {
  if (is_index(obj) || is_int_scalar_array(obj)) return {parse_int64(obj, fname, "shape entries")};
  if (is_sequence(obj)) {
    std::vector<std::int64_t> shape;
    for (nb::handle h : nb::borrow<nb::sequence>(obj)) {
      shape.push_back(parse_int64(h, fname, "shape entries"));
      if (shape.size() > 64) throw ValueError(std::string(fname) + ": shapes have at most 64 dimensions");
    }
    return shape;
  }
  throw TypeError(std::string(fname) + ": shape must be an int or a tuple of ints, got " + py_type_name(obj));
}

std::string axes_key(const api::Axes& axes) { return axes ? shape_str(*axes) : "all"; }

namespace {
nb::object element(const Array& a, std::int64_t i) {
  switch (a.dtype()) {
    case DType::f32: return nb::float_(static_cast<double>(a.storage->as<float>()[i]));
    case DType::f64: return nb::float_(a.storage->as<double>()[i]);
    case DType::bool_: return nb::bool_(a.storage->as<std::uint8_t>()[i] != 0);
    case DType::i32: return nb::int_(a.storage->as<std::int32_t>()[i]);
    case DType::i64: return nb::int_(a.storage->as<std::int64_t>()[i]);
    case DType::i8: return nb::int_(a.storage->as<std::int8_t>()[i]);
    case DType::i16: return nb::int_(a.storage->as<std::int16_t>()[i]);
    case DType::u8: return nb::int_(a.storage->as<std::uint8_t>()[i]);
    case DType::u16: return nb::int_(a.storage->as<std::uint16_t>()[i]);
    case DType::u32: return nb::int_(a.storage->as<std::uint32_t>()[i]);
    case DType::c64: {
      const float* p = a.storage->as<float>() + 2 * i;
      return nb::steal(PyComplex_FromDoubles(static_cast<double>(p[0]), static_cast<double>(p[1])));
    }
    case DType::c128: {
      const double* p = a.storage->as<double>() + 2 * i;
      return nb::steal(PyComplex_FromDoubles(p[0], p[1]));
    }
  }
  return nb::none();
}

nb::object nest(const Array& a, std::size_t depth, std::int64_t& pos) {
  if (depth == a.shape().size()) return element(a, pos++);
  nb::list l;
  for (std::int64_t i = 0; i < a.shape()[depth]; ++i) l.append(nest(a, depth + 1, pos));
  return l;
}
}  // namespace

nb::object to_list(const Array& a) {
  a.require_concrete("tolist()");
  std::int64_t pos = 0;
  return nest(a, 0, pos);
}

nb::object item(const Array& a) {
  a.require_concrete("converting an array to a Python scalar (item(), float(), int(), bool(), if)");
  if (a.size() != 1) {
    throw ValueError("item: can only convert an array of size 1 to a Python scalar, got shape " + shape_str(a.shape()) +
                     "; use tolist() or index first");
  }
  return element(a, 0);
}

}  // namespace qb::py
