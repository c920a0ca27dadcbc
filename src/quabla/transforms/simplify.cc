#include "quabla/transforms/simplify.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/builder.h"

namespace qb {

namespace {

// Folding a node whose result is larger than this many elements would grow the program.
constexpr std::int64_t kMaxFoldElements = 4096;

std::size_t hash_combine(std::size_t h, std::size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

std::size_t hash_ints(std::size_t h, const std::vector<std::int64_t>& v) {
  for (auto x : v) h = hash_combine(h, std::hash<std::int64_t>{}(x));
  return hash_combine(h, v.size());
}

std::size_t hash_literal(const Literal& lit) {
  std::size_t h = std::hash<std::string>{}(lit.type.str());
  const std::string_view bytes(reinterpret_cast<const char*>(lit.data->data()), lit.data->nbytes());
  return hash_combine(h, std::hash<std::string_view>{}(bytes));
}

// The identity of a node for CSE: op, operands and every attribute.
struct NodeKey {
  Op op;
  std::vector<ValueId> inputs;
  const Attrs* attrs;
  bool weak;
  bool operator==(const NodeKey& o) const {
    return op == o.op && inputs == o.inputs && weak == o.weak && *attrs == *o.attrs;
  }
};

struct NodeKeyHash {
  std::size_t operator()(const NodeKey& k) const {
    std::size_t h = std::hash<int>{}(static_cast<int>(k.op));
    for (auto v : k.inputs) h = hash_combine(h, v);
    const Attrs& a = *k.attrs;
    h = hash_combine(h, static_cast<std::size_t>(a.dtype));
    h = hash_ints(h, a.shape);
    h = hash_ints(h, a.dims);
    h = hash_ints(h, a.starts);
    h = hash_ints(h, a.limits);
    h = hash_ints(h, a.strides);
    h = hash_combine(h, std::hash<std::int64_t>{}(a.axis));
    h = hash_combine(h, a.reverse);
    if (a.literal) h = hash_combine(h, hash_literal(*a.literal));
    return hash_combine(h, k.weak);
  }
};

bool is_commutative(Op op) {
  switch (op) {
    case Op::Add: case Op::Mul: case Op::And: case Op::Or: case Op::Eq: case Op::Ne:
      return true;  // exactly commutative in our kernels (a NaN result stays NaN either way)
    default:
      return false;  // order matters, or may in a kernel's NaN or signed-zero handling
  }
}

bool is_identity(const Graph& g, const Node& n) {
  const ValueType& in = g.type(n.inputs.empty() ? 0 : n.inputs[0]);
  switch (n.op) {
    case Op::Convert: return in.dtype == n.attrs.dtype;
    case Op::Reshape: return in.shape == n.attrs.shape;
    case Op::BroadcastInDim: {
      if (in.shape != n.attrs.shape) return false;
      for (std::size_t i = 0; i < n.attrs.dims.size(); ++i)
        if (n.attrs.dims[i] != static_cast<std::int64_t>(i)) return false;
      return true;
    }
    case Op::Transpose:
      for (std::size_t i = 0; i < n.attrs.dims.size(); ++i)
        if (n.attrs.dims[i] != static_cast<std::int64_t>(i)) return false;
      return true;
    case Op::Reverse: case Op::ReduceSum: case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin:
    case Op::ReduceAny: case Op::ReduceAll:
      return n.attrs.dims.empty();
    default:
      return false;  // only the data-movement ops above can be identities
  }
}

// Evaluates one node whose operands are all constants, with the executor's kernels.
// op and attrs are the node's after the rewrites above (a broadcast of a broadcast already
// reads the inner operand with the combined dims), not the original node's.
std::shared_ptr<const Literal> fold(const ValueType& result, Op op, const Attrs& attrs,
                                    const std::vector<const Literal*>& operands) {
  auto one = std::make_shared<Graph>();
  Builder b(*one);
  std::vector<ValueId> ins;
  for (const Literal* lit : operands) {
    auto copy = std::make_shared<Literal>(*lit);
    copy->type.weak = false;
    ins.push_back(b.constant(std::move(copy)));
  }
  auto outs = b.emit(op, ins, attrs);
  b.set_results(outs);
  cpu::Executable exe(one);
  auto values = exe.run({});
  auto lit = std::make_shared<Literal>();
  lit->type = result;
  lit->data = values[0];
  return lit;
}

}  // namespace

namespace {

// Region nodes whose unused outputs (and the operands only those needed) can be dropped:
// their regions map operands to parameters one to one and have no carries. Forward halves
// of reverse mode leave such outputs behind (a nested checkpoint's zero tangents).
bool prunable(Op op) { return op == Op::Checkpoint || op == Op::Cond; }

// g with only the flagged results (all when keep_results is empty) and the nodes they need;
// parameters stay unless keep_params is given (then exactly the flagged ones stay, which
// must include every parameter the kept results use). param_used: per parameter, whether a
// kept result needs it.
Graph prune(const Graph& g, const std::vector<bool>& keep_results, const std::vector<bool>* keep_params,
            std::vector<bool>* param_used, bool keep_effects = true) {
  std::vector<bool> used(g.values.size(), false);
  for (std::size_t j = 0; j < g.results.size(); ++j)
    if (keep_results.empty() || keep_results[j]) used[g.results[j]] = true;
  struct Pruned {
    Regions regions;
    std::vector<bool> keep_in, keep_out;
  };
  std::unordered_map<std::size_t, Pruned> pruned;
  std::vector<bool> live(g.nodes.size(), false);
  for (std::size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.op == Op::Parameter) continue;
    bool any = false, all = true;
    for (auto v : n.outputs) {
      any = any || used[v];
      all = all && used[v];
    }
    if (!any && !(keep_effects && has_effect(n))) continue;  // an effect (qb.debug.print) runs although unread
    live[i] = true;
    if (prunable(n.op)) {
      const std::size_t first = n.op == Op::Cond ? 1 : 0;
      std::vector<bool> keep_out;
      for (auto v : n.outputs) keep_out.push_back(used[v]);
      std::vector<bool> needed(n.inputs.size() - first, false);
      for (const auto& r : n.regions) {
        std::vector<bool> pu;
        prune(*r, keep_out, nullptr, &pu, keep_effects);
        for (std::size_t k = 0; k < needed.size(); ++k) needed[k] = needed[k] || pu[k];
      }
      const bool every_input = std::all_of(needed.begin(), needed.end(), [](bool f) { return f; });
      if (!all || !every_input) {
        Pruned p;
        for (const auto& r : n.regions)
          p.regions.push_back(std::make_shared<const Graph>(prune(*r, keep_out, &needed, nullptr, keep_effects)));
        p.keep_in.assign(first, true);
        p.keep_in.insert(p.keep_in.end(), needed.begin(), needed.end());
        p.keep_out = std::move(keep_out);
        for (std::size_t k = 0; k < n.inputs.size(); ++k)
          if (p.keep_in[k]) used[n.inputs[k]] = true;
        pruned.emplace(i, std::move(p));
        continue;
      }
    }
    for (auto v : n.inputs) used[v] = true;
  }
  if (param_used) {
    param_used->clear();
    for (auto p : g.params) param_used->push_back(used[p]);
  }
  Graph out;
  Builder b(out);
  std::vector<ValueId> map(g.values.size(), 0);
  std::size_t param_index = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == Op::Parameter) {
      const bool keep = !keep_params || (*keep_params)[param_index];
      ++param_index;
      if (keep) map[n.outputs[0]] = b.param(g.type(n.outputs[0]));
      continue;
    }
    if (!live[i]) continue;
    if (auto it = pruned.find(i); it != pruned.end()) {
      const Pruned& p = it->second;
      std::vector<ValueId> ins;
      for (std::size_t k = 0; k < n.inputs.size(); ++k)
        if (p.keep_in[k]) ins.push_back(map[n.inputs[k]]);
      auto outs = b.emit(n.op, ins, n.attrs, p.regions);
      std::size_t m = 0;
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        if (!p.keep_out[k]) continue;
        out.values[outs[m]].weak = g.type(n.outputs[k]).weak;
        map[n.outputs[k]] = outs[m++];
      }
      continue;
    }
    std::vector<ValueId> ins;
    for (auto v : n.inputs) ins.push_back(map[v]);
    b.copy_node(g, n, ins, map);
  }
  std::vector<ValueId> results;
  for (std::size_t j = 0; j < g.results.size(); ++j)
    if (keep_results.empty() || keep_results[j]) results.push_back(map[g.results[j]]);
  b.set_results(std::move(results));
  return out;
}

}  // namespace

