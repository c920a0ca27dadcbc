// The qb.Array class: properties, conversions, indexing and the read-only buffer protocol.
// Operators and math methods are bound with the module functions (functions.cc).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "quabla/api/eager.h"
#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/python/dtype_object.h"

namespace qb::py {

namespace {

const char* buffer_format(DType d) {
  switch (d) {
    case DType::f32: return "f";
    case DType::f64: return "d";
    case DType::bool_: return "?";
    case DType::i32: return "i";
    case DType::i64: return "q";
    case DType::c64: return "Zf";
    case DType::c128: return "Zd";
    case DType::i8: return "b";
    case DType::i16: return "h";
    case DType::u8: return "B";
    case DType::u16: return "H";
    case DType::u32: return "I";
  }
  return "B";
}

// Buffer export: zero-copy and read-only (arrays are immutable). Shape and strides live in
// view->internal, owned by the view and freed in release.
int array_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  const Array* a = nb::inst_ptr<Array>(self);
  if (a->is_tracer()) {
    try {
      a->require_concrete("converting an array to NumPy (numpy(), np.asarray, memoryview)");
    } catch (const TracerError& e) {
      PyErr_SetString(tracer_error_type(), e.what());
    }
    view->obj = nullptr;
    return -1;
  }
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "quabla arrays are immutable: export them read-only (numpy.asarray) or copy (numpy.array)");
    view->obj = nullptr;
    return -1;
  }
  const auto ndim = static_cast<Py_ssize_t>(a->shape().size());
  auto meta = std::make_unique<Py_ssize_t[]>(static_cast<std::size_t>(2 * ndim + 1));
  const auto strides = row_major_strides(a->shape());
  const auto elem = static_cast<Py_ssize_t>(itemsize(a->dtype()));
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    meta[i] = static_cast<Py_ssize_t>(a->shape()[i]);
    meta[ndim + i] = static_cast<Py_ssize_t>(strides[i]) * elem;
  }
  view->buf = const_cast<std::byte*>(a->data());
  view->obj = self;
  Py_INCREF(self);
  view->len = static_cast<Py_ssize_t>(a->size()) * elem;
  view->itemsize = elem;
  view->readonly = 1;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(buffer_format(a->dtype())) : nullptr;
  view->ndim = static_cast<int>(ndim);
  view->shape = meta.get();
  view->strides = meta.get() + ndim;
  view->suboffsets = nullptr;
  view->internal = meta.release();  // released in array_releasebuffer
  return 0;
}

void array_releasebuffer(PyObject*, Py_buffer* view) {
  std::unique_ptr<Py_ssize_t[]> owned(static_cast<Py_ssize_t*>(view->internal));
}

PyType_Slot array_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(array_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void*>(array_releasebuffer)},
    {0, nullptr},
};

// float(x) and int(x) take one-element arrays only: TypeError otherwise, as NumPy and JAX
// (item() raises ValueError, as NumPy's does).
const Array& scalar_only(const Array& a) {
  if (a.size() != 1 && !a.is_tracer()) {
    throw TypeError("only size-1 arrays can be converted to Python scalars, got shape " + shape_str(a.shape()) +
                    "; index first or use tolist()");
  }
  return a;
}

std::string unsupported_index_message(nb::handle h) {
  std::string msg = "only integers, slices (':'), None and Ellipsis ('...') are valid indices, got " +
                    std::string(nb::type_name(h.type()).c_str());
  if (nb::isinstance<Array>(h) && nb::cast<const Array&>(h).is_tracer()) {
    return msg + " (a traced value); traced indices are not supported yet: pass the index as a static "
                 "argument (jit's static_argnums), or select with a one-hot mask, e.g. "
                 "qb.sum(qb.where(qb.arange(n) == i, x, 0.0)) for x[i]";
  }
  return msg + "; for an array or list of indices use qb.gather(x, indices, axis=0), for boolean masks qb.where";
}

