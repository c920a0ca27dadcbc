#include "quabla/backends/cpu/svd_values_fold.h"

#include <algorithm>
#include <vector>

namespace qb::cpu {

namespace {

// Whether every reader of svd node n's result is a slice inside its singular-value row
// (row m of the [..., m + 1 + n, w] result), and the result is not a program result.
bool values_only(const Graph& g, const Node& n) {
  const ValueId y = n.outputs[0];
  if (std::find(g.results.begin(), g.results.end(), y) != g.results.end()) return false;
  const Shape& in = g.type(n.inputs[0]).shape;
  const std::int64_t m = in[in.size() - 2];
  const std::size_t row_axis = g.type(y).shape.size() - 2;
  bool read = false;
  for (const Node& u : g.nodes) {
    if (std::find(u.inputs.begin(), u.inputs.end(), y) == u.inputs.end()) continue;
    if (u.op != Op::Slice || u.attrs.starts[row_axis] < m || u.attrs.limits[row_axis] > m + 1) return false;
    read = true;
  }
  return read;
}

}  // namespace

std::shared_ptr<const Graph> fold_svd_values_only(std::shared_ptr<const Graph> g) {
  std::vector<std::size_t> hits;
  for (std::size_t i = 0; i < g->nodes.size(); ++i) {
    const Node& n = g->nodes[i];
    if (n.op == Op::Svd && !(n.attrs.mode & kSvdValuesOnly) && values_only(*g, n)) hits.push_back(i);
  }
  if (hits.empty()) return g;
  Graph out = *g;
  for (std::size_t i : hits) out.nodes[i].attrs.mode |= kSvdValuesOnly;
  return std::make_shared<const Graph>(std::move(out));
}

}  // namespace qb::cpu
