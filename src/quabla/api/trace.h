// Tracing: while a function runs on tracer arrays, every user-level function records its
// nodes into the trace's Graph through the same builder functions eager calls compile, so
// traced and eager results cannot disagree (DESIGN.md rules 3 and 5).
#pragma once
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "quabla/api/array.h"
#include "quabla/ir/builder.h"

namespace qb {

struct Trace : std::enable_shared_from_this<Trace> {
  Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  Graph graph;
  Builder builder;
  bool open = true;
  // Traces nest (a transform traced inside jit); a later trace is an inner one.
  std::uint64_t id;
  // Concrete arrays captured as constants, by storage (one Constant node per buffer+type).
  std::unordered_map<std::string, ValueId> constants;
  // Tracers of enclosing (open) traces read here: each becomes an extra parameter of this
  // trace, appended in first-use order; `captured` holds the outer tracers to pass for them.
  std::vector<Array> captured;
  std::unordered_map<std::string, ValueId> capture_params;

  // A parameter of this type; a weak one (a Python scalar's stand-in, a loop index) adopts
  // the dtype of the strong operands it meets, like a Python number.
  Array parameter(ValueType type);
  // The value standing for `a` in this trace: its value if it is this trace's tracer, a
  // Constant node for a concrete array (weak for Python scalars); TracerError for a
  // tracer of another trace.
  ValueId value_of(const Array& a);
  Array tracer(ValueId v);
  // Closes the trace with these results; later use of its tracers raises TracerError.
  std::shared_ptr<const Graph> finish(std::span<const Array> results);
};

// Records graph `g` into this trace with `args` for its parameters (tracers of this or an
// enclosing trace, or concrete arrays) and returns its results as tracers: how a
// transformed function called on tracers is inlined into its caller.
std::vector<Array> inline_graph(Trace& trace, const Graph& g, std::span<const Array> args);

// Makes `trace` record every operation run while it is open and innermost, also those whose
// operands are all concrete or belong to enclosing traces (which it captures). A cond
// branch is staged this way: what it computes from closed-over values runs only when the
// branch is selected, and its derivatives stay inside the branch, as for its operands.
// Other traces leave such operations to the enclosing trace (hoisting them out of loops).
void stage_everything_in(const std::shared_ptr<Trace>& trace);

// The newest open trace of this thread that has parameters, or null: where an operation with
// no operands at all that must run with the program (a host call) is recorded.
std::shared_ptr<Trace> innermost_open_trace();

// The trace an operation on `args` is recorded in: the innermost trace any of them belongs
// to, or a newer open trace that stages everything (above); null when it runs eagerly.
std::shared_ptr<Trace> trace_of(std::span<const Array> args);

}  // namespace qb
