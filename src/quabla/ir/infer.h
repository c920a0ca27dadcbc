// Shape and dtype inference of every primitive op: one switch over Op, no default.
// Primitives are strict (operands already broadcast and promoted; the user-level
// builder in api/ does that with messages that name the user's function).
#pragma once
#include <span>
#include <vector>

#include "quabla/ir/graph.h"

namespace qb {

using Regions = std::vector<std::shared_ptr<const Graph>>;

std::vector<ValueType> infer_types(Op op, std::span<const ValueType> inputs, const Attrs& attrs,
                                   const Regions& regions = {});

// The region ops' part of infer_types (infer_regions.cc).
std::vector<ValueType> infer_region_types(Op op, std::span<const ValueType> inputs, const Attrs& attrs,
                                          const Regions& regions);

}  // namespace qb