Graph eliminate_dead_code(const Graph& g) { return prune(g, {}, nullptr, nullptr); }

Graph without_effects(const Graph& g) { return prune(g, {}, nullptr, nullptr, false); }

Graph simplify(const Graph& input) {
  const Graph g = eliminate_dead_code(input);
  Graph out;
  Builder b(out);
  std::vector<ValueId> map(g.values.size(), 0);
  std::unordered_map<NodeKey, ValueId, NodeKeyHash> seen;
  std::vector<std::unique_ptr<Attrs>> key_attrs;  // NodeKey points at these

  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) {
      map[n.outputs[0]] = b.param(g.type(n.outputs[0]));
      continue;
    }
    std::vector<ValueId> ins;
    for (auto v : n.inputs) ins.push_back(map[v]);
    if (has_regions(n.op)) {  // bodies are simplified on their own; never folded or merged
      Regions regions;
      for (const auto& r : n.regions) regions.push_back(std::make_shared<const Graph>(simplify(*r)));
      Attrs attrs = n.attrs;
      if (const ExampleLoop* loop = example_loop_of(n)) {  // still describes the simplified bodies
        auto mapped = std::make_shared<ExampleLoop>(*loop);
        mapped->batched = regions;
        attrs.example_loop = std::move(mapped);
      } else {
        attrs.example_loop = nullptr;
      }
      auto outs = b.emit(n.op, ins, std::move(attrs), std::move(regions));
      for (std::size_t k = 0; k < outs.size(); ++k) {
        out.values[outs[k]].weak = g.type(n.outputs[k]).weak;
        map[n.outputs[k]] = outs[k];
      }
      continue;
    }
    // A host call runs a Python function; a named-axis collective waits for its vmap to
    // compute it: neither is folded at compile time nor merged.
    if (n.op == Op::HostCall || n.op == Op::NamedAxis) {
      const auto outs = b.emit(n.op, ins, n.attrs);
      map[n.outputs[0]] = outs[0];
      continue;
    }
    if (n.outputs.size() == 1 && is_identity(g, n) && out.type(ins[0]).shape == g.type(n.outputs[0]).shape &&
        out.type(ins[0]).dtype == g.type(n.outputs[0]).dtype) {
      map[n.outputs[0]] = ins[0];
      continue;
    }
    Attrs attrs = n.attrs;
    Op op = n.op;
    // broadcast(broadcast(x)) -> one broadcast of x (operand axis i lands on dims2[dims1[i]]).
    if (op == Op::BroadcastInDim && out.producer_of(ins[0]).op == Op::BroadcastInDim) {
      const Node& inner = out.producer_of(ins[0]);
      std::vector<std::int64_t> dims;
      for (auto d : inner.attrs.dims) dims.push_back(attrs.dims[d]);
      ins[0] = inner.inputs[0];
      attrs.dims = std::move(dims);
    }
    // slice(slice(x)) -> one slice of x: index j of the outer one is s1 + (s2 + j t2) t1
    // (so a strided view of a strided view reads x directly, as one fused load).
    if (op == Op::Slice && out.producer_of(ins[0]).op == Op::Slice &&
        num_elements(g.type(n.outputs[0]).shape) > 0) {
      const Node& inner = out.producer_of(ins[0]);
      const Shape& os = g.type(n.outputs[0]).shape;
      Attrs a = attrs;
      for (std::size_t d = 0; d < os.size(); ++d) {
        const std::int64_t start = inner.attrs.starts[d] + attrs.starts[d] * inner.attrs.strides[d];
        const std::int64_t stride = inner.attrs.strides[d] * attrs.strides[d];
        a.starts[d] = start;
        a.strides[d] = stride;
        a.limits[d] = start + (os[d] - 1) * stride + 1;
      }
      ins[0] = inner.inputs[0];
      attrs = std::move(a);
    }
    // reshape(reshape(x)) -> reshape(x), and nothing at all when that is x's own shape.
    if (op == Op::Reshape && out.producer_of(ins[0]).op == Op::Reshape) {
      ins[0] = out.producer_of(ins[0]).inputs[0];
      if (out.type(ins[0]).shape == attrs.shape) {
        map[n.outputs[0]] = ins[0];
        continue;
      }
    }

    // Constant folding, when every operand is a constant and the result is small.
    bool all_const = !ins.empty() && n.outputs.size() == 1;
    for (auto v : ins) all_const = all_const && out.producer_of(v).op == Op::Constant;
    const auto& ot = g.type(n.outputs[0]);
    if (all_const && num_elements(ot.shape) <= kMaxFoldElements) {
      std::int64_t largest_input = 1;
      for (auto v : ins) largest_input = std::max(largest_input, num_elements(out.type(v).shape));
      // Never larger than an operand: a broadcast scalar stays a scalar (the executor reads
      // it with stride 0), and the program's size never depends on array sizes.
      if (num_elements(ot.shape) <= largest_input) {
        std::vector<const Literal*> lits;
        for (auto v : ins) lits.push_back(out.producer_of(v).attrs.literal.get());
        Attrs folded;
        folded.literal = fold(ot, op, attrs, lits);
        op = Op::Constant;
        attrs = std::move(folded);
        ins.clear();
      }
    }

    key_attrs.push_back(std::make_unique<Attrs>(attrs));
    // Commutative ops are keyed with sorted operands, so a*b and b*a are one value (nested
    // derivatives produce both orders).
    std::vector<ValueId> key_ins = ins;
    if (is_commutative(op) && key_ins.size() == 2 && key_ins[1] < key_ins[0]) std::swap(key_ins[0], key_ins[1]);
    NodeKey key{op, key_ins, key_attrs.back().get(), n.outputs.size() == 1 && ot.weak};
    if (auto it = seen.find(key); it != seen.end() && n.outputs.size() == 1) {
      map[n.outputs[0]] = it->second;
      continue;
    }
    auto outs = b.emit(op, ins, std::move(attrs));
    for (std::size_t k = 0; k < outs.size(); ++k) {
      out.values[outs[k]].weak = g.type(n.outputs[k]).weak;
      map[n.outputs[k]] = outs[k];
    }
    if (outs.size() == 1) seen.emplace(std::move(key), outs[0]);
  }
  std::vector<ValueId> results;
  for (auto v : g.results) results.push_back(map[v]);
  b.set_results(std::move(results));
  Graph cleaned = eliminate_dead_code(out);
  verify(cleaned);
  return cleaned;
}

}  // namespace qb
