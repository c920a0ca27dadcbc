#include "quabla/backends/cuda/program.h"

#include <cstring>

#include "quabla/ir/errors.h"
#include "quabla/runtime/interrupt.h"

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
  for (const auto& b : plan_.blobs) {
    blobs_.push_back(device.allocate(b.size() * sizeof(std::int64_t)));
    device.upload(blobs_.back()->ptr, b.data(), b.size() * sizeof(std::int64_t));
  }
  module_ = device.load(plan_.kernels);
  regions_.resize(plan_.steps.size());
  scan_index_.resize(plan_.steps.size());
  for (std::size_t k = 0; k < plan_.steps.size(); ++k) {
    const Step& s = plan_.steps[k];
    if (s.kind != Step::Region) continue;
    const Node& n = g.nodes[s.node];
    const std::size_t bodies = (n.op == Op::Cond || n.op == Op::While) ? 2 : 1;
    for (std::size_t r = 0; r < bodies; ++r) regions_[k].push_back(std::make_shared<const Program>(n.regions[r], device));
    if (n.op == Op::Scan) {
      std::vector<double> index(static_cast<std::size_t>(n.attrs.length));
      for (std::size_t t = 0; t < index.size(); ++t) index[t] = static_cast<double>(n.attrs.start + static_cast<std::int64_t>(t));
      scan_index_[k] = device.allocate(index.size() * sizeof(double));
      device.upload(scan_index_[k]->ptr, index.data(), index.size() * sizeof(double));
    }
  }
}

namespace {
std::size_t bytes_of(const ValueType& t) { return static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype); }
}  // namespace

void Program::run_region(std::size_t step, std::vector<DeviceBufferPtr>& env) const {
  const Graph& g = *plan_.graph;
  const Node& n = g.nodes[plan_.steps[step].node];
  const auto& bodies = regions_[step];
  auto operand = [&](std::size_t i) -> const DeviceBufferPtr& { return env[n.inputs[i]]; };
  auto set_outputs = [&](std::vector<DeviceBufferPtr> outs) {
    for (std::size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = std::move(outs[k]);
  };
  auto download_bool = [&](const DeviceBufferPtr& b) {
    std::uint8_t v = 0;
    device_->download(&v, b->ptr, 1);
    return v != 0;
  };
  switch (n.op) {
    case Op::Cond: {
      const bool pred = download_bool(operand(0));
      std::vector<DeviceBufferPtr> args(n.inputs.size() - 1);
      for (std::size_t i = 1; i < n.inputs.size(); ++i) args[i - 1] = operand(i);
      return set_outputs(bodies[pred ? 1 : 0]->run(std::move(args)));
    }
    case Op::Scan: {
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts), nk = static_cast<std::size_t>(n.attrs.num_carry);
      const std::size_t nx = n.inputs.size() - nc - nk, ny = n.outputs.size() - nk;
      const auto len = static_cast<std::size_t>(n.attrs.length);
      std::vector<DeviceBufferPtr> carry(nk);
      for (std::size_t k = 0; k < nk; ++k) carry[k] = operand(nc + k);
      std::vector<std::size_t> x_bytes(nx), y_bytes(ny);
      for (std::size_t i = 0; i < nx; ++i) x_bytes[i] = len ? bytes_of(g.type(n.inputs[nc + nk + i])) / len : 0;
      std::vector<DeviceBufferPtr> ys(ny);
      for (std::size_t j = 0; j < ny; ++j) {
        const std::size_t total = bytes_of(g.type(n.outputs[nk + j]));
        ys[j] = device_->allocate(total);
        y_bytes[j] = len ? total / len : 0;
      }
      InterruptPoller interrupt(1);
      for (std::size_t s = 0; s < len; ++s) {
        interrupt.poll();
        const std::size_t t = n.attrs.reverse ? len - 1 - s : s;
        std::vector<DeviceBufferPtr> args;
        args.reserve(1 + nc + nk + nx);
        args.push_back(view(scan_index_[step], t * sizeof(double), sizeof(double)));
        for (std::size_t i = 0; i < nc; ++i) args.push_back(operand(i));
        for (auto& c : carry) args.push_back(std::move(c));
        for (std::size_t i = 0; i < nx; ++i) args.push_back(view(operand(nc + nk + i), t * x_bytes[i], x_bytes[i]));
        auto outs = bodies[0]->run(std::move(args));
        for (std::size_t k = 0; k < nk; ++k) carry[k] = std::move(outs[k]);
        for (std::size_t j = 0; j < ny; ++j) device_->copy(ys[j]->ptr + t * y_bytes[j], outs[nk + j]->ptr, y_bytes[j]);
      }
      for (std::size_t k = 0; k < nk; ++k) env[n.outputs[k]] = std::move(carry[k]);
      for (std::size_t j = 0; j < ny; ++j) env[n.outputs[nk + j]] = std::move(ys[j]);
      return;
    }
    case Op::While: {
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
      const std::size_t nk = n.inputs.size() - nc;
      std::vector<DeviceBufferPtr> carry(nk);
      for (std::size_t k = 0; k < nk; ++k) carry[k] = operand(nc + k);
      InterruptPoller interrupt(1);
      for (;;) {
        interrupt.poll();
        std::vector<DeviceBufferPtr> args;
        for (std::size_t i = 0; i < nc; ++i) args.push_back(operand(i));
        for (auto& c : carry) args.push_back(c);
        if (!download_bool(bodies[0]->run(args)[0])) break;
        auto outs = bodies[1]->run(std::move(args));
        for (std::size_t k = 0; k < nk; ++k) carry[k] = std::move(outs[k]);
      }
      for (std::size_t k = 0; k < nk; ++k) env[n.outputs[k]] = std::move(carry[k]);
      return;
    }
    default: {  // custom_jvp, custom_vjp, checkpoint, linear_solve: the primal body
      std::vector<DeviceBufferPtr> args(n.inputs.size());
      for (std::size_t i = 0; i < n.inputs.size(); ++i) args[i] = operand(i);
      return set_outputs(bodies[0]->run(std::move(args)));
    }
  }
}

