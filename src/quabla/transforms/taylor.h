// Collapsed second-order Taylor mode as an IR->IR transform (forward Laplacian): one
// forward pass carries, per value, its primal, its first-order coefficients along K
// directions (a leading axis of size K) and ONE second-order coefficient, the (weighted)
// sum over the directions, instead of K second-order coefficients. For V = identity that
// sum is the Laplacian. The result is an ordinary graph: it is jitted, vmapped and
// differentiated (reverse mode for training) like any other.
#pragma once
#include <cstdint>
#include <span>

#include "quabla/ir/graph.h"

namespace qb {

// For g with parameters (x_1..x_n) and results (y_1..y_m), returns a graph with parameters
//   (x_1..x_n, then V_i of type [k, *x_i.shape] for each float x_i with wrt[i],
//    then, when `weighted`, c of type f64[k])
// and results
//   (y_1..y_m, then Y1_j of type [k, *y_j.shape] per float y_j, then Y2_j per float y_j)
// where Y1_j[l] = dy_j/dx . V[l] (the directional derivatives) and
//   Y2_j = sum_l c_l d^2/ds^2 y_j(x + s V[l]) at s = 0   (c_l = 1 unweighted),
// the second directional derivatives summed without ever forming them one by one.
Graph taylor2(const Graph& g, std::span<const bool> wrt, std::int64_t k, bool weighted);

}  // namespace qb
