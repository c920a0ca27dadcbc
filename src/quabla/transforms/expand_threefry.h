// ops.def's threefry for backends without its kernel (CUDA, MLX): every threefry node,
// inside regions too, becomes the Threefry-2x32 rounds as int32 ops (two's-complement
// adds, shifts with the logical right shift as an arithmetic one and a mask, xors), the
// same bits the CPU kernel writes. Those backends generate and fuse elementwise integer
// code already.
#pragma once
#include <memory>

#include "quabla/ir/graph.h"

namespace qb {

// `g` itself when it holds no threefry node.
std::shared_ptr<const Graph> expand_threefry(std::shared_ptr<const Graph> g);

}  // namespace qb