std::vector<api::IndexItem> parse_index(nb::handle idx) {
  std::vector<nb::handle> items;
  if (PyTuple_Check(idx.ptr())) {
    for (nb::handle h : nb::borrow<nb::tuple>(idx)) items.push_back(h);
  } else {
    items.push_back(idx);
  }
  std::vector<api::IndexItem> out;
  for (nb::handle h : items) {
    api::IndexItem it{api::IndexItem::Slice};
    if (h.is_none()) {
      it.kind = api::IndexItem::NewAxis;
    } else if (h.ptr() == Py_Ellipsis) {
      it.kind = api::IndexItem::Ellipsis;
    } else if (PySlice_Check(h.ptr())) {
      Py_ssize_t start, stop, step;
      auto* s = reinterpret_cast<PySliceObject*>(h.ptr());
      if (PySlice_Unpack(h.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      it.step = step;
      it.has_start = s->start != Py_None;
      it.has_stop = s->stop != Py_None;
      it.start = start;
      it.stop = stop;
    } else if (!PyBool_Check(h.ptr()) && !nb::isinstance<Array>(h) && PyIndex_Check(h.ptr())) {
      it.kind = api::IndexItem::Int;
      // Python and NumPy integers; an int past 64 bits is an IndexError (out of bounds).
      it.start = PyNumber_AsSsize_t(h.ptr(), PyExc_IndexError);
      if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
        PyErr_Clear();  // a NumPy integer array: an index array, like a list
        throw IndexError(unsupported_index_message(h));
      }
    } else {
      throw IndexError(unsupported_index_message(h));
    }
    out.push_back(it);
  }
  return out;
}

std::string index_key(const std::vector<api::IndexItem>& items) {
  std::string k = "getitem:";
  for (const auto& it : items) {
    k += std::to_string(it.kind) + ":" + std::to_string(it.start) + ":" + std::to_string(it.stop) + ":" +
         std::to_string(it.step) + (it.has_start ? "s" : "") + (it.has_stop ? "e" : "") + ";";
  }
  return k;
}

}  // namespace

nb::class_<Array> bind_array(nb::module_& m) {
  nb::class_<Array> cls(m, "Array", nb::type_slots(array_slots),
                        "An immutable n-dimensional array (float32, float64 or bool).");
  cls.def(nb::new_([](nb::handle obj, nb::handle dtype) { return to_array(obj, parse_dtype(dtype)); }),
          nb::arg("obj"), nb::arg("dtype") = nb::none())
      .def_prop_ro("shape", [](const Array& a) {
        nb::list l;
        for (auto d : a.shape()) l.append(d);
        return nb::tuple(l);
      })
      .def_prop_ro("ndim", [](const Array& a) { return a.shape().size(); })
      .def_prop_ro("size", [](const Array& a) { return a.size(); })
      .def_prop_ro("nbytes", [](const Array& a) { return a.size() * static_cast<std::int64_t>(itemsize(a.dtype())); })
      .def_prop_ro("dtype", [](const Array& a) { return DTypeObject{a.dtype()}; })
      .def("tolist", &to_list)
      .def("item", &item)
      .def("__len__", [](const Array& a) {
        if (a.shape().empty()) throw TypeError("len() of a zero-dimensional array");
        return a.shape()[0];
      })
      .def("__bool__", [](const Array& a) {
        a.require_concrete("bool() (an if or while on an array)");
        if (a.size() != 1) {
          throw ValueError("the truth value of an array with more than one element is ambiguous; use qb.any(x) or "
                           "qb.all(x) (shape " + shape_str(a.shape()) + ")");
        }
        return nb::cast<bool>(nb::bool_(item(a)));
      })
      .def("__float__", [](const Array& a) { return nb::cast<double>(nb::float_(item(scalar_only(a)))); })
      .def("__int__", [](const Array& a) { return nb::int_(item(scalar_only(a))); })
      .def("__getitem__", [](const Array& a, nb::handle idx) {
        auto items = parse_index(idx);
        return eager_call(index_key(items), std::span(&a, 1), [&items](Builder& b, std::span<const ValueId> p) {
          return std::vector<ValueId>{api::getitem(b, p[0], items)};
        })[0];
      }, nb::arg("index").none())
      .def("__setitem__", [](const Array&, nb::handle, nb::handle) {
        throw TypeError("quabla arrays are immutable: item assignment is not supported; build a new array with "
                        "qb.where, qb.concat or x.at-style functions");
      })
      .def_prop_ro("_is_tracer", [](const Array& a) { return a.is_tracer(); })
      // Weakly typed (made from Python numbers only, as JAX's weak_type): adopts the dtype of
      // the arrays it meets.
      .def_prop_ro("weak_type", [](const Array& a) { return a.type.weak; })
      .def("_shares_storage_with", [](const Array& a, const Array& b) { return a.storage == b.storage; });
  cls.attr("__hash__") = nb::none();  // == is elementwise, as in NumPy
  cls.attr("__array_priority__") = 100;  // NumPy defers binary operators to us
  return cls;
}

}  // namespace qb::py
