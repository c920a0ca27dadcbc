// Host calls: the host_call op (ops.def) runs a Python function on the host (qb.pure_callback,
// qb.distributed's collectives inside jit). The core knows only an id; the Python bindings
// install the handler that finds the function, gives it the operands as NumPy arrays and
// checks what it returns (python/quabla/_callback.py). Without a handler (C++ tests, a
// program loaded without the Python package) running one raises.
//
// A handler may start a call and return before its result is written (qb.distributed's
// collectives run on a communication thread, so they overlap with the rest of the program):
// it then returns what finishes the call, which blocks until the result is at `out`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "quabla/ir/graph.h"

namespace qb {

struct HostCallArgs {
  std::int64_t callback = 0;     // attrs.mode
  std::int64_t vmap_method = 0;  // attrs.num_carry & 3
  std::int64_t batch_axes = 0;   // attrs.length: leading axes added by vmap
  std::span<const ValueType> in_types;
  std::span<const std::byte* const> ins;  // contiguous row-major operands
  const ValueType* out_type = nullptr;
  std::byte* out = nullptr;               // the result, written by the handler
};

// Completes a started host call (writes its result); empty when the handler finished it.
using HostCallFinish = std::function<void()>;
using HostCallHandler = std::function<HostCallFinish(const HostCallArgs&)>;

void set_host_call_handler(HostCallHandler handler);

// Starts host_call node n of g with its operands at ins (read before it returns) and its
// result at out; what it returns finishes the call (empty: already finished). `out` must stay
// valid until then.
[[nodiscard]] HostCallFinish run_host_call(const Graph& g, const Node& n, std::span<const std::byte* const> ins, std::byte* out);

}  // namespace qb
