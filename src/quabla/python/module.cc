// The extension module quabla._core. Every C++ exception is converted here: typed user
// errors to the documented Python exceptions, internal errors to QuablaError.
#include <nanobind/nanobind.h>

#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/runtime/buffer.h"
#include "quabla/runtime/thread_pool.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "Quabla's C++ core: IR, CPU executor and host arrays (bindings only).";
  // Intentionally never released: the translator may run until the interpreter shuts down.
  static PyObject* quabla_error = PyErr_NewException("quabla.QuablaError", PyExc_Exception, nullptr);
  m.attr("QuablaError") = nb::borrow(quabla_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const qb::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const qb::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const qb::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const qb::InternalError& e) {
      PyErr_SetString(quabla_error, (std::string("internal error (please report): ") + e.what()).c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of memory while allocating an array");
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

  qb::py::bind_dtypes(m);
  qb::py::bind_array(m);
  qb::py::bind_functions(m, qb::py::array_class());
  qb::py::bind_constructors(m);
  m.def("set_num_threads", &qb::set_num_threads, "Threads the CPU kernels may use (results do not depend on it).");
  m.def("num_threads", &qb::num_threads);
  m.def("release_cached_buffers", &qb::release_cached_buffers,
        "Returns the freed large blocks Quabla keeps for reuse to the system.");
  m.def("_cached_buffer_bytes", &qb::cached_buffer_bytes);
}
