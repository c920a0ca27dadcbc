// The Quabla IR: a Graph of SSA values. Nodes are kept in topological order (a node's
// operands are produced by earlier nodes or are parameters). A node may own region graphs
// (bodies of cond/loops, added by the control-flow work); they are ordinary Graphs whose
// parameters the node binds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quabla/ir/dtype.h"
#include "quabla/ir/op.h"
#include "quabla/ir/shape.h"
#include "quabla/runtime/buffer.h"

namespace qb {

struct ValueType {
  DType dtype = DType::f32;
  Shape shape;
  // A weak value (a Python scalar) adopts the dtype of the strong operand it meets.
  bool weak = false;

  bool operator==(const ValueType&) const = default;
  std::string str() const;  // "f32[2, 3]" ("f64[]~" when weak)
};

// A literal of a Constant node: its type and its bytes (row-major).
struct Literal {
  ValueType type;
  BufferPtr data;
};

// Attributes of every op kind in one plain struct: each op reads only the fields its
// AttrKind names (see ops.def). Plain data keeps hashing, equality and printing trivial.
struct Attrs {
  DType dtype = DType::f32;            // Convert
  Shape shape;                         // Reshape, BroadcastInDim (the result shape)
  std::vector<std::int64_t> dims;      // BroadcastInDim: operand axis i -> result axis dims[i];
                                       // Transpose: permutation; Reverse/Reduce*: axes (sorted)
  std::vector<std::int64_t> starts, limits, strides;  // Slice (strides > 0)
  std::int64_t axis = 0;               // Concat, Cumsum; Parameter: its position
  bool reverse = false;                // Cumsum
  std::int64_t mode = 0;               // Take, Scatter, Argsort, SearchSorted (see ops.def)
  std::shared_ptr<const Literal> literal;  // Constant
  // Scan: steps, index of the first step, and the operand layout (consts, carry, then xs);
  // While: num_consts.
  std::int64_t length = 0, start = 0, num_consts = 0, num_carry = 0;
  // Scan and While made by vmap: the loop as it was per example (struct ExampleLoop below).
  // Advisory (a backend may run it instead), so not part of equality or hashing.
  std::shared_ptr<const struct ExampleLoop> example_loop;

  bool operator==(const Attrs& o) const;
};

using ValueId = std::uint32_t;

struct Node {
  Op op;
  std::vector<ValueId> inputs;
  Attrs attrs;
  std::vector<ValueId> outputs;
  std::vector<std::shared_ptr<const struct Graph>> regions;  // bodies of cond/scan/while
};

struct Graph {
  std::vector<ValueType> values;      // indexed by ValueId
  std::vector<std::uint32_t> producer;  // node index that defines each value
  std::vector<Node> nodes;            // topological order
  std::vector<ValueId> params;        // values of the Parameter nodes, in order
  std::vector<ValueId> results;

  const ValueType& type(ValueId v) const { return values[v]; }
  const Node& producer_of(ValueId v) const { return nodes[producer[v]]; }
};

// What vmap knew when it batched a scan or while loop: the loop per example, for a backend
// that runs one loop per example (the CUDA backend: one thread per example) instead of the
// batched loop. It describes the node only while `batched` are the node's regions (pointer
// equality): a pass that rebuilds a node's bodies leaves a stale record behind, which
// example_loop_of ignores; simplify maps it to the bodies it simplified.
struct ExampleLoop {
  std::int64_t batch = 0;
  std::vector<std::shared_ptr<const Graph>> batched;  // the node's regions this describes
  std::vector<std::shared_ptr<const Graph>> example;  // the same regions per example
  // Per operand and output of the node: whether it has the batch axis (axis 0; axis 1 for
  // a scan's xs and ys, whose axis 0 is time). The others are the same for every example.
  std::vector<bool> in_batched, out_batched;
};
// n's record when it still describes n (see ExampleLoop), else null.
const ExampleLoop* example_loop_of(const Node& n);

// Readable text form, e.g.
//   func(%0: f32[4], %1: f32[]~) -> (f32[4]) {
//     %2 = broadcast_in_dim(%1) shape=[4] dims=[] : f32[4]
//     ...
std::string print(const Graph& g);
// One node's line of the text form ("%3 = add(%1, %2) : f32[4]").
std::string print_node(const Graph& g, const Node& n);

// Whether running node n has an effect beyond its results (a host call with attrs.num_carry's
// effect bit, qb.debug.print and qb.debug.callback; or a region op holding one): dead-code
// elimination keeps such nodes although nothing reads them.
constexpr std::int64_t kHostCallEffect = 4;
bool has_effect(const Node& n);

// Which results depend on any of the flagged parameters (one flag per parameter); a region
// node's outputs count as depending on all of its inputs.
std::vector<bool> results_depending_on(const Graph& g, const std::vector<bool>& params);

// Checks SSA order, operand counts and that every node's recorded types are what inference
// says; throws InternalError describing the first violation.
void verify(const Graph& g);

}  // namespace qb
