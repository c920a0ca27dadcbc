// Graph simplification run on every traced program before it is compiled: dead-code
// elimination, canonicalisation (identity converts/reshapes/broadcasts/transposes dropped,
// reshape chains merged), constant folding with the CPU executor's own kernels (only where
// the result is no larger than its inputs, so folding never inflates a program), constant
// deduplication by value, and common-subexpression elimination keyed on every attribute.
#pragma once
#include "quabla/ir/graph.h"

namespace qb {

// Only the nodes the results depend on, in their order; checkpoint and cond nodes also lose
// the outputs nothing uses (and the operands only those needed).
Graph eliminate_dead_code(const Graph& g);
// g without its effect nodes whose results nothing reads (qb.debug's host calls) and what
// only they need: for the steps a backward pass replays, which must not print again.
Graph without_effects(const Graph& g);
// All of the above; the result computes bitwise the same results as `g`.
Graph simplify(const Graph& g);

}  // namespace qb
