// Structural checks of a Graph: run after every builder session and transform in debug
// paths and tests, so a broken pass is caught where it breaks the IR.
#include <string>

#include "quabla/ir/errors.h"
#include "quabla/ir/graph.h"
#include "quabla/ir/infer.h"

namespace qb {

void verify(const Graph& g) {
  auto bad = [](const std::string& what) { throw InternalError("verify: " + what); };
  if (g.producer.size() != g.values.size()) bad("producer table size differs from value count");
  std::vector<bool> defined(g.values.size(), false);
  std::size_t params_seen = 0;
  for (std::size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    for (auto v : n.inputs) {
      if (v >= g.values.size() || !defined[v]) bad("node " + std::to_string(ni) + " (" + std::string(op_name(n.op)) + ") uses %" + std::to_string(v) + " before its definition");
    }
    if (n.op == Op::Parameter) {
      if (params_seen >= g.params.size() || g.params[params_seen] != n.outputs.at(0)) bad("parameter order");
      ++params_seen;
    } else {
      std::vector<ValueType> in;
      for (auto v : n.inputs) in.push_back(g.type(v));
      std::vector<ValueType> out;
      try {
        out = infer_types(n.op, in, n.attrs, n.regions);
      } catch (const ValueError& e) {
        bad(std::string("node ") + std::to_string(ni) + " is ill-typed: " + e.what());
      }
      if (out.size() != n.outputs.size()) bad("output count of " + std::string(op_name(n.op)));
      for (std::size_t i = 0; i < out.size(); ++i) {
        auto recorded = g.type(n.outputs[i]);
        auto inferred = out[i];
        recorded.weak = inferred.weak = false;  // weakness is a tracing-time annotation only
        if (!(recorded == inferred)) bad(std::string(op_name(n.op)) + " records " + recorded.str() + " but infers " + inferred.str());
      }
    }
    if (!has_regions(n.op) && !n.regions.empty()) bad(std::string(op_name(n.op)) + " holds regions");
    for (const auto& r : n.regions) verify(*r);
    for (auto v : n.outputs) {
      if (v >= g.values.size() || defined[v] || g.producer[v] != ni) bad("output %" + std::to_string(v) + " defined twice or misattributed");
      defined[v] = true;
    }
  }
  if (params_seen != g.params.size()) bad("parameter count");
  for (auto v : g.results) {
    if (v >= g.values.size() || !defined[v]) bad("result %" + std::to_string(v) + " undefined");
  }
}

}  // namespace qb
