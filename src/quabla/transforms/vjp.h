// Reverse-mode differentiation by linearize + transpose: the JVP graph's tangent part is
// linear in the tangent inputs, and transposing it node by node (in reverse order) gives
// the cotangent program. The result is an ordinary Graph that every transform accepts again.
#pragma once
#include <span>

#include "quabla/ir/graph.h"

namespace qb {

// For g with parameters (x_1..x_n) and results (y_1..y_m), returns a graph with parameters
// (x_1..x_n, then a cotangent ct_j for each float y_j) and results (y_1..y_m, then the
// cotangent of each float x_i with wrt[i]). Cotangents are summed over broadcast axes.
// `seed[j]` (when given) selects the results that get a cotangent; the others are returned
// but not differentiated (has_aux).
Graph vjp(const Graph& g, std::span<const bool> wrt, std::span<const bool> seed = {});

// The transpose of the linear part of a graph: `linear[i]` marks the parameters the results
// are linear in; `seed` as for vjp, indexed by the graph's results.
// `primal[j]` (when given) selects the results returned as they are (the others are linear
// outputs); by default every result that does not depend on a linear parameter.
Graph transpose_linear(const Graph& lin, std::span<const bool> linear_params, std::span<const bool> seed = {},
                       std::span<const bool> primal = {});

}  // namespace qb
