#include "quabla/backends/cuda/program.h"

#include <cstring>

#include "quabla/ir/errors.h"

namespace qb::cuda {

Program::Program(std::shared_ptr<const Graph> graph, Device& device)
    : plan_(lower(graph, device.emulated() ? "cuda (emulated)" : device.description())), device_(&device) {
  const Graph& g = *plan_.graph;
  constants_.resize(g.values.size());
  for (const Node& n : g.nodes) {
    if (n.op != Op::Constant) continue;
    const Literal& lit = *n.attrs.literal;
    const std::size_t bytes = static_cast<std::size_t>(num_elements(lit.type.shape)) * itemsize(lit.type.dtype);
    auto buf = device.allocate(bytes);
    device.upload(buf->ptr, lit.data->data(), bytes);
    constants_[n.outputs[0]] = std::move(buf);
  }
  module_ = device.load(plan_.kernels);
}

int Program::launches() const {
  int k = 0;
  for (const Step& s : plan_.steps) k += s.kind == Step::Gemm ? 1 : static_cast<int>(s.launches.size());
  return k;
}

std::vector<DeviceBufferPtr> Program::run(std::vector<DeviceBufferPtr> args) const {
  const Graph& g = *plan_.graph;
  if (args.size() != g.params.size()) {
    throw TypeError("CUDA program expects " + std::to_string(g.params.size()) + " arguments, got " +
                    std::to_string(args.size()));
  }
  std::vector<DeviceBufferPtr> env(g.values.size());
  for (std::size_t v = 0; v < constants_.size(); ++v)
    if (constants_[v]) env[v] = constants_[v];
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ValueType& t = g.type(g.params[i]);
    const std::size_t bytes = static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype);
    if (!args[i] || args[i]->device != device_ || args[i]->bytes != bytes) {
      throw TypeError("CUDA program argument " + std::to_string(i) + " must be a " + t.str() + " buffer on " +
                      device_->description());
    }
    env[g.params[i]] = std::move(args[i]);
  }
  std::vector<std::uint64_t> slots;
  std::vector<void*> pointers;
  std::vector<DeviceBufferPtr> temps;
  for (const Step& s : plan_.steps) {
    if (s.kind == Step::Alias) {
      env[s.outputs[0]] = env[s.a];
    } else {
      for (ValueId v : s.outputs) {
        const ValueType& t = g.type(v);
        env[v] = device_->allocate(static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype));
      }
      if (s.kind == Step::Gemm) {
        if (num_elements(g.type(s.outputs[0]).shape) > 0)
          device_->gemm(s.dtype, env[s.a]->ptr, env[s.b]->ptr, env[s.outputs[0]]->ptr, s.batch, s.m, s.k, s.n);
      } else {
        temps.clear();
        for (std::size_t bytes : s.temp_bytes) temps.push_back(device_->allocate(bytes));
        for (const Launch& l : s.launches) {
          // cuLaunchKernel's convention: args[k] points at parameter k's value.
          slots.assign(l.args.size() + 1, 0);
          slots[0] = static_cast<std::uint64_t>(l.count);
          for (std::size_t k = 0; k < l.args.size(); ++k) {
            const Arg& a = l.args[k];
            switch (a.kind) {
              case Arg::Value: slots[k + 1] = env[a.value]->ptr; break;
              case Arg::Temp: slots[k + 1] = temps[static_cast<std::size_t>(a.temp)]->ptr; break;
              case Arg::Int: slots[k + 1] = static_cast<std::uint64_t>(a.imm); break;
            }
          }
          pointers.resize(slots.size());
          for (std::size_t k = 0; k < slots.size(); ++k) pointers[k] = &slots[k];
          device_->launch(*module_, static_cast<std::size_t>(l.kernel), l.count, pointers.data());
        }
      }
    }
    for (ValueId v : s.release) env[v].reset();
  }
  std::vector<DeviceBufferPtr> out;
  out.reserve(g.results.size());
  for (ValueId v : g.results) out.push_back(env[v]);
  return out;
}

std::vector<BufferPtr> Program::run_host(std::span<const BufferPtr> args) const {
  const Graph& g = *plan_.graph;
  std::vector<DeviceBufferPtr> dev;
  dev.reserve(args.size());
  for (std::size_t i = 0; i < args.size() && i < g.params.size(); ++i) {
    const ValueType& t = g.type(g.params[i]);
    const std::size_t bytes = static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype);
    auto b = device_->allocate(bytes);
    device_->upload(b->ptr, args[i]->data(), bytes);
    dev.push_back(std::move(b));
  }
  if (args.size() != g.params.size()) dev.resize(args.size());  // run() reports the mismatch
  auto outs = run(std::move(dev));
  std::vector<BufferPtr> host;
  host.reserve(outs.size());
  for (std::size_t j = 0; j < outs.size(); ++j) {
    const ValueType& t = g.type(g.results[j]);
    const std::size_t bytes = static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype);
    auto b = Buffer::allocate(bytes);
    device_->download(b->data(), outs[j]->ptr, bytes);
    host.push_back(std::move(b));
  }
  return host;
}

}  // namespace qb::cuda
