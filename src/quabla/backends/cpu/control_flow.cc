// Execution of the region ops on the CPU: the bodies are compiled plans run in a C++ loop,
// never re-entering Python. Carries move from one iteration's results to the next one's
// arguments, so a body may update a carry buffer in place once nothing else holds it.
#include <algorithm>
#include <cstring>

#include "quabla/backends/cpu/executable.h"
#include "quabla/backends/cpu/scalar_loop.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/interrupt.h"

namespace qb::cpu {

namespace {

// Small bodies take well under a microsecond a step: poll for Ctrl-C every 256 of them.
// Larger bodies poll every step.
constexpr std::uint32_t kSmallStepsPerPoll = 256;

std::size_t bytes_of(const ValueType& t) { return static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype); }

// The carries of an allocation-free loop: two buffers each, the current one read by the
// step and the next one written from the step's results (which may live in the arena, a
// parameter such as the current carry itself, or a constant), then swapped.
struct AlternatingCarry {
  std::vector<BufferPtr> cur, next;
  std::vector<std::size_t> bytes;

  AlternatingCarry(const Graph& g, const Node& n, const std::vector<BufferPtr>& init) {
    for (std::size_t k = 0; k < init.size(); ++k) {
      bytes.push_back(bytes_of(g.type(n.outputs[k])));
      cur.push_back(Buffer::allocate(bytes[k]));
      next.push_back(Buffer::allocate(bytes[k]));
      std::memcpy(cur[k]->data(), init[k]->data(), bytes[k]);
    }
  }
  // Carry results are the body's first results.
  void advance(const Executable& body, std::span<const std::byte* const> params, const std::byte* arena) {
    for (std::size_t k = 0; k < cur.size(); ++k) std::memcpy(next[k]->data(), body.result_data(k, params, arena), bytes[k]);
    std::swap(cur, next);
  }
};

}  // namespace

