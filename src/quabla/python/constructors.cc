// Array constructors of API.md §1 (they build host data directly: no program to run).
#include <nanobind/stl/string.h>
#include <nanobind/stl/optional.h>

#include <cmath>
#include <functional>

#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/python/device_array.h"
#include "quabla/python/device_aware.h"

namespace qb::py {

namespace {

Shape checked_shape(nb::handle shape, const char* fname) {
  if (shape.is_none()) throw TypeError(std::string(fname) + ": shape must be an int or a tuple of ints, got None");
  Shape s = parse_shape(shape, fname);
  check_shape(s, fname, /*allow_zero=*/true);
  return s;
}

Array generate(DType dtype, Shape shape, const std::function<double(std::int64_t)>& value) {
  Array a = Array::empty(dtype, std::move(shape));
  const std::size_t elem = itemsize(dtype);
  for (std::int64_t i = 0; i < a.size(); ++i) store_double(dtype, a.storage->data() + static_cast<std::size_t>(i) * elem, value(i));
  return a;
}

Array full_array(Shape shape, nb::handle fill, std::optional<DType> dtype, const char* fname) {
  Array f = to_array(fill);
  if (f.size() != 1) throw ValueError(std::string(fname) + ": fill_value must be a scalar, got shape " + shape_str(f.shape()));
  const DType d = dtype.value_or(PyBool_Check(fill.ptr()) ? DType::bool_
                                 : PyLong_Check(fill.ptr()) ? default_int_dtype()
                                 : (nb::isinstance<Array>(fill) ? f.dtype() : default_float_dtype()));
  if (is_int(d) && (PyLong_Check(fill.ptr()) || is_int(f.dtype()))) {  // exact, beyond 2^53 too
    const std::int64_t v = nb::cast<std::int64_t>(nb::int_(item(f)));
    if (PyLong_Check(fill.ptr())) check_int_fits(d, v);
    Array a = Array::empty(d, std::move(shape));
    for (std::int64_t i = 0; i < a.size(); ++i) store_int64(d, a.storage->data() + i * itemsize(d), v);
    return a;
  }
  const double v = nb::cast<double>(nb::float_(item(f)));
  return generate(d, std::move(shape), [v](std::int64_t) { return v; });
}

// A number as Python prints it (repr of a float), for messages.
std::string num_str(double v) {
  return nb::cast<std::string>(nb::repr(nb::float_(v)));
}

double scalar_arg(nb::handle h, const char* fname, const char* what) {
  if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr())) return nb::cast<double>(nb::float_(h));
  Array a = to_array(h);
  if (a.size() != 1) throw ValueError(std::string(fname) + ": " + what + " must be a scalar");
  return nb::cast<double>(nb::float_(item(a)));
}

nb::object device_astype(nb::handle obj, nb::handle dtype, std::optional<DType> d) {
  return !d || nb::cast<const DeviceArray&>(obj).type.dtype == *d ? nb::borrow(obj) : obj.attr("astype")(dtype);
}

}  // namespace

