#include "quabla/ir/graph.h"

#include <cstring>

namespace qb {

std::string ValueType::str() const {
  return std::string(dtype_short_name(dtype)) + shape_str(shape) + (weak ? "~" : "");
}

bool Attrs::operator==(const Attrs& o) const {
  if (dtype != o.dtype || shape != o.shape || dims != o.dims || starts != o.starts || limits != o.limits ||
      strides != o.strides || axis != o.axis || reverse != o.reverse || mode != o.mode || length != o.length || start != o.start ||
      num_consts != o.num_consts || num_carry != o.num_carry) {
    return false;
  }
  if (literal == o.literal) return true;
  if (!literal || !o.literal) return false;
  return literal->type == o.literal->type && literal->data->nbytes() == o.literal->data->nbytes() &&
         std::memcmp(literal->data->data(), o.literal->data->data(), literal->data->nbytes()) == 0;
}

const ExampleLoop* example_loop_of(const Node& n) {
  const ExampleLoop* r = n.attrs.example_loop.get();
  if (!r || (n.op != Op::Scan && n.op != Op::While) || r->batched != n.regions ||
      r->example.size() != n.regions.size() || r->in_batched.size() != n.inputs.size() ||
      r->out_batched.size() != n.outputs.size()) {
    return nullptr;
  }
  return r;
}

bool has_effect(const Node& n) {
  if (n.op == Op::HostCall) return (n.attrs.num_carry & kHostCallEffect) != 0;
  for (const auto& r : n.regions)
    for (const Node& m : r->nodes)
      if (has_effect(m)) return true;
  return false;
}

std::vector<bool> results_depending_on(const Graph& g, const std::vector<bool>& params) {
  std::vector<bool> dep(g.values.size(), false);
  for (std::size_t i = 0; i < g.params.size() && i < params.size(); ++i) dep[g.params[i]] = params[i];
  for (const Node& n : g.nodes) {
    bool any = false;
    for (ValueId in : n.inputs) any = any || dep[in];
    if (any)
      for (ValueId out : n.outputs) dep[out] = true;
  }
  std::vector<bool> r;
  for (ValueId v : g.results) r.push_back(dep[v]);
  return r;
}

}  // namespace qb
