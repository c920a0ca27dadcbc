#include "quabla/ir/builder.h"

#include "quabla/ir/infer.h"

namespace qb {

ValueId Builder::new_value(ValueType t, std::uint32_t node) {
  g_.values.push_back(std::move(t));
  g_.producer.push_back(node);
  return static_cast<ValueId>(g_.values.size() - 1);
}

ValueId Builder::param(ValueType t) {
  check_shape(t.shape, "parameter", /*allow_zero=*/true);
  const auto node = static_cast<std::uint32_t>(g_.nodes.size());
  Node n{Op::Parameter, {}, {}, {}, {}};
  n.attrs.axis = static_cast<std::int64_t>(g_.params.size());
  const ValueId v = new_value(std::move(t), node);
  n.outputs.push_back(v);
  g_.nodes.push_back(std::move(n));
  g_.params.push_back(v);
  return v;
}

ValueId Builder::constant(std::shared_ptr<const Literal> lit) {
  Attrs a;
  a.literal = std::move(lit);
  return emit(Op::Constant, {}, std::move(a))[0];
}

std::vector<ValueId> Builder::emit(Op op, std::span<const ValueId> inputs, Attrs attrs, Regions regions) {
  std::vector<ValueType> in;
  in.reserve(inputs.size());
  for (auto v : inputs) in.push_back(g_.type(v));
  auto out_types = infer_types(op, in, attrs, regions);
  for (const auto& t : out_types) check_shape(t.shape, op_name(op), /*allow_zero=*/true);
  const auto node = static_cast<std::uint32_t>(g_.nodes.size());
  Node n{op, {inputs.begin(), inputs.end()}, std::move(attrs), {}, std::move(regions)};
  for (auto& t : out_types) n.outputs.push_back(new_value(std::move(t), node));
  auto outs = n.outputs;
  g_.nodes.push_back(std::move(n));
  return outs;
}

std::vector<ValueId> Builder::copy_node(const Graph& from, const Node& n, std::span<const ValueId> inputs,
                                        std::vector<ValueId>& map) {
  auto outs = emit(n.op, inputs, n.attrs, n.regions);
  for (std::size_t k = 0; k < outs.size(); ++k) {
    g_.values[outs[k]].weak = from.type(n.outputs[k]).weak;
    map[n.outputs[k]] = outs[k];
  }
  return outs;
}

ValueId Builder::emit1(Op op, std::initializer_list<ValueId> inputs, Attrs attrs) {
  return emit(op, std::span<const ValueId>(inputs.begin(), inputs.size()), std::move(attrs))[0];
}

}  // namespace qb
