// qb.float32 / qb.float64 / qb.bool_: hashable dtype objects with NumPy's names.
#include <nanobind/stl/string.h>

#include <atomic>

#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/python/dtype_object.h"

namespace qb::py {

namespace {

std::optional<DType> dtype_from_name(std::string_view s) {
  if (s == "float32" || s == "f32" || s == "f") return DType::f32;
  if (s == "float64" || s == "f64" || s == "d") return DType::f64;
  if (s == "float") return default_float_dtype();  // dtype="float", as dtype=float
  if (s == "bool" || s == "bool_" || s == "?") return DType::bool_;
  if (s == "int32" || s == "i32" || s == "i") return DType::i32;
  if (s == "int64" || s == "i64" || s == "q" || s == "l") return DType::i64;
  if (s == "int") return default_int_dtype();
  // NumPy's names and one-letter codes only: its "i8" and "u8" are 64-bit.
  if (s == "int8" || s == "b") return DType::i8;
  if (s == "int16" || s == "h") return DType::i16;
  if (s == "uint8" || s == "B") return DType::u8;
  if (s == "uint16" || s == "H") return DType::u16;
  if (s == "uint32" || s == "I") return DType::u32;
  if (s == "complex64" || s == "c64" || s == "F") return DType::c64;
  if (s == "complex128" || s == "c128" || s == "D") return DType::c128;
  if (s == "complex") return complex_of(default_float_dtype());
  return std::nullopt;
}
}  // namespace



std::optional<DType> parse_dtype(nb::handle obj) {
  if (obj.is_none()) return std::nullopt;
  if (nb::isinstance<DTypeObject>(obj)) return nb::cast<DTypeObject>(obj).dtype;
  // dtype=float is the default float, as dtype=int the default integer (JAX canonicalises
  // Python's types: float32 without x64).
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return default_float_dtype();
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::bool_;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return default_int_dtype();
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type)) return complex_of(default_float_dtype());
  std::string name;
  if (PyType_Check(obj.ptr()) && nb::hasattr(obj, "__module__") &&
      nb::cast<std::string>(nb::str(obj.attr("__module__"))) == "numpy") {  // np.float32 (a scalar type)
    name = nb::cast<std::string>(nb::str(nb::module_::import_("numpy").attr("dtype")(obj).attr("name")));
  } else if (nb::isinstance<nb::str>(obj)) {
    name = nb::cast<std::string>(obj);
    if (!dtype_from_name(name) && name.size() <= 4) {  // NumPy's codes: "f4", "<f8", "i8", "?"
      try {
        name = nb::cast<std::string>(nb::str(nb::module_::import_("numpy").attr("dtype")(obj).attr("name")));
      } catch (const nb::python_error&) {  // no NumPy, or not a code it knows: the error below
      }
    }
  } else if (nb::hasattr(obj, "dtype") && nb::hasattr(obj.attr("dtype"), "name")) {  // np.float32 (a type)
    name = nb::cast<std::string>(nb::str(obj.attr("dtype").attr("name")));
  } else if (nb::hasattr(obj, "name") && nb::hasattr(obj, "kind")) {  // np.dtype("float32")
    name = nb::cast<std::string>(nb::str(obj.attr("name")));
  }
  if (name == "float16") throw TypeError("float16 is not supported; use qb.float32 or qb.float64");
  if (auto d = dtype_from_name(name)) return d;
  if (name == "uint64") {
    throw TypeError("unsupported dtype uint64; Quabla's widest integers are qb.int64 and qb.uint32");
  }
  throw TypeError("unsupported dtype " + nb::cast<std::string>(nb::repr(obj)) +
                  "; use qb.float32, qb.float64, qb.int8, qb.int16, qb.int32, qb.int64, qb.uint8, qb.uint16, "
                  "qb.uint32, qb.bool_, qb.complex64 or qb.complex128");
}

void bind_dtypes(nb::module_& m) {
  nb::class_<DTypeObject>(m, "DType")
      // qb.dtype(obj), as numpy.dtype / jnp.dtype: a name ("float32", "f8"), a dtype, a NumPy
      // dtype or scalar type, a Python type (float and int: the defaults), an array (its
      // dtype), None (the default float).
      .def("__init__", [](DTypeObject* self, nb::handle obj) {
        std::optional<DType> d = obj.is_none() ? std::optional<DType>(default_float_dtype()) : parse_dtype(obj);
        new (self) DTypeObject{*d};
      }, nb::arg("obj").none() = nb::none())
      .def_prop_ro("name", [](const DTypeObject& d) { return std::string(dtype_name(d.dtype)); })
      .def_prop_ro("itemsize", [](const DTypeObject& d) { return itemsize(d.dtype); })
      // NumPy's kind codes: 'f' float, 'c' complex, 'i' signed and 'u' unsigned integer, 'b' bool.
      .def_prop_ro("kind", [](const DTypeObject& d) {
        return std::string(is_float(d.dtype) ? "f" : is_complex(d.dtype) ? "c" : is_unsigned(d.dtype) ? "u"
                           : is_int(d.dtype) ? "i" : "b");
      })
      .def("__str__", [](const DTypeObject& d) { return std::string(dtype_short_name(d.dtype)); })
      .def("__repr__", [](const DTypeObject& d) {
        return d.dtype == DType::bool_ ? std::string("qb.bool_") : "qb." + std::string(dtype_name(d.dtype));
      })
      .def("__eq__", [](const DTypeObject& d, nb::handle other) {
        try {
          auto o = parse_dtype(other);
          return o && *o == d.dtype;
        } catch (const TypeError&) {
          return false;
        }
      }, nb::arg("other").none())  // qb.float32 == None is False, as NumPy's
      .def("__hash__", [](const DTypeObject& d) { return static_cast<int>(d.dtype) + 7919; })
      // qb.float32(x): x as an array of this dtype (jnp.float32(x)).
      .def("__call__", [](nb::handle self, nb::handle x) { return nb::module_::import_("quabla").attr("asarray")(x, self); },
           nb::arg("x"));
  m.attr("float32") = DTypeObject{DType::f32};
  m.attr("float64") = DTypeObject{DType::f64};
  m.attr("bool_") = DTypeObject{DType::bool_};
  m.attr("int32") = DTypeObject{DType::i32};
  m.attr("int64") = DTypeObject{DType::i64};
  m.attr("complex64") = DTypeObject{DType::c64};
  m.attr("complex128") = DTypeObject{DType::c128};
  m.attr("int8") = DTypeObject{DType::i8};
  m.attr("int16") = DTypeObject{DType::i16};
  m.attr("uint8") = DTypeObject{DType::u8};
  m.attr("uint16") = DTypeObject{DType::u16};
  m.attr("uint32") = DTypeObject{DType::u32};
  m.def("default_dtype", [] { return DTypeObject{default_float_dtype()}; });
  m.def("set_default_dtype", [](nb::handle dtype) {
    std::optional<DType> d;
    try {
      d = parse_dtype(dtype);
    } catch (const TypeError&) {
    }
    if (!d || !is_float(*d)) {
      throw TypeError("set_default_dtype: expected qb.float32 or qb.float64, got " +
                      nb::cast<std::string>(nb::repr(dtype)));
    }
    return DTypeObject{exchange_default_float_dtype(*d)};
  }, nb::arg("dtype").none());
}

}  // namespace qb::py
