#include "quabla/api/trace.h"

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

Array Trace::parameter(ValueType type) {
  type.weak = false;
  return tracer(builder.param(std::move(type)));
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
      throw TracerError("a traced value of an enclosing qb.jit or transform was used inside a nested one; pass it "
                        "as an argument of the inner function");
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
  for (const Array& r : results) out.push_back(value_of(r));
  builder.set_results(out);
  open = false;
  auto g = std::make_shared<Graph>(graph);
  for (auto v : out) g->values[v].weak = false;  // results are ordinary (strong) arrays
  verify(*g);
  return g;
}

std::shared_ptr<Trace> trace_of(std::span<const Array> args) {
  for (const Array& a : args) {
    if (a.trace) {
      if (!a.trace->open) throw TracerError(kEscaped);
      return a.trace;
    }
  }
  return nullptr;
}

}  // namespace qb
