#include "quabla/ir/regions.h"

#include "quabla/ir/errors.h"

namespace qb {

Graph make_graph(const std::vector<ValueType>& params, const BodyFn& body) {
  Graph g;
  Builder b(g);
  std::vector<ValueId> ps;
  for (const auto& t : params) ps.push_back(b.param(t));
  auto results = body(b, ps);
  for (auto r : results) g.values[r].weak = false;
  b.set_results(std::move(results));
  return g;
}

std::vector<ValueId> inline_into(Builder& b, const Graph& g, std::span<const ValueId> args) {
  if (args.size() != g.params.size()) {
    throw InternalError("inline_into: " + std::to_string(g.params.size()) + " parameters, " +
                        std::to_string(args.size()) + " arguments");
  }
  std::vector<ValueId> map(g.values.size(), 0);
  for (std::size_t i = 0; i < args.size(); ++i) map[g.params[i]] = args[i];
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<ValueId> in;
    for (auto v : n.inputs) in.push_back(map[v]);
    b.copy_node(g, n, in, map);
  }
  std::vector<ValueId> out;
  for (auto r : g.results) out.push_back(map[r]);
  return out;
}

std::vector<bool> result_dependence(const Graph& g, const std::vector<bool>& params) {
  std::vector<bool> dep(g.values.size(), false);
  for (std::size_t i = 0; i < g.params.size() && i < params.size(); ++i) dep[g.params[i]] = params[i];
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<bool> in;
    bool any = false;
    for (auto v : n.inputs) {
      in.push_back(dep[v]);
      any = any || dep[v];
    }
    if (!any) continue;
    auto out = output_dependence(n, in);
    for (std::size_t k = 0; k < n.outputs.size(); ++k) dep[n.outputs[k]] = out[k];
  }
  std::vector<bool> out;
  for (auto r : g.results) out.push_back(dep[r]);
  return out;
}

ScanLayout ScanLayout::of(const Node& n) {
  ScanLayout l;
  l.consts = static_cast<std::size_t>(n.attrs.num_consts);
  l.carry = static_cast<std::size_t>(n.attrs.num_carry);
  l.xs = n.inputs.size() - l.consts - l.carry;
  l.ys = n.outputs.size() - l.carry;
  return l;
}

std::vector<bool> output_dependence(const Node& n, const std::vector<bool>& inputs) {
  switch (n.op) {
    case Op::CustomJvp: case Op::CustomVjp: case Op::Checkpoint:
      return result_dependence(*n.regions[0], inputs);
    case Op::CustomVjpLin: case Op::LinearSolve: {
      bool any = false;
      for (bool f : inputs) any = any || f;
      return std::vector<bool>(n.outputs.size(), any);
    }
    case Op::Cond: {
      std::vector<bool> ops(inputs.begin() + 1, inputs.end());
      std::vector<bool> out(n.outputs.size(), inputs[0]);
      for (const auto& r : n.regions) {
        auto d = result_dependence(*r, ops);
        for (std::size_t k = 0; k < out.size(); ++k) out[k] = out[k] || d[k];
      }
      return out;
    }
    case Op::Scan: case Op::While: {
      const bool scan = n.op == Op::Scan;
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
      const std::size_t nk = scan ? static_cast<std::size_t>(n.attrs.num_carry) : n.inputs.size() - nc;
      const Graph& body = *n.regions[scan ? 0 : 1];
      std::vector<bool> params;
      if (scan) params.push_back(false);  // the step index
      params.insert(params.end(), inputs.begin(), inputs.end());
      const std::size_t carry0 = (scan ? 1 : 0) + nc;
      std::vector<bool> d;
      for (;;) {
        d = result_dependence(body, params);
        bool changed = false;
        for (std::size_t k = 0; k < nk; ++k) {
          if (d[k] && !params[carry0 + k]) {
            params[carry0 + k] = true;
            changed = true;
          }
        }
        if (!changed) break;
      }
      std::vector<bool> out;
      for (std::size_t k = 0; k < nk; ++k) out.push_back(params[carry0 + k]);
      for (std::size_t j = nk; j < d.size(); ++j) out.push_back(d[j]);
      // A while loop's trip count comes from cond: when cond reads a flagged value, every
      // carry is flagged (conservative: a carry the body never changes would not need it).
      if (!scan) {
        bool cond_dep = false;
        for (bool f : result_dependence(*n.regions[0], params)) cond_dep = cond_dep || f;
        if (cond_dep) std::fill(out.begin(), out.end(), true);
      }
      return out;
    }
    default:
      return std::vector<bool>(n.outputs.size(), true);
  }
}

std::vector<ValueType> param_types(const Graph& g) {
  std::vector<ValueType> out;
  for (auto p : g.params) out.push_back(g.type(p));
  return out;
}

std::vector<ValueType> result_types(const Graph& g) {
  std::vector<ValueType> out;
  for (auto r : g.results) {
    ValueType t = g.type(r);
    t.weak = false;
    out.push_back(std::move(t));
  }
  return out;
}

ValueType scan_index_type() { return ValueType{DType::f64, {}, true}; }

bool holds_dtype(const Graph& g, bool (*pred)(DType)) {
  for (const ValueType& t : g.values) {
    if (pred(t.dtype)) return true;
  }
  for (const Node& n : g.nodes) {
    for (const auto& r : n.regions) {
      if (holds_dtype(*r, pred)) return true;
    }
  }
  return false;
}

}  // namespace qb
