// The extension module quabla._core. Every C++ exception is converted here: typed user
// errors to the documented Python exceptions, internal errors to QuablaError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "quabla/ir/errors.h"
#include "quabla/ir/shape_error.h"
#include "quabla/python/bindings.h"
#include "quabla/runtime/buffer.h"
#include "quabla/runtime/interrupt.h"
#include "quabla/runtime/thread_pool.h"

namespace nb = nanobind;

namespace qb::py {
PyObject* quabla_error_type() {
  // Intentionally never released: the translator may run until the interpreter shuts down.
  static PyObject* type = PyErr_NewException("quabla.QuablaError", PyExc_Exception, nullptr);
  return type;
}
PyObject* shape_error_type() {
  static PyObject* type = [] {
    PyObject* bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_TypeError);
    PyObject* t = PyErr_NewException("quabla.ShapeError", bases, nullptr);
    Py_DECREF(bases);
    return t;
  }();
  return type;
}
PyObject* tracer_error_type() {
  static PyObject* type = [] {
    PyObject* bases = PyTuple_Pack(2, quabla_error_type(), PyExc_TypeError);
    PyObject* t = PyErr_NewException("quabla.TracerError", bases, nullptr);
    Py_DECREF(bases);
    return t;
  }();
  return type;
}
}  // namespace qb::py

NB_MODULE(_core, m) {
  // Module-level objects (dtypes, cached programs' arrays) may outlive nanobind's teardown
  // check at interpreter exit; that is not a leak of a running program.
  nb::set_leak_warnings(false);
  m.doc() = "Quabla's C++ core: IR, CPU executor and host arrays (bindings only).";
  PyObject* quabla_error = qb::py::quabla_error_type();
  m.attr("QuablaError") = nb::borrow(quabla_error);
  m.attr("TracerError") = nb::borrow(qb::py::tracer_error_type());
  m.attr("ShapeError") = nb::borrow(qb::py::shape_error_type());
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const qb::ShapeError& e) {  // NumPy's ValueError and JAX's TypeError at once
      PyErr_SetString(qb::py::shape_error_type(), e.what());
    } catch (const qb::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const qb::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const qb::TracerError& e) {
      PyErr_SetString(qb::py::tracer_error_type(), e.what());
    } catch (const qb::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const qb::Interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const qb::UnsupportedOperation& e) {
      // The Python class lives in quabla.errors (a QuablaError, ValueError and
      // NotImplementedError); built here with its op and device.
      try {
        nb::object cls = nb::module_::import_("quabla.errors").attr("UnsupportedOperationError");
        nb::object err = cls(e.what(), e.op, e.device);
        PyErr_SetObject(cls.ptr(), err.ptr());
      } catch (nb::python_error& pe) {
        pe.restore();
      }
    } catch (const qb::DeviceMemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const qb::DeviceError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const qb::InternalError& e) {
      PyErr_SetString(qb::py::quabla_error_type(), (std::string("internal error (please report): ") + e.what()).c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of memory while allocating an array");
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

  // Python's signal check between loop steps, under the GIL (programs with host calls run
  // without it; the others hold it, and taking it again is cheap). What a signal handler
  // raised (KeyboardInterrupt for Ctrl-C, or a handler's own exception: SystemExit, a
  // timeout) unwinds the loop as nb::python_error and is raised unchanged.
  qb::set_interrupt_check([]() -> bool {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    return false;
  });
  qb::py::bind_dtypes(m);
  auto array_class = qb::py::bind_array(m);
  qb::py::bind_functions(m, array_class);
  qb::py::bind_constructors(m);
  qb::py::bind_program(m);
  qb::py::bind_graph(m);
  qb::py::bind_random(m);
  qb::py::bind_flatten(m);
  qb::py::bind_dlpack(m, array_class);
  qb::py::bind_cuda(m);
  qb::py::bind_host_call(m);
  qb::py::bind_named_axis(m);
  m.def("set_num_threads", [](nb::handle n_h) {
    // Validated before any thread starts: the pool keeps what it starts.
    constexpr std::int64_t kMaxThreads = 1024;
    const std::int64_t n = qb::py::parse_int64(n_h, "set_num_threads", "n");
    if (n < 1 || n > kMaxThreads) {
      throw qb::ValueError("set_num_threads: n must be between 1 and " + std::to_string(kMaxThreads) + ", got " +
                           std::to_string(n));
    }
    qb::set_num_threads(static_cast<int>(n));
  }, nb::arg("n"), "Threads the CPU kernels (GEMMs included) may use; results do not depend on it.");
  m.def("num_threads", &qb::num_threads);
  m.def("check_shape", [](nb::handle shape, const char* what) {
    qb::check_shape(qb::py::parse_shape(shape, what), what);
  }, nb::arg("shape"), nb::arg("what"), "ValueError naming `what` unless shape is a valid array shape.");
  m.def("release_cached_buffers", &qb::release_cached_buffers,
        "Returns the freed large blocks Quabla keeps for reuse to the system.");
  m.def("_cached_buffer_bytes", &qb::cached_buffer_bytes);
}
