#include "quabla/runtime/host_call.h"

#include <mutex>
#include <utility>
#include <vector>

#include "quabla/ir/errors.h"

namespace qb {

namespace {

std::mutex g_mutex;
HostCallHandler g_handler;

}  // namespace

void set_host_call_handler(HostCallHandler handler) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_handler = std::move(handler);
}

HostCallFinish run_host_call(const Graph& g, const Node& n, std::span<const std::byte* const> ins, std::byte* out) {
  HostCallHandler handler;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    handler = g_handler;
  }
  if (!handler) throw InternalError("host_call: no host-call handler is installed (the Python package installs it)");
  std::vector<ValueType> types;
  types.reserve(n.inputs.size());
  for (ValueId v : n.inputs) types.push_back(g.type(v));
  HostCallArgs args;
  args.callback = n.attrs.mode;
  args.vmap_method = n.attrs.num_carry & 3;
  args.batch_axes = n.attrs.length;
  args.in_types = types;
  args.ins = ins;
  args.out_type = &g.type(n.outputs[0]);
  args.out = out;
  return handler(args);
}

}  // namespace qb
