// A CPU-plan rewrite: cholesky((A + A^T) * 0.5), the symmetrization qb.linalg.cholesky applies
// (as jnp.linalg.cholesky does), becomes one cholesky node reading A with attrs.mode = 1,
// whose kernel symmetrizes while it copies its input (kernels.h): no transposed copy and no
// elementwise pass per factorization. The kernel computes (a_ij + a_ji) * 0.5 as the add and
// multiply would, so results are bitwise those of the unfolded graph. Only the CPU
// executable's own graph is rewritten; transforms and the other backends never see mode 1.
#pragma once
#include <memory>

#include "quabla/ir/graph.h"

namespace qb::cpu {

// `g` itself when nothing matches.
std::shared_ptr<const Graph> fold_symmetrized_cholesky(std::shared_ptr<const Graph> g);

}  // namespace qb::cpu
