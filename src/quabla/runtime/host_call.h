// Host calls: the host_call op (ops.def) runs a Python function on the host (qb.pure_callback,
// qb.distributed's collectives inside jit). The core knows only an id; the Python bindings
// install the handler that finds the function, gives it the operands as NumPy arrays and
// checks what it returns (python/quabla/_callback.py). Without a handler (C++ tests, a
// program loaded without the Python package) running one raises.
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

using HostCallHandler = std::function<void(const HostCallArgs&)>;

void set_host_call_handler(HostCallHandler handler);

// Runs host_call node n of g with its operands at ins and its result at out.
void run_host_call(const Graph& g, const Node& n, std::span<const std::byte* const> ins, std::byte* out);

}  // namespace qb
