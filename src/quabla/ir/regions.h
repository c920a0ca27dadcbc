// Helpers for region ops (cond, scan, while) shared by every transform: composing graphs,
// copying one graph into another, and which outputs of a region node depend on which
// operands (carries reach a fixed point: a carry depends on x when its init does or when
// one step makes it).
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "quabla/ir/builder.h"

namespace qb {

using BodyFn = std::function<std::vector<ValueId>(Builder&, std::span<const ValueId>)>;

// A new graph with parameters of these types and the results `body` returns.
Graph make_graph(const std::vector<ValueType>& params, const BodyFn& body);

// Copies g's nodes into b with `args` for its parameters; returns g's results.
std::vector<ValueId> inline_into(Builder& b, const Graph& g, std::span<const ValueId> args);

// Per result of g: whether it depends on a parameter flagged in `params`.
std::vector<bool> result_dependence(const Graph& g, const std::vector<bool>& params);

// Per output of region node n: whether it depends on an operand flagged in `inputs`
// (conservatively, every output for non-region ops with a flagged operand).
std::vector<bool> output_dependence(const Node& n, const std::vector<bool>& inputs);

// Same-structured scan layout: how many operands of each kind.
struct ScanLayout {
  std::size_t consts, carry, xs, ys;
  static ScanLayout of(const Node& n);
};

// The parameter types of a graph, and its result types (made strong).
std::vector<ValueType> param_types(const Graph& g);
std::vector<ValueType> result_types(const Graph& g);

// The index parameter type of a scan body: a weak float64 scalar (like a Python int).
ValueType scan_index_type();

// Whether g, or a region of it at any depth, holds a value whose dtype satisfies `pred`.
bool holds_dtype(const Graph& g, bool (*pred)(DType));

}  // namespace qb
