// Collectives over a named vmap axis from Python (lax.psum and friends): emitting the
// named_axis op (ops.def) into the trace of the function vmap is tracing. The Python side
// (python/quabla/_named_axes.py) keeps the stack of named axes and checks names; the vmap
// transform of that axis computes the op.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "quabla/python/bindings.h"

namespace qb::py {

void bind_named_axis(nb::module_& m) {
  m.def("named_axis", [](std::int64_t kind, std::optional<Array> x, std::int64_t axis_id, std::int64_t size,
                         std::int64_t axis, bool tiled, const std::vector<std::int64_t>& perm) {
    std::vector<Array> operands;
    if (x) operands.push_back(*x);
    Attrs a;
    a.mode = kind;
    a.num_consts = axis_id;
    a.length = size;
    a.axis = axis;
    a.num_carry = tiled ? 1 : 0;
    a.dims = perm;
    return emit_traced(Op::NamedAxis, operands, std::move(a), "named_axis (the Python side checks the axis name first)");
  }, nb::arg("kind"), nb::arg("x").none(), nb::arg("axis_id"), nb::arg("size"), nb::arg("axis") = 0,
     nb::arg("tiled") = false, nb::arg("perm") = std::vector<std::int64_t>{},
     "Emits named_axis (ops.def) into the open trace: collective `kind` (0 sum, 1 max, 2 min, 3 all_gather, "
     "4 axis_index, 5 ppermute) over the vmap axis `axis_id` of `size` examples.");
}

}  // namespace qb::py