void bind_constructors(nb::module_& m) {
  // A device array stays where it is (arrays are immutable, so array() need not copy it).
  m.def("array", [](nb::handle obj, nb::handle dtype) -> nb::object {
    auto d = parse_dtype(dtype);
    if (is_device_array(obj)) return device_astype(obj, dtype, d);
    return nb::cast(to_array(obj, d));
  }, nb::arg("obj").none(), nb::arg("dtype") = nb::none());
  m.def("asarray", [](nb::handle obj, nb::handle dtype) -> nb::object {
    auto d = parse_dtype(dtype);
    if (is_device_array(obj)) return device_astype(obj, dtype, d);
    if (nb::isinstance<Array>(obj) && (!d || nb::cast<const Array&>(obj).dtype() == *d)) return nb::borrow(obj);
    return nb::cast(to_array(obj, d));
  }, nb::arg("obj").none(), nb::arg("dtype") = nb::none());
  m.def("zeros", [](nb::handle shape, nb::handle dtype) {
    return generate(parse_dtype(dtype).value_or(default_float_dtype()), checked_shape(shape, "zeros"), [](std::int64_t) { return 0.0; });
  }, nb::arg("shape").none(), nb::arg("dtype") = nb::none());
  m.def("ones", [](nb::handle shape, nb::handle dtype) {
    return generate(parse_dtype(dtype).value_or(default_float_dtype()), checked_shape(shape, "ones"), [](std::int64_t) { return 1.0; });
  }, nb::arg("shape").none(), nb::arg("dtype") = nb::none());
  m.def("full", [](nb::handle shape, nb::handle fill, nb::handle dtype) {
    return full_array(checked_shape(shape, "full"), fill, parse_dtype(dtype), "full");
  }, nb::arg("shape").none(), nb::arg("fill_value").none(), nb::arg("dtype") = nb::none());
  for (auto [name, value] : {std::pair{"zeros_like", 0.0}, std::pair{"ones_like", 1.0}}) {
    m.def(name, device_aware(name, [value](nb::handle x, nb::handle dtype) {
      Array a = to_array(x);
      return generate(parse_dtype(dtype).value_or(a.dtype()), a.shape(), [value](std::int64_t) { return value; });
    }), nb::arg("x"), nb::arg("dtype") = nb::none());
  }
  m.def("full_like", device_aware("full_like", [](nb::handle x, nb::handle fill, nb::handle dtype) {
    Array a = to_array(x);
    return full_array(a.shape(), fill, parse_dtype(dtype).value_or(a.dtype()), "full_like");
  }), nb::arg("x"), nb::arg("fill_value").none(), nb::arg("dtype") = nb::none());
  m.def("arange", [](nb::handle start_h, nb::handle stop_h, nb::handle step_h, nb::handle dtype) {
    double start = scalar_arg(start_h, "arange", "start"), stop = 0, step = scalar_arg(step_h, "arange", "step");
    if (stop_h.is_none()) std::swap(start, stop);
    else stop = scalar_arg(stop_h, "arange", "stop");
    if (step == 0) throw ValueError("arange: step must be nonzero");
    if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
      throw ValueError("arange: start, stop and step must be finite, got start=" + num_str(start) +
                       ", stop=" + num_str(stop) + ", step=" + num_str(step));
    }
    const double count = std::max(0.0, std::ceil((stop - start) / step));  // an empty range: shape (0,)
    if (count > static_cast<double>(kMaxElements)) {
      throw ValueError("arange: the range [" + num_str(start) + ", " + num_str(stop) + ") with step " +
                       num_str(step) + " has more than 2^56 elements (the array is too big)");
    }
    // Integer arguments give the default integer dtype (as NumPy and JAX).
    auto is_integer = [](nb::handle h) {
      if (h.is_none()) return true;
      if (PyLong_Check(h.ptr())) return true;
      return nb::isinstance<Array>(h) && is_int(nb::cast<const Array&>(h).dtype());
    };
    const bool ints = is_integer(start_h) && is_integer(stop_h) && is_integer(step_h);
    const DType d = parse_dtype(dtype).value_or(ints ? default_int_dtype() : default_float_dtype());
    if (is_int(d) && start == std::trunc(start) && step == std::trunc(step)) {
      // Integer values wrap into a narrow dtype as NumPy's and JAX's (uint8 250..259 ends 0 1 2 3).
      Array a = Array::empty(d, {static_cast<std::int64_t>(count)});
      const auto first = static_cast<std::int64_t>(start), delta = static_cast<std::int64_t>(step);
      for (std::int64_t i = 0; i < a.size(); ++i) store_int64(d, a.storage->data() + i * itemsize(d), first + i * delta);
      return a;
    }
    return generate(d, {static_cast<std::int64_t>(count)},
                    [start, step](std::int64_t i) { return start + static_cast<double>(i) * step; });
  }, nb::arg("start"), nb::arg("stop") = nb::none(), nb::arg("step") = 1, nb::arg("dtype") = nb::none());
  m.def("linspace", [](nb::handle start_h, nb::handle stop_h, nb::handle num_h, bool endpoint, nb::handle dtype) {
    const double start = scalar_arg(start_h, "linspace", "start"), stop = scalar_arg(stop_h, "linspace", "stop");
    const std::int64_t num = parse_int64(num_h, "linspace", "num");
    if (num < 0) throw ValueError("linspace: num must be non-negative, got " + std::to_string(num));
    check_shape(Shape{num}, "linspace", /*allow_zero=*/true);
    const double div = endpoint ? static_cast<double>(num - 1) : static_cast<double>(num);
    const double step = div > 0 ? (stop - start) / div : 0.0;
    return generate(parse_dtype(dtype).value_or(default_float_dtype()), {num}, [=](std::int64_t i) {
      if (endpoint && num > 1 && i == num - 1) return stop;  // the last point is exactly stop (as NumPy)
      return start + static_cast<double>(i) * step;
    });
  }, nb::arg("start"), nb::arg("stop"), nb::arg("num") = 50, nb::arg("endpoint") = true, nb::arg("dtype") = nb::none());
  m.def("eye", [](nb::handle n_h, nb::handle m_h, nb::handle k_h, nb::handle dtype) {
    const std::int64_t n = parse_int64(n_h, "eye", "n and m");
    const std::int64_t cols = m_h.is_none() ? n : parse_int64(m_h, "eye", "n and m");
    const std::int64_t k = parse_int64(k_h, "eye", "k");
    if (n < 0 || cols < 0) throw ValueError("eye: n and m must be non-negative");
    check_shape(Shape{n, cols}, "eye", /*allow_zero=*/true);
    return generate(parse_dtype(dtype).value_or(default_float_dtype()), {n, cols},
                    [cols, k](std::int64_t i) { return (i % cols) - (i / cols) == k ? 1.0 : 0.0; });
  }, nb::arg("n"), nb::arg("m").none() = nb::none(), nb::arg("k") = 0, nb::arg("dtype") = nb::none());
}

}  // namespace qb::py
