// The host_call op from Python (qb.pure_callback, qb.distributed inside jit): emitting it into
// a trace, and the handler that runs it (runtime/host_call.h). The handler calls
// quabla._callback.dispatch with the operands as bytes and gets the result back as an array,
// or a future of it when the call runs on another thread (qb.distributed's collectives); the
// Python side finds the function, builds the NumPy arrays and checks what it returned.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "quabla/api/eager.h"
#include "quabla/api/trace.h"
#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/runtime/host_call.h"

namespace qb::py {

namespace {

nb::tuple shape_tuple(const Shape& s) {
  nb::list l;
  for (auto d : s) l.append(d);
  return nb::tuple(l);
}

std::size_t bytes_of(const ValueType& t) { return static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype); }

// The result dispatch returned (a contiguous NumPy array, or anything with the buffer
// protocol) copied to the program's buffer.
void copy_result(const nb::handle result, const ValueType& type, std::byte* out) {
  Py_buffer view;
  if (PyObject_GetBuffer(result.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  const auto size = static_cast<std::size_t>(view.len);
  if (size == bytes_of(type)) std::memcpy(out, view.buf, size);
  PyBuffer_Release(&view);
  if (size != bytes_of(type)) {
    throw InternalError("host_call: the result has " + std::to_string(size) + " bytes, expected " +
                        std::to_string(bytes_of(type)));
  }
}

// A call dispatch started on another thread: a concurrent.futures.Future of the result's
// bytes. Finishing it waits for the future (letting go of the GIL meanwhile, in Python's
// wait); the future is released under the GIL however the run ends.
HostCallFinish finish_later(nb::object future, const HostCallArgs& a) {
  auto held = std::shared_ptr<nb::object>(new nb::object(std::move(future)), [](nb::object* p) {
    if (!Py_IsInitialized()) return;  // at exit: leave it to the process
    nb::gil_scoped_acquire gil;
    delete p;
  });
  return [held, type = a.out_type, out = a.out]() {
    nb::gil_scoped_acquire gil;
    copy_result(held->attr("result")(), *type, out);
  };
}

HostCallFinish run_in_python(const HostCallArgs& a) {
  nb::gil_scoped_acquire gil;  // programs with host calls run without it (Executable::has_host_calls)
  nb::list operands;
  for (std::size_t i = 0; i < a.ins.size(); ++i) {
    const ValueType& t = a.in_types[i];
    operands.append(nb::make_tuple(nb::bytes(reinterpret_cast<const char*>(a.ins[i]), bytes_of(t)),
                                   std::string(dtype_name(t.dtype)), shape_tuple(t.shape)));
  }
  nb::object dispatch = nb::module_::import_("quabla._callback").attr("dispatch");
  nb::object result = dispatch(a.callback, a.vmap_method, a.batch_axes, operands,
                               std::string(dtype_name(a.out_type->dtype)), shape_tuple(a.out_type->shape));
  if (PyObject_CheckBuffer(result.ptr())) {
    copy_result(result, *a.out_type, a.out);
    return {};
  }
  return finish_later(std::move(result), a);
}

}  // namespace

Array emit_traced(Op op, const std::vector<Array>& operands, Attrs attrs, const char* what) {
  auto trace = trace_of(operands);
  if (!trace) trace = innermost_open_trace();
  if (!trace) throw InternalError(std::string(what) + ": not tracing");
  std::vector<ValueId> vals;
  for (const Array& x : operands) vals.push_back(trace->value_of(x));
  return trace->tracer(trace->builder.emit(op, vals, std::move(attrs))[0]);
}

std::vector<Array> run_cpu_program(const cpu::Executable& exe, std::span<const Array> args) {
  if (!exe.has_host_calls()) return run_program(exe, args);
  nb::gil_scoped_release unlocked;  // host calls take it back; collectives run on their thread meanwhile
  return run_program(exe, args);
}

void bind_host_call(nb::module_& m) {
  set_host_call_handler(run_in_python);
  m.def("host_call", [](std::int64_t callback, const std::vector<Array>& inputs, const std::vector<std::int64_t>& shape,
                        nb::handle dtype, std::int64_t transpose, std::int64_t vmap_method) {
    const auto dt = parse_dtype(dtype);
    if (!dt) throw TypeError("host_call: a result dtype is required");
    Attrs a;
    a.mode = callback;
    a.num_consts = transpose;
    a.num_carry = vmap_method;
    a.shape = shape;
    a.dtype = *dt;
    return emit_traced(Op::HostCall, inputs, std::move(a), "host_call (eager calls run the function directly)");
  }, nb::arg("callback"), nb::arg("inputs"), nb::arg("shape"), nb::arg("dtype"), nb::arg("transpose"),
     nb::arg("vmap_method"),
     "Emits host_call (ops.def) into the trace of the traced operands: the Python function with registry id "
     "`callback`, one result of `shape` and `dtype`.");
  m.def("tracing", [] { return innermost_open_trace() != nullptr; },
        "Whether this thread is tracing (a jit, transform or loop body is being traced).");
}

}  // namespace qb::py
