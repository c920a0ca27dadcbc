// quabla._core.Graph: a traced program as a value that transforms map to new programs
// (jvp, vjp, later vmap). Calling it on concrete arrays compiles once and runs; calling it
// with tracers inlines it into the enclosing trace (DESIGN.md rule 3).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/pair.h>

#include <map>
#include <memory>
#include <mutex>

#include "quabla/api/eager.h"
#include "quabla/api/trace.h"
#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/python/bindings.h"
#include "quabla/python/device_run.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/simplify.h"
#include "quabla/transforms/taylor.h"
#include "quabla/transforms/vjp.h"
#include "quabla/transforms/vmap.h"

namespace qb::py {

namespace {
ValueType strong_type(ValueType t) {
  t.weak = false;
  return t;
}
}  // namespace

namespace {

struct GraphObject {
  std::shared_ptr<const Graph> graph;
  mutable std::mutex mutex;
  mutable std::shared_ptr<cpu::Executable> exe;  // compiled on the first concrete call

  explicit GraphObject(Graph g) : graph(std::make_shared<const Graph>(simplify(g))) {}

  std::vector<Array> call(const std::vector<Array>& args) const {
    if (args.size() != graph->params.size()) {
      throw InternalError("Graph.call: expected " + std::to_string(graph->params.size()) + " arguments, got " +
                          std::to_string(args.size()));
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const ValueType& t = graph->type(graph->params[i]);
      if (args[i].dtype() != t.dtype || args[i].shape() != t.shape) {
        throw InternalError("Graph.call: argument " + std::to_string(i) + " is " + args[i].type.str() + ", expected " + t.str());
      }
    }
    if (auto trace = trace_of(args)) return inline_graph(*trace, *graph, args);
    std::shared_ptr<cpu::Executable> e;
    {
      std::lock_guard<std::mutex> lk(mutex);
      if (!exe) exe = std::make_shared<cpu::Executable>(graph);
      e = exe;
    }
    return run_cpu_program(*e, args);
  }