void Program::run_example_while(std::size_t step, std::vector<DeviceBufferPtr>& env) const {
  const Step& s = plan_.steps[step];
  const Graph& g = *plan_.graph;
  const Node& n = g.nodes[s.node];
  const Launch& l = s.launches[0];
  const std::size_t nin = n.inputs.size(), nk = n.outputs.size(), nc = nin - nk;
  const auto batch = static_cast<std::size_t>(l.count);
  auto allocate_carries = [&] {
    std::vector<DeviceBufferPtr> out;
    for (ValueId v : n.outputs) out.push_back(device_->allocate(bytes_of(g.type(v))));
    return out;
  };
  // The first launch reads the operands; later ones read the previous launch's carries and
  // write the other set of buffers (inputs and outputs never alias).
  std::vector<DeviceBufferPtr> in(nk), out = allocate_carries(), spare;
  for (std::size_t k = 0; k < nk; ++k) in[k] = env[n.inputs[nc + k]];
  auto pending = device_->allocate(batch);
  std::vector<std::uint8_t> flags(batch);
  std::vector<std::uint64_t> slots(l.args.size() + 1);
  std::vector<void*> pointers(slots.size());
  InterruptPoller interrupt(1);
  for (;;) {
    slots[0] = static_cast<std::uint64_t>(l.count);
    for (std::size_t k = 0; k < nc; ++k) slots[1 + k] = env[n.inputs[k]]->ptr;
    for (std::size_t k = 0; k < nk; ++k) {
      slots[1 + nc + k] = in[k]->ptr;
      slots[1 + nin + k] = out[k]->ptr;
    }
    slots[1 + nin + nk] = static_cast<std::uint64_t>(l.args[nin + nk].imm);
    slots[2 + nin + nk] = pending->ptr;
    for (std::size_t k = 0; k < slots.size(); ++k) pointers[k] = &slots[k];
    device_->launch(*module_, static_cast<std::size_t>(l.kernel), l.count, pointers.data());
    device_->download(flags.data(), pending->ptr, batch);
    bool running = false;
    for (std::uint8_t f : flags) running = running || f != 0;
    if (!running) break;
    interrupt.poll();
    if (spare.empty()) spare = allocate_carries();
    in = out;
    std::swap(out, spare);
  }
  for (std::size_t k = 0; k < nk; ++k) env[n.outputs[k]] = std::move(out[k]);
}

void Program::check_arity(std::size_t n) const {
  const std::size_t want = plan_.graph->params.size();
  if (n != want) throw TypeError("CUDA program expects " + std::to_string(want) + " arguments, got " + std::to_string(n));
}

int Program::launches() const {
  int k = 0;
  for (const Step& s : plan_.steps) k += s.kind == Step::Gemm ? 1 : static_cast<int>(s.launches.size());
  return k;
}

std::vector<DeviceBufferPtr> Program::run(std::vector<DeviceBufferPtr> args) const {
  const Graph& g = *plan_.graph;
  check_arity(args.size());
  std::vector<DeviceBufferPtr> env(g.values.size());
  for (std::size_t v = 0; v < constants_.size(); ++v)
    if (constants_[v]) env[v] = constants_[v];
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ValueType& t = g.type(g.params[i]);
    const std::size_t bytes = static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype);
    if (!args[i] || args[i]->device != device_ || args[i]->bytes != bytes) {  // a bug of the caller
      throw TypeError("CUDA program argument " + std::to_string(i) + " must be a " + t.str() + " buffer on " +
                      device_->description());
    }
    env[g.params[i]] = std::move(args[i]);
  }
  std::vector<std::uint64_t> slots;
  std::vector<void*> pointers;
  std::vector<DeviceBufferPtr> temps;
  for (std::size_t step = 0; step < plan_.steps.size(); ++step) {
    const Step& s = plan_.steps[step];
    if (s.kind == Step::Region) {
      run_region(step, env);
    } else if (s.kind == Step::ExampleWhile) {
      run_example_while(step, env);
    } else if (s.kind == Step::Alias) {
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
              case Arg::Blob: slots[k + 1] = blobs_[static_cast<std::size_t>(a.temp)]->ptr; break;
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
  check_arity(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ValueType& t = g.type(g.params[i]);
    const std::size_t bytes = static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype);
    auto b = device_->allocate(bytes);
    device_->upload(b->ptr, args[i]->data(), bytes);
    dev.push_back(std::move(b));
  }
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
