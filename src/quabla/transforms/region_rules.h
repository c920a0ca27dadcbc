// The rules of the region ops (cond, scan, while) in each transform. They live apart from
// the per-op switches because a region node has several outputs and its rule transforms
// its bodies with the same transform, recursively.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "quabla/transforms/emit.h"

namespace qb {

// JVP of region node n: x are its primal operands (in the output graph), t their tangents
// (nullopt: zero). Emits one node computing primals and tangents together; fills the
// primal outputs and each output's tangent.
void jvp_region(ad::Emit& e, const Node& n, const std::vector<ValueId>& x,
                const std::vector<std::optional<ValueId>>& t, std::vector<ValueId>& outs,
                std::vector<std::optional<ValueId>>& tangents);

// Reverse mode for a region node of a linear (JVP) graph whose operands are partly linear
// (`lin` per operand, `lin_out` per output, from output_dependence). The forward half emits
// the non-linear outputs (and what the backward half needs: for scans, O(sqrt T) carry
// checkpoints) and returns a handle; the backward half takes the cotangents of the linear
// outputs (nullopt: zero) and returns one per linear operand (nullopt elsewhere).
struct RegionResiduals {
  std::vector<ValueId> values;  // checkpoints and the like, in the output graph
  // What the forward half derived from the node's bodies (a scan's primal and transposed
  // step), so the backward half does not derive it again (which would double per nesting).
  std::shared_ptr<const void> derived;
};
RegionResiduals transpose_region_forward(ad::Emit& e, const Node& n, const std::vector<bool>& lin,
                                         const std::vector<bool>& lin_out, const std::vector<ValueId>& x,
                                         std::vector<ValueId>& nonlinear_outs);
std::vector<std::optional<ValueId>> transpose_region_backward(ad::Emit& e, const Graph& g, const Node& n,
                                                              const std::vector<bool>& lin,
                                                              const std::vector<bool>& lin_out,
                                                              const std::vector<ValueId>& x,
                                                              const RegionResiduals& res,
                                                              const std::vector<std::optional<ValueId>>& ct_out);

// Batching of region node n (operands x, `batched` per operand, batch axis first).
std::vector<ValueId> vmap_region(ad::Emit& e, std::int64_t batch, const Node& n, const std::vector<ValueId>& x,
                                 const std::vector<bool>& batched, std::vector<bool>& out_batched);

}  // namespace qb