  // An eager transform of device arrays: the graph is compiled once per device and runs
  // there; host arrays beside them (the transform's seeds, closed-over constants) are copied
  // there as constants.
  nb::list call_on_device(const std::vector<nb::handle>& hs) const {
    const DeviceArray* first = nullptr;
    for (nb::handle h : hs) {
      if (is_device_array(h)) {
        first = &nb::cast<const DeviceArray&>(h);
        break;
      }
    }
    if (!first) throw TypeError("Graph.call: expects a list of arrays");
    std::lock_guard<std::mutex> lk(mutex);
    if (first->mlx) {
      if (!mlx) mlx = mlxb::compile(graph);
      return run_mlx_handles(*mlx, *graph, hs, true);
    }
    cuda::Device& device = first->device();
    auto& program = cuda_programs[&device];
    if (!program) program = std::make_shared<const cuda::Program>(graph, device);
    return run_cuda_handles(*program, *graph, hs, true);
  }
  mutable std::map<const cuda::Device*, std::shared_ptr<const cuda::Program>> cuda_programs;
  mutable std::shared_ptr<const mlxb::Program> mlx;
};

std::unique_ptr<bool[]> flags(const std::vector<bool>& v) {
  auto f = std::make_unique<bool[]>(v.size() + 1);
  for (std::size_t i = 0; i < v.size(); ++i) f[i] = v[i];
  return f;
}

}  // namespace

void bind_graph(nb::module_& m) {
  nb::class_<GraphObject>(m, "Graph")
      .def("call", &GraphObject::call, nb::arg("args"))
      .def("call", &GraphObject::call_on_device, nb::arg("args"))
      .def("as_text", [](const GraphObject& g) { return print(*g.graph); })
      .def_prop_ro("num_params", [](const GraphObject& g) { return g.graph->params.size(); })
      .def_prop_ro("num_results", [](const GraphObject& g) { return g.graph->results.size(); })
      .def("result_info", [](const GraphObject& g) {
        nb::list out;
        for (auto v : g.graph->results) {
          nb::list shape;
          for (auto d : g.graph->type(v).shape) shape.append(d);
          out.append(nb::make_tuple(nb::tuple(shape), std::string(dtype_name(g.graph->type(v).dtype))));
        }
        return out;
      })
      .def("jvp", [](const GraphObject& g, const std::vector<bool>& wrt) {
        auto f = flags(wrt);
        return std::make_shared<GraphObject>(jvp(*g.graph, std::span<const bool>(f.get(), wrt.size())));
      }, nb::arg("wrt"))
      .def("vjp", [](const GraphObject& g, const std::vector<bool>& wrt, const std::vector<bool>& seed) {
        auto f = flags(wrt);
        auto s = flags(seed);
        return std::make_shared<GraphObject>(
            vjp(*g.graph, std::span<const bool>(f.get(), wrt.size()), std::span<const bool>(s.get(), seed.size())));
      }, nb::arg("wrt"), nb::arg("seed"))
      .def("taylor2", [](const GraphObject& g, const std::vector<bool>& wrt, std::int64_t k, bool weighted) {
        auto f = flags(wrt);
        return std::make_shared<GraphObject>(taylor2(*g.graph, std::span<const bool>(f.get(), wrt.size()), k, weighted));
      }, nb::arg("wrt"), nb::arg("k"), nb::arg("weighted"),
         "Collapsed second-order Taylor mode (transforms/taylor.h): adds K directions per wrt "
         "parameter (and weights when weighted); results gain the K first-order and the one "
         "collapsed second-order coefficient per float result.")
      .def("depends_on", [](const GraphObject& g, const std::vector<bool>& params) {
        return results_depending_on(*g.graph, params);
      }, nb::arg("params"), "Per result: whether it depends on any flagged parameter.")
      .def("vmap", [](const GraphObject& g, const std::vector<std::int64_t>& in_axes, std::int64_t batch,
                      std::int64_t axis_id) {
        return std::make_shared<GraphObject>(vmap(*g.graph, in_axes, batch, axis_id));
      }, nb::arg("in_axes"), nb::arg("batch"), nb::arg("axis_id") = -1);

  // A region node (cond / scan / while) over these operands. Each region is a traced graph
  // and, per its parameter, the position in the node's region parameters that feeds it
  // (cond: the operands after the predicate; scan: index, consts, carry, x slices; while:
  // the operands), so bodies that captured different outer values share one operand list.
  // Emitted into the trace of a traced operand, or compiled and run on concrete ones.
  m.def("region_call", [](const std::string& kind, const std::vector<std::pair<std::shared_ptr<GraphObject>, std::vector<std::int64_t>>>& regions,
                          const std::vector<Array>& inputs, std::int64_t length, std::int64_t start, bool reverse,
                          std::int64_t num_consts, std::int64_t num_carry, std::int64_t mode) {
    Op op;
    if (kind == "cond") op = Op::Cond;
    else if (kind == "scan") op = Op::Scan;
    else if (kind == "while") op = Op::While;
    else if (kind == "custom_jvp") op = Op::CustomJvp;
    else if (kind == "custom_vjp") op = Op::CustomVjp;
    else if (kind == "checkpoint") op = Op::Checkpoint;
    else if (kind == "linear_solve") op = Op::LinearSolve;
    else throw ValueError("region_call: unknown kind " + kind);
    Attrs a;
    a.length = length;
    a.start = start;
    a.reverse = reverse;
    a.num_consts = num_consts;
    a.num_carry = num_carry;
    a.mode = mode;  // checkpoint: its policy (0 saves nothing, 1 matrix products, 2 those without batch axes)
    // The node's region parameter types.
    std::vector<ValueType> rp;
    if (op == Op::Scan) rp.push_back(scan_index_type());
    for (std::size_t i = op == Op::Cond ? 1 : 0; i < inputs.size(); ++i) {
      ValueType t = inputs[i].type;
      t.weak = false;
      if (op == Op::Scan && static_cast<std::int64_t>(i) >= num_consts + num_carry) {
        if (t.shape.empty()) throw ValueError("scan: xs leaves need a leading axis");
        t.shape.erase(t.shape.begin());
      }
      rp.push_back(std::move(t));
    }
    // A custom_jvp's rule also takes a tangent per float argument (the first num_consts).
    std::vector<ValueType> rp_rule = rp;
    if (op == Op::CustomJvp) {
      for (std::int64_t i = 0; i < num_consts && i < static_cast<std::int64_t>(rp.size()); ++i)
        if (is_inexact(rp[static_cast<std::size_t>(i)].dtype)) rp_rule.push_back(rp[static_cast<std::size_t>(i)]);
    }
    Regions graphs;
    for (const auto& [g, feed] : regions) {
      // A custom_jvp rule that reads the outputs (mode bit 1) takes them after the tangents.
      if (op == Op::CustomJvp && graphs.size() == 1 && (mode & 1)) {
        const Graph& primal = *graphs[0];
        for (auto r : primal.results) rp_rule.push_back(strong_type(primal.type(r)));
      }
      // A custom_vjp's bwd takes the residuals (fwd's results after the outputs), a
      // cotangent per float output, then the operands.
      if (op == Op::CustomVjp && graphs.size() == 2) {
        const Graph& fwd = *graphs[1];
        const std::size_t nout = fwd.results.size() - static_cast<std::size_t>(num_carry);
        rp_rule.clear();
        for (std::size_t k = nout; k < fwd.results.size(); ++k) rp_rule.push_back(strong_type(fwd.type(fwd.results[k])));
        for (std::size_t k = 0; k < nout; ++k)
          if (is_inexact(fwd.type(fwd.results[k]).dtype)) rp_rule.push_back(strong_type(fwd.type(fwd.results[k])));
        rp_rule.insert(rp_rule.end(), rp.begin(), rp.end());
      }
      const bool rule_layout = (op == Op::CustomJvp && graphs.size() == 1) || (op == Op::CustomVjp && graphs.size() == 2);
      const std::vector<ValueType>& rp_here = rule_layout ? rp_rule : rp;
      const Graph& body = *g->graph;
      if (feed.size() != body.params.size()) throw InternalError("region_call: feed size differs from parameter count");
      for (auto f : feed)
        if (f < 0 || f >= static_cast<std::int64_t>(rp_here.size())) throw InternalError("region_call: feed out of range");
      graphs.push_back(std::make_shared<const Graph>(simplify(make_graph(rp_here, [&](Builder& b, std::span<const ValueId> ps) {
        std::vector<ValueId> args;
        for (auto f : feed) args.push_back(ps[f]);
        return inline_into(b, body, args);
      }))));
    }
    if (auto trace = trace_of(inputs)) {
      std::vector<ValueId> vals;
      for (const Array& x : inputs) vals.push_back(trace->value_of(x));
      std::vector<Array> out;
      for (ValueId v : trace->builder.emit(op, vals, std::move(a), std::move(graphs))) out.push_back(trace->tracer(v));
      return out;
    }
    auto g = std::make_shared<Graph>();
    Builder b(*g);
    std::vector<ValueId> ps;
    for (const Array& x : inputs) {
      ValueType t = x.type;
      t.weak = false;
      ps.push_back(b.param(t));
    }
    b.set_results(b.emit(op, ps, std::move(a), std::move(graphs)));
    verify(*g);
    cpu::Executable exe(std::make_shared<const Graph>(simplify(*g)));
    std::vector<Array> strong = inputs;
    return run_cpu_program(exe, strong);
  }, nb::arg("kind"), nb::arg("regions"), nb::arg("inputs"), nb::arg("length") = 0, nb::arg("start") = 0,
     nb::arg("reverse") = false, nb::arg("num_consts") = 0, nb::arg("num_carry") = 0, nb::arg("mode") = 0);

  m.def("finish_graph", [](Trace& t, nb::handle results) {
    std::vector<Array> outs;
    for (nb::handle h : nb::borrow<nb::sequence>(results)) outs.push_back(to_operand(h));
    auto g = t.finish(outs);  // may capture more: a result can be an outer tracer itself
    auto captured = t.captured;
    return nb::make_tuple(std::make_shared<GraphObject>(*g), captured);
  }, nb::arg("trace"), nb::arg("results"));
}

}  // namespace qb::py
