// Forward-mode differentiation as an IR->IR transform (DESIGN.md rule 3). The result is an
// ordinary Graph, so it can be transformed again (jvp of jvp, transpose for reverse mode).
#pragma once
#include <span>
#include <vector>

#include "quabla/ir/graph.h"

namespace qb {

// For g with parameters (x_1..x_n) and results (y_1..y_m), returns a graph with parameters
// (x_1..x_n, then t_i for each float x_i with wrt[i]) and results (y_1..y_m, dy_1..dy_m);
// dy_j of a non-float result is absent (results are y's then the float dy's). Tangents known
// to be zero are symbolic (no nodes); a zero dy_j is materialised as a broadcast zero.
// `nonzero` (when given) receives, per float result, whether its tangent is not a known zero.
Graph jvp(const Graph& g, std::span<const bool> wrt, std::vector<bool>* nonzero = nullptr);

// True when dy of result j exists (its dtype is float).
bool has_tangent(const ValueType& t);

}  // namespace qb
