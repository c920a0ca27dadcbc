// Eager execution (DESIGN.md rule 5): an eager call builds a program from the same
// user-level function tracing records, compiles it once per (function, attributes, argument
// types) and runs it on the CPU executor. The cache makes repeated calls cost a key build,
// a hash lookup and the kernels.
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quabla/api/array.h"
#include "quabla/api/trace.h"
#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/builder.h"

namespace qb {

using BuildFn = std::function<std::vector<ValueId>(Builder&, std::span<const ValueId>)>;

// Appends the argument types to `key` (which already names the function and its attributes).
void append_signature(std::string& key, std::span<const Array> args);

// Looks up a compiled program by key; on a miss, builds it with `build` over parameters of
// the arguments' types, verifies and compiles it.
std::shared_ptr<const cpu::Executable> eager_program(const std::string& key, std::span<const Array> args,
                                                     const BuildFn& build);

std::vector<Array> run_program(const cpu::Executable& exe, std::span<const Array> args);

// A result computed from weak values only (Python numbers, weak arrays) stays weak, as in
// JAX: it adopts the dtype of the arrays it meets later, and its own dtype is the default
// of its kind (a weak Python float is float64 inside a graph, so this converts it to
// float32 under qb.set_default_dtype(qb.float32)). Strong values pass through.
ValueId weak_result(Builder& b, ValueId v);

// Records a user-level function into the trace the tracer arguments belong to.
std::vector<Array> trace_call(Trace& trace, std::span<const Array> args, const BuildFn& build);

// The common path of every user-level function: traced when an argument is a tracer;
// otherwise key = name + attributes + argument types, cached program lookup, run.
template <class Build>
std::vector<Array> eager_call(std::string key, std::span<const Array> args, Build&& build) {
  if (auto trace = trace_of(args)) return trace_call(*trace, args, std::forward<Build>(build));
  append_signature(key, args);
  auto exe = eager_program(key, args, std::forward<Build>(build));
  return run_program(*exe, args);
}

// Number of compiled programs in the eager cache (for tests of caching).
std::size_t eager_cache_size();

}  // namespace qb
