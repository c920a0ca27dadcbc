#include "quabla/api/trace.h"

#include <atomic>

#include "quabla/api/eager.h"
#include "quabla/ir/errors.h"

namespace qb {

namespace {
constexpr const char* kEscaped =
    "a traced value escaped the function being traced (it was stored in a global, a closure or a container that "
    "outlived the trace) and is used after the trace ended; return it from the function instead";
}  // namespace

void Array::require_concrete(const char* what) const {
  if (!trace) return;
  if (!trace->open) throw TracerError(std::string(what) + ": " + kEscaped);
  throw TracerError(std::string(what) + " needs a concrete value, but this array is traced (" + type.str() +
                    ") inside qb.jit or a transform; use qb.where(cond, a, b) for elementwise choices and "
                    "qb.cond for branches on traced values, or pass the value as a static argument");
}

Trace::Trace() : builder(graph) {
  static std::atomic<std::uint64_t> next{0};
  id = next++;
}

namespace {
// Every trace that made a parameter, innermost (newest) last (per thread).
thread_local std::vector<std::weak_ptr<Trace>> t_traces;
}  // namespace

std::shared_ptr<Trace> innermost_open_trace() {
  while (!t_traces.empty()) {
    if (auto t = t_traces.back().lock(); t && t->open) return t;
    t_traces.pop_back();  // finished or gone
  }
  return nullptr;
}

Array Trace::parameter(ValueType type) {
  if (graph.params.empty()) t_traces.push_back(weak_from_this());
  const bool weak = type.weak;
  Array a = tracer(builder.param(std::move(type)));
  a.type.weak = weak;
  return a;
}

Array Trace::tracer(ValueId v) {
  Array a;
  a.type = graph.type(v);
  a.type.weak = false;
  a.trace = shared_from_this();
  a.value = v;
  return a;
}

ValueId Trace::value_of(const Array& a) {
  if (a.trace) {
    if (a.trace.get() != this) {
      if (!a.trace->open) throw TracerError(kEscaped);
      if (a.trace->id > id) {
        throw TracerError("a traced value of an inner transform was used in an enclosing one (it escaped its "
                          "function); return it from the inner function instead");
      }
      // A tracer of an enclosing trace (a closure over an outer transform's value): an
      // extra parameter here, fed with the outer tracer when this trace is inlined.
      const std::string key = std::to_string(a.trace->id) + ":" + std::to_string(a.value);
      if (auto it = capture_params.find(key); it != capture_params.end()) return it->second;
      ValueType t = a.type;
      t.weak = false;
      const ValueId p = builder.param(t);
      capture_params.emplace(key, p);
      captured.push_back(a);
      return p;
    }
    return a.value;
  }
  // Captured concrete arrays become constants; the literal shares the array's storage.
  std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(a.storage.get())) + a.type.str();
  if (auto it = constants.find(key); it != constants.end()) return it->second;
  auto lit = std::make_shared<Literal>();
  lit->type = a.type;
  lit->data = a.storage;
  const ValueId v = builder.constant(std::move(lit));
  constants.emplace(std::move(key), v);
  return v;
}

std::shared_ptr<const Graph> Trace::finish(std::span<const Array> results) {
  if (!open) throw TracerError("this trace has already finished");
  std::vector<ValueId> out;
  for (const Array& r : results) out.push_back(weak_result(builder, value_of(r)));
  builder.set_results(out);
  open = false;
  auto g = std::make_shared<Graph>(graph);
  verify(*g);
  return g;
}

namespace {
// Traces that stage everything, innermost last (per thread: tracing is per thread).
thread_local std::vector<std::weak_ptr<Trace>> t_staging;

std::shared_ptr<Trace> innermost_staging() {
  while (!t_staging.empty()) {
    if (auto t = t_staging.back().lock(); t && t->open) return t;
    t_staging.pop_back();  // finished or closed
  }
  return nullptr;
}
}  // namespace

void stage_everything_in(const std::shared_ptr<Trace>& trace) { t_staging.push_back(trace); }

std::shared_ptr<Trace> trace_of(std::span<const Array> args) {
  std::shared_ptr<Trace> inner;
  for (const Array& a : args) {
    if (a.trace) {
      if (!a.trace->open) throw TracerError(kEscaped);
      if (!inner || a.trace->id > inner->id) inner = a.trace;
    }
  }
  if (auto staging = innermost_staging(); staging && (!inner || staging->id > inner->id)) return staging;
  return inner;
}

std::vector<Array> inline_graph(Trace& trace, const Graph& g, std::span<const Array> args) {
  if (args.size() != g.params.size()) {
    throw InternalError("inline_graph: " + std::to_string(g.params.size()) + " parameters, " +
                        std::to_string(args.size()) + " arguments");
  }
  std::vector<ValueId> map(g.values.size(), 0);
  for (std::size_t i = 0; i < args.size(); ++i) map[g.params[i]] = trace.value_of(args[i]);
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<ValueId> in;
    for (auto v : n.inputs) in.push_back(map[v]);
    auto outs = trace.builder.emit(n.op, in, n.attrs, n.regions);
    for (std::size_t k = 0; k < outs.size(); ++k) map[n.outputs[k]] = outs[k];
  }
  std::vector<Array> out;
  for (auto v : g.results) out.push_back(trace.tracer(map[v]));
  return out;
}

}  // namespace qb
