// Derivative rules of the dense linear-algebra ops (ops.def: cholesky, triangular_solve,
// solve, slogdet). Each emits ops that have rules of their own (solves, products, masks),
// so every order works; reverse mode transposes the linear solves (vjp.cc).
#pragma once
#include <optional>
#include <vector>

#include "quabla/transforms/emit.h"

namespace qb::ad {

// The tangent of n's output (x: primal operands, t: their tangents or nullopt, y: the
// primal output).
std::optional<V> jvp_linalg(Emit& e, const Node& n, const std::vector<V>& x, const std::vector<std::optional<V>>& t,
                            V y);

// op(A)^-1 B for a triangular A (mode bits as ops.def's triangular_solve).
V triangular_solve(Emit& e, V a, V b, std::int64_t mode);
V solve(Emit& e, V a, V b);

}  // namespace qb::ad
