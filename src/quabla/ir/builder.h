// Appends nodes to a Graph, inferring and checking each node's types (infer.h).
// Primitive-level: operands must already agree; the user-level functions of api/ do NumPy
// broadcasting and the promotion rules on top of this.
#pragma once
#include <span>
#include <vector>

#include "quabla/ir/graph.h"
#include "quabla/ir/infer.h"

namespace qb {

class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  ValueId param(ValueType t);
  ValueId constant(std::shared_ptr<const Literal> lit);
  std::vector<ValueId> emit(Op op, std::span<const ValueId> inputs, Attrs attrs = {}, Regions regions = {});
  ValueId emit1(Op op, std::initializer_list<ValueId> inputs, Attrs attrs = {});
  void set_results(std::vector<ValueId> results) { g_.results = std::move(results); }
  // Re-emits node n of graph `from` with these operands (already in this graph), keeping its
  // attributes and the weakness of its results, and records each old -> new value in `map`
  // (indexed by `from`'s values). Returns the new results. Transforms copy nodes this way.
  std::vector<ValueId> copy_node(const Graph& from, const Node& n, std::span<const ValueId> inputs,
                                 std::vector<ValueId>& map);

  // By value: a reference into the graph would dangle once the next node is emitted.
  ValueType type(ValueId v) const { return g_.type(v); }
  Graph& graph() { return g_; }

 private:
  ValueId new_value(ValueType t, std::uint32_t node);
  Graph& g_;
};

}  // namespace qb
