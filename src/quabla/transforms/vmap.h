// Batching as an IR->IR transform: a graph written for one example becomes a graph over a
// batch (DESIGN.md rule 3), so vmap(grad(grad(u))) is one program whose size does not
// depend on the batch size.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "quabla/ir/graph.h"

namespace qb {

// For g with parameters x_i of per-example types, returns a graph whose parameter i has
// x_i's type with an axis of size `batch` inserted at in_axes[i] (in_axes[i] < 0: not
// mapped, x_i's own type), and whose results are g's results with the batch axis first
// (results that do not depend on a mapped input are broadcast). axis_id >= 0 names the
// batch axis: g's named_axis collectives of that id (ops.def) are computed over it.
Graph vmap(const Graph& g, std::span<const std::int64_t> in_axes, std::int64_t batch, std::int64_t axis_id = -1);

// As vmap, but result j is broadcast along the batch only when `lift[j]`; `batched`
// receives, per result, whether it carries the batch axis (for region bodies, whose
// unbatched carries must stay unbatched).
Graph vmap_partial(const Graph& g, std::span<const std::int64_t> in_axes, std::int64_t batch,
                   const std::vector<bool>& lift, std::vector<bool>& batched);

}  // namespace qb