void Executable::run_region(const Step& s, std::vector<BufferPtr>& env) const {
  const Graph& g = *graph_;
  const Node& n = g.nodes[s.node];
  auto operand = [&](std::size_t i) -> const BufferPtr& { return env[n.inputs[i]]; };
  switch (n.op) {
    case Op::CustomVjpLin:
      throw InternalError("cpu: custom_vjp_lin is rejected when the program is compiled");
    case Op::CustomJvp: case Op::CustomVjp: case Op::Checkpoint: case Op::LinearSolve: {  // the primal body (solve); the rules only matter to transforms
      std::vector<BufferPtr> args;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) args.push_back(operand(i));
      auto outs = s.regions[0]->run_owned(std::move(args));
      for (std::size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = std::move(outs[k]);
      return;
    }
    case Op::Cond: {
      const bool pred = *operand(0)->as<std::uint8_t>() != 0;
      std::vector<BufferPtr> args;
      for (std::size_t i = 1; i < n.inputs.size(); ++i) args.push_back(operand(i));
      auto outs = s.regions[pred ? 1 : 0]->run_owned(std::move(args));
      for (std::size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = std::move(outs[k]);
      return;
    }
    case Op::Scan: {
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts), nk = static_cast<std::size_t>(n.attrs.num_carry);
      const std::size_t nx = n.inputs.size() - nc - nk, ny = n.outputs.size() - nk;
      const std::int64_t len = n.attrs.length;
      std::vector<BufferPtr> carry;
      for (std::size_t k = 0; k < nk; ++k) carry.push_back(operand(nc + k));
      std::vector<std::size_t> x_bytes, y_bytes;
      for (std::size_t i = 0; i < nx; ++i) {
        const auto& t = g.type(n.inputs[nc + nk + i]);
        x_bytes.push_back(len ? bytes_of(t) / static_cast<std::size_t>(len) : 0);
      }
      std::vector<BufferPtr> ys;
      for (std::size_t j = 0; j < ny; ++j) {
        const auto& t = g.type(n.outputs[nk + j]);
        ys.push_back(Buffer::allocate(bytes_of(t)));
        y_bytes.push_back(len ? bytes_of(t) / static_cast<std::size_t>(len) : 0);
      }
      if (const ScalarBody* sb = s.scalar.empty() ? nullptr : s.scalar[0].get()) {
        // Scalar form: carries stay in registers between steps.
        auto st = sb->make_state();
        for (std::size_t i = 0; i < nc; ++i) sb->load_param(1 + i, operand(i)->data(), st);
        for (std::size_t k = 0; k < nk; ++k) sb->load_param(1 + nc + k, carry[k]->data(), st);
        std::vector<const std::byte*> xp;
        std::vector<std::byte*> yp;
        for (std::size_t i = 0; i < nx; ++i) xp.push_back(operand(nc + nk + i)->data());
        for (std::size_t j = 0; j < ny; ++j) yp.push_back(ys[j]->data());
        sb->run_scan(st, nc, nk, sb->results_to_params(0, 1 + nc, nk), len, n.attrs.start, n.attrs.reverse, xp, yp,
                     x_bytes, y_bytes);
        for (std::size_t k = 0; k < nk; ++k) {
          auto out = Buffer::allocate(bytes_of(g.type(n.outputs[k])));
          sb->store_param(1 + nc + k, st, out->data());
          env[n.outputs[k]] = std::move(out);
        }
        for (std::size_t j = 0; j < ny; ++j) env[n.outputs[nk + j]] = std::move(ys[j]);
        return;
      }
      const Executable& body = *s.regions[0];
      if (body.is_small()) {
        // No allocation per step: the body runs in one arena; carries alternate between two
        // buffers; x slices are read where they lie in xs.
        auto arena = Buffer::allocate(body.arena_bytes());
        AlternatingCarry c(g, n, carry);
        double index = 0;
        std::vector<const std::byte*> params(1 + nc + nk + nx);
        params[0] = reinterpret_cast<const std::byte*>(&index);
        for (std::size_t i = 0; i < nc; ++i) params[1 + i] = operand(i)->data();
        InterruptPoller interrupt(kSmallStepsPerPoll);
        for (std::int64_t step = 0; step < len; ++step) {
          interrupt.poll();
          const std::int64_t t = n.attrs.reverse ? len - 1 - step : step;
          index = static_cast<double>(n.attrs.start + t);
          for (std::size_t k = 0; k < nk; ++k) params[1 + nc + k] = c.cur[k]->data();
          for (std::size_t i = 0; i < nx; ++i)
            params[1 + nc + nk + i] = operand(nc + nk + i)->data() + static_cast<std::size_t>(t) * x_bytes[i];
          body.run_small(params, arena->data());
          // ys first: advance() makes the next carry current, and results may be read from
          // the parameters (the current carry) until then.
          for (std::size_t j = 0; j < ny; ++j)
            std::memcpy(ys[j]->data() + static_cast<std::size_t>(t) * y_bytes[j], body.result_data(nk + j, params, arena->data()),
                        y_bytes[j]);
          c.advance(body, params, arena->data());
        }
        for (std::size_t k = 0; k < nk; ++k) env[n.outputs[k]] = std::move(c.cur[k]);
        for (std::size_t j = 0; j < ny; ++j) env[n.outputs[nk + j]] = std::move(ys[j]);
        return;
      }
      std::vector<BufferPtr> args;
      InterruptPoller interrupt(1);
      for (std::int64_t step = 0; step < len; ++step) {
        interrupt.poll();
        const std::int64_t t = n.attrs.reverse ? len - 1 - step : step;
        args.clear();
        args.reserve(1 + nc + nk + nx);
        auto index = Buffer::allocate(sizeof(double));
        *index->as<double>() = static_cast<double>(n.attrs.start + t);
        args.push_back(std::move(index));
        for (std::size_t i = 0; i < nc; ++i) args.push_back(operand(i));
        for (auto& c : carry) args.push_back(std::move(c));
        for (std::size_t i = 0; i < nx; ++i) {
          auto slice = Buffer::allocate(x_bytes[i]);
          std::memcpy(slice->data(), operand(nc + nk + i)->data() + static_cast<std::size_t>(t) * x_bytes[i], x_bytes[i]);
          args.push_back(std::move(slice));
        }
        auto outs = body.run_owned(std::move(args));
        args = std::vector<BufferPtr>();
        for (std::size_t k = 0; k < nk; ++k) carry[k] = std::move(outs[k]);
        for (std::size_t j = 0; j < ny; ++j)
          std::memcpy(ys[j]->data() + static_cast<std::size_t>(t) * y_bytes[j], outs[nk + j]->data(), y_bytes[j]);
      }
      for (std::size_t k = 0; k < nk; ++k) env[n.outputs[k]] = std::move(carry[k]);
      for (std::size_t j = 0; j < ny; ++j) env[n.outputs[nk + j]] = std::move(ys[j]);
      return;
    }
    case Op::While: {
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
      const std::size_t nk = n.inputs.size() - nc;
      std::vector<BufferPtr> carry;
      for (std::size_t k = 0; k < nk; ++k) carry.push_back(operand(nc + k));
      const Executable& cond = *s.regions[0];
      const Executable& body = *s.regions[1];
      if (s.scalar.size() == 2 && s.scalar[0] && s.scalar[1]) {
        // Scalar forms: the carries live in the body's registers and are copied into the
        // condition's before each test.
        const ScalarBody &sc = *s.scalar[0], &sb = *s.scalar[1];
        auto cst = sc.make_state(), bst = sb.make_state();
        for (std::size_t i = 0; i < nc; ++i) {
          sc.load_param(i, operand(i)->data(), cst);
          sb.load_param(i, operand(i)->data(), bst);
        }
        for (std::size_t k = 0; k < nk; ++k) sb.load_param(nc + k, carry[k]->data(), bst);
        sb.run_while(sc, cst, bst, nc, nk, sb.results_to_params(0, nc, nk));
        for (std::size_t k = 0; k < nk; ++k) {
          auto out = Buffer::allocate(bytes_of(g.type(n.outputs[k])));
          sb.store_param(nc + k, bst, out->data());
          env[n.outputs[k]] = std::move(out);
        }
        return;
      }
      if (cond.is_small() && body.is_small()) {
        auto cond_arena = Buffer::allocate(cond.arena_bytes()), arena = Buffer::allocate(body.arena_bytes());
        AlternatingCarry c(g, n, carry);
        std::vector<const std::byte*> params(nc + nk);
        for (std::size_t i = 0; i < nc; ++i) params[i] = operand(i)->data();
        InterruptPoller interrupt(kSmallStepsPerPoll);
        for (;;) {
          interrupt.poll();
          for (std::size_t k = 0; k < nk; ++k) params[nc + k] = c.cur[k]->data();
          cond.run_small(params, cond_arena->data());
          if (*cond.result_data(0, params, cond_arena->data()) == std::byte{0}) break;
          body.run_small(params, arena->data());
          c.advance(body, params, arena->data());
        }
        for (std::size_t k = 0; k < nk; ++k) env[n.outputs[k]] = std::move(c.cur[k]);
        return;
      }
      InterruptPoller interrupt(1);
      for (;;) {
        interrupt.poll();
        std::vector<BufferPtr> args;
        for (std::size_t i = 0; i < nc; ++i) args.push_back(operand(i));
        for (auto& c : carry) args.push_back(c);
        if (*cond.run_owned(args)[0]->as<std::uint8_t>() == 0) break;
        args.resize(nc);
        for (auto& c : carry) args.push_back(std::move(c));
        auto outs = body.run_owned(std::move(args));
        for (std::size_t k = 0; k < nk; ++k) carry[k] = std::move(outs[k]);
      }
      for (std::size_t k = 0; k < nk; ++k) env[n.outputs[k]] = std::move(carry[k]);
      return;
    }
    default:
      throw InternalError("cpu::Executable: not a region op");
  }
}

}  // namespace qb::cpu
