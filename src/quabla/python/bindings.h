// Shared declarations of the nanobind module `quabla._core` (bindings only, no numerics).
#pragma once
#include <nanobind/nanobind.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "quabla/api/array.h"
#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::cpu {
class Executable;
}

namespace qb::py {

namespace nb = nanobind;

// Any supported Python object (Array, number, nested list/tuple, NumPy array or scalar,
// buffer-protocol object, object with __array__) as a new or shared Array; TypeError or
// ValueError otherwise. `dtype` converts (import always copies).
Array to_array(nb::handle obj, std::optional<DType> dtype = std::nullopt);
// An operand of a math function: Python scalars become weak (they adopt the other
// operand's dtype); everything else is to_array.
Array to_operand(nb::handle obj);

// A Python int stored as int32 must fit (NumPy and jnp.array raise OverflowError rather than
// wrap): raises OverflowError naming the value.
void check_int_fits(DType d, std::int64_t v);
std::optional<DType> parse_dtype(nb::handle obj);  // None -> nullopt; qb dtypes, NumPy dtypes, "float32"...
// The float dtype of constructors and of conversions of Python numbers and lists when no
// dtype is given: float64 until qb.set_default_dtype changes it (process-wide, as JAX's
// config). Weak operands (Python scalars in arithmetic) are not affected: they adopt the
// other operand's dtype whatever this is.
api::Axes parse_axes(nb::handle obj, const char* fname);  // None | int | sequence of ints
std::vector<std::int64_t> parse_shape(nb::handle obj, const char* fname);  // int | sequence of ints
// A Python or NumPy integer as int64; TypeError for other types, ValueError past 64 bits,
// both naming `fname` and `what`.
std::int64_t parse_int64(nb::handle h, const char* fname, const char* what);
std::string axes_key(const api::Axes& axes);

// A device array reached a host (eager) function outside any trace. Functions bound with
// `device_aware` (functions.cc) catch it and run themselves on the array's device instead;
// anywhere else it is the TypeError its message explains.
struct DeviceOperand : TypeError {
  using TypeError::TypeError;
};
// Runs the module function `name` of quabla._core on `args` (positional, as bound) on the
// device of their device arrays: quabla._device_eager compiles it there once per signature.
nb::object run_on_device(const char* name, nb::tuple args);

nb::object to_list(const Array& a);
nb::object item(const Array& a);

// Emits op into the trace of the traced operands (or, with none, the innermost open trace:
// the node still runs with the program); InternalError naming `what` when nothing traces.
// For the ops Python records directly (host_call, named_axis).
Array emit_traced(Op op, const std::vector<Array>& operands, Attrs attrs, const char* what);

// api::run_program, without the GIL when the program has host calls (host_call_bindings.cc):
// a collective it starts then runs on qb.distributed's communication thread meanwhile.
std::vector<Array> run_cpu_program(const cpu::Executable& exe, std::span<const Array> args);

void bind_dtypes(nb::module_& m);
nb::class_<Array> bind_array(nb::module_& m);
void bind_functions(nb::module_& m, nb::class_<Array>& cls);
void bind_constructors(nb::module_& m);
void bind_program(nb::module_& m);
void bind_graph(nb::module_& m);
void bind_random(nb::module_& m);
void bind_flatten(nb::module_& m);
void bind_dlpack(nb::module_& m, nb::class_<Array>& cls);
void bind_cuda(nb::module_& m);
void bind_host_call(nb::module_& m);
void bind_named_axis(nb::module_& m);

// quabla.TracerError (a QuablaError and a TypeError), created by the module.
PyObject* tracer_error_type();

}  // namespace qb::py
